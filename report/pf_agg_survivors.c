/* pf_agg_survivors.c - the leak test's survivors of one aggregated site (--aggregate).
 *
 * A snapshot says only what the site holds, not which of its objects: its survivors are the levels of its
 * live bytes (rises to a new high, in order), each level dated to the allocation clock of the first
 * snapshot that could hold it. What it keeps at exit is its lowest levels, up to what it holds then.
 *
 * With sampling, a site's live bytes are an estimate (each sampled object stands for the mean's worth of
 * bytes) whose standard error is about sqrt(live * mean): a bounded cache holding 5 MB in 100 KB records
 * at the default 256 KiB mean reads 5 MB +- 1.1 MB from snapshot to snapshot, though it never grows. When
 * every fall undid the last rises (last in, first out) and every new high was new memory, that wander (a
 * dip and the climb back, or the estimate's new maximum late in the run) left late survivors standing,
 * and under load (fewer snapshots) eight of them made the cache a probable leak. So both allow for the
 * noise (PF_AGG_NOISE_SE standard errors of sqrt(level * mean)): a level belongs to the first snapshot
 * whose estimate it is within the noise of, and a fall forgets only the levels the site cannot still hold
 * (a table freed is forgotten, its refill is new memory at its own time). A leak's growth keeps raising
 * new levels beyond the noise. Exact estimates (--exact: mean 0) have no noise: every fall forgets what
 * it freed, the most recent levels first.
 */
#include <math.h>
#include <stdlib.h>

#include "pf_agg_survivors.h"
#include "pf_util_int.h"

#define PF_AGG_NOISE_SE 3.0

/* The highest level x a site whose estimate reads h may hold: x - h = PF_AGG_NOISE_SE * sqrt(x * mean)
 * (the noise of an estimate of x), as x = y^2 solves y^2 - k y - h = 0. Exact estimates: h itself. */
static double may_hold(const pf_agg_survivors_t *v, double h)
{
    if (v->mean_sample_bytes <= 1)
        return h;
    double k = PF_AGG_NOISE_SE * sqrt(v->mean_sample_bytes);
    double y = (k + sqrt(k * k + 4 * (h > 0 ? h : 0))) / 2;
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
    double keep = may_hold(v, v->live);
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
    double high = 0, from = 0;  /* the levels a rise owns: from what its estimate before it may hold */
    for (size_t k = 0; k < v->n_rises && from < v->live; k++) {
        high += v->rises[k].bytes;
        double to = k + 1 < v->n_rises ? may_hold(v, high) : v->live;
        if (to > v->live)
            to = v->live;
        if (to > from) {
            if (emit)
                emit(arg, v->rises[k].clock, to - from);
            n++;
            from = to;
        }
    }
    return n;
}

void pf_agg_survivors_free(pf_agg_survivors_t *v)
{
    free(v->rises);
    *v = (pf_agg_survivors_t){0};
}
