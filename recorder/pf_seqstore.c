/* pf_seqstore.c - word sequences as a tree of shared segments. See pf_seqstore.h. */
#include "pf_rec_int.h"     /* first: binds memcpy to the recorder's */
#include "pf_seqstore.h"

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
    for (uint32_t i = 0; i < n; i++)
        h = mix(h, words[i]);
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

/* Room for a node of n words: its handle, or 0 when the blocks are full. */
static uint32_t take_units(pf_seqstore_t *s, uint32_t n)
{
    uint32_t units = 1 + n;     /* the header is one unit */
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

/* The node (parent, words[0..n)), made when new; 0 when it cannot be. */
static uint32_t node_for(pf_seqstore_t *s, uint32_t parent, const uint64_t *words, uint32_t n)
{
    if ((!s->slots || (uint64_t)(s->n_nodes + 1) * 4 > (uint64_t)(s->slots_mask + 1) * 3) && grow_slots(s) != 0)
        return 0;
    uint64_t h = node_hash(parent, words, n), tag = h & ~(uint64_t)UINT32_MAX;
    uint32_t i = (uint32_t)(h >> 32) & s->slots_mask;
    for (; s->slots[i]; i = (i + 1) & s->slots_mask) {
        if ((s->slots[i] & ~(uint64_t)UINT32_MAX) != tag)
            continue;
        uint32_t have = (uint32_t)s->slots[i];
        const pf_seq_node_t *node = pf_seq_node(s, have);
        if (node->parent == parent && node->n == n && memcmp(node->words, words, (size_t)n * 8) == 0)
            return have;
    }
    uint32_t handle = take_units(s, n);
    if (!handle)
        return 0;
    pf_seq_node_t *node = (pf_seq_node_t *)(uintptr_t)pf_seq_node(s, handle);
    node->parent = parent;
    node->n = n;
    memcpy(node->words, words, (size_t)n * 8);
    s->slots[i] = tag | handle;
    s->n_nodes++;
    return handle;
}

int pf_seq_add(pf_seqstore_t *s, const uint64_t *words, uint32_t n, uint32_t *handle)
{
    uint32_t node = 0;
    for (uint32_t end = n; end > 0;) {
        uint32_t len = end >= PF_SEQ_SEGMENT ? PF_SEQ_SEGMENT : end;
        node = node_for(s, node, words + end - len, len);
        if (!node)
            return -1;
        end -= len;
    }
    *handle = node;
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
