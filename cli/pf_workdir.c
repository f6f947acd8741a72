/* pf_workdir.c - the run's private directory (pf_workdir.h). */
#include "pf_workdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PF_ROOT_NAME "profile.pflow"

int pf_workdir_make(pf_workdir_t *w, int parentfd, const char *parent_path, const char *prefix)
{
    memset(w, 0, sizeof *w);
    w->parentfd = parentfd;
    w->fd = w->profile_fd = w->inotify_fd = -1;
    int err = EEXIST;
    for (int tries = 0; err == EEXIST && tries < 100; tries++) {
        snprintf(w->name, sizeof w->name, "%.200s%06llx", prefix, pf_out_random() & 0xffffffull);
        err = mkdirat(parentfd, w->name, 0700) == 0 ? 0 : errno;
    }
    if (err)
        goto fail;
    w->fd = openat(parentfd, w->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (w->fd < 0)
        err = errno;
    else if ((w->profile_fd = openat(w->fd, PF_ROOT_NAME, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
        err = errno;
    else if (geteuid() == 0)
        /* run as root, the program may become another user (setuid, setgid) before it starts children:
         * they may add their profiles (sticky: never remove or rename another's), not list the directory;
         * files they plant under a child's name are told apart by the run id (pf_format.h) */
        fchmod(w->fd, 01733);
    if (err) {
        unlinkat(parentfd, w->name, AT_REMOVEDIR);
        goto fail;
    }
    snprintf(w->profile, sizeof w->profile, "%s/%s/%s", parent_path, w->name, PF_ROOT_NAME);
    return 0;
fail:
    if (w->fd >= 0)
        close(w->fd);
    close(parentfd);
    w->fd = w->parentfd = -1;
    return -err;
}

/* A child profile's name: profile.pflow.<pid> or profile.pflow.<pid>.<n>. Returns its pid, else 0. */
static long child_pid(const char *name)
{
    size_t n = strlen(PF_ROOT_NAME);
    if (strncmp(name, PF_ROOT_NAME, n) != 0 || name[n] != '.')
        return 0;
    char *end;
    long pid = strtol(name + n + 1, &end, 10);
    if (end == name + n + 1 || pid <= 0)
        return 0;
    if (*end == '.') {
        char *tail;
        strtol(end + 1, &tail, 10);
        if (tail == end + 1 || *tail)
            return 0;
    } else if (*end) {
        return 0;
    }
    return pid;
}

/* Calls fn for each child profile in the directory; returns how many there were. */
static size_t each_child(pf_workdir_t *w, void (*fn)(pf_workdir_t *, const char *, long, void *), void *arg)
{
    int fd = dup(w->fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    rewinddir(d);   /* a dup shares its offset with w->fd: where the last listing ended */
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        long pid = child_pid(de->d_name);
        if (pid) {
            n++;
            if (fn)
                fn(w, de->d_name, pid, arg);
        }
    }
    closedir(d);
    return n;
}

/* 1 while process pid runs (a zombie has ended: its parent has not reaped it yet); adds the CPU time it
 * has used (clock ticks) to *cpu. */
static int process_alive(long pid, uint64_t *cpu)
{
    if (kill((pid_t)pid, 0) != 0 && errno != EPERM)
        return 0;
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno != ENOENT;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 1;
    buf[n] = '\0';
    const char *state = strrchr(buf, ')');      /* the command name may hold spaces and parentheses */
    if (!state || state[1] != ' ')
        return 1;
    char st = 0;
    unsigned long user = 0, sys = 0;            /* fields 14 and 15; the state is field 3 */
    if (sscanf(state + 2, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &st, &user, &sys) == 3)
        *cpu += user + sys;
    return st != 'Z' && st != 'X';
}

/* 1 while the process writing this run's profile `name` runs: pid is alive and maps that file (a process
 * keeps its profile's header mapped while it runs). So a pid the system has given to another process since,
 * and an image that exec'd away (its file no longer mapped), do not count. Where its maps cannot be read
 * (a child that became another user), alive is enough. */
static int writer_running(const pf_workdir_t *w, long pid, const char *name, uint64_t *cpu)
{
    if (!process_alive(pid, cpu))
        return 0;
    char path[64], want[400];
    snprintf(path, sizeof path, "/proc/%ld/maps", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 1;
    int n = snprintf(want, sizeof want, "/%s/%s", w->name, name), found = 0;
    char *line = NULL;
    size_t cap = 0;
    while (!found && getline(&line, &cap, f) > 0) {
        const char *at = strstr(line, want);   /* the path ends the line, " (deleted)" after it if removed */
        found = at && (at[n] == '\n' || at[n] == ' ' || at[n] == '\0');
    }
    free(line);
    fclose(f);
    return found;
}

typedef struct running {
    long *pids;
    size_t max, n;
    uint64_t cpu;       /* the CPU time they have used, in clock ticks */
} running_t;

static void note_running(const pf_workdir_t *w, long pid, const char *name, running_t *r)
{
    for (size_t i = 0; i < r->n && i < r->max; i++)
        if (r->pids[i] == pid)
            return;     /* its files: one per image it exec'd */
    if (writer_running(w, pid, name, &r->cpu)) {
        if (r->n < r->max)
            r->pids[r->n] = pid;
        r->n++;
    }
}

static void running_child(pf_workdir_t *w, const char *name, long pid, void *arg)
{
    note_running(w, pid, name, arg);
}

static size_t children_running(pf_workdir_t *w, long *pids, size_t max, uint64_t *cpu)
{
    running_t r = {pids, max, 0, 0};
    pf_workdir_hold_new(w);     /* children created just now: held before they could be removed */
    each_child(w, running_child, &r);
    for (int i = 0; i < w->n_held; i++)
        note_running(w, child_pid(w->held[i].name), w->held[i].name, &r);
    *cpu = r.cpu;
    return r.n;
}

static int64_t ms_since(const struct timespec *then)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)(now.tv_sec - then->tv_sec) * 1000 + (now.tv_nsec - then->tv_nsec) / 1000000;
}

size_t pf_workdir_wait_children(pf_workdir_t *w, unsigned grace_ms, unsigned most_ms, long *running, size_t max)
{
    struct timespec start, active, nap;
    clock_gettime(CLOCK_MONOTONIC, &start);
    active = start;
    uint64_t cpu_then = 0;
    int said = 0;
    sigset_t interrupt, old;    /* Ctrl-C ends the wait: the report is made at once */
    sigemptyset(&interrupt);
    sigaddset(&interrupt, SIGINT);
    sigprocmask(SIG_BLOCK, &interrupt, &old);
    size_t n;
    for (long nap_us = 1000;; nap_us = nap_us < 16000 ? nap_us * 2 : nap_us) {
        uint64_t cpu;
        n = children_running(w, running, max, &cpu);
        if (n == 0)
            break;
        if (cpu != cpu_then) {      /* one of them ran (or one ended): they are at work */
            cpu_then = cpu;
            clock_gettime(CLOCK_MONOTONIC, &active);
        }
        int64_t waited = ms_since(&start);
        if (ms_since(&active) >= grace_ms || waited >= most_ms)
            break;
        if (!said && waited >= PF_CHILDREN_SAY_MS) {
            said = 1;
            fprintf(stderr, "pyflow: the program ended; waiting for %zu child process%s still at work (at most %.0f "
                    "s more; Ctrl-C: report now)\n", n, n == 1 ? "" : "es", (most_ms - (double)waited) / 1000);
        }
        nap = (struct timespec){0, nap_us * 1000};
        if (sigtimedwait(&interrupt, NULL, &nap) == SIGINT)
            break;
    }
    struct timespec zero = {0, 0};
    while (sigtimedwait(&interrupt, NULL, &zero) == SIGINT) {
    }   /* one that came as the wait ended asked for the report too */
    sigprocmask(SIG_SETMASK, &old, NULL);
    return n;
}

/* Moves without replacing: renameat2's RENAME_NOREPLACE, or link + unlink where the file system lacks it. */
static int move_noreplace(int from_dir, const char *from, int to_dir, const char *to)
{
#ifdef RENAME_NOREPLACE
    if (renameat2(from_dir, from, to_dir, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
#endif
    if (linkat(from_dir, from, to_dir, to, 0) != 0)
        return -1;
    unlinkat(from_dir, from, 0);
    return 0;
}

/* A profile is made 0600 while the run records into it; where the user keeps it, it gets the mode a file
 * the user creates would have. */
static void user_mode(pf_workdir_t *w, const char *name)
{
    mode_t mask = umask(0);
    umask(mask);
    fchmodat(w->fd, name, 0666 & ~mask, 0);
}

static void publish_child(pf_workdir_t *w, const char *name, long pid, void *arg)
{
    pf_out_t *out = arg;
    char to[600];
    user_mode(w, name);
    /* its own name's tail first (.<pid>, or .<pid>.<n> for an image the process exec'd into): named in the
     * order the directory lists them, two images of one pid traded names, and their order in the report */
    for (int n = 0; n < 1000; n++) {
        if (n == 0)
            snprintf(to, sizeof to, "%s%s", out->name, name + strlen(PF_ROOT_NAME));
        else
            snprintf(to, sizeof to, "%s.%ld.%d", out->name, pid, n);
        if (move_noreplace(w->fd, name, out->dirfd, to) == 0)
            return;
        if (errno != EEXIST)
            break;
    }
    fprintf(stderr, "pyflow: cannot keep the child profile %s beside %s: %s\n", name, out->path, strerror(errno));
}

static int copy_profile(int from, int fd);

/* Copies the root profile into an output written in place (a device, a FIFO). */
static int copy_root(pf_workdir_t *w, pf_out_t *out)
{
    int fd = pf_out_open(out);
    if (fd < 0)
        return -1;
    int ok = copy_profile(w->profile_fd, fd) == 0, e = errno;
    if (pf_out_commit(out, fd, ok) != 0 || !ok) {
        fprintf(stderr, "pyflow: writing the profile to %s failed: %s\n", out->path, strerror(e));
        return -1;
    }
    size_t kids = each_child(w, NULL, NULL);
    if (kids)
        fprintf(stderr, "pyflow: %zu child process profile%s not kept: %s is not a file they can sit beside\n",
                kids, kids == 1 ? " is" : "s are", out->path);
    return 0;
}

int pf_workdir_publish(pf_workdir_t *w, pf_out_t *out)
{
    if (out->in_place)
        return copy_root(w, out);
    each_child(w, publish_child, out);
    user_mode(w, PF_ROOT_NAME);
    if (renameat(w->fd, PF_ROOT_NAME, out->dirfd, out->name) != 0) {
        fprintf(stderr, "pyflow: cannot put the profile in place at %s: %s (it stays in %s)\n", out->path,
                strerror(errno), w->profile);
        return -1;
    }
    if (out->existed)
        fprintf(stderr, "pyflow: the earlier profile %s was replaced\n", out->path);
    return 0;
}

int pf_workdir_watch(pf_workdir_t *w)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", w->profile);
    *strrchr(dir, '/') = '\0';
    w->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->inotify_fd >= 0 && inotify_add_watch(w->inotify_fd, dir, IN_CREATE) < 0) {
        close(w->inotify_fd);
        w->inotify_fd = -1;
    }
    return w->inotify_fd;
}

void pf_workdir_hold_new(void *arg)
{
    pf_workdir_t *w = arg;
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;
    while ((n = read(w->inotify_fd, buf, sizeof buf)) > 0) {
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *e = (const struct inotify_event *)p;
            p += sizeof *e + e->len;
            if (!e->len || !child_pid(e->name) || w->n_held >= PF_WORKDIR_HELD || strlen(e->name) >= 64)
                continue;
            int fd = openat(w->fd, e->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            if (fd < 0)
                continue;
            w->held[w->n_held].fd = fd;
            snprintf(w->held[w->n_held].name, sizeof w->held[0].name, "%s", e->name);
            w->n_held++;
        }
    }
}

/* Copies the file at from (a descriptor pyflow kept) into the file at fd. Returns 0 or -1. */
static int copy_profile(int from, int fd)
{
    char buf[1 << 16];
    off_t at = 0;
    for (;;) {
        ssize_t n = pread(from, buf, sizeof buf, at);
        if (n <= 0)
            return n == 0 ? 0 : -1;
        for (ssize_t done = 0; done < n;) {
            ssize_t m = write(fd, buf + done, (size_t)(n - done));
            if (m < 0 && errno != EINTR)
                return -1;
            if (m > 0)
                done += m;
        }
        at += n;
    }
}

void pf_workdir_release(pf_workdir_t *w)
{
    for (int i = 0; i < w->n_held; i++)
        close(w->held[i].fd);
    w->n_held = 0;
    int *fds[] = {&w->fd, &w->profile_fd, &w->parentfd, &w->inotify_fd};
    for (size_t i = 0; i < sizeof fds / sizeof *fds; i++) {
        if (*fds[i] >= 0)
            close(*fds[i]);
        *fds[i] = -1;
    }
}

int pf_workdir_recover(pf_workdir_t *w)
{
    struct stat dir, root, held;
    if (fstat(w->fd, &dir) == 0 && dir.st_nlink > 0 && fstatat(w->fd, PF_ROOT_NAME, &root, AT_SYMLINK_NOFOLLOW) == 0 &&
        fstat(w->profile_fd, &held) == 0 && root.st_ino == held.st_ino && root.st_dev == held.st_dev)
        return 0;
    char old[PATH_MAX];
    snprintf(old, sizeof old, "%s", w->profile);
    *strrchr(old, '/') = '\0';
    /* a new directory where the old one was made, else in $TMPDIR */
    pf_workdir_t fresh;
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", old);
    *strrchr(parent, '/') = '\0';
    int pfd = dup(w->parentfd);
    if (pf_workdir_make(&fresh, pfd, parent, "pyflow-recovered-") != 0) {
        const char *t = getenv("TMPDIR");
        snprintf(parent, sizeof parent, "%s", t && *t ? t : "/tmp");
        pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pfd < 0 || pf_workdir_make(&fresh, pfd, parent, "pyflow-recovered-") != 0) {
            fprintf(stderr, "pyflow: the program removed pyflow's directory %s, and no new one can be made: no "
                    "report\n", old);
            return -1;
        }
    }
    if (copy_profile(w->profile_fd, fresh.profile_fd) != 0) {
        fprintf(stderr, "pyflow: the program removed pyflow's directory %s; its profile cannot be read back: %s\n",
                old, strerror(errno));
        pf_workdir_remove(&fresh);
        return -1;
    }
    pf_workdir_hold_new(w);     /* the last ones created */
    int kept = 0;
    for (int i = 0; i < w->n_held; i++) {
        int to = openat(fresh.fd, w->held[i].name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (to >= 0 && copy_profile(w->held[i].fd, to) == 0)
            kept++;
        if (to >= 0)
            close(to);
    }
    fprintf(stderr, "pyflow: the program removed pyflow's directory %s while it ran: the report has what the "
            "main process and %d child process%s recorded (from the files pyflow held open)\n", old, kept,
            kept == 1 ? "" : "es");
    pf_workdir_release(w);
    *w = fresh;
    return 0;
}

static void remove_child(pf_workdir_t *w, const char *name, long pid, void *arg)
{
    (void)pid, (void)arg;
    unlinkat(w->fd, name, 0);
}

void pf_workdir_remove(pf_workdir_t *w)
{
    if (w->fd >= 0) {
        each_child(w, remove_child, NULL);
        unlinkat(w->fd, PF_ROOT_NAME, 0);
        unlinkat(w->parentfd, w->name, AT_REMOVEDIR);
    }
    pf_workdir_release(w);
}
