/* pf_report.h - the reporter's whole API: load profile files into one model, render it.
 *
 * Data flow: reader (validates and walks records) -> model (aggregates per line, per function, timelines,
 * live-at-exit) -> renderers (text, json). Every renderer reads the same model, so a number never differs
 * between formats. Nothing here links the runtime; the reporter runs in the launcher's process after the
 * program ended, or later in `pyflow report`.
 */
#ifndef PF_REPORT_H
#define PF_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct pf_model pf_model_t;

typedef struct pf_load_opts {
    int merge_children;      /* also load PATH.<pid> files written by forked children and subprocesses */
    const char *profile_only;/* comma-separated substrings: only files containing one are the user's code */
    int profile_all;         /* every file is the user's code (the standard library and packages too) */
    /* only what the root process allocated in [window_from_ns, window_to_ns] of its clock, and its frees and
     * copies until window_to_ns: "live at exit" is then live at window_to_ns (the pytest plugin's view of
     * one test). 0, 0: the whole run. */
    uint64_t window_from_ns, window_to_ns;
    const struct pf_file_set *set;  /* internal: pf_model_load_set's files, the first the root */
} pf_load_opts_t;

/* Loads the profile at path (and, when asked, its children's files) into a new model.
 * Returns 0 and sets *out; on failure returns -errno or -EINVAL and writes one plain sentence into err
 * (naming the file and, for corrupt data, the byte offset). A truncated tail is not an error. */
int pf_model_load(const char *path, const pf_load_opts_t *opts, pf_model_t **out, char *err, size_t errlen);

void pf_model_free(pf_model_t *model);

/* An exact profile's model built while its program runs (report/pf_model_follow.c): the report at exit of
 * `pyflow run --exact` then has only the profile's last chunks left to read. pf_follow_start follows the
 * profile at path (which may not exist yet) on a thread of its own; once the program has ended and the
 * launcher has added its trailer, pf_follow_finish reads the rest and returns 0 with the model
 * pf_model_load(path, opts) would build, or -1 when the profile is one the follower does not take (a second
 * thread's records, a child's file, ...): load it then. It frees f either way. pf_follow_new and
 * pf_follow_step do the same on the caller's thread, one look at the file a call (tests); pf_follow_free
 * lets f go without a model. */
typedef struct pf_follow pf_follow_t;
pf_follow_t *pf_follow_start(const char *path, const pf_load_opts_t *opts);
int pf_follow_finish(pf_follow_t *f, pf_model_t **out);
pf_follow_t *pf_follow_new(const char *path, const pf_load_opts_t *opts);
int pf_follow_step(pf_follow_t *f);
void pf_follow_free(pf_follow_t *f);

/* Loads the profiles of a job's processes into one model: each path a profile file (with its children's
 * PATH.<pid> files) or a directory of them (pyflow env's PYFLOW_OUTPUT_DIR: <host>.<pid> files), possibly
 * from several hosts. Each file's start is put on one clock: the monotonic clock between files of one
 * host, the real-time clock between hosts (pf_model_dir.c). Returns as pf_model_load. */
int pf_model_load_set(const char *const *paths, size_t n, const pf_load_opts_t *opts, pf_model_t **out, char *err,
                      size_t errlen);

/* The files written next to a profile by its forked children and subprocesses (PATH.<pid>[.<n>]), sorted.
 * Returns how many and sets *out (free with pf_profile_children_free); 0 when none or unreadable. */
size_t pf_profile_children(const char *path, char ***out);
void pf_profile_children_free(char **list, size_t n);

typedef struct pf_text_opts {
    int max_lines;           /* rows in the per-line table (0 = default 15) */
    int width;               /* terminal columns (0 = 100) */
    int color;               /* ANSI colour */
    const char *profile_path;/* shown in the footer, may be NULL */
    int reduced;             /* only lines holding at least 1% of the allocated bytes, the peak or the copies */
} pf_text_opts_t;

/* Renders the terminal report. Returns 0, or -errno when writing failed. */
int pf_render_text(const pf_model_t *model, FILE *out, const pf_text_opts_t *opts);

/* Renders the JSON document of docs/json.md ("schema": "pyflow-profile/1").
 * Returns 0, or -errno when writing failed. */
int pf_render_json(const pf_model_t *model, FILE *out);

typedef struct pf_dot_opts {
    double min_bytes;        /* flows moving fewer bytes are folded into one "smaller flows" note */
    int all;                 /* every flow (untracked ends, imports, all sizes above min_bytes), not the
                                default view of the program's own objects (flowgraph/pf_flowgraph.h) */
} pf_dot_opts_t;

/* Renders the object flow graph in Graphviz: nodes are allocation sites (clustered by function) named by
 * the kind of object and the library function that made it, edges are copies and reallocs with bytes,
 * counts and the function that copied; redundant copies in red with the fix, a legend. Returns 0 or -errno. */
int pf_render_dot(const pf_model_t *model, FILE *out, const pf_dot_opts_t *opts);

typedef struct pf_html_opts {
    const char *flow_svg;    /* the flow graph already rendered to SVG by Graphviz, or NULL */
} pf_html_opts_t;

/* Renders one self-contained HTML page (no network): findings, timeline, sortable tables, flow graph.
 * Returns 0 or -errno. */
int pf_render_html(const pf_model_t *model, FILE *out, const pf_html_opts_t *opts);

/* Exports for other tools (pf_render_csv.c, pf_render_speedscope.c, pf_render_pprof.c). Each returns 0 or
 * -errno. CSV: the per-line table (the JSON's "lines"). speedscope: the call tree as speedscope's JSON
 * file format, one sampled profile per weight (allocated, live at peak, live at exit). pprof: the call
 * tree as a gzipped profile.proto with those three sample types, in bytes. */
int pf_render_csv(const pf_model_t *model, FILE *out);
int pf_render_speedscope(const pf_model_t *model, FILE *out);
int pf_render_pprof(const pf_model_t *model, FILE *out);

#endif /* PF_REPORT_H */
