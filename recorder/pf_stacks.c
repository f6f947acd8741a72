/* pf_stacks.c - interned call stacks. See pf_stacks.h.
 *
 * The table maps a stack's 128-bit hash (two independent 64-bit hashes over its words) to its id. It keeps
 * no copy of the words: with --native a stack is 300-1000 bytes, and the copies of a full table were up to
 * 64 MiB resident in the program (28 MiB for bench/workloads/numeric.py under --exact --native, a third of
 * its plain peak RSS). Two different stacks of one run share an id only if both hashes collide: with at
 * most PF_STACKS_MAX_USED stacks, a chance below 1e-29. Past PF_STACKS_MAX_USED entries new stacks are
 * written inline, as before interning, and nothing is lost.
 */
#include "pf_stacks.h"

#include <string.h>

#include "pf_sys.h"
#include "pf_writer.h"

#define PF_STACKS_SLOTS (1u << 16)
#define PF_STACKS_MAX_USED (PF_STACKS_SLOTS / 4 * 3)

typedef struct pf_stack_slot {
    uint64_t hash;                  /* published last (release); 0 = empty */
    uint64_t hash2;                 /* the second hash, which a match must have too */
    uint32_t id;
    uint16_t n_py;
    uint16_t n_native;
} pf_stack_slot_t;

_Static_assert(sizeof(pf_rec_pyframe_t) == 8, "a Python frame is one word of a stack");

static pf_stack_slot_t *slots;
static uint32_t used;
static uint32_t next_id = 1;
static pf_spinlock_t lock;

typedef struct pf_stack_hash {
    uint64_t h, h2;
} pf_stack_hash_t;

static inline uint64_t mix(uint64_t h, uint64_t w)
{
    h ^= w * 0x9E3779B97F4A7C15ull;
    h = (h << 31) | (h >> 33);
    return h * 0xC2B2AE3D27D4EB4Full;
}

/* A second mixer with other constants and rotation, so the two hashes are independent. */
static inline uint64_t mix2(uint64_t h, uint64_t w)
{
    h ^= w * 0xD6E8FEB86659FD93ull;
    h = (h << 27) | (h >> 37);
    return h * 0xFF51AFD7ED558CCDull + 0x165667B19E3779F9ull;
}

static inline uint64_t finish(uint64_t h)
{
    h ^= h >> 29;
    return h ? h : 1;
}

static pf_stack_hash_t hash_stack(const pf_stack_t *st)
{
    uint64_t shape = (uint64_t)st->n_py << 16 | st->n_native;
    uint64_t h = mix(0x27D4EB2F165667C5ull, shape), h2 = mix2(0x85EBCA77C2B2AE63ull, shape);
    for (uint32_t i = 0; i < st->n_py; i++) {
        uint64_t w;
        memcpy(&w, &st->py[i], 8);
        h = mix(h, w);
        h2 = mix2(h2, w);
    }
    for (uint32_t i = 0; i < st->n_native; i++) {
        h = mix(h, st->native[i]);
        h2 = mix2(h2, st->native[i]);
    }
    return (pf_stack_hash_t){finish(h), finish(h2)};
}

static int same_stack(const pf_stack_slot_t *s, pf_stack_hash_t h, const pf_stack_t *st)
{
    return s->hash2 == h.h2 && s->n_py == st->n_py && s->n_native == st->n_native;
}

/* Returns the id of st, or 0 (and the first empty slot in *empty, UINT32_MAX when the table is full). */
static uint32_t probe(pf_stack_hash_t h, const pf_stack_t *st, uint32_t *empty)
{
    for (uint32_t i = (uint32_t)(h.h >> 40) & (PF_STACKS_SLOTS - 1), n = 0; n < PF_STACKS_SLOTS;
         i = (i + 1) & (PF_STACKS_SLOTS - 1), n++) {
        uint64_t have = __atomic_load_n(&slots[i].hash, __ATOMIC_ACQUIRE);
        if (!have) {
            *empty = i;
            return 0;
        }
        if (have == h.h && same_stack(&slots[i], h, st))
            return slots[i].id;
    }
    *empty = UINT32_MAX;
    return 0;
}

static int write_stack_record(pf_tls_t *t, const pf_stack_t *st, uint32_t id)
{
    uint32_t bytes = pf_align8((uint32_t)(sizeof(pf_rec_header_t) + sizeof(pf_rec_stack_t)) + pf_stack_bytes(st));
    char *rec = pf_writer_reserve(t, bytes);
    if (!rec)
        return -1;
    pf_rec_stack_t *s = (pf_rec_stack_t *)(rec + sizeof(pf_rec_header_t));
    s->stack_id = id;
    s->n_py = st->n_py;
    s->n_native = st->n_native;
    pf_stack_store(st, s + 1);
    pf_writer_commit(t, rec, PF_REC_STACK, 0, bytes);
    return 0;
}

uint32_t pf_stacks_id(pf_tls_t *t, const pf_stack_t *st)
{
    if (!st->n_py && !st->n_native)
        return 0;   /* nothing to share: inline costs no bytes */
    if (PF_UNLIKELY(!__atomic_load_n(&slots, __ATOMIC_ACQUIRE))) {
        pf_spin_lock(&lock);
        if (!slots)
            __atomic_store_n(&slots, pf_sys_alloc_pages(sizeof(pf_stack_slot_t) * PF_STACKS_SLOTS),
                             __ATOMIC_RELEASE);
        pf_spin_unlock(&lock);
        if (!slots)
            return 0;
    }
    pf_stack_hash_t h = hash_stack(st);
    uint32_t empty;
    uint32_t id = probe(h, st, &empty);
    if (PF_LIKELY(id))
        return id;

    pf_spin_lock(&lock);
    id = probe(h, st, &empty);      /* another thread may have added it meanwhile */
    if (!id && empty != UINT32_MAX && used < PF_STACKS_MAX_USED && write_stack_record(t, st, next_id) == 0) {
        id = next_id++;
        pf_stack_slot_t *s = &slots[empty];
        s->hash2 = h.h2;
        s->id = id;
        s->n_py = st->n_py;
        s->n_native = st->n_native;
        __atomic_store_n(&s->hash, h.h, __ATOMIC_RELEASE);
        used++;
    }
    pf_spin_unlock(&lock);
    return id;
}

uint32_t pf_stacks_tail_bytes(const pf_stack_t *st, uint32_t id)
{
    return id ? (uint32_t)sizeof(pf_rec_stack_ref_t) : pf_stack_bytes(st);
}

void pf_stacks_store_tail(const pf_stack_t *st, uint32_t id, void *dst)
{
    if (id) {
        pf_rec_stack_ref_t ref = {.stack_id = id, .reserved = 0};
        memcpy(dst, &ref, sizeof ref);
    } else {
        pf_stack_store(st, dst);
    }
}

void pf_stacks_reset(void)
{
    if (slots)
        pf_sys_munmap(slots, sizeof(pf_stack_slot_t) * PF_STACKS_SLOTS);
    slots = NULL;
    used = 0;
    next_id = 1;
    lock.locked = 0;
}

void pf_stacks_fork_prepare(void)
{
    pf_spin_lock(&lock);
}

void pf_stacks_fork_parent(void)
{
    pf_spin_unlock(&lock);
}
