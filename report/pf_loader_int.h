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
} pcode_t;

typedef struct event {
    uint64_t t;
    uint32_t seq;       /* file order: keeps ties stable */
    uint16_t type;
    uint16_t aux;
    uint32_t proc;
    const void *payload;
} event_t;

typedef struct module {
    uint64_t start, end, bias;
    uint32_t path;      /* interned */
} module_t;

typedef struct proc_state {
    pf_file_t file;
    module_t *modules;
    size_t n_modules, cap_modules;
    pf_map_t codes;         /* code id -> index+1 into pcodes */
    pcode_t *pcodes;
    size_t n_pcodes, cap_pcodes;
    uint64_t fin_ns;        /* UINT64_MAX = never finalized */
    const pf_rec_watch_stats_t **watch_last;    /* each watched thread's latest WATCH_STATS record */
    size_t n_watch_last, cap_watch_last;
} proc_state_t;

typedef struct loader {
    pf_model_t *m;
    proc_state_t *procs;
    size_t n_procs;
    event_t *events;
    size_t n_events, cap_events;
    uint32_t cur;           /* process being walked */
} loader_t;

/* Interns s[0..n) in the model's string table. Returns its id (never fails: allocation failure aborts). */
uint32_t pf_model_intern(pf_model_t *m, const char *s, size_t n);

/* pf_model_watch.c: sums each thread's last WATCH_STATS record into m->watch (after loading). */
void pf_model_watch_totals(loader_t *L);

/* Orders L's events in time and sweeps them into m's lines, functions, flows, totals and timelines.
 * Cannot fail (the records were validated by the reader). */
void pf_model_sweep(loader_t *L);

#endif /* PF_LOADER_INT_H */
