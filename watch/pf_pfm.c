/* pf_pfm.c - libpfm4 through dlopen (see pf_pfm.h). Loaded once, kept for the life of the process:
 * pfm_initialize is not meant to be undone while an encoding may still be asked for. */
#include "pf_pfm.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#define PF_PFM_SONAME "libpfm.so.4"     /* libpfm4's ABI: the name Debian's libpfm4 package installs */

static pf_pfm_t pfm;
static char failure[160];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
    void *lib = dlopen(PF_PFM_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(failure, sizeof failure, "libpfm4 cannot be loaded (%s): install libpfm4", dlerror());
        return;
    }
    pfm_err_t (*initialize)(void) = (pfm_err_t (*)(void))dlsym(lib, "pfm_initialize");
    pfm.get_os_event_encoding = (pfm_err_t (*)(const char *, int, pfm_os_t, void *))dlsym(lib, "pfm_get_os_event_encoding");
    pfm.get_pmu_info = (pfm_err_t (*)(pfm_pmu_t, pfm_pmu_info_t *))dlsym(lib, "pfm_get_pmu_info");
    pfm.strerror = (const char *(*)(int))dlsym(lib, "pfm_strerror");
    if (!initialize || !pfm.get_os_event_encoding || !pfm.get_pmu_info || !pfm.strerror) {
        snprintf(failure, sizeof failure, "%s lacks the functions pyflow uses", PF_PFM_SONAME);
        pfm.strerror = NULL;
        return;
    }
    if (initialize() != PFM_SUCCESS) {
        snprintf(failure, sizeof failure, "libpfm4 could not initialize");
        pfm.strerror = NULL;
    }
}

const pf_pfm_t *pf_pfm(char *why, size_t n)
{
    pthread_once(&once, load);
    if (pfm.strerror)
        return &pfm;
    if (why && n)
        snprintf(why, n, "%s", failure);
    return NULL;
}
