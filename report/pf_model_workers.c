/* pf_model_workers.c - the workers of a merged job: labels and endings from the loader, each process's
 * bytes per line from the sweep, and the comparisons the workers section shows (pf_workers_int.h).
 *
 * Bytes at a process's own peak are kept lazily, as the sweep keeps a line's bytes at the program's peak:
 * each (process, line) entry remembers the process's peak epoch it last saw; when the process reaches a
 * new peak its epoch grows, and an entry touched later first copies its live bytes (unchanged since that
 * peak) into its peak bytes. Constant work per allocation and free, and only when several processes were
 * merged.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_util_int.h"
#include "pf_workers_int.h"

typedef struct entry {
    uint32_t proc;
    int32_t row;
    double alloc, live, at_peak;
    uint64_t seen_epoch;
} entry_t;

struct pf_workers_acc {
    pf_map_t index;         /* (proc << 32 | row) + 1 -> entry index */
    entry_t *entries;
    size_t n, cap;
    uint64_t *epoch;        /* per process: how many times its peak grew */
    size_t n_epoch;
};

static char *append_label(char *have, const char *key, const char *value)
{
    size_t a = have ? strlen(have) : 0, need = a + strlen(key) + strlen(value) + 3;
    char *s = pf_xrealloc(have, need);
    snprintf(s + a, need - a, "%s%s=%s", a ? " " : "", key, value);
    return s;
}

/* The value of key in labels ("" when absent), into buf. */
static const char *label_value(const char *labels, const char *key, char *buf, size_t size)
{
    buf[0] = '\0';
    size_t k = strlen(key);
    for (const char *p = labels; p && *p;) {
        size_t n = strcspn(p, " ");
        if (n > k && strncmp(p, key, k) == 0 && p[k] == '=')
            snprintf(buf, size, "%.*s", (int)(n - k - 1), p + k + 1);
        p += n + (p[n] == ' ');
    }
    return buf;
}

void pf_workers_mark(pf_model_t *m, pf_process_t *p, uint16_t kind, const pf_rec_mark_t *mk)
{
    (void)m;
    if (kind == PF_MARK_EXIT) {
        p->end_kind = PF_END_EXIT;
        p->end_code = (int32_t)mk->value;
        return;
    }
    char *text = pf_utf8_clean((const char *)(mk + 1), mk->note_len);
    char *eq = strchr(text, '=');
    if (eq) {
        *eq = '\0';
        if (strcmp(text, "host") == 0) {
            free(p->host);
            p->host = pf_xstrndup(eq + 1, strlen(eq + 1));
        } else {
            char have[8];
            if (!label_value(p->labels, text, have, sizeof have)[0])    /* the first of a key counts */
                p->labels = append_label(p->labels, text, eq + 1);
        }
    }
    free(text);
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && strcmp(s + n - k, tail) == 0;
}

/* Dask's worker process runs its nanny's WorkerProcess._run at the bottom of its main thread's stack, and
 * its tasks under worker.py's apply_function_simple / execute_task: code the main process of a
 * LocalCluster (which runs the nannies and the scheduler) never runs. Python 3.11 and older do not name
 * their threads for the OS, so the threads cannot tell. */
void pf_workers_code(pf_process_t *p, const char *file, const char *function)
{
    if ((ends_with(file, "/distributed/nanny.py") && strcmp(function, "_run") == 0) ||
        (ends_with(file, "/distributed/worker.py") &&
         (strcmp(function, "apply_function_simple") == 0 || strcmp(function, "execute_task") == 0)))
        p->dask_worker = 1;
}

void pf_workers_ended(pf_process_t *p, int finalized, int launcher_exit)
{
    if (launcher_exit)
        p->end_kind = PF_END_LAUNCHER;
    else if (finalized && p->end_kind != PF_END_EXIT)
        p->end_kind = PF_END_SHUTDOWN;
}

/* ---- the sweep ---- */

static entry_t *entry_of(pf_model_t *m, uint32_t proc, int32_t row)
{
    struct pf_workers_acc *A = m->workers_acc;
    if (!A) {
        A = m->workers_acc = pf_xcalloc(1, sizeof *A);
        A->n_epoch = m->n_procs;
        A->epoch = pf_xcalloc(A->n_epoch ? A->n_epoch : 1, sizeof *A->epoch);
    }
    int created;
    uint64_t *v = pf_map_put(&A->index, (((uint64_t)proc << 32) | (uint32_t)row) + 1, &created);
    if (created) {
        entry_t *e = PF_VEC_PUSH(A->entries, A->n, A->cap);
        memset(e, 0, sizeof *e);
        e->proc = proc;
        e->row = row;
        *v = A->n - 1;
    }
    entry_t *e = &A->entries[*v];
    if (proc < A->n_epoch && e->seen_epoch != A->epoch[proc]) {
        e->at_peak = e->live;     /* unchanged since the process's latest peak */
        e->seen_epoch = A->epoch[proc];
    }
    return e;
}

void pf_workers_alloc_in(pf_model_t *m, uint32_t proc, int32_t row, double est, int new_peak)
{
    if (m->n_procs < 2 || row < 0)
        return;
    entry_t *e = entry_of(m, proc, row);
    e->alloc += est;
    e->live += est;
    if (new_peak && proc < m->workers_acc->n_epoch)
        m->workers_acc->epoch[proc]++;
}

void pf_workers_free_in(pf_model_t *m, uint32_t proc, int32_t row, double est)
{
    if (m->n_procs < 2 || row < 0 || !m->workers_acc)
        return;
    entry_of(m, proc, row)->live -= est;
}

static int cmp_proc_line(const void *a, const void *b)
{
    const pf_proc_line_t *x = a, *y = b;
    if (x->proc != y->proc)
        return x->proc < y->proc ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

void pf_workers_finish(pf_model_t *m)
{
    struct pf_workers_acc *A = m->workers_acc;
    if (!A)
        return;
    m->proc_lines = pf_xcalloc(A->n ? A->n : 1, sizeof *m->proc_lines);
    for (size_t i = 0; i < A->n; i++) {
        entry_t *e = &A->entries[i];
        if (e->proc < A->n_epoch && e->seen_epoch != A->epoch[e->proc])
            e->at_peak = e->live;
        m->proc_lines[i] = (pf_proc_line_t){e->proc, e->row, e->alloc, e->at_peak > 0 ? e->at_peak : 0};
    }
    m->n_proc_lines = A->n;
    qsort(m->proc_lines, m->n_proc_lines, sizeof *m->proc_lines, cmp_proc_line);
    pf_map_free(&A->index);
    free(A->entries);
    free(A->epoch);
    free(A);
    m->workers_acc = NULL;
}

void pf_workers_free_model(pf_model_t *m)
{
    for (size_t i = 0; i < m->n_procs; i++) {
        free(m->procs[i].host);
        free(m->procs[i].labels);
    }
    free(m->proc_lines);
    if (m->workers_acc) {
        pf_map_free(&m->workers_acc->index);
        free(m->workers_acc->entries);
        free(m->workers_acc->epoch);
        free(m->workers_acc);
    }
}

/* ---- reading ---- */

static int is_worker(const pf_model_t *m, const pf_process_t *p)
{
    return m->from_set || p->dask_worker || (p->labels && strstr(p->labels, "rank="));
}

size_t pf_workers_list(const pf_model_t *m, uint32_t *idx, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n_procs && n < cap; i++)
        if (is_worker(m, &m->procs[i]))
            idx[n++] = (uint32_t)i;
    return n;
}

void pf_workers_name(const pf_process_t *p, char *buf, size_t size)
{
    char rank[32], world[32];
    label_value(p->labels, "rank", rank, sizeof rank);
    label_value(p->labels, "world_size", world, sizeof world);
    if (rank[0] && world[0])
        snprintf(buf, size, "rank %s/%s", rank, world);
    else if (rank[0])
        snprintf(buf, size, "rank %s", rank);
    else if (p->dask_worker)
        snprintf(buf, size, "dask worker");
    else
        snprintf(buf, size, "%s", p->root ? "main" : "process");
}

void pf_workers_ending(const pf_model_t *m, const pf_process_t *p, char *buf, size_t size)
{
    switch (p->end_kind) {
    case PF_END_LAUNCHER:
        snprintf(buf, size, m->exit_signaled ? "killed by signal %d" : "exit %d", m->exit_code);
        return;
    case PF_END_SHUTDOWN:
        snprintf(buf, size, "finished");
        return;
    case PF_END_EXIT:
        snprintf(buf, size, "_exit %d", p->end_code);
        return;
    case PF_END_EXEC:
        snprintf(buf, size, "exec'd %s", p->exec_command);
        return;
    default:
        snprintf(buf, size, "killed or crashed");
    }
}

typedef struct diff {
    int32_t row;
    double d;
} diff_t;

static int cmp_abs_desc(const void *a, const void *b)
{
    double x = fabs(((const diff_t *)a)->d), y = fabs(((const diff_t *)b)->d);
    return (x < y) - (x > y);
}

/* The first proc_lines entry of process p (proc_lines is sorted by process, then row). */
static size_t first_of(const pf_model_t *m, uint32_t p)
{
    size_t i = 0;
    while (i < m->n_proc_lines && m->proc_lines[i].proc < p)
        i++;
    return i;
}

size_t pf_workers_diff(const pf_model_t *m, uint32_t a, uint32_t b, int32_t *rows, double *diffs, size_t cap)
{
    diff_t *all = pf_xcalloc(m->n_proc_lines + 1, sizeof *all);
    size_t n = 0, i = first_of(m, a), j = first_of(m, b);
    for (;;) {    /* walk a's and b's rows together */
        int ia = i < m->n_proc_lines && m->proc_lines[i].proc == a;
        int jb = j < m->n_proc_lines && m->proc_lines[j].proc == b;
        if (!ia && !jb)
            break;
        diff_t d;
        if (ia && (!jb || m->proc_lines[i].row < m->proc_lines[j].row))
            d = (diff_t){m->proc_lines[i].row, m->proc_lines[i].peak_bytes}, i++;
        else if (!ia || m->proc_lines[j].row < m->proc_lines[i].row)
            d = (diff_t){m->proc_lines[j].row, -m->proc_lines[j].peak_bytes}, j++;
        else
            d = (diff_t){m->proc_lines[i].row, m->proc_lines[i].peak_bytes - m->proc_lines[j].peak_bytes}, i++, j++;
        if (fabs(d.d) >= 1 && d.row >= 0 && (size_t)d.row < m->n_lines)
            all[n++] = d;
    }
    qsort(all, n, sizeof *all, cmp_abs_desc);
    if (n > cap)
        n = cap;
    for (size_t k = 0; k < n; k++) {
        rows[k] = all[k].row;
        diffs[k] = all[k].d;
    }
    free(all);
    return n;
}

/* Dask's client calls that hand work to the workers (distributed/client.py); in 2022.12 and later each
 * also reads the calling code for the dashboard (_get_computation_code), which allocates enough to be
 * sampled at every call. */
static int is_submit_call(const char *file, const char *function)
{
    static const char *const calls[] = {"submit", "map", "compute", "persist", "get", "scatter", NULL};
    if (!ends_with(file, "/distributed/client.py"))
        return 0;
    for (int i = 0; calls[i]; i++)
        if (strcmp(function, calls[i]) == 0)
            return 1;
    return 0;
}

size_t pf_workers_submissions(const pf_model_t *m, pf_submission_t *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n_full; i++) {
        const pf_callnode_t *c = &m->full[i];
        if (c->kind != PF_NODE_LIBRARY || !is_submit_call(pf_model_str(m, c->file), pf_model_str(m, c->function)))
            continue;
        int32_t u = c->parent;
        while (u >= 0 && m->full[u].kind != PF_NODE_USER)
            u = m->full[u].parent;
        if (u < 0)
            continue;   /* submitted from library code only: no line of yours to name */
        size_t k = 0;
        while (k < n && !(out[k].file == m->full[u].file && out[k].line == m->full[u].line &&
                          out[k].call == c->function))
            k++;
        if (k == n && n < cap)
            out[n++] = (pf_submission_t){m->full[u].file, m->full[u].line, c->function};
    }
    return n;
}
