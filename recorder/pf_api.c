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

static int64_t allocated[2], live[2], peak;

static int layer(int domain)
{
    return pf_domain_is_python((unsigned)domain) ? 0 : 1;
}

static void raise_peak(void)
{
    int64_t now = __atomic_load_n(&live[0], __ATOMIC_RELAXED) + __atomic_load_n(&live[1], __ATOMIC_RELAXED);
    int64_t seen = __atomic_load_n(&peak, __ATOMIC_RELAXED);
    while (now > seen && !__atomic_compare_exchange_n(&peak, &seen, now, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

void pf_api_on_alloc(int domain, uint64_t est)
{
    if (domain == PF_DOMAIN_GPU)
        return;
    __atomic_add_fetch(&allocated[layer(domain)], (int64_t)est, __ATOMIC_RELAXED);
    __atomic_add_fetch(&live[layer(domain)], (int64_t)est, __ATOMIC_RELAXED);
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
    __atomic_sub_fetch(&live[layer((int)obj->domain)], (int64_t)est, __ATOMIC_RELAXED);
}

PF_EXPORT int pyflow_counters(pyflow_counters_t *out, uint64_t size)
{
    pyflow_counters_t c = {
        .version = PYFLOW_API_VERSION,
        .now_ns = pf_now_ns(),
        .allocated_python = __atomic_load_n(&allocated[0], __ATOMIC_RELAXED),
        .allocated_native = __atomic_load_n(&allocated[1], __ATOMIC_RELAXED),
        .live_python = __atomic_load_n(&live[0], __ATOMIC_RELAXED),
        .live_native = __atomic_load_n(&live[1], __ATOMIC_RELAXED),
        .peak = __atomic_load_n(&peak, __ATOMIC_RELAXED),
        .enabled = __atomic_load_n(&pf_cfg.enabled, __ATOMIC_ACQUIRE),
    };
    pf_host.memcpy(out, &c, size < sizeof c ? size : sizeof c);  /* the runtime's own copies are not counted */
    return 0;
}

PF_EXPORT void pyflow_reset_peak(void)
{
    __atomic_store_n(&peak, __atomic_load_n(&live[0], __ATOMIC_RELAXED) + __atomic_load_n(&live[1], __ATOMIC_RELAXED),
                     __ATOMIC_RELAXED);
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
