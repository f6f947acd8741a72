/* pf_hooks_signal.c - sigaction and signal, interposed so that watch/ keeps the signals it needs
 * (SIGTRAP for watchpoints and single steps, a real-time signal for samples, SIGSEGV for page watches)
 * while the program believes it owns them; and the mask calls, through which watch learns which threads
 * block SIGSEGV.
 *
 * While watch is on, a program that installs a handler for one of those signals has it recorded here
 * instead of installed, and sees its own previous action when it asks. Watch's handlers pass on every
 * signal that is not theirs (a kill, sigqueue, an int3 in the program) to foreign_signal below, which
 * runs the recorded action as the kernel would have. Any other signal, or any signal with watch off, goes
 * straight to the real sigaction.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "pf_hooks_int.h"
#include "pf_watch.h"

static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static struct sigaction program_action[_NSIG];     /* what the program installed, for watch's signals */

static int resolve(void)
{
    if (PF_UNLIKELY(!real_sigaction))
        real_sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(RTLD_NEXT, "sigaction");
    return real_sigaction ? 0 : -1;
}

static int watch_owns(int sig)
{
    int sampling = pf_watch_signal();
    return sampling && (sig == SIGTRAP || sig == sampling || (sig == SIGSEGV && pf_watch_pages_on()));
}

/* Signals whose program handler's sa_mask named SIGSEGV, taken out while page watches are on: a fault on a
 * watched page in such a handler would arrive blocked, and the kernel kills the process then
 * (watch/pf_watch_masked.c has the threads' masks). The program still reads its own mask back. What
 * changes: a SIGSEGV sent by kill while such a handler runs is not held until it returns. */
static uint8_t segv_taken_out[_NSIG];

static int program_masked_action(int sig, const struct sigaction *act, struct sigaction *old)
{
    struct sigaction mine;
    int take_out = act && sig > 0 && sig < _NSIG && pf_watch_io_on() && sigismember(&act->sa_mask, SIGSEGV) == 1;
    if (take_out) {
        mine = *act;
        sigdelset(&mine.sa_mask, SIGSEGV);
        act = &mine;
    }
    int rc = real_sigaction(sig, act, old);
    if (rc != 0 || sig <= 0 || sig >= _NSIG)
        return rc;
    if (old && segv_taken_out[sig])
        sigaddset(&old->sa_mask, SIGSEGV);
    if (act)
        segv_taken_out[sig] = (uint8_t)take_out;
    return rc;
}

PF_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (resolve() != 0) {
        errno = ENOSYS;
        return -1;
    }
    if (!watch_owns(sig))
        return program_masked_action(sig, act, old);
    if (old)
        *old = program_action[sig];
    if (act)
        program_action[sig] = *act;
    return 0;
}

PF_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_RESTART;   /* BSD semantics, as glibc's signal() */
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, &old) != 0)
        return SIG_ERR;
    return old.sa_handler;
}

/* The mask calls: a thread that blocks SIGSEGV is counted while page watches are on (pf_watch.h). */
PF_EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    PF_REAL_OR(pthread_sigmask, ENOSYS);
    pf_watch_masked_before(how, set);
    int rc = real_pthread_sigmask(how, set, old);
    pf_watch_masked_after();
    return rc;
}

PF_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    PF_REAL(sigprocmask);
    pf_watch_masked_before(how, set);
    int rc = real_sigprocmask(how, set, old);
    pf_watch_masked_after();
    return rc;
}

void pf_signal_foreign(int sig, siginfo_t *si, void *uc)
{
    const struct sigaction *a = &program_action[sig];
    if (a->sa_flags & SA_SIGINFO) {
        if (a->sa_sigaction)
            a->sa_sigaction(sig, si, uc);
        return;
    }
    if (a->sa_handler == SIG_IGN)
        return;
    if (a->sa_handler != SIG_DFL) {
        a->sa_handler(sig);
        return;
    }
    /* the default action (terminate, or dump core for SIGTRAP): give the signal back to the kernel */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    if (resolve() == 0)
        real_sigaction(sig, &dfl, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
}
