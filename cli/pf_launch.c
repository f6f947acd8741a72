/* pf_launch.c - starting the program under the runtime, so that it behaves exactly as `python3 app.py`:
 * same argv (the script as typed), cwd, stdin/stdout/stderr, environment plus pyflow's variables, and
 * LD_PRELOAD with the runtime in front of whatever was already preloaded.
 *
 * While the program runs, pyflow ignores SIGINT and SIGQUIT (the terminal delivers them to the program
 * too, as `time` does) and passes SIGTERM and SIGHUP on to it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pf_cli_int.h"
#include "pf_runtime.h"

int pf_launch_libdir(char *out, size_t size)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    *slash = '\0';  /* .../bin */
    snprintf(out, size, "%s/../lib/pyflow", exe);
    char real[PATH_MAX];
    if (realpath(out, real))
        snprintf(out, size, "%s", real);
    return 0;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int pf_cli_find_on_path(const char *name, char *out, size_t size)
{
    if (strchr(name, '/')) {
        snprintf(out, size, "%s", name);
        return access(out, X_OK);
    }
    const char *path = getenv("PATH");
    if (!path)
        return -1;
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(out, size, "%.*s/%s", (int)n, n ? p : ".", name);
        if (access(out, X_OK) == 0)
            return 0;
        p += n + (p[n] == ':');
    }
    return -1;
}

/* The probe costs a Python start-up (~20 ms) per run; its answer only changes when the binary does, so it
 * is cached per ELF binary (path, inode, size, mtime). Scripts such as pyenv's shims pick the interpreter
 * at each call and are always probed. Returns 1 and fills *key when the interpreter can be cached. */
static int cache_key(const char *python, char *key, size_t size)
{
    char path[PATH_MAX], real[PATH_MAX];
    if (pf_cli_find_on_path(python, path, sizeof path) != 0 || !realpath(path, real))
        return 0;
    struct stat st;
    if (!pf_cli_is_elf(real) || stat(real, &st) != 0)
        return 0;
    /* the path as found too, not only the binary: a venv's bin/python is a link to the system's binary, and
     * run by its own path it is that venv (its sys.executable and sys.prefix), not the system's Python */
    int n = snprintf(key, size, "%s|%s|%llu|%lld|%lld", path, real, (unsigned long long)st.st_ino,
                     (long long)st.st_size, (long long)st.st_mtime);
    return n > 0 && (size_t)n < size;   /* a key cut short could match another interpreter's: probe instead */
}

static void cache_file(char *out, size_t size)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(out, size, "%s/pyflow", xdg);
    else if (home && *home)
        snprintf(out, size, "%s/.cache/pyflow", home);
    else
        out[0] = '\0';
}

static int cache_lookup(const char *key, pf_python_t *py)
{
    char dir[PATH_MAX], file[PATH_MAX + 16], line[PATH_MAX * 3];
    cache_file(dir, sizeof dir);
    if (!dir[0])
        return 0;
    snprintf(file, sizeof file, "%s/interpreters", dir);
    FILE *f = fopen(file, "r");
    if (!f)
        return 0;
    int found = 0;
    size_t kl = strlen(key);
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kl) == 0 && line[kl] == ' ' &&
            sscanf(line + kl + 1, "%d %d %4095[^\n]", &py->major, &py->minor, py->executable) == 3)
            found = 1;
    }
    fclose(f);
    return found;
}

static void cache_store(const char *key, const pf_python_t *py)
{
    char dir[PATH_MAX], file[PATH_MAX + 16];
    cache_file(dir, sizeof dir);
    if (!dir[0])
        return;
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash) {
        *slash = '\0';
        mkdir(parent, 0755);
    }
    mkdir(dir, 0755);
    snprintf(file, sizeof file, "%s/interpreters", dir);
    FILE *f = fopen(file, "a");
    if (!f)
        return;     /* a read-only home: just probe every time */
    fprintf(f, "%s %d %d %s\n", key, py->major, py->minor, py->executable);
    fclose(f);
}

static int probe_uncached(const char *python, pf_python_t *py);

int pf_launch_probe(const char *python, pf_python_t *py)
{
    char key[PATH_MAX * 2];
    int cacheable = cache_key(python, key, sizeof key);
    if (cacheable && cache_lookup(key, py) && access(py->executable, X_OK) == 0)
        return 0;
    if (probe_uncached(python, py) != 0)
        return -1;
    if (cacheable)
        cache_store(key, py);
    return 0;
}

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
        execlp(python, python, "-S", "-c",
               "import sys; sys.stdout.write('PYFLOW-PROBE %d %d %s\\n' % (sys.version_info[0], "
               "sys.version_info[1], sys.executable))",
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
    char exe[4096];
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && used == 0) {
        fprintf(stderr, "pyflow: cannot run the interpreter %s: not found (use --python PATH or PYFLOW_PYTHON)\n",
                python);
        return -1;
    }
    const char *line = strstr(buf, "PYFLOW-PROBE ");
    if (!line || sscanf(line, "PYFLOW-PROBE %d %d %4095[^\n]", &py->major, &py->minor, exe) != 3) {
        fprintf(stderr, "pyflow: --python %s is not a Python interpreter\n", python);
        return -1;
    }
    snprintf(py->executable, sizeof py->executable, "%s", exe);
    return 0;
}

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
    if (child_pid > 0)
        kill((pid_t)child_pid, sig);
}

static void set_env_u64(const char *name, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    setenv(name, buf, 1);
}

static void exec_argv(const pf_run_opts_t *o, const pf_python_t *py);
static void request_torch_async_backend(void);

/* In the child: the environment for the runtime (none when profile is NULL: run unprofiled), then exec.
 * Never returns. */
static void exec_program(const pf_run_opts_t *o, const pf_python_t *py, const char *libdir, const char *profile)
{
    if (!profile)
        exec_argv(o, py);
    char runtime[PATH_MAX + 32];
    snprintf(runtime, sizeof runtime, "%s/%s", libdir, PF_RUNTIME_SONAME);
    const char *old = getenv("LD_PRELOAD");
    size_t n = strlen(runtime) + (old ? strlen(old) : 0) + 2;
    char *preload = malloc(n);
    if (!preload)
        _exit(127);
    snprintf(preload, n, "%s%s%s", runtime, old && *old ? ":" : "", old && *old ? old : "");
    setenv("LD_PRELOAD", preload, 1);
    /* absolute: a program that changes directory before it starts a child would have the child's
     * profile written beside the new directory, where the report never looks */
    char cwd[PATH_MAX], absolute[2 * PATH_MAX + 2];
    if (profile[0] != '/' && getcwd(cwd, sizeof cwd)) {
        snprintf(absolute, sizeof absolute, "%s/%s", cwd, profile);
        profile = absolute;
    }
    setenv(PF_ENV_OUTPUT, profile, 1);
    set_env_u64(PF_ENV_ROOT_PID, (uint64_t)getpid());
    if (o->exact)
        setenv(PF_ENV_EXACT, "1", 1);
    if (o->native)
        setenv(PF_ENV_NATIVE, "1", 1);
    if (o->sample_bytes)
        set_env_u64(PF_ENV_SAMPLE_BYTES, o->sample_bytes);
    if (o->gpu_per_tensor)
        request_torch_async_backend();
    if (o->watch)
        setenv(PF_ENV_WATCH, o->watch, 1);
    else if (!o->no_watch)
        setenv(PF_ENV_WATCH, "auto", 1);    /* copies, where debug registers fire (pf_watch_glue.c) */
    if (o->watch_event)
        setenv(PF_ENV_WATCH_EVENT, o->watch_event, 1);
    if (o->watch_period)
        set_env_u64(PF_ENV_WATCH_PERIOD, o->watch_period);
    if (o->watch_budget)
        set_env_u64(PF_ENV_WATCH_BUDGET, o->watch_budget);
    if (o->object_bytes)
        set_env_u64(PF_ENV_OBJECT_BYTES, o->object_bytes);
    if (o->max_profile_bytes)
        set_env_u64(PF_ENV_MAX_PROFILE_BYTES, o->max_profile_bytes);
    exec_argv(o, py);
}

/* PyTorch's caching allocator asks the driver for large segments and hands tensors out of them, so the
 * CUDA hooks see reservations, charged to the line that caused each one. Its cudaMallocAsync backend
 * instead calls cudaMallocAsync/cudaFreeAsync per tensor (the driver's pool does the caching), and each
 * tensor is then charged to its own line. A backend the user chose is kept. */
static void request_torch_async_backend(void)
{
    const char *conf = getenv("PYTORCH_CUDA_ALLOC_CONF");
    if (conf && strstr(conf, "backend:")) {
        fprintf(stderr, "pyflow: --gpu-per-tensor: PYTORCH_CUDA_ALLOC_CONF already names a backend (%s); kept\n", conf);
        return;
    }
    char value[1024];
    snprintf(value, sizeof value, "%s%sbackend:cudaMallocAsync", conf && *conf ? conf : "", conf && *conf ? "," : "");
    setenv("PYTORCH_CUDA_ALLOC_CONF", value, 1);
}

/* Execs the interpreter on the program, with the user's argv. Never returns. */
static void exec_argv(const pf_run_opts_t *o, const pf_python_t *py)
{
    char **argv = calloc((size_t)o->n_python_opts + (size_t)o->nargs + 4, sizeof *argv);
    if (!argv)
        _exit(127);
    int k = 0;
    argv[k++] = (char *)py->executable;
    for (int i = 0; i < o->n_python_opts; i++)
        argv[k++] = o->python_opts[i];
    if (o->kind == PF_TARGET_MODULE)
        argv[k++] = "-m";
    else if (o->kind == PF_TARGET_CODE)
        argv[k++] = "-c";
    argv[k++] = (char *)o->target;
    for (int i = 0; i < o->nargs; i++)
        argv[k++] = o->args[i];
    argv[k] = NULL;
    execv(py->executable, argv);
    fprintf(stderr, "pyflow: cannot execute %s: %s\n", py->executable, strerror(errno));
    _exit(127);
}

int pf_launch_run(const pf_run_opts_t *o, const pf_python_t *py, const char *libdir, const char *profile,
                  pf_child_status_t *st)
{
    struct sigaction ign = {.sa_handler = SIG_IGN}, fwd = {.sa_handler = forward_signal}, old_int, old_quit,
                     old_term, old_hup;
    sigemptyset(&ign.sa_mask);
    sigemptyset(&fwd.sa_mask);
    /* Blocked across fork, so no signal falls between the fork and the handlers below: pyflow then
     * forwards a pending SIGTERM/SIGHUP and drops a pending SIGINT/SIGQUIT (the terminal sent those to the
     * program too, which gets them when it unblocks before exec). */
    sigset_t waiting, old_mask;
    sigemptyset(&waiting);
    sigaddset(&waiting, SIGINT);
    sigaddset(&waiting, SIGQUIT);
    sigaddset(&waiting, SIGTERM);
    sigaddset(&waiting, SIGHUP);
    sigprocmask(SIG_BLOCK, &waiting, &old_mask);
    fflush(NULL);
    uint64_t start = now_ns();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        sigprocmask(SIG_SETMASK, &old_mask, NULL);
        fprintf(stderr, "pyflow: cannot start the program: %s\n", strerror(e));
        return -1;
    }
    if (pid == 0) {
        sigprocmask(SIG_SETMASK, &old_mask, NULL);
        exec_program(o, py, libdir, profile);
    }
    child_pid = pid;
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    sigaction(SIGTERM, &fwd, &old_term);
    sigaction(SIGHUP, &fwd, &old_hup);
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "pyflow: waiting for the program failed: %s\n", strerror(errno));
            return -1;
        }
    }
    st->elapsed_ns = now_ns() - start;
    child_pid = 0;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    st->signaled = WIFSIGNALED(status);
    st->code = st->signaled ? WTERMSIG(status) : WEXITSTATUS(status);
    return 0;
}
