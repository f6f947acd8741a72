/* pf_watch_handlers.c - the CL algorithm, in the signal handlers: a sample stops the thread, the next memory
 * instruction of the wanted kind is found by single-stepping (the overflow skids past the instruction that
 * caused it, so decoding at the sample PC alone almost never finds a store), its word is watched with a debug
 * register, the first trap is that access itself (x86 data breakpoints trap after the access), and the next
 * trap compares the value: the same bytes stored again is a silent store, the same value loaded again by
 * another native call a redundant load. Copy watches (pf_watch_copies.c) end at the first write that changes
 * their word.
 *
 * Signal contract: the handlers run on the interrupted stack (there is no alternate stack of watch's own:
 * it would be the program's too), whose words are never watched; they save and restore errno, never
 * allocate or lock, and write only the thread's mmap'd state. The sampling signal is masked while SIGTRAP is
 * handled and vice versa. A step walk never starts while the interrupted code blocks SIGTRAP (the kernel
 * kills a thread whose forced single-step trap is blocked). Records are produced by pf_watch_drain, outside
 * any handler.
 */
#include "pf_sys.h"
#include "pf_watch_int.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include <time.h>
#include <unistd.h>

uint64_t pf_watch_thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t pf_watch_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Reads len bytes at addr without faulting (the address may be unmapped). Returns 0 or -1. */
int pf_watch_safe_read(uint64_t addr, void *dst, size_t len)
{
    return pf_sys_read_own((const void *)(uintptr_t)addr, dst, len);
}

/* The instruction bytes at pc: directly when they cannot cross into the next page, else fault-tolerant. */
static size_t code_at(uint64_t pc, uint8_t buf[15])
{
    size_t room = 4096 - (pc & 4095);
    if (room >= 15) {
        memcpy(buf, (const void *)(uintptr_t)pc, 15);
        return 15;
    }
    if (pf_watch_safe_read(pc, buf, 15) == 0)
        return 15;
    memcpy(buf, (const void *)(uintptr_t)pc, room);
    return room;
}

static int in_range(uint64_t a, uintptr_t lo, uintptr_t hi) { return a >= lo && a < hi; }

static int pc_ignored(uint64_t pc)
{
    for (int i = 0; i < PF_WATCH_IGNORE_RANGES; i++)
        if (in_range(pc, pf_watch_cfg.ignore[i].lo, pf_watch_cfg.ignore[i].hi))
            return 1;
    return 0;
}

/* Words never watched: our own state, the signal stack, the thread's stack (frames are reused by other
 * calls, so a "repeat" there is another variable), and TLS around the thread pointer. */
int pf_watch_addr_ignored(const pf_watch_thread_t *t, uint64_t a)
{
    return in_range(a, (uintptr_t)t, (uintptr_t)t + sizeof *t) || in_range(a, t->alt_lo, t->alt_hi) ||
           in_range(a, t->stack_lo, t->stack_hi) || in_range(a, t->fs_base - 65536, t->fs_base + 4096) ||
           a < 4096 || pf_watch_spawning;
}

static void capture_ctx(pf_watch_thread_t *t, const ucontext_t *uc, uint64_t ip, pf_watch_ctx_t *c)
{
    c->n_py = 0;
    c->truncated = 0;
    c->no_pystate = 1;
    if (pf_watch_cfg.py_capture) {
        int trunc = 0;
        int n = pf_watch_cfg.py_capture(c->py, PF_WATCH_CTX_PY, &trunc);
        if (n >= 0) {
            c->n_py = (uint16_t)n;
            c->no_pystate = 0;
            c->truncated = (uint8_t)trunc;
        }
    }
    if (pf_watch_cfg.native_unwind) {
        int n = pf_watch_cfg.native_unwind(uc, c->native, PF_WATCH_CTX_NATIVE);
        if (n > 0) {
            c->n_native = (uint16_t)n;
            return;
        }
    }
    /* frame-pointer walk (no unwinder, or it declined), bounded by the thread's stack so no read can fault */
    int n = 0;
    c->native[n++] = ip;
    uint64_t fp = (uint64_t)uc->uc_mcontext.gregs[REG_RBP];
    while (n < PF_WATCH_CTX_NATIVE && fp >= t->stack_lo && fp + 16 <= t->stack_hi && !(fp & 7)) {
        const uint64_t *f = (const uint64_t *)(uintptr_t)fp;
        if (f[1] < 4096)
            break;
        c->native[n++] = f[1];
        if (f[0] <= fp)
            break;
        fp = f[0];
    }
    c->n_native = (uint16_t)n;
}

static int same_pystack(const pf_watch_ctx_t *a, const pf_watch_ctx_t *b)
{
    if (a->n_py != b->n_py || a->no_pystate != b->no_pystate)
        return 0;
    for (unsigned i = 0; i < a->n_py; i++)
        if (a->py[i].code != b->py[i].code || a->py[i].lasti_bytes != b->py[i].lasti_bytes)
            return 0;
    return 1;
}

static uint64_t epoch_now(void) { return pf_watch_cfg.thread_epoch ? pf_watch_cfg.thread_epoch() : 0; }

/* Chooses the slot for a new watch: a free one; for a copy's watch, the oldest copy watch; else reservoir
 * replacement. Returns the slot, or -1 (every slot kept its watch). */
static int choose_slot(pf_watch_thread_t *t, uint64_t addr, uint32_t len, uint32_t mode)
{
    int pick = -1;
    for (int i = 0; i < t->n_slots; i++) {
        pf_watch_slot_t *s = &t->slot[i];
        if (s->state != PF_SLOT_FREE && addr < s->addr + s->len && s->addr < addr + len)
            return -1;      /* already watched: reading it now would trap on our own read */
    }
    for (int i = 0; i < t->n_slots && pick < 0; i++)
        if (t->slot[i].state == PF_SLOT_FREE)
            pick = i;
    if (pick >= 0)
        return pick;
    /* Copies are not samples of a stream: the newest copy is the one its program is about to write (or not),
     * and a copy watch that no write hit since it was armed is the likeliest to stay unwritten, for the byte
     * comparison at its free to judge. With debug registers that fire, nothing else ever frees a slot whose
     * words nobody writes (emulation gives up after its step limit): by reservoir, such old watches kept the
     * newest copies out (watch_copies.py's bytearray(base), written on the next line, went unwatched). */
    for (int i = 0; i < t->n_slots && mode == PF_WATCH_MODE_COPIES; i++) {
        const pf_watch_slot_t *s = &t->slot[i];
        if (s->mode == PF_WATCH_MODE_COPIES && (pick < 0 || s->armed_ns < t->slot[pick].armed_ns))
            pick = i;
    }
    if (pick >= 0)
        return pick;
    for (int i = 0; i < t->n_slots; i++) {
        pf_watch_slot_t *s = &t->slot[i];
        if (pick < 0 && pf_watch_reservoir_pick(&t->rng, s->survived))
            pick = i;
        else
            s->survived++;
    }
    return pick;
}

/* A slot for a new watch of [addr, addr+len) in mode, its previous watch (if any) disarmed and its
 * fields reset; -1 (counted) when every slot keeps its watch. */
int pf_watch_claim_slot(pf_watch_thread_t *t, uint64_t addr, uint32_t len, uint32_t mode)
{
    int i = choose_slot(t, addr, len, mode);
    if (i < 0) {
        t->st.dropped_reservoir++;
        return -1;
    }
    pf_watch_slot_t *s = &t->slot[i];
    if (s->state != PF_SLOT_FREE)
        pf_watch_slot_disarm(t, i);
    s->mode = mode;
    s->addr = addr;
    s->len = len;
    s->float_elem = 0;
    s->survived = 0;
    s->same_call = 0;
    return i;
}

static void push_pair(pf_watch_thread_t *t, pf_watch_slot_t *s, unsigned kind, unsigned flags,
                      const pf_watch_ctx_t *repeat, uint64_t credited)
{
    uint32_t h = t->head;
    if (h - t->tail >= PF_WATCH_RING) {
        t->st.pairs_lost++;
        return;
    }
    pf_watch_pair_t *p = &t->ring[h % PF_WATCH_RING];
    p->t_ns = pf_watch_mono_ns();
    p->addr = s->addr;
    p->credited = credited;
    p->len = (uint8_t)s->len;
    p->flags = (uint8_t)(flags | (repeat->no_pystate ? PF_ACCESS_NO_PYSTATE : 0));
    p->kind = (uint8_t)kind;
    p->first_valid = (flags & PF_ACCESS_REDUNDANT) != 0;
    if (p->first_valid)
        p->first = s->first;
    p->repeat = *repeat;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->head = h + 1;
    pf_watch_attention = 1;    /* the thread's next visit drains it */
}

/* The watch mode an access is sampled for, or 0 when this run watches no such access. */
static unsigned mode_of(const pf_watch_access_t *acc)
{
    unsigned modes = pf_watch_cfg.modes;
    if ((modes & PF_WATCH_MODE_STORES) && (acc->kind & PF_WATCH_ACC_STORE))
        return PF_WATCH_MODE_STORES;
    if ((modes & PF_WATCH_MODE_LOADS) && (acc->kind & (PF_WATCH_ACC_LOAD | PF_WATCH_ACC_STORE)) == PF_WATCH_ACC_LOAD)
        return PF_WATCH_MODE_LOADS;
    return 0;
}

/* Puts a watch on the access acc of the instruction at pc. done: the access has already run (a sample
 * with its data address arrives after the instruction retired), so the value to compare with is in memory
 * now; else it is about to run and its own trap (trap-after) takes the value. */
static void arm_access(pf_watch_thread_t *t, ucontext_t *uc, uint64_t pc, const pf_watch_access_t *acc,
                       unsigned mode, int done)
{
    if (pf_watch_addr_ignored(t, acc->ea)) {
        t->st.dropped_filter++;
        return;
    }
    uint64_t expect_pc = pc + acc->insn_len;   /* where the access's own trap (trap-after) lands */
    if (pf_watch_cfg.emulate_breakpoints && pf_watch_futile_skip(t->futile, expect_pc)) {
        t->st.dropped_filter++;
        return;
    }
    uint64_t addr = acc->ea;
    uint32_t len = acc->size;
    if (!(len == 1 || len == 2 || len == 4 || len == 8) || (addr & (len - 1))) {
        addr &= ~7ull;     /* vectors and unaligned accesses: the aligned word holding the first byte */
        len = 8;
    }
    int i = pf_watch_claim_slot(t, addr, len, mode);
    if (i < 0)
        return;
    pf_watch_slot_t *s = &t->slot[i];
    s->float_elem = (acc->kind & PF_WATCH_ACC_FLOAT) && (acc->elem_size == 4 || acc->elem_size == 8) &&
                    len % acc->elem_size == 0 ? acc->elem_size : 0;
    s->expect_pc = expect_pc;
    s->epoch = epoch_now();
    if ((mode == PF_WATCH_MODE_LOADS || done) && pf_watch_safe_read(addr, s->value, len) != 0) {
        s->state = PF_SLOT_FREE;
        t->st.dropped_filter++;     /* the access would fault (or was unmapped since): not ours to watch */
        return;
    }
    capture_ctx(t, uc, pc, &s->first);
    if (pf_watch_slot_arm(t, i, addr, len, mode == PF_WATCH_MODE_LOADS) != 0) {
        s->state = PF_SLOT_FREE;
        t->st.dropped_busy++;
        return;
    }
    s->state = done ? PF_SLOT_WATCHING : PF_SLOT_AWAIT_FIRST;
    t->st.samples_armed++;
}

/* Looks at the instruction the thread is about to run. Returns 1 when the walk is over (a watch was armed,
 * or the sample was dropped for a reason already counted), 0 to keep stepping. */
static int try_here(pf_watch_thread_t *t, ucontext_t *uc)
{
    uint64_t pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    if (pc_ignored(pc)) {
        t->st.dropped_filter++;
        return 1;
    }
    uint8_t code[15];
    size_t n = code_at(pc, code);
    pf_watch_regs_t regs;
    pf_watch_regs_from_uc(uc, t->fs_base, t->gs_base, &regs);
    pf_watch_access_t acc;
    if (pf_watch_decode(code, n, pc, &regs, &acc) != 0)
        return 0;
    unsigned mode = mode_of(&acc);
    if (!mode)
        return 0;
    arm_access(t, uc, pc, &acc, mode, 0);
    return 1;
}

/* A sample that names its instruction (ip) and data address (PEBS, IBS, page faults). An instruction still
 * to run (a page fault: the signal comes before it runs again) is watched as a decoded one where it decodes
 * to one memory operand; otherwise (a retired instruction, whose registers are gone, or a string instruction)
 * it is decoded only for its kind and width, and the sampled address is watched. */
static void try_sampled(pf_watch_thread_t *t, ucontext_t *uc, uint64_t ip, uint64_t addr)
{
    int pending = ip == (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    if (pending && try_here(t, uc))
        return;
    if (!addr || (int64_t)ip < 0 || pc_ignored(ip)) {
        t->st.dropped_filter++;     /* no address (an IBS op that is no access), kernel, or ours */
        return;
    }
    uint8_t code[15];
    size_t n = code_at(ip, code);
    pf_watch_regs_t regs;
    pf_watch_regs_from_uc(uc, t->fs_base, t->gs_base, &regs);
    pf_watch_access_t acc;
    if (pf_watch_decode(code, n, ip, &regs, &acc) != 0 && pf_watch_decode_string_store(code, n, ip, &regs, &acc) != 0) {
        memset(&acc, 0, sizeof acc);    /* not decodable here: the event's own kind, one word */
        acc.kind = pf_watch_sample_kind ? pf_watch_sample_kind : PF_WATCH_ACC_STORE;
        acc.size = 8;
    }
    acc.ea = addr;
    unsigned mode = mode_of(&acc);
    if (!mode) {
        t->st.dropped_nomem++;
        return;
    }
    arm_access(t, uc, ip, &acc, mode, !pending);
}

/* Breakpoint emulation: with TF kept set while any slot is armed, decode each instruction before it runs;
 * one that touches an armed word (a store for a W slot, any access for W|R) makes the next step trap
 * behave as that slot's breakpoint, with the same trap-after state a debug register gives. */
static int any_armed(const pf_watch_thread_t *t)
{
    for (int i = 0; i < t->n_slots; i++)
        if (t->slot[i].state != PF_SLOT_FREE)
            return 1;
    return 0;
}

/* A chain's CPU time is the thread's own, mostly the kernel delivering one SIGTRAP per instruction (16 us
 * a step on a PVM guest, thousands per chain). A rate per CPU-second alone let chains step most of the
 * time: 35x on bench/workloads/copies.py for copy watches, 2.5-6.8x for stores and loads at the default
 * period. So a chain begins only after the thread ran without stepping long enough that stepping keeps
 * within budget_pct of its CPU time, and, for sources that come in bursts (page faults, copies), at most
 * rate_hz times per CPU-second. Samples refused meanwhile are dropped as busy; fractions are ratios of
 * watched bytes, so fewer watches widen their error but do not bias them. */
int pf_watch_emu_budget_allows(uint64_t now, uint64_t last_start, uint64_t last_end, uint64_t min_gap_ns,
                               unsigned budget_pct)
{
    if (!last_start)
        return 1;
    uint64_t ended = last_end > last_start ? last_end : last_start;
    uint64_t cost = ended - last_start;
    uint64_t gap = min_gap_ns;
    if (budget_pct > 0 && budget_pct < 100) {
        uint64_t idle = cost / budget_pct * (100 - budget_pct);    /* cost : idle = pct : 100 - pct */
        if (idle > gap)
            gap = idle;
    }
    return now >= ended && now - ended >= gap;
}

int pf_watch_emu_chain_begin(pf_watch_thread_t *t, int bursty)
{
    if (t->chain_stepping)
        return 0;
    uint64_t now = pf_watch_thread_cpu_ns();
    uint64_t min_gap = bursty ? 1000000000ull / (pf_watch_cfg.rate_hz ? pf_watch_cfg.rate_hz : 50) : 0;
    if (!pf_watch_emu_budget_allows(now, t->chain_start_ns, t->chain_end_ns, min_gap,
                                    pf_watch_cfg.emulate_budget_pct))
        return 0;
    t->chain_start_ns = now;
    t->chain_stepping = 1;
    return 1;
}

void pf_watch_emu_chain_end(pf_watch_thread_t *t)
{
    pf_watch_emu_chain_end_ago(t, 0);
}

void pf_watch_emu_chain_end_ago(pf_watch_thread_t *t, uint64_t ago_ns)
{
    if (!t->chain_stepping)
        return;
    t->chain_stepping = 0;
    uint64_t now = pf_watch_thread_cpu_ns();
    /* the thread ran at most ago_ns of its CPU time since (wall time passes at least as fast) */
    t->chain_end_ns = now > ago_ns && now - ago_ns > t->chain_start_ns ? now - ago_ns : t->chain_start_ns;
    if (pf_watch_cfg.emulate_pages) {
        /* page watches let the thread run at full speed between faults: the chain cost its fault cycles,
         * in wall time (more than the thread's CPU clock saw of them in a VM: pf_watch_pages.c) */
        uint64_t cost = t->pages_cost_ns < t->chain_end_ns ? t->pages_cost_ns : t->chain_end_ns;
        t->chain_start_ns = t->chain_end_ns - cost;
        t->pages_cost_ns = 0;
    }
}

/* Nothing armed any more: stop stepping, unless a walk still needs it. */
static void emu_stop(pf_watch_thread_t *t, ucontext_t *uc)
{
    if (t->walking)
        return;
    uc->uc_mcontext.gregs[REG_EFL] &= ~PF_WATCH_EFL_TF;
    pf_watch_emu_chain_end(t);
}

/* Ends every watch of t: none was touched in time (the instructions that armed them are tried less). */
static void give_up_all(pf_watch_thread_t *t)
{
    for (int i = 0; i < t->n_slots; i++) {
        if (t->slot[i].state == PF_SLOT_FREE)
            continue;
        if (t->slot[i].mode != PF_WATCH_MODE_COPIES)
            pf_watch_futile_gave_up(t->futile, t->slot[i].expect_pc);
        pf_watch_slot_disarm(t, i);
    }
}

int pf_watch_slot_touched(pf_watch_thread_t *t, const ucontext_t *uc)
{
    uint64_t pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    uint8_t code[15];
    size_t n = code_at(pc, code);
    pf_watch_regs_t regs;
    pf_watch_regs_from_uc(uc, t->fs_base, t->gs_base, &regs);
    pf_watch_access_t acc;
    if (pf_watch_decode(code, n, pc, &regs, &acc) != 0 && pf_watch_decode_string_store(code, n, pc, &regs, &acc) != 0)
        return -1;
    for (int i = 0; i < t->n_slots; i++) {
        const pf_watch_slot_t *s = &t->slot[i];
        if (s->state == PF_SLOT_FREE || acc.ea >= s->addr + s->len || acc.ea + acc.size <= s->addr)
            continue;
        if (s->mode != PF_WATCH_MODE_LOADS && !(acc.kind & PF_WATCH_ACC_STORE))
            continue;   /* stores and copies are write watches */
        return i;
    }
    return -1;
}

static void emu_look(pf_watch_thread_t *t, ucontext_t *uc)
{
    if (pf_watch_cfg.emulate_pages) {
        /* protected pages trap by themselves: no stepping, but for a walk */
        if (!t->walking)
            uc->uc_mcontext.gregs[REG_EFL] &= ~PF_WATCH_EFL_TF;
        if (!any_armed(t))
            pf_watch_emu_chain_end(t);
        return;
    }
    if (!any_armed(t)) {
        emu_stop(t, uc);
        return;
    }
    if (++t->emu_steps > pf_watch_cfg.emulate_step_limit) {     /* a watch nobody touches would crawl forever */
        give_up_all(t);
        t->emu_steps = 0;
        emu_stop(t, uc);
        return;
    }
    uc->uc_mcontext.gregs[REG_EFL] |= PF_WATCH_EFL_TF;
    int hit = pf_watch_slot_touched(t, uc);
    if (hit >= 0)
        t->emu_pending = hit;
}

/* A signal meant for the program: its handler (through the runtime), else the default action. */
void pf_watch_foreign_signal(int sig, siginfo_t *si, void *uc)
{
    if (pf_watch_cfg.foreign_signal) {
        pf_watch_cfg.foreign_signal(sig, si, uc);
        return;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void step_safely(pf_watch_thread_t *t, ucontext_t *uc);

/* Page watches nobody touched within their chain's time: ended, so that the next sample can watch. */
void pf_watch_pages_give_up(pf_watch_thread_t *t)
{
    t->busy = 1;
    give_up_all(t);
    t->busy = 0;
    t->pages_faults = 0;
    pf_watch_emu_chain_end(t);
}

/* 1 when this sample is to be dropped before its work: it came within half the floor of the last handler's
 * return (while that handler ran, or just after: its work would only feed the next). A sample within the
 * floor counts as crowded; two in a row widen the thread's period, at most once per sample that did its
 * work (a backlog of queued signals, each crowded, widens it once). pf_watch_int.h, the sampling's own
 * cost. */
static int sample_crowded(pf_watch_thread_t *t, uint64_t now)
{
    uint64_t gap = now - t->sample_exit_ns, floor_ns = pf_watch_sample_floor_ns(t);
    if (!t->sample_exit_ns || gap >= floor_ns) {
        t->crowded = 0;
        return 0;
    }
    if (++t->crowded >= 2 && t->sample_worked) {
        pf_watch_sample_widen(t);
        t->crowded = 0;
        t->sample_worked = 0;
    }
    return gap < floor_ns / 2;
}

void pf_watch_sample_handler(int sig, siginfo_t *si, void *ucv)
{
    int saved = errno;
    pf_watch_thread_t *t = pf_watch_self;
    ucontext_t *uc = ucv;
    if (si->si_code <= 0) {     /* SI_USER, SI_QUEUE, SI_TKILL: sent by someone, not the sampling event */
        pf_watch_foreign_signal(sig, si, ucv);
        goto out;
    }
    if (!t || pf_watch_stopped)
        goto out;
    t->st.samples++;
    if (sample_crowded(t, pf_watch_mono_ns())) {
        t->st.dropped_busy++;
        goto sampled;
    }
    t->sample_worked = 1;
    if (pf_watch_cfg.emulate_pages && !t->busy && !t->walking) {
        if (!any_armed(t))
            pf_watch_emu_chain_end(t);  /* its watches ended outside the handlers (a free of their object) */
        else if (pf_watch_thread_cpu_ns() - t->chain_start_ns > PF_WATCH_PAGES_CHAIN_NS)
            pf_watch_pages_give_up(t);
    }
    /* emulating, a sample while a word is watched would start a second single-step chain on top of the
     * first: the slots' own steps are the expensive part, so one chain at a time */
    if (t->busy || t->walking || (pf_watch_cfg.hibernating && pf_watch_cfg.hibernating()) ||
        sigismember(&uc->uc_sigmask, SIGTRAP) || (pf_watch_cfg.emulate_breakpoints && any_armed(t))) {
        t->st.dropped_busy++;
        goto sampled;
    }
    if (pf_watch_cfg.emulate_breakpoints && !pf_watch_emu_chain_begin(t, t->sample_ring.base != NULL)) {
        t->st.dropped_busy++;
        goto sampled;
    }
    t->busy = 1;
    uint64_t ip, addr;
    if (t->sample_ring.base) {
        if (pf_watch_ring_last(&t->sample_ring, &ip, &addr))
            try_sampled(t, uc, ip, addr);
        else
            t->st.dropped_filter++;     /* the signal of a sample already consumed */
        if (pf_watch_cfg.emulate_breakpoints)
            emu_look(t, uc);
    } else if (!try_here(t, uc)) {
        /* skid: the instruction that overflowed has retired; step to the next one of the wanted kind, unless
         * walks from here keep finding none within the limit (stores in a BLAS kernel: two thirds of the
         * samples of bench/workloads/numeric.py, 64 single steps of ~6 us each in a KVM guest) */
        uint64_t from = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
        if (pf_watch_futile_skip(t->walk_futile, from)) {
            t->st.dropped_nomem++;
        } else {
            t->walking = 1;
            t->walk_steps = 0;
            t->walk_from = from;
            uc->uc_mcontext.gregs[REG_EFL] |= PF_WATCH_EFL_TF;
        }
    } else if (pf_watch_cfg.emulate_breakpoints) {
        emu_look(t, uc);
    }
    if (!(uc->uc_mcontext.gregs[REG_EFL] & PF_WATCH_EFL_TF) && !(pf_watch_cfg.emulate_pages && any_armed(t)))
        pf_watch_emu_chain_end(t);     /* the sample armed nothing: no chain */
    t->busy = 0;
    step_safely(t, uc);
sampled:
    t->sample_exit_ns = pf_watch_mono_ns();
out:
    errno = saved;
}

static void on_step(pf_watch_thread_t *t, ucontext_t *uc)
{
    t->walk_steps++;
    int done = 1;
    if (pf_watch_cfg.hibernating && pf_watch_cfg.hibernating())
        t->st.dropped_busy++;
    else if (try_here(t, uc))
        pf_watch_futile_repeated(t->walk_futile, t->walk_from);   /* found one from there: keep walking it */
    else if (t->walk_steps >= PF_WATCH_STEP_LIMIT) {
        t->st.dropped_nomem++;
        pf_watch_futile_gave_up(t->walk_futile, t->walk_from);
    } else
        done = 0;
    if (done) {
        t->walking = 0;
        uc->uc_mcontext.gregs[REG_EFL] &= ~PF_WATCH_EFL_TF;
    }
}

static uint64_t credited_of(const pf_watch_thread_t *t, const pf_watch_slot_t *s)
{
    /* the samples this watch stands for: itself, plus its share of those dropped while it survived */
    uint64_t share = t->n_slots ? s->survived / (uint64_t)t->n_slots : 0;
    return (uint64_t)s->len * (1 + share);
}

static void finish(pf_watch_thread_t *t, int i) { pf_watch_slot_disarm(t, i); }

/* A write to a watched word of a copy or its source (trap-after: the new value is in memory). The same
 * value written again changes nothing: keep watching. Otherwise the copy was needed: report the writer once
 * and end every watch of that copy. */
static void copy_trap(pf_watch_thread_t *t, int i, ucontext_t *uc, uint64_t pc)
{
    pf_watch_slot_t *s = &t->slot[i];
    if (memcmp((const void *)(uintptr_t)s->addr, s->value, s->len) == 0)
        return;
    uint32_t h = t->head;
    if (h - t->tail >= PF_WATCH_RING) {
        t->st.pairs_lost++;
    } else {
        pf_watch_pair_t *p = &t->ring[h % PF_WATCH_RING];
        capture_ctx(t, uc, pc - 1, &p->repeat);
        p->t_ns = pf_watch_mono_ns();
        p->addr = s->addr;
        p->credited = 0;
        p->copy_id = s->copy_id;
        p->len = (uint8_t)s->len;
        p->flags = (uint8_t)(s->copy_end | (p->repeat.no_pystate ? PF_COPY_WRITE_NO_PYSTATE : 0));
        p->kind = PF_WATCH_KIND_COPY_WRITE;
        p->first_valid = 0;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        t->head = h + 1;
        pf_watch_attention = 1;
        t->st.copy_writes++;
    }
    uint64_t id = s->copy_id;
    for (int k = 0; k < t->n_slots; k++)
        if (t->slot[k].state != PF_SLOT_FREE && t->slot[k].mode == PF_WATCH_MODE_COPIES && t->slot[k].copy_id == id)
            finish(t, k);
}

static void on_trap(pf_watch_thread_t *t, int i, ucontext_t *uc)
{
    pf_watch_slot_t *s = &t->slot[i];
    t->st.traps++;
    if (s->state == PF_SLOT_FREE || t->busy)
        return;
    uint64_t pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    if (s->mode == PF_WATCH_MODE_COPIES) {
        copy_trap(t, i, uc, pc);
        return;
    }
    if (s->state == PF_SLOT_AWAIT_FIRST) {
        /* trap-after: this is the sampled access itself; a store's value is what it just wrote */
        if (s->mode == PF_WATCH_MODE_STORES)
            memcpy(s->value, (const void *)(uintptr_t)s->addr, s->len);
        s->state = PF_SLOT_WATCHING;
        return;
    }
    uint8_t now[8];
    unsigned kind, flags = 0;
    if (s->mode == PF_WATCH_MODE_STORES) {
        memcpy(now, (const void *)(uintptr_t)s->addr, s->len);     /* a W watch: reading does not trap */
        kind = PF_ACCESS_STORE;
    } else {
        /* a W|R watch traps on our own read: stop it first */
        ioctl(s->fd, PERF_EVENT_IOC_DISABLE, 0);
        memcpy(now, (const void *)(uintptr_t)s->addr, s->len);
        uint8_t before[15];
        uint64_t from = pc - 15;
        if ((pc & 4095) >= 15)
            memcpy(before, (const void *)(uintptr_t)from, 15);
        else if (pf_watch_safe_read(from, before, 15) != 0)
            memset(before, 0x90, 15);
        pf_watch_regs_t regs;
        pf_watch_regs_from_uc(uc, t->fs_base, t->gs_base, &regs);
        unsigned acc = pf_watch_decode_prev(before, pc, &regs, s->addr, s->len);
        int changed = memcmp(now, s->value, s->len) != 0;
        if ((acc & PF_WATCH_ACC_STORE) || (!acc && changed)) {
            if (!changed) {         /* a silent store: the loaded value is still the one to repeat */
                ioctl(s->fd, PERF_EVENT_IOC_ENABLE, 0);
                return;
            }
            /* overwritten before any repeat: a load pair that is not redundant */
        }
        if (!acc)
            flags |= PF_ACCESS_UNCERTAIN;
        kind = PF_ACCESS_LOAD;
    }
    flags |= pf_watch_value_same(s->value, now, s->len, s->float_elem,
                                 pf_watch_cfg.float_rel_tol);
    pf_watch_ctx_t repeat;
    capture_ctx(t, uc, pc - 1, &repeat);
    if (!pf_watch_cfg.keep_same_call && pf_watch_cfg.thread_epoch && s->epoch == epoch_now() &&
        same_pystack(&s->first, &repeat)) {
        /* both accesses inside one native call: not an interaction inefficiency; keep watching for a
         * repeat from another call (evicting here would hide it), but not forever */
        t->st.same_call++;
        memcpy(s->value, now, s->len);
        if (++s->same_call >= PF_WATCH_SAME_CALL_MAX)
            finish(t, i);
        else if (s->mode == PF_WATCH_MODE_LOADS)
            ioctl(s->fd, PERF_EVENT_IOC_ENABLE, 0);
        return;
    }
    uint64_t credited = credited_of(t, s);
    if (kind == PF_ACCESS_STORE) {
        t->st.store_pairs++;
        t->st.store_bytes += credited;
        if (flags & PF_ACCESS_REDUNDANT)
            t->st.silent_store_bytes += credited;
        if (flags & PF_ACCESS_APPROX)
            t->st.approx_store_bytes += credited;
    } else {
        t->st.load_pairs++;
        t->st.load_bytes += credited;
        if (flags & PF_ACCESS_REDUNDANT)
            t->st.redundant_load_bytes += credited;
    }
    push_pair(t, s, kind, flags, &repeat, credited);
    finish(t, i);
}

/* 1 when the instruction about to run enters the kernel. Single steps must not go through one: a system
 * call can block SIGTRAP (sigprocmask, sigreturn to a context that blocks it) or make a thread or process
 * that starts with every signal blocked (clone, fork), and a trap-flag SIGTRAP that arrives blocked is
 * forced: the kernel kills the process. */
static int at_syscall(const ucontext_t *uc)
{
    uint8_t code[15];
    size_t n = code_at((uint64_t)uc->uc_mcontext.gregs[REG_RIP], code);
    return n >= 2 && ((code[0] == 0x0f && (code[1] == 0x05 || code[1] == 0x34)) || (code[0] == 0xcd && code[1] == 0x80));
}

/* Ends every single-step chain of the thread: the skid walk (its sample is dropped) and the emulated watches
 * (their words are disarmed; compare-at-free still judges copies). */
static void stop_stepping(pf_watch_thread_t *t, ucontext_t *uc)
{
    if (t->walking) {
        t->walking = 0;
        t->st.dropped_nomem++;
    }
    if (pf_watch_cfg.emulate_breakpoints && !pf_watch_cfg.emulate_pages) {
        for (int i = 0; i < t->n_slots; i++)
            if (t->slot[i].state != PF_SLOT_FREE)
                pf_watch_slot_disarm(t, i);
        t->emu_steps = 0;
        t->emu_pending = -1;
        emu_stop(t, uc);
    }
    uc->uc_mcontext.gregs[REG_EFL] &= ~PF_WATCH_EFL_TF;
}

/* Called last by both handlers: a context about to resume with the trap flag set must not step into a
 * system call. */
static void step_safely(pf_watch_thread_t *t, ucontext_t *uc)
{
    if (t && (uc->uc_mcontext.gregs[REG_EFL] & PF_WATCH_EFL_TF) && at_syscall(uc))
        stop_stepping(t, uc);
}

void pf_watch_trap_handler(int sig, siginfo_t *si, void *ucv)
{
    int saved = errno;
    ucontext_t *uc = ucv;
    pf_watch_thread_t *t = pf_watch_self;
    if (si->si_code == TRAP_TRACE) {
        int paged = pf_watch_pages_stepping();     /* the step over a fault on a watched page */
        if (t && pf_watch_cfg.emulate_breakpoints) {
            int hit = t->emu_pending;
            t->emu_pending = -1;
            if (hit >= 0) {
                if (t->slot[hit].state == PF_SLOT_WATCHING && t->slot[hit].mode != PF_WATCH_MODE_COPIES)
                    pf_watch_futile_repeated(t->futile, t->slot[hit].expect_pc);
                t->emu_steps = 0;
                on_trap(t, hit, uc);
            }
            if (t->walking)
                on_step(t, uc);
            emu_look(t, uc);
        } else if (t && t->walking) {
            on_step(t, uc);
        } else {
            uc->uc_mcontext.gregs[REG_EFL] &= ~PF_WATCH_EFL_TF;  /* a TF we left behind (pushf in a walk): drop it */
        }
        if (paged)
            pf_watch_pages_step_done(t);
        step_safely(t, uc);
        pf_watch_pages_step_mask(uc);
    } else if (si->si_code == TRAP_PERF) {
        uint64_t data;
        memcpy(&data, (const char *)si + 24, sizeof data);     /* si_perf_data */
        if (t && (data >> 40) == (0x7066770000000000ull >> 40) && (int)(data & 0xff) < t->n_slots)
            on_trap(t, (int)(data & 0xff), uc);
    } else {
        pf_watch_foreign_signal(sig, si, uc);   /* not ours (int3 in the program, a kill): behave as if we were not here */
    }
    errno = saved;
}

