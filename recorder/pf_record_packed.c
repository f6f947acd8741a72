/* pf_record_packed.c - appends exact allocations and frees to the thread's open packed record. See
 * pf_record_packed.h; the bytes of an event: core/pf_packed.h. */
#include "pf_record_packed.h"

#include <string.h>

#include "pf_clock.h"
#include "pf_writer.h"

/* 1 while the thread's open packed record is the last thing in its chunk: the next event may go on it. */
static inline __attribute__((always_inline)) int record_open(const pf_tls_t *t)
{
    char *rec = t->packed_rec;
    return rec && t->packed_gen == t->chunk_gen && t->chunk_gen == pf_writer_generation() &&
           t->chunk_pos == rec + pf_align8(t->packed_len);
}

/* A new packed record for the next event (its header not yet stored): where the event goes, or NULL when no
 * room could be had. Out of line: event_room's callers inline its test alone. */
static __attribute__((noinline)) uint8_t *open_record(pf_tls_t *t)
{
    t->packed_rec = NULL;
    char *rec = pf_writer_reserve(t, (uint32_t)sizeof(pf_rec_header_t) + PF_PK_EVENT_MAX);
    if (!rec)
        return NULL;
    t->packed_rec = rec;
    t->packed_len = (uint32_t)sizeof(pf_rec_header_t);
    t->packed_gen = t->chunk_gen;
    t->packed_events = 0;
    t->packed_due_at = UINT32_MAX;
    t->packed_serial++;     /* the young slots of the record before are stale */
    memset(&t->packed_last, 0, sizeof t->packed_last);
    return (uint8_t *)rec + sizeof(pf_rec_header_t);
}

/* Where the next event goes: the end of the thread's open packed record when it is still the last thing in
 * the chunk and has room for any event, else a new packed record. NULL when no room could be had. Inline:
 * as a call of its own, with the new record's path in it, it was a twentieth of an event's instructions. */
static inline __attribute__((always_inline)) uint8_t *event_room(pf_tls_t *t, uint64_t t_ns)
{
    char *rec = t->packed_rec;
    if (PF_LIKELY(record_open(t) && (size_t)(t->chunk_end - (rec + t->packed_len)) >= PF_PK_EVENT_MAX &&
                  t_ns >= t->packed_last.t_ns))
        return (uint8_t *)rec + t->packed_len;
    return open_record(t);
}

static inline pf_pk_young_slot_t *young_slot(pf_tls_t *t, uint64_t addr)
{
    /* blocks of one size class lie 16 to 512 bytes apart: their neighbours take different slots */
    return &t->packed_young[(uint32_t)((addr >> 4) * 0x9e3779b1u) >> (32 - 6)];
}
_Static_assert(PF_PK_YOUNG_SLOTS == 64, "young_slot takes 6 bits");

/* An event of n bytes goes at dst, the end of the open record: its new length is published first, then the
 * caller writes the bytes after the tag straight into the chunk, then the tag (publish_tag; core/pf_packed.h:
 * a reader stops at a tag still 0). Encoding into a buffer on the stack and copying it over cost a fifth of
 * the packed path: the copy's wide loads waited on the encoder's byte stores (a store-forwarding stall). */
static void publish_len(pf_tls_t *t, unsigned n)
{
    uint32_t len = t->packed_len + n;
    uint64_t header = (uint64_t)PF_REC_PACKED | ((uint64_t)len << 32);
    __atomic_store_n((uint64_t *)t->packed_rec, header, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_RELEASE);    /* the length before the bytes it covers */
    t->packed_len = len;
    t->chunk_pos = t->packed_rec + pf_align8(len);
}

static inline void publish_tag(uint8_t *dst, uint8_t tag)
{
    __atomic_store_n(dst, tag, __ATOMIC_RELEASE);   /* after the bytes it heads */
}

/* The time of an event happening now to a block of size bytes. */
static inline uint64_t event_time(pf_tls_t *t, uint64_t size)
{
    return size <= PF_CLOCK_SMALL_BYTES ? pf_now_ns_small(t) : pf_now_ns();
}

int pf_packed_alloc(pf_tls_t *t, void *p, uint32_t size, int domain, uint8_t flags, uint32_t stack_id)
{
    if (!pf_cfg.packed || (flags & ~(PF_ALLOC_EXACT | PF_ALLOC_NO_PYSTATE | PF_ALLOC_TRUNCATED)) ||
        !(flags & PF_ALLOC_EXACT) || domain < 0 || domain >= PF_DOMAIN_COUNT)
        return 1;
    uint64_t t_ns, addr = (uint64_t)(uintptr_t)p;
    t_ns = event_time(t, size);
    uint8_t *dst = event_room(t, t_ns);
    if (!dst)
        return -1;
    int young = size <= PF_PK_YOUNG_BYTES && pf_cfg.young_frees;
    pf_pk_alloc_fields_t f;
    pf_pk_alloc_prepare(&f, &t->packed_last, t_ns, addr, size, stack_id, (unsigned)domain, flags, young);
    publish_len(t, f.len);
    pf_pk_alloc_put(dst, &f);
    pf_pk_alloc_advance(&t->packed_last, t_ns, addr, stack_id);
    publish_tag(dst, f.tag);
    if (young)
        *young_slot(t, addr) = (pf_pk_young_slot_t){addr, t->packed_serial, t->packed_len - 1, t->packed_events,
                                                     (uint32_t)domain};
    t->packed_events++;
    return 0;
}

/* Sets the life byte of p's young allocation instead of writing a FREE event, where it may (core/pf_packed.h):
 * its record still open, at most PF_PK_YOUNG_GAP_MAX events written since, freed through its own domain,
 * not by realloc, at most PF_PK_YOUNG_SLACK_NS after the last event, and not after a later allocation's
 * young free at the same point (the reader hands those out the later allocation's first). Returns 1 if set. */
static int young_free(pf_tls_t *t, uint64_t addr, uint64_t size, uint16_t aux, uint64_t t_ns)
{
    pf_pk_young_slot_t *y = young_slot(t, addr);
    if (y->addr != addr)
        return 0;
    y->addr = 0;    /* whatever happens below, the block is gone */
    uint32_t between = t->packed_events - y->event - 1;
    if (size > PF_PK_YOUNG_BYTES || (aux & PF_FREE_BY_REALLOC) || PF_FREE_DOMAIN(aux) != y->domain ||
        y->serial != t->packed_serial || between > PF_PK_YOUNG_GAP_MAX || !record_open(t) ||
        t_ns - t->packed_last.t_ns > PF_PK_YOUNG_SLACK_NS ||
        (t->packed_due_at == t->packed_events && y->event > t->packed_due_alloc))
        return 0;
    t->packed_due_at = t->packed_events;
    t->packed_due_alloc = y->event;
    __atomic_store_n((uint8_t *)t->packed_rec + y->life_at, pf_pk_life(between, PF_FREE_KIND(aux)), __ATOMIC_RELEASE);
    return 1;
}

int pf_packed_free(pf_tls_t *t, void *p, uint64_t size, uint16_t aux)
{
    if (!pf_cfg.packed || !pf_pk_free_packable(aux))
        return 1;
    uint64_t t_ns, addr = (uint64_t)(uintptr_t)p;
    t_ns = event_time(t, size);
    if (young_free(t, addr, size, aux, t_ns))
        return 0;
    uint8_t *dst = event_room(t, t_ns);
    if (!dst)
        return -1;
    pf_pk_free_fields_t f;
    pf_pk_free_prepare(&f, &t->packed_last, t_ns, addr, aux);
    publish_len(t, f.len);
    pf_pk_free_put(dst, &f);
    pf_pk_free_advance(&t->packed_last, t_ns, addr);
    publish_tag(dst, f.tag);
    t->packed_events++;
    return 0;
}
