/* pf_watch_engine.c - the CL algorithm: a sample stops the thread, the next memory instruction of the wanted
 * kind is found by single-stepping (the overflow skids past the instruction that caused it, so decoding at
 * the sample PC alone almost never finds a store), its word is watched with a debug register, the first
 * trap is that access itself (x86 data breakpoints trap after the access), and the next trap compares the
 * value: the same bytes stored again is a silent store, the same value loaded again by another native call a
 * redundant load.
 *
 * Signal contract: both handlers run on the alternate stack (a watched word may be in the handler's own
 * frame otherwise), save and restore errno, never allocate or lock, and write only the thread's mmap'd
 * state. The sampling signal is masked while SIGTRAP is handled and vice versa. A step walk never starts
 * while the interrupted code blocks SIGTRAP (the kernel kills a thread whose forced single-step trap is
 * blocked). Records are produced by pf_watch_drain, outside any handler.
 */
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

#define EFL_TF 0x100

__thread pf_watch_thread_t *pf_watch_self __attribute__((tls_model("initial-exec")));
pf_watch_config_t pf_watch_cfg;
static pf_watch_pmu_t pf_pmu;
static int pf_signo;
static int pf_ready, pf_stopped;
static pf_watch_thread_t *pf_all;           /* every watched thread, for totals and stop */
static int pf_all_lock;
static unsigned pf_thread_ordinal;

static void all_lock(void)
{
    while (__atomic_exchange_n(&pf_all_lock, 1, __ATOMIC_ACQUIRE))
        __builtin_ia32_pause();
}

static void all_unlock(void) { __atomic_store_n(&pf_all_lock, 0, __ATOMIC_RELEASE); }

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Reads len bytes at addr without faulting (the address may be unmapped). Returns 0 or -1. */
static int safe_read(uint64_t addr, void *dst, size_t len)
{
    struct iovec local = {dst, len}, remote = {(void *)(uintptr_t)addr, len};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

/* The instruction bytes at pc: directly when they cannot cross into the next page, else fault-tolerant. */
static size_t code_at(uint64_t pc, uint8_t buf[15])
{
    size_t room = 4096 - (pc & 4095);
    if (room >= 15) {
        memcpy(buf, (const void *)(uintptr_t)pc, 15);
        return 15;
    }
    if (safe_read(pc, buf, 15) == 0)
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
static int addr_ignored(const pf_watch_thread_t *t, uint64_t a)
{
    return in_range(a, (uintptr_t)t, (uintptr_t)t + sizeof *t) || in_range(a, t->alt_lo, t->alt_hi) ||
           in_range(a, t->stack_lo, t->stack_hi) || in_range(a, t->fs_base - 65536, t->fs_base + 4096) ||
           a < 4096;
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
        c->n_native = (uint16_t)(n > 0 ? n : 0);
        return;
    }
    /* frame-pointer walk, bounded by the thread's stack so no read can fault */
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

/* Chooses the slot for a new watch: a free one, one whose watch a free on another thread killed, else
 * reservoir replacement. Returns the slot, or -1 (every slot kept its watch). */
static int choose_slot(pf_watch_thread_t *t, uint64_t addr, uint32_t len)
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
static int claim_slot(pf_watch_thread_t *t, uint64_t addr, uint32_t len, uint32_t mode)
{
    int i = choose_slot(t, addr, len);
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
    p->t_ns = mono_ns();
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
    unsigned modes = pf_watch_cfg.modes, mode;
    if ((modes & PF_WATCH_MODE_STORES) && (acc.kind & PF_WATCH_ACC_STORE))
        mode = PF_WATCH_MODE_STORES;
    else if ((modes & PF_WATCH_MODE_LOADS) && (acc.kind & (PF_WATCH_ACC_LOAD | PF_WATCH_ACC_STORE)) == PF_WATCH_ACC_LOAD)
        mode = PF_WATCH_MODE_LOADS;
    else
        return 0;
    if (addr_ignored(t, acc.ea)) {
        t->st.dropped_filter++;
        return 1;
    }
    uint64_t addr = acc.ea;
    uint32_t len = acc.size;
    if (!(len == 1 || len == 2 || len == 4 || len == 8) || (addr & (len - 1))) {
        addr &= ~7ull;     /* vectors and unaligned accesses: the aligned word holding the first byte */
        len = 8;
    }
    int i = claim_slot(t, addr, len, mode);
    if (i < 0)
        return 1;
    pf_watch_slot_t *s = &t->slot[i];
    s->float_elem = (acc.kind & PF_WATCH_ACC_FLOAT) && (acc.elem_size == 4 || acc.elem_size == 8) &&
                    len % acc.elem_size == 0 ? acc.elem_size : 0;
    s->expect_pc = pc + acc.insn_len;
    s->epoch = epoch_now();
    if (mode == PF_WATCH_MODE_LOADS && safe_read(addr, s->value, len) != 0) {
        t->st.dropped_filter++;     /* the load would fault: not ours to watch */
        return 1;
    }
    capture_ctx(t, uc, pc, &s->first);
    if (pf_watch_slot_arm(t, i, addr, len, mode == PF_WATCH_MODE_LOADS) != 0) {
        s->state = PF_SLOT_FREE;
        t->st.dropped_busy++;
        return 1;
    }
    s->state = PF_SLOT_AWAIT_FIRST;
    t->st.samples_armed++;
    return 1;
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

static void emu_look(pf_watch_thread_t *t, ucontext_t *uc)
{
    if (!any_armed(t)) {
        if (!t->walking)
            uc->uc_mcontext.gregs[REG_EFL] &= ~EFL_TF;
        return;
    }
    if (++t->emu_steps > pf_watch_cfg.emulate_step_limit) {     /* a watch nobody touches would crawl forever */
        for (int i = 0; i < t->n_slots; i++)
            if (t->slot[i].state != PF_SLOT_FREE)
                pf_watch_slot_disarm(t, i);
        t->emu_steps = 0;
        if (!t->walking)
            uc->uc_mcontext.gregs[REG_EFL] &= ~EFL_TF;
        return;
    }
    uc->uc_mcontext.gregs[REG_EFL] |= EFL_TF;
    uint64_t pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    uint8_t code[15];
    size_t n = code_at(pc, code);
    pf_watch_regs_t regs;
    pf_watch_regs_from_uc(uc, t->fs_base, t->gs_base, &regs);
    pf_watch_access_t acc;
    if (pf_watch_decode(code, n, pc, &regs, &acc) != 0)
        return;
    for (int i = 0; i < t->n_slots; i++) {
        const pf_watch_slot_t *s = &t->slot[i];
        if (s->state == PF_SLOT_FREE || acc.ea >= s->addr + s->len || acc.ea + acc.size <= s->addr)
            continue;
        if (s->mode != PF_WATCH_MODE_LOADS && !(acc.kind & PF_WATCH_ACC_STORE))
            continue;   /* stores and copies are write watches */
        t->emu_pending = i;
        return;
    }
}

/* A signal meant for the program: its handler (through the runtime), else the default action. */
static void foreign(int sig, siginfo_t *si, void *uc)
{
    if (pf_watch_cfg.foreign_signal) {
        pf_watch_cfg.foreign_signal(sig, si, uc);
        return;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void sample_handler(int sig, siginfo_t *si, void *ucv)
{
    int saved = errno;
    pf_watch_thread_t *t = pf_watch_self;
    ucontext_t *uc = ucv;
    if (si->si_code <= 0) {     /* SI_USER, SI_QUEUE, SI_TKILL: sent by someone, not the sampling event */
        foreign(sig, si, ucv);
        goto out;
    }
    if (!t || pf_stopped)
        goto out;
    t->st.samples++;
    /* emulating, a sample while a word is watched would start a second single-step chain on top of the
     * first: the slots' own steps are the expensive part, so one chain at a time */
    if (t->busy || t->walking || (pf_watch_cfg.hibernating && pf_watch_cfg.hibernating()) ||
        sigismember(&uc->uc_sigmask, SIGTRAP) || (pf_watch_cfg.emulate_breakpoints && any_armed(t))) {
        t->st.dropped_busy++;
        goto out;
    }
    t->busy = 1;
    if (!try_here(t, uc)) {
        /* skid: the instruction that overflowed has retired; step to the next one of the wanted kind */
        t->walking = 1;
        t->walk_steps = 0;
        uc->uc_mcontext.gregs[REG_EFL] |= EFL_TF;
    } else if (pf_watch_cfg.emulate_breakpoints) {
        emu_look(t, uc);
    }
    t->busy = 0;
out:
    errno = saved;
}

static void on_step(pf_watch_thread_t *t, ucontext_t *uc)
{
    t->walk_steps++;
    int done = (pf_watch_cfg.hibernating && pf_watch_cfg.hibernating()) ? (t->st.dropped_busy++, 1) : try_here(t, uc);
    if (!done && t->walk_steps >= PF_WATCH_STEP_LIMIT) {
        t->st.dropped_nomem++;
        done = 1;
    }
    if (done) {
        t->walking = 0;
        uc->uc_mcontext.gregs[REG_EFL] &= ~EFL_TF;
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
        p->t_ns = mono_ns();
        p->addr = s->addr;
        p->credited = 0;
        p->copy_id = s->copy_id;
        p->len = (uint8_t)s->len;
        p->flags = (uint8_t)(s->copy_end | (p->repeat.no_pystate ? PF_COPY_WRITE_NO_PYSTATE : 0));
        p->kind = PF_WATCH_KIND_COPY_WRITE;
        p->first_valid = 0;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        t->head = h + 1;
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
        else if (safe_read(from, before, 15) != 0)
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

static void trap_handler(int sig, siginfo_t *si, void *ucv)
{
    int saved = errno;
    ucontext_t *uc = ucv;
    pf_watch_thread_t *t = pf_watch_self;
    if (si->si_code == TRAP_TRACE && t && pf_watch_cfg.emulate_breakpoints) {
        int hit = t->emu_pending;
        t->emu_pending = -1;
        if (hit >= 0) {
            t->emu_steps = 0;
            on_trap(t, hit, uc);
        }
        if (t->walking)
            on_step(t, uc);
        emu_look(t, uc);
    } else if (si->si_code == TRAP_TRACE) {
        if (t && t->walking)
            on_step(t, uc);
        else
            uc->uc_mcontext.gregs[REG_EFL] &= ~EFL_TF;  /* a TF we left behind (pushf in a walk): drop it */
    } else if (si->si_code == TRAP_PERF) {
        uint64_t data;
        memcpy(&data, (const char *)si + 24, sizeof data);     /* si_perf_data */
        if (t && (data >> 40) == (0x7066770000000000ull >> 40) && (int)(data & 0xff) < t->n_slots)
            on_trap(t, (int)(data & 0xff), uc);
    } else {
        foreign(sig, si, uc);   /* not ours (int3 in the program, a kill): behave as if we were not here */
    }
    errno = saved;
}

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
    if (pf_watch_decode_init() != 0) {
        snprintf(why, n, "the Zydis decoder could not be initialized");
        return -EINVAL;
    }
    int rc = pf_watch_slots_selftest(why, n);
    if (rc && !pf_watch_cfg.emulate_breakpoints)
        return rc;
    if (pf_watch_cfg.modes & (PF_WATCH_MODE_STORES | PF_WATCH_MODE_LOADS)) {
        rc = pf_watch_pmu_setup(&pf_watch_cfg, &pf_pmu, why, n);
        if (rc)
            return rc;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    /* no SA_ONSTACK and no alternate stack of ours: one would be the program's too (every SA_ONSTACK handler
     * of the program, CPython's included, would run on it, and nested deliveries of its own signals overflowed
     * a 64 KiB one), and sigaltstack would report it. The handlers need a few KiB of the interrupted stack. */
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sa.sa_sigaction = trap_handler;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, pf_signo);
    if (sigaction(SIGTRAP, &sa, NULL) != 0)
        goto sigfail;
    sa.sa_sigaction = sample_handler;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGTRAP);
    if (sigaction(pf_signo, &sa, NULL) != 0)
        goto sigfail;
    pf_ready = 1;
    return 0;
sigfail:
    rc = -errno;
    snprintf(why, n, "sigaction: %s", strerror(-rc));
    return rc;
}

static void thread_bounds(pf_watch_thread_t *t)
{
    pthread_attr_t attr;
    void *lo;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        if (pthread_attr_getstack(&attr, &lo, &size) == 0) {
            t->stack_lo = (uintptr_t)lo;
            t->stack_hi = (uintptr_t)lo + size;
        }
        pthread_attr_destroy(&attr);
    }
    unsigned long fs = 0, gs = 0;
    syscall(SYS_arch_prctl, ARCH_GET_FS, &fs);
    syscall(SYS_arch_prctl, ARCH_GET_GS, &gs);
    t->fs_base = fs;
    t->gs_base = gs;
}

static int start_events(pf_watch_thread_t *t, char *why, size_t n)
{
    int err = 0;
    for (int i = 0; i < PF_WATCH_MAX_SLOTS; i++)
        t->slot[i].fd = -1;
    if (pf_watch_cfg.emulate_breakpoints) {
        t->n_slots = PF_WATCH_MAX_SLOTS;     /* no debug registers: the slots are ours alone */
        for (int i = 0; i < PF_WATCH_MAX_SLOTS; i++)
            t->slot[i].state = PF_SLOT_FREE;
    } else if (pf_watch_slots_open(t, &err) == 0) {
        snprintf(why, n, "no hardware breakpoint slot (PERF_TYPE_BREAKPOINT with sigtrap needs Linux 5.13+): %s",
                 strerror(err));
        return err ? -err : -ENOSYS;
    }
    int first = pf_watch_table_take(t);
    for (int i = 0; i < PF_WATCH_MAX_SLOTS; i++)
        t->slot[i].global = first < 0 ? -1 : first + i;
    if (!(pf_watch_cfg.modes & (PF_WATCH_MODE_STORES | PF_WATCH_MODE_LOADS)))
        return 0;       /* copies only: watches come from copies, not samples */
    int fd = pf_watch_pmu_open_thread(&pf_pmu, pf_signo, t->tid);
    if (fd < 0) {
        snprintf(why, n, "sampling event %s: %s", pf_pmu.name, strerror(-fd));
        pf_watch_table_release(t);
        pf_watch_slots_close(t);
        return fd;
    }
    t->sample_fd = fd;
    return 0;
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
    if (!pf_stopped && t->sample_fd >= 0)
        ioctl(t->sample_fd, PERF_EVENT_IOC_ENABLE, 0);
    return 0;
}

/* The first (last = 0) or last aligned word of [base, base+n); 0 when the range holds none. */
static uint64_t copy_word(uint64_t base, uint64_t n, int last)
{
    uint64_t lo = (base + 7) & ~7ull, hi = (base + n) & ~7ull;
    if (hi <= lo)
        return 0;
    return last ? hi - 8 : lo;
}

/* Emulated watchpoints single-step the thread while armed: copy watches then come at most rate_hz times
 * per CPU second, as samples do. */
static int copy_budget(pf_watch_thread_t *t)
{
    if (!pf_watch_cfg.emulate_breakpoints)
        return 1;
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    uint64_t gap = 1000000000ull / (pf_watch_cfg.rate_hz ? pf_watch_cfg.rate_hz : 50);
    if (t->copy_cpu_ns && now - t->copy_cpu_ns < gap)
        return 0;
    t->copy_cpu_ns = now;
    return 1;
}

static int free_slot(const pf_watch_thread_t *t)
{
    for (int i = 0; i < t->n_slots; i++)
        if (t->slot[i].state == PF_SLOT_FREE)
            return 1;
    return 0;
}

/* may_evict 0: only into a free slot. */
static int arm_copy_word(pf_watch_thread_t *t, uint64_t copy_id, uint32_t end, uint64_t addr, int may_evict)
{
    if (!addr || addr_ignored(t, addr) || (!may_evict && !free_slot(t)))
        return 0;
    int i = claim_slot(t, addr, 8, PF_WATCH_MODE_COPIES);
    if (i < 0)
        return 0;
    pf_watch_slot_t *s = &t->slot[i];
    if (safe_read(addr, s->value, 8) != 0)
        return 0;
    s->copy_id = copy_id;
    s->copy_end = end;
    s->first.n_py = s->first.n_native = 0;
    if (pf_watch_slot_arm(t, i, addr, 8, 0) != 0)
        return 0;
    s->state = PF_SLOT_WATCHING;
    return 1;
}

int pf_watch_copy(uint64_t copy_id, const void *dst, const void *src, size_t n)
{
    pf_watch_thread_t *t = pf_watch_self;
    if (!t || !(pf_watch_cfg.modes & PF_WATCH_MODE_COPIES) || pf_stopped || t->busy || t->walking || n < 8)
        return 0;
    t->busy = 1;        /* the handlers leave the slots alone meanwhile */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    int armed = 0;
    if (copy_budget(t)) {
        /* the first words of both ends (writes mostly start there), the last ones where slots are free */
        armed += arm_copy_word(t, copy_id, PF_COPY_WRITE_DST, copy_word((uintptr_t)dst, n, 0), 1);
        armed += arm_copy_word(t, copy_id, 0, copy_word((uintptr_t)src, n, 0), 1);
        armed += arm_copy_word(t, copy_id, PF_COPY_WRITE_DST, copy_word((uintptr_t)dst, n, 1), 0);
        armed += arm_copy_word(t, copy_id, 0, copy_word((uintptr_t)src, n, 1), 0);
        if (armed)
            t->st.copy_watches++;
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
    if (armed && pf_watch_cfg.emulate_breakpoints) {
        /* no debug register will fire: single-step from here while the words are armed (emu_look) */
        t->emu_steps = 0;
        __asm__ volatile("pushfq\n\torq $0x100, (%%rsp)\n\tpopfq" ::: "memory", "cc");
    }
    return armed;
}

int pf_watch_pending(void)
{
    pf_watch_thread_t *t = pf_watch_self;
    return t && t->head != t->tail;
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
    s.period = pf_pmu.period;
    s.tid = (uint32_t)t->tid;
    s.source = PF_WATCH_SRC_DECODE;
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
    uint64_t mono = mono_ns(), now_rel = sink->now_ns ? sink->now_ns(sink->ctx) : 0;
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
    if ((written || t->st.traps + t->st.copy_watches != t->st_written_traps) && write_stats(t, sink, now_rel) == 0)
        written++;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
    return written;
}

void pf_watch_thread_end(const pf_watch_sink_t *sink)
{
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
    /* keep the counters for pf_watch_get_totals: the state stays on the list, its events closed */
    pf_watch_self = NULL;
}

void pf_watch_stop(void)
{
    pf_stopped = 1;
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
        if (t != self)
            munmap(t, sizeof *t);
    }
    pf_all = NULL;
    pf_all_lock = 0;
    pf_watch_table_reset();
    if (!self || !pf_ready)
        return 0;
    memset(&self->st, 0, sizeof self->st);
    self->head = self->tail = 0;
    self->walking = 0;
    self->n_slots = 0;
    self->sample_fd = -1;
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
    if (!pf_stopped && self->sample_fd >= 0)
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
