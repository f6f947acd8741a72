/* pf_record.c - the slow paths behind the allocation hooks: the byte sampler's decision, stack capture and
 * the ALLOC / FREE / THREAD / MARK records.
 *
 * Sampling is Poisson by bytes: each thread draws exponential gaps with mean pf_cfg.mean_sample_bytes; an
 * allocation of n bytes that contains a sample point is recorded with est_bytes = n / (1 - exp(-n/mean)),
 * which makes every total an unbiased estimate. Allocations of at least the object threshold are recorded
 * exactly. Near the profile's size cap the mean grows (pf_sampling_now, pf_writer.h) and a MARK says so.
 * All of this runs with t->guard raised, so whatever it allocates (libunwind, dl_iterate_phdr) is not seen.
 */
#include <pthread.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "pf_aggregate.h"
#include "pf_clock.h"
#include "pf_codes.h"
#include "pf_eh_pages.h"
#include "pf_modules.h"
#include "pf_objkind.h"
#include "pf_objtable.h"
#include "pf_labels.h"
#include "pf_rec_int.h"
#include "pf_recent_stacks.h"
#include "pf_record_packed.h"
#include "pf_stacks.h"
#include "pf_sys.h"
#include "pf_thread_stack.h"
#include "pf_unwinder.h"
#include "pf_watch_glue.h"
#include "pf_writer.h"

static int finalizing_marked;
static uint32_t marked_gen;
static uint32_t announced_level, announced_gen;     /* the last PF_MARK_SAMPLING written, per file */
/* What enter_recording's fast path loads to learn whether the interpreter may have begun to finalize with
 * no FINALIZING mark in this file yet: the interpreter's finalizing word until then (NULL until the first
 * slow path sets it), a word always 1 where the word is not known (the slow path asks the interpreter), a
 * word always 0 once the mark is written. The slow path puts the interpreter's word back when a new file
 * (a fork child's) has no mark. */
static const uintptr_t *finalizing_probe;
static const uintptr_t probe_never = 0, probe_always = 1;

/* Mean factor for a fill level: 4^level, capped so that no mean can overflow. */
static uint64_t level_factor(uint32_t level)
{
    return (uint64_t)1 << (2 * (level < 12 ? level : 12));
}

void pf_sampling_now(uint64_t base_mean, uint64_t base_threshold, uint64_t *mean, uint64_t *threshold)
{
    uint64_t factor = level_factor(pf_writer_fill_level());
    *mean = base_mean < (UINT64_MAX >> 25) ? base_mean * factor : base_mean;
    /* Coarsening (factor > 1) raises the object threshold with the mean, so that big allocations stop
     * filling the file too. Uncoarsened, the threshold is the one asked for, even below the mean
     * (--sample-bytes 16m --object-bytes 1m): those allocations are recorded exactly, as documented. */
    *threshold = factor > 1 && base_threshold < *mean ? *mean : base_threshold;
}

static void write_thread_record(pf_tls_t *t)
{
    char name[17] = {0};
    prctl(PR_GET_NAME, name, 0, 0, 0);
    uint32_t name_len = (uint32_t)strnlen(name, 16);
    uint32_t bytes = pf_align8((uint32_t)(sizeof(pf_rec_header_t) + sizeof(pf_rec_thread_t) + 8) + name_len);
    char *rec = pf_writer_reserve(t, bytes);
    if (!rec)
        return;
    memset(rec + sizeof(pf_rec_header_t), 0, bytes - sizeof(pf_rec_header_t));
    pf_rec_thread_t *r = (pf_rec_thread_t *)(rec + sizeof(pf_rec_header_t));
    r->t_ns = pf_now_ns();
    r->tid = t->tid;
    r->name_len = name_len;
    uint64_t handle = (uint64_t)pthread_self();     /* what pthread_create handed its starter (SPAWN) */
    memcpy(r + 1, &handle, 8);
    memcpy((char *)(r + 1) + 8, name, name_len);
    pf_writer_commit(t, rec, PF_REC_THREAD, PF_THREAD_HANDLE, bytes);
}

/* Per-thread set-up on the first slow path, and again in a fork child (new file, new tid). */
static void thread_start(pf_tls_t *t)
{
    if (!t->ready) {
        uint64_t seed = ((uint64_t)pf_sys_gettid() << 32) ^ pf_now_ns() ^ (uint64_t)(uintptr_t)t;
        int64_t pending = t->sampler.armed - t->sampler.countdown;  /* bytes of the allocation at hand */
        int64_t copy_pending = t->copy_sampler.armed - t->copy_sampler.countdown;
        pf_sampler_seed(&t->sampler, seed, pf_cfg.mean_sample_bytes, pf_cfg.object_threshold);
        t->sampler.countdown = t->sampler.armed - pending;
        pf_sampler_seed(&t->copy_sampler, seed ^ 0x5DEECE66Dull, pf_cfg.copy_sample_bytes, pf_cfg.copy_threshold);
        t->copy_sampler.countdown = t->copy_sampler.armed - copy_pending;
        /* the frame reader's check of the GIL holder (a fork child's thread keeps it; a capture before
         * this, if any, asks the interpreter instead) */
        t->py_hint.thread_ident = (unsigned long)pthread_self();
        t->ready = 1;
    }
    t->tid = pf_sys_gettid();
    pf_clock_thread_recording(t->tid);
    t->stack_low = t->stack_high = 0;
    pf_thread_stack(&t->stack_low, &t->stack_high);     /* the guard is up (pf_enter_recording's callers) */
    write_thread_record(t);
}

void pf_record_thread_reset(pf_tls_t *t)
{
    pf_clock_fork_child(t);     /* the child's one thread (its only caller) */
    memset(t->stack_cache, 0, sizeof t->stack_cache);  /* a fork child's stack ids start again */
    pf_recent_forget();
    pf_packed_forget(t);
    t->chunk_pos = t->chunk_end = NULL;
    t->chunk_gen = 0;
    t->chunk_exited = 0;
    t->chunk_handed_end = NULL;
    t->watch_started = 0;
}

void pf_record_mark(pf_tls_t *t, int kind, uint64_t value, const char *note)
{
    uint32_t note_len = note ? (uint32_t)strlen(note) : 0;
    if (note_len > 1024)
        note_len = 1024;
    uint32_t bytes = pf_align8((uint32_t)(sizeof(pf_rec_header_t) + sizeof(pf_rec_mark_t)) + note_len);
    char *rec = pf_writer_reserve(t, bytes);
    if (!rec)
        return;
    memset(rec + sizeof(pf_rec_header_t), 0, bytes - sizeof(pf_rec_header_t));
    pf_rec_mark_t *m = (pf_rec_mark_t *)(rec + sizeof(pf_rec_header_t));
    m->t_ns = pf_now_ns();
    m->value = value;
    m->note_len = note_len;
    if (note_len)
        memcpy(m + 1, note, note_len);
    pf_writer_commit(t, rec, PF_REC_MARK, (uint16_t)kind, bytes);
}

/* 1 once the interpreter has begun to finalize: a load of its word where the runtime found it, else a call. */
static inline int py_finalizing(void)
{
    const uintptr_t *w = pf_cfg.py_finalizing;
    return w ? __atomic_load_n(w, __ATOMIC_RELAXED) != 0 : pf_cfg.py->is_finalizing();
}

/* Everything pf_enter_recording may have to do: a new file (a fork child's, or a thread's first event), the
 * FINALIZING and SAMPLING marks, the pymem wrappers' check, the watch glue. */
static __attribute__((noinline, cold)) void enter_recording_slow(pf_tls_t *t)
{
    void (*recheck)(void) = __atomic_load_n(&pf_host.pymem_recheck, __ATOMIC_RELAXED);
    if (PF_UNLIKELY(recheck != NULL))
        recheck();     /* until the wrappers are seen in place: it then clears itself */
    uint32_t gen = pf_writer_generation();
    if (PF_UNLIKELY(t->chunk_gen != gen || !t->ready)) {
        t->chunk_gen = gen;     /* so the THREAD record below lands in this generation's chunk */
        t->chunk_pos = t->chunk_end = NULL;
        thread_start(t);
        pf_labels_write(t, gen);   /* once per file: what the engine calls this process */
    }
    int marked = finalizing_marked && marked_gen == gen;
    if (PF_UNLIKELY(!marked && pf_cfg.py && py_finalizing())) {
        finalizing_marked = 1;
        marked_gen = gen;
        marked = 1;
        pf_record_mark(t, PF_MARK_FINALIZING, 0, NULL);
        pf_eh_pages_finalizing();
        if (pf_cfg.aggregate)     /* --aggregate: what is live now is live at exit */
            pf_aggregate_finalizing(t);
        pf_watch_glue_stop(t);
    }
    __atomic_store_n(&finalizing_probe, marked || !pf_cfg.py ? &probe_never
                                        : pf_cfg.py_finalizing ? pf_cfg.py_finalizing : &probe_always,
                     __ATOMIC_RELAXED);
    uint32_t level = pf_writer_fill_level();
    if (PF_UNLIKELY(announced_gen != gen)) {
        announced_gen = gen;
        announced_level = 0;
    }
    if (PF_UNLIKELY(level > announced_level)) {
        announced_level = level;   /* racing threads may both write it: the reader keeps the largest */
        pf_record_mark(t, PF_MARK_SAMPLING, level_factor(level), NULL);
    }
    pf_watch_glue_visit(t);
}

/* Inline in the paths of every allocation and free: loads and compares only, where the call with its slow
 * parts inlined pushed and popped six registers and was 46 instructions (5% of an --exact recording's). */
static inline __attribute__((always_inline)) void enter_recording(pf_tls_t *t)
{
    uint32_t gen = pf_writer_generation();
    const uintptr_t *probe = __atomic_load_n(&finalizing_probe, __ATOMIC_RELAXED);
    if (PF_UNLIKELY(__atomic_load_n(&pf_host.pymem_recheck, __ATOMIC_RELAXED) != NULL || t->chunk_gen != gen ||
                    !t->ready || !probe || __atomic_load_n(probe, __ATOMIC_RELAXED) != 0 || announced_gen != gen ||
                    pf_writer_fill_level() > announced_level))
        enter_recording_slow(t);
    else
        pf_watch_glue_visit(t);
}

void pf_enter_recording(pf_tls_t *t)
{
    enter_recording(t);
}

/* The thread's stack cache. Most allocations repeat one of a few stacks (a loop's lines), and turning a raw
 * capture into a stack id costs a code-id lookup per frame and a hash and compare of the whole stack.
 * So the raw capture (code objects, offsets, native IPs) is hashed, and a small two-way cache maps
 * that hash to the id it gave last time; the guess is then checked frame by frame against the interned
 * stack, each code object against the one its id was given to (an address can hold a newer code object),
 * so a wrong guess only costs the check. */
static uint64_t raw_key(const pf_pyframe_t *frames, int n_py, const uint64_t *native, int n_native, uint8_t flags)
{
    uint64_t h = (uint64_t)n_py << 32 ^ (uint64_t)n_native << 16 ^ flags;
    for (int i = 0; i < n_py; i++)
        h = (h ^ (uint64_t)(uintptr_t)frames[i].code ^ (uint64_t)frames[i].lasti_bytes << 48) * 0x9E3779B97F4A7C15ull;
    /* Native IPs in four lanes: one multiply chain through 14-64 IPs was most of this function's time
     * under --native (each step waiting on the last); the key only picks a cache slot whose guess is then
     * checked frame by frame, so four mixed lanes do as well. */
    const uint64_t K = 0x9E3779B97F4A7C15ull;
    uint64_t a = h, b = h ^ 0x632BE59BD9B4E019ull, c = h ^ 0x8CB92BA72F3D8DD7ull, d = h ^ 0xD6E8FEB86659FD93ull;
    int i = 0;
    for (; i + 4 <= n_native; i += 4) {
        a = (a ^ native[i]) * K;
        b = (b ^ native[i + 1]) * K;
        c = (c ^ native[i + 2]) * K;
        d = (d ^ native[i + 3]) * K;
    }
    if (i < n_native)
        a = (a ^ native[i]) * K;
    if (i + 1 < n_native)
        b = (b ^ native[i + 1]) * K;
    if (i + 2 < n_native)
        c = (c ^ native[i + 2]) * K;
    h = (a ^ (b << 17 | b >> 47) ^ (c << 31 | c >> 33) ^ (d << 47 | d >> 17)) * K;
    return h ^ h >> 31;
}

/* The cache is two-way: a key picks a set of two slots, the most recently filed first. Direct-mapped, two
 * of a loop's few stacks could share a slot (the keys hash code objects' addresses, which move from run to
 * run), and then both missed every time. */
static inline pf_stack_cache_slot_t *cache_set(pf_tls_t *t, uint64_t key)
{
    return &t->stack_cache[(key >> 59 & (PF_STACK_CACHE_SLOTS / 2 - 1)) * 2];
}

static inline const pf_stack_cache_slot_t *cache_find(pf_tls_t *t, uint64_t key)
{
    const pf_stack_cache_slot_t *set = cache_set(t, key);
    return set[0].key == key ? &set[0] : set[1].key == key ? &set[1] : NULL;
}

static void cache_file(pf_tls_t *t, const pf_stack_t *st, uint32_t id)
{
    pf_stack_cache_slot_t *set = cache_set(t, st->cache_key);
    if (set[0].key != st->cache_key)
        set[1] = set[0];
    set[0] = (pf_stack_cache_slot_t){.key = st->cache_key, .id = id, .flags = st->flags};
}

/* stack_from_raw for a capture that is no recent stack of the thread's: the cached id and its frames when
 * the cache guessed right, else the code id of every frame; then filed as a recent stack. */
static __attribute__((noinline)) void stack_from_raw_slow(pf_tls_t *t, pf_stack_t *st, const pf_pyframe_t *frames,
                                                           int n_py, uint64_t recent_key)
{
    st->cache_key = raw_key(frames, n_py, st->native, st->n_native, st->flags);
    const pf_stack_cache_slot_t *c = cache_find(t, st->cache_key);
    st->id = 0;
    if (c && c->flags == st->flags &&
        pf_stacks_match(c->id, frames, st->n_py, st->native, st->n_native, st->py)) {
        st->id = c->id;
    } else {
        /* Code ids first: a new one writes its CODE record into this chunk before the record using it. */
        for (int i = 0; i < n_py; i++) {
            st->py[i].code_id = pf_codes_id(t, frames[i].code);
            st->py[i].lasti_bytes = frames[i].lasti_bytes;
        }
    }
    pf_recent_file(recent_key, st, frames, n_py);
}

/* Fills st from a raw capture: the id and code ids of a recent stack of the thread's when it is one of them
 * (pf_recent_stacks.h), else what stack_from_raw_slow finds. Inline, the slow part apart: a call for the
 * recent stack alone pushed and popped six registers, about 20 instructions of every allocation's 1,450. */
static inline __attribute__((always_inline)) void stack_from_raw(pf_tls_t *t, pf_stack_t *st,
                                                                 const pf_pyframe_t *frames, int n_py)
{
    st->n_py = (uint16_t)n_py;
    st->hash = 0;
    uint64_t recent_key = pf_recent_key(st, frames, n_py);
    if (!pf_recent_find(recent_key, st, frames, n_py))
        stack_from_raw_slow(t, st, frames, n_py, recent_key);
}

/* The raw Python frames of this thread into frames; sets st->flags. Returns their number. Inline: a call
 * of its own was 18 instructions of every allocation's. */
static inline __attribute__((always_inline)) int capture_python_raw(pf_tls_t *t, pf_stack_t *st, pf_pyframe_t *frames)
{
    int truncated = 0;
    /* the import machinery's frames are left out by the walk itself (pf_codes.h says which and why) */
    const void *drop[2];
    uint32_t machinery = pf_cfg.whole_stacks ? 0 : pf_codes_machinery_files(drop);
    int n_py = pf_cfg.py ? pf_cfg.py->capture_hinted(&t->py_hint, frames, PF_MAX_PY_FRAMES, &truncated,
                                                     machinery ? drop : NULL) : -1;
    st->flags = 0;
    if (n_py < 0) {
        /* No thread state. On the main thread that is interpreter start-up or shutdown, not a native
         * thread: report it without frames so it lands on "[python startup]". */
        if (t->tid != pf_cfg.pid)
            st->flags |= PF_ALLOC_NO_PYSTATE;
        n_py = 0;
    }
    if (truncated)
        st->flags |= PF_ALLOC_TRUNCATED;
    return machinery > 2 ? pf_codes_drop_machinery(frames, n_py) : n_py;
}

void pf_stack_capture_python(pf_tls_t *t, pf_stack_t *st)
{
    pf_pyframe_t frames[PF_MAX_PY_FRAMES];
    int n_py = capture_python_raw(t, st, frames);
    st->n_native = 0;
    stack_from_raw(t, st, frames, n_py);
}

/* Stacks new to the process that the fast walk gave: the first 4096 are each compared with libunwind's,
 * then one in 64 (a program importing numpy makes tens of thousands, each 64 native frames deep, and
 * walking each twice cost what the fast walk saved). */
#define CHECK_ALL_FIRST 4096u
#define CHECK_ONE_IN 64u
static uint32_t new_stacks_seen;

/* A stack the thread's cache did not know, from the fast walk (pf_unwinder.c): one interned before is
 * filed in the cache now (pf_record_stack_id would look it up again); one new to the process is compared
 * with the one libunwind gives (above), and where they differ libunwind's is taken, and gives every
 * later stack. */
static void check_fast_walk(pf_tls_t *t, pf_stack_t *st, const pf_pyframe_t *frames, int n_py)
{
    uint32_t known = pf_stacks_known(st);
    if (known) {
        st->id = known;
        pf_recent_resolved(st, known);
        cache_file(t, st, known);
        return;
    }
    uint32_t seen = __atomic_fetch_add(&new_stacks_seen, 1, __ATOMIC_RELAXED);
    if (seen >= CHECK_ALL_FIRST && seen % CHECK_ONE_IN)
        return;
    uint64_t check[PF_MAX_NATIVE_FRAMES];
    int n = pf_unwinder_stepped(check, PF_MAX_NATIVE_FRAMES);  /* no trace cache (pf_unwinder.c) */
    pf_unwinder_read_frames(check, n);
    if (!pf_cfg.whole_stacks)
        n = pf_modules_native_cut(t, check, n);
    if (n != st->n_native || memcmp(check, st->native, (size_t)n * 8) != 0) {
        pf_unwinder_disagreed();
        st->n_native = (uint16_t)n;
        memcpy(st->native, check, (size_t)n * 8);
        stack_from_raw(t, st, frames, n_py);
    }
}

/* pf_stack_capture's native part, after the Python frames: the native IPs, then the stack's id. */
static __attribute__((noinline)) void stack_capture_native(pf_tls_t *t, pf_stack_t *st, const pf_pyframe_t *frames,
                                                            int n_py)
{
    int fast = 0, cut, n = pf_unwinder_capture(t, st->native, PF_MAX_NATIVE_FRAMES, &fast, &cut);
    st->n_native = (uint16_t)(pf_cfg.whole_stacks ? n : cut);
    stack_from_raw(t, st, frames, n_py);   /* modules: noted as the stack is written */
    if (fast && !st->id)
        check_fast_walk(t, st, frames, n_py);
}

/* Inline in record_alloc, the allocations' path, the native part apart: one call less of every allocation. */
static inline __attribute__((always_inline)) void stack_capture(pf_tls_t *t, pf_stack_t *st)
{
    pf_pyframe_t frames[PF_MAX_PY_FRAMES];
    pf_eh_pages_tick();
    int n_py = capture_python_raw(t, st, frames);
    if (pf_cfg.native) {
        stack_capture_native(t, st, frames, n_py);
        return;
    }
    st->n_native = 0;
    stack_from_raw(t, st, frames, n_py);
}

void pf_stack_capture(pf_tls_t *t, pf_stack_t *st)
{
    stack_capture(t, st);
}

void pf_stack_store(const pf_stack_t *st, void *dst)
{
    memcpy(dst, st->py, (size_t)st->n_py * sizeof(pf_rec_pyframe_t));
    memcpy((char *)dst + (size_t)st->n_py * sizeof(pf_rec_pyframe_t), st->native, (size_t)st->n_native * 8);
}

uint32_t pf_record_stack_id(pf_tls_t *t, const pf_stack_t *st)
{
    if (st->id)
        return st->id;
    uint32_t sid = pf_stacks_id(t, st);
    if (sid) {
        cache_file(t, st, sid);
        pf_recent_resolved(st, sid);
    } else if (st->n_native)
        pf_modules_note(t, st->native, st->n_native);   /* inline: the record needs them (else noted once) */
    return sid;
}

char *pf_record_reserve_stacked(pf_tls_t *t, const pf_stack_t *st, uint32_t fixed, uint32_t *sid, uint32_t *bytes)
{
    *sid = pf_record_stack_id(t, st);
    *bytes = pf_align8((uint32_t)sizeof(pf_rec_header_t) + fixed + pf_stacks_tail_bytes(st, *sid));
    return pf_writer_reserve(t, *bytes);
}

/* The ALLOC of an exact allocation with an interned stack, in its short form (pf_format.h). Returns 0, or -1
 * when the record could not be written. */
static int write_alloc_short(pf_tls_t *t, void *p, size_t size, int domain, uint8_t flags, uint32_t sid)
{
    int packed = pf_packed_alloc(t, p, (uint32_t)size, domain, flags, sid);
    if (packed <= 0)
        return packed;
    const uint32_t bytes = (uint32_t)(sizeof(pf_rec_header_t) + sizeof(pf_rec_alloc_short_t));
    char *rec = pf_writer_reserve(t, bytes);
    if (!rec)
        return -1;
    pf_rec_alloc_short_t *a = (pf_rec_alloc_short_t *)(rec + sizeof(pf_rec_header_t));
    a->t_ns = pf_now_ns();
    a->addr = (uint64_t)(uintptr_t)p;
    a->size = (uint32_t)size;
    a->stack_id = sid;
    pf_writer_commit(t, rec, PF_REC_ALLOC_SHORT, PF_ALLOC_SHORT_AUX(domain, flags | PF_ALLOC_STACK_REF), bytes);
    return 0;
}

/* The ALLOC record of p, with the stack inline or as a reference. Returns 0, or -1 when it could not be
 * written. */
static int write_alloc(pf_tls_t *t, void *p, size_t size, int domain, uint64_t est, uint8_t flags,
                       const pf_stack_t *st)
{
    uint32_t sid = pf_record_stack_id(t, st);
    if (sid && est == size && size <= UINT32_MAX && (flags & PF_ALLOC_EXACT))
        return write_alloc_short(t, p, size, domain, (uint8_t)(flags | st->flags), sid);
    uint32_t bytes = pf_align8((uint32_t)(sizeof(pf_rec_header_t) + sizeof(pf_rec_alloc_t)) +
                               pf_stacks_tail_bytes(st, sid));
    char *rec = pf_writer_reserve(t, bytes);
    if (!rec)
        return -1;
    pf_rec_alloc_t *a = (pf_rec_alloc_t *)(rec + sizeof(pf_rec_header_t));
    a->t_ns = pf_now_ns();
    a->addr = (uint64_t)(uintptr_t)p;
    a->size = size;
    a->est_bytes = est;
    a->domain = (uint8_t)domain;
    a->flags = flags;
    pf_stacks_fields(st, sid, &a->flags, &a->n_py, &a->n_native);
    a->reserved = 0;
    pf_stacks_store_tail(st, sid, a + 1);
    pf_writer_commit(t, rec, PF_REC_ALLOC, 0, bytes);
    return 0;
}

static void record_alloc(pf_tls_t *t, void *p, size_t size, int domain, uint64_t est, uint8_t flags)
{
    pf_objtable_prefetch((uintptr_t)p, size, (uint32_t)domain);  /* its slot is a cache miss: load it while
                                                                    the stack is read */
    pf_stack_t st;
    stack_capture(t, &st);
    if (pf_aggregating() && pf_aggregate_alloc(t, &st, p, size, domain, est, flags))
        return;     /* --aggregate: counted in its site's totals instead of a record */
    if (write_alloc(t, p, size, domain, est, flags, &st) != 0)
        return;
    /* live only when tracked: an untracked block's free would not be seen */
    if (pf_objtable_insert_new((uintptr_t)p, size, (uint32_t)domain, flags | st.flags) == 0)
        pf_api_on_alloc(domain, est);
}

void pf_on_alloc_slow(pf_tls_t *t, void *p, size_t size, int domain)
{
    if (t->guard)
        return;
    pf_guard_enter(t);
    if (PF_UNLIKELY(!__atomic_load_n(&pf_cfg.enabled, __ATOMIC_ACQUIRE))) {
        /* Passive process (not Python, or no profile): never come back here. */
        t->sampler.countdown = t->sampler.armed = INT64_MAX / 4;
        pf_guard_leave(t);
        return;
    }
    enter_recording(t);

    uint64_t est, mean = pf_cfg.mean_sample_bytes, threshold = pf_cfg.object_threshold;
    pf_sample_verdict_t verdict = PF_SAMPLE_EXACT;
    if (pf_cfg.exact) {
        /* --exact records everything (records past the cap are dropped, said): what the sampler would
         * decide with a threshold of 1 byte, and the countdown it would arm (1: the next allocation comes
         * here too), without its accounting of the bytes between samples, which nothing reads then. */
        t->sampler.countdown = t->sampler.armed = 1;
        est = size;
    } else {
        pf_sampling_now(mean, threshold, &mean, &threshold);
        verdict = pf_sampler_visit(&t->sampler, size, mean, threshold, &est);
    }
    if (verdict != PF_SAMPLE_SKIP)
        record_alloc(t, p, size, domain, est, verdict == PF_SAMPLE_EXACT ? PF_ALLOC_EXACT : PF_ALLOC_SAMPLED);
    pf_guard_leave(t);
}

void pf_on_alloc_exact(pf_tls_t *t, void *p, size_t size, int domain)
{
    if (t->guard || !p || !__atomic_load_n(&pf_cfg.enabled, __ATOMIC_ACQUIRE))
        return;
    pf_guard_enter(t);
    enter_recording(t);
    record_alloc(t, p, size, domain, size, PF_ALLOC_EXACT);
    pf_guard_leave(t);
}

/* content: 1 for a free that ends the object's value (not a realloc, whose value lives on): what it held is
 * looked at first (pf_content.c). */
static int free_slow(pf_tls_t *t, void *p, int domain, pf_objinfo_t *obj, int content)
{
    if (t->guard)
        return 0;
    pf_guard_enter(t);
    int found = pf_objtable_remove((uintptr_t)p, obj);
    if (found)
        pf_api_on_free(obj);
    if (found && __atomic_load_n(&pf_cfg.enabled, __ATOMIC_ACQUIRE)) {
        enter_recording(t);
        _Static_assert(PF_OBJ_LINKS == 3, "test every link below");
        if (obj->link[0].copy_id | obj->link[1].copy_id | obj->link[2].copy_id)
            pf_copy_verdict_on_free(t, obj);   /* before the FREE: the bytes are still there */
        if (pf_cfg.aggregate && pf_aggregate_free(t, obj)) {
            pf_guard_leave(t);  /* --aggregate: counted against its site (its verdicts on its flows); no
                                   content or FREE */
            return found;
        }
        if (content)
            pf_content_on_free(t, obj);
        /* the block is still the program's: what object it is, for the flow graph's nodes (and, kept in
         * obj's flags, for the copy record of a realloc that moves it) */
        pf_obj_kind_t kind = pf_objkind_of(obj);
        obj->flags |= (uint32_t)kind << PF_OBJ_KIND_FLAGS_SHIFT;
        uint16_t aux = (uint16_t)(PF_FREE_AUX(domain, kind) | (content ? 0 : PF_FREE_BY_REALLOC));
        uint32_t bytes = (uint32_t)(sizeof(pf_rec_header_t) + sizeof(pf_rec_free_t));
        char *rec = pf_packed_free(t, p, obj->size, aux) > 0 ? pf_writer_reserve(t, bytes) : NULL;
        if (rec) {
            pf_rec_free_t *f = (pf_rec_free_t *)(rec + sizeof(pf_rec_header_t));
            f->t_ns = pf_now_ns();
            f->addr = (uint64_t)(uintptr_t)p;
            pf_writer_commit(t, rec, PF_REC_FREE, aux, bytes);
        }
    }
    pf_guard_leave(t);
    return found;
}

int pf_on_free_slow_info(pf_tls_t *t, void *p, int domain, pf_objinfo_t *obj)
{
    return free_slow(t, p, domain, obj, 0);
}

void pf_on_free_slow(pf_tls_t *t, void *p, int domain)
{
    pf_objinfo_t obj;
    free_slow(t, p, domain, &obj, 1);
}
