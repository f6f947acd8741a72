/* pf_watch_pages.c - watchpoints by page protection, for machines whose debug registers do not fire.
 *
 * Single-stepping every instruction while a word is watched (the first emulation) pays a trap for each
 * instruction until the word is touched again, and the repeat of a numpy loop's access lies thousands of
 * instructions away: 3-13 watches resolved in a whole run. Here a watched word's page is protected instead
 * (read-only for a write watch, no access for a read-write one), so only instructions that touch that page
 * trap: on the fault the page gets its protection back, the faulting instruction alone is single-stepped,
 * and the page is protected again after it. An instruction that touched the watched word itself is a hit,
 * judged exactly as a debug register's trap-after (pf_watch_handlers.c: the emulation's pending slot).
 *
 * What the program sees: a fault on a page that is not watch's (or a fault that is no protection fault)
 * goes to the program's own SIGSEGV action (recorded by the runtime's sigaction hook: faulthandler, a
 * program's handler) or the default action; other threads touching a protected page take the same path
 * (step and re-protect) without judging anything. A protected page is given back its protection when its
 * last watch ends, before the memory can be freed (the free hooks disarm first).
 *
 * The original protection of a page comes from /proc/self/maps, read into a table (raw system calls: this
 * runs in signal handlers) and read again when an address is not in it. Only private writable mappings are
 * watched, so giving a page back read-write restores what it was.
 */
#include "pf_sys.h"
#include "pf_watch_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PF_PAGES_MAX (PF_WATCH_MAX_THREADS * PF_WATCH_MAX_SLOTS)
#define PF_MAPS_MAX 8192

typedef struct pf_map_range {
    uint64_t lo, hi;
    uint8_t writable_private;
    uint8_t anonymous;  /* no file, and no name but [heap] */
    uint8_t file;       /* a file's pages: a loaded object's data, whose .bss is the anonymous mapping after it */
    uint8_t guard;      /* no access: a thread stack's guard below it, a malloc arena's unreserved part above */
    uint8_t locks;      /* a file of the interpreter, libpython, libc or the loader: its data holds the GIL's
                           and malloc's futex words (rw_allowed) */
} pf_map_range_t;

/* The page each armed slot (by its index in the global armed table) protects, 0: none (written under the
 * lock, seq_cst: pf_watch_io.c's fences read it without); whether it watches reads too; the slots ever
 * used; and the pages being stepped over (unprotected meanwhile), with how many threads step there. */
static uint64_t slot_page[PF_PAGES_MAX];
static uint8_t slot_rw[PF_PAGES_MAX];
static unsigned slot_hiwater;
static struct {
    uint64_t page;
    uint32_t threads;
} stepping[PF_WATCH_MAX_THREADS];
static pf_map_range_t pf_maps[PF_MAPS_MAX];
static int pf_n_maps;
static int pf_pages_lock;
unsigned pf_watch_pages_active;     /* slots with a protected page: 0 = every fault is the program's */

/* Per thread: the page whose faulting instruction is being stepped (0: none), and the thread CPU time when
 * the fault came (what the fault cycle cost, for emulation's budget). Threads without watch state too. */
static __thread uint64_t step_page[2] __attribute__((tls_model("initial-exec")));
/* What one fault cycle costs the thread (the fault, two signal deliveries and returns, two mprotect calls),
 * in wall time, measured once at start (pf_watch_pages_calibrate): the handlers' own clock would miss the
 * kernel's and the hypervisor's part. */
static uint64_t cycle_ns = 20000;
/* A fault cycle blocks signals once (begin_step), not at each of its locks: from then until the step's
 * SIGTRAP handler ends (pf_watch_pages_step_mask), every asynchronous signal stays blocked on the thread,
 * the stepped instruction running with the program's mask plus those (held_mask is the program's own). */
static __thread uint8_t signals_held __attribute__((tls_model("initial-exec")));
static __thread sigset_t held_mask __attribute__((tls_model("initial-exec")));

/* Taken only by code that touches no watched page while holding it, and with every signal blocked (the
 * mask before goes to *old): a handler running on this thread meanwhile, watch's or the program's, whose
 * access to a watched page faults to pf_watch_segv_handler, would spin on it for ever. Two system calls,
 * none while a fault cycle holds the signals (signals_held): the cycle pays one beside its fault, two
 * deliveries and two mprotects. */
static void lock(sigset_t *old)
{
    if (!signals_held) {
        sigset_t all;
        sigfillset(&all);
        pf_watch_sigmask_raw(SIG_BLOCK, &all, old);
    }
    while (__atomic_exchange_n(&pf_pages_lock, 1, __ATOMIC_ACQUIRE))
        __builtin_ia32_pause();
}

/* (With signals_held raised since lock, the signals stay blocked: the step's cycle keeps them.) */
static void unlock(const sigset_t *old)
{
    __atomic_store_n(&pf_pages_lock, 0, __ATOMIC_RELEASE);
    if (!signals_held)
        pf_watch_sigmask_raw(SIG_SETMASK, old, NULL);
}

/* The protection page must have now: none while a thread steps an instruction there, else the strictest
 * its watches need (no access for a read-write watch, read-only for a write watch); -1: not watch's. Lock
 * held. */
static int prot_now(uint64_t page)
{
    for (int i = 0; i < PF_WATCH_MAX_THREADS; i++)
        if (stepping[i].page == page && stepping[i].threads)
            return PROT_READ | PROT_WRITE;
    int prot = -1;
    for (unsigned g = 0; g < slot_hiwater; g++)
        if (slot_page[g] == page)
            prot = slot_rw[g] ? PROT_NONE : prot == PROT_NONE ? PROT_NONE : PROT_READ;
    if (prot >= 0 && (pf_watch_masked() || pf_watch_io_fenced(page)))
        return PROT_READ | PROT_WRITE;  /* a thread blocks SIGSEGV (pf_watch_masked.c), or a system call
                                           under way reads or writes it (pf_watch_io.c) */
    return prot;
}

static void apply(uint64_t page)
{
    int prot = prot_now(page);
    syscall(SYS_mprotect, (void *)(uintptr_t)page, PF_WATCH_PAGE, prot < 0 ? PROT_READ | PROT_WRITE : prot);
}

static uint64_t hex_field(const char **p)
{
    uint64_t v = 0;
    for (;; (*p)++) {
        char c = **p;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return v;
        v = v << 4 | (uint64_t)d;
    }
}

/* 1 when a slot protects page (rw: a read-write slot, so rw_allowed let it). Lock held. */
static int slot_on(uint64_t page, int rw)
{
    for (int g = 0; g < PF_PAGES_MAX; g++)
        if (slot_page[g] == page && (!rw || slot_rw[g]))
            return 1;
    return 0;
}

/* 1 when the no-access mapping m is a page of watch's own (its protection splits the mapping), not a guard. */
static int own_page(const pf_map_range_t *m)
{
    return m->hi - m->lo == PF_WATCH_PAGE && slot_on(m->lo, 0);
}

/* A thread's stack lies above its guard: at most this far (8 MiB is glibc's default from RLIMIT_STACK). */
#define PF_STACK_SPAN (16ull << 20)
/* A thread's malloc arena: HEAP_MAX_SIZE-aligned, its reserved part no-access above its used part. */
#define PF_MALLOC_HEAP (64ull << 20)

/* 1 when page (in m, a mapping of pf_maps) is in a thread's stack: the mapping right above a guard. Its
 * top holds the thread's descriptor and static TLS, which glibc writes with every signal blocked (a new
 * thread in start_thread, its creator in pthread_create, a stack reused from glibc's cache), and a fault
 * there is forced and kills the program: no watch of either kind protects it. Lock held. */
static int in_thread_stack(const pf_map_range_t *m, uint64_t page)
{
    const pf_map_range_t *below = m > pf_maps && m[-1].hi == m->lo ? &m[-1] : NULL;
    return below && below->guard && !own_page(below) && page < m->lo + PF_STACK_SPAN;
}

/* 1 when a read-write watch may make page (in m, a mapping of pf_maps) no-access. The kernel reads a futex
 * word itself (a lock's or a condition variable's wait): on a no-access page the wait fails with EFAULT,
 * which glibc takes for a broken kernel and aborts the program ("The futex facility returned an unexpected
 * error code": a thread waiting for the GIL while a load of _PyRuntime was watched). Left alone: the data
 * and .bss of the interpreter, libpython, libc and the loader (the GIL, malloc's arena locks), thread stacks
 * (a thread's descriptor, 3.13's parking lot) and threads' malloc arenas (the semaphores of locks made
 * there). What remains: anonymous mappings (pymalloc's arenas, large numpy buffers), the main heap (numpy's
 * arrays under malloc's mmap threshold) and other libraries' data; a futex word there (a lock's semaphore
 * made by the main thread, a threading library's own) is still at risk: docs/limitations.md. Lock held. */
static int rw_allowed(const pf_map_range_t *m, uint64_t page)
{
    if (!m->writable_private || m->locks || !(m->file || m->anonymous))
        return 0;
    if (m->file)
        return 1;   /* another library's data (numpy's descriptors and type objects, loaded again and again) */
    const pf_map_range_t *below = m > pf_maps && m[-1].hi == m->lo ? &m[-1] : NULL;
    const pf_map_range_t *above = m + 1 < pf_maps + pf_n_maps && m[1].lo == m->hi ? &m[1] : NULL;
    if (below && below->locks)
        return 0;   /* the .bss of the interpreter, libpython, libc */
    if (in_thread_stack(m, page))
        return 0;   /* a thread's stack */
    if (above && above->guard && !own_page(above) && above->hi % PF_MALLOC_HEAP == 0 &&
        page >= above->hi - PF_MALLOC_HEAP)
        return 0;   /* a thread's malloc arena */
    return 1;
}

/* 1 when the file named by [path, end) is the interpreter's executable, libpython, libc or the loader. */
static int holds_locks(const char *path, const char *end)
{
    const char *base = path;
    for (const char *c = path; c < end; c++)
        if (*c == '/')
            base = c + 1;
    static const char *const names[] = {"python", "libpython", "libc.so", "libc-", "ld-linux", "libpthread"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        size_t n = strlen(names[i]);
        if ((size_t)(end - base) >= n && memcmp(base, names[i], n) == 0)
            return 1;
    }
    return 0;
}

/* One line of /proc/self/maps, [line, nl): "lo-hi perms offset dev inode   path". Returns 0 when it is not one. */
static int parse_map_line(const char *line, const char *nl, pf_map_range_t *m)
{
    const char *p = line;
    uint64_t lo = hex_field(&p);
    p++;
    uint64_t hi = hex_field(&p);
    p++;    /* "rw-p" */
    if (p + 4 > nl)
        return 0;
    *m = (pf_map_range_t){lo, hi, p[0] == 'r' && p[1] == 'w' && p[3] == 'p', 0, 0, p[0] == '-' && p[1] == '-' && p[2] == '-', 0};
    /* an inode names a file, a path without one a [name] */
    p += 4;
    for (int field = 0; field < 3 && p < nl; field++) {
        while (p < nl && *p == ' ')
            p++;
        const char *start = p;
        while (p < nl && *p != ' ')
            p++;
        if (field == 2)
            m->file = !(p - start == 1 && *start == '0');
    }
    while (p < nl && *p == ' ')
        p++;
    m->locks = m->file && holds_locks(p, nl);
    m->anonymous = !m->file && (p == nl || (nl - p == 6 && memcmp(p, "[heap]", 6) == 0));
    return 1;
}

/* Adds the whole lines of text (NUL-terminated) to pf_maps; returns where the unfinished last one starts. */
static const char *add_lines(const char *text)
{
    const char *line = text, *nl;
    for (; (nl = strchr(line, '\n')) != NULL; line = nl + 1)
        if (pf_n_maps < PF_MAPS_MAX && parse_map_line(line, nl, &pf_maps[pf_n_maps]))
            pf_n_maps++;
    return line;
}

/* Reads /proc/self/maps into pf_maps (raw system calls, a stack buffer). Lock held. */
static void read_maps(void)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
    pf_n_maps = 0;
    if (fd < 0)
        return;
    char buf[4096];
    size_t have = 0;
    for (;;) {
        ssize_t got = syscall(SYS_read, fd, buf + have, sizeof buf - 1 - have);
        if (got <= 0)
            break;
        have += (size_t)got;
        buf[have] = '\0';
        const char *line = add_lines(buf);
        have = (size_t)(buf + have - line);
        memmove(buf, line, have);
    }
    syscall(SYS_close, fd);
}

/* addr's mapping among those read; NULL: none. Lock held. */
static const pf_map_range_t *find_mapping(uint64_t addr)
{
    for (int i = 0; i < pf_n_maps; i++)
        if (addr >= pf_maps[i].lo && addr < pf_maps[i].hi)
            return &pf_maps[i];
    return NULL;
}

/* addr's mapping, reading the maps again when no mapping read before holds it; NULL: none. Lock held. */
static const pf_map_range_t *mapping_of(uint64_t addr)
{
    const pf_map_range_t *m = find_mapping(addr);
    if (!m) {
        read_maps();    /* a mapping made since the last read */
        m = find_mapping(addr);
    }
    return m;
}

/* 1 when addr lies in a private mapping that is readable and writable. Lock held. */
static int writable_private(uint64_t addr)
{
    const pf_map_range_t *m = mapping_of(addr);
    return m && m->writable_private;
}

int pf_watch_pages_arm(int g, uint64_t addr, uint32_t len, int rw)
{
    uint64_t page = addr & ~(PF_WATCH_PAGE - 1);
    if (g < 0 || g >= PF_PAGES_MAX || (addr + len - 1) / PF_WATCH_PAGE != page / PF_WATCH_PAGE)
        return -EINVAL;     /* aligned words never cross a page */
    int rc = 0;
    sigset_t old_mask;
    lock(&old_mask);
    int ours = prot_now(page) >= 0;
    const pf_map_range_t *m = ours ? NULL : mapping_of(addr);
    if (pf_watch_masked_refuses()) {
        rc = -EBUSY;    /* a thread blocks SIGSEGV: its access would kill the process (pf_watch_masked.c) */
    } else if (!ours && !(m && m->writable_private)) {
        rc = -EACCES;   /* a read-only or shared mapping: no protection of ours could be undone exactly */
    } else if (!ours && m->anonymous && in_thread_stack(m, page)) {
        rc = -EACCES;   /* a thread's stack (in_thread_stack) */
    } else if (rw && (ours ? !slot_on(page, 1) : !rw_allowed(m, page))) {
        rc = -EACCES;   /* a page that may hold a futex word (rw_allowed; a page of ours: judged when first armed) */
    } else {
        /* the count and the page are published before apply reads the fences (pf_watch_io.c) */
        if (!slot_page[g])
            __atomic_fetch_add(&pf_watch_pages_active, 1, __ATOMIC_SEQ_CST);
        else if (slot_page[g] != page) {
            uint64_t old = slot_page[g];
            __atomic_store_n(&slot_page[g], 0, __ATOMIC_SEQ_CST);
            apply(old);
        }
        if ((unsigned)g >= slot_hiwater)
            __atomic_store_n(&slot_hiwater, (unsigned)g + 1, __ATOMIC_SEQ_CST);
        slot_rw[g] = (uint8_t)(rw != 0);
        __atomic_store_n(&slot_page[g], page, __ATOMIC_SEQ_CST);
        apply(page);
    }
    unlock(&old_mask);
    return rc;
}

void pf_watch_pages_disarm(int g)
{
    if (g < 0 || g >= PF_PAGES_MAX)
        return;
    sigset_t old_mask;
    lock(&old_mask);
    uint64_t page = slot_page[g];
    if (page) {
        __atomic_store_n(&slot_page[g], 0, __ATOMIC_SEQ_CST);
        __atomic_fetch_sub(&pf_watch_pages_active, 1, __ATOMIC_RELAXED);
        apply(page);
    }
    unlock(&old_mask);
}

/* 1 when addr's mapping, read afresh, is private and writable: a protection fault there is no longer any
 * protection's (one of watch's that ended after the fault). */
static int writable_now(uint64_t addr)
{
    sigset_t old_mask;
    lock(&old_mask);
    read_maps();
    int w = writable_private(addr);
    unlock(&old_mask);
    return w;
}

/* The fault's page is unprotected for one step of the faulting instruction. Returns 1 when the fault was
 * on a page watch protects, else 0 (not ours). A second fault of the same instruction (an access across
 * two watched pages) unprotects the second page too. */
static int begin_step(uint64_t addr)
{
    uint64_t page = addr & ~(PF_WATCH_PAGE - 1);
    int ours = 0;
    sigset_t old_mask;
    lock(&old_mask);
    if (prot_now(page) >= 0) {
        for (int i = 0; i < PF_WATCH_MAX_THREADS; i++)
            if (stepping[i].page == page || !stepping[i].threads) {
                stepping[i].page = page;
                stepping[i].threads++;
                ours = 1;
                break;
            }
        apply(page);
    }
    if (ours && !signals_held)
        signals_held = 1;   /* unlock leaves them blocked: the step's mask (hold_for_step) keeps them so */
    unlock(&old_mask);
    if (ours)
        step_page[step_page[0] ? 1 : 0] = page;
    return ours;
}

/* The stepped instruction runs with every asynchronous signal blocked besides the program's mask (its own
 * faults and the step's SIGTRAP stay deliverable); the program's mask is kept for the trap's handler. */
static void hold_for_step(ucontext_t *uc)
{
    held_mask = uc->uc_sigmask;
    for (int sig = 1; sig < _NSIG; sig++)
        if (sig != SIGSEGV && sig != SIGBUS && sig != SIGILL && sig != SIGFPE && sig != SIGTRAP && sig != SIGSYS &&
            sig != SIGKILL && sig != SIGSTOP)
            sigaddset(&uc->uc_sigmask, sig);
}

void pf_watch_pages_step_mask(ucontext_t *uc)
{
    if (!signals_held)
        return;
    uc->uc_sigmask = held_mask;
    signals_held = 0;
}

int pf_watch_pages_stepping(void) { return step_page[0] != 0; }

/* After the single step: the pages protected again (unless their watches ended meanwhile), and the fault
 * cycle's CPU time charged to the thread's chain. */
void pf_watch_pages_step_done(pf_watch_thread_t *t)
{
    sigset_t old_mask;
    lock(&old_mask);
    for (int k = 0; k < 2 && step_page[k]; k++) {
        for (int i = 0; i < PF_WATCH_MAX_THREADS; i++)
            if (stepping[i].page == step_page[k] && stepping[i].threads) {
                stepping[i].threads--;
                break;
            }
        apply(step_page[k]);
    }
    unlock(&old_mask);
    step_page[0] = step_page[1] = 0;
    if (t)
        t->pages_cost_ns += cycle_ns;
}

/* Times fault cycles on a page of our own, with the handlers installed. Before any thread is watched: the
 * last entry of the armed table is free then. */
void pf_watch_pages_calibrate(void)
{
    enum { CYCLES = 64 };
    volatile uint64_t *word = mmap(NULL, PF_WATCH_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (word == MAP_FAILED)
        return;
    int g = PF_PAGES_MAX - 1;
    if (pf_watch_pages_arm(g, (uint64_t)(uintptr_t)word, 8, 0) == 0) {
        /* wall time, not the thread's CPU clock: in a VM most of a cycle (the exits of mprotect's TLB
         * flush and of the signal deliveries) is not charged to the thread, 19 us of CPU against 59 us of
         * wall time a cycle here, and the budget must see what the program loses */
        uint64_t t0 = pf_watch_mono_ns();
        for (int i = 0; i < CYCLES; i++)
            word[1] = (uint64_t)i;  /* not the watched word: a fault, a step, no hit */
        uint64_t spent = pf_watch_mono_ns() - t0;
        pf_watch_pages_disarm(g);
        if (spent / CYCLES > 1000)
            cycle_ns = spent / CYCLES;
    }
    munmap((void *)word, PF_WATCH_PAGE);
}

/* SIGSEGV: a protection fault on a watched page is stepped over (and judged when it touched a watched
 * word); anything else is the program's. */
void pf_watch_segv_handler(int sig, siginfo_t *si, void *ucv)
{
    int saved = errno;
    ucontext_t *uc = ucv;
    uint64_t addr = (uint64_t)(uintptr_t)si->si_addr;
    if (si->si_code != SEGV_ACCERR || step_page[1] || !begin_step(addr)) {
        if (si->si_code == SEGV_ACCERR && !step_page[1] && writable_now(addr)) {
            errno = saved;  /* a watch on the page ended between the fault and here: run it again */
            return;
        }
        errno = saved;
        pf_watch_foreign_signal(sig, si, ucv);
        return;
    }
    if (sigismember(&uc->uc_sigmask, SIGTRAP)) {
        /* the code blocks SIGTRAP: a single step's trap would arrive blocked, and the kernel kills a thread
         * whose forced trap is blocked. End every watch on the page instead; the access then runs. */
        pf_watch_pages_step_done(NULL);
        pf_watch_on_free_slow((void *)(uintptr_t)(addr & ~(PF_WATCH_PAGE - 1)), PF_WATCH_PAGE);
        signals_held = 0;   /* no step: the access runs with the program's mask, uc's as it came */
        errno = saved;
        return;
    }
    if (!step_page[1])
        hold_for_step(uc);  /* the first page's fault (a second one's context has it already) */
    pf_watch_thread_t *t = pf_watch_self;
    if (t && !t->busy && t->emu_pending < 0) {
        t->emu_pending = pf_watch_slot_touched(t, uc);
        if (t->emu_pending < 0 && ++t->pages_faults > PF_WATCH_PAGES_FAULT_LIMIT)
            pf_watch_pages_give_up(t);     /* its page is too busy to wait for the word on */
        else if (t->emu_pending >= 0)
            t->pages_faults = 0;
    }
    uc->uc_mcontext.gregs[REG_EFL] |= PF_WATCH_EFL_TF;
    errno = saved;
}

void pf_watch_pages_reapply(uint64_t lo, uint64_t hi)
{
    /* most calls' pages hold no watch: found without the lock (seq_cst, against an arm's publication) */
    unsigned n = __atomic_load_n(&slot_hiwater, __ATOMIC_SEQ_CST);
    int any = 0;
    for (unsigned g = 0; g < n && !any; g++) {
        uint64_t page = __atomic_load_n(&slot_page[g], __ATOMIC_SEQ_CST);
        any = page && page >= lo && page < hi;
    }
    if (!any)
        return;
    sigset_t old;
    lock(&old);
    for (unsigned g = 0; g < slot_hiwater; g++)
        if (slot_page[g] && slot_page[g] >= lo && slot_page[g] < hi)
            apply(slot_page[g]);
    unlock(&old);
}

int pf_watch_pages_on(void) { return pf_watch_cfg.emulate_pages; }

int pf_watch_pages_locked(void) { return __atomic_load_n(&pf_pages_lock, __ATOMIC_RELAXED); }

int pf_watch_pages_rw_allowed_in(const char *maps, uint64_t addr)
{
    sigset_t old_mask;
    lock(&old_mask);
    pf_n_maps = 0;
    add_lines(maps);
    const pf_map_range_t *m = find_mapping(addr);
    int ok = m ? rw_allowed(m, addr & ~(PF_WATCH_PAGE - 1)) : -1;
    pf_n_maps = 0;      /* the next arm reads the process's own maps */
    unlock(&old_mask);
    return ok;
}
