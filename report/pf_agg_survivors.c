/* pf_agg_survivors.c - the leak test's survivors of one aggregated site (--aggregate).
 *
 * A snapshot says only what the site holds, not which of its objects: its survivors are the levels of its
 * live bytes, each at the allocation clock at which the site first rose to it (a new high). What it keeps
 * at exit is its lowest levels, up to what it holds then.
 *
 * A fall forgets the levels above it (they were freed: a later rise to them is new memory, at its own
 * time) - but only beyond what sampling noise explains. With sampling, a site's live bytes are an
 * estimate (each sampled object stands for the mean's worth of bytes), whose standard error is about
 * sqrt(live * mean): a bounded cache holding 5 MB in 100 KB records at the default 256 KiB mean reads
 * 5 MB +- 1.1 MB from snapshot to snapshot, though it never grows. When every fall undid the last rises
 * (last in, first out), that wander left rises late in the run standing, and under load (fewer snapshots,
 * dips and climbs between them) eight of them made the cache a probable leak. A fall now keeps the levels
 * the site may still hold, within PF_AGG_NOISE_SE standard errors of its estimate (sqrt(level * mean)): a cache's wander raises no new high, a
 * leak's growth keeps raising them, and a real fall (a table freed) still forgets what it freed. Exact
 * estimates (--exact: mean 0) have no noise: every fall forgets.
 */
#include <math.h>
#include <stdlib.h>

#include "pf_agg_survivors.h"
#include "pf_util_int.h"

#define PF_AGG_NOISE_SE 3.0

/* The highest level the site may still hold when its estimate reads live: the x with x - live =
 * PF_AGG_NOISE_SE * sqrt(x * mean) (the noise of an estimate of x), as x = y^2 solves y^2 - k y - live = 0. */
static double may_hold(const pf_agg_survivors_t *v)
{
    if (v->mean_sample_bytes <= 1)
        return v->live;
    double k = PF_AGG_NOISE_SE * sqrt(v->mean_sample_bytes), live = v->live > 0 ? v->live : 0;
    double y = (k + sqrt(k * k + 4 * live)) / 2;
    return y * y;
}

void pf_agg_survivors_move(pf_agg_survivors_t *v, double clock, double d)
{
    v->live += d;
    if (v->live > v->high) {
        *PF_VEC_PUSH(v->rises, v->n_rises, v->cap_rises) = (pf_agg_rise_t){clock, v->live - v->high};
        v->high = v->live;
        return;
    }
    double keep = may_hold(v);
    while (v->n_rises && v->high > keep) {     /* the most recent levels first */
        pf_agg_rise_t *r = &v->rises[v->n_rises - 1];
        double take = r->bytes < v->high - keep ? r->bytes : v->high - keep;
        r->bytes -= take;
        v->high -= take;
        if (r->bytes <= 0.5)
            v->n_rises--;
    }
    if (!v->n_rises)
        v->high = 0;
}

size_t pf_agg_survivors_held(const pf_agg_survivors_t *v, void (*emit)(void *arg, double clock, double bytes),
                             void *arg)
{
    size_t n = 0;
    double left = v->live;
    for (size_t k = 0; k < v->n_rises && left > 0.5; k++, n++) {
        double bytes = v->rises[k].bytes < left ? v->rises[k].bytes : left;
        left -= bytes;
        if (emit)
            emit(arg, v->rises[k].clock, bytes);
    }
    return n;
}

void pf_agg_survivors_free(pf_agg_survivors_t *v)
{
    free(v->rises);
    *v = (pf_agg_survivors_t){0};
}
