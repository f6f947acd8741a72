/* pf_record_packed.c - appends exact allocations and frees to the thread's open packed record. See
 * pf_record_packed.h; the bytes of an event: core/pf_packed.h. */
#include "pf_record_packed.h"

#include <string.h>

#include "pf_clock.h"
#include "pf_writer.h"

/* Where the next event goes: the end of the thread's open packed record when it is still the last thing in
 * the chunk and has room for any event, else a new packed record (its header not yet stored). NULL when
 * no room could be had. */
static uint8_t *event_room(pf_tls_t *t, uint64_t t_ns)
{
    char *rec = t->packed_rec;
    if (rec && t->packed_gen == t->chunk_gen && t->chunk_gen == pf_writer_generation() &&
        t->chunk_pos == rec + pf_align8(t->packed_len) &&
        (size_t)(t->chunk_end - (rec + t->packed_len)) >= PF_PK_EVENT_MAX && t_ns >= t->packed_last.t_ns)
        return (uint8_t *)rec + t->packed_len;
    t->packed_rec = NULL;
    rec = pf_writer_reserve(t, (uint32_t)sizeof(pf_rec_header_t) + PF_PK_EVENT_MAX);
    if (!rec)
        return NULL;
    t->packed_rec = rec;
    t->packed_len = (uint32_t)sizeof(pf_rec_header_t);
    t->packed_gen = t->chunk_gen;
    memset(&t->packed_last, 0, sizeof t->packed_last);
    return (uint8_t *)rec + sizeof(pf_rec_header_t);
}

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

/* Room for an event happening now (its time in *t_ns): event_room's. size: the block's bytes. */
static uint8_t *event_now(pf_tls_t *t, uint64_t size, uint64_t *t_ns)
{
    *t_ns = size <= PF_CLOCK_SMALL_BYTES ? pf_now_ns_small(t) : pf_now_ns();
    return event_room(t, *t_ns);
}

int pf_packed_alloc(pf_tls_t *t, void *p, uint32_t size, int domain, uint8_t flags, uint32_t stack_id)
{
    if (!pf_cfg.packed || (flags & ~(PF_ALLOC_EXACT | PF_ALLOC_NO_PYSTATE | PF_ALLOC_TRUNCATED)) ||
        !(flags & PF_ALLOC_EXACT) || domain < 0 || domain >= PF_DOMAIN_COUNT)
        return 1;
    uint64_t t_ns, addr = (uint64_t)(uintptr_t)p;
    uint8_t *dst = event_now(t, size, &t_ns);
    if (!dst)
        return -1;
    publish_len(t, pf_pk_alloc_len(&t->packed_last, t_ns, addr, size, stack_id));
    publish_tag(dst, pf_pk_alloc_body(dst, &t->packed_last, t_ns, addr, size, stack_id, (unsigned)domain, flags));
    return 0;
}

int pf_packed_free(pf_tls_t *t, void *p, uint64_t size, uint16_t aux)
{
    if (!pf_cfg.packed || !pf_pk_free_packable(aux))
        return 1;
    uint64_t t_ns, addr = (uint64_t)(uintptr_t)p;
    uint8_t *dst = event_now(t, size, &t_ns);
    if (!dst)
        return -1;
    publish_len(t, pf_pk_free_len(&t->packed_last, t_ns, addr, aux));
    publish_tag(dst, pf_pk_free_body(dst, &t->packed_last, t_ns, addr, aux));
    return 0;
}
