/* pf_sampler_math.h - the two transcendental functions the sampler needs (pf_sampler.h), computed without
 * libm: ln(u) for its exponential gaps and 1 - exp(-y) for the probability behind each estimate.
 *
 * Why not log() and expm1(): glibc's versions read lookup tables in libm's read-only segment, and the first
 * read of each maps a 64 KiB window of the file around it (the kernel's fault-around), pages that then
 * count in the profiled program's RSS for the whole run: 176 KiB on a 17 MiB program, in every mode, for
 * a handful of calls. These use only arithmetic (their constants are immediates or sit in pyflow's own
 * read-only data, already resident). Both are within a few units in the last place of libm's
 * (tests/unit/test_interpose_sampler.c compares them over their whole domains). Pure functions.
 */
#ifndef PF_SAMPLER_MATH_H
#define PF_SAMPLER_MATH_H

#include <stdint.h>
#include <string.h>

#define PF_LN2_HI 6.93147180369123816490e-01   /* ln 2 = HI + LO; HI's low 21 bits are 0: e * HI is exact */
#define PF_LN2_LO 1.90821492927058770002e-10

/* ln(x) for a positive, finite, normal x (the sampler's uniform draws lie in [2^-54, 1)). x = m * 2^e with
 * m in [sqrt(1/2), sqrt(2)); ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716, summed to s^23 (the
 * next term is below 2^-60 of the sum). */
static inline double pf_ln(double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    int e = (int)((bits >> 52) & 0x7ff) - 1023;
    bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
    double m;
    memcpy(&m, &bits, sizeof m);
    if (m > 1.4142135623730951) {
        m *= 0.5;
        e++;
    }
    double s = (m - 1.0) / (m + 1.0), s2 = s * s, sum = 1.0 / 23;
    for (int k = 21; k >= 1; k -= 2)
        sum = sum * s2 + 1.0 / k;
    return (double)e * PF_LN2_HI + ((double)e * PF_LN2_LO + 2.0 * s * sum);
}

/* e^-r for r in [0, ln 2]: its Taylor series nested (1 - r/1 (1 - r/2 (1 - ...))), to r^20/20!. */
static inline double pf_exp_neg_small(double r)
{
    double g = 1.0;
    for (int n = 20; n >= 1; n--)
        g = 1.0 - r / n * g;
    return g;
}

/* 1 - e^-y for y >= 0 (0 for anything else, NaN included): the chance that a sample point falls in y mean
 * gaps' worth of bytes. Below 1/2 by its own series (y - y^2/2 + ..., no cancellation); above, as
 * 1 - 2^-k e^-r with y = k ln 2 + r; from 40 on, e^-y is below half an ulp of 1 and the answer is 1. */
static inline double pf_one_minus_exp_neg(double y)
{
    if (!(y > 0))
        return 0.0;
    if (y < 0.5) {
        double f = 1.0;
        for (int n = 20; n >= 2; n--)
            f = 1.0 - y / n * f;
        return y * f;
    }
    if (y >= 40.0)
        return 1.0;
    int k = (int)(y / (PF_LN2_HI + PF_LN2_LO));
    double r = (y - k * PF_LN2_HI) - k * PF_LN2_LO;
    if (r < 0) {    /* the division rounded up past a multiple of ln 2 */
        k--;
        r = (y - k * PF_LN2_HI) - k * PF_LN2_LO;
    }
    uint64_t scale_bits = (uint64_t)(1023 - k) << 52;   /* 2^-k, k <= 57 */
    double scale;
    memcpy(&scale, &scale_bits, sizeof scale);
    return 1.0 - scale * pf_exp_neg_small(r);
}

#endif /* PF_SAMPLER_MATH_H */
