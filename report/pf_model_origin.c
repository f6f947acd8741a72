/* pf_model_origin.c - charges a thread's or process's memory that has no line of the user's on its stack
 * to the user's line that started it (see pf_origin_int.h for the rule). */
#include <stdlib.h>
#include <string.h>

#include "pf_origin_int.h"
#include "pf_sweep_int.h"

void pf_origin_collect(loader_t *L, const pf_record_t *r, uint64_t t_root)
{
    proc_state_t *P = &L->procs[L->cur];
    if (r->type == PF_REC_WRITER) {
        writer_change_t *w = PF_VEC_PUSH(P->writer_changes, P->n_writer_changes, P->cap_writer_changes);
        w->offset = r->offset;
        w->tid = r->tid;
        return;
    }
    if (r->type == PF_REC_SPAWN) {
        const pf_rec_spawn_t *s = r->payload;
        /* an unprofiled start begins no profile: no process's origin, only listed (pf_origin_unprofiled) */
        spawn_t *sp = s->child_flags & PF_SPAWN_UNPROFILED && r->aux == PF_SPAWN_PROCESS
                          ? PF_VEC_PUSH(P->unprofiled, P->n_unprofiled, P->cap_unprofiled)
                          : PF_VEC_PUSH(P->spawns, P->n_spawns, P->cap_spawns);
        sp->t = t_root;
        sp->child = s->child;
        sp->tid = s->tid;
        sp->kind = r->aux;
        sp->rec = s;
        return;
    }
    if (t_root < P->first_t)
        P->first_t = t_root;
    if (!(r->aux & PF_THREAD_HANDLE))
        return;
    int created;
    uint64_t *v = pf_map_put(&P->threads_by_tid, r->tid, &created);
    if (!created)
        return;     /* a thread writes one again per file generation; the handle does not change */
    thread_ref_t *th = PF_VEC_PUSH(P->threads, P->n_threads, P->cap_threads);
    th->t = t_root;
    memcpy(&th->handle, (const pf_rec_thread_t *)r->payload + 1, sizeof th->handle);
    *v = P->n_threads;
}

void pf_origin_free(proc_state_t *P)
{
    free(P->spawns);
    free(P->unprofiled);
    free(P->threads);
    free(P->writer_changes);
    pf_map_free(&P->threads_by_tid);
}

uint32_t pf_origin_event_tid(const loader_t *L, const event_t *e)
{
    const pf_file_t *f = &L->procs[e->proc].file;
    uint64_t off = (uint64_t)e->offset8 << 3, chunk = f->header.chunk_bytes;
    uint64_t start = PF_HEADER_BYTES + (off - PF_HEADER_BYTES) / chunk * chunk;
    /* the last change of writer before the event, if its chunk has one */
    const proc_state_t *P = &L->procs[e->proc];
    size_t lo = 0, hi = P->n_writer_changes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (P->writer_changes[mid].offset < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && P->writer_changes[lo - 1].offset >= start)
        return P->writer_changes[lo - 1].tid;
    uint32_t tid;
    memcpy(&tid, f->data + start + offsetof(pf_chunk_header_t, tid), sizeof tid);
    return tid;
}

static int cmp_spawn(const void *a, const void *b)
{
    const spawn_t *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    if (x->child != y->child)
        return x->child < y->child ? -1 : 1;
    return x->t < y->t ? -1 : x->t > y->t;
}

void pf_origin_index(loader_t *L)
{
    for (size_t i = 0; i < L->n_procs; i++)
        if (L->procs[i].n_spawns > 1)
            qsort(L->procs[i].spawns, L->procs[i].n_spawns, sizeof(spawn_t), cmp_spawn);
}

/* The latest start of `child` (of this kind) recorded in process proc no later than t; NULL when none.
 * Threads' handles and pids are reused, so the latest start before the started one ran is its own. */
static const spawn_t *latest_start(const proc_state_t *P, uint16_t kind, uint64_t child, uint64_t t)
{
    spawn_t key = {.t = t, .child = child, .kind = kind};
    size_t lo = 0, hi = P->n_spawns;     /* the first spawn after key, in (kind, child, t) order */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_spawn(&P->spawns[mid], &key) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const spawn_t *s = &P->spawns[lo - 1];
    return s->kind == kind && s->child == child ? s : NULL;
}

/* The latest start, no later than `began`, of `child` by a process whose pid is `by` (a pid may have had two
 * images, the fork and what it exec'd: either may have started it). Sets *parent. */
static const spawn_t *start_by(const loader_t *L, uint32_t proc, uint32_t by, uint64_t child, uint64_t began,
                               uint32_t *parent)
{
    const spawn_t *best = NULL;
    for (size_t q = 0; q < L->n_procs; q++) {
        if (q == proc || L->m->procs[q].pid != by)
            continue;
        const spawn_t *s = latest_start(&L->procs[q], PF_SPAWN_PROCESS, child, began);
        if (s && (!best || s->t > best->t)) {
            best = s;
            *parent = (uint32_t)q;
        }
    }
    return best;
}

/* A process's start: by its ppid; or, run through launchers pyflow does not profile (a shell), the start of
 * the first of them by the profiled process that ran it, or that process's latest start of a pid it could
 * not know (system(3)). Sets *parent. */
static const spawn_t *process_start(const loader_t *L, uint32_t proc, uint32_t *parent)
{
    const pf_process_t *pr = &L->m->procs[proc];
    if (pr->root)
        return NULL;
    uint64_t began = L->procs[proc].first_t;
    const pf_file_header_t *h = &L->procs[proc].file.header;
    const spawn_t *s = NULL;
    if (h->via_pid) {
        s = start_by(L, proc, h->via_pid, h->via_child, began, parent);
        if (!s)
            s = start_by(L, proc, h->via_pid, 0, began, parent);
    }
    return s ? s : start_by(L, proc, pr->ppid, pr->pid, began, parent);
}

/* The starter of (proc, tid): a thread start in proc, else the process's start in its parent. */
static const spawn_t *starter(const loader_t *L, uint32_t proc, uint32_t tid, uint32_t *in_proc)
{
    const proc_state_t *P = &L->procs[proc];
    uint64_t *ti = pf_map_get((pf_map_t *)&P->threads_by_tid, tid);
    if (ti) {
        const thread_ref_t *th = &P->threads[*ti - 1];
        const spawn_t *s = latest_start(P, PF_SPAWN_THREAD, th->handle, th->t);
        if (s) {
            *in_proc = proc;
            return s;
        }
    }
    return process_start(L, proc, in_proc);
}

static size_t origin(sweeper_t *S, uint32_t proc, uint32_t tid, int hops);

/* The origin of start s, recorded in process q: its stack's user line, else its starting thread's origin. */
static origin_t start_origin(sweeper_t *S, uint32_t q, const spawn_t *s, int hops)
{
    origin_t o = {.row = -1, .func = -1, .node = -1, .proc = q};
    const pf_rec_spawn_t *r = s->rec;
    pf_stack_view_t st = pf_loader_stack(S->L, q, r + 1, r->flags, r->n_py, r->n_native);
    int user = 0;
    if (st.n_py)
        o.row = pf_sweep_attribute_stack(S, q, st.py, st.n_py, st.attribute_flags, &o.func, &user);
    if (user)
        o.node = pf_sweep_stack_node(S, q, st.py, st.n_py, o.row);
    else {
        size_t up = origin(S, q, s->tid, hops + 1);     /* may move S->origins */
        o = S->origins[up];
    }
    return o;
}

/* The origin of (proc, tid): an index into S->origins. */
static size_t origin(sweeper_t *S, uint32_t proc, uint32_t tid, int hops)
{
    uint64_t key = pf_sweep_key3(proc, tid, 0x0819);
    uint64_t *memo = pf_map_get(&S->origin_memo, key);
    if (memo)
        return (size_t)*memo;
    origin_t o = {.row = -1, .func = -1, .node = -1, .proc = proc};
    uint32_t q = 0;
    const spawn_t *s = hops < PF_ORIGIN_MAX_HOPS ? starter(S->L, proc, tid, &q) : NULL;
    if (s)
        o = start_origin(S, q, s, hops);
    *PF_VEC_PUSH(S->origins, S->n_origins, S->cap_origins) = o;
    *pf_map_put(&S->origin_memo, key, NULL) = S->n_origins - 1;
    return S->n_origins - 1;
}

int32_t pf_origin_row(sweeper_t *S, uint32_t proc, uint32_t tid, int32_t *func, int32_t *node)
{
    size_t i = origin(S, proc, tid, 0);     /* may move S->origins */
    origin_t o = S->origins[i];
    *func = o.func;
    *node = o.node;
    if (o.row < 0)
        return -1;
    /* What the line started, counted once: a process whose memory reached it from another process (its
     * threads count with it), else the thread. */
    int created;
    pf_line_t *l = &S->m->lines[o.row];
    if (o.proc != proc) {
        pf_map_put(&S->origin_memo, pf_sweep_key3(proc, (uint64_t)o.row, 0xC0C1), &created);
        l->started_procs += created;
    } else {
        pf_map_put(&S->origin_memo, pf_sweep_key3(proc, tid, 0xC0C0), &created);
        l->started_threads += created;
    }
    return o.row;
}

int32_t pf_origin_process_row(sweeper_t *S, uint32_t proc)
{
    if (S->m->procs[proc].root)
        return -1;
    size_t i = origin(S, proc, S->m->procs[proc].pid, 0);    /* may move S->origins */
    return S->origins[i].row;
}

static int cmp_unprofiled(const void *a, const void *b)
{
    const pf_unprofiled_t *x = a, *y = b;
    return x->t_s < y->t_s ? -1 : x->t_s > y->t_s;
}

void pf_origin_unprofiled(sweeper_t *S)
{
    pf_model_t *m = S->m;
    for (uint32_t q = 0; q < S->L->n_procs; q++) {
        const proc_state_t *P = &S->L->procs[q];
        for (size_t i = 0; i < P->n_unprofiled; i++) {
            const spawn_t *s = &P->unprofiled[i];
            origin_t o = start_origin(S, q, s, 0);
            pf_unprofiled_t *u = PF_VEC_PUSH(m->unprofiled, m->n_unprofiled, m->cap_unprofiled);
            u->pid = (uint32_t)s->child;
            u->starter_pid = m->procs[q].pid;
            u->row = o.row;
            u->t_s = (double)s->t / 1e9;
            u->command = pf_utf8_clean(pf_spawn_command(s->rec), s->rec->command_len);
        }
    }
    if (m->n_unprofiled > 1)
        qsort(m->unprofiled, m->n_unprofiled, sizeof *m->unprofiled, cmp_unprofiled);
}
