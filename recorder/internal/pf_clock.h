/* pf_clock.h - the times records carry (pf_now_ns, pf_recorder.h), read from the TSC where the kernel's own
 * monotonic clock is the TSC.
 *
 * --exact stamps two records per object, and clock_gettime cost 60 ns a call in this project's VMs (the
 * vDSO orders its TSC read with a fence and retries under a sequence lock): 10% of an --exact run. Where
 * the kernel's clocksource is "tsc" (so it trusts the TSC as synchronized and constant-rate), a reading is
 * the TSC mapped to nanoseconds by one mapping for the whole process: segments of a line, each drawn from
 * a (TSC, CLOCK_MONOTONIC) pair when the one before is PF_CLOCK_ANCHOR_NS old, at a rate measured against
 * the process's first pair over at least PF_CLOCK_CALIBRATE_NS. Until then, and on any other clocksource,
 * it calls clock_gettime. A segment begins where the one before ends if CLOCK_MONOTONIC is behind it (and
 * runs slower, so that it meets it again), else at CLOCK_MONOTONIC: the mapping never goes back, and a
 * time is a function of the TSC alone, whichever thread reads it. So two threads' events keep the order
 * they had (a free on one, then the new block at its address on another); a mapping of each thread's own,
 * re-anchored apart, put them out of order where the kernel slews its clock against the TSC (by half a
 * microsecond a millisecond: 67,000 of 1.5 million turns between two threads). Once a second thread
 * records, the TSC is read after an lfence (rdtsc alone runs ahead of the loads before it, by up to ~120 ns
 * here). The first reading past its segment's span (after an idle spell) draws the next segment and reads
 * the TSC again; a pair taken while preempted (wider than 20 us) is not drawn from. A thread's times never
 * go back either (the reader keeps each thread's records in time order).
 */
#ifndef PF_CLOCK_H
#define PF_CLOCK_H

#include "pf_rec_int.h"

#define PF_CLOCK_ANCHOR_NS 1000000ull       /* a new segment every millisecond the process reads times */
#define PF_CLOCK_CALIBRATE_NS 20000000ull   /* the rate is measured over 20 ms at least */

/* The time of a small packed event (an allocation or free of PF_CLOCK_SMALL_BYTES or less). Reading the
 * TSC is the dearest step of --exact's record path (a reading cost ~20 ns in context in this project's VMs,
 * against ~7 in a loop; two an object: 15% of an --exact run of small objects, measured by a fake clock).
 * So where it cannot change the order the report sees, a small event takes the thread's latest time again:
 *  - only while no other thread has taken a later time (pf_clock_latest): one thread's times keep its own
 *    order, and what could order another thread's event before this one's (its free, then this thread's
 *    new block at the same address) also carries that thread's reading here first: the allocator's lock
 *    or the GIL orders the reading's publication before the event it stamps, before this thread's check.
 *    While the process has had one recording thread nothing is published (pf_clock_thread_recording); a
 *    fork child has one thread. A program whose work runs in one thread while the main thread waits for
 *    it reuses as a single-threaded one does (the flag alone cost such a program a third more time);
 *  - at most PF_CLOCK_REUSES events in a row, and only while the thread's events come densely: the last
 *    reading was less than PF_CLOCK_DENSE_NS after the one before it (those events were that close);
 *  - never for larger blocks, whose times the timeline and the realloc test (1 ms, in the report) read;
 *  - only under --exact, where each of the thread's allocations and frees is an event: sampled, the
 *    events between two records are not recorded, and three records may span any time.
 * What it costs in truth: a small event just after an idle spell (a sleep) may carry the time before it,
 * for up to PF_CLOCK_REUSES such events (7.5 KB) a spell, and a dense run's times lag by up to the span
 * of PF_CLOCK_REUSES events (a few microseconds, never past the 4 us of density that allowed them): below
 * anything the timeline's hundred buckets or the leak test can show. Seven reuses in 4 us, against three
 * in 2 us before, halved the clock's share of an --exact recording of small objects (3% -> 1.5%: events
 * under it come ~350 ns apart, so eight span 2.8 us). Fifteen, where a faster interpreter's events come
 * ~100 ns apart (a Zen 5 kvm-clock guest, where the vDSO's clock was still 5% of the recording), made
 * 7 interleaved --exact recordings of an indexing loop 3.7% faster (1.583 -> 1.525 s) and of object churn
 * 2% (2.782 -> 2.728 s). The reuse is the same on any other clocksource, where a reading is clock_gettime's: on a
 * kvm-clock guest (28 ns a call in a loop, the vDSO's rdtsc and pvclock scaling) reading the clock at every
 * event was a fifth of an --exact recording of small objects. CLOCK_MONOTONIC is one clock for every CPU,
 * so the order argument above holds for it as for the TSC's mapping. */
#define PF_CLOCK_SMALL_BYTES 512u
#define PF_CLOCK_REUSES 15u
#define PF_CLOCK_DENSE_NS 4000u
extern int pf_clock_many_recorders PF_HIDDEN;   /* a second thread has recorded: readings are published */
extern uint64_t pf_clock_latest PF_HIDDEN;      /* then: the latest time any thread took (CLOCK_MONOTONIC ns) */
uint64_t pf_now_ns_small_read(pf_tls_t *t);     /* the reading, when no time is reused */

/* Inline: most small events take the latest time again, and a call for that was 2% of an --exact run. */
static inline uint64_t pf_now_ns_small(pf_tls_t *t)
{
    if (t->clk_reuses && pf_cfg.exact &&
        (!__atomic_load_n(&pf_clock_many_recorders, __ATOMIC_RELAXED) ||
         __atomic_load_n(&pf_clock_latest, __ATOMIC_RELAXED) <= t->clk_last)) {
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
