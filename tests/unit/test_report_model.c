/* Unit tests for report/: the reader's validation, the model's sweep (frees, peak shares, live at exit,
 * finalization, attribution, copies and verdicts), and the renderers (JSON escaping checked by a real JSON
 * parser, text width). Merged processes and the call tree: test_report_processes.c. Profiles are built by
 * test_report_writer.h. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "pf_format.h"
#include "pf_model_int.h"
#include "pf_reader_int.h"
#include "pf_report_int.h"
#include "pf_report.h"
#include "pf_symbols_int.h"
#include <dlfcn.h>

#include "test_report_writer.h"
#include "test_report_render.h"

/* ---- the model ---- */

static void test_frees_peak_and_live_at_exit(void **state)
{
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 100);
    b_chunk(&b, 100);
    b_code(&b, 1, "/app/app.py", "f", 10);
    b_code(&b, 2, "/app/app.py", "g", 20);
    uint32_t f = 1, g = 2;
    b_alloc(&b, 1000, 0x1000, 1000, 1000, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &f);
    b_alloc(&b, 2000, 0x2000, 500, 500, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &g);
    b_free(&b, 3000, 0x1000);
    b_alloc(&b, 4000, 0x3000, 200, 200, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &f);
    b_free(&b, 5000, 0x9999);   /* unknown address: ignored */
    pf_model_t *m = load_ok(b_save(&b, "peak.pflow", 0));
    assert_int_equal((int)m->total.peak_bytes, 1500);
    const pf_line_t *l10 = find_line(m, "/app/app.py", 10), *l20 = find_line(m, "/app/app.py", 20);
    assert_int_equal((int)l10->s.alloc_bytes, 1200);
    assert_int_equal((int)l10->s.python_bytes, 1000);
    assert_int_equal((int)l10->s.native_bytes, 200);
    assert_int_equal((int)l10->s.peak_bytes, 1000);    /* its share at the peak (t=2000) */
    assert_int_equal((int)l20->s.peak_bytes, 500);
    assert_int_equal((int)l10->s.leaked_bytes, 200);
    assert_int_equal((int)l20->s.leaked_bytes, 500);
    assert_int_equal((int)m->total.leaked_bytes, 700);
    /* the timeline keeps each bucket's maximum: the 1500 peak is there */
    double top = 0;
    for (int i = 0; i < PF_TIMELINE_POINTS; i++)
        top = m->total.timeline[i] > top ? m->total.timeline[i] : top;
    assert_int_equal((int)top, 1500);
    assert_int_equal((int)m->argc, 2);
    assert_string_equal(m->argv[0], "app.py");
    pf_model_free(m);
}

static void test_finalization_keeps_objects_live(void **state)
{
    builder_t b;
    b_init(&b, PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/app/app.py", "<module>", 3);
    uint32_t c = 1;
    b_alloc(&b, 10, 0x5000, 4000, 4000, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &c);
    b_alloc(&b, 20, 0x6000, 4000, 4000, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &c);
    b_free(&b, 30, 0x6000);                 /* freed by the program */
    b_mark(&b, 40, PF_MARK_FINALIZING);
    b_free(&b, 50, 0x5000);                 /* freed by interpreter shutdown */
    pf_model_t *m = load_ok(b_save(&b, "fin.pflow", 0));
    assert_int_equal((int)find_line(m, "/app/app.py", 3)->s.leaked_bytes, 4000);
    pf_model_free(m);
}

static void test_attribution(void **state)
{
    builder_t b;
    b_init(&b, PF_HDR_ROOT, 1);
    b_chunk(&b, 7);
    b_code(&b, 1, "/usr/lib/python3.11/json/decoder.py", "decode", 300);
    b_code(&b, 2, "/home/me/app.py", "main", 7);
    b_code(&b, 3, "/usr/lib/python3/dist-packages/numpy/core/numeric.py", "ones", 150);
    b_code(&b, 4, "<string>", "<lambda>", 1);
    uint32_t lib_then_user[] = {1, 3, 2};
    b_alloc(&b, 1, 0x100, 10, 10, PF_DOMAIN_MALLOC, PF_ALLOC_SAMPLED, 3, lib_then_user);
    uint32_t only_lib[] = {3, 1};
    b_alloc(&b, 2, 0x200, 20, 20, PF_DOMAIN_MALLOC, PF_ALLOC_SAMPLED, 2, only_lib);
    b_alloc(&b, 3, 0x300, 30, 30, PF_DOMAIN_MALLOC, PF_ALLOC_SAMPLED | PF_ALLOC_NO_PYSTATE, 0, NULL);
    b_alloc(&b, 4, 0x400, 40, 40, PF_DOMAIN_PYRAW, PF_ALLOC_SAMPLED, 0, NULL);
    uint32_t generated[] = {4, 1, 2};       /* <string> code made by a library: not the user's line */
    b_alloc(&b, 5, 0x500, 50, 50, PF_DOMAIN_PYOBJ, PF_ALLOC_SAMPLED, 3, generated);
    b_code(&b, 5, "<frozen site>", "addpackage", 192);
    uint32_t pth_line[] = {4, 5};           /* site exec()s a .pth file's import line: site's, not the user's */
    b_alloc(&b, 6, 0x600, 60, 60, PF_DOMAIN_PYOBJ, PF_ALLOC_SAMPLED, 2, pth_line);
    b_code(&b, 6, "<__array_function__ internals>", "concatenate", 180);
    uint32_t dispatch[] = {6, 2};           /* numpy 1.24 wraps its functions in generated code: the user's line */
    b_alloc(&b, 7, 0x700, 70, 70, PF_DOMAIN_MALLOC, PF_ALLOC_SAMPLED, 2, dispatch);
    b_code(&b, 7, "<string>", "<module>", 1);
    uint32_t dash_c[] = {4, 7};             /* python -c: the generated code is all the user has */
    b_alloc(&b, 8, 0x800, 80, 80, PF_DOMAIN_PYOBJ, PF_ALLOC_SAMPLED, 2, dash_c);
    b_code(&b, 8, "/home/me/app.py", "<listcomp>", 7);
    uint32_t comprehension[] = {8, 2};      /* a comprehension's own code (3.8-3.11): the same row, named main */
    b_alloc(&b, 9, 0x900, 90, 90, PF_DOMAIN_PYOBJ, PF_ALLOC_SAMPLED, 2, comprehension);
    b_code(&b, 9, "/home/me/app.py", "<genexpr>", 30);
    b_code(&b, 10, "/home/me/app.py", "run", 30);
    uint32_t genexpr[] = {9, 10}, run_line = 10;    /* the nested code seen first, then its enclosing function */
    b_alloc(&b, 10, 0xA00, 100, 100, PF_DOMAIN_PYOBJ, PF_ALLOC_SAMPLED, 2, genexpr);
    b_alloc(&b, 11, 0xB00, 110, 110, PF_DOMAIN_PYOBJ, PF_ALLOC_SAMPLED, 1, &run_line);
    b_code(&b, 11, "/home/me/app.py", "<genexpr>", 40);
    b_code(&b, 12, "/home/me/app.py", "consume", 44);
    uint32_t run_elsewhere[] = {11, 12};    /* a generator made at line 40, consumed from line 44: its own */
    b_alloc(&b, 12, 0xC00, 120, 120, PF_DOMAIN_PYOBJ, PF_ALLOC_SAMPLED, 2, run_elsewhere);
    pf_model_t *m = load_ok(b_save(&b, "attr.pflow", 0));
    const pf_line_t *app7 = find_line(m, "/home/me/app.py", 7), *app30 = find_line(m, "/home/me/app.py", 30);
    assert_int_equal((int)app7->s.alloc_bytes, 10 + 50 + 70 + 90);
    assert_string_equal(pf_model_str(m, app7->function), "main");
    assert_int_equal((int)app30->s.alloc_bytes, 100 + 110);
    assert_string_equal(pf_model_str(m, app30->function), "run");
    /* nested code run from its own line is its caller's function too (as 3.12 inlines comprehensions) */
    assert_null(lookup_func(m, "/home/me/app.py", "<listcomp>"));
    assert_int_equal((int)lookup_func(m, "/home/me/app.py", "main")->s.alloc_bytes, 10 + 50 + 70 + 90);
    assert_int_equal((int)lookup_func(m, "/home/me/app.py", "run")->s.alloc_bytes, 100 + 110);
    const pf_line_t *app40 = find_line(m, "/home/me/app.py", 40);
    assert_string_equal(pf_model_str(m, app40->function), "<genexpr>");
    assert_int_equal((int)lookup_func(m, "/home/me/app.py", "<genexpr>")->s.alloc_bytes, 120);
    assert_null(lookup_line(m, "<__array_function__ internals>", 180));
    assert_int_equal((int)find_line(m, "<string>", 1)->s.alloc_bytes, 80);
    assert_int_equal((int)find_line(m, "<frozen site>", 192)->s.alloc_bytes, 60);
    assert_int_equal((int)find_line(m, "/usr/lib/python3/dist-packages/numpy/core/numeric.py", 150)->s.alloc_bytes, 20);
    assert_int_equal((int)find_line(m, "[native thread]", 0)->s.alloc_bytes, 30);
    assert_int_equal((int)find_line(m, "[python startup]", 0)->s.alloc_bytes, 40);
    /* a bracketed row says what it holds where a line would show its source */
    char *text = render_text(m, 240);
    if (!strstr(text, "(interpreter start-up: site and .pth imports, codecs)\n") ||
        !strstr(text, "(threads that never ran Python: BLAS pools, C extensions' threads)\n"))
        fail_msg("bracketed rows:\n%s", strstr(text, "\n[python startup]") ? strstr(text, "\n[python startup]") : text);
    free(text);
    pf_model_free(m);
}

/* The folded tree's path of node c, outermost first, as "file:line/..." into out. */
static void node_path(const pf_model_t *m, int32_t c, char *out, size_t size)
{
    char tail[512] = "";
    out[0] = '\0';
    for (; c >= 0; c = m->nodes[c].parent) {
        snprintf(tail, sizeof tail, "%s", out);
        const char *file = pf_model_str(m, m->nodes[c].file);
        snprintf(out, size, "%s:%d%s%s", strrchr(file, '/') + 1, m->nodes[c].line, tail[0] ? "/" : "", tail);
    }
}

/* Stacks in turn that share their outer frames with the stack before them, or only some, or none, or
 * differ only outermost: the sweep reuses the last walk's steps and the trees' last paths for the frames
 * two stacks share (pf_sweep_callpath.c, pf_model_calltree.c), and every allocation must still be on its
 * own path, with the bytes of exactly the allocations made there. */
static void test_call_paths_sharing_outer_frames(void **state)
{
    (void)state;
    builder_t b;
    b_init(&b, PF_HDR_ROOT | PF_HDR_EXACT, 1);
    b_chunk(&b, 7);
    static const char *files[] = {"/app/a.py", "/app/b.py", "/app/c.py", "/app/d.py", "/app/e.py", "/app/x.py"};
    for (uint32_t i = 0; i < 6; i++)
        b_code(&b, i + 1, files[i], "f", 10 * (int)(i + 1));
    /* innermost first; A=1 B=2 C=3 D=4 E=5 X=6 */
    static const struct {
        int n;
        uint32_t codes[4];
        const char *path;
    } stacks[] = {
        {3, {3, 2, 1}, "a.py:10/b.py:20/c.py:30"}, {3, {4, 2, 1}, "a.py:10/b.py:20/d.py:40"},
        {3, {3, 5, 1}, "a.py:10/e.py:50/c.py:30"}, {3, {3, 2, 1}, "a.py:10/b.py:20/c.py:30"},
        {3, {3, 2, 6}, "x.py:60/b.py:20/c.py:30"}, {2, {2, 1}, "a.py:10/b.py:20"},
        {4, {4, 3, 2, 1}, "a.py:10/b.py:20/c.py:30/d.py:40"}, {1, {1}, "a.py:10"},
        {4, {4, 3, 2, 1}, "a.py:10/b.py:20/c.py:30/d.py:40"}, {3, {3, 2, 6}, "x.py:60/b.py:20/c.py:30"},
    };
    enum { N = sizeof stacks / sizeof stacks[0] };
    for (int i = 0; i < N; i++)
        b_alloc(&b, (uint64_t)i + 1, 0x1000 + 0x100 * (uint64_t)i, 1u << i, 1u << i, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT,
                stacks[i].n, stacks[i].codes);
    pf_model_t *m = load_ok(b_save(&b, "sharedpaths.pflow", 0));
    for (int i = 0; i < N; i++) {
        unsigned want = 0;
        for (int j = 0; j < N; j++)
            want += strcmp(stacks[j].path, stacks[i].path) == 0 ? 1u << j : 0;
        int found = 0;
        for (size_t c = 0; c < m->n_nodes; c++) {
            char path[512];
            node_path(m, (int32_t)c, path, sizeof path);
            if (strcmp(path, stacks[i].path) != 0)
                continue;
            found++;
            if ((unsigned)m->nodes[c].self_alloc != want)
                fail_msg("%s holds %.0f bytes, %u expected", path, m->nodes[c].self_alloc, want);
        }
        if (found != 1)
            fail_msg("%d nodes with the path %s", found, stacks[i].path);
    }
    pf_model_free(m);
}

static void test_sampled_estimates_and_counts(void **state)
{
    builder_t b;
    b_init(&b, PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/a.py", "f", 1);
    uint32_t c = 1;
    for (int i = 0; i < 10; i++)  /* 10 samples of 100-byte objects, each standing for 1000 bytes */
        b_alloc(&b, (uint64_t)i, 0x1000 + (uint64_t)i * 128, 100, 1000, PF_DOMAIN_PYOBJ, PF_ALLOC_SAMPLED, 1, &c);
    pf_model_t *m = load_ok(b_save(&b, "est.pflow", 0));
    const pf_line_t *l = find_line(m, "/a.py", 1);
    assert_int_equal((int)l->s.alloc_bytes, 10000);
    assert_int_equal((int)(l->s.alloc_count + 0.5), 100);
    pf_model_free(m);
}

static void test_copies_and_verdicts(void **state)
{
    builder_t b;
    b_init(&b, PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/c.py", "<module>", 1);
    b_code(&b, 2, "/c.py", "<module>", 2);
    b_code(&b, 3, "/c.py", "<module>", 3);
    uint32_t l1 = 1, l2 = 2;
    b_alloc(&b, 1, 0x10000, 4096, 4096, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l1);
    b_alloc(&b, 2, 0x20000, 4096, 4096, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l2);
    b_alloc(&b, 3, 0x30000, 4096, 4096, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l2);
    b_copy(&b, 4, 7, 0x20000, 0x10000, 4096, 3);
    b_copy(&b, 5, 8, 0x20000 + 32, 0x10000 + 32, 64, 3);  /* a piece inside both objects: no candidate */
    b_copy(&b, 6, 9, 0x30000 + 16, 0x10000 + 16, 4000, 3);    /* fills both objects but 16-byte headers */
    b_alloc(&b, 6, 0x40000, 4200, 4200, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l2);
    b_copy(&b, 6, 11, 0x40000, 0x10000, 4096, 3);         /* into a longer value (a concatenation): no candidate */
    b_verdict(&b, 7, 7, PF_VERDICT_REDUNDANT);
    b_verdict(&b, 8, 8, PF_VERDICT_REDUNDANT);            /* as a runtime before pf_copy_rule.h judged it: ignored */
    b_verdict(&b, 9, 9, PF_VERDICT_MODIFIED);
    b_verdict(&b, 9, 11, PF_VERDICT_REDUNDANT);           /* as a runtime before pf_copy_duplicates judged it */
    b_verdict(&b, 10, 99, PF_VERDICT_REDUNDANT);          /* unknown copy: ignored */
    pf_model_t *m = load_ok(b_save(&b, "copy.pflow", 0));
    const pf_line_t *at = find_line(m, "/c.py", 3);
    assert_int_equal((int)at->s.copy_bytes, 4096 + 64 + 4000 + 4096);
    assert_int_equal((int)at->s.copy_count, 4);
    /* the redundant share of the judged candidates' bytes, of the candidates' bytes (none of the piece's) */
    assert_int_equal((int)(at->s.redundant_copy_bytes + 0.5), 4096);
    assert_int_equal((int)(m->flows[0].candidate_bytes + 0.5), 4096 + 4000);
    assert_int_equal((int)m->n_flows, 1);
    const pf_flow_t *f = &m->flows[0];
    assert_int_equal(m->lines[f->src_line].line, 1);
    assert_int_equal(m->lines[f->dst_line].line, 2);
    assert_int_equal(f->judged, 2);
    assert_int_equal(f->redundant, 1);
    pf_model_free(m);
}


/* 1 when the dot text has an edge whose label ends with label_end and that is drawn red. */
static int dot_edge_red(const char *dot, const char *label_end)
{
    const char *at = strstr(dot, label_end);
    if (!at)
        return 0;
    const char *eol = strchr(at, '\n'), *red = strstr(at, "color=red");
    return red && (!eol || red < eol);
}

/* A verdict stands on PF_COPY_MIN_JUDGED judged copies, on all of its edge's, or on three quarters of them:
 * 3 judged of 40 copies is no verdict (no redundant bytes extrapolated over the 37 others); 10 of 40 is;
 * 8 of 10 is, 7 of 10 is not. */
static pf_model_t *copies_judged(int copies, int judged)
{
    builder_t b;
    b_init(&b, PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/j.py", "<module>", 1);
    b_code(&b, 2, "/j.py", "<module>", 2);
    uint32_t src = 1, dst = 2;
    b_alloc(&b, 1, 0x10000, 4096, 4096, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &src);
    for (int i = 0; i < copies; i++) {
        b_alloc(&b, 2 + (uint64_t)i, 0x100000 + (uint64_t)i * 0x2000, 4096, 4096, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &dst);
        b_copy(&b, 2 + (uint64_t)i, 100 + (uint64_t)i, 0x100000 + (uint64_t)i * 0x2000, 0x10000, 4096, 2);
    }
    for (int i = 0; i < judged; i++)
        b_verdict(&b, 50 + (uint64_t)i, 100 + (uint64_t)i, PF_VERDICT_REDUNDANT);
    return load_ok(b_save(&b, "judged.pflow", 0));
}

static void test_verdict_needs_enough_judged(void **state)
{
    (void)state;
    pf_model_t *m = copies_judged(40, 3);
    assert_int_equal((int)m->n_flows, 1);
    assert_false(pf_report_flow_redundant(&m->flows[0]));
    assert_int_equal((int)m->total.redundant_copy_bytes, 0);
    pf_model_free(m);
    m = copies_judged(40, PF_COPY_MIN_JUDGED);
    assert_true(pf_report_flow_redundant(&m->flows[0]));
    assert_int_equal((int)(m->total.redundant_copy_bytes + 0.5), 40 * 4096);
    pf_model_free(m);
    m = copies_judged(10, 8);
    assert_true(pf_report_flow_redundant(&m->flows[0]));
    assert_int_equal((int)(m->total.redundant_copy_bytes + 0.5), 10 * 4096);
    pf_model_free(m);
    m = copies_judged(10, 7);
    assert_false(pf_report_flow_redundant(&m->flows[0]));
    assert_int_equal((int)m->total.redundant_copy_bytes, 0);
    pf_model_free(m);
}

/* The header's redundant total counts copies no finding lists: a worker's (started by the user's line, in
 * library code) and a library line's. The findings say how much, and which line started the worker. */
static void test_unlisted_redundant_copies(void **state)
{
    (void)state;
    builder_t b;
    b_init(&b, PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_thread(&b, 1, 1, 0xA0);
    b_code(&b, 1, "/app.py", "<module>", 5);
    b_code(&b, 2, "/app.py", "<module>", 6);
    b_code(&b, 3, "/usr/lib/python3.11/copy.py", "deepcopy", 128);
    b_code(&b, 4, "/app.py", "<module>", 7);
    uint32_t app5 = 1, app6 = 2, library = 3, app7 = 4;
    b_spawn(&b, 2, PF_SPAWN_THREAD, 0xB0, 1, 1, &app5);
    b_alloc(&b, 3, 0x10000, 4096, 4096, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &app6);
    b_alloc(&b, 4, 0x20000, 4096, 4096, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &app6);
    b_copy(&b, 5, 1, 0x20000, 0x10000, 4096, app6);                 /* the user's own: listed */
    b_alloc(&b, 5, 0x60000, 1024, 1024, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &app7);
    b_alloc(&b, 5, 0x70000, 1024, 1024, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &app6);
    b_copy(&b, 5, 4, 0x60000, 0x70000, 1024, app7);                 /* into a Python object (bytes) */
    b_verdict(&b, 19, 4, PF_VERDICT_REDUNDANT);
    b_alloc(&b, 6, 0x30000, 2048, 2048, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &library);
    b_alloc(&b, 6, 0x80000, 2048, 2048, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &app6);
    b_copy(&b, 7, 2, 0x30000, 0x80000, 2048, library);              /* a library line's */
    b_verdict(&b, 20, 1, PF_VERDICT_REDUNDANT);
    b_verdict(&b, 21, 2, PF_VERDICT_REDUNDANT);
    b_chunk(&b, 2);                                 /* the worker app.py:5 started, in library code */
    b_thread(&b, 8, 2, 0xB0);
    b_alloc(&b, 9, 0x40000, 8192, 8192, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &library);
    b_alloc(&b, 10, 0x50000, 8192, 8192, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &library);
    b_copy(&b, 11, 3, 0x50000, 0x40000, 8192, library);
    b_verdict(&b, 22, 3, PF_VERDICT_REDUNDANT);
    pf_model_t *m = load_ok(b_save(&b, "unlisted.pflow", 0));
    assert_int_equal((int)(m->total.redundant_copy_bytes + 0.5), 4096 + 1024 + 2048 + 8192);
    char *text = render_text(m, 120);
    const char *section = strstr(text, "\nredundant copies");
    if (!section || !strstr(section, "\n  app.py:6  4.00 KiB in 1 copy of data from line 6") ||
        !strstr(section, "\n      fix: share one buffer (numpy: np.asarray(x) or x itself, not np.array(x) or x.copy())\n") ||
        !strstr(section, "\n  app.py:7  1.00 KiB in 1 copy of data from line 6") ||
        !strstr(section, "\n      fix: share one buffer (bytes, bytearray: memoryview(x) or x itself, not bytes(x) or x[:])\n") ||
        !strstr(section, "\n  and 8.00 KiB by threads and processes your lines started, in library code (most: app.py:5)\n") ||
        !strstr(section, "\n  and 2.00 KiB outside your code (library lines, imports)\n"))
        fail_msg("redundant copies:\n%s", section ? section : text);
    free(text);
    text = render_html(m);
    const char *html = strstr(text, "<div class=\"finding\" id=\"unlisted-copies\">");
    if (!html || !strstr(html, "8.0 KiB by threads and processes your lines started, in library code (most: app.py:5); "
                               "2.0 KiB outside your code"))
        fail_msg("HTML:\n%s", html ? html : text);
    free(text);
    text = render_dot(m);     /* red either way; the worker's not called the line's to share */
    if (!dot_edge_red(text, "at app.py:5\\nREDUNDANT, by a thread or process it started\"") ||
        !dot_edge_red(text, "at app.py:6\\nREDUNDANT: share the buffer\""))
        fail_msg("dot:\n%s", text);
    free(text);
    text = render_json(m);
    if (!strstr(text, "\"redundant_bytes\":8192,\"redundant_count\":1,\"started\":true,"))
        fail_msg("JSON flows:\n%s", strstr(text, "\"flows\""));
    free(text);
    pf_model_free(m);
}

/* A redundant load pair: the first access's Python frames (n_first of them, 0: they could not be read), and
 * the repeat's one frame. */
static void b_load_pair(builder_t *b, uint64_t t, uint64_t addr, const uint32_t *first, int n_first, uint32_t repeat)
{
    unsigned char tmp[256];
    pf_rec_access_pair_t a = {.t_ns = t, .addr = addr, .credited_bytes = 8, .len = 8, .flags = PF_ACCESS_REDUNDANT,
                              .n_py_first = (uint16_t)n_first, .n_py_repeat = 1};
    memcpy(tmp, &a, sizeof a);
    size_t at = sizeof a;
    for (int i = 0; i < n_first; i++, at += sizeof(pf_rec_pyframe_t))
        memcpy(tmp + at, &(pf_rec_pyframe_t){first[i], 0}, sizeof(pf_rec_pyframe_t));
    memcpy(tmp + at, &(pf_rec_pyframe_t){repeat, 0}, sizeof(pf_rec_pyframe_t));
    b_rec(b, PF_REC_ACCESS_PAIR, PF_ACCESS_LOAD, tmp, at + sizeof(pf_rec_pyframe_t));
}

/* The category a redundant pair suggests: on two lines, a native call repeated; on one line, by what the line
 * does; a first access whose frames could not be read (a busy machine) is judged by its repeat alone. */
static void test_redundancy_categories(void **state)
{
    (void)state;
    builder_t b;
    b_init(&b, PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/w.py", "slow", 14);
    b_code(&b, 2, "/w.py", "slow", 20);
    uint32_t l14 = 1, l20 = 2;
    b_load_pair(&b, 1, 0x1000, &l14, 1, l14);      /* one line: loop-invariant computation */
    b_load_pair(&b, 2, 0x1008, &l20, 1, l14);      /* another line first: repeated native call */
    b_load_pair(&b, 3, 0x1010, NULL, 0, l14);      /* first unknown: as the first group */
    pf_model_t *m = load_ok(b_save(&b, "categories.pflow", 0));
    assert_int_equal((int)m->n_redundancies, 3);
    for (size_t i = 0; i < m->n_redundancies; i++) {
        const pf_redundancy_t *r = &m->redundancies[i];
        const char *want = r->first_line >= 0 && m->lines[r->first_line].line == 20
                               ? "repeated native call with the same arguments" : "loop-invariant computation";
        assert_string_equal(r->category, want);
        assert_non_null(r->fix);
    }
    pf_model_free(m);
}

/* A copy between the interiors of large buffers (a slice) has both ends; once the source is freed, a copy
 * from its old interior has none. */
static void test_copy_interior_ends(void **state)
{
    (void)state;
    builder_t b;
    b_init(&b, PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/s.py", "<module>", 1);
    b_code(&b, 2, "/s.py", "<module>", 2);
    b_code(&b, 3, "/s.py", "<module>", 3);
    b_code(&b, 4, "/s.py", "<module>", 4);
    uint32_t l1 = 1, l2 = 2;
    b_alloc(&b, 1, 0x100000, 1 << 20, 1 << 20, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l1);
    b_alloc(&b, 2, 0x300000, 1 << 20, 1 << 20, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l2);
    b_copy(&b, 3, 7, 0x300000 + 8192, 0x100000 + 4096, 4096, 3);
    b_free(&b, 4, 0x100000);
    b_copy(&b, 5, 8, 0x300000 + 16384, 0x100000 + 4096, 4096, 4);
    pf_model_t *m = load_ok(b_save(&b, "interior.pflow", 0));
    assert_int_equal((int)m->n_flows, 2);
    for (size_t i = 0; i < m->n_flows; i++) {
        const pf_flow_t *f = &m->flows[i];
        int at = m->lines[f->at_line].line;
        assert_int_equal(m->lines[f->dst_line].line, 2);
        if (at == 3)
            assert_int_equal(m->lines[f->src_line].line, 1);
        else
            assert_int_equal(f->src_line, -1);
    }
    pf_model_free(m);
}

static void expect_error(const char *path, const char *needle);

/* --watch=copies: a watched write decides its copy's verdict (modified, evidence watch, with the writer's
 * line); the compare-at-free verdict that follows for the same copy is ignored; an unknown copy id and a
 * copy write with frame counts past its length are handled. */
static void test_copy_write_decides(void **state)
{
    (void)state;
    builder_t b;
    b_init(&b, PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/w.py", "<module>", 1);
    b_code(&b, 2, "/w.py", "<module>", 2);
    b_code(&b, 3, "/w.py", "<module>", 3);
    b_code(&b, 4, "/w.py", "<module>", 4);
    uint32_t l1 = 1, l2 = 2;
    b_alloc(&b, 1, 0x10000, 4096, 4096, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l1);
    b_alloc(&b, 2, 0x20000, 4096, 4096, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &l2);
    b_copy(&b, 3, 7, 0x20000, 0x10000, 4096, 3);
    b_copy(&b, 4, 8, 0x20000, 0x10000, 4096, 3);
    b_copy_write(&b, 5, 7, 0x10000, 0, 4);                 /* the source written at line 4 */
    b_verdict(&b, 6, 7, PF_VERDICT_REDUNDANT);              /* later, and superseded */
    b_verdict(&b, 7, 8, PF_VERDICT_REDUNDANT);
    b_copy_write(&b, 8, 99, 0x10000, 1, 4);                 /* unknown copy: ignored */
    pf_model_t *m = load_ok(b_save(&b, "cw.pflow", 0));
    assert_int_equal((int)m->n_flows, 1);
    const pf_flow_t *f = &m->flows[0];
    assert_int_equal(f->judged, 2);
    assert_int_equal(f->redundant, 1);
    assert_int_equal(f->watch_judged, 1);
    assert_true(f->write_line >= 0);
    assert_int_equal(m->lines[f->write_line].line, 4);
    assert_int_equal(f->write_to_dst, 0);
    assert_int_equal((int)find_line(m, "/w.py", 3)->s.redundant_copy_bytes, 4096);  /* half of 8192 */
    char *json = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&json, &len);
    assert_int_equal(pf_render_json(m, out), 0);
    fclose(out);
    assert_non_null(strstr(json, "\"evidence\":\"watch\""));
    assert_non_null(strstr(json, "\"to\":\"source\""));
    free(json);
    pf_model_free(m);

    /* n_py larger than the record: rejected by the reader as corrupt, not read past */
    b_init(&b, PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    unsigned char bad[sizeof(pf_rec_copy_write_t)];
    pf_rec_copy_write_t w = {1, 7, 0x10000, 8, 0, 50, 0, 0};
    memcpy(bad, &w, sizeof w);
    b_rec(&b, PF_REC_COPY_WRITE, 0, bad, sizeof bad);
    expect_error(b_save(&b, "cwbad.pflow", 0), "copy-write record's frame counts");
}

static void expect_error(const char *path, const char *needle)
{
    char err[512] = "";
    pf_model_t *m = NULL;
    pf_load_opts_t o = {0};
    int rc = pf_model_load(path, &o, &m, err, sizeof err);
    assert_true(rc < 0);
    assert_null(m);
    if (!strstr(err, needle))
        fail_msg("error %s lacks '%s'", err, needle);
}

static void test_reader_rejects_and_tolerates(void **state)
{
    builder_t b;
    b_init(&b, PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/r.py", "f", 1);
    uint32_t c = 1;
    b_alloc(&b, 1, 0x1000, 8, 8, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &c);
    /* truncated in the middle of the chunk: loads */
    size_t good_size = b.size;
    unsigned char *copy = malloc(good_size);
    memcpy(copy, b.buf, good_size);
    pf_model_t *m = load_ok(b_save(&b, "cut.pflow", PF_HEADER_BYTES + 200));
    pf_model_free(m);
    /* a record length that is not a multiple of 8 */
    b.buf = malloc(good_size);
    memcpy(b.buf, copy, good_size);
    b.size = good_size;
    ((pf_rec_header_t *)(b.buf + PF_HEADER_BYTES + PF_CHUNK_HEADER_BYTES))->bytes = 3;
    expect_error(b_save(&b, "len.pflow", 0), "offset 4112");
    /* frame counts larger than the record */
    b.buf = malloc(good_size);
    memcpy(b.buf, copy, good_size);
    b.size = good_size;
    size_t first = PF_HEADER_BYTES + PF_CHUNK_HEADER_BYTES;
    size_t second = first + ((pf_rec_header_t *)(b.buf + first))->bytes;
    ((pf_rec_alloc_t *)(b.buf + second + 8))->n_py = 5000;
    expect_error(b_save(&b, "frames.pflow", 0), "frame counts");
    /* wrong magic, newer version, empty */
    b.buf = malloc(good_size);
    memcpy(b.buf, copy, good_size);
    b.size = good_size;
    b.buf[0] = 'X';
    expect_error(b_save(&b, "magic.pflow", 0), "not a pyflow profile");
    b.buf = malloc(good_size);
    memcpy(b.buf, copy, good_size);
    b.size = good_size;
    ((pf_file_header_t *)b.buf)->version = PF_FORMAT_VERSION + 1;
    expect_error(b_save(&b, "newer.pflow", 0), "newer pyflow");
    b.buf = malloc(1);
    expect_error(b_save(&b, "empty.pflow", 1) /* one byte */, "not a pyflow profile");
    char path[256];
    snprintf(path, sizeof path, "%s/really-empty.pflow", tmpdir);
    fclose(fopen(path, "w"));
    expect_error(path, "is empty");
    snprintf(path, sizeof path, "%s/absent.pflow", tmpdir);
    expect_error(path, "No such file");
    /* a valid header on a (sparse) file past what the loader can address */
    snprintf(path, sizeof path, "%s/huge.pflow", tmpdir);
    FILE *huge = fopen(path, "wb");
    assert_non_null(huge);
    assert_int_equal(fwrite(copy, 1, PF_HEADER_BYTES, huge), PF_HEADER_BYTES);
    fclose(huge);
    assert_int_equal(truncate(path, (off_t)PF_READER_MAX_BYTES + PF_CHUNK_BYTES), 0);
    expect_error(path, "far larger than any profile");
    unlink(path);
    /* a start of neither a thread nor a process */
    b_init(&b, PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_spawn(&b, 1, 7, 2, 1, 0, NULL);
    expect_error(b_save(&b, "spawn.pflow", 0), "spawn record of an unknown kind");
    /* a command line longer than the record */
    b_init(&b, PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    size_t at = b.pos;
    b_spawn_of(&b, 1, PF_SPAWN_PROCESS, 2, 1, 0, NULL, PF_SPAWN_UNPROFILED, "python3");
    ((pf_rec_spawn_t *)(b.buf + at + sizeof(pf_rec_header_t)))->command_len = 200;
    expect_error(b_save(&b, "spawn_command.pflow", 0), "spawn record's command line exceeds its length");
    /* a change of writer without the new writer */
    b_init(&b, PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_rec(&b, PF_REC_WRITER, 0, "", 0);
    expect_error(b_save(&b, "writer.pflow", 0), "writer record too short");
    /* an unknown record type is skipped by its length */
    b.buf = malloc(good_size);
    memcpy(b.buf, copy, good_size);
    b.size = good_size;
    ((pf_rec_header_t *)(b.buf + first))->type = 999;
    m = load_ok(b_save(&b, "unknown.pflow", 0));
    pf_model_free(m);
    /* a version 1 file (stacks inline, before interning) still loads */
    b.buf = malloc(good_size);
    memcpy(b.buf, copy, good_size);
    b.size = good_size;
    ((pf_file_header_t *)b.buf)->version = 1;
    m = load_ok(b_save(&b, "version1.pflow", 0));
    assert_true(m->total.alloc_bytes > 0);
    pf_model_free(m);
    free(copy);
}

/* ---- renderers ---- */

static void test_json_escaping_parses(void **state)
{
    builder_t b;
    b_init(&b, PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/odd/quo\"te\\back\nnew\tline \xff\xfe bad \xc3\xa9.py", "f\x01", 1);
    uint32_t c = 1;
    b_alloc(&b, 1, 0x1000, 8, 8, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &c);
    pf_model_t *m = load_ok(b_save(&b, "odd.pflow", 0));
    char json_path[256], cmd[600];
    snprintf(json_path, sizeof json_path, "%s/odd.json", tmpdir);
    FILE *f = fopen(json_path, "w");
    assert_int_equal(pf_render_json(m, f), 0);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
             "f=d[\"lines\"][0][\"file\"]; assert \"quo\\\"te\" in f and \"\\n\" in f and \"\\ufffd\" in f and "
             "\"\\u00e9\" in f, f' %s",
             json_path);
    assert_int_equal(system(cmd), 0);
    pf_model_free(m);
}

static void test_html_escapes_names(void **state)
{
    builder_t b;
    b_init(&b, PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/odd/<script>alert('x')</script> & \"q\".py", "f<b>", 3);
    uint32_t c = 1;
    b_alloc(&b, 1, 0x1000, 4096, 4096, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &c);
    pf_model_t *m = load_ok(b_save(&b, "odd-html.pflow", 0));
    char *html = render_html(m);
    assert_null(strstr(html, "<script>alert"));
    assert_null(strstr(html, "f<b>"));
    assert_non_null(strstr(html, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;.py"));
    assert_non_null(strstr(html, "f&lt;b&gt;"));
    free(html);
    pf_model_free(m);
}

static void test_text_fits_width(void **state)
{
    builder_t b;
    b_init(&b, PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/a/very/long/path/that/goes/on/and/on/forever/with_a_really_long_module_name_here.py",
           "a_function_with_an_extremely_long_name_for_testing", 1234);
    uint32_t c = 1;
    b_alloc(&b, 1, 0x1000, 123456789, 123456789, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &c);
    pf_model_t *m = load_ok(b_save(&b, "wide.pflow", 0));
    char *text = render_text(m, 60);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        size_t cols = 0;
        for (char *p = line; *p; p++)
            cols += ((unsigned char)*p & 0xC0) != 0x80;
        if (cols > 60)
            fail_msg("line of %zu columns: %s", cols, line);
    }
    free(text);
    pf_model_free(m);
}

/* ---- golden output: a layout regression shows up as a diff ---- */

static void test_text_golden(void **state)
{
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 42);
    b_chunk(&b, 42);
    b_code(&b, 1, "/golden/app.py", "load", 12);
    b_code(&b, 2, "/golden/app.py", "<module>", 30);
    b_code(&b, 3, "/golden/util.py", "helper", 7);
    b_code(&b, 4, "/usr/lib/python3.11/json/decoder.py", "decode", 353);
    uint32_t load = 1, mod = 2, util[] = {4, 3, 2};
    for (int i = 0; i < 20; i++)
        b_alloc(&b, 1000000ull * (uint64_t)i, 0x100000 + (uint64_t)i * 4096, 1 << 20, 1 << 20, PF_DOMAIN_MALLOC,
                PF_ALLOC_EXACT, 1, &load);
    for (int i = 0; i < 20; i++)
        b_free(&b, 30000000 + 1000000ull * (uint64_t)i, 0x100000 + (uint64_t)i * 4096);
    for (int i = 0; i < 50; i++)
        b_alloc(&b, 60000000 + 100000ull * (uint64_t)i, 0x900000 + (uint64_t)i * 256, 200, 200, PF_DOMAIN_PYOBJ,
                PF_ALLOC_EXACT, 3, util);
    b_alloc(&b, 70000000, 0x2000000, 3 << 20, 3 << 20, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &mod);
    b_copy(&b, 71000000, 9, 0x2000000, 0x100000, 1 << 20, 2);
    pf_rec_exit_t x = {100000000, 0, 0};
    b_rec(&b, PF_REC_EXIT, 0, &x, sizeof x);
    pf_model_t *m = load_ok(b_save(&b, "golden.pflow", 0));
    /* the default width (the source before the trend), and a wide terminal (trend, redundant, copy/s) */
    const struct { int width; const char *golden; } widths[] = {{100, PF_TEST_DATA_DIR "/report_golden.txt"},
                                                                 {140, PF_TEST_DATA_DIR "/report_golden_wide.txt"}};
    for (size_t w = 0; w < sizeof widths / sizeof *widths; w++) {
        char *text = render_text(m, widths[w].width);
        const char *golden = widths[w].golden;
        if (getenv("PYFLOW_UPDATE_GOLDEN")) {
            FILE *g = fopen(golden, "w");
            assert_non_null(g);
            fputs(text, g);
            fclose(g);
        }
        FILE *g = fopen(golden, "r");
        assert_non_null(g);
        char want[8192];
        size_t n = fread(want, 1, sizeof want - 1, g);
        fclose(g);
        want[n] = '\0';
        if (strcmp(want, text) != 0)
            fail_msg("text report differs from %s (PYFLOW_UPDATE_GOLDEN=1 rewrites it):\n%s", golden, text);
        free(text);
    }
    pf_model_free(m);
}

/* ---- native symbols ---- */

static void test_symbols_resolve_a_real_library(void **state)
{
    Dl_info info;
    assert_true(dladdr((void *)getpid, &info) && info.dli_fname);
    pf_symbols_t *sy = pf_symbols_new();
    char name[256];
    uint64_t vaddr = (uint64_t)(uintptr_t)getpid - (uint64_t)(uintptr_t)info.dli_fbase;
    pf_symbols_name(sy, info.dli_fname, vaddr + 1, name, sizeof name);
    if (!strstr(name, "getpid"))
        fail_msg("getpid resolved as %s", name);
    assert_true(pf_symbols_is_runtime_library(info.dli_fname));  /* libc: never a native site */
    pf_symbols_name(sy, "/nonexistent/libnothing.so", 0x1234, name, sizeof name);
    assert_string_equal(name, "0x1234 (libnothing.so)");
    pf_symbols_free(sy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frees_peak_and_live_at_exit),
        cmocka_unit_test(test_finalization_keeps_objects_live),
        cmocka_unit_test(test_attribution),
        cmocka_unit_test(test_call_paths_sharing_outer_frames),
        cmocka_unit_test(test_sampled_estimates_and_counts),
        cmocka_unit_test(test_copies_and_verdicts),
        cmocka_unit_test(test_verdict_needs_enough_judged),
        cmocka_unit_test(test_copy_write_decides),
        cmocka_unit_test(test_unlisted_redundant_copies),
        cmocka_unit_test(test_redundancy_categories),
        cmocka_unit_test(test_copy_interior_ends),
        cmocka_unit_test(test_reader_rejects_and_tolerates),
        cmocka_unit_test(test_json_escaping_parses),
        cmocka_unit_test(test_text_fits_width),
        cmocka_unit_test(test_symbols_resolve_a_real_library),
        cmocka_unit_test(test_text_golden),
        cmocka_unit_test(test_html_escapes_names),
    };
    return cmocka_run_group_tests(tests, writer_setup, writer_teardown);
}
