/* walk_probe.c - the recorder's walk (pf_unwinder.c, pf_cfi.c, pf_modules.c) in a shared object of its
 * own, as it is in libpyflow.so: its frames are "pyflow's own" that both walks leave out, so the test's
 * frames are the first they give. The few recorder services those files call are stood in for below. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_thread_stack.h"
#include "pf_modules.h"
#include "pf_unwinder.h"
#include "walk_chain.h"

/* pf_unwinder.c says a disagreement with pf_log; the tests never cause one. */
void pf_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* pf_rec_int.h binds the recorder's memcpy to this name (the real one, not the hook). */
void *pf_rec_memcpy(void *dst, const void *src, size_t n) __asm__("pf_rec_memcpy");
void *pf_rec_memcpy(void *dst, const void *src, size_t n)
{
    return memmove(dst, src, n);
}

/* The MODULE records the walk's look for native sites writes as it learns the loaded objects
 * (pf_modules.c): no profile here, so none (write_module takes NULL as no room). */
void *pf_writer_reserve(pf_tls_t *t, uint32_t bytes);
void *pf_writer_reserve(pf_tls_t *t, uint32_t bytes)
{
    (void)t, (void)bytes;
    return NULL;
}

void walk_probe_unloaded(void)
{
    pf_recorder_code_unloaded(1);
}

__attribute__((noinline)) int walk_probe(walk_result_t *r)
{
    static __thread pf_tls_t t;     /* only its stack bounds are read */
    if (!t.stack_high)
        pf_thread_stack(&t.stack_low, &t.stack_high);
    pf_unwinder_start();
    volatile int here = 0;
    r->probe_sp = (uintptr_t)&here;
    r->nfast = pf_unwinder_capture(&t, r->fast, WALK_MAX, &r->used_fast, &r->cut);
    r->cut_scanned = pf_modules_native_cut(&t, r->fast, r->nfast);
    r->nlu = pf_unwinder_libunwind(r->lu, WALK_MAX);
    return here + r->nfast;
}
