/* pf_objdense.h - the object table's dense part (recorder/pf_objdense.c): under --exact, the small
 * objects of the Python domains, by far the most a Python program has live, are kept in a map with a
 * 16-bit entry for every 32-byte granule of the address space, mapped where touched, instead of in the
 * hashed slots. They lie packed in pymalloc's arenas (or, with PYTHONMALLOC=malloc, in the heap), so
 * their entries are packed too: 2 bytes per 32 of the program's memory, where a hashed slot cost 8 at a
 * load of 3/8 to 3/4. An entry needs no key and no probe: an insert or a free is two dependent loads.
 *
 * A granule of 32 bytes, not the 16 of pymalloc's alignment, halves the map's pages (the largest part of
 * pyflow's own memory under --exact: 1.1 MiB of bench/workloads/indexing.py's 20 MiB peak at 16). Two
 * objects of more than 16 bytes cannot start in one granule while both are live (the first would overlap
 * the second), so only those are dense, and an entry says which half of its granule its object starts in;
 * blocks of 16 bytes or fewer, few in a Python program, go to the hashed slots. A new object whose granule
 * holds an entry of the other half therefore overlaps that entry's object, whose free was not seen (a
 * stale entry), and takes its place, as one at the same address always did.
 *
 * Entries are read and written with atomics, most without a lock (pf_objtable.c says when the lock of the
 * address's stripe is taken, and why that is safe). Only the sampled (default) mode leaves it off: its few
 * tracked objects lie scattered, each touching a page of entries of its own.
 */
#ifndef PF_OBJDENSE_H
#define PF_OBJDENSE_H

#include <stdint.h>

#include "pf_format.h"
#include "pf_recorder.h"    /* the leaf geometry and pf_objdense_has, which the free hooks ask */

/* An entry: 0 = no object starts in the granule; else (size + 1) | domain << 10 | no Python state << 12 |
 * truncated stack << 13 | half << 14 (PF_DENSE_HALF_SHIFT). Only exact allocations are dense: that flag is
 * implied. */
typedef uint16_t pf_dense_t;
_Static_assert(sizeof(pf_dense_t) == sizeof(**pf_objdense_dir), "pf_objdense_has reads the entries");
#define PF_DENSE_MIN_SIZE 17u               /* two such objects cannot start in one granule */
#define PF_DENSE_MAX_SIZE 512u              /* pymalloc's largest block */
#define PF_DENSE_DOMAIN_SHIFT 10u
#define PF_DENSE_FLAGS_SHIFT 12u
#define PF_DENSE_FLAGS (PF_ALLOC_NO_PYSTATE | PF_ALLOC_TRUNCATED)
_Static_assert(PF_DENSE_FLAGS >> 2 == 3u, "the two flags an entry keeps are bits 2 and 3");

/* 1 when an object with these facts has a dense entry (when the map is on): an exact allocation of a
 * Python domain of 17 to 512 bytes, 16-byte aligned, with no flag but the two its stack can add. */
static inline int pf_dense_fits(uint64_t addr, uint64_t size, uint32_t domain, uint32_t flags)
{
    return (addr & 15) == 0 && (addr >> 48) == 0 && size - PF_DENSE_MIN_SIZE <= PF_DENSE_MAX_SIZE - PF_DENSE_MIN_SIZE &&
           domain <= 2 && (flags & ~PF_DENSE_FLAGS) == PF_ALLOC_EXACT;
}

static inline pf_dense_t pf_dense_entry(uint64_t addr, uint64_t size, uint32_t domain, uint32_t flags)
{
    _Static_assert(PF_DENSE_HALF_SHIFT - 4 == PF_DENSE_FLAGS_SHIFT - 2, "the flags and the half move together");
    return (pf_dense_t)((size + 1) | domain << PF_DENSE_DOMAIN_SHIFT |
                        ((flags & PF_DENSE_FLAGS) | (addr & 16)) << (PF_DENSE_FLAGS_SHIFT - 2));
}

static inline uint64_t pf_dense_size(pf_dense_t e)
{
    return (uint64_t)(e & ((1u << PF_DENSE_DOMAIN_SHIFT) - 1)) - 1;
}

static inline uint32_t pf_dense_domain(pf_dense_t e)
{
    return (uint32_t)(e >> PF_DENSE_DOMAIN_SHIFT) & 3u;
}

static inline uint32_t pf_dense_flags(pf_dense_t e)
{
    return PF_ALLOC_EXACT | ((uint32_t)(e >> PF_DENSE_FLAGS_SHIFT) & 3u) << 2;
}

/* The address of the object whose entry e lies in the granule at granule_addr (32-byte aligned). */
static inline uint64_t pf_dense_addr(uint64_t granule_addr, pf_dense_t e)
{
    return granule_addr | (uint64_t)(e >> PF_DENSE_HALF_SHIFT & 1) << 4;
}

/* Turns the map on (it starts off) or off; off drops nothing already kept. Returns 0, or -errno when its
 * directory could not be mapped (it then stays off). */
int pf_dense_enable(int on);

/* 1 when the map is on. */
int pf_dense_on(void);

/* The entry of addr's granule (addr 16-byte aligned), mapping its leaf when create is set; NULL when it has
 * none (or the leaf could not be mapped). The entry may be another object's (pf_objdense_holds). */
pf_dense_t *pf_dense_at(uint64_t addr, int create);

/* Calls fn(addr, entry, arg) for every object of the dense map starting in [lo, hi), in address order. */
void pf_dense_each_in(uint64_t lo, uint64_t hi, void (*fn)(uint64_t addr, pf_dense_t e, void *arg), void *arg);

/* Calls fn(lo, hi, arg) with the span of every mapped leaf, in address order. */
void pf_dense_each_leaf(void (*fn)(uint64_t lo, uint64_t hi, void *arg), void *arg);

/* Gives back the pages of entries that lie wholly inside [addr, addr + bytes) and are all zero: called when
 * the program unmaps that span (pymalloc frees an arena once its last block is freed), before it does, so
 * that no new object can have an entry there yet. A page of entries covers 64 KiB of the program's address
 * space; without this the entries of every arena the program ever had would stay resident (churn.py: 8.9
 * MiB of entries at its peak for 26 MiB of live arenas, when entries were per 16 bytes). Pages that still
 * hold an entry (an object whose free pyflow did not see) stay. Returns the number of pages given back. */
uint32_t pf_dense_release(uint64_t addr, uint64_t bytes);

/* Leaves mapped, for tests; and a full reset (tests). */
uint32_t pf_dense_leaves(void);
void pf_dense_reset(void);

#endif /* PF_OBJDENSE_H */
