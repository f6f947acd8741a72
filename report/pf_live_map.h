/* pf_live_map.h - the sweep's map of live objects: (process, address) key -> object index
 * (report/pf_live_map.c).
 *
 * Open addressing, linear probing, backward-shift removal; a key's home is in its 1 KiB block's window
 * (core/pf_addr_home.h), so neighbours that come and go together walk the array in order. In an exact
 * profile nearly every lookup misses the cache, so a slot holds all a lookup, insertion or removal reads
 * in one 16-byte entry: the key, the object's index and the slot's home (the shifts of a removal then
 * touch no second array and hash nothing). Where a key sits depends only on the sequence of puts and
 * removals and on `roomy`: the order a walk of the slots sees is part of the report (sums of sampled
 * estimates are added in it), so that placement must not change.
 */
#ifndef PF_LIVE_MAP_H
#define PF_LIVE_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "pf_addr_home.h"
#include "pf_util_int.h"

typedef struct pf_live_slot {
    uint64_t key1;      /* key + 1; 0: empty */
    uint32_t idx;       /* the object's index (sweeper_t.objs) */
    uint32_t home;      /* where the key's probe starts */
} pf_live_slot_t;

typedef struct pf_live_map {
    pf_live_slot_t *slots;
    size_t cap, len;
    /* Set before first use: grow at half full, not three quarters (shorter probe runs for twice the
     * memory: neighbours' windows overlap and run long at three quarters). It changes where keys sit. */
    int roomy;
} pf_live_map_t;

/* The most slots a map may have: homes are 32 bits (and a bigger one would not fit in memory anyway). */
#define PF_LIVE_MAP_MAX_CAP ((size_t)1 << 32)

/* The slot a lookup of key probes first (the map has slots). */
static inline size_t pf_live_home(const pf_live_map_t *m, uint64_t key)
{
    return (size_t)pf_home_in_window(pf_mix64(pf_home_block(key)), key) & (m->cap - 1);
}

/* The slot of key, or NULL when it is not in the map. */
static inline pf_live_slot_t *pf_live_get(const pf_live_map_t *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = pf_live_home(m, key);; i = (i + 1) & mask) {
        pf_live_slot_t *s = &m->slots[i];
        if (s->key1 == key + 1)
            return s;
        if (!s->key1)
            return NULL;
    }
}

/* Starts loading the slot a lookup of key probes first: a caller that knows its next keys early overlaps
 * their cache misses. */
static inline void pf_live_prefetch(const pf_live_map_t *m, uint64_t key)
{
    if (m->cap)
        __builtin_prefetch(&m->slots[pf_live_home(m, key)]);
}

/* key's slot, inserted (idx 0, *created = 1) when absent; the map grows first when full. */
pf_live_slot_t *pf_live_put(pf_live_map_t *m, uint64_t key, int *created);
/* As pf_live_put, but NULL (the map untouched) where inserting might grow the map first: a caller can
 * then look key up and insert it later, the map ending as if pf_live_put had been called then. */
pf_live_slot_t *pf_live_put_if_room(pf_live_map_t *m, uint64_t key, int *created);
/* Removes the entry in slot s (from pf_live_get or pf_live_put, nothing put or removed since). Inline:
 * every free of an exact profile. */
static inline void pf_live_del_at(pf_live_map_t *m, pf_live_slot_t *s)
{
    size_t mask = m->cap - 1, hole = (size_t)(s - m->slots);
    for (size_t j = (hole + 1) & mask; m->slots[j].key1; j = (j + 1) & mask)
        if (pf_shift_movable(hole, j, m->slots[j].home)) {    /* the home kept in the slot: no hash */
            m->slots[hole] = m->slots[j];
            hole = j;
        }
    m->slots[hole].key1 = 0;
    m->len--;
}
/* Removes key; 1 if it was there. */
int pf_live_del(pf_live_map_t *m, uint64_t key);
void pf_live_free(pf_live_map_t *m);

#endif /* PF_LIVE_MAP_H */
