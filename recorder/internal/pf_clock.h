/* pf_clock.h - the times records carry (pf_now_ns, pf_recorder.h), read from the TSC where the kernel's own
 * monotonic clock is the TSC.
 *
 * --exact stamps two records per object, and clock_gettime cost 60 ns a call in this project's VMs (the
 * vDSO orders its TSC read with a fence and retries under a sequence lock): 10% of an --exact run. Where
 * the kernel's clocksource is "tsc" (so it trusts the TSC as synchronized and constant-rate), a thread
 * reads the TSC and extrapolates from an anchor of its own: a (TSC, CLOCK_MONOTONIC) pair taken at most
 * PF_CLOCK_ANCHOR_NS ago, at a rate measured against the process's first pair over at least
 * PF_CLOCK_CALIBRATE_NS. Until then, and on any other clocksource, it calls clock_gettime. A thread's
 * times never go back (the reader keeps each thread's records in time order), and two threads' times
 * differ from CLOCK_MONOTONIC by the rate's error over one anchor period: nanoseconds, far below the
 * time one thread takes to hand an object to another.
 */
#ifndef PF_CLOCK_H
#define PF_CLOCK_H

#include "pf_rec_int.h"

#define PF_CLOCK_ANCHOR_NS 1000000ull       /* a thread takes a new anchor every millisecond it records */
#define PF_CLOCK_CALIBRATE_NS 20000000ull   /* the rate is measured over 20 ms at least */

/* The time of a small packed event (an allocation or free of PF_CLOCK_SMALL_BYTES or less). Reading the
 * TSC is the dearest step of --exact's record path (a reading cost ~20 ns in context in this project's VMs,
 * against ~7 in a loop; two an object: 15% of an --exact run of small objects, measured by a fake clock).
 * So where it cannot change the order the report sees, a small event takes the thread's latest time again:
 *  - only while the process has had one recording thread (pf_clock_thread_recording): one thread's times
 *    keep its own order, and no other thread's event can be ordered against a time reused out of date (a
 *    second thread's free and this one's new block at the same address; a fork child has one thread);
 *  - at most PF_CLOCK_REUSES events in a row, and only while the thread's events come densely: the last
 *    reading was less than PF_CLOCK_DENSE_NS after the one before it (those events were that close);
 *  - never for larger blocks, whose times the timeline and the realloc test (1 ms, in the report) read;
 *  - only under --exact, where each of the thread's allocations and frees is an event: sampled, the
 *    events between two records are not recorded, and three records may span any time.
 * What it costs in truth: a small event just after an idle spell (a sleep) may carry the time before it,
 * for up to PF_CLOCK_REUSES such events (1.5 KB) a spell: below anything the timeline's hundred buckets
 * or the leak test can show. On any other clock source than the TSC, every event reads the clock. */
#define PF_CLOCK_SMALL_BYTES 512u
#define PF_CLOCK_REUSES 3u
#define PF_CLOCK_DENSE_NS 2000u
extern int pf_clock_many_recorders PF_HIDDEN;   /* another thread has recorded since: no time is reused */
uint64_t pf_now_ns_small_read(pf_tls_t *t);     /* the reading, when no time is reused */

/* Inline: most small events take the latest time again, and a call for that was 2% of an --exact run. */
static inline uint64_t pf_now_ns_small(pf_tls_t *t)
{
    if (t->clk_reuses && pf_cfg.exact && !__atomic_load_n(&pf_clock_many_recorders, __ATOMIC_RELAXED)) {
        t->clk_reuses--;
        /* pf_now_ns's last answer on this thread, whatever record it was for: times never go back */
        return t->clk_last > pf_cfg.start_mono_ns ? t->clk_last - pf_cfg.start_mono_ns : 0;
    }
    return pf_now_ns_small_read(t);
}

/* This thread (tid) records: the first to, or another (then no time is reused from now on). */
void pf_clock_thread_recording(uint32_t tid);
/* A fork child has one thread, t: it records as the process's first, and its first small events read the
 * clock of its own file. */
void pf_clock_fork_child(pf_tls_t *t);

/* Decides between the TSC and clock_gettime (reads the kernel's clocksource) and takes the process's
 * first pair. Start-up, once; a fork child keeps the parent's (the TSC goes on). */
void pf_clock_init(void);

#endif /* PF_CLOCK_H */
