/* pf_report_calc.c - derived figures shared by the renderers (see pf_report_int.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_python_args.h"
#include "pf_report_int.h"
#include "pf_util_int.h"

static const pf_model_t *sort_model;

static int cmp_stats(const pf_stats_t *a, const pf_stats_t *b)
{
    if (a->alloc_bytes != b->alloc_bytes)
        return a->alloc_bytes > b->alloc_bytes ? -1 : 1;
    if (a->peak_bytes != b->peak_bytes)
        return a->peak_bytes > b->peak_bytes ? -1 : 1;
    if (a->copy_bytes != b->copy_bytes)
        return a->copy_bytes > b->copy_bytes ? -1 : 1;
    return 0;
}

static int cmp_line(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    int c = cmp_stats(&sort_model->lines[a].s, &sort_model->lines[b].s);
    return c ? c : (a < b ? -1 : a > b);
}

static int cmp_func(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    int c = cmp_stats(&sort_model->funcs[a].s, &sort_model->funcs[b].s);
    return c ? c : (a < b ? -1 : a > b);
}

size_t *pf_report_line_order(const pf_model_t *m)
{
    size_t *o = pf_xmalloc((m->n_lines + 1) * sizeof *o);
    for (size_t i = 0; i < m->n_lines; i++)
        o[i] = i;
    sort_model = m;
    qsort(o, m->n_lines, sizeof *o, cmp_line);
    return o;
}

size_t *pf_report_func_order(const pf_model_t *m)
{
    size_t *o = pf_xmalloc((m->n_funcs + 1) * sizeof *o);
    for (size_t i = 0; i < m->n_funcs; i++)
        o[i] = i;
    sort_model = m;
    qsort(o, m->n_funcs, sizeof *o, cmp_func);
    return o;
}

double pf_report_copy_rate(const pf_stats_t *s)
{
    if (s->copy_bytes <= 0)
        return 0;
    double span = (double)(s->last_ns - s->first_ns) / 1e9;
    return s->copy_bytes / (span > 1e-3 ? span : 1e-3);
}

double pf_report_alloc_se(const pf_stats_t *s)
{
    return s->alloc_var > 0 ? sqrt(s->alloc_var) : 0;
}

double pf_report_leaked_se(const pf_stats_t *s)
{
    return s->leaked_bytes > 0 && s->live_var > 0 ? sqrt(s->live_var) : 0;
}

int pf_report_few_samples(const pf_stats_t *s)
{
    return s->alloc_bytes > 0 && pf_report_alloc_se(s) > PF_FEW_SAMPLES_RSE * s->alloc_bytes;
}

double pf_report_leak_likelihood(const pf_stats_t *s)
{
    return s->leaked_bytes > 0 ? s->leak.likelihood : 0;
}

int pf_report_flow_judged_enough(const pf_flow_t *f)
{
    /* uploads are judged by content against the ones before: the first of an edge has nothing to match */
    int by_content = f->kind == PF_COPY_H2D || f->kind == PF_COPY_D2H || f->kind == PF_COPY_D2D;
    double covered = f->judged + by_content;
    /* or most of them: ten 32 MiB uploads pass the first 256 MiB compared in full at the ninth, and the
     * verdict then rests on 8 of 10 (every one but the first and the last) */
    return f->judged >= PF_COPY_MIN_JUDGED || (f->judged > 0 && covered + 0.5 >= f->candidate_count) ||
           (f->judged >= 2 && 4 * covered >= 3 * f->candidate_count);
}

int pf_report_flow_redundant(const pf_flow_t *f)
{
    return f->judged > 0 && f->redundant * 2 > f->judged && pf_report_flow_judged_enough(f);
}

int pf_report_is_import(const pf_model_t *m, const pf_line_t *l)
{
    const char *src = pf_report_source_line(m, pf_model_str(m, l->file), l->line);
    return strncmp(src, "import ", 7) == 0 || (strncmp(src, "from ", 5) == 0 && strstr(src, " import "));
}

int pf_report_finding_line(const pf_model_t *m, const pf_line_t *l)
{
    return pf_model_is_user_file(m, pf_model_str(m, l->file)) && !pf_report_is_import(m, l);
}

int pf_report_leak_found(const pf_model_t *m, const pf_line_t *l)
{
    return pf_report_leak_likelihood(&l->s) >= PF_LEAK_REPORT_THRESHOLD && pf_report_finding_line(m, l);
}

int pf_report_copy_found(const pf_model_t *m, const pf_flow_t *f)
{
    /* not one a worker the line started made in library code: "share one buffer" is not the line's to do */
    return pf_report_flow_redundant(f) && f->at_line >= 0 && !f->started &&
           pf_report_finding_line(m, &m->lines[f->at_line]);
}

/* The advice for a copy the user's line did not ask for by name: made by a library, or by a call that
 * converts its input. */
#define PF_FIX_CALL "give it data it need not convert (dtype, layout), copy=False if offered, or call once"

/* 1 when the source line of the flow's copying line has one of the calls, NULL-terminated; unread when
 * there is no line to read. */
static int line_calls(const pf_model_t *m, const pf_flow_t *f, const char *const *calls, int unread)
{
    if (!m || f->at_line < 0)
        return unread;
    const pf_line_t *l = &m->lines[f->at_line];
    const char *src = pf_report_source_line(m, pf_model_str(m, l->file), l->line);
    if (!src[0])
        return unread;
    for (; *calls; calls++)
        if (strstr(src, *calls))
            return 1;
    return 0;
}

/* No line to read: the advice by the objects' kinds stands. */
static int line_has(const pf_model_t *m, const pf_flow_t *f, const char *const *calls)
{
    return line_calls(m, f, calls, 1);
}

const char *pf_report_copy_fix(const pf_model_t *m, const pf_flow_t *f)
{
    static const char *const numpy_copies[] = {"array(", ".copy(", "copy(", NULL};
    static const char *const python_copies[] = {"bytes(", "bytearray(", "[:]", "copy(", NULL};
    uint32_t python = 1u << PF_DOMAIN_PYRAW | 1u << PF_DOMAIN_PYMEM | 1u << PF_DOMAIN_PYOBJ;
    uint32_t native = 1u << PF_DOMAIN_MALLOC | 1u << PF_DOMAIN_MMAP;
    if (f->kind == PF_COPY_H2D)
        return "upload it once and keep it on the device (the same host bytes were sent again)";
    if (f->stages_upload)
        return "upload it once and keep it on the device (the same host bytes were staged and sent again)";
    /* the runtime saw what the ends were: text converted or joined without a change of its bytes */
    uint8_t str = 1u << PF_COPY_END_STR, bytes = 1u << PF_COPY_END_BYTES;
    if (f->src_ends == str && f->dst_ends == bytes)
        return "str.encode() copied the text as is: make bytes from the start (io.BytesIO) or encode once";
    if (f->src_ends == str && f->dst_ends == str)
        return "the text was copied whole into a new str: build it once (''.join(parts), io.StringIO)";
    if (f->dst_ends == str)
        return "decoding copied the bytes as is: work on the bytes (re takes bytes too) or decode once";
    /* a copy the line asked for by name (df.copy(), copy.copy(x)) that a library function made: the call
     * to drop is the user's, not a conversion to avoid */
    static const char *const named_copies[] = {".copy(", NULL};
    if (f->made_in && line_calls(m, f, named_copies, 0))
        return "drop the .copy() on this line: neither the copy nor its source was changed, so the object "
               "itself would do";
    if (f->made_in)
        return PF_FIX_CALL;
    if (f->dst_domains && !(f->dst_domains & ~python))
        return line_has(m, f, python_copies) ? "share one buffer (bytes, bytearray: memoryview(x) or x itself, not bytes(x) or x[:])"
                                              : PF_FIX_CALL;
    if (f->dst_domains && !(f->dst_domains & ~native))
        return line_has(m, f, numpy_copies) ? "share one buffer (numpy: np.asarray(x) or x itself, not np.array(x) or x.copy())"
                                             : PF_FIX_CALL;
    return line_has(m, f, numpy_copies) || line_has(m, f, python_copies)
               ? "share one buffer (numpy: np.asarray(x) or x itself; bytes: memoryview(x))"
               : PF_FIX_CALL;
}

void pf_report_unlisted_redundancy(const pf_model_t *m, pf_unlisted_redundancy_t *out)
{
    *out = (pf_unlisted_redundancy_t){.started_line = -1};
    double best = 0;
    for (size_t i = 0; i < m->n_flows; i++) {
        const pf_flow_t *f = &m->flows[i];
        if (f->redundant_bytes <= 0 || pf_report_copy_found(m, f))
            continue;
        if (f->started && f->at_line >= 0) {
            out->started_bytes += f->redundant_bytes;
            if (f->redundant_bytes > best) {
                best = f->redundant_bytes;
                out->started_line = f->at_line;
            }
        } else {
            out->elsewhere_bytes += f->redundant_bytes;
        }
    }
}

int pf_report_unlisted_shown(const pf_model_t *m, double bytes)
{
    return bytes >= 1 && bytes >= 0.05 * m->total.redundant_copy_bytes;
}

const char *pf_report_copy_kind_name(unsigned kind)
{
    switch (kind) {
    case PF_COPY_REALLOC: return "realloc";
    case PF_COPY_H2D: return "h2d";
    case PF_COPY_D2H: return "d2h";
    case PF_COPY_D2D: return "d2d";
    case PF_COPY_H2H: return "h2h";
    default: return "copy";
    }
}

/* The text of a source line, trimmed; "" when unavailable. Caches the last file read. */
/* What a bracketed row (pf_model_sweep.c) holds, in place of a source line; "" for any other file. */
static const char *bracket_meaning(const char *file)
{
    static const char *const meanings[][2] = {
        {"[python startup]", "(interpreter start-up: site and .pth imports, codecs)"},
        {"[native thread]", "(threads that never ran Python: BLAS pools, C extensions' threads)"},
        {"[stack missing]", "(records whose interned stack the profile lacks)"},
        {"[unknown]", "(no frame of a known code object on the stack)"},
    };
    for (size_t i = 0; i < sizeof meanings / sizeof *meanings; i++)
        if (strcmp(file, meanings[i][0]) == 0)
            return meanings[i][1];
    return "";
}

/* The code of the program's `python -c CODE` (its root's arguments past the interpreter's options), or NULL
 * when it ran a file or a module. */
static const char *inline_code(const pf_model_t *m)
{
    pf_python_target_t t;
    pf_python_target((int)m->argc, m->argv, 0, &t);
    return t.kind == PF_PYTHON_CODE ? t.target : NULL;
}

/* Line lineno of text (leading blanks dropped) into result, or "" when text has fewer lines. */
static const char *line_of_text(const char *text, int lineno, char result[512])
{
    const char *p = text;
    for (int i = 1; i < lineno && p; i++) {
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    if (!p)
        return result;
    while (*p == ' ' || *p == '\t')
        p++;
    size_t n = strcspn(p, "\r\n");
    if (n >= 512)
        n = 511;
    memcpy(result, p, n);
    result[n] = '\0';
    return result;
}

const char *pf_report_source_line(const pf_model_t *m, const char *file, int lineno)
{
    static char *cached_name, *cached_text;
    static char result[512];
    result[0] = '\0';
    if (file[0] == '[')
        return bracket_meaning(file);
    if (lineno <= 0)
        return result;
    if (file[0] == '<') {
        /* python -c: its code is the root's argument (code that exec() runs is "<string>" too: a program
           started with -c that also execs strings reads its own code for theirs) */
        const char *code = strcmp(file, "<string>") == 0 && m ? inline_code(m) : NULL;
        return code ? line_of_text(code, lineno, result) : result;
    }
    if (!cached_name || strcmp(cached_name, file) != 0) {
        free(cached_name);
        free(cached_text);
        cached_name = pf_xstrndup(file, strlen(file));
        cached_text = NULL;
        FILE *f = fopen(file, "rb");
        if (f) {
            size_t cap = 1 << 16, len = 0;
            cached_text = pf_xmalloc(cap);
            size_t n;
            while ((n = fread(cached_text + len, 1, cap - len - 1, f)) > 0) {
                len += n;
                if (len + 1 == cap)
                    cached_text = pf_xrealloc(cached_text, cap *= 2);
                if (len > (64u << 20))
                    break;
            }
            cached_text[len] = '\0';
            fclose(f);
        }
    }
    return cached_text ? line_of_text(cached_text, lineno, result) : result;
}


const char *pf_report_source_tail(const pf_model_t *m, uint32_t file, int lineno)
{
    static char tail[520];
    const char *src = pf_report_source_line(m, pf_model_str(m, file), lineno);
    if (!src[0])
        return "";
    snprintf(tail, sizeof tail, ": %s", src);
    return tail;
}

const char *pf_report_address_source(uint32_t source)
{
    return source == PF_WATCH_SRC_PRECISE ? "precise" : source == PF_WATCH_SRC_SAMPLED ? "sampled" : "decode";
}

const char *pf_report_emulation(uint32_t emulated)
{
    return !emulated ? NULL : emulated == PF_WATCH_EMU_PAGES ? "pages" : "steps";
}

const char *pf_report_watchpoints(uint32_t emulated, uint32_t budget_pct, char buf[64])
{
    if (!emulated)
        return strcpy(buf, "debug registers");
    const char *by = emulated == PF_WATCH_EMU_PAGES ? "page protections" : "single steps";
    if (!budget_pct)
        snprintf(buf, 64, "emulated by %s", by);
    else
        snprintf(buf, 64, "emulated by %s, within %u%% of CPU time", by, (unsigned)budget_pct);
    return buf;
}

const char *pf_report_incomplete(const pf_model_t *m, char buf[PF_REPORT_INCOMPLETE_BYTES])
{
    /* an exact profile records every free of what it recorded: one missing is worth saying (a sampled
     * profile's may be, where its table of tracked blocks was full) */
    uint64_t unseen = m->exact ? m->frees_unseen : 0;
    if (!m->dropped && !m->unresolved_stacks && !unseen)
        return NULL;
    size_t n = 0;
    buf[0] = 0;
    if (m->dropped)
        n += (size_t)snprintf(buf + n, PF_REPORT_INCOMPLETE_BYTES - n,
                              "%llu records could not be written (file full or unwritable)",
                              (unsigned long long)m->dropped);
    if (m->unresolved_stacks && n < PF_REPORT_INCOMPLETE_BYTES)
        n += (size_t)snprintf(buf + n, PF_REPORT_INCOMPLETE_BYTES - n,
                              "%s%llu stacks missing from the file (their bytes count without a line)",
                              n ? "; " : "", (unsigned long long)m->unresolved_stacks);
    if (unseen && n < PF_REPORT_INCOMPLETE_BYTES)
        snprintf(buf + n, PF_REPORT_INCOMPLETE_BYTES - n,
                 "%sfrees missing or out of order: %llu (those blocks count as freed where reused)",
                 n ? "; " : "", (unsigned long long)unseen);
    return buf;
}

const char *pf_report_sampling_steps(const pf_model_t *m, char buf[200])
{
    if (!m->n_sampling_steps)
        return NULL;
    const pf_sampling_step_t *first = &m->sampling_steps[0], *last = &m->sampling_steps[m->n_sampling_steps - 1];
    if (m->exact) {     /* allocations stay exact; only copies are sampled */
        snprintf(buf, 200, "near its size cap (--max-profile) the profile sampled copies %llux less often from %.1f s",
                 (unsigned long long)last->factor, first->t_s);
        return buf;
    }
    char a[24], b[24], end[48] = "";
    if (last != first)
        snprintf(end, sizeof end, ", 1 per %s at the end",
                 pf_report_human_bytes((double)m->mean_sample_bytes * (double)last->factor, b));
    snprintf(buf, 200, "near its size cap (--max-profile) sampling coarsened: 1 per %s from %.1f s%s",
             pf_report_human_bytes((double)m->mean_sample_bytes * (double)first->factor, a), first->t_s, end);
    return buf;
}

const char *pf_report_human_bytes(double v, char buf[24])
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    if (v < 0.5)
        return strcpy(buf, "-");
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(buf, 24, u ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

const char *pf_report_basename(const char *file)
{
    const char *s = strrchr(file, '/');
    return s && s[1] ? s + 1 : file;
}

int pf_report_redundancy_shown(const pf_model_t *m, const pf_redundancy_t *r)
{
    return r->repeat_line >= 0 && pf_model_is_user_file(m, pf_model_str(m, m->lines[r->repeat_line].file));
}

/* Puts item at rank k of a list of at most max items (largest first), dropping the last when it is full. */
static void rank_insert(void *list, size_t size, size_t *n, size_t max, size_t k, const void *item)
{
    if (k >= max)
        return;
    char *base = list;
    size_t moved = (*n < max ? *n : max - 1) - k;
    memmove(base + (k + 1) * size, base + k * size, moved * size);
    memcpy(base + k * size, item, size);
    if (*n < max)
        (*n)++;
}

size_t pf_report_needed_copies(const pf_model_t *m, const pf_flow_t **top, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n_flows; i++) {
        const pf_flow_t *f = &m->flows[i];
        if (!f->watch_judged || f->at_line < 0 || !pf_report_finding_line(m, &m->lines[f->at_line]))
            continue;
        size_t k = 0;
        while (k < n && top[k]->bytes >= f->bytes)
            k++;
        rank_insert(top, sizeof top[0], &n, max, k, &f);
    }
    return n;
}

/* The renderers list the user's lines; a record whose stack holds none of them was charged to its
 * innermost library line (pf_model_sweep.c), so those rows are exactly the memory the line table leaves
 * out. */
int pf_report_file_listed(const pf_model_t *m, const char *file)
{
    return file[0] == '[' || pf_model_is_user_file(m, file);
}

void pf_report_outside_code(const pf_model_t *m, pf_outside_code_t *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < m->n_lines; i++) {
        const pf_line_t *l = &m->lines[i];
        if (pf_report_file_listed(m, pf_model_str(m, l->file)) || (l->s.alloc_bytes < 0.5 && l->s.copy_bytes < 0.5))
            continue;
        out->alloc_bytes += l->s.alloc_bytes;
        out->peak_bytes += l->s.peak_bytes;
        out->copy_bytes += l->s.copy_bytes;
        out->lines++;
        size_t k = 0;
        while (k < out->n_top && m->lines[out->top[k]].s.alloc_bytes >= l->s.alloc_bytes)
            k++;
        rank_insert(out->top, sizeof out->top[0], &out->n_top, PF_OUTSIDE_TOP, k, &i);
    }
}

int pf_report_outside_code_shown(const pf_model_t *m, const pf_outside_code_t *out)
{
    return out->lines && (out->alloc_bytes >= 0.05 * m->total.alloc_bytes || out->peak_bytes >= 0.05 * m->total.peak_bytes);
}

int pf_report_process_replaced(const pf_model_t *m, size_t i)
{
    for (size_t j = i + 1; j < m->n_procs; j++)
        if (m->procs[j].pid == m->procs[i].pid && m->procs[j].ppid == m->procs[i].ppid)
            return 1;
    return 0;
}

int pf_report_process_running(const pf_model_t *m, size_t i)
{
    if (!m->running_known || m->procs[i].root || pf_report_process_replaced(m, i))
        return 0;
    for (size_t k = 0; k < m->n_running; k++)
        if (m->running[k] == m->procs[i].pid)
            return 1;
    return 0;
}

const char *pf_report_process_tag(const pf_model_t *m, size_t i, char *buf, size_t size)
{
    if (pf_report_process_replaced(m, i))
        snprintf(buf, size, "(before exec) ");
    else if (m->procs[i].exec_command)
        snprintf(buf, size, "(exec'd %s) ", m->procs[i].exec_command);
    else
        snprintf(buf, size, "%s", pf_report_process_running(m, i) ? "(still running) " : "");
    return buf;
}

int pf_report_process_shown(const pf_model_t *m, size_t i)
{
    return m->procs[i].alloc_bytes >= 0.5 || !pf_report_process_replaced(m, i);
}

size_t pf_report_process_count(const pf_model_t *m)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n_procs; i++)
        n += !pf_report_process_replaced(m, i);
    return n;
}

size_t pf_report_started_lines(const pf_model_t *m, size_t *top, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n_lines; i++) {
        const pf_line_t *l = &m->lines[i];
        if (l->started_bytes < 0.01 * m->total.alloc_bytes || l->started_bytes < 0.5)
            continue;
        size_t k = 0;
        while (k < n && m->lines[top[k]].started_bytes >= l->started_bytes)
            k++;
        rank_insert(top, sizeof top[0], &n, max, k, &i);
    }
    return n;
}

const char *pf_report_started_what(const pf_line_t *l, char buf[64])
{
    char t[24] = "", p[24] = "";
    if (l->started_threads)
        snprintf(t, sizeof t, "%u thread%s", l->started_threads, l->started_threads == 1 ? "" : "s");
    if (l->started_procs)
        snprintf(p, sizeof p, "%u process%s", l->started_procs, l->started_procs == 1 ? "" : "es");
    snprintf(buf, 64, "%s%s%s", t, t[0] && p[0] ? " and " : "", p);
    return buf;
}

size_t pf_report_unprofiled_groups(const pf_model_t *m, pf_unprofiled_group_t *top, size_t max, size_t *others)
{
    size_t n = 0;
    *others = 0;
    for (size_t i = 0; i < m->n_unprofiled; i++) {
        int32_t row = m->unprofiled[i].row;
        size_t k = 0;
        while (k < n && top[k].row != row)
            k++;
        if (k < n) {
            top[k].count++;
        } else if (n < max) {
            top[n++] = (pf_unprofiled_group_t){.row = row, .count = 1, .first = i};
        } else {
            (*others)++;
        }
    }
    return n;
}

int32_t pf_report_calltree_next(const pf_model_t *m, int32_t n, int descend)
{
    if (descend && m->nodes[n].first_child >= 0)
        return m->nodes[n].first_child;
    while (n >= 0 && m->nodes[n].next_sibling < 0)
        n = m->nodes[n].parent;
    return n >= 0 ? m->nodes[n].next_sibling : -1;
}

int32_t pf_report_line_node(const pf_model_t *m, const pf_line_t *l, int at_exit, size_t *paths)
{
    int32_t best = -1;
    *paths = 0;
    for (size_t i = 0; i < m->n_nodes; i++) {
        const pf_callnode_t *c = &m->nodes[i];
        double v = at_exit ? c->self_leaked : c->self_peak;
        if (c->file != l->file || c->line != l->line || v <= 0)
            continue;
        (*paths)++;
        if (best < 0 || v > (at_exit ? m->nodes[best].self_leaked : m->nodes[best].self_peak))
            best = (int32_t)i;
    }
    return best;
}

size_t pf_report_caller_chain(const pf_model_t *m, int32_t node, int32_t *out, size_t max)
{
    size_t n = 0;
    for (int32_t p = node >= 0 ? m->nodes[node].parent : -1; p >= 0; p = m->nodes[p].parent)
        n++;
    n = n < max ? n : max;
    size_t k = n;
    for (int32_t p = node >= 0 ? m->nodes[node].parent : -1; p >= 0 && k > 0; p = m->nodes[p].parent)
        out[--k] = p;   /* the innermost callers, when max cuts the chain */
    return n;
}

const char *pf_report_callers(const pf_model_t *m, int32_t node, char *buf, size_t size)
{
    int32_t chain[PF_MAX_PY_FRAMES + 1];
    size_t n = pf_report_caller_chain(m, node, chain, sizeof chain / sizeof *chain), used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used + 1 < size; i++) {
        const pf_callnode_t *c = &m->nodes[chain[i]];
        const char *fn = pf_model_str(m, c->function);
        int other_file = c->file != m->nodes[node].file;
        int w = snprintf(buf + used, size - used, "%s%s%s%s:%d", used ? " > " : "", fn, other_file ? " " : "",
                         other_file ? pf_report_basename(pf_model_str(m, c->file)) : "", c->line);
        used += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

const char *pf_report_via(const pf_model_t *m, const pf_line_t *l, int at_exit, char *buf, size_t size,
                          size_t *paths)
{
    int32_t node = pf_report_line_node(m, l, at_exit, paths);
    return node >= 0 && m->nodes[node].parent >= 0 ? pf_report_callers(m, node, buf, size) : NULL;
}

const char *pf_report_copy_source(const pf_model_t *m, const pf_flow_t *f, char *buf, size_t size)
{
    buf[0] = '\0';
    if (f->src_line < 0)
        return buf;
    const pf_line_t *src = &m->lines[f->src_line];
    if (f->at_line >= 0 && src->file != m->lines[f->at_line].file)
        snprintf(buf, size, " of data from %s:%d", pf_report_basename(pf_model_str(m, src->file)), src->line);
    else
        snprintf(buf, size, " of data from line %d", src->line);
    return buf;
}

const char *pf_report_flow_via(const pf_model_t *m, const pf_flow_t *f, char *buf, size_t size)
{
    return f->via_node >= 0 && m->nodes[f->via_node].parent >= 0 ? pf_report_callers(m, f->via_node, buf, size)
                                                                   : NULL;
}
