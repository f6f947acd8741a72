/* pf_timeline_int.h - a footprint over time, downsampled while it is built.
 *
 * A timeline is PF_TIMELINE_POINTS buckets over [0, t_end]. Each bucket holds the largest value the series
 * had at any instant inside it: the value carried in at the bucket's start, and every value set inside it.
 * So a peak that lasts one nanosecond is never lost, whatever the number of events (a plain "last value
 * per bucket" would drop it). Values are set in non-decreasing time order (the sweep's order); the series
 * needs O(1) memory per row, which matters with a timeline per line.
 */
#ifndef PF_TIMELINE_INT_H
#define PF_TIMELINE_INT_H

#include <stdint.h>

#define PF_TIMELINE_POINTS 100

/* The bucket (0 .. PF_TIMELINE_POINTS-1) of time t on a timeline ending at t_end. Times past t_end land in
 * the last bucket; no overflow for any t. */
int pf_timeline_bucket(uint64_t t, uint64_t t_end);

/* The times of bucket b (pf_timeline_bucket's inverse): [*from, *to). The last bucket runs to UINT64_MAX
 * (what is past t_end lands in it), the others end where the next begins. */
void pf_timeline_bucket_span(int b, uint64_t t_end, uint64_t *from, uint64_t *to);

/* The series moved from `before` to `after` at time t: fills the buckets passed since the last call with
 * `before` (*filled counts the buckets written so far) and keeps the maximum in t's bucket. */
void pf_timeline_set(double *tl, int *filled, uint64_t t, uint64_t t_end, double before, double after);

/* The buckets up to b not written yet take `before`, the value carried into them (what the setters below
 * do first; alone, for a change that cannot move bucket b's maximum, or minimum). */
static inline void pf_timeline_fill(double *tl, int *filled, int b, double before)
{
    while (*filled <= b)
        tl[(*filled)++] = before;
}

/* pf_timeline_set, given t's bucket b (inline: the sweep calls it for three rows an event). */
static inline void pf_timeline_set_bucket(double *tl, int *filled, int b, double before, double after)
{
    pf_timeline_fill(tl, filled, b, before);    /* buckets with no change hold the value carried in */
    if (after > tl[b])
        tl[b] = after;
}

/* As pf_timeline_set for a timeline of each bucket's minimum, given t's bucket b (pf_timeline_bucket: the
 * caller that keeps both timelines divides once). */
static inline void pf_timeline_set_low(double *tl, int *filled, int b, double before, double after)
{
    pf_timeline_fill(tl, filled, b, before);
    if (after < tl[b])
        tl[b] = after;
}

/* Fills the buckets after the last change with the series' final value. */
void pf_timeline_finish(double *tl, int *filled, double last);

#endif /* PF_TIMELINE_INT_H */
