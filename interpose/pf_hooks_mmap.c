/* pf_hooks_mmap.c - anonymous mmap / munmap / mremap as allocations. File mappings are not heap and are not
 * counted. glibc's malloc maps its large blocks through an internal call that never reaches these hooks, so
 * nothing is counted twice; pymalloc's arenas come here with the guard raised (see pf_pymem.c). */
#include <stdarg.h>
#include <sys/mman.h>

#include "pf_hooks_int.h"
#include "pf_watch.h"

static inline void note_unmap(void *addr)
{
    if (PF_LIKELY(pf_tls.guard == 0) && PF_UNLIKELY(pf_objtable_maybe(addr)))
        pf_on_free_slow(&pf_tls, addr, PF_DOMAIN_MMAP);
}

/* Anonymous, accessible mappings are memory. PROT_NONE or MAP_NORESERVE ones are address-space
 * reservations (the CUDA driver reserves ~13 GiB this way at start-up; allocators reserve arenas), not
 * memory: counting them made every CUDA program look 13 GiB bigger. */
static inline void note_map(void *p, size_t len, int prot, int flags)
{
    if ((flags & MAP_ANONYMOUS) && !(flags & MAP_NORESERVE) && prot != PROT_NONE && p != MAP_FAILED &&
        PF_LIKELY(pf_tls.guard == 0))
        pf_account_alloc(p, len, PF_DOMAIN_MMAP);
}

PF_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    void *p = pf_real.mmap(addr, len, prot, flags, fd, off);
    note_map(p, len, prot, flags);
    return p;
}

PF_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    void *p = pf_real.mmap64(addr, len, prot, flags, fd, off);
    note_map(p, len, prot, flags);
    return p;
}

PF_EXPORT int munmap(void *addr, size_t len)
{
    pf_watch_on_free(addr, len);
    note_unmap(addr);
    return pf_real.munmap(addr, len);
}

PF_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
    void *new_addr = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        new_addr = va_arg(ap, void *);
        va_end(ap);
    }
    /* Only a mapping pyflow tracked is known to be anonymous; it becomes a new block of the new size. */
    int tracked = PF_LIKELY(pf_tls.guard == 0) && PF_UNLIKELY(pf_recorder_tracks(old));
    if (tracked)
        pf_on_free_slow(&pf_tls, old, PF_DOMAIN_MMAP);
    pf_watch_on_free(old, old_len);
    void *p = pf_real.mremap(old, old_len, new_len, flags, new_addr);
    if (tracked)
        note_map(p, new_len, PROT_READ, MAP_ANONYMOUS);
    return p;
}

PF_SELF_ALIAS(mmap)
PF_SELF_ALIAS(mmap64)
PF_SELF_ALIAS(munmap)
PF_SELF_ALIAS(mremap)
