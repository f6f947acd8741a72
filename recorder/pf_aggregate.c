/* pf_aggregate.c - the aggregated recording (--aggregate). See pf_aggregate.h; format in core/pf_format.h.
 *
 * Sites are (stack id, kind) with kind a domain or the copies of that stack, in one table indexed by both:
 * stack ids are small and dense (pf_stacks.c hands out at most PF_STACKS_MAX_USED < 64K), so a site is
 * found without hashing, and its counters are updated with relaxed atomic adds, no lock, by any thread.
 * The table is anonymous memory touched only where sites are used. Sites in use are listed (in the order
 * they were first used) so that a snapshot and a peak picture visit only those.
 *
 * A snapshot compares each listed site's counters with what the last snapshot wrote of it and writes the
 * ones that changed; it runs in whichever thread's slow path finds the last one a second old, under a
 * try-lock (a thread that finds it taken goes on: the holder is writing it). The peak picture (each site's
 * live bytes when the process's live bytes peaked) is taken under the same lock by the allocation that
 * passes the last picture's total by 1/PF_AGG_PEAK_STEP, and written with the next snapshot.
 */
#include "pf_aggregate.h"

#include <string.h>

#include "pf_aggregate_flows.h"
#include "pf_objtable.h"
#include "pf_stacks.h"
#include "pf_sys.h"
#include "pf_writer.h"

#define PF_AGG_MAX_STACKS 65535u                 /* stack ids are below this (pf_stacks.c); 1 + it fits a u16 */
#define PF_AGG_KINDS 8u                          /* PF_DOMAIN_COUNT domains, the copies, one spare */
#define PF_AGG_COPY_SLOT 6u
#define PF_AGG_SITES (PF_AGG_MAX_STACKS * PF_AGG_KINDS)
#define PF_AGG_PEAK_STEP 256                     /* a new peak picture past 1/256 above the last one */

_Static_assert(PF_DOMAIN_COUNT <= PF_AGG_COPY_SLOT, "a slot for each domain before the copies");

typedef struct agg_site {
    /* counted by every thread (relaxed atomics) */
    uint64_t alloc_bytes, alloc_count, free_bytes, free_count;
    uint8_t listed;             /* 1 once in the used list */
    uint8_t stack_flags;
    /* the snapshot writer's and the peak picture's (under the lock) */
    uint64_t written[4];        /* the counters as last written */
    int64_t peak_live, peak_written;
} agg_site_t;

static agg_site_t *sites;
static uint32_t *used;          /* site index + 1, in order of first use; 0: being published */
static uint32_t n_used;
static int64_t live_total;      /* estimated live bytes of every site */
static uint64_t alloc_total;
static pf_spinlock_t lock;      /* snapshots and peak pictures */
static uint32_t lock_owner;     /* its holder's tid: a signal handler that ends the process on the holding
                                   thread (_exit) must not wait for itself */
static uint64_t last_snapshot_ns;
static int64_t peak_total;      /* live_total when the peak picture was taken */
static uint64_t peak_ns;
static int peak_pending;        /* a picture not written yet */
static int frozen;              /* the interpreter is finalizing: frees no longer count */
static uint64_t serial_floor;   /* objects tracked before this serial are a fork parent's */
static int failed;              /* the table could not be mapped: every call says "not handled" */

static int ready(void)
{
    if (PF_LIKELY(sites != NULL))
        return 1;
    if (failed)
        return 0;
    pf_spin_lock(&lock);
    if (!sites && !failed) {
        agg_site_t *s = pf_sys_alloc_pages((size_t)PF_AGG_SITES * sizeof *s);
        uint32_t *u = pf_sys_alloc_pages((size_t)PF_AGG_SITES * sizeof *u);
        if (!s || !u)
            failed = 1;
        else {
            used = u;
            __atomic_store_n(&sites, s, __ATOMIC_RELEASE);
        }
    }
    pf_spin_unlock(&lock);
    return sites != NULL;
}

/* The site of stack sid and kind slot, listed on its first use. */
static agg_site_t *site_of(uint32_t sid, uint32_t slot, uint8_t stack_flags)
{
    uint32_t idx = sid * PF_AGG_KINDS + slot;
    agg_site_t *s = &sites[idx];
    uint8_t no = 0;
    if (PF_UNLIKELY(!__atomic_load_n(&s->listed, __ATOMIC_ACQUIRE)) &&
        __atomic_compare_exchange_n(&s->listed, &no, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        s->stack_flags = stack_flags;
        uint32_t at = __atomic_fetch_add(&n_used, 1, __ATOMIC_ACQ_REL);
        __atomic_store_n(&used[at], idx + 1, __ATOMIC_RELEASE);
    }
    return s;
}

/* The i-th listed site and its table index, or NULL: not published yet, or (memory_only) a copy site. */
static agg_site_t *listed(uint32_t i, int memory_only, uint32_t *idx)
{
    uint32_t v = __atomic_load_n(&used[i], __ATOMIC_ACQUIRE);
    if (!v || (memory_only && (v - 1) % PF_AGG_KINDS >= PF_AGG_COPY_SLOT))
        return NULL;
    *idx = v - 1;
    return &sites[v - 1];
}

/* The live bytes of each site now become the peak picture (lock held). */
static void take_peak(int64_t live)
{
    uint32_t n = __atomic_load_n(&n_used, __ATOMIC_ACQUIRE), idx;
    for (uint32_t i = 0; i < n; i++) {
        agg_site_t *s = listed(i, 1, &idx);
        if (!s)
            continue;
        s->peak_live = (int64_t)(__atomic_load_n(&s->alloc_bytes, __ATOMIC_RELAXED) -
                                 __atomic_load_n(&s->free_bytes, __ATOMIC_RELAXED));
    }
    peak_total = live;
    peak_ns = pf_now_ns();
    peak_pending = 1;
}

/* The site id of st: its interned stack id, or 0 for an empty stack (no Python frames: start-up, shutdown,
 * a native thread; those are never interned). UINT32_MAX: none (the intern table is full). */
static uint32_t stack_site(pf_tls_t *t, const pf_stack_t *st)
{
    if (!st->n_py && !st->n_native)
        return 0;
    uint32_t sid = pf_stacks_id(t, st);
    return sid && sid < PF_AGG_MAX_STACKS ? sid : UINT32_MAX;
}

int pf_aggregate_alloc(pf_tls_t *t, const pf_stack_t *st, void *p, uint64_t size, int domain, uint64_t est,
                       uint8_t flags)
{
    if (!ready())
        return 0;
    uint32_t sid = stack_site(t, st);
    if (sid == UINT32_MAX)
        return 0;
    agg_site_t *s = site_of(sid, (uint32_t)domain, st->flags);
    __atomic_add_fetch(&s->alloc_bytes, est, __ATOMIC_RELAXED);
    __atomic_add_fetch(&s->alloc_count, pf_agg_count_of(size, est), __ATOMIC_RELAXED);
    __atomic_add_fetch(&alloc_total, est, __ATOMIC_RELAXED);
    pf_objinfo_t obj = {.addr = (uintptr_t)p, .size = size, .domain = (uint32_t)domain,
                        .flags = flags | st->flags, .site = sid + 1};
    if (pf_objtable_insert(&obj) != 0) {
        /* untracked: its free would not be seen, so it is not live either */
        __atomic_add_fetch(&s->free_bytes, est, __ATOMIC_RELAXED);
        __atomic_add_fetch(&s->free_count, pf_agg_count_of(size, est), __ATOMIC_RELAXED);
    } else {
        pf_api_on_alloc(domain, est);
        int64_t live = __atomic_add_fetch(&live_total, (int64_t)est, __ATOMIC_RELAXED);
        if (live > peak_total + peak_total / PF_AGG_PEAK_STEP &&
            !__atomic_exchange_n(&lock.locked, 1, __ATOMIC_ACQUIRE)) {
            lock_owner = t->tid;
            if (live > peak_total)
                take_peak(live);
            lock_owner = 0;
            pf_spin_unlock(&lock);
        }
    }
    pf_aggregate_tick(t);
    return 1;
}

int pf_aggregate_free(pf_tls_t *t, const pf_objinfo_t *obj)
{
    if (!obj->site || !sites)
        return 0;
    if (frozen || obj->serial < serial_floor)
        return 1;   /* live at exit; or a fork parent's object, whose site is not this file's */
    uint64_t est = obj->size;
    if ((obj->flags & PF_ALLOC_SAMPLED) && !pf_cfg.exact) {
        uint64_t mean, threshold;
        pf_sampling_now(pf_cfg.mean_sample_bytes, pf_cfg.object_threshold, &mean, &threshold);
        est = pf_sampler_estimate(obj->size, mean);
    }
    agg_site_t *s = &sites[(obj->site - 1) * PF_AGG_KINDS + obj->domain];
    __atomic_add_fetch(&s->free_bytes, est, __ATOMIC_RELAXED);
    __atomic_add_fetch(&s->free_count, pf_agg_count_of(obj->size, est), __ATOMIC_RELAXED);
    __atomic_sub_fetch(&live_total, (int64_t)est, __ATOMIC_RELAXED);
    pf_aggregate_tick(t);
    return 1;
}

int pf_aggregate_copy(pf_tls_t *t, const pf_stack_t *st, uint64_t est, uint32_t *sid_out)
{
    if (!ready())
        return 0;
    uint32_t sid = stack_site(t, st);
    if (sid == UINT32_MAX)
        return 0;
    *sid_out = sid;
    agg_site_t *s = site_of(sid, PF_AGG_COPY_SLOT, st->flags);
    __atomic_add_fetch(&s->alloc_bytes, est, __ATOMIC_RELAXED);
    __atomic_add_fetch(&s->alloc_count, 1, __ATOMIC_RELAXED);
    pf_aggregate_tick(t);
    return 1;
}

/* ---- writing: records in parts of at most PF_AGG_MAX_PART entries ---- */

typedef struct part {
    uint16_t type;
    uint32_t entry_bytes;
    uint32_t n, max;
    union {
        pf_rec_agg_snapshot_t snap;
        pf_rec_agg_peak_t peak;
        pf_rec_agg_flows_t flows;
    } head;
    char entries[PF_AGG_MAX_PART * sizeof(pf_rec_agg_site_t)];
} part_t;

static part_t part;     /* under the lock */

static void part_flush(pf_tls_t *t, int more)
{
    uint32_t head = part.type == PF_REC_AGG_SITES   ? sizeof(pf_rec_agg_snapshot_t)
                    : part.type == PF_REC_AGG_FLOWS ? sizeof(pf_rec_agg_flows_t)
                                                    : sizeof(pf_rec_agg_peak_t);
    uint32_t bytes = pf_align8((uint32_t)sizeof(pf_rec_header_t) + head + part.n * part.entry_bytes);
    if (part.type == PF_REC_AGG_SITES) {
        part.head.snap.n_sites = part.n;
        part.head.snap.flags = (part.head.snap.flags & ~PF_AGG_MORE) | (more ? PF_AGG_MORE : 0);
    } else if (part.type == PF_REC_AGG_FLOWS) {
        part.head.flows.n_flows = part.n;
        part.head.flows.flags = more ? PF_AGG_MORE : 0;
    } else {
        part.head.peak.n_sites = part.n;
        part.head.peak.flags = more ? PF_AGG_MORE : 0;
    }
    char *rec = pf_writer_reserve(t, bytes);
    if (rec) {
        memcpy(rec + sizeof(pf_rec_header_t), &part.head, head);
        memcpy(rec + sizeof(pf_rec_header_t) + head, part.entries, (size_t)part.n * part.entry_bytes);
        pf_writer_commit(t, rec, part.type, 0, bytes);
    }
    part.n = 0;
}

static void *part_add(pf_tls_t *t)
{
    if (part.n == part.max)
        part_flush(t, 1);
    return part.entries + (size_t)part.n++ * part.entry_bytes;
}

static void write_peak(pf_tls_t *t)
{
    part.type = PF_REC_AGG_PEAK;
    part.entry_bytes = sizeof(pf_rec_agg_peak_site_t);
    part.n = 0;
    part.max = PF_AGG_MAX_PART;
    /* never before the last snapshot: each thread's records go forward in time */
    part.head.peak = (pf_rec_agg_peak_t){.t_ns = peak_ns > last_snapshot_ns ? peak_ns : last_snapshot_ns,
                                         .live_bytes = (uint64_t)(peak_total > 0 ? peak_total : 0)};
    uint32_t n = __atomic_load_n(&n_used, __ATOMIC_ACQUIRE), idx;
    for (uint32_t i = 0; i < n; i++) {
        agg_site_t *s = listed(i, 1, &idx);
        if (!s || s->peak_live == s->peak_written)
            continue;
        pf_rec_agg_peak_site_t *e = part_add(t);
        *e = (pf_rec_agg_peak_site_t){.stack_id = idx / PF_AGG_KINDS, .kind = (uint8_t)(idx % PF_AGG_KINDS),
                                      .stack_flags = s->stack_flags,
                                      .live_bytes = (uint64_t)(s->peak_live > 0 ? s->peak_live : 0)};
        s->peak_written = s->peak_live;
    }
    part_flush(t, 0);
    peak_pending = 0;
}

/* Writes the copy flows that changed (lock held), after the snapshot's sites: their stacks are written. */
static void write_flows(pf_tls_t *t, uint64_t now)
{
    part.type = PF_REC_AGG_FLOWS;
    part.entry_bytes = sizeof(pf_rec_agg_flow_t);
    part.n = 0;
    part.max = PF_AGG_FLOWS_PART;
    part.head.flows = (pf_rec_agg_flows_t){.t_ns = now};
    _Static_assert(PF_AGG_FLOWS_PART * sizeof(pf_rec_agg_flow_t) <= sizeof part.entries, "a part fits");
    uint32_t cursor = 0;
    pf_rec_agg_flow_t f;
    while (pf_agg_flows_next_changed(&cursor, &f))
        *(pf_rec_agg_flow_t *)part_add(t) = f;
    if (part.n)
        part_flush(t, 0);
}

/* Writes the sites that changed (lock held); final: even when none did. */
static void write_snapshot(pf_tls_t *t, uint64_t now, int final)
{
    if (peak_pending)
        write_peak(t);
    part.type = PF_REC_AGG_SITES;
    part.entry_bytes = sizeof(pf_rec_agg_site_t);
    part.n = 0;
    part.max = PF_AGG_MAX_PART;
    int64_t live = __atomic_load_n(&live_total, __ATOMIC_RELAXED);
    part.head.snap = (pf_rec_agg_snapshot_t){.t_ns = now, .live_bytes = (uint64_t)(live > 0 ? live : 0),
                                             .alloc_bytes = __atomic_load_n(&alloc_total, __ATOMIC_RELAXED),
                                             .since_ns = pf_cfg.aggregate_from_ns,
                                             .flags = (final ? PF_AGG_FINAL : 0) | PF_AGG_FLOWS_KEPT |
                                                      (pf_cfg.aggregate_by_size ? PF_AGG_BY_SIZE : 0)};
    int any = 0;
    uint32_t n = __atomic_load_n(&n_used, __ATOMIC_ACQUIRE), idx;
    for (uint32_t i = 0; i < n; i++) {
        agg_site_t *s = listed(i, 0, &idx);
        if (!s)
            continue;
        uint64_t now_v[4] = {__atomic_load_n(&s->alloc_bytes, __ATOMIC_RELAXED),
                             __atomic_load_n(&s->alloc_count, __ATOMIC_RELAXED),
                             __atomic_load_n(&s->free_bytes, __ATOMIC_RELAXED),
                             __atomic_load_n(&s->free_count, __ATOMIC_RELAXED)};
        if (!memcmp(now_v, s->written, sizeof now_v))
            continue;
        pf_rec_agg_site_t *e = part_add(t);
        *e = (pf_rec_agg_site_t){.stack_id = idx / PF_AGG_KINDS,
                                 .kind = idx % PF_AGG_KINDS == PF_AGG_COPY_SLOT ? PF_AGG_COPIES
                                                                               : (uint8_t)(idx % PF_AGG_KINDS),
                                 .stack_flags = s->stack_flags, .alloc_bytes = now_v[0], .alloc_count = now_v[1],
                                 .free_bytes = now_v[2], .free_count = now_v[3]};
        memcpy(s->written, now_v, sizeof now_v);
        any = 1;
    }
    if (any || final || part.n)
        part_flush(t, 0);
    write_flows(t, now);
    last_snapshot_ns = now;
}

void pf_aggregate_tick(pf_tls_t *t)
{
    uint64_t now = pf_now_ns();
    /* how often: pf_cfg.aggregate_interval_ns (PYFLOW_AGGREGATE_MS, 1 s by default) */
    if (now - __atomic_load_n(&last_snapshot_ns, __ATOMIC_RELAXED) < pf_cfg.aggregate_interval_ns || !sites)
        return;
    if (__atomic_exchange_n(&lock.locked, 1, __ATOMIC_ACQUIRE))
        return;     /* another thread is writing one */
    lock_owner = t->tid;
    if (now - last_snapshot_ns >= pf_cfg.aggregate_interval_ns)
        write_snapshot(t, now, 0);
    lock_owner = 0;
    pf_spin_unlock(&lock);
}

static void final_snapshot(pf_tls_t *t)
{
    if (!sites)
        return;
    if (__atomic_load_n(&lock.locked, __ATOMIC_ACQUIRE) && __atomic_load_n(&lock_owner, __ATOMIC_RELAXED) == t->tid)
        return;     /* interrupted its own snapshot (a signal handler calling _exit): the last one stands */
    pf_spin_lock(&lock);
    lock_owner = t->tid;
    write_snapshot(t, pf_now_ns(), 1);
    lock_owner = 0;
    pf_spin_unlock(&lock);
}

void pf_aggregate_finalizing(pf_tls_t *t)
{
    final_snapshot(t);
    __atomic_store_n(&frozen, 1, __ATOMIC_RELEASE);
}

void pf_aggregate_at_exit(pf_tls_t *t)
{
    final_snapshot(t);
}

void pf_aggregate_switch_by_size(void)
{
    uint64_t now = pf_now_ns(), from = __atomic_load_n(&pf_cfg.aggregate_from_ns, __ATOMIC_RELAXED);
    if (from <= now)
        return;     /* already aggregating (a time asked for came first) */
    pf_cfg.aggregate_by_size = 1;
    __atomic_store_n(&pf_cfg.aggregate_from_ns, now, __ATOMIC_RELAXED);
}

void pf_aggregate_fork_child(void)
{
    if (pf_cfg.aggregate_by_size) {     /* the child's own file starts small: full records until it grows */
        pf_cfg.aggregate_by_size = 0;
        pf_cfg.aggregate_from_ns = PF_AGGREGATE_NOT_YET;
    }
    if (!sites)
        return;
    memset(&lock, 0, sizeof lock);   /* a parent's thread may have held it across the fork */
    pf_sys_munmap(sites, (size_t)PF_AGG_SITES * sizeof *sites);
    pf_sys_munmap(used, (size_t)PF_AGG_SITES * sizeof *used);
    sites = NULL;
    used = NULL;
    n_used = 0;
    live_total = 0;
    alloc_total = 0;
    peak_total = 0;
    peak_pending = 0;
    frozen = 0;
    last_snapshot_ns = 0;
    pf_agg_flows_reset();
    serial_floor = pf_objtable_next_serial();
}

/* exit(): what was allocated after the interpreter's shutdown began (the last of it) is written. */
__attribute__((destructor)) static void agg_at_exit(void)
{
    pf_tls_t *t = &pf_tls;
    if (!pf_cfg.aggregate || !sites || t->guard || !__atomic_load_n(&pf_cfg.enabled, __ATOMIC_ACQUIRE) ||
        (uint32_t)getpid() != pf_cfg.pid)
        return;
    pf_guard_enter(t);
    pf_enter_recording(t);
    final_snapshot(t);
    pf_guard_leave(t);
}
