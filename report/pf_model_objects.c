/* pf_model_objects.c - the sweep's live objects: found by an address inside them, and ended with their
 * process (see pf_sweep_int.h). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "pf_copy_rule.h"
#include "pf_loader_int.h"
#include "pf_report_int.h"
#include "pf_sweep_int.h"
#include "pf_workers_int.h"

/* The index of the first range whose key is above key. */
static size_t range_upper(const pf_ranges_t *r, uint64_t key)
{
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->v[mid].key <= key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void pf_ranges_add(pf_ranges_t *r, uint64_t key, uint64_t idx)
{
    size_t at = range_upper(r, key);
    PF_VEC_PUSH(r->v, r->n, r->cap);
    memmove(&r->v[at + 1], &r->v[at], (r->n - 1 - at) * sizeof r->v[0]);
    r->v[at] = (range_ent_t){key, idx};
}

void pf_ranges_del(pf_ranges_t *r, uint64_t key)
{
    size_t at = range_upper(r, key);
    if (at == 0 || r->v[at - 1].key != key)
        return;
    memmove(&r->v[at - 1], &r->v[at], (r->n - at) * sizeof r->v[0]);
    r->n--;
}

/* addr itself, a small header before it (CPython objects), or, for GPU blocks and large buffers, any
 * address inside. */
int64_t pf_live_object_at(const pf_live_map_t *live, const pf_ranges_t *r, const char *size0, size_t stride,
                          uint64_t size_mask, uint32_t proc, uint64_t addr, uint64_t *offset)
{
#define SIZE_OF(idx) (*(const uint64_t *)(const void *)(size0 + (size_t)(idx) * stride) & size_mask)
    uint64_t found = 0;
    int64_t idx = -1;
    for (uint64_t back = 0; idx < 0 && back <= PF_COPY_MAX_HEADER && back <= addr; back += 8) {
        const pf_live_slot_t *v = pf_live_get(live, pf_sweep_addr_key(proc, addr - back));
        if (v && addr < addr - back + SIZE_OF(v->idx))
            idx = (int64_t)v->idx, found = back;
    }
    uint64_t key = pf_sweep_addr_key(proc, addr);
    size_t at = idx < 0 ? range_upper(r, key) : 0;
    if (at > 0) {
        const range_ent_t *e = &r->v[at - 1];
        if (key - e->key < SIZE_OF(e->idx))    /* keys of one process differ by the address */
            idx = (int64_t)e->idx, found = key - e->key;
    }
#undef SIZE_OF
    if (idx >= 0 && offset)
        *offset = found;
    return idx;
}

int64_t pf_sweep_object_at(sweeper_t *S, uint32_t proc, uint64_t addr, uint64_t *offset)
{
    /* no objects yet: no size is read (and no offset applied to a null array) */
    const char *size0 = S->objs ? (const char *)S->objs + offsetof(live_obj_t, size) : NULL;
    return pf_live_object_at(&S->live, &S->ranges, size0, sizeof *S->objs, ~0ull, proc, addr, offset);
}

void pf_live_each_of_process(pf_live_map_t *live, uint32_t proc, const uint64_t *left,
                             void (*release)(void *arg, uint64_t key, pf_live_slot_t *slot), void *arg)
{
    for (size_t i = 0; i < live->cap && *left; i++) {
        uint64_t k = live->slots[i].key1;
        if (k && ((k - 1) >> 48) == (proc & 0x7fff)) {
            release(arg, k - 1, &live->slots[i]);
            i--;    /* a deletion may move a later entry into this slot */
        }
    }
}

typedef struct end_arg {
    sweeper_t *S;
    uint32_t proc;
    uint64_t t;
} end_arg_t;

static void end_one(void *arg, uint64_t key, pf_live_slot_t *slot)
{
    end_arg_t *a = arg;
    pf_sweep_release(a->S, a->proc, key, slot, a->t, 1);
}

/* A process other than the root ended at t (its last event; an image replaced by exec ends there too): what
 * it still held stops counting in the merged rows, so the program's peak and live bytes follow each
 * process's lifetime (ten children run one after another, 50 MB each, peak at one child's 50 MB, not 500).
 * The process's own table keeps its live at exit. One walk of the live map per process that ended holding
 * anything. The root's objects stay: they are the program's live at exit. */
void pf_sweep_end_process(sweeper_t *S, uint32_t proc, uint64_t t)
{
    end_arg_t a = {S, proc, t};
    pf_live_each_of_process(&S->live, proc, &S->proc_objs[proc], end_one, &a);
}

static int cmp_proc_end(const void *x, const void *y)
{
    const proc_end_t *a = x, *b = y;
    return (a->t > b->t) - (a->t < b->t);
}

/* 1 when process i ended at its last event. The launcher's trailer says which children were still running
 * when it had waited for them (PF_REC_RUNNING): every other one had ended. Without it (a profile of
 * `pyflow env`, or one whose launcher was killed), a child ended when its file says so (its interpreter shut
 * down, or it called _exit) or when it went quiet before the root did. A child that outlives the program
 * and then ends (multiprocessing's forkserver and resource tracker end a few milliseconds after it) gives its
 * memory back as one that ends before it does; only one still running keeps what it held as live at exit. */
static int process_ended(const sweeper_t *S, size_t i, uint64_t root_end)
{
    const pf_model_t *m = S->m;
    const pf_process_t *p = &m->procs[i];
    if (p->root)
        return 0;
    if (m->running_known && S->L->procs[i].file.header.run_id == S->L->procs[0].file.header.run_id)
        return !pf_report_process_running(m, i);    /* the trailer's run: not another job's file of a set */
    return S->L->procs[i].last_t < root_end || p->end_kind == PF_END_SHUTDOWN || p->end_kind == PF_END_EXIT ||
           p->end_kind == PF_END_EXEC;
}

/* The processes that end (process_ended), and the images replaced by an exec (the root's too), by when (a
 * sentinel at UINT64_MAX ends the list). */
proc_end_t *pf_sweep_process_ends(const sweeper_t *S)
{
    const pf_model_t *m = S->m;
    proc_end_t *ends = pf_xmalloc((m->n_procs + 1) * sizeof *ends);
    size_t n = 0;
    uint64_t root_end = 0;
    for (size_t i = 0; i < m->n_procs; i++)
        if (m->procs[i].root && S->L->procs[i].last_t > root_end)
            root_end = S->L->procs[i].last_t;
    for (size_t i = 0; i < m->n_procs; i++)
        if (pf_report_process_replaced(m, i) || process_ended(S, i, root_end))
            ends[n++] = (proc_end_t){S->L->procs[i].last_t, (uint32_t)i};
    qsort(ends, n, sizeof *ends, cmp_proc_end);
    ends[n] = (proc_end_t){UINT64_MAX, 0};
    return ends;
}

