/* pf_origin_int.h - who started each thread and process (PF_REC_SPAWN), and the line of the user's code a
 * thread's or process's memory is charged to when its own stack has none.
 *
 * A thread is known by its tid in the chunks it wrote; its THREAD record gives its pthread_t, which the
 * SPAWN record of its starter names. A process is known by its header's pid and ppid; the SPAWN record of
 * kind process naming that pid, in a process with pid == ppid, is its start. The origin of (process,
 * thread) is the first user line found walking back: the starting stack's innermost user frame, else the
 * origin of the thread that started it (a library thread starting a worker), else, for a process's first
 * thread or one started before pyflow ran, the origin of the process. At most PF_ORIGIN_MAX_HOPS steps.
 */
#ifndef PF_ORIGIN_INT_H
#define PF_ORIGIN_INT_H

#include <stdint.h>

#include "pf_loader_int.h"
#include "pf_reader_int.h"

#define PF_ORIGIN_MAX_HOPS 16

struct sweeper;

/* Loading: keeps a SPAWN record, a THREAD record's handle, or a WRITER record's change of a chunk's writer,
 * of the process being walked. t_root is the record's time on the root's clock (unused for WRITER). */
void pf_origin_collect(loader_t *L, const pf_record_t *r, uint64_t t_root);
void pf_origin_free(proc_state_t *P);

/* After loading, before the sweep: orders each process's starts for lookup. */
void pf_origin_index(loader_t *L);

/* The tid of the thread that wrote an event: its chunk's writer, or the chunk's latest WRITER before it. */
uint32_t pf_origin_event_tid(const loader_t *L, const event_t *e);

/* The row (and *func, and *node: its call-tree node) that memory of thread tid of process proc with no user line of its own is charged
 * to: the user's line that started it, directly or through the threads and processes between. -1 when
 * none is known (the root's main thread, a start pyflow did not see). Memoized in the sweeper. */
int32_t pf_origin_row(struct sweeper *S, uint32_t proc, uint32_t tid, int32_t *func, int32_t *node);

/* The user's line that started process proc (its first thread's origin), or -1 (the root, or a start
 * pyflow did not see); nothing is counted as started by it (pf_origin_row counts). */
int32_t pf_origin_process_row(struct sweeper *S, uint32_t proc);

/* After the sweep: the model's list of Python processes started unprofiled (pf_unprofiled_t), each with
 * the user's line that started it, in time order. */
void pf_origin_unprofiled(struct sweeper *S);

#endif /* PF_ORIGIN_INT_H */
