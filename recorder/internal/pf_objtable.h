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

#include "pf_recorder.h"   /* pf_objinfo_t and the filter the hooks test */

/* Maps the filter and the stripes. Returns 0, or -errno when mmap failed (the table then stays empty and
 * every call below is a no-op that reports "not found"). Idempotent. */
int pf_objtable_init(void);

/* Starts loading the dense entry or the slot an insert of that object (size, domain) will touch first, so
 * that a caller with other work to do (an allocation hook capturing the stack) does not wait for that cache
 * miss later. Reads the table without its lock: a stale answer only prefetches the wrong line. */
void pf_objtable_prefetch(uintptr_t addr, uint64_t size, uint32_t domain);

/* Records a live object (obj->serial is ignored: serials are handed out below). An address already present is overwritten (its old object was freed without the
 * hooks seeing it). Returns 0, or -ENOMEM when the stripe could not grow (the object is then untracked). */
int pf_objtable_insert(const pf_objinfo_t *obj);
/* pf_objtable_insert of a block just allocated: no site, serial or copy links. Inlined where it is defined
 * in its callers (link-time optimization): a small Python object's dense entry is a few loads and a store,
 * where the call with its pf_objinfo_t to fill was 90 instructions of every --exact allocation. */
int pf_objtable_insert_new(uintptr_t addr, uint64_t size, uint32_t domain, uint32_t flags);

/* Removes addr; on success copies what was stored into *out (may be NULL) and returns 1; returns 0 when
 * addr was not tracked. */
int pf_objtable_remove(uintptr_t addr, pf_objinfo_t *out);

/* Copies the object at addr into *out without removing it. Returns 1 when found, else 0. An object first
 * looked up here gets its serial now (and a wide record: pf_objtable.c); out->serial is 0 only where no
 * record could be had. remove and each give the serial of an object that has one, else 0. */
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

/* Turns the dense map of small Python objects on or off (pf_objdense.h; --exact turns it on). Returns 0,
 * or -errno when it could not be mapped (objects then go to the hashed slots). */
int pf_objtable_dense(int on);

/* Bytes the table has mapped for its slots and pools (not its filter), for tests and measurements. */
uint64_t pf_objtable_bytes(void);

/* Fork safety: prepare takes every stripe lock, parent releases them, child releases them (the child is
 * single-threaded and keeps the parent's objects: they are live in the child too). */
void pf_objtable_fork_prepare(void);
void pf_objtable_fork_parent(void);
void pf_objtable_fork_child(void);

/* The serial the next inserted object will get. */
uint64_t pf_objtable_next_serial(void);

/* Drops every object and unmaps the table (tests). */
void pf_objtable_reset(void);

#endif /* PF_OBJTABLE_H */
