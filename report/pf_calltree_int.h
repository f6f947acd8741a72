/* pf_calltree_int.h - the call tree (pf_callnode_t): the per-line numbers again, split by the path of the
 * user's lines that led to each line, and summed up those paths.
 *
 * The sweep names a node by its path (lines, outermost first) once per recorded stack, and moves its live
 * bytes as the line rows' move; afterwards pf_calltree_finish fills in the peak and exit shares and the
 * sums over each node's subtree, and orders every node's children largest first.
 *
 * Beside it the sweep builds the unfolded tree (pf_model.full): the same paths with the library frames
 * between and below the user's lines kept, so a user line's bytes can be split by the library function
 * that allocated them. Bytes are moved on an unfolded node, and count in its folded one too.
 */
#ifndef PF_CALLTREE_INT_H
#define PF_CALLTREE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pf_model_int.h"
#include "pf_util_int.h"

/* A step of a path: a line, and the function running it; in the unfolded tree also its kind (PF_NODE_*)
 * and the folded node it counts in. */
typedef struct pf_callsite {
    uint32_t file, function;
    int line;
    uint8_t kind;
    int32_t folded;
} pf_callsite_t;

/* The last path a tree was asked for and its nodes, step by step: the next path shares most of its steps
 * from the root (stacks differ in their innermost frames), whose nodes are then taken from here instead of
 * hashing each step again. Zeroed: none. */
typedef struct pf_path_memo {
    size_t n;
    pf_callsite_t steps[PF_MAX_PY_FRAMES + 1];
    int32_t nodes[PF_MAX_PY_FRAMES + 1];
} pf_path_memo_t;

/* The node whose path is path[0..n) (n >= 1, n <= PF_MAX_PY_FRAMES + 1), made with its ancestors on first
 * use. index maps (parent, file, line) to node+1; memo is the tree's last path (above). */
int32_t pf_calltree_node(pf_model_t *m, pf_map_t *index, pf_path_memo_t *memo, const pf_callsite_t *path, size_t n);

/* The same in the unfolded tree (m->full), whose steps carry their kind and folded node; index and memo are
 * its own. */
int32_t pf_calltree_full_node(pf_model_t *m, pf_map_t *index, pf_path_memo_t *memo, const pf_callsite_t *path,
                              size_t n);

/* The child of unfolded node `node` that is native function `native` (an interned "symbol (library)"; 0:
 * node itself), made on first use: where --native saw the allocation made, below the Python frames. */
int32_t pf_calltree_native_child(pf_model_t *m, pf_map_t *index, int32_t node, uint32_t native);

/* The program's peaks so far (the sweep's counts of new host and GPU peaks): a node keeps its live bytes as
 * they were at the latest of each, as the line rows do; and, as they do, its share of the host peak's
 * windows (est, NULL: none; half: the object's half of the samples, pf_peak_int.h). */
typedef struct pf_peak_epochs {
    uint32_t host, gpu;
    const pf_peak_est_t *est;
    int half;
} pf_peak_epochs_t;

/* Keeps live bytes as they were at the latest peak: taken at their first change after that peak (a node
 * unchanged since then still has them as its live bytes). */
static inline void pf_calltree_move_live(double *live, double *at_peak, uint32_t *seen, uint32_t epoch, double delta)
{
    if (*seen != epoch) {
        *at_peak = *live;
        *seen = epoch;
    }
    *live += delta;
}

/* e by pointer: a 24-byte struct passed by value on every allocation and free was rebuilt on the stack each
 * time, and the copy's wide load waiting for its narrow stores stalled the sweep */
static inline void pf_calltree_move(pf_callnode_t *c, double delta, int gpu, const pf_peak_epochs_t *e)
{
    pf_calltree_move_live(&c->live, &c->live_at_peak, &c->peak_epoch, e->host, delta);
    if (e->est)
        pf_peak_row_add(e->est, &c->peak_est, e->half, delta);
    if (gpu)
        pf_calltree_move_live(&c->gpu_live, &c->gpu_live_at_peak, &c->gpu_peak_epoch, e->gpu, delta);
}

static inline void pf_calltree_add(pf_callnode_t *c, double bytes, int gpu, const pf_peak_epochs_t *e)
{
    c->self_alloc += bytes;
    if (gpu)
        c->self_gpu += bytes;
    pf_calltree_move(c, bytes, gpu, e);
}

/* Unfolded node's live bytes, and its folded node's, change by +bytes (an allocation, also added to their
 * allocated) or -bytes (its free);
 * gpu: they are device bytes, which count on both the host/GPU total and the GPU peak as the rows do.
 * Inline: the sweep calls them at every allocation and free. */
static inline void pf_calltree_alloc(pf_model_t *m, int32_t node, double bytes, int gpu, const pf_peak_epochs_t *e)
{
    int32_t folded = m->full[node].folded;
    pf_calltree_add(&m->full[node], bytes, gpu, e);
    if (folded >= 0)
        pf_calltree_add(&m->nodes[folded], bytes, gpu, e);
}

static inline void pf_calltree_free(pf_model_t *m, int32_t node, double bytes, int gpu, const pf_peak_epochs_t *e)
{
    int32_t folded = m->full[node].folded;
    pf_calltree_move(&m->full[node], -bytes, gpu, e);
    if (folded >= 0)    /* always, for a node bytes were charged to (pf_sweep_callpath.c) */
        pf_calltree_move(&m->nodes[folded], -bytes, gpu, e);
}

/* After the sweep: self peak shares (at_peak, at_gpu_peak: the program had one), live at exit, subtree
 * sums, and the children (and roots) linked largest first by peak, then allocated bytes. */
void pf_calltree_finish(pf_model_t *m, pf_peak_epochs_t e, int at_peak, int at_gpu_peak);

/* 1: file is numpy's generated dispatch wrapper (numpy < 1.25), the frame of a numpy function by name. */
static inline int pf_callpath_numpy_dispatch(const char *file)
{
    return strcmp(file, "<__array_function__ internals>") == 0;
}

#endif /* PF_CALLTREE_INT_H */
