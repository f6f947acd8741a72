/* pf_watch_slots.c - hardware breakpoint slots (PERF_TYPE_BREAKPOINT, one debug register each) and the
 * process-wide table of armed words that lets a free on any thread disarm a watch on memory it releases.
 *
 * Slots are opened disabled at thread start and kept for the thread's life (a disabled event still holds
 * its debug register, so the count cannot drop later); arming and moving a watch is an in-place
 * PERF_EVENT_IOC_MODIFY_ATTRIBUTES (~0.6 us here, against 1.7 us for close+open). MODIFY accepts changes of
 * address, type, length and `disabled` only, so sig_data (the slot number, returned in the SIGTRAP's
 * si_perf_data) is fixed at open.
 *
 * The armed table: one entry per slot of every watched thread, holding the watched address (0 = none).
 * pf_watch_armed_count counts non-zero entries; the free hook reads only that while nothing is armed.
 * Entries are claimed with compare-and-swap so a free on another thread and the owner's own re-arm never
 * both decrement the count.
 */
#include "pf_watch_int.h"

#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <signal.h>
#include <ucontext.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define PF_WATCH_COOKIE 0x7066770000000000ull    /* "pfw" in sig_data's high bytes, slot in the low */

unsigned pf_watch_armed_count;

typedef struct pf_watch_entry {
    uint64_t addr;              /* watched word, 0 = not armed */
    uint64_t len;
    int fd;
    pf_watch_thread_t *owner;
} pf_watch_entry_t;

static pf_watch_entry_t pf_table[PF_WATCH_MAX_THREADS * PF_WATCH_MAX_SLOTS];
static pf_watch_thread_t *pf_table_owner[PF_WATCH_MAX_THREADS];
static unsigned pf_table_hiwater;   /* entries [0, hiwater) may be in use */
static int pf_table_lock;


static void lock(void)
{
    while (__atomic_exchange_n(&pf_table_lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&pf_table_lock, __ATOMIC_RELAXED))
            __builtin_ia32_pause();
}

static void unlock(void)
{
    __atomic_store_n(&pf_table_lock, 0, __ATOMIC_RELEASE);
}

int pf_watch_table_take(pf_watch_thread_t *t)
{
    int idx = -1;
    lock();
    for (int i = 0; i < PF_WATCH_MAX_THREADS; i++)
        if (!pf_table_owner[i]) {
            pf_table_owner[i] = t;
            idx = i * PF_WATCH_MAX_SLOTS;
            for (int s = 0; s < PF_WATCH_MAX_SLOTS; s++) {
                pf_table[idx + s].owner = t;
                pf_table[idx + s].fd = -1;
                __atomic_store_n(&pf_table[idx + s].addr, 0, __ATOMIC_RELEASE);
            }
            if ((unsigned)(idx + PF_WATCH_MAX_SLOTS) > pf_table_hiwater)
                __atomic_store_n(&pf_table_hiwater, (unsigned)(idx + PF_WATCH_MAX_SLOTS), __ATOMIC_RELEASE);
            break;
        }
    unlock();
    return idx;
}

void pf_watch_table_release(pf_watch_thread_t *t)
{
    lock();
    for (int i = 0; i < PF_WATCH_MAX_THREADS; i++)
        if (pf_table_owner[i] == t) {
            for (int s = 0; s < PF_WATCH_MAX_SLOTS; s++) {
                pf_watch_entry_t *e = &pf_table[i * PF_WATCH_MAX_SLOTS + s];
                if (__atomic_exchange_n(&e->addr, 0, __ATOMIC_ACQ_REL))
                    __atomic_fetch_sub(&pf_watch_armed_count, 1, __ATOMIC_RELAXED);
                if (pf_watch_cfg.emulate_pages)
                    pf_watch_pages_disarm(i * PF_WATCH_MAX_SLOTS + s);
                e->fd = -1;
                e->owner = NULL;
            }
            pf_table_owner[i] = NULL;
        }
    unlock();
}

void pf_watch_table_reset(void)
{
    memset(pf_table, 0, sizeof pf_table);
    memset(pf_table_owner, 0, sizeof pf_table_owner);
    pf_table_hiwater = 0;
    pf_table_lock = 0;
    pf_watch_armed_count = 0;
}

static void attr_for(struct perf_event_attr *a, uint64_t addr, uint32_t len, int rw, int slot, int disabled)
{
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    a->type = PERF_TYPE_BREAKPOINT;
    a->bp_type = rw ? (HW_BREAKPOINT_W | HW_BREAKPOINT_R) : HW_BREAKPOINT_W;
    a->bp_addr = addr;
    a->bp_len = len;
    a->sample_period = 1;
    a->exclude_kernel = 1;
    a->exclude_hv = 1;
    a->disabled = disabled;
    a->sigtrap = 1;
    a->remove_on_exec = 1;      /* required with sigtrap: a new program has no handler for it */
    a->sig_data = PF_WATCH_COOKIE | (uint64_t)slot;
}

int pf_watch_slots_open(pf_watch_thread_t *t, int *err)
{
    static uint64_t parking[PF_WATCH_MAX_SLOTS];  /* disabled slots point here */
    *err = 0;
    int n = 0;
    for (int i = 0; i < PF_WATCH_MAX_SLOTS; i++) {
        struct perf_event_attr a;
        attr_for(&a, (uint64_t)(uintptr_t)&parking[i], 8, 0, i, 1);
        int fd = (int)pf_watch_perf_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
            *err = errno;
            break;
        }
        t->slot[i].fd = fd;
        t->slot[i].state = PF_SLOT_FREE;
        n++;
    }
    t->n_slots = n;
    return n;
}

int pf_watch_slot_arm(pf_watch_thread_t *t, int i, uint64_t addr, uint32_t len, int rw)
{
    pf_watch_slot_t *s = &t->slot[i];
    struct perf_event_attr a;
    attr_for(&a, addr, len, rw, i, 0);
    if (s->fd >= 0 && ioctl(s->fd, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, &a) != 0)
        return -errno;
    if (pf_watch_cfg.emulate_pages) {
        int rc = pf_watch_pages_arm(s->global, addr, len, rw);
        if (rc)
            return rc;
    }
    if (s->global >= 0) {
        pf_watch_entry_t *e = &pf_table[s->global];
        e->fd = s->fd;
        e->len = len;
        if (__atomic_exchange_n(&e->addr, addr, __ATOMIC_ACQ_REL) == 0)
            __atomic_fetch_add(&pf_watch_armed_count, 1, __ATOMIC_RELAXED);
    }
    return 0;
}

int pf_watch_slot_disarm(pf_watch_thread_t *t, int i)
{
    pf_watch_slot_t *s = &t->slot[i];
    s->state = PF_SLOT_FREE;
    if (s->global >= 0 && __atomic_exchange_n(&pf_table[s->global].addr, 0, __ATOMIC_ACQ_REL))
        __atomic_fetch_sub(&pf_watch_armed_count, 1, __ATOMIC_RELAXED);
    if (pf_watch_cfg.emulate_pages)
        pf_watch_pages_disarm(s->global);
    if (s->fd >= 0 && ioctl(s->fd, PERF_EVENT_IOC_DISABLE, 0) != 0)
        return -errno;
    return 0;
}

void pf_watch_slots_close(pf_watch_thread_t *t)
{
    for (int i = 0; i < t->n_slots; i++) {
        if (t->slot[i].fd >= 0)
            close(t->slot[i].fd);
        t->slot[i].fd = -1;
        t->slot[i].state = PF_SLOT_FREE;
    }
    t->n_slots = 0;
}

/* A debug exception the kernel gives no perf event (a guest's debug-status register read back empty: the
 * kernel then takes it for an `int1`) arrives as a SIGTRAP from the hardware. The self-test runs before
 * watch's own handler is in place, where that would kill the program at its start (seen once in CI: "killed
 * by signal 5" at 0.00 s). So while it runs, such a trap is taken and dropped; one a process sent
 * (si_code <= 0) gets the default action, as without pyflow. */
static int selftest(char *why, size_t n, void (*between)(void));

static void selftest_trap(int sig, siginfo_t *si, void *ucv)
{
    if (si->si_code <= 0) {
        signal(sig, SIG_DFL);
        raise(sig);     /* delivered once this handler returns */
        return;
    }
    ((ucontext_t *)ucv)->uc_mcontext.gregs[REG_EFL] &= ~PF_WATCH_EFL_TF;
}

int pf_watch_slots_selftest(char *why, size_t n)
{
    return pf_watch_slots_selftest_between(why, n, NULL);
}

int pf_watch_slots_selftest_between(char *why, size_t n, void (*between)(void))
{
    struct sigaction guard, old;
    memset(&guard, 0, sizeof guard);
    guard.sa_flags = SA_SIGINFO;
    guard.sa_sigaction = selftest_trap;
    sigemptyset(&guard.sa_mask);
    int guarded = sigaction(SIGTRAP, NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL &&
                  sigaction(SIGTRAP, &guard, NULL) == 0;
    int rc = selftest(why, n, between);
    if (guarded)
        sigaction(SIGTRAP, &old, NULL);
    return rc;
}

static int selftest(char *why, size_t n, void (*between)(void))
{
    /* Some VMs (Firecracker here) let breakpoint events open and then never fire: the guest's debug
     * registers are not virtualized. Count real writes to a word before trusting any slot. */
    static volatile uint64_t probe;
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_BREAKPOINT;
    a.bp_type = HW_BREAKPOINT_W;
    a.bp_addr = (uint64_t)(uintptr_t)&probe;
    a.bp_len = 8;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    int fd = (int)pf_watch_perf_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        char denied[320];
        if (err == EACCES || err == EPERM) {
            pf_watch_explain_denied(denied, sizeof denied);
            snprintf(why, n, "hardware breakpoints: perf_event_open %s", denied);
        } else {
            snprintf(why, n, "hardware breakpoints: perf_event_open(PERF_TYPE_BREAKPOINT) failed: %s", strerror(err));
        }
        return -err;
    }
    for (int i = 0; i < 4; i++) {
        probe = (uint64_t)i;
        if (between && i == 1)
            between();
    }
    uint64_t count = 0;
    ssize_t got = read(fd, &count, sizeof count);
    close(fd);
    if (got != (ssize_t)sizeof count || count == 0) {
        snprintf(why, n, "hardware breakpoints open but never fire (4 watched writes, %llu counted): this VM does "
                 "not virtualize debug registers; run on bare metal or a hypervisor that passes DR0-DR7 through",
                 (unsigned long long)count);
        return -EOPNOTSUPP;
    }
    return 0;
}


void pf_watch_on_free_slow(void *p, size_t size)
{
    uintptr_t lo = (uintptr_t)p;
    if (!lo)
        return;
    unsigned hi = __atomic_load_n(&pf_table_hiwater, __ATOMIC_ACQUIRE);
    int size_known = size != 0;
    for (unsigned i = 0; i < hi; i++) {
        pf_watch_entry_t *e = &pf_table[i];
        uint64_t a = __atomic_load_n(&e->addr, __ATOMIC_ACQUIRE);
        if (!a || a + e->len <= lo)
            continue;
        if (!size_known) {
            /* a free: the block's size is asked only when a watched word lies above its start */
            if (a - lo >= (1ull << 32))
                continue;
            size = pf_watch_cfg.usable_size ? pf_watch_cfg.usable_size(p) : 0;
            size_known = 1;
            if (!size)
                size = 16;  /* unknown allocator: at least the minimum chunk */
        }
        if (a >= lo + size)
            continue;
        pf_watch_thread_t *self = pf_watch_self;
        if (e->owner == self && self) {
            /* our own slot: keep our handlers out while the state changes */
            self->busy = 1;
            __atomic_signal_fence(__ATOMIC_SEQ_CST);
            for (int s = 0; s < self->n_slots; s++)
                if (self->slot[s].global == (int)i && self->slot[s].state != PF_SLOT_FREE)
                    pf_watch_slot_disarm(self, s);
            __atomic_signal_fence(__ATOMIC_SEQ_CST);
            self->busy = 0;
        } else if (__atomic_compare_exchange_n(&e->addr, &a, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            /* another thread's slot: stop its debug register (or give its page back) now; its owner finds
             * the slot silent and the reservoir replaces it */
            __atomic_fetch_sub(&pf_watch_armed_count, 1, __ATOMIC_RELAXED);
            int fd = e->fd;
            if (fd >= 0)
                ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
            if (pf_watch_cfg.emulate_pages) {
                int was_busy = self ? self->busy : 0;
                if (self)
                    self->busy = 1;     /* no sample handler of ours may wait for the page lock */
                __atomic_signal_fence(__ATOMIC_SEQ_CST);
                pf_watch_pages_disarm((int)i);
                __atomic_signal_fence(__ATOMIC_SEQ_CST);
                if (self)
                    self->busy = was_busy;
            }
        }
    }
}
