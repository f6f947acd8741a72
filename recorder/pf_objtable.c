/* pf_objtable.c - live tracked objects by address: striped open-addressing tables plus a counting filter.
 *
 * Each stripe is a linear-probing array of slots with backward-shift deletion (no tombstones, so a stripe
 * never degrades under churn), doubled under the stripe's lock when 3/4 full. Memory comes from raw mmap:
 * this code runs inside malloc.
 *
 * A slot holds only what every object has (24 bytes); the copy links, which few objects ever get, live in
 * a per-stripe pool of link blocks that a slot refers to by index. With the links in the slot (176 bytes)
 * an --exact run of a pure-Python workload spent a third of its time in the table's cache misses and page
 * faults. The table is resident in the program, and under --exact it holds every live object: at 32 bytes
 * a slot it was 35 MB of bench/workloads/churn.py's 86 MB peak (47 MB plain), hence the packed slot.
 */
#include "pf_objtable.h"

#include <errno.h>
#include <string.h>

#include "pf_addr_home.h"
#include "pf_sys.h"

#define PF_STRIPE_INITIAL_SLOTS 1024u
#define PF_FILTER_BYTES (1u << PF_OBJTABLE_FILTER_BITS)
#define PF_FILTER_SATURATED 255u
#define PF_LINK_CHUNK_BLOCKS 256u       /* link blocks per mapped chunk (36 KiB) */
#define PF_LINK_MAX_CHUNKS 1024u        /* per stripe: 256K objects with links, 16M in all */

#define PF_OBJ_SIZE_MAX ((1ull << 48) - 1)    /* more than a 47-bit address space holds */

typedef struct pf_objslot {
    uintptr_t addr : 48;    /* 0: empty; user addresses are below 2^47 (2^48 on 5-level-free arm64) */
    uintptr_t site : 16;    /* --aggregate: 1 + the object's stack id (pf_aggregate.c); 0: none */
    uint64_t size : 48, domain : 8, flags : 8;
    uint32_t serial;        /* the serial's low 32 bits: all a copy link needs to tell a reused address */
    uint32_t links;         /* 1 + index of the object's link block in its stripe's pool; 0: no links */
} pf_objslot_t;
_Static_assert(sizeof(pf_objslot_t) == 24, "a slot is resident for every live object under --exact");

typedef union pf_linkblock {
    pf_copylink_t link[PF_OBJ_LINKS];
    uint32_t next_free;     /* while on the free list: 1 + index of the next free block, 0 = end */
} pf_linkblock_t;

typedef struct pf_stripe {
    pf_spinlock_t lock;
    uint32_t mask;          /* slots - 1; 0 when not allocated yet */
    uint64_t used;
    pf_objslot_t *slots;
    pf_linkblock_t **chunks;    /* PF_LINK_MAX_CHUNKS pointers, mapped with the first link block */
    uint32_t blocks;            /* link blocks handed out so far (free or in use) */
    uint32_t free_block;        /* 1 + index of the first free block; 0 = none */
} __attribute__((aligned(64))) pf_stripe_t;

uint8_t *pf_objtable_filter;
static uint64_t next_serial = 1;
static pf_stripe_t pf_stripes[PF_OBJTABLE_STRIPES];

/* Stripes and slots need good low bits (page-aligned addresses have 12 zero low bits): a full mixer. */
static inline uint64_t mix_of(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

/* The stripe is chosen by the 1 MiB region an address lies in, not by the address's own hash: a
 * program allocates and frees neighbours together (a pymalloc arena, a thread's malloc arena), and keeping
 * them in one stripe keeps the probes in one array, whose pages then stay in the TLB and its lines in
 * cache. Threads mostly allocate in regions of their own, so they still mostly take different locks. */
static inline pf_stripe_t *stripe_of(uintptr_t addr)
{
    return &pf_stripes[mix_of(pf_objtable_hash(addr >> 20)) & (PF_OBJTABLE_STRIPES - 1)];
}

/* An address's home slot: in its 1 KiB block's window (core/pf_addr_home.h). pyflow run --exact on
 * bench/workloads/churn.py took 0.86x the time it took with fully hashed homes. */
static inline uint32_t slot_of(uintptr_t addr, uint32_t mask)
{
    return (uint32_t)pf_home_in_window(mix_of(pf_objtable_hash(pf_home_block(addr))) >> 8, addr) & mask;
}

static void filter_inc(uintptr_t addr)
{
    uint8_t *b = &pf_objtable_filter[pf_objtable_bucket(addr)];
    uint8_t v = __atomic_load_n(b, __ATOMIC_RELAXED);
    while (v != PF_FILTER_SATURATED &&
           !__atomic_compare_exchange_n(b, &v, (uint8_t)(v + 1), 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

static void filter_dec(uintptr_t addr)
{
    uint8_t *b = &pf_objtable_filter[pf_objtable_bucket(addr)];
    uint8_t v = __atomic_load_n(b, __ATOMIC_RELAXED);
    while (v != PF_FILTER_SATURATED && v != 0 &&
           !__atomic_compare_exchange_n(b, &v, (uint8_t)(v - 1), 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

int pf_objtable_init(void)
{
    if (__atomic_load_n(&pf_objtable_filter, __ATOMIC_ACQUIRE))
        return 0;
    uint8_t *f = pf_sys_alloc_pages(PF_FILTER_BYTES);
    if (!f)
        return -errno;
    uint8_t *expected = NULL;
    if (!__atomic_compare_exchange_n(&pf_objtable_filter, &expected, f, 0, __ATOMIC_RELEASE,
                                     __ATOMIC_ACQUIRE))
        pf_sys_munmap(f, PF_FILTER_BYTES);
    return 0;
}

static pf_linkblock_t *block_at(const pf_stripe_t *s, uint32_t ref)
{
    uint32_t i = ref - 1;
    return &s->chunks[i / PF_LINK_CHUNK_BLOCKS][i % PF_LINK_CHUNK_BLOCKS];
}

/* A link block for a slot (the stripe locked). Returns its reference, or 0 when no memory is left. */
static uint32_t block_new(pf_stripe_t *s)
{
    if (s->free_block) {
        uint32_t ref = s->free_block;
        s->free_block = block_at(s, ref)->next_free;
        return ref;
    }
    if (!s->chunks && !(s->chunks = pf_sys_alloc_pages(PF_LINK_MAX_CHUNKS * sizeof *s->chunks)))
        return 0;
    uint32_t chunk = s->blocks / PF_LINK_CHUNK_BLOCKS;
    if (chunk >= PF_LINK_MAX_CHUNKS)
        return 0;
    if (!s->chunks[chunk] &&
        !(s->chunks[chunk] = pf_sys_alloc_pages(PF_LINK_CHUNK_BLOCKS * sizeof(pf_linkblock_t))))
        return 0;
    return ++s->blocks;
}

static void block_free(pf_stripe_t *s, uint32_t ref)
{
    block_at(s, ref)->next_free = s->free_block;
    s->free_block = ref;
}

static int links_empty(const pf_copylink_t *links)
{
    for (int k = 0; k < PF_OBJ_LINKS; k++)
        if (links[k].copy_id)
            return 0;
    return 1;
}

/* Keeps links as slot's links: in its block (one is taken when needed; none is kept for no links).
 * Returns 0, or -ENOMEM when a needed block could not be had (the object then has no links). */
static int store_links(pf_stripe_t *s, pf_objslot_t *slot, const pf_copylink_t *links)
{
    if (links_empty(links)) {
        if (slot->links)
            block_free(s, slot->links);
        slot->links = 0;
        return 0;
    }
    if (!slot->links && !(slot->links = block_new(s)))
        return -ENOMEM;
    memcpy(block_at(s, slot->links)->link, links, sizeof(pf_copylink_t) * PF_OBJ_LINKS);
    return 0;
}

static void slot_info(const pf_stripe_t *s, const pf_objslot_t *slot, pf_objinfo_t *out)
{
    out->addr = slot->addr;
    out->size = slot->size;
    out->serial = slot->serial;
    out->domain = slot->domain;
    out->flags = slot->flags;
    out->site = slot->site;
    if (slot->links) {
        memcpy(out->link, block_at(s, slot->links)->link, sizeof out->link);
    } else {
        for (int k = 0; k < PF_OBJ_LINKS; k++)
            out->link[k].copy_id = 0;   /* no link: what else a link holds is read only when it has an id */
    }
}

/* Inserts into a stripe whose lock is held and which has room. */
static pf_objslot_t *stripe_put(pf_stripe_t *s, const pf_objslot_t *obj, int *was_present)
{
    uint32_t i = slot_of(obj->addr, s->mask);
    for (;;) {
        pf_objslot_t *slot = &s->slots[i];
        if (slot->addr == 0) {
            *slot = *obj;
            s->used++;
            *was_present = 0;
            return slot;
        }
        if (slot->addr == obj->addr) {
            if (slot->links)
                block_free(s, slot->links);
            *slot = *obj;
            *was_present = 1;
            return slot;
        }
        i = (i + 1) & s->mask;
    }
}

/* A stripe's array; from 4 MiB (an --exact run with millions of live objects) on huge pages. */
#define PF_STRIPE_HUGE_BYTES ((size_t)4 << 20)

static pf_objslot_t *slots_alloc(uint32_t slots)
{
    size_t bytes = (size_t)slots * sizeof(pf_objslot_t);
    return bytes >= PF_STRIPE_HUGE_BYTES ? pf_sys_alloc_huge(bytes) : pf_sys_alloc_pages(bytes);
}

/* Doubles (or first allocates) a stripe's array. Returns 0 or -ENOMEM; the lock is held. */
static int stripe_grow(pf_stripe_t *s)
{
    uint32_t old_slots = s->mask ? s->mask + 1 : 0;
    uint32_t new_slots = old_slots ? old_slots * 2 : PF_STRIPE_INITIAL_SLOTS;
    pf_objslot_t *fresh = slots_alloc(new_slots);
    if (!fresh)
        return -ENOMEM;
    pf_objslot_t *old = s->slots;
    s->slots = fresh;
    s->mask = new_slots - 1;
    s->used = 0;
    for (uint32_t i = 0; i < old_slots; i++) {
        if (old[i].addr) {
            int dup;
            stripe_put(s, &old[i], &dup);
        }
    }
    if (old)
        pf_sys_munmap(old, (size_t)old_slots * sizeof(pf_objslot_t));
    return 0;
}

void pf_objtable_prefetch(uintptr_t addr)
{
    const pf_stripe_t *s = stripe_of(addr);
    pf_objslot_t *slots = __atomic_load_n(&s->slots, __ATOMIC_RELAXED);
    uint32_t mask = __atomic_load_n(&s->mask, __ATOMIC_RELAXED);
    if (slots)
        __builtin_prefetch(&slots[slot_of(addr, mask)], 1);
}

/* Serials come to each thread in blocks: one shared counter bumped for every insert was a cache line every
 * recording thread wrote. Unique all the same, which is all a serial has to be. */
#define PF_SERIAL_BLOCK 4096u

static __thread struct {
    uint64_t next, end;     /* this thread's block: [next, end) */
} serials __attribute__((tls_model("initial-exec")));

static uint64_t take_serial(void)
{
    if (PF_UNLIKELY(serials.next == serials.end)) {
        serials.next = __atomic_fetch_add(&next_serial, PF_SERIAL_BLOCK, __ATOMIC_RELAXED);
        serials.end = serials.next + PF_SERIAL_BLOCK;
    }
    return serials.next++;
}

int pf_objtable_insert(const pf_objinfo_t *obj)
{
    if (!pf_objtable_filter || obj->addr == 0)
        return -ENOMEM;
    pf_stripe_t *s = stripe_of(obj->addr);
    pf_spin_lock(&s->lock);
    if ((s->used + 1) * 4 > (uint64_t)(s->mask ? s->mask + 1 : 0) * 3 && stripe_grow(s) < 0) {
        pf_spin_unlock(&s->lock);
        return -ENOMEM;
    }
    int was_present;
    pf_objslot_t rec = {.addr = obj->addr, .site = (uint16_t)obj->site,
                        .size = obj->size < PF_OBJ_SIZE_MAX ? obj->size : PF_OBJ_SIZE_MAX,
                        .domain = (uint8_t)obj->domain, .flags = (uint8_t)obj->flags, .serial = take_serial()};
    store_links(s, stripe_put(s, &rec, &was_present), obj->link);
    /* Count in the filter before the lock is released, so a concurrent free of this address that misses
     * the filter can only be a free of an older block (which the hooks already saw). */
    if (!was_present)
        filter_inc(obj->addr);
    pf_spin_unlock(&s->lock);
    return 0;
}

/* Finds addr in a locked stripe. Returns the slot index or -1. */
static int64_t stripe_find(const pf_stripe_t *s, uintptr_t addr)
{
    if (!s->mask)
        return -1;
    uint32_t i = slot_of(addr, s->mask);
    for (;;) {
        uintptr_t a = s->slots[i].addr;
        if (a == addr)
            return i;
        if (a == 0)
            return -1;
        i = (i + 1) & s->mask;
    }
}

/* Backward-shift deletion: pull later members of the probe run into the hole so lookups never need
 * tombstones. */
static void stripe_erase(pf_stripe_t *s, uint32_t hole)
{
    uint32_t i = hole;
    for (;;) {
        i = (i + 1) & s->mask;
        uintptr_t a = s->slots[i].addr;
        if (a == 0)
            break;
        uint32_t home = slot_of(a, s->mask);
        /* The member at i may move into the hole when its home is not in (hole, i] cyclically. */
        int movable = hole <= i ? (home <= hole || home > i) : (home <= hole && home > i);
        if (movable) {
            s->slots[hole] = s->slots[i];
            hole = i;
        }
    }
    s->slots[hole].addr = 0;
    s->used--;
}

/* Locks addr's stripe and looks addr up in it. Returns the locked stripe with the slot index in *slot
 * (-1 when absent), or NULL (nothing locked) when there is no table. */
static pf_stripe_t *lock_and_find(uintptr_t addr, int64_t *slot)
{
    if (!pf_objtable_filter || addr == 0)
        return NULL;
    pf_stripe_t *s = stripe_of(addr);
    pf_spin_lock(&s->lock);
    *slot = stripe_find(s, addr);
    return s;
}

int pf_objtable_remove(uintptr_t addr, pf_objinfo_t *out)
{
    int64_t i;
    pf_stripe_t *s = lock_and_find(addr, &i);
    if (!s)
        return 0;
    if (i < 0) {
        pf_spin_unlock(&s->lock);
        return 0;
    }
    if (out)
        slot_info(s, &s->slots[i], out);
    if (s->slots[i].links)
        block_free(s, s->slots[i].links);
    stripe_erase(s, (uint32_t)i);
    filter_dec(addr);
    pf_spin_unlock(&s->lock);
    return 1;
}

int pf_objtable_lookup(uintptr_t addr, pf_objinfo_t *out)
{
    int64_t i;
    pf_stripe_t *s = lock_and_find(addr, &i);
    if (!s)
        return 0;
    if (i >= 0 && out)
        slot_info(s, &s->slots[i], out);
    pf_spin_unlock(&s->lock);
    return i >= 0;
}

int pf_objtable_find_start(uintptr_t addr, uint64_t max_back, pf_objinfo_t *out)
{
    for (uint64_t back = 0; back <= max_back && back <= addr; back += 8) {
        uintptr_t start = addr - back;
        if (pf_objtable_maybe((const void *)start) && pf_objtable_lookup(start, out) &&
            addr < start + out->size)
            return 1;
    }
    return 0;
}

int pf_objtable_set_link(uintptr_t addr, const pf_copylink_t *link)
{
    int64_t i;
    pf_stripe_t *s = lock_and_find(addr, &i);
    if (!s)
        return 0;
    int kept = i >= 0;
    if (kept) {
        pf_objinfo_t obj;
        slot_info(s, &s->slots[i], &obj);
        pf_copylink_t *links = obj.link;
        int pick = 0;   /* a free slot, else the oldest (smallest copy id) */
        for (int k = 0; k < PF_OBJ_LINKS; k++) {
            if (!links[k].copy_id) {
                pick = k;
                break;
            }
            if (links[k].copy_id < links[pick].copy_id)
                pick = k;
        }
        links[pick] = *link;
        kept = store_links(s, &s->slots[i], links) == 0;
    }
    pf_spin_unlock(&s->lock);
    return kept;
}

int pf_objtable_with_object(uintptr_t addr, int (*fn)(pf_objinfo_t *obj, void *arg), void *arg)
{
    int64_t i;
    pf_stripe_t *s = lock_and_find(addr, &i);
    if (!s)
        return -1;
    int rc = -1;
    if (i >= 0) {
        pf_objinfo_t obj;
        slot_info(s, &s->slots[i], &obj);
        rc = fn(&obj, arg);
        store_links(s, &s->slots[i], obj.link);
    }
    pf_spin_unlock(&s->lock);
    return rc;
}

void pf_objtable_each(uint64_t min_size, void (*fn)(const pf_objinfo_t *obj, void *arg), void *arg)
{
    for (unsigned k = 0; k < PF_OBJTABLE_STRIPES; k++) {
        pf_stripe_t *s = &pf_stripes[k];
        pf_spin_lock(&s->lock);
        for (uint32_t i = 0; s->mask && i <= s->mask; i++) {
            const pf_objslot_t *o = &s->slots[i];
            if (!o->addr || o->size < min_size)
                continue;
            pf_objinfo_t info = {.addr = o->addr, .size = o->size, .domain = o->domain, .flags = o->flags,
                                 .serial = o->serial};
            fn(&info, arg);
        }
        pf_spin_unlock(&s->lock);
    }
}

uint64_t pf_objtable_count(void)
{
    uint64_t n = 0;
    for (unsigned k = 0; k < PF_OBJTABLE_STRIPES; k++)
        n += __atomic_load_n(&pf_stripes[k].used, __ATOMIC_RELAXED);
    return n;
}

void pf_objtable_fork_prepare(void)
{
    for (unsigned k = 0; k < PF_OBJTABLE_STRIPES; k++)
        pf_spin_lock(&pf_stripes[k].lock);
}

void pf_objtable_fork_parent(void)
{
    for (unsigned k = 0; k < PF_OBJTABLE_STRIPES; k++)
        pf_spin_unlock(&pf_stripes[k].lock);
}

void pf_objtable_fork_child(void)
{
    pf_objtable_fork_parent();
}

void pf_objtable_reset(void)
{
    for (unsigned k = 0; k < PF_OBJTABLE_STRIPES; k++) {
        pf_stripe_t *s = &pf_stripes[k];
        if (s->slots)
            pf_sys_munmap(s->slots, (size_t)(s->mask + 1) * sizeof(pf_objslot_t));
        for (uint32_t c = 0; s->chunks && c < PF_LINK_MAX_CHUNKS && s->chunks[c]; c++)
            pf_sys_munmap(s->chunks[c], PF_LINK_CHUNK_BLOCKS * sizeof(pf_linkblock_t));
        if (s->chunks)
            pf_sys_munmap(s->chunks, PF_LINK_MAX_CHUNKS * sizeof *s->chunks);
        memset(s, 0, sizeof *s);
    }
    if (pf_objtable_filter)
        pf_sys_munmap(pf_objtable_filter, PF_FILTER_BYTES);
    pf_objtable_filter = NULL;
}

/* --aggregate: the serial the next tracked object gets (a fork child's objects start there). */
uint64_t pf_objtable_next_serial(void)
{
    return __atomic_load_n(&next_serial, __ATOMIC_RELAXED);
}
