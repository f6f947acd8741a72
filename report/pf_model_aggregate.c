/* pf_model_aggregate.c - an aggregated profile (--aggregate: PF_REC_AGG_SITES / PF_REC_AGG_PEAK, see
 * core/pf_format.h) read into the same model as a full one, so every renderer shows it.
 *
 * A snapshot carries each changed site's running totals; the sweep applies the difference from the last
 * values seen, at the snapshot's time: allocated bytes and count, and live bytes (allocated - freed) moved
 * on the site's line, function, call-tree node, process and the whole program, as allocations and frees
 * would have moved them. So the timeline, the live-at-exit and each line's growth over time (the leak
 * test's series) come out at the snapshots' resolution. The peak picture moves every site of the process
 * to its live bytes at the peak, at the peak's time, and the next snapshot moves them on: the sweep then
 * finds the program's peak at that instant with each line's share of it, as the recorder saw it.
 *
 * The copy flows (PF_REC_AGG_FLOWS) are applied the same way: each flow's new totals, less the last ones
 * seen, go onto the model's flow between the lines of its two sites, with its verdicts, as COPY and
 * VERDICT records would have (pf_sweep_copies.c).
 *
 * What has no record here stays empty in the model: waste (untouched pages, recomputed values), the
 * sampling error of the estimates.
 */
#include <stdlib.h>
#include <string.h>

#include "pf_agg_survivors.h"
#include "pf_aggregate_int.h"
#include "pf_calltree_int.h"
#include "pf_workers_int.h"

typedef struct agg_site {
    uint32_t proc;
    uint8_t kind;               /* pf_domain_t, or PF_AGG_COPIES */
    int started;
    int32_t row, func, node;
    uint64_t alloc_bytes, alloc_count, free_bytes;  /* the last totals applied */
    double live;                /* live bytes as the rows have them */
    double peak_live;           /* the process's last peak picture */
    pf_agg_survivors_t survivors;   /* the leak test's, on the rest-of-program clock, as objects */
} agg_site_t;

typedef struct agg_flow {
    uint64_t last[8];           /* the totals last applied (pf_rec_agg_flow_t's bytes .. redundant_count) */
} agg_flow_t;

struct pf_agg_state {
    pf_map_t index;             /* (proc, stack id, kind) -> site + 1 */
    pf_map_t flow_index;        /* (proc, flow id) -> flow + 1 */
    pf_map_t last_snapshot;     /* proc -> the time of its last snapshot */
    agg_flow_t *flows;
    size_t n_flows, cap_flows;
    agg_site_t *sites;
    size_t n_sites, cap_sites;
    const void **parts;         /* payloads of a record's parts so far (PF_AGG_MORE) */
    size_t n_parts, cap_parts;
    uint16_t parts_type;        /* their record type */
};

static agg_site_t *site_of(sweeper_t *S, const event_t *e, uint32_t stack_id, uint8_t kind, uint8_t stack_flags)
{
    pf_agg_state_t *A = S->agg;
    int created;
    uint64_t *v = pf_map_put(&A->index, pf_sweep_key3(e->proc, stack_id, (uint64_t)kind + 1), &created);
    if (!created)
        return &A->sites[*v - 1];
    pf_rec_stack_ref_t ref = {stack_id, 0};
    pf_stack_view_t st = {.attribute_flags = stack_flags};    /* stack id 0: an empty stack */
    if (stack_id)
        st = pf_loader_stack(S->L, e->proc, &ref, PF_ALLOC_STACK_REF | stack_flags, 0, 0);
    agg_site_t *s = PF_VEC_PUSH(A->sites, A->n_sites, A->cap_sites);
    *s = (agg_site_t){.proc = e->proc, .kind = kind};
    s->survivors.mean_sample_bytes = S->m->exact ? 0 : (double)S->m->mean_sample_bytes;
    s->row = pf_sweep_attribute(S, e->proc, e, st.py, st.n_py, st.attribute_flags, &s->func, &s->started, &s->node);
    if (kind != PF_AGG_COPIES) {
        if (s->node < 0)
            s->node = pf_sweep_stack_node(S, e->proc, st.py, st.n_py, s->row);
        uint32_t native = st.n_native ? pf_sweep_native_site(S, e->proc, st.ips, st.n_native) : 0;
        s->node = pf_calltree_native_child(S->m, &S->full_index, s->node, native);
    }
    *v = A->n_sites;
    return s;
}

static pf_peak_epochs_t epochs(const sweeper_t *S)
{
    return (pf_peak_epochs_t){S->peak_epoch, S->gpu_peak_epoch, &S->peak, 0};
}

/* Moves site s's live bytes by d at t in every row that holds them. */
static void move_live(sweeper_t *S, agg_site_t *s, uint64_t t, double d)
{
    if (d == 0)
        return;
    pf_model_t *m = S->m;
    int gpu = s->kind == PF_DOMAIN_GPU;
    pf_stats_t *rows[3] = {&m->lines[s->row].s, &m->funcs[s->func].s, &m->total};
    for (int i = 0; i < 3; i++) {
        pf_sweep_set_live(S, rows[i], t, rows[i]->live + d);
        if (gpu)
            pf_sweep_set_gpu_live(S, rows[i], t, rows[i]->gpu_live + d);
    }
    const pf_peak_epochs_t e = epochs(S);
    pf_calltree_free(m, s->node, -d, gpu, &e);   /* a negative free: live up, nothing allocated */
    pf_process_t *pr = &m->procs[s->proc];
    pr->live += d;
    int new_peak = pr->live > pr->peak_bytes;
    if (new_peak)
        pr->peak_bytes = pr->live;
    if (d > 0)
        pf_workers_alloc(m, s->proc, s->row, d, new_peak);
    else
        pf_workers_free(m, s->proc, s->row, -d);
    s->live += d;
    pf_agg_survivors_move(&s->survivors, pf_sweep_leak_at(S, s->row), d);
}

static void touch(pf_stats_t *s, uint64_t t)
{
    if (!s->first_ns || t < s->first_ns)
        s->first_ns = t ? t : 1;
    if (t > s->last_ns)
        s->last_ns = t;
}

/* One site's new totals at t. */
static void apply_site(sweeper_t *S, const event_t *e, const pf_rec_agg_site_t *r, uint64_t since)
{
    pf_model_t *m = S->m;
    agg_site_t *s = site_of(S, e, r->stack_id, r->kind, r->stack_flags);
    double da = (double)(r->alloc_bytes - s->alloc_bytes), dn = (double)(r->alloc_count - s->alloc_count);
    if (r->free_bytes > s->free_bytes && s->kind != PF_AGG_COPIES)
        pf_sweep_leak_free(S, s->row, e->proc, e->t, (double)(r->free_bytes - s->free_bytes));
    s->alloc_bytes = r->alloc_bytes;
    s->alloc_count = r->alloc_count;
    s->free_bytes = r->free_bytes;
    pf_stats_t *rows[3] = {&m->lines[s->row].s, &m->funcs[s->func].s, &m->total};
    if (s->kind == PF_AGG_COPIES) {
        for (int i = 0; i < 3; i++) {
            rows[i]->copy_bytes += da;
            rows[i]->copy_count += dn;
            touch(rows[i], since);   /* made since the process's last snapshot: the copy rate's span */
            touch(rows[i], e->t);
        }
        return;
    }
    if (da > 0) {
        if (s->started)
            m->lines[s->row].started_bytes += da;
        pf_sweep_leak_clock(S, s->row, e->proc, e->t);
        const pf_peak_epochs_t ep = epochs(S);
        pf_calltree_alloc(m, s->node, da, s->kind == PF_DOMAIN_GPU, &ep);
        pf_calltree_free(m, s->node, da, s->kind == PF_DOMAIN_GPU, &ep);     /* live moves below */
        pf_process_t *pr = &m->procs[e->proc];
        pr->alloc_bytes += da;
        *(pf_domain_is_python(s->kind) ? &pr->python_bytes
          : pf_domain_is_native(s->kind) ? &pr->native_bytes : &pr->gpu_bytes) += da;
    }
    for (int i = 0; i < 3; i++) {
        rows[i]->alloc_bytes += da;
        rows[i]->alloc_count += dn;
        uint64_t recs = rows[i]->n_recs + (uint64_t)dn;
        rows[i]->n_recs = recs > UINT32_MAX ? UINT32_MAX : (uint32_t)recs;
        *(pf_domain_is_python(s->kind) ? &rows[i]->python_bytes
          : pf_domain_is_native(s->kind) ? &rows[i]->native_bytes : &rows[i]->gpu_bytes) += da;
        touch(rows[i], e->t);
    }
    move_live(S, s, e->t, (double)r->alloc_bytes - (double)r->free_bytes - s->live);
}

/* The peak picture is in: every site of the process goes to its live bytes at the peak. */
static void apply_peak(sweeper_t *S, const event_t *e)
{
    pf_agg_state_t *A = S->agg;
    for (size_t i = 0; i < A->n_sites; i++) {
        agg_site_t *s = &A->sites[i];
        if (s->proc == e->proc && s->kind != PF_AGG_COPIES)
            move_live(S, s, e->t, s->peak_live - s->live);
    }
}

/* The row of the objects of a flow's end (-1: untracked). */
static int32_t end_line(sweeper_t *S, const event_t *e, uint32_t stack_id, uint8_t domain, uint8_t stack_flags)
{
    return domain < PF_DOMAIN_COUNT ? site_of(S, e, stack_id, domain, stack_flags)->row : -1;
}

/* One flow's new totals at t: the difference goes onto the model's flow. */
static void apply_flow(sweeper_t *S, const event_t *e, const pf_rec_agg_flow_t *r)
{
    pf_agg_state_t *A = S->agg;
    int created;
    uint64_t *v = pf_map_put(&A->flow_index, pf_sweep_key3(e->proc, r->flow_id, 0xF1), &created);
    if (created) {
        *PF_VEC_PUSH(A->flows, A->n_flows, A->cap_flows) = (agg_flow_t){{0}};
        *v = A->n_flows;
    }
    agg_flow_t *f = &A->flows[*v - 1];
    const uint64_t now[8] = {r->bytes, r->count, r->candidate_bytes, r->candidate_count,
                             r->judged_bytes, r->judged_count, r->redundant_bytes, r->redundant_count};
    uint64_t delta[8];  /* the totals since the last snapshot (a damaged file's wrap around, defined) */
    double d[8];
    for (int i = 0; i < 8; i++)
        d[i] = (double)(delta[i] = now[i] - f->last[i]);
    memcpy(f->last, now, sizeof now);
    /* read out first: the ends' sites, made next, may move the array of sites it lies in */
    const agg_site_t *copier = site_of(S, e, r->stack_id, PF_AGG_COPIES, r->stack_flags);
    const int32_t row = copier->row, func = copier->func, node = copier->node;
    const int started = copier->started;
    pf_flow_ends_t ends = {end_line(S, e, r->src_stack_id, r->src_domain, r->src_stack_flags),
                           end_line(S, e, r->dst_stack_id, r->dst_domain, r->dst_stack_flags), 0, 0};
    pf_rec_stack_ref_t ref = {r->stack_id, 0};
    pf_stack_view_t st = {0};
    if (r->stack_id)
        st = pf_loader_stack(S->L, e->proc, &ref, PF_ALLOC_STACK_REF | r->stack_flags, 0, 0);
    pf_flow_t *fl = pf_sweep_flow(S, e->proc, ends, row, func, r->kind, started, &st, node, d[0]);
    fl->bytes += d[0];
    fl->count += d[1];
    fl->candidate_bytes += d[2];
    fl->candidate_count += d[3];
    fl->judged_bytes += d[4];
    fl->judged += (uint32_t)delta[5];  /* a double past 2^32 converted to uint32_t is undefined */
    fl->redundant_judged_bytes += d[6];
    fl->redundant += (uint32_t)delta[7];
    if (d[5] > 0)
        fl->evidence = PF_EVIDENCE_COMPARE_AT_FREE;
    if (d[2] > 0 && r->dst_domain < PF_DOMAIN_COUNT)
        fl->dst_domains |= 1u << r->dst_domain;
    fl->src_ends |= (uint8_t)(r->ends & 0xf);
    fl->dst_ends |= (uint8_t)(r->ends >> 4);
}

static void note_part(pf_agg_state_t *A, const void *payload)
{
    *PF_VEC_PUSH(A->parts, A->n_parts, A->cap_parts) = payload;
}

/* 1 when a part's n entries of entry_bytes after its head fit in its record (a damaged file: skipped). */
static int part_fits(const void *payload, size_t head, uint32_t n, size_t entry_bytes)
{
    pf_rec_header_t h;
    memcpy(&h, (const char *)payload - sizeof h, sizeof h);
    return h.bytes >= sizeof h + head && (h.bytes - sizeof h - head) / entry_bytes >= n;
}

void pf_sweep_aggregate(sweeper_t *S, const event_t *e)
{
    if (!S->agg)
        S->agg = pf_xcalloc(1, sizeof *S->agg);
    pf_agg_state_t *A = S->agg;
    const void *payload = pf_event_payload(S->L, e);
    if (A->n_parts && A->parts_type != e->type)
        A->n_parts = 0;     /* a record whose last part never came (a damaged file): not another's */
    A->parts_type = e->type;
    note_part(A, payload);
    if (e->type == PF_REC_AGG_FLOWS) {
        const pf_rec_agg_flows_t *h = payload;
        if (h->flags & PF_AGG_MORE)
            return;
        for (size_t p = 0; p < A->n_parts; p++) {
            const pf_rec_agg_flows_t *part = A->parts[p];
            if (!part_fits(part, sizeof *part, part->n_flows, sizeof(pf_rec_agg_flow_t)))
                continue;
            const pf_rec_agg_flow_t *r = (const void *)(part + 1);
            for (uint32_t i = 0; i < part->n_flows; i++)
                apply_flow(S, e, &r[i]);
        }
    } else if (e->type == PF_REC_AGG_SITES) {
        const pf_rec_agg_snapshot_t *h = payload;
        if (h->flags & PF_AGG_MORE)
            return;     /* applied with its last part: a half-applied snapshot could make a false peak */
        int created;
        uint64_t *last = pf_map_put(&A->last_snapshot, pf_sweep_key3(e->proc, 0, 0x5A), &created);
        uint64_t since = created ? h->since_ns + S->m->procs[e->proc].offset_ns : *last;
        *last = e->t;
        for (size_t p = 0; p < A->n_parts; p++) {
            const pf_rec_agg_snapshot_t *part = A->parts[p];
            if (!part_fits(part, sizeof *part, part->n_sites, sizeof(pf_rec_agg_site_t)))
                continue;   /* damaged */
            const pf_rec_agg_site_t *r = (const void *)(part + 1);
            for (uint32_t i = 0; i < part->n_sites; i++)
                if (r[i].kind < PF_DOMAIN_COUNT || r[i].kind == PF_AGG_COPIES)
                    apply_site(S, e, &r[i], since);
        }
    } else {
        const pf_rec_agg_peak_t *h = payload;
        if (h->flags & PF_AGG_MORE)
            return;
        for (size_t p = 0; p < A->n_parts; p++) {
            const pf_rec_agg_peak_t *part = A->parts[p];
            if (!part_fits(part, sizeof *part, part->n_sites, sizeof(pf_rec_agg_peak_site_t)))
                continue;
            const pf_rec_agg_peak_site_t *r = (const void *)(part + 1);
            for (uint32_t i = 0; i < part->n_sites; i++)
                if (r[i].kind < PF_DOMAIN_COUNT)
                    site_of(S, e, r[i].stack_id, r[i].kind, r[i].stack_flags)->peak_live = (double)r[i].live_bytes;
        }
        apply_peak(S, e);
    }
    A->n_parts = 0;
}

typedef struct site_emit {
    void (*emit)(void *arg, int32_t line, double clock, double bytes);
    void *arg;
    int32_t line;
} site_emit_t;

static void emit_site(void *arg, double clock, double bytes)
{
    const site_emit_t *e = arg;
    e->emit(e->arg, e->line, clock, bytes);
}

size_t pf_sweep_aggregate_survivors(const sweeper_t *S,
                                    void (*emit)(void *arg, int32_t line, double clock, double bytes), void *arg)
{
    size_t n = 0;
    for (size_t i = 0; S->agg && i < S->agg->n_sites; i++) {
        const agg_site_t *s = &S->agg->sites[i];
        site_emit_t e = {emit, arg, s->row};
        n += pf_agg_survivors_held(&s->survivors, emit ? emit_site : NULL, &e);
    }
    return n;
}

void pf_sweep_aggregate_free(sweeper_t *S)
{
    if (!S->agg)
        return;
    for (size_t i = 0; i < S->agg->n_sites; i++)
        pf_agg_survivors_free(&S->agg->sites[i].survivors);
    pf_map_free(&S->agg->index);
    pf_map_free(&S->agg->flow_index);
    pf_map_free(&S->agg->last_snapshot);
    free(S->agg->flows);
    free(S->agg->sites);
    free(S->agg->parts);
    free(S->agg);
    S->agg = NULL;
}
