/* Unit tests for the reporter's map (report/pf_util.c): hashed homes, growth, backward-shift deletion, and
 * the word hash its tuple keys are made with (the sweep's map keyed by address: test_report_live_map.c);
 * the arrays that grow by moving pages (pf_xgrow); and tables' slots present before their first probe. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <malloc.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "pf_util_int.h"

static void shuffle(uint64_t *keys, size_t n, unsigned seed)
{
    srand(seed);
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)rand() % (i + 1);
        uint64_t t = keys[i];
        keys[i] = keys[j];
        keys[j] = t;
    }
}

/* Inserts every key (value = its index), removes a random half, and checks that exactly the other half
 * is found with its value. */
static void churn_keys(pf_map_t *m, uint64_t *keys, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int created;
        *pf_map_put(m, keys[i], &created) = i;
        assert_int_equal(created, 1);
    }
    assert_int_equal(m->len, n);
    uint64_t *order = malloc(n * sizeof *order);
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    shuffle(order, n, 5);
    for (size_t i = 0; i < n / 2; i++)
        assert_int_equal(pf_map_del(m, keys[order[i]]), 1);
    for (size_t i = 0; i < n; i++) {
        uint64_t k = order[i];
        uint64_t *v = pf_map_get(m, keys[k]);
        if (i < n / 2) {
            assert_null(v);
            assert_int_equal(pf_map_del(m, keys[k]), 0);
        } else {
            assert_non_null(v);
            assert_int_equal(*v, k);
        }
    }
    assert_int_equal(m->len, n - n / 2);
    free(order);
}

static void test_hashed_map(void **state)
{
    (void)state;
    enum { N = 100000 };
    uint64_t *keys = malloc(N * sizeof *keys);
    for (size_t i = 0; i < N; i++)
        keys[i] = (uint64_t)i * 0x9E3779B97F4A7C15ull >> 1;   /* distinct, below UINT64_MAX */
    pf_map_t m = {0};
    churn_keys(&m, keys, N);
    pf_map_free(&m);
    free(keys);
}

/* A tuple key differing from another in any one word hashes differently (mix is a bijection), and the
 * seed separates maps that share tuples. */
static void test_hash_words(void **state)
{
    (void)state;
    uint64_t base[3] = {7, 0x7f0012345678ull, 42};
    uint64_t h = pf_hash_words(base, 3, 0x77);
    for (int w = 0; w < 3; w++)
        for (int bit = 0; bit < 64; bit++) {
            uint64_t t[3] = {base[0], base[1], base[2]};
            t[w] ^= 1ull << bit;
            assert_int_not_equal(pf_hash_words(t, 3, 0x77), h);
        }
    assert_int_not_equal(pf_hash_words(base, 3, 0x78), h);
    assert_int_not_equal(pf_hash_words(base, 2, 0x77), h);
    assert_int_equal(pf_hash_words(base, 3, 0x77), h);
}

/* An array grown from nothing through the allocator's sizes, its first mapped size and mapped sizes that
 * the kernel moves keeps every byte written before each step, at the alignment asked for, and is on 2 MiB
 * boundaries once mapped (so its pages can be huge ones); a mapped array's new pages read as zero. */
static void test_grow_keeps_contents(void **state)
{
    (void)state;
    const size_t sizes[] = {64, 4096, 1u << 20, 3u << 20, 8u << 20, 8u << 20, 21u << 20};
    unsigned char *p = NULL;
    size_t have = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t want = sizes[k];
        p = pf_xgrow(p, have, want, 64);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 64, 0);
        if (want >= (2u << 20))
            assert_int_equal((uintptr_t)p % (2u << 20), 0);
        for (size_t i = 0; i < have; i += 4093)
            assert_int_equal(p[i], (unsigned char)(i * 7 + 1));
        if (have >= (2u << 20))
            for (size_t i = have; i < want; i += 4096)
                assert_int_equal(p[i], 0);
        for (size_t i = 0; i < want; i += 4093)
            p[i] = (unsigned char)(i * 7 + 1);
        have = want;
    }
    pf_grow_free(p, have);
    pf_grow_free(NULL, 0);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static long minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

/* A table's slots, of the allocator's size and of the huge-page size, are zero, and reading then writing
 * each of its pages (a probe, then an insert) takes no page fault: the pages came present and writable.
 * Fresh pages took two faults each, a read of the zero page and a write after it that flushed it from
 * every CPU running the process. Skipped on a kernel without MADV_POPULATE_WRITE (before 5.14). */
static void test_table_pages_present(void **state)
{
    (void)state;
    void *probe = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(probe != MAP_FAILED);
    int supported = madvise(probe, 4096, MADV_POPULATE_WRITE) == 0;
    munmap(probe, 4096);
    if (!supported)
        skip();
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);  /* the allocator's size fresh from the kernel, not a block reused */
    const struct { size_t cap; int huge; } cases[] = {{(1u << 20) / 16, 0}, {(8u << 20) / 16, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        size_t bytes = cases[c].cap * 16;
        volatile unsigned char *p = pf_xcalloc_table(cases[c].cap, 16, cases[c].huge);
        long before = minor_faults();
        unsigned sum = 0;
        for (size_t i = 4096; i + 4096 <= bytes; i += 4096) {   /* the whole pages inside the block */
            sum += p[i];
            p[i] = 1;
        }
        long faults = minor_faults() - before;
        assert_int_equal(sum, 0);
        /* without: two a page (510 here), or two a huge page (8). Under AddressSanitizer the writes also
         * fault in the shadow memory's pages: only the contents are checked there. */
#ifndef __SANITIZE_ADDRESS__
        assert_true(faults < (cases[c].huge ? 2 : (long)(bytes / 4096 / 16)));
#else
        (void)faults;
#endif
        if (cases[c].huge)
            pf_free_huge((void *)p, bytes);
        else
            free((void *)p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hashed_map),
        cmocka_unit_test(test_hash_words),
        cmocka_unit_test(test_grow_keeps_contents),
        cmocka_unit_test(test_table_pages_present),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
