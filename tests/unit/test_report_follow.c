/* Unit tests for the model built while its program runs (report/pf_model_follow.c): a profile written into
 * its file a few chunks at a time, followed step by step (pf_follow_step) and finished, must give the model
 * pf_model_load gives of the whole file (its JSON byte for byte); a chunk is read only once the next one is
 * claimed; and a second thread's chunk makes the follower give up. */
#include "test_report_writer.h"
#include "test_report_render.h"

#include <errno.h>

/* The profile: one thread (tid 100), code and stacks defined in later chunks than the first, objects
 * allocated in one chunk and freed in another, an address handed out again, a copy, a leak, and objects
 * freed after the interpreter began to finalize. Each chunk's records are what a step can read. */
#define N_CHUNKS 6
static size_t chunk_at[N_CHUNKS];   /* the offset of each chunk */

static builder_t build(void)
{
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 100);
    uint64_t t = 1000;
    uint32_t leak_line = 1;
    for (int k = 0; k < N_CHUNKS; k++) {
        chunk_at[k] = b.size;
        b_chunk(&b, 100);
        uint32_t code = (uint32_t)k + 1;
        char name[16];
        snprintf(name, sizeof name, "f%d", k);
        b_code(&b, code, "/app/follow.py", name, 10 * (k + 1));     /* a new function each chunk */
        uint32_t frames[2] = {code, leak_line};
        b_stack(&b, code, k ? 2 : 1, frames);                       /* and a new stack */
        for (int i = 0; i < 40; i++) {
            b_alloc_ref(&b, t += 10, 0x10000 + (uint64_t)k * 0x1000 + (uint64_t)i * 64, 48, PF_ALLOC_EXACT, code);
            if (k)      /* the chunk before's objects, freed in this one */
                b_free(&b, t += 10, 0x10000 + (uint64_t)(k - 1) * 0x1000 + (uint64_t)i * 64);
        }
        b_alloc(&b, t += 10, 0x900000 + (uint64_t)k * 0x10000, 5000, 5000, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1,
                &leak_line);    /* kept: grows chunk by chunk */
        b_copy(&b, t += 10, (uint64_t)k + 1, 0x900000 + (uint64_t)k * 0x10000, 0x10000 + (uint64_t)k * 0x1000, 48,
               code);
        if (k == N_CHUNKS - 2)
            b_mark(&b, t += 10, PF_MARK_FINALIZING);
    }
    return b;
}

static void append(FILE *f, const unsigned char *from, size_t n)
{
    assert_int_equal(fwrite(from, 1, n, f), n);
    assert_int_equal(fflush(f), 0);
}

static void test_followed_in_steps_is_the_load(void **state)
{
    (void)state;
    builder_t b = build();
    unsigned char *whole = malloc(b.size);
    memcpy(whole, b.buf, b.size);
    size_t size = b.size;
    const char *full = b_save(&b, "full.pflow", 0);
    pf_model_t *want = load_ok(full);
    char *want_json = render_json(want);
    pf_model_free(want);

    char path[256];
    snprintf(path, sizeof path, "%s/growing.pflow", tmpdir);
    pf_load_opts_t opts = {.merge_children = 1};
    pf_follow_t *F = pf_follow_new(path, &opts);
    assert_int_equal(pf_follow_step(F), 0);     /* no file yet: nothing, and no giving up */
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    append(f, whole, 64);
    assert_int_equal(pf_follow_step(F), 0);     /* a header being written */
    append(f, whole + 64, PF_HEADER_BYTES - 64);
    size_t written = PF_HEADER_BYTES;
    for (int k = 0; k < N_CHUNKS; k++) {
        size_t end = k + 1 < N_CHUNKS ? chunk_at[k + 1] : size, half = written + (end - written) / 2 / 8 * 8;
        append(f, whole + written, half - written);     /* chunk k half written, as its thread fills it */
        assert_int_equal(pf_follow_step(F), 0);
        append(f, whole + half, end - half);
        written = end;
        /* chunk k is written, k + 1 not claimed yet: a step reads nothing (k - 1 was read already) */
        assert_int_equal(pf_follow_step(F), 0);
        if (k + 1 < N_CHUNKS) {     /* the next chunk's header alone: chunk k is now complete */
            append(f, whole + written, PF_CHUNK_HEADER_BYTES);
            written += PF_CHUNK_HEADER_BYTES;
            assert_int_equal(pf_follow_step(F), 1);
        }
    }
    fclose(f);
    pf_model_t *got = NULL;
    assert_int_equal(pf_follow_finish(F, &got), 0);
    char *got_json = render_json(got);
    if (strcmp(got_json, want_json) != 0)
        fail_msg("followed in steps, the model differs from the load's:\n%.600s\n---\n%.600s", got_json, want_json);
    free(got_json);
    free(want_json);
    pf_model_free(got);
    free(whole);
}

/* Another thread's chunk: the follower gives up (the loader merges threads), however far it got. */
static void test_second_thread_gives_up(void **state)
{
    (void)state;
    builder_t b = build();
    b_chunk(&b, 101);
    uint32_t code = 1;
    b_alloc(&b, 999999, 0x5000000, 64, 64, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &code);
    const char *path = b_save(&b, "two.pflow", 0);
    pf_load_opts_t opts = {.merge_children = 1};
    pf_follow_t *F = pf_follow_new(path, &opts);
    assert_int_equal(pf_follow_step(F), 1);
    pf_model_t *m = NULL;
    assert_int_equal(pf_follow_finish(F, &m), -1);
    assert_null(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_followed_in_steps_is_the_load),
        cmocka_unit_test(test_second_thread_gives_up),
    };
    return cmocka_run_group_tests(tests, writer_setup, writer_teardown);
}
