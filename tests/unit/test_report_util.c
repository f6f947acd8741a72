/* Unit tests for the reporter's map (report/pf_util.c): hashed and by-address homes, growth, backward-shift
 * deletion, and the word hash its tuple keys are made with. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

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

/* A by-address map keeps each slot's home beside it (pf_map_t.homes): after growth and deletions that
 * shifted entries back, every occupied slot's home is still its key's, and lookups from it find the key. */
static void assert_homes_kept(const pf_map_t *m)
{
    assert_non_null(m->homes);
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].key)
            continue;
        assert_int_equal(m->homes[i], pf_map_home(m, m->slots[i].key - 1));
        /* no empty slot between the home and the entry: a probe from the home reaches it */
        for (size_t j = m->homes[i]; j != i; j = (j + 1) & (m->cap - 1))
            assert_int_not_equal(m->slots[j].key, 0);
    }
}

/* Removals that shift entries of several windows, one round after another, the map growing between them. */
static void test_address_map_homes_through_shifts(void **state)
{
    (void)state;
    enum { N = 50000 };
    uint64_t *keys = malloc(N * sizeof *keys);
    pf_map_t m = {.by_address = 1};
    for (int round = 0; round < 4; round++) {
        for (size_t i = 0; i < N; i++)     /* 16-byte objects of neighbouring blocks, as pymalloc packs them */
            keys[i] = 0x7f0012340000ull + (uint64_t)round * 0x100000 + i * 16;
        for (size_t i = 0; i < N; i++)
            *pf_map_put(&m, keys[i], NULL) = i;
        shuffle(keys, N, (unsigned)round + 11);
        for (size_t i = 0; i < N * 3 / 4; i++)
            assert_int_equal(pf_map_del(&m, keys[i]), 1);
        assert_homes_kept(&m);
        for (size_t i = N * 3 / 4; i < N; i++)
            assert_non_null(pf_map_get(&m, keys[i]));
    }
    pf_map_free(&m);
    assert_null(m.homes);
    free(keys);
}

/* A roomy map grows at half full (a plain one at three quarters), keeping its homes; removing an entry by
 * its value slot is removing its key. */
static void test_roomy_map_and_removal_by_slot(void **state)
{
    (void)state;
    pf_map_t plain = {.by_address = 1}, roomy = {.by_address = 1, .roomy = 1};
    for (uint64_t i = 0; i < 33; i++) {
        *pf_map_put(&plain, 0x7f0000001000ull + i * 16, NULL) = i;
        *pf_map_put(&roomy, 0x7f0000001000ull + i * 16, NULL) = i;
    }
    assert_int_equal(plain.cap, 64);    /* 33 of 64: under three quarters */
    assert_int_equal(roomy.cap, 128);   /* past half of 64 */
    assert_int_equal(roomy.roomy, 1);
    for (uint64_t i = 0; i < 33; i += 2) {
        uint64_t *v = pf_map_get(&roomy, 0x7f0000001000ull + i * 16);
        assert_non_null(v);
        pf_map_del_at(&roomy, v);
        assert_null(pf_map_get(&roomy, 0x7f0000001000ull + i * 16));
    }
    assert_int_equal(roomy.len, 16);
    for (uint64_t i = 1; i < 33; i += 2)
        assert_int_equal(*pf_map_get(&roomy, 0x7f0000001000ull + i * 16), i);
    assert_homes_kept(&roomy);
    pf_map_free(&plain);
    pf_map_free(&roomy);
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
    assert_null(m.homes);   /* hashed homes cost little: none kept */
    pf_map_free(&m);
    free(keys);
}

/* Keys as the sweep makes them (process in the high bits, address below), packed as allocators pack
 * objects: every 16 bytes, in two processes whose addresses coincide, and page-aligned blocks. Neighbours'
 * windows overlap; deletion must keep every probe run intact across them and the array's wrap-around. */
static void test_address_map(void **state)
{
    (void)state;
    enum { DENSE = 60000, PAGES = 20000, N = 2 * DENSE + PAGES };
    uint64_t *keys = malloc(N * sizeof *keys);
    size_t n = 0;
    for (uint64_t proc = 0; proc < 2; proc++)
        for (size_t i = 0; i < DENSE; i++)
            keys[n++] = (proc << 48) | (0x7f0012340000ull + i * 16);
    for (size_t i = 0; i < PAGES; i++)
        keys[n++] = 0x7f4000000000ull + i * 4096;
    pf_map_t m = {.by_address = 1};
    churn_keys(&m, keys, n);
    assert_int_equal(m.by_address, 1);     /* kept through growth */
    assert_homes_kept(&m);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hashed_map),
        cmocka_unit_test(test_address_map),
        cmocka_unit_test(test_address_map_homes_through_shifts),
        cmocka_unit_test(test_roomy_map_and_removal_by_slot),
        cmocka_unit_test(test_hash_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
