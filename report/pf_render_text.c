/* pf_render_text.c - the terminal report: a header with the run's totals, the user's lines that matter
 * (with their source text), the functions, and the findings (redundant copies, memory live at exit).
 * Every line it prints fits opts->width columns; colour only when asked. */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pf_model_int.h"
#include "pf_render_waste.h"
#include "pf_report_int.h"
#include "pf_text_int.h"
#include "pf_workers_int.h"
#include "pf_util_int.h"

#define DEFAULT_WIDTH 100
#define DEFAULT_ROWS 15

/* Human bytes in at most 7 characters: "512 B", "1.5 KiB", "32.0 MiB". */
const char *pf_text_human(double v, char buf[16])
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    if (v < 0.5) {
        strcpy(buf, "-");
        return buf;
    }
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, 16, "%.0f B", v);
    else
        snprintf(buf, 16, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

/* 1 for code points a terminal draws two columns wide (CJK, Hangul, full-width forms, emoji). */
static int is_wide(uint32_t c)
{
    return (c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0x303E) || (c >= 0x3041 && c <= 0x33FF) ||
           (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xA000 && c <= 0xA4CF) ||
           (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFE30 && c <= 0xFE4F) ||
           (c >= 0xFF00 && c <= 0xFF60) || (c >= 0xFFE0 && c <= 0xFFE6) || (c >= 0x1F300 && c <= 0x1F64F) ||
           (c >= 0x1F900 && c <= 0x1F9FF) || (c >= 0x20000 && c <= 0x3FFFD);
}

/* The glyph at s: sets *len (bytes) and *safe (0 = print it as '?': a control character, a bidirectional
 * control, or an escape sequence that is not our own colour) and returns its columns. Names and source text come from
 * the profiled program: a newline, tab or escape in them must not break the table or drive the terminal. */
static int glyph(const char *s, int color, size_t *len, int *safe)
{
    const unsigned char *u = (const unsigned char *)s;
    *safe = 1;
    if (u[0] == 0x1B && color && u[1] == '[') {     /* our SGR colour codes: ESC [ digits ; m */
        size_t n = 2;
        while ((u[n] >= '0' && u[n] <= '9') || u[n] == ';')
            n++;
        if (u[n] == 'm') {
            *len = n + 1;
            return 0;
        }
    }
    if (u[0] < 0x20 || u[0] == 0x7F) {
        *len = 1;
        *safe = 0;
        return 1;
    }
    size_t n = pf_utf8_seq(u, strnlen(s, 4));
    if (n == 0) {
        *len = 1;
        *safe = 0;
        return 1;
    }
    *len = n;
    if (n == 1)
        return 1;
    uint32_t c = n == 2 ? (u[0] & 0x1Fu) : n == 3 ? (u[0] & 0x0Fu) : (u[0] & 0x07u);
    for (size_t i = 1; i < n; i++)
        c = (c << 6) | (u[i] & 0x3Fu);
    /* C1 controls, line and paragraph separators, and the bidirectional marks, embeddings, overrides and
     * isolates: each can reorder or hide what the terminal shows after it ("Trojan Source") */
    if ((c >= 0x80 && c <= 0x9F) || c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x2028 && c <= 0x202E) ||
        (c >= 0x2066 && c <= 0x2069)) {
        *safe = 0;
        return 1;
    }
    if ((c >= 0x0300 && c <= 0x036F) || (c >= 0x200B && c <= 0x200F) || (c >= 0xFE00 && c <= 0xFE0F))
        return 0;   /* combining marks and zero-width characters */
    return is_wide(c) ? 2 : 1;
}

/* Display columns of s as put_cut prints it. */
int pf_text_columns(const out_t *o, const char *s)
{
    int n = 0;
    size_t len;
    int safe;
    for (; *s; s += len)
        n += glyph(s, o->color, &len, &safe);
    return n;
}

/* Prints s cut to at most `room` columns (with an ellipsis when cut, right after the last word: a cut in
 * the blanks before a source line's comment leaves no run of spaces); unsafe glyphs print as '?'. */
void pf_text_put_cut(out_t *o, const char *s, int room)
{
    if (room <= 0)
        return;
    int fits = pf_text_columns(o, s) <= room, cols = 0, blanks = 0;
    size_t len;
    int safe;
    for (; *s; s += len) {
        int w = glyph(s, o->color, &len, &safe);
        if (!fits && cols + w > room - 1)
            break;
        cols += w;
        if (*s == ' ') {
            blanks++;
            continue;
        }
        for (; blanks; blanks--)
            fputc(' ', o->f);
        if (safe)
            fwrite(s, 1, len, o->f);
        else
            fputc('?', o->f);
    }
    if (fits)
        for (; blanks; blanks--)
            fputc(' ', o->f);
    if (!fits) {
        fputs("…", o->f);
        if (o->color)
            fputs("\033[0m", o->f);  /* a cut may have dropped the reset */
    }
}

/* Writes into out the tail of s that fits `room` columns, with a leading ellipsis when cut: for
 * "file:line", whose end (the line number) matters most. */
static void cut_left(const out_t *o, const char *s, int room, char *out, size_t size)
{
    const char *p = s;
    size_t len;
    int safe, total = pf_text_columns(o, s);
    while (*p && total > room) {
        total -= glyph(p, o->color, &len, &safe);
        p += len;
        if (total <= room - 1)
            break;
    }
    snprintf(out, size, "%s%s", p == s ? "" : "…", p);
}

/* Prints one line of at most o->width columns, built with printf. */
void pf_text_line(out_t *o, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pf_text_put_cut(o, buf, o->width);
    fputc('\n', o->f);
}

const char *pf_text_path(const char *file)
{
    const char *slash = strrchr(file, '/');
    return slash && slash[1] ? slash + 1 : file;
}

/* A sparkline of a timeline in `cells` characters; each cell shows the maximum of its slice, scaled to the
 * timeline's own maximum, so a short peak stays visible. */
static const char *sparkline(const double *points, int n, int cells, char *buf, size_t size)
{
    static const char *const bars[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    double top = 0;
    for (int i = 0; i < n; i++)
        top = points[i] > top ? points[i] : top;
    size_t used = 0;
    buf[0] = '\0';
    for (int c = 0; c < cells; c++) {
        double v = 0;
        for (int i = c * n / cells; i < (c + 1) * n / cells; i++)
            v = points[i] > v ? points[i] : v;
        int level = top > 0 ? (int)ceil(8.0 * v / top) : 0;
        if (level > 8)
            level = 8;
        used += (size_t)snprintf(buf + used, size - used, "%s", bars[level]);
        if (used >= size)
            break;
    }
    return buf;
}

const char *pf_text_bold(const out_t *o) { return o->color ? "\033[1m" : ""; }
const char *pf_text_red(const out_t *o) { return o->color ? "\033[31m" : ""; }
const char *pf_text_reset(const out_t *o) { return o->color ? "\033[0m" : ""; }

double pf_text_share(double part, double whole)
{
    return whole > 0 ? 100.0 * part / whole : 0;
}

static void header(out_t *o, const pf_model_t *m, const pf_text_opts_t *opts)
{
    char a[16], b[16], c[16], d[16], e[16], spark[128];
    char argv[512] = "";
    for (size_t i = 0; i < m->argc; i++) {
        size_t used = strlen(argv);
        snprintf(argv + used, sizeof argv - used, "%s%s", i ? " " : "", m->argv[i]);
    }
    char status[64];
    if (!m->has_exit)
        snprintf(status, sizeof status, "exit status unknown");
    else if (m->exit_signaled)
        snprintf(status, sizeof status, "killed by signal %d", m->exit_code);
    else
        snprintf(status, sizeof status, "exit %d", m->exit_code);
    pf_text_line(o, "%spyflow%s  %s", pf_text_bold(o), pf_text_reset(o), argv);
    char mode[96];
    if (m->exact)
        snprintf(mode, sizeof mode, "exact: every allocation recorded");
    else
        snprintf(mode, sizeof mode, "sampled: 1 per %s, >= %s exact", pf_text_human((double)m->mean_sample_bytes, a),
                 pf_text_human((double)m->object_threshold, b));
    pf_text_line(o, "  Python %s | %.2f s | %s | %s", m->python_version ? m->python_version : "?", m->elapsed_s, status,
         mode);
    pf_text_line(o, "  peak %s | allocated %s (python %s, native %s) | live at exit %s",
                 pf_text_human(m->total.peak_bytes, a), pf_text_human(m->total.alloc_bytes, b),
                 pf_text_human(m->total.python_bytes, c), pf_text_human(m->total.native_bytes, d),
                 pf_text_human(m->total.leaked_bytes, e));
    pf_text_line(o, "  memory over time %s  (peak at %.2f s of %.2f s)",
                 sparkline(m->total.timeline, PF_TIMELINE_POINTS, 40, spark, sizeof spark), (double)m->peak_ns / 1e9,
                 m->timeline_end_s);
    char lacks[PF_REPORT_INCOMPLETE_BYTES];
    if (pf_waste_resident_text(m, lacks, sizeof lacks))
        pf_text_line(o, "  %s", lacks);
    if (pf_report_incomplete(m, lacks))
        pf_text_line(o, "  incomplete profile: %s", lacks);
    if (pf_report_sampling_steps(m, lacks))
        pf_text_line(o, "  %s", lacks);
    /* docs/long-runs.md: said once, not zeros */
    const char *lost = m->aggregated_flows_kept ? "waste, sampling error" : "copy flows and verdicts, waste, sampling error";
    if (m->aggregated && m->aggregated_by_size)
        pf_text_line(o, "  aggregated from %.1f s on (profile size; --no-aggregate: never): no %s since",
                     (double)m->aggregated_from_ns / 1e9, lost);
    else if (m->aggregated && m->aggregated_from_ns > 0)
        pf_text_line(o, "  aggregated from %.1f s on: not recorded since: %s", (double)m->aggregated_from_ns / 1e9, lost);
    else if (m->aggregated)
        pf_text_line(o, "  aggregated: not recorded: %s", lost);
    if (m->total.gpu_bytes > 0)
        pf_text_line(o, "  gpu: allocated %s | peak %s at %.2f s | live at exit %s | over time %s",
                     pf_text_human(m->total.gpu_bytes, a), pf_text_human(m->total.gpu_peak_bytes, b),
                     (double)m->gpu_peak_ns / 1e9, pf_text_human(m->total.gpu_live, c),
                     sparkline(m->gpu_timeline, PF_TIMELINE_POINTS, 20, spark, sizeof spark));
    if (m->total.copy_bytes > 0 && m->aggregated && !m->aggregated_flows_kept)
        pf_text_line(o, "  copied %s (%s/s while copying)", pf_text_human(m->total.copy_bytes, a),
             pf_text_human(pf_report_copy_rate(&m->total), c));
    else if (m->total.copy_bytes > 0)
        pf_text_line(o, "  copied %s (%s/s while copying), redundant %s", pf_text_human(m->total.copy_bytes, a),
             pf_text_human(pf_report_copy_rate(&m->total), c), pf_text_human(m->total.redundant_copy_bytes, b));
    if (m->watch.present && m->watch.emulated) {
        char how[64];
        pf_text_line(o, "  watchpoints: %s (--watch-budget)",
             pf_report_watchpoints(m->watch.emulated, m->watch.budget_pct, how));
    }
    if (m->watch.present && (m->watch.modes & PF_WATCH_MODE_COPIES))
        pf_text_line(o, "  watch copies: %llu copies watched, %llu proved needed by a write",
             (unsigned long long)m->watch.copy_watches, (unsigned long long)m->watch.copy_writes);
    if (m->watch.present && (m->watch.modes & (PF_WATCH_MODE_STORES | PF_WATCH_MODE_LOADS))) {
        const pf_watch_summary_t *w = &m->watch;
        pf_text_line(
            o,
            "  watch: %s period %llu, addresses %s, %llu samples (%llu armed), %llu traps; dropped %llu filtered, "
            "%llu no access, %llu busy, %llu reservoir",
            w->event, (unsigned long long)w->period, pf_report_address_source(w->source),
            (unsigned long long)w->samples, (unsigned long long)w->samples_armed, (unsigned long long)w->traps,
            (unsigned long long)w->dropped_filter, (unsigned long long)w->dropped_nomem,
            (unsigned long long)w->dropped_busy, (unsigned long long)w->dropped_reservoir);
        if (w->widened_threads)
            pf_text_line(o, "         period widened up to %llu on %u thread(s): their samples took more than half "
                         "their time", (unsigned long long)w->period_max, w->widened_threads);
        pf_text_line(o, "         stores: %s, %.0f%% silent | loads: %s, %.0f%% redundant",
                     pf_text_human((double)w->store_bytes, a),
                     pf_text_share((double)w->silent_store_bytes, (double)w->store_bytes),
                     pf_text_human((double)w->load_bytes, b),
                     pf_text_share((double)w->redundant_load_bytes, (double)w->load_bytes));
    }
    size_t n_processes = pf_report_process_count(m);
    char unprofiled[96] = "";
    if (m->n_unprofiled)
        snprintf(unprofiled, sizeof unprofiled, "%s%zu Python process%s not profiled (see below)",
                 n_processes > 1 ? "; " : "", m->n_unprofiled, m->n_unprofiled == 1 ? "" : "es");
    if (n_processes > 1)
        pf_text_line(o, "  processes: %zu (children merged)%s", n_processes, unprofiled);
    else if (m->n_unprofiled)
        pf_text_line(o, "  %s", unprofiled);
}

/* A section's first line: a blank line, its title in bold, what it holds in parentheses. */
void pf_text_heading(out_t *o, const char *title, const char *about)
{
    fputc('\n', o->f);
    pf_text_line(o, "%s%s%s (%s)", pf_text_bold(o), title, pf_text_reset(o), about);
}

/* Appends printf output to a fixed buffer (a row being assembled column by column). */
__attribute__((format(printf, 3, 4))) static void cat(char *buf, size_t size, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 1 >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, size - used, fmt, ap);
    va_end(ap);
}

/* A value with a one-character marker, right-aligned in 9 columns ("24.4 MiB!"). */
static const char *marked(double v, char mark, char out[16])
{
    pf_text_human(v, out);
    if (mark) {
        size_t n = strlen(out);
        out[n] = mark;
        out[n + 1] = '\0';
    }
    return out;
}

/* The per-line table. Columns that matter most always show (with '!' on a probable leak's live bytes and
 * '*' on copies judged redundant); redundant bytes, copy rate and the trend sparkline join as the width
 * allows, and the source text takes what is left. The trend waits until the source keeps 20 columns: a
 * line is read by its code first (at 100 columns the trend left it 7: "subpro…"). */
static void lines_table(out_t *o, const pf_model_t *m, int rows, int reduced)
{
    size_t *order = pf_report_line_order(m);
    char a[16], b[16], c[16], d[16], e[16];
    int gpu = m->total.gpu_bytes > 0;   /* a GPU column only for programs that used GPU memory */
    int trend = o->width >= 113, redundant = o->width >= 124, rate = o->width >= 134;
    int lw = o->width < 100 ? 18 : 24, nw = o->width < 100 ? 8 : 9;    /* narrow terminals: tighter columns */
    char head[512] = "";
    cat(head, sizeof head, "%s%-*s %*s %*s %*s", pf_text_bold(o), lw, "line", nw, "allocated", nw, "python", nw,
        "native");
    if (gpu)
        cat(head, sizeof head, " %*s", nw, "gpu");
    cat(head, sizeof head, " %6s %9s %9s", "peak%", "at exit", "copied");
    if (redundant)
        cat(head, sizeof head, " %9s", "redundant");
    if (rate)
        cat(head, sizeof head, " %9s", "copy/s");
    if (trend)
        cat(head, sizeof head, " %-10s", "trend");
    cat(head, sizeof head, " %s%s", "source", pf_text_reset(o));
    fputc('\n', o->f);
    pf_text_line(o, "%s", head);
    int shown = 0, any_leak = 0, any_red = 0, any_few = 0;
    for (size_t k = 0; k < m->n_lines && shown < rows; k++) {
        const pf_line_t *l = &m->lines[order[k]];
        const char *file = pf_model_str(m, l->file);
        if (!pf_report_file_listed(m, file))
            continue;
        if (l->s.alloc_bytes < 0.5 && l->s.copy_bytes < 0.5)
            continue;
        if (reduced && l->s.alloc_bytes < 0.01 * m->total.alloc_bytes && l->s.peak_bytes < 0.01 * m->total.peak_bytes &&
            l->s.copy_bytes < 0.01 * m->total.copy_bytes)
            continue;
        char where[512], where_cut[520];
        snprintf(where, sizeof where, "%s:%d", pf_text_path(file), l->line);
        cut_left(o, where, lw, where_cut, sizeof where_cut);
        int pad = lw - pf_text_columns(o, where_cut);
        int users = pf_model_is_user_file(m, file);
        int leak = pf_report_leak_found(m, l);
        int red = users && l->s.redundant_copy_bytes > 0.5;
        any_leak |= leak;
        any_red |= red;
        char row[1024] = "", spark[64];
        int few = pf_report_few_samples(&l->s);
        any_few |= few;
        cat(row, sizeof row, "%s%*s %*s %*s %*s", where_cut, pad > 0 ? pad : 0, "", nw,
            marked(l->s.alloc_bytes, few ? '~' : 0, a), nw, pf_text_human(l->s.python_bytes, b), nw,
            pf_text_human(l->s.native_bytes, c));
        if (gpu)
            cat(row, sizeof row, " %*s", nw, pf_text_human(l->s.gpu_bytes, a));
        cat(row, sizeof row, " %5.1f%% %9s %9s", pf_text_share(l->s.peak_bytes, m->total.peak_bytes),
            marked(l->s.leaked_bytes, leak ? '!' : 0, d), marked(l->s.copy_bytes, red ? '*' : 0, e));
        if (redundant)
            cat(row, sizeof row, " %9s", pf_text_human(l->s.redundant_copy_bytes, a));
        if (rate)
            cat(row, sizeof row, " %9s", pf_text_human(pf_report_copy_rate(&l->s), b));
        if (trend)
            cat(row, sizeof row, " %s", sparkline(l->s.timeline, PF_TIMELINE_POINTS, 10, spark, sizeof spark));
        cat(row, sizeof row, " %s", pf_report_source_line(m, file, l->line));
        pf_text_line(o, "%s", row);
        shown++;
    }
    if (!shown)
        pf_text_line(o, "(no allocation in the program's own files was recorded)");
    if (any_leak || any_red || any_few)
        pf_text_line(o, "%s%s%s", any_leak ? "! probable leak (see below)   " : "",
                     any_red ? "* copies judged redundant   " : "", any_few ? "~ few samples: +-20% or more" : "");
    free(order);
}

/* The last two components of a path: a library file is told by its package ("loky/process.py"). */
static const char *package_path(const char *file)
{
    const char *last = strrchr(file, '/');
    if (!last || last == file)
        return file;
    const char *before = last - 1;
    while (before > file && *before != '/')
        before--;
    return *before == '/' ? before + 1 : file;
}

/* What the line table leaves out: memory no line of the user's code asked for. */
static void outside_code(out_t *o, const pf_model_t *m)
{
    pf_outside_code_t out;
    pf_report_outside_code(m, &out);
    if (!pf_report_outside_code_shown(m, &out))
        return;
    char a[16], b[16];
    pf_text_heading(o, "outside your code", "no line of yours on the stack: child processes, library threads, imports");
    pf_text_line(o, "  %s allocated (%.0f%%), %.0f%% of the peak, in %zu library lines; the largest:",
                 pf_text_human(out.alloc_bytes, a), pf_text_share(out.alloc_bytes, m->total.alloc_bytes),
                 pf_text_share(out.peak_bytes, m->total.peak_bytes), out.lines);
    for (size_t k = 0; k < out.n_top; k++) {
        const pf_line_t *l = &m->lines[out.top[k]];
        pf_text_line(o, "  %9s  %s:%d (%s)", pf_text_human(l->s.alloc_bytes, b), package_path(pf_model_str(m, l->file)),
                     l->line, pf_model_str(m, l->function));
    }
    pf_text_line(o, "  (`pyflow report PROFILE --profile-all` lists every line)");
}

/* Where the line table's rows hold memory of threads and processes they started. */
static void started_lines(out_t *o, const pf_model_t *m)
{
    size_t top[PF_STARTED_TOP];
    size_t n = pf_report_started_lines(m, top, PF_STARTED_TOP);
    if (!n)
        return;
    pf_text_heading(o, "started by your lines",
                    "what the threads and processes they started allocated outside your code");
    for (size_t k = 0; k < n; k++) {
        const pf_line_t *l = &m->lines[top[k]];
        char a[16], what[64];
        const char *src = pf_report_source_line(m, pf_model_str(m, l->file), l->line);
        pf_text_line(o, "  %9s  %s:%d in %s%s%s", pf_text_human(l->started_bytes, a),
                     pf_text_path(pf_model_str(m, l->file)), l->line, pf_report_started_what(l, what),
                     src[0] ? ": " : "", src);
    }
}

static void funcs_table(out_t *o, const pf_model_t *m, int rows)
{
    size_t *order = pf_report_func_order(m);
    char a[16], b[16], c[16], d[16];
    int shown = 0;
    for (size_t k = 0; k < m->n_funcs && shown < rows; k++) {
        const pf_func_t *f = &m->funcs[order[k]];
        const char *file = pf_model_str(m, f->file);
        if (!pf_model_is_user_file(m, file) || f->s.alloc_bytes < 0.5)
            continue;
        if (!shown) {   /* no table at all when no function of the user's allocated (a syntax error) */
            fputc('\n', o->f);
            pf_text_line(o, "%s%-40s %9s %9s %9s %6s %9s%s", pf_text_bold(o), "function", "allocated", "python",
                         "native", "peak%", "at exit", pf_text_reset(o));
        }
        char name[512];
        snprintf(name, sizeof name, "%s (%s)", pf_model_str(m, f->function), pf_text_path(file));
        char cut[520];
        snprintf(cut, sizeof cut, "%s", name);
        int pad = 40 - pf_text_columns(o, cut);
        if (pad < 0) {
            cut[0] = '\0';
            FILE *mem = fmemopen(cut, sizeof cut, "w");
            out_t tmp = {mem, 40, 0};
            pf_text_put_cut(&tmp, name, 40);
            fclose(mem);
            pad = 40 - pf_text_columns(o, cut);
        }
        pf_text_line(o, "%s%*s %9s %9s %9s %5.1f%% %9s", cut, pad > 0 ? pad : 0, "", pf_text_human(f->s.alloc_bytes, a),
                     pf_text_human(f->s.python_bytes, b), pf_text_human(f->s.native_bytes, c),
                     pf_text_share(f->s.peak_bytes, m->total.peak_bytes), pf_text_human(f->s.leaked_bytes, d));
        shown++;
    }
    free(order);
}

/* A call-tree node worth a row: a listed file's line (library rows are summed in "outside your code") with
 * PF_CALLTREE_SHOWN of the peak or of the allocated bytes under it. */
#define PF_CALLTREE_SHOWN 0.05
#define PF_CALLTREE_MAX_INDENT 16

static int calltree_shown(const pf_model_t *m, const pf_callnode_t *c)
{
    return pf_report_file_listed(m, pf_model_str(m, c->file)) &&
           (c->peak >= PF_CALLTREE_SHOWN * m->total.peak_bytes ||
            c->alloc >= PF_CALLTREE_SHOWN * m->total.alloc_bytes) &&
           c->alloc >= 0.5;
}

/* The only child of node n worth a row when it holds the same bytes as n (a call that passes everything
 * down), else -1. */
static int32_t passing_child(const pf_model_t *m, int32_t n)
{
    int32_t only = -1;
    for (int32_t k = m->nodes[n].first_child; k >= 0; k = m->nodes[k].next_sibling) {
        if (!calltree_shown(m, &m->nodes[k]))
            continue;
        if (only >= 0)
            return -1;
        only = k;
    }
    const pf_callnode_t *p = &m->nodes[n], *c = only >= 0 ? &m->nodes[only] : NULL;
    return c && fabs(c->peak - p->peak) <= 0.005 * p->peak + 0.5 && fabs(c->alloc - p->alloc) <= 0.005 * p->alloc + 0.5
               ? only
               : -1;
}

/* Columns of indent for a call-path row at depth: two a level, at most PF_CALLTREE_MAX_INDENT levels, and
 * never so many that the numbers (30 columns) and 12 of the line do not fit. */
static int path_indent(const out_t *o, uint32_t depth)
{
    int indent = 2 * (int)(depth < PF_CALLTREE_MAX_INDENT ? depth : PF_CALLTREE_MAX_INDENT);
    int room = o->width - 30 - 12;
    return indent < room ? indent : room > 0 ? room : 0;
}

/* One row of the call paths: the node's numbers, then its line indented by its depth. */
static void call_path_row(out_t *o, const pf_model_t *m, const pf_callnode_t *c)
{
    char a[16], b[16];
    const char *file = pf_model_str(m, c->file), *function = pf_model_str(m, c->function);
    int indent = path_indent(o, c->depth);
    char head[64];
    snprintf(head, sizeof head, "  %5.1f%% %9s %9s  %*s", pf_text_share(c->peak, m->total.peak_bytes),
             pf_text_human(c->peak, a), pf_text_human(c->alloc, b), indent, "");
    char what[1200];
    const char *src = pf_report_source_line(m, file, c->line);
    snprintf(what, sizeof what, "%s%s%s:%d%s%s", function, function[0] ? " " : "", pf_text_path(file), c->line,
             src[0] ? "  " : "", src);
    fputs(head, o->f);
    pf_text_put_cut(o, what, o->width - pf_text_columns(o, head));
    fputc('\n', o->f);
}

/* The paths of the user's lines that led to the memory, outermost first, each line indented under the
 * line that called it; only when some path is longer than one line (else the line table says it all).
 * A run of calls that each pass all their bytes down (a deep chain of wrappers) shows its first and last
 * line, and how many it skipped between. */
static void call_paths(out_t *o, const pf_model_t *m, int rows)
{
    int deep = 0;
    for (int32_t n = m->first_root; n >= 0 && !deep; n = pf_report_calltree_next(m, n, calltree_shown(m, &m->nodes[n])))
        deep = m->nodes[n].depth > 0 && calltree_shown(m, &m->nodes[n]);
    if (!deep)
        return;
    pf_text_heading(o, "call paths", "each line of yours under the line that called it");
    pf_text_line(o, "%s  %6s %9s %9s  %s%s", pf_text_bold(o), "peak%", "at peak", "allocated", "line",
                 pf_text_reset(o));
    int shown = 0, left = 0;
    for (int32_t n = m->first_root; n >= 0;) {
        int show = calltree_shown(m, &m->nodes[n]);
        if (show && shown == rows)
            left++;
        else if (show) {
            call_path_row(o, m, &m->nodes[n]);
            shown++;
            int32_t last = n, skipped = -1;
            for (int32_t k; (k = passing_child(m, last)) >= 0; skipped++)
                last = k;
            if (skipped >= 2) {     /* first, "N lines", last: shorter than the run itself */
                pf_text_line(o, "  %6s %9s %9s  %*s(%d more lines passing the same bytes down)", "", "", "",
                     path_indent(o, m->nodes[n].depth + 1), "", skipped);
                n = last;
                continue;       /* the run's last line is shown next, then its children */
            }
        }
        n = pf_report_calltree_next(m, n, show);
    }
    if (left)
        pf_text_line(o, "  and %d more (JSON call_tree, or the HTML report's flame graph, has them all)", left);
}

/* One row per process when children were merged. */
static void processes(out_t *o, const pf_model_t *m)
{
    if (pf_report_process_count(m) < 2)
        return;
    char a[16], b[16], c[16];
    fputc('\n', o->f);
    pf_text_line(o, "%s%-8s %-8s %9s %9s %9s  %s%s", pf_text_bold(o), "pid", "parent", "allocated", "peak", "at exit",
                 "command", pf_text_reset(o));
    int via = 0;
    for (size_t i = 0; i < m->n_procs; i++) {
        const pf_process_t *p = &m->procs[i];
        if (!pf_report_process_shown(m, i))
            continue;
        char parent[16], tag[PF_REPORT_TAG_BYTES];
        snprintf(parent, sizeof parent, p->via_pid ? "%u*" : "%u", p->via_pid ? p->via_pid : p->ppid);
        via |= p->via_pid != 0 && !p->root;
        /* a process that exec'd keeps its pid: its first image's row says so */
        pf_text_line(o, "%-8u %-8s %9s %9s %9s  %s%s", p->pid, p->root ? "(root)" : parent,
                     pf_text_human(p->alloc_bytes, a), pf_text_human(p->peak_bytes, b), pf_text_human(p->live, c),
                     pf_report_process_tag(m, i, tag, sizeof tag), p->argv);
    }
    if (via)
        pf_text_line(o, "* through a shell or another launcher that process ran");
    pf_render_workers_text(m, o->f, o->width);
}

/* Python processes that ran unprofiled, by the line that started them: what the report cannot show. */
static void unprofiled(out_t *o, const pf_model_t *m)
{
    pf_unprofiled_group_t top[PF_UNPROFILED_TOP];
    size_t others, n = pf_report_unprofiled_groups(m, top, PF_UNPROFILED_TOP, &others);
    if (!n)
        return;
    pf_text_heading(o, "not profiled",
                    "Python processes given an environment without pyflow's LD_PRELOAD or PYFLOW_OUTPUT");
    for (size_t k = 0; k < n; k++) {
        char where[300] = "(no line of yours)", what[48];
        if (top[k].row >= 0) {
            const pf_line_t *l = &m->lines[top[k].row];
            snprintf(where, sizeof where, "%s:%d", pf_text_path(pf_model_str(m, l->file)), l->line);
        }
        const pf_unprofiled_t *u = &m->unprofiled[top[k].first];
        if (top[k].count > 1)
            snprintf(what, sizeof what, "%zu processes, the first", top[k].count);
        else if (u->pid == 0)     /* os.system: glibc starts the shell where no hook sees its pid */
            snprintf(what, sizeof what, "a shell");
        else if (u->pid == u->starter_pid)
            snprintf(what, sizeof what, "pid %u exec'd itself into", u->pid);
        else
            snprintf(what, sizeof what, "pid %u", u->pid);
        fprintf(o->f, "  %s  %s: ", where, what);
        pf_text_put_cut(o, u->command, o->width - 6 - pf_text_columns(o, where) - pf_text_columns(o, what));
        fputc('\n', o->f);
    }
    if (others)
        pf_text_line(o, "  and %zu more started by other lines", others);
    pf_text_line(o, "  fix: %s", PF_UNPROFILED_FIX);
}

int pf_render_text(const pf_model_t *m, FILE *f, const pf_text_opts_t *opts)
{
    out_t o = {f, opts && opts->width > 20 ? opts->width : DEFAULT_WIDTH, opts ? opts->color : 0};
    int rows = opts && opts->max_lines > 0 ? opts->max_lines : DEFAULT_ROWS;
    header(&o, m, opts);
    lines_table(&o, m, rows, opts && opts->reduced);
    outside_code(&o, m);
    started_lines(&o, m);
    funcs_table(&o, m, rows < 8 ? rows : 8);
    call_paths(&o, m, rows);
    processes(&o, m);
    unprofiled(&o, m);
    pf_text_peak_contributors(&o, m);
    pf_text_findings(&o, m);
    pf_text_access_findings(&o, m);
    pf_text_waste(f, m, o.width, o.color);
    pf_text_leaks(&o, m);
    pf_render_tests_text(m, f, rows);
    if (m->n_notes)
        fputc('\n', f);
    for (size_t i = 0; i < m->n_notes; i++)     /* what children told the launcher: why they went unprofiled */
        fprintf(f, "pyflow: %s\n", m->notes[i]);   /* whole: a message cut short says nothing */
    if (opts && opts->profile_path) {
        fputc('\n', f);
        pf_text_line(&o, "profile saved: %s (render again: pyflow report %s)", opts->profile_path, opts->profile_path);
    }
    return ferror(f) ? -EIO : 0;
}
