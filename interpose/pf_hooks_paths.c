/* pf_hooks_paths.c - libc functions whose system call reads a path (or another buffer the program
 * passes) or writes a buffer, interposed for page-protection watchpoints like pf_hooks_io.c's: a load
 * watch makes its page no-access, a store watch read-only, and where the program's own access would fault
 * to watch's handler, the kernel's fails the call with EFAULT. So the pages it reads or writes are fenced
 * until it returns (watch/pf_watch_io.c): the watches on them end, and none armed meanwhile protects them.
 * One load before the call and a thread-local one after it while no page can be watched.
 *
 * The paths are the ones that failed: `import numpy` under --watch=loads now and then raised
 * ModuleNotFoundError, the path of the file it looked for (a bytes object made fresh by os.stat from a
 * str) having landed on a page a load watch had made no-access; the stat failed with EFAULT, which the
 * import machinery takes for a missing file. A path is not read here (a watch may have made it
 * no-access, and a bad pointer must fail as without pyflow): it lies within PATH_MAX bytes of its start,
 * so the watches on the at most two pages there end.
 *
 * Covered: the stat, open, access, readlink, directory, rename/link/unlink, mode/owner/time and truncate
 * families, fopen, realpath, getcwd, dlopen, getrandom, poll and epoll_wait, sendmsg and recvmsg, and the
 * checked entry points _FORTIFY_SOURCE builds call instead (__open64_2, __realpath_chk, ...: Debian's
 * python3 opens by __open64_2 and resolves its own path by __realpath_chk). A call made inside libc on a
 * path it was given (glibc's opendir opens it by an internal call) is covered by its outer function; one a
 * library makes by a raw system call is not (docs/limitations.md).
 */
#include <dlfcn.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "pf_hooks_int.h"
#include "pf_watch.h"

/* Before a call whose kernel side reads the NUL-terminated path p (at most PATH_MAX bytes with its NUL). */
static inline void before_path(const char *p)
{
    if (p)
        pf_watch_pages_before_io(p, PATH_MAX);
}

/* ---- one path ---- */
#define PF_PATH1(name, params, args, path) PF_HOOK(int, -1, name, params, args, before_path(path))
PF_PATH1(access, (const char *p, int mode), (p, mode), p)
PF_PATH1(faccessat, (int dir, const char *p, int mode, int flags), (dir, p, mode, flags), p)
PF_PATH1(mkdir, (const char *p, mode_t mode), (p, mode), p)
PF_PATH1(mkdirat, (int dir, const char *p, mode_t mode), (dir, p, mode), p)
PF_PATH1(rmdir, (const char *p), (p), p)
PF_PATH1(unlink, (const char *p), (p), p)
PF_PATH1(unlinkat, (int dir, const char *p, int flags), (dir, p, flags), p)
PF_PATH1(chdir, (const char *p), (p), p)
PF_PATH1(chroot, (const char *p), (p), p)
PF_PATH1(chmod, (const char *p, mode_t mode), (p, mode), p)
PF_PATH1(fchmodat, (int dir, const char *p, mode_t mode, int flags), (dir, p, mode, flags), p)
PF_PATH1(chown, (const char *p, uid_t u, gid_t g), (p, u, g), p)
PF_PATH1(lchown, (const char *p, uid_t u, gid_t g), (p, u, g), p)
PF_PATH1(fchownat, (int dir, const char *p, uid_t u, gid_t g, int flags), (dir, p, u, g, flags), p)
PF_PATH1(truncate, (const char *p, off_t n), (p, n), p)
PF_PATH1(truncate64, (const char *p, off64_t n), (p, n), p)
PF_PATH1(mkfifo, (const char *p, mode_t mode), (p, mode), p)
PF_PATH1(mknod, (const char *p, mode_t mode, dev_t dev), (p, mode, dev), p)
PF_PATH1(creat, (const char *p, mode_t mode), (p, mode), p)
PF_PATH1(creat64, (const char *p, mode_t mode), (p, mode), p)
PF_HOOK(int, -1, utimensat, (int dir, const char *p, const struct timespec t[2], int flags), (dir, p, t, flags),
        (before_path(p), t ? pf_watch_pages_before_io(t, 2 * sizeof *t) : (void)0))
PF_HOOK(DIR *, NULL, opendir, (const char *p), (p), before_path(p))
PF_HOOK(FILE *, NULL, fopen, (const char *p, const char *how), (p, how), before_path(p))
PF_HOOK(FILE *, NULL, fopen64, (const char *p, const char *how), (p, how), before_path(p))
PF_HOOK(char *, NULL, realpath, (const char *p, char *out), (p, out), before_path(p))

/* ---- two paths ---- */
#define PF_PATH2(name, params, args, a, b) PF_HOOK(int, -1, name, params, args, (before_path(a), before_path(b)))
PF_PATH2(rename, (const char *a, const char *b), (a, b), a, b)
PF_PATH2(renameat, (int da, const char *a, int db, const char *b), (da, a, db, b), a, b)
PF_PATH2(link, (const char *a, const char *b), (a, b), a, b)
PF_PATH2(linkat, (int da, const char *a, int db, const char *b, int flags), (da, a, db, b, flags), a, b)
PF_PATH2(symlink, (const char *a, const char *b), (a, b), a, b)
PF_PATH2(symlinkat, (const char *a, int db, const char *b), (a, db, b), a, b)

/* ---- a path and a buffer the kernel fills ---- */
#define PF_PATH_OUT(name, params, args, path, out, n)                                                       \
    PF_HOOK(int, -1, name, params, args, (before_path(path), pf_watch_pages_before_io(out, n)))
PF_PATH_OUT(stat, (const char *p, struct stat *st), (p, st), p, st, sizeof *st)
PF_PATH_OUT(stat64, (const char *p, struct stat64 *st), (p, st), p, st, sizeof *st)
PF_PATH_OUT(lstat, (const char *p, struct stat *st), (p, st), p, st, sizeof *st)
PF_PATH_OUT(lstat64, (const char *p, struct stat64 *st), (p, st), p, st, sizeof *st)
PF_PATH_OUT(fstatat, (int dir, const char *p, struct stat *st, int flags), (dir, p, st, flags), p, st, sizeof *st)
PF_PATH_OUT(fstatat64, (int dir, const char *p, struct stat64 *st, int flags), (dir, p, st, flags), p, st,
            sizeof *st)
PF_PATH_OUT(statx, (int dir, const char *p, int flags, unsigned mask, struct statx *st), (dir, p, flags, mask, st),
            p, st, sizeof *st)
PF_PATH_OUT(statfs, (const char *p, struct statfs *st), (p, st), p, st, sizeof *st)
PF_PATH_OUT(statfs64, (const char *p, struct statfs64 *st), (p, st), p, st, sizeof *st)
PF_PATH_OUT(statvfs, (const char *p, struct statvfs *st), (p, st), p, st, sizeof *st)
PF_PATH_OUT(statvfs64, (const char *p, struct statvfs64 *st), (p, st), p, st, sizeof *st)
PF_HOOK(ssize_t, -1, readlink, (const char *p, char *out, size_t n), (p, out, n),
        (before_path(p), pf_watch_pages_before_io(out, n)))
PF_HOOK(ssize_t, -1, readlinkat, (int dir, const char *p, char *out, size_t n), (dir, p, out, n),
        (before_path(p), pf_watch_pages_before_io(out, n)))

/* ---- a buffer the kernel fills (or reads and fills) ---- */
PF_HOOK(int, -1, fstat, (int fd, struct stat *st), (fd, st), pf_watch_pages_before_io(st, sizeof *st))
PF_HOOK(int, -1, fstat64, (int fd, struct stat64 *st), (fd, st), pf_watch_pages_before_io(st, sizeof *st))
PF_HOOK(char *, NULL, getcwd, (char *out, size_t n), (out, n), (out ? pf_watch_pages_before_io(out, n) : (void)0))
PF_HOOK(ssize_t, -1, getrandom, (void *out, size_t n, unsigned flags), (out, n, flags), pf_watch_pages_before_io(out, n))
PF_HOOK(int, -1, poll, (struct pollfd *fds, nfds_t n, int ms), (fds, n, ms), pf_watch_pages_before_io(fds, n * sizeof *fds))
PF_HOOK(int, -1, ppoll, (struct pollfd *fds, nfds_t n, const struct timespec *t, const sigset_t *mask), (fds, n, t, mask),
        pf_watch_pages_before_io(fds, n * sizeof *fds))
PF_HOOK(int, -1, epoll_wait, (int ep, struct epoll_event *ev, int n, int ms), (ep, ev, n, ms),
        pf_watch_pages_before_io(ev, n > 0 ? (size_t)n * sizeof *ev : 0))
PF_HOOK(int, -1, epoll_pwait, (int ep, struct epoll_event *ev, int n, int ms, const sigset_t *mask), (ep, ev, n, ms, mask),
        pf_watch_pages_before_io(ev, n > 0 ? (size_t)n * sizeof *ev : 0))

/* A message's header, address, control data and every piece of its data. */
static void before_msg(const struct msghdr *m)
{
    if (!pf_watch_io_on() || !m)
        return;
    pf_watch_io_fence_slow(m, sizeof *m);
    pf_watch_io_fence_slow(m->msg_name, m->msg_namelen);
    pf_watch_io_fence_slow(m->msg_control, m->msg_controllen);
    pf_watch_io_fence_slow(m->msg_iov, m->msg_iovlen * sizeof *m->msg_iov);
    for (size_t i = 0; i < m->msg_iovlen; i++)
        pf_watch_io_fence_slow(m->msg_iov[i].iov_base, m->msg_iov[i].iov_len);
}
PF_HOOK(ssize_t, -1, sendmsg, (int fd, const struct msghdr *m, int flags), (fd, m, flags), before_msg(m))
PF_HOOK(ssize_t, -1, recvmsg, (int fd, struct msghdr *m, int flags), (fd, m, flags), before_msg(m))

/* ---- open: its mode is there only with O_CREAT or O_TMPFILE, as glibc reads it ---- */
static mode_t open_mode(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

/* params end in `int flags, ...`, p is the path, and args pass mode on. */
#define PF_OPEN_HOOK(name, params, args)                                                                    \
    PF_EXPORT int name params                                                                           \
    {                                                                                                   \
        PF_REAL(name);                                                                                  \
        va_list ap;                                                                                     \
        va_start(ap, flags);                                                                            \
        mode_t mode = open_mode(flags, ap);                                                             \
        va_end(ap);                                                                                     \
        PF_IO_CALL(int, real_##name args, before_path(p));                                              \
    }
PF_OPEN_HOOK(open, (const char *p, int flags, ...), (p, flags, mode))
PF_OPEN_HOOK(open64, (const char *p, int flags, ...), (p, flags, mode))
PF_OPEN_HOOK(openat, (int dir, const char *p, int flags, ...), (dir, p, flags, mode))
PF_OPEN_HOOK(openat64, (int dir, const char *p, int flags, ...), (dir, p, flags, mode))

/* ---- the checked (_FORTIFY_SOURCE) entry points: glibc's ABI, declared by no header without fortification ---- */
int __open_2(const char *p, int flags);
int __open64_2(const char *p, int flags);
int __openat_2(int dir, const char *p, int flags);
int __openat64_2(int dir, const char *p, int flags);
char *__realpath_chk(const char *p, char *out, size_t out_len);
ssize_t __readlink_chk(const char *p, char *out, size_t n, size_t out_len);
ssize_t __readlinkat_chk(int dir, const char *p, char *out, size_t n, size_t out_len);
char *__getcwd_chk(char *out, size_t n, size_t out_len);
int __poll_chk(struct pollfd *fds, nfds_t n, int ms, size_t fds_len);
int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *t, const sigset_t *mask, size_t fds_len);

PF_PATH1(__open_2, (const char *p, int flags), (p, flags), p)
PF_PATH1(__open64_2, (const char *p, int flags), (p, flags), p)
PF_PATH1(__openat_2, (int dir, const char *p, int flags), (dir, p, flags), p)
PF_PATH1(__openat64_2, (int dir, const char *p, int flags), (dir, p, flags), p)
PF_HOOK(char *, NULL, __realpath_chk, (const char *p, char *out, size_t out_len), (p, out, out_len), before_path(p))
PF_HOOK(ssize_t, -1, __readlink_chk, (const char *p, char *out, size_t n, size_t out_len), (p, out, n, out_len),
        (before_path(p), pf_watch_pages_before_io(out, n)))
PF_HOOK(ssize_t, -1, __readlinkat_chk, (int dir, const char *p, char *out, size_t n, size_t out_len),
        (dir, p, out, n, out_len), (before_path(p), pf_watch_pages_before_io(out, n)))
PF_HOOK(char *, NULL, __getcwd_chk, (char *out, size_t n, size_t out_len), (out, n, out_len),
        (out ? pf_watch_pages_before_io(out, n) : (void)0))
PF_HOOK(int, -1, __poll_chk, (struct pollfd *fds, nfds_t n, int ms, size_t fds_len), (fds, n, ms, fds_len),
        pf_watch_pages_before_io(fds, n * sizeof *fds))
PF_HOOK(int, -1, __ppoll_chk, (struct pollfd *fds, nfds_t n, const struct timespec *t, const sigset_t *mask,
                              size_t fds_len), (fds, n, t, mask, fds_len), pf_watch_pages_before_io(fds, n * sizeof *fds))

/* ---- dlopen ---- */
/* glibc's dlopen searches the RUNPATH of the object that called it, which it knows by the return address:
 * the call is passed on by a tail call, so glibc still sees the original caller, and nothing runs after it
 * to take a fence down: the watches on the path's pages end, unfenced. */
PF_EXPORT PF_TAIL_CALLS void *dlopen(const char *p, int flags)
{
    PF_REAL_OR(dlopen, NULL);
    if (p)
        pf_watch_pages_release(p, PATH_MAX);
    return real_dlopen(p, flags);
}
