/* pf_events_pipe.h - the sweep's batches of events in time order, merged on a second thread where that pays.
 *
 * The merge of the per-thread streams (pf_events_next_batch: decoding packed records, the heap) is a tenth
 * of an exact profile's report, and the sweep that takes its events cannot start an event before the one
 * ahead of it: so where a second CPU is free (the profiled program has exited), the merge runs on a thread
 * of its own, a few batches ahead of the sweep, through a ring of batches (pf_events_pipe.c). Each batch
 * owns its events and its packed events' payloads; the ones the sweep reads from the mapped files stay
 * mapped until the sweep ends. Either way the sweep sees the same events in the same order. For an exact
 * profile, whoever merges a batch also finds its events' live objects (pf_live_ahead.h), annotations the
 * batch owns too.
 */
#ifndef PF_EVENTS_PIPE_H
#define PF_EVENTS_PIPE_H

#include <stddef.h>

#include "pf_live_ahead.h"
#include "pf_loader_int.h"

typedef enum pf_pipe_mode {
    PF_PIPE_AUTO,       /* a thread when this process may run on 2 CPUs or more and the profile is big
                           enough (PF_PIPE_MIN_BYTES); PYFLOW_REPORT_THREADS=1 or 2 picks for it */
    PF_PIPE_INLINE,     /* merged on the sweep's thread, between batches */
    PF_PIPE_THREAD,     /* merged on a thread of its own, a ring of batches ahead (the sweep fills a batch
                           itself when the ring runs dry; all inline if the thread cannot start) */
} pf_pipe_mode_t;

/* Below this many bytes of profile files, PF_PIPE_AUTO merges inline: the merge is then ~7 ms at most
 * (1.5-2 ms of CPU a MB on the bench's exact profiles, less on sampled ones, whose records are larger) in
 * a report of tens of milliseconds, most of it fixed costs; a thread would cost ~0.1 ms to start and join,
 * and move the ring's cache lines between cores, to save a few milliseconds no run could tell apart. */
#define PF_PIPE_MIN_BYTES (4u << 20)

typedef struct pf_events_pipe pf_events_pipe_t;

/* Starts taking L's events (pf_events_begin). batch: events a batch, at most; 0 for the mode's own. ahead
 * (or NULL): each batch, once merged, is annotated by it (pf_live_ahead.h), on the thread that merged it. */
pf_events_pipe_t *pf_events_pipe_open(loader_t *L, pf_pipe_mode_t mode, size_t batch, pf_live_ahead_t *ahead);

/* The next batch in *events (0 at the end, and from then on), with L->decoded set to its packed events'
 * payloads, and with ahead, *ann (unless NULL) to its annotations. The previous batch is given back: its
 * events, payloads and annotations may be overwritten from then on. */
size_t pf_events_pipe_next(pf_events_pipe_t *p, const event_t **events, const pf_ahead_batch_t **ann);

/* 1 when the merge runs on a thread of its own. */
int pf_events_pipe_threaded(const pf_events_pipe_t *p);

/* Stops the merge (at the end, or anywhere before it) and frees p. Returns 1 when the events ended early
 * because a stream was found out of order or unreadable (pf_event_iter_t.broken), else 0. */
int pf_events_pipe_close(pf_events_pipe_t *p);

#endif /* PF_EVENTS_PIPE_H */
