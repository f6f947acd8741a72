/* pf_bootstrap.c - the real allocator functions, found lazily, and the small heap that serves the calls
 * dlsym itself makes while they are being found.
 *
 * pf_real starts out pointing at trampolines: the first call of any hook (which can come before pyflow's
 * constructor, from another library's constructor or the loader) resolves everything with
 * dlsym(RTLD_NEXT), so an existing LD_PRELOAD allocator after pyflow is chained, not replaced. While dlsym
 * runs, allocation requests are served from a static bump heap; a block carries its size just before it,
 * so realloc and malloc_usable_size work on it, and free of it is ignored.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>

#include "pf_hooks_int.h"

#define PF_BOOTSTRAP_BYTES (256u * 1024u)

static char heap[PF_BOOTSTRAP_BYTES] __attribute__((aligned(64)));
static size_t heap_used;     /* atomic */
static int resolving;        /* atomic: 1 while dlsym runs */
static int resolved;

void *pf_bootstrap_alloc(size_t size, size_t align)
{
    if (align < 16)
        align = 16;
    for (;;) {
        size_t used = __atomic_load_n(&heap_used, __ATOMIC_RELAXED);
        size_t start = (used + sizeof(size_t) + align - 1) & ~(align - 1);
        size_t end = start + size;
        if (end > PF_BOOTSTRAP_BYTES || end < start)
            return NULL;
        if (__atomic_compare_exchange_n(&heap_used, &used, end, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            ((size_t *)(heap + start))[-1] = size;
            return heap + start;    /* static memory is zeroed: calloc needs nothing more */
        }
    }
}

int pf_bootstrap_owns(const void *p)
{
    return (const char *)p >= heap && (const char *)p < heap + PF_BOOTSTRAP_BYTES;
}

int pf_rt_resolving(void)
{
    return __atomic_load_n(&resolving, __ATOMIC_ACQUIRE);
}

/* The table starts out at the trampolines (one per hooked function, below). */
#define PF_X_EARLY_DECL(field, symbol, ret, params) static ret early_##field params;
PF_HOOKED_FNS(PF_X_EARLY_DECL)
#undef PF_X_EARLY_DECL

#define PF_X_EARLY_INIT(field, symbol, ret, params) .field = early_##field,
pf_real_fns_t pf_real = {PF_HOOKED_FNS(PF_X_EARLY_INIT)};
#undef PF_X_EARLY_INIT

#define PF_X_RESOLVE(field, symbol, ret, params)                                                 \
    do {                                                                                         \
        void *f = dlsym(RTLD_NEXT, symbol);                                                      \
        if (f)                                                                                   \
            __atomic_store_n((void **)&pf_real.field, f, __ATOMIC_RELEASE);                      \
    } while (0);

void pf_rt_resolve_real(void)
{
    if (__atomic_load_n(&resolved, __ATOMIC_ACQUIRE))
        return;
    int expected = 0;
    if (!__atomic_compare_exchange_n(&resolving, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return;     /* another thread (or dlsym re-entering us) is resolving: callers use the bootstrap heap */
    PF_HOOKED_FNS(PF_X_RESOLVE)
    __atomic_store_n(&resolved, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&resolving, 0, __ATOMIC_RELEASE);
}
#undef PF_X_RESOLVE

/* Each trampoline resolves, then calls the real function, or falls back to the bootstrap heap while the
 * real one is still unknown (we are inside dlsym). */
#define PF_READY(field, early) (pf_rt_resolve_real(), pf_real.field != early)

static void *early_malloc(size_t size)
{
    return PF_READY(malloc, early_malloc) ? pf_real.malloc(size) : pf_bootstrap_alloc(size, 16);
}

static void early_free(void *p)
{
    if (!pf_bootstrap_owns(p) && PF_READY(free, early_free))
        pf_real.free(p);
}

static void *early_calloc(size_t n, size_t size)
{
    if (PF_READY(calloc, early_calloc))
        return pf_real.calloc(n, size);
    if (size && n > (size_t)-1 / size)
        return NULL;
    return pf_bootstrap_alloc(n * size, 16);
}

static void *early_realloc(void *p, size_t size)
{
    if (PF_READY(realloc, early_realloc))
        return pf_real.realloc(p, size);
    void *q = pf_bootstrap_alloc(size, 16);
    if (q && p)
        memcpy(q, p, ((size_t *)p)[-1] < size ? ((size_t *)p)[-1] : size);
    return q;
}

static int early_posix_memalign(void **out, size_t align, size_t size)
{
    if (PF_READY(posix_memalign, early_posix_memalign))
        return pf_real.posix_memalign(out, align, size);
    *out = pf_bootstrap_alloc(size, align);
    return *out ? 0 : 12 /* ENOMEM */;
}

static void *early_aligned_alloc(size_t align, size_t size)
{
    return PF_READY(aligned_alloc, early_aligned_alloc) ? pf_real.aligned_alloc(align, size)
                                                        : pf_bootstrap_alloc(size, align);
}

static void *early_memalign(size_t align, size_t size)
{
    return PF_READY(memalign, early_memalign) ? pf_real.memalign(align, size) : pf_bootstrap_alloc(size, align);
}

static void *early_valloc(size_t size)
{
    return PF_READY(valloc, early_valloc) ? pf_real.valloc(size) : pf_bootstrap_alloc(size, 4096);
}

static void *early_pvalloc(size_t size)
{
    return PF_READY(pvalloc, early_pvalloc) ? pf_real.pvalloc(size) : pf_bootstrap_alloc(size, 4096);
}

static size_t early_malloc_usable_size(void *p)
{
    if (pf_bootstrap_owns(p))
        return ((size_t *)p)[-1];
    return PF_READY(malloc_usable_size, early_malloc_usable_size) ? pf_real.malloc_usable_size(p) : 0;
}

/* mmap and friends never need the bootstrap heap: fall back to the raw system call. */
#include <sys/syscall.h>
#include <unistd.h>

static void *raw_mmap(void *a, size_t l, int p, int f, int fd, off_t o)
{
    long r = syscall(SYS_mmap, a, l, p, f, fd, o);
    return (r < 0 && r > -4096) ? MAP_FAILED : (void *)r;
}

static void *early_mmap(void *a, size_t l, int p, int f, int fd, off_t o)
{
    return PF_READY(mmap, early_mmap) ? pf_real.mmap(a, l, p, f, fd, o) : raw_mmap(a, l, p, f, fd, o);
}

static void *early_mmap64(void *a, size_t l, int p, int f, int fd, off_t o)
{
    return PF_READY(mmap64, early_mmap64) ? pf_real.mmap64(a, l, p, f, fd, o) : raw_mmap(a, l, p, f, fd, o);
}

static int early_munmap(void *a, size_t l)
{
    return PF_READY(munmap, early_munmap) ? pf_real.munmap(a, l) : (int)syscall(SYS_munmap, a, l);
}

static int early_pipe2(int *fds, int flags)
{
    return PF_READY(pipe2, early_pipe2) ? pf_real.pipe2(fds, flags) : (int)syscall(SYS_pipe2, fds, flags);
}

/* dlclose has no system call under it: before the real one is found, the handle stays open (unloading is
 * only ever a saving). */
static int early_dlclose(void *h)
{
    return PF_READY(dlclose, early_dlclose) ? pf_real.dlclose(h) : 0;
}

static void *early_mremap(void *a, size_t ol, size_t nl, int f, ...)
{
    va_list ap;
    va_start(ap, f);
    void *na = (f & MREMAP_FIXED) ? va_arg(ap, void *) : NULL;
    va_end(ap);
    if (PF_READY(mremap, early_mremap))
        return pf_real.mremap(a, ol, nl, f, na);
    long r = syscall(SYS_mremap, a, ol, nl, f, na);
    return (r < 0 && r > -4096) ? MAP_FAILED : (void *)r;
}

/* Copies needed before the real functions are known (inside dlsym) use a plain loop that the compiler
 * must not turn back into a memmove call. */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) static void *slow_move(void *d, const void *s,
                                                                                    size_t n)
{
    volatile unsigned char *dp = d;
    const unsigned char *sp = s;
    if (dp < sp)
        for (size_t i = 0; i < n; i++)
            dp[i] = sp[i];
    else
        for (size_t i = n; i > 0; i--)
            dp[i - 1] = sp[i - 1];
    return d;
}

static void *early_memcpy(void *d, const void *s, size_t n)
{
    return PF_READY(memcpy, early_memcpy) ? pf_real.memcpy(d, s, n) : slow_move(d, s, n);
}

static void *early_memmove(void *d, const void *s, size_t n)
{
    return PF_READY(memmove, early_memmove) ? pf_real.memmove(d, s, n) : slow_move(d, s, n);
}

static void *early_mempcpy(void *d, const void *s, size_t n)
{
    return PF_READY(mempcpy, early_mempcpy) ? pf_real.mempcpy(d, s, n) : (char *)slow_move(d, s, n) + n;
}

static void *early_memcpy_chk(void *d, const void *s, size_t n, size_t dl)
{
    return PF_READY(memcpy_chk, early_memcpy_chk) ? pf_real.memcpy_chk(d, s, n, dl) : slow_move(d, s, n);
}

static void *early_memmove_chk(void *d, const void *s, size_t n, size_t dl)
{
    return PF_READY(memmove_chk, early_memmove_chk) ? pf_real.memmove_chk(d, s, n, dl) : slow_move(d, s, n);
}
