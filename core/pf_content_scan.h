/* pf_content_scan.h - the fingerprint of an object's contents, for the recomputed-value finding (pure, no
 * globals: the runtime uses it at free, the unit tests on their own buffers).
 *
 * Bounded cost per object: the first PF_CONTENT_FULL_BYTES are hashed in full, the rest by
 * PF_CONTENT_STRIDE_WORDS words spread evenly to the end (the last word always), and the size. So an object
 * of up to 16 KiB is compared exactly (up to a 64-bit hash collision, 2^-64 a pair), and a larger one is
 * told apart from an earlier value only where they differ in a hashed word: a change confined to the
 * unsampled words of a large object (one element written into a 1 MiB array) is missed, and that object
 * would be taken for a repeat. The scan also says whether the words were all zero (a block never written
 * is untouched memory, not a recomputation) and whether many look like pointers (an array of object
 * pointers compares equal when the allocator hands the same addresses back for new objects of other values:
 * no verdict can be made from its bytes).
 */
#ifndef PF_CONTENT_SCAN_H
#define PF_CONTENT_SCAN_H

#include <stdint.h>
#include <string.h>

#include "pf_format.h"

typedef struct pf_content_scan {
    uint64_t hash;
    uint32_t words;         /* 8-byte words read */
    uint32_t pointer_words; /* of those, ones that look like a user-space pointer */
    int all_zero;
} pf_content_scan_t;

/* An 8-aligned value in [2^32, 2^47): where x86-64 and arm64 Linux put the heap, mappings and stacks; an
 * IEEE double there is a denormal, an integer array element a number above four billion. */
static inline int pf_content_looks_pointer(uint64_t w)
{
    return (w & 7u) == 0 && w >= (1ull << 32) && w < (1ull << 47);
}

static inline uint64_t pf_content_mix(uint64_t h, uint64_t w)
{
    h ^= w * 0x9E3779B97F4A7C15ull;
    h = (h << 29 | h >> 35) * 0xBF58476D1CE4E5B9ull;
    return h;
}

static inline void pf_content_word(pf_content_scan_t *s, uint64_t w)
{
    s->hash = pf_content_mix(s->hash, w);
    s->words++;
    s->pointer_words += (uint32_t)pf_content_looks_pointer(w);
    if (w)
        s->all_zero = 0;
}

/* Scans [p + skip, p + size). */
static inline void pf_content_scan(const void *p, uint64_t size, uint64_t skip, pf_content_scan_t *s)
{
    const unsigned char *b = (const unsigned char *)p;
    *s = (pf_content_scan_t){.hash = 0x6A09E667F3BCC908ull ^ size, .all_zero = 1};
    uint64_t full_end = size < PF_CONTENT_FULL_BYTES ? size : PF_CONTENT_FULL_BYTES;
    uint64_t i = skip;
    for (; i + 8 <= full_end; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        pf_content_word(s, w);
    }
    if (full_end == size) {
        if (i < size) {     /* a tail shorter than a word */
            uint64_t w = 0;
            memcpy(&w, b + i, (size_t)(size - i));
            pf_content_word(s, w);
        }
    } else {
        uint64_t span = size - 8 - full_end;
        /* rounded up to a word: at most PF_CONTENT_STRIDE_WORDS words */
        uint64_t step = ((span + PF_CONTENT_STRIDE_WORDS - 1) / PF_CONTENT_STRIDE_WORDS + 7) & ~7ull;
        for (uint64_t off = full_end; off < size - 8; off += step) {
            uint64_t w;
            memcpy(&w, b + off, 8);
            pf_content_word(s, w);
        }
        uint64_t w;
        memcpy(&w, b + size - 8, 8);
        pf_content_word(s, w);
    }
    s->hash = pf_content_mix(s->hash, s->words);
}

/* Contents that decide nothing: too many pointer-like words (one in 16). */
static inline int pf_content_pointerish(const pf_content_scan_t *s)
{
    return s->pointer_words * 16u > s->words;
}

#endif /* PF_CONTENT_SCAN_H */
