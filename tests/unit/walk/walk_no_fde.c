/* walk_no_fde.c - compiled without unwind tables: an address no FDE covers, which the fast walk must hand
 * to libunwind. */
#include "walk_chain.h"

__attribute__((noinline)) int shape_no_fde(const walk_chain_t *c, int i)
{
    volatile int keep = 7;
    return walk_next(c, i) + keep;
}
