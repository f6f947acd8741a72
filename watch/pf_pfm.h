/* pf_pfm.h - libpfm4, loaded the first time an event is named, not linked: loading it relocates its event
 * tables, about 2 MiB of memory in every profiled process, most of which never names an event (watch
 * off, or its default events). */
#ifndef PF_PFM_H
#define PF_PFM_H

#include <stddef.h>

#include <perfmon/pfmlib_perf_event.h>

typedef struct pf_pfm {
    pfm_err_t (*get_os_event_encoding)(const char *name, int plm, pfm_os_t os, void *arg);
    pfm_err_t (*get_pmu_info)(pfm_pmu_t pmu, pfm_pmu_info_t *info);
    const char *(*strerror)(int code);
} pf_pfm_t;

/* The library, loaded and initialized on the first call (thread-safe); NULL, with the reason in why, when
 * it cannot be. The functions are valid until pf_pfm_release. */
const pf_pfm_t *pf_pfm(char *why, size_t n);

/* Unloads the library (its tables were 2.3 MiB of the program's resident memory): once the events are
 * encoded nothing in a profiled process names one again. A later pf_pfm loads it again. */
void pf_pfm_release(void);

#endif /* PF_PFM_H */
