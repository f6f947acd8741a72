/* walk_probe.c - the recorder's walk (pf_unwinder.c, pf_cfi.c, pf_modules.c) in a shared object of its
 * own, as it is in libpyflow.so: its frames are "pyflow's own" that both walks leave out, so the test's
 * frames are the first they give. The few recorder services those files call are stood in for below. */
#define UNW_LOCAL_ONLY     /* the _UL entry points, as the recorder uses them */
#include <libunwind.h>
#include <pthread.h>
#include <signal.h>
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

/* The recorder's configuration: pf_unwinder.c reads whether native stacks were asked for. */
pf_config_t pf_cfg = {.native = 1};

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

/* The interpreter loop's text as pf_modules_find_eval_loop finds it in a Python process; 0, 0: none. */
void walk_probe_eval_loop(uint64_t lo, uint64_t hi)
{
    pf_eval_lo = lo;
    pf_eval_hi = hi;
}

void walk_probe_whole_stacks(int on)
{
    pf_cfg.whole_stacks = on;
}

int walk_probe_cut(const uint64_t *ips, int n)
{
    static __thread pf_tls_t t;
    return pf_modules_native_cut(&t, ips, n);
}

void walk_probe_sites(const uint64_t *ips, int n, uint8_t *site_at)
{
    static __thread pf_tls_t t;
    pf_modules_sites(&t, ips, n, site_at);
}

/* ---- from a signal handler's context (watch's traps: pf_unwinder_signal_walk) ---- */

static __thread pf_tls_t signal_tls;
static walk_result_t *sig_result;

static void on_probe_signal(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)si;
    walk_result_t *r = sig_result;
    r->nfast = pf_unwinder_signal_walk(&signal_tls, uc, r->fast, WALK_MAX, 0, 0);
    r->used_fast = r->nfast > 0;
    /* libunwind from the same context, as watch walked before */
    unw_cursor_t cursor;
    r->nlu = 0;
    if (r->signal_only || unw_init_local2(&cursor, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) < 0)
        return;
    do {
        unw_word_t ip;
        if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip < 4096)
            break;
        r->lu[r->nlu++] = ip;
    } while (r->nlu < WALK_MAX && unw_step(&cursor) > 0);
}

__attribute__((noinline)) int walk_probe_signal(walk_result_t *r)
{
    if (!signal_tls.stack_high)
        pf_thread_stack(&signal_tls.stack_low, &signal_tls.stack_high);
    pf_unwinder_start();
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_probe_signal;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, &old);
    sig_result = r;
    raise(SIGUSR2);
    sigaction(SIGUSR2, &old, NULL);
    volatile int keep = r->nfast;
    return keep;
}

