/* pf_copies.c - COPY records and the redundant-copy verdict (docs/how-it-measures.md, "Redundant copies").
 *
 * A recorded copy whose two ends both lie in tracked objects links the objects (pf_copylink_t, kept on
 * both). When the first of the two is freed, its bytes are compared with the other's, before the memory
 * is released: still equal means neither was modified while both lived, so one buffer would have done
 * (the DrPy criterion). The peer is held live (its table stripe locked) while it is read.
 *
 * A compare reads as many bytes as the copy wrote, which would double the cost of a copy-bound program.
 * So each thread has a compare budget: the first PF_COMPARE_INITIAL bytes of copies are all judged, then
 * 1/PF_COMPARE_SHARE of the copied bytes; a copy beyond the budget is recorded but not linked. The reporter
 * extrapolates each edge's redundant share from the copies it judged.
 */
#include <string.h>

#include "pf_aggregate.h"
#include "pf_aggregate_flows.h"
#include "pf_copy_rule.h"
#include "pf_objkind.h"
#include "pf_objtable.h"
#include "pf_rec_int.h"
#include "pf_stacks.h"
#include "pf_watch_glue.h"
#include "pf_writer.h"

#define PF_COMPARE_INITIAL (256ll << 20)
#define PF_COMPARE_SHARE 8

static uint64_t next_copy_id = 1;

/* What a str or bytes end is, for the copy rule's advice (pf_copy_end_t). */
static uint8_t end_kind(const pf_objinfo_t *o)
{
    pf_obj_kind_t k = pf_objkind_str_bytes(o);
    return k == PF_OBJ_STR ? PF_COPY_END_STR : k == PF_OBJ_BYTES ? PF_COPY_END_BYTES : PF_COPY_END_OTHER;
}

/* The tracked objects at a copy's two ends, when the copy may be judged: it makes a tracked destination a
 * duplicate of another tracked object (a piece, a concatenation or a slice is no candidate: the reporter
 * asks the same of the same bytes, pf_copy_rule.h). */
static int copy_ends(const void *dst, const void *src, uint64_t n, pf_objinfo_t *d, pf_objinfo_t *s)
{
    return pf_objtable_find_start((uintptr_t)dst, PF_COPY_MAX_HEADER, d) &&
           pf_copy_fills_object((uintptr_t)dst - d->addr, n, d->size) &&
           pf_objtable_find_start((uintptr_t)src, PF_COPY_MAX_HEADER, s) && d->addr != s->addr &&
           pf_copy_duplicates((uintptr_t)dst - d->addr, d->size, (uintptr_t)src - s->addr, s->size, n);
}

/* 1 when the thread's compare budget covers judging a copy of n bytes (each copy earns 1/PF_COMPARE_SHARE of
 * its bytes); beyond it a copy is recorded, not linked, and its ends are not even looked up. */
static int within_budget(pf_tls_t *t, uint64_t n)
{
    if (!t->compare_credit_set) {
        t->compare_credit = PF_COMPARE_INITIAL;
        t->compare_credit_set = 1;
    }
    t->compare_credit += (int64_t)(n / PF_COMPARE_SHARE);
    return t->compare_credit >= (int64_t)n;
}

/* A flow's end: the site of the tracked object found there (found), or untracked. An object recorded
 * before --aggregate-after's switch has no site: its ALLOC record names its stack, a flow cannot. */
static pf_agg_end_t agg_end(int found, const pf_objinfo_t *o)
{
    if (!found || !o->site)
        return (pf_agg_end_t){0, PF_AGG_UNTRACKED, 0};
    return (pf_agg_end_t){o->site - 1, (uint8_t)o->domain, (uint8_t)(o->flags & (PF_ALLOC_NO_PYSTATE | PF_ALLOC_TRUNCATED))};
}

/* The ends of a copy as flows see them: whatever tracked objects start at dst and src (or at most a header
 * before). Returns 1 when the copy makes its destination a duplicate of its source (a candidate for a
 * verdict, as copy_ends decides). */
static int flow_ends(const void *dst, const void *src, uint64_t n, pf_objinfo_t *d, int *has_d, pf_objinfo_t *s,
                     int *has_s)
{
    *has_d = pf_objtable_find_start((uintptr_t)dst, PF_COPY_MAX_HEADER, d);
    *has_s = pf_objtable_find_start((uintptr_t)src, PF_COPY_MAX_HEADER, s) && !(*has_d && d->addr == s->addr);
    return *has_d && *has_s && pf_copy_fills_object((uintptr_t)dst - d->addr, n, d->size) &&
           pf_copy_duplicates((uintptr_t)dst - d->addr, d->size, (uintptr_t)src - s->addr, s->size, n);
}

/* --aggregate: a copy counted in its stack's copy totals and on its flow (old: the block a moving realloc
 * freed, its source: never a candidate, as by default). Returns 0 when the stack has no id (write a COPY
 * record); else 1, with *flow_id the flow's id (0: the flow table is full), and *linked set when the copy is
 * to be linked for a verdict under that id (a candidate within the compare budget; *d and *s its ends). */
static int aggregate_copy(pf_tls_t *t, const pf_stack_t *st, const void *dst, const void *src, uint64_t n,
                          uint64_t est, int kind, const pf_objinfo_t *old, int *linked, pf_objinfo_t *d,
                          pf_objinfo_t *s, uint64_t *flow_id)
{
    uint32_t sid;
    if (!pf_aggregate_copy(t, st, est, &sid))
        return 0;
    int has_d, has_s, candidate = 0;
    *linked = 0;
    if (old) {
        has_d = pf_objtable_find_start((uintptr_t)dst, PF_COPY_MAX_HEADER, d);
        *s = *old;
        has_s = 1;
    } else {
        int budget = within_budget(t, n);   /* earns its credit whether judged or not, as by default */
        candidate = flow_ends(dst, src, n, d, &has_d, s, &has_s);
        *linked = candidate && budget;
    }
    uint8_t ends = *linked ? PF_COPY_ENDS(end_kind(s), end_kind(d)) : 0;
    *flow_id = pf_agg_flows_copy(sid, st->flags, kind, agg_end(has_s, s), agg_end(has_d, d), est,
                                 pf_agg_count_of(n, est), candidate, ends);
    *linked = *linked && *flow_id;
    return 1;
}

/* The COPY of an exact, unlinked copy whose stack has an id, in its short form (pf_format.h). */
static void write_copy_short(pf_tls_t *t, const void *dst, const void *src, uint64_t n, uint8_t flags, int kind,
                             uint32_t sid)
{
    const uint32_t bytes = (uint32_t)(sizeof(pf_rec_header_t) + sizeof(pf_rec_copy_short_t));
    char *rec = pf_writer_reserve(t, bytes);
    if (!rec)
        return;
    pf_rec_copy_short_t *c = (pf_rec_copy_short_t *)(rec + sizeof(pf_rec_header_t));
    c->t_ns = pf_now_ns();
    c->dst = (uint64_t)(uintptr_t)dst;
    c->src = (uint64_t)(uintptr_t)src;
    c->bytes = (uint32_t)n;
    c->stack_id = sid;
    pf_writer_commit(t, rec, PF_REC_COPY_SHORT, PF_COPY_SHORT_AUX(kind, flags | PF_ALLOC_STACK_REF), bytes);
}

/* named: a record may name the copy's id later (a verdict); end_types: what the ends were (pf_objkind),
 * 0 where not known. Either keeps it out of the short form, which has room for neither. */
static void write_copy(pf_tls_t *t, uint64_t id, const void *dst, const void *src, uint64_t n, uint64_t est,
                       uint8_t flags, int kind, uint8_t ends, uint16_t end_types, const pf_stack_t *st, int named)
{
    if (!named && !end_types && est == n && n <= UINT32_MAX && (flags & PF_ALLOC_EXACT)) {
        uint32_t sid = pf_record_stack_id(t, st);
        if (sid) {
            write_copy_short(t, dst, src, n, (uint8_t)(flags | st->flags), kind, sid);
            return;
        }
    }
    uint32_t sid, bytes;
    char *rec = pf_record_reserve_stacked(t, st, sizeof(pf_rec_copy_t), &sid, &bytes);
    if (!rec)
        return;
    pf_rec_copy_t *c = (pf_rec_copy_t *)(rec + sizeof(pf_rec_header_t));
    c->t_ns = pf_now_ns();
    c->copy_id = id;
    c->dst = (uint64_t)(uintptr_t)dst;
    c->src = (uint64_t)(uintptr_t)src;
    c->bytes = n;
    c->est_bytes = est;
    c->flags = flags;
    c->ends = ends;
    pf_stacks_fields(st, sid, &c->flags, &c->n_py, &c->n_native);
    c->end_types = end_types;
    pf_stacks_store_tail(st, sid, c + 1);
    pf_writer_commit(t, rec, PF_REC_COPY, (uint16_t)kind, bytes);
}

/* Links the two objects of a copy (copy_ends) so the first free can judge it. */
static void link_copy(pf_tls_t *t, uint64_t id, const void *dst, const void *src, uint64_t n, const pf_objinfo_t *d,
                      const pf_objinfo_t *s)
{
    /* Device memory cannot be read from the host: a copy with a GPU end is never compared here (uploads
     * are judged by content hash in pf_hooks_cuda.c). Found on a real GPU: the mock's host memory hid it. */
    if (d->domain == PF_DOMAIN_GPU || s->domain == PF_DOMAIN_GPU)
        return;
    uint64_t len = n;
    if ((uintptr_t)dst + len > d->addr + d->size)
        len = d->addr + d->size - (uintptr_t)dst;
    if ((uintptr_t)src + len > s->addr + s->size)
        len = s->addr + s->size - (uintptr_t)src;
    pf_copylink_t on_dst = {id, s->addr, s->serial, (uintptr_t)src, (uintptr_t)dst, len};
    pf_copylink_t on_src = {id, d->addr, d->serial, (uintptr_t)dst, (uintptr_t)src, len};
    pf_objtable_set_link(d->addr, &on_dst);
    pf_objtable_set_link(s->addr, &on_src);
    t->compare_credit -= (int64_t)len;
    /* a write caught on either end decides the verdict with the writer's line; compare-at-free stays the
     * verdict for copies whose watched words nobody changed (and the only one of an aggregated flow's, whose
     * counts have no writer's line to keep) */
    if (!(id & PF_AGG_FLOW_COPY_ID))
        pf_watch_glue_copy(id, dst, src, len);
}

/* Writes a COPY record and, within the compare budget, links its objects for a verdict; the record names its
 * ends' str/bytes advice where it was linked (the copies a verdict may concern) and their Python types
 * wherever the runtime finds them (the flow graph's boxes). Returns the copy's id. */
static uint64_t record_copy(pf_tls_t *t, const void *dst, const void *src, uint64_t n, uint64_t est, uint8_t flags,
                            int kind)
{
    pf_stack_t st;
    pf_stack_capture(t, &st);
    pf_objinfo_t d, s;
    int linked;
    uint64_t id;
    if (pf_aggregating() && aggregate_copy(t, &st, dst, src, n, est, kind, NULL, &linked, &d, &s, &id)) {
        if (linked)     /* --aggregate: judged as by default, the outcome counted on the flow */
            link_copy(t, id, dst, src, n, &d, &s);
        return id;
    }
    id = __atomic_fetch_add(&next_copy_id, 1, __ATOMIC_RELAXED);
    linked = within_budget(t, n) && copy_ends(dst, src, n, &d, &s);
    /* the kinds of its ends, for the flow graph's nodes: a copy no verdict links looks its ends up too (a
     * dict's growth copies its entries into the next table, past the table's index) */
    uint16_t types = linked ? PF_COPY_END_TYPES(pf_objkind_of(&s), pf_objkind_of(&d))
                            : PF_COPY_END_TYPES(pf_objkind_at((uintptr_t)src), pf_objkind_at((uintptr_t)dst));
    write_copy(t, id, dst, src, n, est, flags, kind, linked ? PF_COPY_ENDS(end_kind(&s), end_kind(&d)) : 0, types,
               &st, linked || kind > PF_COPY_REALLOC);   /* a CUDA copy's id: its content-hash verdict's */
    if (linked)
        link_copy(t, id, dst, src, n, &d, &s);
    return id;
}

/* 1 when dst lies in the live part of this thread's stack: between the running frame and the stack's top.
 * Such a copy fills a caller's local variable, not an object, and may be a stack switcher (greenlet,
 * gevent) writing a saved stack back over the frames, whose Python frames are then no longer what the
 * thread state points at: reading them would fault. Not known (custom or alternate stacks): 0. */
static int copies_into_live_stack(const pf_tls_t *t, const void *dst)
{
    uintptr_t here = (uintptr_t)__builtin_frame_address(0), d = (uintptr_t)dst;
    return here >= t->stack_low && here < t->stack_high && d >= here && d < t->stack_high;
}

void pf_on_copy_slow(pf_tls_t *t, void *dst, const void *src, size_t n, int kind)
{
    if (t->guard) {
        /* A copy made under the guard by code pyflow runs for the program (the allocator inside the PyMem
         * wrappers, whose realloc moves are recorded as such; a CUDA library inside a CUDA hook): it cannot
         * be recorded here, and its bytes go back to the countdown. The recorder's own copies never get
         * here: they call the real memcpy (pf_rec_int.h). */
        t->copy_sampler.countdown += (int64_t)n;
        return;
    }
    pf_guard_enter(t);
    if (PF_UNLIKELY(!__atomic_load_n(&pf_cfg.enabled, __ATOMIC_ACQUIRE))) {
        t->copy_sampler.countdown = t->copy_sampler.armed = INT64_MAX / 4;
        pf_guard_leave(t);
        return;
    }
    pf_enter_recording(t);
    uint64_t est, mean, threshold;
    pf_sampling_now(pf_cfg.copy_sample_bytes, pf_cfg.copy_threshold, &mean, &threshold);
    pf_sample_verdict_t v = pf_sampler_visit(&t->copy_sampler, n, mean, threshold, &est);
    if (v != PF_SAMPLE_SKIP && n > 0 && dst != src && !copies_into_live_stack(t, dst)) {
        record_copy(t, dst, src, n, est, v == PF_SAMPLE_EXACT ? PF_ALLOC_EXACT : PF_ALLOC_SAMPLED, kind);
    }
    pf_guard_leave(t);
}

uint64_t pf_on_copy_exact(pf_tls_t *t, void *dst, const void *src, size_t n, int kind)
{
    if (t->guard || !__atomic_load_n(&pf_cfg.enabled, __ATOMIC_ACQUIRE))
        return 0;
    pf_guard_enter(t);
    pf_enter_recording(t);
    uint64_t id = record_copy(t, dst, src, n, n, PF_ALLOC_EXACT, kind);
    pf_guard_leave(t);
    return id;
}

void pf_on_realloc_moved(pf_tls_t *t, void *dst, const pf_objinfo_t *old, size_t new_size)
{
    if (t->guard || !__atomic_load_n(&pf_cfg.enabled, __ATOMIC_ACQUIRE))
        return;
    pf_guard_enter(t);
    uint64_t n = old->size < new_size ? old->size : new_size;
    /* The old block stood for its estimate; the move carries the same share of it (at today's mean: the
     * block's own is not kept, and differs only after the profile neared its cap). */
    uint64_t mean, threshold;
    pf_sampling_now(pf_cfg.mean_sample_bytes, pf_cfg.object_threshold, &mean, &threshold);
    uint64_t est = (old->flags & PF_ALLOC_EXACT) || !old->size
                       ? n
                       : (uint64_t)((double)pf_sampler_estimate(old->size, mean) * (double)n / (double)old->size);
    pf_stack_t st;
    pf_stack_capture(t, &st);
    pf_objinfo_t d, s;
    int linked;
    uint64_t id;
    if (pf_aggregating() && aggregate_copy(t, &st, dst, NULL, n, est, PF_COPY_REALLOC, old, &linked, &d, &s, &id)) {
        pf_guard_leave(t);
        return;
    }
    id = __atomic_fetch_add(&next_copy_id, 1, __ATOMIC_RELAXED);
    /* the new block is the old one moved: the kind its free found (free_slow) is the new block's too */
    pf_obj_kind_t moved = (pf_obj_kind_t)(old->flags >> PF_OBJ_KIND_FLAGS_SHIFT & 0xffu);
    write_copy(t, id, dst, (const void *)old->addr, n, est,
               (old->flags & PF_ALLOC_EXACT) ? PF_ALLOC_EXACT : PF_ALLOC_SAMPLED, PF_COPY_REALLOC, 0,
               PF_COPY_END_TYPES(moved, moved), &st, 0);
    pf_guard_leave(t);
}

typedef struct compare_ctx {
    const pf_copylink_t *link;  /* of the object being freed */
    int equal;
} compare_ctx_t;

/* Runs with the peer held live. Returns 0 when compared, -2 when the address holds another object now.
 * (The peer may have taken part in later copies: each copy is still judged by its own link.) */
static int compare_with_peer(pf_objinfo_t *peer, void *arg)
{
    compare_ctx_t *c = arg;
    const pf_copylink_t *l = c->link;
    if (peer->serial != l->peer_serial)
        return -2;
    c->equal = memcmp((const void *)l->self_data, (const void *)l->peer_data, l->len) == 0;
    for (int k = 0; k < PF_OBJ_LINKS; k++)
        if (peer->link[k].copy_id == l->copy_id)
            peer->link[k].copy_id = 0;     /* judged once */
    return 0;
}

void pf_copy_write_verdict(pf_tls_t *t, uint64_t copy_id, int verdict, uint64_t compared, uint32_t evidence)
{
    if (copy_id & PF_AGG_FLOW_COPY_ID) {    /* --aggregate: counted on the copy's flow, no record */
        pf_agg_flows_verdict(copy_id, verdict == PF_VERDICT_REDUNDANT, compared);
        return;
    }
    uint32_t bytes = (uint32_t)(sizeof(pf_rec_header_t) + sizeof(pf_rec_verdict_t));
    char *rec = pf_writer_reserve(t, bytes);
    if (!rec)
        return;
    pf_rec_verdict_t *v = (pf_rec_verdict_t *)(rec + sizeof(pf_rec_header_t));
    v->t_ns = pf_now_ns();
    v->copy_id = copy_id;
    v->compared_bytes = compared;
    v->evidence = evidence;
    v->reserved = 0;
    pf_writer_commit(t, rec, PF_REC_VERDICT, (uint16_t)verdict, bytes);
}

void pf_copy_verdict_on_free(pf_tls_t *t, pf_objinfo_t *obj)
{
    for (int k = 0; k < PF_OBJ_LINKS; k++) {
        const pf_copylink_t *l = &obj->link[k];
        if (!l->copy_id)
            continue;
        compare_ctx_t c = {l, 0};
        if (pf_objtable_with_object(l->peer_obj, compare_with_peer, &c) != 0)
            continue;
        pf_copy_write_verdict(t, l->copy_id, c.equal ? PF_VERDICT_REDUNDANT : PF_VERDICT_MODIFIED, l->len,
                              PF_EVIDENCE_COMPARE_AT_FREE);
    }
}
