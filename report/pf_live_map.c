/* pf_live_map.c - the sweep's map of live objects (see pf_live_map.h). */
#include "pf_live_map.h"

#include <stdio.h>
#include <stdlib.h>

#include "pf_util_int.h"

/* A map's slots are on huge pages from 4 MiB on (pf_xcalloc_huge): its lookups are scattered, and with
 * 4 KiB pages nearly each one also missed the TLB (a page walk, dear in a VM). A smaller map is in cache. */
static int on_huge_pages(size_t cap)
{
    return cap * sizeof(pf_live_slot_t) >= ((size_t)4 << 20);
}

static void free_slots(pf_live_slot_t *slots, size_t cap)
{
    if (on_huge_pages(cap))
        pf_free_huge(slots, cap * sizeof *slots);
    else
        free(slots);
}

void pf_live_free(pf_live_map_t *m)
{
    free_slots(m->slots, m->cap);
    m->slots = NULL;
    m->cap = m->len = 0;
}

/* The empty slot that ends key's probe from its home (key is absent), or key's own slot. */
static size_t probe_from(const pf_live_map_t *m, uint64_t key, size_t i)
{
    size_t mask = m->cap - 1;
    while (m->slots[i].key1 && m->slots[i].key1 != key + 1)
        i = (i + 1) & mask;
    return i;
}

static pf_live_slot_t *new_slots(size_t cap)
{
    return pf_xcalloc_table(cap, sizeof(pf_live_slot_t), on_huge_pages(cap));
}

static void grow(pf_live_map_t *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    if (cap > PF_LIVE_MAP_MAX_CAP) {
        fprintf(stderr, "pyflow: more than %zu live objects at once: too many to build the report\n",
                PF_LIVE_MAP_MAX_CAP / 2);
        exit(1);
    }
    pf_live_map_t bigger = {.slots = new_slots(cap), .cap = cap, .len = m->len, .roomy = m->roomy};
    for (size_t i = 0; i < m->cap; i++) {   /* in slot order: where keys land depends on it */
        const pf_live_slot_t *s = &m->slots[i];
        if (!s->key1)
            continue;
        size_t h = pf_live_home(&bigger, s->key1 - 1);
        bigger.slots[probe_from(&bigger, s->key1 - 1, h)] = (pf_live_slot_t){s->key1, s->idx, (uint32_t)h};
    }
    free_slots(m->slots, m->cap);
    *m = bigger;
}

static int full(const pf_live_map_t *m)
{
    return m->roomy ? (m->len + 1) * 2 > m->cap : (m->len + 1) * 4 > m->cap * 3;
}

static pf_live_slot_t *put_in_room(pf_live_map_t *m, uint64_t key, int *created)
{
    size_t h = pf_live_home(m, key);
    pf_live_slot_t *s = &m->slots[probe_from(m, key, h)];
    int fresh = !s->key1;
    if (created)
        *created = fresh;
    if (fresh) {
        *s = (pf_live_slot_t){key + 1, 0, (uint32_t)h};
        m->len++;
    }
    return s;
}

pf_live_slot_t *pf_live_put(pf_live_map_t *m, uint64_t key, int *created)
{
    if (full(m))
        grow(m);
    return put_in_room(m, key, created);
}

pf_live_slot_t *pf_live_put_if_room(pf_live_map_t *m, uint64_t key, int *created)
{
    return full(m) ? NULL : put_in_room(m, key, created);
}

int pf_live_del(pf_live_map_t *m, uint64_t key)
{
    pf_live_slot_t *s = pf_live_get(m, key);
    if (!s)
        return 0;
    pf_live_del_at(m, s);
    return 1;
}
