/* A stand-in for the CUDA runtime and driver libraries, for tests on machines without a GPU: the same
 * entry points with host-memory behaviour. "Device" memory comes from raw mmap (as a driver's would, it
 * never passes through malloc), copies are plain byte copies. Return codes: 0 = success. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static void *device_alloc(size_t n)
{
    long r = syscall(SYS_mmap, NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return (r < 0 && r > -4096) ? NULL : (void *)r;
}

/* sizes of live device blocks, to unmap them (a tiny table: tests allocate a few) */
static struct { void *p; size_t n; } blocks[4096];

static int remember(void *p, size_t n)
{
    for (int i = 0; i < 4096; i++)
        if (!blocks[i].p) {
            blocks[i].p = p;
            blocks[i].n = n;
            return 0;
        }
    return 2;
}

static int forget(void *p)
{
    for (int i = 0; i < 4096; i++)
        if (blocks[i].p == p) {
            syscall(SYS_munmap, p, blocks[i].n);
            blocks[i].p = NULL;
            return 0;
        }
    return 1;   /* cudaErrorInvalidValue */
}

static void bytecopy(void *d, const void *s, size_t n)
{
    volatile unsigned char *dp = d;
    const unsigned char *sp = s;
    for (size_t i = 0; i < n; i++)  /* not memcpy: the test counts only the CUDA copy */
        dp[i] = sp[i];
}

EXPORT int cudaMalloc(void **p, size_t n)
{
    *p = device_alloc(n);
    return *p ? remember(*p, n) : 2;
}
EXPORT int cudaMallocManaged(void **p, size_t n, unsigned flags) { return cudaMalloc(p, n); }
EXPORT int cudaMallocAsync(void **p, size_t n, void *stream) { return cudaMalloc(p, n); }
EXPORT int cudaMallocHost(void **p, size_t n) { return cudaMalloc(p, n); }
EXPORT int cudaFree(void *p) { return p ? forget(p) : 0; }
EXPORT int cudaFreeAsync(void *p, void *stream) { return cudaFree(p); }
EXPORT int cudaFreeHost(void *p) { return cudaFree(p); }
EXPORT int cudaMemcpy(void *d, const void *s, size_t n, int kind)
{
    bytecopy(d, s, n);
    return 0;
}
EXPORT int cudaMemcpyAsync(void *d, const void *s, size_t n, int kind, void *stream) { return cudaMemcpy(d, s, n, kind); }

EXPORT int cuMemAlloc_v2(unsigned long long *p, size_t n)
{
    void *q;
    int rc = cudaMalloc(&q, n);
    *p = (unsigned long long)(uintptr_t)q;
    return rc;
}
EXPORT int cuMemFree_v2(unsigned long long p) { return cudaFree((void *)(uintptr_t)p); }
EXPORT int cuMemcpyHtoD_v2(unsigned long long d, const void *s, size_t n)
{
    bytecopy((void *)(uintptr_t)d, s, n);
    return 0;
}
EXPORT int cuMemcpyDtoH_v2(void *d, unsigned long long s, size_t n)
{
    bytecopy(d, (const void *)(uintptr_t)s, n);
    return 0;
}
