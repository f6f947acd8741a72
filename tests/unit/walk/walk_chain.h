/* walk_chain.h - what test_recorder_walk.c shares with the code it walks through: a chain of functions of
 * different frame shapes, each calling the next, the last one asking walk_probe.c for both stacks. */
#ifndef WALK_CHAIN_H
#define WALK_CHAIN_H

#include <stdint.h>

#define WALK_MAX 64     /* PF_MAX_NATIVE_FRAMES: what the recorder asks for */

typedef struct walk_result {
    uint64_t fast[WALK_MAX], lu[WALK_MAX];
    int nfast, nlu;
    int used_fast;          /* pf_unwinder_capture's *fast */
    int cut, cut_scanned;   /* its *cut, and pf_modules_native_cut's count of the same IPs */
    uintptr_t probe_sp;     /* where the probe's frame was: two walks from the same stack pointer */
    int signal_only;        /* walk_probe_signal: the signal walk alone, no libunwind beside it */
} walk_result_t;

struct walk_chain;
typedef int (*walk_step_fn)(const struct walk_chain *c, int i);
typedef struct walk_chain {
    walk_step_fn steps[8];  /* steps[i] calls steps[i + 1], the last one walk_probe */
    int n;
    int depth;              /* shape_recurse's recursion */
    int in_signal;          /* the probe walks from a signal handler's context (walk_probe_signal) */
    walk_result_t *r;
} walk_chain_t;

/* walk_probe.c (in the shared object that stands for libpyflow.so): the fast walk's stack and
 * unw_backtrace's, both from the frame that called it. */
int walk_probe(walk_result_t *r);
/* The stack from inside a signal handler the probe raises: pf_unwinder_signal_walk's from the handler's
 * context into fast, libunwind's from the same context into lu. */
int walk_probe_signal(walk_result_t *r);
/* What the dlclose hook tells the recorder once an object is unloaded (interpose/pf_hooks_dl.c). */
void walk_probe_unloaded(void);

/* The interpreter loop's text [lo, hi) the walk and the cut stop at (pf_modules.h); 0, 0: none. A thread's
 * remembered walks were made with the loop it had then: walk on a fresh thread after a change. */
void walk_probe_eval_loop(uint64_t lo, uint64_t hi);
/* PYFLOW_WHOLE_STACKS: the walk goes past the loop. */
void walk_probe_whole_stacks(int on);
/* pf_modules_native_cut and pf_modules_sites of ips[0..n). */
int walk_probe_cut(const uint64_t *ips, int n);
void walk_probe_sites(const uint64_t *ips, int n, uint8_t *site_at);

/* Calls the chain's next step, or the probe after the last. */
static inline int walk_next(const walk_chain_t *c, int i)
{
    if (i + 1 < c->n)
        return c->steps[i + 1](c, i + 1);
    return c->in_signal ? walk_probe_signal(c->r) : walk_probe(c->r);
}

#endif
