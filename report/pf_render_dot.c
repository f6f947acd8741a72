/* pf_render_dot.c - the object flow graph as Graphviz: allocation sites as nodes, grouped in one cluster
 * per function; copies and reallocs as edges labelled with bytes and counts; redundant copies red, with the
 * fix in the label. Flows below opts->min_bytes are left out and counted in a note, so a real program's
 * graph stays readable. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pf_model_int.h"
#include "pf_report_int.h"
#include "pf_util_int.h"

/* Writes s escaped for a double-quoted DOT string. */
static void dot_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

/* Edges drawn: large enough, and touching at least one tracked object (untracked to untracked says
 * nothing about objects: it only counts in the copy volume). */
static int kept(const pf_flow_t *fl, double min)
{
    return fl->bytes >= min && (fl->src_line >= 0 || fl->dst_line >= 0);
}

int pf_render_dot(const pf_model_t *m, FILE *f, const pf_dot_opts_t *opts)
{
    double min = opts ? opts->min_bytes : 0;
    char *used = pf_xcalloc(m->n_lines + 1, 1);   /* lines that appear in a kept flow; last = untracked */
    size_t folded = 0;
    double folded_bytes = 0;
    for (size_t i = 0; i < m->n_flows; i++) {
        const pf_flow_t *fl = &m->flows[i];
        if (!kept(fl, min)) {
            folded++;
            folded_bytes += fl->bytes;
            continue;
        }
        used[fl->src_line >= 0 ? (size_t)fl->src_line : m->n_lines] = 1;
        used[fl->dst_line >= 0 ? (size_t)fl->dst_line : m->n_lines] = 1;
    }
    for (size_t i = 0; i < m->n_lines; i++)     /* a line that recomputed a value is a node of its own */
        used[i] |= m->lines[i].recomputed_bytes > 0;
    fputs("digraph pyflow {\n  rankdir=LR;\n  node [shape=box, style=rounded, fontname=\"monospace\", fontsize=10];\n"
          "  edge [fontname=\"monospace\", fontsize=9];\n",
          f);
    /* one cluster per function */
    for (size_t fn = 0; fn < m->n_funcs; fn++) {
        const pf_func_t *func = &m->funcs[fn];
        int any = 0;
        for (size_t i = 0; i < m->n_lines; i++) {
            const pf_line_t *l = &m->lines[i];
            if (!used[i] || l->file != func->file || l->function != func->function)
                continue;
            if (!any++) {
                char label[512];
                snprintf(label, sizeof label, "%s (%s)", pf_model_str(m, func->function),
                         pf_report_basename(pf_model_str(m, func->file)));
                fprintf(f, "  subgraph cluster_%zu {\n    label=", fn);
                dot_str(f, label);
                fputs(";\n    style=dashed;\n", f);
            }
            char label[512], b[24];
            snprintf(label, sizeof label, "%s:%d\nallocated %s", pf_report_basename(pf_model_str(m, l->file)), l->line,
                     pf_report_human_bytes(l->s.alloc_bytes, b));
            int recomputed = l->recomputed_bytes > 0;
            if (recomputed) {
                size_t used_chars = strlen(label);
                snprintf(label + used_chars, sizeof label - used_chars, "\nrecomputed %s (x%.0f)",
                         pf_report_human_bytes(l->recomputed_bytes, b), l->recomputed_count);
            }
            fprintf(f, "    n%zu [label=", i);
            dot_str(f, label);
            fputs(recomputed ? ", color=orange, fontcolor=orange, penwidth=2];\n" : "];\n", f);
        }
        if (any)
            fputs("  }\n", f);
    }
    if (used[m->n_lines])
        fputs("  untracked [label=\"untracked memory\\n(not sampled)\", style=dotted];\n", f);
    for (size_t i = 0; i < m->n_flows; i++) {
        const pf_flow_t *fl = &m->flows[i];
        if (!kept(fl, min))
            continue;
        char src[32], dst[32], label[512], b[24];
        snprintf(src, sizeof src, fl->src_line >= 0 ? "n%d" : "untracked", fl->src_line);
        snprintf(dst, sizeof dst, fl->dst_line >= 0 ? "n%d" : "untracked", fl->dst_line);
        int red = pf_report_flow_redundant(fl);
        const pf_line_t *at = fl->at_line >= 0 ? &m->lines[fl->at_line] : NULL;
        /* --watch=copies: a copy a watched write proved needed says who wrote */
        char needed[300] = "";
        const pf_line_t *w = fl->watch_judged && !red && fl->write_line >= 0 ? &m->lines[fl->write_line] : NULL;
        if (w)
            snprintf(needed, sizeof needed, "\nneeded: %s written at %s:%d", fl->write_to_dst ? "copy" : "source",
                     pf_report_basename(pf_model_str(m, w->file)), w->line);
        /* made by a worker the line started, in library code: wasteful, but not the line's to change */
        const char *verdict = !red ? "" : fl->started ? "\nREDUNDANT, by a thread or process it started" : "\nREDUNDANT: share the buffer";
        snprintf(label, sizeof label, "%s %s x%.0f%s%s:%d%s%s", pf_report_copy_kind_name(fl->kind), pf_report_human_bytes(fl->bytes, b),
                 floor(fl->count + 0.5), at ? "\nat " : "", at ? pf_report_basename(pf_model_str(m, at->file)) : "",
                 at ? at->line : 0, verdict, needed);
        fprintf(f, "  %s -> %s [label=", src, dst);
        dot_str(f, label);
        fprintf(f, "%s];\n", red ? ", color=red, fontcolor=red, penwidth=2" : "");
    }
    if (folded) {
        char note[128], b[24];
        snprintf(note, sizeof note, "%zu smaller or untracked flows (%s) not shown", folded, pf_report_human_bytes(folded_bytes, b));
        fputs("  folded [shape=note, label=", f);
        dot_str(f, note);
        fputs("];\n", f);
    }
    fputs("}\n", f);
    free(used);
    return ferror(f) ? -EIO : 0;
}
