/* Unit tests for recorder/pf_objtable: insert/remove/lookup, growth, backward-shift deletion under churn,
 * the counting filter, and concurrent use from several threads. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "pf_objtable.h"

static int setup(void **state)
{
    pf_objtable_reset();
    return pf_objtable_init();
}

static void test_insert_lookup_remove(void **state)
{
    pf_objinfo_t o = {.addr = 0x7f0000001000, .size = 4096, .domain = 3, .flags = 1}, got;
    assert_int_equal(pf_objtable_maybe((void *)o.addr), 0);
    assert_int_equal(pf_objtable_insert(&o), 0);
    assert_int_equal(pf_objtable_maybe((void *)o.addr), 1);
    assert_int_equal(pf_objtable_lookup(o.addr, &got), 1);
    assert_int_equal(got.size, 4096);
    assert_int_equal(got.domain, 3);
    assert_int_equal(pf_objtable_count(), 1);
    assert_int_equal(pf_objtable_remove(o.addr, &got), 1);
    assert_int_equal(pf_objtable_remove(o.addr, &got), 0);
    assert_int_equal(pf_objtable_maybe((void *)o.addr), 0);
    assert_int_equal(pf_objtable_count(), 0);
}

static void test_reinsert_overwrites(void **state)
{
    pf_objinfo_t a = {.addr = 0x1000, .size = 10}, b = {.addr = 0x1000, .size = 20}, got;
    pf_objtable_insert(&a);
    pf_objtable_insert(&b);
    assert_int_equal(pf_objtable_count(), 1);
    assert_int_equal(pf_objtable_remove(0x1000, &got), 1);
    assert_int_equal(got.size, 20);
    /* the filter counted the address once, so it is clear again */
    assert_int_equal(pf_objtable_maybe((void *)0x1000), 0);
}

/* Many page-aligned addresses (the worst case for weak hashes), removed in a scrambled order: every
 * lookup must still find what is left (backward-shift deletion keeps probe runs intact). */
static void shuffle(uintptr_t *v, int n, unsigned seed)
{
    srand(seed);
    for (int i = n - 1; i > 0; i--) {
        int j = rand() % (i + 1);
        uintptr_t t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

static void test_growth_and_churn(void **state)
{
    enum { N = 200000 };
    uintptr_t *addrs = malloc(N * sizeof *addrs);
    for (int i = 0; i < N; i++) {
        addrs[i] = 0x10000000ull + (uintptr_t)i * 4096;
        pf_objinfo_t o = {.addr = addrs[i], .size = (uint64_t)i};
        assert_int_equal(pf_objtable_insert(&o), 0);
    }
    assert_int_equal(pf_objtable_count(), N);
    shuffle(addrs, N, 7);
    for (int i = 0; i < N / 2; i++)
        assert_int_equal(pf_objtable_remove(addrs[i], NULL), 1);
    for (int i = N / 2; i < N; i++) {
        pf_objinfo_t got;
        assert_int_equal(pf_objtable_lookup(addrs[i], &got), 1);
        assert_int_equal(got.size, (addrs[i] - 0x10000000ull) / 4096);
    }
    for (int i = 0; i < N / 2; i++)
        assert_int_equal(pf_objtable_lookup(addrs[i], NULL), 0);
    assert_int_equal(pf_objtable_count(), N - N / 2);
    free(addrs);
}

/* Neighbours share a stripe (one per 1 MiB region): 200K of them grow one stripe's array past 4 MiB,
 * onto huge pages (an aligned mapping of its own), and everything is still found, then removed. */
static void test_one_region_grows_big(void **state)
{
    enum { N = 200000 };
    for (uintptr_t i = 0; i < N; i++) {
        pf_objinfo_t o = {.addr = 0x50000000ull + i * 4, .size = i};
        assert_int_equal(pf_objtable_insert(&o), 0);
    }
    for (uintptr_t i = 0; i < N; i++) {
        pf_objinfo_t got;
        assert_int_equal(pf_objtable_lookup(0x50000000ull + i * 4, &got), 1);
        assert_int_equal(got.size, i);
    }
    for (uintptr_t i = 0; i < N; i++)
        assert_int_equal(pf_objtable_remove(0x50000000ull + i * 4, NULL), 1);
    assert_int_equal(pf_objtable_count(), 0);
}

/* Objects packed as tightly as allocators pack them (every 16 bytes, pymalloc's smallest class) over
 * several regions: each 1 KiB block's objects share one group of slots, so neighbouring blocks' groups
 * overflow into each other. Removing half in random order (backward-shift deletion across group
 * boundaries and the array's wrap-around) must leave every other object found and the removed ones not. */
static void test_dense_neighbours_churn(void **state)
{
    enum { N = 300000 };
    const uintptr_t base = 0x7f1234500000ull;
    uintptr_t *order = malloc(N * sizeof *order);
    for (uintptr_t i = 0; i < N; i++) {
        order[i] = i;
        pf_objinfo_t o = {.addr = base + i * 16, .size = 16 + i};
        assert_int_equal(pf_objtable_insert(&o), 0);
    }
    shuffle(order, N, 11);
    for (int i = 0; i < N / 2; i++)
        assert_int_equal(pf_objtable_remove(base + order[i] * 16, NULL), 1);
    for (int i = 0; i < N; i++) {
        pf_objinfo_t got;
        int live = i >= N / 2;
        assert_int_equal(pf_objtable_lookup(base + order[i] * 16, &got), live);
        if (live)
            assert_int_equal(got.size, 16 + order[i]);
    }
    assert_int_equal(pf_objtable_count(), N - N / 2);
    free(order);
}

static int clear_links(pf_objinfo_t *obj, void *arg)
{
    (void)arg;
    for (int k = 0; k < PF_OBJ_LINKS; k++)
        obj->link[k].copy_id = 0;
    return 7;
}

/* Copy links are kept apart from the slots: they must follow their object as slots move (growth,
 * backward-shift deletion), leave with it (remove hands them out; an address inserted again starts with
 * none), and a block cleared or freed must be reused: a million set/clear rounds on one object would
 * exhaust the pool if any leaked. */
static void test_links_follow_objects(void **state)
{
    enum { N = 50000 };
    for (int i = 0; i < N; i++) {
        pf_objinfo_t o = {.addr = 0x20000000ull + (uintptr_t)i * 64, .size = 64};
        assert_int_equal(pf_objtable_insert(&o), 0);
        if (i % 3 == 0) {
            pf_copylink_t l = {.copy_id = (uint64_t)i + 1, .peer_obj = (uintptr_t)i, .len = (uint64_t)i * 2};
            assert_int_equal(pf_objtable_set_link(o.addr, &l), 1);
        }
    }
    for (int i = 1; i < N; i += 3)      /* holes next to linked objects: their slots shift back */
        assert_int_equal(pf_objtable_remove(0x20000000ull + (uintptr_t)i * 64, NULL), 1);
    for (int i = 0; i < N; i += 3) {
        pf_objinfo_t got;
        assert_int_equal(pf_objtable_lookup(0x20000000ull + (uintptr_t)i * 64, &got), 1);
        assert_int_equal(got.link[0].copy_id, (uint64_t)i + 1);
        assert_int_equal(got.link[0].len, (uint64_t)i * 2);
        assert_int_equal(got.link[1].copy_id, 0);
    }
    pf_objinfo_t got, fresh = {.addr = 0x20000000ull, .size = 8};
    assert_int_equal(pf_objtable_remove(0x20000000ull + 3 * 64, &got), 1);
    assert_int_equal(got.link[0].copy_id, 4);
    assert_int_equal(pf_objtable_insert(&fresh), 0);     /* over the object with copy 1 */
    assert_int_equal(pf_objtable_lookup(fresh.addr, &got), 1);
    assert_int_equal(got.link[0].copy_id, 0);
    /* each round takes a block and gives it back by a different road: remove, insert over, clear */
    pf_objinfo_t one = {.addr = 0x20000000ull + 6 * 64, .size = 64};
    for (int r = 0; r < 1000000; r++) {
        pf_copylink_t l = {.copy_id = (uint64_t)r + 1};
        assert_int_equal(pf_objtable_set_link(one.addr, &l), 1);
        if (r % 3 == 0) {
            assert_int_equal(pf_objtable_remove(one.addr, NULL), 1);
            assert_int_equal(pf_objtable_insert(&one), 0);
        } else if (r % 3 == 1) {
            assert_int_equal(pf_objtable_insert(&one), 0);
        } else {
            assert_int_equal(pf_objtable_with_object(one.addr, clear_links, NULL), 7);
        }
    }
    assert_int_equal(pf_objtable_lookup(one.addr, &got), 1);
    assert_int_equal(got.link[0].copy_id | got.link[1].copy_id | got.link[2].copy_id, 0);
}

/* Untracked addresses must mostly miss the filter: that is what keeps free() cheap. */
static void test_filter_selectivity(void **state)
{
    for (int i = 0; i < 1000; i++) {
        pf_objinfo_t o = {.addr = 0x20000000ull + (uintptr_t)i * 64};
        pf_objtable_insert(&o);
    }
    /* random heap-like addresses: ~1000 of 2^20 buckets are set, so expect ~0.1% false positives */
    uint64_t x = 88172645463325252ull;
    int hits = 0;
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        hits += pf_objtable_maybe((void *)(0x7f0000000000ull + ((x & 0xffffffffffull) & ~15ull)));
    }
    assert_true(hits < 500);
    /* the same offsets in another 64 MiB-aligned region (a glibc thread arena) must not alias */
    hits = 0;
    for (int i = 0; i < 1000; i++)
        hits += pf_objtable_maybe((void *)(0x24000000ull + (uintptr_t)i * 64));
    assert_true(hits < 50);
}

typedef struct {
    uintptr_t base;
    int rounds;
} worker_arg_t;

static void *worker(void *p)
{
    worker_arg_t *w = p;
    for (int r = 0; r < w->rounds; r++) {
        for (int i = 0; i < 1000; i++) {
            pf_objinfo_t o = {.addr = w->base + (uintptr_t)i * 32, .size = 32};
            if (pf_objtable_insert(&o) != 0)
                return (void *)1;
        }
        for (int i = 0; i < 1000; i++)
            if (pf_objtable_remove(w->base + (uintptr_t)i * 32, NULL) != 1)
                return (void *)1;
    }
    return NULL;
}

static void test_threads(void **state)
{
    enum { T = 8 };
    pthread_t th[T];
    worker_arg_t args[T];
    for (int i = 0; i < T; i++) {
        args[i].base = 0x40000000ull * (uintptr_t)(i + 1);
        args[i].rounds = 50;
        pthread_create(&th[i], NULL, worker, &args[i]);
    }
    for (int i = 0; i < T; i++) {
        void *rc;
        pthread_join(th[i], &rc);
        assert_null(rc);
    }
    assert_int_equal(pf_objtable_count(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_insert_lookup_remove, setup),
        cmocka_unit_test_setup(test_reinsert_overwrites, setup),
        cmocka_unit_test_setup(test_growth_and_churn, setup),
        cmocka_unit_test_setup(test_filter_selectivity, setup),
        cmocka_unit_test_setup(test_threads, setup),
        cmocka_unit_test_setup(test_dense_neighbours_churn, setup),
        cmocka_unit_test_setup(test_links_follow_objects, setup),
        cmocka_unit_test_setup(test_one_region_grows_big, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
