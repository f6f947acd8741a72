/* pf_recorder.h - the recorder's whole API to the hooks and the start-up of interpose/ (libpyflow.so):
 * thread-local state, the process-wide configuration, the slow paths the hooks fall into, the recorder's
 * start, fork handlers and spawn records, and the few services it needs from the runtime that hosts it
 * (pf_host: the real functions behind the hooks). Everything else of the recorder is private to recorder/.
 *
 * Invariants the hooks rely on:
 *  - pf_tls is initial-exec TLS, so reading it never calls into the loader (no malloc, no lock).
 *  - guard != 0 means "this thread is inside pyflow or inside an allocator pyflow already counted":
 *    nothing is recorded and every hook is a pass-through. The PyMem wrappers raise it around the wrapped
 *    allocator so a PyMem allocation that reaches malloc is counted once, as Python.
 *  - countdown is the number of bytes this thread may allocate before it must visit the slow path; it is
 *    never larger than the object threshold, so one unlikely branch covers both the sampler and the
 *    "large allocations are recorded exactly" rule.
 */
#ifndef PF_RECORDER_H
#define PF_RECORDER_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pf_format.h"
#include "pf_packed.h"
#include "pf_pyframes.h"
#include "pf_sampler.h"

#define PF_LIKELY(x) __builtin_expect(!!(x), 1)
#define PF_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define PF_HIDDEN __attribute__((visibility("hidden")))
#define PF_EXPORT __attribute__((visibility("default")))
#define PF_NOINLINE __attribute__((noinline))

/* A thread's recent stacks (pf_record.c): the raw capture's hash, and the interned id it gave. */
#define PF_STACK_CACHE_SLOTS 64u     /* 32 sets of two */
typedef struct pf_stack_cache_slot {
    uint64_t key;
    uint32_t id;
    uint32_t flags;
} pf_stack_cache_slot_t;

/* A small allocation of the thread's open packed record whose free may still set its life byte
 * (pf_record_packed.c): a direct-mapped slot by address, overwritten by the next allocation that maps there. */
#define PF_PK_YOUNG_SLOTS 64u      /* 32 lost 15% of the pairs of an indexing loop to collisions */
typedef struct pf_pk_young_slot {
    uint64_t addr;              /* 0: empty */
    uint32_t serial;            /* the record's (pf_tls_t.packed_serial) */
    uint32_t life_at;           /* its life byte's offset in the record */
    uint32_t event;             /* its number among the record's events */
    uint32_t domain;
} pf_pk_young_slot_t;

typedef struct pf_tls {
    /* hot: sampler.countdown and guard are touched by every hook */
    pf_sampler_t sampler;       /* countdown first; see pf_sampler.h */
    uint32_t guard;             /* re-entrancy depth; see above */
    uint32_t ready;             /* 0 until the slow path initialized this thread */
    pf_sampler_t copy_sampler;  /* the same sampling, over bytes copied by the memcpy family */
    /* warm: slow path only */
    char *chunk_pos;            /* next free byte in this thread's chunk of the profile */
    char *chunk_end;
    uint32_t chunk_gen;         /* writer generation the chunk belongs to (a fork starts a new one) */
    uint32_t chunk_exited;      /* the thread is ending (pf_writer.c) */
    char *chunk_handed_end;     /* the end of the chunk it handed on as it began to end, if any */
    char *written_from;         /* filled chunks not yet dropped from memory: [written_from, written_to) */
    char *written_to;
    uint32_t tid;
    int64_t compare_credit;     /* bytes this thread may still spend comparing copies (pf_copies.c) */
    int compare_credit_set;
    uint32_t watch_started;     /* watch/ was started (or refused) on this thread */
    uint32_t spawn_noted_pid;   /* the vfork child whose start this thread's file already has (exec retries) */
    uint32_t in_vfork_child;    /* writing from a vfork child on this thread's behalf: no file descriptor use */
    uintptr_t stack_low;        /* the thread's stack, [stack_low, stack_high), or 0, 0 when not known */
    uintptr_t stack_high;
    /* the record clock's (pf_clock.h) */
    uint64_t clk_last;          /* the last time given (CLOCK_MONOTONIC ns): times never go back */
    uint32_t clk_reuses;        /* small packed events that may still take clk_last again (pf_clock.h) */
    uint64_t clk_read;          /* the time pf_now_ns_small last read */
    pf_stack_cache_slot_t stack_cache[PF_STACK_CACHE_SLOTS];
    /* the open PF_REC_PACKED record in the thread's chunk (pf_record_packed.c), or packed_rec NULL */
    char *packed_rec;
    uint32_t packed_len;        /* its valid bytes, header included */
    uint32_t packed_gen;        /* the writer generation it was opened in */
    pf_pk_state_t packed_last;  /* what its next event is a delta against */
    uint32_t packed_events;     /* the events written in it */
    uint32_t packed_serial;     /* the records the thread opened: a young slot's record is the open one if equal */
    uint32_t packed_due_at;     /* the events written before the last young free (as packed_events then) */
    uint32_t packed_due_alloc;  /* and the number of its allocation's event */
    pf_pk_young_slot_t packed_young[PF_PK_YOUNG_SLOTS];
    /* the in-process counters' (pf_api.c) */
    uint32_t api_slot;          /* 1 + the thread's flag in pf_api.c's table; 0 until it counts */
    uint32_t api_run;           /* its counts on the shared cells since it last looked at the owner's */
    int64_t api_owner_seen;     /* the owner's cells then */
    pf_pyframes_hint_t py_hint; /* the thread's Python state its last capture found (pf_pyframes_api_t's
                                   capture_hinted) */
} pf_tls_t;

extern __thread pf_tls_t pf_tls __attribute__((tls_model("initial-exec"))) PF_HIDDEN;

/* The re-entrancy guard (pf_tls_t.guard, above): raised around everything pyflow does on a thread, so the
 * allocations and copies it makes pass through every hook uncounted. Always in pairs; they nest. Signal
 * handlers on the same thread read it (watch's, a program handler's allocations): the signal fences keep
 * the compiler from moving the work it guards out from between the two, or from folding the pair away,
 * once the work's code is visible to it (inlined, or with link-time optimization of libpyflow.so). */
static inline void pf_guard_enter(pf_tls_t *t)
{
    t->guard++;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void pf_guard_leave(pf_tls_t *t)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->guard--;
}

/* What the recorder needs from the runtime that hosts it (interpose/), filled by its start-up once the
 * real functions are known, before recording is enabled: the recorder never calls an exported hook. */
typedef struct pf_recorder_host {
    void *(*memcpy)(void *, const void *, size_t);
    size_t (*malloc_usable_size)(void *);
    void (*pymem_recheck)(void);                        /* re-wrap the PyMem domains if replaced */
    void (*foreign_signal)(int, siginfo_t *, void *);   /* the program's own action for a signal */
} pf_recorder_host_t;

extern pf_recorder_host_t pf_host PF_HIDDEN;

/* Process-wide configuration, written once by the constructor (or the fork handler) before any thread
 * can see enabled = 1. */
typedef struct pf_config {
    int enabled;                /* recording; 0 = every hook is a pass-through */
    int native;                 /* capture native IPs */
    int exact;
    int quiet;
    uint64_t mean_sample_bytes;
    uint64_t object_threshold;
    uint64_t copy_sample_bytes; /* sampling mean for copy volume */
    uint64_t copy_threshold;    /* copies this large are always recorded */
    const pf_pyframes_api_t *py;/* the interpreter's frame reader; NULL until loaded */
    const uintptr_t *py_finalizing; /* its finalizing word (pf_pyframes.h), or NULL: then py->is_finalizing */
    uint64_t start_mono_ns;
    uint32_t pid;               /* getpid(), kept (also by the fork handler): it is a system call each time */
    int is_root;                /* the process the launcher started (its stderr is the user's terminal) */
    uint64_t run_id;            /* PYFLOW_RUN_ID: names the launcher's socket for messages (pf_notify.c) */
    int waste;                  /* untouched pages and content fingerprints at free (pf_content.c) */
    int aggregate;              /* --aggregate: per-site totals in snapshots, not a record each (pf_aggregate.c) */
    uint64_t aggregate_interval_ns; /* between its snapshots while the program allocates */
    uint64_t aggregate_from_ns; /* --aggregate-after: full records before this time (pf_now_ns); atomic:
                                   PF_AGGREGATE_NOT_YET until the profile passes aggregate_after_bytes */
    uint64_t aggregate_after_bytes; /* --aggregate-after SIZE (a plain run's default): switch when the profile
                                   passes it (pf_writer.c); 0: no such switch */
    int aggregate_by_size;      /* the switch above happened (snapshots say so: PF_AGG_BY_SIZE) */
    int packed;                 /* exact allocations and frees go into PF_REC_PACKED records (PYFLOW_PACKED=0:
                                   one ALLOC_SHORT or FREE record each, as before format 6) */
    int young_frees;            /* a small block freed soon after its packed allocation sets its life byte
                                   instead of a FREE event (PYFLOW_YOUNG_FREES=0: a FREE, as before format 7) */
    int whole_stacks;           /* PYFLOW_WHOLE_STACKS=1: keep the import machinery's frames and the native
                                   frames past the native site (pf_codes_drop_machinery, pf_modules_native_cut) */
} pf_config_t;

extern pf_config_t pf_cfg PF_HIDDEN;

#define PF_AGGREGATE_NOT_YET UINT64_MAX    /* pf_cfg.aggregate_from_ns before a size switch */


/* The live tracked objects (pf_objtable.c): what a free hook may ask about an address, and what a realloc
 * hook keeps of the old block. */
#define PF_OBJTABLE_FILTER_BITS 20u
#define PF_OBJTABLE_STRIPES 64u

/* A recorded copy an object took part in, kept on both ends so that whichever is freed first can compare
 * the two buffers (the redundant-copy verdict). An object keeps its PF_OBJ_LINKS most recent copies (a
 * source copied twice, say: b = bytes(a); c = bytearray(a)). */
#define PF_OBJ_LINKS 3
typedef struct pf_copylink {
    uint64_t copy_id;       /* 0 = none, and then the fields below mean nothing */
    uintptr_t peer_obj;     /* start of the other object (its key here) */
    uint64_t peer_serial;   /* and its serial: the address may hold another object by now */
    uintptr_t peer_data;    /* first copied byte in the other object */
    uintptr_t self_data;    /* first copied byte in this object */
    uint64_t len;
} pf_copylink_t;

typedef struct pf_objinfo {
    uintptr_t addr;
    uint64_t size;
    uint32_t domain;
    uint32_t flags;
    uint32_t site;          /* --aggregate: 1 + the stack id it is counted against (pf_aggregate.c); 0: none */
    uint64_t serial;        /* set by pf_objtable (when first looked up): unique per tracked object modulo 2^32 */
    pf_copylink_t link[PF_OBJ_LINKS];
} pf_objinfo_t;

extern uint8_t *pf_objtable_filter;   /* NULL until pf_objtable_init() */

static inline uint64_t pf_objtable_hash(uintptr_t addr)
{
    return (uint64_t)addr * 0x9E3779B97F4A7C15ull;
}

/* The filter bucket of an address: 256-byte granules in 256 MiB windows; each window starts at a scrambled
 * offset, so regions a multiple of 256 MiB apart do not share buckets (inside a window none do). A
 * granule of 256 bytes, not malloc's 16: a page of the filter then covers 1 MiB of heap, not 64 KiB, and
 * under --exact every block outside the dense map is counted, so the pages written were most of the
 * filter (0.6-0.7 MiB of a 16 MiB program's RSS, bench/rss_breakdown.py); a free of an untracked block
 * beside a tracked one in its granule takes the locked lookup, which finds nothing. */
static inline uint32_t pf_objtable_bucket(uintptr_t addr)
{
    uint64_t window = (uint64_t)(addr >> 28) * 0x9E3779B97F4A7C15ull;
    return (uint32_t)((addr >> 8) + (window >> 20)) & ((1u << PF_OBJTABLE_FILTER_BITS) - 1);
}

/* The dense map of small Python objects (--exact; recorder/internal/pf_objdense.h): a 16-bit entry per
 * 32-byte granule, nonzero where an object starts, with the granule's half it starts in, in leaves of 256
 * MiB of address space under a directory (NULL until the map is first turned on: the sampled default mode
 * never has one). */
#define PF_DENSE_LEAF_SHIFT 28u
#define PF_DENSE_GRANULE_SHIFT 5u
#define PF_DENSE_LEAF_ENTRIES (1ull << (PF_DENSE_LEAF_SHIFT - PF_DENSE_GRANULE_SHIFT))
#define PF_DENSE_HALF_SHIFT 14u         /* the entry's bit: the object starts 16 bytes into its granule */
extern uint16_t **pf_objdense_dir PF_HIDDEN;

/* The index of addr's entry in its leaf, and 1 when entry e is that of an object starting at addr. */
static inline uint64_t pf_objdense_index(uintptr_t addr)
{
    return (addr >> PF_DENSE_GRANULE_SHIFT) & (PF_DENSE_LEAF_ENTRIES - 1);
}

static inline int pf_objdense_holds(uint16_t e, uintptr_t addr)
{
    return e && !((e ^ (uint32_t)addr << (PF_DENSE_HALF_SHIFT - 4)) & 1u << PF_DENSE_HALF_SHIFT);
}

/* 1 when the dense map holds an object at addr. */
static inline int pf_objdense_has(uintptr_t addr)
{
    uint16_t **d = __atomic_load_n(&pf_objdense_dir, __ATOMIC_ACQUIRE);
    if (PF_LIKELY(!d) || (addr & 15) || (addr >> 48))
        return 0;
    const uint16_t *leaf = __atomic_load_n(&d[addr >> PF_DENSE_LEAF_SHIFT], __ATOMIC_ACQUIRE);
    return leaf && pf_objdense_holds(__atomic_load_n(&leaf[pf_objdense_index(addr)], __ATOMIC_ACQUIRE), addr);
}

/* Gives back the dense map's all-zero entry pages of a span the program is about to unmap (pf_objdense.h). */
uint32_t pf_dense_release(uint64_t addr, uint64_t bytes) PF_HIDDEN;

/* 1 when addr may be tracked (the caller must then ask pf_objtable_remove/lookup), 0 when it surely is not.
 * The filter counts the objects of the hashed slots; one in the dense map is its own entry, which costs
 * its insert and its removal no atomic filter update (under --exact, most of a program's objects). */
static inline int pf_objtable_maybe(const void *addr)
{
    const uint8_t *f = pf_objtable_filter;
    if (!f)
        return 0;
    /* The entry first: a dense object moved to a hashed slot is counted in the filter before its entry is
     * cleared (pf_objtable.c), so a free that reads the cleared entry then reads the count. */
    return pf_objdense_has((uintptr_t)addr) ||
           __atomic_load_n(&f[pf_objtable_bucket((uintptr_t)addr)], __ATOMIC_RELAXED) != 0;
}


/* 1 when addr is the start of a tracked object (pf_objtable_maybe answers first, without a lock). */
int pf_recorder_tracks(const void *addr) PF_HIDDEN;

/* pf_recorder.c: the recorder's life in the process, in the order start-up calls it. */
typedef struct pf_writer_info {
    uint64_t max_bytes;         /* the file's size cap (0 or above PF_WRITER_MAX_BYTES: that) */
    uint64_t aggregate_after_bytes; /* the file size at which recording switches to aggregated (0: never) */
    void (*on_aggregate_size)(void);/* called once when the file passes it (pf_recorder_open sets it) */
    uint32_t flags;             /* PF_HDR_* */
    uint32_t python_hex;
    const char *python_version; /* "3.11.2" */
    uint32_t via_pid, via_child;/* the header's (this process only: a fork child's parent is this process) */
    uint64_t run_id;            /* the header's: the launcher's id of the run */
} pf_writer_info_t;

/* Reads the host name (PYFLOW_HOST, else gethostname) and the engine's labels from the environment, and
 * the host name found, cleaned for a file name (pf_labels.c). */
void pf_labels_init(void) PF_HIDDEN;
const char *pf_labels_host(void) PF_HIDDEN;
/* The tables and the profile file (pf_writer.h says which file). Returns 0, or -errno. */
int pf_recorder_open(const char *base_path, int is_root, const pf_writer_info_t *info) PF_HIDDEN;
/* After the PyMem domains are wrapped, before recording is enabled: object types, the native unwinder. */
void pf_recorder_prepare(void) PF_HIDDEN;
/* Just after recording was enabled: watch/ on this thread (a no-op unless asked for). */
void pf_recorder_started(pf_tls_t *t) PF_HIDDEN;
/* The fork handlers' recorder parts; the caller holds the guard across them. */
void pf_recorder_fork_prepare(void) PF_HIDDEN;
void pf_recorder_fork_parent(void) PF_HIDDEN;
void pf_recorder_fork_child(pf_tls_t *t) PF_HIDDEN;
/* 1 when ip lies in the native unwinder's code (its pipe's descriptors are moved out of the way). */
int pf_recorder_unwinder_caller(uint64_t ip) PF_HIDDEN;
/* Around a dlclose: before the real call (its pages of call frame information are not given back while it
 * runs, recorder/internal/pf_eh_pages.h), and after it with whether it unloaded an object; then the fast
 * native walk drops the unwind rules it keeps by address. */
void pf_recorder_code_unloading(void) PF_HIDDEN;
void pf_recorder_code_unloaded(int removed) PF_HIDDEN;
/* 1 when thread t holds a chunk of the current profile file (a vfork child may then write for it). */
int pf_recorder_thread_has_chunk(const pf_tls_t *t) PF_HIDDEN;
/* A SPAWN record (pf_format.h) of the calling thread's start of a child, with its Python stack. */
void pf_record_spawn(pf_tls_t *t, int kind, uint64_t child, uint64_t t_ns, uint32_t child_flags,
                     const char *command, uint16_t command_len) PF_HIDDEN;

/* --aggregate (pf_aggregate.c): the process is about to end (_exit): a last snapshot of what changed. */
void pf_aggregate_at_exit(pf_tls_t *t) PF_HIDDEN;

/* pf_notify.c: one line "pyflow: ..." on stderr, or to the launcher from a child process. */
void pf_log(const char *fmt, ...) PF_HIDDEN __attribute__((format(printf, 1, 2)));

/* pf_record.c: the slow paths. */
void pf_on_alloc_slow(pf_tls_t *t, void *p, size_t size, int domain) PF_HIDDEN PF_NOINLINE;
void pf_on_free_slow(pf_tls_t *t, void *p, int domain) PF_HIDDEN PF_NOINLINE;
/* As pf_on_free_slow; returns 1 and fills *obj when p was tracked (realloc needs the old block). */
int pf_on_free_slow_info(pf_tls_t *t, void *p, int domain, struct pf_objinfo *obj) PF_HIDDEN PF_NOINLINE;
/* Records an allocation exactly, whatever its size (GPU allocations: few, large, all wanted). */
void pf_on_alloc_exact(pf_tls_t *t, void *p, size_t size, int domain) PF_HIDDEN PF_NOINLINE;
/* pf_copies.c */
/* Records a copy exactly (CUDA copies), links its ends. Returns the copy id, or 0 when not recorded. */
uint64_t pf_on_copy_exact(pf_tls_t *t, void *dst, const void *src, size_t n, int kind) PF_HIDDEN PF_NOINLINE;
/* Writes a VERDICT record (pf_verdict_kind_t, PF_EVIDENCE_*) for a recorded copy. Caller holds the guard. */
void pf_copy_write_verdict(pf_tls_t *t, uint64_t copy_id, int verdict, uint64_t compared, uint32_t evidence) PF_HIDDEN;
void pf_on_copy_slow(pf_tls_t *t, void *dst, const void *src, size_t n, int kind) PF_HIDDEN PF_NOINLINE;
void pf_on_realloc_moved(pf_tls_t *t, void *dst, const struct pf_objinfo *old, size_t new_size) PF_HIDDEN PF_NOINLINE;
void pf_record_mark(pf_tls_t *t, int kind, uint64_t value, const char *note) PF_HIDDEN;
uint64_t pf_now_ns(void) PF_HIDDEN;
/* Common entry of the slow paths: per-thread start, the file generation, the finalization mark. */
void pf_enter_recording(pf_tls_t *t) PF_HIDDEN;

/* The fast-path test shared by every allocation hook: one unlikely branch into the slow path. */
static inline void pf_account_alloc(void *p, size_t size, int domain)
{
    pf_tls_t *t = &pf_tls;
    if (PF_UNLIKELY((t->sampler.countdown -= (int64_t)size) <= 0) && p)
        pf_on_alloc_slow(t, p, size, domain);
}

#endif /* PF_RECORDER_H */
