/* pf_calltree_int.h - the call tree (pf_callnode_t): the per-line numbers again, split by the path of the
 * user's lines that led to each line, and summed up those paths.
 *
 * The sweep names a node by its path (lines, outermost first) once per recorded stack, and moves its live
 * bytes as the line rows' move; afterwards pf_calltree_finish fills in the peak and exit shares and the
 * sums over each node's subtree, and orders every node's children largest first.
 */
#ifndef PF_CALLTREE_INT_H
#define PF_CALLTREE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "pf_model_int.h"
#include "pf_util_int.h"

/* A step of a path: a line, and the function running it. */
typedef struct pf_callsite {
    uint32_t file, function;
    int line;
} pf_callsite_t;

/* The node whose path is path[0..n) (n >= 1), made with its ancestors on first use. index maps (parent,
 * file, line) to node+1. */
int32_t pf_calltree_node(pf_model_t *m, pf_map_t *index, const pf_callsite_t *path, size_t n);

/* The program's peaks so far (the sweep's counts of new host and GPU peaks): a node keeps its live bytes as
 * they were at the latest of each, as the line rows do; and, as they do, its share of the host peak's
 * windows (est, NULL: none; half: the object's half of the samples, pf_peak_int.h). */
typedef struct pf_peak_epochs {
    uint32_t host, gpu;
    const pf_peak_est_t *est;
    int half;
} pf_peak_epochs_t;

/* Node's live bytes change by +bytes (an allocation, also added to its allocated) or -bytes (its free);
 * gpu: they are device bytes, which count on both the host/GPU total and the GPU peak as the rows do. */
void pf_calltree_alloc(pf_model_t *m, int32_t node, double bytes, int gpu, pf_peak_epochs_t e);
void pf_calltree_free(pf_model_t *m, int32_t node, double bytes, int gpu, pf_peak_epochs_t e);

/* After the sweep: self peak shares (at_peak, at_gpu_peak: the program had one), live at exit, subtree
 * sums, and the children (and roots) linked largest first by peak, then allocated bytes. */
void pf_calltree_finish(pf_model_t *m, pf_peak_epochs_t e, int at_peak, int at_gpu_peak);

#endif /* PF_CALLTREE_INT_H */
