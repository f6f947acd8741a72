/* pf_watch.h - what this machine offers the watch engine (PMU sampling, precise data addresses, hardware
 * breakpoints), as a table of probes with the fix for anything missing. Used by `pyflow info` now, and by
 * the watch engine (issue 4) to choose its address source. Each probe tries the real thing (opens the
 * event) rather than guessing from versions, and never prints by itself. */
#ifndef PF_WATCH_H
#define PF_WATCH_H

#include <stddef.h>

typedef enum pf_probe_status { PF_PROBE_OK, PF_PROBE_SKIP, PF_PROBE_FAIL } pf_probe_status_t;

typedef struct pf_probe {
    const char *name;           /* short, stable: "perf_event_paranoid", "cycles sampling", ... */
    pf_probe_status_t status;
    char detail[256];           /* what was found, and for SKIP/FAIL what to change */
} pf_probe_t;

/* Runs every probe into out[0..max). Returns the number filled. */
size_t pf_watch_probe(pf_probe_t *out, size_t max);

#endif /* PF_WATCH_H */
