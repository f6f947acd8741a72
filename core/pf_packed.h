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
 *   YOUNG:   an ALLOC's fields, then 1 life byte (below)
 *   FREE:    with tag bit 6, 1 byte pf_obj_kind_t
 *
 * Most small objects die within a few events of their birth (a temporary: 88% of the frees of an indexing
 * loop come within 14 events of the allocation's, in the same record). Such a free needs no event of its
 * own: a small allocation is written as YOUNG, its life byte 0, and when its block is freed while the
 * record is still open and at most PF_PK_YOUNG_GAP_MAX events were written after it, the writer stores
 * the life byte instead of a FREE (one release store; a process killed before it leaves the byte 0 and the
 * object live, as a free it never recorded): bits 0-3 one more than the events written between the
 * allocation and its free, bits 4-7 the object's pf_obj_kind_t. The reader hands out that free as a FREE
 * of the block (the allocation's domain and address, not by realloc) right after those events, with the
 * time of the last of them (the writer stores the byte only when the free's own time was at most
 * PF_PK_YOUNG_SLACK_NS later). Two young frees after one event come out the later allocation's first (a
 * temporary made while another is alive goes first: the usual nesting), and the writer writes a FREE for a
 * free that would come out of its order: the reader's events are the same, in the same order, as with FREE
 * events.
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
#include <string.h>

#include "pf_format.h"

#define PF_PK_ALLOC 1u
#define PF_PK_FREE 2u
#define PF_PK_YOUNG 3u             /* an ALLOC with a life byte */
#define PF_PK_WHAT 0x3u
#define PF_PK_DOMAIN_SHIFT 2
#define PF_PK_NO_PYSTATE 0x20u     /* ALLOC */
#define PF_PK_TRUNCATED 0x40u      /* ALLOC */
#define PF_PK_SAME_STACK 0x80u     /* ALLOC */
#define PF_PK_BY_REALLOC 0x20u     /* FREE */
#define PF_PK_KIND 0x40u           /* FREE */
#define PF_PK_EVENT_MAX 32u        /* the most bytes one event takes (a YOUNG: 1 + 10 + 10 + 5 + 5 + 1) */
#define PF_PK_YOUNG_GAP_MAX 14u    /* the most events written between a young allocation and its free */
#define PF_PK_YOUNG_BYTES 512u     /* allocations this small are written YOUNG */
#define PF_PK_YOUNG_SLACK_NS 2000u /* the most a young free's time may be later than the event before it */

_Static_assert(PF_OBJ_KINDS <= 16, "a young free's kind fits in 4 bits of its life byte");

/* The writer's and the reader's running state in one record: what the next event is a delta against. */
typedef struct pf_pk_state {
    uint64_t t_ns, addr;
    uint32_t stack_id;
} pf_pk_state_t;

/* A young free the reader has read from a life byte, to hand out after the event its slot's bit in
 * pf_pk_reader_t.due_at says. */
typedef struct pf_pk_young_free {
    uint64_t addr;
    uint32_t born;      /* its allocation's event number */
    uint16_t aux;
} pf_pk_young_free_t;

/* The reader's state in one record: the deltas', the events it has read from the bytes, and the young
 * frees still to hand out (young_mask: the slots of young in use; at most one free per event of the last
 * PF_PK_YOUNG_GAP_MAX + 1 is pending). due_at[n % 16]: the slots of those due after event n (each due
 * free is handed out before the next event is read, so the ring holds the next 15 events' frees alone).
 * pf_pk_reader_start readies it. */
typedef struct pf_pk_reader {
    pf_pk_state_t d;
    uint32_t n_read;
    uint32_t young_mask;
    uint16_t due_at[16];
    pf_pk_young_free_t young[PF_PK_YOUNG_GAP_MAX + 1];
} pf_pk_reader_t;
_Static_assert(PF_PK_YOUNG_GAP_MAX + 1 <= 16, "a young free is due within the ring's 16 events; its slot fits 16 bits");

/* Readies r for a record's first event (the young frees' slots are read only where young_mask says). */
static inline void pf_pk_reader_start(pf_pk_reader_t *r)
{
    r->d = (pf_pk_state_t){0};
    r->n_read = r->young_mask = 0;
    memset(r->due_at, 0, sizeof r->due_at);
}

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
    if (__builtin_expect(*p < end && **p < 0x80u, 1)) {    /* most fields of an event are one byte */
        *v = *(*p)++;
        return 0;
    }
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

/* Hands out a young free due after the events read so far into ev, the latest allocation's first; 0 when
 * none is due. (A look through every pending free at every event was a third of the decoding.) */
static inline int pf_pk_young_due(pf_pk_reader_t *r, pf_pk_event_t *ev)
{
    uint16_t *due = &r->due_at[r->n_read & 15u];
    if (!*due)
        return 0;
    int best = __builtin_ctz(*due);
    for (uint32_t m = *due & (*due - 1u); m; m &= m - 1) {
        int i = __builtin_ctz(m);
        if (r->young[i].born > r->young[best].born)
            best = i;
    }
    *due &= (uint16_t)~(1u << best);
    const pf_pk_young_free_t *y = &r->young[best];
    r->young_mask &= ~(1u << best);
    ev->type = PF_REC_FREE;
    ev->aux = y->aux;
    ev->p.t_ns = r->d.t_ns;     /* the time of the event it follows */
    ev->p.addr = y->addr;
    ev->p.size = ev->p.stack_id = 0;
    return 1;
}

/* Decodes the next event of the record at *p (in [*p, end), the record's valid bytes) against r, into ev,
 * and moves *p past its bytes (a young free has none). Returns 1 for an event, 0 at the end (no bytes left,
 * or a tag still 0: an event the writer's death cut off), -1 when the bytes are not an event (a reserved
 * bit, an unknown domain, a field running past end, a size or stack id past 32 bits, a life byte with no
 * distance, a young free due after events the record does not have). */
static inline __attribute__((always_inline)) int pf_pk_decode(const uint8_t **p, const uint8_t *end, pf_pk_reader_t *r, pf_pk_event_t *ev)
{
    if (pf_pk_young_due(r, ev))
        return 1;
    if (*p >= end || **p == 0)
        return r->young_mask ? -1 : 0;
    pf_pk_state_t *st = &r->d;
    uint8_t tag = *(*p)++;
    unsigned what = tag & PF_PK_WHAT, domain = tag >> PF_PK_DOMAIN_SHIFT & 0x7u;
    uint64_t dt, daddr, v;
    if (what == 0 || domain >= PF_DOMAIN_COUNT || pf_varint_get(p, end, &dt) || pf_varint_get(p, end, &daddr))
        return -1;
    r->n_read++;
    st->t_ns += dt;
    st->addr += (uint64_t)pf_unzigzag(daddr);
    ev->p.t_ns = st->t_ns;
    ev->p.addr = st->addr;
    if (what != PF_PK_FREE) {
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
        if (what == PF_PK_YOUNG) {
            if (*p >= end)
                return -1;
            unsigned life = *(*p)++;
            if (life) {
                const uint32_t all = (1u << (PF_PK_YOUNG_GAP_MAX + 1)) - 1;
                if (!(life & 0xfu) || r->young_mask == all)
                    return -1;
                int i = __builtin_ctz(~r->young_mask);
                r->young_mask |= 1u << i;
                r->young[i] = (pf_pk_young_free_t){st->addr, r->n_read, (uint16_t)PF_FREE_AUX(domain, life >> 4)};
                r->due_at[(r->n_read + (life & 0xfu) - 1) & 15u] |= (uint16_t)(1u << i);   /* due after that event */
            }
        }
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
    pf_pk_reader_t st;
    pf_pk_event_t ev;
    const uint8_t *end = p + n;
    pf_pk_reader_start(&st);
    int rc;
    *events = 0;
    *first_ns = 0;
    while ((rc = pf_pk_decode(&p, end, &st, &ev)) > 0) {
        if ((*events)++ == 0)
            *first_ns = ev.p.t_ns;
        if (first_only)
            break;
    }
    *last_ns = st.d.t_ns;     /* times only grow along a record */
    return rc < 0 ? -1 : 0;
}

/* The leading zero bits of v | 1. The baseline x86-64 target counts them with BSR, four cycles on AMD's
 * cores, where LZCNT (Intel since 2013, AMD since 2007) takes one: an allocation's event takes four such
 * counts (four in a loop: 10-12 ns with BSR, 4.5-5.5 ns with LZCNT), and these lengths were a quarter of
 * record_alloc's samples in an --exact recording (perf, AMD EPYC guest).
 * LZCNT where the CPU has it (libgcc's CPU model, read each time: it is filled by a constructor, and an
 * event recorded before that counts with BSR). An older CPU runs LZCNT's bytes as BSR, so never without
 * the check. */
static inline unsigned pf_clz64(uint64_t v)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__LZCNT__)
    if (__builtin_cpu_supports("lzcnt")) {
        uint64_t n;
        __asm__("lzcnt %1, %0" : "=r"(n) : "rm"(v | 1) : "cc");
        return (unsigned)n;
    }
#endif
    return (unsigned)__builtin_clzll(v | 1);
}

/* The bytes pf_varint_put takes for v: ceil(significant bits / 7), at least 1. x * 37 >> 8 is x / 7 for
 * every x up to 70, in a multiply and a shift instead of the division's five instructions and the branch
 * (these lengths were a twentieth of an --exact recording's instructions). */
static inline unsigned pf_varint_len(uint64_t v)
{
    return (unsigned)((70 - pf_clz64(v)) * 37) >> 8;
}

/* An ALLOC_SHORT-able allocation, encoded against a state: its tag, its fields as they are written, and
 * its length, the tag included (young: as YOUNG, its life byte last). The writer stores a record's new
 * length before the event's bytes (above), so it needs the length first; working the fields out once for
 * both saves a second pass over them. */
typedef struct pf_pk_alloc_fields {
    uint64_t dt, daddr, size, dstack;
    uint8_t tag;
    uint8_t young;
    uint16_t len;
} pf_pk_alloc_fields_t;

/* f for an allocation encoded against st. flags: its PF_ALLOC_NO_PYSTATE / PF_ALLOC_TRUNCATED. */
static inline void pf_pk_alloc_prepare(pf_pk_alloc_fields_t *f, const pf_pk_state_t *st, uint64_t t_ns,
                                       uint64_t addr, uint32_t size, uint32_t stack_id, unsigned domain,
                                       unsigned flags, int young)
{
    f->tag = (uint8_t)((young ? PF_PK_YOUNG : PF_PK_ALLOC) | domain << PF_PK_DOMAIN_SHIFT |
                       (flags & PF_ALLOC_NO_PYSTATE ? PF_PK_NO_PYSTATE : 0) |
                       (flags & PF_ALLOC_TRUNCATED ? PF_PK_TRUNCATED : 0));
    f->dt = t_ns - st->t_ns;
    f->daddr = pf_zigzag((int64_t)(addr - st->addr));
    f->size = size;
    f->young = young ? 1 : 0;
    unsigned len = 1 + pf_varint_len(f->dt) + pf_varint_len(f->daddr) + pf_varint_len(size) + f->young;
    f->dstack = 0;
    if (stack_id == st->stack_id) {
        f->tag |= PF_PK_SAME_STACK;
    } else {
        f->dstack = pf_zigzag((int64_t)stack_id - (int64_t)st->stack_id);
        len += pf_varint_len(f->dstack);
    }
    f->len = (uint16_t)len;
}

/* Writes f's bytes after its tag at out + 1 (f->len - 1 of them); the caller stores f->tag at out[0] last
 * (the writer publishes it with a release store). */
static inline void pf_pk_alloc_put(uint8_t *out, const pf_pk_alloc_fields_t *f)
{
    unsigned n = 1;
    n += pf_varint_put(out + n, f->dt);
    n += pf_varint_put(out + n, f->daddr);
    n += pf_varint_put(out + n, f->size);
    if (!(f->tag & PF_PK_SAME_STACK))
        n += pf_varint_put(out + n, f->dstack);
    if (f->young)
        out[n] = 0;
}

/* st after an allocation at t_ns, addr, with stack_id. */
static inline void pf_pk_alloc_advance(pf_pk_state_t *st, uint64_t t_ns, uint64_t addr, uint32_t stack_id)
{
    st->t_ns = t_ns;
    st->addr = addr;
    st->stack_id = stack_id;
}

/* Encodes an ALLOC_SHORT-able allocation against st (and updates st) into out (PF_PK_EVENT_MAX bytes).
 * Returns the bytes used. */
static inline unsigned pf_pk_encode_alloc(uint8_t *out, pf_pk_state_t *st, uint64_t t_ns, uint64_t addr,
                                          uint32_t size, uint32_t stack_id, unsigned domain, unsigned flags,
                                          int young)
{
    pf_pk_alloc_fields_t f;
    pf_pk_alloc_prepare(&f, st, t_ns, addr, size, stack_id, domain, flags, young);
    pf_pk_alloc_put(out, &f);
    out[0] = f.tag;
    pf_pk_alloc_advance(st, t_ns, addr, stack_id);
    return f.len;
}

/* The life byte of a young allocation freed after `between` events of its record (at most
 * PF_PK_YOUNG_GAP_MAX), as an object of that pf_obj_kind_t. */
static inline uint8_t pf_pk_life(unsigned between, unsigned kind)
{
    return (uint8_t)((between + 1) | kind << 4);
}

/* A FREE (aux as a PF_REC_FREE's: domain, kind, PF_FREE_BY_REALLOC), encoded against a state, as
 * pf_pk_alloc_fields_t an allocation. */
typedef struct pf_pk_free_fields {
    uint64_t dt, daddr;
    uint8_t tag;
    uint8_t kind;
    uint16_t len;
} pf_pk_free_fields_t;

static inline void pf_pk_free_prepare(pf_pk_free_fields_t *f, const pf_pk_state_t *st, uint64_t t_ns,
                                      uint64_t addr, uint16_t aux)
{
    f->kind = (uint8_t)PF_FREE_KIND(aux);
    f->tag = (uint8_t)(PF_PK_FREE | PF_FREE_DOMAIN(aux) << PF_PK_DOMAIN_SHIFT |
                       (aux & PF_FREE_BY_REALLOC ? PF_PK_BY_REALLOC : 0) | (f->kind ? PF_PK_KIND : 0));
    f->dt = t_ns - st->t_ns;
    f->daddr = pf_zigzag((int64_t)(addr - st->addr));
    f->len = (uint16_t)(1 + pf_varint_len(f->dt) + pf_varint_len(f->daddr) + (f->kind ? 1 : 0));
}

/* f's bytes after its tag at out + 1 (as pf_pk_alloc_put). */
static inline void pf_pk_free_put(uint8_t *out, const pf_pk_free_fields_t *f)
{
    unsigned n = 1;
    n += pf_varint_put(out + n, f->dt);
    n += pf_varint_put(out + n, f->daddr);
    if (f->kind)
        out[n] = f->kind;
}

static inline void pf_pk_free_advance(pf_pk_state_t *st, uint64_t t_ns, uint64_t addr)
{
    st->t_ns = t_ns;
    st->addr = addr;
}

/* Encodes a FREE against st (and updates st) into out. Returns the bytes used. */
static inline unsigned pf_pk_encode_free(uint8_t *out, pf_pk_state_t *st, uint64_t t_ns, uint64_t addr, uint16_t aux)
{
    pf_pk_free_fields_t f;
    pf_pk_free_prepare(&f, st, t_ns, addr, aux);
    pf_pk_free_put(out, &f);
    out[0] = f.tag;
    pf_pk_free_advance(st, t_ns, addr);
    return f.len;
}

/* 1 when a FREE's aux can be packed (decodes to the same aux): a domain below 8, no other bits. */
static inline int pf_pk_free_packable(uint16_t aux)
{
    return (aux & ~(uint16_t)(0xff00u | PF_FREE_BY_REALLOC | 0x7u)) == 0 && PF_FREE_DOMAIN(aux) < PF_DOMAIN_COUNT;
}

#endif /* PF_PACKED_H */
