/* test_report_workers.c - the workers of a merged job (report/pf_model_workers.c, pf_model_dir.c): labels
 * and endings read from the files, each process's bytes per line at its own peak, the lines that make the
 * difference between two workers, and a directory of files from two hosts put on one clock. */
#include <sys/stat.h>

#include "test_report_writer.h"

#include "pf_workers_int.h"

static void b_label(builder_t *b, uint64_t t, uint16_t kind, uint64_t value, const char *note)
{
    unsigned char tmp[256];
    pf_rec_mark_t m = {t, value, note ? (uint32_t)strlen(note) : 0, 0};
    memcpy(tmp, &m, sizeof m);
    if (note)
        memcpy(tmp + sizeof m, note, m.note_len);
    b_rec(b, PF_REC_MARK, kind, tmp, sizeof m + m.note_len);
}

static void start(builder_t *b, uint32_t pid, uint64_t mono, uint64_t real, const char *host, const char *rank)
{
    b_init(b, PF_HDR_EXACT, pid);
    ((pf_file_header_t *)b->buf)->start_mono_ns = mono;
    ((pf_file_header_t *)b->buf)->start_real_ns = real;
    b_chunk(b, pid);
    char note[64];
    snprintf(note, sizeof note, "host=%s", host);
    b_label(b, 0, PF_MARK_PROCESS_LABEL, 0, note);
    if (rank) {
        snprintf(note, sizeof note, "rank=%s", rank);
        b_label(b, 0, PF_MARK_PROCESS_LABEL, 0, note);
        b_label(b, 0, PF_MARK_PROCESS_LABEL, 0, "world_size=3");
    }
    b_code(b, 5, "/job/w.py", "keep", 5);
    b_code(b, 6, "/job/w.py", "grow", 6);
}

static const pf_proc_line_t *proc_line(const pf_model_t *m, uint32_t proc, int line)
{
    for (size_t i = 0; i < m->n_proc_lines; i++)
        if (m->proc_lines[i].proc == proc && m->lines[m->proc_lines[i].row].line == line)
            return &m->proc_lines[i];
    fail_msg("no line %d for process %u", line, proc);
    return NULL;
}

/* Host h1's two files are 3 s apart on its monotonic clock (their real-time starts say otherwise: ignored
 * within a host); host h2 booted long before (a far larger monotonic start) and started 2 s after h1's
 * first by the real-time clock. */
static pf_model_t *load_job(void)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/job", tmpdir);
    mkdir(dir, 0755);
    builder_t b;
    uint32_t c5 = 5, c6 = 6;
    start(&b, 100, 1000000000ull, 50000000000ull, "h1", "0");
    b_alloc(&b, 10, 0x1000, 100, 100, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &c5);
    b_alloc(&b, 20, 0x2000, 50, 50, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &c6);     /* its peak: 150 */
    b_free(&b, 30, 0x1000);
    b_alloc(&b, 40, 0x3000, 30, 30, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &c6);     /* 80: not a peak */
    b_mark(&b, 50, PF_MARK_FINALIZING);
    b_save(&b, "job/h1.100", 0);
    start(&b, 200, 900000000000ull, 52000000000ull, "h2", "1");
    b_alloc(&b, 10, 0x1000, 10, 10, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &c5);
    b_label(&b, 20, PF_MARK_EXIT, 3, NULL);
    b_save(&b, "job/h2.200", 0);
    start(&b, 300, 4000000000ull, 99000000000ull, "h1", "2");
    b_alloc(&b, 10, 0x1000, 20, 20, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1, &c6);
    b_save(&b, "job/h1.300", 0);      /* ends with neither mark: killed */
    b_init(&b, 0, 1);
    b_save(&b, "job/notes.txt", 16);  /* not a profile: skipped */
    const char *paths[] = {dir};
    char err[512] = "";
    pf_model_t *m = NULL;
    pf_load_opts_t o = {.merge_children = 1};
    if (pf_model_load_set(paths, 1, &o, &m, err, sizeof err) != 0)
        fail_msg("load failed: %s", err);
    return m;
}

static void test_hosts_on_one_clock(void **state)
{
    (void)state;
    pf_model_t *m = load_job();
    assert_int_equal((int)m->n_procs, 3);
    assert_int_equal(m->procs[0].pid, 100);
    assert_int_equal(m->procs[1].pid, 200);     /* 2 s after, by the real-time clock between hosts */
    assert_true(m->procs[1].offset_ns == 2000000000ull);
    assert_int_equal(m->procs[2].pid, 300);     /* 3 s after, by h1's monotonic clock */
    assert_true(m->procs[2].offset_ns == 3000000000ull);
    assert_string_equal(m->procs[1].host, "h2");
    assert_string_equal(m->procs[1].labels, "rank=1 world_size=3");
    pf_model_free(m);
}

static void test_endings_and_names(void **state)
{
    (void)state;
    pf_model_t *m = load_job();
    char buf[64];
    pf_workers_ending(m, &m->procs[0], buf, sizeof buf);
    assert_string_equal(buf, "finished");
    pf_workers_ending(m, &m->procs[1], buf, sizeof buf);
    assert_string_equal(buf, "_exit 3");
    pf_workers_ending(m, &m->procs[2], buf, sizeof buf);
    assert_string_equal(buf, "killed or crashed");
    pf_workers_name(&m->procs[2], buf, sizeof buf);
    assert_string_equal(buf, "rank 2/3");
    uint32_t idx[8];
    assert_int_equal((int)pf_workers_list(m, idx, 8), 3);
    pf_model_free(m);
}

/* Bytes at a process's own peak: line 6 had 50 then (after the peak) 80; line 5 100 then 0. */
static void test_lines_at_each_process_peak(void **state)
{
    (void)state;
    pf_model_t *m = load_job();
    assert_int_equal((int)proc_line(m, 0, 5)->peak_bytes, 100);
    assert_int_equal((int)proc_line(m, 0, 6)->peak_bytes, 50);
    assert_int_equal((int)proc_line(m, 0, 6)->alloc_bytes, 80);
    assert_int_equal((int)proc_line(m, 1, 5)->peak_bytes, 10);
    assert_int_equal((int)m->procs[0].peak_bytes, 150);
    int32_t rows[4];
    double diffs[4];
    size_t n = pf_workers_diff(m, 0, 1, rows, diffs, 4);
    assert_int_equal((int)n, 2);
    assert_int_equal(m->lines[rows[0]].line, 5);    /* 100 - 10 */
    assert_int_equal((int)diffs[0], 90);
    assert_int_equal(m->lines[rows[1]].line, 6);    /* 50 - 0 */
    assert_int_equal((int)diffs[1], 50);
    n = pf_workers_diff(m, 1, 0, rows, diffs, 1);   /* the other way round, capped */
    assert_int_equal((int)n, 1);
    assert_int_equal((int)diffs[0], -90);
    pf_model_free(m);
}

static void test_empty_directory_is_one_error(void **state)
{
    (void)state;
    char dir[300], err[512] = "";
    snprintf(dir, sizeof dir, "%s/empty", tmpdir);
    mkdir(dir, 0755);
    const char *paths[] = {dir};
    pf_model_t *m = NULL;
    assert_true(pf_model_load_set(paths, 1, NULL, &m, err, sizeof err) < 0);
    assert_non_null(strstr(err, "no pyflow profile"));
    assert_null(m);
}

/* Lines of yours that called a Dask client's submit-like method; twins: another library's `map`, the
 * client's `gather` (collects, submits nothing), and a client call with no line of yours above it. */
static void test_task_submissions(void **state)
{
    (void)state;
    builder_t b;
    b_init(&b, PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    const char *client = "/usr/lib/python3/dist-packages/distributed/client.py";
    b_code(&b, 1, "/home/me/job.py", "main", 27);
    b_code(&b, 2, client, "map", 2081);
    b_code(&b, 3, client, "_get_computation_code", 2955);
    b_code(&b, 4, "/home/me/job.py", "other", 40);
    b_code(&b, 5, "/usr/lib/python3/dist-packages/mylib/pool.py", "map", 10);
    b_code(&b, 6, client, "gather", 2200);
    uint32_t submitted[] = {3, 2, 1}, other_map[] = {5, 4}, gathered[] = {6, 4}, no_user[] = {3, 2};
    b_alloc(&b, 1, 0x100, 100, 100, PF_DOMAIN_PYOBJ, PF_ALLOC_SAMPLED, 3, submitted);
    b_alloc(&b, 2, 0x200, 100, 100, PF_DOMAIN_PYOBJ, PF_ALLOC_SAMPLED, 2, other_map);
    b_alloc(&b, 3, 0x300, 100, 100, PF_DOMAIN_PYOBJ, PF_ALLOC_SAMPLED, 2, gathered);
    b_alloc(&b, 4, 0x400, 100, 100, PF_DOMAIN_PYOBJ, PF_ALLOC_SAMPLED, 2, no_user);
    b_alloc(&b, 5, 0x500, 100, 100, PF_DOMAIN_PYOBJ, PF_ALLOC_SAMPLED, 3, submitted);   /* the same line again */
    pf_model_t *m = load_ok(b_save(&b, "submit.pflow", 0));
    pf_submission_t subs[4];
    size_t n = pf_workers_submissions(m, subs, 4);
    assert_int_equal((int)n, 1);
    assert_string_equal(pf_model_str(m, subs[0].file), "/home/me/job.py");
    assert_int_equal(subs[0].line, 27);
    assert_string_equal(pf_model_str(m, subs[0].call), "map");
    pf_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hosts_on_one_clock),
        cmocka_unit_test(test_endings_and_names),
        cmocka_unit_test(test_lines_at_each_process_peak),
        cmocka_unit_test(test_empty_directory_is_one_error),
        cmocka_unit_test(test_task_submissions),
    };
    return cmocka_run_group_tests(tests, writer_setup, writer_teardown);
}
