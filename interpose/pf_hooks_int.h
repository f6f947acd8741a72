/* pf_hooks_int.h - private to interpose/: the table of real functions the hooks forward to, the bootstrap
 * heap dlsym is served from while they are found, and what the hooks' start-up shares. The recorder is
 * reached only through pf_recorder.h. */
#ifndef PF_HOOKS_INT_H
#define PF_HOOKS_INT_H

#include <dlfcn.h>   /* PF_REAL_OR */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#include "pf_recorder.h"

/* The one list of the libc functions pyflow hooks and forwards to: X(field, symbol, return type,
 * parameters). From it come the table of real functions below, the lookup that fills it
 * (pf_rt_resolve_real) and the table's first contents, the trampolines of pf_bootstrap.c. Adding one: a
 * line here, its early_<field> trampoline in pf_bootstrap.c, and its hook. */
#define PF_HOOKED_FNS(X)                                                                     \
    X(malloc, "malloc", void *, (size_t))                                                    \
    X(free, "free", void, (void *))                                                          \
    X(calloc, "calloc", void *, (size_t, size_t))                                            \
    X(realloc, "realloc", void *, (void *, size_t))                                          \
    X(posix_memalign, "posix_memalign", int, (void **, size_t, size_t))                      \
    X(aligned_alloc, "aligned_alloc", void *, (size_t, size_t))                              \
    X(memalign, "memalign", void *, (size_t, size_t))                                        \
    X(valloc, "valloc", void *, (size_t))                                                    \
    X(pvalloc, "pvalloc", void *, (size_t))                                                  \
    X(malloc_usable_size, "malloc_usable_size", size_t, (void *))                            \
    X(mmap, "mmap", void *, (void *, size_t, int, int, int, off_t))                          \
    X(mmap64, "mmap64", void *, (void *, size_t, int, int, int, off_t))                      \
    X(munmap, "munmap", int, (void *, size_t))                                               \
    X(mremap, "mremap", void *, (void *, size_t, size_t, int, ...))                          \
    X(memcpy, "memcpy", void *, (void *, const void *, size_t))                              \
    X(memmove, "memmove", void *, (void *, const void *, size_t))                            \
    X(mempcpy, "mempcpy", void *, (void *, const void *, size_t))                            \
    X(memcpy_chk, "__memcpy_chk", void *, (void *, const void *, size_t, size_t))            \
    X(memmove_chk, "__memmove_chk", void *, (void *, const void *, size_t, size_t))          \
    X(pipe2, "pipe2", int, (int *, int))    /* pf_hooks_io.c: libunwind's pipe */                 \
    X(dlclose, "dlclose", int, (void *))    /* pf_hooks_dl.c: unloaded code's unwind rules */

/* The functions the hooks forward to: whatever came next in the symbol search order (libc, or a malloc
 * that an existing LD_PRELOAD put in). */
#define PF_X_REAL_FIELD(field, symbol, ret, params) ret(*field) params;
typedef struct pf_real_fns {
    PF_HOOKED_FNS(PF_X_REAL_FIELD)
} pf_real_fns_t;
#undef PF_X_REAL_FIELD

extern pf_real_fns_t pf_real PF_HIDDEN;

void pf_rt_resolve_real(void) PF_HIDDEN;     /* idempotent; safe to call from any hook */
int pf_rt_resolving(void) PF_HIDDEN;         /* 1 while dlsym runs: hooks must use the bootstrap heap */

/* pf_bootstrap.c: the few bytes dlsym may ask for before the real allocator is known. */
void *pf_bootstrap_alloc(size_t size, size_t align) PF_HIDDEN;
int pf_bootstrap_owns(const void *p) PF_HIDDEN;

/* In a hook of a libc function not in the table above (pf_hooks_io.c, pf_hooks_paths.c): real_<name>, the
 * next definition of name (libc's, or a later preload's); without one, the hook fails with ENOSYS, returning
 * fail. Each such pointer is filed in the section pf_real_slots, and pf_hooks_resolve_all finds them all
 * from the constructor: dlsym takes the loader's lock, so a hook whose first call came from a signal
 * handler while another thread was in dlopen (running a library's constructor) waited for that thread,
 * which a program without pyflow never does. A call before the constructor still looks its own up. */
typedef struct pf_real_slot {
    const char *name;
    void **fn;
} pf_real_slot_t;
/* Files the pointer fn, which the next definition of name fills (the spawn hooks' too). */
#define PF_REAL_SLOT(name, fn)                                                                              \
    static pf_real_slot_t pf_real_slot_##name                                                           \
        __attribute__((section("pf_real_slots"), used, aligned(sizeof(void *)))) = {#name, (void **)&(fn)}
#define PF_REAL_OR(name, fail)                                                                              \
    static __typeof__(&name) real_##name;                                                               \
    PF_REAL_SLOT(name, real_##name);                                                                    \
    if (PF_UNLIKELY(!__atomic_load_n(&real_##name, __ATOMIC_ACQUIRE)))                                  \
        __atomic_store_n(&real_##name, (__typeof__(&name))dlsym(RTLD_NEXT, #name), __ATOMIC_RELEASE);  \
    if (PF_UNLIKELY(!real_##name)) {                                                                    \
        errno = ENOSYS;                                                                                 \
        return fail;                                                                                    \
    }
#define PF_REAL(name) PF_REAL_OR(name, -1)

/* Finds every PF_REAL_OR hook's next function now (pf_rt_init). */
void pf_hooks_resolve_all(void) PF_HIDDEN;

/* Such a hook of name returning ret (fail without a real function) of a system call that reads or writes
 * the program's memory: `before` hands each buffer of the call to pf_watch_pages_before_io, which keeps
 * page watches off its pages until the call returns (pf_watch.h, included by the hooks' files). */
#define PF_HOOK(ret, fail, name, params, args, before)                                                     \
    PF_EXPORT ret name params                                                                           \
    {                                                                                                   \
        PF_REAL_OR(name, fail);                                                                         \
        PF_IO_CALL(ret, real_##name args, before);                                                      \
    }
#define PF_IO_CALL(ret, call, before)                                                                      \
    unsigned pf_io_mark = pf_watch_io_mark();                                                           \
    before;                                                                                             \
    ret pf_io_ret = call;                                                                               \
    pf_watch_io_done(pf_io_mark);                                                                       \
    return pf_io_ret

/* A hook whose call to the real function must be a tail call (forced, also at -O0): glibc's dlsym(RTLD_NEXT)
 * and dlopen act on behalf of their caller, which they know by the return address. */
#define PF_TAIL_CALLS __attribute__((optimize("O2", "optimize-sibling-calls")))

/* pf_self_<fn>: this library's own definition of an exported hook, whatever another preload defines first
 * (the address dlsym hands out for a libc function looked up through a library handle, pf_libc_lookup.c). */
#define PF_SELF_ALIAS(fn) \
    extern __typeof__(fn) pf_self_##fn __attribute__((alias(#fn), visibility("hidden"), copy(fn)));

/* pf_libc_lookup.c: what dlsym(handle, name) answers for a libc function pyflow hooks, given glibc's answer
 * f: the hook when f is the very function the hook forwards to, else f. */
void *pf_libc_lookup(const char *name, void *f) PF_HIDDEN;

/* pf_pymem.c */
int pf_pymem_install(void) PF_HIDDEN;        /* 0, or -1 when the interpreter lacks the API */
void pf_pymem_recheck(void) PF_HIDDEN;       /* re-wrap if start-up replaced the allocators (slow paths) */

/* pf_hooks_signal.c: runs the program's own action for a signal watch/ received but does not own. */
void pf_signal_foreign(int sig, siginfo_t *si, void *uc) PF_HIDDEN;

#endif /* PF_HOOKS_INT_H */
