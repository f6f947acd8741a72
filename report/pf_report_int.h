/* pf_report_int.h - derived figures shared by the renderers, so text and JSON never disagree. */
#ifndef PF_REPORT_INT_H
#define PF_REPORT_INT_H

#include <stddef.h>

#include "pf_model_int.h"

/* Row indexes sorted by allocated bytes (then peak share), largest first. Caller frees. */
size_t *pf_report_line_order(const pf_model_t *m);
size_t *pf_report_func_order(const pf_model_t *m);

/* Bytes copied per second over the span in which the row had events (at least 1 ms). */
double pf_report_copy_rate(const pf_stats_t *s);

/* Likelihood (0-1) that what a line holds at exit is a leak (pf_model_leak.c): 1 - the p-value of the
 * growth of what it keeps between temporaries, given that its survivors are enough and spread over the
 * run (else 0). Reported at >= 0.99: growth significant at 1%. */
#define PF_LEAK_REPORT_THRESHOLD 0.99
double pf_report_leak_likelihood(const pf_stats_t *s);

/* Sampling error of a row's figures: the standard error of alloc_bytes and of leaked_bytes (0 when every
 * record is exact); and 1 when its allocated bytes rest on few samples: a relative standard error above
 * PF_FEW_SAMPLES_RSE (about 25 samples or fewer), marked '~' in the text table. */
#define PF_FEW_SAMPLES_RSE 0.2
double pf_report_alloc_se(const pf_stats_t *s);
double pf_report_leaked_se(const pf_stats_t *s);
int pf_report_few_samples(const pf_stats_t *s);

/* A flow is reported redundant when most of its judged copies were, and they are enough to stand for it:
 * PF_COPY_MIN_JUDGED of them, every copy it made (a single 80 MB np.array(a), judged), or at least 2 and
 * three quarters of its copies. */
int pf_report_flow_judged_enough(const pf_flow_t *f);
int pf_report_flow_redundant(const pf_flow_t *f);

/* Findings are about the user's code, which the user can change: a line's probable leak (the likelihood
 * at PF_LEAK_REPORT_THRESHOLD or more) and a redundant copy flow made at a line of the user's files (by
 * that line, not by a thread or process it started). */
/* A line a finding may name: in one of the user's files (not a library's, not "[python startup]"), and not
 * an import statement. */
int pf_report_finding_line(const pf_model_t *m, const pf_line_t *l);
int pf_report_leak_found(const pf_model_t *m, const pf_line_t *l);

/* 1 when the line is an import statement (its source: "import ..." or "from ... import ..."): what a module
 * builds when it is first imported (its tables, the interpreter's caches) is made once, and the copies
 * its loading makes are not the user's to change. No finding is about an import. */
int pf_report_is_import(const pf_model_t *m, const pf_line_t *l);
int pf_report_copy_found(const pf_model_t *m, const pf_flow_t *f);

/* What to do about a redundant copy flow, by what it copied into: a Python object (bytes, bytearray:
 * memoryview), a native buffer (numpy: asarray), a GPU upload (keep it on the device); both advices when
 * its copies filled both kinds. Advice to rewrite a call is given only when the line has that call
 * (np.array, .copy(), bytes(...)); a copy made inside a library (f->made_in) or by another call on the
 * line gets what the user can change on their line: the input's dtype or layout, copy=False, calling once. Where the runtime saw str and bytes ends (pf_copy_end_t): str.encode(),
 * a decode, or a str copied whole into another, each its own advice. At most 89 characters: the text
 * report prints it after 11 columns of indent and never wraps. */
const char *pf_report_copy_fix(const pf_model_t *m, const pf_flow_t *f);

/* The redundant copy bytes the findings leave out (the header's total counts them): those made by threads
 * and processes a line of the user's started, in library code (with the line whose share is largest), and
 * those made elsewhere (library lines, imports, no line). */
typedef struct {
    double started_bytes, elsewhere_bytes;
    int32_t started_line;   /* -1 when started_bytes is 0 */
} pf_unlisted_redundancy_t;
void pf_report_unlisted_redundancy(const pf_model_t *m, pf_unlisted_redundancy_t *out);

/* 1 when unlisted bytes are worth a sentence: 5% of the redundant total, or all of it. */
int pf_report_unlisted_shown(const pf_model_t *m, double bytes);

/* The text of a source line, trimmed (at most 511 bytes; "" when the file cannot be read), or for a
 * bracketed row ("[python startup]", "[native thread]") what it holds, in parentheses; "<string>" lines
 * are read from the code of m's `python -c CODE` (m may be NULL: none). The result is overwritten by the
 * next call. */
const char *pf_report_source_line(const pf_model_t *m, const char *file, int lineno);

/* ": " and the source line of file:lineno, for a finding's line; "" when there is none (a file that cannot
 * be read, code without one). Overwritten by the next call. */
const char *pf_report_source_tail(const pf_model_t *m, uint32_t file, int lineno);

/* The JSON / Graphviz name of a pf_copy_kind_t: "copy", "realloc", "h2d", "d2h", "d2d", "h2h". */
const char *pf_report_copy_kind_name(unsigned kind);

/* Where watch's sampled addresses came from (pf_rec_watch_stats_t.source): "precise" (PEBS/IBS), "sampled"
 * (a kernel event's address: page faults) or "decode" (the sampled instruction decoded). */
const char *pf_report_address_source(uint32_t source);

/* How watch's watchpoints worked (pf_rec_watch_stats_t.emulated, budget_pct): "debug registers", or
 * "emulated by single steps|page protections[, within N% of CPU time]"; into buf, returned. */
const char *pf_report_watchpoints(uint32_t emulated, uint32_t budget_pct, char buf[64]);
/* The JSON's name for an emulation: "steps" or "pages"; NULL for debug registers. */
const char *pf_report_emulation(uint32_t emulated);

/* What a profile lacks (records the runtime could not write, interned stacks the file does not define, in
 * an exact profile frees missing or out of order),
 * in one sentence into buf; NULL when it is complete. */
#define PF_REPORT_INCOMPLETE_BYTES 320
const char *pf_report_incomplete(const pf_model_t *m, char buf[PF_REPORT_INCOMPLETE_BYTES]);

/* How sampling coarsened as the profile neared its size cap (--max-profile), in one sentence into buf;
 * NULL when it never did. */
const char *pf_report_sampling_steps(const pf_model_t *m, char buf[200]);

/* "12.3 MiB" into buf ("-" below half a byte); returns buf. The terminal table has its own, narrower form. */
const char *pf_report_human_bytes(double v, char buf[24]);

/* The last component of a path. */
const char *pf_report_basename(const char *file);

/* 1 when a redundant-access group is a finding: it repeats at a line of the user's code. */
int pf_report_redundancy_shown(const pf_model_t *m, const pf_redundancy_t *r);


/* --watch=copies: the edges a watched write proved needed (at a known line), largest first; fills top[0..max)
 * and returns how many. */
size_t pf_report_needed_copies(const pf_model_t *m, const pf_flow_t **top, size_t max);

/* 1 when process image i later exec'd: a later image has its pid (and parent). A fork that execs
 * (subprocess, multiprocessing's spawn) leaves two images of one process. */
int pf_report_process_replaced(const pf_model_t *m, size_t i);

/* 1 when process image i (a child, its last image) was still running when the launcher wrote its trailer
 * (PF_REC_RUNNING): the report has what it recorded until then. */
int pf_report_process_running(const pf_model_t *m, size_t i);

#define PF_REPORT_TAG_BYTES 160
/* What the process tables put before image i's command, in buf: "(before exec) " (a later image of its
 * pid is profiled), "(exec'd COMMAND) " (it became a program that is not profiled), "(still running) " or
 * "". Returns buf. */
const char *pf_report_process_tag(const pf_model_t *m, size_t i, char *buf, size_t size);

/* 0 for a forked child that only exec'd: two images of one pid, the first of which allocated nothing, are
 * one row in the process tables. */
int pf_report_process_shown(const pf_model_t *m, size_t i);

/* The processes merged: images replaced by an exec not counted. */
size_t pf_report_process_count(const pf_model_t *m);

/* 1 when a line of this file is a row of the line tables: the user's code, or a bracketed row
 * ("[python startup]", "[native thread]"). The other rows are library lines (pf_report_outside_code). */
int pf_report_file_listed(const pf_model_t *m, const char *file);

/* Memory with no line of the user's code on its stack (child processes running library code, imports,
 * threads a library started), which the line tables leave out: sums over those library lines and the
 * largest of them by allocated bytes (line indexes). */
#define PF_OUTSIDE_TOP 3
typedef struct {
    double alloc_bytes, peak_bytes, copy_bytes;
    size_t lines;
    size_t top[PF_OUTSIDE_TOP], n_top;
} pf_outside_code_t;
void pf_report_outside_code(const pf_model_t *m, pf_outside_code_t *out);

/* 1 when it is worth a sentence: at least 5% of the allocated bytes or of the peak. */
int pf_report_outside_code_shown(const pf_model_t *m, const pf_outside_code_t *out);

/* Lines of the user's code charged with memory of threads and processes they started (pf_line_t's
 * started_bytes, at least 1% of the allocated bytes), largest first: fills top[0..max) with line indexes
 * and returns how many. */
#define PF_STARTED_TOP 5
size_t pf_report_started_lines(const pf_model_t *m, size_t *top, size_t max);

/* "2 threads and 1 process" into buf, returned. */
const char *pf_report_started_what(const pf_line_t *l, char buf[64]);

/* The Python processes that ran unprofiled (pf_unprofiled_t), by the line that started them, in the order
 * of their first start: fills top[0..max) and returns how many; *others counts the processes of lines
 * left out. */
#define PF_UNPROFILED_TOP 8
typedef struct {
    int32_t row;            /* -1: no line of the user's */
    size_t count;
    size_t first;           /* its first process (an index into the model's unprofiled) */
} pf_unprofiled_group_t;
size_t pf_report_unprofiled_groups(const pf_model_t *m, pf_unprofiled_group_t *top, size_t max, size_t *others);

/* The call tree in depth-first order, each node's children largest first: the node after n, or -1 at the
 * end; descend = 0 skips n's subtree (a node's sums bound its children's, so a node too small to show has
 * no child worth showing). Start from m->first_root. */
int32_t pf_report_calltree_next(const pf_model_t *m, int32_t n, int descend);

/* The call-tree node of line l that holds most of its bytes at the peak (at_exit 0) or live at exit
 * (at_exit 1), and in *paths how many of its nodes hold any; -1 when none does. */
int32_t pf_report_line_node(const pf_model_t *m, const pf_line_t *l, int at_exit, size_t *paths);

/* The callers of a call-tree node (-1: none), outermost first, into out[0..max); returns how many. */
size_t pf_report_caller_chain(const pf_model_t *m, int32_t node, int32_t *out, size_t max);

/* The callers of a call-tree node, outermost first, as "function:line > function:line" (a caller in another
 * file than the node's as "function file:line") into buf; "" for a root. Returns buf. */
const char *pf_report_callers(const pf_model_t *m, int32_t node, char *buf, size_t size);

/* For a finding about line l: the callers (pf_report_callers) of its node holding most of its bytes at the
 * peak (at_exit 0) or at exit, into buf, and in *paths how many paths reach it; NULL when that node is a
 * root (nothing called the line) or l holds nothing. */
const char *pf_report_via(const pf_model_t *m, const pf_line_t *l, int at_exit, char *buf, size_t size,
                          size_t *paths);

/* For a copy finding: " of data from line N" (or "file:N" in another file) into buf, "" when the source is not
 * known (a line may copy the data of several lines: one finding each). Returns buf. */
const char *pf_report_copy_source(const pf_model_t *m, const pf_flow_t *f, char *buf, size_t size);

/* For a copy finding: the callers of the edge's largest copy into buf (pf_report_callers); NULL when that copy
 * was made at the top of a path (nothing called its line). */
const char *pf_report_flow_via(const pf_model_t *m, const pf_flow_t *f, char *buf, size_t size);

/* What to do about unprofiled children, one sentence. */
#define PF_UNPROFILED_FIX "keep pyflow's variables in the child's environment: env={**os.environ, ...}"

/* pf_report_tests.c: the tests the pytest plugin measured, from its "pytest-result" labels. */
struct pf_json;
/* The text section (the rows largest peak first; nothing when no test was measured), and the JSON array. */
void pf_render_tests_text(const pf_model_t *m, FILE *f, int rows);
void pf_render_tests_json(struct pf_json *j, const pf_model_t *m);

#endif /* PF_REPORT_INT_H */
