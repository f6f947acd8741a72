/* Unit tests for the fast native walk (recorder/pf_unwinder.c) and the unwind rules it reads from .eh_frame
 * (recorder/pf_cfi.c): from functions of different frame shapes (no frame pointer, frame pointer, alloca's
 * rbp-based CFA, deep recursion, a dlopen'ed object) its stack is unw_backtrace's, walked fresh and again
 * from its remembered frames; a changed return address below the same starting frame is walked again, not
 * taken as remembered; code without an FDE and a signal frame go to libunwind. The walk runs in a shared
 * object of its own (walk/walk_probe.c), as in libpyflow.so, whose frames both walks leave out. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "walk_chain.h"

int shape_no_fp(const walk_chain_t *c, int i);
int shape_fp(const walk_chain_t *c, int i);
int shape_alloca(const walk_chain_t *c, int i);
int shape_recurse(const walk_chain_t *c, int i);
int shape_twin_a(const walk_chain_t *c, int i);
int shape_twin_b(const walk_chain_t *c, int i);
int shape_no_fde(const walk_chain_t *c, int i);

/* Runs the chain from one call site, so that chains of the same frames start at the same stack pointer. */
__attribute__((noinline)) static int run_chain(const walk_chain_t *c)
{
    volatile int keep = 1;
    return c->steps[0](c, 0) + keep;
}

static void print_stacks(const walk_result_t *r)
{
    fprintf(stderr, "fast walk (%s): %d IPs; libunwind: %d\n", r->used_fast ? "fast" : "fell back", r->nfast, r->nlu);
    for (int i = 0; i < r->nfast || i < r->nlu; i++)
        fprintf(stderr, "  %2d %#18llx %#18llx\n", i, i < r->nfast ? (unsigned long long)r->fast[i] : 0ull,
                i < r->nlu ? (unsigned long long)r->lu[i] : 0ull);
}

/* The walk's stack is libunwind's, and came from the fast walk (want_fast 1) or from libunwind (0); the
 * count of its IPs to keep, down to the native site (this test's own code, or the plugin's), that a walk
 * remembers with its frames is the one a look at each IP gives. */
static void assert_agrees(const walk_result_t *r, int want_fast, int min_frames)
{
    int same = r->nfast == r->nlu && !memcmp(r->fast, r->lu, (size_t)r->nlu * sizeof r->lu[0]);
    if (!same || r->used_fast != want_fast || r->nlu < min_frames || r->cut != r->cut_scanned)
        print_stacks(r);
    assert_true(same);
    assert_int_equal(r->used_fast, want_fast);
    assert_true(r->nlu >= min_frames);
    assert_int_equal(r->cut, r->cut_scanned);
    assert_true(r->cut > 0);
}

/* Walks the chain twice (the second from the frames the first remembered) and checks both. */
static void walk_twice(walk_step_fn *steps, int n, int depth, int want_fast, int min_frames)
{
    walk_result_t r;
    walk_chain_t c = {.n = n, .depth = depth, .r = &r};
    memcpy(c.steps, steps, (size_t)n * sizeof *steps);
    for (int round = 0; round < 2; round++) {
        memset(&r, 0, sizeof r);
        run_chain(&c);
        assert_agrees(&r, want_fast, min_frames);
    }
}

static void test_frame_shapes(void **state)
{
    (void)state;
    walk_twice((walk_step_fn[]){shape_no_fp}, 1, 0, 1, 3);
    walk_twice((walk_step_fn[]){shape_fp}, 1, 0, 1, 3);
    walk_twice((walk_step_fn[]){shape_alloca}, 1, 3, 1, 3);
    /* rbp saved by one frame, used as the CFA by a later one, kept by those between */
    walk_twice((walk_step_fn[]){shape_fp, shape_no_fp, shape_alloca}, 3, 1, 1, 5);
    walk_twice((walk_step_fn[]){shape_alloca, shape_no_fp, shape_fp, shape_alloca}, 4, 7, 1, 6);
    walk_twice((walk_step_fn[]){shape_no_fp, shape_alloca, shape_alloca, shape_no_fp}, 4, 2, 1, 6);
}

static void test_deep_recursion(void **state)
{
    (void)state;
    walk_twice((walk_step_fn[]){shape_alloca, shape_recurse}, 2, 20, 1, 22);
    /* deeper than the walk's 64 IPs: both stop at 64 */
    walk_twice((walk_step_fn[]){shape_fp, shape_recurse, shape_alloca}, 3, 150, 1, WALK_MAX);
}

static void test_dlopened_object(void **state)
{
    (void)state;
    void *h = dlopen(WALK_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    walk_step_fn plain = (walk_step_fn)dlsym(h, "plugin_step");
    walk_step_fn with_alloca = (walk_step_fn)dlsym(h, "plugin_alloca_step");
    assert_non_null(plain);
    assert_non_null(with_alloca);
    walk_twice((walk_step_fn[]){plain, shape_no_fp}, 2, 0, 1, 4);
    walk_twice((walk_step_fn[]){shape_fp, with_alloca, plain, shape_alloca}, 4, 9, 1, 6);
    dlclose(h);
}

/* The same starting frame, then a return address that changed below it: the walk must follow the new one
 * (twin_a and twin_b have the same frame, so everything else the walk reads is the same). */
static void test_changed_word_is_rewalked(void **state)
{
    (void)state;
    static const int depths[] = {1, 3};
    for (size_t d = 0; d < sizeof depths / sizeof depths[0]; d++) {
        walk_result_t ra, rb;
        walk_chain_t a = {.n = 1 + depths[d], .r = &ra}, b = {.n = 1 + depths[d], .r = &rb};
        a.steps[0] = shape_twin_a;
        b.steps[0] = shape_twin_b;
        for (int i = 1; i <= depths[d]; i++)
            a.steps[i] = b.steps[i] = shape_no_fp;
        for (int round = 0; round < 3; round++) {
            memset(&ra, 0, sizeof ra);
            memset(&rb, 0, sizeof rb);
            run_chain(&a);
            run_chain(&b);
            assert_agrees(&ra, 1, 3 + depths[d]);
            assert_agrees(&rb, 1, 3 + depths[d]);
            /* the test means something only if both walks started from the same frame */
            assert_true(ra.probe_sp == rb.probe_sp);
            assert_true(ra.fast[depths[d]] != rb.fast[depths[d]]);  /* twin_a's return address, twin_b's */
        }
    }
}

/* Another library at the addresses of one unloaded: its rules, not the first one's. plugin_step has the
 * same code in both but for its frame size, so a rule kept from the first is wrong for the second. */
static void test_rules_of_unloaded_code_dropped(void **state)
{
    (void)state;
    void *h = dlopen(WALK_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    walk_step_fn first = (walk_step_fn)dlsym(h, "plugin_step");
    assert_non_null(first);
    walk_twice((walk_step_fn[]){shape_no_fp, first, shape_alloca}, 3, 2, 1, 5);
    assert_int_equal(dlclose(h), 0);
    walk_probe_unloaded();
    h = dlopen(WALK_PLUGIN_NARROW_PATH, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    walk_step_fn second = (walk_step_fn)dlsym(h, "plugin_step");
    assert_non_null(second);
    if (second != first)
        fprintf(stderr, "note: the second library was loaded elsewhere; stale rules are not tested here\n");
    /* libunwind's side now comes from unw_step: unw_backtrace's own cache still holds the old rules */
    walk_twice((walk_step_fn[]){shape_no_fp, second, shape_alloca}, 3, 2, 1, 5);
    dlclose(h);
}

static void test_no_fde_falls_back(void **state)
{
    (void)state;
    walk_twice((walk_step_fn[]){shape_no_fp, shape_no_fde, shape_no_fp}, 3, 0, 0, 1);
}

static walk_result_t in_handler;

static void on_signal(int sig)
{
    (void)sig;
    walk_chain_t c = {.steps = {shape_no_fp, shape_alloca}, .n = 2, .depth = 1, .r = &in_handler};
    run_chain(&c);
}

/* From inside a signal handler, on the thread's own stack: the signal frame goes to libunwind. */
static void test_signal_frame_falls_back(void **state)
{
    (void)state;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
    for (int round = 0; round < 2; round++) {
        memset(&in_handler, 0, sizeof in_handler);
        raise(SIGUSR1);
        assert_agrees(&in_handler, 0, 5);
    }
    sigaction(SIGUSR1, &old, NULL);
}

/* From a signal handler's context, as watch's traps walk (pf_unwinder_signal_walk, no libunwind: its lookups
 * take the loader's lock): the interrupted instruction, then every caller, as libunwind gives them from the
 * same context, through frames of every shape; the walk may stop early only at a rule it does not follow. */
static void test_signal_context_walk(void **state)
{
    (void)state;
    static walk_step_fn chains[][4] = {
        {shape_no_fp, shape_alloca, shape_fp},
        {shape_alloca, shape_recurse, shape_no_fp},
    };
    for (size_t k = 0; k < sizeof chains / sizeof chains[0]; k++) {
        walk_result_t r;
        walk_chain_t c = {.n = 3, .depth = 5, .r = &r, .in_signal = 1};
        memcpy(c.steps, chains[k], 3 * sizeof chains[k][0]);
        memset(&r, 0, sizeof r);
        run_chain(&c);
        int prefix = r.nfast > 0 && r.nfast <= r.nlu && !memcmp(r.fast, r.lu, (size_t)r.nfast * sizeof r.lu[0]);
        if (!prefix || r.nfast < 7)
            print_stacks(&r);
        assert_true(prefix);
        assert_true(r.nfast >= 7);  /* the handler's caller chain: raise's frames, the probe, the steps, the test */
    }
}

/* Another thread holds the loader's lock (inside a dl_iterate_phdr callback) until the walk is done or five
 * seconds pass: the walk from a signal context must not wait for it. libunwind's lookups take that lock,
 * and a watch trap that interrupted the loader taking it waited forever. */
static volatile int lock_held, walk_done;

static int hold_loader_lock(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)info, (void)size, (void)arg;
    __atomic_store_n(&lock_held, 1, __ATOMIC_RELEASE);
    for (int ms = 0; ms < 5000 && !__atomic_load_n(&walk_done, __ATOMIC_ACQUIRE); ms++)
        usleep(1000);
    return 1;
}

static void *loader_lock_holder(void *arg)
{
    (void)arg;
    dl_iterate_phdr(hold_loader_lock, NULL);
    return NULL;
}

static void test_signal_context_walk_takes_no_loader_lock(void **state)
{
    (void)state;
    walk_result_t r;
    walk_chain_t c = {.steps = {shape_no_fp, shape_alloca}, .n = 2, .depth = 1, .r = &r, .in_signal = 1};
    run_chain(&c);      /* the rules of these frames are known now, but not those of the holder's wait */
    pthread_t holder;
    lock_held = walk_done = 0;
    assert_int_equal(pthread_create(&holder, NULL, loader_lock_holder, NULL), 0);
    while (!__atomic_load_n(&lock_held, __ATOMIC_ACQUIRE))
        usleep(100);
    memset(&r, 0, sizeof r);
    r.signal_only = 1;      /* libunwind's walk beside it would wait for the lock */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    run_chain(&c);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    __atomic_store_n(&walk_done, 1, __ATOMIC_RELEASE);
    pthread_join(holder, NULL);
    double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(waited < 2.5);  /* the holder lets go after 5 s: a walk that waited for it took that long */
    assert_true(r.nfast >= 5);
}

/* A native site past the interpreter's loop called the Python code there and made none of its memory: the
 * cut keeps nothing past the loop, and without a loop known keeps the site. Synthetic IPs: a libc
 * function's (the runtime), another's standing for the loop, this test's own code (a site). */
static void test_cut_ends_at_eval_loop(void **state)
{
    (void)state;
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(libc);
    uint64_t runtime = (uint64_t)(uintptr_t)dlsym(libc, "qsort") + 5;
    uint64_t loop = (uint64_t)(uintptr_t)dlsym(libc, "bsearch");
    uint64_t site = (uint64_t)(uintptr_t)run_chain + 5;
    const uint8_t none = 0xFF;  /* PF_NO_SITE */
    walk_probe_eval_loop(loop, loop + 16);
    uint64_t callback[] = {runtime, loop + 5, site};    /* the site called the loop: a callback */
    uint64_t direct[] = {runtime, site, loop + 5};      /* the loop called the site, which allocated */
    uint8_t at[4];
    assert_int_equal(walk_probe_cut(callback, 3), 0);
    walk_probe_sites(callback, 3, at);
    assert_int_equal(at[0], none);
    assert_int_equal(at[2], 2);
    assert_int_equal(walk_probe_cut(direct, 3), 2);
    walk_probe_sites(direct, 3, at);
    assert_int_equal(at[0], 1);
    walk_probe_eval_loop(0, 0);
    assert_int_equal(walk_probe_cut(callback, 3), 3);
    walk_probe_sites(callback, 3, at);
    assert_int_equal(at[0], 2);
    dlclose(libc);
}

typedef struct loop_walk {
    walk_step_fn plugin;
    int whole;
    walk_result_t r[2];
} loop_walk_t;

/* On a thread of its own (no walk remembered from before the loop was set): the chain, twice. */
static void *walk_through_loop(void *arg)
{
    loop_walk_t *w = arg;
    walk_probe_whole_stacks(w->whole);
    for (int round = 0; round < 2; round++) {
        walk_chain_t c = {.steps = {shape_no_fp, w->plugin, shape_alloca}, .n = 3, .depth = 2, .r = &w->r[round]};
        memset(&w->r[round], 0, sizeof w->r[round]);
        run_chain(&c);
    }
    walk_probe_whole_stacks(0);
    return NULL;
}

/* The fast walk ends at the interpreter's loop (here the plugin's step stands for it): the IPs up to the
 * return into it, libunwind's first ones, fresh and from its remembered frames; its cut is the scan's.
 * With whole stacks it walks on, as libunwind does. */
static void test_walk_ends_at_eval_loop(void **state)
{
    (void)state;
    void *h = dlopen(WALK_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    loop_walk_t w = {.plugin = (walk_step_fn)dlsym(h, "plugin_step")};
    assert_non_null(w.plugin);
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    assert_true(dladdr1((void *)w.plugin, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size);
    walk_probe_eval_loop((uint64_t)(uintptr_t)w.plugin, (uint64_t)(uintptr_t)w.plugin + sym->st_size);
    for (w.whole = 0; w.whole < 2; w.whole++) {
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, walk_through_loop, &w), 0);
        pthread_join(th, NULL);
        for (int round = 0; round < 2; round++) {
            const walk_result_t *r = &w.r[round];
            int want = w.whole ? r->nlu : 2;    /* shape_alloca's frame, then the plugin's */
            if (r->nfast != want || !r->used_fast || r->nlu <= 2 || memcmp(r->fast, r->lu, (size_t)want * 8) ||
                r->cut != 1 || r->cut_scanned != 1)
                print_stacks(r);
            assert_true(r->used_fast);
            assert_int_equal(r->nfast, want);
            assert_true(r->nlu > 2);
            assert_memory_equal(r->fast, r->lu, (size_t)want * sizeof r->lu[0]);
            assert_int_equal(r->cut, 1);    /* shape_alloca: this test's code, a site */
            assert_int_equal(r->cut_scanned, 1);
        }
    }
    walk_probe_eval_loop(0, 0);
    dlclose(h);
}

/* argv[1]: run only the tests whose names match it (one test alone, without the others' remembered walks). */
int main(int argc, char **argv)
{
    unsetenv("PYFLOW_NATIVE_WALK");
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame_shapes),
        cmocka_unit_test(test_deep_recursion),
        cmocka_unit_test(test_dlopened_object),
        /* before an unload: libunwind's unw_step, which stands in for unw_backtrace after one, no longer
         * steps through the plugin once it was unloaded and loaded again */
        cmocka_unit_test(test_cut_ends_at_eval_loop),
        cmocka_unit_test(test_walk_ends_at_eval_loop),
        cmocka_unit_test(test_changed_word_is_rewalked),
        cmocka_unit_test(test_rules_of_unloaded_code_dropped),
        cmocka_unit_test(test_no_fde_falls_back),
        cmocka_unit_test(test_signal_frame_falls_back),
        cmocka_unit_test(test_signal_context_walk),
        cmocka_unit_test(test_signal_context_walk_takes_no_loader_lock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
