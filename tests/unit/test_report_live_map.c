/* Unit tests for the sweep's map of live objects (report/pf_live_map.c): homes in address windows kept in
 * the slots through growth and backward shifts, removal by slot, growth at half full when roomy, and
 * placement: every key where the plain algorithm (linear probing, backward-shift removal, growth by
 * re-inserting in slot order) puts it, since the order a walk of the slots sees is part of the report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pf_live_map.h"

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

/* Every occupied slot's home is its key's, and no empty slot lies between the home and the entry. */
static void assert_homes_kept(const pf_live_map_t *m)
{
    size_t len = 0;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].key1)
            continue;
        len++;
        assert_int_equal(m->slots[i].home, pf_live_home(m, m->slots[i].key1 - 1));
        for (size_t j = m->slots[i].home; j != i; j = (j + 1) & (m->cap - 1))
            assert_int_not_equal(m->slots[j].key1, 0);
    }
    assert_int_equal(len, m->len);
}

/* Inserts every key (index = its position), removes a random half, and checks that exactly the other half
 * is found with its index. */
static void churn_keys(pf_live_map_t *m, const uint64_t *keys, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int created;
        pf_live_put(m, keys[i], &created)->idx = (uint32_t)i;
        assert_int_equal(created, 1);
    }
    assert_int_equal(m->len, n);
    uint64_t *order = malloc(n * sizeof *order);
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    shuffle(order, n, 5);
    for (size_t i = 0; i < n / 2; i++)
        assert_int_equal(pf_live_del(m, keys[order[i]]), 1);
    for (size_t i = 0; i < n; i++) {
        const pf_live_slot_t *s = pf_live_get(m, keys[order[i]]);
        if (i < n / 2) {
            assert_null(s);
            assert_int_equal(pf_live_del(m, keys[order[i]]), 0);
        } else {
            assert_non_null(s);
            assert_int_equal(s->idx, order[i]);
        }
    }
    assert_int_equal(m->len, n - n / 2);
    free(order);
}

/* Keys as the sweep makes them (process in the high bits, address below), packed as allocators pack
 * objects: every 16 bytes, in two processes whose addresses coincide, and page-aligned blocks. Neighbours'
 * windows overlap; deletion must keep every probe run intact across them and the array's wrap-around. */
static void test_address_keys(void **state)
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
    pf_live_map_t m = {0};
    churn_keys(&m, keys, n);
    assert_homes_kept(&m);
    pf_live_free(&m);
    assert_null(m.slots);
    free(keys);
}

/* Removals that shift entries of several windows, one round after another, the map growing between them. */
static void test_homes_through_shifts(void **state)
{
    (void)state;
    enum { N = 50000 };
    uint64_t *keys = malloc(N * sizeof *keys);
    pf_live_map_t m = {.roomy = 1};
    for (int round = 0; round < 4; round++) {
        for (size_t i = 0; i < N; i++)     /* 16-byte objects of neighbouring blocks, as pymalloc packs them */
            keys[i] = 0x7f0012340000ull + (uint64_t)round * 0x100000 + i * 16;
        for (size_t i = 0; i < N; i++)
            pf_live_put(&m, keys[i], NULL)->idx = (uint32_t)i;
        shuffle(keys, N, (unsigned)round + 11);
        for (size_t i = 0; i < N * 3 / 4; i++)
            assert_int_equal(pf_live_del(&m, keys[i]), 1);
        assert_homes_kept(&m);
        for (size_t i = N * 3 / 4; i < N; i++)
            assert_non_null(pf_live_get(&m, keys[i]));
    }
    pf_live_free(&m);
    free(keys);
}

/* A roomy map grows at half full (a plain one at three quarters); put_if_room declines where a put would
 * grow the map, and touches nothing; removing an entry by its slot is removing its key. */
static void test_roomy_and_removal_by_slot(void **state)
{
    (void)state;
    pf_live_map_t plain = {0}, roomy = {.roomy = 1};
    for (uint64_t i = 0; i < 33; i++) {
        pf_live_put(&plain, 0x7f0000001000ull + i * 16, NULL)->idx = (uint32_t)i;
        if (i == 32) {  /* the 33rd of 64 slots: past half */
            int created = -1;
            assert_null(pf_live_put_if_room(&roomy, 0x7f0000001000ull + i * 16, &created));
            assert_int_equal(created, -1);
            assert_int_equal(roomy.cap, 64);
            assert_int_equal(roomy.len, 32);
        }
        pf_live_put(&roomy, 0x7f0000001000ull + i * 16, NULL)->idx = (uint32_t)i;
    }
    assert_int_equal(plain.cap, 64);    /* 33 of 64: under three quarters */
    assert_int_equal(roomy.cap, 128);
    assert_int_equal(roomy.roomy, 1);   /* kept through growth */
    for (uint64_t i = 0; i < 33; i += 2) {
        pf_live_slot_t *s = pf_live_get(&roomy, 0x7f0000001000ull + i * 16);
        assert_non_null(s);
        pf_live_del_at(&roomy, s);
        assert_null(pf_live_get(&roomy, 0x7f0000001000ull + i * 16));
    }
    assert_int_equal(roomy.len, 16);
    for (uint64_t i = 1; i < 33; i += 2)
        assert_int_equal(pf_live_get(&roomy, 0x7f0000001000ull + i * 16)->idx, i);
    assert_homes_kept(&roomy);
    pf_live_free(&plain);
    pf_live_free(&roomy);
}

/* ---- the placement the reports were made with, written out plainly ---- */

typedef struct ref_map {
    uint64_t *key1;     /* key + 1; 0 = empty */
    size_t cap, len;
    int roomy;
} ref_map_t;

static size_t ref_home(const ref_map_t *r, uint64_t key)
{
    pf_live_map_t probe = {.cap = r->cap};
    return pf_live_home(&probe, key);
}

/* The slot of key, or the empty slot where its probe ends. */
static size_t ref_find(const ref_map_t *r, uint64_t key)
{
    size_t i = ref_home(r, key);
    while (r->key1[i] && r->key1[i] != key + 1)
        i = (i + 1) % r->cap;
    return i;
}

static void ref_put(ref_map_t *r, uint64_t key)
{
    if (r->roomy ? (r->len + 1) * 2 > r->cap : (r->len + 1) * 4 > r->cap * 3) {
        ref_map_t bigger = {calloc(r->cap ? r->cap * 2 : 64, sizeof(uint64_t)), r->cap ? r->cap * 2 : 64, r->len,
                            r->roomy};
        for (size_t i = 0; i < r->cap; i++)
            if (r->key1[i])
                bigger.key1[ref_find(&bigger, r->key1[i] - 1)] = r->key1[i];
        free(r->key1);
        *r = bigger;
    }
    size_t i = ref_find(r, key);
    if (!r->key1[i]) {
        r->key1[i] = key + 1;
        r->len++;
    }
}

/* Backward shift: each later entry of the run whose home is not in (hole, j] moves back into the hole. */
static void ref_del(ref_map_t *r, uint64_t key)
{
    size_t hole = ref_find(r, key);
    if (!r->key1[hole])
        return;
    for (size_t j = (hole + 1) % r->cap; r->key1[j]; j = (j + 1) % r->cap) {
        size_t home = ref_home(r, r->key1[j] - 1);
        size_t from_home = (j + r->cap - home) % r->cap, from_hole = (j + r->cap - hole) % r->cap;
        if (from_home >= from_hole) {
            r->key1[hole] = r->key1[j];
            hole = j;
        }
    }
    r->key1[hole] = 0;
    r->len--;
}

static void assert_same_places(const pf_live_map_t *m, const ref_map_t *r)
{
    assert_int_equal(m->cap, r->cap);
    assert_int_equal(m->len, r->len);
    for (size_t i = 0; i < r->cap; i++)
        assert_int_equal(m->slots[i].key1, r->key1[i]);
}

/* A sweep's mix of allocations and frees (neighbours, reused addresses, pages, two processes), the usual
 * allocation's put_if_room first: after every step each key sits where the plain algorithm puts it. */
static void run_placement(int roomy)
{
    enum { STEPS = 60000, POOL = 6000 };
    pf_live_map_t m = {.roomy = roomy};
    ref_map_t r = {.roomy = roomy};
    srand(99 + (unsigned)roomy);
    for (int step = 0; step < STEPS; step++) {
        size_t n = (size_t)rand() % POOL;
        uint64_t key = n < POOL / 2   ? 0x7f0012340000ull + n * 16
                       : n < POOL - 500 ? (1ull << 48) | (0x7f0012340000ull + n * 48)
                                         : 0x7f4000000000ull + n * 4096;
        int grow_phase = (step / 7000) % 2 == 0;     /* mostly allocations, then mostly frees */
        if (rand() % 100 < (grow_phase ? 75 : 30)) {
            int created;
            pf_live_slot_t *s = pf_live_put_if_room(&m, key, &created);
            if (!s)
                s = pf_live_put(&m, key, &created);
            s->idx = (uint32_t)n;
            ref_put(&r, key);
        } else {
            pf_live_slot_t *s = pf_live_get(&m, key);
            if (s)
                pf_live_del_at(&m, s);
            ref_del(&r, key);
        }
        if (step % 97 == 0 || step == STEPS - 1)
            assert_same_places(&m, &r);
    }
    assert_homes_kept(&m);
    pf_live_free(&m);
    free(r.key1);
}

static void test_placement_plain(void **state)
{
    (void)state;
    run_placement(0);
}

static void test_placement_roomy(void **state)
{
    (void)state;
    run_placement(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_address_keys),
        cmocka_unit_test(test_homes_through_shifts),
        cmocka_unit_test(test_roomy_and_removal_by_slot),
        cmocka_unit_test(test_placement_plain),
        cmocka_unit_test(test_placement_roomy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
