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

/* Node's live bytes change by delta; epoch counts the program's new peaks so far (keeps the node's value
 * at the latest one, as the line rows do). An allocation also adds its bytes to the node's allocated. */
void pf_calltree_alloc(pf_model_t *m, int32_t node, double bytes, uint32_t epoch);
void pf_calltree_free(pf_model_t *m, int32_t node, double bytes, uint32_t epoch);

/* After the sweep: self peak shares (at_peak: the program had one), live at exit, subtree sums, and the
 * children (and roots) linked largest first by peak, then allocated bytes. */
void pf_calltree_finish(pf_model_t *m, uint32_t epoch, int at_peak);

#endif /* PF_CALLTREE_INT_H */
