/* pf_sweep_copies.c - the sweep's copies (pf_sweep_int.h): each COPY record charged to its line and to the
 * flow between the objects at its two ends, the verdicts that judge it (compare-at-free, a watched write),
 * and at the end each flow's redundant bytes extrapolated from the copies judged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_calltree_int.h"
#include "pf_copy_rule.h"
#include "pf_linetable_int.h"
#include "pf_loader_int.h"
#include "pf_origin_int.h"
#include "pf_report_int.h"
#include "pf_aggregate_int.h"
#include "pf_sweep_int.h"
#include "pf_workers_int.h"
#include "pf_symbols_int.h"

/* The library function that made a copy charged to a user's line: the innermost frame of a real file that is
 * not the user's, when it is inside the user's innermost frame, as "function (file:line)"; 0 when the
 * user's own frame is the innermost (the line itself called the copying C function). */
static uint32_t library_maker(sweeper_t *S, uint32_t proc, const pf_rec_pyframe_t *frames, uint16_t n)
{
    for (uint16_t i = 0; i < n; i++) {
        const pcode_t *pc = pf_sweep_frame_code(S, proc, &frames[i]);
        if (!pc)
            continue;
        const char *file = S->m->strings[pc->file];
        if (pc->is_user && file[0] != '<')
            return 0;
        if (pc->is_user || file[0] == '<')
            continue;   /* generated code (numpy's dispatch, dataclasses): whoever called it */
        return pf_model_intern_maker(S->m, S->m->strings[pc->function], file,
                                     pf_sweep_frame_line(S, proc, &frames[i], pc));
    }
    return 0;
}

pf_flow_t *pf_sweep_flow(sweeper_t *S, uint32_t proc, pf_flow_ends_t ends, int32_t at, int32_t fn, uint16_t kind,
                         int started, const pf_stack_view_t *st, int32_t node, double est)
{
    pf_model_t *m = S->m;
    int created;
    uint64_t key = pf_sweep_key3(((uint64_t)(uint32_t)ends.src_line << 32) | (uint32_t)ends.dst_line, (uint32_t)at,
                                 kind | (uint64_t)started << 16);
    uint64_t *fv = pf_map_put(&S->flow_index, key, &created);
    if (created) {
        pf_flow_t *fl = PF_VEC_PUSH(m->flows, m->n_flows, m->cap_flows);
        fl->src_line = ends.src_line;
        fl->dst_line = ends.dst_line;
        fl->at_line = at;
        fl->at_func = fn;
        fl->kind = kind;
        fl->started = started;
        fl->src_native = ends.src_native;
        fl->write_line = fl->write_func = -1;
        fl->via_node = fl->via_full = -1;
        fl->dst_native = ends.dst_native;
        if (st->n_native)
            fl->at_native = pf_sweep_native_site(S, proc, st->ips, st->n_native);
        *fv = m->n_flows;
    }
    pf_flow_t *fl = &m->flows[*fv - 1];
    if (est > fl->via_bytes) {  /* copies are few (sampled by bytes): the path is worked out for each */
        fl->via_bytes = est;
        int32_t via = node >= 0 ? node : pf_sweep_stack_node(S, proc, st->py, st->n_py, at);
        fl->via_node = S->m->full[via].folded;     /* after the call: it may move m->full */
        fl->via_full = via;
        fl->made_in = library_maker(S, proc, st->py, st->n_py);
    }
    return fl;
}

void pf_sweep_copy(sweeper_t *S, const event_t *e)
{
    pf_model_t *m = S->m;
    pf_copy_expanded_t expanded;
    const pf_rec_copy_t *c = e->type == PF_REC_COPY_SHORT
                                 ? pf_copy_short_expand(pf_event_payload(S->L, e), e->aux, &expanded)
                                 : pf_event_payload(S->L, e);
    uint16_t kind = e->type == PF_REC_COPY_SHORT ? (uint16_t)(e->aux & 0xff) : e->aux;
    int32_t fn;
    pf_stack_view_t st = pf_loader_stack(S->L, e->proc, c + 1, c->flags, c->n_py, c->n_native);
    int started;
    int32_t node;
    int32_t at = pf_sweep_attribute(S, e->proc, e, st.py, st.n_py, st.attribute_flags, &fn, &started, &node);
    /* the ends' objects: found by the merge thread in an exact profile (pf_live_ahead.h) */
    const pf_ahead_copy_t *ahead = S->ahead ? &S->ahead_copies[S->ann->obj] : NULL;
    uint64_t dst_offset = 0;
    int64_t dst = ahead ? ahead->dst : pf_sweep_object_at(S, e->proc, c->dst, &dst_offset);
    if (ahead)
        dst_offset = ahead->dst_offset;
    alloc_site_t src = {-1, 0};     /* where the source was allocated */
    int64_t src_obj = -1;
    uint64_t src_offset = 0;
    if (kind == PF_COPY_REALLOC) {    /* the source is the block realloc just freed */
        uint64_t k = pf_sweep_addr_key(e->proc, c->src);
        const recent_free_t *r = pf_recent_find(&S->recent, k);
        if (r)
            src = r->site;
        pf_sweep_leak_moved(S, k);      /* its address is free for others now */
        if (dst >= 0 && dst_offset == 0 && S->objs[dst].chain < 0)  /* the new block continues the old one */
            pf_sweep_leak_grew(S, k, &S->objs[dst], e->t, UINT64_MAX);
        if (dst >= 0 && dst_offset == 0)
            pf_sweep_dst_continues(S, k, &S->objs[dst], 1);
    } else {
        src_obj = ahead ? ahead->src : pf_sweep_object_at(S, e->proc, c->src, &src_offset);
        if (ahead)
            src_offset = ahead->src_offset;
        if (src_obj >= 0)
            src = (alloc_site_t){S->objs[src_obj].line, S->objs[src_obj].native};
    }
    int32_t src_line = src.line, dst_line = dst >= 0 ? S->objs[dst].line : -1;
    double est = (double)c->est_bytes, count = c->bytes ? est / (double)c->bytes : 1.0;
    pf_stats_t *rows[3] = {&m->lines[at].s, &m->funcs[fn].s, &m->total};
    for (int i = 0; i < 3; i++) {
        rows[i]->copy_bytes += est;
        rows[i]->copy_count += count;
        pf_sweep_touch(rows[i], e->t);
    }
    pf_flow_t *fl = pf_sweep_flow(S, e->proc, (pf_flow_ends_t){src_line, dst_line, src.native,
                                  dst >= 0 ? S->objs[dst].native : 0}, at, fn, kind, started, &st, node, est);
    fl->bytes += est;
    fl->count += count;
    copy_info_t *ci = PF_VEC_PUSH(S->cinfo, S->n_cinfo, S->cap_cinfo);
    ci->flow = (int32_t)(fl - m->flows);
    ci->est = est;
    /* uploads and downloads are judged by content (the same bytes sent again), not by filling */
    int by_content = kind == PF_COPY_H2D || kind == PF_COPY_D2H || kind == PF_COPY_D2D;
    ci->fills = by_content || (dst >= 0 && src_obj >= 0 &&
                               pf_copy_duplicates(dst_offset, S->objs[dst].size, src_offset, S->objs[src_obj].size,
                                                  c->bytes));
    if (ci->fills) {
        fl->candidate_bytes += est;
        fl->candidate_count += count;
        if (dst >= 0)
            fl->dst_domains |= 1u << S->objs[dst].domain;
        if (c->ends) {
            fl->src_ends |= (uint8_t)(1u << PF_COPY_END_SRC(c->ends));
            fl->dst_ends |= (uint8_t)(1u << PF_COPY_END_DST(c->ends));
        }
    }
    if (c->end_types && src_obj >= 0)
        pf_sweep_kind_seen(S, &S->objs[src_obj], PF_COPY_END_TYPE_SRC(c->end_types));
    if (dst >= 0) {
        pf_sweep_kind_seen(S, &S->objs[dst], PF_COPY_END_TYPE_DST(c->end_types));
        pf_sweep_copy_dst(S, &S->objs[dst], (int64_t)S->n_cinfo - 1, e->t);
    }
    if (c->copy_id)     /* a short COPY has none: no verdict names it */
        *pf_map_put(&S->copies, pf_sweep_key3(e->proc, c->copy_id, 0xC0), NULL) = S->n_cinfo - 1;
}

/* A copy's first verdict counts; later ones for the same copy (a compare-at-free after a watched write
 * decided it) are ignored. Returns the flow judged, or NULL. */
static pf_flow_t *judge(sweeper_t *S, uint32_t proc, uint64_t copy_id, int redundant, uint32_t evidence)
{
    uint64_t ck = pf_sweep_key3(proc, copy_id, 0xC0);
    uint64_t *c = pf_map_get(&S->copies, ck);
    if (!c)
        return NULL;
    const copy_info_t *ci = &S->cinfo[*c];
    pf_map_del(&S->copies, ck);
    if (!ci->fills)         /* judged by a runtime before pf_copy_rule.h: a piece is no candidate */
        return NULL;
    pf_flow_t *fl = &S->m->flows[ci->flow];
    fl->judged++;
    fl->judged_bytes += ci->est;
    fl->evidence = evidence;
    if (evidence == PF_EVIDENCE_WATCH)
        fl->watch_judged++;
    if (redundant) {
        fl->redundant++;
        fl->redundant_judged_bytes += ci->est;
    }
    return fl;
}

void pf_sweep_verdict(sweeper_t *S, const event_t *e)
{
    const pf_rec_verdict_t *v = pf_event_payload(S->L, e);
    judge(S, e->proc, v->copy_id, e->aux == PF_VERDICT_REDUNDANT, v->evidence);
}

/* A watched write changed the copy or its source: the copy was needed, and here is who wrote. The edge
 * keeps the first such writer. */
void pf_sweep_copy_write(sweeper_t *S, const event_t *e)
{
    const pf_rec_copy_write_t *w = pf_event_payload(S->L, e);
    pf_flow_t *fl = judge(S, e->proc, w->copy_id, 0, PF_EVIDENCE_WATCH);
    if (!fl || fl->watch_judged != 1)
        return;
    const pf_rec_pyframe_t *py = (const pf_rec_pyframe_t *)(w + 1);
    int32_t func = -1;
    fl->write_line = w->n_py ? pf_sweep_attribute(S, e->proc, NULL, py, w->n_py, 0, &func, NULL, NULL) : -1;
    fl->write_func = func;
    fl->write_native = w->n_native ? pf_sweep_native_site(S, e->proc, (const uint64_t *)(py + w->n_py), w->n_native) : 0;
    fl->write_to_dst = (w->flags & PF_COPY_WRITE_DST) != 0;
}

/* The upload on the copy's line that sent the host buffer the copy filled, or NULL. */
static const pf_flow_t *upload_sending(const pf_model_t *m, const pf_flow_t *copy, const uint32_t *uploads,
                                       size_t n_uploads)
{
    for (size_t k = 0; k < n_uploads; k++) {
        const pf_flow_t *up = &m->flows[uploads[k]];
        if (up->at_line == copy->at_line && up->src_line == copy->dst_line)
            return up;
    }
    return NULL;
}

/* A host copy into a buffer that an upload on the same line then sends to the GPU is that upload's staging
 * (CuPy's asarray copies the host array into pinned memory and uploads from there): the user asked for one
 * upload, and the staging copy is wasted only when the upload is. Left alone, its verdict would be the
 * host rule's (neither end changed while both lived), which a staging buffer kept in a pool always meets.
 * So it takes the upload's verdict: cleared where the upload is not redundant. */
static void staging_takes_upload_verdict(pf_model_t *m)
{
    uint32_t *uploads = NULL;
    size_t n_uploads = 0, cap = 0;
    for (size_t i = 0; i < m->n_flows; i++)
        if (m->flows[i].kind == PF_COPY_H2D && m->flows[i].at_line >= 0)
            *PF_VEC_PUSH(uploads, n_uploads, cap) = (uint32_t)i;
    for (size_t i = 0; n_uploads && i < m->n_flows; i++) {
        pf_flow_t *fl = &m->flows[i];
        if ((fl->kind != PF_COPY_MEMCPY && fl->kind != PF_COPY_MEMMOVE) || fl->at_line < 0 || fl->dst_line < 0)
            continue;
        const pf_flow_t *up = upload_sending(m, fl, uploads, n_uploads);
        if (!up)
            continue;
        fl->stages_upload = 1;
        if (!pf_report_flow_redundant(up)) {
            fl->redundant = 0;
            fl->redundant_judged_bytes = 0;
        }
    }
    free(uploads);
}

/* The runtime judges only the copies its compare budget allows: each edge's redundant bytes are the bytes
 * of its candidates (copies that filled their destination) times the redundant share of those judged. */
void pf_sweep_copies_finish(pf_model_t *m)
{
    staging_takes_upload_verdict(m);
    for (size_t i = 0; i < m->n_flows; i++) {
        pf_flow_t *fl = &m->flows[i];
        if (fl->judged_bytes <= 0 || !pf_report_flow_judged_enough(fl))
            continue;   /* a verdict on too few of its copies does not stand (PF_COPY_MIN_JUDGED) */
        fl->redundant_bytes = fl->candidate_bytes * (fl->redundant_judged_bytes / fl->judged_bytes);
        fl->redundant_count = fl->candidate_count * ((double)fl->redundant / fl->judged);
        /* a line's redundant copies are those it made itself, as its findings (pf_report_copy_found) */
        if (fl->at_line >= 0 && !fl->started)
            m->lines[fl->at_line].s.redundant_copy_bytes += fl->redundant_bytes;
        if (fl->at_func >= 0 && !fl->started)
            m->funcs[fl->at_func].s.redundant_copy_bytes += fl->redundant_bytes;
        m->total.redundant_copy_bytes += fl->redundant_bytes;
    }
}
