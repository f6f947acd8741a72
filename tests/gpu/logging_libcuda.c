/* A stand-in for libcuda.so.1 that says who looks its entry points up: every cuGetProcAddress call is
 * logged on stderr with the object that made it. It hands out only cuGetProcAddress itself (as the real
 * driver does when asked for it); every other name is "not found", so the runtime gives up after its
 * start-up lookups, which are what the test reads. Linked -Bsymbolic, as libcuda is: what it hands out is
 * its own function, not one a preload interposes under the same name. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define PF_NOT_FOUND 500    /* CUDA_ERROR_NOT_FOUND */

EXPORT int cuGetProcAddress_v2(const char *sym, void **pfn, int version, unsigned long long flags, void *status);
EXPORT int cuGetProcAddress(const char *sym, void **pfn, int version, unsigned long long flags);

static int lookup(const char *sym, void **pfn, int version, void *caller)
{
    Dl_info info = {0};
    const char *from = dladdr(caller, &info) && info.dli_fname ? strrchr(info.dli_fname, '/') : NULL;
    fprintf(stderr, "lookup\t%s\t%d\t%s\n", sym, version, from ? from + 1 : "?");
    if (strcmp(sym, "cuGetProcAddress") == 0) {
        *pfn = version >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)cuGetProcAddress;
        return 0;
    }
    *pfn = NULL;
    return PF_NOT_FOUND;
}

EXPORT int cuGetProcAddress_v2(const char *sym, void **pfn, int version, unsigned long long flags, void *status)
{
    return lookup(sym, pfn, version, __builtin_return_address(0));
}

EXPORT int cuGetProcAddress(const char *sym, void **pfn, int version, unsigned long long flags)
{
    return lookup(sym, pfn, version, __builtin_return_address(0));
}
