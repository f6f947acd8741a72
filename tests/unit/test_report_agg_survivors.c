/* Unit tests for the leak test's survivors of an aggregated site (report/pf_agg_survivors.c): the live
 * bytes of a line snapshot by snapshot, as --aggregate records them, and the survivors the leak test reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "pf_agg_survivors.h"

#define MEAN 262144.0       /* the default sampling mean */
#define SAMPLE 315316.0     /* one sampled 100 KB record's estimate at that mean */

typedef struct held {
    double clock[64], bytes[64], total;
    size_t n;
} held_t;

static void collect(void *arg, double clock, double bytes)
{
    held_t *h = arg;
    h->clock[h->n] = clock;
    h->bytes[h->n++] = bytes;
    h->total += bytes;
}

/* Feeds the line's live bytes at each snapshot (live[i] at clock[i]) and returns what it holds at the end. */
static held_t replay(const double *clock, const double *live, size_t n, double mean)
{
    pf_agg_survivors_t v = {.mean_sample_bytes = mean};
    for (size_t i = 0; i < n; i++)
        pf_agg_survivors_move(&v, clock[i], live[i] - v.live);
    held_t h = {0};
    size_t count = pf_agg_survivors_held(&v, collect, &h);
    assert_int_equal(count, h.n);
    assert_true(h.total > live[n - 1] - 1 && h.total < live[n - 1] + 1);
    pf_agg_survivors_free(&v);
    return h;
}

/* A bounded cache of 50 records of 100 KB (tests/integration/programs/longrun_leak.py twin), recorded under
 * load: what its snapshots saw, in samples (a profile whose twin was nearly a leak). It filled by clock 15;
 * then the estimate wandered (25 samples, down to 8, back to 18) while it held 50 records. Every fall undoing
 * the last rises left the climb back standing at clocks 25-33: survivors all along the run. */
static void test_bounded_cache_wander_is_no_growth(void **state)
{
    (void)state;
    const double clock[] = {12, 13.5, 14.6, 14.6, 14.6, 15.2, 15.4, 16.3, 18.6, 20.3, 20.9, 22.8, 25.7, 27.1, 28.3,
                            29.7, 33.3};
    const double samples[] = {8, 16, 23, 22, 25, 24, 25, 23, 20, 16, 9, 8, 13, 14, 13, 17, 18};
    double live[17];
    for (int i = 0; i < 17; i++)
        live[i] = samples[i] * SAMPLE;
    held_t h = replay(clock, live, 17, MEAN);
    for (size_t k = 0; k < h.n; k++)
        assert_true(h.clock[k] <= 15);     /* what it holds was reached while it filled */
    assert_true(h.n <= 3);
}

/* The recording that was a probable leak (load average ~25; 8 survivors, spread 1): the cache's main site
 * filled to 13 samples by clock 18.9, then its estimate wandered 9-23 samples. Last in, first out left
 * seven survivors from clock 16 to 34 (with another site's one, eight). */
static void test_bounded_cache_recording_read_as_leak(void **state)
{
    (void)state;
    const double clock[] = {16.35, 17.19, 17.19, 18.89, 18.89, 20.62, 21.77, 21.77, 22.63, 23.21, 24.07, 24.07,
                            25.23, 27.14, 27.14, 28.29, 29.16, 33.93};
    const double samples[] = {7, 11, 12, 13, 10, 9, 14, 12, 13, 15, 16, 15, 22, 23, 20, 21, 17, 19};
    double live[18];
    for (int i = 0; i < 18; i++)
        live[i] = samples[i] * SAMPLE;
    held_t h = replay(clock, live, 18, MEAN);
    for (size_t k = 0; k < h.n; k++)
        assert_true(h.clock[k] <= 17.19);  /* the fill's */
}

/* Another recording of it: the fill took five snapshots (clock 12-16) and the estimate's wander then set
 * new highs at clocks 18.7 and 19.6 (20 samples, the fill's 17): read as new memory, they were the top
 * tenth of what it held, late in the run - eight survivors, spread 0.61, a probable leak. */
static void test_bounded_cache_new_high_is_no_growth(void **state)
{
    (void)state;
    const double clock[] = {12, 13, 14.2, 14.2, 15.9, 15.9, 16.2, 16.2, 17, 17.5, 18.7, 19.6, 19.6, 20.1, 21.6,
                            23.2, 27.7};
    const double samples[] = {6, 10, 14, 15, 17, 14, 17, 15, 13, 14, 18, 20, 19, 17, 14, 17, 19};
    double live[17];
    for (int i = 0; i < 17; i++)
        live[i] = samples[i] * SAMPLE;
    held_t h = replay(clock, live, 17, MEAN);
    for (size_t k = 0; k < h.n; k++)
        assert_true(h.clock[k] <= 16);
}

/* The same wander, worse: after the fill the estimate dips to 2 samples and climbs back one a snapshot
 * (ten snapshots): last in, first out made ten late survivors, enough for a leak. */
static void test_bounded_cache_dip_and_climb(void **state)
{
    (void)state;
    double clock[32], live[32];
    size_t n = 0;
    for (int i = 1; i <= 3; i++, n++)
        clock[n] = n, live[n] = 5 * i * SAMPLE;             /* filled: 15 samples */
    for (int i = 0; i < 4; i++, n++)
        clock[n] = n, live[n] = (i % 2 ? 14 : 16) * SAMPLE;
    clock[n] = n, live[n++] = 2 * SAMPLE;
    for (int i = 3; i <= 12; i++, n++)
        clock[n] = n, live[n] = i * SAMPLE;
    held_t h = replay(clock, live, n, MEAN);
    assert_true(h.n < 8);
}

/* A leak seen through the same noise: 2.5 MB more each snapshot, +- a sample: a new high at each snapshot
 * or the next, so survivors all along the run (each level a few snapshots before its estimate showed it
 * beyond doubt). */
static void test_leak_through_noise(void **state)
{
    (void)state;
    double clock[16], live[16];
    for (int i = 0; i < 16; i++)
        clock[i] = i, live[i] = (8.0 * (i + 1) + (i % 3 == 1 ? -1 : i % 3 == 2 ? 1 : 0)) * SAMPLE;
    held_t h = replay(clock, live, 16, MEAN);
    assert_true(h.n >= 8);
    assert_true(h.clock[0] <= 1 && h.clock[h.n - 1] >= 10);
    assert_true(h.bytes[0] < 0.2 * h.total);
}

/* Exact estimates have no noise: a fall forgets what it freed (the most recent first), and the climb back
 * is new memory at its own time. */
static void test_exact_fall_forgets_the_last_rises(void **state)
{
    (void)state;
    const double clock[] = {1, 2, 3, 4, 5};
    const double live[] = {100, 200, 300, 150, 250};
    held_t h = replay(clock, live, 5, 0);
    assert_int_equal(h.n, 3);
    assert_true(h.clock[0] == 1 && h.bytes[0] == 100);
    assert_true(h.clock[1] == 2 && h.bytes[1] == 50);
    assert_true(h.clock[2] == 5 && h.bytes[2] == 100);
}

/* A table freed in full (far beyond the noise) is forgotten: filled again later, it is held at that time
 * (all but what an estimate of 0 may still hide: 9 means, and the noise of that). */
static void test_sampled_real_fall_forgets(void **state)
{
    (void)state;
    const double clock[] = {1, 2, 3, 4};
    const double live[] = {400 * SAMPLE, 0, 0, 100 * SAMPLE};
    held_t h = replay(clock, live, 4, MEAN);
    assert_int_equal(h.n, 2);
    assert_true(h.clock[0] == 1 && h.clock[1] == 4 && h.bytes[1] > 0.75 * h.total);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bounded_cache_wander_is_no_growth),
        cmocka_unit_test(test_bounded_cache_recording_read_as_leak),
        cmocka_unit_test(test_bounded_cache_new_high_is_no_growth),
        cmocka_unit_test(test_bounded_cache_dip_and_climb),
        cmocka_unit_test(test_leak_through_noise),
        cmocka_unit_test(test_exact_fall_forgets_the_last_rises),
        cmocka_unit_test(test_sampled_real_fall_forgets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
