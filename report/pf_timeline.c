/* pf_timeline.c - downsampled timelines that keep each bucket's maximum (see pf_timeline_int.h). */
#include "pf_timeline_int.h"

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

void pf_timeline_set(double *tl, int *filled, uint64_t t, uint64_t t_end, double before, double after)
{
    pf_timeline_set_bucket(tl, filled, pf_timeline_bucket(t, t_end), before, after);
}

void pf_timeline_finish(double *tl, int *filled, double last)
{
    while (*filled < PF_TIMELINE_POINTS)
        tl[(*filled)++] = last;
}
