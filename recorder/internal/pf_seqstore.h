/* pf_seqstore.h - the runtime's own copies of word sequences (a stack's Python frames, its native IPs),
 * kept as a tree of shared segments so that memory grows with the distinct segments, not with the stacks.
 *
 * The interned stacks are checked against these copies (a lookup's compare, the thread stack cache's
 * guess): they must stay readable, lock-free, for the life of the process. Kept whole, one after the
 * other, they were most of pyflow's resident memory: importing numpy under --exact --native makes
 * ~120,000 stacks (~30 Python frames each) over ~42,000 native parts (64 IPs), 50 MB of words, although
 * the stacks differ mostly in their innermost few frames.
 *
 * A sequence of n words (innermost first) is cut into segments of at most PF_SEQ_SEGMENT words counted
 * from its outer end: the outermost segment is its last PF_SEQ_SEGMENT words, and so on inward; the
 * innermost segment holds the 1..PF_SEQ_SEGMENT words left. Each segment is a node: its words
 * (innermost first) and its parent, the node of the segment just outside it (0 for the outermost). A
 * node is made once for each distinct (parent, words): two sequences with the same outer 8k words share
 * their k outer nodes. A sequence is named by its innermost node (its handle). On the numpy import
 * above: ~100,000 nodes, 5.5 MB. Reading a sequence back walks from the handle outward, a segment at a
 * time (8 words compared each), innermost first, so a compare stops at the first frame that
 * differs, usually in the first node.
 *
 * Adding takes the caller's lock (one writer at a time); reading is lock-free: a node is complete and
 * never changes before its handle is published by the caller (e.g. with release order in pf_idtable).
 * Memory is raw mmap (this runs inside malloc), in blocks of PF_SEQ_BLOCK_BYTES, at most
 * PF_SEQ_MAX_BLOCKS of them; past that, adding fails and the caller writes the stack inline.
 */
#ifndef PF_SEQSTORE_H
#define PF_SEQSTORE_H

#include <stdint.h>

#define PF_SEQ_SEGMENT 8u
#define PF_SEQ_BLOCK_BYTES (1u << 20)
#define PF_SEQ_MAX_BLOCKS 64u           /* 64 MiB of nodes at most */
#define PF_SEQ_UNIT_SHIFT 3u            /* a handle counts 8-byte units */
#define PF_SEQ_BLOCK_UNITS (PF_SEQ_BLOCK_BYTES >> PF_SEQ_UNIT_SHIFT)

/* A node: its parent's handle, its word count, then its words. */
typedef struct pf_seq_node {
    uint32_t parent;
    uint32_t n;
    uint64_t words[];
} pf_seq_node_t;

typedef struct pf_seqstore {
    char *blocks[PF_SEQ_MAX_BLOCKS];    /* stored with release order before any handle into them */
    uint32_t n_blocks;
    uint32_t block_used;                /* units used in blocks[n_blocks - 1] */
    uint64_t *slots;                    /* the writer's index of nodes: hash high half << 32 | handle */
    uint32_t slots_mask;                /* slot count - 1; 0: none yet */
    uint32_t n_nodes;
} pf_seqstore_t;

/* The node a handle (>= 1) names. */
static inline const pf_seq_node_t *pf_seq_node(const pf_seqstore_t *s, uint32_t handle)
{
    uint32_t unit = handle - 1;
    const char *block = __atomic_load_n(&s->blocks[unit / PF_SEQ_BLOCK_UNITS], __ATOMIC_ACQUIRE);
    return (const pf_seq_node_t *)(block + ((size_t)(unit % PF_SEQ_BLOCK_UNITS) << PF_SEQ_UNIT_SHIFT));
}

/* A word of a sequence given by the caller, which may hold it as another 8-byte type (a stack's frames). */
static inline uint64_t pf_seq_word(const uint64_t *words, uint32_t i)
{
    uint64_t w;
    __builtin_memcpy(&w, (const char *)words + (size_t)i * 8, 8);
    return w;
}

/* The node after `node` (handle h) on its way outward. pf_seq_add lays a sequence's new nodes side by side,
 * each followed by its parent: the guess that the parent is the next node in memory is mostly right, and
 * taken as a predicted branch it lets the walk go on before the parent's handle is loaded (each step
 * waited on the last one's loads: the thread stack cache's check of a 64-IP native part took twice as
 * long). */
static inline const pf_seq_node_t *pf_seq_outward(const pf_seqstore_t *s, const pf_seq_node_t *node, uint32_t *h)
{
    uint32_t next = *h + 1 + node->n;
    uint32_t parent = node->parent;
    *h = parent;
    if (__builtin_expect(parent == next, 1))
        return (const pf_seq_node_t *)(const void *)&node->words[node->n];
    return parent ? pf_seq_node(s, parent) : NULL;
}

/* 1 when the sequence of `handle` is words[0..n) (handle 0: the empty sequence). Lock-free. Word by word,
 * not memcmp: a node is at most 8 words, and a call per node doubled the thread stack cache's check. */
static inline int pf_seq_same(const pf_seqstore_t *s, uint32_t handle, const uint64_t *words, uint32_t n)
{
    uint32_t at = 0;
    const pf_seq_node_t *node = handle ? pf_seq_node(s, handle) : NULL;
    while (node) {
        uint32_t k = node->n;
        if (k > n - at)
            return 0;
        uint64_t differ = 0;
        if (__builtin_expect(k == PF_SEQ_SEGMENT, 1)) {     /* all but a sequence's innermost node */
            for (uint32_t i = 0; i < PF_SEQ_SEGMENT; i++)
                differ |= node->words[i] ^ pf_seq_word(words, at + i);
        } else {
            for (uint32_t i = 0; i < k; i++)
                differ |= node->words[i] ^ pf_seq_word(words, at + i);
        }
        if (differ)
            return 0;
        at += k;
        node = pf_seq_outward(s, node, &handle);
    }
    return at == n;
}

/* Copies the n words of the sequence of `handle` into out (n: the count it was added with). Lock-free. */
static inline void pf_seq_get(const pf_seqstore_t *s, uint32_t handle, uint64_t *out, uint32_t n)
{
    const pf_seq_node_t *node = handle ? pf_seq_node(s, handle) : NULL;
    for (uint32_t at = 0; node && at < n;) {
        for (uint32_t i = 0; i < node->n; i++)
            out[at + i] = node->words[i];
        at += node->n;
        node = pf_seq_outward(s, node, &handle);
    }
}

/* With the caller's lock held: the handle of words[0..n) into *handle, adding the nodes it lacks (0 for
 * n == 0). Returns 0, or -1 when memory ran out (nothing the caller can see was added; nodes made before
 * the failure stay, shared by later sequences). */
int pf_seq_add(pf_seqstore_t *s, const uint64_t *words, uint32_t n, uint32_t *handle);

/* Bytes of nodes held (tests, docs). */
static inline uint64_t pf_seq_bytes(const pf_seqstore_t *s)
{
    return s->n_blocks ? ((uint64_t)(s->n_blocks - 1) * PF_SEQ_BLOCK_UNITS + s->block_used) << PF_SEQ_UNIT_SHIFT : 0;
}

/* Unmaps everything and forgets every handle (a fork child; tests). */
void pf_seq_reset(pf_seqstore_t *s);

#endif /* PF_SEQSTORE_H */
