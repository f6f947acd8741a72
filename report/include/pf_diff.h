/* pf_diff.h - `pyflow diff BASE NEW`: two profiles (or their JSON reports) compared per line, per function
 * and per call path, with conditions (--fail-on) that decide a CI job's exit status.
 *
 * Lines are matched across edits by what they are, not where they are: the file, the function and the
 * line's source text (the JSON report's "source", written for lines of the user's code; other lines by their
 * number), the n-th occurrence of the same text in a function being the n-th. A call path is the chain of
 * such lines from the outermost. A profile is rendered to JSON when diffed, so its source text is the file
 * as it is then: to diff across an edit, keep the JSON report of the base run (--json). */
#ifndef PF_DIFF_H
#define PF_DIFF_H

#include <stddef.h>
#include <stdio.h>

enum { PF_DM_ALLOC, PF_DM_PEAK, PF_DM_LEAKED, PF_DM_COPIES, PF_DM_REDUNDANT, PF_DIFF_MEASURES };
extern const char *const pf_diff_measure_names[PF_DIFF_MEASURES];  /* "allocated", "peak", ... */

typedef struct pf_diff_row {
    char *key;                  /* what matches it across the two runs */
    char *file, *function, *source, *label;    /* label: a call path's "f:12 > g:30" */
    int line;
    double v[PF_DIFF_MEASURES];
} pf_diff_row_t;

typedef struct pf_diff_side {
    char *name;                 /* the file it came from */
    double total[PF_DIFF_MEASURES];
    pf_diff_row_t *rows[3];     /* lines, functions, call paths */
    size_t n[3];
} pf_diff_side_t;

enum { PF_DIFF_LINES, PF_DIFF_FUNCS, PF_DIFF_PATHS };

typedef struct pf_diff_entry {
    const pf_diff_row_t *base, *new_; /* NULL: not in that run */
    double delta[PF_DIFF_MEASURES];
    double size;                /* the largest |delta|: the order of the tables */
    int edited;                 /* a line of base edited into new_ (its function's only gone and new line) */
} pf_diff_entry_t;

typedef struct pf_diff {
    pf_diff_side_t base, new_;
    pf_diff_entry_t *entries[3];
    size_t n[3];
} pf_diff_t;

/* Reads one side: a profile (rendered to JSON in memory) or a JSON report. Returns 0, or -1 with a
 * sentence in err. */
int pf_diff_load(const char *path, pf_diff_side_t *side, char *err, size_t errlen);
void pf_diff_side_free(pf_diff_side_t *side);
/* Matches the two sides (which it takes over) into d, each table's changed rows largest first. */
void pf_diff_match(pf_diff_t *d, pf_diff_side_t *base, pf_diff_side_t *new_);
void pf_diff_free(pf_diff_t *d);

/* A --fail-on condition: MEASURE:+N (bytes, with B, kB, MB, GB or KiB, MiB, GiB, k, m, g) or MEASURE:+N%,
 * on the totals (copies and redundant: over the user's lines, pf_diff.c's user_copies).
 * MEASURE: alloc(ated), peak, leaked, copies, redundant. */
typedef struct pf_diff_cond {
    int measure;
    double limit;
    int percent;
    char text[64];
} pf_diff_cond_t;

/* Parses one condition. Returns 0, or -1 with a sentence in err. */
int pf_diff_parse_cond(const char *s, pf_diff_cond_t *c, char *err, size_t errlen);
/* 1 when the new run breaks the condition (its total grew by more than the limit). */
int pf_diff_cond_broken(const pf_diff_t *d, const pf_diff_cond_t *c);

typedef struct pf_diff_opts {
    int max_rows;               /* per table (0 = 15) */
    const pf_diff_cond_t *conds;
    size_t n_conds;
} pf_diff_opts_t;

/* The text report; and one self-contained HTML page. Each returns 0 or -errno. */
int pf_diff_render_text(const pf_diff_t *d, FILE *out, const pf_diff_opts_t *o);
int pf_diff_render_html(const pf_diff_t *d, FILE *out, const pf_diff_opts_t *o);

#endif /* PF_DIFF_H */
