/* pf_sweep_recent_int.h - the sweep's table of blocks freed lately (pf_sweep_recent.c): what a realloc's
 * COPY needs of the block it just freed (where it was allocated), and the copies' chain a block returned by
 * a realloc takes on from the block it replaced (pf_sweep_kinds.c). */
#ifndef PF_SWEEP_RECENT_INT_H
#define PF_SWEEP_RECENT_INT_H

#include <stddef.h>
#include <stdint.h>

/* Where an object was allocated: what a copy's edge needs of its source (kept per address for freed
 * blocks, whose object slots are reused: a realloc's copy comes from the block it just freed). */
typedef struct alloc_site {
    int32_t line;
    uint32_t native;
} alloc_site_t;

/* Where a block freed lately was allocated, by its (proc, address) key. A realloc that moves a block
 * frees it and records the copy next, in the same thread: the copy's source is found here. One slot per
 * key (pf_recent_slot), overwritten by later frees; only a free of another block with the same slot, in
 * another thread, between a realloc's free and its copy (microseconds apart) could hide the source.
 * Keeping every freed address instead (a map) cost an --exact profile's sweep 14% of its time. */
#define PF_RECENT_FREES (1u << 16)
typedef struct recent_free {
    uint64_t key1;      /* key + 1; 0 = empty */
    alloc_site_t site;
    int64_t dst_copy1;  /* its copies' chain (live_obj_t.dst_copy) + 1, which the block a realloc returned
                           continues (pf_sweep_kinds.c); 0: none */
    int by_realloc;     /* its FREE said PF_FREE_BY_REALLOC */
} recent_free_t;

typedef struct pf_recent_frees {
    recent_free_t *slots;   /* PF_RECENT_FREES (2 MiB: on a huge page where the kernel allows) */
    /* Slots whose block a later allocation at its address may continue (dst_copy1 and by_realloc set):
     * every allocation asks, and nearly always none is pending; the count answers without touching the
     * table (a scattered read, a cache miss, at each allocation of an exact profile). A bit per slot
     * (8 KiB, in cache) says which they are: a free then only stores into its slot, reading nothing. */
    uint64_t pending;
    uint64_t *pending_bits;
} pf_recent_frees_t;

void pf_recent_init(pf_recent_frees_t *R);
void pf_recent_free_table(pf_recent_frees_t *R);

/* The slot of a (proc, address) key. Neighbouring addresses get neighbouring slots (the 16-byte granules
 * of one 1 KiB block in order, from a hash of the block), so a run of frees of neighbouring objects
 * stores into neighbouring cache lines, as the live map's homes do (core/pf_addr_home.h). */
static inline uint32_t pf_recent_slot(uint64_t key)
{
    uint64_t block = (key >> 10) * 0x9E3779B97F4A7C15ull;
    return (uint32_t)((block >> 40) + ((key >> 4) & 63)) & (PF_RECENT_FREES - 1);
}

/* The slot of a block freed lately at key, or NULL when another block has taken its slot since. */
static inline recent_free_t *pf_recent_find(const pf_recent_frees_t *R, uint64_t key)
{
    recent_free_t *r = &R->slots[pf_recent_slot(key)];
    return r->key1 == key + 1 ? r : NULL;
}

/* Slot s stops being pending (nothing when it was not). */
void pf_recent_unmark(pf_recent_frees_t *R, uint32_t s);

/* The block at key is freed: it takes its slot (allocated at site; dst_copy its copies' chain, -1: none).
 * Inline: every free of an exact profile. */
static inline void pf_recent_freed(pf_recent_frees_t *R, uint64_t key, alloc_site_t site, int64_t dst_copy)
{
    uint32_t s = pf_recent_slot(key);
    if (R->pending)
        pf_recent_unmark(R, s);     /* overwritten: whatever it held is lost */
    R->slots[s] = (recent_free_t){key + 1, site, dst_copy + 1, 0};
}

/* The FREE of the block at key said a realloc freed it (nothing when its slot was taken since). */
void pf_recent_by_realloc(pf_recent_frees_t *R, uint64_t key);

/* The copies' chain (>= 0) that a block now at the place of the block freed lately at key continues, taken
 * (a chain is continued once); -1: none. proven: a realloc's COPY says the new block came from key; else
 * only a block whose FREE said a realloc freed it is continued (the next allocation at its address). */
int64_t pf_recent_take_chain(pf_recent_frees_t *R, uint64_t key, int proven);

#endif /* PF_SWEEP_RECENT_INT_H */
