/* pf_hooks_exit.c - _exit and _Exit, interposed to say in the profile that the process ended on purpose.
 *
 * A Python process that ends normally (its script's end, sys.exit, an uncaught exception) shuts its
 * interpreter down, which the profile already marks (PF_MARK_FINALIZING). os._exit, and every fork child
 * of multiprocessing, skips that shutdown: without this mark the reporter could not tell such an ending
 * from a worker killed by a signal, which leaves neither. Nothing runs here on any hot path.
 */
#include <dlfcn.h>
#include <unistd.h>

#include "pf_hooks_int.h"

static void (*real_exit)(int);

/* Resolved at load, not at the call: a vfork child whose exec failed calls _exit in its parent's memory,
 * where dlsym must not run. */
__attribute__((constructor)) static void resolve_exit(void)
{
    real_exit = (void (*)(int))dlsym(RTLD_NEXT, "_exit");
}

static void mark_exit(int status)
{
    /* getpid: a vfork child runs as its parent's thread, and its _exit must not end the parent's profile */
    if (__atomic_load_n(&pf_cfg.enabled, __ATOMIC_ACQUIRE) && !pf_tls.guard && (uint32_t)getpid() == pf_cfg.pid) {
        pf_guard_enter(&pf_tls);
        pf_enter_recording(&pf_tls);
        pf_record_mark(&pf_tls, PF_MARK_EXIT, (uint64_t)(uint32_t)status, NULL);
        if (pf_cfg.aggregate)
            pf_aggregate_at_exit(&pf_tls);   /* --aggregate: the last totals */
        pf_guard_leave(&pf_tls);
    }
}

__attribute__((visibility("default"), noreturn)) void _exit(int status)
{
    mark_exit(status);
    if (real_exit)
        real_exit(status);
    for (;;)
        pause();    /* unreachable: libc always has _exit */
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status)
{
    _exit(status);
}
