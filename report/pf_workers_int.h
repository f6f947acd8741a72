/* pf_workers_int.h - the workers of a distributed job: what each process is called (host, rank, Dask
 * worker), how it ended, its bytes per line, and the imbalance between them.
 *
 * The loader (pf_model.c) hands each process's labels and endings here; the sweep (pf_model_sweep.c)
 * reports every allocation and release with its process and line, from which each process's bytes per
 * line allocated and live at that process's own peak are kept (only when several processes were merged).
 */
#ifndef PF_WORKERS_INT_H
#define PF_WORKERS_INT_H

#include <stdint.h>
#include <stdio.h>

#include "pf_json_int.h"
#include "pf_model_int.h"
#include "pf_reader_int.h"

typedef enum pf_end_kind {
    PF_END_NONE = 0,        /* neither shutdown nor _exit: killed by a signal, crashed, or still running */
    PF_END_SHUTDOWN = 1,    /* the interpreter shut down: the script ended, sys.exit, an uncaught exception */
    PF_END_EXIT = 2,        /* _exit(end_code): os._exit, a multiprocessing fork child */
    PF_END_LAUNCHER = 3,    /* the root of pyflow run: the launcher saw its status (model's exit_code) */
    PF_END_EXEC = 4         /* it exec'd another program (pf_process_t.exec_command) */
} pf_end_kind_t;

typedef struct pf_proc_line {
    uint32_t proc;
    int32_t row;            /* into m->lines */
    double alloc_bytes;
    double peak_bytes;      /* live at its process's peak */
} pf_proc_line_t;

/* ---- loading (pf_model_workers.c) ---- */

/* A PF_MARK_PROCESS_LABEL or PF_MARK_EXIT of process p. */
void pf_workers_mark(pf_model_t *m, pf_process_t *p, uint16_t kind, const pf_rec_mark_t *mk);
/* A code object (PF_REC_CODE) of process p: Dask's worker code marks a Dask worker. */
void pf_workers_code(pf_process_t *p, const char *file, const char *function);
/* After p's file was walked: how it ended (finalized: it saw interpreter shutdown; launcher_exit: the
 * launcher's EXIT record says, the root of pyflow run). */
void pf_workers_ended(pf_process_t *p, int finalized, int launcher_exit);

/* ---- the sweep ---- */

/* An allocation of est bytes charged to row in process proc; new_peak: the process's live bytes just
 * reached a new maximum with it. No-ops unless several processes were loaded (tested inline: the sweep
 * calls these at every allocation and free). */
void pf_workers_alloc_in(pf_model_t *m, uint32_t proc, int32_t row, double est, int new_peak);
void pf_workers_free_in(pf_model_t *m, uint32_t proc, int32_t row, double est);
static inline void pf_workers_alloc(pf_model_t *m, uint32_t proc, int32_t row, double est, int new_peak)
{
    if (m->n_procs >= 2)
        pf_workers_alloc_in(m, proc, row, est, new_peak);
}
static inline void pf_workers_free(pf_model_t *m, uint32_t proc, int32_t row, double est)
{
    if (m->n_procs >= 2)
        pf_workers_free_in(m, proc, row, est);
}
/* After the sweep: m->proc_lines from the running state. */
void pf_workers_finish(pf_model_t *m);
void pf_workers_free_model(pf_model_t *m);

/* ---- reading (pf_model_workers.c) ---- */

/* The processes the workers section compares: those with an engine's label or Dask's threads; in a
 * profile loaded from a directory or several files, every process. Returns how many were put in idx. */
size_t pf_workers_list(const pf_model_t *m, uint32_t *idx, size_t cap);
/* "rank 1", "local_rank 0", "dask worker", or "" */
void pf_workers_name(const pf_process_t *p, char *buf, size_t size);
/* "exit 0", "shut down", "_exit 3", "killed or crashed (no exit recorded)" */
void pf_workers_ending(const pf_model_t *m, const pf_process_t *p, char *buf, size_t size);

/* The lines that make the difference between processes a (larger peak) and b: rows by |a's - b's bytes
 * at their peaks|, largest first; diffs[i] = a's - b's. Returns how many (at most cap). */
size_t pf_workers_diff(const pf_model_t *m, uint32_t a, uint32_t b, int32_t *rows, double *diffs, size_t cap);

/* A line of yours that handed work to Dask's workers: it called Client.submit/map/compute/... */
typedef struct pf_submission {
    uint32_t file;          /* interned */
    int line;
    uint32_t call;          /* interned: the client method */
} pf_submission_t;

/* The distinct submitting lines found in the unfolded call tree (a call is seen when something under it
 * was recorded). Returns how many (at most cap). */
size_t pf_workers_submissions(const pf_model_t *m, pf_submission_t *out, size_t cap);

/* ---- rendering (pf_render_workers.c) ---- */
void pf_render_workers_text(const pf_model_t *m, FILE *f, int width);
void pf_render_workers_json(const pf_model_t *m, pf_json_t *j);
void pf_render_workers_html(const pf_model_t *m, FILE *f);

#endif /* PF_WORKERS_INT_H */
