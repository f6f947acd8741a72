/* pf_render_dot.c - the object flow graph as Graphviz: allocation sites as nodes, grouped in one cluster
 * per function, each named by the kind of object it made and the library function that made it; copies
 * and reallocs as edges labelled with bytes, counts and the function that copied; waste drawn its own way,
 * with a legend. Which flows are drawn is the view's (pf_flowgraph.h): by default the data's story,
 * with --dot-all every flow above opts->min_bytes. What is left out is counted in a note. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pf_flowgraph.h"
#include "pf_model_int.h"
#include "pf_report_int.h"
#include "pf_util_int.h"

/* How each waste kind is drawn (pf_waste_kind_t order): edge attributes, node attributes, legend colour. */
static const struct {
    const char *edge, *node, *color;
} WASTE_STYLE[PF_WASTE_KINDS] = {
    {"", "", "black"},
    {", color=red, fontcolor=red", ", color=red, fontcolor=red", "red"},
    {", color=darkorange, fontcolor=darkorange", ", color=darkorange, fontcolor=darkorange", "darkorange"},
    {", color=purple, fontcolor=purple, style=dashed", ", color=purple, fontcolor=purple, style=\"rounded,dashed\"", "purple"},
};

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

/* A node: what it is, who made it, where, how much. */
static void node(FILE *f, const pf_model_t *m, const pf_flowview_t *v, size_t i, unsigned *wastes)
{
    const pf_line_t *l = &m->lines[i];
    char label[1024], kind[160], maker[400], b[24];
    pf_flowview_function(m, v->maker[i], maker, sizeof maker);
    snprintf(label, sizeof label, "%s%s%s\n%s:%d  allocated %s", pf_flowview_kind(m, v, (int32_t)i, kind, sizeof kind),
             maker[0] ? "\nmade by " : "", maker, pf_report_basename(pf_model_str(m, l->file)), l->line,
             pf_report_human_bytes(l->s.alloc_bytes, b));
    pf_waste_kind_t w = pf_node_waste(m, (int32_t)i);
    if (w) {
        *wastes |= 1u << w;
        snprintf(label + strlen(label), sizeof label - strlen(label), "\n%s", pf_waste_name(w));
    }
    fprintf(f, "    n%zu [id=\"flow_n%zu\", label=", i, i);
    dot_str(f, label);
    fprintf(f, "%s];\n", WASTE_STYLE[w].node);
}

/* An edge: kind, bytes, count, the library function that copied, the line, and the verdict. */
static void edge(FILE *f, const pf_model_t *m, const pf_flow_t *fl, double max_bytes, double min_bytes, unsigned *wastes)
{
    char src[32], dst[32], label[1200], b[24], by[400];
    snprintf(src, sizeof src, fl->src_line >= 0 ? "n%d" : "untracked", fl->src_line);
    snprintf(dst, sizeof dst, fl->dst_line >= 0 ? "n%d" : "untracked", fl->dst_line);
    pf_waste_kind_t w = pf_flow_waste(m, fl);
    *wastes |= 1u << w;
    int red = w == PF_WASTE_REDUNDANT_COPY;
    const pf_line_t *at = fl->at_line >= 0 ? &m->lines[fl->at_line] : NULL;
    /* --watch=copies: a copy a watched write proved needed says who wrote */
    char needed[300] = "";
    const pf_line_t *wr = fl->watch_judged && !red && fl->write_line >= 0 ? &m->lines[fl->write_line] : NULL;
    if (wr)
        snprintf(needed, sizeof needed, "\nneeded: %s written at %s:%d", fl->write_to_dst ? "copy" : "source",
                 pf_report_basename(pf_model_str(m, wr->file)), wr->line);
    /* made by a worker the line started, in library code: wasteful, but not the line's to change */
    const char *verdict = !red ? "" : fl->started ? "\nREDUNDANT, by a thread or process it started" : "\nREDUNDANT: share the buffer";
    if (w && !red)
        verdict = pf_waste_name(w);
    pf_flowview_function(m, fl->via_full, by, sizeof by);
    const char *native = fl->at_native ? pf_model_str(m, fl->at_native) : "";
    snprintf(label, sizeof label, "%s %s x%.0f%s%s%s%s%s%s:%d%s%s", pf_report_copy_kind_name(fl->kind),
             pf_report_human_bytes(fl->bytes, b), floor(fl->count + 0.5), by[0] ? "\nby " : "", by,
             native[0] ? (by[0] ? " > " : "\nby ") : "", native, at ? "\nat " : "",
             at ? pf_report_basename(pf_model_str(m, at->file)) : "", at ? at->line : 0, verdict, needed);
    /* width by bytes, on a log scale between the graph's threshold and its largest flow */
    double lo = min_bytes > 1 ? min_bytes : 1, span = log2(max_bytes > lo ? max_bytes / lo : 2);
    double width = 1 + 3 * (fl->bytes > lo ? log2(fl->bytes / lo) / span : 0);
    fprintf(f, "  %s -> %s [label=", src, dst);
    dot_str(f, label);
    fprintf(f, ", penwidth=%.1f%s%s];\n", red ? width + 1 : width, fl->kind == PF_COPY_REALLOC && !w ? ", style=dashed" : "",
            WASTE_STYLE[w].edge);
}

/* The legend: copies and reallocs, then each waste kind the graph draws. */
static void legend(FILE *f, unsigned wastes)
{
    fputs("  legend [shape=none, margin=0, label=<<table border=\"0\" cellborder=\"0\" cellspacing=\"2\">"
          "<tr><td align=\"left\"><b>legend</b></td></tr>"
          "<tr><td align=\"left\">&#8594; copy (solid), realloc (dashed); width: bytes</td></tr>",
          f);
    for (int w = 1; w < PF_WASTE_KINDS; w++)
        if (wastes & (1u << w))
            fprintf(f, "<tr><td align=\"left\"><font color=\"%s\">&#8594; %s</font></td></tr>", WASTE_STYLE[w].color,
                    pf_waste_name((pf_waste_kind_t)w));
    fputs("</table>>];\n", f);
}

/* The note on what the view left out, and how to see it. */
static void left_note(FILE *f, const pf_flowview_t *v, int all)
{
    static const char *const why[PF_LEFT_REASONS] = {"", "smaller", "with an untracked end (not sampled)",
                                                     "at import lines or between objects no line of yours made",
                                                     "into temporaries (freed almost at once, not at the peak)"};
    char note[1024] = "", b[24];
    size_t len = 0;
    for (int r = 1; r < PF_LEFT_REASONS; r++)
        if (v->n_left[r])
            len += (size_t)snprintf(note + len, sizeof note - len, "%s%zu flow%s %s (%s)", len ? "\n" : "", v->n_left[r],
                                    v->n_left[r] == 1 ? "" : "s", why[r], pf_report_human_bytes(v->left_bytes[r], b));
    if (!len)
        return;
    snprintf(note + len, sizeof note - len, "\nnot shown%s", all ? "" : "; --dot-all draws them");
    fputs("  folded [shape=note, label=", f);
    dot_str(f, note);
    fputs("];\n", f);
}

int pf_render_dot(const pf_model_t *m, FILE *f, const pf_dot_opts_t *opts)
{
    double min = opts ? opts->min_bytes : 0;
    int all = opts && opts->all;
    pf_flowview_t v;
    pf_flowview_build(m, min, all, &v);
    fputs("digraph pyflow {\n  rankdir=LR;\n  node [shape=box, style=rounded, fontname=\"monospace\", fontsize=10];\n"
          "  edge [fontname=\"monospace\", fontsize=9];\n",
          f);
    unsigned wastes = 0;
    /* one cluster per function */
    for (size_t fn = 0; fn < m->n_funcs; fn++) {
        const pf_func_t *func = &m->funcs[fn];
        int any = 0;
        for (size_t i = 0; i < m->n_lines; i++) {
            const pf_line_t *l = &m->lines[i];
            if (!v.node[i] || l->file != func->file || l->function != func->function)
                continue;
            if (!any++) {
                char label[512];
                snprintf(label, sizeof label, "%s (%s)", pf_model_str(m, func->function),
                         pf_report_basename(pf_model_str(m, func->file)));
                fprintf(f, "  subgraph cluster_%zu {\n    label=", fn);
                dot_str(f, label);
                fputs(";\n    style=dashed;\n", f);
            }
            node(f, m, &v, i, &wastes);
        }
        if (any)
            fputs("  }\n", f);
    }
    if (v.node[m->n_lines])
        fputs("  untracked [label=\"untracked memory\\n(not sampled)\", style=dotted];\n", f);
    double max_bytes = 0;
    for (size_t i = 0; i < m->n_flows; i++)
        if (!v.left[i] && m->flows[i].bytes > max_bytes)
            max_bytes = m->flows[i].bytes;
    for (size_t i = 0; i < m->n_flows; i++)
        if (!v.left[i])
            edge(f, m, &m->flows[i], max_bytes, min, &wastes);
    if (max_bytes > 0)
        legend(f, wastes);
    left_note(f, &v, all);
    fputs("}\n", f);
    pf_flowview_free(&v);
    return ferror(f) ? -EIO : 0;
}
