/* pf_hooks_io.c - read/write-family system call wrappers, interposed for page-protection watchpoints
 * (watch/pf_watch_pages.c): a page watch protects a page the program uses, and the kernel's own access to
 * it in a system call would fail the call with EFAULT, where the program's access faults to watch's
 * handler. So the pages of such a call's buffer are fenced until it returns (watch/pf_watch_io.c): the
 * watches on them end, and none armed meanwhile protects them. One load before the call and a thread-local
 * one after it while no page can be watched (always, but with --watch where debug registers do not fire,
 * or PYFLOW_WATCH_MECH=pages).
 *
 * Covered: read, write, pread64, pwrite64, readv, writev, recv, send, recvfrom, sendto (what CPython's
 * os, io and socket modules call), their checked entry points (__read_chk, __pread64_chk, __recv_chk,
 * __recvfrom_chk: what _FORTIFY_SOURCE builds call), and readdir, readdir64 and getdents64 (os.listdir,
 * os.scandir). The calls that take a path or fill a buffer of another kind are pf_hooks_paths.c's. A call
 * made inside libc (stdio's fread into a watched buffer) or another library's raw system call is not
 * seen: it could fail with EFAULT while a watch is on its page.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "pf_fd.h"
#include "pf_hooks_int.h"
#include "pf_watch.h"

/* The checked (_FORTIFY_SOURCE) entry points of the calls below that write a buffer: glibc's ABI, declared
 * by no header without fortification. */
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buf_len);
ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buf_len);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buf_len, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buf_len, int flags, struct sockaddr *from, socklen_t *len);

static void before_iov(const struct iovec *iov, int n)
{
    for (int i = 0; i < n; i++)
        pf_watch_pages_before_io(iov[i].iov_base, iov[i].iov_len);
}

#define PF_BUF_HOOK(name, params, args, buf, n) PF_HOOK(ssize_t, -1, name, params, args, pf_watch_pages_before_io(buf, n))
PF_BUF_HOOK(read, (int fd, void *buf, size_t n), (fd, buf, n), buf, n)
PF_BUF_HOOK(write, (int fd, const void *buf, size_t n), (fd, buf, n), buf, n)
PF_BUF_HOOK(pread64, (int fd, void *buf, size_t n, off_t off), (fd, buf, n, off), buf, n)
PF_BUF_HOOK(pwrite64, (int fd, const void *buf, size_t n, off_t off), (fd, buf, n, off), buf, n)
PF_BUF_HOOK(recv, (int fd, void *buf, size_t n, int flags), (fd, buf, n, flags), buf, n)
PF_BUF_HOOK(send, (int fd, const void *buf, size_t n, int flags), (fd, buf, n, flags), buf, n)
PF_BUF_HOOK(recvfrom, (int fd, void *buf, size_t n, int flags, struct sockaddr *from, socklen_t *len),
            (fd, buf, n, flags, from, len), buf, n)
PF_BUF_HOOK(sendto, (int fd, const void *buf, size_t n, int flags, const struct sockaddr *to, socklen_t len),
            (fd, buf, n, flags, to, len), buf, n)
PF_BUF_HOOK(getdents64, (int fd, void *buf, size_t n), (fd, buf, n), buf, n)
PF_HOOK(ssize_t, -1, readv, (int fd, const struct iovec *iov, int n), (fd, iov, n), before_iov(iov, n))
PF_HOOK(ssize_t, -1, writev, (int fd, const struct iovec *iov, int n), (fd, iov, n), before_iov(iov, n))

PF_BUF_HOOK(__read_chk, (int fd, void *buf, size_t n, size_t buf_len), (fd, buf, n, buf_len), buf, n)
PF_BUF_HOOK(__pread64_chk, (int fd, void *buf, size_t n, off64_t off, size_t buf_len), (fd, buf, n, off, buf_len),
            buf, n)
PF_BUF_HOOK(__recv_chk, (int fd, void *buf, size_t n, size_t buf_len, int flags), (fd, buf, n, buf_len, flags),
            buf, n)
PF_BUF_HOOK(__recvfrom_chk,
            (int fd, void *buf, size_t n, size_t buf_len, int flags, struct sockaddr *from, socklen_t *len),
            (fd, buf, n, buf_len, flags, from, len), buf, n)

/* readdir fills its DIR's buffer with getdents64 from inside libc, where the calls above do not see it: a
 * watch on a page of that buffer failed the call with EFAULT, and Python's listdir then raised, so that
 * an import found no module in the directory (`import numpy` under --watch=loads with page watches, now
 * and then). glibc's opendir takes the DIR and its buffer in one malloc block, so the block's usable size
 * bounds what the kernel writes. */
static void before_readdir(DIR *d)
{
    if (pf_watch_io_on() && d)
        pf_watch_io_fence_slow(d, malloc_usable_size(d));   /* the hook's: a start-up block too */
}

PF_HOOK(struct dirent *, NULL, readdir, (DIR *d), (d), before_readdir(d))
PF_HOOK(struct dirent64 *, NULL, readdir64, (DIR *d), (d), before_readdir(d))

/* libunwind (--native, --watch) keeps a pipe for checking addresses: its descriptors are moved above the
 * program's (pf_fd.h), so a program counting on the lowest free numbers gets them. Everything else goes
 * on to the next pipe2 (libc's, or a later preload's), as the allocator hooks do. */
PF_EXPORT int pipe2(int fds[2], int flags)
{
    int rc = pf_real.pipe2(fds, flags);
    uint64_t caller = (uint64_t)(uintptr_t)__builtin_return_address(0);
    if (rc == 0 && pf_recorder_unwinder_caller(caller)) {
        fds[0] = pf_fd_high(fds[0]);
        fds[1] = pf_fd_high(fds[1]);
    }
    return rc;
}
