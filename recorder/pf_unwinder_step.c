/* pf_unwinder_step.c - the calling thread's native stack by libunwind's unw_step, frame by frame: after code
 * was unloaded, the stand-in for unw_backtrace, whose per-thread trace cache keeps rules by address that
 * unw_flush_cache does not reach (libunwind 1.6): it walked a library loaded at an unloaded one's addresses
 * with the old rules, while unw_step looks each frame up again in the caches the flush emptied. Slower
 * (each frame's rule is found again), and used only once some code was unloaded. In a file of its own:
 * the local-only names below (UNW_LOCAL_ONLY) are the ones libunwind.so exports for stepping, not for
 * unw_flush_cache. */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "pf_modules.h"
#include "pf_unwinder.h"

int pf_unwinder_stepped(uint64_t *out, int max)
{
    unw_context_t ctx;
    unw_cursor_t cur;
    if (unw_getcontext(&ctx) != 0 || unw_init_local(&cur, &ctx) != 0)
        return 0;
    int n = 0, lead = 1;
    do {
        unw_word_t ip;
        if (unw_get_reg(&cur, UNW_REG_IP, &ip) != 0 || ip == 0)
            break;
        lead = lead && pf_modules_is_self(ip);     /* pyflow's own frames at the top, as unw_backtrace's */
        if (!lead)
            out[n++] = ip;
    } while (n < max && unw_step(&cur) > 0);
    return n;
}

void pf_unwinder_set_up(void)
{
    unw_context_t ctx;
    unw_cursor_t cur;
    if (unw_getcontext(&ctx) == 0)
        (void)unw_init_local(&cur, &ctx);  /* its first call sets libunwind up (tdep_init) */
}
