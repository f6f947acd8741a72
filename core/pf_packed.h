/* pf_packed.h - the events of a PF_REC_PACKED record (core/pf_format.h): their byte layout, and the varint
 * and zigzag codes they are made of. Shared by the runtime (recorder/pf_record_packed.c writes them), the
 * reporter (report/pf_reader.c checks them, report/pf_model_events.c reads them) and the unit tests.
 *
 * An --exact run records nearly every allocation as a PF_REC_ALLOC_SHORT (32 bytes) and its free as a
 * PF_REC_FREE (24 bytes). One thread's consecutive such events go instead into one packed record, each
 * delta-encoded against the event before it in the same record, in 5 to 12 bytes:
 *
 *   SIZE     FIELD
 *   1        tag (never 0): bits 0-1 what (PF_PK_ALLOC, PF_PK_FREE), bits 2-4 the domain, then
 *              ALLOC: bit 5 PF_ALLOC_NO_PYSTATE, bit 6 PF_ALLOC_TRUNCATED, bit 7 the stack of the record's
 *                     previous ALLOC (no stack field)
 *              FREE:  bit 5 PF_FREE_BY_REALLOC, bit 6 an object-kind byte follows, bit 7 zero
 *   1-10     time: ns since the previous event (varint; the record's first: since header.start_mono_ns)
 *   1-10     address: minus the previous event's (zigzag varint; the first: minus 0)
 *   ALLOC:   1-5 size (varint, < 2^32); unless tag bit 7, 1-5 stack id minus the record's previous
 *            ALLOC's (zigzag varint; the first: minus 0)
 *   FREE:    with tag bit 6, 1 byte pf_obj_kind_t
 *
 * The record's header holds its valid length (not a multiple of 8; the next record starts at the 8-aligned
 * end). The writer stores the new length first, then the event's bytes after its tag, then the tag
 * (release): an event whose tag is still 0 was cut off by the process's death, and a reader stops at it.
 * Storing the length last instead would leave an event's bytes past the old aligned end, where a reader
 * looks for the next record's header, when the process dies between the two.
 */
#ifndef PF_PACKED_H
#define PF_PACKED_H

#include <stddef.h>
#include <stdint.h>

#include "pf_format.h"

#define PF_PK_ALLOC 1u
#define PF_PK_FREE 2u
#define PF_PK_WHAT 0x3u
#define PF_PK_DOMAIN_SHIFT 2
#define PF_PK_NO_PYSTATE 0x20u     /* ALLOC */
#define PF_PK_TRUNCATED 0x40u      /* ALLOC */
#define PF_PK_SAME_STACK 0x80u     /* ALLOC */
#define PF_PK_BY_REALLOC 0x20u     /* FREE */
#define PF_PK_KIND 0x40u           /* FREE */
#define PF_PK_EVENT_MAX 32u        /* the most bytes one event takes (an ALLOC: 1 + 10 + 10 + 5 + 5) */

/* The writer's and the reader's running state in one record: what the next event is a delta against. */
typedef struct pf_pk_state {
    uint64_t t_ns, addr;
    uint32_t stack_id;
} pf_pk_state_t;

static inline uint64_t pf_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t pf_unzigzag(uint64_t u) { return (int64_t)(u >> 1) ^ -(int64_t)(u & 1); }

/* Writes v as a little-endian base-128 varint at p. Returns the bytes used (1 to 10). */
static inline unsigned pf_varint_put(uint8_t *p, uint64_t v)
{
    unsigned n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/* Reads a varint from [*p, end) into *v and moves *p past it. Returns 0, or -1 when it runs past end or
 * past 10 bytes (64 bits). */
static inline int pf_varint_get(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t out = 0;
    for (unsigned shift = 0; shift < 70 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        out |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = out;
            return 0;
        }
    }
    return -1;
}

/* One decoded event: the record it stands for, as type (PF_REC_ALLOC_SHORT or PF_REC_FREE), aux and payload
 * (a FREE's pf_rec_free_t is the first 16 bytes of p). */
typedef struct pf_pk_event {
    uint16_t type;
    uint16_t aux;
    pf_rec_alloc_short_t p;
} pf_pk_event_t;

_Static_assert(offsetof(pf_rec_alloc_short_t, t_ns) == offsetof(pf_rec_free_t, t_ns) &&
                   offsetof(pf_rec_alloc_short_t, addr) == offsetof(pf_rec_free_t, addr),
               "a decoded FREE reads as the first fields of a short ALLOC");

/* Decodes the event at *p (in [*p, end), the record's valid bytes) against st, into ev, and moves *p past
 * it. Returns 1 for an event, 0 at the end (no bytes left, or a tag still 0: an event the writer's death
 * cut off), -1 when the bytes are not an event (a reserved bit, an unknown domain, a field running past
 * end, a size or stack id past 32 bits). */
static inline __attribute__((always_inline)) int pf_pk_decode(const uint8_t **p, const uint8_t *end, pf_pk_state_t *st, pf_pk_event_t *ev)
{
    if (*p >= end || **p == 0)
        return 0;
    uint8_t tag = *(*p)++;
    unsigned what = tag & PF_PK_WHAT, domain = tag >> PF_PK_DOMAIN_SHIFT & 0x7u;
    uint64_t dt, daddr, v;
    if ((what != PF_PK_ALLOC && what != PF_PK_FREE) || domain >= PF_DOMAIN_COUNT ||
        pf_varint_get(p, end, &dt) || pf_varint_get(p, end, &daddr))
        return -1;
    st->t_ns += dt;
    st->addr += (uint64_t)pf_unzigzag(daddr);
    ev->p.t_ns = st->t_ns;
    ev->p.addr = st->addr;
    if (what == PF_PK_ALLOC) {
        if (pf_varint_get(p, end, &v) || v > UINT32_MAX)
            return -1;
        ev->p.size = (uint32_t)v;
        if (!(tag & PF_PK_SAME_STACK)) {
            uint64_t d;
            if (pf_varint_get(p, end, &d))
                return -1;
            int64_t sid = (int64_t)st->stack_id + pf_unzigzag(d);
            if (sid < 0 || sid > (int64_t)UINT32_MAX)
                return -1;
            st->stack_id = (uint32_t)sid;
        }
        ev->p.stack_id = st->stack_id;
        uint32_t flags = PF_ALLOC_EXACT | PF_ALLOC_STACK_REF | (tag & PF_PK_NO_PYSTATE ? PF_ALLOC_NO_PYSTATE : 0) |
                         (tag & PF_PK_TRUNCATED ? PF_ALLOC_TRUNCATED : 0);
        ev->type = PF_REC_ALLOC_SHORT;
        ev->aux = PF_ALLOC_SHORT_AUX(domain, flags);
        return 1;
    }
    if (tag & 0x80u)
        return -1;
    unsigned kind = 0;
    if (tag & PF_PK_KIND) {
        if (*p >= end)
            return -1;
        kind = *(*p)++;
    }
    ev->p.size = ev->p.stack_id = 0;
    ev->type = PF_REC_FREE;
    ev->aux = (uint16_t)(PF_FREE_AUX(domain, kind) | (tag & PF_PK_BY_REALLOC ? PF_FREE_BY_REALLOC : 0));
    return 1;
}

/* Decodes a packed record's events, [p, p + n), to the end or (first_only) the first one: *events how many
 * were decoded, *first_ns and *last_ns the first's and the last one's t_ns (0, 0 with none). Returns 0, or -1
 * at bytes that are no event. */
static inline int pf_pk_span(const uint8_t *p, size_t n, int first_only, uint32_t *events, uint64_t *first_ns,
                             uint64_t *last_ns)
{
    pf_pk_state_t st = {0};
    pf_pk_event_t ev;
    const uint8_t *end = p + n;
    int rc;
    *events = 0;
    *first_ns = 0;
    while ((rc = pf_pk_decode(&p, end, &st, &ev)) > 0) {
        if ((*events)++ == 0)
            *first_ns = ev.p.t_ns;
        if (first_only)
            break;
    }
    *last_ns = st.t_ns;     /* times only grow along a record */
    return rc < 0 ? -1 : 0;
}

/* The bytes pf_varint_put takes for v. */
static inline unsigned pf_varint_len(uint64_t v)
{
    return v < 0x80 ? 1u : (unsigned)(70 - __builtin_clzll(v)) / 7u;
}

/* The bytes an ALLOC_SHORT-able allocation takes encoded against st (its tag included). The writer stores a
 * record's new length before the event's bytes (above), so it needs the length first. */
static inline unsigned pf_pk_alloc_len(const pf_pk_state_t *st, uint64_t t_ns, uint64_t addr, uint32_t size,
                                       uint32_t stack_id)
{
    return 1 + pf_varint_len(t_ns - st->t_ns) + pf_varint_len(pf_zigzag((int64_t)(addr - st->addr))) +
           pf_varint_len(size) +
           (stack_id == st->stack_id ? 0 : pf_varint_len(pf_zigzag((int64_t)stack_id - (int64_t)st->stack_id)));
}

/* Writes the allocation's bytes after its tag at out + 1 (pf_pk_alloc_len - 1 of them) and updates st;
 * returns the tag, for the caller to store at out[0] (last: the writer publishes it with a release store).
 * flags: its PF_ALLOC_NO_PYSTATE / PF_ALLOC_TRUNCATED. */
static inline uint8_t pf_pk_alloc_body(uint8_t *out, pf_pk_state_t *st, uint64_t t_ns, uint64_t addr,
                                       uint32_t size, uint32_t stack_id, unsigned domain, unsigned flags)
{
    uint8_t tag = (uint8_t)(PF_PK_ALLOC | domain << PF_PK_DOMAIN_SHIFT | (flags & PF_ALLOC_NO_PYSTATE ? PF_PK_NO_PYSTATE : 0) |
                            (flags & PF_ALLOC_TRUNCATED ? PF_PK_TRUNCATED : 0));
    unsigned n = 1;
    n += pf_varint_put(out + n, t_ns - st->t_ns);
    n += pf_varint_put(out + n, pf_zigzag((int64_t)(addr - st->addr)));
    n += pf_varint_put(out + n, size);
    if (stack_id == st->stack_id)
        tag |= PF_PK_SAME_STACK;
    else
        pf_varint_put(out + n, pf_zigzag((int64_t)stack_id - (int64_t)st->stack_id));
    st->t_ns = t_ns;
    st->addr = addr;
    st->stack_id = stack_id;
    return tag;
}

/* Encodes an ALLOC_SHORT-able allocation against st (and updates st) into out (PF_PK_EVENT_MAX bytes).
 * Returns the bytes used. */
static inline unsigned pf_pk_encode_alloc(uint8_t *out, pf_pk_state_t *st, uint64_t t_ns, uint64_t addr,
                                          uint32_t size, uint32_t stack_id, unsigned domain, unsigned flags)
{
    unsigned n = pf_pk_alloc_len(st, t_ns, addr, size, stack_id);
    out[0] = pf_pk_alloc_body(out, st, t_ns, addr, size, stack_id, domain, flags);
    return n;
}

/* The bytes a FREE (aux as a PF_REC_FREE's) takes encoded against st, its tag included. */
static inline unsigned pf_pk_free_len(const pf_pk_state_t *st, uint64_t t_ns, uint64_t addr, uint16_t aux)
{
    return 1 + pf_varint_len(t_ns - st->t_ns) + pf_varint_len(pf_zigzag((int64_t)(addr - st->addr))) +
           (PF_FREE_KIND(aux) ? 1 : 0);
}

/* A FREE's bytes after its tag at out + 1, st updated; returns the tag (as pf_pk_alloc_body). */
static inline uint8_t pf_pk_free_body(uint8_t *out, pf_pk_state_t *st, uint64_t t_ns, uint64_t addr, uint16_t aux)
{
    unsigned kind = PF_FREE_KIND(aux);
    uint8_t tag = (uint8_t)(PF_PK_FREE | PF_FREE_DOMAIN(aux) << PF_PK_DOMAIN_SHIFT |
                            (aux & PF_FREE_BY_REALLOC ? PF_PK_BY_REALLOC : 0) | (kind ? PF_PK_KIND : 0));
    unsigned n = 1;
    n += pf_varint_put(out + n, t_ns - st->t_ns);
    n += pf_varint_put(out + n, pf_zigzag((int64_t)(addr - st->addr)));
    if (kind)
        out[n] = (uint8_t)kind;
    st->t_ns = t_ns;
    st->addr = addr;
    return tag;
}

/* Encodes a FREE (aux as a PF_REC_FREE's: domain, kind, PF_FREE_BY_REALLOC) against st into out. */
static inline unsigned pf_pk_encode_free(uint8_t *out, pf_pk_state_t *st, uint64_t t_ns, uint64_t addr, uint16_t aux)
{
    unsigned n = pf_pk_free_len(st, t_ns, addr, aux);
    out[0] = pf_pk_free_body(out, st, t_ns, addr, aux);
    return n;
}

/* 1 when a FREE's aux can be packed (decodes to the same aux): a domain below 8, no other bits. */
static inline int pf_pk_free_packable(uint16_t aux)
{
    return (aux & ~(uint16_t)(0xff00u | PF_FREE_BY_REALLOC | 0x7u)) == 0 && PF_FREE_DOMAIN(aux) < PF_DOMAIN_COUNT;
}

#endif /* PF_PACKED_H */
