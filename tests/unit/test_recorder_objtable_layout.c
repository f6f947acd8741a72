/* Unit tests for the object table's layout (recorder/pf_objtable.c, pf_objslot.h, pf_objdense.c): a small
 * object costs one 64-bit slot word, anything that does not fit one gets a wide record and loses nothing,
 * serials come with the first lookup, and under --exact the small objects of the Python domains live in the
 * dense map, not in the hashed slots, with every fact a free needs. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "pf_objdense.h"
#include "pf_objslot.h"
#include "pf_objtable.h"

static int setup(void **state)
{
    pf_objtable_reset();
    return pf_objtable_init();
}

static int setup_dense(void **state)
{
    pf_objtable_reset();
    int rc = pf_objtable_init();
    return rc ? rc : pf_objtable_dense(1);
}

static void test_slot_word_fields(void **state)
{
    pf_objslot_t w = pf_slot_compact(0x7ffff0001230, 4095, 5, 15);
    assert_false(pf_slot_is_wide(w));
    assert_int_equal(pf_slot_key_addr(pf_slot_key(w)), 0x7ffff0001230);
    assert_int_equal(pf_slot_size(w), 4095);
    assert_int_equal(pf_slot_domain(w), 5);
    assert_int_equal(pf_slot_flags(w), 15);
    w = pf_slot_wide(0x1008, (1u << PF_SLOT_INDEX_BITS) - 1);
    assert_true(pf_slot_is_wide(w));
    assert_int_equal(pf_slot_index(w), (1u << PF_SLOT_INDEX_BITS) - 1);
    assert_int_equal(pf_slot_key(w), 0x100);
    /* what does not fit a word */
    assert_true(pf_slot_fits(0x1000, 4095, 7, 15, 0));
    assert_false(pf_slot_fits(0x1000, 4096, 0, 0, 0));
    assert_false(pf_slot_fits(0x1008, 16, 0, 0, 0));
    assert_false(pf_slot_fits(0x1000, 16, 8, 0, 0));
    assert_false(pf_slot_fits(0x1000, 16, 0, 16, 0));
    assert_false(pf_slot_fits(0x1000, 16, 0, 0, 1));
    assert_false(pf_slot_fits(1ull << 48, 16, 0, 0, 0));
    const uint32_t all = PF_ALLOC_EXACT | PF_ALLOC_NO_PYSTATE | PF_ALLOC_TRUNCATED;
    pf_dense_t e = pf_dense_entry(0x1010, 512, 2, all);
    assert_int_equal(pf_dense_size(e), 512);
    assert_int_equal(pf_dense_domain(e), 2);
    assert_int_equal(pf_dense_flags(e), all);
    /* an entry is its granule's: it names the half its object starts in */
    assert_true(pf_objdense_holds(e, 0x1010));
    assert_false(pf_objdense_holds(e, 0x1000));
    assert_true(pf_objdense_holds(pf_dense_entry(0x1000, 17, 0, PF_ALLOC_EXACT), 0x1000));
    assert_false(pf_objdense_holds(pf_dense_entry(0x1000, 17, 0, PF_ALLOC_EXACT), 0x1010));
    assert_int_equal(pf_dense_addr(0x1000, e), 0x1010);
    assert_int_equal(pf_dense_flags(pf_dense_entry(0x1000, 17, 0, PF_ALLOC_EXACT)), PF_ALLOC_EXACT);
    assert_true(pf_dense_fits(0x1000, 17, 2, all));
    assert_false(pf_dense_fits(0x1000, 16, 2, PF_ALLOC_EXACT));   /* two could start in one granule */
    assert_false(pf_dense_fits(0x1000, 0, 2, PF_ALLOC_EXACT));
    assert_false(pf_dense_fits(0x1000, 513, 2, PF_ALLOC_EXACT));
    assert_false(pf_dense_fits(0x1000, 32, 3, PF_ALLOC_EXACT));
    assert_false(pf_dense_fits(0x1000, 32, 2, PF_ALLOC_SAMPLED));
    assert_false(pf_dense_fits(0x1000, 32, 2, 0));
    assert_false(pf_dense_fits(0x1008, 32, 2, PF_ALLOC_EXACT));
}

/* 100000 small malloc'd objects: at one word a slot and a load of 3/8 to 3/4, at most 8 * 8/3 bytes an
 * object (and the 64 stripes' first arrays); at 24 bytes a slot, or a wide record each, far more. */
static void test_small_objects_take_a_word(void **state)
{
    enum { N = 100000 };
    for (int i = 0; i < N; i++) {
        pf_objinfo_t o = {.addr = 0x10000000ull + (uintptr_t)i * 48, .size = (uint64_t)(i % 4096),
                          .domain = 3, .flags = (uint32_t)(i % 16)};
        assert_int_equal(pf_objtable_insert(&o), 0);
    }
    assert_int_equal(pf_objtable_count(), N);
    uint64_t bytes = pf_objtable_bytes();
    assert_true(bytes <= (uint64_t)N * 8 * 8 / 3 + 64 * 1024 * 8);
    for (int i = 0; i < N; i++) {
        pf_objinfo_t got;
        assert_int_equal(pf_objtable_remove(0x10000000ull + (uintptr_t)i * 48, &got), 1);
        assert_int_equal(got.addr, 0x10000000ull + (uintptr_t)i * 48);
        assert_int_equal(got.size, i % 4096);
        assert_int_equal(got.domain, 3);
        assert_int_equal(got.flags, i % 16);
        assert_int_equal(got.link[0].copy_id | got.link[1].copy_id | got.link[2].copy_id, 0);
    }
    assert_int_equal(pf_objtable_count(), 0);
}

/* Whatever a word cannot hold comes back whole from a wide record. */
static void test_wide_objects_keep_everything(void **state)
{
    pf_objinfo_t objs[] = {
        {.addr = 0x7f0000000000, .size = 1ull << 40, .domain = 4, .flags = 2},
        {.addr = 0x1008, .size = 24, .domain = 3, .flags = 1},
        {.addr = 0x1000, .size = 24, .domain = 3, .flags = 1},      /* compact, with 0x1008's key */
        {.addr = 0x1018, .size = 8, .domain = 5, .flags = 0x30},
        {.addr = 0x2000, .size = 64, .domain = 2, .flags = 2, .site = 65535},
        {.addr = (1ull << 48) + 0x2000, .size = 64, .domain = 3, .flags = 2},   /* its key is 0x2000's */
    };
    enum { N = sizeof objs / sizeof *objs };
    for (int i = 0; i < N; i++)
        assert_int_equal(pf_objtable_insert(&objs[i]), 0);
    assert_int_equal(pf_objtable_count(), N);
    for (int i = N - 1; i >= 0; i--) {
        pf_objinfo_t got;
        assert_int_equal(pf_objtable_remove(objs[i].addr, &got), 1);
        assert_int_equal(got.addr, objs[i].addr);
        assert_int_equal(got.size, objs[i].size);
        assert_int_equal(got.domain, objs[i].domain);
        assert_int_equal(got.flags, objs[i].flags);
        assert_int_equal(got.site, objs[i].site);
        assert_int_equal(pf_objtable_lookup(objs[i].addr, NULL), 0);
    }
    assert_int_equal(pf_objtable_count(), 0);
}

/* A serial is what a copy link tells a reused address by: distinct for two objects, the same at every
 * lookup of one, and another for the object next at its address. */
static void test_serials_on_lookup(void **state)
{
    pf_objinfo_t a = {.addr = 0x5000, .size = 32, .domain = 3}, b = {.addr = 0x5020, .size = 32, .domain = 3};
    pf_objtable_insert(&a);
    pf_objtable_insert(&b);
    pf_objinfo_t ga, gb, again;
    assert_int_equal(pf_objtable_lookup(a.addr, &ga), 1);
    assert_int_equal(pf_objtable_lookup(b.addr, &gb), 1);
    assert_int_equal(pf_objtable_lookup(a.addr, &again), 1);
    assert_int_not_equal(ga.serial, 0);
    assert_int_not_equal(ga.serial, gb.serial);
    assert_int_equal(again.serial, ga.serial);
    assert_int_equal(again.size, 32);
    pf_objtable_remove(a.addr, NULL);
    pf_objtable_insert(&a);
    assert_int_equal(pf_objtable_lookup(a.addr, &again), 1);
    assert_int_not_equal(again.serial, ga.serial);
}

static void count_one(const pf_objinfo_t *o, void *arg)
{
    (void)o;
    (*(uint64_t *)arg)++;
}

/* Under --exact, 200000 small Python objects packed in 16 MiB (as in pymalloc's arenas), 80 bytes apart (so
 * in both halves of the map's 32-byte granules): none of them in the hashed slots, every fact back at their
 * free. */
#define DENSE_SIZE(i) (17u + (uint64_t)(i) % 496u)
#define DENSE_FLAGS(i) (PF_ALLOC_EXACT | ((uint32_t)(i) % 4u) << 2)
static void test_dense_small_python_objects(void **state)
{
    enum { N = 200000 };
    for (int i = 0; i < N; i++) {
        pf_objinfo_t o = {.addr = 0x7f1000000000ull + (uintptr_t)i * 80, .size = DENSE_SIZE(i),
                          .domain = (uint32_t)(i % 3), .flags = DENSE_FLAGS(i)};
        assert_int_equal(pf_objtable_insert(&o), 0);
    }
    assert_int_equal(pf_objtable_count(), N);
    assert_true(pf_objtable_bytes() < 64 * 1024);     /* no stripe's slots grew */
    assert_int_equal(pf_dense_leaves(), 1);
    uint64_t n = 0;
    pf_objtable_each(0, count_one, &n);
    assert_int_equal(n, N);
    n = 0;
    pf_objtable_each(4096, count_one, &n);
    assert_int_equal(n, 0);
    for (int i = 0; i < N; i++) {
        uintptr_t addr = 0x7f1000000000ull + (uintptr_t)i * 80;
        pf_objinfo_t got;
        assert_int_equal(pf_objtable_maybe((void *)addr), 1);
        assert_int_equal(pf_objtable_remove(addr, &got), 1);
        assert_int_equal(got.addr, addr);
        assert_int_equal(got.size, DENSE_SIZE(i));
        assert_int_equal(got.domain, i % 3);
        assert_int_equal(got.flags, DENSE_FLAGS(i));
        assert_int_equal(pf_objtable_remove(addr, &got), 0);
    }
    assert_int_equal(pf_objtable_count(), 0);
    assert_int_equal(pf_objtable_maybe((void *)0x7f1000000000ull), 0);
}

/* Objects the dense map does not take (native, big, unaligned) go to the hashed slots; an object inserted
 * over another at its address (freed unseen) replaces it whichever part either is in; a dense object
 * looked up (a copy's end) moves to a wide record with a serial and takes links. */
static void test_dense_and_hashed_meet(void **state)
{
    pf_objinfo_t native = {.addr = 0x7f2000000000ull, .size = 32, .domain = 3, .flags = 2};
    pf_objinfo_t python = {.addr = 0x7f2000000000ull, .size = 40, .domain = 2, .flags = 2};
    pf_objinfo_t got;
    assert_int_equal(pf_objtable_insert(&native), 0);
    assert_int_equal(pf_objtable_insert(&python), 0);
    assert_int_equal(pf_objtable_count(), 1);
    assert_int_equal(pf_objtable_remove(python.addr, &got), 1);
    assert_int_equal(got.domain, 2);
    assert_int_equal(got.size, 40);
    assert_int_equal(pf_objtable_maybe((void *)python.addr), 0);
    assert_int_equal(pf_objtable_insert(&python), 0);
    assert_int_equal(pf_objtable_insert(&native), 0);
    assert_int_equal(pf_objtable_count(), 1);
    assert_int_equal(pf_objtable_remove(native.addr, &got), 1);
    assert_int_equal(got.domain, 3);
    assert_int_equal(pf_objtable_count(), 0);
    assert_int_equal(pf_objtable_maybe((void *)native.addr), 0);

    pf_objinfo_t src = {.addr = 0x7f2000001000ull, .size = 100, .domain = 2, .flags = 2};
    pf_objinfo_t dst = {.addr = 0x7f2000001100ull, .size = 100, .domain = 1, .flags = 2};
    pf_objtable_insert(&src);
    pf_objtable_insert(&dst);
    pf_objinfo_t s1, s2;
    assert_int_equal(pf_objtable_find_start(src.addr + 40, 48, &s1), 1);
    assert_int_equal(s1.addr, src.addr);
    assert_int_not_equal(s1.serial, 0);
    assert_int_equal(pf_objtable_lookup(src.addr, &s2), 1);
    assert_int_equal(s2.serial, s1.serial);
    assert_int_equal(s2.size, 100);
    assert_int_equal(s2.domain, 2);
    pf_copylink_t l = {.copy_id = 9, .peer_obj = src.addr, .peer_serial = s1.serial, .len = 60};
    assert_int_equal(pf_objtable_set_link(dst.addr, &l), 1);
    assert_int_equal(pf_objtable_count(), 2);
    assert_int_equal(pf_objtable_remove(dst.addr, &got), 1);
    assert_int_equal(got.link[0].copy_id, 9);
    assert_int_equal(got.link[0].peer_serial, s1.serial);
    assert_int_equal(got.size, 100);
    assert_int_equal(got.domain, 1);
    assert_int_equal(pf_objtable_remove(src.addr, &got), 1);
    assert_int_equal(got.serial, s1.serial);
    assert_int_equal(pf_objtable_count(), 0);
}

/* A granule of the dense map is 32 bytes: a block of 16 bytes or fewer (hashed) and a larger one in its
 * other half (dense) are both found, each with its own facts; a dense object inserted in the other half of
 * a granule whose entry's object overlaps it (freed unseen) takes the entry, and the old address is no
 * longer tracked. */
static void test_dense_granule_halves(void **state)
{
    const uintptr_t g = 0x7f4000000000ull;
    pf_objinfo_t small = {.addr = g, .size = 16, .domain = 2, .flags = PF_ALLOC_EXACT};
    pf_objinfo_t upper = {.addr = g + 16, .size = 40, .domain = 1, .flags = PF_ALLOC_EXACT | PF_ALLOC_TRUNCATED};
    pf_objinfo_t got;
    assert_int_equal(pf_objtable_insert(&small), 0);
    assert_int_equal(pf_objtable_insert(&upper), 0);
    assert_int_equal(pf_objtable_count(), 2);
    assert_int_equal(pf_objtable_maybe((void *)g), 1);
    assert_int_equal(pf_objtable_maybe((void *)(g + 16)), 1);
    assert_int_equal(pf_objtable_lookup(g, &got), 1);
    assert_int_equal(got.size, 16);
    assert_int_equal(pf_objtable_remove(g + 16, &got), 1);
    assert_int_equal(got.size, 40);
    assert_int_equal(got.domain, 1);
    assert_int_equal(got.flags, PF_ALLOC_EXACT | PF_ALLOC_TRUNCATED);
    assert_int_equal(pf_objtable_remove(g + 16, &got), 0);
    assert_int_equal(pf_objtable_maybe((void *)g), 1);
    assert_int_equal(pf_objtable_remove(g, &got), 1);
    assert_int_equal(got.size, 16);
    assert_int_equal(got.domain, 2);
    assert_int_equal(pf_objtable_count(), 0);
    assert_int_equal(pf_objtable_maybe((void *)g), 0);

    for (int upper_first = 0; upper_first < 2; upper_first++) {
        pf_objinfo_t lower = {.addr = g + 64, .size = 40, .domain = 2, .flags = PF_ALLOC_EXACT};
        pf_objinfo_t high = {.addr = g + 80, .size = 24, .domain = 0, .flags = PF_ALLOC_EXACT};
        pf_objinfo_t *older = upper_first ? &high : &lower, *newer = upper_first ? &lower : &high;
        assert_int_equal(pf_objtable_insert(older), 0);
        assert_int_equal(pf_objtable_insert(newer), 0);    /* overlaps the older one: its free was not seen */
        assert_int_equal(pf_objtable_count(), 1);
        assert_int_equal(pf_objtable_maybe((void *)older->addr), 0);
        assert_int_equal(pf_objtable_remove(older->addr, &got), 0);
        assert_int_equal(pf_objtable_remove(newer->addr, &got), 1);
        assert_int_equal(got.size, newer->size);
        assert_int_equal(got.domain, newer->domain);
        assert_int_equal(pf_objtable_count(), 0);
    }
}

/* Threads inserting and freeing their own small Python objects in shared regions (their stripes'
 * locks keep the dense entries right). */
enum { THREADS = 4, PER_THREAD = 50000 };

static void *dense_worker(void *arg)
{
    uintptr_t id = (uintptr_t)arg;
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < PER_THREAD; i++) {
            pf_objinfo_t o = {.addr = 0x7f3000000000ull + ((uintptr_t)i * THREADS + id) * 48,
                              .size = 17u + (uint64_t)(i % 32), .domain = 2, .flags = 2};
            if (pf_objtable_insert(&o) != 0)
                return (void *)1;
        }
        for (int i = 0; i < PER_THREAD; i++) {
            pf_objinfo_t got;
            if (pf_objtable_remove(0x7f3000000000ull + ((uintptr_t)i * THREADS + id) * 48, &got) != 1 ||
                got.size != 17u + (uint64_t)(i % 32))
                return (void *)1;
        }
    }
    return NULL;
}

static void test_dense_threads(void **state)
{
    pthread_t th[THREADS];
    for (uintptr_t k = 0; k < THREADS; k++)
        pthread_create(&th[k], NULL, dense_worker, (void *)k);
    for (int k = 0; k < THREADS; k++) {
        void *rc;
        pthread_join(th[k], &rc);
        assert_null(rc);
    }
    assert_int_equal(pf_objtable_count(), 0);
}

/* A page of the filter covers 256 KiB of contiguous heap: the blocks of 1 MiB of it (16 bytes apart, as
 * malloc hands them out) fall in at most two pages of buckets. With 16-byte granules they fell in 17, and
 * under --exact every block outside the dense map is counted, so most of the filter became resident. */
static void test_filter_pages_cover_the_heap_densely(void **state)
{
    (void)state;
    const uintptr_t base = 0x55d4a3f00000ull;
    uint8_t seen[(1u << PF_OBJTABLE_FILTER_BITS) / 4096] = {0};
    unsigned pages = 0;
    for (uintptr_t a = base; a < base + (1u << 20); a += 16) {
        uint32_t page = pf_objtable_bucket(a) / 4096;
        pages += !seen[page];
        seen[page] = 1;
    }
    assert_true(pages <= 2);
}

/* The filter counts the hashed objects only: a dense object is found by pf_objtable_maybe through its own
 * entry, with its filter bucket untouched; moving it to a hashed slot (a lookup: a copy's end) counts it there
 * first; a dense object inserted over a hashed one at its address uncounts that one; a hashed one over a
 * dense one counts itself. Each removal leaves the address unknown again. */
static void test_dense_objects_outside_the_filter(void **state)
{
    const uintptr_t a = 0x7f3000000000ull;
    const uint8_t *bucket = &pf_objtable_filter[pf_objtable_bucket(a)];
    pf_objinfo_t dense = {.addr = a, .size = 64, .domain = 2, .flags = 2};
    pf_objinfo_t native = {.addr = a, .size = 64, .domain = 3, .flags = 2};
    pf_objinfo_t got;
    assert_int_equal(pf_objtable_insert(&dense), 0);
    assert_int_equal(*bucket, 0);
    assert_int_equal(pf_objtable_maybe((void *)a), 1);
    assert_int_equal(pf_objtable_maybe((void *)(a + 16)), 0);
    assert_int_equal(pf_objtable_remove(a, &got), 1);
    assert_int_equal(*bucket, 0);
    assert_int_equal(pf_objtable_maybe((void *)a), 0);

    assert_int_equal(pf_objtable_insert(&dense), 0);
    assert_int_equal(pf_objtable_lookup(a, &got), 1);   /* now wide, in a hashed slot */
    assert_int_equal(*bucket, 1);
    assert_int_equal(pf_objtable_maybe((void *)a), 1);
    assert_int_equal(pf_objtable_remove(a, &got), 1);
    assert_int_equal(*bucket, 0);
    assert_int_equal(pf_objtable_maybe((void *)a), 0);

    assert_int_equal(pf_objtable_insert(&native), 0);
    assert_int_equal(*bucket, 1);
    assert_int_equal(pf_objtable_insert(&dense), 0);    /* the native block's free was not seen */
    assert_int_equal(*bucket, 0);
    assert_int_equal(pf_objtable_insert(&native), 0);   /* nor the Python one's */
    assert_int_equal(*bucket, 1);
    assert_int_equal(pf_objtable_count(), 1);
    assert_int_equal(pf_objtable_remove(a, &got), 1);
    assert_int_equal(got.domain, 3);
    assert_int_equal(*bucket, 0);
    assert_int_equal(pf_objtable_maybe((void *)a), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slot_word_fields),
        cmocka_unit_test_setup(test_small_objects_take_a_word, setup),
        cmocka_unit_test_setup(test_wide_objects_keep_everything, setup),
        cmocka_unit_test_setup(test_serials_on_lookup, setup),
        cmocka_unit_test_setup(test_dense_small_python_objects, setup_dense),
        cmocka_unit_test_setup(test_dense_and_hashed_meet, setup_dense),
        cmocka_unit_test_setup(test_dense_granule_halves, setup_dense),
        cmocka_unit_test_setup(test_dense_threads, setup_dense),
        cmocka_unit_test_setup(test_dense_objects_outside_the_filter, setup_dense),
        cmocka_unit_test(test_filter_pages_cover_the_heap_densely),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
