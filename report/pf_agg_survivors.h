/* pf_agg_survivors.h - the leak test's survivors of one aggregated site (--aggregate): what the site still
 * holds, by the allocation clock at which its live bytes first reached it, sampling noise allowed for
 * (pf_agg_survivors.c). */
#ifndef PF_AGG_SURVIVORS_H
#define PF_AGG_SURVIVORS_H

#include <stddef.h>

typedef struct pf_agg_rise {
    double clock, bytes;
} pf_agg_rise_t;

typedef struct pf_agg_survivors {
    pf_agg_rise_t *rises;       /* each new high of the site's live bytes, in clock order */
    size_t n_rises, cap_rises;
    double high;                /* the most the site has held (the sum of rises) */
    double live;                /* what it holds now */
    double mean_sample_bytes;   /* the profile's sampling mean (0: exact) */
} pf_agg_survivors_t;

/* The site's live bytes moved by d at the allocation clock. */
void pf_agg_survivors_move(pf_agg_survivors_t *v, double clock, double d);

/* Calls emit (when not NULL) for each part of what the site holds now, at its clock; returns how many. */
size_t pf_agg_survivors_held(const pf_agg_survivors_t *v, void (*emit)(void *arg, double clock, double bytes),
                             void *arg);

void pf_agg_survivors_free(pf_agg_survivors_t *v);

#endif /* PF_AGG_SURVIVORS_H */
