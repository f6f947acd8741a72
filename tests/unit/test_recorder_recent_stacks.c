/* Unit tests for recorder/pf_recent_stacks.c: a filed capture is found again with its id and code ids; a
 * capture that differs from it in any one word (a native IP at any depth, a Python frame's code object or
 * offset at any depth, a code object's identity field, the flags, the counts) is not, under the filed
 * key too; two captures under one key are both kept, and the least recently used one goes first; an id
 * still to be found is not given until resolved, and only for the capture filed last; a fork child's
 * forget drops every entry; long stacks and frames without a code id are not kept; each thread has its
 * own entries. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pf_recent_stacks.h"

#include "test_rec_memcpy.h"  /* the recorder's memcpy, here a plain loop */

pf_config_t pf_cfg;

/* A code object as pf_code_identity reads it: three identity fields at known offsets. */
typedef struct fake_code {
    const void *field[3];
} fake_code_t;

static pf_pyframes_api_t api = {
    .identity_offset = {offsetof(fake_code_t, field[0]), offsetof(fake_code_t, field[1]),
                        offsetof(fake_code_t, field[2])},
};

#define N_PY 6
#define N_NATIVE 12

static fake_code_t codes[N_PY + 1];
static const char names[N_PY + 1][3][8];

typedef struct capture {
    pf_stack_t st;
    pf_pyframe_t frames[PF_MAX_PY_FRAMES];
    int n_py;
} capture_t;

/* A capture of N_PY frames and N_NATIVE IPs, its words told apart by `seed`. */
static void make_capture(capture_t *c, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    c->n_py = N_PY;
    c->st.n_native = N_NATIVE;
    for (int i = 0; i < N_PY; i++) {
        c->frames[i].code = &codes[i];
        c->frames[i].lasti_bytes = (uint32_t)(10 * i + 2);
    }
    for (int i = 0; i < N_NATIVE; i++)
        c->st.native[i] = 0x400000 + seed * 0x1000 + (uint64_t)i * 16;
}

/* Gives c the code ids and the id the recorder would have found, and files it. */
static uint64_t file_capture(capture_t *c, uint32_t id)
{
    for (int i = 0; i < c->n_py; i++) {
        c->st.py[i].code_id = (uint32_t)(100 + i);
        c->st.py[i].lasti_bytes = c->frames[i].lasti_bytes;
    }
    c->st.id = id;
    c->st.cache_key = 0xCAC4E000u ^ c->st.native[0];
    uint64_t key = pf_recent_key(&c->st, c->frames, c->n_py);
    pf_recent_file(key, &c->st, c->frames, c->n_py);
    return key;
}

/* The id a fresh copy of c's raw capture is found with under key, or 0. */
static uint32_t find(const capture_t *c, uint64_t key)
{
    capture_t probe = *c;
    probe.st.id = 0;
    probe.st.cache_key = 0;
    memset(probe.st.py, 0, sizeof probe.st.py);
    if (!pf_recent_find(key, &probe.st, probe.frames, probe.n_py))
        return 0;
    assert_int_not_equal(probe.st.id, 0);     /* a capture whose id is still to be found is not found */
    for (int i = 0; i < probe.n_py; i++) {
        assert_int_equal(probe.st.py[i].code_id, 100 + i);
        assert_int_equal(probe.st.py[i].lasti_bytes, c->frames[i].lasti_bytes);
    }
    assert_int_equal(probe.st.cache_key, c->st.cache_key);
    return probe.st.id;
}

static int setup(void **state)
{
    (void)state;
    pf_cfg.py = &api;
    for (int i = 0; i <= N_PY; i++)
        for (int k = 0; k < 3; k++)
            codes[i].field[k] = names[i][k];
    pf_recent_forget();
    return 0;
}

static void found_again(void **state)
{
    (void)state;
    capture_t c;
    make_capture(&c, 1);
    uint64_t key = pf_recent_key(&c.st, c.frames, c.n_py);
    assert_int_equal(find(&c, key), 0);
    assert_int_equal(file_capture(&c, 7), key);
    assert_int_equal(find(&c, key), 7);
    assert_int_equal(find(&c, key), 7);
}

/* Every single-word change, looked up under its own key and under the filed one's. */
static void any_word_differs(void **state)
{
    (void)state;
    capture_t c;
    make_capture(&c, 2);
    uint64_t key = file_capture(&c, 9);
    for (int i = 0; i < N_NATIVE; i++) {
        capture_t v = c;
        v.st.native[i] ^= 0x10;
        assert_int_equal(find(&v, key), 0);
        assert_int_equal(find(&v, pf_recent_key(&v.st, v.frames, v.n_py)), 0);
    }
    for (int i = 0; i < N_PY; i++) {
        capture_t v = c;
        v.frames[i].code = &codes[N_PY];     /* same identity fields as none of the filed frames' */
        assert_int_equal(find(&v, key), 0);
        v = c;
        v.frames[i].lasti_bytes += 2;
        assert_int_equal(find(&v, key), 0);
        assert_int_equal(find(&v, pf_recent_key(&v.st, v.frames, v.n_py)), 0);
        for (int k = 0; k < 3; k++) {   /* the code object at that address is another one now */
            const void *was = codes[i].field[k];
            codes[i].field[k] = names[N_PY][k];
            assert_int_equal(find(&c, key), 0);
            codes[i].field[k] = was;
        }
    }
    capture_t v = c;
    v.st.flags = PF_ALLOC_TRUNCATED;
    assert_int_equal(find(&v, key), 0);
    v = c;
    v.st.n_native--;
    assert_int_equal(find(&v, key), 0);
    v = c;
    v.n_py--;
    assert_int_equal(find(&v, key), 0);
    assert_int_equal(find(&c, key), 9);   /* and the filed one is still there */
}

/* Captures alike in their innermost frames share a key; the set keeps two, the least recently used goes. */
static void two_ways_least_recent_goes(void **state)
{
    (void)state;
    capture_t a, b, d;
    make_capture(&a, 3);
    b = a;
    b.st.native[N_NATIVE - 1] += 0x100;     /* outermost IP */
    d = a;
    d.frames[N_PY - 1].lasti_bytes += 4;    /* outermost Python frame */
    uint64_t key = file_capture(&a, 11);
    assert_int_equal(file_capture(&b, 12), key);
    assert_int_equal(find(&a, key), 11);
    assert_int_equal(find(&b, key), 12);
    assert_int_equal(find(&a, key), 11);    /* a most recent: b goes */
    assert_int_equal(file_capture(&d, 13), key);
    assert_int_equal(find(&d, key), 13);
    assert_int_equal(find(&a, key), 11);
    assert_int_equal(find(&b, key), 0);
}

static void pending_until_resolved(void **state)
{
    (void)state;
    capture_t a, other;
    make_capture(&a, 4);
    make_capture(&other, 5);
    uint64_t key = file_capture(&a, 0);
    assert_int_equal(find(&a, key), 0);
    other.st.cache_key = a.st.cache_key;
    pf_recent_resolved(&other.st, 21);      /* not the capture filed last */
    assert_int_equal(find(&a, key), 0);
    pf_recent_resolved(&a.st, 22);
    assert_int_equal(find(&a, key), 22);
    /* a later filing makes an earlier pending capture's resolution moot */
    capture_t b;
    make_capture(&b, 6);
    uint64_t key_b = file_capture(&b, 0);
    file_capture(&other, 23);
    pf_recent_resolved(&b.st, 24);
    assert_int_equal(find(&b, key_b), 0);
}

static void forgotten(void **state)
{
    (void)state;
    capture_t a;
    make_capture(&a, 7);
    uint64_t key = file_capture(&a, 31);
    assert_int_equal(find(&a, key), 31);
    pf_recent_forget();
    assert_int_equal(find(&a, key), 0);
}

static void not_kept(void **state)
{
    (void)state;
    capture_t deep;
    make_capture(&deep, 8);
    deep.n_py = PF_RECENT_MAX_PY + 1;
    for (int i = 0; i < deep.n_py; i++)
        deep.frames[i] = (pf_pyframe_t){.code = &codes[i % N_PY], .lasti_bytes = (uint32_t)i};
    uint64_t key = file_capture(&deep, 41);
    assert_int_equal(find(&deep, key), 0);
    capture_t nocode;
    make_capture(&nocode, 9);
    key = file_capture(&nocode, 42);
    assert_int_equal(find(&nocode, key), 42);
    nocode.st.py[3].code_id = 0;
    nocode.st.native[0] ^= 0x20;    /* another capture, one of whose frames had no code id */
    key = pf_recent_key(&nocode.st, nocode.frames, nocode.n_py);
    pf_recent_file(key, &nocode.st, nocode.frames, nocode.n_py);
    capture_t probe = nocode;
    probe.st.id = 0;
    assert_false(pf_recent_find(key, &probe.st, probe.frames, probe.n_py));
}

static void *other_thread(void *arg)
{
    capture_t *c = arg;
    uint64_t key = pf_recent_key(&c->st, c->frames, c->n_py);
    uintptr_t found = find(c, key);
    capture_t mine;
    make_capture(&mine, 10);
    key = file_capture(&mine, 52);
    return (void *)(found | (uintptr_t)find(&mine, key) << 16);
}

static void per_thread(void **state)
{
    (void)state;
    capture_t a;
    make_capture(&a, 11);
    uint64_t key = file_capture(&a, 51);
    pthread_t th;
    void *got;
    assert_int_equal(pthread_create(&th, NULL, other_thread, &a), 0);
    assert_int_equal(pthread_join(th, &got), 0);
    assert_int_equal((uintptr_t)got, 52u << 16);    /* a not seen there, its own found */
    assert_int_equal(find(&a, key), 51);
    capture_t theirs;
    make_capture(&theirs, 10);
    assert_int_equal(find(&theirs, pf_recent_key(&theirs.st, theirs.frames, theirs.n_py)), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(found_again, setup),
        cmocka_unit_test_setup(any_word_differs, setup),
        cmocka_unit_test_setup(two_ways_least_recent_goes, setup),
        cmocka_unit_test_setup(pending_until_resolved, setup),
        cmocka_unit_test_setup(forgotten, setup),
        cmocka_unit_test_setup(not_kept, setup),
        cmocka_unit_test_setup(per_thread, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
