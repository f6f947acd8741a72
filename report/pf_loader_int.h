/* pf_loader_int.h - what the model's loader (pf_model.c) hands to its sweep (pf_model_sweep.c).
 *
 * Loading walks every record of every process once: code objects, modules and marks are kept per process
 * (code ids and addresses are only meaningful inside their own process), and for the events that change
 * memory (ALLOC, FREE, COPY, VERDICT, watch's) only where each thread's runs of them start. The sweep then
 * takes them in time order, on the root process's clock, from pf_model_events.c, and aggregates. Payloads
 * are read from the mapped files, which stay mapped until the sweep has finished.
 */
#ifndef PF_LOADER_INT_H
#define PF_LOADER_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pf_linetable_int.h"
#include "pf_model_int.h"
#include "pf_packed.h"
#include "pf_reader_int.h"
#include "pf_util_int.h"

typedef struct pcode {
    uint32_t file, function;
    int firstlineno;
    uint32_t format;
    const uint8_t *table;
    uint32_t table_len;
    int is_user;
    int is_import_root; /* importlib, getpath, encodings: outermost only when C code calls them (start-up) */
    uint8_t generated;  /* a file name in <...>: no file a user can open (<string>, <frozen ...>) */
    uint8_t thread_run; /* threading's Thread.run: what it calls is the target the program gave the thread */
    uint32_t line_lookups;              /* offsets decoded by walking the table so far */
    pf_linetable_index_t *line_index;   /* then the table decoded once (code_line, pf_model_sweep.c) */
} pcode_t;

/* One record that changes memory, on the root's clock. 24 bytes, not 32 with a pointer: a profile holds
 * tens of millions of them, and they are sorted (glibc's qsort copies them once more to merge). */
typedef struct event {
    uint64_t t;
    uint32_t seq;       /* file order: keeps ties stable while the array of events is sorted; handed to the
                           sweep: 0, or for a packed event (PF_REC_PACKED) 1 + where its decoded payload is
                           in loader_t.decoded */
    uint32_t offset8;   /* of the payload in its process's file, in 8-byte units (records are 8-aligned); a
                           packed event's: its packed record's */
    uint16_t type;
    uint16_t aux;
    uint32_t proc;
} event_t;

typedef struct module {
    uint64_t start, end, bias;
    uint32_t path;      /* interned */
} module_t;

/* A SPAWN record (pf_origin_int.h), on the root's clock. */
typedef struct spawn {
    uint64_t t, child;
    uint32_t tid;
    uint16_t kind;
    const pf_rec_spawn_t *rec;  /* in the mapped file */
} spawn_t;

/* Where a chunk changes writer (PF_REC_WRITER): events after offset in that chunk are tid's. */
typedef struct writer_change {
    uint64_t offset;
    uint32_t tid;
} writer_change_t;

/* A thread's handle, from its first THREAD record that has one. */
typedef struct thread_ref {
    uint64_t t, handle;
} thread_ref_t;

typedef struct proc_state {
    pf_file_t file;
    module_t *modules;
    size_t n_modules, cap_modules;
    pf_map_t codes;         /* code id -> index+1 into pcodes */
    pf_map_t stacks;        /* stack id -> its PF_REC_STACK payload (a pointer into the mapped file) */
    /* The same as an array by id, once the file is walked, where the ids are dense (the recorder numbers
     * them from 1): an allocation's stack is then found without hashing. NULL: look in stacks. */
    const pf_rec_stack_t **stack_at;
    size_t n_stack_at;
    /* Native parts interned apart (PF_REC_NATIVE_STACK): native id -> its payload, and the same as an array
     * where the ids are dense. A STACK whose IPs are there is kept in stacks with bit 0 of its pointer set. */
    pf_map_t natives;
    const pf_rec_native_stack_t **native_at;
    size_t n_native_at;
    const uint64_t **ips_at;    /* with stack_at, where natives has any: each stack's IPs, resolved once
                                   (NULL: none, its native part missing from the file) */
    uint64_t missing_stacks;/* references to a stack id the file does not define (corrupt or cut short) */
    pcode_t *pcodes;
    size_t n_pcodes, cap_pcodes;
    uint64_t fin_ns;        /* UINT64_MAX = never finalized */
    uint64_t exec_t;        /* its latest PF_MARK_EXEC (0: none), and its command; */
    char *exec_command;
    uint64_t ended_t;       /* its latest FINALIZING or EXIT mark: an exec before it failed */
    const pf_rec_watch_stats_t **watch_last;    /* each watched thread's latest WATCH_STATS record */
    size_t n_watch_last, cap_watch_last;
    spawn_t *spawns;        /* the threads and processes this process started, in file order */
    size_t n_spawns, cap_spawns;
    spawn_t *unprofiled;    /* its starts of Python processes that ran unprofiled (PF_SPAWN_UNPROFILED) */
    size_t n_unprofiled, cap_unprofiled;
    thread_ref_t *threads;  /* tid -> index+1 (threads_by_tid) */
    size_t n_threads, cap_threads;
    pf_map_t threads_by_tid;
    uint64_t first_t;       /* its earliest THREAD record (root's clock): when it began recording */
    uint64_t last_t;        /* its latest event (root's clock): when it ended, or exec'd into its next image */
    uint64_t last_offset;   /* of the last record the walk accepted (a corrupt one ends it) */
    writer_change_t *writer_changes;    /* in file order */
    size_t n_writer_changes, cap_writer_changes;
} proc_state_t;

/* One thread's events (pf_model_events.c): where each of its runs of records starts, in file order. */
typedef struct stream {
    uint32_t proc;
    uint64_t last_t;        /* its latest event's time, to check the order */
    /* the file offset of its latest record when that is a skimmed PF_REC_PACKED (pf_file_t.skim_packed):
     * last_t is then that record's first event's time; 0 otherwise */
    uint64_t open_packed;
    uint64_t last_run;      /* the loader's run its latest event was in */
    uint64_t *starts;       /* record offsets */
    size_t n_starts, cap_starts;
} stream_t;

typedef struct loader {
    pf_model_t *m;
    proc_state_t *procs;
    size_t n_procs;
    uint32_t cur;           /* process being walked */
    uint64_t t_last;        /* the latest event's time */
    /* the events, as streams (pf_model_events.c) */
    stream_t *streams;
    size_t n_streams, cap_streams;
    pf_map_t stream_index;  /* (proc, tid) + 1 -> stream */
    uint64_t last_stream_key;   /* the latest event's key in stream_index (0: none), and its stream */
    size_t last_stream;
    uint64_t run;           /* counts the runs of one writer's records: a new chunk, a change of writer */
    uint64_t run_chunk;     /* file offset of the chunk being walked */
    uint64_t walk_dropped;  /* the walk gave back the file's pages below this offset */
    /* ... or, when a stream was out of time order, all of them in walk order (sorted by the iterator) */
    int unordered;
    event_t *events;
    size_t n_events, cap_events;
    /* the payloads of packed events (pf_model_events.c), as the records they stand for: decoded, the
     * sweep's current batch's (pf_events_next_batch); packed_*, with the array above, every packed event's
     * (and its seq there, ascending) */
    const pf_rec_alloc_short_t *decoded;
    pf_rec_alloc_short_t *packed_payloads;
    uint32_t *packed_seqs;
    size_t n_packed, cap_packed;
    uint64_t window_from_ns, window_to_ns;  /* pf_load_opts_t's; 0, 0: the whole run */
    /* The walk checks every packed event (strict), or a packed record's first one only and the merge the
     * rest as it reads them (pf_file_t.skim_packed: the loader's usual walk, which then decodes each
     * packed event once, not twice). redo: what only a strict load can tell was found (a packed record
     * holding bytes that are no event, or a stream going back in time inside one): load again, strict. */
    int strict, redo;
} loader_t;

/* e's payload, a packed one's among decoded (its batch's: pf_events_next_batch). */
static inline const void *pf_event_payload_in(const loader_t *L, const pf_rec_alloc_short_t *decoded,
                                              const event_t *e)
{
    if (e->seq)     /* a packed event */
        return &decoded[e->seq - 1];
    return L->procs[e->proc].file.data + ((size_t)e->offset8 << 3);
}

/* The same in the batch the sweep holds. */
static inline const void *pf_event_payload(const loader_t *L, const event_t *e)
{
    return pf_event_payload_in(L, L->decoded, e);
}

/* A recorded stack, inline in its ALLOC/COPY record or interned in a STACK record. */
typedef struct pf_stack_view {
    const pf_rec_pyframe_t *py;
    const uint64_t *ips;
    uint16_t n_py, n_native;
    uint8_t attribute_flags;    /* the record's flags, plus PF_STACK_MISSING: what pf_sweep_attribute takes */
    uint32_t stack_id;          /* the interned stack's id; 0: inline, or missing */
} pf_stack_view_t;

/* Not a format flag: a referenced stack the file lacks; such bytes go to a "[stack missing]" row. */
#define PF_STACK_MISSING 0x80u

/* The stack of an ALLOC or COPY of process proc whose fixed part ends at tail. A reference to an id the
 * file does not define gives an empty stack (counted in missing_stacks). Valid once loading is done. */
pf_stack_view_t pf_loader_stack_lookup(loader_t *L, uint32_t proc, const void *tail, uint8_t flags, uint16_t n_py,
                                       uint16_t n_native);

/* The same, inline where it is an exact profile's usual case, a reference to a stack found by id in
 * stack_at (with its IPs in ips_at where the file has native parts): the sweep asks it for each of tens
 * of millions of allocations. */
static inline pf_stack_view_t pf_loader_stack(loader_t *L, uint32_t proc, const void *tail, uint8_t flags,
                                              uint16_t n_py, uint16_t n_native)
{
    const proc_state_t *P = &L->procs[proc];
    if ((flags & PF_ALLOC_STACK_REF) && P->stack_at) {
        pf_rec_stack_ref_t ref;
        memcpy(&ref, tail, sizeof ref);
        uintptr_t at = ref.stack_id < P->n_stack_at ? (uintptr_t)P->stack_at[ref.stack_id] : 0;
        const uint64_t *ips = NULL;
        const pf_rec_stack_t *st = (const pf_rec_stack_t *)(at & ~(uintptr_t)PF_STACK_NATIVE_BY_ID);
        if (P->ips_at)
            ips = at ? P->ips_at[ref.stack_id] : NULL;
        else if (at && !(at & PF_STACK_NATIVE_BY_ID))
            ips = (const uint64_t *)((const pf_rec_pyframe_t *)(st + 1) + st->n_py);
        if (ips)
            return (pf_stack_view_t){.py = (const pf_rec_pyframe_t *)(st + 1), .ips = ips, .n_py = st->n_py,
                                     .n_native = st->n_native, .attribute_flags = flags,
                                     .stack_id = ref.stack_id};
    }
    return pf_loader_stack_lookup(L, proc, tail, flags, n_py, n_native);
}
_Static_assert(!(PF_STACK_MISSING & (PF_ALLOC_SAMPLED | PF_ALLOC_EXACT | PF_ALLOC_NO_PYSTATE | PF_ALLOC_TRUNCATED |
                                     PF_ALLOC_STACK_REF)), "PF_STACK_MISSING must not be a format flag");

/* ---- the loader's steps (pf_model.c), for pf_model_load and for a load in steps (pf_model_follow.c) ---- */

/* A new model, before any file (the load's options kept). */
struct pf_load_opts;
pf_model_t *pf_model_new(const struct pf_load_opts *opts);
/* L's next process, zeroed: its file is to be opened into P->file. */
proc_state_t *pf_loader_new_process(loader_t *L);
/* That process, its file open: takes its header (the root's, or a child's on start_ns, 0: its header's).
 * Returns 0, or -ESRCH for another run's file (closed). */
int pf_loader_process_opened(loader_t *L, int root, uint64_t start_ns);
/* The walk's callback (pf_file_walk): one record of the process being walked. */
int pf_loader_on_record(void *ctx, const pf_record_t *r);
/* The process being walked has no more records: its streams settled, its stacks indexed. */
void pf_loader_process_walked(loader_t *L, int root);
/* After the sweep: the model's totals that come from the loader. */
void pf_loader_swept(loader_t *L);
/* Frees what L holds (not its model), the files unmapped. */
void pf_loader_free(loader_t *L);

/* Fills P->stack_at from P->stacks once P's file is walked (when the ids are dense enough). */
void pf_loader_index_stacks(proc_state_t *P);

/* The same for a file walked in steps (pf_model_follow.c): the stacks and native parts the last step
 * brought (their ids, walk order) added to the index the steps before built, which ends as the one
 * pf_loader_index_stacks would build of the whole map (x: what the index has seen, zero at first). */
typedef struct pf_stack_index {
    uint64_t max_stack, max_native;
} pf_stack_index_t;
void pf_loader_index_more(proc_state_t *P, pf_stack_index_t *x, const uint32_t *stack_ids, size_t n_stacks,
                          const uint32_t *native_ids, size_t n_natives);

/* The files of pf_model_load_set, ordered by start; start_ns on one clock (pf_model_dir.c). */
typedef struct pf_file_set {
    char **paths;
    uint64_t *start_ns;
    size_t n;
} pf_file_set_t;

/* Interns s[0..n) in the model's string table. Returns its id (never fails: allocation failure aborts). */
uint32_t pf_model_intern(pf_model_t *m, const char *s, size_t n);
/* Interns "function (base name of file:line)": the library function a finding names as its maker. */
uint32_t pf_model_intern_maker(pf_model_t *m, const char *function, const char *file, int line);

/* pf_model_watch.c: sums each thread's last WATCH_STATS record into m->watch (after loading). */
void pf_model_watch_totals(loader_t *L);

/* ---- pf_model_events.c: the events in time order, one at a time ---- */

/* Loading: every record of the process being walked passes through pf_events_record, which marks where
 * runs of one writer start and, for an event (pf_events_is_event), where its stream's runs are. Sets
 * L->unordered when a stream goes back in time: the loader then walks the files again collecting
 * L->events. */
/* (These three are inline: every record of a profile passes them twice, walked and swept.) */
static inline int pf_events_is_event(uint16_t type)
{
    /* one test of a bit, not ten comparisons: every record of a profile asks it twice */
    const uint64_t events = 1ull << PF_REC_ALLOC | 1ull << PF_REC_ALLOC_SHORT | 1ull << PF_REC_FREE |
                            1ull << PF_REC_COPY | 1ull << PF_REC_COPY_SHORT | 1ull << PF_REC_ACCESS_PAIR | 1ull << PF_REC_COPY_WRITE |
                            1ull << PF_REC_VERDICT | 1ull << PF_REC_CONTENT | 1ull << PF_REC_AGG_SITES |
                            1ull << PF_REC_AGG_PEAK | 1ull << PF_REC_AGG_FLOWS | 1ull << PF_REC_PACKED;
    _Static_assert(PF_REC_TYPE_MAX <= 64, "record types fit the mask");
    return type < 64 && (events >> type & 1);
}

/* 0 for an event the load's window leaves out (pf_load_opts_t): an allocation outside it, anything after it. */
static inline int pf_events_in_window(const loader_t *L, uint16_t type, uint64_t t)
{
    if (!L->window_to_ns)
        return 1;
    int alloc = type == PF_REC_ALLOC || type == PF_REC_ALLOC_SHORT;
    return t <= L->window_to_ns && (!alloc || t >= L->window_from_ns);
}

/* An event's time on the root's clock. */
static inline uint64_t pf_events_time(const loader_t *L, uint32_t proc, const void *payload)
{
    uint64_t t;
    memcpy(&t, payload, sizeof t);     /* t_ns leads each event's payload */
    return t + L->m->procs[proc].offset_ns;
}
/* pf_events_record's rare cases, out of line: an event of another stream than the last one's, and a new
 * run of one writer's records (a new chunk, a change of writer). */
void pf_events_new_stream(loader_t *L, const pf_record_t *r, uint64_t t, uint64_t t_end, uint64_t key);
void pf_events_new_run(loader_t *L, uint64_t chunk);
/* A PF_REC_PACKED record's first and last events' times on the root's clock (pf_file_walk found them).
 * Returns 0 when it holds none. */
int pf_events_packed_span(const loader_t *L, const pf_record_t *r, uint64_t *first, uint64_t *last);
/* Decodes s's open skimmed packed record (s->open_packed) for its last event's time: s's last_t, and the
 * loader's and the process's latest times, move on to it. Bytes that are no event set L->redo. */
void pf_events_settle(loader_t *L, stream_t *s);
/* The same for every stream of process proc whose latest record is a skimmed packed one: after its walk. */
void pf_events_settle_process(loader_t *L, uint32_t proc);
/* A stream went back in time: the loader walks the files again, and each event of r goes into L->events,
 * in walk order (a packed record's every event), numbered by seq 1 + its index. */
void pf_events_collect(loader_t *L, const pf_record_t *r);

static inline void pf_events_record(loader_t *L, const pf_record_t *r)
{
    L->procs[L->cur].last_offset = r->offset;
    if (r->chunk != L->run_chunk || r->type == PF_REC_WRITER)
        pf_events_new_run(L, r->chunk);
    if (!pf_events_is_event(r->type))
        return;
    uint64_t t, t_end;
    if (r->type != PF_REC_PACKED)
        t = t_end = pf_events_time(L, L->cur, r->payload);
    else if (!pf_events_packed_span(L, r, &t, &t_end))
        return;
    if (t_end > L->t_last)
        L->t_last = t_end;
    if (t_end > L->procs[L->cur].last_t)
        L->procs[L->cur].last_t = t_end;
    if (L->unordered)
        return;
    /* a run of records is one writer's: its stream is the previous event's, without a lookup */
    uint64_t key = ((uint64_t)L->cur << 32 | r->tid) + 1;
    if (key != L->last_stream_key) {
        pf_events_new_stream(L, r, t, t_end, key);
        return;
    }
    stream_t *s = &L->streams[L->last_stream];
    /* After a skimmed packed record, the next one's first event is checked against its first: the merge
     * checks the rest. A record of another type needs its real last time. */
    if (s->open_packed && !r->packed_skimmed)
        pf_events_settle(L, s);
    if (t < s->last_t) {
        L->unordered = 1;   /* the loader then collects every event into an array (pf_model.c) */
        return;
    }
    s->last_t = t_end;
    s->open_packed = r->packed_skimmed ? r->offset : 0;
    if (s->last_run != L->run) {
        *PF_VEC_PUSH(s->starts, s->n_starts, s->cap_starts) = r->offset;
        s->last_run = L->run;
    }
}
void pf_events_free_streams(loader_t *L);
void pf_events_free_packed(loader_t *L);

/* Orders events by (time, seq): a natural merge sort (runs already in order are merged, not re-sorted). */
void pf_events_sort(event_t *ev, size_t n);

typedef struct pf_event_cursor {
    uint32_t stream;
    size_t run;             /* the next run to read once this one ends */
    uint64_t run_start;     /* where the current run began */
    uint64_t off, end;      /* the next record, and where its run's chunk ends (off 0: between runs) */
    event_t ev;             /* the stream's current event */
    pf_rec_alloc_short_t packed_payload;    /* ... its payload, when it is a packed event (ev.seq 1) */
    const uint8_t *packed_at, *packed_end;  /* the rest of the packed record being read, or packed_at NULL */
    pf_pk_reader_t packed_state;
    uint64_t last_t;        /* the stream's latest event's time (its order is checked as it is read) */
    uint64_t drop_from, drop_to;    /* read file bytes not yet given back (see give_back_run) */
} pf_event_cursor_t;

typedef struct pf_event_iter {
    loader_t *L;
    pf_event_cursor_t *heap;
    size_t n_heap;
    size_t next;
    /* a stream's events went back in time, or a packed record held bytes that are no event: the events
     * end there (a skimmed walk let them through; the loader loads again, strict) */
    int broken;
    /* following a file still written (pf_events_follow_begin): one stream, whose cursor waits, out of
     * events (n_heap 0), until the walk brings it more */
    int follow, follow_started;
} pf_event_iter_t;

/* The events in time order (ties: the lower process index, then the lower file offset).
 * pf_events_next_batch fills out with the next ones, at most max, and returns how many (0 at the end); a
 * packed event's payload goes to pay[i] (pay holds max), and its seq is i + 1: the batch owns it, so
 * L->decoded must be pay while the batch is swept (pf_events_pipe.c sets it). Reads L and its mapped files
 * only, and writes nothing outside it and out and pay (so it may run on another thread than the sweep). */
void pf_events_begin(loader_t *L, pf_event_iter_t *it);
/* The same for a profile still being walked (pf_model_follow.c), of one stream: pf_events_next_batch
 * returns 0 when it has no more events yet, and the ones the walk brings later after. */
void pf_events_follow_begin(loader_t *L, pf_event_iter_t *it);
size_t pf_events_next_batch(pf_event_iter_t *it, event_t *out, pf_rec_alloc_short_t *pay, size_t max);
void pf_events_end(pf_event_iter_t *it);

/* Sweeps L's events, in time order, into m's lines, functions, flows, totals and timelines. Sets L->redo
 * when the merge found what a strict load refuses or orders otherwise (see loader_t.strict); otherwise
 * cannot fail (the records were validated by the reader). */
void pf_model_sweep(loader_t *L);

/* The same in steps, for events that come in batches (pf_model_follow.c): begun once L's processes are
 * open, the events swept batch after batch in time order (ann: the merge thread's annotations, with
 * pf_live_ahead; NULL with follow, which keeps the sweep's own map of live objects), ended once every
 * event is in and L knows the run's end (its last event, its EXIT record). pf_sweep_end frees the run. */
typedef struct pf_sweep_run pf_sweep_run_t;
pf_sweep_run_t *pf_sweep_begin(loader_t *L, int follow);
struct pf_ahead_batch;
void pf_sweep_events(pf_sweep_run_t *R, const event_t *batch, size_t n, const struct pf_ahead_batch *ann);
void pf_sweep_end(pf_sweep_run_t *R);
/* The walk of a followed file brought more records: what the sweep took from L when it began (a process's
 * finalizing time) taken again. */
void pf_sweep_walked(pf_sweep_run_t *R);

#endif /* PF_LOADER_INT_H */
