/* pf_render_html_watch.c - the HTML page's --watch parts: the watch summary, findings for the largest
 * redundant-access groups and for copies a watched write proved needed, per-row silent-store and
 * redundant-load columns, and two detail tables (every group with both hybrid call paths; every copy edge a
 * write decided). The figures are the model's, as in the text report and the JSON. */
#include <string.h>

#include "pf_html_int.h"
#include "pf_report_int.h"

static int has_access(const pf_model_t *m)
{
    return m->watch.present && (m->watch.modes & (PF_WATCH_MODE_STORES | PF_WATCH_MODE_LOADS));
}

static int has_copies(const pf_model_t *m) { return m->watch.present && (m->watch.modes & PF_WATCH_MODE_COPIES); }

static double pct(double part, double whole) { return whole > 0 ? 100 * part / whole : 0; }

/* "file.py:12" with the full path as a hover title; "-" for no row. */
static void where(FILE *f, const pf_model_t *m, int32_t row)
{
    if (row < 0) {
        fputs("-", f);
        return;
    }
    const pf_line_t *l = &m->lines[row];
    fputs("<span title=\"", f);
    pf_html_esc(f, pf_model_str(m, l->file));
    fputs("\">", f);
    pf_html_esc(f, pf_report_basename(pf_model_str(m, l->file)));
    fprintf(f, ":%d</span>", l->line);
}

static void source_of(FILE *f, const pf_model_t *m, int32_t row)
{
    if (row < 0)
        return;
    const pf_line_t *l = &m->lines[row];
    fputs(" <code>", f);
    pf_html_esc(f, pf_report_source_line(m, pf_model_str(m, l->file), l->line));
    fputs("</code>", f);
}

static double kind_total(const pf_model_t *m, const pf_redundancy_t *r)
{
    return r->kind == PF_ACCESS_STORE ? m->total.store_bytes : m->total.load_bytes;
}

static const char *kind_name(const pf_redundancy_t *r)
{
    return r->kind == PF_ACCESS_STORE ? "silent stores" : "redundant loads";
}

void pf_html_watch_summary(FILE *f, const pf_model_t *m)
{
    const pf_watch_summary_t *w = &m->watch;
    char a[24], b[24];
    if (has_access(m)) {
        fputs("<tr><td>watch</td><td>", f);
        pf_html_esc(f, w->event);
        fprintf(f, " period %llu, addresses %s: %llu samples (%llu armed), %llu traps; dropped %llu filtered, %llu "
                   "without a memory access, %llu busy, %llu by the reservoir</td></tr>",
                (unsigned long long)w->period, pf_report_address_source(w->source), (unsigned long long)w->samples, (unsigned long long)w->samples_armed,
                (unsigned long long)w->traps, (unsigned long long)w->dropped_filter,
                (unsigned long long)w->dropped_nomem, (unsigned long long)w->dropped_busy,
                (unsigned long long)w->dropped_reservoir);
        if (w->widened_threads)
            fprintf(f, "<tr><td>period widened</td><td>up to %llu on %u thread(s): their samples took more than half "
                       "their time</td></tr>", (unsigned long long)w->period_max, w->widened_threads);
        fprintf(f, "<tr><td>watched accesses</td><td>stores %s, %.0f%% silent; loads %s, %.0f%% redundant</td></tr>",
                pf_report_human_bytes((double)w->store_bytes, a), pct((double)w->silent_store_bytes, (double)w->store_bytes),
                pf_report_human_bytes((double)w->load_bytes, b), pct((double)w->redundant_load_bytes, (double)w->load_bytes));
    }
    if (w->present && w->emulated) {
        char how[64];
        fprintf(f, "<tr><td>watchpoints</td><td>%s (debug registers do not fire here; --watch-budget)</td></tr>",
                pf_report_watchpoints(w->emulated, w->budget_pct, how));
    }
    if (has_copies(m))
        fprintf(f, "<tr><td>copy watches</td><td>%llu copies watched, %llu proved needed by a write</td></tr>",
                (unsigned long long)w->copy_watches, (unsigned long long)w->copy_writes);
}

#define PF_HTML_FINDINGS 5

int pf_html_watch_findings(FILE *f, const pf_model_t *m)
{
    char a[24];
    int n = 0;
    for (size_t i = 0; i < m->n_redundancies && n < PF_HTML_FINDINGS; i++) {
        const pf_redundancy_t *r = &m->redundancies[i];
        if (!pf_report_redundancy_shown(m, r))
            continue;
        fprintf(f, "<div class=\"finding\"><span class=\"bad\">%s</span> %s%s (%.0f%% of watched), ", kind_name(r),
                r->approx ? "&#8776;" : "", pf_report_human_bytes(r->bytes, a), pct(r->bytes, kind_total(m, r)));
        pf_html_esc(f, r->category);
        fputs(", at ", f);
        where(f, m, r->repeat_line);
        source_of(f, m, r->repeat_line);
        fputs(": ", f);
        pf_html_esc(f, r->fix);
        fputs("</div>\n", f);
        n++;
    }
    const pf_flow_t *top[PF_HTML_FINDINGS];
    size_t shown = pf_report_needed_copies(m, top, PF_HTML_FINDINGS);
    for (size_t k = 0; k < shown; k++) {
        const pf_flow_t *fl = top[k];
        fprintf(f, "<div class=\"finding\"><span class=\"good\">copy proved needed</span> %s at ",
                pf_report_human_bytes(fl->bytes, a));
        where(f, m, fl->at_line);
        source_of(f, m, fl->at_line);
        fprintf(f, ": the %s was written at ", fl->write_to_dst ? "copy" : "source");
        where(f, m, fl->write_line);
        fputs("</div>\n", f);
        n++;
    }
    return n;
}

int pf_html_watch_columns(const pf_model_t *m) { return has_access(m); }

void pf_html_watch_heads(FILE *f)
{
    fputs("<th data-k=\"silent\" title=\"stored again with the same value by another native call\">silent stores</th>"
          "<th data-k=\"rloads\" title=\"loaded again, unchanged, by another native call\">redundant loads</th>", f);
}

static void share_cell(FILE *f, double part, double whole, const char *what)
{
    char b[24], c[24];
    fprintf(f, "<td data-v=\"%.0f\" title=\"%.0f%% of %s watched %s\">%s</td>", part, pct(part, whole),
            pf_report_human_bytes(whole, c), what, pf_report_human_bytes(part, b));
}

void pf_html_watch_cells(FILE *f, const pf_stats_t *s)
{
    share_cell(f, s->redundant_store_bytes, s->store_bytes, "stores");
    share_cell(f, s->redundant_load_bytes, s->load_bytes, "loads");
}

static void redundancy_table(FILE *f, const pf_model_t *m)
{
    fputs("<h2>Redundant stores and loads</h2>\n<p>The same value stored, or loaded unchanged, again by another "
          "native call: PMU samples chose the words, watchpoints caught the repeat. Bytes are estimates "
          "(each watched access stands for those sampled while it was armed).</p>\n"
          "<table id=\"redundancies\" class=\"sortable\"><thead><tr><th data-k=\"kind\">kind</th>"
          "<th data-k=\"bytes\">bytes</th><th data-k=\"share\">of watched</th><th data-k=\"pairs\">pairs</th>"
          "<th data-k=\"category\">category</th><th data-k=\"first\">first access</th>"
          "<th data-k=\"repeat\">repeated at</th><th>call paths (innermost first)</th></tr></thead><tbody>\n", f);
    char a[24];
    for (size_t i = 0; i < m->n_redundancies; i++) {
        const pf_redundancy_t *r = &m->redundancies[i];
        double share = pct(r->bytes, kind_total(m, r));
        fprintf(f, "<tr><td>%s</td><td data-v=\"%.0f\">%s%s</td><td data-v=\"%.1f\">%.0f%%</td><td>%.0f</td>",
                kind_name(r), r->bytes, r->approx ? "&#8776;" : "", pf_report_human_bytes(r->bytes, a), share, share,
                r->count);
        fputs("<td title=\"", f);
        pf_html_esc(f, r->fix);
        fputs("\">", f);
        pf_html_esc(f, r->category);
        fputs("</td><td>", f);
        where(f, m, r->first_line);
        fputs("</td><td>", f);
        where(f, m, r->repeat_line);
        fputs("</td><td class=\"src\"><details><summary>paths</summary>first: ", f);
        pf_html_esc(f, pf_model_str(m, r->first_path));
        fputs("<br>repeat: ", f);
        pf_html_esc(f, pf_model_str(m, r->repeat_path));
        fputs("</details></td></tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
}

static void needed_copies_table(FILE *f, const pf_model_t *m)
{
    fputs("<h2>Copies proved needed</h2>\n<p>Copies whose verdict a watched write decided: the first write that "
          "changed the copy or its source while both lived.</p>\n"
          "<table id=\"needed\" class=\"sortable\"><thead><tr><th data-k=\"at\">copied at</th>"
          "<th data-k=\"bytes\">bytes</th><th data-k=\"count\">copies</th><th data-k=\"watched\">decided by a write</th>"
          "<th data-k=\"end\">written</th><th data-k=\"by\">write at</th><th>native</th></tr></thead><tbody>\n", f);
    for (size_t i = 0; i < m->n_flows; i++) {
        const pf_flow_t *fl = &m->flows[i];
        if (!fl->watch_judged)
            continue;
        fputs("<tr><td>", f);
        where(f, m, fl->at_line);
        fputs("</td>", f);
        pf_html_num_cell(f, fl->bytes);
        fprintf(f, "<td>%.0f</td><td>%u of %u</td><td>%s</td><td>", fl->count, fl->watch_judged, fl->judged,
                fl->write_to_dst ? "copy" : "source");
        where(f, m, fl->write_line);
        fputs("</td><td>", f);
        pf_html_esc(f, pf_model_str(m, fl->write_native));
        fputs("</td></tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
}

void pf_html_watch_sections(FILE *f, const pf_model_t *m)
{
    if (has_access(m) && m->n_redundancies)
        redundancy_table(f, m);
    const pf_flow_t *any[1];
    if (pf_report_needed_copies(m, any, 1))
        needed_copies_table(f, m);
}
