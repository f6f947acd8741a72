/* pf_thread_stack.h - the calling thread's stack, [*low, *high): what the runtime's copy hook and watch's
 * address checks and frame walks need to know is stack. */
#ifndef PF_THREAD_STACK_H
#define PF_THREAD_STACK_H

#include <pthread.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

extern void *__libc_stack_end;     /* glibc's: the main thread's stack pointer at process start */

/* Leaves *low and *high alone when the stack cannot be told. The main thread's grows down from just above
 * where the process started, and the kernel keeps its rlimit (capped here at 1 GiB) free of other
 * mappings below; asking pthread_getattr_np for it would read /proc/self/maps. Another thread's is its
 * pthread stack. pthread_getattr_np may allocate: call with pyflow's hooks passing through. */
static inline void pf_thread_stack(uintptr_t *low, uintptr_t *high)
{
    if (syscall(SYS_gettid) == syscall(SYS_getpid)) {
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), room = (uintptr_t)1 << 30;
        struct rlimit lim;
        if (getrlimit(RLIMIT_STACK, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < room)
            room = (uintptr_t)lim.rlim_cur;
        *high = ((uintptr_t)__libc_stack_end + page) & ~(page - 1);
        *low = *high - room;
        return;
    }
    pthread_attr_t attr;
    void *base;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return;
    if (pthread_attr_getstack(&attr, &base, &size) == 0) {
        *low = (uintptr_t)base;
        *high = (uintptr_t)base + size;
    }
    pthread_attr_destroy(&attr);
}

#endif /* PF_THREAD_STACK_H */
