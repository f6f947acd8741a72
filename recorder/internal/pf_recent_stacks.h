/* pf_recent_stacks.h - a thread's recent stacks, each kept flat with its interned id, so that a capture
 * that repeats one of them takes its id after one compare of flat words.
 *
 * Most allocations repeat one of a few stacks (a loop's lines, and under --native the C functions each
 * line calls in turn). Before this table, only the thread's last stack was kept flat; any other repeat
 * went through the hash of the whole capture, the stack cache and the check of its guess against the
 * interned stack's copy, kept as shared segments (pf_seqstore.h): a walk through two tables and a few
 * segments a stack, a third of the stack time of an --exact --native loop whose lines allocate from five
 * C call sites in turn (the last stack then almost never repeated).
 *
 * A capture (its Python frames raw: code objects and instruction offsets; its native IPs; its flags) is
 * found by a key from its counts, flags and innermost frames (pf_recent_key) in a set of two entries. An
 * entry holds the same: it is the capture when every Python frame has the same code object and offset,
 * each code object still has the identity fields it had (pf_codes.h: a code object freed and another made
 * at its address), and the native IPs and flags are the same: exactly the test the thread's last stack
 * passed before. A hit gives the id and the code ids the capture was given when it was filed.
 *
 * An entry is filed after the cache or the interning table gave the capture's id, or before it is known
 * (then it is the thread's pending entry, given its id by pf_recent_resolved, and never found before).
 * Stacks of more than PF_RECENT_MAX_PY Python frames, and those with a frame that has no code id, are not
 * kept. Per thread, in pages mapped on first use (RECENT_SETS x 2 entries of ~1.8 KiB: not in static TLS,
 * which a small thread stack must also hold) and unmapped as the thread ends.
 */
#ifndef PF_RECENT_STACKS_H
#define PF_RECENT_STACKS_H

#include <stdint.h>

#include "pf_rec_int.h"

#define PF_RECENT_MAX_PY 32u

/* The key a capture is filed and found under: its counts and flags, its two innermost Python frames and
 * two innermost native IPs (where stacks that repeat in turn differ). Never 0. */
static inline uint64_t pf_recent_key(const pf_stack_t *st, const pf_pyframe_t *frames, int n_py)
{
    const uint64_t K = 0x9E3779B97F4A7C15ull;
    uint64_t h = ((uint64_t)(uint32_t)n_py << 40 ^ (uint64_t)st->n_native << 24 ^ st->flags) * K;
    for (int i = 0; i < n_py && i < 2; i++)
        h = (h ^ (uint64_t)(uintptr_t)frames[i].code ^ (uint64_t)frames[i].lasti_bytes << 44) * K;
    for (int i = 0; i < st->n_native && i < 2; i++)
        h = (h ^ st->native[i]) * K;
    return (h ^ h >> 29) | 1;
}

/* 1 when the capture in st (n_native, native, flags) and frames[0..n_py) is a recent stack with a known
 * id: st's id, cache key and Python frames (code ids, offsets) are then the ones it was filed with. */
int pf_recent_find(uint64_t key, pf_stack_t *st, const pf_pyframe_t *frames, int n_py);

/* Files st (its code ids and cache key set; its id, or 0 when still to be found) as the capture of
 * frames[0..n_py), in place of its set's least recently used entry. */
void pf_recent_file(uint64_t key, const pf_stack_t *st, const pf_pyframe_t *frames, int n_py);

/* st, the thread's last filed capture, was given id (nothing when st is not that one). */
void pf_recent_resolved(const pf_stack_t *st, uint32_t id);

/* Forgets the thread's entries (a fork child: its stack ids start again). */
void pf_recent_forget(void);

#endif /* PF_RECENT_STACKS_H */
