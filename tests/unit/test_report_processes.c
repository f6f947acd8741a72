/* Unit tests for report/'s merged processes and call paths: children's files merged on one clock, memory
 * charged to the line that started a thread or process (also through a shell), unprofiled children listed,
 * and the call tree (its nodes, order and sums). Profiles are built by test_report_writer.h. */
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
#include "pf_report_int.h"
#include "pf_report.h"

#include "test_report_writer.h"
#include "test_report_render.h"

static void test_children_merged(void **state)
{
    builder_t b;
    b_init(&b, PF_HDR_ROOT, 10);
    b_chunk(&b, 10);
    b_code(&b, 1, "/p.py", "<module>", 1);
    uint32_t c = 1;
    b_alloc(&b, 1, 0x1000, 100, 100, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &c);
    b_save(&b, "kids.pflow", 0);
    b_init(&b, 0, 11);
    b_chunk(&b, 11);
    b_code(&b, 5, "/p.py", "<module>", 1);      /* the child has its own code ids */
    c = 5;
    b_alloc(&b, 1, 0x1000, 300, 300, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &c);  /* same address, other process */
    ((pf_file_header_t *)b.buf)->ppid = 10;
    b_save(&b, "kids.pflow.11", 0);
    b_init(&b, 0, 12);                          /* a child that exec'd: its first image allocated nothing */
    b_chunk(&b, 12);
    ((pf_file_header_t *)b.buf)->ppid = 10;
    b_save(&b, "kids.pflow.12", 0);
    b_init(&b, 0, 12);
    b_chunk(&b, 12);
    ((pf_file_header_t *)b.buf)->ppid = 10;
    b_code(&b, 7, "/q.py", "<module>", 1);
    c = 7;
    b_alloc(&b, 2, 0x2000, 50, 50, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &c);
    b_save(&b, "kids.pflow.12.1", 0);
    char path[256];
    snprintf(path, sizeof path, "%s/kids.pflow", tmpdir);
    pf_model_t *m = load_ok(path);
    assert_int_equal((int)m->n_procs, 4);
    const pf_line_t *l = find_line(m, "/p.py", 1);
    assert_int_equal((int)l->s.alloc_bytes, 400);
    assert_int_equal((int)l->s.leaked_bytes, 400);

    /* the process tables (text, HTML): every child names its parent; the exec'd child is one row */
    char *text = render_text(m, 100);
    const char *table = strstr(text, "\npid ");
    if (!table || !strstr(table, "\n10       (root)") || !strstr(table, "\n11       10 ") ||
        !strstr(table, "\n12       10 ") || strstr(strstr(table, "\n12 ") + 1, "\n12 "))
        fail_msg("process table:\n%s", text);
    if (!strstr(text, "processes: 3 (children merged)"))    /* processes, not images */
        fail_msg("process count:\n%s", text);
    free(text);
    text = render_json(m);      /* every image, the exec'd one marked */
    const char *first = strstr(text, "\"pid\":12,"), *second = first ? strstr(first + 1, "\"pid\":12,") : NULL;
    if (!second || !strstr(first, "\"replaced_by_exec\":true") ||
        strstr(first, "\"replaced_by_exec\":true") > second || !strstr(second, "\"replaced_by_exec\":false") ||
        strstr(text, "\"replaced_by_exec\":true") != strstr(first, "\"replaced_by_exec\":true"))
        fail_msg("JSON processes:\n%s", strstr(text, "\"processes\""));
    free(text);
    text = render_html(m);
    const char *rows = strstr(text, "<h2>Processes</h2>");
    assert_non_null(rows);
    int n = 0;
    for (const char *r = rows; (r = strstr(r, "<tr><td data-v=\"1")) != NULL; r++)
        n++;
    assert_int_equal(n, 3);
    assert_non_null(strstr(rows, "<td data-v=\"10\">10</td>"));
    free(text);
    pf_model_free(m);
}

/* Memory a thread or process allocates with no line of the user's goes to the user's line that started it,
 * through a library thread that started another, and from a child process (whose -c is not the user's). */
static void test_started_by(void **state)
{
    builder_t b;
    b_init(&b, PF_HDR_ROOT, 20);
    b_chunk(&b, 20);                                /* the main thread */
    b_thread(&b, 1, 20, 0xA0);
    b_code(&b, 1, "/app.py", "<module>", 5);
    b_code(&b, 2, "/usr/lib/python3.11/threading.py", "start", 900);
    b_code(&b, 3, "/usr/lib/python3.11/json/decoder.py", "raw_decode", 353);
    uint32_t starting[2] = {2, 1}, library = 3, user = 1;
    b_spawn(&b, 10, PF_SPAWN_THREAD, 0xB0, 20, 2, starting);
    b_spawn(&b, 20, PF_SPAWN_PROCESS, 21, 20, 1, &user);
    b_spawn(&b, 30, PF_SPAWN_THREAD, 0xB0, 20, 1, &library); /* its handle, reused later: not its start */
    b_alloc(&b, 2, 0x100, 7, 7, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 0, NULL);   /* start-up stays there */
    b_chunk(&b, 22);                                /* a worker started at app.py:5, running library code */
    b_thread(&b, 11, 22, 0xB0);
    b_alloc(&b, 12, 0x1000, 1000, 1000, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &library);
    b_spawn(&b, 13, PF_SPAWN_THREAD, 0xC0, 22, 1, &library);  /* which starts a native thread */
    b_chunk(&b, 23);
    b_thread(&b, 14, 23, 0xC0);
    b_alloc(&b, 15, 0x2000, 500, 500, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT | PF_ALLOC_NO_PYSTATE, 0, NULL);
    b_writer(&b, 24);           /* a thread nobody is known to have started, in the chunk 23 left: not 23's */
    b_thread(&b, 16, 24, 0xE0);
    b_alloc(&b, 17, 0x3000, 300, 300, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &library);
    b_save(&b, "started.pflow", 0);
    b_init(&b, 0, 21);                              /* the child process, spawned with -c */
    b_chunk(&b, 21);
    ((pf_file_header_t *)b.buf)->ppid = 20;
    b_thread(&b, 25, 21, 0xA0);
    b_code(&b, 9, "<string>", "<module>", 1);
    uint32_t dash_c = 9;
    b_alloc(&b, 26, 0x1000, 2000, 2000, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &dash_c);
    b_save(&b, "started.pflow.21", 0);
    char path[256];
    snprintf(path, sizeof path, "%s/started.pflow", tmpdir);
    pf_model_t *m = load_ok(path);
    const pf_line_t *l = find_line(m, "/app.py", 5);
    assert_int_equal((int)l->s.alloc_bytes, 3500);
    assert_int_equal((int)l->started_bytes, 3500);
    assert_int_equal((int)l->started_threads, 2);
    assert_int_equal((int)l->started_procs, 1);
    assert_int_equal((int)find_line(m, "[python startup]", 0)->s.alloc_bytes, 7);
    assert_int_equal((int)find_line(m, "/usr/lib/python3.11/json/decoder.py", 353)->s.alloc_bytes, 300);
    char *text = render_text(m, 120);
    if (!strstr(text, "started by your lines") || !strstr(text, "app.py:5 in 2 threads and 1 process"))
        fail_msg("no started-by section:\n%s", text);
    free(text);
    text = render_html(m);
    const char *html = strstr(text, "<p id=\"started\">");
    if (!html || !strstr(html, "app.py:5</code> 3.4 KiB in 2 threads and 1 process"))
        fail_msg("no started-by paragraph:\n%s", html ? html : text);
    free(text);
    pf_model_free(m);
}

/* The call-tree node whose path ends at line `line` of /app.py under the node `parent` (-1: a root). */
static const pf_callnode_t *child_node(const pf_model_t *m, int32_t parent, int line)
{
    for (int32_t n = parent < 0 ? m->first_root : m->nodes[parent].first_child; n >= 0; n = m->nodes[n].next_sibling)
        if (m->nodes[n].line == line)
            return &m->nodes[n];
    fail_msg("no call-tree node for line %d under node %d", line, parent);
    return NULL;
}

static int32_t node_id(const pf_model_t *m, const pf_callnode_t *c) { return (int32_t)(c - m->nodes); }

/* The call tree: one node per path of the user's lines (library frames between them left out), each
 * node's bytes summed over its subtree, at the peak and at exit as well as allocated; a thread running
 * library code hangs under the path of the line that started it; children are ordered by peak bytes. */
static void test_call_tree(void **state)
{
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_thread(&b, 1, 1, 0xA0);
    b_code(&b, 1, "/app.py", "<module>", 30);
    b_code(&b, 2, "/app.py", "main", 20);
    b_code(&b, 3, "/app.py", "main", 21);
    b_code(&b, 4, "/app.py", "load", 10);
    b_code(&b, 5, "/usr/lib/python3.11/json/decoder.py", "decode", 300);
    b_code(&b, 6, "/app.py", "hook", 40);
    b_code(&b, 8, "/app.py", "main", 22);
    uint32_t via20[3] = {4, 2, 1}, via21[3] = {4, 3, 1}, hooked[4] = {6, 5, 2, 1}, starts[2] = {8, 1}, lib = 5;
    b_stack(&b, 7, 3, via20);
    b_alloc_ref(&b, 5, 0x50, 50, PF_ALLOC_EXACT, 7);     /* an interned stack, twice */
    b_alloc_ref(&b, 6, 0x60, 50, PF_ALLOC_EXACT, 7);
    b_alloc(&b, 10, 0x1000, 1000, 1000, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 3, via20);
    b_alloc(&b, 20, 0x2000, 500, 500, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 3, via21);
    b_alloc(&b, 30, 0x3000, 200, 200, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 4, hooked);
    b_copy(&b, 31, 77, 0x3000, 0x2000, 200, 8);         /* a copy on a path that allocates nothing */
    b_spawn(&b, 32, PF_SPAWN_THREAD, 0xB0, 1, 2, starts);
    b_free(&b, 40, 0x1000);
    b_chunk(&b, 2);                                      /* the thread main:22 started, in library code */
    b_thread(&b, 33, 2, 0xB0);
    b_alloc(&b, 35, 0x4000, 300, 300, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &lib);
    pf_model_t *m = load_ok(b_save(&b, "tree.pflow", 0));
    assert_int_equal((int)m->total.peak_bytes, 2100);
    const pf_callnode_t *root = child_node(m, -1, 30);
    /* every byte is under <module>; the copy's path is a root of its own with none */
    assert_true(root->next_sibling < 0 || m->nodes[root->next_sibling].alloc < 0.5);
    const pf_callnode_t *m20 = child_node(m, node_id(m, root), 20), *m21 = child_node(m, node_id(m, root), 21),
                        *m22 = child_node(m, node_id(m, root), 22);
    const pf_callnode_t *load20 = child_node(m, node_id(m, m20), 10), *hook = child_node(m, node_id(m, m20), 40),
                        *load21 = child_node(m, node_id(m, m21), 10);
    assert_int_equal((int)root->alloc, 2100);
    assert_int_equal((int)root->self_alloc, 0);
    assert_int_equal((int)m20->alloc, 1300);
    assert_int_equal((int)load20->alloc, 1100);
    assert_int_equal((int)load20->self_alloc, 1100);
    assert_int_equal((int)hook->alloc, 200);
    assert_int_equal((int)m21->alloc, 500);
    assert_int_equal((int)load21->alloc, 500);
    assert_int_equal((int)m22->alloc, 300);                 /* the started thread's bytes */
    assert_int_equal((int)m22->self_alloc, 300);
    assert_int_equal(m22->first_child, -1);
    /* unfolded: the library frame between main:20 and hook:40 is kept, its bytes counted in main:20's node */
    int32_t hook_full = -1;
    for (size_t i = 0; i < m->n_full; i++)
        if (m->full[i].line == 40 && m->full[i].self_alloc > 0)
            hook_full = (int32_t)i;
    assert_true(hook_full >= 0);
    const pf_callnode_t *hf = &m->full[hook_full], *decode = &m->full[hf->parent];
    assert_int_equal(hf->kind, PF_NODE_USER);
    assert_int_equal(hf->folded, node_id(m, hook));
    assert_int_equal(decode->kind, PF_NODE_LIBRARY);
    assert_string_equal(pf_model_str(m, decode->function), "decode");
    assert_int_equal(decode->folded, node_id(m, m20));
    assert_int_equal(m->full[decode->parent].folded, node_id(m, m20));
    assert_int_equal((int)decode->alloc, 200);
    double full_roots = 0;
    for (int32_t r = m->first_full_root; r >= 0; r = m->full[r].next_sibling)
        full_roots += m->full[r].alloc;
    assert_int_equal((int)full_roots, (int)m->total.alloc_bytes);
    assert_int_equal((int)root->peak, 2100);
    assert_int_equal((int)m20->peak, 1300);
    assert_int_equal((int)load20->peak, 1100);
    assert_int_equal((int)root->leaked, 1100);
    assert_int_equal((int)m20->leaked, 300);
    assert_int_equal((int)load20->leaked, 100);
    assert_int_equal((int)load21->leaked, 500);
    assert_int_equal(load20->depth, 2);
    /* largest at the peak first */
    assert_ptr_equal(&m->nodes[root->first_child], m20);
    assert_ptr_equal(&m->nodes[m20->next_sibling], m21);
    assert_ptr_equal(&m->nodes[m21->next_sibling], m22);
    assert_ptr_equal(&m->nodes[m20->first_child], load20);
    /* the line table is the tree's self bytes, summed by line */
    assert_int_equal((int)find_line(m, "/app.py", 10)->s.alloc_bytes, (int)(load20->self_alloc + load21->self_alloc));

    char *text = render_text(m, 120);
    const char *paths = strstr(text, "call paths");
    if (!paths || !strstr(paths, "\n  100.0%  2.05 KiB  2.05 KiB  <module> app.py:30\n") ||
        !strstr(paths, "\n   61.9%  1.27 KiB  1.27 KiB    main app.py:20\n") ||
        !strstr(paths, "\n   52.4%  1.07 KiB  1.07 KiB      load app.py:10\n"))
        fail_msg("no call paths section, or not as expected:\n%s", paths ? paths : text);
    /* the line of a helper two paths reach: which caller holds most of it at the peak */
    const char *largest = strstr(text, "largest at the peak");
    if (!largest || !strstr(largest, "app.py:10  1.56 KiB (76% of the peak) in load\n"
                                     "      via <module>:30 > main:20 (most of it; 2 paths in all)\n"))
        fail_msg("no via line under the largest line at the peak:\n%s", largest ? largest : text);
    free(text);
    char *json = render_json(m);
    const char *tree = strstr(json, "\"call_tree\":");
    if (!tree || !strstr(tree, "{\"id\":2,\"parent\":1,\"depth\":2,\"file\":\"/app.py\",\"line\":10,"
                               "\"function\":\"load\",\"alloc_bytes\":1100,\"self_alloc_bytes\":1100,"
                               "\"peak_bytes\":1100,\"self_peak_bytes\":1100,\"leaked_bytes\":100,"
                               "\"self_leaked_bytes\":100,\"gpu_bytes\":0,\"gpu_peak_bytes\":0}"))
        fail_msg("call_tree not as expected:\n%s", tree ? tree : json);
    if (strstr(tree, "\"parent\":-1,\"depth\":0,\"file\":\"/app.py\",\"line\":22,"))
        fail_msg("a path with no bytes of its own is in call_tree:\n%s", tree);
    free(json);
    char *html = render_html(m);
    const char *data = strstr(html, "<script type=\"application/json\" id=\"flame-data\">");
    if (!data || !strstr(data, "[[-1,2100,2100,1100,\"\\u003cmodule>\",\"app.py:30\",\"\",0,0],\n[0,1300,1300,300,\"main\""))
        fail_msg("no flame graph data:\n%s", data ? data : html);
    free(html);
    pf_model_free(m);
}

/* A child interpreter run by a shell has the shell for its parent: its header names the profiled process
 * that ran the shell and the shell's pid (via_pid, via_child). os.system's shell pid is not known (a start
 * of pid 0): its child is matched by time. */
static void test_started_through_a_shell(void **state)
{
    builder_t b;
    b_init(&b, PF_HDR_ROOT, 40);
    b_chunk(&b, 40);
    b_thread(&b, 1, 40, 0xA0);
    b_code(&b, 1, "/app.py", "<module>", 5);
    b_code(&b, 2, "/app.py", "<module>", 6);
    uint32_t shell_line = 1, system_line = 2;
    b_spawn(&b, 10, PF_SPAWN_PROCESS, 50, 40, 1, &shell_line);     /* subprocess.run(..., shell=True) */
    b_spawn(&b, 20, PF_SPAWN_PROCESS, 0, 40, 1, &system_line);     /* os.system(...) */
    b_save(&b, "shell.pflow", 0);
    struct { uint32_t pid, ppid, via_child; uint64_t t, bytes; } kids[2] = {{51, 50, 50, 12, 1000},
                                                                            {53, 52, 52, 22, 2000}};
    for (int i = 0; i < 2; i++) {
        b_init(&b, 0, kids[i].pid);
        pf_file_header_t *h = (pf_file_header_t *)b.buf;
        h->ppid = kids[i].ppid;
        h->via_pid = 40;
        h->via_child = kids[i].via_child;
        b_chunk(&b, kids[i].pid);
        b_thread(&b, kids[i].t, kids[i].pid, 0xB0);
        b_code(&b, 9, "<string>", "<module>", 1);
        uint32_t dash_c = 9;
        b_alloc(&b, kids[i].t + 1, 0x1000, kids[i].bytes, kids[i].bytes, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &dash_c);
        char name[64];
        snprintf(name, sizeof name, "shell.pflow.%u", kids[i].pid);
        b_save(&b, name, 0);
    }
    char path[256];
    snprintf(path, sizeof path, "%s/shell.pflow", tmpdir);
    pf_model_t *m = load_ok(path);
    const pf_line_t *shell = find_line(m, "/app.py", 5), *system = find_line(m, "/app.py", 6);
    assert_int_equal((int)shell->started_bytes, 1000);
    assert_int_equal((int)shell->started_procs, 1);
    assert_int_equal((int)system->started_bytes, 2000);
    assert_int_equal((int)system->started_procs, 1);
    pf_model_free(m);
}

/* Python children that ran unprofiled: each listed with the user's line that started it (its own stack's, or
 * its starting thread's origin), never taken for the start of a profiled process with the same pid. */
static void test_unprofiled_children(void **state)
{
    builder_t b;
    b_init(&b, PF_HDR_ROOT, 60);
    b_chunk(&b, 60);
    b_thread(&b, 1, 60, 0xA0);
    b_code(&b, 1, "/app.py", "<module>", 5);
    b_code(&b, 2, "/app.py", "<module>", 9);
    b_code(&b, 3, "/usr/lib/python3.11/subprocess.py", "_execute_child", 1800);
    uint32_t app5[2] = {3, 1}, app9 = 2, library = 3;
    b_spawn_of(&b, 10, PF_SPAWN_PROCESS, 61, 60, 2, app5, PF_SPAWN_UNPROFILED, "python3 -c pass");
    b_spawn_of(&b, 11, PF_SPAWN_PROCESS, 62, 60, 2, app5, PF_SPAWN_UNPROFILED, "python3 -c pass");
    b_spawn(&b, 12, PF_SPAWN_THREAD, 0xB0, 60, 1, &app9);
    b_spawn(&b, 20, PF_SPAWN_PROCESS, 63, 60, 1, &app9);       /* profiled */
    b_chunk(&b, 64);                                /* a pool thread started at app.py:9, in library code */
    b_thread(&b, 21, 64, 0xB0);
    b_spawn_of(&b, 22, PF_SPAWN_PROCESS, 65, 64, 1, &library, PF_SPAWN_UNPROFILED, "python3.11 worker.py");
    b_save(&b, "unprof.pflow", 0);
    b_init(&b, 0, 63);              /* the profiled child, which replaces itself with an unprofiled Python */
    b_chunk(&b, 63);
    ((pf_file_header_t *)b.buf)->ppid = 60;
    b_thread(&b, 25, 63, 0xA0);
    b_code(&b, 9, "<string>", "<module>", 1);
    uint32_t dash_c = 9;
    b_alloc(&b, 26, 0x1000, 2000, 2000, PF_DOMAIN_PYOBJ, PF_ALLOC_EXACT, 1, &dash_c);
    b_spawn_of(&b, 27, PF_SPAWN_PROCESS, 63, 63, 1, &dash_c, PF_SPAWN_UNPROFILED, "python3 -c print(1)");
    b_save(&b, "unprof.pflow.63", 0);
    char path[256];
    snprintf(path, sizeof path, "%s/unprof.pflow", tmpdir);
    pf_model_t *m = load_ok(path);
    assert_int_equal((int)m->n_unprofiled, 4);
    const pf_line_t *app9_line = find_line(m, "/app.py", 9);
    assert_int_equal((int)app9_line->started_bytes, 2000);     /* the profiled child still counts */
    assert_int_equal((int)app9_line->started_procs, 1);
    struct { uint32_t pid, starter; int line; const char *command; } want[4] = {
        {61, 60, 5, "python3 -c pass"}, {62, 60, 5, "python3 -c pass"}, {65, 60, 9, "python3.11 worker.py"},
        {63, 63, 9, "python3 -c print(1)"}};
    for (int i = 0; i < 4; i++) {
        const pf_unprofiled_t *u = &m->unprofiled[i];
        assert_int_equal((int)u->pid, (int)want[i].pid);
        assert_int_equal((int)u->starter_pid, (int)want[i].starter);
        assert_true(u->row >= 0);
        assert_int_equal(m->lines[u->row].line, want[i].line);
        assert_string_equal(u->command, want[i].command);
    }
    char *text = render_text(m, 120);
    if (!strstr(text, "; 4 Python processes not profiled (see below)"))
        fail_msg("header:\n%s", text);
    const char *section = strstr(text, "\nnot profiled ");
    if (!section || !strstr(section, "\n  app.py:5  2 processes, the first: python3 -c pass\n") ||
        !strstr(section, "\n  app.py:9  2 processes, the first: python3.11 worker.py\n") ||
        !strstr(section, "\n  fix: "))
        fail_msg("not-profiled section:\n%s", section ? section : text);
    free(text);
    text = render_json(m);
    const char *list = strstr(text, "\"unprofiled_processes\":[{\"pid\":61,\"started_by_pid\":60,\"file\":\"/app.py\","
                                    "\"line\":5,");
    if (!list || !strstr(list, "\"command\":\"python3 -c print(1)\"}]"))
        fail_msg("JSON:\n%s", text);
    free(text);
    text = render_html(m);
    const char *html = strstr(text, "<p id=\"unprofiled\">");
    if (!html || !strstr(html, "4 Python processes") || !strstr(html, "app.py:5</code> (2): <code>python3 -c pass"))
        fail_msg("HTML:\n%s", html ? html : text);
    free(text);
    pf_model_free(m);
}

/* ---- the reader ---- */


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_children_merged),
        cmocka_unit_test(test_started_by),
        cmocka_unit_test(test_unprofiled_children),
        cmocka_unit_test(test_started_through_a_shell),
        cmocka_unit_test(test_call_tree),
    };
    return cmocka_run_group_tests(tests, writer_setup, writer_teardown);
}
