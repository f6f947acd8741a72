/* pf_model_waste.c - recomputed values and untouched memory, from the runtime's PF_REC_CONTENT records
 * (recorder/pf_content.c), during the sweep (pf_model_sweep.c hands each record here with the live object
 * it describes) and after it.
 *
 * Recomputed values: objects of one call path and one size whose fingerprints match one seen before on
 * that path are the line computing the same value again. Only recorded objects have fingerprints (sampled
 * ones, with probability p, and those at or above the object threshold), so a value made N times is seen
 * about N p times; each match after the first stands for est / size objects (1/p), as its allocation
 * does, and the estimate is N - 1/p: low by the unsampled repeats before the first recorded one, never
 * high. A group is counted only from PF_RECOMPUTE_MIN_MATCHES matches on.
 *
 * Untouched memory: the pages of each measured object that were never resident, scaled like its
 * allocation. The program's resident peak is its peak less the untouched bytes of the objects live at
 * that instant (measured when each was freed, or at exit: pages touched after the peak are counted as
 * touched at it, so the resident figure is an upper bound).
 */
#include <stdlib.h>
#include <string.h>

#include "pf_loader_int.h"
#include "pf_report_int.h"
#include "pf_sweep_int.h"
#include "pf_waste_int.h"

typedef struct value_group {
    int32_t row, node, full;    /* full: its first object's node of the unfolded tree */
    uint64_t size;
    uint8_t domain;
    uint32_t matches;
    double bytes, count;
} value_group_t;

/* An object with untouched pages, for its share of the peak. */
typedef struct untouched_fact {
    int32_t row;
    uint64_t t_alloc, t_end;    /* t_end UINT64_MAX: live at exit */
    double bytes;
} untouched_fact_t;

typedef struct waste_sweep {
    pf_map_t groups;            /* (path, size, fingerprint) -> group+1 */
    value_group_t *g;
    size_t n_g, cap_g;
    pf_map_t untouched_rows;    /* row -> untouched+1 */
    untouched_fact_t *facts;
    size_t n_facts, cap_facts;
} waste_sweep_t;

static waste_sweep_t *sweep_state(pf_model_t *m)
{
    if (!m->waste.sweep)
        m->waste.sweep = pf_xcalloc(1, sizeof(waste_sweep_t));
    return m->waste.sweep;
}

/* A live object's call-tree node is one of the unfolded tree (m->full); findings name the folded path of
 * the user's lines (m->nodes), as the other findings' `via` does. */
static int32_t folded_node(const pf_model_t *m, int32_t full)
{
    return full >= 0 ? m->full[full].folded : -1;
}

static void note_untouched(pf_model_t *m, waste_sweep_t *W, const live_obj_t *o, double scale, uint64_t page,
                           const pf_rec_content_t *c, uint64_t t_end)
{
    double checked = (double)c->checked_pages * (double)page * scale;
    uint64_t untouched_one = (uint64_t)c->untouched_pages * page;
    double untouched = (double)untouched_one * scale;
    pf_line_t *l = &m->lines[o->line];
    l->checked_bytes += checked;
    l->untouched_bytes += untouched;
    m->waste.checked_bytes += checked;
    m->waste.untouched_bytes += untouched;
    int created;
    uint64_t *v = pf_map_put(&W->untouched_rows, (uint64_t)o->line, &created);
    if (created) {
        pf_untouched_t *u = PF_VEC_PUSH(m->waste.untouched, m->waste.n_untouched, m->waste.cap_untouched);
        memset(u, 0, sizeof *u);
        u->row = o->line;
        u->node = folded_node(m, o->node);
        u->full = o->node;
        *v = m->waste.n_untouched;
    }
    pf_untouched_t *u = &m->waste.untouched[*v - 1];
    u->bytes += untouched;
    u->checked_bytes += checked;
    u->blocks += scale;
    if (o->size > u->largest_size || (o->size == u->largest_size && untouched_one > u->largest_untouched)) {
        u->largest_size = o->size;
        u->largest_untouched = untouched_one;
        u->node = folded_node(m, o->node);
        u->full = o->node;
    }
    if (untouched > 0) {
        untouched_fact_t *f = PF_VEC_PUSH(W->facts, W->n_facts, W->cap_facts);
        *f = (untouched_fact_t){o->line, o->t_alloc, t_end, untouched};
    }
}

static void note_value(const pf_model_t *m, waste_sweep_t *W, const live_obj_t *o, double scale, uint64_t fingerprint)
{
    int created;
    int32_t node = folded_node(m, o->node);
    uint64_t *v = pf_map_put(&W->groups, pf_sweep_key3((uint64_t)(node >= 0 ? node : -2 - o->line) & 0xffffffffull,
                                                       o->size, fingerprint), &created);
    if (created) {
        value_group_t *g = PF_VEC_PUSH(W->g, W->n_g, W->cap_g);
        *g = (value_group_t){o->line, node, o->node, o->size, o->domain, 0, 0, 0};
        *v = W->n_g;
        return;     /* a value's first object is no recomputation */
    }
    value_group_t *g = &W->g[*v - 1];
    g->matches++;
    g->bytes += o->est;
    g->count += scale;
}

void pf_sweep_content(sweeper_t *S, const event_t *e)
{
    pf_model_t *m = S->m;
    const pf_rec_content_t *c = pf_event_payload(S->L, e);
    m->waste.content_records++;
    int64_t idx = pf_sweep_live_object(S, e->proc, c->addr);
    if (idx < 0 || e->aux >= 32)
        return;
    const live_obj_t *o = &S->objs[idx];
    if (o->gpu || !o->size)
        return;
    waste_sweep_t *W = sweep_state(m);
    double scale = o->est / (double)o->size;
    /* freed during the interpreter's shutdown: live to the end for the peak, as the sweep counts it */
    uint64_t t_end = (c->flags & PF_CONTENT_AT_EXIT) || e->t >= S->L->procs[e->proc].fin_ns ? UINT64_MAX : e->t;
    if (c->checked_pages && c->untouched_pages <= c->checked_pages)
        note_untouched(m, W, o, scale, (uint64_t)1 << e->aux, c, t_end);
    if (c->flags & PF_CONTENT_HASHED)
        note_value(S->m, W, o, scale, c->fingerprint);
}

static int by_recomputed_bytes(const void *a, const void *b)
{
    double x = ((const pf_recomputation_t *)a)->bytes, y = ((const pf_recomputation_t *)b)->bytes;
    return x < y ? 1 : x > y ? -1 : 0;
}

static int by_untouched_bytes(const void *a, const void *b)
{
    double x = ((const pf_untouched_t *)a)->bytes, y = ((const pf_untouched_t *)b)->bytes;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The library function that made an object of the unfolded tree's node full, under the user's line, as
 * "function (file:line)"; 0 when the user's line made it (native code it called directly, as np.sqrt(w),
 * included). Generated code (a file named "<...>") is passed over: whoever called it. */
static uint32_t library_maker(pf_model_t *m, int32_t full)
{
    for (int32_t n = full; n >= 0; n = m->full[n].parent) {
        const pf_callnode_t *c = &m->full[n];
        if (c->kind == PF_NODE_USER)
            return 0;
        const char *file = m->strings[c->file];
        if (c->kind == PF_NODE_NATIVE || file[0] == '<')
            continue;
        return pf_model_intern_maker(m, m->strings[c->function], file, c->line);
    }
    return 0;
}

/* The groups with enough matches, summed per (path, size): one entry however many values it repeated. */
static void collect_recomputations(pf_model_t *m, waste_sweep_t *W)
{
    pf_map_t entries = {0};
    for (size_t i = 0; i < W->n_g; i++) {
        const value_group_t *g = &W->g[i];
        if (g->matches < PF_RECOMPUTE_MIN_MATCHES)
            continue;
        int created;
        uint64_t *v = pf_map_put(&entries, pf_sweep_key3((uint64_t)(g->node >= 0 ? g->node : -2 - g->row) & 0xffffffffull,
                                                         g->size, 0x5EC), &created);
        if (created) {
            pf_recomputation_t *r =
                PF_VEC_PUSH(m->waste.recomputations, m->waste.n_recomputations, m->waste.cap_recomputations);
            *r = (pf_recomputation_t){.row = g->row, .node = g->node, .size = g->size, .domain = g->domain,
                                      .native = pf_domain_is_native(g->domain),
                                      .made_in = g->full >= 0 ? library_maker(m, g->full) : 0};
            *v = m->waste.n_recomputations;
        }
        pf_recomputation_t *r = &m->waste.recomputations[*v - 1];
        r->bytes += g->bytes;
        r->count += g->count;
        r->matches += g->matches;
        r->values++;
        pf_line_t *l = &m->lines[g->row];
        l->recomputed_bytes += g->bytes;
        l->recomputed_count += g->count;
        m->waste.recomputed_bytes += g->bytes;
        m->waste.recomputed_count += g->count;
    }
    pf_map_free(&entries);
    if (m->waste.n_recomputations)
        qsort(m->waste.recomputations, m->waste.n_recomputations, sizeof *m->waste.recomputations,
              by_recomputed_bytes);
    /* A path's entries of every size summed on its largest (the one the findings show, site_first its own
     * index). A str made again may count as two values (its cached hash set in one, not yet in the other),
     * so a path with one size repeats several values only from 3 on. */
    pf_map_t sites = {0};
    for (size_t i = 0; i < m->waste.n_recomputations; i++) {
        pf_recomputation_t *r = &m->waste.recomputations[i];
        int created;
        uint64_t *v = pf_map_put(&sites, pf_sweep_key3((uint64_t)(r->node >= 0 ? r->node : -2 - r->row) & 0xffffffffull,
                                                       0, 0x5173), &created);
        if (created) {
            *v = i;
            r->site = (pf_recomputation_site_t){.smallest = r->size, .largest = r->size};
        }
        r->site_first = (int32_t)*v;
        pf_recomputation_site_t *site = &m->waste.recomputations[*v].site;
        site->sizes++;
        site->values += r->values;
        site->bytes += r->bytes;
        site->count += r->count;
        site->smallest = r->size < site->smallest ? r->size : site->smallest;
        site->largest = r->size > site->largest ? r->size : site->largest;
    }
    pf_map_free(&sites);
    for (size_t i = 0; i < m->waste.n_recomputations; i++) {
        pf_recomputation_t *r = &m->waste.recomputations[i];
        const pf_recomputation_site_t *site = &m->waste.recomputations[r->site_first].site;
        r->category = r->native ? "repeated native call with the same arguments" : "loop-invariant computation";
        if (r->made_in)     /* the library repeats it: within one call of the line's, or on each of several */
            r->fix = "call it once and keep the result, or give it data it need not convert (dtype, layout)";
        else if (site->sizes > 1 || site->values >= 3) {
            /* the line makes several values, each again: what is invariant is the set */
            r->category = "repeated values";
            r->fix = "keep the values made (a cache keyed by what makes them) instead of making them again";
        } else
            r->fix = r->native ? "compute it once outside the loop, or cache it (the call got the same inputs each time)"
                               : "compute it once outside the loop, or cache it";
    }
}

/* What to do about untouched memory: none of it used, or only part. The np.empty advice only where the
 * line zero-fills by name: at `int(t.sum())` the memory is what the call made for itself (PyTorch's kernels
 * loaded at their first launch), and numpy's advice there misleads. */
static const char *untouched_fix(const pf_model_t *m, const pf_untouched_t *u)
{
    if (u->made_in)     /* the library sized it (CUDA's start, a pool): the line can only ask for less */
        return "a library call on this line allocated it: ask it for less where it takes a size (a buffer, "
               "cache or pool setting); while untouched it holds address space, not RAM";
    if (u->checked_bytes > 0 && u->bytes >= 0.98 * u->checked_bytes)
        return "never used: do not allocate it, or allocate it lazily when it is first needed";
    const pf_line_t *l = &m->lines[u->row];
    if (strstr(pf_report_source_line(m, pf_model_str(m, l->file), l->line), "zeros"))
        return "allocate the size needed (or grow it as it fills); np.empty instead of np.zeros only where "
               "every element is written before it is read";
    return "allocate the size needed (or grow it as it fills)";
}

void pf_waste_finish(sweeper_t *S)
{
    pf_model_t *m = S->m;
    waste_sweep_t *W = m->waste.sweep;
    for (size_t i = 0; i < m->n_lines; i++)
        m->lines[i].resident_peak_bytes = m->lines[i].s.peak_bytes;
    m->waste.resident_peak_bytes = m->total.peak_bytes;
    if (!W)
        return;
    collect_recomputations(m, W);
    for (size_t i = 0; i < m->waste.n_untouched; i++) {
        pf_untouched_t *u = &m->waste.untouched[i];
        u->made_in = u->full >= 0 ? library_maker(m, u->full) : 0;
        u->fix = untouched_fix(m, u);
    }
    if (m->waste.n_untouched)
        qsort(m->waste.untouched, m->waste.n_untouched, sizeof *m->waste.untouched, by_untouched_bytes);
    if (m->total.peak_bytes > 0) {
        for (size_t i = 0; i < W->n_facts; i++) {
            const untouched_fact_t *f = &W->facts[i];
            if (f->t_alloc <= m->peak_ns && f->t_end > m->peak_ns) {
                pf_line_t *l = &m->lines[f->row];
                double cut = f->bytes < l->resident_peak_bytes ? f->bytes : l->resident_peak_bytes;
                l->resident_peak_bytes -= cut;
                m->waste.untouched_at_peak += cut;
            }
        }
        m->waste.resident_peak_bytes = m->total.peak_bytes - m->waste.untouched_at_peak;
    }
    pf_map_free(&W->groups);
    pf_map_free(&W->untouched_rows);
    free(W->g);
    free(W->facts);
    free(W);
    m->waste.sweep = NULL;
}
