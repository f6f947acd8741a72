/* pf_watch.h - the watch engine: PMU samples choose memory words, hardware debug registers watch them, and
 * an access that repeats the same value is a redundant store or load (the Witch "CL" algorithm, as PieProf
 * applies it to Python). Also the capability probes behind `pyflow info`.
 *
 * Who calls what, and from where:
 *  - pf_watch_init: once, from the runtime's constructor after the profile is open.
 *  - pf_watch_thread_start: once per thread that should be watched (the runtime's first slow-path visit of
 *    each thread); pf_watch_thread_end before the thread exits.
 *  - pf_watch_drain: from a non-signal context of the same thread (the allocation slow path, thread end,
 *    process end). The signal handlers only fill preallocated per-thread storage; drain turns it into
 *    PF_REC_ACCESS_PAIR / PF_REC_WATCH_STATS records through the caller's sink (the writer and the code-id
 *    table take locks, so they must never be reached from a handler).
 *  - pf_watch_on_free: from every free/munmap hook, before the real free. It is one load while nothing is
 *    armed.
 *  - pf_watch_fork_child: in the child after fork (closes the parent's events, re-opens for this thread).
 *
 * The library never prints; failures come back as -errno with a reason string that names the fix.
 * Nothing here allocates with malloc: per-thread state is mmap'd in pf_watch_thread_start.
 */
#ifndef PF_WATCH_H
#define PF_WATCH_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "pf_format.h"    /* PF_WATCH_MODE_*, the records drain writes */

/* ---- capability probes (pyflow info) ---- */

typedef enum pf_probe_status { PF_PROBE_OK, PF_PROBE_SKIP, PF_PROBE_FAIL } pf_probe_status_t;

typedef struct pf_probe {
    const char *name;           /* short, stable: "perf_event_paranoid", "cycles sampling", ... */
    pf_probe_status_t status;
    char detail[256];           /* what was found, and for SKIP/FAIL what to change */
} pf_probe_t;

/* Runs every probe into out[0..max). Returns the number filled. */
size_t pf_watch_probe(pf_probe_t *out, size_t max);

/* ---- the engine ---- */

/* A Python frame as the runtime's frame reader returns it (same layout as pf_pyframe_t in
 * core/pf_pyframes.h, so the reader's capture() can be passed as is). */
typedef struct pf_watch_pyframe {
    const void *code;
    uint32_t lasti_bytes;
} pf_watch_pyframe_t;

typedef struct pf_watch_range {
    uintptr_t lo, hi;           /* [lo, hi) */
} pf_watch_range_t;

#define PF_WATCH_IGNORE_RANGES 4

/* Emulated watchpoints' default CPU budgets (emulate_budget_pct): the overhead targets, 1.15x for stores and
 * copies and 1.3x for loads, at the price of few watches a second where steps are slow (--watch=loads on
 * examples/watch/loop_invariant.py, a PVM guest: 1.2x and 3 watches at 10%, 1.6x and 7 at 20%; with no cap
 * 47x and 998 watches, 6x once instructions whose watches keep giving up were skipped) */
#define PF_WATCH_BUDGET_PCT 10
#define PF_WATCH_BUDGET_PCT_LOADS 20

typedef struct pf_watch_config {
    unsigned modes;             /* PF_WATCH_MODE_STORES | _LOADS | _COPIES (core/pf_format.h); without
                                   STORES and LOADS no sampling event is opened */
    const char *event;          /* libpfm4 event name ("cycles", "r0229", "LS_DISPATCH:STORE_DISPATCH");
                                   NULL: cycles, or task-clock where the machine has no PMU */
    uint64_t period;            /* events per sample; 0: chosen from perf_event_max_sample_rate */
    unsigned rate_hz;           /* target samples per second per thread when period = 0 (0: 1000) */
    int signo;                  /* sampling signal; 0: SIGRTMIN+5 */
    double float_rel_tol;       /* floats equal within this are PF_ACCESS_APPROX (0: 1e-6) */
    int keep_same_call;         /* 1: keep pairs inside one native call (programs without Python) */
    int emulate_breakpoints;    /* 1: where debug registers do not fire (some VMs), emulate them by
                                   single-stepping while a watch is armed: exact, but every instruction
                                   run while armed traps */
    uint64_t emulate_step_limit;/* emulation: single steps before an untouched watch is given up
                                   (0: 2,000,000) */
    unsigned emulate_budget_pct;/* emulation: most share of a thread's CPU time spent single-stepping,
                                   1..99; 0 or 100: no share kept (pf_watch_emu_chain_begin) */
    int emulate_pages;          /* with emulate_breakpoints: protect a watched word's page instead of
                                   single-stepping every instruction; only instructions that touch the
                                   page trap (pf_watch_pages.c). Needs SIGSEGV (the program's action is
                                   run for faults that are not watch's) */
    uint64_t seed;              /* reservoir randomness (0: fixed default, reproducible) */

    /* Called from signal handlers: must be async-signal-safe. All may be NULL. */
    int (*py_capture)(pf_watch_pyframe_t *out, int max, int *truncated); /* -1: no Python thread state */
    uint64_t (*thread_epoch)(void);     /* changes whenever the thread allocates (same-call test) */
    int (*hibernating)(void);           /* 1: inside pyflow, an allocator or dlopen: drop the sample */
    int (*native_unwind)(const void *ucontext, uint64_t *ips, int max); /* NULL, or -1: frame-pointer walk */
    /* A SIGTRAP or sampling signal that is not watch's own (the program's int3, a kill or sigqueue):
     * handed to the program's handler. NULL: the default action (a SIGTRAP then dumps core). */
    void (*foreign_signal)(int sig, siginfo_t *si, void *ucontext);

    /* Called outside signal handlers. May be NULL. */
    int (*is_object_header)(uintptr_t addr);    /* 1: addr is in a tracked Python object's header */
    size_t (*usable_size)(void *p);             /* malloc_usable_size of the real allocator */
    pf_watch_range_t ignore[PF_WATCH_IGNORE_RANGES]; /* code ranges never sampled (libpyflow's text) */
} pf_watch_config_t;

/* Where drain writes records. reserve/commit have pf_writer_reserve/commit's contract. */
typedef struct pf_watch_sink {
    void *ctx;
    uint32_t (*code_id)(void *ctx, const void *code);       /* 0 = unknown frame */
    void *(*reserve)(void *ctx, uint32_t bytes);             /* NULL = record dropped */
    void (*commit)(void *ctx, void *rec, uint16_t type, uint16_t aux, uint32_t bytes);
    uint64_t (*now_ns)(void *ctx);                           /* since the profile's start */
    /* Makes native IPs symbolizable (the runtime writes MODULE records). May be NULL. Called, like code_id,
     * for every frame of a pair before its record is reserved: both may write records of their own. */
    void (*note_native)(void *ctx, const uint64_t *ips, int n);
} pf_watch_sink_t;

/* Process totals (sums over threads; exact once the threads are quiet). */
typedef struct pf_watch_totals {
    uint64_t samples, samples_armed, dropped_filter, dropped_nomem, dropped_busy, dropped_reservoir;
    uint64_t traps, same_call, header_words, pairs_lost;
    uint64_t store_pairs, store_bytes, silent_store_bytes, approx_store_bytes;
    uint64_t load_pairs, load_bytes, redundant_load_bytes;
    uint64_t copy_watches, copy_writes;
    uint64_t period;
} pf_watch_totals_t;

/* Checks the machine (perf_event_open, breakpoint slots, signal handlers), encodes the sampling event and
 * installs the signal handlers. Does not watch any thread yet. Returns 0, or -errno with a sentence in
 * why[] saying what is missing and what to change (-EACCES/-EPERM: paranoid or seccomp; -ENOENT: no such
 * event; -EBUSY: the program has its own SIGTRAP handler; -ENOSYS: no debug-register breakpoints;
 * -EOPNOTSUPP: breakpoints open but never fire, as in VMs without debug-register virtualization). */
int pf_watch_init(const pf_watch_config_t *cfg, char *why, size_t why_size);

/* Starts sampling and breakpoint slots on the calling thread. Returns 0, -EALREADY when already started,
 * or -errno with why[] filled (the thread then runs unwatched). */
int pf_watch_thread_start(char *why, size_t why_size);

/* Stops watching the calling thread, drains what it found into sink (may be NULL) and frees its state. */
void pf_watch_thread_end(const pf_watch_sink_t *sink);

/* Writes the calling thread's pending pairs and its running totals into sink. Call only outside signal
 * handlers. Returns the number of records written, 0 when there was nothing, or -ENOSPC when the sink
 * refused a record (the rest stay pending). */
int pf_watch_drain(const pf_watch_sink_t *sink);

/* 1 when the calling thread has pairs waiting for pf_watch_drain (cheap: one TLS load and a compare). */
int pf_watch_pending(void);

/* Nonzero when the calling thread may have something for its next non-signal visit (the runtime's slow
 * path): pairs its handlers queued, a copy watch armed (to expire), a copy left unwatched because SIGTRAP
 * is blocked. Set by watch/ (in its handlers too); cleared by the caller before it drains and expires,
 * then set again by pf_watch_needs_visit's answer. Lets the record path skip the visit with one TLS load
 * (every event of an --exact run comes there). */
extern __thread uint32_t pf_watch_attention __attribute__((visibility("hidden"), tls_model("initial-exec")));

/* 1 while the calling thread has pairs pending or a copy watch armed. */
int pf_watch_needs_visit(void);

/* Nonzero while the calling thread starts a thread or a process (the runtime's pthread_create, fork and
 * posix_spawn hooks set it around the real call): it arms no watch meanwhile. glibc blocks every signal
 * there and writes the new thread's descriptor (or the spawn child's stack) with them blocked, and a
 * fault on a page watch had protected was forced and killed the program (emulated watchpoints: a store
 * sampled in pthread_create armed the new thread's descriptor page; integration.robustness.fd_limit,
 * 200 threads under load). */
extern __thread uint32_t pf_watch_spawning __attribute__((visibility("hidden"), tls_model("initial-exec")));

/* --watch=copies: puts write watches on the first words of dst and src of a copy just made (and on their
 * last words where slots are free), so that the first write that changes one is caught with its call
 * path and drained as a PF_REC_COPY_WRITE for copy_id. A watch lasts until that write, a free of the word,
 * eviction by a newer copy's watch, or PF_WATCH_COPY_LIFETIME_NS (pf_watch_copies_expire); only the
 * calling thread's writes are seen (debug registers are per thread). Call from a non-signal context of a
 * watched thread, after the copy. Returns the number of words armed (0: copies mode off, the thread
 * unwatched, or no slot free). */
int pf_watch_copy(uint64_t copy_id, const void *dst, const void *src, size_t n);

/* 1 once a copy went unwatched because its thread blocks SIGTRAP, through which watchpoints report (a
 * thread that blocks every signal): for the caller to say so once (and set it to 2). */
extern int pf_watch_copies_blocked;

/* A copy's watch ends this long after it was armed. Writes that prove a copy needed mostly come right after
 * it; one nobody wrote by then is left to the byte comparison at its free. The bound matters where armed
 * debug registers cost the whole thread something: in this project's KVM guests page faults take 1.5x
 * (4 KiB) to 10x (huge pages) as long while one is armed, and a kept copy nobody writes held its watch for the rest of the run
 * (numpy temporaries after np.array(a): 1.41x the time of pyflow without watch). */
#define PF_WATCH_COPY_LIFETIME_NS (50ull * 1000 * 1000)

/* Ends the calling thread's copy watches older than PF_WATCH_COPY_LIFETIME_NS. Cheap when none is due (a
 * TLS load and a compare, then a clock read only while some copy watch is armed). Call from a non-signal
 * context, as the runtime's slow paths are. */
void pf_watch_copies_expire(void);

/* Nonzero while any watchpoint of any thread is armed. Read by the inline free check below. */
extern unsigned pf_watch_armed_count;

void pf_watch_on_free_slow(void *p, size_t size);

/* Disarms every watchpoint inside [p, p+size) before the memory can be reused. size 0 = unknown (a free):
 * the config's usable_size is asked when an armed word lies above p. */
static inline void pf_watch_on_free(void *p, size_t size)
{
    if (__builtin_expect(__atomic_load_n(&pf_watch_armed_count, __ATOMIC_RELAXED) != 0, 0))
        pf_watch_on_free_slow(p, size);
}

/* In a fork child: closes the parent's events without touching them, drops pending pairs, and restarts
 * watching on the calling (only) thread. Returns 0 or -errno. */
int pf_watch_fork_child(void);

/* Stops sampling on every thread (process end). Threads keep their state until pf_watch_thread_end. */
void pf_watch_stop(void);

/* Sums the totals of every thread that was watched (tests, the end-of-run note). */
void pf_watch_get_totals(pf_watch_totals_t *out);

/* The sampling signal (SIGRTMIN+5 unless configured), or 0 before a successful pf_watch_init. */
int pf_watch_signal(void);

/* 1 when watchpoints are page protections (emulate_pages): SIGSEGV is then watch's too. */
int pf_watch_pages_on(void);

/* Page-protection watches and system calls: the kernel's own access to a protected page fails the call
 * with EFAULT, where the program's would fault to watch's handler. So a hook notes pf_watch_io_mark()
 * before its call, hands each buffer the kernel reads or writes to pf_watch_pages_before_io, and calls
 * pf_watch_io_done(mark) after: the watches on those pages end, and no watch armed meanwhile (by a sample
 * on any thread) protects them before the call returns (pf_watch_io.c). One load while watch protects no
 * pages, one thread-local load after the call. */
extern int pf_watch_io_fencing;
extern __thread unsigned pf_watch_io_depth __attribute__((tls_model("initial-exec")));
void pf_watch_io_fence_slow(const void *p, size_t n);
void pf_watch_io_done_slow(unsigned mark);

static inline unsigned pf_watch_io_mark(void) { return pf_watch_io_depth; }

/* 1 while page watches may protect pages: the hooks' one load (a hook whose buffers need working out,
 * sendmsg's or readdir's, asks first). */
static inline int pf_watch_io_on(void)
{
    return __builtin_expect(__atomic_load_n(&pf_watch_io_fencing, __ATOMIC_RELAXED) != 0, 0);
}

static inline void pf_watch_pages_before_io(const void *p, size_t n)
{
    if (pf_watch_io_on())
        pf_watch_io_fence_slow(p, n);
}

/* A call that must stay a tail call (dlopen): the watches on [p, p+n)'s pages end, but nothing keeps a
 * watch armed meanwhile off them (docs/limitations.md). */
void pf_watch_io_release_slow(const void *p, size_t n);
static inline void pf_watch_pages_release(const void *p, size_t n)
{
    if (pf_watch_io_on())
        pf_watch_io_release_slow(p, n);
}

static inline void pf_watch_io_done(unsigned mark)
{
    if (__builtin_expect(pf_watch_io_depth != mark, 0))
        pf_watch_io_done_slow(mark);
}

/* Threads that block SIGSEGV (pf_watch_masked.c): the kernel kills a process whose fault on a protected
 * page arrives blocked, so no page watch protects a page while any thread does. The signal hooks call
 * pf_watch_masked_before(how, set) before a pthread_sigmask or sigprocmask call and
 * pf_watch_masked_after() after it; pthread_create hands its start routine and argument to
 * pf_watch_masked_birth, which counts a thread that will start so (and wraps its start), and gives the
 * handle it returned to pf_watch_masked_unborn when the start failed. One load each while watch protects
 * no pages. */
void pf_watch_masked_before_slow(int how, const sigset_t *set);
void pf_watch_masked_after_slow(void);
void *pf_watch_masked_birth_slow(const pthread_attr_t *attr, void *(**fn)(void *), void **arg);
void pf_watch_masked_unborn(void *birth);

static inline void pf_watch_masked_before(int how, const sigset_t *set)
{
    if (pf_watch_io_on())
        pf_watch_masked_before_slow(how, set);
}

static inline void pf_watch_masked_after(void)
{
    if (pf_watch_io_on())
        pf_watch_masked_after_slow();
}

static inline void *pf_watch_masked_birth(const pthread_attr_t *attr, void *(**fn)(void *), void **arg)
{
    return pf_watch_io_on() ? pf_watch_masked_birth_slow(attr, fn, arg) : NULL;
}

/* 1 once a thread's blocking SIGSEGV left page watches blind or refused one: for the caller to say so once
 * (and set it to 2), as pf_watch_copies_blocked. */
extern int pf_watch_masked_seen;

/* The sampling event actually used ("cycles", "task-clock", ...) and its period; "" before init. */
const char *pf_watch_event_name(uint64_t *period);

#endif /* PF_WATCH_H */
