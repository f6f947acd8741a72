/* pf_loader_int.h - what the model's loader (pf_model.c) hands to its sweep (pf_model_sweep.c).
 *
 * Loading walks every record of every process once: code objects, modules and marks are kept per process
 * (code ids and addresses are only meaningful inside their own process), and the events that change
 * memory (ALLOC, FREE, COPY, VERDICT) are collected with times already shifted onto the root process's
 * clock. The sweep then orders them in time and aggregates. Event payloads point into the mapped files,
 * which stay mapped until the sweep has finished.
 */
#ifndef PF_LOADER_INT_H
#define PF_LOADER_INT_H

#include <stddef.h>
#include <stdint.h>

#include "pf_model_int.h"
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
} pcode_t;

/* One record that changes memory, on the root's clock. 24 bytes, not 32 with a pointer: a profile holds
 * tens of millions of them, and they are sorted (glibc's qsort copies them once more to merge). */
typedef struct event {
    uint64_t t;
    uint32_t seq;       /* file order: keeps ties stable */
    uint32_t offset8;   /* of the payload in its process's file, in 8-byte units (records are 8-aligned) */
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
    uint64_t missing_stacks;/* references to a stack id the file does not define (corrupt or cut short) */
    pcode_t *pcodes;
    size_t n_pcodes, cap_pcodes;
    uint64_t fin_ns;        /* UINT64_MAX = never finalized */
    const pf_rec_watch_stats_t **watch_last;    /* each watched thread's latest WATCH_STATS record */
    size_t n_watch_last, cap_watch_last;
    spawn_t *spawns;        /* the threads and processes this process started, in file order */
    size_t n_spawns, cap_spawns;
    thread_ref_t *threads;  /* tid -> index+1 (threads_by_tid) */
    size_t n_threads, cap_threads;
    pf_map_t threads_by_tid;
    uint64_t first_t;       /* its earliest THREAD record (root's clock): when it began recording */
    writer_change_t *writer_changes;    /* in file order */
    size_t n_writer_changes, cap_writer_changes;
} proc_state_t;

typedef struct loader {
    pf_model_t *m;
    proc_state_t *procs;
    size_t n_procs;
    event_t *events;
    size_t n_events, cap_events;
    size_t n_allocs;        /* ALLOC events among them */
    uint32_t cur;           /* process being walked */
} loader_t;

static inline const void *pf_event_payload(const loader_t *L, const event_t *e)
{
    return L->procs[e->proc].file.data + ((size_t)e->offset8 << 3);
}

/* A recorded stack, inline in its ALLOC/COPY record or interned in a STACK record. */
typedef struct pf_stack_view {
    const pf_rec_pyframe_t *py;
    const uint64_t *ips;
    uint16_t n_py, n_native;
    uint8_t attribute_flags;    /* the record's flags, plus PF_STACK_MISSING: what pf_sweep_attribute takes */
} pf_stack_view_t;

/* Not a format flag: a referenced stack the file lacks; such bytes go to a "[stack missing]" row. */
#define PF_STACK_MISSING 0x80u

/* The stack of an ALLOC or COPY of process proc whose fixed part ends at tail. A reference to an id the
 * file does not define gives an empty stack (counted in missing_stacks). Valid once loading is done. */
pf_stack_view_t pf_loader_stack(loader_t *L, uint32_t proc, const void *tail, uint8_t flags, uint16_t n_py,
                                uint16_t n_native);
_Static_assert(!(PF_STACK_MISSING & (PF_ALLOC_SAMPLED | PF_ALLOC_EXACT | PF_ALLOC_NO_PYSTATE | PF_ALLOC_TRUNCATED |
                                     PF_ALLOC_STACK_REF)), "PF_STACK_MISSING must not be a format flag");

/* Interns s[0..n) in the model's string table. Returns its id (never fails: allocation failure aborts). */
uint32_t pf_model_intern(pf_model_t *m, const char *s, size_t n);

/* pf_model_watch.c: sums each thread's last WATCH_STATS record into m->watch (after loading). */
void pf_model_watch_totals(loader_t *L);

/* Orders events by (time, file order); see pf_model_sweep.c. */
void pf_sweep_sort_events(event_t *ev, size_t n);

/* Orders L's events in time and sweeps them into m's lines, functions, flows, totals and timelines.
 * Cannot fail (the records were validated by the reader). */
void pf_model_sweep(loader_t *L);

#endif /* PF_LOADER_INT_H */
