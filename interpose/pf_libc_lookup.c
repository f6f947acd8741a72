/* pf_libc_lookup.c - libc's allocator, copy and mapping functions looked up through a library handle.
 *
 * LD_PRELOAD puts pyflow's hooks first in the global scope, so a call through the PLT or
 * dlsym(RTLD_DEFAULT, ...) reaches them; but a lookup on a library's own handle searches that library and
 * its dependencies only, and finds libc's definitions: ctypes' `CDLL('libc.so.6').malloc(n)`
 * (`find_library('c')`), a plugin loader's dlopen + dlsym. Those calls bypassed the hooks: 50 MB from
 * ctypes' malloc showed as the 168 bytes of its argument objects. So the dlsym wrapper (pf_cuda_lookup.c)
 * asks here, and a lookup whose answer is exactly the function a hook forwards to (pf_real) is answered with
 * the hook: the program calls the same function it would have, through the hook. Any other answer (another
 * allocator's malloc, an old symbol version, a library's own memcpy) is passed on as it is: a hook that
 * forwarded elsewhere would change what the program runs.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>
#include <malloc.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "pf_hooks_int.h"

extern void *pf_self___memcpy_chk(void *, const void *, size_t, size_t) PF_HIDDEN;
extern void *pf_self___memmove_chk(void *, const void *, size_t, size_t) PF_HIDDEN;
#define PF_SELF_DECL(fn) extern __typeof__(fn) pf_self_##fn PF_HIDDEN;
PF_SELF_DECL(malloc)
PF_SELF_DECL(free)
PF_SELF_DECL(calloc)
PF_SELF_DECL(realloc)
PF_SELF_DECL(posix_memalign)
PF_SELF_DECL(aligned_alloc)
PF_SELF_DECL(memalign)
PF_SELF_DECL(valloc)
PF_SELF_DECL(pvalloc)
PF_SELF_DECL(mmap)
PF_SELF_DECL(mmap64)
PF_SELF_DECL(munmap)
PF_SELF_DECL(mremap)
PF_SELF_DECL(memcpy)
PF_SELF_DECL(memmove)
PF_SELF_DECL(mempcpy)

typedef struct libc_hook {
    const char *name;
    size_t real;        /* offset of the forwarded-to function in pf_real */
    void *hook;
} libc_hook_t;

#define LIBC_HOOK(n, field) {#n, offsetof(pf_real_fns_t, field), (void *)pf_self_##n}
static const libc_hook_t hooks[] = {
    LIBC_HOOK(malloc, malloc),        LIBC_HOOK(free, free),
    LIBC_HOOK(calloc, calloc),        LIBC_HOOK(realloc, realloc),
    LIBC_HOOK(posix_memalign, posix_memalign), LIBC_HOOK(aligned_alloc, aligned_alloc),
    LIBC_HOOK(memalign, memalign),    LIBC_HOOK(valloc, valloc),
    LIBC_HOOK(pvalloc, pvalloc),      LIBC_HOOK(mmap, mmap),
    LIBC_HOOK(mmap64, mmap64),        LIBC_HOOK(munmap, munmap),
    LIBC_HOOK(mremap, mremap),        LIBC_HOOK(memcpy, memcpy),
    LIBC_HOOK(memmove, memmove),      LIBC_HOOK(mempcpy, mempcpy),
    LIBC_HOOK(__memcpy_chk, memcpy_chk), LIBC_HOOK(__memmove_chk, memmove_chk),
};

void *pf_libc_lookup(const char *name, void *f)
{
    /* every hooked name starts with one of these: most lookups (PyInit_*, a library's API) stop here */
    if (!f || !name || !strchr("mfcrpav_", name[0]))
        return f;
    for (size_t i = 0; i < sizeof hooks / sizeof *hooks; i++) {
        if (strcmp(name, hooks[i].name) != 0)
            continue;
        void *real = *(void *const *)((const char *)&pf_real + hooks[i].real);
        return real == f ? hooks[i].hook : f;
    }
    return f;
}

/* The linker's bounds of the PF_REAL_OR slots (pf_hooks_int.h). */
extern pf_real_slot_t __start_pf_real_slots[] __attribute__((weak, visibility("hidden")));
extern pf_real_slot_t __stop_pf_real_slots[] __attribute__((weak, visibility("hidden")));

void pf_hooks_resolve_all(void)
{
    for (pf_real_slot_t *s = __start_pf_real_slots; s && s < __stop_pf_real_slots; s++)
        if (!__atomic_load_n(s->fn, __ATOMIC_ACQUIRE))
            __atomic_store_n(s->fn, dlsym(RTLD_NEXT, s->name), __ATOMIC_RELEASE);
}
