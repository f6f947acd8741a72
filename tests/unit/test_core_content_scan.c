/* Unit tests for core/pf_content_scan.h: the fingerprint behind recomputed values. Equal contents match;
 * a change in the fully hashed prefix, in a strided word or in the size does not; all-zero and
 * pointer-holding contents are said; a large object costs a bounded number of words. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pf_content_scan.h"

static double *filled(size_t n, double base)
{
    double *a = malloc(n * sizeof *a);
    for (size_t i = 0; i < n; i++)
        a[i] = base + (double)i * 0.25;
    return a;
}

static uint64_t hash_of(const void *p, uint64_t size)
{
    pf_content_scan_t s;
    pf_content_scan(p, size, 0, &s);
    return s.hash;
}

static void test_equal_contents_match(void **state)
{
    (void)state;
    double *a = filled(4096, 1.0), *b = filled(4096, 1.0);
    assert_true(hash_of(a, 4096 * 8) == hash_of(b, 4096 * 8));
    b[5] += 1.0;    /* in the prefix hashed in full */
    assert_true(hash_of(a, 4096 * 8) != hash_of(b, 4096 * 8));
    free(a);
    free(b);
}

static void test_size_and_tail_count(void **state)
{
    (void)state;
    unsigned char a[203], b[203];
    memset(a, 7, sizeof a);
    memcpy(b, a, sizeof b);
    assert_true(hash_of(a, 200) != hash_of(a, 201));   /* the size is part of the value */
    b[202] = 8;     /* a tail shorter than a word is hashed too */
    assert_true(hash_of(a, 203) != hash_of(b, 203));
}

static void test_large_object_is_strided(void **state)
{
    (void)state;
    size_t n = (1u << 20) / 8;     /* 1 MiB */
    double *a = filled(n, 3.0), *b = filled(n, 3.0);
    pf_content_scan_t s;
    pf_content_scan(a, n * 8, 0, &s);
    assert_true(s.words <= PF_CONTENT_FULL_BYTES / 8 + PF_CONTENT_STRIDE_WORDS + 2);
    b[n - 1] = -1.0;    /* the last word is always read */
    assert_true(hash_of(a, n * 8) != hash_of(b, n * 8));
    memcpy(b, a, n * 8);
    b[PF_CONTENT_FULL_BYTES / 8] = -1.0;   /* the first strided word */
    assert_true(hash_of(a, n * 8) != hash_of(b, n * 8));
    memcpy(b, a, n * 8);
    b[PF_CONTENT_FULL_BYTES / 8 + 1] = -1.0;    /* between two strided words: missed, as documented */
    assert_true(hash_of(a, n * 8) == hash_of(b, n * 8));
    free(a);
    free(b);
}

static void test_zero_and_pointers(void **state)
{
    (void)state;
    uint64_t z[64] = {0}, p[64], f[64];
    pf_content_scan_t s;
    pf_content_scan(z, sizeof z, 0, &s);
    assert_true(s.all_zero);
    for (int i = 0; i < 64; i++) {
        p[i] = (uint64_t)(uintptr_t)&p[i];      /* addresses of this stack */
        double d = 1.5 * i;
        memcpy(&f[i], &d, 8);
    }
    pf_content_scan(p, sizeof p, 0, &s);
    assert_false(s.all_zero);
    assert_true(pf_content_pointerish(&s));
    pf_content_scan(f, sizeof f, 0, &s);
    assert_false(pf_content_pointerish(&s));
    assert_false(s.all_zero);
}

static void test_skip_leaves_header_out(void **state)
{
    (void)state;
    uint64_t a[32], b[32];
    for (int i = 0; i < 32; i++)
        a[i] = b[i] = 0x4141414141414141ull + (uint64_t)i;
    b[0] = 99;  /* a reference count */
    b[1] = 7;   /* and a type: skipped */
    pf_content_scan_t x, y;
    pf_content_scan(a, sizeof a, 16, &x);
    pf_content_scan(b, sizeof b, 16, &y);
    assert_true(x.hash == y.hash);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_contents_match),
        cmocka_unit_test(test_size_and_tail_count),
        cmocka_unit_test(test_large_object_is_strided),
        cmocka_unit_test(test_zero_and_pointers),
        cmocka_unit_test(test_skip_leaves_header_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
