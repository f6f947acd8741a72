/* walk_shapes.c - functions with the frame setups the fast walk follows, compiled -O2 -fomit-frame-pointer
 * (so without a frame pointer unless a function asks for one). Each keeps a local live across its call so
 * that the call is not a tail call (its frame stays on the stack). */
#include <alloca.h>
#include <string.h>

#include "walk_chain.h"

/* CFA = rsp + a fixed offset: no frame pointer. */
__attribute__((noinline)) int shape_no_fp(const walk_chain_t *c, int i)
{
    volatile char pad[40];
    pad[0] = 1;
    return walk_next(c, i) + pad[0];
}

/* push rbp; mov rsp, rbp: the CFA from rbp, rbp saved at CFA - 16. */
__attribute__((noinline, optimize("no-omit-frame-pointer"))) int shape_fp(const walk_chain_t *c, int i)
{
    volatile char pad[24];
    pad[0] = 2;
    return walk_next(c, i) + pad[0];
}

/* A frame of run-time size: GCC keeps the CFA in rbp (DW_CFA_def_cfa_register rbp) even without
 * -fno-omit-frame-pointer. */
__attribute__((noinline)) int shape_alloca(const walk_chain_t *c, int i)
{
    size_t n = 64 + (size_t)(c->depth & 0xff) * 16;
    char *p = alloca(n);
    memset(p, 3, n);
    __asm__ volatile("" : : "r"(p) : "memory");
    return walk_next(c, i) + p[n - 1];
}

/* depth frames of itself (more than the walk's 64 when asked): the same rule again and again. */
__attribute__((noinline)) int shape_recurse_n(const walk_chain_t *c, int i, int depth)
{
    volatile int keep = depth;
    if (depth == 0)
        return walk_next(c, i);
    return shape_recurse_n(c, i, depth - 1) + keep;
}

__attribute__((noinline)) int shape_recurse(const walk_chain_t *c, int i)
{
    return shape_recurse_n(c, i, c->depth) + 1;
}

/* Two callers with the same frame: a walk from inside one and then the other starts at the same stack
 * pointer and address and differs only in the return address stored in the callee's frame. */
__attribute__((noinline)) int shape_twin_a(const walk_chain_t *c, int i)
{
    volatile int keep = 5;
    return walk_next(c, i) + keep;
}

__attribute__((noinline)) int shape_twin_b(const walk_chain_t *c, int i)
{
    volatile int keep = 5;
    return walk_next(c, i) + keep;
}
