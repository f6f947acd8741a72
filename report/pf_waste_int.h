/* pf_waste_int.h - wasted memory found from contents and pages (pf_model_waste.c): values a line computed
 * again (recomputed values) and memory allocated and never touched (untouched memory), from the runtime's
 * PF_REC_CONTENT records. */
#ifndef PF_WASTE_INT_H
#define PF_WASTE_INT_H

#include <stddef.h>
#include <stdint.h>

/* A path's recomputations of every size, summed on its largest entry. */
typedef struct pf_recomputation_site {
    uint32_t sizes, values;
    double bytes, count;
    uint64_t smallest, largest;
} pf_recomputation_site_t;

/* A line (call path) that made the same value again: its objects of one size whose fingerprints matched
 * one made before on the same path. */
typedef struct pf_recomputation {
    int32_t row;            /* the line */
    int32_t node;           /* its call path (pf_callnode_t), -1: none */
    uint64_t size;          /* object size */
    uint8_t domain;         /* PF_DOMAIN_* of the objects */
    uint8_t native;         /* made by native code (a buffer, not a Python object) */
    double bytes, count;    /* estimated recomputations (sampling undone), not counting each value's first */
    uint32_t matches;       /* recorded objects that matched an earlier one */
    uint32_t values;        /* distinct values recomputed */
    uint32_t made_in;       /* interned "function (file:line)": the library function that made the values,
                               under the user's line; 0 when the line itself made them */
    int32_t site_first;     /* the index of its path's largest entry (its own when it is that one)... */
    pf_recomputation_site_t site;   /* ... which holds the path's sums (zero in the others) */
    const char *category;   /* the PieProf category it suggests (a display heuristic), and what to do about
                               it: static strings, set when the sweep is done */
    const char *fix;
} pf_recomputation_t;

/* A line whose blocks were allocated larger than what was touched of them. */
typedef struct pf_untouched {
    int32_t row;
    int32_t node;           /* call path of its largest block */
    int32_t full;           /* the same in the unfolded tree (pf_callnode_t of m->full) */
    uint32_t made_in;       /* interned "function (file:line)": the library function that allocated the
                               largest block under the user's line; 0 when the line itself did */
    double bytes;           /* estimated untouched bytes */
    double checked_bytes;   /* estimated bytes of the whole pages looked at */
    double blocks;          /* estimated blocks */
    uint64_t largest_size;  /* the largest block measured, and how much of it was untouched */
    uint64_t largest_untouched;
    const char *fix;        /* what to do about it (a static string, set when the sweep is done) */
} pf_untouched_t;

typedef struct pf_waste {
    pf_recomputation_t *recomputations;     /* largest bytes first */
    size_t n_recomputations, cap_recomputations;
    pf_untouched_t *untouched;              /* largest bytes first */
    size_t n_untouched, cap_untouched;
    double recomputed_bytes, recomputed_count;
    double untouched_bytes, checked_bytes;
    double untouched_at_peak;               /* of the program's peak, bytes never touched */
    double resident_peak_bytes;             /* the peak less those */
    uint64_t content_records;               /* PF_REC_CONTENT records read (0: an older runtime, or off) */
    void *sweep;                            /* during the sweep only (pf_model_waste.c) */
} pf_waste_t;

/* A recomputation is a finding from this many matches on (three recorded objects of the same value): one
 * match could be two objects that happen to hold the same bytes (a default config loaded twice). */
#define PF_RECOMPUTE_MIN_MATCHES 2u
/* Untouched memory is a finding from this many bytes, and this share of what was looked at. */
#define PF_UNTOUCHED_MIN_BYTES (1024.0 * 1024.0)
#define PF_UNTOUCHED_MIN_SHARE 0.25

#endif /* PF_WASTE_INT_H */
