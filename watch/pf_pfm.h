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

/* The library, loaded and initialized once per process (thread-safe); NULL, with the reason in why, when
 * it cannot be. */
const pf_pfm_t *pf_pfm(char *why, size_t n);

#endif /* PF_PFM_H */
