/* pf_sampler.h - Poisson sampling by bytes, with exact recording of large allocations.
 *
 * Sample points fall on the stream of allocated bytes with exponential gaps of mean M, independently per
 * thread. An allocation of n bytes that contains a point is recorded and stands for n / (1 - exp(-n/M))
 * bytes: the inverse of its probability of being sampled, which makes every sum of estimates unbiased.
 * Allocations of at least the object threshold are always recorded, exactly.
 *
 * The mean may change during a run (the profile nearing its size cap, pf_writer.h): a visit that sees a new
 * mean draws the pending gap afresh with it. The gap's bytes so far were sampled at the old rate, so the
 * allocation that ends it is estimated with the old mean; by memorylessness the bytes after it start a
 * process at the new rate. Every estimate stays unbiased across the change.
 *
 * The hot path only decrements `countdown` (see pf_recorder.h); it is kept <= the threshold so that one
 * test (countdown <= 0) catches both a sample point and a large allocation. Pure functions, no globals:
 * unit-tested on their own.
 */
#ifndef PF_SAMPLER_H
#define PF_SAMPLER_H

#include <stdint.h>

#include "pf_sampler_math.h"

typedef struct pf_sampler {
    int64_t countdown;      /* bytes until the next visit; the hot path subtracts from it */
    int64_t armed;          /* countdown as last set */
    int64_t sample_left;    /* bytes until the next sample point */
    uint64_t rng;           /* xorshift64* state, never 0 */
    uint64_t mean;          /* the mean sample_left was drawn with */
} pf_sampler_t;

typedef enum pf_sample_verdict {
    PF_SAMPLE_SKIP = 0,     /* record nothing */
    PF_SAMPLE_POISSON = 1,  /* a sample point fell in this allocation */
    PF_SAMPLE_EXACT = 2     /* at or above the object threshold */
} pf_sample_verdict_t;

static inline uint64_t pf_sampler_rand(pf_sampler_t *s)
{
    uint64_t x = s->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    s->rng = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* An exponential gap of the given mean, at least 1 byte. */
static inline int64_t pf_sampler_gap(pf_sampler_t *s, uint64_t mean)
{
    double u = ((double)(pf_sampler_rand(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0); /* (0,1) */
    double gap = -pf_ln(u) * (double)mean;
    if (gap < 1.0)
        return 1;
    return gap > 4e18 ? (int64_t)4e18 : (int64_t)gap;
}

static inline void pf_sampler_arm(pf_sampler_t *s, uint64_t threshold)
{
    int64_t next = s->sample_left;
    if ((uint64_t)next > threshold)
        next = (int64_t)threshold;
    s->countdown = s->armed = next;
}

static inline void pf_sampler_seed(pf_sampler_t *s, uint64_t seed, uint64_t mean, uint64_t threshold)
{
    s->rng = seed ? seed : 0x9E3779B97F4A7C15ull;
    s->mean = mean;
    s->sample_left = pf_sampler_gap(s, mean);
    pf_sampler_arm(s, threshold);
}

/* The estimate an allocation of `size` stands for when a sample point fell in it. */
static inline uint64_t pf_sampler_estimate(uint64_t size, uint64_t mean)
{
    double prob = pf_one_minus_exp_neg((double)size / (double)mean);
    if (!(prob > 0))
        return size;
    double est = (double)size / prob;
    return est < (double)size ? size : (uint64_t)(est + 0.5);
}

/* Called when the hot path's countdown reached 0 with an allocation of `size` bytes (already subtracted).
 * Decides what to record, sets *est, and re-arms the countdown. */
static inline pf_sample_verdict_t pf_sampler_visit(pf_sampler_t *s, uint64_t size, uint64_t mean,
                                                   uint64_t threshold, uint64_t *est)
{
    s->sample_left -= s->armed - s->countdown;  /* the bytes since the last visit, this one's included */
    int hit = s->sample_left <= 0;
    uint64_t drawn_with = s->mean;
    if (hit || mean != s->mean) {
        s->mean = mean;
        s->sample_left = pf_sampler_gap(s, mean);
    }
    pf_sampler_arm(s, threshold);
    if (size >= threshold) {
        *est = size;
        return PF_SAMPLE_EXACT;
    }
    if (hit) {
        *est = pf_sampler_estimate(size, drawn_with);
        return PF_SAMPLE_POISSON;
    }
    *est = 0;
    return PF_SAMPLE_SKIP;
}

#endif /* PF_SAMPLER_H */
