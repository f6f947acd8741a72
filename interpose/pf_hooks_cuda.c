/* pf_hooks_cuda.c - GPU memory: the CUDA runtime and driver allocators and copies.
 *
 * How calls reach these hooks, whether the program links CUDA or loads it late (PyTorch, CuPy):
 *  - through the PLT: libpyflow.so is preloaded, so its definitions of cudaMalloc & co. come first in the
 *    global scope and bind the calls of every library loaded later, RTLD_LOCAL ones included (an extension
 *    module linked against libcudart, libc10_cuda.so);
 *  - through dlsym/dlvsym (ctypes, libcudart fetching the driver from libcuda.so.1): both are interposed,
 *    and hand out the hook for a hooked name when the lookup really finds a CUDA definition, remembering
 *    that definition as the real function;
 *  - through cuGetProcAddress(_v2) / cudaGetDriverEntryPoint(ByVersion), how CUDA >= 11.3 runtimes and
 *    frameworks reach the driver: the real pointer handed out is kept and the hook handed out instead,
 *    cuGetProcAddress's own included (a statically linked runtime, CuPy's, looks everything up through
 *    the cuGetProcAddress it asked cuGetProcAddress for).
 * Finding the real functions, and keeping dlsym truthful, is pf_cuda_lookup.c's part.
 *
 * What is counted:
 *  - device allocations are GPU bytes (PF_DOMAIN_GPU), every one recorded exactly (few and large);
 *  - a mapping of the virtual memory API (cuMemMap of a cuMemCreate handle) is a device allocation, ended
 *    by the cuMemUnmap covering it;
 *  - managed (unified) memory is GPU bytes too: it is reserved on the device and migrates on demand; the
 *    host RSS it may occupy while the CPU touches it is not counted twice;
 *  - pinned host memory (cudaMallocHost, cudaHostAlloc, cuMemAllocHost, cuMemHostAlloc) is host RAM that
 *    the driver maps and locks: it is counted as native (PF_DOMAIN_MALLOC), at the line that asked for it;
 *  - with a caching allocator (PyTorch, CuPy's pool) these are the reservations from the driver, charged to
 *    the line whose allocation made the cache grow; blocks the cache hands out again cost nothing more and
 *    are not seen, and a cached block freed by the program stays live until the cache releases it;
 *  - copies (2D copies: width x height bytes; peer copies between GPUs: d2d) become flow edges h2d / d2h /
 *    d2d / h2h with bytes and the copying line. The kind is the API's
 *    (cudaMemcpyKind, or the HtoD/DtoH/DtoD entry point); cudaMemcpyDefault and cuMemcpy (unified
 *    addressing) are classified by which ends lie inside a live GPU block (a range table here, so a view
 *    into a block counts, not only its first byte);
 *  - an upload of the same host bytes again from the same host buffer (to any device buffer) is a
 *    redundant copy: a 64-bit content hash per (host address, length), evidence PF_EVIDENCE_CONTENT_HASH,
 *    within the thread's compare budget. Only uploads whose host end is known to be host memory are hashed
 *    (an explicit host-to-device API or kind, and a source that is not a tracked GPU/managed block): device
 *    memory read from the host would fault.
 * Invariants: the guard is raised around every real CUDA call, so a cudaMalloc counts once and not again as
 * the cuMemAlloc (or mmap, malloc) inside it; frees are reported before the real free; no stdio, no malloc.
 */
#include <string.h>

#include "pf_cuda_int.h"
#include "pf_sys.h"

#define PF_CUDA_NOT_INITIALIZED 3   /* cudaErrorInitializationError == CUDA_ERROR_NOT_INITIALIZED == 3 */
#define PF_CUDA_PER_THREAD_STREAM 2 /* CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, cudaEnablePerThread... */
#define PF_CUDA_V2_SINCE 3020       /* the CUDA version whose ABI the _v2 entry points are */
#define PF_CUDA_VMM_SINCE 10020     /* the virtual memory API (cuMemCreate, cuMemMap) appeared (CUDA 10.2) */
#define PF_CUDA_GPA_SINCE 11030     /* cuGetProcAddress appeared (CUDA 11.3) */
#define PF_CUDA_GPA_V2_SINCE 12000  /* and took its _v2 ABI, with a status argument (CUDA 12.0) */
#define PF_UPLOAD_MIN_BYTES 4096u   /* smaller uploads are not worth a verdict */

/* ---- live GPU ranges ----
 * The object table is keyed by start address, but copies name any byte of a device block (a PyTorch tensor
 * is a view into a cached segment). Classifying a cudaMemcpyDefault / cuMemcpy end, and telling managed
 * memory from host memory, needs "which GPU block contains p": a sorted array of live GPU ranges, one
 * short lock, binary search. GPU blocks are few (thousands) and large, so inserts that shift the array are
 * rare enough. */
typedef struct gpu_range {
    uintptr_t start, end;
} gpu_range_t;

static struct {
    pf_spinlock_t lock;
    gpu_range_t *v;         /* sorted by start; raw pages, grown by doubling */
    size_t n, cap;
} gpu_ranges;

/* Index of the first range whose start is > p. Caller holds the lock. */
static size_t ranges_upper(uintptr_t p)
{
    size_t lo = 0, hi = gpu_ranges.n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (gpu_ranges.v[mid].start <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Records a live GPU block. Best effort: when pages cannot be mapped the block is not classified (its
 * copies fall back to the API's kind). */
static PF_NOINLINE void ranges_add(const void *p, size_t size)
{
    uintptr_t a = (uintptr_t)p;
    pf_spin_lock(&gpu_ranges.lock);
    if (gpu_ranges.n == gpu_ranges.cap) {
        size_t cap = gpu_ranges.cap ? gpu_ranges.cap * 2 : 4096;
        gpu_range_t *v = pf_sys_alloc_pages(cap * sizeof *v);
        if (!v) {
            pf_spin_unlock(&gpu_ranges.lock);
            return;
        }
        if (gpu_ranges.v) {
            __builtin_memcpy(v, gpu_ranges.v, gpu_ranges.n * sizeof *v);
            pf_sys_munmap(gpu_ranges.v, gpu_ranges.cap * sizeof *v);
        }
        gpu_ranges.v = v;
        gpu_ranges.cap = cap;
    }
    size_t i = ranges_upper(a);
    if (i > 0 && gpu_ranges.v[i - 1].start == a) {
        gpu_ranges.v[i - 1].end = a + size;      /* the address came back without our seeing a free */
    } else {
        __builtin_memmove(&gpu_ranges.v[i + 1], &gpu_ranges.v[i], (gpu_ranges.n - i) * sizeof *gpu_ranges.v);
        gpu_ranges.v[i] = (gpu_range_t){a, a + size};
        gpu_ranges.n++;
    }
    pf_spin_unlock(&gpu_ranges.lock);
}

static PF_NOINLINE void ranges_remove(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    pf_spin_lock(&gpu_ranges.lock);
    size_t i = ranges_upper(a);
    if (i > 0 && gpu_ranges.v[i - 1].start == a) {
        __builtin_memmove(&gpu_ranges.v[i - 1], &gpu_ranges.v[i], (gpu_ranges.n - i) * sizeof *gpu_ranges.v);
        gpu_ranges.n--;
    }
    pf_spin_unlock(&gpu_ranges.lock);
}

/* The start of the first live GPU block starting in [p, end), or 0 when none. */
static uintptr_t ranges_first_in(const void *p, uintptr_t end)
{
    uintptr_t a = (uintptr_t)p, found = 0;
    pf_spin_lock(&gpu_ranges.lock);
    size_t i = ranges_upper(a);
    if (i > 0 && gpu_ranges.v[i - 1].start == a)
        found = a;
    else if (i < gpu_ranges.n && gpu_ranges.v[i].start < end)
        found = gpu_ranges.v[i].start;
    pf_spin_unlock(&gpu_ranges.lock);
    return found;
}

/* 1 when p lies in a live GPU (device or managed) block pyflow saw allocated, else 0. */
static int tracked_gpu(const void *p)
{
    if (!__atomic_load_n(&gpu_ranges.n, __ATOMIC_RELAXED))
        return 0;
    uintptr_t a = (uintptr_t)p;
    pf_spin_lock(&gpu_ranges.lock);
    size_t i = ranges_upper(a);
    int in = i > 0 && a < gpu_ranges.v[i - 1].end;
    pf_spin_unlock(&gpu_ranges.lock);
    return in;
}

/* ---- recording ---- */

static inline void note_alloc(void *p, size_t size, int domain)
{
    if (PF_UNLIKELY(p != NULL && pf_tls.guard == 0)) {
        if (domain == PF_DOMAIN_GPU)
            ranges_add(p, size);
        pf_on_alloc_exact(&pf_tls, p, size, domain);
    }
}

static inline void note_free(void *p, int domain)
{
    if (!p || pf_tls.guard != 0)
        return;
    if (domain == PF_DOMAIN_GPU)
        ranges_remove(p);
    if (pf_objtable_maybe(p))
        pf_on_free_slow(&pf_tls, p, domain);
}

/* Ends every GPU block starting in [p, p + size): an unmap of the virtual memory API may cover several
 * mappings. */
static void note_free_range(void *p, size_t size)
{
    if (pf_tls.guard != 0)
        return;
    uintptr_t start;
    while ((start = ranges_first_in(p, (uintptr_t)p + size)) != 0)
        note_free((void *)start, PF_DOMAIN_GPU);
}

/* Repeated uploads: the last content hash sent from each (host address, length), to any destination.
 * Direct-mapped: a collision forgets the older buffer (a missed verdict, never a wrong one). */
#define PF_UPLOADS 1024u
typedef struct upload {
    uintptr_t host;
    uint64_t len, hash;
} upload_t;
static upload_t uploads[PF_UPLOADS];
static pf_spinlock_t uploads_lock;

/* A 64-bit hash of n bytes: four independent multiply-xor lanes over 32-byte blocks (so the multiplies
 * overlap, ~4x a single chain), folded at the end. Not cryptographic: a program would have to craft two
 * buffers to collide. */
static uint64_t content_hash(const void *p, size_t n)
{
    const unsigned char *b = p;
    const uint64_t k = 0xff51afd7ed558ccdull;
    uint64_t h0 = 0x9E3779B97F4A7C15ull ^ n, h1 = 0xC2B2AE3D27D4EB4Full, h2 = 0x165667B19E3779F9ull,
             h3 = 0x27D4EB2F165667C5ull;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        uint64_t w[4];
        __builtin_memcpy(w, b + i, 32);
        h0 = (h0 ^ w[0]) * k;
        h1 = (h1 ^ w[1]) * k;
        h2 = (h2 ^ w[2]) * k;
        h3 = (h3 ^ w[3]) * k;
        h0 ^= h0 >> 29;
        h1 ^= h1 >> 29;
        h2 ^= h2 >> 29;
        h3 ^= h3 >> 29;
    }
    uint64_t h = h0 ^ (h1 * 31) ^ (h2 * 961) ^ (h3 * 29791);
    for (; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    h ^= h >> 33;
    h *= k;
    return h ^ (h >> 33);
}

/* Judges an upload against the previous one from the same host buffer: the same bytes sent again (to the
 * same device buffer or another) were already on the device once. The compare credit was topped up by
 * pf_on_copy_exact for this copy (which never spends it on a copy with a GPU end). */
static PF_NOINLINE void judge_upload(uint64_t copy_id, const void *host, size_t n)
{
    pf_tls_t *t = &pf_tls;
    if (!copy_id || n < PF_UPLOAD_MIN_BYTES || t->compare_credit < (int64_t)n || tracked_gpu(host))
        return;     /* over this thread's compare budget (pf_copies.c), or a managed block as source */
    t->compare_credit -= (int64_t)n;
    pf_guard_enter(t);
    uint64_t h = content_hash(host, n);
    uint32_t slot = (uint32_t)((((uintptr_t)host >> 4) ^ n) * 0x9E3779B1u >> 8) % PF_UPLOADS;
    pf_spin_lock(&uploads_lock);
    upload_t *u = &uploads[slot];
    int seen = u->host == (uintptr_t)host && u->len == n;
    int same = seen && u->hash == h;
    u->host = (uintptr_t)host;
    u->len = n;
    u->hash = h;
    pf_spin_unlock(&uploads_lock);
    if (seen)
        pf_copy_write_verdict(t, copy_id, same ? PF_VERDICT_REDUNDANT : PF_VERDICT_MODIFIED, n,
                              PF_EVIDENCE_CONTENT_HASH);
    pf_guard_leave(t);
}

/* cudaMemcpyKind: 0 host->host, 1 host->device, 2 device->host, 3 device->device, 4 default (unified:
 * the ends say). Returns a PF_COPY_* kind. */
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

/* Records a finished copy; kind is the cudaMemcpyKind the API implies. Only an explicit host-to-device copy
 * has a source known to be host memory, whose bytes may be hashed: one classified by its tracked ends may
 * come from device memory pyflow never saw allocated. A 2D copy's bytes are hashed only when its rows lie
 * back to back (pitch = width): otherwise the n bytes from src are not what was sent. */
static inline void note_copy_rows(void *dst, const void *src, size_t n, int kind, int contiguous)
{
    if (PF_LIKELY(pf_tls.guard != 0 || n == 0))
        return;
    int pf_kind = copy_kind(kind, dst, src);
    uint64_t id = pf_on_copy_exact(&pf_tls, dst, src, n, pf_kind);
    if (kind == 1 && contiguous)
        judge_upload(id, src, n);
}

static inline void note_copy(void *dst, const void *src, size_t n, int kind)
{
    note_copy_rows(dst, src, n, kind, 1);
}

#define DEV(p) ((void *)(uintptr_t)(p))

/* ---- the hooks ---- */

/* Calls the real fn (same signature as our hook of that name), or fails as CUDA without a driver would.
 * The guard is raised during the call: the runtime API calls driver entry points that are hooked too, and
 * a cudaMalloc must count once, not again as the cuMemAlloc inside it. */
#define CALL(fn, ...)                                                                                        \
    __typeof__(&fn) f = (__typeof__(&fn))pf_cuda_real(F_##fn);                                               \
    if (PF_UNLIKELY(!f))                                                                                     \
        return PF_CUDA_NOT_INITIALIZED;                                                                      \
    pf_guard_enter(&pf_tls);                                                                                 \
    pf_cuda_status_t rc = f(__VA_ARGS__);                                                                    \
    pf_guard_leave(&pf_tls)

/* Allocation hooks: the pointer out-parameter is read only on success. */
#define ALLOC_HOOK(fn, domain, params, args)                                                          \
    PF_EXPORT pf_cuda_status_t fn params                                                                     \
    {                                                                                                        \
        CALL(fn, args);                                                                                      \
        if (rc == 0)                                                                                         \
            note_alloc(DEV(*p), size, domain);                                                               \
        return rc;                                                                                           \
    }
#define FREE_HOOK(fn, domain, params, args)                                                                  \
    PF_EXPORT pf_cuda_status_t fn params                                                                     \
    {                                                                                                        \
        note_free(DEV(p), domain);                                                                           \
        CALL(fn, args);                                                                                      \
        return rc;                                                                                           \
    }
#define ARGS(...) __VA_ARGS__

ALLOC_HOOK(cudaMalloc, PF_DOMAIN_GPU, (void **p, size_t size), ARGS(p, size))
ALLOC_HOOK(cudaMallocManaged, PF_DOMAIN_GPU, (void **p, size_t size, unsigned flags), ARGS(p, size, flags))
ALLOC_HOOK(cudaMallocAsync, PF_DOMAIN_GPU, (void **p, size_t size, void *stream), ARGS(p, size, stream))
ALLOC_HOOK(cudaMallocAsync_ptsz, PF_DOMAIN_GPU, (void **p, size_t size, void *stream), ARGS(p, size, stream))
ALLOC_HOOK(cudaMallocHost, PF_DOMAIN_MALLOC, (void **p, size_t size), ARGS(p, size))
ALLOC_HOOK(cudaHostAlloc, PF_DOMAIN_MALLOC, (void **p, size_t size, unsigned flags), ARGS(p, size, flags))
ALLOC_HOOK(cuMemAlloc_v2, PF_DOMAIN_GPU, (pf_cudeviceptr_t *p, size_t size), ARGS(p, size))
ALLOC_HOOK(cuMemAllocManaged, PF_DOMAIN_GPU, (pf_cudeviceptr_t *p, size_t size, unsigned flags),
           ARGS(p, size, flags))
ALLOC_HOOK(cuMemAllocAsync, PF_DOMAIN_GPU, (pf_cudeviceptr_t *p, size_t size, void *stream),
           ARGS(p, size, stream))
ALLOC_HOOK(cuMemAllocAsync_ptsz, PF_DOMAIN_GPU, (pf_cudeviceptr_t *p, size_t size, void *stream),
           ARGS(p, size, stream))
/* From a memory pool of the program's own (cudaMemPoolCreate; CuPy's MemoryAsyncPool): freed by the
 * FreeAsync calls above, like cudaMallocAsync's. */
ALLOC_HOOK(cudaMallocFromPoolAsync, PF_DOMAIN_GPU, (void **p, size_t size, void *pool, void *stream),
           ARGS(p, size, pool, stream))
ALLOC_HOOK(cudaMallocFromPoolAsync_ptsz, PF_DOMAIN_GPU, (void **p, size_t size, void *pool, void *stream),
           ARGS(p, size, pool, stream))
ALLOC_HOOK(cuMemAllocFromPoolAsync, PF_DOMAIN_GPU, (pf_cudeviceptr_t *p, size_t size, void *pool, void *stream),
           ARGS(p, size, pool, stream))
ALLOC_HOOK(cuMemAllocFromPoolAsync_ptsz, PF_DOMAIN_GPU,
           (pf_cudeviceptr_t *p, size_t size, void *pool, void *stream), ARGS(p, size, pool, stream))
ALLOC_HOOK(cuMemAllocHost_v2, PF_DOMAIN_MALLOC, (void **p, size_t size), ARGS(p, size))
ALLOC_HOOK(cuMemHostAlloc, PF_DOMAIN_MALLOC, (void **p, size_t size, unsigned flags), ARGS(p, size, flags))

/* Pitched 2D allocations: rows of width bytes padded to the pitch the driver picks, height of them. */
PF_EXPORT pf_cuda_status_t cudaMallocPitch(void **p, size_t *pitch, size_t width, size_t height)
{
    CALL(cudaMallocPitch, p, pitch, width, height);
    if (rc == 0)
        note_alloc(*p, *pitch * height, PF_DOMAIN_GPU);
    return rc;
}

PF_EXPORT pf_cuda_status_t cuMemAllocPitch_v2(pf_cudeviceptr_t *p, size_t *pitch, size_t width, size_t height,
                                              unsigned element_bytes)
{
    CALL(cuMemAllocPitch_v2, p, pitch, width, height, element_bytes);
    if (rc == 0)
        note_alloc(DEV(*p), *pitch * height, PF_DOMAIN_GPU);
    return rc;
}

FREE_HOOK(cudaFree, PF_DOMAIN_GPU, (void *p), ARGS(p))
FREE_HOOK(cudaFreeAsync, PF_DOMAIN_GPU, (void *p, void *stream), ARGS(p, stream))
FREE_HOOK(cudaFreeAsync_ptsz, PF_DOMAIN_GPU, (void *p, void *stream), ARGS(p, stream))
FREE_HOOK(cudaFreeHost, PF_DOMAIN_MALLOC, (void *p), ARGS(p))
FREE_HOOK(cuMemFree_v2, PF_DOMAIN_GPU, (pf_cudeviceptr_t p), ARGS(p))
FREE_HOOK(cuMemFreeAsync, PF_DOMAIN_GPU, (pf_cudeviceptr_t p, void *stream), ARGS(p, stream))
FREE_HOOK(cuMemFreeAsync_ptsz, PF_DOMAIN_GPU, (pf_cudeviceptr_t p, void *stream), ARGS(p, stream))
FREE_HOOK(cuMemFreeHost, PF_DOMAIN_MALLOC, (void *p), ARGS(p))

/* The virtual memory API (cuMemCreate, then cuMemMap into a range from cuMemAddressReserve: PyTorch's
 * expandable segments): a mapping is the GPU block, at the line that mapped it. A physical handle alone
 * has no address to key it by or to find copies in; a handle mapped at two addresses (which no framework
 * pyflow knows of does) would count twice. */
PF_EXPORT pf_cuda_status_t cuMemMap(pf_cudeviceptr_t ptr, size_t size, size_t offset, unsigned long long handle,
                                    unsigned long long flags)
{
    CALL(cuMemMap, ptr, size, offset, handle, flags);
    if (rc == 0)
        note_alloc(DEV(ptr), size, PF_DOMAIN_GPU);
    return rc;
}

PF_EXPORT pf_cuda_status_t cuMemUnmap(pf_cudeviceptr_t ptr, size_t size)
{
    note_free_range(DEV(ptr), size);
    CALL(cuMemUnmap, ptr, size);
    return rc;
}

/* Copy hooks, each twice: the function, and its per-thread-default-stream variant (_ptds, _ptsz: what code
 * built with --default-stream per-thread calls, and what cuGetProcAddress hands out for the
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM flag), which runs its copy on another default stream and so
 * is another real function. args are parenthesized (ARGS unwraps them); note is the recording call. */
#define COPY_HOOK(fn, params, args, note)                                                                   \
    PF_EXPORT pf_cuda_status_t fn params                                                                     \
    {                                                                                                        \
        CALL(fn, ARGS args);                                                                                 \
        if (rc == 0)                                                                                         \
            note;                                                                                            \
        return rc;                                                                                           \
    }
#define COPY_HOOKS(fn, per_thread, params, args, note) \
    COPY_HOOK(fn, params, args, note) COPY_HOOK(per_thread, params, args, note)

COPY_HOOKS(cudaMemcpy, cudaMemcpy_ptds, (void *dst, const void *src, size_t n, int kind), (dst, src, n, kind),
           note_copy(dst, src, n, kind))
COPY_HOOKS(cudaMemcpyAsync, cudaMemcpyAsync_ptsz, (void *dst, const void *src, size_t n, int kind, void *stream),
           (dst, src, n, kind, stream), note_copy(dst, src, n, kind))
COPY_HOOKS(cuMemcpy, cuMemcpy_ptds, (pf_cudeviceptr_t dst, pf_cudeviceptr_t src, size_t n), (dst, src, n),
           note_copy(DEV(dst), DEV(src), n, 4))
COPY_HOOKS(cuMemcpyAsync, cuMemcpyAsync_ptsz, (pf_cudeviceptr_t dst, pf_cudeviceptr_t src, size_t n, void *stream),
           (dst, src, n, stream), note_copy(DEV(dst), DEV(src), n, 4))
COPY_HOOKS(cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds, (pf_cudeviceptr_t dst, const void *src, size_t n), (dst, src, n),
           note_copy(DEV(dst), src, n, 1))
COPY_HOOKS(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz,
           (pf_cudeviceptr_t dst, const void *src, size_t n, void *stream), (dst, src, n, stream),
           note_copy(DEV(dst), src, n, 1))
COPY_HOOKS(cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds, (void *dst, pf_cudeviceptr_t src, size_t n), (dst, src, n),
           note_copy(dst, DEV(src), n, 2))
COPY_HOOKS(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz, (void *dst, pf_cudeviceptr_t src, size_t n, void *stream),
           (dst, src, n, stream), note_copy(dst, DEV(src), n, 2))
COPY_HOOKS(cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds, (pf_cudeviceptr_t dst, pf_cudeviceptr_t src, size_t n),
           (dst, src, n), note_copy(DEV(dst), DEV(src), n, 3))
COPY_HOOKS(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz,
           (pf_cudeviceptr_t dst, pf_cudeviceptr_t src, size_t n, void *stream), (dst, src, n, stream),
           note_copy(DEV(dst), DEV(src), n, 3))

/* 2D copies: width bytes from each of height rows, pitches apart. */
COPY_HOOKS(cudaMemcpy2D, cudaMemcpy2D_ptds,
           (void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, int kind),
           (dst, dpitch, src, spitch, width, height, kind),
           note_copy_rows(dst, src, width * height, kind, spitch == width))
COPY_HOOKS(cudaMemcpy2DAsync, cudaMemcpy2DAsync_ptsz,
           (void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, int kind,
            void *stream),
           (dst, dpitch, src, spitch, width, height, kind, stream),
           note_copy_rows(dst, src, width * height, kind, spitch == width))

/* The driver's 2D copy names each end by memory type (CUDA_MEMCPY2D, the _v2 layout of cuda.h). */
typedef struct pf_cuda_memcpy2d {
    size_t src_x, src_y;
    int src_type;                   /* CUmemorytype: 1 host, 2 device, 3 array, 4 unified */
    const void *src_host;
    pf_cudeviceptr_t src_device;
    void *src_array;
    size_t src_pitch, dst_x, dst_y;
    int dst_type;
    void *dst_host;
    pf_cudeviceptr_t dst_device;
    void *dst_array;
    size_t dst_pitch, width, height;
} pf_cuda_memcpy2d_t;

/* An end's first byte, or NULL for a CUDA array (opaque: no address to attribute). */
static void *end_address(int type, const void *host, pf_cudeviceptr_t device, size_t x, size_t y, size_t pitch)
{
    uintptr_t base = type == 1 ? (uintptr_t)host : type == 2 || type == 4 ? (uintptr_t)device : 0;
    return base ? (void *)(base + y * pitch + x) : NULL;
}

/* The cudaMemcpyKind a driver copy's two memory types make (unified: classified by the ends). */
static int kind_of_types(int src_type, int dst_type)
{
    int from_host = src_type == 1, to_host = dst_type == 1;
    if (src_type == 4 || dst_type == 4)
        return 4;
    return from_host ? (to_host ? 0 : 1) : (to_host ? 2 : 3);
}

static void note_copy_2d(const pf_cuda_memcpy2d_t *c)
{
    if (!c || pf_tls.guard != 0)
        return;
    void *src = end_address(c->src_type, c->src_host, c->src_device, c->src_x, c->src_y, c->src_pitch);
    void *dst = end_address(c->dst_type, c->dst_host, c->dst_device, c->dst_x, c->dst_y, c->dst_pitch);
    if (!src || !dst)
        return;
    note_copy_rows(dst, src, c->width * c->height, kind_of_types(c->src_type, c->dst_type),
                   c->src_pitch == c->width);
}

COPY_HOOKS(cuMemcpy2D_v2, cuMemcpy2D_v2_ptds, (const pf_cuda_memcpy2d_t *copy), (copy), note_copy_2d(copy))
/* what a static CUDA runtime's cudaMemcpy2D calls (it fetches "cuMemcpy2DUnaligned", not "cuMemcpy2D") */
COPY_HOOKS(cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned_v2_ptds, (const pf_cuda_memcpy2d_t *copy), (copy),
           note_copy_2d(copy))
COPY_HOOKS(cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz, (const pf_cuda_memcpy2d_t *copy, void *stream),
           (copy, stream), note_copy_2d(copy))

/* 3D copies: width bytes from each of height rows of each of depth slices. The runtime names each end by a
 * pitched pointer and a position (cudaMemcpy3DParms), the driver by memory type (CUDA_MEMCPY3D, _v2
 * layout); an end that is a CUDA array has no address, and such a copy is left out. */
typedef struct pf_cuda_pitched {
    void *ptr;
    size_t pitch, xsize, ysize;
} pf_cuda_pitched_t;

typedef struct pf_cuda_memcpy3d_parms {
    void *src_array;
    size_t src_x, src_y, src_z;
    pf_cuda_pitched_t src;
    void *dst_array;
    size_t dst_x, dst_y, dst_z;
    pf_cuda_pitched_t dst;
    size_t width, height, depth;
    int kind;
} pf_cuda_memcpy3d_parms_t;

typedef struct pf_cuda_memcpy3d {
    size_t src_x, src_y, src_z, src_lod;
    int src_type;
    const void *src_host;
    pf_cudeviceptr_t src_device;
    void *src_array, *reserved0;
    size_t src_pitch, src_height, dst_x, dst_y, dst_z, dst_lod;
    int dst_type;
    void *dst_host;
    pf_cudeviceptr_t dst_device;
    void *dst_array, *reserved1;
    size_t dst_pitch, dst_height, width, height, depth;
} pf_cuda_memcpy3d_t;

static void note_copy_3d_parms(const pf_cuda_memcpy3d_parms_t *p)
{
    if (!p || p->src_array || p->dst_array || !p->src.ptr || !p->dst.ptr || pf_tls.guard != 0)
        return;
    void *src = (char *)p->src.ptr + (p->src_z * p->src.ysize + p->src_y) * p->src.pitch + p->src_x;
    void *dst = (char *)p->dst.ptr + (p->dst_z * p->dst.ysize + p->dst_y) * p->dst.pitch + p->dst_x;
    int contiguous = p->src.pitch == p->width && (p->depth <= 1 || p->src.ysize == p->height);
    note_copy_rows(dst, src, p->width * p->height * p->depth, p->kind, contiguous);
}

static void note_copy_3d(const pf_cuda_memcpy3d_t *c)
{
    if (!c || pf_tls.guard != 0)
        return;
    void *src = end_address(c->src_type, c->src_host, c->src_device, c->src_x, c->src_z * c->src_height + c->src_y,
                            c->src_pitch);
    void *dst = end_address(c->dst_type, c->dst_host, c->dst_device, c->dst_x, c->dst_z * c->dst_height + c->dst_y,
                            c->dst_pitch);
    if (!src || !dst)
        return;
    int contiguous = c->src_pitch == c->width && (c->depth <= 1 || c->src_height == c->height);
    note_copy_rows(dst, src, c->width * c->height * c->depth, kind_of_types(c->src_type, c->dst_type), contiguous);
}

COPY_HOOKS(cudaMemcpy3D, cudaMemcpy3D_ptds, (const pf_cuda_memcpy3d_parms_t *p), (p), note_copy_3d_parms(p))
COPY_HOOKS(cudaMemcpy3DAsync, cudaMemcpy3DAsync_ptsz, (const pf_cuda_memcpy3d_parms_t *p, void *stream), (p, stream),
           note_copy_3d_parms(p))
COPY_HOOKS(cuMemcpy3D_v2, cuMemcpy3D_v2_ptds, (const pf_cuda_memcpy3d_t *copy), (copy), note_copy_3d(copy))
COPY_HOOKS(cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz, (const pf_cuda_memcpy3d_t *copy, void *stream),
           (copy, stream), note_copy_3d(copy))

/* Copies between two GPUs' memory (the runtime's have no per-thread variants). */
COPY_HOOK(cudaMemcpyPeer, (void *dst, int dst_device, const void *src, int src_device, size_t n),
          (dst, dst_device, src, src_device, n), note_copy(dst, src, n, 3))
COPY_HOOK(cudaMemcpyPeerAsync, (void *dst, int dst_device, const void *src, int src_device, size_t n, void *stream),
          (dst, dst_device, src, src_device, n, stream), note_copy(dst, src, n, 3))
COPY_HOOKS(cuMemcpyPeer, cuMemcpyPeer_ptds,
           (pf_cudeviceptr_t dst, void *dst_ctx, pf_cudeviceptr_t src, void *src_ctx, size_t n),
           (dst, dst_ctx, src, src_ctx, n), note_copy(DEV(dst), DEV(src), n, 3))
COPY_HOOKS(cuMemcpyPeerAsync, cuMemcpyPeerAsync_ptsz,
           (pf_cudeviceptr_t dst, void *dst_ctx, pf_cudeviceptr_t src, void *src_ctx, size_t n, void *stream),
           (dst, dst_ctx, src, src_ctx, n, stream), note_copy(DEV(dst), DEV(src), n, 3))

/* ---- entry points handed out by name: cuGetProcAddress, cudaGetDriverEntryPoint ---- */

/* The hook for a driver symbol as these calls name it ("cuMemAlloc": the version picks the ABI), or
 * F_COUNT when pyflow does not hook it in that version. A _v2 hook is never handed out for an older
 * version (the v1 ABI has 32-bit device pointers). A stream-ordered function asked for in its
 * per-thread-default-stream variant (the flag) gets that variant's own hook, which calls the variant the
 * driver handed out: the copy runs on the default stream the caller asked for. */
static enum pf_cuda_fn driver_entry(const char *symbol, long version, unsigned long long flags)
{
#define NONE F_COUNT    /* not stream-ordered: one function whatever the flag */
    static const struct {
        const char *base;
        enum pf_cuda_fn fn;
        int since;                  /* minimum version for this ABI */
        enum pf_cuda_fn per_thread; /* the per-thread-default-stream variant's hook, or NONE */
    } map[] = {
        {"cuMemAlloc", F_cuMemAlloc_v2, PF_CUDA_V2_SINCE, NONE},
        {"cuMemFree", F_cuMemFree_v2, PF_CUDA_V2_SINCE, NONE},
        {"cuMemAllocManaged", F_cuMemAllocManaged, 0, NONE},
        {"cuMemAllocAsync", F_cuMemAllocAsync, 0, F_cuMemAllocAsync_ptsz},
        {"cuMemAllocFromPoolAsync", F_cuMemAllocFromPoolAsync, 0, F_cuMemAllocFromPoolAsync_ptsz},
        {"cuMemAllocPitch", F_cuMemAllocPitch_v2, PF_CUDA_V2_SINCE, NONE},
        {"cuMemFreeAsync", F_cuMemFreeAsync, 0, F_cuMemFreeAsync_ptsz},
        {"cuMemAllocHost", F_cuMemAllocHost_v2, PF_CUDA_V2_SINCE, NONE},
        {"cuMemHostAlloc", F_cuMemHostAlloc, 0, NONE},
        {"cuMemFreeHost", F_cuMemFreeHost, 0, NONE},
        {"cuMemcpy", F_cuMemcpy, 0, F_cuMemcpy_ptds},
        {"cuMemcpyAsync", F_cuMemcpyAsync, 0, F_cuMemcpyAsync_ptsz},
        {"cuMemcpyHtoD", F_cuMemcpyHtoD_v2, PF_CUDA_V2_SINCE, F_cuMemcpyHtoD_v2_ptds},
        {"cuMemcpyDtoH", F_cuMemcpyDtoH_v2, PF_CUDA_V2_SINCE, F_cuMemcpyDtoH_v2_ptds},
        {"cuMemcpyDtoD", F_cuMemcpyDtoD_v2, PF_CUDA_V2_SINCE, F_cuMemcpyDtoD_v2_ptds},
        {"cuMemcpyHtoDAsync", F_cuMemcpyHtoDAsync_v2, PF_CUDA_V2_SINCE, F_cuMemcpyHtoDAsync_v2_ptsz},
        {"cuMemcpyDtoHAsync", F_cuMemcpyDtoHAsync_v2, PF_CUDA_V2_SINCE, F_cuMemcpyDtoHAsync_v2_ptsz},
        {"cuMemcpyDtoDAsync", F_cuMemcpyDtoDAsync_v2, PF_CUDA_V2_SINCE, F_cuMemcpyDtoDAsync_v2_ptsz},
        {"cuMemcpy2D", F_cuMemcpy2D_v2, PF_CUDA_V2_SINCE, F_cuMemcpy2D_v2_ptds},
        {"cuMemcpy2DAsync", F_cuMemcpy2DAsync_v2, PF_CUDA_V2_SINCE, F_cuMemcpy2DAsync_v2_ptsz},
        {"cuMemcpy2DUnaligned", F_cuMemcpy2DUnaligned_v2, PF_CUDA_V2_SINCE, F_cuMemcpy2DUnaligned_v2_ptds},
        {"cuMemcpy3D", F_cuMemcpy3D_v2, PF_CUDA_V2_SINCE, F_cuMemcpy3D_v2_ptds},
        {"cuMemcpy3DAsync", F_cuMemcpy3DAsync_v2, PF_CUDA_V2_SINCE, F_cuMemcpy3DAsync_v2_ptsz},
        {"cuMemcpyPeer", F_cuMemcpyPeer, 0, F_cuMemcpyPeer_ptds},
        {"cuMemcpyPeerAsync", F_cuMemcpyPeerAsync, 0, F_cuMemcpyPeerAsync_ptsz},
        {"cuMemMap", F_cuMemMap, PF_CUDA_VMM_SINCE, NONE},
        {"cuMemUnmap", F_cuMemUnmap, PF_CUDA_VMM_SINCE, NONE},
        /* itself: a statically linked runtime (CuPy's) fetches cuGetProcAddress_v2 with dlsym, asks it
         * for "cuGetProcAddress", and looks every later entry point up through what it got. Handing out
         * libcuda's own there would take all of them past the hooks. Its ABI gained a status argument in
         * CUDA 12.0. */
        {"cuGetProcAddress", F_cuGetProcAddress_v2, PF_CUDA_GPA_V2_SINCE, NONE},
        {"cuGetProcAddress", F_cuGetProcAddress, PF_CUDA_GPA_SINCE, NONE},
    };
#undef NONE
    if (!symbol || symbol[0] != 'c' || symbol[1] != 'u')
        return F_COUNT;
    size_t n = strlen(symbol);
    if (n > 3 && strcmp(symbol + n - 3, "_v2") == 0)
        n -= 3;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)     /* the first ABI the version has */
        if (strlen(map[i].base) == n && strncmp(symbol, map[i].base, n) == 0 && version >= map[i].since)
            return (flags & PF_CUDA_PER_THREAD_STREAM) && map[i].per_thread != F_COUNT ? map[i].per_thread
                                                                                     : map[i].fn;
    return F_COUNT;
}

/* After a successful lookup: keep the real pointer, hand out the hook. */
static void swap_entry(const char *symbol, void **pfn, long version, unsigned long long flags)
{
    enum pf_cuda_fn fn = driver_entry(symbol, version, flags);
    if (fn == F_COUNT || !pfn || !*pfn || *pfn == pf_cuda_hooks[fn])
        return;
    pf_cuda_remember_real(fn, *pfn);
    *pfn = pf_cuda_hooks[fn];
}

PF_EXPORT pf_cuda_status_t cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags)
{
    CALL(cuGetProcAddress, symbol, pfn, version, flags);
    if (rc == 0)
        swap_entry(symbol, pfn, version, flags);
    return rc;
}

PF_EXPORT pf_cuda_status_t cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags,
                                               void *status)
{
    CALL(cuGetProcAddress_v2, symbol, pfn, version, flags, status);
    if (rc == 0)
        swap_entry(symbol, pfn, version, flags);
    return rc;
}

/* No version argument: the runtime asks for its own (CUDA >= 11.3), past every _v2 ABI; but which of
 * cuGetProcAddress's two ABIs it is cannot be known here, so that one is left unswapped (version 3020
 * matches the _v2 ABIs and not cuGetProcAddress's). */
PF_EXPORT pf_cuda_status_t cudaGetDriverEntryPoint(const char *symbol, void **pfn, unsigned long long flags,
                                                   void *status)
{
    CALL(cudaGetDriverEntryPoint, symbol, pfn, flags, status);
    if (rc == 0)
        swap_entry(symbol, pfn, PF_CUDA_V2_SINCE, flags);
    return rc;
}

PF_EXPORT pf_cuda_status_t cudaGetDriverEntryPointByVersion(const char *symbol, void **pfn, unsigned version,
                                                            unsigned long long flags, void *status)
{
    CALL(cudaGetDriverEntryPointByVersion, symbol, pfn, version, flags, status);
    if (rc == 0)
        swap_entry(symbol, pfn, (long)version, flags);
    return rc;
}

/* Our own definitions, by hidden aliases: the address of this object's function even if another preload
 * defined the same name first. */
#define PF_X_ALIAS(n) extern __typeof__(n) pf_hook_##n __attribute__((alias(#n), visibility("hidden")));
PF_CUDA_FNS(PF_X_ALIAS)
#define PF_X_HOOK(n) (void *)pf_hook_##n,
void *const pf_cuda_hooks[F_COUNT] = {PF_CUDA_FNS(PF_X_HOOK)};
