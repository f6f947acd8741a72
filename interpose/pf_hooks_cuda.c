/* pf_hooks_cuda.c - GPU memory: the CUDA runtime and driver allocators and copies.
 *
 * How calls reach these hooks, whether the program links CUDA or loads it late (PyTorch, CuPy):
 *  - through the PLT: libpyflow.so is preloaded, so its definitions of cudaMalloc & co. come first in the
 *    global scope and bind the calls of every library loaded later, RTLD_LOCAL ones included;
 *  - through dlsym (ctypes, frameworks that look entry points up by name): dlsym is interposed too, and
 *    hands out the hook for a hooked name when the library asked for really defines it, remembering the
 *    real function. RTLD_NEXT lookups are passed on by a tail call, so glibc still sees the original
 *    caller (the one thing RTLD_NEXT depends on).
 * The real function is the one dlsym saw, else the first definition in a loaded object other than this
 * one (found by dl_iterate_phdr + dlopen(RTLD_NOLOAD)): CUDA libraries loaded RTLD_LOCAL are not visible
 * to dlsym(RTLD_NEXT). A process without CUDA calling an exported hook gets cudaErrorInitializationError
 * / CUDA_ERROR_NOT_INITIALIZED, as from a CUDA library without a driver.
 *
 * What is counted: device and managed allocations are GPU bytes (PF_DOMAIN_GPU), every one recorded exactly
 * (they are few and large); pinned host memory (cudaMallocHost) is host RAM and is counted as native.
 * With a caching allocator (PyTorch), these are the reservations from the driver, charged to the line whose
 * allocation made the cache grow. Copies become flow edges h2d / d2h / d2d / h2h; an upload of the same
 * host bytes to the same destination again is a redundant copy (content hash, within the thread's
 * compare budget).
 */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "pf_objtable.h"
#include "pf_rt_int.h"
#include "pf_sys.h"

typedef int pf_cuda_status_t;       /* cudaError_t / CUresult: 0 = success */
typedef unsigned long long pf_cudeviceptr_t;

#define PF_CUDA_NOT_INITIALIZED 3   /* cudaErrorInitializationError == CUDA_ERROR_NOT_INITIALIZED == 3 */

enum pf_cuda_fn {
    F_cudaMalloc, F_cudaFree, F_cudaMallocManaged, F_cudaMallocHost, F_cudaFreeHost, F_cudaMallocAsync,
    F_cudaFreeAsync, F_cudaMemcpy, F_cudaMemcpyAsync, F_cuMemAlloc_v2, F_cuMemFree_v2, F_cuMemAllocManaged,
    F_cuMemcpy, F_cuMemcpyHtoD_v2, F_cuMemcpyDtoH_v2, F_cuMemcpyDtoD_v2, F_cuMemcpyHtoDAsync_v2,
    F_cuMemcpyDtoHAsync_v2, F_cuGetProcAddress, F_cuGetProcAddress_v2, F_cudaGetDriverEntryPoint,
    F_cudaGetDriverEntryPointByVersion, F_COUNT
};

static const char *const fn_names[F_COUNT] = {
    "cudaMalloc", "cudaFree", "cudaMallocManaged", "cudaMallocHost", "cudaFreeHost", "cudaMallocAsync",
    "cudaFreeAsync", "cudaMemcpy", "cudaMemcpyAsync", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemAllocManaged",
    "cuMemcpy", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemcpyDtoD_v2", "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2", "cuGetProcAddress", "cuGetProcAddress_v2", "cudaGetDriverEntryPoint",
    "cudaGetDriverEntryPointByVersion",
};

static void *real_fn[F_COUNT];      /* published with release once found */
static void *hook_fn[F_COUNT];      /* filled below: our own definitions */

/* ---- finding the real functions ---- */

static void *(*real_dlsym)(void *, const char *);

static void init_real_dlsym(void)
{
    if (!real_dlsym) {
        void *f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
        if (!f)
            f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
        __atomic_store_n(&real_dlsym, (void *(*)(void *, const char *))f, __ATOMIC_RELEASE);
    }
}

typedef struct search {
    enum pf_cuda_fn fn;
    void *found;
} search_t;

static int search_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    search_t *s = arg;
    if (!info->dlpi_name || !info->dlpi_name[0])
        return 0;
    void *h = dlopen(info->dlpi_name, RTLD_NOLOAD | RTLD_LAZY);
    if (!h)
        return 0;
    void *f = real_dlsym(h, fn_names[s->fn]);
    dlclose(h);
    if (f && f != hook_fn[s->fn]) {
        s->found = f;
        return 1;
    }
    return 0;
}

/* The real function, or NULL when no loaded object defines it. Never returns a hook. */
static void *real(enum pf_cuda_fn fn)
{
    void *f = __atomic_load_n(&real_fn[fn], __ATOMIC_ACQUIRE);
    if (PF_LIKELY(f != NULL))
        return f;
    init_real_dlsym();
    if (!real_dlsym)
        return NULL;
    pf_tls.guard++;
    search_t s = {fn, NULL};
    dl_iterate_phdr(search_object, &s);
    pf_tls.guard--;
    if (s.found)
        __atomic_store_n(&real_fn[fn], s.found, __ATOMIC_RELEASE);
    return s.found;
}

/* ---- recording ---- */

static int tracked_gpu(const void *p)
{
    pf_objinfo_t o;
    return pf_objtable_maybe(p) && pf_objtable_find_start((uintptr_t)p, 0, &o) && o.domain == PF_DOMAIN_GPU;
}

static void note_alloc(void *p, size_t size, int domain)
{
    if (p && pf_tls.guard == 0)
        pf_on_alloc_exact(&pf_tls, p, size, domain);
}

static void note_free(void *p, int domain)
{
    if (p && pf_tls.guard == 0 && pf_objtable_maybe(p))
        pf_on_free_slow(&pf_tls, p, domain);
}

/* Repeated uploads: the last content hash sent from each (host address, length), to any destination. */
#define PF_UPLOADS 1024u
typedef struct upload {
    uintptr_t host, dst;
    uint64_t len, hash;
} upload_t;
static upload_t uploads[PF_UPLOADS];
static pf_spinlock_t uploads_lock;

static uint64_t content_hash(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        __builtin_memcpy(&w, b + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    for (; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* Judges an upload against the previous one of the same host buffer: the same bytes sent again (to the
 * same device buffer or another) were already on the device once. */
static void judge_upload(uint64_t copy_id, const void *dst, const void *host, size_t n)
{
    pf_tls_t *t = &pf_tls;
    if (!copy_id || n < 4096)
        return;
    t->compare_credit += (int64_t)(n / 8);
    if (t->compare_credit < (int64_t)n)
        return;     /* over this thread's compare budget (see pf_copies.c) */
    t->compare_credit -= (int64_t)n;
    t->guard++;
    uint64_t h = content_hash(host, n);
    uint32_t slot = (uint32_t)(((uintptr_t)host >> 4) ^ n) % PF_UPLOADS;
    pf_spin_lock(&uploads_lock);
    upload_t *u = &uploads[slot];
    int seen = u->host == (uintptr_t)host && u->len == n;
    int same = seen && u->hash == h;
    u->host = (uintptr_t)host;
    u->dst = (uintptr_t)dst;
    u->len = n;
    u->hash = h;
    pf_spin_unlock(&uploads_lock);
    if (seen)
        pf_copy_write_verdict(t, copy_id, same ? PF_VERDICT_REDUNDANT : PF_VERDICT_MODIFIED, n,
                              PF_EVIDENCE_CONTENT_HASH);
    t->guard--;
}

/* cudaMemcpyKind: 0 host->host, 1 host->device, 2 device->host, 3 device->device, 4 default (unified). */
static int copy_kind(int kind, const void *dst, const void *src)
{
    switch (kind) {
    case 0: return PF_COPY_H2H;
    case 1: return PF_COPY_H2D;
    case 2: return PF_COPY_D2H;
    case 3: return PF_COPY_D2D;
    default: {
        int d = tracked_gpu(dst), s = tracked_gpu(src);
        return d && s ? PF_COPY_D2D : d ? PF_COPY_H2D : s ? PF_COPY_D2H : PF_COPY_H2H;
    }
    }
}

static void note_copy(void *dst, const void *src, size_t n, int kind)
{
    if (pf_tls.guard != 0 || n == 0)
        return;
    uint64_t id = pf_on_copy_exact(&pf_tls, dst, src, n, kind);
    if (kind == PF_COPY_H2D)
        judge_upload(id, dst, src, n);
}

/* ---- the hooks ---- */

/* Calls the real fn (same signature as our hook of that name), or fails as CUDA without a driver would.
 * The guard is raised during the call: the runtime API calls driver entry points that are hooked too, and
 * a cudaMalloc must count once, not again as the cuMemAlloc inside it. */
#define CALL(fn, ...)                                                                                        \
    __typeof__(&fn) f = (__typeof__(&fn))real(F_##fn);                                                       \
    if (!f)                                                                                                  \
        return PF_CUDA_NOT_INITIALIZED;                                                                      \
    pf_tls.guard++;                                                                                          \
    pf_cuda_status_t rc = f(__VA_ARGS__);                                                                    \
    pf_tls.guard--

PF_EXPORT pf_cuda_status_t cudaMalloc(void **p, size_t size)
{
    CALL(cudaMalloc, p, size);
    if (rc == 0)
        note_alloc(*p, size, PF_DOMAIN_GPU);
    return rc;
}

PF_EXPORT pf_cuda_status_t cudaMallocManaged(void **p, size_t size, unsigned flags)
{
    CALL(cudaMallocManaged, p, size, flags);
    if (rc == 0)
        note_alloc(*p, size, PF_DOMAIN_GPU);
    return rc;
}

PF_EXPORT pf_cuda_status_t cudaMallocAsync(void **p, size_t size, void *stream)
{
    CALL(cudaMallocAsync, p, size, stream);
    if (rc == 0)
        note_alloc(*p, size, PF_DOMAIN_GPU);
    return rc;
}

PF_EXPORT pf_cuda_status_t cudaMallocHost(void **p, size_t size)
{
    CALL(cudaMallocHost, p, size);
    if (rc == 0)
        note_alloc(*p, size, PF_DOMAIN_MALLOC);   /* pinned host RAM */
    return rc;
}

PF_EXPORT pf_cuda_status_t cudaFree(void *p)
{
    note_free(p, PF_DOMAIN_GPU);
    CALL(cudaFree, p);
    return rc;
}

PF_EXPORT pf_cuda_status_t cudaFreeAsync(void *p, void *stream)
{
    note_free(p, PF_DOMAIN_GPU);
    CALL(cudaFreeAsync, p, stream);
    return rc;
}

PF_EXPORT pf_cuda_status_t cudaFreeHost(void *p)
{
    note_free(p, PF_DOMAIN_MALLOC);
    CALL(cudaFreeHost, p);
    return rc;
}

PF_EXPORT pf_cuda_status_t cudaMemcpy(void *dst, const void *src, size_t n, int kind)
{
    CALL(cudaMemcpy, dst, src, n, kind);
    if (rc == 0)
        note_copy(dst, src, n, copy_kind(kind, dst, src));
    return rc;
}

PF_EXPORT pf_cuda_status_t cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *stream)
{
    CALL(cudaMemcpyAsync, dst, src, n, kind, stream);
    if (rc == 0)
        note_copy(dst, src, n, copy_kind(kind, dst, src));
    return rc;
}

PF_EXPORT pf_cuda_status_t cuMemAlloc_v2(pf_cudeviceptr_t *p, size_t size)
{
    CALL(cuMemAlloc_v2, p, size);
    if (rc == 0)
        note_alloc((void *)(uintptr_t)*p, size, PF_DOMAIN_GPU);
    return rc;
}

PF_EXPORT pf_cuda_status_t cuMemAllocManaged(pf_cudeviceptr_t *p, size_t size, unsigned flags)
{
    CALL(cuMemAllocManaged, p, size, flags);
    if (rc == 0)
        note_alloc((void *)(uintptr_t)*p, size, PF_DOMAIN_GPU);
    return rc;
}

PF_EXPORT pf_cuda_status_t cuMemFree_v2(pf_cudeviceptr_t p)
{
    note_free((void *)(uintptr_t)p, PF_DOMAIN_GPU);
    CALL(cuMemFree_v2, p);
    return rc;
}

PF_EXPORT pf_cuda_status_t cuMemcpy(pf_cudeviceptr_t dst, pf_cudeviceptr_t src, size_t n)
{
    CALL(cuMemcpy, dst, src, n);
    if (rc == 0)
        note_copy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n,
                  copy_kind(4, (void *)(uintptr_t)dst, (void *)(uintptr_t)src));
    return rc;
}

PF_EXPORT pf_cuda_status_t cuMemcpyHtoD_v2(pf_cudeviceptr_t dst, const void *src, size_t n)
{
    CALL(cuMemcpyHtoD_v2, dst, src, n);
    if (rc == 0)
        note_copy((void *)(uintptr_t)dst, src, n, PF_COPY_H2D);
    return rc;
}

PF_EXPORT pf_cuda_status_t cuMemcpyDtoH_v2(void *dst, pf_cudeviceptr_t src, size_t n)
{
    CALL(cuMemcpyDtoH_v2, dst, src, n);
    if (rc == 0)
        note_copy(dst, (const void *)(uintptr_t)src, n, PF_COPY_D2H);
    return rc;
}

PF_EXPORT pf_cuda_status_t cuMemcpyDtoD_v2(pf_cudeviceptr_t dst, pf_cudeviceptr_t src, size_t n)
{
    CALL(cuMemcpyDtoD_v2, dst, src, n);
    if (rc == 0)
        note_copy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, PF_COPY_D2D);
    return rc;
}

PF_EXPORT pf_cuda_status_t cuMemcpyHtoDAsync_v2(pf_cudeviceptr_t dst, const void *src, size_t n, void *stream)
{
    CALL(cuMemcpyHtoDAsync_v2, dst, src, n,
         stream);
    if (rc == 0)
        note_copy((void *)(uintptr_t)dst, src, n, PF_COPY_H2D);
    return rc;
}

PF_EXPORT pf_cuda_status_t cuMemcpyDtoHAsync_v2(void *dst, pf_cudeviceptr_t src, size_t n, void *stream)
{
    CALL(cuMemcpyDtoHAsync_v2, dst, src, n, stream);
    if (rc == 0)
        note_copy(dst, (const void *)(uintptr_t)src, n, PF_COPY_D2H);
    return rc;
}

/* ---- entry points handed out by name: cuGetProcAddress, cudaGetDriverEntryPoint ---- */

/* The hook for a driver symbol as these calls name it ("cuMemAlloc", the version picks the _v2 ABI), or
 * F_COUNT when it is not one pyflow hooks. */
static enum pf_cuda_fn driver_entry(const char *symbol)
{
    static const struct { const char *base; enum pf_cuda_fn fn; } map[] = {
        {"cuMemAlloc", F_cuMemAlloc_v2}, {"cuMemFree", F_cuMemFree_v2}, {"cuMemAllocManaged", F_cuMemAllocManaged},
        {"cuMemcpy", F_cuMemcpy}, {"cuMemcpyHtoD", F_cuMemcpyHtoD_v2}, {"cuMemcpyDtoH", F_cuMemcpyDtoH_v2},
        {"cuMemcpyDtoD", F_cuMemcpyDtoD_v2}, {"cuMemcpyHtoDAsync", F_cuMemcpyHtoDAsync_v2},
        {"cuMemcpyDtoHAsync", F_cuMemcpyDtoHAsync_v2},
    };
    if (!symbol)
        return F_COUNT;
    size_t n = strlen(symbol);
    if (n > 3 && strcmp(symbol + n - 3, "_v2") == 0)
        n -= 3;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strlen(map[i].base) == n && strncmp(symbol, map[i].base, n) == 0)
            return map[i].fn;
    return F_COUNT;
}

/* After a successful lookup: keep the real pointer, hand out the hook. */
static void swap_entry(const char *symbol, void **pfn)
{
    enum pf_cuda_fn fn = driver_entry(symbol);
    if (fn == F_COUNT || !pfn || !*pfn || *pfn == hook_fn[fn])
        return;
    void *expected = NULL;
    __atomic_compare_exchange_n(&real_fn[fn], &expected, *pfn, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
    *pfn = hook_fn[fn];
}

PF_EXPORT pf_cuda_status_t cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags)
{
    CALL(cuGetProcAddress, symbol, pfn, version, flags);
    if (rc == 0)
        swap_entry(symbol, pfn);
    return rc;
}

PF_EXPORT pf_cuda_status_t cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags,
                                               void *status)
{
    CALL(cuGetProcAddress_v2, symbol, pfn, version, flags, status);
    if (rc == 0)
        swap_entry(symbol, pfn);
    return rc;
}

PF_EXPORT pf_cuda_status_t cudaGetDriverEntryPoint(const char *symbol, void **pfn, unsigned long long flags,
                                                   void *status)
{
    CALL(cudaGetDriverEntryPoint, symbol, pfn, flags, status);
    if (rc == 0)
        swap_entry(symbol, pfn);
    return rc;
}

PF_EXPORT pf_cuda_status_t cudaGetDriverEntryPointByVersion(const char *symbol, void **pfn, unsigned version,
                                                            unsigned long long flags, void *status)
{
    CALL(cudaGetDriverEntryPointByVersion, symbol, pfn, version, flags, status);
    if (rc == 0)
        swap_entry(symbol, pfn);
    return rc;
}

__attribute__((constructor)) static void fill_hooks(void)
{
    void *mine[F_COUNT] = {
        cudaMalloc, cudaFree, cudaMallocManaged, cudaMallocHost, cudaFreeHost, cudaMallocAsync, cudaFreeAsync,
        cudaMemcpy, cudaMemcpyAsync, cuMemAlloc_v2, cuMemFree_v2, cuMemAllocManaged, cuMemcpy, cuMemcpyHtoD_v2,
        cuMemcpyDtoH_v2, cuMemcpyDtoD_v2, cuMemcpyHtoDAsync_v2, cuMemcpyDtoHAsync_v2, cuGetProcAddress,
        cuGetProcAddress_v2, cudaGetDriverEntryPoint, cudaGetDriverEntryPointByVersion,
    };
    memcpy(hook_fn, mine, sizeof mine);
}

/* ---- dlsym ---- */

/* Which hooked function a name is, or F_COUNT. Names are short: a linear scan of 22 is fine here (dlsym
 * itself costs a symbol-table walk). */
static enum pf_cuda_fn hooked_name(const char *name)
{
    if (!name || (name[0] != 'c' || name[1] != 'u'))
        return F_COUNT;
    for (int i = 0; i < F_COUNT; i++)
        if (strcmp(name, fn_names[i]) == 0)
            return (enum pf_cuda_fn)i;
    return F_COUNT;
}

static void *dlsym_lookup(void *handle, const char *name)
{
    void *f = real_dlsym(handle, name);
    enum pf_cuda_fn fn = hooked_name(name);
    if (fn == F_COUNT || !f || f == hook_fn[fn] || !hook_fn[fn])
        return f;
    /* a library really defines it: remember it as the real one and hand out the hook */
    void *expected = NULL;
    __atomic_compare_exchange_n(&real_fn[fn], &expected, f, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
    return hook_fn[fn];
}

PF_EXPORT void *dlsym(void *handle, const char *name)
{
    init_real_dlsym();
    if (handle == RTLD_NEXT)
        return real_dlsym(handle, name);   /* tail call: glibc must see our caller, not us */
    return dlsym_lookup(handle, name);
}
