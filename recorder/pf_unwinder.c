/* pf_unwinder.c - libunwind's memory-validation pipe, kept off the program's descriptor numbers.
 *
 * libunwind (1.6 and later) opens a pipe when it first unwinds, to test whether an address is readable
 * by write(2)ing a byte from it. pipe2 takes the two lowest free numbers, so under --native or --watch the
 * program's first open() returned 5 instead of 3, and a program that opens descriptors up to its limit
 * got two fewer. pipe2 is interposed (interpose/pf_hooks_io.c): a call made from inside libunwind has its descriptors moved
 * above the program's range (pf_fd_high); every other caller gets the plain system call. libunwind reopens
 * the pipe if it finds it closed (a program that closes every descriptor), which lands here again. The call
 * goes on to the next pipe2 (libc's, or a later preload's), as the allocator hooks do.
 */
#include <libunwind.h>
#include <stdint.h>

#include "pf_modules.h"
#include "pf_rec_int.h"
#include "pf_unwinder.h"

static uint64_t unwinder_lo, unwinder_hi;   /* libunwind's code: the callers whose pipes are moved */

void pf_unwinder_start(void)
{
    if (unwinder_hi)
        return;
    if (!pf_modules_text_range((const void *)unw_backtrace, &unwinder_lo, &unwinder_hi))
        return;
    void *ip;
    unw_backtrace(&ip, 1);  /* libunwind's one-time set-up, which opens the pipe, happens now */
}

int pf_recorder_unwinder_caller(uint64_t ip)
{
    return ip >= unwinder_lo && ip < unwinder_hi;
}
