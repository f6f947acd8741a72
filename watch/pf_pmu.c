/* pf_pmu.c - the sampling event that picks when to look at the next memory access.
 *
 * Events are named as libpfm4 names them ("cycles", "instructions", raw "r0229", Zen 4 names with
 * LIBPFM_FORCE_PMU); "task-clock" and "cpu-clock" are the kernel's software clocks, used by default when the
 * machine exposes no PMU (a VM without a virtual PMU): the address source works the same, a sample then
 * means "the next store after this moment" instead of "after N cycles".
 *
 * Each overflow signals the thread itself: O_ASYNC + F_SETSIG (a real-time signal, which queues and carries
 * si_fd) + F_SETOWN_EX with F_OWNER_TID. No ring buffer is mapped (it would count against
 * perf_event_mlock_kb and the handler reads the PC from the ucontext anyway).
 *
 * The period is chosen from /proc/sys/kernel/perf_event_max_sample_rate, not a constant: in a VM each
 * overflow interrupt is slow, the kernel lowers that limit by itself and silently drops samples above it.
 */
#include "pf_fd.h"
#include "pf_watch_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <perfmon/pfmlib_perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

long pf_watch_perf_open(void *attr, int pid, int cpu, int group, unsigned long flags)
{
    long fd = syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
    return fd < 0 ? fd : pf_fd_high((int)fd);    /* 5 per watched thread: not among the program's */
}

int pf_watch_read_int(const char *path, int *out)
{
    /* open/read rather than stdio: this also runs at thread start inside the profiled process */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[32];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    char *end;
    long v = strtol(buf, &end, 10);
    if (end == buf)
        return -1;
    *out = (int)v;
    return 0;
}

void pf_watch_explain_denied(char *buf, size_t n)
{
    int paranoid = 99;
    pf_watch_read_int("/proc/sys/kernel/perf_event_paranoid", &paranoid);
    if (paranoid > 2)
        snprintf(buf, n, "not permitted: perf_event_paranoid=%d forbids user-space events; run: sysctl "
                 "kernel.perf_event_paranoid=2 (or grant CAP_PERFMON)", paranoid);
    else
        snprintf(buf, n, "not permitted, though perf_event_paranoid=%d allows it: seccomp (a container's default "
                 "profile) or a security module refuses it; allow perf_event_open there, or run outside the "
                 "container", paranoid);
}

static void fill_attr(const pf_watch_pmu_t *pmu, struct perf_event_attr *a)
{
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    a->type = pmu->type;
    a->config = pmu->config;
    a->config1 = pmu->config1;
    a->config2 = pmu->config2;
    a->sample_period = pmu->period;
    a->exclude_kernel = 1;
    a->exclude_hv = 1;
    a->wakeup_events = 1;       /* every overflow signals */
    a->disabled = 1;
}

/* Why perf_event_open failed, with the knob to turn. */
static void explain(int err, const char *what, char *why, size_t n)
{
    if (err == EACCES || err == EPERM) {
        char denied[320];
        pf_watch_explain_denied(denied, sizeof denied);
        snprintf(why, n, "%s: perf_event_open %s", what, denied);
    } else if (err == ENOSYS)
        snprintf(why, n, "%s: this kernel has no perf_event_open (or seccomp returns ENOSYS for it)", what);
    else if (err == ENOENT || err == EOPNOTSUPP || err == ENODEV)
        snprintf(why, n, "%s: this CPU or VM exposes no such event (%s); pass --event task-clock", what,
                 strerror(err));
    else
        snprintf(why, n, "%s: %s", what, strerror(err));
}

static int try_open(const pf_watch_pmu_t *pmu)
{
    struct perf_event_attr a;
    fill_attr(pmu, &a);
    int fd = (int)pf_watch_perf_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return -errno;
    close(fd);
    return 0;
}

static int encode(const char *name, pf_watch_pmu_t *pmu, char *why, size_t n)
{
    memset(pmu, 0, sizeof *pmu);
    snprintf(pmu->name, sizeof pmu->name, "%s", name);
    if (strcmp(name, "task-clock") == 0 || strcmp(name, "cpu-clock") == 0) {
        pmu->type = PERF_TYPE_SOFTWARE;
        pmu->config = name[0] == 't' ? PERF_COUNT_SW_TASK_CLOCK : PERF_COUNT_SW_CPU_CLOCK;
        pmu->software = 1;
        return 0;
    }
    static int pfm_ready;
    if (!pfm_ready) {
        if (pfm_initialize() != PFM_SUCCESS) {
            snprintf(why, n, "libpfm4 could not initialize: events cannot be named (use task-clock)");
            return -ENOSYS;
        }
        pfm_ready = 1;
    }
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    pfm_perf_encode_arg_t arg;
    memset(&arg, 0, sizeof arg);
    arg.size = sizeof arg;
    arg.attr = &a;
    int rc = pfm_get_os_event_encoding(name, PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
    if (rc != PFM_SUCCESS) {
        snprintf(why, n, "event '%s': %s (libpfm4 4.13 has no Zen 5 table: use generic names like cycles, "
                 "raw codes like r0229, or LIBPFM_FORCE_PMU=amd64_fam19h_zen4)", name, pfm_strerror(rc));
        return -ENOENT;
    }
    pmu->type = a.type;
    pmu->config = a.config;
    pmu->config1 = a.config1;
    pmu->config2 = a.config2;
    if (a.sample_period)
        pmu->period = a.sample_period;  /* ":period=" in the name wins */
    return 0;
}

/* Events per second one thread generates, to turn a sample rate into a period. */
static uint64_t events_per_second(const pf_watch_pmu_t *pmu)
{
    if (pmu->software)
        return 1000000000ull;       /* clocks count nanoseconds */
    return 3000000000ull;           /* cycles-like: about 3 GHz; only the order of magnitude matters */
}

int pf_watch_pmu_setup(const pf_watch_config_t *cfg, pf_watch_pmu_t *pmu, char *why, size_t n)
{
    int rc;
    if (cfg->event && cfg->event[0]) {
        rc = encode(cfg->event, pmu, why, n);
        if (rc)
            return rc;
    } else {
        rc = encode("cycles", pmu, why, n);
        if (rc == 0) {
            pmu->period = 1000000;
            rc = try_open(pmu);
        }
        if (rc != 0 && rc != -EACCES && rc != -EPERM)
            rc = encode("task-clock", pmu, why, n); /* no PMU here: sample by time */
        if (rc)
            goto fail;
    }
    if (cfg->period)
        pmu->period = cfg->period;
    if (!pmu->period) {
        int max_rate = 0;
        unsigned want = cfg->rate_hz ? cfg->rate_hz : 1000;
        /* stay well under the kernel's limit: above it samples are dropped without notice */
        if (pf_watch_read_int("/proc/sys/kernel/perf_event_max_sample_rate", &max_rate) == 0 && max_rate > 0 &&
            want > (unsigned)max_rate / 2)
            want = (unsigned)max_rate / 2 ? (unsigned)max_rate / 2 : 1;
        pmu->period = events_per_second(pmu) / want;
    }
    rc = try_open(pmu);
    if (rc == 0)
        return 0;
fail:
    explain(-rc, pmu->name[0] ? pmu->name : "sampling event", why, n);
    return rc;
}

int pf_watch_pmu_open_thread(const pf_watch_pmu_t *pmu, int signo, int tid)
{
    struct perf_event_attr a;
    fill_attr(pmu, &a);
    int fd = (int)pf_watch_perf_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct f_owner_ex owner = {.type = F_OWNER_TID, .pid = tid};
    if (fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) != 0 || fcntl(fd, F_SETSIG, signo) != 0 ||
        fcntl(fd, F_SETOWN_EX, &owner) != 0) {
        int err = errno;
        close(fd);
        return -err;
    }
    return fd;
}
