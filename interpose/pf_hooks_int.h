/* pf_hooks_int.h - private to interpose/: the table of real functions the hooks forward to, the bootstrap
 * heap dlsym is served from while they are found, and what the hooks' start-up shares. The recorder is
 * reached only through pf_recorder.h. */
#ifndef PF_HOOKS_INT_H
#define PF_HOOKS_INT_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#include "pf_recorder.h"

/* The allocator functions the hooks forward to: whatever came next in the symbol search order
 * (libc, or a malloc that an existing LD_PRELOAD put in). */
typedef struct pf_real_fns {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*malloc_usable_size)(void *);
    void *(*mmap)(void *, size_t, int, int, int, off_t);
    void *(*mmap64)(void *, size_t, int, int, int, off_t);
    int (*munmap)(void *, size_t);
    void *(*mremap)(void *, size_t, size_t, int, ...);
    void *(*memcpy)(void *, const void *, size_t);
    void *(*memmove)(void *, const void *, size_t);
    void *(*mempcpy)(void *, const void *, size_t);
    void *(*memcpy_chk)(void *, const void *, size_t, size_t);
    void *(*memmove_chk)(void *, const void *, size_t, size_t);
    int (*pipe2)(int *, int);       /* pf_hooks_io.c */
} pf_real_fns_t;

extern pf_real_fns_t pf_real PF_HIDDEN;

void pf_rt_resolve_real(void) PF_HIDDEN;     /* idempotent; safe to call from any hook */
int pf_rt_resolving(void) PF_HIDDEN;         /* 1 while dlsym runs: hooks must use the bootstrap heap */

/* pf_bootstrap.c: the few bytes dlsym may ask for before the real allocator is known. */
void *pf_bootstrap_alloc(size_t size, size_t align) PF_HIDDEN;
int pf_bootstrap_owns(const void *p) PF_HIDDEN;

/* pf_hooks_spawn.c: finds the real pthread_create, fork, posix_spawn and exec functions (constructor). */
void pf_spawn_resolve(void) PF_HIDDEN;

/* pf_pymem.c */
int pf_pymem_install(void) PF_HIDDEN;        /* 0, or -1 when the interpreter lacks the API */
void pf_pymem_recheck(void) PF_HIDDEN;       /* re-wrap if start-up replaced the allocators (slow paths) */

/* pf_hooks_signal.c: runs the program's own action for a signal watch/ received but does not own. */
void pf_signal_foreign(int sig, siginfo_t *si, void *uc) PF_HIDDEN;

#endif /* PF_HOOKS_INT_H */
