/* pf_report_tests.c - the tests the pytest plugin measured, in the report.
 *
 * At the end of each test's call the plugin (python/pyflow/pytest_plugin.py) writes a label into the
 * profile: "pytest-result\tALLOC_PY\tALLOC_NATIVE\tPEAK\tLEAKED_PY\tLEAKED_NATIVE\tLIMIT\tNODEID" (bytes as
 * whole numbers; LIMIT the limit it failed or "-"; the node id last, so a label cut at the runtime's 1024
 * bytes loses only the end of a long id). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_json_int.h"
#include "pf_model_int.h"
#include "pf_report_int.h"
#include "pf_util_int.h"

#define TAG "pytest-result\t"

void pf_tests_note(pf_model_t *m, const char *label, size_t len)
{
    size_t tag = sizeof TAG - 1;
    if (len <= tag || memcmp(label, TAG, tag) != 0)
        return;
    char *text = pf_utf8_clean(label + tag, len - tag);
    pf_test_result_t t = {0};
    char limit[16];
    int id_at = 0;
    if (sscanf(text, "%lf\t%lf\t%lf\t%lf\t%lf\t%15[^\t]\t%n", &t.alloc_python, &t.alloc_native, &t.peak,
               &t.leaked_python, &t.leaked_native, limit, &id_at) == 6 && id_at > 0 && text[id_at]) {
        snprintf(t.failed_limit, sizeof t.failed_limit, "%s", strcmp(limit, "-") ? limit : "");
        t.nodeid = pf_xstrndup(text + id_at, strlen(text + id_at));
        *PF_VEC_PUSH(m->tests, m->n_tests, m->cap_tests) = t;
    }
    free(text);
}

void pf_tests_free(pf_model_t *m)
{
    for (size_t i = 0; i < m->n_tests; i++)
        free(m->tests[i].nodeid);
    free(m->tests);
    m->tests = NULL;
    m->n_tests = m->cap_tests = 0;
}

static int by_peak(const void *a, const void *b)
{
    double x = (*(const pf_test_result_t *const *)a)->peak, y = (*(const pf_test_result_t *const *)b)->peak;
    return x < y ? 1 : x > y ? -1 : 0;
}

void pf_render_tests_text(const pf_model_t *m, FILE *f, int rows)
{
    if (!m->n_tests)
        return;
    const pf_test_result_t **order = pf_xmalloc(m->n_tests * sizeof *order);
    for (size_t i = 0; i < m->n_tests; i++)
        order[i] = &m->tests[i];
    qsort(order, m->n_tests, sizeof *order, by_peak);
    fprintf(f, "\ntests (pytest, %zu measured, largest peak first)\n", m->n_tests);
    fprintf(f, "  %10s %10s %10s %10s %10s  test\n", "allocated", "python", "native", "peak", "left live");
    for (size_t i = 0; i < m->n_tests && i < (size_t)rows; i++) {
        const pf_test_result_t *t = order[i];
        char a[24], p[24], n[24], k[24], l[24];
        fprintf(f, "  %10s %10s %10s %10s %10s  %s%s%s\n", pf_report_human_bytes(t->alloc_python + t->alloc_native, a),
                pf_report_human_bytes(t->alloc_python, p), pf_report_human_bytes(t->alloc_native, n),
                pf_report_human_bytes(t->peak, k), pf_report_human_bytes(t->leaked_python + t->leaked_native, l),
                t->nodeid, t->failed_limit[0] ? "  over " : "", t->failed_limit);
    }
    free(order);
}

static void bytes(pf_json_t *j, const char *key, double v)
{
    pf_json_key(j, key);
    pf_json_number(j, v > 0 ? v : 0);
}

void pf_render_tests_json(pf_json_t *j, const pf_model_t *m)
{
    pf_json_begin_array(j);
    for (size_t i = 0; i < m->n_tests; i++) {
        const pf_test_result_t *t = &m->tests[i];
        pf_json_begin_object(j);
        pf_json_key(j, "nodeid");
        pf_json_string(j, t->nodeid);
        bytes(j, "alloc_bytes", t->alloc_python + t->alloc_native);
        bytes(j, "python_bytes", t->alloc_python);
        bytes(j, "native_bytes", t->alloc_native);
        bytes(j, "peak_bytes", t->peak);
        bytes(j, "leaked_bytes", t->leaked_python + t->leaked_native);
        bytes(j, "leaked_python_bytes", t->leaked_python);
        bytes(j, "leaked_native_bytes", t->leaked_native);
        pf_json_key(j, "failed_limit");
        if (t->failed_limit[0])
            pf_json_string(j, t->failed_limit);
        else
            pf_json_null(j);
        pf_json_end_object(j);
    }
    pf_json_end_array(j);
}
