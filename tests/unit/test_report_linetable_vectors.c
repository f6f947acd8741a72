/* Unit test for report/pf_linetable.c against vectors embedded from real interpreters (3.9 co_lnotab,
 * 3.10 co_linetable, 3.11-3.13 location tables, Debian's 3.11): every instruction of every code object
 * of data/report/gen_linetable_vectors.py's source must decode to the line CPython gives it. Unlike
 * test_report_linetable (which asks the interpreters at test time), this runs on a machine without them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "pf_format.h"
#include "pf_linetable_int.h"

typedef struct pf_lt_check {
    uint32_t offset;    /* bytes into co_code */
    int line;
} pf_lt_check_t;

typedef struct pf_lt_vector {
    const char *name;   /* "<python version> <code name>" */
    uint32_t format;
    int firstlineno;
    const uint8_t *table;
    size_t table_len;
    const pf_lt_check_t *checks;
    size_t n_checks;
} pf_lt_vector_t;

#include "data/report/linetable_vectors.h"

static void check_format(uint32_t format, size_t min_codes)
{
    size_t codes = 0, checked = 0;
    for (size_t i = 0; i < sizeof pf_lt_vectors / sizeof *pf_lt_vectors; i++) {
        const pf_lt_vector_t *v = &pf_lt_vectors[i];
        if (v->format != format)
            continue;
        codes++;
        for (size_t k = 0; k < v->n_checks; k++) {
            int got = pf_linetable_line(v->format, v->table, v->table_len, v->firstlineno, v->checks[k].offset);
            if (got != v->checks[k].line)
                fail_msg("%s: offset %u decodes to line %d, CPython says %d", v->name, v->checks[k].offset, got,
                         v->checks[k].line);
            checked++;
        }
    }
    if (codes < min_codes || checked < 10 * min_codes)
        fail_msg("format %u: only %zu code objects / %zu instructions in the vectors", format, codes, checked);
}

/* The index gives every offset the line a walk of the table gives: the vectors' tables, whole and cut at
 * every length, every offset (odd ones too) up to past their last instruction. */
static void test_index_is_the_walk(void **state)
{
    (void)state;
    size_t compared = 0;
    for (size_t i = 0; i < sizeof pf_lt_vectors / sizeof *pf_lt_vectors; i++) {
        const pf_lt_vector_t *v = &pf_lt_vectors[i];
        uint32_t last = 0;
        for (size_t k = 0; k < v->n_checks; k++)
            last = v->checks[k].offset > last ? v->checks[k].offset : last;
        for (size_t cut = 0; cut <= v->table_len; cut += cut < 8 || cut + 7 >= v->table_len ? 1 : 7) {
            pf_linetable_index_t *ix = pf_linetable_index_new(v->format, v->table, cut, v->firstlineno);
            for (uint32_t off = 0; off <= last + 64; off++) {
                int want = pf_linetable_line(v->format, v->table, cut, v->firstlineno, off);
                int got = pf_linetable_index_line(ix, off);
                if (got != want)
                    fail_msg("%s cut at %zu: offset %u: index %d, walk %d", v->name, cut, off, got, want);
                compared++;
            }
            pf_linetable_index_free(ix);
        }
    }
    assert_true(compared > 100000);
}

static void test_lnotab_39(void **state)
{
    (void)state;
    check_format(PF_LT_LNOTAB, 10);
}

static void test_linetable_310(void **state)
{
    (void)state;
    check_format(PF_LT_LINETABLE, 10);
}

static void test_locations_311_plus(void **state)
{
    (void)state;
    check_format(PF_LT_LOCATIONS, 30);  /* 3.11, 3.12, 3.13 and Debian's 3.11 */
}

/* Every prefix of every real table, at every offset: a table cut short never reads past its end (run
 * under ASan by make check-sanitize) and still gives a line within the code's range. */
static void test_cut_tables(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof pf_lt_vectors / sizeof *pf_lt_vectors; i++) {
        const pf_lt_vector_t *v = &pf_lt_vectors[i];
        int top = v->firstlineno;
        for (size_t k = 0; k < v->n_checks; k++)
            top = v->checks[k].line > top ? v->checks[k].line : top;
        for (size_t cut = 0; cut < v->table_len; cut += 1 + v->table_len / 16) {
            for (size_t k = 0; k < v->n_checks; k += 1 + v->n_checks / 8) {
                int got = pf_linetable_line(v->format, v->table, cut, v->firstlineno, v->checks[k].offset);
                if (got < 0 || got > top + 1)
                    fail_msg("%s cut at %zu: line %d out of range", v->name, cut, got);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lnotab_39),
        cmocka_unit_test(test_linetable_310),
        cmocka_unit_test(test_locations_311_plus),
        cmocka_unit_test(test_cut_tables),
        cmocka_unit_test(test_index_is_the_walk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
