/* The peak's standard error (report/pf_model_peak.c): a sampled object adds its variance weighted by the
 * square of the share of the peak's window it was live, and the halves' disagreement adds to it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>

#include "pf_peak_int.h"

/* One object of each half in the row, made at t = 0 and live for `life` of the run's 1000 ns. The total
 * peaks at 0 and, with a sampled object of each half elsewhere whose error dwarfs the row's bytes, stays
 * within its error of that peak all run: the windows are the whole run. */
static double se_of(double est, double size, uint64_t life, double *share)
{
    pf_peak_est_t P = {0};
    pf_peak_row_t row = {0}, total = {0};
    pf_peak_obj_t objs[2];
    pf_peak_advance(&P, 0);
    pf_peak_row_add(&P, &total, 0, 1e9);
    for (int h = 1; h <= 2; h++) {
        pf_peak_row_add(&P, &total, h, 1e6);
        pf_peak_total_add(&P, h, 1e6, 1);
    }
    for (int h = 1; h <= 2; h++) {
        pf_peak_obj_start(&P, &objs[h - 1]);
        pf_peak_row_add(&P, &row, h, est);
        pf_peak_row_add(&P, &total, h, est);
        pf_peak_total_add(&P, h, est, size);
    }
    pf_peak_after_event(&P, &total);
    pf_peak_advance(&P, life);
    for (int h = 1; h <= 2; h++) {     /* they end; the total still peaks (within its error) */
        pf_peak_row_add(&P, &row, h, -est);
        pf_peak_row_add(&P, &total, h, -est);
        pf_peak_total_add(&P, h, -est, size);
        pf_peak_obj_end(&P, &row, &objs[h - 1], h, est, size);
    }
    pf_peak_after_event(&P, &total);
    pf_peak_advance(&P, 1000);
    double se;
    *share = pf_peak_row_share(&P, &row, 0, &se);
    return se;
}

static void test_variance_by_share_of_window(void **state)
{
    (void)state;
    double share;
    /* live all through: the row holds 2 est; each half's estimate is 2 est with variance 4 est (est - size);
     * their mean has (4 est (est - size) + 4 est (est - size)) / 4 = 2 est (est - size), and the halves
     * agree */
    double whole = se_of(1000, 100, 1000, &share);
    assert_true(fabs(share - 2000) < 1e-6);
    assert_true(fabs(whole - sqrt(2.0 * 1000 * 900)) < 1e-6);
    /* live a tenth of the window: a tenth of the bytes, a tenth of the error */
    double tenth = se_of(1000, 100, 100, &share);
    assert_true(fabs(share - 200) < 1e-6);
    assert_true(fabs(tenth - whole / 10) < 1e-6);
    /* recorded exactly (est = size): no error */
    assert_true(se_of(100, 100, 1000, &share) == 0);
}

static void test_halves_disagreement_adds(void **state)
{
    (void)state;
    pf_peak_est_t P = {0};
    pf_peak_row_t row = {0}, total = {0};
    pf_peak_advance(&P, 0);
    pf_peak_row_add(&P, &total, 0, 1e9);
    pf_peak_row_add(&P, &row, 1, 300);     /* exact-sized objects (no variance of their own), unequal halves */
    pf_peak_total_add(&P, 1, 300, 300);
    pf_peak_row_add(&P, &row, 2, 100);
    pf_peak_total_add(&P, 2, 100, 100);
    pf_peak_after_event(&P, &total);
    pf_peak_advance(&P, 1000);
    double se, v = pf_peak_row_share(&P, &row, 0, &se);
    assert_true(fabs(v - 400) < 1e-6);     /* halves 2*100 and 2*300 */
    assert_true(fabs(se - 200) < 1e-6);    /* |200 - 600| / 2 */
}

static void test_exact_profile_has_no_error(void **state)
{
    (void)state;
    pf_peak_est_t P = {.off = 1};
    pf_peak_row_t row = {0};
    double se = -1, v = pf_peak_row_share(&P, &row, 123, &se);
    assert_true(v == 123 && se == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_variance_by_share_of_window),
        cmocka_unit_test(test_halves_disagreement_adds),
        cmocka_unit_test(test_exact_profile_has_no_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
