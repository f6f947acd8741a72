/* pf_aggregate_int.h - the sweep's reading of an aggregated profile (--aggregate; pf_model_aggregate.c). */
#ifndef PF_AGGREGATE_INT_H
#define PF_AGGREGATE_INT_H

#include "pf_sweep_int.h"

typedef struct pf_agg_state pf_agg_state_t;

/* A PF_REC_AGG_SITES or PF_REC_AGG_PEAK event: applied once its snapshot's last part is in. */
void pf_sweep_aggregate(sweeper_t *S, const event_t *e);
void pf_sweep_aggregate_free(sweeper_t *S);

/* The leak test's survivors of the aggregated sites (pf_model_leak.c): what each site still holds, by the
 * allocation clock at which its live bytes first rose to it (pf_agg_survivors.h: one per new high). Calls
 * emit for each when it is not NULL; returns how many. */
size_t pf_sweep_aggregate_survivors(const sweeper_t *S,
                                    void (*emit)(void *arg, int32_t line, double clock, double bytes), void *arg);

#endif /* PF_AGGREGATE_INT_H */
