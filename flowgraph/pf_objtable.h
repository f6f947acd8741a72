/* pf_objtable.h - the table of live tracked objects (sampled allocations and those at or above the object
 * threshold), keyed by address.
 *
 * It runs inside the profiled process's allocator hooks, so: no malloc (memory comes from mmap), no lock
 * shared by all threads (the table is split into stripes, each with its own small lock and its own
 * open-addressing array that grows by itself), and a free of an untracked address (nearly every free) is
 * answered by one load from a counting filter without touching any lock.
 *
 * The filter has one byte per bucket; a bucket counts the live tracked addresses hashing to it. A count that
 * reaches 255 stays there (never decremented), which only costs a lock on later frees hitting that bucket.
 */
#ifndef PF_OBJTABLE_H
#define PF_OBJTABLE_H

#include <stdint.h>

#define PF_OBJTABLE_FILTER_BITS 20u
#define PF_OBJTABLE_STRIPES 64u

typedef struct pf_objinfo {
    uintptr_t addr;
    uint64_t size;
    uint32_t domain;
    uint32_t flags;
} pf_objinfo_t;

extern uint8_t *pf_objtable_filter;   /* NULL until pf_objtable_init() */

static inline uint64_t pf_objtable_hash(uintptr_t addr)
{
    return (uint64_t)addr * 0x9E3779B97F4A7C15ull;
}

/* 1 when addr may be tracked (the caller must then ask pf_objtable_remove/lookup), 0 when it surely is not. */
static inline int pf_objtable_maybe(const void *addr)
{
    const uint8_t *f = pf_objtable_filter;
    if (!f)
        return 0;
    return __atomic_load_n(&f[pf_objtable_hash((uintptr_t)addr) >> (64 - PF_OBJTABLE_FILTER_BITS)],
                           __ATOMIC_RELAXED) != 0;
}

/* Maps the filter and the stripes. Returns 0, or -errno when mmap failed (the table then stays empty and
 * every call below is a no-op that reports "not found"). Idempotent. */
int pf_objtable_init(void);

/* Records a live object. An address already present is overwritten (its old object was freed without the
 * hooks seeing it). Returns 0, or -ENOMEM when the stripe could not grow (the object is then untracked). */
int pf_objtable_insert(const pf_objinfo_t *obj);

/* Removes addr; on success copies what was stored into *out (may be NULL) and returns 1; returns 0 when
 * addr was not tracked. */
int pf_objtable_remove(uintptr_t addr, pf_objinfo_t *out);

/* Copies the object at addr into *out without removing it. Returns 1 when found, else 0. */
int pf_objtable_lookup(uintptr_t addr, pf_objinfo_t *out);

/* Number of live tracked objects (sum over stripes; approximate while other threads run). */
uint64_t pf_objtable_count(void);

/* Fork safety: prepare takes every stripe lock, parent releases them, child releases them (the child is
 * single-threaded and keeps the parent's objects: they are live in the child too). */
void pf_objtable_fork_prepare(void);
void pf_objtable_fork_parent(void);
void pf_objtable_fork_child(void);

/* Drops every object and unmaps the table (tests). */
void pf_objtable_reset(void);

#endif /* PF_OBJTABLE_H */
