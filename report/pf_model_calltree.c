/* pf_model_calltree.c - the call tree's nodes, their bytes, and their order (pf_calltree_int.h). */
#include <stdlib.h>

#include "pf_calltree_int.h"

static int same_step(const pf_callsite_t *a, const pf_callsite_t *b, int full)
{
    return a->file == b->file && a->line == b->line &&
           (!full || (a->function == b->function && a->kind == b->kind && a->folded == b->folded));
}

/* The node of path[0..n) in a tree (nodes, *n_nodes, *cap), made with its ancestors on first use; full: the
 * unfolded tree, whose steps also differ by function (native steps share a library and line 0) and carry
 * their kind and folded node. The steps it shares with memo's path from the root have memo's nodes. */
static int32_t tree_node(pf_callnode_t **nodes, size_t *n_nodes, size_t *cap, pf_map_t *index, pf_path_memo_t *memo,
                         const pf_callsite_t *path, size_t n, int full)
{
    int32_t node = -1;
    size_t shared = 0;
    while (shared < n && shared < memo->n && same_step(&path[shared], &memo->steps[shared], full))
        node = memo->nodes[shared++];
    for (size_t i = shared; i < n; i++) {
        /* unfolded: a step's folded node is part of its name, so a library line that is a row of its own
           (no user line below it) is never the same node as that line on the way to a user line */
        uint64_t words[5] = {(uint64_t)node, (uint64_t)path[i].file, (uint64_t)path[i].line, path[i].function,
                             (uint64_t)(int64_t)path[i].folded};
        uint64_t key = pf_hash_words(words, full ? 5 : 3, full ? 0xF011 : 0xCA11) & ~(1ull << 63);
        int created;
        uint64_t *v = pf_map_put(index, key, &created);
        if (created) {
            pf_callnode_t *c = pf_vec_push((void **)nodes, n_nodes, cap, sizeof **nodes);
            *c = (pf_callnode_t){.file = path[i].file, .function = path[i].function, .line = path[i].line, .parent = node, .first_child = -1, .next_sibling = -1,
                                 .depth = (uint32_t)i, .kind = full ? path[i].kind : PF_NODE_USER, .folded = full ? path[i].folded : -1};
            *v = *n_nodes;
        }
        node = (int32_t)(*v - 1);
        memo->steps[i] = path[i];
        memo->nodes[i] = node;
    }
    memo->n = n;
    return node;
}

int32_t pf_calltree_node(pf_model_t *m, pf_map_t *index, pf_path_memo_t *memo, const pf_callsite_t *path, size_t n)
{
    return tree_node(&m->nodes, &m->n_nodes, &m->cap_nodes, index, memo, path, n, 0);
}

int32_t pf_calltree_full_node(pf_model_t *m, pf_map_t *index, pf_path_memo_t *memo, const pf_callsite_t *path,
                              size_t n)
{
    return tree_node(&m->full, &m->n_full, &m->cap_full, index, memo, path, n, 1);
}

int32_t pf_calltree_native_child(pf_model_t *m, pf_map_t *index, int32_t node, uint32_t native)
{
    if (!native || node < 0)
        return node;
    const pf_callnode_t *p = &m->full[node];
    uint64_t words[3] = {(uint64_t)node, native, 0x9A7};
    uint64_t key = pf_hash_words(words, 3, 0xF012) & ~(1ull << 63);
    int created;
    uint64_t *v = pf_map_put(index, key, &created);
    if (created) {
        pf_callnode_t *c = PF_VEC_PUSH(m->full, m->n_full, m->cap_full);
        p = &m->full[node];
        *c = (pf_callnode_t){.file = 0, .function = native, .line = 0, .parent = node, .first_child = -1,
                             .next_sibling = -1, .depth = p->depth + 1, .kind = PF_NODE_NATIVE, .folded = p->folded};
        *v = m->n_full;
    }
    return (int32_t)(*v - 1);
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

static void finish_tree(pf_callnode_t *nodes, size_t n_nodes, int32_t *first_root, pf_peak_epochs_t e, int at_peak,
                        int at_gpu_peak)
{
    *first_root = -1;
    for (size_t i = 0; i < n_nodes; i++) {
        pf_callnode_t *c = &nodes[i];
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
    for (size_t i = n_nodes; i-- > 0;) {
        const pf_callnode_t *c = &nodes[i];
        if (c->parent < 0)
            continue;
        pf_callnode_t *p = &nodes[c->parent];
        p->alloc += c->alloc;
        p->peak += c->peak;
        p->leaked += c->leaked;
        p->gpu += c->gpu;
        p->gpu_peak += c->gpu_peak;
    }
    order_key_t *keys = pf_xmalloc((n_nodes + 1) * sizeof *keys);
    for (size_t i = 0; i < n_nodes; i++)
        keys[i] = (order_key_t){nodes[i].peak, nodes[i].alloc, (int32_t)i};
    qsort(keys, n_nodes, sizeof *keys, cmp_order);
    /* prepending from the smallest up leaves each list largest first */
    for (size_t k = n_nodes; k-- > 0;) {
        pf_callnode_t *c = &nodes[keys[k].node];
        int32_t *head = c->parent < 0 ? first_root : &nodes[c->parent].first_child;
        c->next_sibling = *head;
        *head = keys[k].node;
    }
    free(keys);
}

void pf_calltree_finish(pf_model_t *m, pf_peak_epochs_t e, int at_peak, int at_gpu_peak)
{
    finish_tree(m->nodes, m->n_nodes, &m->first_root, e, at_peak, at_gpu_peak);
    finish_tree(m->full, m->n_full, &m->first_full_root, e, at_peak, at_gpu_peak);
}

int32_t pf_calltree_next(const pf_callnode_t *nodes, int32_t n, int descend)
{
    if (descend && nodes[n].first_child >= 0)
        return nodes[n].first_child;
    while (n >= 0 && nodes[n].next_sibling < 0)
        n = nodes[n].parent;
    return n >= 0 ? nodes[n].next_sibling : -1;
}
