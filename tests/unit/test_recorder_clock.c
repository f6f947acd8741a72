/* Unit tests for the record clock's reuse of a thread's latest time (recorder/pf_clock.c,
 * pf_now_ns_small), on whatever clocksource the kernel has (the TSC, read by pyflow, or another, read by
 * clock_gettime). Where the run is sampled no time is reused, and a case checks that instead. */
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
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
static void test_dense_events_reuse_at_most_reuses_in_a_row(void **state)
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
    assert_true(reused > 3000);     /* fifteen in sixteen, where the readings come within PF_CLOCK_DENSE_NS */
    assert_int_equal(max_run, (int)PF_CLOCK_REUSES);
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
    assert_true(pf_tls.clk_reuses > 0);
    assert_true(pf_now_ns_small(&pf_tls) == later);
}

/* A time another thread takes (pf_now_ns on its own TLS) */
static void *take_time(void *arg)
{
    *(uint64_t *)arg = pf_now_ns();
    return NULL;
}

/* A second recording thread alone stops nothing: this thread goes on reusing its times while it is the
 * only one taking any (a program's worker recording while the main thread waits). Once the other thread
 * takes a later time, this thread's next small event reads the clock: its time is not before the other's
 * (a free there and a new block here at the same address keep their order). A fork child (one thread)
 * reuses again. */
static void test_another_threads_later_time_stops_reuse(void **state)
{
    (void)state;
    pf_clock_thread_recording(100);
    assert_true(ties_in(1000, 0) > 500);
    pf_clock_thread_recording(101);
    assert_true(ties_in(1000, 0) > 500);
    for (int i = 0; i < 8 && !pf_tls.clk_reuses; i++)
        pf_now_ns_small(&pf_tls);
    uint64_t mine = pf_now_ns_small(&pf_tls), other = 0;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, take_time, &other), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_true(other > mine);
    assert_true(pf_tls.clk_reuses > 0);     /* it would have taken `mine` again */
    assert_true(pf_now_ns_small(&pf_tls) >= other);
    pf_clock_thread_recording(100);
    uint64_t before_fork = pf_now_ns_small(&pf_tls);
    pf_tls.clk_reuses = PF_CLOCK_REUSES;    /* the parent's thread had reuses left */
    pf_clock_fork_child(&pf_tls);
    spin_ns(1000);
    assert_true(pf_now_ns_small(&pf_tls) > before_fork);     /* the child's first small event reads */
    pf_clock_thread_recording(200);
    assert_true(ties_in(1000, 0) > 500);
}

/* Two threads take turns reading the clock (each waits for the other's reading, a few hundred ns apart)
 * for longer than many anchor periods: every reading comes after the one before it, whichever thread took
 * it. Threads anchored apart disagreed by up to half a microsecond where the kernel slews its clock
 * against the TSC, and a free on one thread then sorted after the new block another thread got at its
 * address. */
#define TURNS_NS (3 * PF_CLOCK_CALIBRATE_NS + 50 * PF_CLOCK_ANCHOR_NS)
static _Atomic uint64_t turn_time;      /* the latest reading, its low bit: whose turn is next */
static _Atomic int turns_out_of_order, turns_done;

static void take_turns(int me)
{
    uint64_t start = pf_now_ns();
    for (;;) {
        uint64_t seen;
        while (((seen = atomic_load(&turn_time)) & 1) != (uint64_t)me)
            if (atomic_load(&turns_done))
                return;
        uint64_t now = pf_now_ns();
        if ((now | 1) < (seen | 1))     /* the low bit is the turn's, not the time's */
            atomic_fetch_add(&turns_out_of_order, 1);
        atomic_store(&turn_time, (now & ~1ull) | (uint64_t)!me);
        if (now - start > TURNS_NS) {
            atomic_store(&turns_done, 1);
            return;
        }
    }
}

static void *turns_thread(void *arg)
{
    (void)arg;
    pf_clock_thread_recording(101);     /* a second recording thread */
    take_turns(1);
    return NULL;
}

static void test_threads_taking_turns_read_times_in_order(void **state)
{
    (void)state;
    atomic_store(&turn_time, 0);
    atomic_store(&turns_done, 0);
    atomic_store(&turns_out_of_order, 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, turns_thread, NULL), 0);
    take_turns(0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(atomic_load(&turns_out_of_order), 0);
}

static uint64_t mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Readings between idle spells (sleeps of up to 4 ms, past a segment's span) agree with CLOCK_MONOTONIC
 * read around them: the first reading after a spell is mapped by a segment drawn then, not by the old
 * one stretched over the spell. */
static void test_readings_after_idle_spells_agree_with_monotonic(void **state)
{
    (void)state;
    int off = 0;
    for (int i = 0; i < 60; i++) {
        struct timespec nap = {0, (long)(i % 5) * 1000000L};
        nanosleep(&nap, NULL);
        uint64_t before = mono_now();
        uint64_t t = pf_now_ns() + pf_cfg.start_mono_ns;
        uint64_t after = mono_now();
        off += t + 50000 < before || t > after + 50000;     /* 50 us either way: a pair's width at most */
    }
    assert_int_equal(off, 0);
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
    if (f && fgets(buf, sizeof buf, f))
        printf("clocksource: %s", buf);     /* the cases hold on each; the log says which one ran */
    if (f)
        fclose(f);
    /* the rate needs PF_CLOCK_CALIBRATE_NS after the first pair before the TSC is read */
    spin_ns(PF_CLOCK_CALIBRATE_NS + 1000000);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_dense_events_reuse_at_most_reuses_in_a_row, setup),
        cmocka_unit_test_setup(test_sparse_events_read_the_clock, setup),
        cmocka_unit_test_setup(test_reuse_follows_the_latest_time, setup),
        cmocka_unit_test_setup(test_another_threads_later_time_stops_reuse, setup),
        cmocka_unit_test_setup(test_threads_taking_turns_read_times_in_order, setup),
        cmocka_unit_test_setup(test_readings_after_idle_spells_agree_with_monotonic, setup),
        cmocka_unit_test_setup(test_sampled_never_reuses, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
