/* Unit tests for the record clock's reuse of a thread's latest time (recorder/pf_clock.c,
 * pf_now_ns_small). Where the kernel's clocksource is not the TSC, or the run is sampled, no time is
 * reused, and the cases check that instead. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "pf_clock.h"

#include "test_rec_memcpy.h"  /* the recorder's memcpy, here a plain loop */

pf_config_t pf_cfg;
__thread pf_tls_t pf_tls __attribute__((tls_model("initial-exec")));

static int tsc;     /* the clock reads the TSC here */

static int setup(void **state)
{
    (void)state;
    memset(&pf_tls, 0, sizeof pf_tls);
    pf_cfg.exact = 1;
    pf_clock_fork_child(&pf_tls);          /* no recording thread yet */
    pf_clock_thread_recording(100);
    return 0;
}

static void spin_ns(uint64_t ns)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((uint64_t)(b.tv_sec - a.tv_sec) * 1000000000ull + (uint64_t)(b.tv_nsec - a.tv_nsec) < ns);
}

/* Small events back to back (gap_ns apart): how many of n took the time before them again. Times never
 * go back. */
static int ties_in(int n, uint64_t gap_ns)
{
    uint64_t prev = pf_now_ns_small(&pf_tls);
    int same = 0;
    for (int i = 0; i < n; i++) {
        if (gap_ns)
            spin_ns(gap_ns);
        uint64_t now = pf_now_ns_small(&pf_tls);
        assert_true(now >= prev);
        same += now == prev;
        prev = now;
    }
    return same;
}

/* Dense events (back to back, well under PF_CLOCK_DENSE_NS apart): at most PF_CLOCK_REUSES reuses after a
 * reading, so at least one reading in every PF_CLOCK_REUSES + 1 events. */
static void test_dense_events_reuse_at_most_three_in_a_row(void **state)
{
    (void)state;
    uint64_t prev = pf_now_ns_small(&pf_tls);
    int run = 0, max_run = 0, reused = 0;
    for (int i = 0; i < 4000; i++) {
        uint32_t before = pf_tls.clk_reuses;
        uint64_t now = pf_now_ns_small(&pf_tls);
        assert_true(now >= prev);
        int took_again = before > 0 && pf_tls.clk_reuses == before - 1;
        if (took_again) {
            assert_true(now == prev);
            reused++;
            run++;
            if (run > max_run)
                max_run = run;
        } else {
            run = 0;
        }
        prev = now;
    }
    if (tsc) {
        assert_true(reused > 2000);     /* three in four, where the readings come within 2 us */
        assert_int_equal(max_run, (int)PF_CLOCK_REUSES);
    } else {
        assert_int_equal(reused, 0);
    }
}

/* Events further apart than PF_CLOCK_DENSE_NS: every one reads the clock. */
static void test_sparse_events_read_the_clock(void **state)
{
    (void)state;
    assert_int_equal(ties_in(50, 3 * PF_CLOCK_DENSE_NS), 0);
}

/* A time taken for another record (pf_now_ns) after a small event's reading is what the next small event
 * reuses: the thread's times never go back whatever records they are for. */
static void test_reuse_follows_the_latest_time(void **state)
{
    (void)state;
    for (int i = 0; i < 8 && !pf_tls.clk_reuses; i++)
        pf_now_ns_small(&pf_tls);
    uint64_t other = pf_now_ns();
    spin_ns(500);
    uint64_t later = pf_now_ns();   /* a record of another kind, later */
    assert_true(later > other);
    if (tsc) {
        assert_true(pf_tls.clk_reuses > 0);
        assert_true(pf_now_ns_small(&pf_tls) == later);
    }
}

/* Once a second thread records, no time is reused however dense the events; the same thread starting
 * again (a new writer generation) is not a second one; a fork child (one thread) reuses again. */
static void test_second_thread_stops_reuse_until_fork(void **state)
{
    (void)state;
    pf_clock_thread_recording(100);
    if (tsc)
        assert_true(ties_in(1000, 0) > 500);
    pf_clock_thread_recording(101);
    assert_true(ties_in(1000, 0) < 100);     /* readings back to back may tie now and then */
    pf_clock_thread_recording(100);
    uint64_t before_fork = pf_now_ns_small(&pf_tls);
    pf_tls.clk_reuses = PF_CLOCK_REUSES;    /* the parent's thread had reuses left */
    pf_clock_fork_child(&pf_tls);
    spin_ns(1000);
    assert_true(pf_now_ns_small(&pf_tls) > before_fork);     /* the child's first small event reads */
    pf_clock_thread_recording(200);
    if (tsc)
        assert_true(ties_in(1000, 0) > 500);
    else
        assert_true(ties_in(1000, 0) < 100);
}

/* Sampled (not --exact), a small event's time is always read: three records may be far apart. */
static void test_sampled_never_reuses(void **state)
{
    (void)state;
    pf_cfg.exact = 0;
    assert_true(ties_in(1000, 0) < 100);
}

int main(void)
{
    pf_clock_init();
    char buf[32] = {0};
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    tsc = f && fgets(buf, sizeof buf, f) && strncmp(buf, "tsc", 3) == 0;
    if (f)
        fclose(f);
    /* the rate needs PF_CLOCK_CALIBRATE_NS after the first pair before the TSC is read */
    spin_ns(PF_CLOCK_CALIBRATE_NS + 1000000);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_dense_events_reuse_at_most_three_in_a_row, setup),
        cmocka_unit_test_setup(test_sparse_events_read_the_clock, setup),
        cmocka_unit_test_setup(test_reuse_follows_the_latest_time, setup),
        cmocka_unit_test_setup(test_second_thread_stops_reuse_until_fork, setup),
        cmocka_unit_test_setup(test_sampled_never_reuses, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
