/* pf_peak_int.h - the program's peak and each row's share of it, without the upward bias of a maximum of
 * sampled estimates (report/pf_model_peak.c). */
#ifndef PF_PEAK_INT_H
#define PF_PEAK_INT_H

#include <stdint.h>

/* What a row keeps for it: its live bytes as each half of the samples estimates them, and their integral
 * over the other half's peak window since that window's last reset (epoch). */
typedef struct pf_peak_row {
    double live_h[2];
    double acc[2], base[2];
    uint32_t epoch[2];
    double q[2];        /* sum over the row's sampled objects window k measures of 4 est (est - size) dW^2, dW
                           the window time the object lived: its variance is q[k] / W^2 */
} pf_peak_row_t;

/* What an object keeps for it: the windows' cumulative time and epochs when it was made. */
typedef struct pf_peak_obj {
    double W[2];
    uint32_t epoch[2];
} pf_peak_obj_t;

/* The sweep's side: each half's program total is the total row's live_h; its variance, running maximum,
 * and the time spent in its peak window (W, cumulative; W_reset: at the window's last reset). */
typedef struct pf_peak_est {
    int off;                /* every record exact (--exact): the instant of the peak is exact already, and
                               the fallback share is the answer; nothing to keep */
    double var[2], max[2], reset_level[2], W[2], W_reset[2];
    uint32_t epoch[2];
    int in_window[2];
    uint64_t t_prev;
} pf_peak_est_t;

/* Which half of the samples an allocation is in: 0 = recorded exactly (both halves, as it is), 1 or 2. */
static inline int pf_peak_half(uint64_t addr, uint64_t t, int exact)
{
    if (exact)
        return 0;
    uint64_t h = (addr ^ (t * 0x9E3779B97F4A7C15ull)) * 0xBF58476D1CE4E5B9ull;
    return 1 + (int)((h >> 61) & 1);
}

/* The calls the sweep makes for every event return at once when P->off (an exact profile, whose events are
 * many): the test is made inline, where they are called, and the work out of line. */
void pf_peak_advance_on(pf_peak_est_t *P, uint64_t t);
void pf_peak_row_add_on(const pf_peak_est_t *P, pf_peak_row_t *r, int half, double est);
void pf_peak_total_add_on(pf_peak_est_t *P, int half, double est, double size);
void pf_peak_after_event_on(pf_peak_est_t *P, const pf_peak_row_t *total);

/* Time passes to t (before the event at t is handled). */
static inline void pf_peak_advance(pf_peak_est_t *P, uint64_t t)
{
    if (!P->off)
        pf_peak_advance_on(P, t);
}

/* An object of `half` with estimate est (negative: it ended) and requested size comes to (leaves) row r. */
static inline void pf_peak_row_add(const pf_peak_est_t *P, pf_peak_row_t *r, int half, double est)
{
    if (!P->off)
        pf_peak_row_add_on(P, r, half, est);
}

/* The same object comes to (leaves) the program: its share of each half's variance. */
static inline void pf_peak_total_add(pf_peak_est_t *P, int half, double est, double size)
{
    if (!P->off)
        pf_peak_total_add_on(P, half, est, size);
}

/* An object is made now: *o remembers where the windows stand. */
void pf_peak_obj_start(const pf_peak_est_t *P, pf_peak_obj_t *o);

/* An object (of `half`, estimate est, requested size) of row r ends now, or the run ends with it live: its
 * variance, by the window time it lived, joins r's. */
void pf_peak_obj_end_on(const pf_peak_est_t *P, pf_peak_row_t *r, const pf_peak_obj_t *o, int half, double est,
                        double size);
static inline void pf_peak_obj_end(const pf_peak_est_t *P, pf_peak_row_t *r, const pf_peak_obj_t *o, int half,
                                   double est, double size)
{
    if (!P->off && half)    /* an exact object has no variance: three calls a free, inline */
        pf_peak_obj_end_on(P, r, o, half, est, size);
}

/* After each event: each half's maximum, window and resets, from the total row. */
static inline void pf_peak_after_event(pf_peak_est_t *P, const pf_peak_row_t *total)
{
    if (!P->off)
        pf_peak_after_event_on(P, total);
}

/* Row r's share of the peak at the end (after pf_peak_advance to the end and pf_peak_obj_end of every
 * object still live); fallback when no window lasted any time (a peak that lasted no time between two
 * events). *se: its standard error, from the sampled objects' variances weighted by the share of the window
 * each lived (0 with every record exact). */
double pf_peak_row_share(const pf_peak_est_t *P, pf_peak_row_t *r, double fallback, double *se);

#endif /* PF_PEAK_INT_H */
