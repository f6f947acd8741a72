/* Unit tests for the size of the native walk's shared rule table (recorder/pf_cfi.c). A program's start-up
 * steps through thousands of return addresses once and its loop through a few dozen: the table grows with
 * the first, is swapped for a small empty one when the unwinders' reads go quiet (pf_cfi_quiet), and is
 * left at its size once it grows back to it (a large working set). Addresses outside any object give rules
 * too (PF_CFI_UNKNOWN), filed like any other: they fill the table without an FDE to read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "pf_cfi.h"

#define FIRST_SLOTS 256u
#define MAX_SLOTS 8192u
#define NOWHERE 0x100000000000ull      /* no object is mapped there */

static void step_through(unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        assert_int_equal(pf_cfi_rule(NOWHERE + (uint64_t)i * 64u).kind, PF_CFI_UNKNOWN);
}

/* A rule read from this object's own .eh_frame: inside a function, the standard kind. */
static pf_cfi_rule_t own_rule(void)
{
    return pf_cfi_rule((uint64_t)(uintptr_t)&step_through + 1u);
}

static void test_grows_then_shrinks_once_quiet(void **state)
{
    (void)state;
    pf_cfi_rule_t before = own_rule();
    assert_int_equal(before.kind, PF_CFI_STANDARD);
    assert_int_equal(pf_cfi_table_slots(), FIRST_SLOTS);
    step_through(3000);                         /* half of 8192 is more than that: one table of 8192 */
    assert_int_equal(pf_cfi_table_slots(), MAX_SLOTS);
    pf_cfi_quiet();
    assert_int_equal(pf_cfi_table_slots(), FIRST_SLOTS);
    pf_cfi_rule_t after = pf_cfi_rule_in_signal((uint64_t)(uintptr_t)&step_through + 1u);  /* the shared table */
    assert_int_equal(after.kind, before.kind);
    assert_int_equal(after.cfa_off, before.cfa_off);
    assert_int_equal(after.cfa_is_rbp, before.cfa_is_rbp);
    assert_int_equal(after.rbp_off, before.rbp_off);

    /* a working set that needs the large table: it grows back, and stays after the next quiet spell */
    step_through(3000);
    assert_int_equal(pf_cfi_table_slots(), MAX_SLOTS);
    pf_cfi_quiet();
    assert_int_equal(pf_cfi_table_slots(), MAX_SLOTS);
    step_through(100);
    pf_cfi_quiet();
    assert_int_equal(pf_cfi_table_slots(), MAX_SLOTS);

    /* an unload empties it all the same, into the small size */
    assert_int_equal(pf_cfi_forget(), 1);
    assert_int_equal(pf_cfi_table_slots(), FIRST_SLOTS);
    assert_int_equal(pf_cfi_renewed(), 1);
    assert_int_equal(own_rule().kind, PF_CFI_STANDARD);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grows_then_shrinks_once_quiet),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
