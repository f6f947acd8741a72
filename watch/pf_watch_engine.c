/* pf_watch_engine.c - the watch engine's life cycle: init (checks, sampling event, signal handlers), per-thread
 * start and end, drain of the pairs the handlers found into records, fork, stop and totals. The CL
 * algorithm itself runs in the signal handlers (pf_watch_handlers.c); copy watches are armed by
 * pf_watch_copies.c.
 */
#include "pf_fd.h"
#include "pf_thread_stack.h"
#include "pf_watch_int.h"

#include <asm/prctl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <linux/perf_event.h>
#include <time.h>
#include <unistd.h>

__thread pf_watch_thread_t *pf_watch_self __attribute__((tls_model("initial-exec")));
pf_watch_config_t pf_watch_cfg;
static pf_watch_pmu_t pf_pmu;
uint32_t pf_watch_sample_kind;
static int pf_signo;
static int pf_ready;
int pf_watch_stopped;
static pf_watch_thread_t *pf_all;           /* every watched thread, for totals and stop */
static int pf_all_lock;
static unsigned pf_thread_ordinal;
/* Descriptors watch may hold at once, all threads together: what pyflow can keep out of the program's way
 * (pf_fd_room), less a few for the profile files. A thread past it runs unwatched (-EMFILE), rather than
 * taking descriptors the program would have had. */
static int pf_fd_budget;
static int pf_fds_held;

static void all_lock(void)
{
    while (__atomic_exchange_n(&pf_all_lock, 1, __ATOMIC_ACQUIRE))
        __builtin_ia32_pause();
}

static void all_unlock(void) { __atomic_store_n(&pf_all_lock, 0, __ATOMIC_RELEASE); }

int pf_watch_init(const pf_watch_config_t *cfg, char *why, size_t n)
{
    if (pf_ready)
        return 0;
    pf_watch_cfg = *cfg;
    if (!pf_watch_cfg.modes)
        pf_watch_cfg.modes = PF_WATCH_MODE_STORES;
    if (!pf_watch_cfg.emulate_step_limit)
        pf_watch_cfg.emulate_step_limit = 2000000;
    if (pf_watch_cfg.float_rel_tol <= 0)
        pf_watch_cfg.float_rel_tol = 1e-6;
    pf_signo = cfg->signo ? cfg->signo : SIGRTMIN + 5;
    struct sigaction old;
    if (sigaction(SIGTRAP, NULL, &old) == 0 && (old.sa_flags & SA_SIGINFO ? (void *)old.sa_sigaction != NULL
                                                                           : old.sa_handler != SIG_DFL)) {
        snprintf(why, n, "the program already handles SIGTRAP (a debugger or its own handler): watch needs "
                 "SIGTRAP for watchpoints and single steps");
        return -EBUSY;
    }
    if (sigaction(pf_signo, NULL, &old) == 0 && old.sa_handler != SIG_DFL) {
        snprintf(why, n, "signal %d is already in use by the program: pick another with the signo setting", pf_signo);
        return -EBUSY;
    }
    int rc = pf_watch_slots_selftest(why, n);
    if (rc && !pf_watch_cfg.emulate_breakpoints)
        return rc;
    /* after the test: a default watch refused here (debug registers that never fire) loads no decoder */
    if (pf_watch_decode_init() != 0) {
        snprintf(why, n, "%s", pf_watch_decode_failure());
        return -EINVAL;
    }
    if (pf_watch_cfg.modes & (PF_WATCH_MODE_STORES | PF_WATCH_MODE_LOADS)) {
        rc = pf_watch_pmu_setup(&pf_watch_cfg, &pf_pmu, why, n);
        if (rc)
            return rc;
        pf_watch_sample_kind = pf_pmu.kind;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    /* no SA_ONSTACK and no alternate stack of ours: one would be the program's too (every SA_ONSTACK handler
     * of the program, CPython's included, would run on it, and nested deliveries of its own signals overflowed
     * a 64 KiB one), and sigaltstack would report it. The handlers need a few KiB of the interrupted stack. */
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sa.sa_sigaction = pf_watch_trap_handler;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, pf_signo);
    if (sigaction(SIGTRAP, &sa, NULL) != 0)
        goto sigfail;
    sa.sa_sigaction = pf_watch_sample_handler;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGTRAP);
    if (sigaction(pf_signo, &sa, NULL) != 0)
        goto sigfail;
    if (pf_watch_cfg.emulate_pages) {
        /* page watches need SIGSEGV; a handler already there (none is, this early, but a preloaded
         * library's) keeps it, and the watches step instead */
        if (sigaction(SIGSEGV, NULL, &old) == 0 && (old.sa_flags & SA_SIGINFO ? (void *)old.sa_sigaction != NULL
                                                                              : old.sa_handler != SIG_DFL)) {
            pf_watch_cfg.emulate_pages = 0;
        } else {
            sa.sa_sigaction = pf_watch_segv_handler;
            sigemptyset(&sa.sa_mask);
            sigaddset(&sa.sa_mask, SIGTRAP);
            sigaddset(&sa.sa_mask, pf_signo);
            sa.sa_flags = SA_SIGINFO | SA_RESTART;
            if (sigaction(SIGSEGV, &sa, NULL) != 0)
                goto sigfail;
            pf_watch_io_fencing_on();
            pf_watch_masked_init();     /* before calibrating: a first thread that blocks SIGSEGV must not */
            pf_watch_pages_calibrate();
        }
    }
    pf_fd_budget = pf_fd_room() - 8;
    pf_ready = 1;
    return 0;
sigfail:
    rc = -errno;
    snprintf(why, n, "sigaction: %s", strerror(-rc));
    return rc;
}

static void thread_bounds(pf_watch_thread_t *t)
{
    pf_thread_stack(&t->stack_lo, &t->stack_hi);
    unsigned long fs = 0, gs = 0;
    syscall(SYS_arch_prctl, ARCH_GET_FS, &fs);
    syscall(SYS_arch_prctl, ARCH_GET_GS, &gs);
    t->fs_base = fs;
    t->gs_base = gs;
}

static int samples_wanted(void)
{
    return (pf_watch_cfg.modes & (PF_WATCH_MODE_STORES | PF_WATCH_MODE_LOADS)) != 0;
}

static int reserve_fds(pf_watch_thread_t *t, char *why, size_t n)
{
    int need = (pf_watch_cfg.emulate_breakpoints ? 0 : PF_WATCH_MAX_SLOTS) + samples_wanted();
    if (__atomic_add_fetch(&pf_fds_held, need, __ATOMIC_RELAXED) > pf_fd_budget) {
        __atomic_sub_fetch(&pf_fds_held, need, __ATOMIC_RELAXED);
        snprintf(why, n, "the %d descriptors set aside for watch are taken (%d per watched thread): "
                 "this and later threads run unwatched", pf_fd_budget, need);
        return -EMFILE;
    }
    t->fds_reserved = need;
    return 0;
}

static void release_fds(pf_watch_thread_t *t)
{
    __atomic_sub_fetch(&pf_fds_held, t->fds_reserved, __ATOMIC_RELAXED);
    t->fds_reserved = 0;
}

static int start_events(pf_watch_thread_t *t, char *why, size_t n)
{
    int err = 0;
    for (int i = 0; i < PF_WATCH_MAX_SLOTS; i++)
        t->slot[i].fd = -1;
    int rc = reserve_fds(t, why, n);
    if (rc)
        return rc;
    if (pf_watch_cfg.emulate_breakpoints) {
        t->n_slots = PF_WATCH_MAX_SLOTS;     /* no debug registers: the slots are ours alone */
        for (int i = 0; i < PF_WATCH_MAX_SLOTS; i++)
            t->slot[i].state = PF_SLOT_FREE;
    } else if (pf_watch_slots_open(t, &err) == 0) {
        snprintf(why, n, "no hardware breakpoint slot (PERF_TYPE_BREAKPOINT with sigtrap needs Linux 5.13+): %s",
                 strerror(err));
        release_fds(t);
        return err ? -err : -ENOSYS;
    }
    int first = pf_watch_table_take(t);
    if (first < 0) {
        /* a watch the free hooks cannot find would outlive its object and pair with the next one there */
        snprintf(why, n, "%d threads are watched at once already (the most the armed-word table holds): this "
                 "and later threads run unwatched", PF_WATCH_MAX_THREADS);
        pf_watch_slots_close(t);
        release_fds(t);
        return -EMFILE;
    }
    for (int i = 0; i < PF_WATCH_MAX_SLOTS; i++)
        t->slot[i].global = first + i;
    if (!samples_wanted())
        return 0;       /* copies only: watches come from copies, not samples */
    int fd = pf_watch_pmu_open_thread(&pf_pmu, pf_signo, t->tid, &t->sample_ring);
    if (fd < 0) {
        snprintf(why, n, "sampling event %s: %s", pf_pmu.name, strerror(-fd));
        pf_watch_table_release(t);
        pf_watch_slots_close(t);
        release_fds(t);
        return fd;
    }
    t->sample_fd = fd;
    t->sample_doublings = 0;
    t->sample_exit_ns = 0;
    t->crowded = 0;
    t->sample_worked = 0;
    return 0;
}

uint64_t pf_watch_sample_period(const pf_watch_thread_t *t)
{
    return pf_pmu.period << t->sample_doublings;
}

uint64_t pf_watch_sample_floor_ns(const pf_watch_thread_t *t)
{
    /* half the fewest nanoseconds a period can take: a clock counts one event a nanosecond; a hardware
     * event (cycles, retired stores) at most ten (a 5 GHz core, two a cycle) */
    uint64_t period = pf_watch_sample_period(t);
    return (pf_pmu.software ? period : period / 10) / 2;
}

void pf_watch_sample_widen(pf_watch_thread_t *t)
{
    uint64_t period = pf_watch_sample_period(t) * 2;
    if (t->sample_fd < 0 || (1u << t->sample_doublings) >= PF_WATCH_SAMPLE_WIDEN_MAX ||
        ioctl(t->sample_fd, PERF_EVENT_IOC_PERIOD, &period) != 0)
        return;
    t->sample_doublings++;
}

int pf_watch_thread_start(char *why, size_t n)
{
    if (!pf_ready) {
        snprintf(why, n, "watch is not initialized");
        return -EINVAL;
    }
    if (pf_watch_self)
        return -EALREADY;
    pf_watch_thread_t *t = mmap(NULL, sizeof *t, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (t == MAP_FAILED) {
        snprintf(why, n, "no memory for the thread's watch state");
        return -ENOMEM;
    }
    t->tid = (int)syscall(SYS_gettid);
    t->sample_fd = -1;
    t->emu_pending = -1;
    t->busy = 1;
    thread_bounds(t);
    unsigned ord = __atomic_add_fetch(&pf_thread_ordinal, 1, __ATOMIC_RELAXED);
    t->rng = (pf_watch_cfg.seed ? pf_watch_cfg.seed : 0x9E3779B97F4A7C15ull) + ord * 0x2545F4914F6CDD1Dull;
    if (!t->rng)
        t->rng = 1;
    stack_t cur;
    if (sigaltstack(NULL, &cur) == 0 && !(cur.ss_flags & SS_DISABLE)) {
        t->alt_lo = (uintptr_t)cur.ss_sp;       /* the program's alternate stack: never watched, as a stack */
        t->alt_hi = (uintptr_t)cur.ss_sp + cur.ss_size;
    }
    int rc = start_events(t, why, n);
    if (rc) {
        munmap(t, sizeof *t);
        return rc;
    }
    t->st.period = pf_pmu.period;
    all_lock();
    t->next_all = pf_all;
    pf_all = t;
    all_unlock();
    pf_watch_self = t;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
    if (!pf_watch_stopped && t->sample_fd >= 0)
        ioctl(t->sample_fd, PERF_EVENT_IOC_ENABLE, 0);
    return 0;
}

int pf_watch_pending(void)
{
    pf_watch_thread_t *t = pf_watch_self;
    return t && t->head != t->tail;
}

__thread uint32_t pf_watch_attention __attribute__((tls_model("initial-exec")));
__thread uint32_t pf_watch_spawning __attribute__((tls_model("initial-exec")));

int pf_watch_needs_visit(void)
{
    pf_watch_thread_t *t = pf_watch_self;
    return t && (t->head != t->tail || t->copy_expiry_ns);
}

static int write_stats(pf_watch_thread_t *t, const pf_watch_sink_t *sink, uint64_t now_rel)
{
    uint32_t bytes = pf_align8(8 + sizeof(pf_rec_watch_stats_t));
    void *rec = sink->reserve(sink->ctx, bytes);
    if (!rec)
        return -ENOSPC;
    pf_rec_watch_stats_t s;
    memset(&s, 0, sizeof s);
    s.t_ns = now_rel;
    s.period = pf_watch_sample_period(t);
    s.widened = t->sample_doublings;
    s.tid = (uint32_t)t->tid;
    s.source = (uint8_t)(pf_pmu.source ? pf_pmu.source : PF_WATCH_SRC_DECODE);
    s.emulated = !pf_watch_cfg.emulate_breakpoints ? 0
                 : pf_watch_cfg.emulate_pages  ? PF_WATCH_EMU_PAGES
                                               : PF_WATCH_EMU_STEPS;
    s.budget_pct = pf_watch_cfg.emulate_budget_pct < 100 ? (uint8_t)pf_watch_cfg.emulate_budget_pct : 0;
    snprintf(s.event, sizeof s.event, "%s", pf_pmu.name);
    const pf_watch_totals_t *c = &t->st;
    s.samples = c->samples;
    s.samples_armed = c->samples_armed;
    s.dropped_filter = c->dropped_filter;
    s.dropped_nomem = c->dropped_nomem;
    s.dropped_busy = c->dropped_busy;
    s.dropped_reservoir = c->dropped_reservoir;
    s.traps = c->traps;
    s.same_call = c->same_call;
    s.header_words = c->header_words;
    s.store_pairs = c->store_pairs;
    s.store_bytes = c->store_bytes;
    s.silent_store_bytes = c->silent_store_bytes;
    s.approx_store_bytes = c->approx_store_bytes;
    s.load_pairs = c->load_pairs;
    s.load_bytes = c->load_bytes;
    s.redundant_load_bytes = c->redundant_load_bytes;
    s.copy_watches = c->copy_watches;
    s.copy_writes = c->copy_writes;
    memset(rec, 0, bytes);
    memcpy((char *)rec + 8, &s, sizeof s);
    sink->commit(sink->ctx, rec, PF_REC_WATCH_STATS, (uint16_t)pf_watch_cfg.modes, bytes);
    t->st_written_traps = c->traps + c->copy_watches;
    return 0;
}

int pf_watch_drain(const pf_watch_sink_t *sink)
{
    pf_watch_thread_t *t = pf_watch_self;
    if (!t || !sink)
        return 0;
    int written = 0;
    t->busy = 1;        /* samples inside drain would watch pyflow's own stores */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint64_t mono = pf_watch_mono_ns(), now_rel = sink->now_ns ? sink->now_ns(sink->ctx) : 0;
    while (t->tail != t->head) {
        pf_watch_pair_t *p = &t->ring[t->tail % PF_WATCH_RING];
        int copy_write = p->kind == PF_WATCH_KIND_COPY_WRITE;
        if (!copy_write && pf_watch_cfg.is_object_header && pf_watch_cfg.is_object_header((uintptr_t)p->addr)) {
            /* a refcount or type word: interpreter noise, out of the numerator and the denominator */
            t->st.header_words++;
            if (p->kind == PF_ACCESS_STORE) {
                t->st.store_pairs--;
                t->st.store_bytes -= p->credited;
                if (p->flags & PF_ACCESS_REDUNDANT)
                    t->st.silent_store_bytes -= p->credited;
                if (p->flags & PF_ACCESS_APPROX)
                    t->st.approx_store_bytes -= p->credited;
            } else {
                t->st.load_pairs--;
                t->st.load_bytes -= p->credited;
                if (p->flags & PF_ACCESS_REDUNDANT)
                    t->st.redundant_load_bytes -= p->credited;
            }
        } else {
            /* code ids and modules first: they may write CODE/MODULE records, never inside a reservation */
            pf_watch_pair_prepare(p, sink);
            uint32_t bytes = pf_watch_pair_bytes(p);
            void *rec = sink->reserve(sink->ctx, bytes);
            if (!rec) {
                t->busy = 0;
                return -ENOSPC;
            }
            uint64_t age = mono > p->t_ns ? mono - p->t_ns : 0;
            uint64_t t_orig = p->t_ns;
            p->t_ns = now_rel > age ? now_rel - age : 0;
            pf_watch_pair_encode(p, rec, sink->code_id, sink->ctx);
            p->t_ns = t_orig;
            if (copy_write)
                sink->commit(sink->ctx, rec, PF_REC_COPY_WRITE, 0, bytes);
            else
                sink->commit(sink->ctx, rec, PF_REC_ACCESS_PAIR, p->kind, bytes);
            written++;
        }
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        t->tail++;
    }
    /* counters go out when traps moved (not every sample: drains are frequent), and once after the stop, so
     * that a run with samples but no trap still says what watch did */
    int final = pf_watch_stopped && !t->st_written_final;
    if ((written || final || t->st.traps + t->st.copy_watches != t->st_written_traps) &&
        write_stats(t, sink, now_rel) == 0) {
        written++;
        t->st_written_final |= pf_watch_stopped;
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
    return written;
}

void pf_watch_thread_end(const pf_watch_sink_t *sink)
{
    if (pf_watch_io_depth)
        pf_watch_io_done_slow(0);   /* a call the thread never returned from (pthread_cancel in a read) */
    pf_watch_thread_t *t = pf_watch_self;
    if (!t)
        return;
    t->busy = 1;
    if (t->sample_fd >= 0)
        ioctl(t->sample_fd, PERF_EVENT_IOC_DISABLE, 0);
    for (int i = 0; i < t->n_slots; i++)
        if (t->slot[i].state != PF_SLOT_FREE)
            pf_watch_slot_disarm(t, i);
    if (sink)
        pf_watch_drain(sink);
    t->busy = 1;
    pf_watch_table_release(t);
    pf_watch_slots_close(t);
    if (t->sample_fd >= 0)
        close(t->sample_fd);
    t->sample_fd = -1;
    pf_watch_ring_unmap(&t->sample_ring);
    release_fds(t);
    /* keep the counters for pf_watch_get_totals: the state stays on the list, its events closed */
    pf_watch_self = NULL;
}

void pf_watch_stop(void)
{
    pf_watch_stopped = 1;
    all_lock();
    for (pf_watch_thread_t *t = pf_all; t; t = t->next_all)
        if (t->sample_fd >= 0)
            ioctl(t->sample_fd, PERF_EVENT_IOC_DISABLE, 0);
    all_unlock();
}

int pf_watch_fork_child(void)
{
    /* the inherited fds name the parent's events: close them, never ioctl them */
    pf_watch_thread_t *self = pf_watch_self;
    for (pf_watch_thread_t *t = pf_all, *next; t; t = next) {
        next = t->next_all;
        for (int i = 0; i < t->n_slots; i++)
            if (t->slot[i].fd >= 0)
                close(t->slot[i].fd);
        if (t->sample_fd >= 0)
            close(t->sample_fd);
        pf_watch_ring_unmap(&t->sample_ring);
        if (t != self)
            munmap(t, sizeof *t);
    }
    pf_all = NULL;
    pf_all_lock = 0;
    pf_fds_held = 0;
    pf_watch_table_reset();
    pf_watch_io_fork_child();
    pf_watch_masked_fork_child();
    if (!self || !pf_ready)
        return 0;
    memset(&self->st, 0, sizeof self->st);
    self->head = self->tail = 0;
    self->walking = 0;
    self->n_slots = 0;
    self->sample_fd = -1;
    self->fds_reserved = 0;
    self->tid = (int)syscall(SYS_gettid);
    self->next_all = NULL;
    self->st.period = pf_pmu.period;
    char why[128];
    int rc = start_events(self, why, sizeof why);
    if (rc) {
        pf_watch_self = NULL;
        return rc;
    }
    pf_all = self;
    self->busy = 0;
    if (!pf_watch_stopped && self->sample_fd >= 0)
        ioctl(self->sample_fd, PERF_EVENT_IOC_ENABLE, 0);
    return 0;
}

void pf_watch_get_totals(pf_watch_totals_t *out)
{
    memset(out, 0, sizeof *out);
    all_lock();
    for (pf_watch_thread_t *t = pf_all; t; t = t->next_all) {
        const pf_watch_totals_t *c = &t->st;
        out->samples += c->samples;
        out->samples_armed += c->samples_armed;
        out->dropped_filter += c->dropped_filter;
        out->dropped_nomem += c->dropped_nomem;
        out->dropped_busy += c->dropped_busy;
        out->dropped_reservoir += c->dropped_reservoir;
        out->traps += c->traps;
        out->same_call += c->same_call;
        out->header_words += c->header_words;
        out->pairs_lost += c->pairs_lost;
        out->store_pairs += c->store_pairs;
        out->store_bytes += c->store_bytes;
        out->silent_store_bytes += c->silent_store_bytes;
        out->approx_store_bytes += c->approx_store_bytes;
        out->load_pairs += c->load_pairs;
        out->load_bytes += c->load_bytes;
        out->redundant_load_bytes += c->redundant_load_bytes;
        out->copy_watches += c->copy_watches;
        out->copy_writes += c->copy_writes;
    }
    all_unlock();
    out->period = pf_pmu.period;
}

int pf_watch_signal(void) { return pf_ready ? pf_signo : 0; }

const char *pf_watch_event_name(uint64_t *period)
{
    if (period)
        *period = pf_pmu.period;
    return pf_pmu.name;
}
