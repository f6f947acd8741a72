/* pf_out.c - outputs written without harm to what was there (pf_out.h). */
#include "pf_out.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pf_format.h"

unsigned long long pf_out_random(void)
{
    unsigned long long v = 0;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        v = ((unsigned long long)ts.tv_nsec << 20) ^ (unsigned long long)ts.tv_sec ^ ((unsigned long long)getpid() << 40);
    }
    return v;
}

static int refuse(pf_out_t *o, const char *why)
{
    fprintf(stderr, "pyflow: the %s %s %s\n", o->what, o->path, why);
    pf_out_release(o);
    return -1;
}

static int cannot(pf_out_t *o, int err)
{
    fprintf(stderr, "pyflow: cannot write the %s to %s: %s\n", o->what, o->path, strerror(err));
    pf_out_release(o);
    return -1;
}

/* 1 when the file is empty (nothing to lose) or starts like a pyflow profile. */
static int replaceable_profile(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char magic[8];
    ssize_t n = read(fd, magic, sizeof magic);
    close(fd);
    return n == 0 || (n == 8 && memcmp(magic, PF_FILE_MAGIC, 8) == 0);
}

static int same_file(const struct stat *st, const char *other)
{
    struct stat ot;
    return other && stat(other, &ot) == 0 && ot.st_dev == st->st_dev && ot.st_ino == st->st_ino;
}

int pf_out_prepare(pf_out_t *o, const char *what, const char *path, const char *script, int only_profile)
{
    memset(o, 0, sizeof *o);
    o->what = what;
    o->path = path;
    o->dirfd = -1;
    if (strcmp(path, "/dev/stdout") == 0 || strcmp(path, "/dev/stderr") == 0 || strncmp(path, "/dev/fd/", 8) == 0 ||
        strncmp(path, "/proc/self/fd/", 14) == 0) {
        o->in_place = o->descriptor = 1;
        if (access(path, W_OK) != 0)
            return cannot(o, errno);
        return 0;
    }
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return refuse(o, "names a directory, not a file");
    if (strlen(name) >= sizeof o->name)
        return cannot(o, ENAMETOOLONG);
    snprintf(o->name, sizeof o->name, "%s", name);
    char dir[4096];
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    o->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (o->dirfd < 0)
        return cannot(o, errno);
    struct stat st;
    if (fstatat(o->dirfd, o->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(st.st_mode))
            return refuse(o, "is a symbolic link: pyflow does not write through links (name the file it points to)");
        if (S_ISDIR(st.st_mode))
            return refuse(o, "is a directory");
        if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
            o->in_place = 1;
            if (faccessat(o->dirfd, o->name, W_OK, AT_EACCESS) != 0)
                return cannot(o, errno);
            return 0;
        }
        if (!S_ISREG(st.st_mode))
            return refuse(o, "is neither a file, a FIFO nor a character device: pyflow does not write there");
        if (same_file(&st, script))
            return refuse(o, "is the program's own script: pyflow does not overwrite it");
        if (st.st_uid != geteuid())
            return refuse(o, "belongs to another user: pyflow does not replace it");
        if (only_profile && !replaceable_profile(o->dirfd, o->name))
            return refuse(o, "exists and is not a pyflow profile: pyflow replaces only a profile (remove it "
                             "or choose another name)");
        o->existed = 1;
    } else if (errno != ENOENT) {
        return cannot(o, errno);
    }
    if (faccessat(o->dirfd, ".", W_OK | X_OK, AT_EACCESS) != 0)
        return cannot(o, errno);
    return 0;
}

int pf_out_open(pf_out_t *o)
{
    int fd;
    if (o->descriptor) {
        fd = open(o->path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    } else if (o->in_place) {
        fd = openat(o->dirfd, o->name, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
        struct stat st;
        if (fd >= 0 && (fstat(fd, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)))) {
            close(fd);
            fprintf(stderr, "pyflow: the %s %s was replaced by a file while the program ran: not written\n",
                    o->what, o->path);
            return -1;
        }
    } else {
        fd = -1;
        errno = EEXIST;
        for (int tries = 0; fd < 0 && errno == EEXIST && tries < 100; tries++) {
            snprintf(o->tmp, sizeof o->tmp, ".%.200s.%llx.tmp", o->name, pf_out_random() & 0xffffffffffull);
            fd = openat(o->dirfd, o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        }
        if (fd < 0)
            o->tmp[0] = '\0';
    }
    if (fd < 0)
        fprintf(stderr, "pyflow: cannot write the %s to %s: %s\n", o->what, o->path, strerror(errno));
    return fd;
}

FILE *pf_out_fopen(pf_out_t *o)
{
    int fd = pf_out_open(o);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        fprintf(stderr, "pyflow: cannot write the %s to %s: %s\n", o->what, o->path, strerror(errno));
        pf_out_commit(o, fd, 0);
    }
    return f;
}

int pf_out_commit(pf_out_t *o, int fd, int ok)
{
    if (close(fd) != 0)
        ok = 0;
    if (!o->tmp[0])
        return ok ? 0 : -1;
    int rc = 0;
    if (ok && renameat(o->dirfd, o->tmp, o->dirfd, o->name) != 0) {
        fprintf(stderr, "pyflow: cannot put the %s in place at %s: %s\n", o->what, o->path, strerror(errno));
        ok = 0;
    }
    if (!ok) {
        unlinkat(o->dirfd, o->tmp, 0);
        rc = -1;
    }
    o->tmp[0] = '\0';
    return rc;
}

int pf_out_fcommit(pf_out_t *o, FILE *f, int ok)
{
    int fd = dup(fileno(f));
    if (fclose(f) != 0 || fd < 0)
        ok = 0;
    if (fd < 0) {
        if (o->tmp[0])
            unlinkat(o->dirfd, o->tmp, 0);
        o->tmp[0] = '\0';
        return -1;
    }
    return pf_out_commit(o, fd, ok);
}

void pf_out_release(pf_out_t *o)
{
    if (o->dirfd >= 0)
        close(o->dirfd);
    o->dirfd = -1;
}
