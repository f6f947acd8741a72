/* Unit tests for native stacks interned apart (PF_REC_NATIVE_STACK, STACK records with
 * PF_STACK_NATIVE_BY_ID): the same allocations under the same stacks must give the same model whether a
 * stack's IPs are inline in its STACK record or in a NATIVE_STACK it names, with dense ids (the recorder's
 * numbering, read through arrays) and sparse ones (read through maps); a STACK naming a NATIVE_STACK the
 * file lacks, or one of another length, is a missing stack; and a NATIVE_STACK whose count exceeds its
 * length is refused with one line. */
#include "test_report_writer.h"

/* A library the native sites resolve in (no such file: its frames are named "0x... (libfake.so)"). */
#define LIB_START 0x7f0000000000ull
#define LIB_PATH "/nonexistent/libfake.so"

enum { N_ALLOCS = 300 };

static void b_module(builder_t *b)
{
    unsigned char tmp[256];
    pf_rec_module_t mo = {LIB_START, LIB_START + 0x100000, LIB_START, (uint32_t)strlen(LIB_PATH), 0};
    memcpy(tmp, &mo, sizeof mo);
    memcpy(tmp + sizeof mo, LIB_PATH, strlen(LIB_PATH));
    b_rec(b, PF_REC_MODULE, 0, tmp, sizeof mo + strlen(LIB_PATH));
}

/* A STACK of n_py Python frames and n IPs: inline when native_id is 0, else naming native_id. */
static void b_stack_native(builder_t *b, uint32_t id, int n_py, const uint32_t *code_ids, const uint64_t *ips,
                           int n, uint32_t native_id)
{
    unsigned char tmp[2048];
    pf_rec_stack_t st = {id, (uint16_t)n_py, (uint16_t)n};
    size_t o = 0;
    memcpy(tmp, &st, sizeof st);
    o += sizeof st;
    for (int i = 0; i < n_py; i++) {
        pf_rec_pyframe_t f = {code_ids[i], 0};
        memcpy(tmp + o, &f, sizeof f);
        o += sizeof f;
    }
    if (native_id) {
        pf_rec_native_ref_t ref = {native_id, 0};
        memcpy(tmp + o, &ref, sizeof ref);
        o += sizeof ref;
    } else {
        memcpy(tmp + o, ips, (size_t)n * 8);
        o += (size_t)n * 8;
    }
    b_rec(b, PF_REC_STACK, native_id ? PF_STACK_NATIVE_BY_ID : 0, tmp, o);
}

/* A NATIVE_STACK of n IPs that says it has `claimed`. */
static void b_native(builder_t *b, uint32_t native_id, const uint64_t *ips, int n, uint32_t claimed)
{
    unsigned char tmp[1024];
    pf_rec_native_stack_t ns = {native_id, (uint16_t)claimed, 0};
    memcpy(tmp, &ns, sizeof ns);
    memcpy(tmp + sizeof ns, ips, (size_t)n * 8);
    b_rec(b, PF_REC_NATIVE_STACK, 0, tmp, sizeof ns + (size_t)n * 8);
}

static const uint64_t ips_a[3] = {LIB_START + 0x1100, LIB_START + 0x2200, LIB_START + 0x3300};
static const uint64_t ips_b[2] = {LIB_START + 0x4400, LIB_START + 0x3300};

/* Three stacks: the user's line over native part a, a library line over a (the same native part, named
 * twice), the user's line over b; stack ids sids[0..2], native ids nids[0..1] (0: every stack inline).
 * Thread 1 allocates through them in turn; b's NATIVE_STACK is written by thread 3 (a WRITER record)
 * after its first uses. broken: 1 leaves a's NATIVE_STACK out, 2 gives it another length. */
static const char *build(const char *name, const uint32_t sids[3], const uint32_t nids[2], int broken)
{
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_module(&b);
    b_code(&b, 1, "/s/app.py", "main", 20);
    b_code(&b, 2, "/usr/lib/python3.11/json/decoder.py", "decode", 30);
    uint32_t user = 1, lib = 2;
    if (nids[0] && broken != 1)
        b_native(&b, nids[0], ips_a, 3, broken == 2 ? 2 : 3);
    b_stack_native(&b, sids[0], 1, &user, ips_a, 3, nids[0]);
    b_stack_native(&b, sids[1], 1, &lib, ips_a, 3, nids[0]);
    b_stack_native(&b, sids[2], 1, &user, ips_b, 2, nids[1]);
    for (int i = 0; i < N_ALLOCS; i++) {
        if (i == N_ALLOCS / 2) {
            b_writer(&b, 3);
            if (nids[1])
                b_native(&b, nids[1], ips_b, 2, 2);
        }
        b_alloc_short(&b, 100 + (uint64_t)i * 10, 0x10000 + (uint64_t)i * 0x100, 16 + (uint32_t)(i % 3) * 8,
                      PF_DOMAIN_MALLOC, 0, sids[i % 3]);
    }
    return b_save(&b, name, 0);
}

/* Bytes allocated under native nodes of the unfolded tree named like `name`, and their count. */
static double native_bytes(const pf_model_t *m, const char *name, int *nodes)
{
    double sum = 0;
    *nodes = 0;
    for (size_t i = 0; i < m->n_full; i++) {
        if (m->full[i].kind != PF_NODE_NATIVE || !strstr(pf_model_str(m, m->full[i].function), name))
            continue;
        sum += m->full[i].self_alloc;
        (*nodes)++;
    }
    return sum;
}

/* What the allocations above add up to: 100 of each stack, sizes 16, 24, 32 in turn. */
static void check_whole(const pf_model_t *m)
{
    const double each[3] = {16, 24, 32};
    double want[3] = {0, 0, 0};
    for (int i = 0; i < N_ALLOCS; i++)
        want[i % 3] += each[i % 3];
    assert_int_equal((int)m->unresolved_stacks, 0);
    int nodes;
    /* a's innermost frame (0x1100) for the first two stacks, b's (0x4400) for the third */
    assert_int_equal((int)native_bytes(m, "0x1100 (libfake.so)", &nodes), (int)(want[0] + want[1]));
    assert_int_equal(nodes, 2);     /* under the user's line and under the library's */
    assert_int_equal((int)native_bytes(m, "0x4400 (libfake.so)", &nodes), (int)want[2]);
    assert_int_equal(nodes, 1);
    assert_int_equal((int)find_line(m, "/s/app.py", 20)->s.alloc_bytes, (int)(want[0] + want[2]));
}

static void test_inline_and_by_id_agree(void **state)
{
    (void)state;
    const uint32_t dense[3] = {1, 2, 3}, sparse[3] = {5000000, 7000000, 9000000};
    const uint32_t inline_nids[2] = {0, 0}, dense_nids[2] = {1, 2}, sparse_nids[2] = {6000000, 8000000};
    pf_model_t *ref = load_ok(build("inline.pflow", dense, inline_nids, 0));
    check_whole(ref);
    const char *names[2] = {"dense.pflow", "sparse.pflow"};
    const uint32_t *sids[2] = {dense, sparse}, *nids[2] = {dense_nids, sparse_nids};
    for (int k = 0; k < 2; k++) {
        pf_model_t *m = load_ok(build(names[k], sids[k], nids[k], 0));
        check_whole(m);
        assert_int_equal(m->n_full, ref->n_full);
        for (size_t i = 0; i < m->n_full; i++) {
            assert_string_equal(pf_model_str(m, m->full[i].function), pf_model_str(ref, ref->full[i].function));
            assert_true(m->full[i].alloc == ref->full[i].alloc);
        }
        pf_model_free(m);
    }
    pf_model_free(ref);
}

static void test_missing_or_mismatched_native_part(void **state)
{
    (void)state;
    const uint32_t dense[3] = {1, 2, 3}, sparse[3] = {5000000, 7000000, 9000000};
    const uint32_t dense_nids[2] = {1, 2}, sparse_nids[2] = {6000000, 8000000};
    for (int broken = 1; broken <= 2; broken++) {
        for (int k = 0; k < 2; k++) {
            pf_model_t *m = load_ok(build(k ? "sparse_broken.pflow" : "dense_broken.pflow", k ? sparse : dense,
                                          k ? sparse_nids : dense_nids, broken));
            /* the two stacks naming a are missing (100 allocations each); b's are whole */
            assert_int_equal((int)m->unresolved_stacks, 200);
            int nodes;
            assert_int_equal((int)native_bytes(m, "0x1100 (libfake.so)", &nodes), 0);
            assert_int_equal((int)native_bytes(m, "0x4400 (libfake.so)", &nodes), 100 * 32);
            pf_model_free(m);
        }
    }
}

static void test_native_stack_too_short_is_refused(void **state)
{
    (void)state;
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_native(&b, 1, ips_a, 3, 4);     /* says 4 IPs, holds 3 */
    char err[512] = "";
    pf_model_t *m = NULL;
    pf_load_opts_t o = {.merge_children = 1};
    assert_int_not_equal(pf_model_load(b_save(&b, "short_native.pflow", 0), &o, &m, err, sizeof err), 0);
    if (!strstr(err, "native stack record's frame count exceeds its length"))
        fail_msg("unexpected error: %s", err);
    /* and a STACK naming one by id that cannot hold its reference */
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    pf_rec_stack_t st = {1, 2, 3};  /* two Python frames and the reference: 24 bytes, given 8 */
    b_rec(&b, PF_REC_STACK, PF_STACK_NATIVE_BY_ID, &st, sizeof st);
    assert_int_not_equal(pf_model_load(b_save(&b, "short_stack.pflow", 0), &o, &m, err, sizeof err), 0);
    if (!strstr(err, "stack record's frame counts exceed its length"))
        fail_msg("unexpected error: %s", err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inline_and_by_id_agree),
        cmocka_unit_test(test_missing_or_mismatched_native_part),
        cmocka_unit_test(test_native_stack_too_short_is_refused),
    };
    return cmocka_run_group_tests(tests, writer_setup, writer_teardown);
}
