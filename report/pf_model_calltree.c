/* pf_model_calltree.c - the call tree's nodes, their bytes, and their order (pf_calltree_int.h). */
#include <stdlib.h>

#include "pf_calltree_int.h"

int32_t pf_calltree_node(pf_model_t *m, pf_map_t *index, const pf_callsite_t *path, size_t n)
{
    int32_t node = -1;
    for (size_t i = 0; i < n; i++) {
        uint64_t words[3] = {(uint64_t)node, (uint64_t)path[i].file, (uint64_t)path[i].line};
        uint64_t key = pf_hash_words(words, 3, 0xCA11) & ~(1ull << 63);
        int created;
        uint64_t *v = pf_map_put(index, key, &created);
        if (created) {
            pf_callnode_t *c = PF_VEC_PUSH(m->nodes, m->n_nodes, m->cap_nodes);
            *c = (pf_callnode_t){.file = path[i].file, .function = path[i].function, .line = path[i].line, .parent = node, .first_child = -1, .next_sibling = -1,
                                 .depth = (uint32_t)i};
            *v = m->n_nodes;
        }
        node = (int32_t)(*v - 1);
    }
    return node;
}

/* Keeps live bytes as they were at the latest peak: taken at their first change after that peak (a node
 * unchanged since then still has them as its live bytes). */
static void move_live(double *live, double *at_peak, uint32_t *seen, uint32_t epoch, double delta)
{
    if (*seen != epoch) {
        *at_peak = *live;
        *seen = epoch;
    }
    *live += delta;
}

static void move(pf_callnode_t *c, double delta, int gpu, pf_peak_epochs_t e)
{
    move_live(&c->live, &c->live_at_peak, &c->peak_epoch, e.host, delta);
    if (e.est)
        pf_peak_row_add(e.est, &c->peak_est, e.half, delta);
    if (gpu)
        move_live(&c->gpu_live, &c->gpu_live_at_peak, &c->gpu_peak_epoch, e.gpu, delta);
}

void pf_calltree_alloc(pf_model_t *m, int32_t node, double bytes, int gpu, pf_peak_epochs_t e)
{
    pf_callnode_t *c = &m->nodes[node];
    c->self_alloc += bytes;
    if (gpu)
        c->self_gpu += bytes;
    move(c, bytes, gpu, e);
}

void pf_calltree_free(pf_model_t *m, int32_t node, double bytes, int gpu, pf_peak_epochs_t e)
{
    move(&m->nodes[node], -bytes, gpu, e);
}

typedef struct order_key {
    double peak, alloc;
    int32_t node;
} order_key_t;

static int cmp_order(const void *a, const void *b)
{
    const order_key_t *x = a, *y = b;
    if (x->peak != y->peak)
        return x->peak > y->peak ? -1 : 1;
    if (x->alloc != y->alloc)
        return x->alloc > y->alloc ? -1 : 1;
    return x->node < y->node ? -1 : x->node > y->node;
}

/* Rounding of sampled estimates leaves crumbs where the bytes came and went. */
static double whole(double v) { return v < 0.5 ? 0 : v; }

void pf_calltree_finish(pf_model_t *m, pf_peak_epochs_t e, int at_peak, int at_gpu_peak)
{
    m->first_root = -1;
    for (size_t i = 0; i < m->n_nodes; i++) {
        pf_callnode_t *c = &m->nodes[i];
        double instant = whole(c->peak_epoch == e.host ? c->live_at_peak : c->live), se;
        c->self_peak = !at_peak ? 0 : e.est ? pf_peak_row_share(e.est, &c->peak_est, instant, &se) : instant;
        c->self_gpu_peak = at_gpu_peak ? whole(c->gpu_peak_epoch == e.gpu ? c->gpu_live_at_peak : c->gpu_live) : 0;
        c->self_leaked = whole(c->live);
        c->alloc = c->self_alloc;
        c->peak = c->self_peak;
        c->leaked = c->self_leaked;
        c->gpu = c->self_gpu;
        c->gpu_peak = c->self_gpu_peak;
        c->first_child = c->next_sibling = -1;
    }
    /* a parent's index is below its children's: one backward pass sums every subtree */
    for (size_t i = m->n_nodes; i-- > 0;) {
        const pf_callnode_t *c = &m->nodes[i];
        if (c->parent < 0)
            continue;
        pf_callnode_t *p = &m->nodes[c->parent];
        p->alloc += c->alloc;
        p->peak += c->peak;
        p->leaked += c->leaked;
        p->gpu += c->gpu;
        p->gpu_peak += c->gpu_peak;
    }
    order_key_t *keys = pf_xmalloc((m->n_nodes + 1) * sizeof *keys);
    for (size_t i = 0; i < m->n_nodes; i++)
        keys[i] = (order_key_t){m->nodes[i].peak, m->nodes[i].alloc, (int32_t)i};
    qsort(keys, m->n_nodes, sizeof *keys, cmp_order);
    /* prepending from the smallest up leaves each list largest first */
    for (size_t k = m->n_nodes; k-- > 0;) {
        pf_callnode_t *c = &m->nodes[keys[k].node];
        int32_t *head = c->parent < 0 ? &m->first_root : &m->nodes[c->parent].first_child;
        c->next_sibling = *head;
        *head = keys[k].node;
    }
    free(keys);
}
