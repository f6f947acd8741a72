/* pf_rt_int.h - private to the runtime (libpyflow.so): thread-local state, the real allocator functions,
 * the slow paths the hooks fall into, and the process-wide configuration.
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
#ifndef PF_RT_INT_H
#define PF_RT_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pf_format.h"
#include "pf_pyframes.h"
#include "pf_sampler.h"

struct pf_objinfo;

#define PF_LIKELY(x) __builtin_expect(!!(x), 1)
#define PF_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define PF_HIDDEN __attribute__((visibility("hidden")))
#define PF_EXPORT __attribute__((visibility("default")))
#define PF_NOINLINE __attribute__((noinline))
/* pf_self_<fn>: this library's own definition of an exported hook, whatever another preload defines first
 * (the address dlsym hands out for a libc function looked up through a library handle, pf_libc_lookup.c). */
#define PF_SELF_ALIAS(fn) \
    extern __typeof__(fn) pf_self_##fn __attribute__((alias(#fn), visibility("hidden"), copy(fn)));

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
} pf_tls_t;

extern __thread pf_tls_t pf_tls __attribute__((tls_model("initial-exec"))) PF_HIDDEN;

/* The allocator functions the hooks forward to: whatever came next in the symbol search order
 * (libc, or a malloc that an existing LD_PRELOAD put in). */
typedef struct pf_real_fns {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*malloc_usable_size)(void *);
    void *(*mmap)(void *, size_t, int, int, int, off_t);
    void *(*mmap64)(void *, size_t, int, int, int, off_t);
    int (*munmap)(void *, size_t);
    void *(*mremap)(void *, size_t, size_t, int, ...);
    void *(*memcpy)(void *, const void *, size_t);
    void *(*memmove)(void *, const void *, size_t);
    void *(*mempcpy)(void *, const void *, size_t);
    void *(*memcpy_chk)(void *, const void *, size_t, size_t);
    void *(*memmove_chk)(void *, const void *, size_t, size_t);
    int (*pipe2)(int *, int);       /* pf_unwinder.c */
} pf_real_fns_t;

extern pf_real_fns_t pf_real PF_HIDDEN;

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
    uint64_t start_mono_ns;
    uint32_t pid;               /* getpid(), kept (also by the fork handler): it is a system call each time */
    int is_root;                /* the process the launcher started (its stderr is the user's terminal) */
    uint64_t run_id;            /* PYFLOW_RUN_ID: names the launcher's socket for messages (pf_notify.c) */
    int waste;                  /* untouched pages and content fingerprints at free (pf_content.c) */
} pf_config_t;

extern pf_config_t pf_cfg PF_HIDDEN;

/* pf_rt_init.c */
void pf_rt_resolve_real(void) PF_HIDDEN;     /* idempotent; safe to call from any hook */
int pf_rt_resolving(void) PF_HIDDEN;         /* 1 while dlsym runs: hooks must use the bootstrap heap */
void pf_log(const char *fmt, ...) PF_HIDDEN __attribute__((format(printf, 1, 2)));

/* pf_notify.c: hands a message (without "pyflow: " and newline) to the launcher. Returns 1 when sent. */
int pf_notify_launcher(const char *msg, size_t len) PF_HIDDEN;

/* pf_hooks_spawn.c: finds the real pthread_create, fork, posix_spawn and exec functions (constructor). */
void pf_spawn_resolve(void) PF_HIDDEN;

/* pf_libc_lookup.c: what dlsym(handle, name) answers for a libc function pyflow hooks, given glibc's answer
 * f: the hook when f is the very function the hook forwards to, else f. */
void *pf_libc_lookup(const char *name, void *f) PF_HIDDEN;

/* pf_bootstrap.c: the few bytes dlsym may ask for before the real allocator is known. */
void *pf_bootstrap_alloc(size_t size, size_t align) PF_HIDDEN;
int pf_bootstrap_owns(const void *p) PF_HIDDEN;

/* pf_record.c: the slow paths. */
void pf_on_alloc_slow(pf_tls_t *t, void *p, size_t size, int domain) PF_HIDDEN PF_NOINLINE;
void pf_on_free_slow(pf_tls_t *t, void *p, int domain) PF_HIDDEN PF_NOINLINE;
/* As pf_on_free_slow; returns 1 and fills *obj when p was tracked (realloc needs the old block). */
int pf_on_free_slow_info(pf_tls_t *t, void *p, int domain, struct pf_objinfo *obj) PF_HIDDEN PF_NOINLINE;
/* Records an allocation exactly, whatever its size (GPU allocations: few, large, all wanted). */
void pf_on_alloc_exact(pf_tls_t *t, void *p, size_t size, int domain) PF_HIDDEN PF_NOINLINE;
/* pf_copies.c */
/* Finds the interpreter's str and bytes types, so a copy's ends can say they are such objects. */
void pf_copies_find_types(void) PF_HIDDEN;
/* Records a copy exactly (CUDA copies), links its ends. Returns the copy id, or 0 when not recorded. */
uint64_t pf_on_copy_exact(pf_tls_t *t, void *dst, const void *src, size_t n, int kind) PF_HIDDEN PF_NOINLINE;
/* Writes a VERDICT record (pf_verdict_kind_t, PF_EVIDENCE_*) for a recorded copy. Caller holds the guard. */
void pf_copy_write_verdict(pf_tls_t *t, uint64_t copy_id, int verdict, uint64_t compared, uint32_t evidence) PF_HIDDEN;
void pf_on_copy_slow(pf_tls_t *t, void *dst, const void *src, size_t n, int kind) PF_HIDDEN PF_NOINLINE;
void pf_on_realloc_moved(pf_tls_t *t, void *dst, const struct pf_objinfo *old, size_t new_size) PF_HIDDEN PF_NOINLINE;
void pf_copy_verdict_on_free(pf_tls_t *t, struct pf_objinfo *obj) PF_HIDDEN;
/* What a str or bytes object is (pf_copy_end_t), else PF_COPY_END_OTHER. */
int pf_object_end_kind(const struct pf_objinfo *o) PF_HIDDEN;
/* pf_content.c: a PF_REC_CONTENT record for a tracked object being freed (untouched pages, fingerprint). */
void pf_content_on_free(pf_tls_t *t, const struct pf_objinfo *o) PF_HIDDEN;
void pf_record_thread_reset(pf_tls_t *t) PF_HIDDEN;
void pf_record_mark(pf_tls_t *t, int kind, uint64_t value, const char *note) PF_HIDDEN;
/* pf_api.c: the running counters of pyflow_api.h, kept by the slow paths (a recorded allocation, the free
 * of a tracked one). */
void pf_api_on_alloc(int domain, uint64_t est) PF_HIDDEN;
void pf_api_on_free(const struct pf_objinfo *obj) PF_HIDDEN;
uint64_t pf_now_ns(void) PF_HIDDEN;

/* The sampling mean and object threshold in effect for the configured ones: the mean raised 4^L-fold at
 * the profile's fill level L (pf_writer.h), and from level 1 on the threshold never below it. */
void pf_sampling_now(uint64_t base_mean, uint64_t base_threshold, uint64_t *mean, uint64_t *threshold) PF_HIDDEN;

/* pf_pymem.c */
int pf_pymem_install(void) PF_HIDDEN;        /* 0, or -1 when the interpreter lacks the API */
void pf_pymem_recheck(void) PF_HIDDEN;       /* re-wrap if start-up replaced the allocators (slow paths) */

/* Stack capture shared by ALLOC and COPY records: Python frames (with code ids) and native IPs. */
typedef struct pf_stack {
    uint16_t n_py;
    uint16_t n_native;
    uint8_t flags;                  /* PF_ALLOC_NO_PYSTATE / PF_ALLOC_TRUNCATED */
    pf_rec_pyframe_t py[PF_MAX_PY_FRAMES];
    uint64_t native[PF_MAX_NATIVE_FRAMES];
} pf_stack_t;

void pf_stack_capture(pf_tls_t *t, pf_stack_t *st) PF_HIDDEN;
void pf_stack_capture_python(pf_tls_t *t, pf_stack_t *st) PF_HIDDEN;   /* n_native = 0 */
static inline uint32_t pf_stack_bytes(const pf_stack_t *st)
{
    return (uint32_t)st->n_py * sizeof(pf_rec_pyframe_t) + (uint32_t)st->n_native * 8u;
}
void pf_stack_store(const pf_stack_t *st, void *dst) PF_HIDDEN;
/* Space for a record whose fixed part (after the header) is `fixed` bytes, followed by st as a stack
 * reference or inline (interning st first: pf_stacks.h). NULL when it cannot be written; *sid and *bytes
 * are what the record's fill and commit need. */
char *pf_record_reserve_stacked(pf_tls_t *t, const pf_stack_t *st, uint32_t fixed, uint32_t *sid,
                                uint32_t *bytes) PF_HIDDEN;
/* Common entry of the slow paths: per-thread start, the file generation, the finalization mark. */
void pf_enter_recording(pf_tls_t *t) PF_HIDDEN;

/* The fast-path test shared by every allocation hook: one unlikely branch into the slow path. */
static inline void pf_account_alloc(void *p, size_t size, int domain)
{
    pf_tls_t *t = &pf_tls;
    if (PF_UNLIKELY((t->sampler.countdown -= (int64_t)size) <= 0) && p)
        pf_on_alloc_slow(t, p, size, domain);
}

#endif /* PF_RT_INT_H */
