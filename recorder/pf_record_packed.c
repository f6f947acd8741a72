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

/* Publishes the n bytes of ev at dst, the end of the open record: its new length first, then the bytes
 * after the tag, then the tag (core/pf_packed.h: a reader stops at a tag still 0). ev is PF_PK_EVENT_MAX
 * bytes, zero past n, and all of them are copied (a copy of fixed size, no call): the zeros land where the
 * chunk holds zeros already (event_room left that much room past the record). */
static void append(pf_tls_t *t, uint8_t *dst, const uint8_t *ev, unsigned n)
{
    uint32_t len = t->packed_len + n;
    uint64_t header = (uint64_t)PF_REC_PACKED | ((uint64_t)len << 32);
    __atomic_store_n((uint64_t *)t->packed_rec, header, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_RELEASE);    /* the length before the bytes it covers */
    memcpy(dst + 1, ev + 1, PF_PK_EVENT_MAX - 1);
    __atomic_store_n(dst, ev[0], __ATOMIC_RELEASE);
    t->packed_len = len;
    t->chunk_pos = t->packed_rec + pf_align8(len);
}

/* Room for an event happening now (its time in *t_ns): event_room's. */
static uint8_t *event_now(pf_tls_t *t, uint64_t *t_ns)
{
    *t_ns = pf_now_ns();
    return event_room(t, *t_ns);
}

int pf_packed_alloc(pf_tls_t *t, void *p, uint32_t size, int domain, uint8_t flags, uint32_t stack_id)
{
    if (!pf_cfg.packed || (flags & ~(PF_ALLOC_EXACT | PF_ALLOC_NO_PYSTATE | PF_ALLOC_TRUNCATED)) ||
        !(flags & PF_ALLOC_EXACT) || domain < 0 || domain >= PF_DOMAIN_COUNT)
        return 1;
    uint64_t t_ns;
    uint8_t *dst = event_now(t, &t_ns), ev[PF_PK_EVENT_MAX] = {0};
    if (!dst)
        return -1;
    append(t, dst, ev, pf_pk_encode_alloc(ev, &t->packed_last, t_ns, (uint64_t)(uintptr_t)p, size, stack_id,
                                          (unsigned)domain, flags));
    return 0;
}

int pf_packed_free(pf_tls_t *t, void *p, uint16_t aux)
{
    if (!pf_cfg.packed || !pf_pk_free_packable(aux))
        return 1;
    uint64_t t_ns;
    uint8_t *dst = event_now(t, &t_ns), ev[PF_PK_EVENT_MAX] = {0};
    if (!dst)
        return -1;
    append(t, dst, ev, pf_pk_encode_free(ev, &t->packed_last, t_ns, (uint64_t)(uintptr_t)p, aux));
    return 0;
}
