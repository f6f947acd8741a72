/* pf_api.c - the in-process API of pyflow_api.h, and the running counters behind it.
 *
 * pf_api_on_alloc / pf_api_on_free run in the slow paths, for the allocations the runtime records and the
 * frees of those it tracks: a free subtracts the estimate its allocation added, recomputed from its size
 * and flags (an exact one is its size; a sampled one size / P(sampled) at the mean in effect now, the one
 * at its allocation unless the profile coarsened in between). */
#include <string.h>

#include "pf_objtable.h"
#include "pf_rec_int.h"
#include "pyflow_api.h"

/* Each counter is two cells: one the first thread that records owns, written by it alone with a plain
 * store, and one every other thread adds to atomically. A `lock add` per allocation and per free (three a
 * pair) was 11.8% of an --exact recording of small objects on an Intel guest (2.7% on an AMD one), nearly
 * all of it on the program's main thread, which takes the owner's cells. A reader adds the two: the owner's
 * cell changes only on the owner's thread, so the sum the owner reads after its own update is the total at
 * that instant, as exact as the single shared cells were. The owner's load-add-store cannot be interrupted
 * by an update of its own: both callers run under the thread's recording guard, so an allocation in a
 * signal handler meanwhile is not recorded at all. A thread that later gets a dead owner's TLS block (glibc
 * reuses them) becomes the owner: still one writer at a time. */
typedef struct {
    int64_t owned;      /* the owner's thread alone writes it (relaxed atomic stores: plain moves) */
    int64_t shared;     /* every other thread: atomic adds */
} counter_t;

static counter_t allocated[2], live[2];
static int64_t peak;
static pf_tls_t *owner;   /* the thread that owns the `owned` cells: the first to count */

static int layer(int domain)
{
    return pf_domain_is_python((unsigned)domain) ? 0 : 1;
}

static int64_t counter_read(const counter_t *c)
{
    return __atomic_load_n(&c->owned, __ATOMIC_RELAXED) + __atomic_load_n(&c->shared, __ATOMIC_RELAXED);
}

static int owns(pf_tls_t *t)
{
    pf_tls_t *o = __atomic_load_n(&owner, __ATOMIC_RELAXED);
    if (PF_LIKELY(o == t))
        return 1;
    pf_tls_t *none = NULL;
    return !o && __atomic_compare_exchange_n(&owner, &none, t, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

static void counter_add(counter_t *c, int mine, int64_t n)
{
    if (mine)
        __atomic_store_n(&c->owned, __atomic_load_n(&c->owned, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
    else
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

void pf_api_on_alloc(int domain, uint64_t est)
{
    if (domain == PF_DOMAIN_GPU)
        return;
    int mine = owns(&pf_tls);
    counter_add(&allocated[layer(domain)], mine, (int64_t)est);
    counter_add(&live[layer(domain)], mine, (int64_t)est);
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
    counter_add(&live[layer((int)obj->domain)], owns(&pf_tls), -(int64_t)est);
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
