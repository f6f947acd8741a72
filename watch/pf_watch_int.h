/* pf_watch_int.h - private to watch/: the decoder, the per-thread state the signal handlers own, the
 * breakpoint slots, value comparison and record encoding.
 *
 * Invariants:
 *  - A thread's pf_watch_thread_t is mmap'd by pf_watch_thread_start and written only by that thread (its
 *    handlers and its non-signal code). `busy` is raised around every section that a handler must not
 *    interrupt (the handlers then count the sample as busy and return).
 *  - The pair ring is single-producer (handlers) / single-consumer (drain), both on the owning thread:
 *    head is written only by handlers, tail only by drain.
 *  - A slot's watched word is registered in the global armed table (pf_watch_slots.c) while armed, so a
 *    free on any thread can find and disarm it.
 */
#ifndef PF_WATCH_INT_H
#define PF_WATCH_INT_H

#include <signal.h>
#include <string.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "pf_watch.h"

/* watch never calls libpyflow.so's exported copy hooks: its copies run inside signal handlers and under its
 * own locks, where the copy hook's sampled path would record the copy and start the thread's watch (a
 * page-watch fault reading /proc/self/maps under the pages lock then waited on the slots lock, which a
 * thread that was ending held while it waited on the pages lock). Every memcpy and memmove here, written
 * out or emitted for a structure copy, is bound to pf_watch_mem.c's plain loops: watch copies a few bytes
 * at a time (an instruction, a watched word, a line of the maps). */
void *memcpy(void *dst, const void *src, size_t n) __asm__("pf_watch_memcpy") __attribute__((visibility("hidden")));
void *memmove(void *dst, const void *src, size_t n) __asm__("pf_watch_memmove") __attribute__((visibility("hidden")));

#define PF_WATCH_HIDDEN __attribute__((visibility("hidden")))
#define PF_WATCH_UNLIKELY(x) __builtin_expect(!!(x), 0)

#define PF_WATCH_MAX_SLOTS 4        /* x86 has 4 debug address registers */
#define PF_WATCH_CTX_PY 24          /* Python frames kept per access */
#define PF_WATCH_CTX_NATIVE 16      /* native IPs kept per access */
#define PF_WATCH_RING 64            /* pending pairs per thread (a power of two) */
#define PF_WATCH_STEP_LIMIT 64      /* single steps from a sample to a memory instruction */
#define PF_WATCH_SAME_CALL_MAX 8    /* same-call traps before a watch gives up */
#define PF_WATCH_MAX_THREADS 128    /* threads watched at once (global armed table = 4 per thread) */

#define PF_WATCH_EFL_TF 0x100       /* the trap flag in EFLAGS: single-step */

#ifndef TRAP_PERF
#define TRAP_PERF 6                 /* si_code of a perf sigtrap (not in glibc 2.36 headers) */
#endif

/* ---- pf_decode.c ---- */

/* The registers an effective address may use: the 16 general registers in x86 encoding order
 * (rax rcx rdx rbx rsp rbp rsi rdi r8..r15), plus the FS/GS bases (not in the ucontext). */
typedef struct pf_watch_regs {
    uint64_t gpr[16];
    uint64_t fs_base, gs_base;
} pf_watch_regs_t;

#define PF_WATCH_ACC_LOAD 0x1u
#define PF_WATCH_ACC_STORE 0x2u
#define PF_WATCH_ACC_FLOAT 0x4u     /* the operand holds floating-point elements */

typedef struct pf_watch_access {
    uint64_t ea;                /* effective address of the one explicit memory operand */
    uint32_t size;              /* operand bytes (may exceed 8: vectors) */
    uint32_t kind;              /* PF_WATCH_ACC_* */
    uint32_t insn_len;
    uint32_t elem_size;         /* bytes per element (floats: 4 or 8) */
} pf_watch_access_t;

/* Decoder status codes (negative), counted separately by the engine. */
#define PF_WATCH_DEC_NOMEM -1       /* decoded, but no single explicit memory operand (or lea/MIB/VSIB) */
#define PF_WATCH_DEC_BAD -2         /* not a valid instruction in these bytes */

/* Loads libZydis and initializes the shared decoder (64-bit mode); not in a signal handler. Returns 0, or
 * -errno with pf_watch_decode_failure saying why (the library missing, or Zydis refusing). */
int pf_watch_decode_init(void) PF_WATCH_HIDDEN;
const char *pf_watch_decode_failure(void) PF_WATCH_HIDDEN;

/* Decodes the instruction at code[0..len) that runs at address pc and computes its memory operand's
 * effective address from regs. Returns 0 and fills *out, or PF_WATCH_DEC_*. Async-signal-safe. */
int pf_watch_decode(const uint8_t *code, size_t len, uint64_t pc, const pf_watch_regs_t *regs,
                    pf_watch_access_t *out) PF_WATCH_HIDDEN;

/* The store of one iteration of a string instruction (movs, stos, with or without rep): [rdi], element wide.
 * A single step traps after each iteration, so emulated watches see what memcpy/memset's `rep movsb` and
 * `rep stosb` write. Returns 0 and fills *out, or PF_WATCH_DEC_*. Async-signal-safe. */
int pf_watch_decode_string_store(const uint8_t *code, size_t len, uint64_t pc, const pf_watch_regs_t *regs,
                                 pf_watch_access_t *out) PF_WATCH_HIDDEN;

/* After a trap-after watchpoint hit at next_pc: finds the instruction that ended at next_pc and accessed
 * [addr, addr+len), by decoding backwards. before[] holds the 15 bytes before next_pc. Returns
 * PF_WATCH_ACC_LOAD or PF_WATCH_ACC_STORE (both bits for read-modify-write), or 0 when unknown
 * (no candidate, or candidates disagree). */
unsigned pf_watch_decode_prev(const uint8_t before[15], uint64_t next_pc, const pf_watch_regs_t *regs,
                              uint64_t addr, uint32_t len) PF_WATCH_HIDDEN;

/* Fills regs from a signal context (FS/GS bases passed in: a ucontext does not hold them). */
void pf_watch_regs_from_uc(const ucontext_t *uc, uint64_t fs_base, uint64_t gs_base,
                           pf_watch_regs_t *regs) PF_WATCH_HIDDEN;

/* ---- pf_watch_value.c ---- */

/* Verdict of a repeated access: 0 = values differ, PF_ACCESS_REDUNDANT = same bytes,
 * PF_ACCESS_REDUNDANT|PF_ACCESS_APPROX = floats within rel_tol (elem_size 4 or 8, len a multiple). */
unsigned pf_watch_value_same(const uint8_t *a, const uint8_t *b, uint32_t len, uint32_t float_elem,
                             double rel_tol) PF_WATCH_HIDDEN;

/* Reservoir replacement (Witch): returns 1 when a slot that survived n samples should be replaced by the
 * new one, with probability 1/(1+n). *rng is xorshift64 state (never 0). */
int pf_watch_reservoir_pick(uint64_t *rng, uint32_t n) PF_WATCH_HIDDEN;

/* One access context, as captured in a handler: raw code pointers (turned into ids at drain). */
typedef struct pf_watch_ctx {
    uint16_t n_py, n_native;
    uint8_t no_pystate, truncated;
    pf_watch_pyframe_t py[PF_WATCH_CTX_PY];
    uint64_t native[PF_WATCH_CTX_NATIVE];
} pf_watch_ctx_t;

/* pf_watch_pair_t.kind of a caught write to a copy (the others are pf_access_kind_t) */
#define PF_WATCH_KIND_COPY_WRITE 0x80u

/* A resolved watch waiting for drain: an access pair, or a copy write (first_valid 0, repeat = the
 * writer, copy_id and flags = PF_COPY_WRITE_*). */
typedef struct pf_watch_pair {
    uint64_t t_ns;              /* CLOCK_MONOTONIC raw; drain converts with the sink's clock */
    uint64_t addr;
    uint64_t credited;
    uint64_t copy_id;
    uint8_t len, flags, kind, first_valid;
    pf_watch_ctx_t first, repeat;
} pf_watch_pair_t;

/* Bytes of the ACCESS_PAIR (or COPY_WRITE) record for pair p (header included, 8-aligned). */
uint32_t pf_watch_pair_bytes(const pf_watch_pair_t *p) PF_WATCH_HIDDEN;

/* Resolves every code id of pair p and notes its native IPs through sink, so that encoding writes nothing
 * else while its record is reserved. */
void pf_watch_pair_prepare(const pf_watch_pair_t *p, const pf_watch_sink_t *sink) PF_WATCH_HIDDEN;

/* Encodes pair p into rec (pf_watch_pair_bytes(p) bytes, header left for commit); code ids via
 * code_id(ctx, code). */
void pf_watch_pair_encode(const pf_watch_pair_t *p, void *rec,
                          uint32_t (*code_id)(void *ctx, const void *code), void *ctx) PF_WATCH_HIDDEN;

/* ---- per-thread state (pf_watch_engine.c) ---- */

enum { PF_SLOT_FREE = 0, PF_SLOT_AWAIT_FIRST = 1, PF_SLOT_WATCHING = 2 };

typedef struct pf_watch_slot {
    int fd;                     /* PERF_TYPE_BREAKPOINT event, opened disabled at thread start */
    int global;                 /* index in the global armed table */
    uint32_t state;             /* PF_SLOT_* */
    uint64_t armed_ns;          /* _COPIES: when it was armed (pf_watch_mono_ns): its age, for the oldest to
                                   give way to a newer copy's watch and for its lifetime */
    uint32_t survived;          /* samples this watch survived (reservoir n) */
    uint32_t same_call;         /* same-call traps so far */
    uint32_t mode;              /* PF_WATCH_MODE_STORES, _LOADS or _COPIES */
    uint32_t len;
    uint32_t float_elem;        /* 4/8 when the first access was floating point, else 0 */
    uint64_t addr;
    uint64_t expect_pc;         /* trap PC of the sampled access itself */
    uint64_t epoch;
    uint8_t value[8];
    uint64_t copy_id;           /* _COPIES: the copy, and PF_COPY_WRITE_DST when the word is its destination */
    uint32_t copy_end;
    pf_watch_ctx_t first;
} pf_watch_slot_t;

/* ---- pf_pmu_ring.c: samples that carry their data address ---- */

#define PF_WATCH_RING_PAGES 1       /* data pages of a thread's sample ring (a power of two) */

typedef struct pf_watch_ring {
    void *base;                 /* the perf_event_mmap_page, then the data pages; NULL: no ring */
    size_t len;
} pf_watch_ring_t;

/* Maps the ring of a sampling fd. Returns 0, or -1 with errno (EPERM: perf_event_mlock_kb used up). */
int pf_watch_ring_map(int fd, pf_watch_ring_t *r) PF_WATCH_HIDDEN;
void pf_watch_ring_unmap(pf_watch_ring_t *r) PF_WATCH_HIDDEN;

/* Consumes every record in the ring; the newest PERF_RECORD_SAMPLE's ip and data address go to *ip and
 * *addr. Returns 1 when there was one, else 0. Async-signal-safe (the owning thread's handler). */
int pf_watch_ring_last(pf_watch_ring_t *r, uint64_t *ip, uint64_t *addr) PF_WATCH_HIDDEN;

/* The parser under pf_watch_ring_last, on a data area of size bytes (a power of two) between tail and head
 * (free-running offsets, as the kernel keeps them): 1 and the newest sample's ip/addr, or 0; *count (may be
 * NULL) counts the samples. Exposed for tests. */
typedef struct pf_watch_ring_count {
    uint64_t lo, hi;            /* in: a range of data addresses */
    unsigned samples, with_addr, in_range;  /* out: samples, those with a data address, those in [lo, hi) */
} pf_watch_ring_count_t;
int pf_watch_ring_parse(const uint8_t *data, uint64_t size, uint64_t tail, uint64_t head, uint64_t *ip,
                        uint64_t *addr, pf_watch_ring_count_t *count) PF_WATCH_HIDDEN;

/* Consumes the ring like pf_watch_ring_last, counting into *count. */
int pf_watch_ring_count(pf_watch_ring_t *r, pf_watch_ring_count_t *count) PF_WATCH_HIDDEN;

/* ---- pf_watch_futile.c: emulation skips instructions whose watches keep giving up; the skid walk, sampled
 * pcs from which it keeps reaching its step limit without an access of the wanted kind ---- */

#define PF_WATCH_FUTILE_BITS 6      /* 64 entries a thread */
typedef struct pf_watch_futile {
    uint64_t pc;                /* the sampled access's trap pc (slot.expect_pc) */
    uint16_t give_ups;          /* watches from it that reached the step limit */
    uint16_t repeats;           /* watches from it whose word was touched again */
    uint32_t skipped;           /* samples skipped since its last try */
} pf_watch_futile_t;

/* 1 when a sample at pc should not be watched (counted as filtered): its watches gave up again and again
 * and never saw a repeat; now and then 0, to try it once more. */
int pf_watch_futile_skip(pf_watch_futile_t *tab, uint64_t pc) PF_WATCH_HIDDEN;
void pf_watch_futile_gave_up(pf_watch_futile_t *tab, uint64_t pc) PF_WATCH_HIDDEN;
void pf_watch_futile_repeated(pf_watch_futile_t *tab, uint64_t pc) PF_WATCH_HIDDEN;

typedef struct pf_watch_thread {
    volatile int busy;          /* a non-signal section or a handler is running */
    int sample_fd;
    /* the sampling's own cost (below, pf_watch_sample_widen): times the thread's period was doubled from
     * the configured one, when the last handler returned, crowded samples in a row, and whether one did
     * its work since the last widening */
    uint8_t sample_doublings;
    uint64_t sample_exit_ns;
    uint32_t crowded;
    int sample_worked;
    int n_slots;
    int tid;
    int fds_reserved;           /* of the process's descriptor budget for watch (pf_watch_engine.c) */
    pf_watch_ring_t sample_ring;    /* samples with data addresses (PEBS, IBS, page faults); else unmapped */
    uint64_t fs_base, gs_base;
    uintptr_t stack_lo, stack_hi, alt_lo, alt_hi;
    uint64_t rng;
    uint64_t copy_expiry_ns;    /* when its oldest copy watch ends (pf_watch_copies_expire); 0: none armed */
    /* the step walk from a sample to the next memory instruction */
    int walking;
    int walk_steps;
    uint64_t walk_from;         /* the sampled pc it started at */
    pf_watch_futile_t walk_futile[1 << PF_WATCH_FUTILE_BITS];  /* sampled pcs whose walks keep finding none */
    /* breakpoint emulation (cfg.emulate_breakpoints): the slot the instruction being stepped accesses */
    int emu_pending;
    uint64_t emu_steps;         /* steps since the last emulated hit */
    uint64_t chain_start_ns;    /* emulation's budget: thread CPU time when the last single-step chain began, */
    uint64_t chain_end_ns;      /* when it ended, */
    uint64_t pages_cost_ns;     /* page watches: CPU time of this chain's fault cycles (pf_watch_pages.c) */
    uint32_t pages_faults;      /* and its faults that hit no watched word */
    int chain_stepping;         /* and whether it still steps (pf_watch_emu_chain_begin) */
    pf_watch_futile_t futile[1 << PF_WATCH_FUTILE_BITS];    /* emulation: instructions not worth a watch */
    pf_watch_slot_t slot[PF_WATCH_MAX_SLOTS];
    /* pending pairs */
    volatile uint32_t head, tail;
    pf_watch_pair_t ring[PF_WATCH_RING];
    pf_watch_totals_t st;       /* this thread's counters */
    uint64_t st_written_traps;  /* traps at the last STATS record (skip unchanged) */
    int st_written_final;       /* a STATS record went out after pf_watch_stop */
    struct pf_watch_thread *next_all;   /* list of every thread's state (totals) */
} pf_watch_thread_t;

/* ---- pf_watch_handlers.c: emulation's CPU budget ---- */

/* Emulated watchpoints single-step the thread from the sample or copy that arms a word until the word is
 * hit, the step limit gives up, or nothing is armed: a chain. Returns 1 and starts the chain's clock when
 * the budget allows one now, else 0. bursty: a source that needs the rate_hz limit too (page faults,
 * copies), unlike a clock whose period already says how often. */
int pf_watch_emu_chain_begin(pf_watch_thread_t *t, int bursty) PF_WATCH_HIDDEN;

/* ---- pf_watch_engine.c: the sampling's own cost ----
 * A sample's signal and handler run on the thread's own time, which the sampling event counts too. In a VM
 * they can cost more than a short period (tens of microseconds with page watches: mprotect, the thread's
 * CPU clock), and then the next overflow comes while the handler runs: the thread does nothing but take
 * samples, and the queued signals reach the user's limit of pending signals, where the kernel falls back
 * to a plain SIGIO that kills the program. The handler reads the wall clock at entry and exit: the wall
 * time between a handler's return and the next sample's entry is at least the thread's CPU time between
 * them, the period minus what the last sample cost (its handler, and the steps and faults it started), so
 * a gap shorter than half the period proves that sampling took more than half the thread's time. Two such
 * samples in a row double the thread's period (up to PF_WATCH_SAMPLE_WIDEN_MAX times the configured one,
 * never narrowed again); a sample that came within a quarter of the period is dropped before its work. */
#define PF_WATCH_SAMPLE_WIDEN_MAX 1024u
/* t's period now, and the shortest wall time between one sample's handler and the next while sampling
 * takes at most half of t's time. */
uint64_t pf_watch_sample_period(const pf_watch_thread_t *t) PF_WATCH_HIDDEN;
uint64_t pf_watch_sample_floor_ns(const pf_watch_thread_t *t) PF_WATCH_HIDDEN;
/* Doubles t's period (PERF_EVENT_IOC_PERIOD): async-signal-safe. */
void pf_watch_sample_widen(pf_watch_thread_t *t) PF_WATCH_HIDDEN;

/* The decision, on thread CPU times: 1 when a chain may begin at now, the last one having run from
 * last_start to last_end (0, 0: none yet), at least min_gap_ns after it ended and with stepping kept
 * within budget_pct of the time (0 or 100: no share kept). */
int pf_watch_emu_budget_allows(uint64_t now, uint64_t last_start, uint64_t last_end, uint64_t min_gap_ns,
                               unsigned budget_pct) PF_WATCH_HIDDEN;

/* The chain ended (nothing armed any more, or it armed nothing): its CPU time counts against the next. */
void pf_watch_emu_chain_end(pf_watch_thread_t *t) PF_WATCH_HIDDEN;
/* The same for a chain whose last watch ran out ago_ns of wall time before now, seen only now (the
 * thread's first visit after it): it ended then, not at this visit (never before it began). */
void pf_watch_emu_chain_end_ago(pf_watch_thread_t *t, uint64_t ago_ns) PF_WATCH_HIDDEN;

/* ---- pf_watch_pages.c: watchpoints by page protection (cfg.emulate_pages) ---- */

#define PF_WATCH_PAGE 4096ull

/* Slots with a protected page: 0 = every fault is the program's. */
extern unsigned pf_watch_pages_active PF_WATCH_HIDDEN;

/* A page watch's chain gives up after this much of the thread's CPU time without a hit (a word nobody
 * touches again costs nothing, but holds the thread's one chain). */
#define PF_WATCH_PAGES_CHAIN_NS (20ull * 1000 * 1000)
/* ... or after this many faults of its thread on its pages that touched other words (a word on a page the
 * interpreter uses all the time: a pymalloc pool) */
#define PF_WATCH_PAGES_FAULT_LIMIT 512u

/* Protects the page of [addr, addr+len) for global slot g (rw: no access, else read-only). Returns 0, or
 * -errno (EACCES: not a private writable mapping). */
int pf_watch_pages_arm(int g, uint64_t addr, uint32_t len, int rw) PF_WATCH_HIDDEN;
/* Ends global slot g's protection (idempotent); the page gets its protection back with its last watch. */
void pf_watch_pages_disarm(int g) PF_WATCH_HIDDEN;
/* For tests: 1 when a read-write watch may make addr's page no-access in a process whose /proc/self/maps
 * reads maps (lines ending in newlines), 0 when not (a page that may hold a futex word), -1: no mapping. */
int pf_watch_pages_rw_allowed_in(const char *maps, uint64_t addr) PF_WATCH_HIDDEN;
/* 1 while the calling thread steps over a fault on a watched page; then _step_done re-protects it. */
int pf_watch_pages_stepping(void) PF_WATCH_HIDDEN;
void pf_watch_pages_step_done(pf_watch_thread_t *t) PF_WATCH_HIDDEN;
/* At the end of the step's SIGTRAP handler: the program's own mask back in uc, for the return. */
void pf_watch_pages_step_mask(ucontext_t *uc) PF_WATCH_HIDDEN;
void pf_watch_segv_handler(int sig, siginfo_t *si, void *ucv) PF_WATCH_HIDDEN;
/* Gives every watched page in [lo, hi) the protection its watches need now, a fence counted
 * (pf_watch_io.c); takes the page lock only when such a page is watched. */
void pf_watch_pages_reapply(uint64_t lo, uint64_t hi) PF_WATCH_HIDDEN;
/* Measures a fault cycle's CPU cost, what each fault charges a chain (handlers installed, no thread yet). */
void pf_watch_pages_calibrate(void) PF_WATCH_HIDDEN;
/* 1 while a thread holds the page lock (tests: no handler may ever run on the thread that holds it). */
int pf_watch_pages_locked(void) PF_WATCH_HIDDEN;
/* A signal that is not watch's: the program's action (the runtime's), else the default. */
void pf_watch_foreign_signal(int sig, siginfo_t *si, void *ucv) PF_WATCH_HIDDEN;
/* The armed slot of t that the instruction about to run (at uc's pc) touches: a store for a write watch,
 * any access for a read-write one; -1: none, or not decodable (pf_watch_handlers.c). */
int pf_watch_slot_touched(pf_watch_thread_t *t, const ucontext_t *uc) PF_WATCH_HIDDEN;
/* Ends every page watch of t that no access repeated in time (pf_watch_handlers.c). */
void pf_watch_pages_give_up(pf_watch_thread_t *t) PF_WATCH_HIDDEN;

/* ---- pf_watch_io.c: the pages of system calls under way, which no page watch protects ---- */

/* From now on, the I/O hooks fence their calls' buffers (set before the first page watch is armed). */
void pf_watch_io_fencing_on(void) PF_WATCH_HIDDEN;
/* 1 when a call under way reads or writes page (page lock held by the caller). */
int pf_watch_io_fenced(uint64_t page) PF_WATCH_HIDDEN;
/* In a fork child: the fences of the threads that did not come along come down. */
void pf_watch_io_fork_child(void) PF_WATCH_HIDDEN;

/* ---- pf_watch_masked.c: threads that block SIGSEGV ---- */

/* Counts the calling thread if it blocks SIGSEGV now (the process's start), and readies thread ends. */
void pf_watch_masked_init(void) PF_WATCH_HIDDEN;
/* 1 while a thread blocks SIGSEGV (or is about to): no page may be protected (page lock held or not). */
int pf_watch_masked(void) PF_WATCH_HIDDEN;
/* 1 (and the run says so) when a new page watch must not be armed now, pf_watch_masked(). */
int pf_watch_masked_refuses(void) PF_WATCH_HIDDEN;
/* In a fork child: only this thread's count stays. */
void pf_watch_masked_fork_child(void) PF_WATCH_HIDDEN;

/* The thread's signal mask by the system call itself: watch's own masking never reaches the runtime's
 * pthread_sigmask hook, which counts the program's (pf_watch_masked.c). */
static inline int pf_watch_sigmask_raw(int how, const sigset_t *set, sigset_t *old)
{
    return (int)syscall(SYS_rt_sigprocmask, how, set, old, _NSIG / 8);
}

/* ---- pf_watch_slots.c: breakpoint events and the global armed table ---- */

/* Opens up to PF_WATCH_MAX_SLOTS disabled breakpoint events on the calling thread. Returns the number
 * opened (0..4); *err gets errno of the first failure. */
int pf_watch_slots_open(pf_watch_thread_t *t, int *err) PF_WATCH_HIDDEN;

/* Arms slot i of t on [addr, addr+len) (len 1/2/4/8, aligned), W or W|R. Returns 0, or -errno. */
int pf_watch_slot_arm(pf_watch_thread_t *t, int i, uint64_t addr, uint32_t len, int rw) PF_WATCH_HIDDEN;

/* Disarms slot i (the event stays open, disabled). Returns 0 or -errno. */
int pf_watch_slot_disarm(pf_watch_thread_t *t, int i) PF_WATCH_HIDDEN;

void pf_watch_slots_close(pf_watch_thread_t *t) PF_WATCH_HIDDEN;

/* Checks that a breakpoint on a word actually counts writes to it. Returns 0, or -errno with why[]
 * (-EOPNOTSUPP: events open but never fire, as in VMs without debug-register virtualization). */
int pf_watch_slots_selftest(char *why, size_t n) PF_WATCH_HIDDEN;
/* The same, calling between() after the second watched write (tests: a stray trap there). */
int pf_watch_slots_selftest_between(char *why, size_t n, void (*between)(void)) PF_WATCH_HIDDEN;

/* Global table registration (indices for a thread's slots). Returns the first index or -1. */
int pf_watch_table_take(pf_watch_thread_t *t) PF_WATCH_HIDDEN;
void pf_watch_table_release(pf_watch_thread_t *t) PF_WATCH_HIDDEN;
void pf_watch_table_reset(void) PF_WATCH_HIDDEN;

/* ---- pf_pmu.c: the sampling event ---- */

typedef struct pf_watch_pmu {
    uint32_t type;              /* perf_event_attr.type */
    uint64_t config, config1, config2;
    uint64_t period;
    int software;               /* a clock event (no PMU) */
    uint32_t source;            /* PF_WATCH_SRC_* (core/pf_format.h): where a sample's data address comes from */
    uint32_t precise_ip;        /* perf_event_attr.precise_ip of a PEBS event */
    uint32_t kind;              /* PF_WATCH_ACC_STORE / _LOAD: the accesses the event counts; 0 any */
    char name[32];
} pf_watch_pmu_t;

/* Encodes cfg->event (or the default) and checks it opens here; chooses the period. Returns 0, or
 * -errno with why[] saying what to change. */
int pf_watch_pmu_setup(const pf_watch_config_t *cfg, pf_watch_pmu_t *pmu, char *why, size_t n) PF_WATCH_HIDDEN;

/* Where the machine has them and they pass a self-test here, an event whose samples carry the data address
 * for these modes: PEBS loads or stores (one kind), else IBS ops. Returns 0 with *pmu set (period unset),
 * or -1: decode the interrupted instruction instead. */
int pf_watch_pmu_precise(unsigned modes, pf_watch_pmu_t *pmu) PF_WATCH_HIDDEN;

/* Opens the sampling event on the calling thread, delivering signo to this thread per overflow; an event
 * whose samples carry the data address also gets its ring mapped into *ring. Returns the fd, or -errno. */
int pf_watch_pmu_open_thread(const pf_watch_pmu_t *pmu, int signo, int tid, pf_watch_ring_t *ring) PF_WATCH_HIDDEN;

/* Reads a whole-number sysctl. Returns 0, or -1. */
int pf_watch_read_int(const char *path, int *out) PF_WATCH_HIDDEN;

/* Why perf_event_open said EACCES or EPERM, and what to change: the sysctl where perf_event_paranoid is
 * above 2, else (it allows one's own user-space events) the seccomp profile or security module in the way. */
void pf_watch_explain_denied(char *buf, size_t n) PF_WATCH_HIDDEN;

long pf_watch_perf_open(void *attr, int pid, int cpu, int group, unsigned long flags) PF_WATCH_HIDDEN;

/* ---- shared by the engine, the handlers and copy watches ---- */

extern pf_watch_config_t pf_watch_cfg PF_WATCH_HIDDEN;
extern uint32_t pf_watch_sample_kind PF_WATCH_HIDDEN;   /* the sampling event's pf_watch_pmu_t.kind */
extern int pf_watch_stopped PF_WATCH_HIDDEN;         /* pf_watch_stop ran: handlers do nothing */
extern __thread pf_watch_thread_t *pf_watch_self __attribute__((tls_model("initial-exec"))) PF_WATCH_HIDDEN;

uint64_t pf_watch_mono_ns(void) PF_WATCH_HIDDEN;
uint64_t pf_watch_thread_cpu_ns(void) PF_WATCH_HIDDEN;   /* CLOCK_THREAD_CPUTIME_ID; async-signal-safe */
/* Reads len bytes at addr without faulting (process_vm_readv). 0 or -1. Async-signal-safe. */
int pf_watch_safe_read(uint64_t addr, void *dst, size_t len) PF_WATCH_HIDDEN;
/* 1 for words never watched: watch's own state, stacks, TLS, the null page. */
int pf_watch_addr_ignored(const pf_watch_thread_t *t, uint64_t a) PF_WATCH_HIDDEN;
/* A slot for a new watch of [addr, addr+len) in mode, its previous watch disarmed and its fields reset;
 * -1 (counted as dropped_reservoir) when every slot keeps its watch. */
int pf_watch_claim_slot(pf_watch_thread_t *t, uint64_t addr, uint32_t len, uint32_t mode) PF_WATCH_HIDDEN;
void pf_watch_sample_handler(int sig, siginfo_t *si, void *ucv) PF_WATCH_HIDDEN;
void pf_watch_trap_handler(int sig, siginfo_t *si, void *ucv) PF_WATCH_HIDDEN;

#endif /* PF_WATCH_INT_H */
