/* pf_model_watch.c - the watch records (pyflow run --watch) in the model: each thread's statistics summed,
 * every resolved store/load pair charged to the line of its repeat, and the redundant pairs grouped by
 * kind and the lines of the first access and its repeat, with a hybrid call path for each end.
 *
 * A pair stands for credited_bytes (its length times the samples it represents), so per-line fractions
 * are redundant credited bytes over all credited bytes of that kind charged to the line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_linetable_int.h"
#include "pf_report_int.h"
#include "pf_sweep_int.h"

#define PF_PATH_NATIVE_MAX 6    /* native frames shown in a path before the Python ones */
#define PF_PATH_PY_MAX 6

void pf_model_watch_totals(loader_t *L)
{
    pf_watch_summary_t *w = &L->m->watch;
    for (size_t p = 0; p < L->n_procs; p++) {
        const proc_state_t *P = &L->procs[p];
        for (size_t i = 0; i < P->n_watch_last; i++) {
            const pf_rec_watch_stats_t *s = P->watch_last[i];
            if (!w->present) {
                snprintf(w->event, sizeof w->event, "%.*s", (int)strnlen(s->event, sizeof s->event), s->event);
                w->period = s->period;
                w->source = s->source;
                w->emulated = s->emulated;
                w->budget_pct = s->budget_pct;
                w->present = 1;
            }
            if (s->widened < 64 && s->period >> s->widened < w->period)
                w->period = s->period >> s->widened;    /* the configured one (pf_format.h) */
            if (s->period > w->period_max)
                w->period_max = s->period;
            w->widened_threads += s->widened ? 1 : 0;
            w->samples += s->samples;
            w->samples_armed += s->samples_armed;
            w->dropped_filter += s->dropped_filter;
            w->dropped_nomem += s->dropped_nomem;
            w->dropped_busy += s->dropped_busy;
            w->dropped_reservoir += s->dropped_reservoir;
            w->traps += s->traps;
            w->same_call += s->same_call;
            w->header_words += s->header_words;
            w->store_pairs += s->store_pairs;
            w->store_bytes += s->store_bytes;
            w->silent_store_bytes += s->silent_store_bytes;
            w->load_pairs += s->load_pairs;
            w->load_bytes += s->load_bytes;
            w->redundant_load_bytes += s->redundant_load_bytes;
            w->copy_watches += s->copy_watches;
            w->copy_writes += s->copy_writes;
        }
    }
}

/* ---- hybrid call paths ---- */

static void append(char *buf, size_t size, size_t *len, const char *s)
{
    int n = snprintf(buf + *len, size - *len, "%s%s", *len ? " <- " : "", s);
    if (n > 0)
        *len = *len + (size_t)n < size ? *len + (size_t)n : size - 1;
}

/* "symbol (library)" of ip in any loaded object, or NULL. */
static const char *native_name(sweeper_t *S, uint32_t proc, uint64_t ip, int is_return, char *out, size_t size)
{
    const proc_state_t *P = &S->L->procs[proc];
    for (size_t k = 0; k < P->n_modules; k++) {
        const module_t *mo = &P->modules[k];
        if (ip >= mo->start && ip < mo->end)
            return pf_symbols_name(S->symbols, S->m->strings[mo->path], ip - mo->bias - (is_return != 0), out, size);
    }
    return NULL;
}

/* The native frames down to the interpreter (the library code the Python line called), then the Python
 * frames, innermost first: where the two layers meet is where the interpreter called into the library.
 * ips[0] of an access is the accessing instruction (first) or the one after it (a trap-after repeat). */
static uint32_t hybrid_path(sweeper_t *S, uint32_t proc, const pf_rec_pyframe_t *py, uint16_t n_py,
                            const uint64_t *ips, uint16_t n_native, int first_is_return)
{
    char path[2048], name[512], frame[768];
    size_t len = 0;
    path[0] = '\0';
    const proc_state_t *P = &S->L->procs[proc];
    for (uint16_t i = 0, shown = 0; i < n_native && shown < PF_PATH_NATIVE_MAX; i++) {
        const char *n = native_name(S, proc, ips[i], i > 0 || first_is_return, name, sizeof name);
        if (!n)
            break;
        if (strstr(n, "_PyEval_EvalFrame"))
            break;      /* the interpreter loop: the Python frames take over */
        append(path, sizeof path, &len, n);
        shown++;
    }
    for (uint16_t i = 0; i < n_py && i < PF_PATH_PY_MAX; i++) {
        uint64_t *ci = pf_map_get(&P->codes, py[i].code_id);
        if (!ci)
            continue;
        const pcode_t *pc = &P->pcodes[*ci - 1];
        int line = pf_linetable_line(pc->format, pc->table, pc->table_len, pc->firstlineno, py[i].lasti_bytes);
        snprintf(frame, sizeof frame, "%s:%d (%s)", S->m->strings[pc->file], line, S->m->strings[pc->function]);
        append(path, sizeof path, &len, frame);
    }
    return pf_model_intern(S->m, path, len);
}

/* ---- pairs ---- */

static void charge(pf_stats_t *s, unsigned kind, int redundant, double bytes)
{
    if (kind == PF_ACCESS_STORE) {
        s->store_bytes += bytes;
        s->redundant_store_bytes += redundant ? bytes : 0;
    } else {
        s->load_bytes += bytes;
        s->redundant_load_bytes += redundant ? bytes : 0;
    }
}

void pf_sweep_access(sweeper_t *S, const event_t *e)
{
    const pf_rec_access_pair_t *a = pf_event_payload(S->L, e);
    const pf_rec_pyframe_t *first_py = (const pf_rec_pyframe_t *)(a + 1);
    const uint64_t *first_ips = (const uint64_t *)(first_py + a->n_py_first);
    const pf_rec_pyframe_t *repeat_py = (const pf_rec_pyframe_t *)(first_ips + a->n_native_first);
    const uint64_t *repeat_ips = (const uint64_t *)(repeat_py + a->n_py_repeat);
    pf_model_t *m = S->m;
    int redundant = (a->flags & PF_ACCESS_REDUNDANT) != 0;
    double bytes = (double)a->credited_bytes;
    uint8_t no_py = (a->flags & PF_ACCESS_NO_PYSTATE) ? PF_ALLOC_NO_PYSTATE : 0;
    int32_t fn, row = pf_sweep_attribute(S, e->proc, NULL, repeat_py, a->n_py_repeat, no_py, &fn, NULL, NULL);
    charge(&m->lines[row].s, e->aux, redundant, bytes);
    charge(&m->funcs[fn].s, e->aux, redundant, bytes);
    charge(&m->total, e->aux, redundant, bytes);
    if (!redundant)
        return;

    int32_t first_fn, first_row = -1;
    if (a->n_py_first)
        first_row = pf_sweep_attribute(S, e->proc, NULL, first_py, a->n_py_first, 0, &first_fn, NULL, NULL);
    uint32_t first_native = pf_sweep_native_site(S, e->proc, first_ips, a->n_native_first);
    uint32_t repeat_native = pf_sweep_native_site(S, e->proc, repeat_ips, a->n_native_repeat);
    /* grouped by kind and the two lines: in a stripped library every instruction would be a group of its
     * own; the first pair's native functions and paths represent the group */
    uint64_t k = pf_sweep_key3(e->aux, (uint32_t)first_row, (uint32_t)row);
    int created;
    uint64_t *v = pf_map_put(&S->redundancy_index, k, &created);
    if (created) {
        pf_redundancy_t *r = PF_VEC_PUSH(m->redundancies, m->n_redundancies, m->cap_redundancies);
        r->kind = e->aux;
        r->first_line = first_row;
        r->repeat_line = row;
        r->first_native = first_native;
        r->repeat_native = repeat_native;
        r->first_path = hybrid_path(S, e->proc, first_py, a->n_py_first, first_ips, a->n_native_first, 0);
        r->repeat_path = hybrid_path(S, e->proc, repeat_py, a->n_py_repeat, repeat_ips, a->n_native_repeat, 1);
        *v = m->n_redundancies;
    }
    pf_redundancy_t *r = &m->redundancies[*v - 1];
    r->bytes += bytes;
    r->count += 1;
    r->approx |= (a->flags & PF_ACCESS_APPROX) != 0;
}

static int cmp_bytes_desc(const void *a, const void *b)
{
    const pf_redundancy_t *x = a, *y = b;
    return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : 0;
}

static const char *redundancy_category(const pf_model_t *m, const pf_redundancy_t *r);
static const char *access_fix(const char *category);

void pf_sweep_access_finish(sweeper_t *S)
{
    pf_model_t *m = S->m;
    for (size_t i = 0; i < m->n_redundancies; i++) {
        pf_redundancy_t *r = &m->redundancies[i];
        r->category = redundancy_category(m, r);
        r->fix = access_fix(r->category);
    }
    if (m->n_redundancies)
        qsort(m->redundancies, m->n_redundancies, sizeof *m->redundancies, cmp_bytes_desc);
}

/* ---- category (a display heuristic, decided once here for every renderer) ----
 * PieProf's interaction inefficiencies, told apart by where the two accesses ran and by the source line
 * (stripped libraries such as Debian's numpy give no function names to go by):
 *  - on two different lines: a native routine called again with the same arguments;
 *  - on one line that accumulates element by element (`total += a[i]`): API misuse, one numpy call
 *    (np.sum, np.cumsum) would do the loop;
 *  - on one line that indexes (`out[i, j] = a[i, j] * b[i, j]`), or inside an indexing routine: the loop
 *    walks arrays element by element, re-reading their headers each time: slice underutilization;
 *  - on one line otherwise: the line recomputes what it computed last iteration: loop-invariant
 *    computation. */
static const char *redundancy_category(const pf_model_t *m, const pf_redundancy_t *r)
{
    /* a first access whose line is unknown (its frames could not be read: a bracketed row, or none) says
     * nothing of where it ran: judged by the repeat alone, not taken for another line's call */
    int first_known = r->first_line >= 0 && pf_model_str(m, m->lines[r->first_line].file)[0] != '[';
    if (r->repeat_line < 0 || (first_known && r->first_line != r->repeat_line))
        return "repeated native call with the same arguments";
    const pf_line_t *l = &m->lines[r->repeat_line];
    const char *src = pf_report_source_line(m, pf_model_str(m, l->file), l->line);
    const char *native = pf_model_str(m, r->repeat_native);
    int indexes = strchr(src, '[') != NULL || strstr(native, "subscript") || strstr(native, "index");
    int accumulates = strstr(src, "+=") || strstr(src, "-=") || strstr(src, "*=");
    if (indexes && accumulates)
        return "API misuse";
    if (indexes)
        return "slice underutilization";
    return "loop-invariant computation";
}

/* What to do about each category. */
static const char *access_fix(const char *category)
{
    if (strcmp(category, "slice underutilization") == 0)
        return "index whole slices or use one vectorized expression instead of element-wise indexing";
    if (strcmp(category, "API misuse") == 0)
        return "let one numpy call do the loop (np.sum, np.cumsum, ufunc.reduce) instead of one call per element";
    if (strcmp(category, "loop-invariant computation") == 0)
        return "compute the value once, before the loop";
    return "keep the result of the first call instead of calling again with the same arguments";
}
