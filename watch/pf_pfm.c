/* pf_pfm.c - libpfm4 through dlopen (see pf_pfm.h): loaded when an event is first named, unloaded once
 * the watch engine has chosen its events (pf_pfm_release). */
#include "pf_pfm.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define PF_PFM_SONAME "libpfm.so.4"     /* libpfm4's ABI: the name Debian's libpfm4 package installs */

static pf_pfm_t pfm;
static char failure[160];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *lib;       /* the handle while loaded */
static int tried;       /* load ran since the last release */

static void load(void)
{
    lib = dlopen(PF_PFM_SONAME, RTLD_NOW | RTLD_LOCAL);
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
    pthread_mutex_lock(&lock);
    if (!tried) {
        tried = 1;
        load();
    }
    int ok = pfm.strerror != NULL;
    pthread_mutex_unlock(&lock);
    if (ok)
        return &pfm;
    if (why && n)
        snprintf(why, n, "%s", failure);
    return NULL;
}

void pf_pfm_release(void)
{
    pthread_mutex_lock(&lock);
    if (lib) {
        void (*terminate)(void) = (void (*)(void))dlsym(lib, "pfm_terminate");
        if (pfm.strerror && terminate)
            terminate();
        dlclose(lib);
        lib = NULL;
    }
    memset(&pfm, 0, sizeof pfm);
    tried = 0;
    pthread_mutex_unlock(&lock);
}
