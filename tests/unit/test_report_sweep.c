/* Unit tests for the model's sweep and the reader's walk: timelines that keep peaks, reused addresses,
 * finalization in children (on the root's clock), zero chunks and zero headers, corruption named with its
 * offset, and line numbers decoded from a real line table inside a profile. */
#include "test_report_writer.h"
#include "pf_loader_int.h"
#include "pf_sweep_recent_int.h"

#include <errno.h>

/* ---- ordering events ---- */

static int cmp_time_seq(const void *a, const void *b)
{
    const event_t *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Events as the loader collects them: threads' time-ordered streams cut into chunk-sized pieces and
 * interleaved in file order (seq), with equal times across threads. The natural merge sort must give
 * what a full sort gives; an empty array, one event, a sorted array and a reversed one too. */
static void test_events_sorted_by_time_then_file_order(void **state)
{
    (void)state;
    enum { THREADS = 7, N = 20000 };
    event_t *ev = malloc(N * sizeof *ev), *want = malloc(N * sizeof *ev);
    uint64_t clock[THREADS] = {0};
    srand(12345);
    for (size_t i = 0; i < N;) {
        int th = rand() % THREADS, piece = 1 + rand() % 300;
        for (int k = 0; k < piece && i < N; k++, i++) {
            clock[th] += (uint64_t)(rand() % 3);     /* repeats: ties broken by file order */
            ev[i] = (event_t){.t = clock[th], .seq = (uint32_t)i, .proc = (uint32_t)th};
        }
    }
    for (int shape = 0; shape < 4; shape++) {
        size_t n = shape == 0 ? N : shape == 1 ? 1 : shape == 2 ? 0 : N;
        if (shape == 3)     /* reversed: every event a run of its own */
            for (size_t i = 0; i < n; i++)
                ev[i] = (event_t){.t = n - i, .seq = (uint32_t)i};
        memcpy(want, ev, n * sizeof *ev);
        if (n)
            qsort(want, n, sizeof *want, cmp_time_seq);
        pf_events_sort(ev, n);
        assert_memory_equal(ev, want, n * sizeof *ev);
        pf_events_sort(ev, n);    /* sorted already */
        assert_memory_equal(ev, want, n * sizeof *ev);
    }
    free(ev);
    free(want);
}

/* ---- the timeline function ---- */

static void test_timeline_bucket_edges(void **state)
{
    (void)state;
    assert_int_equal(pf_timeline_bucket(0, 0), 0);
    assert_int_equal(pf_timeline_bucket(5, 0), 0);
    assert_int_equal(pf_timeline_bucket(0, 1000), 0);
    assert_int_equal(pf_timeline_bucket(1000, 1000), PF_TIMELINE_POINTS - 1);
    assert_int_equal(pf_timeline_bucket(500, 999), 50);
    assert_int_equal(pf_timeline_bucket(UINT64_MAX, 10), PF_TIMELINE_POINTS - 1);  /* no wrap-around */
    assert_int_equal(pf_timeline_bucket(UINT64_MAX / 2, UINT64_MAX - 1), PF_TIMELINE_POINTS / 2 - 1);
}

/* The points of a finished series, brute force: each point's value is the maximum (hi; else the minimum),
 * over the times of the buckets (at the end's level) that begin in its slice, of the value then in force. */
static void brute_points(const double *at, uint64_t end, int hi, double *want)
{
    int k = pf_timeline_level(end);
    uint64_t w = (uint64_t)1 << k;
    for (int b = 0; b < PF_TIMELINE_POINTS; b++) {
        uint64_t from, to;
        pf_timeline_bucket_span(b, end, &from, &to);
        uint64_t lo = (from + w - 1) / w * w, top = b == PF_TIMELINE_POINTS - 1 ? end + 1 : (to + w - 1) / w * w;
        if (top > end + 1)
            top = end + 1;
        double v = at[lo];
        for (uint64_t t = lo; t < top; t++)
            v = hi ? (at[t] > v ? at[t] : v) : (at[t] < v ? at[t] : v);
        want[b] = v;
    }
}

/* A million steps with one-nanosecond spikes (and dips): built as the sweep builds them (each change at
 * its time, the buckets coarsened as time goes on), every point must hold the maximum (minimum) of the
 * buckets that begin in its slice, which a brute-force pass over every nanosecond computes independently;
 * and every spike is in the point of its own time, or the one before (its bucket began there). */
static void test_timeline_keeps_every_peak(void **state)
{
    (void)state;
    const uint64_t end = 1000000;
    double *at = malloc((end + 1) * sizeof *at);
    double hi[PF_TIMELINE_FINE], lo[PF_TIMELINE_FINE], want[PF_TIMELINE_POINTS];
    int hi_filled = 0, lo_filled = 0, level = 0;
    double v = 0;
    at[0] = 0;
    srand(7);
    for (uint64_t t = 1; t <= end; t++) {
        double next = (t % 9973 == 0) ? 1e6 + (double)t : (t % 7919 == 0) ? -1.0 : (double)(rand() % 1000);
        if (t % 9973 == 1 || t % 7919 == 1)
            next = 500;   /* the spike, or the dip, ends at once */
        int k = pf_timeline_level(t);
        if (k > level) {
            pf_timeline_coarsen(hi, &hi_filled, level, k, 1);
            pf_timeline_coarsen(lo, &lo_filled, level, k, 0);
            level = k;
        }
        pf_timeline_set_bucket(hi, &hi_filled, (int)(t >> level), v, next);
        pf_timeline_set_low(lo, &lo_filled, (int)(t >> level), v, next);
        at[t] = v = next;
    }
    pf_timeline_finish(hi, &hi_filled, level, end, v, 1);
    pf_timeline_finish(lo, &lo_filled, level, end, v, 0);
    assert_int_equal(hi_filled, PF_TIMELINE_POINTS);
    brute_points(at, end, 1, want);
    for (int i = 0; i < PF_TIMELINE_POINTS; i++)
        if (hi[i] != want[i])
            fail_msg("point %d holds %.0f, its buckets' maximum is %.0f", i, hi[i], want[i]);
    brute_points(at, end, 0, want);
    for (int i = 0; i < PF_TIMELINE_POINTS; i++)
        if (lo[i] != want[i])
            fail_msg("point %d's minimum is %.0f, its buckets' minimum is %.0f", i, lo[i], want[i]);
    for (uint64_t t = 9973; t <= end; t += 9973) {
        int b = pf_timeline_bucket(t, end);
        assert_true(hi[b] >= 1e6 + (double)t || (b > 0 && hi[b - 1] >= 1e6 + (double)t));
    }
    free(at);
}

/* Points with no event hold the value carried in; the one holding a short peak shows it (8 ns buckets on a
 * 1000 ns run: the spike's, [504, 512), begins in point 50's slice [501, 511)). */
static void test_timeline_carries_values(void **state)
{
    (void)state;
    double tl[PF_TIMELINE_FINE];
    int filled = 0;
    uint8_t level = 0;
    pf_timeline_set(tl, &filled, &level, 10, 0, 500);      /* point 0 */
    pf_timeline_set(tl, &filled, &level, 505, 500, 9000);  /* point 50: a spike */
    pf_timeline_set(tl, &filled, &level, 506, 9000, 100);  /* gone at once */
    pf_timeline_finish(tl, &filled, level, 1000, 100, 1);
    assert_true(tl[0] == 500 && tl[1] == 500 && tl[49] == 500);
    assert_true(tl[50] == 9000);
    assert_true(tl[51] == 100 && tl[99] == 100);
}

/* A series built while the end is unknown is the one a sweep knowing it would build: coarsening as time
 * goes on gives, at any end, the buckets of the end's level set directly. */
static void test_timeline_independent_of_end(void **state)
{
    (void)state;
    const uint64_t end = 777777;
    int k_end = pf_timeline_level(end);
    double built[PF_TIMELINE_FINE], direct[PF_TIMELINE_FINE];
    int built_filled = 0, direct_filled = 0, level = 0;
    double v = 0;
    srand(11);
    for (uint64_t t = 3; t <= end; t += 1 + (uint64_t)(rand() % 50)) {
        double next = (double)(rand() % 100000);
        int k = pf_timeline_level(t);
        if (k > level) {
            pf_timeline_coarsen(built, &built_filled, level, k, 1);
            level = k;
        }
        pf_timeline_set_bucket(built, &built_filled, (int)(t >> level), v, next);
        pf_timeline_set_bucket(direct, &direct_filled, (int)(t >> k_end), v, next);
        v = next;
    }
    pf_timeline_coarsen(built, &built_filled, level, k_end, 1);
    assert_int_equal(built_filled, direct_filled);
    assert_memory_equal(built, direct, (size_t)direct_filled * sizeof *built);
}

/* ---- liveness ---- */

static void test_reused_address_releases_the_unseen_block(void **state)
{
    (void)state;
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/app/r.py", "f", 1);
    b_code(&b, 2, "/app/r.py", "g", 2);
    uint32_t f = 1, g = 2;
    b_alloc(&b, 10, 0x1000, 100, 100, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &f);
    /* its free was not recorded (e.g. freed by a path the hooks did not see); the address comes back */
    b_alloc(&b, 20, 0x1000, 300, 300, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &g);
    b_free(&b, 30, 0x1000);
    b_free(&b, 40, 0x1000);     /* a second free of the same address: nothing is live there */
    pf_model_t *m = load_ok(b_save(&b, "reuse.pflow", 0));
    assert_int_equal((int)m->total.peak_bytes, 300);
    assert_int_equal((int)m->total.leaked_bytes, 0);
    assert_int_equal((int)find_line(m, "/app/r.py", 1)->s.leaked_bytes, 0);
    assert_int_equal((int)find_line(m, "/app/r.py", 2)->s.peak_bytes, 300);
    assert_int_equal((int)find_line(m, "/app/r.py", 1)->s.peak_bytes, 0);
    pf_model_free(m);
}

/* A child starts 2 s after the root and outlives it: its frees before its own finalization mark count, those
 * after do not, and its events land 2 s into the root's timeline. While it runs (the launcher's trailer lists
 * it), what it holds is live at exit; once it ended (no trailer: its file says it shut down), it gave that
 * back, and only the process table keeps it. */
static pf_model_t *child_outliving_root(int listed_running)
{
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 10);
    ((pf_file_header_t *)b.buf)->start_mono_ns = 1000000000ull;
    b_chunk(&b, 10);
    b_code(&b, 1, "/p/main.py", "<module>", 1);
    uint32_t c = 1, running = 11;
    b_alloc(&b, 1000, 0x1000, 64, 64, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &c);
    b_free(&b, 2000, 0x1000);
    if (listed_running)
        b_rec(&b, PF_REC_RUNNING, 1, &running, sizeof running);
    b_save(&b, "clock.pflow", 0);
    b_init(&b, PF_HDR_EXACT, 11);
    ((pf_file_header_t *)b.buf)->start_mono_ns = 3000000000ull;
    ((pf_file_header_t *)b.buf)->ppid = 10;
    b_chunk(&b, 11);
    b_code(&b, 7, "/p/worker.py", "work", 5);
    c = 7;
    b_alloc(&b, 100, 0x2000, 1000, 1000, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &c);
    b_alloc(&b, 200, 0x3000, 50, 50, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &c);
    b_free(&b, 300, 0x2000);                    /* the program's own free: counts */
    b_mark(&b, 400, PF_MARK_FINALIZING);
    b_free(&b, 500, 0x3000);                    /* shutdown: stays live at exit */
    b_save(&b, "clock.pflow.11", 0);
    char path[256];
    snprintf(path, sizeof path, "%s/clock.pflow", tmpdir);
    pf_model_t *m = load_ok(path);
    assert_int_equal((int)m->total.peak_bytes, 1050);
    assert_true(m->peak_ns >= 2000000000ull);   /* the child's peak, on the root's clock */
    assert_int_equal((int)m->n_procs, 2);
    assert_int_equal(m->procs[1].pid, 11);
    assert_int_equal(m->procs[1].ppid, 10);
    assert_false(m->procs[1].root);
    assert_int_equal((int)m->procs[1].live, 50);
    return m;
}

static void test_child_finalization_on_root_clock(void **state)
{
    (void)state;
    pf_model_t *m = child_outliving_root(1);
    assert_int_equal((int)find_line(m, "/p/worker.py", 5)->s.leaked_bytes, 50);
    assert_int_equal((int)m->total.leaked_bytes, 50);
    pf_model_free(m);
    m = child_outliving_root(0);
    assert_int_equal((int)find_line(m, "/p/worker.py", 5)->s.leaked_bytes, 0);
    assert_int_equal((int)m->total.leaked_bytes, 0);
    pf_model_free(m);
}

/* A child that exec'd a program that is not profiled (its last record an EXEC mark), after the root ended,
 * in a profile without the launcher's trailer: its image ended there, so what it held is given back; one
 * whose exec failed (an allocation after the mark) is not taken for ended. */
static pf_model_t *child_execs(int exec_fails)
{
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 20);
    b_chunk(&b, 20);
    b_code(&b, 1, "/p/main.py", "<module>", 1);
    uint32_t c = 1;
    b_alloc(&b, 1000, 0x1000, 64, 64, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &c);
    b_save(&b, "execs.pflow", 0);
    b_child(&b, 21, 20);
    b_code(&b, 7, "/p/main.py", "<module>", 9);
    c = 7;
    b_alloc(&b, 2000, 0x2000, 500, 500, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &c);
    b_mark(&b, 3000, PF_MARK_EXEC);
    if (exec_fails)
        b_alloc(&b, 4000, 0x3000, 100, 100, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &c);
    b_save(&b, "execs.pflow.21", 0);
    char path[256];
    snprintf(path, sizeof path, "%s/execs.pflow", tmpdir);
    return load_ok(path);
}

static void test_child_exec_ends_its_image(void **state)
{
    (void)state;
    pf_model_t *m = child_execs(0);
    assert_non_null(m->procs[1].exec_command);
    assert_int_equal((int)m->total.leaked_bytes, 64);      /* the root's alone */
    pf_model_free(m);
    m = child_execs(1);
    assert_null(m->procs[1].exec_command);
    assert_int_equal((int)m->total.leaked_bytes, 64 + 500 + 100);
    pf_model_free(m);
}

/* Per-line peak is the line's live bytes at the instant the whole program peaked, not its own maximum. */
static void test_peak_share_at_the_programs_peak(void **state)
{
    (void)state;
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/s/a.py", "a", 1);
    b_code(&b, 2, "/s/a.py", "b", 2);
    uint32_t l1 = 1, l2 = 2;
    b_alloc(&b, 10, 0x1000, 800, 800, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l1);   /* line 1 alone: 800 */
    b_free(&b, 20, 0x1000);
    b_alloc(&b, 30, 0x2000, 500, 500, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l1);
    b_alloc(&b, 40, 0x3000, 600, 600, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l2);   /* total 1100: the peak */
    b_free(&b, 50, 0x2000);
    b_free(&b, 60, 0x3000);
    pf_model_t *m = load_ok(b_save(&b, "share.pflow", 0));
    assert_int_equal((int)m->total.peak_bytes, 1100);
    assert_int_equal((int)find_line(m, "/s/a.py", 1)->s.peak_bytes, 500);   /* not its own 800 */
    assert_int_equal((int)find_line(m, "/s/a.py", 1)->s.max_live, 800);
    assert_int_equal((int)find_line(m, "/s/a.py", 2)->s.peak_bytes, 600);
    assert_int_equal(m->peak_ns, 40);
    pf_model_free(m);
}

/* A thread whose records go back in time (watch writes its findings after the fact): the events are then
 * sorted rather than merged thread by thread, so a FREE stamped before its block's ALLOC does not free it.
 * The other thread's events interleave by time either way. */
static void test_events_out_of_order_are_sorted(void **state)
{
    (void)state;
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/s/o.py", "f", 1);
    b_code(&b, 2, "/s/o.py", "f", 2);
    uint32_t l1 = 1, l2 = 2;
    b_alloc(&b, 30, 0x1000, 100, 100, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l1);
    b_free(&b, 10, 0x1000);                         /* stamped before the ALLOC: a free of nothing */
    b_chunk(&b, 2);
    b_alloc(&b, 20, 0x2000, 50, 50, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l2);
    b_free(&b, 40, 0x2000);
    pf_model_t *m = load_ok(b_save(&b, "backwards.pflow", 0));
    assert_int_equal((int)find_line(m, "/s/o.py", 1)->s.leaked_bytes, 100);
    assert_int_equal((int)m->total.peak_bytes, 150);  /* at t=30, both live */
    assert_int_equal(m->peak_ns, 30);
    pf_model_free(m);
}

/* A child's file corrupt midway: what comes before the bad record counts, nothing after it (in its chunk
 * or later ones), as the loader's walk stopped there; the root's events are all there. */
static void test_child_corrupt_midway_keeps_what_came_before(void **state)
{
    (void)state;
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/s/c.py", "f", 1);
    uint32_t l1 = 1;
    b_alloc(&b, 5, 0x1000, 100, 100, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l1);
    b_save(&b, "midway.pflow", 0);
    b_child(&b, 7, 1);
    b_code(&b, 1, "/s/c.py", "f", 1);
    b_alloc(&b, 6, 0x1000, 10, 10, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l1);
    size_t bad = b.pos;
    b_alloc(&b, 7, 0x2000, 20, 20, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l1);  /* made corrupt below */
    b_alloc(&b, 8, 0x3000, 40, 40, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l1);
    b_chunk(&b, 8);
    b_alloc(&b, 9, 0x4000, 80, 80, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l1);
    ((pf_rec_header_t *)(b.buf + bad))->bytes = 3;
    b_save(&b, "midway.pflow.7", 0);
    char path[256];
    snprintf(path, sizeof path, "%s/midway.pflow", tmpdir);
    pf_model_t *m = load_ok(path);
    assert_int_equal((int)find_line(m, "/s/c.py", 1)->s.alloc_bytes, 110);
    pf_model_free(m);
}

/* A realloc that moved: its copy's source is the block it just freed, whose slot the new block may take
 * over; the edge still starts at the old block's line. */
static void test_realloc_edge_starts_at_the_old_blocks_line(void **state)
{
    (void)state;
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/s/r.py", "f", 1);
    b_code(&b, 2, "/s/r.py", "f", 2);
    uint32_t l1 = 1, l2 = 2;
    b_alloc(&b, 1, 0x1000, 100, 100, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l1);
    b_free(&b, 2, 0x1000);                                                          /* realloc at line 2 */
    b_alloc(&b, 3, 0x2000, 200, 200, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l2);
    b_copy_kind(&b, 4, 1, 0x2000, 0x1000, 100, 2, PF_COPY_REALLOC);
    pf_model_t *m = load_ok(b_save(&b, "realloc.pflow", 0));
    assert_int_equal(m->n_flows, 1);
    const pf_flow_t *f = &m->flows[0];
    assert_int_equal(f->kind, PF_COPY_REALLOC);
    assert_true(f->src_line >= 0 && f->dst_line >= 0);
    assert_int_equal(m->lines[f->src_line].line, 1);
    assert_int_equal(m->lines[f->dst_line].line, 2);
    pf_model_free(m);
}

/* Several peaks, the last one set by a GPU block: a line that changed between earlier peaks and not after
 * the last keeps its value then; one that changes after it, its value at it; the GPU peak's shares are
 * the GPU bytes at that instant; and a later, smaller GPU allocation does not move it. */
static void test_peak_shares_across_many_peaks(void **state)
{
    (void)state;
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    for (uint32_t id = 1; id <= 3; id++)
        b_code(&b, id, "/s/p.py", "f", (int)id);
    uint32_t l1 = 1, l2 = 2, l3 = 3;
    b_alloc(&b, 1, 0x1000, 100, 100, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l1);    /* peak: 100 */
    b_alloc(&b, 2, 0x2000, 200, 200, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &l2);     /* peak: 300 */
    b_free(&b, 3, 0x1000);
    b_alloc(&b, 4, 0x3000, 150, 150, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l1);    /* peak: 350 */
    b_alloc(&b, 5, 0x4000, 1000, 1000, PF_DOMAIN_GPU, PF_ALLOC_EXACT, 1, &l3);     /* peak: 1350, GPU 1000 */
    b_free(&b, 6, 0x4000);
    b_free(&b, 7, 0x3000);                                                          /* line 1 after the peak */
    b_alloc(&b, 8, 0x5000, 300, 300, PF_DOMAIN_GPU, PF_ALLOC_EXACT, 1, &l2);       /* GPU 300: no new peak */
    pf_model_t *m = load_ok(b_save(&b, "peaks.pflow", 0));
    assert_int_equal((int)m->total.peak_bytes, 1350);
    assert_int_equal(m->peak_ns, 5);
    const pf_line_t *a = find_line(m, "/s/p.py", 1), *c = find_line(m, "/s/p.py", 2), *g = find_line(m, "/s/p.py", 3);
    assert_int_equal((int)a->s.peak_bytes, 150);
    assert_int_equal((int)c->s.peak_bytes, 200);
    assert_int_equal((int)g->s.peak_bytes, 1000);
    assert_int_equal((int)m->total.gpu_peak_bytes, 1000);
    assert_int_equal((int)g->s.gpu_peak_bytes, 1000);
    assert_int_equal((int)c->s.gpu_peak_bytes, 0);
    assert_int_equal((int)a->s.gpu_peak_bytes, 0);
    pf_model_free(m);
}

/* ---- the reader's walk ---- */

static void test_walk_skips_zero_chunks_and_stops_at_zero_headers(void **state)
{
    (void)state;
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/w/a.py", "f", 3);
    uint32_t c = 1;
    b_alloc(&b, 10, 0x1000, 100, 100, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &c);
    size_t after_first = b.pos;
    /* a chunk never handed out: all zeros */
    b.buf = realloc(b.buf, b.size + PF_CHUNK_BYTES);
    memset(b.buf + b.size, 0, PF_CHUNK_BYTES);
    b.size += PF_CHUNK_BYTES;
    b_chunk(&b, 2);     /* another thread, later in the file, earlier in time */
    b_code(&b, 2, "/w/a.py", "g", 4);
    c = 2;
    b_alloc(&b, 5, 0x2000, 200, 200, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &c);
    /* junk after a zero header in chunk 1 must never be read */
    memset(b.buf + after_first + 8, 0xAB, 64);
    pf_model_t *m = load_ok(b_save(&b, "zero.pflow", 0));
    assert_int_equal((int)m->total.alloc_bytes, 300);
    assert_int_equal((int)find_line(m, "/w/a.py", 3)->s.alloc_bytes, 100);
    assert_int_equal((int)find_line(m, "/w/a.py", 4)->s.alloc_bytes, 200);
    pf_model_free(m);
}

static char *load_err(const char *path)
{
    static char err[512];
    err[0] = '\0';
    pf_model_t *m = NULL;
    pf_load_opts_t o = {0};
    int rc = pf_model_load(path, &o, &m, err, sizeof err);
    assert_int_equal(rc, -EINVAL);
    assert_null(m);
    return err;
}

static void expect(const char *err, const char *needle)
{
    if (!strstr(err, needle))
        fail_msg("error \"%s\" lacks \"%s\"", err, needle);
}

/* ---- interned stacks ---- */

/* References resolve to the STACK record wherever it sits: before the reference, or in another thread's
 * chunk later in the file. They attribute exactly as the same stack inline does; an id the file lacks goes
 * to "[stack missing]" and is counted, not to the startup row. */
static void test_interned_stacks_resolve_anywhere(void **state)
{
    (void)state;
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/s/lib.py", "helper", 10);
    b_code(&b, 2, "/s/app.py", "main", 20);
    uint32_t inner_outer[2] = {1, 2};
    b_stack(&b, 5, 2, inner_outer);
    b_alloc_ref(&b, 10, 0x1000, 100, PF_ALLOC_EXACT, 5);
    b_alloc(&b, 20, 0x2000, 1000, 1000, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 2, inner_outer);    /* inline */
    b_alloc_ref(&b, 30, 0x3000, 7, PF_ALLOC_EXACT, 9);      /* defined by thread 2, in a later chunk */
    b_alloc_ref(&b, 40, 0x4000, 3, PF_ALLOC_EXACT, 77);     /* never defined */
    b_chunk(&b, 2);
    uint32_t lib_only = 1;
    b_stack(&b, 9, 1, &lib_only);
    pf_model_t *m = load_ok(b_save(&b, "stacks.pflow", 0));
    /* /s/lib.py is not under a library path, so the innermost frame is the user's line */
    assert_int_equal((int)find_line(m, "/s/lib.py", 10)->s.alloc_bytes, 1107);
    assert_int_equal((int)find_line(m, "[stack missing]", 0)->s.alloc_bytes, 3);
    assert_int_equal((int)m->unresolved_stacks, 1);
    assert_int_equal((int)m->total.alloc_bytes, 1110);
    pf_model_free(m);
}

/* A short ALLOC counts as the ALLOC it stands for: its size, domain, stack and time (a free finds it), and
 * one without its stack reference flag is refused. */
static void test_short_allocs_count_as_allocs(void **state)
{
    (void)state;
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/s/app.py", "main", 20);
    uint32_t main_only = 1;
    b_stack(&b, 3, 1, &main_only);
    b_alloc_short(&b, 10, 0x1000, 100, PF_DOMAIN_PYOBJ, 0, 3);
    b_alloc_short(&b, 20, 0x2000, 4000, PF_DOMAIN_MALLOC, 0, 3);
    b_free(&b, 30, 0x1000);
    b_alloc_ref(&b, 40, 0x3000, 7, PF_ALLOC_EXACT, 3);
    pf_model_t *m = load_ok(b_save(&b, "short.pflow", 0));
    const pf_line_t *l = find_line(m, "/s/app.py", 20);
    assert_int_equal((int)l->s.alloc_bytes, 4107);
    assert_int_equal((int)l->s.python_bytes, 100);
    assert_int_equal((int)l->s.native_bytes, 4007);
    assert_int_equal((int)l->s.peak_bytes, 4100);   /* the 100 were freed at 30, before the 7 came */
    assert_int_equal((int)m->unresolved_stacks, 0);
    pf_model_free(m);

    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/s/app.py", "main", 20);
    b_stack(&b, 3, 1, &main_only);
    pf_rec_alloc_short_t a = {50, 0x4000, 8, 3};
    b_rec(&b, PF_REC_ALLOC_SHORT, PF_ALLOC_SHORT_AUX(PF_DOMAIN_MALLOC, PF_ALLOC_EXACT), &a, sizeof a);
    expect(load_err(b_save(&b, "short_bad.pflow", 0)), "short allocation record without its stack reference");
}

/* One good profile, corrupted in several ways: each gets a sentence with the file and the offset. */
static void test_corruption_named_with_offset(void **state)
{
    (void)state;
    builder_t b;
    b_init(&b, PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/c/a.py", "f", 1);
    size_t second = b.pos;
    uint32_t c = 1;
    b_alloc(&b, 1, 0x1000, 8, 8, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &c);
    b_chunk(&b, 2);
    size_t size = b.size;
    unsigned char *good = b.buf;
    char off[64];
#define FRESH() (b.buf = memcpy(malloc(size), good, size), b.size = size)

    FRESH();    /* a record running past its chunk */
    ((pf_rec_header_t *)(b.buf + second))->bytes = PF_CHUNK_BYTES;
    char *e = load_err(b_save(&b, "past.pflow", 0));
    snprintf(off, sizeof off, "offset %zu", second);
    expect(e, off);
    expect(e, "past.pflow");
    expect(e, "past the end of its chunk");

    FRESH();    /* a bad chunk magic in the second chunk */
    size_t chunk2 = PF_HEADER_BYTES + PF_CHUNK_BYTES;
    memcpy(b.buf + chunk2, "JUNK", 4);
    e = load_err(b_save(&b, "chunk.pflow", 0));
    snprintf(off, sizeof off, "offset %zu", chunk2);
    expect(e, off);
    expect(e, "chunk magic");

    FRESH();    /* a code record whose strings are longer than itself */
    ((pf_rec_code_t *)(b.buf + PF_HEADER_BYTES + PF_CHUNK_HEADER_BYTES + 8))->filename_len = 100000;
    e = load_err(b_save(&b, "code.pflow", 0));
    snprintf(off, sizeof off, "offset %u", PF_HEADER_BYTES + PF_CHUNK_HEADER_BYTES);
    expect(e, off);
    expect(e, "string lengths");

    FRESH();    /* a zero-length record (would loop forever if accepted) */
    ((pf_rec_header_t *)(b.buf + second))->bytes = 0;
    e = load_err(b_save(&b, "zerolen.pflow", 0));
    snprintf(off, sizeof off, "offset %zu", second);
    expect(e, off);

    FRESH();    /* an allocation record with an unknown domain */
    ((pf_rec_alloc_t *)(b.buf + second + 8))->domain = 77;
    expect(load_err(b_save(&b, "domain.pflow", 0)), "domain");

    FRESH();    /* a stack reference that also claims inline frames */
    ((pf_rec_alloc_t *)(b.buf + second + 8))->flags |= PF_ALLOC_STACK_REF;
    expect(load_err(b_save(&b, "stackref.pflow", 0)), "stack does not fit");

    FRESH();    /* header sizes nobody could walk */
    ((pf_file_header_t *)b.buf)->chunk_bytes = 0;
    expect(load_err(b_save(&b, "chunksize.pflow", 0)), "chunk size");
    FRESH();
    ((pf_file_header_t *)b.buf)->header_bytes = 12;
    expect(load_err(b_save(&b, "hdrsize.pflow", 0)), "header size");

    FRESH();    /* cut inside the second record: the first one still loads */
    pf_model_t *m = load_ok(b_save(&b, "cutrec.pflow", second + 20));
    assert_int_equal((int)m->total.alloc_bytes, 0);
    pf_model_free(m);
    FRESH();    /* cut just after it: the allocation is there */
    m = load_ok(b_save(&b, "cutafter.pflow", second + 8 + sizeof(pf_rec_alloc_t) + 8));
    assert_int_equal((int)m->total.alloc_bytes, 8);
    pf_model_free(m);
    FRESH();    /* cut inside the header: not a profile */
    expect(load_err(b_save(&b, "cuthdr.pflow", 100)), "not a pyflow profile");
#undef FRESH
    free(good);
}

/* ---- line numbers inside a profile ---- */

/* CPython 3.11's location table for
 *     def f():          # line 10
 *         a = 1         # line 11
 *         b = [a] * 9   # line 12
 * (code units: RESUME at 0 on line 10; line 11 from unit 1; line 12 from unit 3). Hand-encoded entries:
 * 0x80|code 10 (delta 0)... kept simple: three "one line, no column" entries (code 13, signed varint). */
static void test_lines_from_lasti(void **state)
{
    (void)state;
    const uint8_t table[] = {
        0x80 | (13 << 3) | 0, 0x00,         /* 1 unit, line delta 0 -> 10 */
        0x80 | (13 << 3) | 1, 0x02,         /* 2 units, delta +1 -> 11 */
        0x80 | (13 << 3) | 3, 0x02,         /* 4 units, delta +1 -> 12 */
    };
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    unsigned char tmp[256];
    const char *file = "/l/f.py", *name = "f";
    pf_rec_code_t code = {1, 10, (uint32_t)strlen(file), (uint32_t)strlen(name), sizeof table, 0};
    memcpy(tmp, &code, sizeof code);
    memcpy(tmp + sizeof code, file, code.filename_len);
    memcpy(tmp + sizeof code + code.filename_len, name, code.name_len);
    memcpy(tmp + sizeof code + code.filename_len + code.name_len, table, sizeof table);
    b_rec(&b, PF_REC_CODE, PF_LT_LOCATIONS, tmp, sizeof code + code.filename_len + code.name_len + sizeof table);
    static const uint32_t lasti[] = {0, 2, 4, 6, 8, 12, 14};
    static const int want[] = {10, 11, 11, 12, 12, 12, 12};
    for (int i = 0; i < 7; i++) {
        unsigned char rec[128];
        pf_rec_alloc_t a = {(uint64_t)i, 0x1000 + (uint64_t)i * 64, 10, 10, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, 0, 0};
        pf_rec_pyframe_t fr = {1, lasti[i]};
        memcpy(rec, &a, sizeof a);
        memcpy(rec + sizeof a, &fr, sizeof fr);
        b_rec(&b, PF_REC_ALLOC, 0, rec, sizeof a + sizeof fr);
    }
    pf_model_t *m = load_ok(b_save(&b, "lasti.pflow", 0));
    int per_line[3] = {0, 0, 0};
    for (int i = 0; i < 7; i++)
        per_line[want[i] - 10] += 10;
    for (int l = 0; l < 3; l++)
        assert_int_equal((int)find_line(m, "/l/f.py", 10 + l)->s.alloc_bytes, per_line[l]);
    pf_model_free(m);
}

/* ---- the merge of the threads' streams (pf_events_next_batch) ---- */

/* Threads' events merged in time order, ties to the record earlier in the file, across batches of the
 * sweep (more events than one batch holds), a stream split over two chunks with another thread's between,
 * a thread with no events, and streams that take turns at equal times on every event. Thread 1 allocates
 * a byte at t = 0, 2, ... 598 (the first half in chunk A, the second in chunk C); thread 2, in chunk B,
 * frees each at the same t: the first half's allocations come first in the file, so they are freed; the
 * second half's frees come first, find nothing, and those 150 bytes leak. Thread 3 holds a megabyte from
 * t = 301 to 303: the peak is at t = 302, with the leaking bytes of t = 300 and 302. */
static void test_streams_merge_in_time_then_file_order(void **state)
{
    (void)state;
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/m/app.py", "main", 7);
    uint32_t main_only = 1;
    b_stack(&b, 1, 1, &main_only);
    for (uint64_t i = 0; i < 150; i++)
        b_alloc_short(&b, 2 * i, 0x10000 + 16 * i, 1, PF_DOMAIN_PYOBJ, 0, 1);
    b_chunk(&b, 2);
    for (uint64_t i = 0; i < 300; i++)
        b_free(&b, 2 * i, 0x10000 + 16 * i);
    b_chunk(&b, 1);
    for (uint64_t i = 150; i < 300; i++)
        b_alloc_short(&b, 2 * i, 0x10000 + 16 * i, 1, PF_DOMAIN_PYOBJ, 0, 1);
    b_chunk(&b, 3);
    b_alloc_short(&b, 301, 0x900000, 1000000, PF_DOMAIN_MALLOC, 0, 1);
    b_free(&b, 303, 0x900000);
    b_chunk(&b, 4);     /* a thread that allocated nothing */
    b_code(&b, 2, "/m/idle.py", "wait", 1);
    pf_model_t *m = load_ok(b_save(&b, "merge.pflow", 0));
    assert_int_equal((int)m->total.alloc_bytes, 1000300);
    assert_int_equal((int)m->total.leaked_bytes, 150);
    assert_int_equal((int)m->total.peak_bytes, 1000002);
    assert_int_equal((int)m->peak_ns, 302);
    assert_int_equal((int)find_line(m, "/m/app.py", 7)->s.n_freed, 151);
    pf_model_free(m);
}

/* An interned stack with no frame of the user's (a library's) is charged, allocation by allocation, to the
 * line that started its thread where one did, else to its own library row, whichever comes first in the
 * run and however the two alternate (the row of its own frames is worked out once, the starter looked up
 * each time). */
static void test_library_stack_by_starter_then_own_row(void **state)
{
    (void)state;
    for (int worker_first = 0; worker_first < 2; worker_first++) {
        builder_t b;
        b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
        b_chunk(&b, 1);
        b_thread(&b, 1, 1, 0xA0);
        b_code(&b, 1, "/app.py", "<module>", 5);
        b_code(&b, 2, "/usr/lib/python3.11/json/decoder.py", "decode", 40);
        uint32_t app5 = 1, library = 2;
        b_stack(&b, 5, 1, &library);
        b_spawn(&b, 2, PF_SPAWN_THREAD, 0xB0, 1, 1, &app5);
        uint64_t t0 = worker_first ? 100 : 10;   /* the main thread's allocations before or after the worker's */
        for (uint64_t i = 0; i < 3; i++)
            b_alloc_short(&b, t0 + i, 0x10000 + 64 * i, 100, PF_DOMAIN_PYOBJ, 0, 5);
        b_chunk(&b, 2);
        b_thread(&b, 3, 2, 0xB0);
        for (uint64_t i = 0; i < 4; i++)
            b_alloc_short(&b, 50 + i, 0x20000 + 64 * i, 1000, PF_DOMAIN_PYOBJ, 0, 5);
        b_chunk(&b, 1);
        b_alloc_short(&b, 200, 0x30000, 10, PF_DOMAIN_PYOBJ, 0, 5);
        pf_model_t *m = load_ok(b_save(&b, "library_stack.pflow", 0));
        const pf_line_t *starter = find_line(m, "/app.py", 5);
        assert_int_equal((int)starter->s.alloc_bytes, 4000);
        assert_int_equal((int)starter->started_bytes, 4000);
        assert_int_equal((int)find_line(m, "/usr/lib/python3.11/json/decoder.py", 40)->s.alloc_bytes, 310);
        assert_int_equal((int)m->total.alloc_bytes, 4310);
        pf_model_free(m);
    }
}

/* ---- blocks freed lately (pf_sweep_recent_int.h) ---- */

/* Only a block whose FREE said a realloc freed it, with copies into it, is pending for the next allocation
 * at its address; the count follows every way a slot changes: marked, taken, overwritten by a later free,
 * taken by a realloc's COPY (proven) without the mark. With none pending, a plain allocation's question is
 * answered without the table; a proven one still finds its chain. */
static void test_recent_frees_count_pending_continuations(void **state)
{
    (void)state;
    pf_recent_frees_t R;
    pf_recent_init(&R);
    const alloc_site_t site = {7, 0};
    const uint64_t a = 0x7f0000001000ull, b = 0x7f0000002000ull, c = 0x7f0000003000ull;
    pf_recent_freed(&R, a, site, 4);        /* copies into it, a plain free: not pending */
    pf_recent_freed(&R, b, site, -1);       /* no copies: nothing to continue */
    pf_recent_by_realloc(&R, b);
    assert_int_equal(R.pending, 0);
    assert_int_equal(pf_recent_take_chain(&R, a, 0), -1);
    pf_recent_by_realloc(&R, a);
    pf_recent_by_realloc(&R, a);            /* said twice, counted once */
    assert_int_equal(R.pending, 1);
    assert_int_equal(pf_recent_take_chain(&R, a, 0), 4);
    assert_int_equal(R.pending, 0);
    assert_int_equal(pf_recent_take_chain(&R, a, 0), -1);      /* continued once */
    pf_recent_freed(&R, c, site, 9);
    pf_recent_by_realloc(&R, c);
    assert_int_equal(R.pending, 1);
    pf_recent_freed(&R, c, site, -1);       /* its address freed again: the pending block is gone */
    assert_int_equal(R.pending, 0);
    pf_recent_freed(&R, c, site, 11);       /* a realloc's COPY proves it without the FREE's mark */
    assert_int_equal(R.pending, 0);
    assert_int_equal(pf_recent_take_chain(&R, c, 0), -1);
    assert_int_equal(pf_recent_take_chain(&R, c, 1), 11);
    pf_recent_freed(&R, c, site, 12);
    pf_recent_by_realloc(&R, c);
    assert_int_equal(pf_recent_take_chain(&R, c, 1), 12);       /* proven and marked: the count drops */
    assert_int_equal(R.pending, 0);
    /* many pending, then overwritten by other blocks taking their slots: the count ends at what is left */
    uint64_t marked = 0;
    for (uint64_t i = 0; i < 3 * PF_RECENT_FREES; i++) {
        uint64_t key = 0x7f1000000000ull + i * 48;
        pf_recent_freed(&R, key, site, i % 3 == 0 ? (int64_t)i : -1);
        if (i % 2 == 0)
            pf_recent_by_realloc(&R, key);
    }
    for (uint32_t i = 0; i < PF_RECENT_FREES; i++) {
        int pending = R.slots[i].key1 && R.slots[i].dst_copy1 && R.slots[i].by_realloc;
        marked += (uint64_t)pending;
        assert_int_equal((R.pending_bits[i / 64] >> (i % 64)) & 1, pending);   /* each slot's bit says it */
    }
    assert_true(marked > 0);
    assert_int_equal(R.pending, marked);
    pf_recent_free_table(&R);
}

/* Neighbouring addresses get neighbouring slots (a run of frees stores into neighbouring cache lines); two
 * processes' blocks at one address, and blocks a block apart, do not share a slot; a block whose slot a
 * later free took is not found, and its neighbours still are. */
static void test_recent_frees_slots_by_address(void **state)
{
    (void)state;
    const uint64_t base = 0x7f00deadb000ull;
    for (uint64_t g = 1; g < 64; g++)
        assert_int_equal(pf_recent_slot(base + 16 * g), (pf_recent_slot(base) + g) & (PF_RECENT_FREES - 1));
    assert_int_not_equal(pf_recent_slot(base), pf_recent_slot(base | (1ull << 48)));
    assert_int_not_equal(pf_recent_slot(base), pf_recent_slot(base + 1024));
    size_t used = 0;
    uint8_t *seen = calloc(PF_RECENT_FREES, 1);
    for (uint64_t blk = 0; blk < 512; blk++) {     /* 512 pages' first objects: spread, not piled up */
        uint32_t s = pf_recent_slot(base + blk * 4096);
        used += !seen[s];
        seen[s] = 1;
    }
    free(seen);
    assert_true(used > 480);
    pf_recent_frees_t R;
    pf_recent_init(&R);
    pf_recent_freed(&R, base, (alloc_site_t){1, 0}, -1);
    pf_recent_freed(&R, base + 16, (alloc_site_t){2, 0}, -1);
    assert_int_equal(pf_recent_find(&R, base)->site.line, 1);
    assert_int_equal(pf_recent_find(&R, base + 16)->site.line, 2);
    assert_null(pf_recent_find(&R, base + 32));
    uint64_t other = base + 1024;   /* find a block in another 1 KiB block with base's slot */
    while (pf_recent_slot(other) != pf_recent_slot(base))
        other += 16;
    pf_recent_freed(&R, other, (alloc_site_t){3, 0}, -1);
    assert_null(pf_recent_find(&R, base));
    assert_int_equal(pf_recent_find(&R, other)->site.line, 3);
    assert_int_equal(pf_recent_find(&R, base + 16)->site.line, 2);
    pf_recent_free_table(&R);
}

/* A copy into a block that a realloc then grows in place (its FREE marked by-realloc, the next ALLOC at its
 * address): the copy's destination lives on to the end; the same FREE unmarked ends it there. Through the
 * whole sweep, so the pending count (no scattered read when none is pending) must let it through. */
static void test_realloc_in_place_continues_the_copys_destination(void **state)
{
    (void)state;
    for (int marked = 0; marked < 2; marked++) {
        builder_t b;
        b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
        b_chunk(&b, 1);
        b_code(&b, 1, "/s/g.py", "f", 1);
        uint32_t l1 = 1;
        b_alloc(&b, 1, 0x1000, 100, 100, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l1);
        b_alloc(&b, 2, 0x5000, 100, 100, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l1);
        b_copy(&b, 3, 1, 0x1000, 0x5000, 100, 1);
        pf_rec_free_t f = {1000, 0x1000};
        b_rec(&b, PF_REC_FREE, PF_DOMAIN_MALLOC | (marked ? PF_FREE_BY_REALLOC : 0), &f, sizeof f);
        b_alloc(&b, 1001, 0x1000, 200, 200, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l1);
        b_alloc(&b, 1000000000, 0x9000, 8, 8, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l1);
        pf_model_t *m = load_ok(b_save(&b, marked ? "grown.pflow" : "replaced.pflow", 0));
        assert_int_equal(m->n_flows, 1);
        assert_true(m->flows[0].dst_known);
        if (marked)
            assert_true(m->flows[0].dst_life_s > 0.9);
        else
            assert_true(m->flows[0].dst_life_s < 1e-5);
        pf_model_free(m);
    }
}

/* A buffer grown in place by realloc 12 times, each move's FREE marked by-realloc and its new block
 * recorded 10 us later, or 2 ms later at every fourth (a thread preempted in the realloc, as on a loaded
 * machine), beside 100 small objects of line 2 a step: kept all along, or temporaries freed at once (work
 * that comes and goes). */
static pf_model_t *grown_in_place_late(int temporaries)
{
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/app/g.py", "grow", 1);
    b_code(&b, 2, "/app/g.py", "grow", 2);
    uint32_t buffer_line = 1, other_line = 2;
    uint64_t size = 65536, t = 1000;   /* steps of 64 KiB: more than 8 sampling means in all */
    b_alloc(&b, t, 0x100000, size, size, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &buffer_line);
    for (int i = 0; i < 12; i++) {
        if (i)
            b_chunk(&b, 1);     /* a step's records take a sixth of a chunk */
        for (int k = 0; k < 100; k++) {
            uint64_t addr = 0x10000000 + (uint64_t)(i * 100 + k) * 64;
            t += 300000;
            b_alloc(&b, t, addr, 32, 32, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &other_line);
            if (temporaries)
                b_free(&b, t + 1000, addr);
        }
        t += 1000;
        pf_rec_free_t f = {t, 0x100000};
        b_rec(&b, PF_REC_FREE, PF_DOMAIN_MALLOC | PF_FREE_BY_REALLOC, &f, sizeof f);
        size += 65536;
        t += i % 4 == 3 ? 2000000 : 10000;
        b_alloc(&b, t, 0x100000, size, size, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &buffer_line);
    }
    return load_ok(b_save(&b, temporaries ? "grown_late_work.pflow" : "grown_late_kept.pflow", 0));
}

/* The moves are the buffer's growth, not work that came and went: the objects kept all along are data
 * built once (spread 0, no leak), however long each realloc took. With a gap of 1 ms at most, they read as
 * a leak. */
static void test_realloc_in_place_late_is_still_growth(void **state)
{
    (void)state;
    pf_model_t *m = grown_in_place_late(0);
    const pf_line_t *kept = find_line(m, "/app/g.py", 2);
    assert_non_null(kept);
    assert_int_equal(kept->s.leak.survivors, 1200);
    if (kept->s.leak.spread > 0.05 || kept->s.leak.likelihood > 0)
        fail_msg("the kept objects read as accumulating: spread %.3f, likelihood %.3f", kept->s.leak.spread,
                 kept->s.leak.likelihood);
    assert_int_equal(m->frees_unseen, 0);
    pf_model_free(m);
}

/* Its twin: the same buffer grown while temporaries come and go is a leak, each piece it gained a survivor
 * at its own time. With a gap of 1 ms at most, the chain broke at every move and the buffer was one
 * survivor, no leak. */
static void test_realloc_in_place_late_growth_can_leak(void **state)
{
    (void)state;
    pf_model_t *m = grown_in_place_late(1);
    const pf_line_t *buffer = find_line(m, "/app/g.py", 1);
    assert_non_null(buffer);
    assert_true(buffer->s.leak.survivors >= PF_LEAK_MIN_SURVIVORS);
    if (buffer->s.leak.spread < 0.5 || buffer->s.leak.likelihood < 0.99)
        fail_msg("the growing buffer is no leak: %u survivors, spread %.3f, likelihood %.3f (p %g rate %g mean %llu)",
                 buffer->s.leak.survivors, buffer->s.leak.spread, buffer->s.leak.likelihood, buffer->s.leak.p_value, buffer->s.leak.rate, (unsigned long long)m->mean_sample_bytes);
    pf_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events_sorted_by_time_then_file_order),
        cmocka_unit_test(test_peak_shares_across_many_peaks),
        cmocka_unit_test(test_events_out_of_order_are_sorted),
        cmocka_unit_test(test_realloc_edge_starts_at_the_old_blocks_line),
        cmocka_unit_test(test_child_corrupt_midway_keeps_what_came_before),
        cmocka_unit_test(test_timeline_bucket_edges),
        cmocka_unit_test(test_timeline_keeps_every_peak),
        cmocka_unit_test(test_timeline_carries_values),
        cmocka_unit_test(test_timeline_independent_of_end),
        cmocka_unit_test(test_reused_address_releases_the_unseen_block),
        cmocka_unit_test(test_realloc_in_place_late_is_still_growth),
        cmocka_unit_test(test_realloc_in_place_late_growth_can_leak),
        cmocka_unit_test(test_child_finalization_on_root_clock),
        cmocka_unit_test(test_child_exec_ends_its_image),
        cmocka_unit_test(test_peak_share_at_the_programs_peak),
        cmocka_unit_test(test_walk_skips_zero_chunks_and_stops_at_zero_headers),
        cmocka_unit_test(test_corruption_named_with_offset),
        cmocka_unit_test(test_interned_stacks_resolve_anywhere),
        cmocka_unit_test(test_short_allocs_count_as_allocs),
        cmocka_unit_test(test_lines_from_lasti),
        cmocka_unit_test(test_streams_merge_in_time_then_file_order),
        cmocka_unit_test(test_library_stack_by_starter_then_own_row),
        cmocka_unit_test(test_recent_frees_count_pending_continuations),
        cmocka_unit_test(test_recent_frees_slots_by_address),
        cmocka_unit_test(test_realloc_in_place_continues_the_copys_destination),
    };
    return cmocka_run_group_tests(tests, writer_setup, writer_teardown);
}
