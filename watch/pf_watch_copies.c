/* pf_watch_copies.c - --watch=copies: write watches on a copy and its source, armed from the copy hook (not
 * from a sample) right after the runtime linked the copy for its compare-at-free verdict. The first write
 * that changes a watched word proves the copy needed (pf_watch_handlers.c, copy_trap); no write seen proves
 * nothing, and the byte comparison at the first free stays the verdict.
 */
#include "pf_watch_int.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

/* The first (last = 0) or last aligned word of [base, base+n); 0 when the range holds none. */
static uint64_t copy_word(uint64_t base, uint64_t n, int last)
{
    uint64_t lo = (base + 7) & ~7ull, hi = (base + n) & ~7ull;
    if (hi <= lo)
        return 0;
    return last ? hi - 8 : lo;
}

/* Emulation's budget (pf_watch_emu_chain_begin) holds for copy watches too; and a trap-flag SIGTRAP that
 * arrives blocked is forced and kills the process (worker threads often block every signal). */
static int copy_budget(pf_watch_thread_t *t)
{
    if (!pf_watch_cfg.emulate_breakpoints)
        return 1;
    sigset_t now_blocked;
    if (pthread_sigmask(SIG_BLOCK, NULL, &now_blocked) != 0 || sigismember(&now_blocked, SIGTRAP))
        return 0;
    return pf_watch_emu_chain_begin(t, 1);
}

static int free_slot(const pf_watch_thread_t *t)
{
    for (int i = 0; i < t->n_slots; i++)
        if (t->slot[i].state == PF_SLOT_FREE)
            return 1;
    return 0;
}

/* The watch in slot s begins its lifetime now. */
static void started(pf_watch_thread_t *t, pf_watch_slot_t *s)
{
    s->armed_ns = pf_watch_mono_ns();
    if (!t->copy_expiry_ns)
        t->copy_expiry_ns = s->armed_ns + PF_WATCH_COPY_LIFETIME_NS;
    pf_watch_attention = 1;     /* the thread's visits expire it */
}

/* A word one copy watches that a newer copy starts from or writes to (bytes(src) of a buffer an earlier
 * copy filled): the watch goes on for the newer copy, which is the one a write there is likelier to be
 * about next (its value is unchanged: no write trapped). 1 when there was such a watch. */
static int retarget_copy_word(pf_watch_thread_t *t, uint64_t copy_id, uint32_t end, uint64_t addr)
{
    for (int i = 0; i < t->n_slots; i++) {
        pf_watch_slot_t *s = &t->slot[i];
        if (s->state == PF_SLOT_WATCHING && s->mode == PF_WATCH_MODE_COPIES && s->addr == addr) {
            s->copy_id = copy_id;
            s->copy_end = end;
            started(t, s);
            return 1;
        }
    }
    return 0;
}

/* may_evict 0: only into a free slot. */
static int arm_copy_word(pf_watch_thread_t *t, uint64_t copy_id, uint32_t end, uint64_t addr, int may_evict)
{
    if (!addr || pf_watch_addr_ignored(t, addr))
        return 0;
    if (retarget_copy_word(t, copy_id, end, addr))
        return 1;
    if (!may_evict && !free_slot(t))
        return 0;
    int i = pf_watch_claim_slot(t, addr, 8, PF_WATCH_MODE_COPIES);
    if (i < 0)
        return 0;
    pf_watch_slot_t *s = &t->slot[i];
    if (pf_watch_safe_read(addr, s->value, 8) != 0)
        return 0;
    s->copy_id = copy_id;
    s->copy_end = end;
    s->first.n_py = s->first.n_native = 0;
    if (pf_watch_slot_arm(t, i, addr, 8, 0) != 0)
        return 0;
    s->state = PF_SLOT_WATCHING;
    started(t, s);
    return 1;
}

void pf_watch_copies_expire(void)
{
    pf_watch_thread_t *t = pf_watch_self;
    if (!t || !t->copy_expiry_ns || t->busy)
        return;
    uint64_t now = pf_watch_mono_ns();
    if (now < t->copy_expiry_ns)
        return;
    t->busy = 1;        /* the handlers leave the slots alone meanwhile */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint64_t next = 0, last_ended = 0;
    int armed = 0;
    for (int i = 0; i < t->n_slots; i++) {
        pf_watch_slot_t *s = &t->slot[i];
        if (s->state == PF_SLOT_FREE)
            continue;
        uint64_t ends = s->armed_ns + PF_WATCH_COPY_LIFETIME_NS;
        if (s->mode == PF_WATCH_MODE_COPIES && ends <= now) {
            pf_watch_slot_disarm(t, i);
            last_ended = ends > last_ended ? ends : last_ended;
            continue;
        }
        armed = 1;
        if (s->mode == PF_WATCH_MODE_COPIES && (!next || ends < next))
            next = ends;
    }
    t->copy_expiry_ns = next;
    /* Emulated watchpoints: with nothing armed any more the chain is over, and was from the moment its
     * last watch ran out. Left running, it refused the next copy its watch (one chain at a time) whenever
     * no allocation came between the two copies' lifetimes: `a = bytearray(b); burn(); c = bytes(a)`,
     * where c's source word went unwatched (integration.watch.watch_copies, a VM whose debug registers
     * do not fire). */
    if (last_ended && !armed)
        pf_watch_emu_chain_end_ago(t, now - last_ended);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
}

int pf_watch_copies_blocked;

int pf_watch_copy(uint64_t copy_id, const void *dst, const void *src, size_t n)
{
    pf_watch_thread_t *t = pf_watch_self;
    if (!t || !(pf_watch_cfg.modes & PF_WATCH_MODE_COPIES) || pf_watch_stopped || t->busy || t->walking || n < 8)
        return 0;
    sigset_t blocked;   /* a blocked SIGTRAP never reports the write: watching would only look like "no write" */
    if (pthread_sigmask(SIG_BLOCK, NULL, &blocked) == 0 && sigismember(&blocked, SIGTRAP)) {
        if (!__atomic_load_n(&pf_watch_copies_blocked, __ATOMIC_RELAXED)) {
            __atomic_store_n(&pf_watch_copies_blocked, 1, __ATOMIC_RELAXED);
            pf_watch_attention = 1;     /* this thread's next visit says so */
        }
        return 0;
    }
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
    if (!armed)
        pf_watch_emu_chain_end(t);
    t->busy = 0;
    if (armed && pf_watch_cfg.emulate_breakpoints && !pf_watch_cfg.emulate_pages) {
        /* no debug register will fire: single-step from here while the words are armed (emu_look) */
        t->emu_steps = 0;
        __asm__ volatile("pushfq\n\torq $0x100, (%%rsp)\n\tpopfq" ::: "memory", "cc");
    }
    return armed;
}

