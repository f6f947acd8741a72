/* pf_timeline_int.h - a footprint over time, downsampled while it is built.
 *
 * A finished timeline is PF_TIMELINE_POINTS points over [0, t_end]. Each point holds the largest value the
 * series had at any instant in a span that covers its slice of the run: the value carried in, and every
 * value set there. So a peak that lasts one nanosecond is never lost, whatever the number of events (a
 * plain "last value per point" would drop it). Values are set in non-decreasing time order (the sweep's
 * order); the series needs O(1) memory per row, which matters with a timeline per line.
 *
 * While it is built, a series has PF_TIMELINE_FINE buckets of 2^level nanoseconds, level the least that
 * puts the latest time set into one of them; as time goes on, pairs of buckets are merged into one of
 * twice the width (the larger, or for a series of minimums the smaller, of the two). Nothing in it depends
 * on when the run ends, which is known only once every event is read: a sweep can take the events of a
 * program still running. At the end each point takes the largest (smallest) of the buckets that meet its
 * slice, which are at least as fine as the slice (PF_TIMELINE_FINE is twice PF_TIMELINE_POINTS): a point
 * may show a value from less than a slice's width beside its own.
 */
#ifndef PF_TIMELINE_INT_H
#define PF_TIMELINE_INT_H

#include <stdint.h>

#define PF_TIMELINE_POINTS 100
#define PF_TIMELINE_FINE (2 * PF_TIMELINE_POINTS)

/* The level of time t: the least k with t >> k below PF_TIMELINE_FINE. */
int pf_timeline_level(uint64_t t);

/* The point (0 .. PF_TIMELINE_POINTS-1) of time t on a finished timeline ending at t_end. Times past t_end
 * land in the last point; no overflow for any t. */
int pf_timeline_bucket(uint64_t t, uint64_t t_end);

/* The times of point b (pf_timeline_bucket's inverse): [*from, *to). The last point runs to UINT64_MAX
 * (what is past t_end lands in it), the others end where the next begins. */
void pf_timeline_bucket_span(int b, uint64_t t_end, uint64_t *from, uint64_t *to);

/* Brings a series from level `from` to level `to` (>= from): each step merges each pair of buckets into
 * one, keeping the larger value (hi) or the smaller. */
void pf_timeline_coarsen(double *tl, int *filled, int from, int to, int hi);

/* The buckets up to b not written yet take `before`, the value carried into them (what the setters below
 * do first; alone, for a change that cannot move bucket b's maximum, or minimum). */
static inline void pf_timeline_fill(double *tl, int *filled, int b, double before)
{
    while (*filled <= b)
        tl[(*filled)++] = before;
}

/* The series moved from `before` to `after` in bucket b (at the series' level): fills the buckets passed
 * since the last call with `before` (*filled counts the buckets written so far) and keeps the maximum in b.
 * Inline: the sweep calls it for three rows an event. */
static inline void pf_timeline_set_bucket(double *tl, int *filled, int b, double before, double after)
{
    pf_timeline_fill(tl, filled, b, before);    /* buckets with no change hold the value carried in */
    if (after > tl[b])
        tl[b] = after;
}

/* As pf_timeline_set_bucket for a series of each bucket's minimum. */
static inline void pf_timeline_set_low(double *tl, int *filled, int b, double before, double after)
{
    pf_timeline_fill(tl, filled, b, before);
    if (after < tl[b])
        tl[b] = after;
}

/* pf_timeline_set_bucket for a series of maximums that keeps its own level (*level, 0 at first): the
 * series moved from `before` to `after` at time t. */
void pf_timeline_set(double *tl, int *filled, uint8_t *level, uint64_t t, double before, double after);

/* Finishes a series built up to `level` on a run ending at t_end: the buckets after its last change take
 * `last`, and then tl[0 .. PF_TIMELINE_POINTS) the points (the maximum of the buckets meeting each one's
 * slice, hi; else the minimum), *filled PF_TIMELINE_POINTS. */
void pf_timeline_finish(double *tl, int *filled, int level, uint64_t t_end, double last, int hi);

#endif /* PF_TIMELINE_INT_H */
