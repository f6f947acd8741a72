/* pf_sys.h - the few system services pyflow's in-process code uses for itself, reached by raw system
 * calls so they never pass through pyflow's own hooks (or anyone else's interposers), plus a tiny
 * spinlock for short critical sections that must not allocate.
 */
#ifndef PF_SYS_H
#define PF_SYS_H

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* Anonymous private memory for pyflow's own tables. Returns NULL on failure (errno set). */
static inline void *pf_sys_alloc_pages(size_t bytes)
{
    long r = syscall(SYS_mmap, NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return (r < 0 && r > -4096) ? NULL : (void *)r;
}

/* Like pf_sys_alloc_pages, for a big table (bytes a multiple of 2 MiB): aligned to 2 MiB and asked to be
 * backed by huge pages where the kernel allows (transparent huge pages "madvise" or "always"), so that
 * scattered lookups in it do not also miss the TLB. Free it with pf_sys_munmap(p, bytes). */
static inline void *pf_sys_alloc_huge(size_t bytes)
{
    const size_t huge = (size_t)2 << 20;
    long r = syscall(SYS_mmap, NULL, bytes + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r < 0 && r > -4096)
        return NULL;
    uintptr_t start = (uintptr_t)r, aligned = (start + huge - 1) & ~(uintptr_t)(huge - 1);
    if (aligned > start)
        syscall(SYS_munmap, start, aligned - start);
    if (start + huge > aligned)
        syscall(SYS_munmap, aligned + bytes, start + huge - aligned);
    syscall(SYS_madvise, aligned, bytes, MADV_HUGEPAGE);
    return (void *)aligned;
}

static inline void *pf_sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    return (r < 0 && r > -4096) ? MAP_FAILED : (void *)r;
}

static inline int pf_sys_munmap(void *addr, size_t len)
{
    return (int)syscall(SYS_munmap, addr, len);
}

#ifdef PF_MAP_LOG
/* Build option PYFLOW_MAP_LOG (off in every shipped build; bench/rss_breakdown.py): every mapping pyflow
 * makes for itself and every unmap is appended to /tmp/pyflow-maps.PID as "M|U address bytes file:function",
 * so that its resident pages can be counted by structure from /proc/PID/pagemap. */
static inline void *pf_sys_map_log(char op, void *p, size_t bytes, const char *file, const char *func)
{
    if (!p || p == MAP_FAILED)
        return p;
    char path[48] = "/tmp/pyflow-maps.", buf[256];
    size_t n = 17, k = 0;
    char digits[24];
    long pid = syscall(SYS_getpid), nd = 0;
    do digits[nd++] = (char)('0' + pid % 10); while ((pid /= 10));
    while (nd)
        path[n++] = digits[--nd];
    path[n] = 0;
    uint64_t v[2] = {(uint64_t)(uintptr_t)p, bytes};
    buf[k++] = op;
    for (int i = 0; i < 2; i++) {
        buf[k++] = ' ';
        for (int sh = 60; sh >= 0; sh -= 4)
            buf[k++] = "0123456789abcdef"[(v[i] >> sh) & 15];
    }
    buf[k++] = ' ';
    for (const char *f = file; *f && k < sizeof buf - 16; f++)
        buf[k++] = *f;
    buf[k++] = ':';
    for (const char *f = func; *f && k < sizeof buf - 2; f++)
        buf[k++] = *f;
    buf[k++] = '\n';
    long fd = syscall(SYS_open, path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
        syscall(SYS_write, fd, buf, k);
        syscall(SYS_close, fd);
    }
    return p;
}
#define pf_sys_alloc_pages(b) pf_sys_map_log('M', (pf_sys_alloc_pages)(b), (b), __FILE__, __func__)
#define pf_sys_alloc_huge(b) pf_sys_map_log('M', (pf_sys_alloc_huge)(b), (b), __FILE__, __func__)
#define pf_sys_mmap(a, l, p, f, fd, o) pf_sys_map_log('M', (pf_sys_mmap)(a, l, p, f, fd, o), (l), __FILE__, __func__)
#define pf_sys_munmap(a, l) ((pf_sys_map_log)('U', (void *)(a), (l), __FILE__, __func__), (pf_sys_munmap)(a, l))
#endif

/* Copies n bytes at p of this process, whose pid is pid, into out without faulting where p is unmapped:
 * 0, or -1 (errno EFAULT: not all readable; another errno: the read was refused, e.g. by a seccomp filter).
 * Async-signal-safe. A caller that keeps its pid saves a system call (getpid is one of its own). */
static inline int pf_sys_read_pid(long pid, const void *p, void *out, size_t n)
{
    struct iovec local = {out, n}, remote = {(void *)p, n};
    return syscall(SYS_process_vm_readv, pid, &local, 1UL, &remote, 1UL, 0UL) == (long)n ? 0 : -1;
}

/* The same, asking for the pid. */
static inline int pf_sys_read_own(const void *p, void *out, size_t n)
{
    return pf_sys_read_pid(syscall(SYS_getpid), p, out, n);
}

static inline uint32_t pf_sys_gettid(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

typedef struct pf_spinlock {
    int locked;
} pf_spinlock_t;

static inline void pf_spin_lock(pf_spinlock_t *l)
{
    for (unsigned spins = 0;; spins++) {
        if (!__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE))
            return;
        while (__atomic_load_n(&l->locked, __ATOMIC_RELAXED)) {
            /* The holder may be preempted (2-core machines): stop burning its CPU after a while. */
            if (++spins > 200)
                syscall(SYS_sched_yield);
            else
                __builtin_ia32_pause();
        }
    }
}

/* 1 when the lock was free and is now held, 0 (at once) when another holds it. */
static inline int pf_spin_trylock(pf_spinlock_t *l)
{
    return !__atomic_load_n(&l->locked, __ATOMIC_RELAXED) && !__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE);
}

static inline void pf_spin_unlock(pf_spinlock_t *l)
{
    __atomic_store_n(&l->locked, 0, __ATOMIC_RELEASE);
}

#endif /* PF_SYS_H */
