/* pf_sweep_int.h - the sweep's state, shared by pf_model_sweep.c (memory and copies) and pf_model_watch.c
 * (redundant stores and loads). */
#ifndef PF_SWEEP_INT_H
#define PF_SWEEP_INT_H

#include "pf_calltree_int.h"
#include "pf_live_ahead.h"
#include "pf_live_map.h"
#include "pf_loader_int.h"
#include "pf_symbols_int.h"
#include "pf_sweep_recent_int.h"

/* A live object: one cache line (sweeper_t.objs is aligned to them). An exact profile's sweep writes one at
 * each allocation and reads one at each free, mostly out of cache: at 96 bytes each took two lines. What
 * only a sampled profile needs (pf_peak_obj_t) is kept beside it, in sweeper_t.obj_peak; the indices are
 * 32-bit (pf_sweep_index32). */
typedef struct live_obj {
    int32_t line, func;
    int32_t node;       /* its call-tree node */
    uint32_t native;    /* native site string, 0 = none */
    uint8_t gpu;        /* a GPU allocation */
    uint8_t domain;     /* PF_DOMAIN_* */
    uint8_t half;       /* pf_peak_half: which half of the samples it is in (0: recorded exactly) */
    uint8_t kind;       /* pf_obj_kind_t the runtime saw it was (at its free or a copy), once counted */
    int32_t dst_copy;   /* the last copy (S->cinfo) it was the destination of, -1: none */
    int32_t chain;      /* the realloc chain it ends (index into sweeper_t.pieces), -1: none */
    double est;
    uint64_t size;
    uint64_t t_alloc;
    double at;          /* the leak test's clock when it was allocated (bytes freed so far), less its line's
                           own freed bytes: the rest of the program's clock */
} live_obj_t;
#define PF_LIVE_OBJ_ALIGN 64
_Static_assert(sizeof(live_obj_t) == PF_LIVE_OBJ_ALIGN, "a live object is one cache line");

/* Index i of the sweep's array of `what`, for a 32-bit field of a live object; the report cannot be built
 * with more (one clear line, exit status 1: the arrays alone would take some 100 GB). */
int32_t pf_sweep_index32(int64_t i, const char *what);

/* A piece of a realloc chain: bytes a block gained when it was re-allocated (on the rest of the program's
 * clock, live_obj_t.at), and the piece before it (-1: the chain's first block). */
typedef struct leak_piece {
    double at, bytes;
    int64_t prev;
} leak_piece_t;

/* Blocks of PF_GROW_MIN_BYTES or more freed lately, by the same hash of their key in a table of their own
 * (small: the lookup on each such allocation stays in cache): what a realloc's new block continues
 * (pf_sweep_leak_grew). Smaller blocks are not followed: a leak's evidence is megabytes. */
#define PF_RECENT_GROWS (1u << 12)
#define PF_GROW_MIN_BYTES 4096u
typedef struct recent_grow {
    uint64_t key1;      /* key + 1; 0 = empty */
    int32_t line;
    uint64_t size, t;   /* the freed block's size and the time of its free */
    double est, at;     /* its estimate and place on the rest of the program's clock (live_obj_t.at) */
    int64_t chain;
    double counted;     /* what its free moved the leak clock on by (pf_sweep_leak_free), and the starter */
    int32_t origin;     /* line of its process credited with it too (pf_sweep_leak_step; -1: none) */
    int by_realloc;     /* its FREE was a realloc's: the next block at its address is the realloc's, however
                           long the realloc took (pf_sweep_leak_by_realloc) */
} recent_grow_t;

/* A live object copies may point into (GPU blocks: tensors are views into cached segments; large host
 * buffers: slices), by (proc, address) key. */
typedef struct range_ent {
    uint64_t key;
    uint64_t idx;       /* live_obj index */
} range_ent_t;

/* Those objects, sorted by key (pf_model_objects.c). */
typedef struct pf_ranges {
    range_ent_t *v;
    size_t n, cap;
} pf_ranges_t;

typedef struct copy_info {
    int32_t flow;
    double est;
    int fills;          /* filled its tracked destination: a candidate for a verdict (pf_copy_rule.h) */
    /* its tracked destination's life after the copy (pf_sweep_kinds.c): when copied, when freed (0: live
     * at its process's end or exit), the destination's copy before this one (-1: none) */
    uint64_t t_copy, t_dst_freed;
    int64_t prev_same_dst;
    int has_dst;
} copy_info_t;

/* What an allocation with an interned stack is charged to (without a frame of the user's: when its
 * thread's starter has no row). */
typedef struct stack_charge {
    int32_t row, func, node;
    int32_t native_node;    /* node's child for the stack's native site (pf_calltree_native_child); -2: not yet */
    int no_user;            /* the stack has no frame of the user's: this is where it goes when its thread's
                               starter has no row (pf_origin_row), looked up first each time */
} stack_charge_t;

/* stack_memo's entry for one interned stack id of a process (proc_state_t.stack_at), kept in an array by
 * id: the first flags it is charged with have their value here, other flags go to stack_memo. */
typedef struct stack_memo_slot {
    uint64_t value;     /* as stack_memo's values; 0: not worked out yet */
    uint32_t native1;   /* the stack's native site + 1 (pf_sweep_native_site; any flags); 0: not yet */
    uint8_t flags, used;
} stack_memo_slot_t;

/* Where a thread's memory with no user line of its own goes (pf_model_origin.c). */
typedef struct origin {
    int32_t row, func;  /* -1: nowhere known */
    int32_t node;       /* the call-tree node of the start's stack (-1 with row) */
    uint32_t proc;      /* the process whose stack had the user's line */
} origin_t;

/* The last stack pf_sweep_stack_node walked, outermost frame first, and where its walk stood after each
 * frame (steps of the folded and unfolded paths so far): a stack that shares its outer frames (most do:
 * stacks differ in their innermost) takes those steps as they were and walks on from the first frame that
 * differs. */
typedef struct callpath_memo {
    uint32_t proc;
    uint32_t n;                                     /* frames walked */
    pf_rec_pyframe_t frames[PF_MAX_PY_FRAMES];
    uint8_t k_after[PF_MAX_PY_FRAMES], nf_after[PF_MAX_PY_FRAMES];
    pf_callsite_t path[PF_MAX_PY_FRAMES + 1], full[PF_MAX_PY_FRAMES + 1];
    size_t user_at[PF_MAX_PY_FRAMES + 1];
} callpath_memo_t;

typedef struct sweeper {
    pf_model_t *m;
    loader_t *L;
    pf_map_t line_index;    /* (file, function, line) hash -> row+1 */
    pf_map_t func_index;
    pf_map_t frame_cache;   /* (proc, code id, lasti) -> row+1 */
    pf_map_t line_cache;    /* (proc, code id, lasti) -> line+1, of frames that call nested code */
    pf_map_t node_index;    /* (parent node, file, line) -> call-tree node+1 */
    pf_map_t full_index;    /* the same for the unfolded call tree (library frames kept) */
    pf_path_memo_t node_memo, full_memo;    /* each tree's last path (pf_calltree_int.h) */
    callpath_memo_t callpath;               /* pf_sweep_stack_node's last walk */
    pf_map_t stack_memo;    /* (proc, interned stack, flags) -> charges index+1, or ~0: no user frame */
    stack_memo_slot_t **memo_at;    /* per process with stack_at: the same by stack id (NULL until used) */
    size_t *memo_n;                 /* the ids each has room for */
    /* the timeline bucket of times in [bucket_from, bucket_to): every row changed by one event (and
     * by the events near it) is in the same bucket, found without a division */
    uint64_t bucket_from, bucket_to;
    int bucket;
    uint8_t bucket_level;
    stack_charge_t *charges;
    size_t n_charges, cap_charges;
    pf_live_map_t live;     /* (proc, addr) -> live_obj index; an exact profile's is the merge thread's
                               until the end (ahead) */
    pf_live_ahead_t *ahead; /* an exact profile's live objects, found by the merge thread (else NULL) */
    const pf_ahead_ann_t *ann;          /* with ahead: what the event being swept concerns */
    const pf_ahead_copy_t *ahead_copies;    /* with ahead: its batch's copies' ends */
    pf_recent_frees_t recent;       /* blocks freed lately (pf_sweep_recent_int.h) */
    recent_grow_t *recent_grows;    /* PF_RECENT_GROWS slots: large blocks freed lately (pf_model_leak.c) */
    pf_map_t flow_index;    /* edge key -> flow+1 */
    pf_map_t copies;        /* (proc, copy id) -> copy_info index, until its verdict */
    copy_info_t *cinfo;
    size_t n_cinfo, cap_cinfo;
    uint64_t *proc_objs;    /* per process: how many of its objects are live */
    uint64_t parked;        /* live-at-exit objects whose address was reused, moved to keys of their own */
    /* the leak test's clock: bytes freed so far of objects allocated outside import lines, counted from the
     * first allocation of the user's code; its value then and at the root's finalization (-1: not yet) */
    double leak_clock, clock_start, clock_end;
    uint64_t *clock_end_at; /* per process: when its events end the clock (the root's finalization), else
                               UINT64_MAX */
    int32_t *clock_origin;  /* per process: the user's line that started it (pf_origin_process_row), whose
                               own bytes on the clock its frees are too; -1 none, -2 not looked up */
    leak_piece_t *pieces;   /* realloc chains (pf_model_leak.c) */
    size_t n_pieces, cap_pieces;
    live_obj_t *objs;       /* the live objects; a released one's slot is reused (free_objs) */
    size_t n_objs, cap_objs;
    pf_peak_obj_t *obj_peak;    /* by object, beside objs: where the peak's windows stood when it was made
                                   (its variance's share); NULL when the peak's windows are off (peak.off) */
    uint32_t *free_objs;
    size_t n_free_objs;     /* free_objs has room for cap_objs */
    pf_ranges_t ranges;     /* the live objects looked up by interior address */
    uint64_t t_end;
    pf_symbols_t *symbols;
    pf_map_t native_cache;  /* (proc, ip) -> native site string id + 1 (0 stored as 1: none) */
    pf_map_t redundancy_index;  /* (kind, rows, native sites) -> redundancy+1 */
    pf_map_t origin_memo;   /* (proc, tid) -> index into origins; and what each line started, counted once */
    origin_t *origins;
    size_t n_origins, cap_origins;
    pf_peak_est_t peak;     /* the peak's windows (pf_model_peak.c) */
    uint32_t peak_epoch, gpu_peak_epoch;    /* how many times the program's live (GPU) bytes set a new peak */
    struct pf_agg_state *agg;   /* --aggregate profiles' sites (pf_model_aggregate.c); NULL: none seen */
} sweeper_t;

uint64_t pf_sweep_key3(uint64_t a, uint64_t b, uint64_t c);

/* The row (and *func, the function row) a stack is charged to: its innermost user frame (*user = 1), else
 * a library or bracketed row (*user = 0). */
int32_t pf_sweep_attribute_stack(sweeper_t *S, uint32_t proc, const pf_rec_pyframe_t *frames, uint16_t n,
                                 uint8_t flags, int32_t *func, int *user);

/* As pf_sweep_attribute_stack, for the stack of event e: without a user frame, the user's line that started
 * the thread that wrote e, or its process, when one is known (*started = 1, and *node, unless NULL, is the
 * call-tree node of that start; pf_origin_int.h). e NULL: no such fallback. started may be NULL. */
int32_t pf_sweep_attribute(sweeper_t *S, uint32_t proc, const event_t *e, const pf_rec_pyframe_t *frames, uint16_t n,
                           uint8_t flags, int32_t *func, int *started, int32_t *node);

/* The unfolded call-tree node of a stack charged to row (pf_calltree_int.h): the path of its frames in the
 * user's real files, outermost first, ending with row, with the library frames between and below them;
 * the node's folded is the node of the user's lines alone (pf_sweep_callpath.c). */
int32_t pf_sweep_stack_node(sweeper_t *S, uint32_t proc, const pf_rec_pyframe_t *frames, uint16_t n, int32_t row);

/* A row's live (GPU) bytes set to live at t, keeping its area, maximum, timeline and peak share
 * (pf_model_sweep.c; an aggregated profile's snapshots move them too). */
void pf_sweep_set_live(sweeper_t *S, pf_stats_t *s, uint64_t t, double live);
void pf_sweep_set_gpu_live(sweeper_t *S, pf_stats_t *s, uint64_t t, double live);

/* The code of frame f (NULL: the profile does not define it), and the line it is at. */
const pcode_t *pf_sweep_frame_code(sweeper_t *S, uint32_t proc, const pf_rec_pyframe_t *f);
int pf_sweep_frame_line(sweeper_t *S, uint32_t proc, const pf_rec_pyframe_t *f, const pcode_t *pc);

/* pf_sweep_stacks.c: the innermost native frame outside the interpreter, libc and pyflow, as an interned
 * "symbol (library)"; 0 when there is none. */
uint32_t pf_sweep_native_site(sweeper_t *S, uint32_t proc, const uint64_t *ips, uint16_t n);
/* pf_sweep_stacks.c: the same for a stack, once per interned stack. */
uint32_t pf_sweep_stack_native_site(sweeper_t *S, uint32_t proc, const pf_stack_view_t *st);
/* pf_sweep_stacks.c: stack_memo's value slot for an interned stack st (st->py set) with its flags. */
uint64_t *pf_sweep_stack_memo_slow(sweeper_t *S, uint32_t proc, const pf_stack_view_t *st);

/* The same: inline where the stack's slot by id is in use with these flags (an exact profile's every
 * allocation; as a call, its prologue and checks were 2% of a report's instructions). */
static inline uint64_t *pf_sweep_stack_memo(sweeper_t *S, uint32_t proc, const pf_stack_view_t *st)
{
    uint32_t id = st->stack_id;
    if (id && id < S->memo_n[proc] && id < S->L->procs[proc].n_stack_at) {
        stack_memo_slot_t *slot = &S->memo_at[proc][id];
        if (slot->used && slot->flags == st->attribute_flags)
            return &slot->value;
    }
    return pf_sweep_stack_memo_slow(S, proc, st);
}

/* The live object allocated at addr (its start) in process proc, as an index into S->objs; -1: none. */
int64_t pf_sweep_live_object(const sweeper_t *S, uint32_t proc, uint64_t addr);

/* pf_model_waste.c: one CONTENT event (untouched pages, fingerprint), and the findings once every event is
 * in and the peak is known. */
void pf_sweep_content(sweeper_t *S, const event_t *e);
void pf_waste_finish(sweeper_t *S);


/* The live map's key of an address of process proc (inline: two per allocation and free). */
static inline uint64_t pf_sweep_addr_key(uint32_t proc, uint64_t addr)
{
    return (addr & ((1ull << 48) - 1)) | ((uint64_t)(proc & 0x7fff) << 48);  /* user addresses: 47 bits */
}

/* Starts loading the live map's slot of an allocation's or a free's address (payload: e's), for a lookup
 * soon: in an exact profile most of them find theirs out of cache. */
static inline void pf_live_prefetch_event(const pf_live_map_t *live, const event_t *e, const void *payload)
{
    if (e->type != PF_REC_ALLOC && e->type != PF_REC_ALLOC_SHORT && e->type != PF_REC_FREE)
        return;
    /* the address is the same field of the three records */
    _Static_assert(offsetof(pf_rec_alloc_t, addr) == offsetof(pf_rec_free_t, addr), "ALLOC and FREE addr");
    _Static_assert(offsetof(pf_rec_alloc_short_t, addr) == offsetof(pf_rec_free_t, addr), "short ALLOC addr");
    pf_live_prefetch(live, pf_sweep_addr_key(e->proc, ((const pf_rec_free_t *)payload)->addr));
}

/* The live map's first step at an allocation at key, shared by the sweep's map and the merge thread's
 * (pf_live_ahead.c): one probe for the usual new address, whose slot is reserved now and returned, to be
 * filled once the allocation is handled (nothing between touches the map when the address was not live);
 * NULL when the key was live or the map full (the caller puts the key after). *prev: the slot of the
 * object still live at key, or NULL. */
static inline pf_live_slot_t *pf_live_alloc_slot(pf_live_map_t *live, uint64_t key, pf_live_slot_t **prev)
{
    int created = 0;
    pf_live_slot_t *slot = pf_live_put_if_room(live, key, &created);
    *prev = !slot ? pf_live_get(live, key) : created ? NULL : slot;
    return created ? slot : NULL;
}

/* An object freed while its process's interpreter finalized (so live at exit) whose address was handed out
 * again: it stays live under a key no address has (bit 47: user addresses are below it), where the end of
 * its process still finds it. Moves it there from slot prev; returns its index. */
static inline uint32_t pf_live_park(pf_live_map_t *live, pf_live_slot_t *prev, uint32_t proc, uint64_t *parked)
{
    uint32_t idx = prev->idx;
    pf_live_del_at(live, prev);
    pf_live_put(live, pf_sweep_addr_key(proc, (1ull << 47) | (*parked)++), NULL)->idx = idx;
    return idx;
}

/* pf_model_sweep.c: ends the life of the live object at key k at time t (pf_model_sweep.c's release); slot
 * is k's slot in S->live (the object's index), where it was just found. */
void pf_sweep_release(sweeper_t *S, uint32_t proc, uint64_t k, pf_live_slot_t *slot, uint64_t t, int ended);

/* pf_model_objects.c: objects found by an address inside them (large ones, GPU blocks), in a sorted array.
 * Objects this large (and every GPU block) can be found by an address inside them: a copy from a slice of
 * a big array, or into a tensor inside a caching allocator's segment, still has its end. Few are live at
 * once, so a sorted array serves. (Inline: asked at each allocation and free.) */
#define PF_RANGE_MIN_BYTES (64u << 10)
static inline int pf_ranged(int gpu, uint64_t size) { return gpu || size >= PF_RANGE_MIN_BYTES; }
static inline int pf_sweep_wants_range(const live_obj_t *o) { return pf_ranged(o->gpu, o->size); }
void pf_ranges_add(pf_ranges_t *r, uint64_t key, uint64_t idx);
void pf_ranges_del(pf_ranges_t *r, uint64_t key);
static inline void pf_sweep_range_add(sweeper_t *S, uint64_t key, uint64_t idx) { pf_ranges_add(&S->ranges, key, idx); }
static inline void pf_sweep_range_del(sweeper_t *S, uint64_t key) { pf_ranges_del(&S->ranges, key); }
/* The live object containing addr in a map of live objects and its ranges, whose sizes are the bits
 * size_mask keeps of the word at size0 + index * stride (a small header before addr, or inside a range
 * object); *offset (unless NULL) = addr's offset in it; -1 when none. */
int64_t pf_live_object_at(const pf_live_map_t *live, const pf_ranges_t *r, const char *size0, size_t stride,
                          uint64_t size_mask, uint32_t proc, uint64_t addr, uint64_t *offset);
/* The same in the sweep's own map. */
int64_t pf_sweep_object_at(sweeper_t *S, uint32_t proc, uint64_t addr, uint64_t *offset);
/* Calls release(arg, key, slot) for each live object of process proc in live, in the map's order, while
 * *left (the process's live objects, which release counts down) is not 0; release removes the slot's entry. */
void pf_live_each_of_process(pf_live_map_t *live, uint32_t proc, const uint64_t *left,
                             void (*release)(void *arg, uint64_t key, pf_live_slot_t *slot), void *arg);

/* pf_model_objects.c: processes that end before the program (and images replaced by exec), by when, a
 * sentinel at UINT64_MAX last (caller frees); and the end of one: its objects stop counting. */
typedef struct proc_end {
    uint64_t t;
    uint32_t proc;
} proc_end_t;
proc_end_t *pf_sweep_process_ends(const sweeper_t *S);
void pf_sweep_end_process(sweeper_t *S, uint32_t proc, uint64_t t);

/* pf_model_leak.c: an allocation charged to row at time t (in process proc) may start or end the leak
 * test's clock (the first of the user's code, the root's finalization). */
void pf_sweep_leak_clock_slow(sweeper_t *S, int32_t row, uint32_t proc, uint64_t t);
/* The same, inline for what nearly every allocation is: the clock started and not about to end: nothing
 * to do (what a line and a process are to the clock is learnt at their frees). */
static inline void pf_sweep_leak_clock(sweeper_t *S, int32_t row, uint32_t proc, uint64_t t)
{
    if (S->clock_start < 0 || t >= S->clock_end_at[proc])
        pf_sweep_leak_clock_slow(S, row, proc, t);
}

/* Moves the leak test's clock on by est bytes freed of row's (negative: takes them off again), row's own
 * and those of origin, the user's line that started the process (-1: none). A process's frees are its
 * starter's own too: a line that starts workers and keeps what they send back (a pool's map) is one burst
 * with the work it started, not spread over that work. */
static inline void pf_sweep_leak_step(sweeper_t *S, int32_t row, int32_t origin, double est)
{
    S->leak_clock += est;
    S->m->lines[row].leak_own += est;
    if (origin >= 0 && origin != row)
        S->m->lines[origin].leak_own += est;
}

/* A free of est bytes of an object of row (in process proc) at time t on the leak test's clock; returns
 * how much it moved the clock (0: not on it). */
double pf_sweep_leak_free_slow(sweeper_t *S, int32_t row, uint32_t proc, double est);
static inline double pf_sweep_leak_free(sweeper_t *S, int32_t row, uint32_t proc, uint64_t t, double est)
{
    if (S->clock_start < 0 || S->clock_end >= 0 || t >= S->clock_end_at[proc])
        return 0;
    int32_t origin = S->clock_origin[proc];
    if (S->m->lines[row].import_state != 2 || origin == -2)
        return pf_sweep_leak_free_slow(S, row, proc, est);
    pf_sweep_leak_step(S, row, origin, est);   /* what nearly every free is: a line known not an import's */
    return est;
}

/* The rest of the program's clock for an object of row allocated now (live_obj_t.at). */
static inline double pf_sweep_leak_at(const sweeper_t *S, int32_t row)
{
    return S->leak_clock - S->m->lines[row].leak_own;
}

/* Object o (PF_GROW_MIN_BYTES or more) with (proc, address) key `key` is freed at time t, its free having
 * moved the leak clock on by counted: a realloc's new block may continue it (and take that back). */
void pf_sweep_leak_freed(sweeper_t *S, uint64_t key, const live_obj_t *o, uint32_t proc, uint64_t t,
                         double counted);

/* That free (at key, time t) was a realloc's (its FREE marked PF_FREE_BY_REALLOC): the next block at the
 * address continues it whatever the gap. */
void pf_sweep_leak_by_realloc(sweeper_t *S, uint64_t key, uint64_t t);
/* ... and the realloc moved the block (its COPY): the gap rules again for whatever comes at the old
 * address. */
void pf_sweep_leak_moved(sweeper_t *S, uint64_t key);

/* Object o was made at time t by a realloc of the block whose key is old_key, freed at most max_gap ns
 * before, or at any time before when its FREE was marked the realloc's (by the same line): o continues
 * that block's chain, with the bytes it gained as a piece of its own. Nothing when no such block was freed
 * lately. */
void pf_sweep_leak_grew(sweeper_t *S, uint64_t old_key, live_obj_t *o, uint64_t t, uint64_t max_gap);

/* pf_model_leak.c: the leak test of every line (pf_leak_test_t), from the objects still live at the end of
 * the sweep and the lines' timeline_low; before finish_stats has filled the timelines' last buckets it
 * must not run: call it after. */
void pf_sweep_leaks(sweeper_t *S);

/* pf_model_watch.c: one ACCESS_PAIR event, and the ordering of the groups once every event is in. */
void pf_sweep_access(sweeper_t *S, const event_t *e);
void pf_sweep_access_finish(sweeper_t *S);

/* Shared by the sweep's files: a row's first and last event times. */
static inline void pf_sweep_touch(pf_stats_t *s, uint64_t t)
{
    if (!s->first_ns || t < s->first_ns)
        s->first_ns = t ? t : 1;
    if (t > s->last_ns)
        s->last_ns = t;
}

/* pf_sweep_copies.c: COPY, VERDICT and COPY_WRITE events, and the flows' redundant bytes at the end. */
void pf_sweep_copy(sweeper_t *S, const event_t *e);

/* The objects' sites at a copy's two ends: rows (-1: untracked) and native sites. */
typedef struct pf_flow_ends {
    int32_t src_line, dst_line;
    uint32_t src_native, dst_native;
} pf_flow_ends_t;

/* The flow of copies made on line at (function fn, call node or -1, stack st) of kind from ends.src_line
 * into ends.dst_line, created on first use; a copy of est bytes (the largest so far names the flow's call
 * path). Its bytes and count are the caller's to add. */
pf_flow_t *pf_sweep_flow(sweeper_t *S, uint32_t proc, pf_flow_ends_t ends, int32_t at, int32_t fn, uint16_t kind,
                         int started, const pf_stack_view_t *st, int32_t node, double est);
void pf_sweep_verdict(sweeper_t *S, const event_t *e);
void pf_sweep_copy_write(sweeper_t *S, const event_t *e);
void pf_sweep_copies_finish(pf_model_t *m);
/* pf_sweep_kinds.c: what kind of object each line made (a FREE's or COPY's kinds), and how long the
 * destinations of each flow's copies lived. */
static inline void pf_sweep_kind_seen(sweeper_t *S, live_obj_t *o, unsigned kind)
{
    if (!kind || kind >= PF_OBJ_KINDS || o->kind)
        return;     /* each object's bytes count once, under the first kind seen */
    o->kind = (uint8_t)kind;
    S->m->lines[o->line].kind_bytes[kind] += o->est;
}
void pf_sweep_copy_dst(sweeper_t *S, live_obj_t *dst, int64_t copy, uint64_t t);
void pf_sweep_dst_freed(sweeper_t *S, const live_obj_t *o, uint64_t t);
/* The block o continues the block freed lately at old_k, when that free was a realloc's: proven (a
 * realloc's COPY from old_k to o), or said by its FREE (then o is the next ALLOC at the same address). o
 * takes on the freed block's copies, whose destinations were not freed after all. */
void pf_sweep_dst_continues(sweeper_t *S, uint64_t old_k, live_obj_t *o, int proven);
void pf_sweep_flow_lives(sweeper_t *S);

#endif /* PF_SWEEP_INT_H */
