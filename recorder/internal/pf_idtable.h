/* pf_idtable.h - what code-object ids (pf_codes.c) and stack ids (pf_stacks.c) share: a table from a
 * 64-bit hash to a small id, and per id a fixed-size entry the owner fills, read lock-free and written under
 * the table's lock.
 *
 * Readers never lock: an entry is filled, then its slot is published (release) and never changes. A slot is
 * one word, the id and the hash's high half (which also picks the slot), so a reader reads both at once. The slot array grows by doubling when 3/4 full (the larger copy is built whole, then published);
 * the smaller ones stay mapped, since a reader may still be probing one, but their pages are given back
 * (MADV_DONTNEED: they read as empty slots from then on, and a reader that meets one misses, then asks
 * again under the lock, as for an id added since it began). So a lookup is a few probes whatever the number
 * of ids (with a fixed array of 64K slots a program making 100,000 code objects filled it, and every later
 * frame took the lock to find no room), and the table holds 8 bytes a slot of its current array only:
 * under --exact --native on a numpy program the 16-byte slots of every array grown through were 10 MB of
 * the program's resident memory.
 * Memory is raw mmap (this runs inside malloc): entries in blocks of PF_IDTABLE_BLOCK_IDS.
 */
#ifndef PF_IDTABLE_H
#define PF_IDTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "pf_sys.h"

#define PF_IDTABLE_BLOCK_IDS 4096u
#define PF_IDTABLE_MAX_BLOCKS 1024u         /* 4M ids at most */
#define PF_IDTABLE_MAX_ARRAYS 12u           /* 4K slots doubled 11 times: 8M slots, 64 MiB */

/* A slot: pf_idslot_make(hash, id); 0 = empty (ids start at 1). */
typedef uint64_t pf_idslot_t;

/* The hash's high half picks the slot and is kept in it, so an array twice larger can be filled from the
 * slots alone. */
static inline pf_idslot_t pf_idslot_make(uint64_t h, uint32_t id)
{
    return (h & ~(uint64_t)UINT32_MAX) | id;
}

typedef struct pf_idtable {
    uint32_t entry_bytes;   /* each id's entry: set before first use */
    pf_spinlock_t lock;     /* held by whoever adds; pf_idtable_lock */
    uint32_t used;          /* slots taken in the current array */
    uint32_t next_id;       /* 0 until the first add: ids start at 1 */
    uint32_t n_arrays;
    pf_idslot_t *arrays[PF_IDTABLE_MAX_ARRAYS];     /* every array mapped so far, the current one last */
    char *blocks[PF_IDTABLE_MAX_BLOCKS];            /* entries of ids [k * BLOCK_IDS + 1, ...] */
    uint64_t slots_mask;    /* the current array, as (its index in arrays << 32 | its slot count - 1): one
                               atomic load (acquire) gives a reader an array and its size together; 0: none */
} pf_idtable_t;

/* The entry of an id the table handed out (>= 1). */
static inline void *pf_idtable_entry(const pf_idtable_t *t, uint32_t id)
{
    uint32_t i = id - 1;
    char *block = __atomic_load_n(&t->blocks[i / PF_IDTABLE_BLOCK_IDS], __ATOMIC_ACQUIRE);
    return block + (size_t)(i % PF_IDTABLE_BLOCK_IDS) * t->entry_bytes;
}

/* Finds the id whose hash is h and for which same(entry, key) holds. Lock-free. Returns it, or 0. */
static inline uint32_t pf_idtable_find(const pf_idtable_t *t, uint64_t h,
                                       int (*same)(const void *entry, const void *key), const void *key)
{
    uint64_t sm = __atomic_load_n(&t->slots_mask, __ATOMIC_ACQUIRE);
    if (!sm)
        return 0;
    const pf_idslot_t *slots = t->arrays[sm >> 32];
    uint32_t mask = (uint32_t)sm;
    const uint64_t tag = pf_idslot_make(h, 0);
    for (uint32_t i = (uint32_t)(h >> 32) & mask;; i = (i + 1) & mask) {
        pf_idslot_t have = __atomic_load_n(&slots[i], __ATOMIC_ACQUIRE);
        if (!have)
            return 0;
        if ((have & ~(uint64_t)UINT32_MAX) == tag && same(pf_idtable_entry(t, (uint32_t)have), key))
            return (uint32_t)have;
    }
}

static inline uint64_t pf_idtable_hash_fix(uint64_t h)
{
    return h ? h : 1;   /* 0 marks an empty slot */
}

static inline void pf_idtable_lock(pf_idtable_t *t) { pf_spin_lock(&t->lock); }
static inline void pf_idtable_unlock(pf_idtable_t *t) { pf_spin_unlock(&t->lock); }

/* With the lock held, after pf_idtable_find missed: a new id and its entry (zeroed or reused memory) for the
 * caller to fill, or NULL (*id = 0) when the table is full or memory ran out. The id is not findable until
 * pf_idtable_publish; an id reserved and never published is simply skipped. */
void *pf_idtable_reserve(pf_idtable_t *t, uint32_t *id);

/* With the lock held: makes id findable under hash h (its entry filled). Returns 0, or -1 when the slot
 * array could not grow (the id then stays unfindable; its records were written, so it stays valid). */
int pf_idtable_publish(pf_idtable_t *t, uint64_t h, uint32_t id);

/* Ids handed out so far. */
static inline uint32_t pf_idtable_count(const pf_idtable_t *t)
{
    uint32_t n = __atomic_load_n(&t->next_id, __ATOMIC_RELAXED);
    return n ? n - 1 : 0;
}

/* Unmaps everything and forgets every id (a fork child; tests). The lock is released. */
void pf_idtable_reset(pf_idtable_t *t);

#endif /* PF_IDTABLE_H */
