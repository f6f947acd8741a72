/* Unit tests for recorder/pf_sampler.h: large allocations are exact, the countdown never exceeds the
 * threshold, and the Poisson estimates are unbiased (sums within a few standard errors of the truth). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "pf_sampler.h"

/* Feeds an allocation through the hot path's test and the slow path, as the runtime does. */
static pf_sample_verdict_t feed(pf_sampler_t *s, uint64_t size, uint64_t mean, uint64_t thr, uint64_t *est)
{
    if ((s->countdown -= (int64_t)size) > 0) {
        *est = 0;
        return PF_SAMPLE_SKIP;
    }
    return pf_sampler_visit(s, size, mean, thr, est);
}

static void test_large_is_exact(void **state)
{
    pf_sampler_t s;
    pf_sampler_seed(&s, 42, 1 << 20, 1 << 16);
    for (int i = 0; i < 1000; i++) {
        uint64_t est;
        assert_int_equal(feed(&s, 1 << 16, 1 << 20, 1 << 16, &est), PF_SAMPLE_EXACT);
        assert_int_equal(est, 1 << 16);
        assert_true(s.countdown <= (1 << 16));
    }
}

static void test_exact_mode_records_everything(void **state)
{
    pf_sampler_t s;
    pf_sampler_seed(&s, 3, 1 << 20, 1);
    for (uint64_t n = 1; n < 5000; n++) {
        uint64_t est;
        assert_int_equal(feed(&s, n, 1 << 20, 1, &est), PF_SAMPLE_EXACT);
        assert_int_equal(est, n);
    }
}

static void check_unbiased(uint64_t mean, uint64_t size_lo, uint64_t size_hi, uint64_t seed)
{
    pf_sampler_t s;
    const uint64_t thr = 1 << 30;
    pf_sampler_seed(&s, seed, mean, thr);
    double truth = 0, estimate = 0;
    uint64_t x = seed | 1;
    for (int i = 0; i < 2000000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t n = size_lo + x % (size_hi - size_lo + 1);
        uint64_t est;
        truth += (double)n;
        if (feed(&s, n, mean, thr, &est) != PF_SAMPLE_SKIP)
            estimate += (double)est;
    }
    double rel = fabs(estimate - truth) / truth;
    /* ~truth/mean samples; relative standard error ~ 1/sqrt(that): allow 5 standard errors */
    double allowed = 5.0 / sqrt(truth / (double)mean);
    assert_true(rel < allowed);
}

static void test_unbiased_small(void **state)
{
    check_unbiased(64 * 1024, 16, 512, 1);
}

static void test_unbiased_mixed(void **state)
{
    check_unbiased(256 * 1024, 16, 200000, 2);
}

/* The mean changes during the run (the profile nearing its size cap) and a thread notices at its next
 * visit: the allocation that ends a gap is estimated with the mean that gap was drawn with, and the next
 * gap is drawn with the new one. Alternating 4 KiB and 1 MiB means every 200 allocations (~256 KB) makes
 * the mistake visible: estimating a 4 KiB gap's hit with 1 MiB adds about 1 MB per switch. */
static void test_unbiased_across_mean_changes(void **state)
{
    const uint64_t thr = 64 * 1024;    /* visits at least every 64 KiB, as the runtime's 1 MiB threshold */
    pf_sampler_t s;
    pf_sampler_seed(&s, 7, 4096, thr);
    double truth = 0, estimate = 0, variance = 0;
    uint64_t x = 99;
    for (int i = 0; i < 2000000; i++) {
        uint64_t mean = (i / 200) % 2 ? 1 << 20 : 4096;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t n = 512 + x % 1537, est;
        truth += (double)n;
        variance += (double)n * (double)mean;  /* an n-byte allocation's estimate varies by ~n x mean (n << mean) */
        if (feed(&s, n, mean, thr, &est) != PF_SAMPLE_SKIP)
            estimate += (double)est;
    }
    double rel = fabs(estimate - truth) / truth;
    double allowed = 5.0 * sqrt(variance) / truth;     /* 5 standard errors, the 1 MiB phases dominating */
    if (!(rel < allowed))
        fail_msg("estimate %.0f vs truth %.0f: off by %.2f%%, allowed %.2f%%", estimate, truth, rel * 100,
                 allowed * 100);
}

/* |got - want| in units of want's last place (want's spacing at its magnitude). */
static double ulps(double got, double want)
{
    return fabs(got - want) / (nextafter(fabs(want), INFINITY) - fabs(want));
}

/* The sampler's own ln and 1 - e^-y (pf_sampler_math.h, there so that libm's tables stay out of the
 * program's RSS) agree with libm's log and expm1 within a few ulps over their domains: the uniform draws'
 * (2^-54 up to 1) and every size-to-mean ratio (tiny to past where the answer is 1). */
static void test_math_matches_libm(void **state)
{
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    double worst_ln = 0, worst_p = 0;
    for (int i = 0; i < 2000000; i++) {
        rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
        uint64_t r = rng * 0x2545F4914F6CDD1Dull;
        double u = ((double)(r >> 11) + 0.5) * (1.0 / 9007199254740992.0);
        if (i % 4 == 1)
            u = ldexp(u, -(int)(r % 50));           /* small draws too */
        double d = ulps(pf_ln(u), log(u));
        worst_ln = d > worst_ln ? d : worst_ln;
        double y = ldexp((double)(r >> 11) / 9007199254740992.0, (int)(r % 60) - 40);  /* 2^-40 .. 2^20 */
        d = ulps(pf_one_minus_exp_neg(y), -expm1(-y));
        worst_p = d > worst_p ? d : worst_p;
    }
    static const double edges[] = {5e-324, 1e-300, 1e-17, 1e-9, 0.49999999999, 0.5, 0.6931471805599453,
                                   0.6931471805599454, 1.0, 1.3862943611198906, 39.999, 40.0, 745.2, 1e300};
    for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) {
        double d = ulps(pf_one_minus_exp_neg(edges[i]), -expm1(-edges[i]));
        worst_p = d > worst_p ? d : worst_p;
    }
    static const double draws[] = {0x1p-54, 0x1p-53, 0.5, 0.70710678118654746, 0.70710678118654757,
                                   0.99999999999999989, 0.9999999};
    for (size_t i = 0; i < sizeof draws / sizeof *draws; i++) {
        double d = ulps(pf_ln(draws[i]), log(draws[i]));
        worst_ln = d > worst_ln ? d : worst_ln;
    }
    print_message("worst: ln %.2f ulp, 1 - e^-y %.2f ulp\n", worst_ln, worst_p);
    assert_true(worst_ln <= 4.0);
    assert_true(worst_p <= 4.0);
    assert_true(pf_one_minus_exp_neg(0.0) == 0.0 && pf_one_minus_exp_neg(-1.0) == 0.0);
    assert_true(pf_one_minus_exp_neg(NAN) == 0.0);
}

static void test_estimate_bounds(void **state)
{
    /* tiny allocations stand for about the mean; huge ones for themselves */
    uint64_t e = pf_sampler_estimate(8, 1 << 20);
    assert_true(e > (1 << 20) - 16 && e < (1 << 20) + 16);
    assert_int_equal(pf_sampler_estimate(1ull << 40, 1 << 20), 1ull << 40);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_large_is_exact),
        cmocka_unit_test(test_exact_mode_records_everything),
        cmocka_unit_test(test_unbiased_small),
        cmocka_unit_test(test_unbiased_mixed),
        cmocka_unit_test(test_estimate_bounds),
        cmocka_unit_test(test_math_matches_libm),
        cmocka_unit_test(test_unbiased_across_mean_changes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
