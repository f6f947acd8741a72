/* pf_hooks_malloc.c - the libc allocator entry points, interposed by LD_PRELOAD.
 *
 * Each hook forwards to the real function and then runs the shared fast path (pf_account_alloc): a guard
 * test and one countdown subtraction in initial-exec TLS. A free asks the counting filter whether the address
 * may be tracked and reports the free *before* the memory is released, so another thread that gets the same
 * address back cannot have its allocation recorded ahead of this free.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "pf_hooks_int.h"
#include "pf_watch.h"

static inline int pf_guarded(void)
{
    return PF_UNLIKELY(pf_tls.guard != 0);
}

static inline void pf_note_free(void *p)
{
    if (p && PF_UNLIKELY(pf_objtable_maybe(p)))
        pf_on_free_slow(&pf_tls, p, PF_DOMAIN_MALLOC);
}

PF_EXPORT void *malloc(size_t size)
{
    void *p = pf_real.malloc(size);
    if (!pf_guarded())
        pf_account_alloc(p, size, PF_DOMAIN_MALLOC);
    return p;
}

PF_EXPORT void free(void *p)
{
    pf_watch_on_free(p, 0);     /* guarded too: PyMem frees of large blocks land here */
    if (!pf_guarded())
        pf_note_free(p);
    if (PF_UNLIKELY(pf_bootstrap_owns(p)))
        return;
    pf_real.free(p);
}

PF_EXPORT void *calloc(size_t n, size_t size)
{
    void *p = pf_real.calloc(n, size);
    if (!pf_guarded())
        pf_account_alloc(p, n * size, PF_DOMAIN_MALLOC);
    return p;
}

PF_EXPORT void *realloc(void *old, size_t size)
{
    if (PF_UNLIKELY(pf_bootstrap_owns(old))) {
        /* Memory handed out while dlsym ran: move it to the real heap. */
        void *p = malloc(size);
        if (p && old) {
            size_t old_size = ((const size_t *)old)[-1];
            memcpy(p, old, old_size < size ? old_size : size);
        }
        return p;
    }
    if (pf_guarded())
        return pf_real.realloc(old, size);
    /* A realloc is the old block's end and a new block's start, and, when the block moved, a copy from
     * one to the other. If the real realloc fails the old block stays alive but untracked: a small, rare
     * under-count. */
    pf_objinfo_t old_obj;
    int tracked = old && PF_UNLIKELY(pf_objtable_maybe(old)) &&
                  pf_on_free_slow_info(&pf_tls, old, PF_DOMAIN_MALLOC, &old_obj);
    pf_watch_on_free(old, 0);   /* the block may move: its watched words die with it */
    void *p = pf_real.realloc(old, size);
    if (size)
        pf_account_alloc(p, size, PF_DOMAIN_MALLOC);
    if (PF_UNLIKELY(tracked) && p && p != old)
        pf_on_realloc_moved(&pf_tls, p, &old_obj, size);
    return p;
}

PF_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
    int rc = pf_real.posix_memalign(out, align, size);
    if (rc == 0 && !pf_guarded())
        pf_account_alloc(*out, size, PF_DOMAIN_MALLOC);
    return rc;
}

PF_EXPORT void *aligned_alloc(size_t align, size_t size)
{
    void *p = pf_real.aligned_alloc(align, size);
    if (!pf_guarded())
        pf_account_alloc(p, size, PF_DOMAIN_MALLOC);
    return p;
}

PF_EXPORT void *memalign(size_t align, size_t size)
{
    void *p = pf_real.memalign(align, size);
    if (!pf_guarded())
        pf_account_alloc(p, size, PF_DOMAIN_MALLOC);
    return p;
}

PF_EXPORT void *valloc(size_t size)
{
    void *p = pf_real.valloc(size);
    if (!pf_guarded())
        pf_account_alloc(p, size, PF_DOMAIN_MALLOC);
    return p;
}

PF_EXPORT void *pvalloc(size_t size)
{
    void *p = pf_real.pvalloc(size);
    if (!pf_guarded()) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        pf_account_alloc(p, size ? (size + page - 1) & ~(page - 1) : page, PF_DOMAIN_MALLOC);
    }
    return p;
}

PF_EXPORT size_t malloc_usable_size(void *p)
{
    if (PF_UNLIKELY(pf_bootstrap_owns(p)))
        return ((const size_t *)p)[-1];
    return pf_real.malloc_usable_size(p);
}

PF_SELF_ALIAS(malloc)
PF_SELF_ALIAS(free)
PF_SELF_ALIAS(calloc)
PF_SELF_ALIAS(realloc)
PF_SELF_ALIAS(posix_memalign)
PF_SELF_ALIAS(aligned_alloc)
PF_SELF_ALIAS(memalign)
PF_SELF_ALIAS(valloc)
PF_SELF_ALIAS(pvalloc)
