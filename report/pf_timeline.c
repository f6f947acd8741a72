/* pf_timeline.c - downsampled timelines that keep each bucket's maximum (see pf_timeline_int.h). */
#include "pf_timeline_int.h"

int pf_timeline_level(uint64_t t)
{
    int k = 0;
    while ((t >> k) >= PF_TIMELINE_FINE)
        k++;
    return k;
}

int pf_timeline_bucket(uint64_t t, uint64_t t_end)
{
    if (t_end == 0)
        return 0;
    /* 128-bit product: a hostile or far-future t must not wrap into an early bucket */
    unsigned __int128 b = (unsigned __int128)t * PF_TIMELINE_POINTS / ((unsigned __int128)t_end + 1);
    return b >= PF_TIMELINE_POINTS ? PF_TIMELINE_POINTS - 1 : (int)b;
}

/* The first t whose bucket is at least b: the least t with t * POINTS >= b * (t_end + 1). */
static uint64_t bucket_start(int b, uint64_t t_end)
{
    unsigned __int128 num = (unsigned __int128)b * ((unsigned __int128)t_end + 1);
    return (uint64_t)((num + PF_TIMELINE_POINTS - 1) / PF_TIMELINE_POINTS);
}

void pf_timeline_bucket_span(int b, uint64_t t_end, uint64_t *from, uint64_t *to)
{
    if (t_end == 0) {
        *from = 0;
        *to = UINT64_MAX;
        return;
    }
    *from = b == 0 ? 0 : bucket_start(b, t_end);
    *to = b >= PF_TIMELINE_POINTS - 1 ? UINT64_MAX : bucket_start(b + 1, t_end);
}

static inline double pick(double a, double b, int hi)
{
    return hi ? (b > a ? b : a) : (b < a ? b : a);
}

void pf_timeline_coarsen(double *tl, int *filled, int from, int to, int hi)
{
    for (int k = from; k < to && *filled > 0; k++) {
        int n = *filled, half = (n + 1) / 2;
        for (int i = 0; i < half; i++)
            tl[i] = 2 * i + 1 < n ? pick(tl[2 * i], tl[2 * i + 1], hi) : tl[2 * i];
        *filled = half;     /* the last one, when n was odd, holds the first half of its time so far */
    }
}

void pf_timeline_set(double *tl, int *filled, uint8_t *level, uint64_t t, double before, double after)
{
    int k = pf_timeline_level(t);
    if (k > *level) {
        pf_timeline_coarsen(tl, filled, *level, k, 1);
        *level = (uint8_t)k;
    }
    pf_timeline_set_bucket(tl, filled, (int)(t >> *level), before, after);
}

void pf_timeline_finish(double *tl, int *filled, int level, uint64_t t_end, double last, int hi)
{
    int k = pf_timeline_level(t_end);
    if (k < level)
        k = level;  /* a time past t_end was set (the caller's end is not the last event's) */
    pf_timeline_coarsen(tl, filled, level, k, hi);
    int n = (int)(t_end >> k);
    if (*filled > n + 1)
        n = *filled - 1;
    pf_timeline_fill(tl, filled, n, last);
    /* Each point takes the buckets that begin in its slice [from, to): every bucket goes to one point, and
     * every point has one at least (a slice is at least a bucket wide), but on a run of under a hundred
     * nanoseconds, whose slices can be empty: such a point takes the bucket its slice begins in. */
    double points[PF_TIMELINE_POINTS];
    const uint64_t w = (uint64_t)1 << k;
    for (int b = 0; b < PF_TIMELINE_POINTS; b++) {
        uint64_t from, to;
        pf_timeline_bucket_span(b, t_end, &from, &to);
        uint64_t j = from > t_end ? (uint64_t)n : (from >> k) + ((from & (w - 1)) != 0);
        uint64_t jt = b == PF_TIMELINE_POINTS - 1 || to > t_end ? (uint64_t)n : (to >> k) + ((to & (w - 1)) != 0) - 1;
        if (j > (uint64_t)n)
            j = (uint64_t)n;
        if (jt < j)
            jt = from >> k < j ? from >> k : j;     /* an empty slice */
        if (jt < j)
            j = jt;
        double v = tl[j];
        for (uint64_t i = j + 1; i <= jt; i++)
            v = pick(v, tl[i], hi);
        points[b] = v;
    }
    for (int b = 0; b < PF_TIMELINE_POINTS; b++)
        tl[b] = points[b];
    *filled = PF_TIMELINE_POINTS;
}
