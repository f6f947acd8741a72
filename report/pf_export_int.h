/* pf_export_int.h - what the exports for other viewers share (speedscope, pprof): the call tree's nodes
 * as distinct frames (a frame is a file, function and line; two nodes of one line on different paths are
 * one frame), and each node's stack as frame indexes. */
#ifndef PF_EXPORT_INT_H
#define PF_EXPORT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "pf_model_int.h"

typedef struct pf_export_frame {
    uint32_t file, function;    /* interned strings */
    int line;
} pf_export_frame_t;

typedef struct pf_export_frames {
    pf_export_frame_t *frames;
    size_t n_frames, cap_frames;
    uint32_t *node_frame;       /* per call-tree node: its frame */
} pf_export_frames_t;

void pf_export_frames_build(const pf_model_t *m, pf_export_frames_t *out);
void pf_export_frames_free(pf_export_frames_t *f);

/* The deepest path's length (at least 1): room for pf_export_stack. */
size_t pf_export_max_depth(const pf_model_t *m);

/* The frames of node's path, outermost first (root_first 1) or innermost first, into out[0..max);
 * returns how many. */
size_t pf_export_stack(const pf_model_t *m, const pf_export_frames_t *f, int32_t node, int root_first,
                       uint32_t *out, size_t max);

/* The three weights every export carries per node, by its own (self) bytes: allocated, live at the
 * program's peak, live at exit. */
#define PF_EXPORT_WEIGHTS 3
extern const char *const pf_export_weight_names[PF_EXPORT_WEIGHTS];   /* "alloc_space", "peak_space", ... */
extern const char *const pf_export_weight_titles[PF_EXPORT_WEIGHTS];  /* "allocated bytes", ... */
void pf_export_node_weights(const pf_callnode_t *c, int64_t out[PF_EXPORT_WEIGHTS]);

/* v rounded to a whole number of bytes or nanoseconds, within [0, INT64_MAX] (NaN: 0). */
int64_t pf_export_whole(double v);

#endif /* PF_EXPORT_INT_H */
