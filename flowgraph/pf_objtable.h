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
 * Buckets are picked by address bits, not by a hash, on purpose: a program frees objects that lie close
 * together (a pymalloc pool, an arena), so consecutive frees read the same cache line of the filter. With
 * a scattering hash every free was a cache miss (measured: 8% of a pure-Python workload's time).
 */
#ifndef PF_OBJTABLE_H
#define PF_OBJTABLE_H

#include <stdint.h>

#define PF_OBJTABLE_FILTER_BITS 20u
#define PF_OBJTABLE_STRIPES 64u

/* A recorded copy an object took part in, kept on both ends so that whichever is freed first can compare
 * the two buffers (the redundant-copy verdict). An object keeps its PF_OBJ_LINKS most recent copies (a
 * source copied twice, say: b = bytes(a); c = bytearray(a)). */
#define PF_OBJ_LINKS 3
typedef struct pf_copylink {
    uint64_t copy_id;       /* 0 = none */
    uintptr_t peer_obj;     /* start of the other object (its key here) */
    uint64_t peer_serial;   /* and its serial: the address may hold another object by now */
    uintptr_t peer_data;    /* first copied byte in the other object */
    uintptr_t self_data;    /* first copied byte in this object */
    uint64_t len;
} pf_copylink_t;

typedef struct pf_objinfo {
    uintptr_t addr;
    uint64_t size;
    uint32_t domain;
    uint32_t flags;
    uint64_t serial;        /* set by pf_objtable_insert: unique per tracked object */
    pf_copylink_t link[PF_OBJ_LINKS];
} pf_objinfo_t;

extern uint8_t *pf_objtable_filter;   /* NULL until pf_objtable_init() */

static inline uint64_t pf_objtable_hash(uintptr_t addr)
{
    return (uint64_t)addr * 0x9E3779B97F4A7C15ull;
}

/* The filter bucket of an address: 16-byte granules (malloc's alignment) in 16 MiB windows; each window
 * starts at a scrambled, cache-line aligned offset, so regions that are 16 MiB multiples apart (glibc's
 * thread arenas are 64 MiB aligned) do not share buckets. */
static inline uint32_t pf_objtable_bucket(uintptr_t addr)
{
    uint64_t window = (uint64_t)(addr >> 24) * 0x9E3779B97F4A7C15ull;
    return (uint32_t)((addr >> 4) + (window >> 20)) & ((1u << PF_OBJTABLE_FILTER_BITS) - 1);
}

/* 1 when addr may be tracked (the caller must then ask pf_objtable_remove/lookup), 0 when it surely is not. */
static inline int pf_objtable_maybe(const void *addr)
{
    const uint8_t *f = pf_objtable_filter;
    if (!f)
        return 0;
    return __atomic_load_n(&f[pf_objtable_bucket((uintptr_t)addr)], __ATOMIC_RELAXED) != 0;
}

/* Maps the filter and the stripes. Returns 0, or -errno when mmap failed (the table then stays empty and
 * every call below is a no-op that reports "not found"). Idempotent. */
int pf_objtable_init(void);

/* Starts loading the slot an insert of addr will probe first, so that a caller with other work to do
 * (an allocation hook capturing the stack) does not wait for that cache miss later. Reads the table
 * without its lock: a stale answer only prefetches the wrong line. */
void pf_objtable_prefetch(uintptr_t addr);

/* Records a live object (obj->serial is assigned here). An address already present is overwritten (its old object was freed without the
 * hooks seeing it). Returns 0, or -ENOMEM when the stripe could not grow (the object is then untracked). */
int pf_objtable_insert(const pf_objinfo_t *obj);

/* Removes addr; on success copies what was stored into *out (may be NULL) and returns 1; returns 0 when
 * addr was not tracked. */
int pf_objtable_remove(uintptr_t addr, pf_objinfo_t *out);

/* Copies the object at addr into *out without removing it. Returns 1 when found, else 0. */
int pf_objtable_lookup(uintptr_t addr, pf_objinfo_t *out);

/* Finds the live object whose first bytes contain addr: addr itself, or up to max_back bytes before it
 * (in 8-byte steps: Python objects keep their data a small header away from their start, e.g. bytes).
 * Returns 1 and fills *out, else 0. */
int pf_objtable_find_start(uintptr_t addr, uint64_t max_back, pf_objinfo_t *out);

/* Adds a copy link to the live object at addr, in a free slot or over its oldest link. Returns 1, or 0
 * when addr is not tracked or no link block could be had (links are kept in a pool beside the table, at
 * most 256K objects with links per stripe, 16M in all: past that, the link is not kept). */
int pf_objtable_set_link(uintptr_t addr, const pf_copylink_t *link);

/* Runs fn(obj, arg) with the object at addr held live (its stripe locked: a concurrent free of it waits).
 * fn may change the object's links, and must not call into the table. Returns fn's result, or -1 when addr is not tracked. */
int pf_objtable_with_object(uintptr_t addr, int (*fn)(pf_objinfo_t *obj, void *arg), void *arg);

/* Calls fn(obj, arg) for each live object of at least min_size bytes, one stripe locked at a time (a
 * concurrent free waits); obj carries no links. fn must not call into the table. For the exit-time look at
 * what is still live (pf_content.c). */
void pf_objtable_each(uint64_t min_size, void (*fn)(const pf_objinfo_t *obj, void *arg), void *arg);

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
