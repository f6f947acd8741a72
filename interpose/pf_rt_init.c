/* pf_rt_init.c - the runtime's start: read the launcher's variables, recognise the interpreter, load its
 * frame reader, open the profile, wrap the PyMem domains, and keep all of that right across fork.
 *
 * Anything that is not a supported CPython with PYFLOW_OUTPUT set stays passive: the hooks forward and the
 * first slow-path visit of each thread parks its countdown out of reach.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pf_child_env.h"
#include "pf_fd.h"
#include "pf_hooks_int.h"
#include "pf_runtime.h"

static uint64_t env_u64(const char *name, uint64_t fallback)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return fallback;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || *end || x == 0) {
        pf_log("ignoring %s=%s (expected a positive integer)", name, v);
        return fallback;
    }
    return x;
}

static int env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

/* Reads "3.11.2 (main, ...)" from the interpreter. Returns the minor version, or -1 when this process is
 * not a CPython. */
static int detect_python(char *version, size_t size, uint32_t *hex)
{
    const char *(*get_version)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
    if (!get_version || !dlsym(RTLD_DEFAULT, "PyMem_SetAllocator"))
        return -1;
    const char *v = get_version();
    size_t n = strcspn(v, " ");
    snprintf(version, size, "%.*s", (int)(n < size ? n : size - 1), v);
    unsigned major = 0, minor = 0, micro = 0;
    if (sscanf(version, "%u.%u.%u", &major, &minor, &micro) < 2 || major != 3)
        return -1;
    *hex = (major << 24) | (minor << 16) | (micro << 8);
    return (int)minor;
}

/* Loads pf_pyframes_3<minor>.so from the directory of this library. Returns the API or NULL. */
static const pf_pyframes_api_t *load_frame_reader(int minor)
{
    Dl_info self;
    if (!dladdr((void *)load_frame_reader, &self) || !self.dli_fname)
        return NULL;
    char path[PATH_MAX];
    const char *slash = strrchr(self.dli_fname, '/');
    int dir_len = slash ? (int)(slash - self.dli_fname) : 1;
    snprintf(path, sizeof path, "%.*s/pf_pyframes_3%d.so", dir_len, slash ? self.dli_fname : ".", minor);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return NULL;
    pf_pyframes_entry_fn entry = (pf_pyframes_entry_fn)dlsym(h, PF_PYFRAMES_ENTRY);
    const pf_pyframes_api_t *api = entry ? entry() : NULL;
    if (!api || api->abi != PF_PYFRAMES_ABI || api->py_minor != (uint32_t)minor)
        return NULL;
    return api;
}

static void fork_prepare(void)
{
    pf_guard_enter(&pf_tls);
    pf_recorder_fork_prepare();
}

static void fork_parent(void)
{
    pf_recorder_fork_parent();
    pf_guard_leave(&pf_tls);
}

/* The child has one thread and the parent's tables: a new file, fresh code ids and module list. */
static void fork_child(void)
{
    pf_cfg.pid = (uint32_t)getpid();
    pf_cfg.is_root = 0;
    pf_fd_fork_child();
    pf_recorder_fork_child(&pf_tls);
    pf_guard_leave(&pf_tls);
}

/* A launcher started by a profiled process (or by launchers it started) says so to what it runs: a Python
 * run through a shell then knows which process's start of which pid began its chain (its header's
 * via_pid/via_child), for the reporter to charge it to the line that ran the shell. The first launcher of a
 * chain sets the variable; a profiled process clears it for its own children (take_via); other programs
 * never pass it on (leave_environment_clean). */
static void pass_via(void)
{
    if (getenv(PF_ENV_VIA))
        return;
    char via[32];
    snprintf(via, sizeof via, "%u:%u", (unsigned)getppid(), (unsigned)getpid());
    setenv(PF_ENV_VIA, via, 1);
}

/* A profiled process: the chain of launchers it was started through, if any, and none for its children. */
static void take_via(pf_writer_info_t *info)
{
    const char *via = getenv(PF_ENV_VIA);
    unsigned pid = 0, child = 0;
    if (via && sscanf(via, "%u:%u", &pid, &child) == 2 && pid != (unsigned)getppid()) {
        info->via_pid = pid;
        info->via_child = child;
    }
    unsetenv(PF_ENV_VIA);
}

/* A non-Python program exec'd by the profiled one (a compiler, git, a native tool) gets the environment it
 * would have had without pyflow: pyflow's entry leaves LD_PRELOAD (other entries stay, in order) and the
 * PYFLOW_* variables go. This process keeps the library loaded, passive. Launchers keep them (pass_via). */
static void leave_environment_clean(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return;
    exe[n] = '\0';
    if (pf_is_launcher(exe)) {   /* it keeps pyflow's variables, so that a Python it runs is profiled too */
        pass_via();
        return;
    }
    const char *preload = getenv("LD_PRELOAD");
    if (preload) {
        char kept[4096] = "";
        size_t used = 0;
        for (const char *p = preload; *p;) {
            size_t len = strcspn(p, ": ");
            if (len && !pf_preload_entry_is_ours(p, len) && used + len + 2 < sizeof kept) {
                if (used)
                    kept[used++] = ':';
                memcpy(kept + used, p, len);
                used += len;
                kept[used] = '\0';
            }
            p += len;
            p += *p != '\0';
        }
        if (used)
            setenv("LD_PRELOAD", kept, 1);
        else
            unsetenv("LD_PRELOAD");
    }
    static const char *const vars[] = {PF_ENV_OUTPUT, PF_ENV_ROOT_PID, PF_ENV_RUN_ID, PF_ENV_SAMPLE_BYTES, PF_ENV_OBJECT_BYTES,
                                       PF_ENV_COPY_SAMPLE_BYTES, PF_ENV_COPY_BYTES, PF_ENV_MAX_PROFILE_BYTES,
                                       PF_ENV_EXACT, PF_ENV_NATIVE, PF_ENV_AGGREGATE, PF_ENV_AGGREGATE_MS,
                                       PF_ENV_AGGREGATE_AFTER_MS, PF_ENV_AGGREGATE_AFTER_BYTES,
                                       PF_ENV_QUIET, PF_ENV_WATCH, PF_ENV_WATCH_PERIOD, PF_ENV_WATCH_BUDGET, PF_ENV_WATCH_EVENT,
                                       PF_ENV_WATCH_SEED, PF_ENV_VIA, PF_ENV_PACKED, PF_ENV_YOUNG_FREES, NULL};
    for (int i = 0; vars[i]; i++)
        unsetenv(vars[i]);
    unsetenv(PF_ENV_OUTPUT_DIR);    /* pyflow env's (pf_labels.h) */
    unsetenv(PF_ENV_HOST);
}

__attribute__((constructor)) static void pf_rt_init(void)
{
    pf_rt_resolve_real();
    pf_hooks_resolve_all();
    /* what the recorder calls instead of the hooks (pf_recorder.h), before it can run */
    pf_host = (pf_recorder_host_t){
        .memcpy = pf_real.memcpy,
        .malloc_usable_size = pf_real.malloc_usable_size,
        .pymem_recheck = pf_pymem_recheck,
        .foreign_signal = pf_signal_foreign,
    };
    pf_guard_enter(&pf_tls);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    pf_cfg.start_mono_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    pf_cfg.pid = (uint32_t)getpid();
    pf_cfg.quiet = env_flag(PF_ENV_QUIET);
    const char *run_id = getenv(PF_ENV_RUN_ID), *root = getenv(PF_ENV_ROOT_PID);
    pf_cfg.run_id = run_id ? strtoull(run_id, NULL, 16) : 0;
    pf_cfg.is_root = root && atoi(root) == (int)getpid();

    const char *output = getenv(PF_ENV_OUTPUT);
    const char *output_dir = getenv(PF_ENV_OUTPUT_DIR);
    static char dir_base[PATH_MAX];     /* PYFLOW_OUTPUT_DIR: DIR/<host>, the writer adds .<pid> */
    int in_dir = (!output || !*output) && output_dir && *output_dir;
    if (in_dir || (output && *output))
        pf_labels_init();
    if (in_dir) {
        mkdir(output_dir, 0777);   /* a host's first worker makes it; EEXIST otherwise */
        snprintf(dir_base, sizeof dir_base, "%s/%s", output_dir, pf_labels_host());
        output = dir_base;
    }
    char version[32];
    uint32_t hex = 0;
    int minor = output && *output ? detect_python(version, sizeof version, &hex) : -1;
    if (minor < 0)
        goto passive;   /* not asked to profile, or not a Python: a shell, a shim, an exec'd tool */

    pf_cfg.py = load_frame_reader(minor);
    if (!pf_cfg.py) {
        pf_log("Python %s is not supported by this build (no frame reader for 3.%d); running unprofiled", version,
               minor);
        goto passive;
    }
    pf_cfg.py_finalizing = pf_pyframes_finalizing_word(pf_cfg.py);
    if (pf_cfg.py_finalizing)
        pf_cfg.py->use_finalizing_word(pf_cfg.py_finalizing);
    pf_cfg.exact = env_flag(PF_ENV_EXACT);
    pf_cfg.native = env_flag(PF_ENV_NATIVE);
    pf_cfg.aggregate = env_flag(PF_ENV_AGGREGATE);
    pf_cfg.aggregate_interval_ns = env_u64(PF_ENV_AGGREGATE_MS, 1000) * 1000000ull;
    pf_cfg.aggregate_from_ns = env_u64(PF_ENV_AGGREGATE_AFTER_MS, 0) * 1000000ull;
    pf_cfg.aggregate_after_bytes = pf_cfg.aggregate ? env_u64(PF_ENV_AGGREGATE_AFTER_BYTES, 0) : 0;
    if (pf_cfg.aggregate_after_bytes && !pf_cfg.aggregate_from_ns)
        pf_cfg.aggregate_from_ns = PF_AGGREGATE_NOT_YET;   /* until the writer sees the profile pass it */
    pf_cfg.mean_sample_bytes = env_u64(PF_ENV_SAMPLE_BYTES, PF_DEFAULT_SAMPLE_BYTES);
    pf_cfg.object_threshold = pf_cfg.exact ? 1 : env_u64(PF_ENV_OBJECT_BYTES, PF_DEFAULT_OBJECT_BYTES);
    pf_cfg.copy_sample_bytes = env_u64(PF_ENV_COPY_SAMPLE_BYTES, pf_cfg.mean_sample_bytes);
    pf_cfg.copy_threshold = env_u64(PF_ENV_COPY_BYTES, PF_DEFAULT_COPY_BYTES);
    pf_cfg.waste = !env_flag(PF_ENV_NO_WASTE);
    const char *packed = getenv(PF_ENV_PACKED);
    pf_cfg.packed = !packed || strcmp(packed, "0") != 0;
    const char *young = getenv(PF_ENV_YOUNG_FREES);
    pf_cfg.young_frees = !young || strcmp(young, "0") != 0;
    pf_cfg.whole_stacks = env_flag(PF_ENV_WHOLE_STACKS);

    int is_root = pf_cfg.is_root;
    pf_writer_info_t info = {
        .max_bytes = env_u64(PF_ENV_MAX_PROFILE_BYTES, 0),
        .aggregate_after_bytes = pf_cfg.aggregate_after_bytes,
        .flags = (pf_cfg.exact ? PF_HDR_EXACT : 0) | (pf_cfg.native ? PF_HDR_NATIVE : 0) |
                 (pf_cfg.aggregate ? PF_HDR_AGGREGATE : 0),
        .python_hex = hex,
        .python_version = version,
        .run_id = pf_cfg.run_id,
    };
    take_via(&info);
    int rc = pf_recorder_open(output, is_root, &info);
    if (rc < 0) {
        pf_log("cannot write the profile next to %s: %s; running unprofiled", output, strerror(-rc));
        goto passive;
    }
    if (pf_pymem_install() < 0)
        pf_log("this interpreter has no PyMem_SetAllocator: Python-domain allocations are not seen");
    pf_recorder_prepare();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    __atomic_store_n(&pf_cfg.enabled, 1, __ATOMIC_RELEASE);
    pf_recorder_started(&pf_tls);
    /* Allocations before this point may have parked this thread's countdown as if passive. */
    pf_tls.sampler.countdown = pf_tls.sampler.armed = 0;
    pf_guard_leave(&pf_tls);
    return;

passive:
    if (output && *output && minor < 0)
        leave_environment_clean();
    pf_guard_leave(&pf_tls);
}
