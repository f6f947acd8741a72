/* pf_render_workers.c - the workers section of the text and JSON reports: each worker of a merged job by
 * what its engine calls it (rank, Dask worker), its host and pid, peak, allocated bytes and how it ended;
 * then the imbalance: the largest and smallest peak, and the lines that make the difference.
 *
 * Shown when at least two processes are workers (pf_workers_list): an engine's rank labels, Dask's worker
 * code, or a profile loaded from a directory or several files (pyflow report DIR).
 */
#include <stdlib.h>
#include <string.h>

#include "pf_html_int.h"
#include "pf_report_int.h"
#include "pf_workers_int.h"

#define MAX_WORKERS 4096
#define DIFF_LINES 5

/* The workers with the largest and the smallest peak. Returns 0 when fewer than two. */
static int extremes(const pf_model_t *m, const uint32_t *idx, size_t n, uint32_t *hi, uint32_t *lo)
{
    if (n < 2)
        return 0;
    *hi = *lo = idx[0];
    for (size_t i = 1; i < n; i++) {
        if (m->procs[idx[i]].peak_bytes > m->procs[*hi].peak_bytes)
            *hi = idx[i];
        if (m->procs[idx[i]].peak_bytes < m->procs[*lo].peak_bytes)
            *lo = idx[i];
    }
    return 1;
}

/* "file:line" of a row; full: the whole path (JSON), else its last component (text, HTML) */
static void where_of(const pf_model_t *m, int32_t row, int full, char *buf, size_t size)
{
    const pf_line_t *l = &m->lines[row];
    const char *file = pf_model_str(m, l->file);
    snprintf(buf, size, "%s:%d", full ? file : pf_report_basename(file), l->line);
}

void pf_render_workers_text(const pf_model_t *m, FILE *f, int width)
{
    uint32_t *idx = malloc(MAX_WORKERS * sizeof *idx);
    size_t n = idx ? pf_workers_list(m, idx, MAX_WORKERS) : 0;
    if (n < 2) {
        free(idx);
        return;
    }
    size_t hosts = 0;
    for (size_t i = 0; i < n; i++) {
        const char *h = m->procs[idx[i]].host ? m->procs[idx[i]].host : "";
        size_t j = 0;
        while (j < i && strcmp(m->procs[idx[j]].host ? m->procs[idx[j]].host : "", h) != 0)
            j++;
        hosts += j == i;
    }
    fprintf(f, "\nworkers: %zu processes on %zu host%s (per-line rows above are their sum)\n", n, hosts,
            hosts == 1 ? "" : "s");
    fprintf(f, "%-14s %-16s %-8s %9s %9s  %s\n", "worker", "host", "pid", "peak", "allocated", "ended");
    for (size_t i = 0; i < n; i++) {
        const pf_process_t *p = &m->procs[idx[i]];
        char name[48], ending[64], a[24], b[24];
        pf_workers_name(p, name, sizeof name);
        pf_workers_ending(m, p, ending, sizeof ending);
        fprintf(f, "%-14s %-16.16s %-8u %9s %9s  %s\n", name, p->host ? p->host : "-", p->pid,
                pf_report_human_bytes(p->peak_bytes, a), pf_report_human_bytes(p->alloc_bytes, b), ending);
    }
    pf_submission_t subs[DIFF_LINES];
    size_t ns = pf_workers_submissions(m, subs, DIFF_LINES);
    for (size_t i = 0; i < ns; i++)
        fprintf(f, "%s %s:%d (Client.%s)%s", i ? "," : "tasks submitted at", pf_report_basename(pf_model_str(m, subs[i].file)),
                subs[i].line, pf_model_str(m, subs[i].call), i + 1 == ns ? "\n" : "");
    uint32_t hi, lo;
    if (extremes(m, idx, n, &hi, &lo) && m->procs[hi].peak_bytes > m->procs[lo].peak_bytes) {
        char a[24], b[24], nh[48], nl[48];
        pf_workers_name(&m->procs[hi], nh, sizeof nh);
        pf_workers_name(&m->procs[lo], nl, sizeof nl);
        fprintf(f, "imbalance: largest peak %s (%s pid %u), smallest %s (%s pid %u)\n",
                pf_report_human_bytes(m->procs[hi].peak_bytes, a), nh, m->procs[hi].pid,
                pf_report_human_bytes(m->procs[lo].peak_bytes, b), nl, m->procs[lo].pid);
        int32_t rows[DIFF_LINES];
        double diffs[DIFF_LINES];
        size_t k = pf_workers_diff(m, hi, lo, rows, diffs, DIFF_LINES);
        int col = width > 60 ? 30 : 20;
        if (k)
            fprintf(f, "  %-*s %s\n", col, "line", "largest - smallest, each at its own peak");
        for (size_t i = 0; i < k; i++) {
            char where[300], d[24];
            where_of(m, rows[i], 0, where, sizeof where);
            fprintf(f, "  %-*s %s%s\n", col, where, diffs[i] > 0 ? "+" : "-",
                    pf_report_human_bytes(diffs[i] > 0 ? diffs[i] : -diffs[i], d));
        }
    }
    free(idx);
}

void pf_render_workers_json(const pf_model_t *m, pf_json_t *j)
{
    uint32_t *idx = malloc(MAX_WORKERS * sizeof *idx);
    size_t n = idx ? pf_workers_list(m, idx, MAX_WORKERS) : 0;
    pf_json_key(j, "workers");
    pf_json_begin_array(j);
    for (size_t i = 0; i < n; i++) {
        const pf_process_t *p = &m->procs[idx[i]];
        char name[48], ending[64];
        pf_workers_name(p, name, sizeof name);
        pf_workers_ending(m, p, ending, sizeof ending);
        pf_json_begin_object(j);
        pf_json_key(j, "name");
        pf_json_string(j, name);
        pf_json_key(j, "pid");
        pf_json_int(j, p->pid);
        pf_json_key(j, "host");
        if (p->host)
            pf_json_string(j, p->host);
        else
            pf_json_null(j);
        pf_json_key(j, "labels");
        pf_json_string(j, p->labels ? p->labels : "");
        pf_json_key(j, "start_s");     /* after the first process's start, on the job's clock */
        pf_json_number(j, (double)p->offset_ns / 1e9);
        pf_json_key(j, "dask_worker");
        pf_json_bool(j, p->dask_worker);
        pf_json_key(j, "peak_bytes");
        pf_json_number(j, p->peak_bytes);
        pf_json_key(j, "alloc_bytes");
        pf_json_number(j, p->alloc_bytes);
        pf_json_key(j, "ended");
        pf_json_string(j, ending);
        pf_json_key(j, "killed");
        pf_json_bool(j, p->end_kind == PF_END_NONE || (p->end_kind == PF_END_LAUNCHER && m->exit_signaled));
        pf_json_key(j, "lines");    /* this worker's bytes per line: allocated, and live at its own peak */
        pf_json_begin_array(j);
        for (size_t k = 0; k < m->n_proc_lines; k++) {
            const pf_proc_line_t *pl = &m->proc_lines[k];
            if (pl->proc != idx[i] || pl->row < 0 || (size_t)pl->row >= m->n_lines)
                continue;
            char where[300];
            where_of(m, pl->row, 1, where, sizeof where);
            pf_json_begin_object(j);
            pf_json_key(j, "line");
            pf_json_string(j, where);
            pf_json_key(j, "alloc_bytes");
            pf_json_number(j, pl->alloc_bytes);
            pf_json_key(j, "peak_bytes");
            pf_json_number(j, pl->peak_bytes);
            pf_json_end_object(j);
        }
        pf_json_end_array(j);
        pf_json_end_object(j);
    }
    pf_json_end_array(j);
    pf_submission_t subs[DIFF_LINES];
    size_t ns = pf_workers_submissions(m, subs, DIFF_LINES);
    pf_json_key(j, "task_submissions");
    pf_json_begin_array(j);
    for (size_t i = 0; i < ns; i++) {
        pf_json_begin_object(j);
        pf_json_key(j, "file");
        pf_json_string(j, pf_model_str(m, subs[i].file));
        pf_json_key(j, "line");
        pf_json_int(j, subs[i].line);
        pf_json_key(j, "call");
        pf_json_string(j, pf_model_str(m, subs[i].call));
        pf_json_end_object(j);
    }
    pf_json_end_array(j);
    uint32_t hi, lo;
    pf_json_key(j, "imbalance");
    if (!extremes(m, idx, n, &hi, &lo)) {
        pf_json_null(j);
        free(idx);
        return;
    }
    pf_json_begin_object(j);
    pf_json_key(j, "largest_peak_pid");
    pf_json_int(j, m->procs[hi].pid);
    pf_json_key(j, "largest_peak_bytes");
    pf_json_number(j, m->procs[hi].peak_bytes);
    pf_json_key(j, "smallest_peak_pid");
    pf_json_int(j, m->procs[lo].pid);
    pf_json_key(j, "smallest_peak_bytes");
    pf_json_number(j, m->procs[lo].peak_bytes);
    pf_json_key(j, "lines");
    pf_json_begin_array(j);
    int32_t rows[DIFF_LINES];
    double diffs[DIFF_LINES];
    size_t k = pf_workers_diff(m, hi, lo, rows, diffs, DIFF_LINES);
    for (size_t i = 0; i < k; i++) {
        char where[300];
        where_of(m, rows[i], 1, where, sizeof where);
        pf_json_begin_object(j);
        pf_json_key(j, "line");
        pf_json_string(j, where);
        pf_json_key(j, "peak_bytes_difference");
        pf_json_number(j, diffs[i]);
        pf_json_end_object(j);
    }
    pf_json_end_array(j);
    pf_json_end_object(j);
    free(idx);
}

void pf_render_workers_html(const pf_model_t *m, FILE *f)
{
    uint32_t *idx = malloc(MAX_WORKERS * sizeof *idx);
    size_t n = idx ? pf_workers_list(m, idx, MAX_WORKERS) : 0;
    if (n < 2) {
        free(idx);
        return;
    }
    fputs("<h2>Workers</h2>\n<table id=\"workers\" class=\"sortable\"><thead><tr><th data-k=\"worker\">worker</th>"
          "<th data-k=\"host\">host</th><th data-k=\"pid\">pid</th><th data-k=\"peak\">peak</th>"
          "<th data-k=\"alloc\">allocated</th><th data-k=\"ended\">ended</th></tr></thead><tbody>\n", f);
    for (size_t i = 0; i < n; i++) {
        const pf_process_t *p = &m->procs[idx[i]];
        char name[48], ending[64];
        pf_workers_name(p, name, sizeof name);
        pf_workers_ending(m, p, ending, sizeof ending);
        fputs("<tr><td class=\"src\">", f);
        pf_html_esc(f, name);
        fputs("</td><td class=\"src\">", f);
        pf_html_esc(f, p->host ? p->host : "-");
        fprintf(f, "</td><td data-v=\"%u\">%u</td>", p->pid, p->pid);
        pf_html_num_cell(f, p->peak_bytes);
        pf_html_num_cell(f, p->alloc_bytes);
        fputs("<td class=\"src\">", f);
        pf_html_esc(f, ending);
        fputs("</td></tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
    uint32_t hi, lo;
    if (extremes(m, idx, n, &hi, &lo) && m->procs[hi].peak_bytes > m->procs[lo].peak_bytes) {
        char a[24], b[24];
        int32_t rows[DIFF_LINES];
        double diffs[DIFF_LINES];
        size_t k = pf_workers_diff(m, hi, lo, rows, diffs, DIFF_LINES);
        fprintf(f, "<p id=\"imbalance\">Imbalance: largest peak %s (pid %u), smallest %s (pid %u)%s",
                pf_report_human_bytes(m->procs[hi].peak_bytes, a), m->procs[hi].pid,
                pf_report_human_bytes(m->procs[lo].peak_bytes, b), m->procs[lo].pid, k ? "; the lines that differ most at their peaks:" : "");
        for (size_t i = 0; i < k; i++) {
            char where[300], d[24];
            where_of(m, rows[i], 0, where, sizeof where);
            fprintf(f, "%s ", i ? "," : "");
            pf_html_esc(f, where);
            fprintf(f, " %s%s", diffs[i] > 0 ? "+" : "-", pf_report_human_bytes(diffs[i] > 0 ? diffs[i] : -diffs[i], d));
        }
        fputs("</p>\n", f);
    }
    free(idx);
}
