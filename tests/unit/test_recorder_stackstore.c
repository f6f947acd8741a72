/* Unit tests for recorder/pf_idtable (ids found while the slot array grows; the arrays it grew out of no
 * longer resident) and recorder/pf_seqstore (sequences read back whole, told apart by any word, and their
 * shared outer segments stored once). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "pf_idtable.h"
#include "pf_seqstore.h"

#include "test_rec_memcpy.h"  /* the recorder's memcpy, here a plain loop */

typedef struct { uint64_t key; } entry_t;

static int same_key(const void *entry, const void *key)
{
    return ((const entry_t *)entry)->key == *(const uint64_t *)key;
}

static uint64_t hash_of(uint64_t k)
{
    uint64_t h = (k + 1) * 0x9E3779B97F4A7C15ull;
    return pf_idtable_hash_fix(h ^ h >> 29);
}

/* Resident pages of [p, p + bytes). */
static size_t resident_pages(const void *p, size_t bytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (bytes + page - 1) / page, in = 0;
    unsigned char *vec = malloc(n);
    assert_int_equal(mincore((void *)p, bytes, vec), 0);
    for (size_t i = 0; i < n; i++)
        in += vec[i] & 1;
    free(vec);
    return in;
}

static void idtable_grows_and_gives_back(void **state)
{
    (void)state;
    static pf_idtable_t t = {.entry_bytes = sizeof(entry_t)};
    const uint64_t n = 100000;      /* 4K slots doubled five times */
    for (uint64_t k = 0; k < n; k++) {
        uint32_t id;
        entry_t *e = pf_idtable_reserve(&t, &id);
        assert_non_null(e);
        assert_int_equal(id, k + 1);
        e->key = k;
        assert_int_equal(pf_idtable_publish(&t, hash_of(k), id), 0);
    }
    for (uint64_t k = 0; k < n; k++)
        assert_int_equal(pf_idtable_find(&t, hash_of(k), same_key, &k), k + 1);
    uint64_t absent = n + 7;
    assert_int_equal(pf_idtable_find(&t, hash_of(absent), same_key, &absent), 0);
    /* a hash whose high half matches an id's but whose key differs is no match */
    uint64_t other = 3;
    assert_int_equal(pf_idtable_find(&t, hash_of(5), same_key, &other), 0);
    assert_true(t.n_arrays >= 5);
    size_t slots = 4096;
    for (uint32_t a = 0; a + 1 < t.n_arrays; a++, slots *= 2)
        assert_int_equal(resident_pages(t.arrays[a], slots * sizeof(pf_idslot_t)), 0);
    assert_true(resident_pages(t.arrays[t.n_arrays - 1], slots * sizeof(pf_idslot_t)) > 0);
    pf_idtable_reset(&t);
    assert_int_equal(pf_idtable_count(&t), 0);
}

/* A stack-like sequence: `depth` outer frames shared by every sequence of the same root, then `leaf`'s
 * own inner frames. */
static uint32_t make_seq(uint64_t *w, uint32_t depth, uint32_t leaf, uint32_t own)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < own; i++)
        w[n++] = 0xA000000000ull + (uint64_t)leaf * 64 + i;
    for (uint32_t i = 0; i < depth; i++)
        w[n++] = 0x5000 + (uint64_t)(depth - 1 - i);    /* outermost last */
    return n;
}

static void seqstore_round_trip(void **state)
{
    (void)state;
    static pf_seqstore_t s;
    uint64_t w[128], back[128];
    uint32_t handles[1000], lens[1000];
    for (uint32_t k = 0; k < 1000; k++) {
        lens[k] = make_seq(w, 56 + k % 9, k, 1 + k % 5);
        assert_int_equal(pf_seq_add(&s, w, lens[k], &handles[k]), 0);
        assert_true(handles[k] != 0);
    }
    for (uint32_t k = 0; k < 1000; k++) {
        uint32_t n = make_seq(w, 56 + k % 9, k, 1 + k % 5);
        assert_true(pf_seq_same(&s, handles[k], w, n));
        memset(back, 0, sizeof back);
        pf_seq_get(&s, handles[k], back, n);
        assert_memory_equal(back, w, (size_t)n * 8);
        uint32_t again;
        assert_int_equal(pf_seq_add(&s, w, n, &again), 0);
        assert_int_equal(again, handles[k]);        /* the same sequence is the same handle */
        for (uint32_t i = 0; i < n; i += 7) {       /* any word changed: another sequence */
            w[i] ^= 1;
            assert_false(pf_seq_same(&s, handles[k], w, n));
            w[i] ^= 1;
        }
        assert_false(pf_seq_same(&s, handles[k], w, n - 1));
        assert_false(pf_seq_same(&s, handles[k], w + 1, n - 1));
        w[n] = 1;
        assert_false(pf_seq_same(&s, handles[k], w, n + 1));
    }
    /* the empty sequence */
    uint32_t h = 99;
    assert_int_equal(pf_seq_add(&s, w, 0, &h), 0);
    assert_int_equal(h, 0);
    assert_true(pf_seq_same(&s, 0, w, 0));
    assert_false(pf_seq_same(&s, 0, w, 1));
    /* 1000 sequences of 57-69 words, 64 KB and more whole: the nine shared roots are stored once each,
     * so about one node of own frames plus a few of roots' is kept per sequence */
    assert_true(pf_seq_bytes(&s) < 1000 * 8 * 24);
    pf_seq_reset(&s);
    assert_int_equal(pf_seq_bytes(&s), 0);
}

static void seqstore_many(void **state)
{
    (void)state;
    static pf_seqstore_t s;
    uint64_t w[64];
    uint32_t first = 0;
    for (uint32_t k = 0; k < 200000; k++) {     /* past the first block and several index growths */
        for (uint32_t i = 0; i < 20; i++)
            w[i] = (uint64_t)k * 31 + i;
        uint32_t h;
        assert_int_equal(pf_seq_add(&s, w, 20, &h), 0);
        if (!k)
            first = h;
    }
    assert_true(s.n_blocks > 1);
    for (uint32_t i = 0; i < 20; i++)
        w[i] = i;
    assert_true(pf_seq_same(&s, first, w, 20));
    pf_seq_reset(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(idtable_grows_and_gives_back),
        cmocka_unit_test(seqstore_round_trip),
        cmocka_unit_test(seqstore_many),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
