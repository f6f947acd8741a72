/* pyflow_api.h - what a program running under pyflow may ask the runtime, in process (the pytest plugin
 * and the Jupyter magic reach these through ctypes on the already-loaded libpyflow.so).
 *
 * The counters are the runtime's own running estimates, from the allocations it records (each sampled
 * one standing for its est_bytes, as in the report): cheap to read at any moment, summed over every
 * thread, and kept in the slow path only (no cost on the hot path). */
#ifndef PYFLOW_API_H
#define PYFLOW_API_H

#include <stdint.h>

#define PYFLOW_API_VERSION 1

typedef struct pyflow_counters {
    uint64_t version;               /* PYFLOW_API_VERSION of the runtime that filled it */
    uint64_t now_ns;                /* the profile's clock (the records' t_ns) */
    int64_t allocated_python, allocated_native;    /* bytes allocated since start */
    int64_t live_python, live_native;              /* bytes live now */
    int64_t peak;                   /* the most bytes live (both layers) since the last pyflow_reset_peak() */
    int64_t enabled;                /* 1 while this process records */
} pyflow_counters_t;

/* Fills *out (size: sizeof *out as the caller knows it; fields past it are left out). Returns 0. */
int pyflow_counters(pyflow_counters_t *out, uint64_t size);

/* Starts a new peak at the bytes live now. */
void pyflow_reset_peak(void);

/* Writes a label into the profile (PF_MARK_LABEL) and returns its time on the profile's clock; 0 when
 * this process does not record. */
uint64_t pyflow_mark(const char *label);

#endif /* PYFLOW_API_H */
