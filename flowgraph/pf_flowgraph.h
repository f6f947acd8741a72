/* pf_flowgraph.h - the object flow graph, built from the model's records: which flows it draws, what its
 * nodes and edges are called and which are wasteful (pf_flowview.c); its Graphviz export is pf_render_dot
 * (pf_render_dot.c, declared in report/include/pf_report.h), and report/'s HTML page reads the same view.
 *
 * The default view tells the data's story: flows between objects the program's own lines made (both ends
 * tracked, allocated at a line of the user's), not at an import line; of those the few largest by bytes
 * and every wasteful one. What is left out is counted by reason for the graph's note. `all` keeps every
 * flow above min_bytes, untracked ends and imports included (the graph as it was: --dot-all).
 */
#ifndef PF_FLOWGRAPH_H
#define PF_FLOWGRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "pf_model_int.h"

/* Flows the default view draws besides the wasteful ones: the largest by bytes. */
#define PF_FLOWVIEW_TOP 12

/* A node is named by a Python type when that type holds at least this share of the line's allocated bytes
 * (besides more than any other type seen and more than its native bytes): the runtime sees the type of an
 * object at its free or a copy, so a kept object counts only when a copy touched it, and a line whose
 * typed objects are a small part of its bytes (a bytearray's buffer grown from bytes pieces: the buffer
 * is no object) is not named by them. */
#define PF_NODE_KIND_SHARE 0.25

/* A copy's destination kept no longer than this share of the run, and not live at the program's peak,
 * was a temporary: the flow into it is no part of the data's story (pf_flow_temporary). */
#define PF_FLOW_TEMPORARY_SHARE 0.01

/* How a flow or a node is wasteful; the renderers draw each kind its own way, with a legend. Recomputed
 * values and untouched memory are filled in by pf_flow_waste / pf_node_waste once the model has them. */
typedef enum pf_waste_kind {
    PF_WASTE_NONE = 0,
    PF_WASTE_REDUNDANT_COPY,    /* an edge: the copy held the same bytes as its source (pf_report_flow_redundant) */
    PF_WASTE_RECOMPUTED,        /* an edge or node: a value computed again that was already there */
    PF_WASTE_UNTOUCHED,         /* a node: memory allocated and never used */
    PF_WASTE_KINDS
} pf_waste_kind_t;

/* Why a flow is not drawn. */
typedef enum pf_flow_left {
    PF_LEFT_NONE = 0,
    PF_LEFT_SMALL,              /* below min_bytes, or not among the largest */
    PF_LEFT_UNTRACKED,          /* an end is no tracked object */
    PF_LEFT_IMPORT,             /* made at an import line, or between objects no line of the user's made */
    PF_LEFT_TEMPORARY,          /* not wasteful, into objects freed almost at once (pf_flow_temporary) */
    PF_LEFT_REASONS
} pf_flow_left_t;

typedef struct pf_flowview {
    uint8_t *left;              /* per flow: PF_LEFT_* (PF_LEFT_NONE: drawn) */
    uint8_t *node;              /* per line row, and [n_lines] for untracked memory: drawn as a node */
    size_t n_left[PF_LEFT_REASONS];
    double left_bytes[PF_LEFT_REASONS];
    int32_t *maker;             /* per line row: the unfolded call-tree node that allocated most of its bytes
                                   in a library (-1: none; pf_calltree_int.h) */
    uint8_t *ends;              /* per line row: 1 << pf_copy_end_t its objects had at copies' ends */
} pf_flowview_t;

/* Builds the view of m's flows: min_bytes as --dot-min-bytes, all as --dot-all. */
void pf_flowview_build(const pf_model_t *m, double min_bytes, int all, pf_flowview_t *v);
void pf_flowview_free(pf_flowview_t *v);

/* What line row's objects are, by the bytes it allocated: "GPU buffer" (most of them device memory); the
 * Python type the runtime saw holding more of them than any other, more than native memory and at least
 * PF_NODE_KIND_SHARE of them ("list",
 * "dict", "str", "bytes", "tuple", "set", "bytearray", "int", "float": pf_obj_kind_t); "numpy data"
 * (native memory a package's code made: its top-level name), "native buffer"; "str" / "bytes" where only
 * copies' ends said so (profiles before the runtime told kinds apart); else "Python objects". */
const char *pf_flowview_kind(const pf_model_t *m, const pf_flowview_t *v, int32_t row, char *buf, size_t size);

/* What a pf_obj_kind_t is called ("list", "dict", ...; "" for PF_OBJ_UNKNOWN). */
const char *pf_obj_kind_name(int kind);

/* The library function an unfolded call-tree node stands for, as "package.module.function" (or the native
 * "symbol (library)"); "" for a node of the user's or -1. */
const char *pf_flowview_function(const pf_model_t *m, int32_t full_node, char *buf, size_t size);

/* 1 when every tracked destination of fl's copies was freed within PF_FLOW_TEMPORARY_SHARE of the run
 * after its copy and none was live at the program's peak (the default view leaves such a flow out unless
 * it is wasteful); 0 for every flow of a profile whose runtime did not mark a realloc's frees. */
int pf_flow_temporary(const pf_model_t *m, const pf_flow_t *fl);

/* The wasteful kind of a flow, and of a node (line row). */
pf_waste_kind_t pf_flow_waste(const pf_model_t *m, const pf_flow_t *fl);
pf_waste_kind_t pf_node_waste(const pf_model_t *m, int32_t row);

/* What a waste kind is called in the legend. */
const char *pf_waste_name(pf_waste_kind_t w);

#endif /* PF_FLOWGRAPH_H */
