/* pf_probe.c - which Python the user named, and its version.
 *
 * The interpreter runs as the user named it: the path given (or found on PATH, as a shell finds it), never
 * the binary a symbolic link resolves to, so a virtual environment's bin/python finds its pyvenv.cfg and
 * runs as the environment, whether named with --python, activated (its bin first on PATH) or found on PATH.
 *
 * The version probe costs a Python start-up (~20 ms) per run, so its answer (the version only: nothing in
 * the cache is ever executed) is kept in $XDG_CACHE_HOME/pyflow/interpreters (~/.cache/pyflow/...), keyed
 * by what tells interpreters apart: the path as named, the binary it resolves to (inode, size, mtime), and
 * the pyvenv.cfg beside it or one level up (the venv's identity). The cache is private: a directory 0700
 * and a file 0600 owned by the user running pyflow; one that is not (another user's HOME under sudo -E) is
 * ignored, and a line that does not read as a version is too. Scripts such as pyenv's shims pick the
 * interpreter at each call and are always probed. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pf_cli_int.h"

/* "dev:ino:size:mtime" of a file, or "-" when there is none. */
static void identity(const char *path, char *out, size_t size)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(out, size, "-");
        return;
    }
    snprintf(out, size, "%llu:%llu:%lld:%lld.%09ld", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
             (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

/* The cache key of the interpreter at `named` (a path as found on PATH). Returns 1 when it can be cached
 * (an ELF binary), else 0. */
static int cache_key(const char *named, char *key, size_t size)
{
    char absolute[2 * PATH_MAX + 2], real[PATH_MAX], cwd[PATH_MAX];
    if (named[0] == '/')
        snprintf(absolute, sizeof absolute, "%s", named);
    else if (getcwd(cwd, sizeof cwd))
        snprintf(absolute, sizeof absolute, "%s/%s", cwd, named);
    else
        return 0;
    if (!realpath(absolute, real) || !pf_cli_is_elf(real) || strpbrk(absolute, " \n") || strpbrk(real, " \n"))
        return 0;
    char bin[96], cfg_here[96], cfg_up[96], dir[sizeof absolute], cfg[sizeof absolute + 16];
    identity(real, bin, sizeof bin);
    snprintf(dir, sizeof dir, "%s", absolute);
    char *slash = strrchr(dir, '/');
    *slash = '\0';
    snprintf(cfg, sizeof cfg, "%s/pyvenv.cfg", dir);
    identity(cfg, cfg_here, sizeof cfg_here);
    slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    snprintf(cfg, sizeof cfg, "%s/pyvenv.cfg", slash ? dir : "");
    identity(cfg, cfg_up, sizeof cfg_up);
    int n = snprintf(key, size, "%s|%s|%s|%s|%s", absolute, real, bin, cfg_here, cfg_up);
    return n > 0 && (size_t)n < size;
}

/* Opens the cache directory when it is this user's and private (creating it if asked). Returns an fd or -1. */
static int cache_dir(int create)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char dir[PATH_MAX];
    if (xdg && *xdg)
        snprintf(dir, sizeof dir, "%s/pyflow", xdg);
    else if (home && *home)
        snprintf(dir, sizeof dir, "%s/.cache/pyflow", home);
    else
        return -1;
    if (create) {
        char parent[PATH_MAX];
        snprintf(parent, sizeof parent, "%s", dir);
        *strrchr(parent, '/') = '\0';
        mkdir(parent, 0700);
        mkdir(dir, 0700);
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == geteuid()) {
        if ((st.st_mode & 077) == 0 || (create && fchmod(fd, 0700) == 0))
            return fd;
    }
    if (fd >= 0)
        close(fd);
    return -1;
}

/* Opens the cache file in dirfd when it is a regular file of this user's, mode 0600. */
static int cache_file(int dirfd, int flags)
{
    int fd = openat(dirfd, "interpreters", flags | O_NOFOLLOW | O_CLOEXEC, 0600);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
        ((st.st_mode & 077) == 0 || ((flags & O_CREAT) && fchmod(fd, 0600) == 0)))
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

/* A line "KEY MAJOR MINOR": exactly that, with a Python 3 version. */
static int read_entry(const char *line, const char *key, pf_python_t *py)
{
    size_t kl = strlen(key);
    if (strncmp(line, key, kl) != 0 || line[kl] != ' ')
        return 0;
    int major, minor, end = 0;
    if (sscanf(line + kl + 1, "%d %d%n", &major, &minor, &end) != 2 || strcmp(line + kl + 1 + end, "\n") != 0 ||
        major != 3 || minor < 0 || minor > 99)
        return 0;
    py->major = major;
    py->minor = minor;
    return 1;
}

static int cache_lookup(const char *key, pf_python_t *py)
{
    int dirfd = cache_dir(0);
    int fd = dirfd >= 0 ? cache_file(dirfd, O_RDONLY) : -1;
    if (dirfd >= 0)
        close(dirfd);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    static char line[3 * PATH_MAX + 512];
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = read_entry(line, key, py);
    fclose(f);
    return found;
}

static void cache_store(const char *key, const pf_python_t *py)
{
    int dirfd = cache_dir(1);
    int fd = dirfd >= 0 ? cache_file(dirfd, O_WRONLY | O_APPEND | O_CREAT) : -1;
    if (dirfd >= 0)
        close(dirfd);
    if (fd < 0)
        return;     /* a read-only or foreign home: just probe every time */
    dprintf(fd, "%s %d %d\n", key, py->major, py->minor);
    close(fd);
}

/* Runs the interpreter (unprofiled) to read its version. Returns 0, or -1 after printing why. */
static int probe_uncached(const char *python, pf_python_t *py)
{
    int fds[2];
    if (pipe(fds) != 0) {
        perror("pyflow: pipe");
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("pyflow: fork");
        return -1;
    }
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            dup2(devnull, STDIN_FILENO);
            dup2(devnull, STDERR_FILENO);
        }
        close(fds[0]);
        unsetenv("LD_PRELOAD");   /* the probe itself is not profiled */
        /* Python 2 syntax too, so an old interpreter is named as unsupported rather than as not Python. */
        execl(python, python, "-S", "-c",
              "import sys; sys.stdout.write('PYFLOW-PROBE %d %d\\n' % (sys.version_info[0], sys.version_info[1]))",
              (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char buf[8192];
    size_t used = 0;
    ssize_t n;
    while (used < sizeof buf - 1 && (n = read(fds[0], buf + used, sizeof buf - 1 - used)) > 0)
        used += (size_t)n;
    buf[used] = '\0';
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    const char *line = strstr(buf, "PYFLOW-PROBE ");
    if (!line || sscanf(line, "PYFLOW-PROBE %d %d", &py->major, &py->minor) != 2) {
        fprintf(stderr, "pyflow: --python %s is not a Python interpreter\n", python);
        return -1;
    }
    return 0;
}

int pf_launch_probe(const char *python, pf_python_t *py)
{
    if (pf_cli_find_on_path(python, py->executable, sizeof py->executable) != 0) {
        fprintf(stderr, "pyflow: cannot run the interpreter %s: not found (use --python PATH or PYFLOW_PYTHON)\n",
                python);
        return -1;
    }
    char key[3 * PATH_MAX + 256];
    int cacheable = cache_key(py->executable, key, sizeof key);
    if (cacheable && cache_lookup(key, py))
        return 0;
    if (probe_uncached(py->executable, py) != 0)
        return -1;
    if (cacheable)
        cache_store(key, py);
    return 0;
}
