/* Unit tests for the reader's fast paths: interned stacks found by id in an array (dense ids, as the
 * recorder numbers them) and in the map (sparse ids) must give the same model, with the counts worked out
 * independently here; and the timeline bucket the sweep keeps between events (pf_timeline_bucket_span)
 * must be pf_timeline_bucket's, for every bucket and clock length. */
#include "test_report_writer.h"
#include "pf_timeline_int.h"

enum { N_ALLOCS = 600 };

/* What the profile below must give, counted as it is built. */
typedef struct expect {
    uint64_t user, lib, missing, missing_refs, live_user;
} expect_t;

/* One profile: thread 1 allocates through three interned stacks (a user's line under a library frame, a
 * library frame alone, the user's line alone), each with two sets of flags, and refers to ids never
 * defined (one between the defined ids, one past them); a third of its chunk is handed to thread 3 by a
 * WRITER record; thread 2 frees half the blocks, a few nanoseconds after each was made, from its own
 * chunks. ids[0..4]: the ids of the three stacks, the undefined one between, the undefined one past. */
static const char *build(const char *name, const uint32_t ids[5], expect_t *want)
{
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/s/app.py", "main", 20);
    b_code(&b, 2, "/usr/lib/python3.11/json/decoder.py", "decode", 30);
    uint32_t lib_then_user[2] = {2, 1}, lib_only = 2, user_only = 1;
    b_stack(&b, ids[0], 2, lib_then_user);
    b_stack(&b, ids[2], 1, &user_only);
    memset(want, 0, sizeof *want);
    uint64_t freed[N_ALLOCS];
    int n_freed = 0;
    for (int i = 0; i < N_ALLOCS; i++) {
        if (i == N_ALLOCS / 3) {
            b_writer(&b, 3);
            b_stack(&b, ids[1], 1, &lib_only);   /* defined after its first uses, by another writer */
        }
        int which = i % 5;  /* 0, 1, 2: the stacks; 3: undefined between; 4: undefined past */
        uint64_t size = 16 + (uint64_t)(i % 7) * 8, addr = 0x10000 + (uint64_t)i * 0x100;
        uint8_t flags = i % 2 ? PF_ALLOC_EXACT : PF_ALLOC_EXACT | PF_ALLOC_TRUNCATED;
        b_alloc_ref(&b, 100 + (uint64_t)i * 10, addr, size, flags, ids[which]);
        if (which == 0 || which == 2)
            want->user += size;
        else if (which == 1)
            want->lib += size;
        else
            want->missing += size, want->missing_refs++;
        if (i % 2 == 0)
            freed[n_freed++] = addr;
        else if (which == 0 || which == 2)
            want->live_user += size;
    }
    b_chunk(&b, 2);
    for (int k = 0; k < n_freed; k++)
        b_free(&b, 100 + (uint64_t)(freed[k] - 0x10000) / 0x100 * 10 + 5, freed[k]);
    return b_save(&b, name, 0);
}

static void check(const pf_model_t *m, const expect_t *want)
{
    const pf_line_t *user = find_line(m, "/s/app.py", 20);
    assert_int_equal((int)user->s.alloc_bytes, (int)want->user);
    assert_int_equal((int)user->s.leaked_bytes, (int)want->live_user);
    assert_int_equal((int)find_line(m, "/usr/lib/python3.11/json/decoder.py", 30)->s.alloc_bytes, (int)want->lib);
    assert_int_equal((int)find_line(m, "[stack missing]", 0)->s.alloc_bytes, (int)want->missing);
    assert_int_equal((int)m->unresolved_stacks, (int)want->missing_refs);
    assert_int_equal((int)m->total.alloc_bytes, (int)(want->user + want->lib + want->missing));
}

static void test_dense_and_sparse_stack_ids_agree(void **state)
{
    (void)state;
    const uint32_t dense[5] = {1, 2, 4, 3, 50}, sparse[5] = {1, 7000000, 9000000, 3, 9000050};
    expect_t want_dense, want_sparse;
    pf_model_t *a = load_ok(build("dense.pflow", dense, &want_dense));
    check(a, &want_dense);
    pf_model_t *b = load_ok(build("sparse.pflow", sparse, &want_sparse));
    check(b, &want_sparse);
    assert_memory_equal(&want_dense, &want_sparse, sizeof want_dense);
    /* the whole sweep alike: rows, their timelines, the call tree */
    assert_int_equal(a->n_lines, b->n_lines);
    for (size_t i = 0; i < a->n_lines; i++) {
        assert_string_equal(pf_model_str(a, a->lines[i].file), pf_model_str(b, b->lines[i].file));
        assert_memory_equal(a->lines[i].s.timeline, b->lines[i].s.timeline, sizeof a->lines[i].s.timeline);
        assert_memory_equal(a->lines[i].s.timeline_low, b->lines[i].s.timeline_low,
                            sizeof a->lines[i].s.timeline_low);
        assert_true(a->lines[i].s.area_ns == b->lines[i].s.area_ns);
    }
    assert_int_equal(a->n_full, b->n_full);
    pf_model_free(a);
    pf_model_free(b);
}

/* Every bucket's span holds exactly the times pf_timeline_bucket puts in it: its ends, the times just
 * outside them, and times drawn inside. */
static void test_bucket_span_inverts_bucket(void **state)
{
    (void)state;
    const uint64_t ends[] = {0, 1, 7, 99, 100, 101, 1000, 123457, 8640000000000ull, UINT64_MAX / 3,
                             UINT64_MAX - 1, UINT64_MAX};
    srand(29);
    for (size_t e = 0; e < sizeof ends / sizeof *ends; e++) {
        uint64_t t_end = ends[e], prev_to = 0;
        for (int b = 0; b < PF_TIMELINE_POINTS; b++) {
            uint64_t from, to;
            pf_timeline_bucket_span(b, t_end, &from, &to);
            if (t_end == 0) {   /* one bucket holds every time */
                assert_true(from == 0 && to == UINT64_MAX);
                break;
            }
            assert_true(from == prev_to);   /* the spans tile the clock */
            prev_to = to;
            if (from == to)
                continue;       /* a clock shorter than the buckets: no time falls in this one */
            assert_int_equal(pf_timeline_bucket(from, t_end), b);
            assert_int_equal(pf_timeline_bucket(to - 1, t_end), b);
            if (from > 0)
                assert_true(pf_timeline_bucket(from - 1, t_end) < b);
            if (to != UINT64_MAX)
                assert_true(pf_timeline_bucket(to, t_end) > b);
            for (int k = 0; k < 20; k++) {
                uint64_t r = ((uint64_t)rand() << 42) ^ ((uint64_t)rand() << 21) ^ (uint64_t)rand();
                assert_int_equal(pf_timeline_bucket(from + r % (to - from), t_end), b);
            }
        }
        if (t_end)
            assert_true(prev_to == UINT64_MAX);     /* the last bucket takes every later time */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense_and_sparse_stack_ids_agree),
        cmocka_unit_test(test_bucket_span_inverts_bucket),
    };
    return cmocka_run_group_tests(tests, writer_setup, writer_teardown);
}
