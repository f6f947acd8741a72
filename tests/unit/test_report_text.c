/* Unit tests for the terminal report's layout with hostile names: file and function names with newlines,
 * tabs, escape sequences, invalid UTF-8, double-width characters and great length. Every line must fit
 * the width (measured by glibc's wcwidth, not by the renderer's own rule), carry no control character but
 * the newline, and keep a long file's line number visible. */
#include "test_report_writer.h"

#include <locale.h>
#include <wchar.h>

#include "pf_render_waste.h"

/* Display columns of one output line by glibc; control characters count as failures. */
static int display_width(const char *line, int color)
{
    mbstate_t st;
    memset(&st, 0, sizeof st);
    int cols = 0;
    for (const char *p = line; *p;) {
        if (color && p[0] == '\033' && p[1] == '[') {
            p += 2;
            while (*p && *p != 'm')
                p++;
            p += *p == 'm';
            continue;
        }
        wchar_t wc;
        size_t n = mbrtowc(&wc, p, strlen(p), &st);
        if (n == (size_t)-1 || n == (size_t)-2)
            fail_msg("invalid UTF-8 in output line: %s", line);
        int w = wcwidth(wc);
        if (w < 0)
            fail_msg("control character U+%04X in output line: %s", (unsigned)wc, line);
        cols += w;
        p += n;
    }
    return cols;
}

static char *render(const pf_model_t *m, int width, int color, int rows)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    pf_text_opts_t o = {.width = width, .color = color, .max_lines = rows, .profile_path = "/tmp/p.pflow"};
    assert_int_equal(pf_render_text(m, f, &o), 0);
    fclose(f);
    return text;
}

static pf_model_t *odd_model(void)
{
    static const char *files[] = {
        "/tmp/new\nline.py",
        "/tmp/tab\there\x1b[31mred.py",
        "/tmp/\xe6\xbc\xa2\xe5\xad\x97\xe3\x81\xae\xe5\x90\x8d\xe5\x89\x8d\xe6\xbc\xa2\xe5\xad\x97\xe3\x81\xae"
        "\xe5\x90\x8d\xe5\x89\x8d\xe6\xbc\xa2\xe5\xad\x97.py",                      /* CJK: two columns each */
        "/tmp/emoji\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80.py",
        "/tmp/bad\xff\xfe\xc3.py",
        "/a/very/long/path/that/goes/on/and/on/forever/with_a_really_long_module_name_that_never_ends_here.py",
    };
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    for (uint32_t i = 0; i < 6; i++) {
        char fn[64];
        snprintf(fn, sizeof fn, "fn\x1b]0;title\x07%u_\xe5\x90\x8d\xe5\x89\x8d_with_a_long_tail_name", i);
        b_code(&b, i + 1, files[i], fn, 1234 + (int)i);
        uint32_t c = i + 1;
        b_alloc(&b, i, 0x1000 + i * 0x100, 1000 + i, 123456789 + i, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &c);
    }
    return load_ok(b_save(&b, "oddtext.pflow", 0));
}

static void test_width_never_exceeded(void **state)
{
    (void)state;
    assert_non_null(setlocale(LC_CTYPE, "C.UTF-8"));
    pf_model_t *m = odd_model();
    static const int widths[] = {30, 40, 60, 80, 100, 132, 200};
    for (int color = 0; color <= 1; color++)
        for (size_t w = 0; w < sizeof widths / sizeof *widths; w++) {
            char *text = render(m, widths[w], color, 20);
            int lines = 0;
            for (char *save, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                int cols = display_width(l, color);
                if (cols > widths[w])
                    fail_msg("width %d, colour %d: a line of %d columns: %s", widths[w], color, cols, l);
                lines++;
            }
            assert_true(lines >= 10);
            free(text);
        }
    pf_model_free(m);
}

/* The line table keeps "…name.py:1239" for a file name far wider than its column. */
/* A line's recomputed values of several sizes a few bytes apart: the range would read "20.8 KiB to
 * 20.8 KiB"; it says "each about 20.8 KiB" instead, and a true range stays a range. */
static void test_recompute_sizes_that_read_alike(void **state)
{
    (void)state;
    pf_recomputation_t r = {.row = 0, .node = -1, .size = 21336, .bytes = 17.7 * 1024 * 1024, .count = 870,
                            .values = 15, .site_first = 0, .fix = "call it once and keep the result"};
    r.site = (pf_recomputation_site_t){.sizes = 2, .values = 15, .bytes = r.bytes, .count = 870,
                                       .smallest = 21320, .largest = 21336};
    pf_model_t m = {0};
    m.waste.recomputations = &r;
    m.waste.n_recomputations = 1;
    char buf[512];
    const char *text = pf_waste_recompute_text(&m, &r, buf, sizeof buf);
    assert_non_null(strstr(text, "15 values of 2 sizes (each about 20.8 KiB) 870 times"));
    r.site.smallest = 128;
    text = pf_waste_recompute_text(&m, &r, buf, sizeof buf);
    assert_non_null(strstr(text, "(128 B to 20.8 KiB)"));
}

static void test_long_file_keeps_line_number(void **state)
{
    (void)state;
    pf_model_t *m = odd_model();
    char *text = render(m, 100, 0, 20);
    if (!strstr(text, "ends_here.py:1239"))
        fail_msg("the long file's line number is gone:\n%s", text);
    assert_non_null(strstr(text, "new?line.py:1234"));     /* the newline became '?' */
    assert_null(strstr(text, "\x1b"));                      /* no escape reaches the terminal uncoloured */
    free(text);
    pf_model_free(m);
}

/* Bidirectional controls (U+202E RIGHT-TO-LEFT OVERRIDE, U+2066 LEFT-TO-RIGHT ISOLATE, U+200F RLM), a C1
 * control (U+009B, a one-character CSI) and U+2028 in a file or function name never reach the terminal. */
static void test_bidi_controls_escaped(void **state)
{
    (void)state;
    assert_non_null(setlocale(LC_CTYPE, "C.UTF-8"));
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/tmp/evil\xe2\x80\xaeyp.exe\xe2\x81\xa6x\xe2\x80\x8f.py", "f\xc2\x9b" "31m\xe2\x80\xa8g", 7);
    uint32_t c = 1;
    b_alloc(&b, 1, 0x1000, 5000, 5000, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &c);
    pf_model_t *m = load_ok(b_save(&b, "bidi.pflow", 0));
    char *text = render(m, 200, 0, 20);
    static const char *const banned[] = {"\xe2\x80\xae", "\xe2\x81\xa6", "\xe2\x80\x8f", "\xc2\x9b", "\xe2\x80\xa8"};
    for (size_t i = 0; i < sizeof banned / sizeof *banned; i++)
        if (strstr(text, banned[i]))
            fail_msg("control %zu reached the terminal:\n%s", i, text);
    assert_non_null(strstr(text, "evil?yp.exe?x?.py"));
    free(text);
    pf_model_free(m);
}

/* A profile that lacks records says so in the summary, within the width. */
static void test_incomplete_profile_said(void **state)
{
    (void)state;
    assert_non_null(setlocale(LC_CTYPE, "C.UTF-8"));
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/app/x.py", "f", 3);
    uint32_t c = 1;
    b_alloc(&b, 1, 0x1000, 100, 100, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &c);
    b_alloc_ref(&b, 2, 0x2000, 50, PF_ALLOC_EXACT, 42);    /* stack 42 is never defined */
    pf_rec_mark_t mk = {3, 5, 0, 0};
    b_rec(&b, PF_REC_MARK, PF_MARK_DROPPED, &mk, sizeof mk);
    pf_model_t *m = load_ok(b_save(&b, "incomplete.pflow", 0));
    char *text = render(m, 200, 0, 20);
    if (!strstr(text, "incomplete profile: 5 records could not be written") || !strstr(text, "1 stacks missing"))
        fail_msg("no incomplete-profile line:\n%s", text);
    free(text);
    text = render(m, 60, 0, 20);
    for (char *save, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        if (display_width(l, 0) > 60)
            fail_msg("a line wider than 60: %s", l);
    free(text);
    pf_model_free(m);

    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);      /* and a complete one does not */
    b_chunk(&b, 1);
    b_code(&b, 1, "/app/x.py", "f", 3);
    b_alloc(&b, 1, 0x1000, 100, 100, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &c);
    m = load_ok(b_save(&b, "complete.pflow", 0));
    text = render(m, 200, 0, 20);
    assert_null(strstr(text, "incomplete"));
    free(text);
    pf_model_free(m);

    /* an exact profile whose block at 0x1000 was handed out again before its free: said, alone */
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/app/x.py", "f", 3);
    b_alloc(&b, 1, 0x1000, 100, 100, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &c);
    b_alloc(&b, 2, 0x1000, 100, 100, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &c);
    b_free(&b, 3, 0x1000);
    m = load_ok(b_save(&b, "reused.pflow", 0));
    assert_int_equal(m->frees_unseen, 1);
    text = render(m, 200, 0, 20);
    if (!strstr(text, "incomplete profile: frees missing or out of order: 1 ("))
        fail_msg("no line for the missing free:\n%s", text);
    free(text);
    pf_model_free(m);
}

/* Memory whose stack holds no line of the user's code (a library's thread, a child process running a
 * library) is left out of the line table and said once below it, with its largest library lines, in the
 * text and in JSON's outside_code. A library frame under a user line is the user line's. */
static void test_outside_code_said(void **state)
{
    (void)state;
    assert_non_null(setlocale(LC_CTYPE, "C.UTF-8"));
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/app/x.py", "main", 3);
    b_code(&b, 2, "/usr/lib/python3.11/concurrent/futures/thread.py", "run", 58);
    b_code(&b, 3, "/usr/lib/python3/dist-packages/joblib/pool.py", "load", 9);
    uint32_t user = 1, lib_under_user[2] = {2, 1}, lib_only = 2, lib_other = 3;
    b_alloc(&b, 1, 0x1000, 1000, 1000, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &user);
    b_alloc(&b, 2, 0x2000, 500, 500, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 2, lib_under_user);
    b_alloc(&b, 3, 0x3000, 3000, 3000, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &lib_only);
    b_alloc(&b, 4, 0x4000, 2000, 2000, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &lib_other);
    pf_model_t *m = load_ok(b_save(&b, "outside.pflow", 0));
    char *text = render(m, 120, 0, 20);
    const char *said = strstr(text, "outside your code");
    if (!said || !strstr(said, "4.88 KiB allocated (77%), 77% of the peak") || !strstr(said, "in 2 library lines"))
        fail_msg("no outside-code sums:\n%s", text);
    const char *first = strstr(said, "futures/thread.py:58 (run)"), *second = strstr(said, "joblib/pool.py:9 (load)");
    if (!first || !second || second < first)
        fail_msg("the library lines are not listed largest first:\n%s", text);
    if (!strstr(text, "x.py:3 ") || strstr(text, "\nthread.py:58"))
        fail_msg("the line table should hold x.py:3 (1500 B) and no library row:\n%s", text);
    free(text);

    char *json = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&json, &len);
    assert_int_equal(pf_render_json(m, f), 0);
    fclose(f);
    if (!strstr(json, "\"outside_code\":{\"alloc_bytes\":5000,\"peak_bytes\":5000,\"copy_bytes\":0,\"lines\":2}"))
        fail_msg("no outside_code in the JSON:\n%.2000s", json);
    free(json);
    pf_model_free(m);

    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);      /* a program whose every byte has a user line says nothing */
    b_chunk(&b, 1);
    b_code(&b, 1, "/app/x.py", "main", 3);
    b_code(&b, 2, "/usr/lib/python3.11/concurrent/futures/thread.py", "run", 58);
    b_alloc(&b, 1, 0x1000, 1000, 1000, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 2, lib_under_user);
    m = load_ok(b_save(&b, "inside.pflow", 0));
    text = render(m, 120, 0, 20);
    assert_null(strstr(text, "outside your code"));
    assert_non_null(strstr(text, "\nfunction "));
    free(text);
    pf_model_free(m);

    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);      /* no function of the user's (a syntax error): no table */
    b_chunk(&b, 1);
    b_alloc(&b, 1, 0x1000, 1000, 1000, PF_DOMAIN_PYRAW, PF_ALLOC_EXACT, 0, NULL);
    m = load_ok(b_save(&b, "nofunc.pflow", 0));
    text = render(m, 120, 0, 20);
    if (!strstr(text, "[python startup]") || strstr(text, "\nfunction "))
        fail_msg("an empty function table:\n%s", text);
    free(text);
    pf_model_free(m);
}

/* A source line cut in the blanks before its comment ends "code…", not "code      …". */
static void test_cut_source_keeps_no_blanks(void **state)
{
    (void)state;
    assert_non_null(setlocale(LC_CTYPE, "C.UTF-8"));
    char src[300];
    snprintf(src, sizeof src, "%s/aligned.py", tmpdir);
    FILE *f = fopen(src, "w");
    assert_non_null(f);
    fprintf(f, "m = df.merge(df, on=\"a\")%60s# line 1: the merge\n", "");
    fclose(f);
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, src, "<module>", 1);
    uint32_t c = 1;
    b_alloc(&b, 1, 0x1000, 1 << 20, 1 << 20, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &c);
    pf_model_t *m = load_ok(b_save(&b, "aligned.pflow", 0));
    int cut = 0;
    for (int width = 60; width <= 160; width += 7) {
        char *text = render(m, width, 0, 20);
        for (char *save, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
            size_t n = strlen(l), e = strlen("…");
            if (n > e && strcmp(l + n - e, "…") == 0 && strstr(l, "df.merge")) {
                cut++;
                if (l[n - e - 1] == ' ')
                    fail_msg("width %d: blanks before the ellipsis: '%s'", width, l);
            }
        }
        free(text);
    }
    assert_true(cut > 5);
    pf_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_width_never_exceeded),
        cmocka_unit_test(test_cut_source_keeps_no_blanks),
        cmocka_unit_test(test_long_file_keeps_line_number),
        cmocka_unit_test(test_bidi_controls_escaped),
        cmocka_unit_test(test_incomplete_profile_said),
        cmocka_unit_test(test_outside_code_said),
        cmocka_unit_test(test_recompute_sizes_that_read_alike),
    };
    return cmocka_run_group_tests(tests, writer_setup, writer_teardown);
}
