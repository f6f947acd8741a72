/* pf_render_diff.c - `pyflow diff`'s text report and HTML page (pf_diff.h). */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "pf_diff.h"
#include "pf_html_int.h"
#include "pf_report_int.h"

static const char *const table_titles[3] = {"lines (matched by function and source text)", "functions",
                                            "call paths (outermost first)"};
static const int table_measures[3] = {PF_DIFF_MEASURES, PF_DIFF_MEASURES, PF_DM_COPIES};  /* paths: no copies */

/* "+1.5 MiB", "-200 B", "0" into buf. */
static const char *signed_bytes(double v, char buf[32])
{
    char b[24];
    if (fabs(v) < 0.5)
        return strcpy(buf, "0");
    snprintf(buf, 32, "%s%s", v > 0 ? "+" : "-", pf_report_human_bytes(fabs(v), b));
    return buf;
}

static const char *percent(double base, double delta, char buf[32])
{
    if (fabs(delta) < 0.5)
        buf[0] = '\0';
    else if (base < 0.5)
        snprintf(buf, 32, "(new)");
    else
        snprintf(buf, 32, "(%+.1f%%)", delta / base * 100);
    return buf;
}

/* Where a row is: "app.py:12 make", on the new side where it is there. */
static void where(const pf_diff_entry_t *e, int table, char *buf, size_t size)
{
    const pf_diff_row_t *r = e->new_ ? e->new_ : e->base;
    if (table == PF_DIFF_PATHS)
        snprintf(buf, size, "%s", r->label ? r->label : "");
    else if (table == PF_DIFF_FUNCS)
        snprintf(buf, size, "%s %s", pf_report_basename(r->file), r->function[0] ? r->function : "<module>");
    else
        snprintf(buf, size, "%s:%d %s", pf_report_basename(r->file), r->line, r->function);
}

static const char *status_of(const pf_diff_entry_t *e)
{
    return !e->base ? "new" : !e->new_ ? "gone" : e->edited ? "edited" : "";
}

static void cond_lines(FILE *out, const pf_diff_t *d, const pf_diff_opts_t *o, int html)
{
    for (size_t i = 0; i < o->n_conds; i++) {
        const pf_diff_cond_t *c = &o->conds[i];
        int broken = pf_diff_cond_broken(d, c);
        char a[32], p[32];
        double base = d->base.total[c->measure], delta = d->new_.total[c->measure] - base;
        if (html)
            fprintf(out, "<li class=\"%s\">", broken ? "bad" : "ok");
        fprintf(out, "%s--fail-on %s: %s (%s %s %s)\n", html ? "" : "  ", c->text, broken ? "FAILED" : "ok",
                pf_diff_measure_names[c->measure], signed_bytes(delta, a), percent(base, delta, p));
        if (html)
            fputs("</li>", out);
    }
}

int pf_diff_render_text(const pf_diff_t *d, FILE *out, const pf_diff_opts_t *o)
{
    int max = o->max_rows > 0 ? o->max_rows : 15;
    char a[32], b[32], c[32], p[32];
    fprintf(out, "pyflow diff: %s -> %s\n\n", d->base.name, d->new_.name);
    fprintf(out, "  %-12s %12s %12s %12s   (copies and redundant: of your code's lines)\n", "totals", "base", "new",
            "change");
    for (int m = 0; m < PF_DIFF_MEASURES; m++) {
        double base = d->base.total[m], now = d->new_.total[m];
        fprintf(out, "  %-12s %12s %12s %12s %s\n", pf_diff_measure_names[m], pf_report_human_bytes(base, a),
                pf_report_human_bytes(now, b), signed_bytes(now - base, c), percent(base, now - base, p));
    }
    for (int t = 0; t < 3; t++) {
        fprintf(out, "\n%s: %zu changed%s\n", table_titles[t], d->n[t], d->n[t] > (size_t)max ? ", largest first" : "");
        if (!d->n[t])
            continue;
        fputs("  ", out);
        for (int m = 0; m < table_measures[t]; m++)
            fprintf(out, "%11s ", pf_diff_measure_names[m]);
        fputs(" where\n", out);
        for (size_t i = 0; i < d->n[t] && i < (size_t)max; i++) {
            const pf_diff_entry_t *e = &d->entries[t][i];
            char at[1024];
            where(e, t, at, sizeof at);
            fputs("  ", out);
            for (int m = 0; m < table_measures[t]; m++)
                fprintf(out, "%11s ", signed_bytes(e->delta[m], a));
            const pf_diff_row_t *r = e->new_ ? e->new_ : e->base;
            fprintf(out, " %s%s%s%s\n", at, status_of(e)[0] ? " [" : "", status_of(e), status_of(e)[0] ? "]" : "");
            if (t == PF_DIFF_LINES && e->edited && e->base->source[0])
                fprintf(out, "  %*s was: %.100s\n", 12 * table_measures[t], "", e->base->source);
            if (t == PF_DIFF_LINES && r->source[0])
                fprintf(out, "  %*s %s%.100s\n", 12 * table_measures[t], "", e->edited ? "now: " : "", r->source);
        }
    }
    if (o->n_conds) {
        fputs("\nconditions:\n", out);
        cond_lines(out, d, o, 0);
    }
    return ferror(out) ? -EIO : 0;
}

int pf_diff_render_html(const pf_diff_t *d, FILE *out, const pf_diff_opts_t *o)
{
    int max = o->max_rows > 0 ? o->max_rows : 200;
    fputs("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>pyflow diff</title><style>"
          "body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
          "td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}td.w,th.w{text-align:left}"
          "td.up{color:#b00}td.down{color:#070}code{font-size:12px;color:#555}.bad{color:#b00;font-weight:bold}"
          ".ok{color:#070}</style></head><body>\n<h1>pyflow diff</h1><p>", out);
    pf_html_esc(out, d->base.name);
    fputs(" &rarr; ", out);
    pf_html_esc(out, d->new_.name);
    fputs("</p>\n<table><tr><th class=w>total</th><th>base</th><th>new</th><th>change</th></tr>\n", out);
    char a[32], p[32];
    for (int m = 0; m < PF_DIFF_MEASURES; m++) {
        double base = d->base.total[m], delta = d->new_.total[m] - base;
        fprintf(out, "<tr><td class=w>%s</td>", pf_diff_measure_names[m]);
        pf_html_num_cell(out, base);
        pf_html_num_cell(out, d->new_.total[m]);
        fprintf(out, "<td class=\"%s\">%s %s</td></tr>\n", delta > 0 ? "up" : delta < 0 ? "down" : "",
                signed_bytes(delta, a), percent(base, delta, p));
    }
    fputs("</table>\n", out);
    if (o->n_conds) {
        fputs("<h2>conditions</h2><ul>", out);
        cond_lines(out, d, o, 1);
        fputs("</ul>\n", out);
    }
    for (int t = 0; t < 3; t++) {
        fprintf(out, "<h2>%s: %zu changed</h2>\n<table><tr>", table_titles[t], d->n[t]);
        for (int m = 0; m < table_measures[t]; m++)
            fprintf(out, "<th>%s</th>", pf_diff_measure_names[m]);
        fputs("<th class=w>where</th></tr>\n", out);
        for (size_t i = 0; i < d->n[t] && i < (size_t)max; i++) {
            const pf_diff_entry_t *e = &d->entries[t][i];
            const pf_diff_row_t *r = e->new_ ? e->new_ : e->base;
            char at[1024];
            where(e, t, at, sizeof at);
            fputs("<tr>", out);
            for (int m = 0; m < table_measures[t]; m++)
                fprintf(out, "<td class=\"%s\" data-v=\"%.0f\">%s</td>",
                        e->delta[m] > 0 ? "up" : e->delta[m] < 0 ? "down" : "", e->delta[m],
                        signed_bytes(e->delta[m], a));
            fputs("<td class=w>", out);
            pf_html_esc(out, at);
            if (status_of(e)[0])
                fprintf(out, " [%s]", status_of(e));
            if (t == PF_DIFF_LINES && r->source[0]) {
                fputs("<br><code>", out);
                pf_html_esc(out, r->source);
                fputs("</code>", out);
            }
            fputs("</td></tr>\n", out);
        }
        fputs("</table>\n", out);
    }
    fputs("</body></html>\n", out);
    return ferror(out) ? -EIO : 0;
}
