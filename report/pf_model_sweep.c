/* pf_model_sweep.c - turns the loaded events into the model: sweeps them once, in time order (ties keep file
 * order; pf_model_events.c), allocations, frees, copies, verdicts, into per-line, per-function and
 * whole-program statistics and timelines, and each line's share of the program's peak.
 *
 * Attribution: a record is charged to the innermost frame of its stack that is the user's code
 * (pf_model_is_user_file), else to its innermost frame; a record without frames goes to "[native thread]"
 * (a thread that never ran Python) or "[python startup]" (the main thread before or after Python ran, and
 * stacks with no user frame that the interpreter began from C while starting: site and .pth imports, the
 * standard streams' codecs). An allocation or copy with no user frame, in a thread or process that a
 * user's line started, is charged to that line instead (pf_origin_int.h).
 *
 * Liveness: an address is live at most once per process. A FREE of an unknown address is ignored; an
 * ALLOC at an address that is still live means the allocator reused it, so the earlier block was freed
 * (its FREE was not recorded) and is released first. Frees after a process's finalization mark do not
 * count: what is live then is "live at exit".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_calltree_int.h"
#include "pf_copy_rule.h"
#include "pf_events_pipe.h"
#include "pf_linetable_int.h"
#include "pf_loader_int.h"
#include "pf_origin_int.h"
#include "pf_report_int.h"
#include "pf_aggregate_int.h"
#include "pf_sweep_int.h"
#include "pf_workers_int.h"
#include "pf_symbols_int.h"

#define intern pf_model_intern

int32_t pf_sweep_index32(int64_t i, const char *what)
{
    if (i > INT32_MAX) {
        fprintf(stderr, "pyflow: more than %d %s: too many to build the report\n", INT32_MAX, what);
        exit(1);
    }
    return (int32_t)i;
}

uint64_t pf_sweep_key3(uint64_t a, uint64_t b, uint64_t c)
{
    return pf_hash_words((uint64_t[]){a, b, c}, 3, 0x77) & ~(1ull << 63);
}

/* Code nested in a line's function on the same line: a comprehension (its own code object before 3.12), a
 * generator expression, a lambda. */
static int nested_on_line(const char *function)
{
    return function[0] == '<' && strcmp(function, "<module>") != 0;
}

/* One row per file:line. A line running code of two functions (a comprehension on 3.8-3.11, a generator
 * expression, a lambda) is named after the enclosing one, as 3.12's inlined comprehensions are. */
static int32_t line_row(sweeper_t *S, uint32_t file, uint32_t function, int line)
{
    int created;
    uint64_t *v = pf_map_put(&S->line_index, pf_sweep_key3(file, 0, (uint64_t)(int64_t)line), &created);
    if (!created) {
        pf_line_t *l = &S->m->lines[*v - 1];
        if (l->function != function && nested_on_line(S->m->strings[l->function]) &&
            !nested_on_line(S->m->strings[function]))
            l->function = function;
        return (int32_t)(*v - 1);
    }
    pf_line_t *l = PF_VEC_PUSH(S->m->lines, S->m->n_lines, S->m->cap_lines);
    l->file = file;
    l->function = function;
    l->line = line;
    *v = S->m->n_lines;
    return (int32_t)(S->m->n_lines - 1);
}

static int32_t func_row(sweeper_t *S, uint32_t file, uint32_t function, int first_line)
{
    int created;
    uint64_t *v = pf_map_put(&S->func_index, pf_sweep_key3(file, function, 0xF), &created);
    if (!created)
        return (int32_t)(*v - 1);
    pf_func_t *f = PF_VEC_PUSH(S->m->funcs, S->m->n_funcs, S->m->cap_funcs);
    f->file = file;
    f->function = function;
    f->first_line = first_line;
    *v = S->m->n_funcs;
    return (int32_t)(S->m->n_funcs - 1);
}

static int32_t bracket_row(sweeper_t *S, const char *where, int32_t *func)
{
    uint32_t file = intern(S->m, where, strlen(where)), fn = intern(S->m, "", 0);
    *func = func_row(S, file, fn, 0);
    return line_row(S, file, fn, 0);
}

/* 1 when frame f is threading's Thread.run (pcode_t.thread_run). */
static int thread_run(sweeper_t *S, uint32_t proc, const pf_rec_pyframe_t *f)
{
    proc_state_t *P = &S->L->procs[proc];
    uint64_t *ci = pf_map_get(&P->codes, f->code_id);
    return ci && P->pcodes[*ci - 1].thread_run;
}

/* The frame a stack is charged to (its index), or -1 with *bracket naming the bracketed row; *user = 1
 * when it is a frame of the user's code. */
static int choose_frame(sweeper_t *S, uint32_t proc, const pf_rec_pyframe_t *frames, uint16_t n, uint8_t flags,
                        const char **bracket, int *user)
{
    pf_model_t *m = S->m;
    proc_state_t *P = &S->L->procs[proc];
    *user = 0;
    *bracket = NULL;
    if (n == 0) {
        *bracket = (flags & PF_STACK_MISSING)      ? "[stack missing]"
                   : (flags & PF_ALLOC_NO_PYSTATE) ? "[native thread]"
                                                   : "[python startup]";
        return -1;
    }
    /* The innermost frame in a real user file. Code without a file (<string>: python -c, exec) counts only
     * while every frame outside it is user code too and none of them is in a real file: library code
     * generates such code (namedtuple, site running a .pth file's import line, numpy 1.24's
     * `<__array_function__ internals>` around every dispatched function, dataclasses' __init__), and that
     * is not the user's line; under a line of a real file, that line is the one the user can open. In a
     * process other than the launched one, a -c at the bottom is how a library started it
     * (multiprocessing's spawn, joblib), and counts as the library's. Else the innermost library frame (so
     * such generated code goes to the library that ran it), else the innermost frame at all. */
    int pick = -1, fallback = -1, any = -1, chain = m->procs[proc].root, real_user = 0;
    const pcode_t *outermost = NULL;
    for (int i = n - 1; i >= 0; i--) {
        uint64_t *ci = pf_map_get(&P->codes, frames[i].code_id);
        if (!ci)
            continue;
        any = i;
        const pcode_t *pc = &P->pcodes[*ci - 1];
        if (!outermost)
            outermost = pc;
        int generated = pc->generated;
        if (generated && m->procs[proc].root && i + 1 < n && thread_run(S, proc, &frames[i + 1]))
            chain = 1;  /* a thread's target, defined in the program's -c or stdin code: the user's again */
        if (!pc->is_user) {
            chain = 0;
            fallback = i;
        } else if (!generated) {
            pick = i;
            real_user = 1;
        } else if (chain && !real_user) {
            pick = i;
        }
    }
    *user = pick >= 0;
    if (pick >= 0)
        return pick;
    /* No line of the user's under code that C called (pcode_t.is_import_root: the site module's and .pth
     * files' imports, the codec search): the interpreter starting, not anything the program asked for. */
    if (outermost && outermost->is_import_root && !(flags & PF_ALLOC_TRUNCATED))
        *bracket = "[python startup]";
    else if ((pick = fallback >= 0 ? fallback : any) < 0)
        *bracket = "[unknown]";
    return *bracket ? -1 : pick;
}

/* The code of frame f, or NULL when the profile does not define it. */
static const pcode_t *frame_code(sweeper_t *S, uint32_t proc, const pf_rec_pyframe_t *f)
{
    proc_state_t *P = &S->L->procs[proc];
    uint64_t *ci = pf_map_get(&P->codes, f->code_id);
    return ci ? &P->pcodes[*ci - 1] : NULL;
}

/* Walks of a code object's line table before it is decoded once into an index: most code objects are asked
 * about at a few offsets; a module's body or a large function at thousands (each walk starts over). */
#define PF_LINE_WALKS 8u

/* The line of offset lasti_bytes in code pc (the loader's: its index is a cache there). */
static int code_line(const pcode_t *pc, uint32_t lasti_bytes)
{
    pcode_t *c = (pcode_t *)(uintptr_t)pc;
    if (!c->line_index && ++c->line_lookups > PF_LINE_WALKS)
        c->line_index = pf_linetable_index_new(c->format, c->table, c->table_len, c->firstlineno);
    return c->line_index ? pf_linetable_index_line(c->line_index, lasti_bytes)
                         : pf_linetable_line(c->format, c->table, c->table_len, c->firstlineno, lasti_bytes);
}

/* The row of frame f, of code pc (and *func unless func is NULL), decoding its line once per (code, offset). */
static int32_t frame_row(sweeper_t *S, uint32_t proc, const pcode_t *pc, const pf_rec_pyframe_t *f, int32_t *func)
{
    if (func)
        *func = func_row(S, pc->file, pc->function, pc->firstlineno);
    uint64_t ck = pf_sweep_key3(proc, f->code_id, f->lasti_bytes);
    int created;
    uint64_t *v = pf_map_put(&S->frame_cache, ck, &created);
    if (created) {
        *v = (uint64_t)line_row(S, pc->file, pc->function, code_line(pc, f->lasti_bytes)) + 1;
    }
    return (int32_t)(*v - 1);
}

/* The line frame f is at (decoded once per (code, offset)); pc is its code. */
static int frame_line(sweeper_t *S, uint32_t proc, const pf_rec_pyframe_t *f, const pcode_t *pc)
{
    int created;
    uint64_t *v = pf_map_put(&S->line_cache, pf_sweep_key3(proc, f->code_id, f->lasti_bytes), &created);
    if (created)
        *v = (uint64_t)(int64_t)code_line(pc, f->lasti_bytes) + 1;
    return (int)((int64_t)*v - 1);
}

/* The row of frames[pick] (and *func). Code nested on a line (a comprehension before 3.12, a generator
 * expression, a lambda) that its caller runs from that very line is part of the caller's function, as
 * 3.12's inlined comprehensions are: the function row is the caller's, and the line row is named after it.
 * Nested code run from elsewhere (a generator consumed in another function) keeps its own. */
static int32_t picked_row(sweeper_t *S, uint32_t proc, const pf_rec_pyframe_t *frames, uint16_t n, int pick,
                          int32_t *func)
{
    const pcode_t *pc = frame_code(S, proc, &frames[pick]), *outer;
    if (pick + 1 >= n || !nested_on_line(S->m->strings[pc->function]) ||
        !(outer = frame_code(S, proc, &frames[pick + 1])) || outer->file != pc->file ||
        frame_line(S, proc, &frames[pick + 1], outer) != pc->firstlineno)
        return frame_row(S, proc, pc, &frames[pick], func);
    int32_t row = frame_row(S, proc, pc, &frames[pick], NULL);
    *func = func_row(S, outer->file, outer->function, outer->firstlineno);
    pf_line_t *l = &S->m->lines[row];
    return line_row(S, l->file, outer->function, l->line);
}

int32_t pf_sweep_attribute_stack(sweeper_t *S, uint32_t proc, const pf_rec_pyframe_t *frames, uint16_t n,
                                 uint8_t flags, int32_t *func, int *user)
{
    const char *bracket;
    int pick = choose_frame(S, proc, frames, n, flags, &bracket, user);
    return bracket ? bracket_row(S, bracket, func) : picked_row(S, proc, frames, n, pick, func);
}

/* pf_sweep_attribute, and *user: the stack has a frame of the user's (then its row depends on it alone). */
static int32_t attribute(sweeper_t *S, uint32_t proc, const event_t *e, const pf_rec_pyframe_t *frames, uint16_t n,
                         uint8_t flags, int32_t *func, int *started, int32_t *node, int *user_out)
{
    const char *bracket;
    int user, pick = choose_frame(S, proc, frames, n, flags, &bracket, &user);
    *user_out = user;
    /* no user frame: the user's line that started this thread or process, before any row of its own is made
     * (the writer's tid is looked up only then) */
    uint32_t tid = !user && e && !(flags & PF_STACK_MISSING) ? pf_origin_event_tid(S->L, e) : 0;
    int32_t start_node = -1, row = tid ? pf_origin_row(S, proc, tid, func, &start_node) : -1;
    if (node)
        *node = start_node;
    if (started)
        *started = row >= 0;
    if (row >= 0)
        return row;
    return bracket ? bracket_row(S, bracket, func) : picked_row(S, proc, frames, n, pick, func);
}

int32_t pf_sweep_attribute(sweeper_t *S, uint32_t proc, const event_t *e, const pf_rec_pyframe_t *frames, uint16_t n,
                           uint8_t flags, int32_t *func, int *started, int32_t *node)
{
    int user;
    return attribute(S, proc, e, frames, n, flags, func, started, node, &user);
}

const pcode_t *pf_sweep_frame_code(sweeper_t *S, uint32_t proc, const pf_rec_pyframe_t *f) { return frame_code(S, proc, f); }

int pf_sweep_frame_line(sweeper_t *S, uint32_t proc, const pf_rec_pyframe_t *f, const pcode_t *pc)
{
    return frame_line(S, proc, f, pc);
}

#define PF_NO_USER_FRAME UINT64_MAX     /* stack_memo's value for an interned stack without a user frame, until
                                           its own row is needed (then a charge with no_user set) */

/* An allocation's row, function and call-tree node (*started as pf_sweep_attribute's). Every allocation
 * referring to one interned stack with a frame of the user's is charged alike: that is worked out once
 * per stack. A stack without one goes by its thread's starter (pf_origin_int.h), each time, and else to
 * the row of its own frames, worked out the first time it is needed (choosing among a deep import
 * stack's frames, each time, was a quarter of the instructions of a short exact profile's report). */
static int32_t charge_alloc(sweeper_t *S, const event_t *e, const pf_stack_view_t *st, uint8_t record_flags,
                            int32_t *func, int32_t *node, int *started, stack_charge_t **charge)
{
    uint64_t *memo = NULL;
    *charge = NULL;
    if ((record_flags & PF_ALLOC_STACK_REF) && st->py) {
        memo = pf_sweep_stack_memo(S, e->proc, st);
        if (*memo && *memo != PF_NO_USER_FRAME) {
            stack_charge_t *c = &S->charges[*memo - 1];
            if (c->no_user) {   /* as attribute() goes: the starter first (st->py: the stack is there) */
                uint32_t tid = pf_origin_event_tid(S->L, e);
                int32_t start_node = -1, row = tid ? pf_origin_row(S, e->proc, tid, func, &start_node) : -1;
                if (row >= 0) {
                    *started = 1;
                    *node = start_node >= 0 ? start_node : pf_sweep_stack_node(S, e->proc, st->py, st->n_py, row);
                    return row;
                }
            }
            *charge = c;
            *func = c->func;
            *node = c->node;
            *started = 0;
            return c->row;
        }
    }
    int user;
    int32_t row = attribute(S, e->proc, e, st->py, st->n_py, st->attribute_flags, func, started, node, &user);
    if (*node < 0)
        *node = pf_sweep_stack_node(S, e->proc, st->py, st->n_py, row);
    if (memo && !user && *started) {
        if (!*memo)
            *memo = PF_NO_USER_FRAME;
    } else if (memo && (!*memo || *memo == PF_NO_USER_FRAME)) {
        *PF_VEC_PUSH(S->charges, S->n_charges, S->cap_charges) = (stack_charge_t){row, *func, *node, -2, !user};
        *memo = S->n_charges;
        *charge = &S->charges[S->n_charges - 1];
    }
    return row;
}

/* A row's share of the program's peak is its live bytes at that instant. Rather than replaying the events
 * up to it, each row keeps the value it had at the latest peak: taken at its first change after that peak
 * (a row unchanged since the last peak still has it as its live bytes). */
static void keep_peak_value(const sweeper_t *S, pf_stats_t *s)
{
    if (s->peak_epoch != S->peak_epoch) {
        s->live_at_peak = s->live;
        s->peak_epoch = S->peak_epoch;
    }
}

static void keep_gpu_peak_value(const sweeper_t *S, pf_stats_t *s)
{
    if (s->gpu_peak_epoch != S->gpu_peak_epoch) {
        s->gpu_live_at_peak = s->gpu_live;
        s->gpu_peak_epoch = S->gpu_peak_epoch;
    }
}

/* The row's share of the latest (GPU) peak, after the sweep. */
static double share_of_peak(const sweeper_t *S, const pf_stats_t *s, int gpu)
{
    double v = gpu ? (s->gpu_peak_epoch == S->gpu_peak_epoch ? s->gpu_live_at_peak : s->gpu_live)
                   : (s->peak_epoch == S->peak_epoch ? s->live_at_peak : s->live);
    return v < 0.5 ? 0 : v;
}

/* The timeline bucket of time t (at level S->bucket_level, pf_timeline_int.h), working the level out only
 * when t leaves the bucket of the last one asked for. */
static int bucket_of(sweeper_t *S, uint64_t t)
{
    if (t < S->bucket_from || t >= S->bucket_to) {
        int k = pf_timeline_level(t);
        S->bucket_level = (uint8_t)k;
        S->bucket = (int)(t >> k);
        S->bucket_from = (uint64_t)S->bucket << k;
        S->bucket_to = S->bucket_from + ((uint64_t)1 << k);
    }
    return S->bucket;
}

/* Moves a row's live bytes to a new value at time t, keeping its area, maximum, timeline and peak share. */
/* set_live's dir: the new value is known not to be below the old one (an allocation's), not above it (a
 * free's), or either. */
#define PF_LIVE_UP 1
#define PF_LIVE_DOWN (-1)
#define PF_LIVE_ANY 0

static inline __attribute__((always_inline)) void set_live_dir(sweeper_t *S, pf_stats_t *s, uint64_t t, double live,
                                                               int dir)
{
    keep_peak_value(S, s);
    if (live < 0 && live > -1.0)
        live = 0;   /* rounding of sampled estimates (so the old value, stored, was not in (-1, 0) either) */
    s->area_ns += s->live * (double)(t - s->live_since_ns);
    s->live_since_ns = t;
    int b = bucket_of(S, t);
    if (__builtin_expect(s->timeline_level != S->bucket_level, 0)) {  /* a row last changed before time moved on */
        pf_timeline_coarsen(s->timeline, &s->timeline_filled, s->timeline_level, S->bucket_level, 1);
        pf_timeline_coarsen(s->timeline_low, &s->timeline_low_filled, s->timeline_level, S->bucket_level, 0);
        s->timeline_level = S->bucket_level;
    }
    /* The bucket's maximum and minimum so far include the old value, as the maximum of the row does: a
     * value above it cannot lower a minimum, one below it cannot raise a maximum. */
    if (dir != PF_LIVE_DOWN)
        pf_timeline_set_bucket(s->timeline, &s->timeline_filled, b, s->live, live);
    else
        pf_timeline_fill(s->timeline, &s->timeline_filled, b, s->live);
    if (dir != PF_LIVE_UP)
        pf_timeline_set_low(s->timeline_low, &s->timeline_low_filled, b, s->live, live);
    else
        pf_timeline_fill(s->timeline_low, &s->timeline_low_filled, b, s->live);
    s->live = live;
    if (dir != PF_LIVE_DOWN && live > s->max_live)
        s->max_live = live;
}

static inline __attribute__((always_inline)) void set_live(sweeper_t *S, pf_stats_t *s, uint64_t t, double live)
{
    set_live_dir(S, s, t, live, PF_LIVE_ANY);
}

/* Moves a row's live GPU bytes to a new value at time t, keeping its share of the GPU peak, and for the
 * whole program the GPU timeline (each bucket's maximum). */
static void set_gpu_live(sweeper_t *S, pf_stats_t *s, uint64_t t, double live)
{
    pf_model_t *m = S->m;
    if (s == &m->total)
        pf_timeline_set(m->gpu_timeline, &m->gpu_timeline_filled, &m->gpu_timeline_level, t, s->gpu_live, live);
    keep_gpu_peak_value(S, s);
    s->gpu_live = live;
}

void pf_sweep_set_live(sweeper_t *S, pf_stats_t *s, uint64_t t, double live)
{
    set_live(S, s, t, live);
}

void pf_sweep_set_gpu_live(sweeper_t *S, pf_stats_t *s, uint64_t t, double live)
{
    set_gpu_live(S, s, t, live);
}

/* A realloc frees its block and records the new one (at the same address when it grew in place) within
 * microseconds on one thread; a block of the same line at the same address after longer is a new object,
 * unless the FREE says it was the realloc's (files since the flag: the realloc may have been preempted). */
#define PF_REALLOC_GAP_NS 1000000u

/* What a freed object takes from each of its three rows: its bytes, and its share of their variance. */
typedef struct row_free {
    uint64_t t;
    double est, var;
    int gpu;
} row_free_t;

static inline __attribute__((always_inline)) void row_free(sweeper_t *S, pf_stats_t *s, const row_free_t *r)
{
    s->n_freed++;
    if (r->var != 0)
        s->live_var -= r->var;
    set_live_dir(S, s, r->t, s->live - r->est, PF_LIVE_DOWN);     /* est >= 0: bytes */
    if (r->gpu)
        set_gpu_live(S, s, r->t, s->gpu_live - r->est);
}

/* Ends the life of live object idx, at address key k, at time t: it stops counting in its rows (unless the
 * process was already finalizing: then it stays live at exit; or ended is set: the process ended, and it
 * stays what the process held at its exit). Returns 1 when its life ended (the caller takes it out of the
 * live map, and its index is free again), 0 when it stays live. */
static int release_object(sweeper_t *S, uint32_t proc, uint64_t k, uint32_t idx, uint64_t t, int ended)
{
    const live_obj_t *o = &S->objs[idx];
    pf_recent_freed(&S->recent, k, (alloc_site_t){o->line, o->native}, o->dst_copy);
    int finalizing = t >= S->L->procs[proc].fin_ns && !ended;
    double counted = finalizing || ended ? 0 : pf_sweep_leak_free(S, o->line, proc, t, o->est);
    if (o->size >= PF_GROW_MIN_BYTES)
        pf_sweep_leak_freed(S, k, o, proc, t, counted);
    if (finalizing)
        return 0;   /* interpreter shutdown: the object stays counted as live at exit */
    if (!ended && o->dst_copy >= 0)
        pf_sweep_dst_freed(S, o, t);
    S->proc_objs[proc]--;
    pf_model_t *m = S->m;
    if (!ended) {
        m->procs[proc].live -= o->est;
        pf_workers_free(m, proc, o->line, o->est);
    }
    if (!S->peak.off) {     /* a sampled profile's peak windows (their rows' peak_est alone) */
        pf_stats_t *rows[3] = {&m->lines[o->line].s, &m->funcs[o->func].s, &m->total};
        pf_peak_total_add(&S->peak, o->half, -o->est, (double)o->size);
        for (int i = 0; i < 3; i++) {
            pf_peak_row_add(&S->peak, &rows[i]->peak_est, o->half, -o->est);
            pf_peak_obj_end(&S->peak, &rows[i]->peak_est, &S->obj_peak[idx], o->half, o->est, (double)o->size);
        }
    }
    const row_free_t r = {t, o->est, o->half && o->est > (double)o->size ? o->est * (o->est - (double)o->size) : 0,
                          o->gpu};
    row_free(S, &m->lines[o->line].s, &r);
    row_free(S, &m->funcs[o->func].s, &r);
    row_free(S, &m->total, &r);
    const pf_peak_epochs_t epochs = {S->peak_epoch, S->gpu_peak_epoch, S->peak.off ? NULL : &S->peak, o->half};
    pf_calltree_free(m, o->node, r.est, r.gpu, &epochs);
    return 1;
}

/* release_object for the object in slot (key k) of the sweep's own map, taken out of it when its life ended
 * (its index free again: free_objs has room). After the events, on the map the merge thread handed over,
 * indices are not handed out again (there is no free_objs). */
void pf_sweep_release(sweeper_t *S, uint32_t proc, uint64_t k, pf_live_slot_t *slot, uint64_t t, int ended)
{
    const uint32_t idx = slot->idx;
    if (!release_object(S, proc, k, idx, t, ended))
        return;
    pf_live_del_at(&S->live, slot);
    if (S->free_objs)
        S->free_objs[S->n_free_objs++] = idx;
    if (pf_sweep_wants_range(&S->objs[idx]))
        pf_sweep_range_del(S, k);
}

static void release(sweeper_t *S, uint32_t proc, uint64_t k, pf_live_slot_t *slot, uint64_t t)
{
    pf_sweep_release(S, proc, k, slot, t, 0);
}

/* What an allocation adds to each of its three rows (line, function, program). */
typedef struct row_alloc {
    uint64_t t;
    double est, count, sample_var;
    uint8_t domain;
    int half;
} row_alloc_t;

/* Inline, three times: each row's fields are then known apart (in a loop over the three, each store to
 * one row's doubles made the compiler load the shared values again). */
static inline __attribute__((always_inline)) void row_alloc(sweeper_t *S, pf_stats_t *s, const row_alloc_t *r)
{
    s->alloc_bytes += r->est;
    s->alloc_count += r->count;
    s->n_recs++;
    if (pf_domain_is_python(r->domain))
        s->python_bytes += r->est;
    else if (pf_domain_is_native(r->domain))
        s->native_bytes += r->est;
    else
        s->gpu_bytes += r->est;
    pf_sweep_touch(s, r->t);
    if (r->sample_var > 0) {
        s->n_sampled++;
        s->alloc_var += r->sample_var;
        s->live_var += r->sample_var;
    }
    pf_peak_row_add(&S->peak, &s->peak_est, r->half, r->est);
    set_live_dir(S, s, r->t, s->live + r->est, PF_LIVE_UP);
    if (r->domain == PF_DOMAIN_GPU)
        set_gpu_live(S, s, r->t, s->gpu_live + r->est);
}

/* Room for twice the live objects (free_objs grows with objs, so that every slot can be free at once). */
static void grow_objects(sweeper_t *S)
{
    size_t cap = S->cap_objs ? S->cap_objs * 2 : 1024;
    if (cap > UINT32_MAX)     /* the live map keeps 32-bit indices (pf_live_slot_t) */
        pf_sweep_index32(INT64_MAX, "live objects at once");
    S->objs = pf_xgrow(S->objs, S->cap_objs * sizeof *S->objs, cap * sizeof *S->objs, PF_LIVE_OBJ_ALIGN);
    if (!S->ahead)  /* else indices are handed out by the merge thread */
        S->free_objs = pf_xgrow(S->free_objs, S->cap_objs * sizeof *S->free_objs, cap * sizeof *S->free_objs,
                                sizeof *S->free_objs);
    if (!S->peak.off)
        S->obj_peak = pf_xgrow(S->obj_peak, S->cap_objs * sizeof *S->obj_peak, cap * sizeof *S->obj_peak,
                               _Alignof(pf_peak_obj_t));
    S->cap_objs = cap;
}

/* A slot for a new live object: the last one freed (still in cache, likely), else a new one. */
static uint32_t new_object(sweeper_t *S)
{
    if (S->n_free_objs)
        return S->free_objs[--S->n_free_objs];
    if (S->n_objs == S->cap_objs)
        grow_objects(S);
    return (uint32_t)S->n_objs++;
}

/* Object idx, handed out by pf_live_ahead.c (which hands indices out as new_object would). */
static uint32_t ahead_object(sweeper_t *S, uint32_t idx)
{
    while (idx >= S->cap_objs)
        grow_objects(S);
    if (idx >= S->n_objs)
        S->n_objs = idx + 1;
    return idx;
}

static void on_alloc(sweeper_t *S, const event_t *e)
{
    pf_model_t *m = S->m;
    pf_alloc_expanded_t expanded;
    const pf_rec_alloc_t *a = e->type == PF_REC_ALLOC_SHORT
                                  ? pf_alloc_short_expand(pf_event_payload(S->L, e), e->aux, &expanded)
                                  : pf_event_payload(S->L, e);
    uint64_t key = pf_sweep_addr_key(e->proc, a->addr);
    pf_live_slot_t *slot = NULL, *prev = NULL;
    int finalizing = e->t >= S->L->procs[e->proc].fin_ns;
    if (S->ahead) {     /* the merge thread found the address's object; a parked one needs nothing here */
        if (S->ann->prev != PF_AHEAD_NONE && !finalizing) {
            m->frees_unseen++;
            release_object(S, e->proc, key, S->ann->prev, e->t, 0);
        }
    } else {
        slot = pf_live_alloc_slot(&S->live, key, &prev);
        if (prev && finalizing) {
            uint32_t idx = pf_live_park(&S->live, prev, e->proc, &S->parked);
            if (pf_sweep_wants_range(&S->objs[idx]))
                pf_sweep_range_del(S, key);
        } else if (prev) {  /* the allocator handed the address out again: the block there was freed unseen */
            m->frees_unseen++;
            release(S, e->proc, key, prev, e->t);
        }
    }
    int32_t fn, node;
    int started;
    pf_stack_view_t st = pf_loader_stack(S->L, e->proc, a + 1, a->flags, a->n_py, a->n_native);
    stack_charge_t *charge;
    int32_t row = charge_alloc(S, e, &st, a->flags, &fn, &node, &started, &charge);
    double est = (double)a->est_bytes;
    if (started)
        m->lines[row].started_bytes += est;
    uint32_t native = st.n_native ? pf_sweep_stack_native_site(S, e->proc, &st) : 0;
    if (charge && charge->native_node != -2) {
        node = charge->native_node;     /* the same stack and node: the same child, already made */
    } else {
        node = pf_calltree_native_child(m, &S->full_index, node, native);
        if (charge)
            charge->native_node = node;
    }
    int half = pf_peak_half(a->addr, e->t, !(a->flags & PF_ALLOC_SAMPLED));
    const pf_peak_epochs_t epochs = {S->peak_epoch, S->gpu_peak_epoch, S->peak.off ? NULL : &S->peak, half};
    pf_calltree_alloc(m, node, est, a->domain == PF_DOMAIN_GPU, &epochs);
    /* an exact record's estimate is its size: one object, no division */
    double count = !a->size ? 1.0 : est == (double)a->size ? 1.0 : est / (double)a->size;
    pf_sweep_leak_clock(S, row, e->proc, e->t);
    double sample_var = (a->flags & PF_ALLOC_SAMPLED) && est > (double)a->size ? est * (est - (double)a->size) : 0;
    pf_peak_total_add(&S->peak, half, est, (double)a->size);
    const row_alloc_t r = {e->t, est, count, sample_var, a->domain, half};
    row_alloc(S, &m->lines[row].s, &r);
    row_alloc(S, &m->funcs[fn].s, &r);
    row_alloc(S, &m->total, &r);
    pf_process_t *pr = &m->procs[e->proc];
    pr->alloc_bytes += est;
    *(pf_domain_is_python(a->domain) ? &pr->python_bytes
      : pf_domain_is_native(a->domain) ? &pr->native_bytes : &pr->gpu_bytes) += est;
    pr->live += est;
    int new_peak = pr->live > pr->peak_bytes;
    if (new_peak)
        pr->peak_bytes = pr->live;
    pf_workers_alloc(m, e->proc, row, est, new_peak);
    uint32_t idx = S->ahead ? ahead_object(S, S->ann->obj) : new_object(S);
    live_obj_t *o = &S->objs[idx];
    *o = (live_obj_t){.line = row, .func = fn, .node = node, .native = native, .gpu = a->domain == PF_DOMAIN_GPU,
                      .domain = a->domain, .half = (uint8_t)half, .dst_copy = -1, .est = est, .size = a->size,
                      .t_alloc = e->t, .at = pf_sweep_leak_at(S, row), .chain = -1};
    if (S->recent.pending)  /* else no freed block's copies wait for a block to continue them */
        pf_sweep_dst_continues(S, key, o, 0);  /* a realloc in place */
    if (S->obj_peak)
        pf_peak_obj_start(&S->peak, &S->obj_peak[idx]);
    if (a->size >= PF_GROW_MIN_BYTES)  /* a realloc in place: its block freed just before, at this address */
        pf_sweep_leak_grew(S, key, o, e->t, PF_REALLOC_GAP_NS);
    S->proc_objs[e->proc]++;
    if (S->ahead)
        return;     /* the map and the ranges are the merge thread's */
    (slot ? slot : pf_live_put(&S->live, key, NULL))->idx = (uint32_t)idx;
    if (pf_sweep_wants_range(o))
        pf_sweep_range_add(S, key, idx);
}

int64_t pf_sweep_live_object(const sweeper_t *S, uint32_t proc, uint64_t addr)
{
    if (S->ahead)
        return S->ann->obj == PF_AHEAD_NONE ? -1 : (int64_t)S->ann->obj;
    const pf_live_slot_t *v = pf_live_get(&S->live, pf_sweep_addr_key(proc, addr));
    return v ? (int64_t)v->idx : -1;
}

/* A FREE of a live object (at key k, in slot v), kind and all; a realloc's free hands its copies' chain on. */
static void on_free(sweeper_t *S, const event_t *e)
{
    const pf_rec_free_t *f = pf_event_payload(S->L, e);
    uint64_t k = pf_sweep_addr_key(e->proc, f->addr);
    pf_live_slot_t *v = S->ahead ? NULL : pf_live_get(&S->live, k);
    uint32_t idx = S->ahead ? S->ann->obj : v ? v->idx : PF_AHEAD_NONE;
    if (idx == PF_AHEAD_NONE)
        return;
    pf_sweep_kind_seen(S, &S->objs[idx], PF_FREE_KIND(e->aux));
    if (e->aux != PF_FREE_DOMAIN(e->aux))
        S->m->frees_marked = 1;
    if (v)
        pf_sweep_release(S, e->proc, k, v, e->t, 0);
    else
        release_object(S, e->proc, k, idx, e->t, 0);
    if (e->aux & PF_FREE_BY_REALLOC) {
        pf_recent_by_realloc(&S->recent, k);
        pf_sweep_leak_by_realloc(S, k, e->t);
    }
}

static void finish_stats(pf_stats_t *s, uint64_t t_end)
{
    s->area_ns += s->live * (double)(t_end - s->live_since_ns);
    s->live_since_ns = t_end;
    pf_timeline_finish(s->timeline, &s->timeline_filled, s->timeline_level, t_end, s->live, 1);
    pf_timeline_finish(s->timeline_low, &s->timeline_low_filled, s->timeline_level, t_end, s->live, 0);
    s->leaked_bytes = s->live > 0.5 ? s->live : 0;
}

/* Events read this far ahead of the one being handled have their address's map slots prefetched: in an
 * exact profile most allocations and frees find their address's slot out of cache, and each miss
 * otherwise stalls the sweep. */
#define PF_SWEEP_LOOKAHEAD 16

static void prefetch_event(const sweeper_t *S, const event_t *batch, size_t i, const pf_ahead_batch_t *ann)
{
    const event_t *e = &batch[i];
    if (e->type != PF_REC_ALLOC && e->type != PF_REC_ALLOC_SHORT && e->type != PF_REC_FREE)
        return;
    if (S->ahead) {     /* no map here: the object the event ends, or the one it begins */
        uint32_t idx = ann->ann[i].obj;
        if (idx < S->cap_objs)
            __builtin_prefetch(&S->objs[idx]);
        return;
    }
    pf_live_prefetch_event(&S->live, e, pf_event_payload(S->L, e));
}

/* A process's objects when it ended, as pf_sweep_end_process releases them, found by the merge thread. */
static void end_released(sweeper_t *S, uint32_t proc, uint64_t t, const pf_ahead_released_t *r)
{
    for (size_t i = 0; i < r->n; i++)
        release_object(S, proc, r->keys[i], r->objs[i], t, 1);
}

/* A sweep under way: the sweeper, and what its loop kept between events. */
struct pf_sweep_run {
    sweeper_t S;
    double peak, gpu_peak;      /* the program's (GPU) live bytes at its peak so far */
    proc_end_t *ends;           /* the processes' ends, in time order (pf_sweep_process_ends) */
    const proc_end_t *next_end; /* the first not yet swept */
};

pf_sweep_run_t *pf_sweep_begin(loader_t *L, int follow)
{
    pf_model_t *m = L->m;
    pf_sweep_run_t *R = pf_xaligned_alloc(64, sizeof *R);
    memset(R, 0, sizeof *R);
    sweeper_t *S = &R->S;
    *S = (sweeper_t){.m = m, .L = L, .symbols = pf_symbols_new(), .clock_start = -1, .clock_end = -1};
    pf_recent_init(&S->recent);
    S->recent_grows = pf_xcalloc(PF_RECENT_GROWS, sizeof *S->recent_grows);
    R->peak = -1;
    S->proc_objs = pf_xcalloc(m->n_procs + 1, sizeof *S->proc_objs);
    S->clock_end_at = pf_xmalloc((m->n_procs + 1) * sizeof *S->clock_end_at);
    S->clock_origin = pf_xmalloc((m->n_procs + 1) * sizeof *S->clock_origin);
    for (size_t i = 0; i <= m->n_procs; i++) {
        S->clock_end_at[i] = i < m->n_procs && m->procs[i].root ? L->procs[i].fin_ns : UINT64_MAX;
        S->clock_origin[i] = i < m->n_procs ? -2 : -1;
    }
    S->memo_at = pf_xcalloc(L->n_procs + 1, sizeof *S->memo_at);
    S->memo_n = pf_xcalloc(L->n_procs + 1, sizeof *S->memo_n);
    S->peak.off = m->exact || m->aggregated;     /* --aggregate: the recorder's peak picture */
    /* An exact profile's live objects are many: their map grows at half full, where its probe runs stay
     * short (at three quarters, neighbouring blocks' windows ran into runs of hundreds of slots: a third of
     * the sweep's instructions). Where keys sit decides the order the walks of the map see; in an exact
     * profile what they add up is whole bytes (the peak's variance, below, is a sampled object's only), the
     * same in any order. A sampled profile's map, and so its report to the last bit, stays as it was. */
    S->live.roomy = m->exact;
    R->ends = pf_sweep_process_ends(S);
    R->next_end = R->ends;
    const char *ahead_env = getenv("PYFLOW_REPORT_AHEAD");
    if (m->exact && !follow && !(ahead_env && !strcmp(ahead_env, "0")))
        S->ahead = pf_live_ahead_new(L, R->ends);
    return R;
}

void pf_sweep_events(pf_sweep_run_t *R, const event_t *batch, size_t n_batch, const pf_ahead_batch_t *ann)
{
    sweeper_t *S = &R->S;
    pf_model_t *m = S->m;
    const proc_end_t *next_end = R->next_end;
    double peak = R->peak, gpu_peak = R->gpu_peak;
    if (ann)
        S->ahead_copies = ann->copies;
    for (size_t i = 0; i < PF_SWEEP_LOOKAHEAD && i < n_batch; i++)
        prefetch_event(S, batch, i, ann);
    for (size_t at = 0; at < n_batch; at++) {
        if (at + PF_SWEEP_LOOKAHEAD < n_batch)
            prefetch_event(S, batch, at + PF_SWEEP_LOOKAHEAD, ann);
        const event_t *e = &batch[at];
        if (S->ahead)
            S->ann = &ann->ann[at];
        for (; next_end->t < e->t; next_end++) {
            pf_peak_advance(&S->peak, next_end->t);
            if (S->ahead)
                end_released(S, next_end->proc, next_end->t,
                             pf_live_ahead_released(S->ahead, (size_t)(next_end - R->ends)));
            else
                pf_sweep_end_process(S, next_end->proc, next_end->t);
            pf_peak_after_event(&S->peak, &m->total.peak_est);
        }
        pf_peak_advance(&S->peak, e->t);
        switch (e->type) {
        case PF_REC_ALLOC:
        case PF_REC_ALLOC_SHORT:
            on_alloc(S, e);
            break;
        case PF_REC_FREE:
            on_free(S, e);
            break;
        case PF_REC_COPY:
        case PF_REC_COPY_SHORT:
            pf_sweep_copy(S, e);
            break;
        case PF_REC_VERDICT:
            pf_sweep_verdict(S, e);
            break;
        case PF_REC_COPY_WRITE:
            pf_sweep_copy_write(S, e);
            break;
        case PF_REC_ACCESS_PAIR:
            pf_sweep_access(S, e);
            break;
        case PF_REC_CONTENT:
            pf_sweep_content(S, e);
            break;
        case PF_REC_AGG_SITES:     /* --aggregate */
        case PF_REC_AGG_PEAK:
        case PF_REC_AGG_FLOWS:
            pf_sweep_aggregate(S, e);
            break;
        }
        pf_peak_after_event(&S->peak, &m->total.peak_est);
        if (m->total.live > peak) {
            peak = m->total.live;
            m->peak_ns = e->t;
            S->peak_epoch++;
        }
        if (m->total.gpu_live > gpu_peak) {
            gpu_peak = m->total.gpu_live;
            m->gpu_peak_ns = e->t;
            S->gpu_peak_epoch++;
        }
    }
    R->next_end = next_end;
    R->peak = peak;
    R->gpu_peak = gpu_peak;
}

void pf_sweep_walked(pf_sweep_run_t *R)
{
    sweeper_t *S = &R->S;
    for (size_t i = 0; i < S->m->n_procs; i++)
        if (S->m->procs[i].root)
            S->clock_end_at[i] = S->L->procs[i].fin_ns;
}

void pf_model_sweep(loader_t *L)
{
    pf_sweep_run_t *R = pf_sweep_begin(L, 0);
    pf_events_pipe_t *events = pf_events_pipe_open(L, PF_PIPE_AUTO, 0, R->S.ahead);
    const event_t *batch;
    const pf_ahead_batch_t *ann;
    size_t n;
    while ((n = pf_events_pipe_next(events, &batch, &ann)))
        pf_sweep_events(R, batch, n, R->S.ahead ? ann : NULL);
    if (pf_events_pipe_close(events))
        L->redo = 1;    /* what was swept stands for nothing: the loader loads again, strict */
    pf_sweep_end(R);
}

/* The processes that ended at the last event or after it (a child that outlived the program: its own last
 * event was the run's), which the loop never reached: released as the loop releases the others, from the
 * map the sweep holds now (its own, or the one the merge thread handed over). */
static void end_after_events(sweeper_t *S, const proc_end_t *e)
{
    for (; e->t != UINT64_MAX; e++) {
        pf_peak_advance(&S->peak, e->t);
        pf_sweep_end_process(S, e->proc, e->t);
        pf_peak_after_event(&S->peak, &S->m->total.peak_est);
    }
}

void pf_sweep_end(pf_sweep_run_t *R)
{
    sweeper_t S = R->S;     /* the sweep's last steps, as they were written with a sweeper of their own */
    loader_t *L = S.L;
    pf_model_t *m = L->m;
    double peak = R->peak, gpu_peak = R->gpu_peak;
    proc_end_t *ends = R->ends;
    const proc_end_t *next_end = R->next_end;
    free(R);
    S.t_end = L->t_last;
    if (m->has_exit && (uint64_t)(m->elapsed_s * 1e9) > S.t_end)
        S.t_end = (uint64_t)(m->elapsed_s * 1e9);
    m->end_ns = S.t_end;
    if (S.ahead) {      /* the live objects at the end, for what walks them below */
        pf_live_ahead_finish(S.ahead, &S.live);
        S.ahead = NULL;
    }
    end_after_events(&S, next_end);
    free(ends);
    m->total.peak_bytes = peak > 0 ? peak : 0;
    pf_sweep_copies_finish(m);
    pf_sweep_flow_lives(&S);
    pf_sweep_access_finish(&S);
    pf_origin_unprofiled(&S);
    pf_workers_finish(m);
    for (size_t i = 0; i < m->n_lines; i++)
        finish_stats(&m->lines[i].s, S.t_end);
    for (size_t i = 0; i < m->n_funcs; i++)
        finish_stats(&m->funcs[i].s, S.t_end);
    finish_stats(&m->total, S.t_end);
    pf_sweep_leaks(&S);
    pf_timeline_finish(m->gpu_timeline, &m->gpu_timeline_filled, m->gpu_timeline_level, S.t_end, m->total.gpu_live,
                       1);
    pf_peak_advance(&S.peak, S.t_end);
    for (size_t i = 0; S.obj_peak && i < S.live.cap; i++) {    /* what is live at the end adds its variance too */
        if (!S.live.slots[i].key1)
            continue;
        uint32_t idx = S.live.slots[i].idx;
        const live_obj_t *o = &S.objs[idx];
        pf_peak_row_t *rows[3] = {&m->lines[o->line].s.peak_est, &m->funcs[o->func].s.peak_est, &m->total.peak_est};
        for (int r = 0; r < 3; r++)
            pf_peak_obj_end(&S.peak, rows[r], &S.obj_peak[idx], o->half, o->est, (double)o->size);
    }
    for (size_t i = 0; i < m->n_lines; i++) {
        m->lines[i].s.peak_bytes = peak > 0 ? pf_peak_row_share(&S.peak, &m->lines[i].s.peak_est,
                                                                 share_of_peak(&S, &m->lines[i].s, 0),
                                                                 &m->lines[i].s.peak_se)
                                            : 0;
        m->lines[i].s.gpu_peak_bytes = gpu_peak > 0 ? share_of_peak(&S, &m->lines[i].s, 1) : 0;
    }
    for (size_t i = 0; i < m->n_funcs; i++) {
        m->funcs[i].s.peak_bytes = peak > 0 ? pf_peak_row_share(&S.peak, &m->funcs[i].s.peak_est,
                                                                 share_of_peak(&S, &m->funcs[i].s, 0),
                                                                 &m->funcs[i].s.peak_se)
                                            : 0;
        m->funcs[i].s.gpu_peak_bytes = gpu_peak > 0 ? share_of_peak(&S, &m->funcs[i].s, 1) : 0;
    }
    m->total.gpu_peak_bytes = gpu_peak;
    if (peak > 0)
        m->total.peak_bytes = pf_peak_row_share(&S.peak, &m->total.peak_est, m->total.peak_bytes, &m->total.peak_se);
    pf_calltree_finish(m, (pf_peak_epochs_t){S.peak_epoch, S.gpu_peak_epoch, &S.peak, 0}, peak > 0, gpu_peak > 0);
    pf_waste_finish(&S);
    m->timeline_end_s = (double)S.t_end / 1e9;
    pf_map_free(&S.line_index);
    pf_map_free(&S.func_index);
    pf_map_free(&S.frame_cache);
    pf_map_free(&S.line_cache);
    pf_map_free(&S.node_index);
    pf_map_free(&S.full_index);
    pf_map_free(&S.stack_memo);
    for (size_t i = 0; i < L->n_procs; i++)
        free(S.memo_at[i]);
    free(S.memo_at);
    free(S.memo_n);
    free(S.charges);
    pf_live_free(&S.live);
    pf_map_free(&S.flow_index);
    pf_map_free(&S.copies);
    pf_map_free(&S.native_cache);
    pf_map_free(&S.redundancy_index);
    pf_map_free(&S.origin_memo);
    free(S.origins);
    pf_symbols_free(S.symbols);
    pf_sweep_aggregate_free(&S);
    free(S.cinfo);
    free(S.ranges.v);
    pf_grow_free(S.objs, S.cap_objs * sizeof *S.objs);
    pf_grow_free(S.free_objs, S.free_objs ? S.cap_objs * sizeof *S.free_objs : 0);
    pf_grow_free(S.obj_peak, S.obj_peak ? S.cap_objs * sizeof *S.obj_peak : 0);
    pf_recent_free_table(&S.recent);
    free(S.recent_grows);
    free(S.pieces);
    free(S.proc_objs);
    free(S.clock_end_at);
    free(S.clock_origin);
}
