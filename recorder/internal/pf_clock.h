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

/* Decides between the TSC and clock_gettime (reads the kernel's clocksource) and takes the process's
 * first pair. Start-up, once; a fork child keeps the parent's (the TSC goes on). */
void pf_clock_init(void);

#endif /* PF_CLOCK_H */
