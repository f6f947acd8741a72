/* pf_model_peak.c - the peak without upward bias.
 *
 * In the default mode the program's live bytes are a sum of sampled estimates, and the maximum over time of
 * a noisy series is biased upward: the run's luckiest moment, not its peak. A steady churn
 * (collections.deque(maxlen=200) of 32 KB arrays) read +65-95% on its line and +14-39% on the program.
 *
 * So the samples are split in two halves at random (by a hash of address and time; what is recorded
 * exactly counts in both, as it is, and each half's samples count twice). Each half finds when the program
 * peaks: its window is the time during which its own total stays within PF_PEAK_WINDOW_SE standard
 * errors of its maximum (since that maximum last rose by more than PF_PEAK_RESET_SE). The *other* half, independent of
 * that choice, measures each row over the window: the row's average live bytes there. The two ways round
 * are averaged. A steady state is then averaged over its whole plateau (low variance, no selection bias);
 * a spike's window is the spike. With every allocation recorded (--exact) the standard error is 0 and
 * the window is the instant of the peak: the exact share.
 */
#include <math.h>

#include "pf_peak_int.h"

/* The window: within 2 standard errors of the half's maximum, since that maximum last rose by more than 3.
 * Tighter (1 and 1) held a steady state's window to the short while after its luckiest record, a few of
 * its states: the deque's line read -11% to +8% over six runs; wider windows average over many. */
#define PF_PEAK_WINDOW_SE 2.0
#define PF_PEAK_RESET_SE 3.0

void pf_peak_advance_on(pf_peak_est_t *P, uint64_t t)
{
    if (P->off || t < P->t_prev)
        return;
    for (int k = 0; k < 2; k++)
        if (P->in_window[k])
            P->W[k] += (double)(t - P->t_prev);
    P->t_prev = t;
}

static double weight(int half, int k, double est)
{
    return half == 0 ? est : half == k + 1 ? 2 * est : 0;
}

/* Brings r's integrals up to now (window k averages the other half, 1 - k). */
static void row_sync(const pf_peak_est_t *P, pf_peak_row_t *r)
{
    for (int k = 0; k < 2; k++) {
        if (r->epoch[k] != P->epoch[k]) {
            r->acc[k] = r->q[k] = 0;
            r->base[k] = P->W_reset[k];
            r->epoch[k] = P->epoch[k];
        }
        r->acc[k] += r->live_h[1 - k] * (P->W[k] - r->base[k]);
        r->base[k] = P->W[k];
    }
}

void pf_peak_row_add_on(const pf_peak_est_t *P, pf_peak_row_t *r, int half, double est)
{
    if (P->off)
        return;
    row_sync(P, r);
    for (int k = 0; k < 2; k++)
        r->live_h[k] += weight(half, k, est);
}

void pf_peak_obj_start(const pf_peak_est_t *P, pf_peak_obj_t *o)
{
    for (int k = 0; k < 2; k++) {
        o->W[k] = P->W[k];
        o->epoch[k] = P->epoch[k];
    }
}

void pf_peak_obj_end_on(const pf_peak_est_t *P, pf_peak_row_t *r, const pf_peak_obj_t *o, int half, double est,
                        double size)
{
    if (P->off || half == 0 || !(est > size))
        return;
    row_sync(P, r);
    int k = 2 - half;   /* the window that measures its half (window k averages half 1 - k) */
    double dw = P->W[k] - (o->epoch[k] == P->epoch[k] ? o->W[k] : P->W_reset[k]);
    /* counted twice in its half: variance 4 est (est - size) of its live bytes, averaged over the share of
     * the window it lived. An object live all through the window (what an import made) keeps its whole
     * variance; one of many short-lived ones (a churn) adds little. */
    r->q[k] += 4 * est * (est - size) * dw * dw;
}

void pf_peak_total_add_on(pf_peak_est_t *P, int half, double est, double size)
{
    if (P->off || half == 0)
        return;
    /* a sampled object stands for est bytes, counted twice in its half: variance (2 est)^2 (1 - p) with
     * p = size / est its chance of being sampled */
    double a = fabs(est), p = a > 0 ? size / a : 1;
    double v = 4 * a * a * (p < 1 ? 1 - p : 0);
    P->var[half - 1] += est < 0 ? -v : v;
}

void pf_peak_after_event_on(pf_peak_est_t *P, const pf_peak_row_t *total)
{
    if (P->off)
        return;
    /* "within so many standard errors" compared squared: no square root for each event of a big profile */
    for (int k = 0; k < 2; k++) {
        double v = total->live_h[k], var = P->var[k] > 0 ? P->var[k] : 0, rise = v - P->reset_level[k];
        if (v > P->max[k])
            P->max[k] = v;
        if (!P->epoch[k] || (rise > 0 && rise * rise > PF_PEAK_RESET_SE * PF_PEAK_RESET_SE * var)) {
            P->epoch[k]++;
            P->reset_level[k] = v;
            P->W_reset[k] = P->W[k];
        }
        double below = P->max[k] - v;
        P->in_window[k] = P->max[k] > 0 && (below <= 0 || below * below <= PF_PEAK_WINDOW_SE * PF_PEAK_WINDOW_SE * var);
    }
}

double pf_peak_row_share(const pf_peak_est_t *P, pf_peak_row_t *r, double fallback, double *se)
{
    *se = 0;
    if (P->off)
        return fallback;
    row_sync(P, r);
    double sum = 0, var = 0, half[2];
    int n = 0;
    for (int k = 0; k < 2; k++) {
        double w = P->W[k] - P->W_reset[k];
        if (w > 0) {
            sum += half[n++] = r->acc[k] / w;
            var += r->q[k] / (w * w);
        }
    }
    if (!n)
        return fallback;
    /* The objects' variance given the windows, and what it leaves out (which windows chance chose, time
     * weights) as the halves' disagreement shows it. Either alone was too small: over 120 runs of four churn
     * programs the --exact peak fell within 2 of the halves' difference in 65-85%, of the objects' own
     * in 80-100%; of both together, 92% (lines) and 95% (programs). */
    var /= (double)n * n;
    if (n == 2)
        var += (half[0] - half[1]) * (half[0] - half[1]) / 4;
    *se = sqrt(var);
    double v = sum / n;
    return v < 0.5 ? 0 : v;
}
