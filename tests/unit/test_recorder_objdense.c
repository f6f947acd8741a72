/* Unit tests for the dense map's page release (recorder/pf_objdense.c, pf_dense_release): when the program
 * unmaps a span (pymalloc frees an arena), the pages of entries wholly inside it that hold no entry leave
 * the resident set, and nothing else does: not a page that still holds an entry, not a page that also
 * covers addresses outside the span. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "pf_objdense.h"

#define SPAN_PER_PAGE (64u * 1024u)     /* a 4 KiB page of 2-byte entries covers 2048 granules of 32 bytes */
static const uint64_t base = 0x7f3000000000ull;     /* a leaf boundary (256 MiB aligned) */

static int setup(void **state)
{
    pf_dense_reset();
    return pf_dense_enable(1);
}

static int teardown(void **state)
{
    pf_dense_reset();
    return 0;
}

/* 1 when the page holding addr's entry is resident. */
static int entry_resident(uint64_t addr)
{
    pf_dense_t *e = pf_dense_at(addr, 0);
    assert_non_null(e);
    long page = sysconf(_SC_PAGESIZE);
    unsigned char in = 0;
    assert_int_equal(mincore((void *)((uintptr_t)e & ~(uintptr_t)(page - 1)), (size_t)page, &in), 0);
    return in & 1;
}

/* Writes an entry in every granule of [lo, hi), then clears them all (as the frees of an arena's blocks do). */
static void fill_and_free(uint64_t lo, uint64_t hi)
{
    for (uint64_t a = lo; a < hi; a += 32)
        *pf_dense_at(a, 1) = pf_dense_entry(a, 48, 2, PF_ALLOC_EXACT);
    for (uint64_t a = lo; a < hi; a += 32)
        *pf_dense_at(a, 0) = 0;
}

static void test_freed_arena_pages_leave(void **state)
{
    const uint64_t arena = base + 4 * SPAN_PER_PAGE, bytes = 8 * SPAN_PER_PAGE;  /* 512 KiB */
    fill_and_free(arena, arena + bytes);
    for (uint64_t a = arena; a < arena + bytes; a += SPAN_PER_PAGE)
        assert_true(entry_resident(a));
    assert_int_equal(pf_dense_release(arena, bytes), 8);
    for (uint64_t a = arena; a < arena + bytes; a += SPAN_PER_PAGE)
        assert_false(entry_resident(a));
    /* a new arena at the same addresses gets its entries back, starting from zero */
    assert_int_equal(*pf_dense_at(arena + 16, 0), 0);
    *pf_dense_at(arena + 16, 1) = pf_dense_entry(arena + 16, 32, 2, PF_ALLOC_EXACT);
    assert_int_equal(pf_dense_size(*pf_dense_at(arena + 16, 0)), 32);
}

static void test_page_with_an_entry_stays(void **state)
{
    const uint64_t arena = base + 64 * SPAN_PER_PAGE, bytes = 4 * SPAN_PER_PAGE;
    fill_and_free(arena, arena + bytes);
    const uint64_t kept = arena + SPAN_PER_PAGE + 160;      /* a block whose free pyflow did not see */
    *pf_dense_at(kept, 0) = pf_dense_entry(kept, 100, 1, PF_ALLOC_EXACT);
    assert_int_equal(pf_dense_release(arena, bytes), 3);
    assert_true(entry_resident(kept));
    assert_int_equal(pf_dense_size(*pf_dense_at(kept, 0)), 100);
    assert_false(entry_resident(arena));
}

/* An arena not aligned to the 64 KiB a page of entries covers: the pages at its ends also hold the entries of
 * its neighbours, which another thread may be writing: they stay, even when zero. */
static void test_edge_pages_stay(void **state)
{
    const uint64_t arena = base + 128 * SPAN_PER_PAGE + 4096, bytes = 4 * SPAN_PER_PAGE;
    fill_and_free(arena, arena + bytes);
    assert_int_equal(pf_dense_release(arena, bytes), 3);
    assert_true(entry_resident(arena));                      /* shares its page with arena - 4096 */
    assert_true(entry_resident(arena + bytes - 16));         /* and its last with what follows */
    assert_false(entry_resident(arena + SPAN_PER_PAGE));
}

/* Spans without a leaf, or too small to hold a whole page of entries, give nothing back and touch nothing. */
static void test_nothing_to_release(void **state)
{
    assert_int_equal(pf_dense_release(base + (1ull << 40), 1u << 20), 0);   /* no leaf mapped there */
    assert_int_equal(pf_dense_leaves(), 0);
    fill_and_free(base, base + 4096);
    assert_int_equal(pf_dense_release(base, 4096), 0);
    assert_int_equal(pf_dense_release(base + (1ull << 28) - SPAN_PER_PAGE, 2 * SPAN_PER_PAGE), 1);
    assert_int_equal(pf_dense_leaves(), 1);
    assert_int_equal(pf_dense_release(1ull << 48, 1u << 20), 0);          /* outside the 48-bit space */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_freed_arena_pages_leave, setup, teardown),
        cmocka_unit_test_setup_teardown(test_page_with_an_entry_stays, setup, teardown),
        cmocka_unit_test_setup_teardown(test_edge_pages_stay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nothing_to_release, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
