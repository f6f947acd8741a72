/* pf_launch.c - starting the program under the runtime, so that it behaves exactly as `python3 app.py`:
 * same argv (the script as typed), cwd, stdin/stdout/stderr, environment plus pyflow's variables, and
 * LD_PRELOAD with the runtime in front of whatever was already preloaded.
 *
 * While the program runs, signals and stops pass between pyflow and the program as pf_jobs.h says.
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
#include "pf_jobs.h"
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

static void set_env_u64(const char *name, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    setenv(name, buf, 1);
}

static void exec_argv(const pf_run_opts_t *o, const pf_python_t *py);

/* A plain run records in full until its profile reaches this size, then aggregated (docs/long-runs.md,
 * "Should it be the default?"): no run's profile grows past it by more than a few MB an hour. Not with
 * --no-aggregate, nor with --exact or --max-profile, which ask for every record or for the cap's own
 * coarsening. PYFLOW_AGGREGATE_AFTER_BYTES in pyflow's environment changes it (tests: a small size). */
static uint64_t default_aggregate_after_bytes(const pf_run_opts_t *o)
{
    if (o->no_aggregate || o->exact || o->max_profile_bytes)
        return 0;
    const char *env = getenv(PF_ENV_AGGREGATE_AFTER_BYTES);
    uint64_t v;
    if (env && *env && pf_cli_parse_bytes(env, &v) == 0 && v >= (1u << 20))
        return v;
    return PF_DEFAULT_AGGREGATE_AFTER_BYTES;
}
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
    uint64_t after_bytes = o->aggregate ? o->aggregate_after_bytes : default_aggregate_after_bytes(o);
    if (o->aggregate || after_bytes)
        setenv(PF_ENV_AGGREGATE, "1", 1);
    if (o->aggregate_after_ms)
        set_env_u64(PF_ENV_AGGREGATE_AFTER_MS, o->aggregate_after_ms);
    if (after_bytes)
        set_env_u64(PF_ENV_AGGREGATE_AFTER_BYTES, after_bytes);
    else
        unsetenv(PF_ENV_AGGREGATE_AFTER_BYTES);
    if (o->sample_bytes)
        set_env_u64(PF_ENV_SAMPLE_BYTES, o->sample_bytes);
    if (o->gpu_per_tensor)
        request_torch_async_backend();
    if (o->watch)
        setenv(PF_ENV_WATCH, o->watch, 1);
    else if (!o->no_watch && (!o->aggregate || o->aggregate_after_ms || o->aggregate_after_bytes))
        /* not with --aggregate from the start: an aggregated flow's verdicts are compare-at-free's */
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

char **pf_launch_argv(const pf_run_opts_t *o, const pf_python_t *py)
{
    char **argv = calloc((size_t)o->n_python_opts + (size_t)o->nargs + 4, sizeof *argv);
    if (!argv)
        return NULL;
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
    return argv;
}

/* Execs the interpreter on the program, with the user's argv. Never returns. */
static void exec_argv(const pf_run_opts_t *o, const pf_python_t *py)
{
    char **argv = pf_launch_argv(o, py);
    if (!argv)
        _exit(127);
    execv(py->executable, argv);
    fprintf(stderr, "pyflow: cannot execute %s: %s\n", py->executable, strerror(errno));
    _exit(127);
}

int pf_launch_run(const pf_run_opts_t *o, const pf_python_t *py, const char *libdir, const char *profile,
                  pf_child_status_t *st)
{
    pf_jobs_t jobs;
    pf_jobs_prepare(&jobs);
    fflush(NULL);
    uint64_t start = now_ns();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        pf_jobs_abandon(&jobs);
        fprintf(stderr, "pyflow: cannot start the program: %s\n", strerror(e));
        return -1;
    }
    if (pid == 0) {
        pf_jobs_child(&jobs);
        exec_program(o, py, libdir, profile);
    }
    pf_jobs_hide_cmdline(pid);
    int status;
    if (pf_jobs_wait(&jobs, pid, &status) != 0)
        return -1;
    st->elapsed_ns = now_ns() - start;
    st->signaled = WIFSIGNALED(status);
    st->code = st->signaled ? WTERMSIG(status) : WEXITSTATUS(status);
    return 0;
}
