/* pf_render_text_findings.c - the text report's findings (pf_text_int.h): the lines holding most of the
 * peak, probable leaks, redundant stores and loads, copies proved needed and redundant copies. Each reads
 * a finding the model worked out; nothing is decided here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pf_model_int.h"
#include "pf_report_int.h"
#include "pf_text_int.h"
#include "pf_util_int.h"

/* Under a finding about line l: the callers of its call-tree node holding most of its bytes at the peak
 * (at_exit 0) or at exit, when it has callers: which caller keeps the memory of a shared helper. */
static void via(out_t *o, const pf_model_t *m, const pf_line_t *l, int at_exit)
{
    char callers[1024], more[64] = "";
    size_t paths;
    const char *callers_of = pf_report_via(m, l, at_exit, callers, sizeof callers, &paths);
    if (!callers_of)
        return;
    if (paths > 1)
        snprintf(more, sizeof more, " (most of it; %zu paths in all)", paths);
    pf_text_line(o, "      via %s%s", callers_of, more);
}

/* The lines holding most of the program's peak. */
void pf_text_peak_contributors(out_t *o, const pf_model_t *m)
{
    if (m->total.peak_bytes <= 0)
        return;
    char a[16];
    int shown = 0;
    for (int pass = 0; pass < 3; pass++) {
        const pf_line_t *best = NULL;
        static const pf_line_t *taken[3];
        for (size_t i = 0; i < m->n_lines; i++) {
            const pf_line_t *l = &m->lines[i];
            int used = 0;
            for (int k = 0; k < pass; k++)
                used |= taken[k] == l;
            if (!used && l->s.peak_bytes > 0 && (!best || l->s.peak_bytes > best->s.peak_bytes))
                best = l;
        }
        if (!best || best->s.peak_bytes < 0.05 * m->total.peak_bytes)
            break;
        taken[pass] = best;
        if (!shown++) {
            char when[32];
            snprintf(when, sizeof when, "%.2f s", (double)m->peak_ns / 1e9);
            pf_text_heading(o, "largest at the peak", when);
        }
        const char *source = pf_report_source_line(m, pf_model_str(m, best->file), best->line);
        const char *function = pf_model_str(m, best->function);
        pf_text_line(o, "  %s:%d  %s (%.0f%% of the peak)%s%s", pf_text_path(pf_model_str(m, best->file)), best->line,
             pf_text_human(best->s.peak_bytes, a), 100 * best->s.peak_bytes / m->total.peak_bytes,
             source[0] ? ": " : function[0] ? " in " : "", source[0] ? source : function);
        via(o, m, best, 0);
    }
}

void pf_text_leaks(out_t *o, const pf_model_t *m)
{
    char a[16], b[16];
    int any = 0;
    size_t *order = pf_report_line_order(m);
    for (size_t k = 0; k < m->n_lines; k++) {
        const pf_line_t *l = &m->lines[order[k]];
        if (!pf_report_leak_found(m, l))
            continue;
        double p = pf_report_leak_likelihood(&l->s);
        if (!any++) {
            pf_text_heading(o, "probable leaks", "live at exit and still growing");
        }
        pf_text_line(o, "  %s%s:%d%s  %s live at exit, likelihood %.0f%%, growing %s/s%s", pf_text_red(o),
             pf_text_path(pf_model_str(m, l->file)), l->line, pf_text_reset(o), pf_text_human(l->s.leaked_bytes, a),
             floor(1000 * p) / 10, pf_text_human(l->s.leak.rate, b), pf_report_source_tail(m, l->file, l->line));
        via(o, m, l, 1);
    }
    free(order);
}

#define PF_ACCESS_FINDINGS 5

void pf_text_access_findings(out_t *o, const pf_model_t *m)
{
    char a[16];
    for (size_t i = 0, shown = 0; i < m->n_redundancies && shown < PF_ACCESS_FINDINGS; i++) {
        const pf_redundancy_t *r = &m->redundancies[i];
        if (!pf_report_redundancy_shown(m, r))
            continue;
        if (shown++ == 0) {
            pf_text_heading(o, "redundant stores and loads",
                            "the same value stored or loaded again by another native call");
        }
        const pf_line_t *at = &m->lines[r->repeat_line];
        double kind_total = r->kind == PF_ACCESS_STORE ? m->total.store_bytes : m->total.load_bytes;
        pf_text_line(o, "  %s%s:%d%s  %s%s %s, %.0f%% of watched %ss (%.0f pairs), %s%s", pf_text_red(o),
             pf_text_path(pf_model_str(m, at->file)), at->line, pf_text_reset(o), r->approx ? "\u2248" : "",
             pf_text_human(r->bytes, a), r->kind == PF_ACCESS_STORE ? "silent stores" : "redundant loads",
             pf_text_share(r->bytes, kind_total), r->kind == PF_ACCESS_STORE ? "store" : "load", r->count, r->category,
             pf_report_source_tail(m, at->file, at->line));
        if (r->first_line >= 0 && r->first_line != r->repeat_line) {
            const pf_line_t *first = &m->lines[r->first_line];
            pf_text_line(o, "      first at %s:%d", pf_text_path(pf_model_str(m, first->file)), first->line);
        }
        if (r->repeat_native)
            pf_text_line(o, "      in %s", pf_model_str(m, r->repeat_native));
        pf_text_line(o, "      fix: %s", r->fix);
    }
}

/* --watch=copies: the copies a watched write proved needed, and who wrote (the largest edges first). */
static void needed_copies(out_t *o, const pf_model_t *m)
{
    enum { SHOWN = 5 };
    const pf_flow_t *top[SHOWN];
    size_t shown = pf_report_needed_copies(m, top, SHOWN);
    char a[16];
    for (size_t k = 0; k < shown; k++) {
        const pf_flow_t *f = top[k];
        const pf_line_t *at = &m->lines[f->at_line];
        if (!k) {
            pf_text_heading(o, "copies proved needed", "a watched write changed the copy or its source");
        }
        pf_text_line(o, "  %s:%d  %s in %.0f cop%s%s", pf_text_path(pf_model_str(m, at->file)), at->line,
             pf_text_human(f->bytes, a), f->count, f->count < 1.5 ? "y" : "ies", pf_report_source_tail(m, at->file, at->line));
        if (f->write_line >= 0) {
            const pf_line_t *w = &m->lines[f->write_line];
            pf_text_line(o, "      %s written at %s:%d%s%s%s", f->write_to_dst ? "copy" : "source",
                 pf_text_path(pf_model_str(m, w->file)), w->line, f->write_native ? " in " : "",
                 f->write_native ? pf_model_str(m, f->write_native) : "", pf_report_source_tail(m, w->file, w->line));
        } else {
            pf_text_line(o, "      %s written%s%s (no Python frame)", f->write_to_dst ? "copy" : "source",
                 f->write_native ? " in " : "", f->write_native ? pf_model_str(m, f->write_native) : "");
        }
    }
}

#define COPIES_ABOUT "neither copy nor source was modified while both lived"

/* The redundant bytes of the header's total that no finding above lists, and why. */
static void unlisted_copies(out_t *o, const pf_model_t *m, int listed)
{
    pf_unlisted_redundancy_t u;
    pf_report_unlisted_redundancy(m, &u);
    int started = pf_report_unlisted_shown(m, u.started_bytes),
        elsewhere = pf_report_unlisted_shown(m, u.elsewhere_bytes);
    if (!started && !elsewhere)
        return;
    if (!listed) {
        pf_text_heading(o, "redundant copies", COPIES_ABOUT);
    }
    char a[16];
    if (started) {
        const pf_line_t *l = &m->lines[u.started_line];
        pf_text_line(o, "  %s%s by threads and processes your lines started, in library code (most: %s:%d)",
             listed ? "and " : "", pf_text_human(u.started_bytes, a), pf_text_path(pf_model_str(m, l->file)), l->line);
    }
    if (elsewhere)
        pf_text_line(o, "  %s%s outside your code (library lines, imports)", listed || started ? "and " : "",
             pf_text_human(u.elsewhere_bytes, a));
}

void pf_text_findings(out_t *o, const pf_model_t *m)
{
    char a[16];
    int any = 0;
    for (size_t i = 0; i < m->n_flows; i++) {
        const pf_flow_t *f = &m->flows[i];
        if (!pf_report_copy_found(m, f))
            continue;
        const pf_line_t *at = &m->lines[f->at_line];
        if (!any++) {
            pf_text_heading(o, "redundant copies", COPIES_ABOUT);
        }
        char rate[16];
        double n = f->redundant_count < 1 ? 1 : f->redundant_count;
        char from[600], callers[1024];
        pf_text_line(o, "  %s%s:%d%s  %s in %.0f cop%s%s (%s/s, judged %u)%s", pf_text_red(o),
                     pf_text_path(pf_model_str(m, at->file)), at->line, pf_text_reset(o),
                     pf_text_human(f->redundant_bytes, a), n, n < 1.5 ? "y" : "ies",
                     pf_report_copy_source(m, f, from, sizeof from), pf_text_human(pf_report_copy_rate(&at->s), rate),
                     f->judged, pf_report_source_tail(m, at->file, at->line));
        const char *via = pf_report_flow_via(m, f, callers, sizeof callers);
        if (via)    /* a helper's copy: who called it */
            pf_text_line(o, "      via %s", via);
        if (f->made_in)
            pf_text_line(o, "      made inside %s", pf_model_str(m, f->made_in));
        pf_text_line(o, "      fix: %s", pf_report_copy_fix(m, f));
    }
    unlisted_copies(o, m, any);
    needed_copies(o, m);
}
