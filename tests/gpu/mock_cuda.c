/* A stand-in for the CUDA runtime and driver libraries, for tests on machines without a GPU: the same
 * entry points with host-memory behaviour. Like real device memory, a "device" pointer cannot be read from
 * the host: it is an inaccessible (PROT_NONE) reservation, and the bytes live in a separate host mapping
 * that only this library's copies use, so a profiler that touches device memory from the host crashes here
 * as it would on a GPU. Memory comes from raw mmap (a driver's never passes through malloc); copies are
 * plain byte loops. Return codes: 0 = success. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static void *raw_map(size_t n, int prot)
{
    long r = syscall(SYS_mmap, NULL, n ? n : 1, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return (r < 0 && r > -4096) ? NULL : (void *)r;
}

/* live device blocks: the device address, its size, and where its bytes really are; a mapped block (the
 * virtual memory API) borrows its address from a reservation and its bytes from a physical handle */
static struct { char *dev, *backing; size_t n; int mapped; } blocks[4096];

static int device_alloc(void **out, size_t n)
{
    for (int i = 0; i < 4096; i++)
        if (!blocks[i].dev) {
            blocks[i].dev = raw_map(n, PROT_NONE);
            blocks[i].backing = raw_map(n, PROT_READ | PROT_WRITE);
            blocks[i].n = n;
            *out = blocks[i].dev;
            return blocks[i].dev && blocks[i].backing ? 0 : 2;
        }
    return 2;   /* cudaErrorMemoryAllocation */
}

static int forget(void *p)
{
    for (int i = 0; i < 4096; i++)
        if (blocks[i].dev == p) {
            syscall(SYS_munmap, blocks[i].dev, blocks[i].n);
            syscall(SYS_munmap, blocks[i].backing, blocks[i].n);
            blocks[i].dev = NULL;
            return 0;
        }
    return 1;   /* cudaErrorInvalidValue */
}

/* The host address of a device address (or p itself when it is host memory). */
static void *host_view(const void *p)
{
    for (int i = 0; i < 4096; i++)
        if (blocks[i].dev && (const char *)p >= blocks[i].dev && (const char *)p < blocks[i].dev + blocks[i].n)
            return blocks[i].backing + ((const char *)p - blocks[i].dev);
    return (void *)p;
}

static void bytecopy(void *d, const void *s, size_t n)
{
    volatile unsigned char *dp = host_view(d);
    const unsigned char *sp = host_view(s);
    for (size_t i = 0; i < n; i++)  /* not memcpy: the test counts only the CUDA copy */
        dp[i] = sp[i];
}

EXPORT int cudaMalloc(void **p, size_t n)
{
    return device_alloc(p, n);
}
EXPORT int cudaMallocManaged(void **p, size_t n, unsigned flags) { return cudaMalloc(p, n); }
EXPORT int cudaMallocAsync(void **p, size_t n, void *stream) { return cudaMalloc(p, n); }
EXPORT int cudaMallocHost(void **p, size_t n)
{
    *p = raw_map(n, PROT_READ | PROT_WRITE);   /* pinned host memory is host memory */
    return *p ? 0 : 2;
}
EXPORT int cudaFree(void *p) { return p ? forget(p) : 0; }
EXPORT int cudaFreeAsync(void *p, void *stream) { return cudaFree(p); }
EXPORT int cudaFreeHost(void *p) { return 0; }  /* the mock leaks pinned blocks: it keeps no size for them */
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

EXPORT int cuMemAllocManaged(unsigned long long *p, size_t n, unsigned flags) { return cuMemAlloc_v2(p, n); }
EXPORT int cuMemAllocAsync(unsigned long long *p, size_t n, void *stream) { return cuMemAlloc_v2(p, n); }
EXPORT int cuMemFreeAsync(unsigned long long p, void *stream) { return cuMemFree_v2(p); }
EXPORT int cuMemAllocHost_v2(void **p, size_t n) { return cudaMallocHost(p, n); }
EXPORT int cuMemHostAlloc(void **p, size_t n, unsigned flags) { return cudaMallocHost(p, n); }
EXPORT int cudaHostAlloc(void **p, size_t n, unsigned flags) { return cudaMallocHost(p, n); }
EXPORT int cuMemFreeHost(void *p) { return 0; }
EXPORT int cuMemcpy(unsigned long long d, unsigned long long s, size_t n)
{
    bytecopy((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
    return 0;
}
EXPORT int cuMemcpyAsync(unsigned long long d, unsigned long long s, size_t n, void *stream) { return cuMemcpy(d, s, n); }
EXPORT int cuMemcpyDtoD_v2(unsigned long long d, unsigned long long s, size_t n) { return cuMemcpy(d, s, n); }
EXPORT int cuMemcpyDtoDAsync_v2(unsigned long long d, unsigned long long s, size_t n, void *stream) { return cuMemcpy(d, s, n); }
EXPORT int cuMemcpyHtoDAsync_v2(unsigned long long d, const void *s, size_t n, void *stream) { return cuMemcpyHtoD_v2(d, s, n); }
EXPORT int cuMemcpyDtoHAsync_v2(void *d, unsigned long long s, size_t n, void *stream) { return cuMemcpyDtoH_v2(d, s, n); }

/* Allocations from a program's own memory pool, and pitched ones (rows padded to 512 bytes here). */
EXPORT int cudaMallocFromPoolAsync(void **p, size_t n, void *pool, void *stream) { return cudaMalloc(p, n); }
EXPORT int cuMemAllocFromPoolAsync(unsigned long long *p, size_t n, void *pool, void *stream)
{
    return cuMemAlloc_v2(p, n);
}
EXPORT int cudaMallocPitch(void **p, size_t *pitch, size_t width, size_t height)
{
    *pitch = (width + 511) / 512 * 512;
    return cudaMalloc(p, *pitch * height);
}
EXPORT int cuMemAllocPitch_v2(unsigned long long *p, size_t *pitch, size_t width, size_t height, unsigned elem)
{
    *pitch = (width + 511) / 512 * 512;
    return cuMemAlloc_v2(p, *pitch * height);
}

/* 2D copies (rows of width bytes, pitches apart) and copies between devices. */
static void rowcopy(char *d, size_t dpitch, const char *s, size_t spitch, size_t width, size_t height)
{
    for (size_t r = 0; r < height; r++)
        bytecopy(d + r * dpitch, s + r * spitch, width);
}
EXPORT int cudaMemcpy2D(void *d, size_t dpitch, const void *s, size_t spitch, size_t width, size_t height, int kind)
{
    rowcopy(d, dpitch, s, spitch, width, height);
    return 0;
}
EXPORT int cudaMemcpy2DAsync(void *d, size_t dpitch, const void *s, size_t spitch, size_t width, size_t height,
                             int kind, void *stream)
{
    return cudaMemcpy2D(d, dpitch, s, spitch, width, height, kind);
}
typedef struct {    /* CUDA_MEMCPY2D */
    size_t src_x, src_y;
    int src_type;
    const void *src_host;
    unsigned long long src_device;
    void *src_array;
    size_t src_pitch, dst_x, dst_y;
    int dst_type;
    void *dst_host;
    unsigned long long dst_device;
    void *dst_array;
    size_t dst_pitch, width, height;
} mock_memcpy2d_t;
EXPORT int cuMemcpy2D_v2(const mock_memcpy2d_t *c)
{
    const char *s = c->src_type == 1 ? c->src_host : (const char *)(uintptr_t)c->src_device;
    char *d = c->dst_type == 1 ? c->dst_host : (char *)(uintptr_t)c->dst_device;
    rowcopy(d + c->dst_y * c->dst_pitch + c->dst_x, c->dst_pitch, s + c->src_y * c->src_pitch + c->src_x,
            c->src_pitch, c->width, c->height);
    return 0;
}
EXPORT int cuMemcpy2DAsync_v2(const mock_memcpy2d_t *c, void *stream) { return cuMemcpy2D_v2(c); }
EXPORT int cuMemcpy2DUnaligned_v2(const mock_memcpy2d_t *c) { return cuMemcpy2D_v2(c); }
/* 3D copies: depth slices of height rows of width bytes (no CUDA arrays in the mock). */
typedef struct { void *ptr; size_t pitch, xsize, ysize; } mock_pitched_t;
typedef struct {    /* cudaMemcpy3DParms */
    void *src_array;
    size_t sx, sy, sz;
    mock_pitched_t src;
    void *dst_array;
    size_t dx, dy, dz;
    mock_pitched_t dst;
    size_t width, height, depth;
    int kind;
} mock_memcpy3d_parms_t;
typedef struct {    /* CUDA_MEMCPY3D */
    size_t sx, sy, sz, slod;
    int stype;
    const void *shost;
    unsigned long long sdev;
    void *sarr, *res0;
    size_t spitch, sheight, dx, dy, dz, dlod;
    int dtype;
    void *dhost;
    unsigned long long ddev;
    void *darr, *res1;
    size_t dpitch, dheight, width, height, depth;
} mock_memcpy3d_t;
EXPORT int cudaMemcpy3D(const mock_memcpy3d_parms_t *p)
{
    for (size_t z = 0; z < p->depth; z++)
        rowcopy((char *)p->dst.ptr + ((p->dz + z) * p->dst.ysize + p->dy) * p->dst.pitch + p->dx, p->dst.pitch,
                (const char *)p->src.ptr + ((p->sz + z) * p->src.ysize + p->sy) * p->src.pitch + p->sx, p->src.pitch,
                p->width, p->height);
    return 0;
}
EXPORT int cudaMemcpy3DAsync(const mock_memcpy3d_parms_t *p, void *stream) { return cudaMemcpy3D(p); }
EXPORT int cuMemcpy3D_v2(const mock_memcpy3d_t *c)
{
    const char *s = c->stype == 1 ? c->shost : (const char *)(uintptr_t)c->sdev;
    char *d = c->dtype == 1 ? c->dhost : (char *)(uintptr_t)c->ddev;
    for (size_t z = 0; z < c->depth; z++)
        rowcopy(d + ((c->dz + z) * c->dheight + c->dy) * c->dpitch + c->dx, c->dpitch,
                s + ((c->sz + z) * c->sheight + c->sy) * c->spitch + c->sx, c->spitch, c->width, c->height);
    return 0;
}
EXPORT int cuMemcpy3DAsync_v2(const mock_memcpy3d_t *c, void *stream) { return cuMemcpy3D_v2(c); }
EXPORT int cudaMemcpyPeer(void *d, int dd, const void *s, int sd, size_t n)
{
    bytecopy(d, s, n);
    return 0;
}
EXPORT int cudaMemcpyPeerAsync(void *d, int dd, const void *s, int sd, size_t n, void *stream)
{
    return cudaMemcpyPeer(d, dd, s, sd, n);
}
EXPORT int cuMemcpyPeer(unsigned long long d, void *dc, unsigned long long s, void *sc, size_t n)
{
    return cudaMemcpyPeer((void *)(uintptr_t)d, 0, (const void *)(uintptr_t)s, 0, n);
}
EXPORT int cuMemcpyPeerAsync(unsigned long long d, void *dc, unsigned long long s, void *sc, size_t n, void *stream)
{
    return cuMemcpyPeer(d, dc, s, sc, n);
}

/* The virtual memory API, as PyTorch's expandable segments use it: a reserved device range, physical
 * memory behind handles, and mappings of handles into the range. The mock never frees a handle's bytes
 * (it keeps no size for them), as with pinned blocks. */
EXPORT int cuMemAddressReserve(unsigned long long *p, size_t n, size_t align, unsigned long long addr,
                               unsigned long long flags)
{
    void *q = raw_map(n, PROT_NONE);
    *p = (unsigned long long)(uintptr_t)q;
    return q ? 0 : 2;
}
EXPORT int cuMemAddressFree(unsigned long long p, size_t n)
{
    return syscall(SYS_munmap, (void *)(uintptr_t)p, n) ? 1 : 0;
}
EXPORT int cuMemCreate(unsigned long long *handle, size_t n, const void *prop, unsigned long long flags)
{
    void *b = raw_map(n, PROT_READ | PROT_WRITE);
    *handle = (unsigned long long)(uintptr_t)b;
    return b ? 0 : 2;
}
EXPORT int cuMemRelease(unsigned long long handle) { return 0; }
EXPORT int cuMemMap(unsigned long long p, size_t n, size_t offset, unsigned long long handle,
                    unsigned long long flags)
{
    for (int i = 0; i < 4096; i++)
        if (!blocks[i].dev) {
            blocks[i].dev = (char *)(uintptr_t)p;
            blocks[i].backing = (char *)(uintptr_t)handle + offset;
            blocks[i].n = n;
            blocks[i].mapped = 1;
            return 0;
        }
    return 2;
}
/* Unmaps every mapping inside [p, p + n): one call may end several, as in CUDA. */
EXPORT int cuMemUnmap(unsigned long long p, size_t n)
{
    char *start = (char *)(uintptr_t)p;
    for (int i = 0; i < 4096; i++)
        if (blocks[i].mapped && blocks[i].dev >= start && blocks[i].dev < start + n)
            blocks[i].dev = NULL, blocks[i].mapped = 0;
    return 0;
}

/* What `pyflow info` asks a driver: its version (12.4 here) and one GPU. */
EXPORT int cuDriverGetVersion(int *v)
{
    *v = 12040;
    return 0;
}
EXPORT int cuInit(unsigned flags) { return 0; }
EXPORT int cuDeviceGetCount(int *n)
{
    *n = 1;
    return 0;
}

/* Device memory that no hooked entry point hands out (as cuMemCreate + cuMemMap would): a profiler sees
 * only its address in a later copy, and must not read it from the host. */
EXPORT int mockDeviceAllocUntracked(void **p, size_t n) { return device_alloc(p, n); }

/* The variants cuGetProcAddress hands out for other versions and stream modes: the v1 ABI (32-bit device
 * pointers, before CUDA 3.2) and the per-thread-default-stream copy. Distinct functions, so a test can see
 * which one it got. */
static int cuMemAlloc_v1(unsigned *p, unsigned n)
{
    unsigned long long q;
    int rc = cuMemAlloc_v2(&q, n);
    *p = (unsigned)q;
    return rc;
}
static int cuMemcpyHtoD_v2_ptds(unsigned long long d, const void *s, size_t n) { return cuMemcpyHtoD_v2(d, s, n); }

EXPORT int cuGetProcAddress(const char *sym, void **pfn, int version, unsigned long long flags);

/* Driver entry points by name, as the CUDA runtime and frameworks fetch them. */
EXPORT int cuGetProcAddress_v2(const char *sym, void **pfn, int version, unsigned long long flags, void *status)
{
    static const struct { const char *name; void *fn; } table[] = {
        {"cuMemAlloc", (void *)cuMemAlloc_v2}, {"cuMemFree", (void *)cuMemFree_v2},
        {"cuMemAllocManaged", (void *)cuMemAllocManaged}, {"cuMemAllocAsync", (void *)cuMemAllocAsync},
        {"cuMemFreeAsync", (void *)cuMemFreeAsync}, {"cuMemAllocHost", (void *)cuMemAllocHost_v2},
        {"cuMemHostAlloc", (void *)cuMemHostAlloc}, {"cuMemFreeHost", (void *)cuMemFreeHost},
        {"cuMemcpy", (void *)cuMemcpy}, {"cuMemcpyAsync", (void *)cuMemcpyAsync},
        {"cuMemcpyHtoD", (void *)cuMemcpyHtoD_v2}, {"cuMemcpyDtoH", (void *)cuMemcpyDtoH_v2},
        {"cuMemcpyDtoD", (void *)cuMemcpyDtoD_v2}, {"cuMemcpyHtoDAsync", (void *)cuMemcpyHtoDAsync_v2},
        {"cuMemcpyDtoHAsync", (void *)cuMemcpyDtoHAsync_v2}, {"cuMemcpyDtoDAsync", (void *)cuMemcpyDtoDAsync_v2},
        {"cuMemMap", (void *)cuMemMap}, {"cuMemUnmap", (void *)cuMemUnmap},
        {"cuMemAllocFromPoolAsync", (void *)cuMemAllocFromPoolAsync}, {"cuMemAllocPitch", (void *)cuMemAllocPitch_v2},
        {"cuMemcpy2D", (void *)cuMemcpy2D_v2}, {"cuMemcpy2DAsync", (void *)cuMemcpy2DAsync_v2},
        {"cuMemcpy2DUnaligned", (void *)cuMemcpy2DUnaligned_v2},
        {"cuMemcpy3D", (void *)cuMemcpy3D_v2}, {"cuMemcpy3DAsync", (void *)cuMemcpy3DAsync_v2},
        {"cuMemcpyPeer", (void *)cuMemcpyPeer}, {"cuMemcpyPeerAsync", (void *)cuMemcpyPeerAsync},
    };
    *pfn = NULL;
    if (strcmp(sym, "cuMemAlloc") == 0 && version < 3020) {
        *pfn = (void *)cuMemAlloc_v1;
        return 0;
    }
    if (strcmp(sym, "cuGetProcAddress") == 0) {    /* itself, as a static CUDA runtime asks for it */
        *pfn = version >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)cuGetProcAddress;
        return 0;
    }
    if (strcmp(sym, "cuMemcpyHtoD") == 0 && (flags & 2)) {
        *pfn = (void *)cuMemcpyHtoD_v2_ptds;
        return 0;
    }
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(sym, table[i].name) == 0) {
            *pfn = table[i].fn;
            return 0;
        }
    return 500;     /* CUDA_ERROR_NOT_FOUND */
}
EXPORT int cuGetProcAddress(const char *sym, void **pfn, int version, unsigned long long flags)
{
    return cuGetProcAddress_v2(sym, pfn, version, flags, NULL);
}
