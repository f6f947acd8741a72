/* pf_watch_io.c - the buffers of a system call under way, fenced from page watches until it returns.
 *
 * A page watch protects a page of the program (pf_watch_pages.c). Where the program's own access to it
 * faults to watch's handler, the kernel's access in a system call fails the call with EFAULT instead. The
 * I/O hooks (interpose/pf_hooks_io.c, pf_hooks_paths.c) ended the watches on a call's pages before it, but
 * a watch armed again between then and the call's return (by a sample on that thread or any other) made
 * the page protected under the call: CI saw `os.listdir` raise "Bad address" once. So each buffer a hook
 * hands here is fenced: while any fence covers a page, the page keeps its own protection whatever watches
 * are armed on it (they are not ended by an arm, only left without effect), and when the call returns and
 * its fences come down, the page gets the protection its watches still need.
 *
 * Fences are entries of one table that arming reads (pf_watch_io_fenced, under the page lock). A thread
 * keeps the entries of its calls under way on a small stack: a hook notes the depth before its call
 * (pf_watch_io_mark) and pops back to it after (pf_watch_io_done), so the calls of a signal handler, which
 * push above and pop back before the handler returns, nest inside the call they interrupted.
 *
 * Ordering, without a lock on the hook's path: a fence is published (seq_cst) before the hook reads which
 * pages are protected (seq_cst), and an arm publishes its page before it reads the fences. Of two such
 * threads at least one sees the other's store: either the arm leaves the page alone, or the hook finds the
 * page protected and takes the protection off under the lock (pf_watch_pages_reapply).
 */
#include "pf_watch_int.h"

#include <errno.h>

#define PF_IO_FENCES 256     /* calls under way at once, over all threads, with a buffer fenced */
#define PF_IO_STACK 16       /* a thread's fences, nested handlers' calls included */
#define PF_IO_CLAIMED 1u     /* an entry's lo while its owner writes hi (lo is otherwise a page address) */
#define PF_IO_OVERFLOW (-1)  /* a stack entry that found the table full: every page is fenced meanwhile */

static struct {
    uint64_t lo, hi;         /* [lo, hi) in whole pages; lo 0: a free entry */
} fences[PF_IO_FENCES];
static unsigned fences_hiwater;  /* entries ever claimed: fenced() reads no further */
static unsigned overflowed;      /* calls under way whose fence found no entry */

int pf_watch_io_fencing;
__thread unsigned pf_watch_io_depth __attribute__((tls_model("initial-exec")));
static __thread int16_t stack[PF_IO_STACK] __attribute__((tls_model("initial-exec")));

void pf_watch_io_fencing_on(void) { __atomic_store_n(&pf_watch_io_fencing, 1, __ATOMIC_SEQ_CST); }

int pf_watch_io_fenced(uint64_t page)
{
    if (__atomic_load_n(&overflowed, __ATOMIC_SEQ_CST))
        return 1;
    unsigned n = __atomic_load_n(&fences_hiwater, __ATOMIC_ACQUIRE);
    for (unsigned i = 0; i < n; i++) {
        uint64_t lo = __atomic_load_n(&fences[i].lo, __ATOMIC_SEQ_CST);
        if (lo > PF_IO_CLAIMED && page >= lo && page < __atomic_load_n(&fences[i].hi, __ATOMIC_SEQ_CST))
            return 1;
    }
    return 0;
}

/* A free entry, claimed for [lo, hi); PF_IO_OVERFLOW when every one is taken. */
static int claim(uint64_t lo, uint64_t hi)
{
    for (unsigned i = 0; i < PF_IO_FENCES; i++) {
        uint64_t expected = 0;
        if (__atomic_load_n(&fences[i].lo, __ATOMIC_RELAXED) != 0 ||
            !__atomic_compare_exchange_n(&fences[i].lo, &expected, PF_IO_CLAIMED, 0, __ATOMIC_ACQUIRE,
                                         __ATOMIC_RELAXED))
            continue;
        unsigned n = __atomic_load_n(&fences_hiwater, __ATOMIC_RELAXED);
        while (n < i + 1 && !__atomic_compare_exchange_n(&fences_hiwater, &n, i + 1, 1, __ATOMIC_RELEASE,
                                                          __ATOMIC_RELAXED))
            ;
        __atomic_store_n(&fences[i].hi, hi, __ATOMIC_SEQ_CST);
        __atomic_store_n(&fences[i].lo, lo, __ATOMIC_SEQ_CST);
        return (int)i;
    }
    __atomic_fetch_add(&overflowed, 1, __ATOMIC_SEQ_CST);
    return PF_IO_OVERFLOW;
}

/* Watches on the pages of [lo, hi) now: their protection comes off (a fence counted), and they end (the
 * kernel's access would be one they never judge). */
static void end_watches(uint64_t lo, uint64_t hi)
{
    if (__atomic_load_n(&pf_watch_pages_active, __ATOMIC_SEQ_CST)) {
        pf_watch_pages_reapply(lo, hi);
        pf_watch_on_free_slow((void *)(uintptr_t)lo, hi - lo);
    }
}

/* The whole pages of [p, p+n) in [*lo, *hi); 0 when there are none (n 0). */
static int pages_of(const void *p, size_t n, uint64_t *lo, uint64_t *hi)
{
    uint64_t start = (uint64_t)(uintptr_t)p, end = start + n;
    *lo = start & ~(PF_WATCH_PAGE - 1);
    *hi = end < start ? UINT64_MAX & ~(PF_WATCH_PAGE - 1) : (end + PF_WATCH_PAGE - 1) & ~(PF_WATCH_PAGE - 1);
    if (!*lo)
        *lo = PF_WATCH_PAGE;    /* page 0 is never watched, and lo 0 marks a free entry */
    return n && *hi > *lo;
}

void pf_watch_io_fence_slow(const void *p, size_t n)
{
    uint64_t lo, hi;
    if (!pages_of(p, n, &lo, &hi))
        return;
    int saved = errno;
    unsigned d = pf_watch_io_depth;
    if (d < PF_IO_STACK) {
        /* the place first, then the entry: a handler arriving between them pushes above it */
        stack[d] = PF_IO_OVERFLOW;
        pf_watch_io_depth = d + 1;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        stack[d] = (int16_t)claim(lo, hi);
    }
    /* else calls nested deeper than any program's handlers go, or left by a longjmp out of a handler
     * (their fences stay up): the watches end, and the call is not fenced */
    end_watches(lo, hi);
    errno = saved;
}

void pf_watch_io_release_slow(const void *p, size_t n)
{
    uint64_t lo, hi;
    if (!pages_of(p, n, &lo, &hi))
        return;
    int saved = errno;
    end_watches(lo, hi);
    errno = saved;
}

void pf_watch_io_done_slow(unsigned mark)
{
    int saved = errno;
    uint64_t lo = UINT64_MAX, hi = 0;
    while (pf_watch_io_depth > mark) {
        unsigned top = pf_watch_io_depth - 1;
        int g = stack[top];
        if (g == PF_IO_OVERFLOW) {
            __atomic_fetch_sub(&overflowed, 1, __ATOMIC_SEQ_CST);
            lo = PF_WATCH_PAGE, hi = UINT64_MAX;
        } else {
            uint64_t flo = __atomic_load_n(&fences[g].lo, __ATOMIC_RELAXED);
            uint64_t fhi = __atomic_load_n(&fences[g].hi, __ATOMIC_RELAXED);
            lo = flo < lo ? flo : lo;
            hi = fhi > hi ? fhi : hi;
            __atomic_store_n(&fences[g].lo, 0, __ATOMIC_SEQ_CST);
        }
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        pf_watch_io_depth = top;
    }
    /* watches armed meanwhile on these pages: they get their protection now */
    if (hi > lo && __atomic_load_n(&pf_watch_pages_active, __ATOMIC_SEQ_CST))
        pf_watch_pages_reapply(lo, hi);
    errno = saved;
}

void pf_watch_io_fork_child(void)
{
    /* the other threads' calls under way did not come along: only this thread's fences stay */
    unsigned own_overflows = 0;
    for (unsigned i = 0; i < PF_IO_FENCES; i++) {
        int mine = 0;
        for (unsigned k = 0; k < pf_watch_io_depth && k < PF_IO_STACK; k++)
            mine |= stack[k] == (int)i;
        if (!mine)
            fences[i].lo = 0;
    }
    for (unsigned k = 0; k < pf_watch_io_depth && k < PF_IO_STACK; k++)
        own_overflows += stack[k] == PF_IO_OVERFLOW;
    overflowed = own_overflows;
}
