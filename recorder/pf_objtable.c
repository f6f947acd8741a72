/* pf_objtable.c - live tracked objects by address: a dense map of small Python objects (--exact), striped
 * open-addressing tables for the rest, and a counting filter in front of those (a free hook asks the
 * filter, then the dense map's entry: pf_objtable_maybe).
 *
 * Each stripe is a linear-probing array of slots with backward-shift deletion (no tombstones, so a stripe
 * never degrades under churn), doubled under the stripe's lock when 3/4 full. Memory comes from raw mmap:
 * this code runs inside malloc.
 *
 * The table is resident in the program, and under --exact it holds every live object: at 24 bytes a
 * hashed slot it was 29 MB of bench/workloads/churn.py's 79 MB peak (46 MB plain). So under --exact the
 * small blocks of the Python domains, nearly all of a Python program's objects, go to the dense map
 * (pf_objdense.h: 2 bytes per 32-byte granule of pymalloc's packed arenas). A hashed slot is one 64-bit
 * word (pf_objslot.h): a small object (under 4 KiB, 16-byte aligned) keeps its size, domain and flags in
 * it. Any other object, and one that takes part in a copy or is counted against an --aggregate site, is
 * "wide": its word names a record in its stripe's pool of wide records (32 bytes: the full address and
 * size, the serial, the site), whose copy links (few objects get any) live in a further pool of link
 * blocks. Serials are handed out when first asked for (a lookup, for a copy's ends), not at insert: an
 * object nobody asks about never needs one.
 *
 * Dense entries without the stripe lock (issue #29: the lock, taken per allocation and per free, was a
 * locked exchange and a cache line of its own on every event of a --exact run). The hashed slots, the pools
 * and moving an object between the two kinds stay under the lock; a dense entry is read and written with
 * atomics, and the common cases take no lock:
 *  - an insert of a dense object whose filter bucket is zero stores its entry (release). A zero bucket
 *    means no hashed slot holds the address, so there is no stale slot to drop: the filter is counted
 *    under the lock by the insert that made such a slot, and that insert happened before the program could
 *    use, free and so let the allocator hand out the address again; the allocator's own synchronization
 *    (the hooks insert after the real malloc returns and remove before the real free) orders that count
 *    before this read. Any other insert takes the lock as before (dense_put drops the stale slot).
 *  - a remove claims its address's entry (nonzero, of its half of the granule) with a compare-exchange to
 *    0: whoever gets the nonzero value owns the object's end, so a free racing with a move to the hashed
 *    slots is told once. Only an entry found 0 or the other half's (a hashed object, or one just moved)
 *    takes the lock to search the slots.
 *  - the only writer of a live object's entry other than its own allocation and free is found_widen (a
 *    lookup, from a copy on any thread, moves it to a hashed slot). Under the lock it counts the filter
 *    first, then claims the entry with a compare-exchange from the value it read: if a free claimed it
 *    first, the widen undoes its count and says the object is gone; if the widen claimed it, the free
 *    finds 0, takes the lock (waiting for the widen to end) and finds the hashed slot. pf_objtable_maybe
 *    reads the entry before the filter (acquire), so a free that sees the cleared entry also sees the
 *    count made before it.
 *  - an insert at an address whose granule holds an object whose free was never seen (a stale entry, at
 *    the same address or overlapping the new object from the granule's other half) may race with a
 *    widen of that stale entry: at worst a stale hashed slot is left, which the next locked insert at the
 *    address drops (as stale slots always were), and which a lookup never prefers over a dense entry.
 *  - fork: the fork handlers hold every stripe lock; a lock-free update is one atomic store or exchange,
 *    done or not done in the child.
 * The stripes no longer count their dense objects (a shared counter was the cost the lock was): the
 * count and the scans read the map itself.
 */
#include "pf_objtable.h"

#include <errno.h>
#include <string.h>

#include "pf_addr_home.h"
#include "pf_objdense.h"
#include "pf_objslot.h"
#include "pf_sys.h"

#define PF_STRIPE_INITIAL_SLOTS 1024u
#define PF_FILTER_BYTES (1u << PF_OBJTABLE_FILTER_BITS)
#define PF_FILTER_SATURATED 255u
#define PF_LINK_CHUNK_BLOCKS 256u       /* link blocks per mapped chunk (36 KiB) */
#define PF_LINK_MAX_CHUNKS 1024u        /* per stripe: 256K objects with links, 16M in all */
#define PF_WIDE_CHUNK_RECORDS 1024u     /* wide records per mapped chunk (32 KiB) */
#define PF_WIDE_MAX_CHUNKS ((1u << PF_SLOT_INDEX_BITS) / PF_WIDE_CHUNK_RECORDS)  /* 512K a stripe, 32M in all */

/* What a wide object keeps beyond its slot word. */
typedef struct pf_objwide {
    uintptr_t addr;         /* the full address; while on the free list: 1 + index of the next free one */
    uint64_t size;
    uint32_t serial;        /* the serial's low 32 bits: all a copy link needs to tell a reused address; 0: none
                               given yet */
    uint32_t links;         /* 1 + index of the object's link block in its stripe's pool; 0: no links */
    uint32_t site;          /* --aggregate: 1 + the object's stack id (pf_aggregate.c); 0: none */
    uint8_t domain, flags;
} pf_objwide_t;
_Static_assert(sizeof(pf_objwide_t) == 32, "a wide record: two to a cache line");

typedef union pf_linkblock {
    pf_copylink_t link[PF_OBJ_LINKS];
    uint32_t next_free;     /* while on the free list: 1 + index of the next free block, 0 = end */
} pf_linkblock_t;

/* A pool of fixed-size records in mapped chunks, found by index (a slot word has no room for a pointer). */
typedef struct pf_pool {
    void **chunks;          /* max_chunks pointers, mapped with the first record */
    uint32_t taken;         /* records handed out so far (free or in use) */
    uint32_t free_head;     /* 1 + index of the first free record; 0 = none */
} pf_pool_t;

typedef struct pf_stripe {
    pf_spinlock_t lock;
    uint32_t mask;          /* slots - 1; 0 when not allocated yet */
    uint64_t used;          /* hashed slots in use */
    pf_objslot_t *slots;
    pf_pool_t wide;         /* of pf_objwide_t */
    pf_pool_t links;        /* of pf_linkblock_t */
} __attribute__((aligned(64))) pf_stripe_t;

uint8_t *pf_objtable_filter;
static uint64_t next_serial = 1;
static uint64_t mapped_bytes;       /* slot arrays and pools (pf_objtable_bytes) */
static pf_stripe_t pf_stripes[PF_OBJTABLE_STRIPES];

static void *table_map(size_t bytes)
{
    void *p = pf_sys_alloc_pages(bytes);
    if (p)
        __atomic_add_fetch(&mapped_bytes, bytes, __ATOMIC_RELAXED);
    return p;
}

static void table_unmap(void *p, size_t bytes)
{
    pf_sys_munmap(p, bytes);
    __atomic_sub_fetch(&mapped_bytes, bytes, __ATOMIC_RELAXED);
}

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

/* A key's home slot: in its 1 KiB block's window (core/pf_addr_home.h). pyflow run --exact on
 * bench/workloads/churn.py took 0.86x the time it took with fully hashed homes. From the key alone, so
 * that growth and deletion can place a slot without its wide record. */
static inline uint32_t slot_of(uint64_t key, uint32_t mask)
{
    uint64_t addr = pf_slot_key_addr(key);
    return (uint32_t)pf_home_in_window(mix_of(pf_objtable_hash(pf_home_block(addr))) >> 8, addr) & mask;
}

/* addr's dense entry when its leaf is mapped (and addr could have one), else NULL: inline, as the free
 * hooks' pf_objdense_has reads it (pf_dense_at maps leaves). */
static inline pf_dense_t *dense_slot(uintptr_t addr)
{
    pf_dense_t **d = __atomic_load_n(&pf_objdense_dir, __ATOMIC_ACQUIRE);
    if (!d || (addr & 15) || (addr >> 48))
        return NULL;
    pf_dense_t *leaf = __atomic_load_n(&d[addr >> PF_DENSE_LEAF_SHIFT], __ATOMIC_ACQUIRE);
    return leaf ? &leaf[pf_objdense_index(addr)] : NULL;
}

/* The entry at e when it is the object's at addr, else 0 (none, or one of the granule's other half). */
static inline pf_dense_t dense_load(const pf_dense_t *e, uintptr_t addr)
{
    pf_dense_t v = __atomic_load_n(e, __ATOMIC_ACQUIRE);
    return pf_objdense_holds(v, addr) ? v : 0;
}

/* addr's dense entry when it has an object there (whether or not the map is still on), else NULL. */
static pf_dense_t *dense_of(uintptr_t addr)
{
    pf_dense_t *e = dense_slot(addr);
    return e && dense_load(e, addr) ? e : NULL;
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

/* The record of 1-based reference ref in a pool of records of rec_bytes, chunk_records to a chunk. */
static void *pool_at(const pf_pool_t *p, uint32_t ref, size_t rec_bytes, uint32_t chunk_records)
{
    uint32_t i = ref - 1;
    return (char *)p->chunks[i / chunk_records] + (size_t)(i % chunk_records) * rec_bytes;
}

/* A record from a pool (the stripe locked); a freed record's first 4 bytes held the free list's next.
 * Returns its 1-based reference, or 0 when no memory (or no index) is left. */
static uint32_t pool_new(pf_pool_t *p, size_t rec_bytes, uint32_t chunk_records, uint32_t max_chunks)
{
    if (p->free_head) {
        uint32_t ref = p->free_head;
        memcpy(&p->free_head, pool_at(p, ref, rec_bytes, chunk_records), sizeof p->free_head);
        return ref;
    }
    if (!p->chunks && !(p->chunks = table_map(max_chunks * sizeof *p->chunks)))
        return 0;
    uint32_t chunk = p->taken / chunk_records;
    if (chunk >= max_chunks)
        return 0;
    if (!p->chunks[chunk] && !(p->chunks[chunk] = table_map(chunk_records * rec_bytes)))
        return 0;
    return ++p->taken;
}

static void pool_free(pf_pool_t *p, uint32_t ref, size_t rec_bytes, uint32_t chunk_records)
{
    memcpy(pool_at(p, ref, rec_bytes, chunk_records), &p->free_head, sizeof p->free_head);
    p->free_head = ref;
}

static void pool_unmap(pf_pool_t *p, size_t rec_bytes, uint32_t chunk_records, uint32_t max_chunks)
{
    for (uint32_t c = 0; p->chunks && c < max_chunks && p->chunks[c]; c++)
        table_unmap(p->chunks[c], chunk_records * rec_bytes);
    if (p->chunks)
        table_unmap(p->chunks, max_chunks * sizeof *p->chunks);
}

/* The wide pool indexes records from 0 in the slot word (19 bits), the link pool from 1 in the record. */
static pf_objwide_t *wide_at(const pf_stripe_t *s, pf_objslot_t w)
{
    return pool_at(&s->wide, pf_slot_index(w) + 1, sizeof(pf_objwide_t), PF_WIDE_CHUNK_RECORDS);
}

static int64_t wide_new(pf_stripe_t *s)
{
    uint32_t ref = pool_new(&s->wide, sizeof(pf_objwide_t), PF_WIDE_CHUNK_RECORDS, PF_WIDE_MAX_CHUNKS);
    return ref ? (int64_t)ref - 1 : -1;
}

static pf_linkblock_t *block_at(const pf_stripe_t *s, uint32_t ref)
{
    return pool_at(&s->links, ref, sizeof(pf_linkblock_t), PF_LINK_CHUNK_BLOCKS);
}

/* Frees what a slot holds beyond its word: a wide record and its link block. */
static void slot_release(pf_stripe_t *s, pf_objslot_t w)
{
    if (!pf_slot_is_wide(w))
        return;
    pf_objwide_t *o = wide_at(s, w);
    if (o->links)
        pool_free(&s->links, o->links, sizeof(pf_linkblock_t), PF_LINK_CHUNK_BLOCKS);
    pool_free(&s->wide, pf_slot_index(w) + 1, sizeof(pf_objwide_t), PF_WIDE_CHUNK_RECORDS);
}

static int links_empty(const pf_copylink_t *links)
{
    for (int k = 0; k < PF_OBJ_LINKS; k++)
        if (links[k].copy_id)
            return 0;
    return 1;
}

/* Keeps links as a wide object's links: in its block (one is taken when needed; none is kept for no links).
 * Returns 0, or -ENOMEM when a needed block could not be had (the object then has no links). */
static int store_links(pf_stripe_t *s, pf_objwide_t *o, const pf_copylink_t *links)
{
    if (links_empty(links)) {
        if (o->links)
            pool_free(&s->links, o->links, sizeof(pf_linkblock_t), PF_LINK_CHUNK_BLOCKS);
        o->links = 0;
        return 0;
    }
    if (!o->links && !(o->links = pool_new(&s->links, sizeof(pf_linkblock_t), PF_LINK_CHUNK_BLOCKS,
                                           PF_LINK_MAX_CHUNKS)))
        return -ENOMEM;
    memcpy(block_at(s, o->links)->link, links, sizeof(pf_copylink_t) * PF_OBJ_LINKS);
    return 0;
}

/* What a slot says of its object; with_links 0 leaves out->link alone. */
static void slot_info(const pf_stripe_t *s, pf_objslot_t w, pf_objinfo_t *out, int with_links)
{
    int has_links = 0;
    if (pf_slot_is_wide(w)) {
        const pf_objwide_t *o = wide_at(s, w);
        *out = (pf_objinfo_t){.addr = o->addr, .size = o->size, .serial = o->serial, .domain = o->domain,
                              .flags = o->flags, .site = o->site};
        if (with_links && o->links) {
            memcpy(out->link, block_at(s, o->links)->link, sizeof out->link);
            has_links = 1;
        }
    } else {
        out->addr = pf_slot_key_addr(pf_slot_key(w));
        out->size = pf_slot_size(w);
        out->serial = 0;
        out->domain = pf_slot_domain(w);
        out->flags = pf_slot_flags(w);
        out->site = 0;
    }
    if (with_links && !has_links) {
        for (int k = 0; k < PF_OBJ_LINKS; k++)
            out->link[k].copy_id = 0;   /* no link: what else a link holds is read only when it has an id */
    }
}

/* 1 when slot word w is the object at addr (whose key is key). */
static inline int slot_is(const pf_stripe_t *s, pf_objslot_t w, uint64_t key, uintptr_t addr)
{
    if (pf_slot_key(w) != key)
        return 0;
    return pf_slot_is_wide(w) ? wide_at(s, w)->addr == addr : (addr & 15) == 0 && (addr >> 48) == 0;
}

/* Places word w into a stripe whose lock is held and which has room, over the slot of the same object if
 * there is one (addr: the object's; 0 when rehashing, where no key repeats an object). Returns the index
 * of the slot it replaced, or -1 when it took an empty one. */
static int64_t stripe_put(pf_stripe_t *s, pf_objslot_t w, uintptr_t addr)
{
    uint64_t key = pf_slot_key(w);
    uint32_t i = slot_of(key, s->mask);
    for (;;) {
        pf_objslot_t cur = s->slots[i];
        if (cur == 0) {
            s->slots[i] = w;
            s->used++;
            return -1;
        }
        if (addr && slot_is(s, cur, key, addr)) {
            slot_release(s, cur);
            s->slots[i] = w;
            return i;
        }
        i = (i + 1) & s->mask;
    }
}

/* A stripe's array; from 4 MiB (an --exact run with millions of live objects) on huge pages. */
#define PF_STRIPE_HUGE_BYTES ((size_t)4 << 20)

static pf_objslot_t *slots_alloc(uint32_t slots)
{
    size_t bytes = (size_t)slots * sizeof(pf_objslot_t);
    if (bytes < PF_STRIPE_HUGE_BYTES)
        return table_map(bytes);
    pf_objslot_t *p = pf_sys_alloc_huge(bytes);
    if (p)
        __atomic_add_fetch(&mapped_bytes, bytes, __ATOMIC_RELAXED);
    return p;
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
        if (old[i])
            stripe_put(s, old[i], 0);
    }
    if (old)
        table_unmap(old, (size_t)old_slots * sizeof(pf_objslot_t));
    return 0;
}

void pf_objtable_prefetch(uintptr_t addr, uint64_t size, uint32_t domain)
{
    if (pf_dense_on() && pf_dense_fits(addr, size, domain, PF_ALLOC_EXACT)) {
        const pf_dense_t *e = dense_slot(addr);
        if (e)
            __builtin_prefetch(e, 1);
        return;     /* where it will go (its stripe's lock aside); a stale hashed slot is rare */
    }
    const pf_stripe_t *s = stripe_of(addr);
    pf_objslot_t *slots = __atomic_load_n(&s->slots, __ATOMIC_RELAXED);
    uint32_t mask = __atomic_load_n(&s->mask, __ATOMIC_RELAXED);
    if (slots)
        __builtin_prefetch(&slots[slot_of(pf_slot_key_of(addr), mask)], 1);
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

/* The word of a new wide record holding obj (the stripe locked), or 0 when the pool is exhausted. */
static pf_objslot_t wide_word(pf_stripe_t *s, const pf_objinfo_t *obj, uint64_t serial)
{
    int64_t index = wide_new(s);
    if (index < 0)
        return 0;
    pf_objslot_t w = pf_slot_wide(obj->addr, (uint32_t)index);
    *wide_at(s, w) = (pf_objwide_t){.addr = obj->addr, .size = obj->size, .serial = (uint32_t)serial,
                                    .site = obj->site, .domain = (uint8_t)obj->domain,
                                    .flags = (uint8_t)obj->flags};
    return w;
}

/* Room for one more hashed slot in a locked stripe. Returns 0 or -ENOMEM. */
static int stripe_room(pf_stripe_t *s)
{
    if ((s->used + 1) * 4 > (uint64_t)(s->mask ? s->mask + 1 : 0) * 3)
        return stripe_grow(s);
    return 0;
}

/* Finds addr's hashed slot in a locked stripe. Returns the slot index or -1. */
static int64_t stripe_find(const pf_stripe_t *s, uintptr_t addr)
{
    if (!s->mask)
        return -1;
    uint64_t key = pf_slot_key_of(addr);
    uint32_t i = slot_of(key, s->mask);
    for (;;) {
        pf_objslot_t w = s->slots[i];
        if (w == 0)
            return -1;
        if (slot_is(s, w, key, addr))
            return i;
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
        pf_objslot_t w = s->slots[i];
        if (w == 0)
            break;
        uint32_t home = slot_of(pf_slot_key(w), s->mask);
        /* The member at i may move into the hole when its home is not in (hole, i] cyclically. */
        int movable = hole <= i ? (home <= hole || home > i) : (home <= hole && home > i);
        if (movable) {
            s->slots[hole] = w;
            hole = i;
        }
    }
    s->slots[hole] = 0;
    s->used--;
}

/* Where an object is in its locked stripe: its dense entry, else its hashed slot (-1: not tracked). */
typedef struct pf_found {
    uintptr_t addr;
    pf_dense_t *dense;
    int64_t slot;
    pf_dense_t value;   /* the dense entry as it was read: a free may clear it meanwhile (no lock) */
} pf_found_t;

static pf_found_t stripe_locate(const pf_stripe_t *s, uintptr_t addr)
{
    pf_found_t f = {addr, dense_slot(addr), -1, 0};
    if (f.dense && !(f.value = dense_load(f.dense, addr)))
        f.dense = NULL;
    if (!f.dense)
        f.slot = stripe_find(s, addr);
    return f;
}

static int found_any(const pf_found_t *f)
{
    return f->dense || f->slot >= 0;
}

/* A dense object's details from its entry e. Field by field: a compound literal would zero the links' 144
 * bytes too (a `rep stos` that was half of a free's table time); a link's other fields are read only when
 * its copy id is set. */
static void dense_info(uintptr_t addr, pf_dense_t e, pf_objinfo_t *out, int with_links)
{
    out->addr = addr;
    out->size = pf_dense_size(e);
    out->serial = 0;
    out->domain = pf_dense_domain(e);
    out->flags = pf_dense_flags(e);
    out->site = 0;
    for (int k = 0; with_links && k < PF_OBJ_LINKS; k++)
        out->link[k].copy_id = 0;
}

static void found_info(const pf_stripe_t *s, const pf_found_t *f, pf_objinfo_t *out, int with_links)
{
    if (!f->dense) {
        slot_info(s, s->slots[f->slot], out, with_links);
        return;
    }
    dense_info(f->addr, f->value, out, with_links);
}

/* A dense entry for obj (the stripe locked), over a stale hashed slot of its address if any. Returns 0, or
 * -1 when its leaf could not be mapped. */
static int dense_put(pf_stripe_t *s, const pf_objinfo_t *obj)
{
    pf_dense_t *e = dense_slot(obj->addr);
    if (!e && !(e = pf_dense_at(obj->addr, 1)))
        return -1;
    __atomic_store_n(e, pf_dense_entry(obj->addr, obj->size, obj->domain, obj->flags), __ATOMIC_RELEASE);
    int64_t old = s->used ? stripe_find(s, obj->addr) : -1;
    if (old >= 0) {
        slot_release(s, s->slots[old]);
        stripe_erase(s, (uint32_t)old);
        filter_dec(obj->addr);     /* the filter counts hashed objects only */
    }
    return 0;
}

/* A hashed slot for obj (the stripe locked), over a stale dense entry of its address if any. Returns 0 or
 * -ENOMEM. */
static int hash_put(pf_stripe_t *s, const pf_objinfo_t *obj)
{
    if (stripe_room(s) < 0)
        return -ENOMEM;
    pf_objslot_t w;
    if (pf_slot_fits(obj->addr, obj->size, obj->domain, obj->flags, obj->site) && links_empty(obj->link))
        w = pf_slot_compact(obj->addr, obj->size, obj->domain, obj->flags);
    else if (!(w = wide_word(s, obj, take_serial())))
        return -ENOMEM;
    if (pf_slot_is_wide(w)) {
        pf_objwide_t *o = wide_at(s, w);
        if (store_links(s, o, obj->link) < 0)
            o->links = 0;
    }
    pf_dense_t *stale = dense_of(obj->addr);
    if (stripe_put(s, w, obj->addr) < 0)
        filter_inc(obj->addr);
    if (stale)     /* an entry whose free was not seen: no free can claim it meanwhile */
        __atomic_store_n(stale, 0, __ATOMIC_RELEASE);
    return 0;
}

/* The lock-free insert of a dense object (see the top of this file): 1 when its entry was stored, 0 when
 * the locked path must do it (a hashed slot may hold the address, or the leaf is not mapped yet). */
static inline __attribute__((always_inline)) int dense_put_unlocked(uintptr_t addr, uint64_t size, uint32_t domain,
                                                                    uint32_t flags)
{
    if (__atomic_load_n(&pf_objtable_filter[pf_objtable_bucket(addr)], __ATOMIC_ACQUIRE))
        return 0;
    pf_dense_t *e = dense_slot(addr);
    if (!e)
        return 0;
    __atomic_store_n(e, pf_dense_entry(addr, size, domain, flags), __ATOMIC_RELEASE);
    return 1;
}

int pf_objtable_insert(const pf_objinfo_t *obj)
{
    if (!pf_objtable_filter || obj->addr < 16)
        return -ENOMEM;
    int dense = pf_dense_fits(obj->addr, obj->size, obj->domain, obj->flags) && obj->site == 0 &&
                pf_dense_on() && links_empty(obj->link);
    if (dense && dense_put_unlocked(obj->addr, obj->size, obj->domain, obj->flags))
        return 0;
    pf_stripe_t *s = stripe_of(obj->addr);
    pf_spin_lock(&s->lock);
    /* Count in the filter (or write the dense entry, which pf_objtable_maybe reads) before the lock is
     * released, so a concurrent free of this address that misses both can only be a free of an older block
     * (which the hooks already saw). */
    int rc = dense && dense_put(s, obj) == 0 ? 0 : hash_put(s, obj);
    pf_spin_unlock(&s->lock);
    return rc;
}

/* pf_objtable_insert_new where the dense entry would not do. Field by field: an initializer zeroed the whole
 * struct, its three copy links' 144 bytes included (a `rep stos` that took half of the allocation's path);
 * the table reads a link's other fields only when its copy id is set. */
static __attribute__((noinline)) int insert_new_slow(uintptr_t addr, uint64_t size, uint32_t domain, uint32_t flags)
{
    pf_objinfo_t obj;
    obj.addr = addr;
    obj.size = size;
    obj.domain = domain;
    obj.flags = flags;
    obj.site = 0;
    obj.serial = 0;
    for (int k = 0; k < PF_OBJ_LINKS; k++)
        obj.link[k].copy_id = 0;
    return pf_objtable_insert(&obj);
}

/* pf_objtable_insert's dense path for such a block (no site or links to test), without the call. */
__attribute__((always_inline)) inline int pf_objtable_insert_new(uintptr_t addr, uint64_t size, uint32_t domain,
                                                                 uint32_t flags)
{
    if (PF_LIKELY(pf_objtable_filter && addr >= 16 && pf_dense_fits(addr, size, domain, flags) && pf_dense_on() &&
                  dense_put_unlocked(addr, size, domain, flags)))
        return 0;
    return insert_new_slow(addr, size, domain, flags);
}

/* Locks addr's stripe and finds addr in it. Returns the locked stripe, or NULL (nothing locked) when there
 * is no table. */
static pf_stripe_t *lock_and_find(uintptr_t addr, pf_found_t *f)
{
    if (!pf_objtable_filter || addr < 16)
        return NULL;
    pf_stripe_t *s = stripe_of(addr);
    pf_spin_lock(&s->lock);
    *f = stripe_locate(s, addr);
    return s;
}

/* Makes the object at f wide, with a serial (the stripe locked): a copy link names its peer by address and
 * serial. A dense one moves to a hashed slot (f then says which). Returns its record, or NULL when no
 * room or record could be had (the object then stays as it was), or when a dense object was freed (its
 * entry claimed by pf_objtable_remove without the lock) while it was being moved: f then finds nothing. */
static pf_objwide_t *found_widen(pf_stripe_t *s, pf_found_t *f)
{
    pf_objinfo_t obj;
    if (f->dense) {
        pf_dense_t seen = f->value;
        found_info(s, f, &obj, 0);
        pf_objslot_t w;
        if (stripe_room(s) < 0 || !(w = wide_word(s, &obj, take_serial())))
            return NULL;
        /* Counted before its dense entry goes: a free meanwhile sees one or the other. The entry is then
         * claimed from the value read: a free that claimed it first ended the object. */
        filter_inc(f->addr);
        if (!__atomic_compare_exchange_n(f->dense, &seen, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            filter_dec(f->addr);
            pool_free(&s->wide, pf_slot_index(w) + 1, sizeof(pf_objwide_t), PF_WIDE_CHUNK_RECORDS);
            *f = (pf_found_t){f->addr, NULL, -1, 0};
            return NULL;
        }
        if (stripe_put(s, w, f->addr) >= 0)
            filter_dec(f->addr);   /* it took a stale slot's place (see the top of this file): counted once */
        *f = (pf_found_t){f->addr, NULL, stripe_find(s, f->addr), 0};
    }
    pf_objslot_t w = s->slots[f->slot];
    if (!pf_slot_is_wide(w)) {
        slot_info(s, w, &obj, 0);
        pf_objslot_t wide = wide_word(s, &obj, take_serial());
        if (!wide)
            return NULL;
        s->slots[f->slot] = w = wide;   /* same key, so the same home */
    }
    pf_objwide_t *o = wide_at(s, w);
    if (!o->serial)
        o->serial = (uint32_t)take_serial();
    return o;
}

/* The lock-free end of a dense object (see the top of this file): 1 when addr's entry was claimed (out,
 * when not NULL, filled from it), 0 when it held none (a hashed object, or none). */
static int dense_remove_unlocked(uintptr_t addr, pf_objinfo_t *out)
{
    pf_dense_t *e = dense_slot(addr);
    pf_dense_t was = e ? dense_load(e, addr) : 0;
    /* claimed from the value read: the granule's entry may be replaced meanwhile by a new object of its
     * other half (this one's free was then seen already, or this is a free of an untracked block) */
    while (was && !__atomic_compare_exchange_n(e, &was, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        was = pf_objdense_holds(was, addr) ? was : 0;
    if (!was)
        return 0;
    if (out)
        dense_info(addr, was, out, 1);
    return 1;
}

int pf_objtable_remove(uintptr_t addr, pf_objinfo_t *out)
{
    if (!pf_objtable_filter || addr < 16)
        return 0;
    if (dense_remove_unlocked(addr, out))
        return 1;
    pf_stripe_t *s = stripe_of(addr);
    pf_spin_lock(&s->lock);
    /* its entry was 0: a hashed object, or a dense one a widen moved to a hashed slot (under this lock) */
    pf_found_t f = {addr, NULL, stripe_find(s, addr), 0};
    int found = f.slot >= 0;
    if (found) {
        if (out)
            found_info(s, &f, out, 1);
        slot_release(s, s->slots[f.slot]);
        stripe_erase(s, (uint32_t)f.slot);
        filter_dec(addr);
    }
    pf_spin_unlock(&s->lock);
    return found;
}

int pf_objtable_lookup(uintptr_t addr, pf_objinfo_t *out)
{
    pf_found_t f;
    pf_stripe_t *s = lock_and_find(addr, &f);
    if (!s)
        return 0;
    int found = found_any(&f);
    if (found && out) {
        found_widen(s, &f);
        found = found_any(&f);     /* not when freed meanwhile */
        if (found)
            found_info(s, &f, out, 1);
    }
    pf_spin_unlock(&s->lock);
    return found;
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
    pf_found_t f;
    pf_stripe_t *s = lock_and_find(addr, &f);
    if (!s)
        return 0;
    pf_objwide_t *o = found_any(&f) ? found_widen(s, &f) : NULL;
    int kept = o != NULL;
    if (kept) {
        pf_objinfo_t obj;
        found_info(s, &f, &obj, 1);
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
        kept = store_links(s, o, links) == 0;
    }
    pf_spin_unlock(&s->lock);
    return kept;
}

int pf_objtable_with_object(uintptr_t addr, int (*fn)(pf_objinfo_t *obj, void *arg), void *arg)
{
    pf_found_t f;
    pf_stripe_t *s = lock_and_find(addr, &f);
    if (!s)
        return -1;
    int rc = -1;
    pf_objwide_t *o = found_any(&f) ? found_widen(s, &f) : NULL;
    if (found_any(&f)) {
        pf_objinfo_t obj;
        found_info(s, &f, &obj, 1);
        rc = fn(&obj, arg);
        if (o)
            store_links(s, o, obj.link);
    }
    pf_spin_unlock(&s->lock);
    return rc;
}

typedef struct each_ctx {
    uint64_t min_size;
    void (*fn)(const pf_objinfo_t *obj, void *arg);
    void *arg;
} each_ctx_t;

static void each_dense_one(uint64_t addr, pf_dense_t e, void *arg)
{
    const each_ctx_t *c = arg;
    pf_objinfo_t info = {.addr = addr, .size = pf_dense_size(e), .domain = pf_dense_domain(e),
                         .flags = pf_dense_flags(e)};
    if (info.size >= c->min_size)
        c->fn(&info, c->arg);
}

/* A leaf's span of the dense map. Its entries change without the lock (see the top of this file): each
 * object reported was live when its entry was read. Only the tests ask for objects this small (the
 * exit-time scan asks for a page or more), so the whole leaf is read, untouched pages as zeros. */
static void each_dense_leaf(uint64_t lo, uint64_t hi, void *arg)
{
    pf_dense_each_in(lo, hi, each_dense_one, arg);
}

void pf_objtable_each(uint64_t min_size, void (*fn)(const pf_objinfo_t *obj, void *arg), void *arg)
{
    for (unsigned k = 0; k < PF_OBJTABLE_STRIPES; k++) {
        pf_stripe_t *s = &pf_stripes[k];
        pf_spin_lock(&s->lock);
        for (uint32_t i = 0; s->mask && i <= s->mask; i++) {
            pf_objslot_t w = s->slots[i];
            if (!w)
                continue;
            pf_objinfo_t info;
            slot_info(s, w, &info, 0);
            info.site = 0;
            if (info.size >= min_size)
                fn(&info, arg);
        }
        pf_spin_unlock(&s->lock);
    }
    each_ctx_t c = {min_size, fn, arg};
    if (min_size <= PF_DENSE_MAX_SIZE)     /* the exit-time scan asks for a page or more: no dense object */
        pf_dense_each_leaf(each_dense_leaf, &c);
}

static void count_one(const pf_objinfo_t *obj, void *arg)
{
    (void)obj;
    (*(uint64_t *)arg)++;
}

/* For tests: the dense objects are counted by reading the map (no counter is kept per event). */
uint64_t pf_objtable_count(void)
{
    uint64_t n = 0;
    for (unsigned k = 0; k < PF_OBJTABLE_STRIPES; k++)
        n += __atomic_load_n(&pf_stripes[k].used, __ATOMIC_RELAXED);
    each_ctx_t c = {0, count_one, &n};
    pf_dense_each_leaf(each_dense_leaf, &c);
    return n;
}

int pf_objtable_dense(int on)
{
    return pf_dense_enable(on);
}

uint64_t pf_objtable_bytes(void)
{
    return __atomic_load_n(&mapped_bytes, __ATOMIC_RELAXED);
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
            table_unmap(s->slots, (size_t)(s->mask + 1) * sizeof(pf_objslot_t));
        pool_unmap(&s->wide, sizeof(pf_objwide_t), PF_WIDE_CHUNK_RECORDS, PF_WIDE_MAX_CHUNKS);
        pool_unmap(&s->links, sizeof(pf_linkblock_t), PF_LINK_CHUNK_BLOCKS, PF_LINK_MAX_CHUNKS);
        memset(s, 0, sizeof *s);
    }
    pf_dense_reset();
    if (pf_objtable_filter)
        pf_sys_munmap(pf_objtable_filter, PF_FILTER_BYTES);
    pf_objtable_filter = NULL;
}

/* --aggregate: the serial the next tracked object gets (a fork child's objects start there). */
uint64_t pf_objtable_next_serial(void)
{
    return __atomic_load_n(&next_serial, __ATOMIC_RELAXED);
}
