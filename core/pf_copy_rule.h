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

/* 1 when a copy made its destination a duplicate of its source, the only copy a shared buffer could replace
 * (np.array(a), bytes(buf), str.encode() of ASCII text): it fills both objects but their headers and leaves
 * the same number of bytes after it in each (a terminator both have). A copy that builds a new value from
 * the source leaves more after it in the destination: a concatenation ('r' * 1000 + str(i)), a join, a
 * formatted string; so does a slice, which leaves more in the source. */
static inline int pf_copy_duplicates(uint64_t dst_offset, uint64_t dst_size, uint64_t src_offset, uint64_t src_size,
                                     uint64_t bytes)
{
    if (!pf_copy_fills_object(dst_offset, bytes, dst_size) || !pf_copy_fills_object(src_offset, bytes, src_size))
        return 0;
    uint64_t dst_after = dst_size - dst_offset > bytes ? dst_size - dst_offset - bytes : 0;
    uint64_t src_after = src_size - src_offset > bytes ? src_size - src_offset - bytes : 0;
    return dst_after == src_after;
}

#endif
