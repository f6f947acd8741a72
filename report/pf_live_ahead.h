/* pf_live_ahead.h - an exact profile's live objects, found ahead of the sweep, on the merge thread.
 *
 * The sweep (pf_model_sweep.c) keeps a map from each live object's address to its object (pf_live_map.h):
 * in an exact profile its operations, one or two cache misses an allocation and a free, are a fifth of
 * the sweep's thread, the report's bottleneck, while the thread that merges the events for it
 * (pf_events_pipe.c) is idle more than half the time. So for an exact profile that map moves to the merge
 * thread: as each batch of events is merged, this module applies the map's rules to it, in the order the
 * sweep will see the events, and hands the sweep, for each event, the live object it concerns:
 *  - an ALLOC: the index of its new object, and the object still live at its address, if any (freed unseen
 *    and released there, or parked when its process was finalizing);
 *  - a FREE and a CONTENT: the live object at its address, or none;
 *  - a COPY: each end's object and the offset in it (pf_sweep_object_at's rules: a small header before the
 *    address, or inside a large block or a GPU one);
 *  - each process that ends before the program (pf_sweep_process_ends): its live objects, in the order the
 *    sweep's walk of its own map released them.
 * Object indices are handed out as the sweep handed them (the last one freed first), and every map
 * operation is the sweep's, in its order, so the objects, the map at the end and the report are the same.
 * Sampled profiles keep the sweep's own map (their sums depend on the order a walk of it sees, and their
 * reports stay as they were); PYFLOW_REPORT_AHEAD=0 does so for an exact one too (tests compare the two).
 */
#ifndef PF_LIVE_AHEAD_H
#define PF_LIVE_AHEAD_H

#include <stddef.h>
#include <stdint.h>

#include "pf_live_map.h"
#include "pf_loader_int.h"

#define PF_AHEAD_NONE UINT32_MAX

/* What an event concerns, in a batch's array beside its events. */
typedef struct pf_ahead_ann {
    uint32_t obj;   /* ALLOC: its new object; FREE, CONTENT: the live one at the address; COPY: its entry in
                       the batch's copies; PF_AHEAD_NONE: none */
    uint32_t prev;  /* ALLOC: the object still live at its address; PF_AHEAD_NONE: none */
} pf_ahead_ann_t;

/* A COPY's two ends: objects (-1: none) and offsets in them. */
typedef struct pf_ahead_copy {
    int64_t dst, src;
    uint64_t dst_offset, src_offset;
} pf_ahead_copy_t;

/* A process's live objects when it ended: their keys and objects, in release order. */
typedef struct pf_ahead_released {
    uint64_t *keys;
    uint32_t *objs;
    size_t n;
} pf_ahead_released_t;

/* A batch's annotations: ann has room for the batch's events; copies grows as needed. */
typedef struct pf_ahead_batch {
    pf_ahead_ann_t *ann;
    pf_ahead_copy_t *copies;
    size_t n_copies, cap_copies;
} pf_ahead_batch_t;

typedef struct pf_live_ahead pf_live_ahead_t;

struct proc_end;    /* pf_sweep_int.h */

/* For L's sweep, whose processes end at ends (pf_sweep_process_ends: by time, a sentinel at UINT64_MAX). */
pf_live_ahead_t *pf_live_ahead_new(loader_t *L, const struct proc_end *ends);
/* Annotates the next n events (merged, in the sweep's order; packed ones' payloads in pay) into out. */
void pf_live_ahead_batch(pf_live_ahead_t *A, const event_t *events, size_t n, const pf_rec_alloc_short_t *pay,
                         pf_ahead_batch_t *out);
/* The objects released when end j (in ends' order) was passed; valid once the batch that passed it is the
 * sweep's. */
const pf_ahead_released_t *pf_live_ahead_released(const pf_live_ahead_t *A, size_t j);
/* Frees A, moving its map (the live objects at the end) into *live. */
void pf_live_ahead_finish(pf_live_ahead_t *A, pf_live_map_t *live);

#endif /* PF_LIVE_AHEAD_H */
