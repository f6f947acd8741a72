/* pf_stacks.c - interned call stacks. See pf_stacks.h.
 *
 * The table maps a 64-bit hash of the stack to its id and to pyflow's own copy of its words (in an arena,
 * not in the profile: finished chunks are dropped from memory and re-reading them would fault them back).
 * Memory is bounded: PF_STACKS_MAX_USED entries and PF_STACKS_MAX_BLOCKS blocks of copies; past either, new
 * stacks are written inline, as before interning, and nothing is lost.
 */
#include "pf_stacks.h"

#include <string.h>

#include "pf_sys.h"
#include "pf_writer.h"

#define PF_STACKS_SLOTS (1u << 16)
#define PF_STACKS_MAX_USED (PF_STACKS_SLOTS / 4 * 3)
#define PF_STACKS_BLOCK_BYTES (1u << 20)
#define PF_STACKS_MAX_BLOCKS 64u            /* 64 MiB of stack copies at most */

typedef struct pf_stack_slot {
    uint64_t hash;                  /* published last (release); 0 = empty */
    const uint64_t *words;          /* n_py Python frames then n_native IPs, 8 bytes each */
    uint32_t id;
    uint16_t n_py;
    uint16_t n_native;
} pf_stack_slot_t;

_Static_assert(sizeof(pf_rec_pyframe_t) == 8, "a Python frame is one word of a stack");

static pf_stack_slot_t *slots;
static uint32_t used;
static uint32_t next_id = 1;
static pf_spinlock_t lock;
static char *blocks[PF_STACKS_MAX_BLOCKS];
static uint32_t n_blocks;
static uint32_t block_used;         /* bytes used in blocks[n_blocks - 1] */

static inline uint64_t mix(uint64_t h, uint64_t w)
{
    h ^= w * 0x9E3779B97F4A7C15ull;
    h = (h << 31) | (h >> 33);
    return h * 0xC2B2AE3D27D4EB4Full;
}

static uint64_t hash_stack(const pf_stack_t *st)
{
    uint64_t h = mix(0x27D4EB2F165667C5ull, (uint64_t)st->n_py << 16 | st->n_native);
    for (uint32_t i = 0; i < st->n_py; i++) {
        uint64_t w;
        memcpy(&w, &st->py[i], 8);
        h = mix(h, w);
    }
    for (uint32_t i = 0; i < st->n_native; i++)
        h = mix(h, st->native[i]);
    h ^= h >> 29;
    return h ? h : 1;
}

static int same_stack(const pf_stack_slot_t *s, const pf_stack_t *st)
{
    return s->n_py == st->n_py && s->n_native == st->n_native &&
           memcmp(s->words, st->py, (size_t)st->n_py * 8) == 0 &&
           memcmp(s->words + st->n_py, st->native, (size_t)st->n_native * 8) == 0;
}

/* Returns the id of st, or 0 (and the first empty slot in *empty, UINT32_MAX when the table is full). */
static uint32_t probe(uint64_t h, const pf_stack_t *st, uint32_t *empty)
{
    for (uint32_t i = (uint32_t)(h >> 40) & (PF_STACKS_SLOTS - 1), n = 0; n < PF_STACKS_SLOTS;
         i = (i + 1) & (PF_STACKS_SLOTS - 1), n++) {
        uint64_t have = __atomic_load_n(&slots[i].hash, __ATOMIC_ACQUIRE);
        if (!have) {
            *empty = i;
            return 0;
        }
        if (have == h && same_stack(&slots[i], st))
            return slots[i].id;
    }
    *empty = UINT32_MAX;
    return 0;
}

/* Room for `bytes` of stack words in the arena (caller holds the lock), or NULL when it is full. */
static uint64_t *arena_take(uint32_t bytes)
{
    if (!n_blocks || block_used + bytes > PF_STACKS_BLOCK_BYTES) {
        if (n_blocks == PF_STACKS_MAX_BLOCKS)
            return NULL;
        char *b = pf_sys_alloc_pages(PF_STACKS_BLOCK_BYTES);
        if (!b)
            return NULL;
        blocks[n_blocks++] = b;
        block_used = 0;
    }
    uint64_t *p = (uint64_t *)(blocks[n_blocks - 1] + block_used);
    block_used += bytes;
    return p;
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
    uint64_t h = hash_stack(st);
    uint32_t empty;
    uint32_t id = probe(h, st, &empty);
    if (PF_LIKELY(id))
        return id;

    pf_spin_lock(&lock);
    id = probe(h, st, &empty);      /* another thread may have added it meanwhile */
    if (!id && empty != UINT32_MAX && used < PF_STACKS_MAX_USED) {
        uint64_t *words = arena_take(pf_stack_bytes(st));
        if (words && write_stack_record(t, st, next_id) == 0) {
            id = next_id++;
            pf_stack_store(st, words);
            pf_stack_slot_t *s = &slots[empty];
            s->words = words;
            s->id = id;
            s->n_py = st->n_py;
            s->n_native = st->n_native;
            __atomic_store_n(&s->hash, h, __ATOMIC_RELEASE);
            used++;
        } else if (words) {
            block_used -= pf_stack_bytes(st);   /* the record was not written: give the room back */
        }
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
    for (uint32_t i = 0; i < n_blocks; i++)
        pf_sys_munmap(blocks[i], PF_STACKS_BLOCK_BYTES);
    slots = NULL;
    n_blocks = block_used = used = 0;
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
