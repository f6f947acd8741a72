/* pf_sweep_kinds.c - the sweep's view of what objects are and how long copies' destinations live
 * (pf_sweep_int.h): each line's bytes by the kind of object the runtime saw (a FREE's kind, a COPY's end
 * types), for the flow graph's node names; and for each flow the life of its copies' destinations after
 * the copy, for the graph's rule that a copy into a temporary is no part of the data's story. */
#include "pf_sweep_int.h"

void pf_sweep_copy_dst(sweeper_t *S, live_obj_t *dst, int64_t copy, uint64_t t)
{
    copy_info_t *ci = &S->cinfo[copy];
    ci->has_dst = 1;
    ci->t_copy = t;
    ci->prev_same_dst = dst->dst_copy;
    dst->dst_copy = pf_sweep_index32(copy, "copies");
}

/* Sets when each destination in a chain of copies ended (0: not, it lives on). */
static void mark_chain(sweeper_t *S, int64_t chain, uint64_t t)
{
    for (int64_t i = chain; i >= 0; i = S->cinfo[i].prev_same_dst)
        S->cinfo[i].t_dst_freed = t;
}

void pf_sweep_dst_freed(sweeper_t *S, const live_obj_t *o, uint64_t t)
{
    mark_chain(S, o->dst_copy, t ? t : 1);
}

void pf_sweep_dst_continues(sweeper_t *S, uint64_t old_k, live_obj_t *o, int proven)
{
    int64_t chain = pf_recent_take_chain(&S->recent, old_k, proven);
    if (chain < 0)
        return;
    mark_chain(S, chain, 0);    /* its contents live on in o */
    if (o->dst_copy < 0)
        o->dst_copy = pf_sweep_index32(chain, "copies");
}

void pf_sweep_flow_lives(sweeper_t *S)
{
    pf_model_t *m = S->m;
    for (size_t i = 0; i < S->n_cinfo; i++) {
        const copy_info_t *ci = &S->cinfo[i];
        if (!ci->has_dst || ci->flow < 0)
            continue;
        pf_flow_t *fl = &m->flows[ci->flow];
        uint64_t end = ci->t_dst_freed ? ci->t_dst_freed : m->end_ns;
        double life = end > ci->t_copy ? (double)(end - ci->t_copy) / 1e9 : 0;
        fl->dst_known = 1;
        if (life > fl->dst_life_s)
            fl->dst_life_s = life;
        if (ci->t_copy <= m->peak_ns && (!ci->t_dst_freed || ci->t_dst_freed > m->peak_ns))
            fl->dst_at_peak = 1;
    }
}
