/* pf_api.c - the in-process API of pyflow_api.h, and the running counters behind it.
 *
 * pf_api_on_alloc / pf_api_on_free run in the slow paths, for the allocations the runtime records and the
 * frees of those it tracks: a free subtracts the estimate its allocation added, recomputed from its size
 * and flags (an exact one is its size; a sampled one size / P(sampled) at the mean in effect now, the one
 * at its allocation unless the profile coarsened in between). */
#include <linux/membarrier.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pf_objtable.h"
#include "pf_rec_int.h"
#include "pyflow_api.h"

/* Each counter is two cells: one the owning thread writes alone with a plain store, and one every other
 * thread adds to atomically. A `lock add` per allocation and per free (three a pair) was 11.8% of an --exact
 * recording of small objects on an Intel guest (2.7% on an AMD one). A reader adds the two: the owned cell
 * changes only on the owner's thread, so the sum the owner reads after its own update is the total at that
 * instant, as exact as one shared cell. The owner's load-add-store cannot be interrupted by an update of its
 * own: both callers run under the thread's recording guard, so an allocation in a signal handler meanwhile
 * is not recorded at all.
 *
 * The owner is the first thread to count, until another takes the cells over: a program whose work runs in
 * a worker thread while the main thread waits in join() paid the `lock add` on every event of its work. A
 * thread counting on the shared cells looks every MIGRATE_AFTER counts at the owned ones; where they have
 * not moved since (the owner is idle, or gone), it takes them over. Two busy threads keep their roles.
 *
 * The take-over must not let two threads update the owned cells at once, and the owner's path must stay
 * free of locked instructions. So the two sides meet as in Dekker's algorithm, with the fence on the rare
 * side only: the owner raises its flag (counting[slot]), then reads owner_slot again, and updates the
 * owned cells only when it is still the owner; the taker raises its own flag, swaps owner_slot, runs
 * membarrier(2), which puts a full barrier on every thread of the process that is running, then waits for
 * the old owner's flag to fall. Either the old owner's second read sees the swap, or the taker sees its
 * flag and waits for its update to end. One thread takes over at a time, and its flag, raised first, makes
 * the next taker wait for its first update too. Where membarrier's private expedited command cannot be
 * registered, nobody takes over. */
typedef struct {
    int64_t owned;      /* the owner's thread alone writes it (relaxed atomic stores: plain moves) */
    int64_t shared;     /* every other thread: atomic adds */
} counter_t;

#ifndef PF_API_MIGRATE_AFTER
#define PF_API_MIGRATE_AFTER 4096u      /* shared counts between two looks at the owner's progress */
#endif
#define PF_API_SLOTS 4096u              /* threads that may own the cells (the rest never take them over) */

static counter_t allocated[2], live[2];
static int64_t peak;
static uint32_t owner_slot;             /* 1 + the owner's slot; 0: none yet */
static uint32_t counting[PF_API_SLOTS]; /* a thread's flag, raised while it may update the owned cells */
static uint32_t slots_given;
static int membarrier_ok;               /* 1 registered, -1 not to be had, 0 not tried */
static int taking_over;                 /* a thread is taking the cells over */
uint32_t pf_api_takeovers;              /* pf_rec_int.h (tests) */

static int layer(int domain)
{
    return pf_domain_is_python((unsigned)domain) ? 0 : 1;
}

static int64_t counter_read(const counter_t *c)
{
    return __atomic_load_n(&c->owned, __ATOMIC_RELAXED) + __atomic_load_n(&c->shared, __ATOMIC_RELAXED);
}

/* What the owner has added: it grows while the owner allocates. */
static int64_t owner_progress(void)
{
    return __atomic_load_n(&allocated[0].owned, __ATOMIC_RELAXED) +
           __atomic_load_n(&allocated[1].owned, __ATOMIC_RELAXED);
}

static uint32_t slot_of(pf_tls_t *t)
{
    if (PF_UNLIKELY(!t->api_slot)) {
        uint32_t n = __atomic_fetch_add(&slots_given, 1, __ATOMIC_RELAXED);
        t->api_slot = n < PF_API_SLOTS ? n + 1 : UINT32_MAX;
    }
    return t->api_slot;
}

static int membarrier_registered(void)
{
    int ok = __atomic_load_n(&membarrier_ok, __ATOMIC_RELAXED);
    if (!ok) {
        ok = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 ? 1 : -1;
        __atomic_store_n(&membarrier_ok, ok, __ATOMIC_RELAXED);
    }
    return ok > 0;
}

/* The cells taken over from an owner whose cells stood still (see above), or from none. Returns 1 with the
 * thread's flag raised when it now owns them. */
static int take_over(uint32_t slot, uint32_t old)
{
    if ((old && !membarrier_registered()) || __atomic_exchange_n(&taking_over, 1, __ATOMIC_ACQUIRE))
        return 0;   /* one at a time: two takers waiting for each other's flags would wait for ever */
    int took = 0;
    __atomic_store_n(&counting[slot - 1], 1, __ATOMIC_RELAXED);
    if (__atomic_compare_exchange_n(&owner_slot, &old, slot, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
        took = 1;
        if (old) {
            syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
            for (int spins = 0; __atomic_load_n(&counting[old - 1], __ATOMIC_ACQUIRE); spins++)
                if (spins > 100)
                    sched_yield();   /* the old owner, preempted amid its update */
            __atomic_add_fetch(&pf_api_takeovers, 1, __ATOMIC_RELAXED);
        }
    } else {
        __atomic_store_n(&counting[slot - 1], 0, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&taking_over, 0, __ATOMIC_RELEASE);
    return took;
}

#ifdef PF_API_TEST_PAUSE
void pf_api_test_pause(void);   /* tests (recorder_api.cmake): now and then a pause where a take-over
                                   would meet the owner's update: before its flag, amid its update */
#define update_pause() pf_api_test_pause()
#else
#define update_pause() ((void)0)
#endif

/* count_begin for a thread that is not the owner, or has no slot yet: it counts on the shared cells, and
 * now and then looks whether it may take the owned ones over. */
static __attribute__((noinline)) int count_begin_other(pf_tls_t *t)
{
    uint32_t slot = slot_of(t);
    uint32_t o = __atomic_load_n(&owner_slot, __ATOMIC_RELAXED);
    if (o == slot)
        return 0;   /* a slot just given: this thread's next count takes the owner's path */
    if (slot == UINT32_MAX)
        return 0;
    if (!o)
        return take_over(slot, 0);
    if (++t->api_run < PF_API_MIGRATE_AFTER)
        return 0;
    t->api_run = 0;
    int64_t seen = owner_progress();
    if (seen == t->api_owner_seen && take_over(slot, o))
        return 1;
    t->api_owner_seen = seen;
    return 0;
}

/* Begins an update: 1 when the thread owns the cells (its flag is then raised: count_end lowers it). Inline:
 * the owner's path is a few loads and a store, and a call to it was a fifth of the counters' cost. */
static inline __attribute__((always_inline)) int count_begin(pf_tls_t *t)
{
    uint32_t slot = t->api_slot;
    if (PF_LIKELY(slot && __atomic_load_n(&owner_slot, __ATOMIC_RELAXED) == slot)) {
        update_pause();
        __atomic_store_n(&counting[slot - 1], 1, __ATOMIC_RELAXED);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);   /* the flag's store, then the second read: membarrier fences */
        if (PF_LIKELY(__atomic_load_n(&owner_slot, __ATOMIC_RELAXED) == slot))
            return 1;
        __atomic_store_n(&counting[slot - 1], 0, __ATOMIC_RELEASE);
        return 0;
    }
    return count_begin_other(t);
}

static inline __attribute__((always_inline)) void count_end(pf_tls_t *t, int mine)
{
    if (mine)
        __atomic_store_n(&counting[t->api_slot - 1], 0, __ATOMIC_RELEASE);   /* after the cells' stores */
}

static inline __attribute__((always_inline)) void counter_add(counter_t *c, int mine, int64_t n)
{
    if (mine) {
        int64_t v = __atomic_load_n(&c->owned, __ATOMIC_RELAXED);
        update_pause();
        __atomic_store_n(&c->owned, v + n, __ATOMIC_RELAXED);
    } else
        __atomic_add_fetch(&c->shared, n, __ATOMIC_RELAXED);
}

static int64_t live_now(void)
{
    return counter_read(&live[0]) + counter_read(&live[1]);
}

static void raise_peak(void)
{
    int64_t now = live_now();
    int64_t seen = __atomic_load_n(&peak, __ATOMIC_RELAXED);
    while (now > seen && !__atomic_compare_exchange_n(&peak, &seen, now, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

void pf_api_fork_child(pf_tls_t *t)
{
    memset(counting, 0, sizeof counting);
    owner_slot = t->api_slot != UINT32_MAX ? t->api_slot : 0;
    membarrier_ok = 0;  /* the registration is the parent's address space's */
    taking_over = 0;
}

/* Inlined into record_alloc (link-time optimization; pf_rec_int.h declares it extern, so this is also
 * its external definition): the call was about 15 of its 54 instructions. */
__attribute__((always_inline)) inline void pf_api_on_alloc(int domain, uint64_t est)
{
    if (domain == PF_DOMAIN_GPU)
        return;
    pf_tls_t *t = &pf_tls;
    int mine = count_begin(t);
    counter_add(&allocated[layer(domain)], mine, (int64_t)est);
    counter_add(&live[layer(domain)], mine, (int64_t)est);
    count_end(t, mine);
    raise_peak();
}

void pf_api_on_free(const pf_objinfo_t *obj)
{
    if (obj->domain == PF_DOMAIN_GPU)
        return;
    uint64_t est = obj->size;
    if ((obj->flags & PF_ALLOC_SAMPLED) && !pf_cfg.exact) {
        uint64_t mean, threshold;
        pf_sampling_now(pf_cfg.mean_sample_bytes, pf_cfg.object_threshold, &mean, &threshold);
        est = pf_sampler_estimate(obj->size, mean);
    }
    pf_tls_t *t = &pf_tls;
    int mine = count_begin(t);
    counter_add(&live[layer((int)obj->domain)], mine, -(int64_t)est);
    count_end(t, mine);
}

PF_EXPORT int pyflow_counters(pyflow_counters_t *out, uint64_t size)
{
    pyflow_counters_t c = {
        .version = PYFLOW_API_VERSION,
        .now_ns = pf_now_ns(),
        .allocated_python = counter_read(&allocated[0]),
        .allocated_native = counter_read(&allocated[1]),
        .live_python = counter_read(&live[0]),
        .live_native = counter_read(&live[1]),
        .peak = __atomic_load_n(&peak, __ATOMIC_RELAXED),
        .enabled = __atomic_load_n(&pf_cfg.enabled, __ATOMIC_ACQUIRE),
    };
    pf_host.memcpy(out, &c, size < sizeof c ? size : sizeof c);  /* the runtime's own copies are not counted */
    return 0;
}

PF_EXPORT void pyflow_reset_peak(void)
{
    __atomic_store_n(&peak, live_now(), __ATOMIC_RELAXED);
}

PF_EXPORT uint64_t pyflow_mark(const char *label)
{
    pf_tls_t *t = &pf_tls;
    if (!__atomic_load_n(&pf_cfg.enabled, __ATOMIC_ACQUIRE) || t->guard)
        return 0;
    pf_guard_enter(t);
    pf_enter_recording(t);
    pf_record_mark(t, PF_MARK_LABEL, 0, label);
    uint64_t now = pf_now_ns();
    pf_guard_leave(t);
    return now;
}
