/* pf_watch_masked.c - threads that block SIGSEGV, counted: while any does, no page watch protects a page.
 *
 * A page watch (pf_watch_pages.c) protects a page for the whole process. Another thread's access to it
 * faults to watch's SIGSEGV handler, which steps it over; but the kernel cannot deliver that fault to a
 * thread that blocks SIGSEGV, so it kills the process instead (a forced signal that arrives blocked). Worker
 * threads often block every signal (CI saw a program's worker die so, once, under --watch=all). So every
 * thread that blocks SIGSEGV is counted, from before its mask says so until after it no longer does, and
 * while the count is not 0 every page is left with its own protection (prot_now) and no new page watch is
 * armed (pf_watch_pages_arm). Watches already armed stay, blind, until they expire or end: they judge
 * nothing meanwhile, which is what a watch that saw no access concludes.
 *
 * How a thread comes to block SIGSEGV, and where it is counted:
 *  - pthread_sigmask or sigprocmask (interpose/pf_hooks_signal.c): before a call that may block it, and
 *    uncounted after a call that leaves it unblocked (the thread's mask read again);
 *  - a new thread inherits its creator's mask, or gets the one its attributes name: pthread_create
 *    (interpose/pf_hooks_spawn.c) counts it before it exists, and a starter of ours hands it the count;
 *  - the process's first thread, which may have been started so (the mask survives exec): at start-up.
 * A counted thread that ends gives its count back in a thread-specific destructor, after unblocking SIGSEGV
 * for the rest of its exit. Not seen: a mask set by a raw system call, or by sigreturn (a handler that
 * unblocked it, returning): docs/limitations.md. A handler's sa_mask never blocks it while page watches are
 * on (interpose/pf_hooks_signal.c takes SIGSEGV out).
 *
 * Ordering is the fences' (pf_watch_io.c): the count is raised (seq_cst) before the thread takes every
 * page's protection off (pf_watch_pages_reapply reads the armed pages seq_cst), and an arm publishes its
 * page before it reads the count.
 */
#include "pf_watch_int.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>

#define PF_BIRTHS 64    /* threads being started at once, over all threads, already counted */

static unsigned blockers;                /* threads counted: blocking SIGSEGV, or about to */
int pf_watch_masked_seen;
static __thread uint8_t counted __attribute__((tls_model("initial-exec")));
static pthread_key_t gone_key;
static int have_key;
static pid_t own_pid;                    /* a vfork child (another pid, this memory) must count nothing */

static struct pf_birth {
    void *(*fn)(void *);
    void *arg;
    int used;   /* 0: free; 1: taken; PF_BIRTH_MAPPED: mmap'd, more births at once than entries */
} births[PF_BIRTHS];
#define PF_BIRTH_MAPPED 2

int pf_watch_masked(void) { return __atomic_load_n(&blockers, __ATOMIC_SEQ_CST) != 0; }

/* The pages' protections as the count now says: every one off, or back. */
static void reapply_all(void)
{
    if (__atomic_load_n(&pf_watch_pages_active, __ATOMIC_SEQ_CST))
        pf_watch_pages_reapply(PF_WATCH_PAGE, UINT64_MAX);
}

/* Page watches went blind or were refused because of the count: said once (CPython's subprocess blocks
 * every signal around each start, which costs nothing while no page is watched). */
static void lost(void)
{
    if (!__atomic_load_n(&pf_watch_masked_seen, __ATOMIC_RELAXED)) {
        __atomic_store_n(&pf_watch_masked_seen, 1, __ATOMIC_RELAXED);
        pf_watch_attention = 1;     /* this thread's next visit says so */
    }
}

int pf_watch_masked_refuses(void)
{
    if (!pf_watch_masked())
        return 0;
    lost();
    return 1;
}

/* This thread is counted; the count was raised for it already when raised is 1. */
static void count_in(int raised)
{
    if (counted)
        return;
    counted = 1;
    if (!raised)
        __atomic_fetch_add(&blockers, 1, __ATOMIC_SEQ_CST);
    /* every time, not only the first: another thread's count may not have taken them all off yet */
    reapply_all();
    if (have_key)
        pthread_setspecific(gone_key, (void *)1);
    if (__atomic_load_n(&pf_watch_pages_active, __ATOMIC_RELAXED))
        lost();     /* watches armed now see nothing meanwhile */
}

static void count_out(void)
{
    if (!counted)
        return;
    counted = 0;
    if (__atomic_sub_fetch(&blockers, 1, __ATOMIC_SEQ_CST) == 0)
        reapply_all();
    if (have_key)
        pthread_setspecific(gone_key, NULL);
}

static int blocks_now(void)
{
    sigset_t now;
    return pf_watch_sigmask_raw(SIG_BLOCK, NULL, &now) == 0 && sigismember(&now, SIGSEGV);
}

/* The thread-specific destructor: a counted thread ends. */
static void gone(void *v)
{
    (void)v;
    sigset_t segv;
    sigemptyset(&segv);
    sigaddset(&segv, SIGSEGV);
    /* the rest of its exit (glibc frees its buffers) may touch a page protected once the count is down */
    pf_watch_sigmask_raw(SIG_UNBLOCK, &segv, NULL);
    count_out();
}

void pf_watch_masked_init(void)
{
    own_pid = (pid_t)syscall(SYS_getpid);
    have_key = pthread_key_create(&gone_key, gone) == 0;
    if (blocks_now())
        count_in(0);
}

/* The caller is a vfork child: it shares this process's memory, this thread's counted flag included,
 * but its mask is its own (CPython's subprocess blocks every signal around vfork, and the child sets the
 * mask its program will have before exec). */
static int vfork_child(void) { return (pid_t)syscall(SYS_getpid) != own_pid; }

void pf_watch_masked_before_slow(int how, const sigset_t *set)
{
    if (set && how != SIG_UNBLOCK && sigismember(set, SIGSEGV) && !counted && !vfork_child()) {
        int saved = errno;
        count_in(0);
        errno = saved;
    }
}

void pf_watch_masked_after_slow(void)
{
    if (counted && !blocks_now() && !vfork_child()) {
        int saved = errno;
        count_out();
        errno = saved;
    }
}

static void release_birth(struct pf_birth *birth)
{
    if (birth->used == PF_BIRTH_MAPPED)
        munmap(birth, sizeof *birth);
    else
        __atomic_store_n(&birth->used, 0, __ATOMIC_RELEASE);
}

/* An entry for a birth: one of the table's, else a mapping of its own; NULL without memory. */
static struct pf_birth *claim_birth(void)
{
    for (int i = 0; i < PF_BIRTHS; i++) {
        int expected = 0;
        if (!__atomic_load_n(&births[i].used, __ATOMIC_RELAXED) &&
            __atomic_compare_exchange_n(&births[i].used, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            return &births[i];
    }
    struct pf_birth *b = mmap(NULL, sizeof *b, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED)
        return NULL;
    b->used = PF_BIRTH_MAPPED;
    return b;
}

static void *starter(void *b)
{
    struct pf_birth *birth = b;
    void *(*fn)(void *) = birth->fn;
    void *arg = birth->arg;
    release_birth(birth);
    count_in(1);
    pf_watch_masked_after_slow();   /* a mask the program's own code set before this: not blocking */
    return fn(arg);
}

void *pf_watch_masked_birth_slow(const pthread_attr_t *attr, void *(**fn)(void *), void **arg)
{
    int blocking = counted;
    sigset_t set;
    if (attr && pthread_attr_getsigmask_np(attr, &set) == 0)
        blocking = sigismember(&set, SIGSEGV);      /* the attributes' mask, not the creator's */
    struct pf_birth *b = blocking ? claim_birth() : NULL;
    if (!b)
        return NULL;    /* without memory for it: uncounted until its own code changes its mask */
    b->fn = *fn;
    b->arg = *arg;
    __atomic_fetch_add(&blockers, 1, __ATOMIC_SEQ_CST);
    reapply_all();
    *fn = starter;
    *arg = b;
    return b;
}

void pf_watch_masked_unborn(void *b)
{
    release_birth(b);
    if (__atomic_sub_fetch(&blockers, 1, __ATOMIC_SEQ_CST) == 0)
        reapply_all();
}

void pf_watch_masked_fork_child(void)
{
    /* only this thread came along; births under way in other threads did not */
    for (int i = 0; i < PF_BIRTHS; i++)
        births[i].used = 0;     /* a mapped entry of theirs stays mapped: a few bytes, once */
    blockers = counted;
    own_pid = (pid_t)syscall(SYS_getpid);
}
