/* pf_render_waste.c - recomputed values and untouched memory (pf_waste_int.h) in each rendering: the JSON
 * fields and lists, the text report's findings, the HTML page's findings. The renderers call in here so
 * that their own files change by a line or two. */
#include <math.h>
#include <string.h>

#include "pf_html_int.h"
#include "pf_json_int.h"
#include "pf_model_int.h"
#include "pf_report_int.h"
#include "pf_render_waste.h"

#define PF_WASTE_FINDINGS 5

/* Findings are what the user can change (pf_report_finding_line): not the interpreter's start-up, not a
 * library's line, and not an import statement, which runs the module's code once, so what it builds or
 * leaves untouched there (`import torch` reserves about 1 GiB it never touches) is the library's doing, as
 * leaks and redundant copies there are. The line keeps its figures. */
int pf_waste_recompute_shown(const pf_model_t *m, const pf_recomputation_t *r)
{
    return r->matches >= PF_RECOMPUTE_MIN_MATCHES && r->bytes > 0 && r->row >= 0 &&
           pf_report_finding_line(m, &m->lines[r->row]);
}

int pf_waste_untouched_shown(const pf_model_t *m, const pf_untouched_t *u)
{
    return u->bytes >= PF_UNTOUCHED_MIN_BYTES && u->bytes >= PF_UNTOUCHED_MIN_SHARE * u->checked_bytes &&
           pf_report_finding_line(m, &m->lines[u->row]);
}

/* The text and HTML findings name a line (call path) once, by its largest entry, which holds the sums of
 * the others (the JSON's one entry per size): a line making "x" * (i % 1000) has a thousand sizes, and
 * each its own finding filled the list with one line. */
static int site_shown_before(const pf_model_t *m, const pf_recomputation_t *r)
{
    return r != &m->waste.recomputations[r->site_first];
}

const char *pf_waste_recompute_text(const pf_model_t *m, const pf_recomputation_t *r, char *buf, size_t size)
{
    char a[24], b[24], c[24];
    const pf_recomputation_site_t *site = &m->waste.recomputations[r->site_first].site;
    if (site->sizes > 1) {  /* many values, each made again: what helps is a cache of them */
        char range[64];
        pf_report_human_bytes((double)site->smallest, a);
        pf_report_human_bytes((double)site->largest, b);
        if (strcmp(a, b) == 0)  /* sizes a few bytes apart read alike: not "20.8 KiB to 20.8 KiB" */
            snprintf(range, sizeof range, "each about %s", a);
        else
            snprintf(range, sizeof range, "%s to %s", a, b);
        snprintf(buf, size, "recomputed %u values of %u sizes (%s) %.0f times in all (%s): %s", site->values,
                 site->sizes, range, site->count, pf_report_human_bytes(site->bytes, c), r->fix);
        return buf;
    }
    snprintf(buf, size, "recomputed the same %s value %.0f time%s (%s): %s", pf_report_human_bytes((double)r->size, a),
             r->count, r->count < 1.5 ? "" : "s", pf_report_human_bytes(r->bytes, b), r->fix);
    if (r->values > 1) {
        size_t used = strlen(buf);
        snprintf(buf + used, size - used, " (%u distinct values, each made again)", r->values);
    }
    return buf;
}

const char *pf_waste_untouched_text(const pf_untouched_t *u, char *buf, size_t size)
{
    char a[24], b[24], c[24];
    double used = u->checked_bytes > 0 ? 100.0 * (1.0 - u->bytes / u->checked_bytes) : 0;
    if (u->blocks < 1.5)
        snprintf(buf, size, "allocated %s, used %.0f%% (%s never touched)",
                 pf_report_human_bytes((double)u->largest_size, a), used, pf_report_human_bytes(u->bytes, b));
    else
        snprintf(buf, size, "%s never touched in %.0f blocks, used %.0f%% (largest %s, %.0f%% of it untouched)",
                 pf_report_human_bytes(u->bytes, a), u->blocks, used, pf_report_human_bytes((double)u->largest_size, b),
                 u->largest_size ? 100.0 * (double)u->largest_untouched / (double)u->largest_size : 0.0);
    (void)c;
    return buf;
}

const char *pf_waste_resident_text(const pf_model_t *m, char *buf, size_t size)
{
    if (m->waste.untouched_at_peak < 0.5 || m->total.peak_bytes <= 0)
        return NULL;
    char a[24], b[24];
    snprintf(buf, size, "resident at the peak %s (%s of the peak allocated but never touched: not in RSS)",
             pf_report_human_bytes(m->waste.resident_peak_bytes, a),
             pf_report_human_bytes(m->waste.untouched_at_peak, b));
    return buf;
}

/* ---- JSON ---- */

static void bytes(pf_json_t *j, const char *key, double v)
{
    pf_json_key(j, key);
    pf_json_number(j, v > 0 ? floor(v + 0.5) : 0);
}

void pf_json_waste_line(pf_json_t *j, const pf_line_t *l)
{
    bytes(j, "untouched_bytes", l->untouched_bytes);
    bytes(j, "resident_peak_bytes", l->resident_peak_bytes);
    bytes(j, "recomputed_bytes", l->recomputed_bytes);
    pf_json_key(j, "recomputed_count");
    pf_json_number(j, floor(l->recomputed_count + 0.5));
}

void pf_json_waste_totals(pf_json_t *j, const pf_model_t *m)
{
    bytes(j, "resident_peak_bytes", m->waste.resident_peak_bytes);
    bytes(j, "untouched_bytes", m->waste.untouched_bytes);
    bytes(j, "recomputed_bytes", m->waste.recomputed_bytes);
}

static void row_site(pf_json_t *j, const pf_model_t *m, int32_t row)
{
    const pf_line_t *l = &m->lines[row];
    pf_json_key(j, "file");
    pf_json_string(j, pf_model_str(m, l->file));
    pf_json_key(j, "line");
    pf_json_int(j, l->line);
    pf_json_key(j, "function");
    pf_json_string(j, pf_model_str(m, l->function));
}

void pf_json_waste(pf_json_t *j, const pf_model_t *m)
{
    pf_json_key(j, "recomputations");
    pf_json_begin_array(j);
    for (size_t i = 0; i < m->waste.n_recomputations; i++) {
        const pf_recomputation_t *r = &m->waste.recomputations[i];
        if (!pf_waste_recompute_shown(m, r))
            continue;
        pf_json_begin_object(j);
        row_site(j, m, r->row);
        bytes(j, "bytes", r->bytes);
        pf_json_key(j, "count");
        pf_json_number(j, floor(r->count + 0.5));
        pf_json_key(j, "object_size");
        pf_json_number(j, (double)r->size);
        pf_json_key(j, "values");
        pf_json_int(j, r->values);
        pf_json_key(j, "matches");
        pf_json_int(j, r->matches);
        pf_json_key(j, "domain");
        pf_json_string(j, r->native ? "native" : "python");
        pf_json_key(j, "category");
        pf_json_string(j, r->category);
        pf_json_key(j, "made_in");     /* the library function that made the values, under the line */
        if (r->made_in)
            pf_json_string(j, pf_model_str(m, r->made_in));
        else
            pf_json_null(j);
        pf_json_key(j, "fix");
        pf_json_string(j, r->fix);
        pf_json_key(j, "via");
        pf_json_node_callers(j, m, r->node);
        pf_json_end_object(j);
    }
    pf_json_end_array(j);

    pf_json_key(j, "untouched");
    pf_json_begin_array(j);
    for (size_t i = 0; i < m->waste.n_untouched; i++) {
        const pf_untouched_t *u = &m->waste.untouched[i];
        if (u->bytes < 0.5)
            continue;
        pf_json_begin_object(j);
        row_site(j, m, u->row);
        bytes(j, "untouched_bytes", u->bytes);
        bytes(j, "checked_bytes", u->checked_bytes);
        pf_json_key(j, "blocks");
        pf_json_number(j, floor(u->blocks + 0.5));
        pf_json_key(j, "largest_block_bytes");
        pf_json_number(j, (double)u->largest_size);
        pf_json_key(j, "largest_block_untouched_bytes");
        pf_json_number(j, (double)u->largest_untouched);
        pf_json_key(j, "finding");
        pf_json_bool(j, pf_waste_untouched_shown(m, u));
        pf_json_key(j, "made_in");     /* the library function that allocated its largest block */
        if (u->made_in)
            pf_json_string(j, pf_model_str(m, u->made_in));
        else
            pf_json_null(j);
        pf_json_key(j, "fix");
        pf_json_string(j, u->fix);
        pf_json_key(j, "via");
        pf_json_node_callers(j, m, u->node);
        pf_json_end_object(j);
    }
    pf_json_end_array(j);

    pf_json_key(j, "waste");
    pf_json_begin_object(j);
    pf_json_key(j, "measured");     /* false: the runtime wrote no CONTENT records (older, or PYFLOW_NO_WASTE) */
    pf_json_bool(j, m->waste.content_records > 0);
    bytes(j, "untouched_bytes", m->waste.untouched_bytes);
    bytes(j, "checked_bytes", m->waste.checked_bytes);
    bytes(j, "untouched_at_peak_bytes", m->waste.untouched_at_peak);
    bytes(j, "resident_peak_bytes", m->waste.resident_peak_bytes);
    bytes(j, "recomputed_bytes", m->waste.recomputed_bytes);
    pf_json_key(j, "recomputed_count");
    pf_json_number(j, floor(m->waste.recomputed_count + 0.5));
    pf_json_end_object(j);
}

/* ---- text ---- */

static void put_line(FILE *f, int width, const char *s)
{
    /* cut at width columns, counting UTF-8 lead bytes (the texts here are ASCII but for file names) */
    int cols = 0;
    const char *p = s;
    for (; *p; p++) {
        if (((unsigned char)*p & 0xC0) != 0x80 && ++cols > width)
            break;
    }
    fprintf(f, "%.*s\n", (int)(p - s), s);
}

void pf_text_waste(FILE *f, const pf_model_t *m, int width, int color)
{
    const char *bold = color ? "\033[1m" : "", *red = color ? "\033[31m" : "", *reset = color ? "\033[0m" : "";
    char text[768], row[1400], callers[1024];
    size_t shown = 0;
    for (size_t i = 0; i < m->waste.n_recomputations && shown < PF_WASTE_FINDINGS; i++) {
        const pf_recomputation_t *r = &m->waste.recomputations[i];
        if (!pf_waste_recompute_shown(m, r) || site_shown_before(m, r))
            continue;
        if (!shown++) {
            snprintf(row, sizeof row, "\n%srecomputed values%s (the same contents made again on the same line)", bold, reset);
            put_line(f, width + (int)(strlen(bold) + strlen(reset)), row);
        }
        const pf_line_t *l = &m->lines[r->row];
        snprintf(row, sizeof row, "  %s%s:%d%s  %s%s", red, pf_report_basename(pf_model_str(m, l->file)), l->line,
                 reset, r->category, pf_report_source_tail(m, l->file, l->line));
        put_line(f, width + (int)(strlen(red) + strlen(reset)), row);
        if (r->made_in) {
            snprintf(row, sizeof row, "      made inside %s", pf_model_str(m, r->made_in));
            put_line(f, width, row);
        }
        snprintf(row, sizeof row, "      %s", pf_waste_recompute_text(m, r, text, sizeof text));
        put_line(f, width, row);
        if (r->node >= 0 && m->nodes[r->node].parent >= 0) {
            snprintf(row, sizeof row, "      via %s", pf_report_callers(m, r->node, callers, sizeof callers));
            put_line(f, width, row);
        }
    }
    shown = 0;
    for (size_t i = 0; i < m->waste.n_untouched && shown < PF_WASTE_FINDINGS; i++) {
        const pf_untouched_t *u = &m->waste.untouched[i];
        if (!pf_waste_untouched_shown(m, u))
            continue;
        if (!shown++) {
            snprintf(row, sizeof row, "\n%suntouched memory%s (allocated, never written or read)", bold, reset);
            put_line(f, width + (int)(strlen(bold) + strlen(reset)), row);
        }
        const pf_line_t *l = &m->lines[u->row];
        snprintf(row, sizeof row, "  %s%s:%d%s  %s%s", red, pf_report_basename(pf_model_str(m, l->file)), l->line,
                 reset, pf_waste_untouched_text(u, text, sizeof text), pf_report_source_tail(m, l->file, l->line));
        put_line(f, width + (int)(strlen(red) + strlen(reset)), row);
        if (u->made_in) {
            snprintf(row, sizeof row, "      made inside %s", pf_model_str(m, u->made_in));
            put_line(f, width, row);
        }
        if (u->node >= 0 && m->nodes[u->node].parent >= 0) {
            snprintf(row, sizeof row, "      via %s", pf_report_callers(m, u->node, callers, sizeof callers));
            put_line(f, width, row);
        }
        snprintf(row, sizeof row, "      fix: %s", u->fix);
        put_line(f, width, row);
    }
}

/* ---- HTML ---- */

static void html_where(FILE *f, const pf_model_t *m, int32_t row)
{
    const pf_line_t *l = &m->lines[row];
    fputs("<code>", f);
    pf_html_esc(f, pf_report_basename(pf_model_str(m, l->file)));
    fprintf(f, ":%d</code> <code>", l->line);
    pf_html_esc(f, pf_report_source_line(m, pf_model_str(m, l->file), l->line));
    fputs("</code>", f);
}

int pf_html_waste_findings(FILE *f, const pf_model_t *m)
{
    char text[768];
    int n = 0;
    for (size_t i = 0, shown = 0; i < m->waste.n_recomputations && shown < PF_WASTE_FINDINGS; i++) {
        const pf_recomputation_t *r = &m->waste.recomputations[i];
        if (!pf_waste_recompute_shown(m, r) || site_shown_before(m, r))
            continue;
        fputs("<div class=\"finding\"><span class=\"bad\">recomputed value</span> ", f);
        pf_html_esc(f, r->category);
        fputs(" at ", f);
        html_where(f, m, r->row);
        if (r->made_in) {
            fputs(", made inside ", f);
            pf_html_esc(f, pf_model_str(m, r->made_in));
        }
        fputs(": ", f);
        pf_html_esc(f, pf_waste_recompute_text(m, r, text, sizeof text));
        fputs("</div>\n", f);
        shown++, n++;
    }
    for (size_t i = 0, shown = 0; i < m->waste.n_untouched && shown < PF_WASTE_FINDINGS; i++) {
        const pf_untouched_t *u = &m->waste.untouched[i];
        if (!pf_waste_untouched_shown(m, u))
            continue;
        fputs("<div class=\"finding\"><span class=\"bad\">untouched memory</span> at ", f);
        html_where(f, m, u->row);
        if (u->made_in) {
            fputs(", made inside ", f);
            pf_html_esc(f, pf_model_str(m, u->made_in));
        }
        fputs(": ", f);
        pf_html_esc(f, pf_waste_untouched_text(u, text, sizeof text));
        fputs("; ", f);
        pf_html_esc(f, u->fix);
        fputs("</div>\n", f);
        shown++, n++;
    }
    if (pf_waste_resident_text(m, text, sizeof text)) {
        fputs("<div class=\"finding\">", f);
        pf_html_esc(f, text);
        fputs("</div>\n", f);
    }
    return n;
}
