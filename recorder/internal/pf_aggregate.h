/* pf_aggregate.h - the aggregated recording (--aggregate; format: PF_REC_AGG_* in core/pf_format.h).
 *
 * Instead of one record per sampled allocation, free and copy, running totals per site (an interned stack
 * and a domain) are kept in memory and written as snapshots of the sites that changed, about once a second,
 * so that a profile grows with the number of sites that keep changing, not with the allocation rate. The
 * sampling is the default mode's (or --exact's): only what is written differs.
 */
#ifndef PF_AGGREGATE_H
#define PF_AGGREGATE_H

#include <stdint.h>

#include "pf_rec_int.h"

/* 1 when new allocations and copies go into the totals: --aggregate, and past --aggregate-after. Before,
 * they are written as by default; objects recorded so keep their FREE records (they have no site). */
static inline int pf_aggregating(void)
{
    if (!pf_cfg.aggregate)
        return 0;
    uint64_t from = __atomic_load_n(&pf_cfg.aggregate_from_ns, __ATOMIC_RELAXED);
    return !from || (from != PF_AGGREGATE_NOT_YET && pf_now_ns() >= from);
}

/* The profile passed pf_cfg.aggregate_after_bytes (the writer calls it once): aggregated from now on. */
void pf_aggregate_switch_by_size(void);

/* A recorded allocation of est bytes at p with stack st: tracks the object under its site and counts it.
 * Returns 0 when the stack has no id (the intern table is full): the caller writes an ALLOC record. */
int pf_aggregate_alloc(pf_tls_t *t, const pf_stack_t *st, void *p, uint64_t size, int domain, uint64_t est,
                       uint8_t flags);

/* A tracked object was freed (obj as the object table held it): counted against its site. Returns 0
 * when the object has no site (it was recorded with an ALLOC record: the caller writes its FREE). */
int pf_aggregate_free(pf_tls_t *t, const struct pf_objinfo *obj);

/* A recorded copy of est bytes with stack st, counted in the stack's copy totals; *sid: the site's stack id
 * (for its flow, pf_aggregate_flows.h). Returns 0 when the stack has no id (write a COPY record). */
int pf_aggregate_copy(pf_tls_t *t, const pf_stack_t *st, uint64_t est, uint32_t *sid);

/* How many allocations or copies of size bytes an estimate of est bytes stands for (at least 1). */
static inline uint64_t pf_agg_count_of(uint64_t size, uint64_t est)
{
    return size && est > size ? (est + size / 2) / size : 1;
}

/* Writes a snapshot when the last one is pf_cfg.aggregate_interval_ns old (slow paths call it; cheap otherwise). */
void pf_aggregate_tick(pf_tls_t *t);

/* The interpreter began to finalize: a final snapshot; later frees no longer count (live at exit). */
void pf_aggregate_finalizing(pf_tls_t *t);

/* pf_aggregate_at_exit: pf_recorder.h (the _exit hook calls it). */

/* In a fork child: the parent's sites and totals are forgotten (the child's file has none of its stacks);
 * objects inherited from the parent are not counted when the child frees them. */
void pf_aggregate_fork_child(void);

#endif /* PF_AGGREGATE_H */
