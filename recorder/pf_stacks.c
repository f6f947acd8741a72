/* pf_stacks.c - interned call stacks. See pf_stacks.h.
 *
 * The table (pf_idtable.h) maps a 64-bit hash of the stack to its id and to pyflow's own copy of its words
 * (not the profile's: finished chunks are dropped from memory and re-reading them would fault them back),
 * kept as sequences of shared segments (pf_seqstore.h: the stacks of a run differ mostly in their innermost
 * frames; kept whole, one after the other, their copies were 50 MB of an --exact --native run importing
 * numpy, in shared segments 5.5 MB). Memory is bounded: 4M ids and PF_SEQ_MAX_BLOCKS blocks of segments;
 * past either, new stacks are written inline, as before interning, and nothing is lost.
 *
 * Native parts (--native) are interned apart, in a table of their own (PF_REC_NATIVE_STACK): a stack's
 * entry names its native part's entry, and its STACK record names it by id (PF_STACK_NATIVE_BY_ID). Importing
 * numpy made 95,792 stacks of up to 64 IPs with 33,756 native parts among them: written whole, their copies
 * filled the 64 MiB of blocks (every later new stack then went inline, 667 bytes an ALLOC) and their STACK
 * records were half of a 129 MB profile. A native part that cannot be interned (a table full) stays inline
 * in its stack, as before, and its IPs are then a sequence of the stack's own.
 */
#include "pf_stacks.h"

#include <string.h>

#include "pf_codes.h"
#include "pf_idtable.h"
#include "pf_modules.h"
#include "pf_seqstore.h"
#include "pf_sys.h"
#include "pf_writer.h"

/* Each id's entry: pyflow's copy of the stack's words, as sequences in `seqs`. */
typedef struct pf_stack_entry {
    uint32_t py;                    /* the n_py Python frames, 8 bytes each */
    uint32_t native;                /* native_id 0: the n_native IPs */
    uint16_t n_py;
    uint16_t n_native;
    uint32_t native_id;             /* the native part's id in `natives`; 0: its IPs are `native` */
} pf_stack_entry_t;

/* Each native id's entry: pyflow's copy of its IPs. */
typedef struct pf_native_entry {
    uint32_t ips;                   /* a sequence in `seqs` */
    uint32_t n;
} pf_native_entry_t;

_Static_assert(sizeof(pf_rec_pyframe_t) == 8, "a Python frame is one word of a stack");

static pf_idtable_t table = {.entry_bytes = sizeof(pf_stack_entry_t)};
static pf_idtable_t natives = {.entry_bytes = sizeof(pf_native_entry_t)};  /* added to under table's lock */
static pf_seqstore_t seqs;          /* added to under table's lock */

static inline uint64_t mix(uint64_t h, uint64_t w)
{
    h ^= w * 0x9E3779B97F4A7C15ull;
    h = (h << 31) | (h >> 33);
    return h * 0xC2B2AE3D27D4EB4Full;
}

/* words[0..n) into h, in four lanes: one chain of mix through a stack's 30 to 190 words waited on each
 * multiply in turn (under --native, with deep stacks new by the tens of thousands, a visible share of a
 * run). */
static uint64_t mix_words(uint64_t h, const void *words, uint32_t n)
{
    const unsigned char *p = words;
    uint64_t a = h, b = h ^ 0x632BE59BD9B4E019ull, c = h ^ 0x8CB92BA72F3D8DD7ull, d = h ^ 0xD6E8FEB86659FD93ull;
    uint64_t w[4];
    uint32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        memcpy(w, p + (size_t)i * 8, sizeof w);
        a = mix(a, w[0]);
        b = mix(b, w[1]);
        c = mix(c, w[2]);
        d = mix(d, w[3]);
    }
    memset(w, 0, sizeof w);
    memcpy(w, p + (size_t)i * 8, (size_t)(n - i) * 8);
    a = mix(a, w[0]);
    b = mix(b, w[1]);
    c = mix(c, w[2]);
    return mix(mix(mix(a, b), c), d);
}

static uint64_t hash_native(const uint64_t *ips, uint32_t n)
{
    uint64_t h = mix_words(mix(0x165667B19E3779F9ull, n), ips, n);
    return pf_idtable_hash_fix(h ^ h >> 29);
}

static int same_native(const void *entry, const void *key)
{
    const pf_native_entry_t *e = entry;
    const pf_stack_t *st = key;
    return e->n == st->n_native && pf_seq_same(&seqs, e->ips, st->native, st->n_native);
}

/* 1 when an interned stack's IPs, wherever they are kept, are native[0..e->n_native). */
static inline int entry_native_is(const pf_stack_entry_t *e, const uint64_t *native)
{
    if (!e->native_id)
        return pf_seq_same(&seqs, e->native, native, e->n_native);
    return pf_seq_same(&seqs, ((const pf_native_entry_t *)pf_idtable_entry(&natives, e->native_id))->ips, native,
                       e->n_native);
}

static uint64_t hash_stack(const pf_stack_t *st)
{
    if (st->hash)
        return st->hash;
    uint64_t h = mix(0x27D4EB2F165667C5ull, (uint64_t)st->n_py << 16 | st->n_native);
    h = mix_words(mix_words(h, st->py, st->n_py), st->native, st->n_native);
    /* kept with the stack (not part of its value): pf_stacks_known and then pf_stacks_id ask for it */
    return ((pf_stack_t *)(uintptr_t)st)->hash = pf_idtable_hash_fix(h ^ h >> 29);
}

static int same_stack(const void *entry, const void *key)
{
    const pf_stack_entry_t *e = entry;
    const pf_stack_t *st = key;
    return e->n_py == st->n_py && e->n_native == st->n_native &&
           pf_seq_same(&seqs, e->py, (const uint64_t *)st->py, st->n_py) && entry_native_is(e, st->native);
}

/* The STACK record of st under id; its native part by native_id when that is not 0. */
static int write_stack_record(pf_tls_t *t, const pf_stack_t *st, uint32_t id, uint32_t native_id)
{
    uint32_t tail = native_id ? (uint32_t)(st->n_py * sizeof(pf_rec_pyframe_t) + sizeof(pf_rec_native_ref_t))
                              : pf_stack_bytes(st);
    uint32_t bytes = pf_align8((uint32_t)(sizeof(pf_rec_header_t) + sizeof(pf_rec_stack_t)) + tail);
    char *rec = pf_writer_reserve(t, bytes);
    if (!rec)
        return -1;
    pf_rec_stack_t *s = (pf_rec_stack_t *)(rec + sizeof(pf_rec_header_t));
    s->stack_id = id;
    s->n_py = st->n_py;
    s->n_native = st->n_native;
    if (native_id) {
        memcpy(s + 1, st->py, (size_t)st->n_py * sizeof(pf_rec_pyframe_t));
        pf_rec_native_ref_t ref = {.native_id = native_id, .reserved = 0};
        memcpy((char *)(s + 1) + (size_t)st->n_py * sizeof(pf_rec_pyframe_t), &ref, sizeof ref);
    } else {
        pf_stack_store(st, s + 1);
    }
    pf_writer_commit(t, rec, PF_REC_STACK, native_id ? PF_STACK_NATIVE_BY_ID : 0, bytes);
    return 0;
}

/* The id of st's native part, interned (its NATIVE_STACK record written, its modules noted) when new; 0
 * when it has none or cannot be interned. Caller holds table's lock, which also guards seqs. */
static uint32_t native_id_locked(pf_tls_t *t, const pf_stack_t *st)
{
    if (!st->n_native)
        return 0;
    uint64_t h = hash_native(st->native, st->n_native);
    uint32_t id = pf_idtable_find(&natives, h, same_native, st);
    if (id)
        return id;
    pf_idtable_lock(&natives);
    uint32_t ip_bytes = (uint32_t)st->n_native * 8u, ips;
    pf_native_entry_t *e = pf_seq_add(&seqs, st->native, st->n_native, &ips) == 0 ? pf_idtable_reserve(&natives, &id) : NULL;
    uint32_t bytes = (uint32_t)(sizeof(pf_rec_header_t) + sizeof(pf_rec_native_stack_t)) + ip_bytes;
    char *rec = e ? pf_writer_reserve(t, bytes) : NULL;
    if (rec) {
        pf_rec_native_stack_t *n = (pf_rec_native_stack_t *)(rec + sizeof(pf_rec_header_t));
        n->native_id = id;
        n->n_native = st->n_native;
        n->reserved = 0;
        memcpy(n + 1, st->native, ip_bytes);
        pf_writer_commit(t, rec, PF_REC_NATIVE_STACK, 0, bytes);
        pf_modules_note(t, st->native, st->n_native);  /* once a native part, not once a record */
        e->ips = ips;
        e->n = st->n_native;
        pf_idtable_publish(&natives, h, id);
    } else {
        id = 0;     /* segments added stay, for later sequences that share them */
    }
    pf_idtable_unlock(&natives);
    return id;
}

int pf_stacks_match(uint32_t id, const pf_pyframe_t *frames, uint16_t n_py, const uint64_t *native,
                    uint16_t n_native, pf_rec_pyframe_t *py)
{
    if (!id || id > pf_idtable_count(&table))
        return 0;
    const pf_stack_entry_t *e = pf_idtable_entry(&table, id);
    if ((!e->n_py && !e->n_native) || e->n_py != n_py || e->n_native != n_native ||
        (n_native && !entry_native_is(e, native)))
        return 0;   /* (no stack is interned empty: such an entry was reserved and never filled) */
    uint64_t words[PF_MAX_PY_FRAMES];
    pf_seq_get(&seqs, e->py, words, n_py);
    for (uint16_t i = 0; i < n_py; i++) {
        pf_rec_pyframe_t f;
        memcpy(&f, &words[i], sizeof f);
        if (f.lasti_bytes != frames[i].lasti_bytes || !pf_codes_same(f.code_id, frames[i].code))
            return 0;
        py[i] = f;
    }
    return 1;
}

uint32_t pf_stacks_id(pf_tls_t *t, const pf_stack_t *st)
{
    if (st->id)
        return st->id;  /* the thread's stack cache found it */
    if (!st->n_py && !st->n_native)
        return 0;   /* nothing to share: inline costs no bytes */
    uint64_t h = hash_stack(st);
    uint32_t id = pf_idtable_find(&table, h, same_stack, st);
    if (PF_LIKELY(id))
        return id;

    pf_idtable_lock(&table);
    id = pf_idtable_find(&table, h, same_stack, st);   /* another thread may have added it meanwhile */
    if (!id) {
        uint32_t native_id = native_id_locked(t, st), py = 0, native = 0;
        int kept = pf_seq_add(&seqs, (const uint64_t *)st->py, st->n_py, &py) == 0 &&
                   (native_id || pf_seq_add(&seqs, st->native, st->n_native, &native) == 0);
        pf_stack_entry_t *e = kept ? pf_idtable_reserve(&table, &id) : NULL;
        if (e && write_stack_record(t, st, id, native_id) == 0) {
            if (!native_id)
                pf_modules_note(t, st->native, st->n_native);  /* once a stack, not once a record */
            e->py = py;
            e->native = native;
            e->n_py = st->n_py;
            e->n_native = st->n_native;
            e->native_id = native_id;
            pf_idtable_publish(&table, h, id);
        } else {
            id = 0;     /* the record was not written; segments added stay, for later stacks */
        }
    }
    pf_idtable_unlock(&table);
    return id;
}

uint32_t pf_stacks_known(const pf_stack_t *st)
{
    if (!st->n_py && !st->n_native)
        return 0;
    return pf_idtable_find(&table, hash_stack(st), same_stack, st);
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
    pf_idtable_reset(&table);
    pf_idtable_reset(&natives);
    pf_seq_reset(&seqs);
}

void pf_stacks_fork_prepare(void)
{
    pf_idtable_lock(&table);
    pf_idtable_lock(&natives);
}

void pf_stacks_fork_parent(void)
{
    pf_idtable_unlock(&natives);
    pf_idtable_unlock(&table);
}
