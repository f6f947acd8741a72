/* Unit test for report/pf_linetable.c: reads vectors produced by tests/unit/data/linetable_vectors.py
 * under a real interpreter (stdin), and checks the decoder's line for every instruction CPython knows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pf_linetable_int.h"

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static void test_vectors_from_interpreter(void **state)
{
    char *line = NULL;
    size_t cap = 0;
    int codes = 0, checked = 0;
    while (getline(&line, &cap, stdin) > 0) {
        unsigned fmt;
        int first;
        char *save;
        char *tok = strtok_r(line, " \n", &save);
        assert_non_null(tok);
        fmt = (unsigned)atoi(tok);
        first = atoi(strtok_r(NULL, " \n", &save));
        char *hex = strtok_r(NULL, " \n", &save);
        size_t n = strcmp(hex, "-") == 0 ? 0 : strlen(hex) / 2;
        uint8_t *table = malloc(n + 1);
        for (size_t i = 0; i < n; i++)
            table[i] = (uint8_t)(hexval(hex[2 * i]) * 16 + hexval(hex[2 * i + 1]));
        while ((tok = strtok_r(NULL, " \n", &save))) {
            unsigned off;
            int want;
            assert_int_equal(sscanf(tok, "%u:%d", &off, &want), 2);
            int got = pf_linetable_line(fmt, table, n, first, off);
            if (got != want)
                fail_msg("format %u, first line %d, offset %u: decoded line %d, CPython says %d", fmt, first, off,
                         got, want);
            checked++;
        }
        free(table);
        codes++;
    }
    free(line);
    assert_true(codes >= 8);        /* the vector script compiles at least 8 code objects */
    assert_true(checked >= 100);
}

static void test_cut_tables_never_overrun(void **state)
{
    /* a location table cut in the middle of a varint, and garbage: no crash, a sane line */
    const uint8_t cut[] = {0xF0 | 7, 0x83};
    int l = pf_linetable_line(3, cut, 1, 10, 4);
    assert_true(l >= 1);
    uint8_t junk[64];
    for (int i = 0; i < 64; i++)
        junk[i] = (uint8_t)(i * 37 + 11);
    for (unsigned fmt = 0; fmt <= 4; fmt++)
        for (unsigned off = 0; off < 300; off += 2)
            (void)pf_linetable_line(fmt, junk, sizeof junk, 5, off);
    assert_int_equal(pf_linetable_line(3, NULL, 0, 42, 0), 42);
}

/* The index (pf_linetable_index_new) agrees with the walk on random tables of every format, "no line"
 * entries, zero-length entries and varints cut short included, at every offset. */
static void test_index_on_random_tables(void **state)
{
    (void)state;
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int round = 0; round < 3000; round++) {
        uint8_t t[96];
        size_t len = (size_t)(round % 97);
        for (size_t i = 0; i < len; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            t[i] = (uint8_t)x;
            if (round % 3 == 0 && i % 2 == 1 && (x >> 20) % 5 == 0)
                t[i] = 0x80;    /* 3.10's "no line" */
        }
        for (unsigned fmt = 0; fmt <= 4; fmt++) {
            pf_linetable_index_t *ix = pf_linetable_index_new(fmt, len ? t : NULL, len, 100 + round);
            for (uint32_t off = 0; off < 2000; off++) {
                int want = pf_linetable_line(fmt, len ? t : NULL, len, 100 + round, off);
                if (pf_linetable_index_line(ix, off) != want)
                    fail_msg("round %d format %u offset %u: index %d, walk %d", round, fmt, off,
                             pf_linetable_index_line(ix, off), want);
            }
            pf_linetable_index_free(ix);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors_from_interpreter),
        cmocka_unit_test(test_cut_tables_never_overrun),
        cmocka_unit_test(test_index_on_random_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
