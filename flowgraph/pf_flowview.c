/* pf_flowview.c - the flow graph's view: which flows it draws, what its nodes and edges are called
 * (pf_flowgraph.h). */
#include <stdlib.h>
#include <string.h>

#include "pf_calltree_int.h"
#include "pf_flowgraph.h"
#include "pf_report_int.h"
#include "pf_util_int.h"

/* 1: row is a line of the user's files (not a bracketed row, not a library line charged for want of one). */
static int user_row(const pf_model_t *m, int32_t row)
{
    return row >= 0 && m->lines[row].line > 0 && pf_model_is_user_file(m, pf_model_str(m, m->lines[row].file));
}

/* 1: the source of row is an import statement (what it allocates and copies is the imported modules'
 * setting up). memo: per row, 0 not known yet, 1 no, 2 yes. */
static int import_row(const pf_model_t *m, int32_t row, uint8_t *memo)
{
    if (row < 0)
        return 0;
    if (!memo[row]) {
        memo[row] = (uint8_t)(1 + pf_report_is_import(m, &m->lines[row]));
    }
    return memo[row] == 2;
}

/* For each line row, the unfolded node that allocated most of its bytes below it in a library: the
 * innermost Python library frame (a native leaf's caller when it has one), else the native leaf. */
static void find_makers(const pf_model_t *m, int32_t *maker)
{
    double *best = pf_xcalloc(m->n_lines + 1, sizeof *best);
    pf_map_t rows = {0};
    for (size_t i = 0; i < m->n_lines; i++) {
        uint64_t w[3] = {m->lines[i].file, m->lines[i].function, (uint64_t)(int64_t)m->lines[i].line};
        *pf_map_put(&rows, pf_hash_words(w, 3, 0x40E) & ~(1ull << 63), NULL) = i + 1;
    }
    for (size_t i = 0; i < m->n_lines; i++)
        maker[i] = -1;
    for (size_t i = 0; i < m->n_full; i++) {
        const pf_callnode_t *c = &m->full[i];
        if (c->kind == PF_NODE_USER || c->folded < 0 || c->self_alloc < 0.5)
            continue;
        const pf_callnode_t *f = &m->nodes[c->folded];
        uint64_t w[3] = {f->file, f->function, (uint64_t)(int64_t)f->line};
        uint64_t *row = pf_map_get(&rows, pf_hash_words(w, 3, 0x40E) & ~(1ull << 63));
        if (!row || c->self_alloc <= best[*row - 1])
            continue;
        best[*row - 1] = c->self_alloc;
        int32_t at = (int32_t)i;
        if (c->kind == PF_NODE_NATIVE && c->parent >= 0 && m->full[c->parent].kind == PF_NODE_LIBRARY)
            at = c->parent;
        maker[*row - 1] = at;
    }
    pf_map_free(&rows);
    free(best);
}

typedef struct by_bytes {
    double bytes;
    size_t flow;
} by_bytes_t;

static int cmp_bytes_desc(const void *a, const void *b)
{
    const by_bytes_t *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->flow < y->flow ? -1 : x->flow > y->flow;
}

void pf_flowview_build(const pf_model_t *m, double min_bytes, int all, pf_flowview_t *v)
{
    memset(v, 0, sizeof *v);
    v->left = pf_xcalloc(m->n_flows + 1, 1);
    v->node = pf_xcalloc(m->n_lines + 1, 1);
    v->maker = pf_xmalloc((m->n_lines + 1) * sizeof *v->maker);
    v->ends = pf_xcalloc(m->n_lines + 1, 1);
    find_makers(m, v->maker);
    uint8_t *imports = pf_xcalloc(m->n_lines + 1, 1);
    by_bytes_t *cand = pf_xmalloc((m->n_flows + 1) * sizeof *cand);
    size_t n_cand = 0;
    for (size_t i = 0; i < m->n_flows; i++) {
        const pf_flow_t *fl = &m->flows[i];
        if (fl->src_line >= 0)
            v->ends[fl->src_line] |= fl->src_ends;
        if (fl->dst_line >= 0)
            v->ends[fl->dst_line] |= fl->dst_ends;
        uint8_t why = PF_LEFT_NONE;
        if (all)
            why = fl->src_line < 0 && fl->dst_line < 0 ? PF_LEFT_UNTRACKED : fl->bytes < min_bytes ? PF_LEFT_SMALL : PF_LEFT_NONE;
        else if (fl->src_line < 0 || fl->dst_line < 0)
            why = PF_LEFT_UNTRACKED;
        else if (!user_row(m, fl->src_line) || !user_row(m, fl->dst_line) || import_row(m, fl->at_line, imports) ||
                 import_row(m, fl->src_line, imports) || import_row(m, fl->dst_line, imports))
            why = PF_LEFT_IMPORT;
        else if (fl->bytes < min_bytes)
            why = PF_LEFT_SMALL;
        else if (pf_flow_waste(m, fl) != PF_WASTE_NONE)
            why = PF_LEFT_NONE;     /* every wasteful flow is drawn, temporary or not */
        else if (pf_flow_temporary(m, fl))
            why = PF_LEFT_TEMPORARY;
        else
            cand[n_cand++] = (by_bytes_t){fl->bytes, i};     /* drawn if among the largest */
        v->left[i] = why;
    }
    qsort(cand, n_cand, sizeof *cand, cmp_bytes_desc);
    for (size_t k = PF_FLOWVIEW_TOP; k < n_cand; k++)
        v->left[cand[k].flow] = PF_LEFT_SMALL;
    for (size_t i = 0; i < m->n_flows; i++) {
        const pf_flow_t *fl = &m->flows[i];
        if (v->left[i]) {
            v->n_left[v->left[i]]++;
            v->left_bytes[v->left[i]] += fl->bytes;
            continue;
        }
        v->node[fl->src_line >= 0 ? (size_t)fl->src_line : m->n_lines] = 1;
        v->node[fl->dst_line >= 0 ? (size_t)fl->dst_line : m->n_lines] = 1;
    }
    free(cand);
    for (size_t i = 0; i < m->n_lines; i++)     /* a line of the program's that wasted memory is a node of its own */
        if (user_row(m, (int32_t)i) && pf_node_waste(m, (int32_t)i) != PF_WASTE_NONE)
            v->node[i] = 1;
    free(imports);
}

void pf_flowview_free(pf_flowview_t *v)
{
    free(v->left);
    free(v->node);
    free(v->maker);
    free(v->ends);
}

/* The dotted module name of a library file: what follows site-packages/ (or the standard library's
 * folder), without .py and __init__; into buf. */
static const char *module_name(const char *file, char *buf, size_t size)
{
    const char *rest = file, *p;
    if (pf_callpath_numpy_dispatch(file))
        rest = "numpy";
    else if ((p = strstr(file, "site-packages/")) || (p = strstr(file, "dist-packages/")))
        rest = p + 14;
    else if ((p = strstr(file, "/lib/python3")) && (p = strchr(p + 12, '/')))
        rest = p + 1;
    else
        rest = pf_report_basename(file);
    snprintf(buf, size, "%s", rest);
    size_t n = strlen(buf);
    if (n > 3 && strcmp(buf + n - 3, ".py") == 0)
        buf[n -= 3] = '\0';
    if (n > 9 && strcmp(buf + n - 9, "/__init__") == 0)
        buf[n -= 9] = '\0';
    for (char *c = buf; *c; c++)
        if (*c == '/')
            *c = '.';
    return buf;
}

const char *pf_flowview_function(const pf_model_t *m, int32_t full_node, char *buf, size_t size)
{
    buf[0] = '\0';
    if (full_node < 0 || full_node >= (int32_t)m->n_full)
        return buf;
    const pf_callnode_t *c = &m->full[full_node];
    if (c->kind == PF_NODE_NATIVE)
        snprintf(buf, size, "%s", pf_model_str(m, c->function));
    else if (c->kind == PF_NODE_LIBRARY) {
        char mod[256];
        snprintf(buf, size, "%s.%s", module_name(pf_model_str(m, c->file), mod, sizeof mod), pf_model_str(m, c->function));
    }
    return buf;
}

const char *pf_obj_kind_name(int kind)
{
    static const char *const names[PF_OBJ_KINDS] = {"", "str", "bytes", "bytearray", "list", "dict", "tuple", "set",
                                                    "int", "float"};
    return kind > 0 && kind < PF_OBJ_KINDS ? names[kind] : "";
}

const char *pf_flowview_kind(const pf_model_t *m, const pf_flowview_t *v, int32_t row, char *buf, size_t size)
{
    if (row < 0)
        return "untracked memory";
    const pf_line_t *l = &m->lines[row];
    const pf_stats_t *s = &l->s;
    uint8_t ends = v->ends[row];
    if (s->gpu_bytes > 0.5 * s->alloc_bytes)
        return "GPU buffer";
    int best = 0;
    for (int k = 1; k < PF_OBJ_KINDS; k++)
        if (l->kind_bytes[k] > l->kind_bytes[best])
            best = k;
    if (best && l->kind_bytes[best] > s->native_bytes && l->kind_bytes[best] >= PF_NODE_KIND_SHARE * s->alloc_bytes)
        return pf_obj_kind_name(best);  /* the type holding most of the bytes the runtime saw a type of */
    if ((ends & (1u << PF_COPY_END_STR)) && (ends & (1u << PF_COPY_END_BYTES)))
        return "str and bytes";
    if (ends & (1u << PF_COPY_END_STR))
        return "str";
    if (ends & (1u << PF_COPY_END_BYTES))
        return "bytes";
    char pkg[128] = "";
    int32_t mk = v->maker[row];
    if (mk >= 0 && m->full[mk].kind == PF_NODE_LIBRARY) {
        module_name(pf_model_str(m, m->full[mk].file), pkg, sizeof pkg);
        pkg[strcspn(pkg, ".")] = '\0';
    }
    if (s->native_bytes >= s->python_bytes) {
        if (!pkg[0])
            return "native buffer";
        snprintf(buf, size, "%s data", pkg);
        return buf;
    }
    if (!pkg[0])
        return "Python objects";
    snprintf(buf, size, "Python objects (%s)", pkg);
    return buf;
}

int pf_flow_temporary(const pf_model_t *m, const pf_flow_t *fl)
{
    double run_s = (double)m->end_ns / 1e9;
    /* a profile whose runtime did not mark a realloc's frees cannot tell a block grown in place from one
     * freed: its flows are drawn as before */
    return m->frees_marked && fl->dst_known && !fl->dst_at_peak && fl->dst_life_s < PF_FLOW_TEMPORARY_SHARE * run_s;
}

pf_waste_kind_t pf_flow_waste(const pf_model_t *m, const pf_flow_t *fl)
{
    (void)m;
    /* recomputed values are the lines' (pf_node_waste), not the copies' */
    return pf_report_flow_redundant(fl) ? PF_WASTE_REDUNDANT_COPY : PF_WASTE_NONE;
}

/* A line's untouched bytes make it a node of the graph from this much on (smaller is noise in a graph of MiB). */
#define PF_NODE_UNTOUCHED_MIN (1024.0 * 1024.0)

pf_waste_kind_t pf_node_waste(const pf_model_t *m, int32_t row)
{
    if (row < 0 || (size_t)row >= m->n_lines)
        return PF_WASTE_NONE;
    const pf_line_t *l = &m->lines[row];
    if (l->recomputed_bytes > 0)
        return PF_WASTE_RECOMPUTED;
    /* most of what the line allocated was never touched: the same threshold as the untouched findings */
    if (l->untouched_bytes >= PF_NODE_UNTOUCHED_MIN && l->untouched_bytes >= 0.5 * l->s.alloc_bytes)
        return PF_WASTE_UNTOUCHED;
    return PF_WASTE_NONE;
}

const char *pf_waste_name(pf_waste_kind_t w)
{
    static const char *const names[PF_WASTE_KINDS] = {"", "redundant copy", "recomputed value", "untouched memory"};
    return w < PF_WASTE_KINDS ? names[w] : "";
}
