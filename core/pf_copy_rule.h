/* pf_copy_rule.h - which copies can be redundant: one rule for the runtime, which judges them, and the
 * reporter, which extrapolates the verdicts over an edge's copies. */
#ifndef PF_COPY_RULE_H
#define PF_COPY_RULE_H

#include <stdint.h>

/* How far before a copied address an object may start and still own it (CPython object headers). */
#define PF_COPY_MAX_HEADER 64u

/* 1 when a copy of `bytes` at `offset` into an object of `size` bytes fills it (but its header): only such
 * a copy can be a buffer too many (np.array(a), bytes(buf), a slice). A piece copied into a larger object
 * (numpy's take gathering elements one memmove each, a concatenation, a buffer being built) made what no
 * share of the source could be, however unmodified both stay: judged, the first such piece stood for
 * millions (pandas' merge: 80 MB of 40-byte moves called redundant). */
static inline int pf_copy_fills_object(uint64_t offset, uint64_t bytes, uint64_t size)
{
    if (offset > PF_COPY_MAX_HEADER || offset >= size)
        return 0;
    uint64_t len = bytes < size - offset ? bytes : size - offset;
    return len + PF_COPY_MAX_HEADER >= size - size / 8;
}

#endif
