/* pf_live_ahead.c - an exact profile's live objects, found ahead of the sweep (see pf_live_ahead.h).
 *
 * Each rule below is the sweep's own (pf_model_sweep.c's on_alloc, on_free and pf_sweep_release,
 * pf_model_objects.c's process ends and lookups), with the same map operations in the same order, so that
 * keys land where the sweep's map put them and indices come out as its free list gave them. */
#include "pf_live_ahead.h"

#include <stdlib.h>
#include <string.h>

#include "pf_sweep_int.h"

/* The flag, in an object's size, of one in the ranges (sizes stay below it: it is 8 EiB). */
#define PF_AHEAD_RANGED (1ull << 63)

struct pf_live_ahead {
    loader_t *L;
    pf_live_map_t live;
    uint32_t *free_objs;        /* indices of released objects, the last one first handed out again (room
                                   for every index) */
    size_t n_free;
    uint32_t n_objs;            /* indices handed out at all */
    uint64_t *size;             /* per index: the object's size (lookups inside it), with PF_AHEAD_RANGED */
    size_t cap_objs;
    pf_ranges_t ranges;
    uint64_t parked;
    uint64_t *proc_objs;        /* per process: its live objects */
    const proc_end_t *ends, *next_end;
    pf_ahead_released_t *released;  /* per end, in ends' order */
};

/* Cache lines of its own, for what the merge thread writes at every event: beside the sweep's small
 * allocations (its per-process arrays), each write took the line from the sweep's core (the sweep's
 * report was a third slower). */
static void *own_lines(size_t bytes)
{
    bytes = (bytes + 63) / 64 * 64;
    void *p = pf_xaligned_alloc(64, bytes);
    memset(p, 0, bytes);
    return p;
}

pf_live_ahead_t *pf_live_ahead_new(loader_t *L, const struct proc_end *ends)
{
    pf_live_ahead_t *A = own_lines(sizeof *A);
    A->L = L;
    A->live.roomy = 1;      /* an exact profile's map (pf_model_sweep.c) */
    A->proc_objs = own_lines((L->n_procs + 1) * sizeof *A->proc_objs);
    A->ends = A->next_end = ends;
    size_t n_ends = 0;
    while (ends[n_ends].t != UINT64_MAX)
        n_ends++;
    A->released = pf_xcalloc(n_ends + 1, sizeof *A->released);
    return A;
}

const pf_ahead_released_t *pf_live_ahead_released(const pf_live_ahead_t *A, size_t j)
{
    return &A->released[j];
}

void pf_live_ahead_finish(pf_live_ahead_t *A, pf_live_map_t *live)
{
    pf_live_free(live);
    *live = A->live;
    for (const proc_end_t *e = A->ends; e < A->next_end; e++) {
        free(A->released[e - A->ends].keys);
        free(A->released[e - A->ends].objs);
    }
    free(A->released);
    pf_grow_free(A->free_objs, A->cap_objs * sizeof *A->free_objs);
    pf_grow_free(A->size, A->cap_objs * sizeof *A->size);
    free(A->ranges.v);
    free(A->proc_objs);
    free(A);
}

/* An index for a new object: the last one released, else a new one (the sweep's new_object). */
static uint32_t new_object(pf_live_ahead_t *A, uint64_t size, int ranged)
{
    uint32_t idx;
    if (A->n_free) {
        idx = A->free_objs[--A->n_free];
    } else {
        if (A->n_objs == A->cap_objs) {
            size_t cap = A->cap_objs ? A->cap_objs * 2 : 1024;
            if (cap > UINT32_MAX)
                pf_sweep_index32(INT64_MAX, "live objects at once");
            A->size = pf_xgrow(A->size, A->cap_objs * sizeof *A->size, cap * sizeof *A->size, sizeof *A->size);
            A->free_objs = pf_xgrow(A->free_objs, A->cap_objs * sizeof *A->free_objs, cap * sizeof *A->free_objs,
                                    sizeof *A->free_objs);
            A->cap_objs = cap;
        }
        idx = A->n_objs++;
    }
    A->size[idx] = size | (ranged ? PF_AHEAD_RANGED : 0);
    return idx;
}

/* The object in slot (key k) released: out of the map, its index free again (pf_sweep_release, not
 * finalizing). */
static void release(pf_live_ahead_t *A, uint32_t proc, uint64_t k, pf_live_slot_t *slot)
{
    uint32_t idx = slot->idx;
    pf_live_del_at(&A->live, slot);
    A->proc_objs[proc]--;
    A->free_objs[A->n_free++] = idx;
    if (A->size[idx] & PF_AHEAD_RANGED)
        pf_ranges_del(&A->ranges, k);
}

static void on_alloc(pf_live_ahead_t *A, const event_t *e, const void *p, pf_ahead_ann_t *ann)
{
    pf_alloc_expanded_t expanded;
    const pf_rec_alloc_t *a = e->type == PF_REC_ALLOC_SHORT ? pf_alloc_short_expand(p, e->aux, &expanded) : p;
    uint64_t key = pf_sweep_addr_key(e->proc, a->addr);
    pf_live_slot_t *prev, *slot = pf_live_alloc_slot(&A->live, key, &prev);
    ann->prev = prev ? prev->idx : PF_AHEAD_NONE;
    if (prev && e->t >= A->L->procs[e->proc].fin_ns) {
        uint32_t idx = pf_live_park(&A->live, prev, e->proc, &A->parked);
        if (A->size[idx] & PF_AHEAD_RANGED)
            pf_ranges_del(&A->ranges, key);
    } else if (prev) {
        release(A, e->proc, key, prev);
    }
    int ranged = pf_ranged(a->domain == PF_DOMAIN_GPU, a->size);
    uint32_t idx = new_object(A, a->size, ranged);
    ann->obj = idx;
    (slot ? slot : pf_live_put(&A->live, key, NULL))->idx = idx;
    A->proc_objs[e->proc]++;
    if (ranged)
        pf_ranges_add(&A->ranges, key, idx);
}

static void on_free(pf_live_ahead_t *A, const event_t *e, const pf_rec_free_t *f, pf_ahead_ann_t *ann)
{
    uint64_t k = pf_sweep_addr_key(e->proc, f->addr);
    pf_live_slot_t *v = pf_live_get(&A->live, k);
    ann->obj = v ? v->idx : PF_AHEAD_NONE;
    if (v && e->t < A->L->procs[e->proc].fin_ns)
        release(A, e->proc, k, v);   /* else finalizing: it stays live at exit */
}

static int64_t object_at(const pf_live_ahead_t *A, uint32_t proc, uint64_t addr, uint64_t *offset)
{
    return pf_live_object_at(&A->live, &A->ranges, (const char *)A->size, sizeof *A->size, ~PF_AHEAD_RANGED, proc,
                             addr, offset);
}

static void on_copy(pf_live_ahead_t *A, const event_t *e, const void *p, pf_ahead_ann_t *ann, pf_ahead_batch_t *out)
{
    pf_copy_expanded_t expanded;
    const pf_rec_copy_t *c = e->type == PF_REC_COPY_SHORT ? pf_copy_short_expand(p, e->aux, &expanded) : p;
    pf_ahead_copy_t *r = PF_VEC_PUSH(out->copies, out->n_copies, out->cap_copies);
    r->dst_offset = r->src_offset = 0;
    r->dst = object_at(A, e->proc, c->dst, &r->dst_offset);
    r->src = object_at(A, e->proc, c->src, &r->src_offset);
    ann->obj = (uint32_t)(out->n_copies - 1);
}

typedef struct end_arg {
    pf_live_ahead_t *A;
    uint32_t proc;
    pf_ahead_released_t *r;
    size_t cap;
} end_arg_t;

static void end_one(void *arg, uint64_t key, pf_live_slot_t *slot)
{
    end_arg_t *a = arg;
    if (a->r->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 64;
        a->r->keys = pf_xrealloc(a->r->keys, a->cap * sizeof *a->r->keys);
        a->r->objs = pf_xrealloc(a->r->objs, a->cap * sizeof *a->r->objs);
    }
    a->r->keys[a->r->n] = key;
    a->r->objs[a->r->n++] = slot->idx;
    release(a->A, a->proc, key, slot);
}

/* Events this far ahead have their address's map slot prefetched (as the sweep did with its map). */
#define PF_AHEAD_LOOKAHEAD 16

void pf_live_ahead_batch(pf_live_ahead_t *A, const event_t *events, size_t n, const pf_rec_alloc_short_t *pay,
                         pf_ahead_batch_t *out)
{
    out->n_copies = 0;
    for (size_t i = 0; i < n && i < PF_AHEAD_LOOKAHEAD; i++)
        pf_live_prefetch_event(&A->live, &events[i], pf_event_payload_in(A->L, pay, &events[i]));
    for (size_t i = 0; i < n; i++) {
        const event_t *e = &events[i];
        if (i + PF_AHEAD_LOOKAHEAD < n)
            pf_live_prefetch_event(&A->live, &events[i + PF_AHEAD_LOOKAHEAD],
                                   pf_event_payload_in(A->L, pay, &events[i + PF_AHEAD_LOOKAHEAD]));
        for (; A->next_end->t < e->t; A->next_end++) {    /* the sweep ends them before this event */
            end_arg_t a = {A, A->next_end->proc, &A->released[A->next_end - A->ends], 0};
            pf_live_each_of_process(&A->live, a.proc, &A->proc_objs[a.proc], end_one, &a);
        }
        pf_ahead_ann_t *ann = &out->ann[i];
        *ann = (pf_ahead_ann_t){PF_AHEAD_NONE, PF_AHEAD_NONE};
        const void *p = pf_event_payload_in(A->L, pay, e);
        switch (e->type) {
        case PF_REC_ALLOC:
        case PF_REC_ALLOC_SHORT:
            on_alloc(A, e, p, ann);
            break;
        case PF_REC_FREE:
            on_free(A, e, p, ann);
            break;
        case PF_REC_COPY:
        case PF_REC_COPY_SHORT:
            on_copy(A, e, p, ann, out);
            break;
        case PF_REC_CONTENT: {
            const pf_rec_content_t *c = p;
            const pf_live_slot_t *v = pf_live_get(&A->live, pf_sweep_addr_key(e->proc, c->addr));
            ann->obj = v ? v->idx : PF_AHEAD_NONE;
            break;
        }
        }
    }
}
