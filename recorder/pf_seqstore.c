/* pf_seqstore.c - word sequences as a tree of shared segments. See pf_seqstore.h. */
#include "pf_rec_int.h"     /* first: binds memcpy to the recorder's */
#include "pf_seqstore.h"

#include <string.h>
#include <sys/mman.h>

#include "pf_sys.h"

#define FIRST_SLOTS 4096u

static inline uint64_t mix(uint64_t h, uint64_t w)
{
    h ^= w * 0x9E3779B97F4A7C15ull;
    h = (h << 31) | (h >> 33);
    return h * 0xC2B2AE3D27D4EB4Full;
}

static uint64_t node_hash(uint32_t parent, const uint64_t *words, uint32_t n)
{
    uint64_t h = mix(0x165667B19E3779F9ull, (uint64_t)parent << 8 | n);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t w;     /* words may be a stack's frames, stored as another type */
        memcpy(&w, &words[i], sizeof w);
        h = mix(h, w);
    }
    h ^= h >> 29;
    return h;
}

/* Puts a slot (hash high half << 32 | handle) into an array of mask + 1 slots. */
static void slot_put(uint64_t *slots, uint32_t mask, uint64_t slot)
{
    uint32_t i = (uint32_t)(slot >> 32) & mask;
    while (slots[i])
        i = (i + 1) & mask;
    slots[i] = slot;
}

/* Doubles the index (or makes the first). Only the writer reads it: the old array goes at once. */
static int grow_slots(pf_seqstore_t *s)
{
    uint32_t n = s->slots ? (s->slots_mask + 1) * 2 : FIRST_SLOTS;
    if (n > (1u << 28))
        return -1;
    uint64_t *fresh = pf_sys_alloc_pages((size_t)n * sizeof *fresh);
    if (!fresh)
        return -1;
    if (s->slots) {
        for (uint32_t i = 0; i <= s->slots_mask; i++)
            if (s->slots[i])
                slot_put(fresh, n - 1, s->slots[i]);
        pf_sys_munmap(s->slots, (size_t)(s->slots_mask + 1) * sizeof *fresh);
    }
    s->slots = fresh;
    s->slots_mask = n - 1;
    return 0;
}

/* Room for `units` contiguous units: the handle of the first, or 0 when the blocks are full. */
static uint32_t take_units(pf_seqstore_t *s, uint32_t units)
{
    if (!s->n_blocks || s->block_used + units > PF_SEQ_BLOCK_UNITS) {
        if (s->n_blocks == PF_SEQ_MAX_BLOCKS)
            return 0;
        char *b = pf_sys_alloc_pages(PF_SEQ_BLOCK_BYTES);
        if (!b)
            return 0;
        __atomic_store_n(&s->blocks[s->n_blocks], b, __ATOMIC_RELEASE);
        s->n_blocks++;
        s->block_used = 0;
    }
    uint32_t unit = (s->n_blocks - 1) * PF_SEQ_BLOCK_UNITS + s->block_used;
    s->block_used += units;
    return unit + 1;
}

/* The node (parent, words[0..n)) if there is one, else 0. */
static uint32_t node_find(const pf_seqstore_t *s, uint64_t h, uint32_t parent, const uint64_t *words, uint32_t n)
{
    if (!s->slots)
        return 0;
    uint64_t tag = h & ~(uint64_t)UINT32_MAX;
    for (uint32_t i = (uint32_t)(h >> 32) & s->slots_mask; s->slots[i]; i = (i + 1) & s->slots_mask) {
        if ((s->slots[i] & ~(uint64_t)UINT32_MAX) != tag)
            continue;
        uint32_t have = (uint32_t)s->slots[i];
        const pf_seq_node_t *node = pf_seq_node(s, have);
        if (node->parent == parent && node->n == n && memcmp(node->words, words, (size_t)n * 8) == 0)
            return have;
    }
    return 0;
}

/* The words of the segment whose outer end is `to` (the words before it: the segments further in). */
static inline uint32_t segment_len(uint32_t to)
{
    return to >= PF_SEQ_SEGMENT ? PF_SEQ_SEGMENT : to;
}

int pf_seq_add(pf_seqstore_t *s, const uint64_t *words, uint32_t n, uint32_t *handle)
{
    /* the outer segments there are nodes for already */
    uint32_t parent = 0, end = n;
    while (end > 0) {
        uint32_t len = segment_len(end);
        uint32_t found = node_find(s, node_hash(parent, words + end - len, len), parent, words + end - len, len);
        if (!found)
            break;
        parent = found;
        end -= len;
    }
    if (!end) {
        *handle = parent;
        return 0;
    }
    /* The nodes of words[0..end), new, side by side: the innermost first, each followed by its parent, so
     * that a compare, which walks inner to outer, reads forward through memory. */
    uint32_t segs = (end + PF_SEQ_SEGMENT - 1) / PF_SEQ_SEGMENT;
    while (!s->slots || (uint64_t)(s->n_nodes + segs) * 4 > (uint64_t)(s->slots_mask + 1) * 3)
        if (grow_slots(s) != 0)
            return -1;
    uint32_t first = take_units(s, segs + end);     /* a header unit per node, a unit per word */
    if (!first)
        return -1;
    uint32_t inner_len = end - (segs - 1) * PF_SEQ_SEGMENT, at = first;
    for (uint32_t k = 0, from = 0; k < segs; k++) {
        uint32_t len = k ? PF_SEQ_SEGMENT : inner_len;
        pf_seq_node_t *node = (pf_seq_node_t *)(uintptr_t)pf_seq_node(s, at);
        uint32_t next = at + 1 + len;
        node->parent = k + 1 < segs ? next : parent;
        node->n = len;
        memcpy(node->words, words + from, (size_t)len * 8);
        at = next;
        from += len;
    }
    /* indexed once all are complete (only the writer reads the index, but a node's hash covers its parent) */
    at = first;
    for (uint32_t k = 0; k < segs; k++) {
        const pf_seq_node_t *node = pf_seq_node(s, at);
        uint64_t h = node_hash(node->parent, node->words, node->n);
        slot_put(s->slots, s->slots_mask, (h & ~(uint64_t)UINT32_MAX) | at);
        s->n_nodes++;
        at += 1 + node->n;
    }
    *handle = first;
    return 0;
}

void pf_seq_reset(pf_seqstore_t *s)
{
    for (uint32_t b = 0; b < s->n_blocks; b++)
        pf_sys_munmap(s->blocks[b], PF_SEQ_BLOCK_BYTES);
    if (s->slots)
        pf_sys_munmap(s->slots, (size_t)(s->slots_mask + 1) * sizeof *s->slots);
    memset(s, 0, sizeof *s);
}
