/* pf_model_int.h - the reporter's model: everything the renderers print, computed once from the records.
 *
 * Lines and functions are keyed by interned strings (file, function) and a line number, so records from
 * several processes (each with its own code ids) land on the same rows. Numbers are doubles because they
 * are estimates (sampled records stand for est_bytes); the renderers round.
 */
#ifndef PF_MODEL_INT_H
#define PF_MODEL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "pf_format.h"
#include "pf_peak_int.h"
#include "pf_report.h"
#include "pf_timeline_int.h"
#include "pf_waste_int.h"


/* The leak test of a line (report/pf_model_leak.c): accumulation, judged from what it holds at exit. */
typedef struct pf_leak_test {
    uint32_t survivors;         /* recorded allocations still live at exit */
    double spread;              /* the share of the run (0-1) between the 10th and 90th percentile of the
                                   allocation times of the survivors' bytes: 0 = one burst */
    double p_value;             /* one-sided Mann-Kendall p-value of the growth of timeline_low (1: none, or
                                   not tested: too few survivors, too little spread) */
    double rate;                /* Theil-Sen slope of timeline_low, bytes per second */
    double likelihood;          /* 1 - p_value when the survivors are enough and spread, else 0 */
} pf_leak_test_t;

/* A leak needs this many survivors (recorded allocations: in the default mode, samples), spread over at
 * least this share of the run: fewer cannot show accumulation; a narrower spread is one burst (data built
 * once, a cache filled at the end). */
#define PF_LEAK_MIN_SURVIVORS 8
#define PF_LEAK_MIN_SPREAD 0.25

/* What a row (a line, a function, or the whole program) accumulates. */
typedef struct pf_stats {
    double alloc_bytes, alloc_count;
    double python_bytes, native_bytes, gpu_bytes;
    double live;                /* during the sweep: live bytes now */
    double peak_bytes;          /* live bytes at the instant the program peaked */
    double gpu_live;            /* during the sweep: live GPU bytes now */
    double gpu_peak_bytes;      /* live GPU bytes at the instant GPU memory peaked */
    double max_live;            /* its own maximum */
    double area_ns;             /* integral of live over time in byte-nanoseconds, for the average (no
                                 * division per event: a divide's latency was 2% of an exact sweep) */
    double leaked_bytes;        /* live at exit */
    double copy_bytes, copy_count, redundant_copy_bytes;
    /* watch (--watch): credited bytes of every resolved store/load pair charged here, and the redundant ones */
    double store_bytes, redundant_store_bytes, load_bytes, redundant_load_bytes;
    uint32_t n_recs, n_freed;   /* recorded allocations, and how many of them were freed */
    uint64_t first_ns, last_ns; /* span over which this row had events (copy rate) */
    uint64_t live_since_ns;     /* time of the last change of live (for area) */
    /* during the sweep: live and gpu_live as they were at the program's (GPU) peak numbered *_epoch */
    double live_at_peak, gpu_live_at_peak;
    uint32_t peak_epoch, gpu_peak_epoch;
    /* live over time (pf_timeline_int.h): during the sweep PF_TIMELINE_FINE buckets of 2^timeline_level
     * ns, after it PF_TIMELINE_POINTS points */
    double timeline[PF_TIMELINE_FINE];
    int timeline_filled;        /* buckets [0, timeline_filled) hold final values */
    /* each bucket's minimum of live: what the row keeps between its temporaries (the leak test's series) */
    double timeline_low[PF_TIMELINE_FINE];
    int timeline_low_filled;
    uint8_t timeline_level;     /* of both series */
    pf_leak_test_t leak;        /* lines only (pf_model_leak.c) */
    pf_peak_row_t peak_est;     /* during the sweep: its share of the peak, unbiased (pf_model_peak.c) */
    /* sampling error: sampled records, and the variance of alloc_bytes and of live (live at exit after the
     * sweep) that their estimates carry (a record standing for est bytes of size: est (est - size)); the
     * peak share's standard error from the difference of its two halves' estimates (pf_model_peak.c) */
    uint32_t n_sampled;
    double alloc_var, live_var, peak_se;
} pf_stats_t;

typedef struct pf_line {
    uint32_t file, function;    /* interned string ids */
    int line;
    pf_stats_t s;
    /* memory of threads and processes this line started, charged here for want of a user line of their
     * own (pf_origin_int.h): its allocated bytes (part of s.alloc_bytes), and how many threads and
     * processes it came from */
    double started_bytes;
    uint32_t started_threads, started_procs;
    /* waste (pf_model_waste.c): bytes of whole pages measured and of those never touched; the peak less
     * its untouched bytes; values made again (bytes and objects, estimated) */
    double checked_bytes, untouched_bytes, resident_peak_bytes;
    double recomputed_bytes, recomputed_count;
    /* bytes of its objects the runtime saw were of each pf_obj_kind_t (at their free, or a copy) */
    double kind_bytes[PF_OBJ_KINDS];

    uint8_t import_state;       /* during the sweep: 0 not yet known, 1 an import line, 2 not (pf_model_leak.c) */
    double leak_own;            /* during the sweep: its own freed bytes on the leak clock so far (pf_model_leak.c) */
} pf_line_t;

typedef struct pf_func {
    uint32_t file, function;
    int first_line;
    pf_stats_t s;
} pf_func_t;

/* What a call-tree node's step is: a line of the user's (or a bracketed or library row of the folded tree),
 * a line of a library's Python code, a native function (--native). */
enum { PF_NODE_USER = 0, PF_NODE_LIBRARY = 1, PF_NODE_NATIVE = 2 };

/* A node of the call tree: a line of the user's reached through a path of the user's lines that called it
 * (outermost first). Its path's last line is the row its allocations were charged to, so the tree's self
 * bytes add up to the per-line table. Memory with no user line of its own hangs under the path of the
 * line that started its thread or process, else is a root (a bracketed or library row). Library frames
 * between two user frames are left out of this, the folded tree, as they are from the rows.
 *
 * The unfolded tree (pf_model.full) has the same nodes and, between and below them, the library frames
 * of the stacks (kind PF_NODE_LIBRARY) and, with --native, the innermost native function that allocated
 * (PF_NODE_NATIVE); each of its nodes names the folded node it folds into. */
typedef struct pf_callnode {
    uint32_t file, function;    /* interned strings */
    int line;
    int32_t parent;             /* -1: a root; always a lower index than the node's own */
    int32_t first_child, next_sibling;  /* after the sweep: children by peak bytes, then allocated, largest first */
    uint32_t depth;             /* 0 for a root */
    double self_alloc, alloc;   /* allocated bytes charged to this node; and to it and every node below */
    double self_peak, peak;     /* live at the program's peak */
    double self_leaked, leaked; /* live at exit */
    double self_gpu, gpu;       /* GPU bytes allocated */
    double self_gpu_peak, gpu_peak;     /* GPU bytes live at the program's GPU peak */
    /* during the sweep: live (GPU) bytes now, and as they were at the (GPU) peak numbered *epoch */
    double live, live_at_peak, gpu_live, gpu_live_at_peak;
    uint32_t peak_epoch, gpu_peak_epoch;
    uint8_t kind;               /* PF_NODE_* */
    int32_t folded;             /* unfolded tree: the folded node its bytes count in (-1: library frames
                                   above the first user line: folded away) */


    pf_peak_row_t peak_est;     /* during the sweep: its share of the peak, unbiased (pf_model_peak.c) */
} pf_callnode_t;

/* A call tree (m->nodes or m->full) in depth-first order, children largest first: the node after n, or -1
 * at the end; descend = 0 skips n's subtree. Start from its first root. */
int32_t pf_calltree_next(const pf_callnode_t *nodes, int32_t n, int descend);

/* A site for the flow graph: the line an object was allocated at (row index, or -1 for untracked). */
typedef struct pf_flow {
    int32_t src_line, dst_line, at_line;    /* indexes into lines; -1 = untracked / unknown */
    int32_t at_func;                        /* the copying line's function row */
    uint32_t src_native, dst_native, at_native;  /* interned "symbol (library)", 0 = none (no --native) */
    uint16_t kind;                          /* pf_copy_kind_t */
    int started;                            /* made by a thread or process at_line started (pf_line_t) */
    double bytes, count;
    uint32_t judged, redundant;             /* copies with a verdict, and of those the redundant ones */
    double judged_bytes, redundant_judged_bytes;
    double candidate_bytes, candidate_count;    /* of bytes and count, the copies a verdict may concern:
                                                   those that filled their destination (pf_copy_rule.h) */
    double redundant_count;                 /* of candidate_count, the redundant share */
    uint32_t dst_domains;                   /* 1 << PF_DOMAIN_* of the candidates' destination objects */
    uint8_t src_ends, dst_ends;             /* 1 << pf_copy_end_t of the candidates' ends (0: not known) */
    uint32_t evidence;                      /* PF_EVIDENCE_* of the last verdict */
    uint32_t watch_judged;                  /* verdicts decided by a watched write (--watch=copies) */
    int32_t write_line, write_func;         /* the first such write: its row and function row (-1: none) */
    uint32_t write_native;                  /* its innermost native function, interned (0: none) */
    int write_to_dst;                       /* 1: it wrote the copy, 0: the source */
    double redundant_bytes;                 /* estimate for the whole edge: bytes x judged redundant share */
    int32_t via_node;                       /* the call-tree node of its largest copy (-1: none): who called */
    int32_t via_full;                       /* the same in the unfolded tree: the library function that copied */
    double via_bytes;                       /* that copy's bytes */
    uint32_t made_in;                       /* interned "function (file:line)": the innermost library frame
                                               of its largest copy's stack, under the at_line (0: none, the
                                               line itself made it) */
    /* how long its copies' tracked destinations lived (pf_sweep_kinds.c): the longest time from a copy
     * to its destination's free (to the run's end where never freed), whether one was live at the
     * program's peak, and whether any destination was tracked at all */
    double dst_life_s;
    int dst_at_peak, dst_known;
    int stages_upload;                      /* a host copy into the buffer an upload on its line then sent
                                               (pf_sweep_copies_finish): it takes the upload's verdict */
} pf_flow_t;

/* A redundant-copy verdict stands on at least this many judged copies, or on every copy of its edge. */
#define PF_COPY_MIN_JUDGED 10

/* Redundant accesses grouped by where the first access and its repeat ran (watch/). */
typedef struct pf_redundancy {
    uint16_t kind;                          /* PF_ACCESS_STORE / PF_ACCESS_LOAD */
    int approx;                             /* some pairs were floats equal within tolerance */
    int32_t first_line, repeat_line;        /* rows; -1 = no Python frame known */
    uint32_t first_native, repeat_native;   /* interned innermost native function ("" = none) */
    uint32_t first_path, repeat_path;       /* interned hybrid call path: native frames, then Python frames,
                                               " <- "-separated, innermost first (a representative pair) */
    double bytes, count;
    const char *category;                   /* the PieProf category it suggests, and what to do (static
                                               strings, set once the sweep is done: pf_model_watch.c) */
    const char *fix;
} pf_redundancy_t;

/* The watch run's facts: the sum over threads of each thread's last PF_REC_WATCH_STATS record. */
typedef struct pf_watch_summary {
    int present;
    char event[32];
    uint64_t period;                /* the configured period (the least of the threads') */
    uint64_t period_max;            /* the widest any thread's became, */
    uint32_t widened_threads;       /* and the threads whose sampling cost more than half their time */
    uint32_t source, modes;
    uint32_t emulated, budget_pct;  /* PF_WATCH_EMU_* (0: debug registers), within budget_pct of CPU (0: no cap) */
    uint64_t samples, samples_armed, dropped_filter, dropped_nomem, dropped_busy, dropped_reservoir;
    uint64_t traps, same_call, header_words;
    uint64_t store_pairs, store_bytes, silent_store_bytes, load_pairs, load_bytes, redundant_load_bytes;
    uint64_t copy_watches, copy_writes;
} pf_watch_summary_t;

typedef struct pf_process {
    uint32_t pid, ppid;
    uint32_t via_pid;       /* run through a launcher (a shell): the profiled process that ran it, else 0 */
    int root;
    char *argv;             /* space-joined */
    char *python;
    uint64_t offset_ns;     /* start relative to the root process */
    double alloc_bytes, python_bytes, native_bytes, gpu_bytes;
    double live, peak_bytes;/* its own live bytes (at exit: live at exit) and their maximum */
    /* what a distributed engine calls it and how it ended (pf_workers_int.h) */
    char *host;             /* PF_MARK_PROCESS_LABEL host=, or NULL (a file from before labels) */
    char *labels;           /* its other labels, "rank=0 local_rank=0 world_size=2", or NULL */
    int dask_worker;        /* it ran Dask's worker code (pf_workers_code) */
    int end_kind;           /* pf_end_kind_t */
    int32_t end_code;       /* PF_END_EXIT: the status given to _exit */
    char *exec_command;     /* its image ended exec'ing this command (PF_MARK_EXEC), or NULL */
} pf_process_t;

/* A Python process started with an environment without pyflow's variables (subprocess's env=, os.execve):
 * it ran, unprofiled (PF_SPAWN_UNPROFILED). */
typedef struct pf_unprofiled {
    uint32_t pid;
    uint32_t starter_pid;   /* the process that started it; its own pid when a process exec'd into it */
    int32_t row;            /* the user's line that started it, or -1 */
    double t_s;             /* when, on the root's clock */
    char *command;          /* its command line, the program by its file name */
} pf_unprofiled_t;

/* A test the pytest plugin measured: its "pytest-result" label (PF_MARK_LABEL; pf_report_tests.c). */
typedef struct pf_test_result {
    char *nodeid;
    double alloc_python, alloc_native, peak, leaked_python, leaked_native;
    char failed_limit[16];      /* "limit_memory" or "limit_leaks" when it failed one, else "" */
} pf_test_result_t;

/* The profile neared its size cap: from t_s on, sampling means were factor x the header's. */
typedef struct pf_sampling_step {
    double t_s;
    uint64_t factor;
} pf_sampling_step_t;

struct pf_model {
    /* interned strings */
    char **strings;
    size_t n_strings, cap_strings;
    void *string_index;     /* pf_map_t*: hash -> id+1 chains (see pf_model.c) */

    pf_line_t *lines;
    size_t n_lines, cap_lines;
    pf_func_t *funcs;
    size_t n_funcs, cap_funcs;
    pf_callnode_t *nodes;       /* the call tree, parents before their children (pf_calltree_int.h) */
    size_t n_nodes, cap_nodes;
    int32_t first_root;         /* the roots, linked by next_sibling as children are; -1: no node */
    pf_callnode_t *full;        /* the unfolded call tree, with library frames (pf_calltree_int.h) */
    size_t n_full, cap_full;
    int32_t first_full_root;
    pf_flow_t *flows;
    size_t n_flows, cap_flows;
    pf_process_t *procs;
    size_t n_procs, cap_procs;
    pf_unprofiled_t *unprofiled;    /* in time order */
    size_t n_unprofiled, cap_unprofiled;
    pf_redundancy_t *redundancies;  /* sorted by bytes, largest first */
    size_t n_redundancies, cap_redundancies;
    pf_watch_summary_t watch;
    pf_waste_t waste;           /* recomputed values and untouched memory (pf_waste_int.h) */

    pf_stats_t total;
    double gpu_timeline[PF_TIMELINE_FINE];      /* the program's live GPU bytes, each bucket's maximum */
    int gpu_timeline_filled;
    uint8_t gpu_timeline_level;
    double timeline_end_s;
    uint64_t end_ns;            /* last event (or exit) */
    uint64_t peak_ns;
    int frees_marked;           /* some FREE carried a kind or PF_FREE_BY_REALLOC: its runtime marks a realloc's
                                   frees, so copies' destinations can be followed through reallocs */
    uint64_t gpu_peak_ns;       /* when the live GPU bytes peaked (0: no GPU memory) */
    /* run facts */
    int has_exit;
    int exit_code;
    int exit_signaled;
    double elapsed_s;
    int exact;
    int aggregated;             /* --aggregate: some process wrote per-site snapshots (no per-object records) */
    uint64_t aggregated_from_ns;/* the first of them (--aggregate-after: full records before) */
    int aggregated_by_size;     /* that switch came as the profile passed --aggregate-after's size */
    int aggregated_flows_kept;  /* the aggregated processes recorded copy flows and verdicts (PF_REC_AGG_FLOWS) */
    uint64_t mean_sample_bytes, object_threshold;
    char *python_version;
    char **argv;                /* the profiled program's argv (interpreter dropped) */
    size_t argc;
    char **notes;               /* messages from child processes the launcher kept (PF_REC_NOTE) */
    size_t n_notes;
    uint32_t *running;          /* the children still running when the launcher wrote its trailer (PF_REC_RUNNING) */
    size_t n_running;
    int running_known;          /* the trailer said which: every other child had ended */
    uint64_t records, dropped;  /* records read; records the runtime could not write (file full or unwritable) */
    uint64_t unresolved_stacks; /* ALLOC/COPY records whose interned stack the file lacks: attributed without it */
    uint64_t frees_unseen;      /* allocations at an address still live: the free of the block there is not in
                                   the profile, or out of its order (the block counts as freed then) */
    pf_sampling_step_t *sampling_steps; /* the root process's, in time order, factors increasing */
    size_t n_sampling_steps, cap_sampling_steps;
    pf_test_result_t *tests;    /* the root process's tests, in the order they ran (pytest plugin) */
    size_t n_tests, cap_tests;
    char *profile_only;         /* the user-code rule (see pf_load_opts_t) */
    int profile_all;
    struct pf_proc_line *proc_lines;    /* each process's bytes per line, when processes were merged
                                           (pf_workers_int.h), sorted by process then line */
    size_t n_proc_lines;
    struct pf_workers_acc *workers_acc; /* the sweep's running state for proc_lines */
    int from_set;               /* loaded from a directory or several files (pf_model_load_set) */
};

/* The PieProf category a redundancy suggests (a display heuristic, see pf_model_watch.c). */

/* pf_report_tests.c: a PF_MARK_LABEL's text, kept when it is a "pytest-result"; and their memory. */
void pf_tests_note(struct pf_model *m, const char *label, size_t len);
void pf_tests_free(struct pf_model *m);

/* The row a name refers to. */
static inline const char *pf_model_str(const struct pf_model *m, uint32_t id)
{
    return id < m->n_strings ? m->strings[id] : "";
}

/* 1 when file is the user's code under the model's rule: by default not the standard library,
 * site-packages or a frozen module; --profile-only / --profile-all change it (pf_load_opts_t). */
int pf_model_is_user_file(const struct pf_model *m, const char *file);

#endif /* PF_MODEL_INT_H */
