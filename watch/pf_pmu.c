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
 *
 * Address source: where the machine has Intel PEBS (stores or loads alone) or AMD IBS, samples carry the
 * data address of the access (PERF_SAMPLE_ADDR, read from a per-thread ring) and no decoding or single step
 * is needed; the kernel's page-fault events carry one too (`--event page-faults`). Such a source is used only
 * after it proved itself here: a self-test samples a loop over a fresh buffer and wants the addresses inside
 * it. Otherwise, and in this project's VMs, the interrupted instruction is decoded (pf_decode.c).
 */
#include "pf_fd.h"
#include "pf_watch_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include "pf_pfm.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
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
    if (pmu->source == PF_WATCH_SRC_PRECISE || pmu->source == PF_WATCH_SRC_SAMPLED) {
        a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_ADDR;
        a->precise_ip = pmu->precise_ip;
    }
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

/* The kernel's page-fault events: each sample's data address is the faulting one (a first touch). */
static int encode_faults(const char *name, pf_watch_pmu_t *pmu)
{
    static const struct { const char *name; uint64_t config; } faults[] = {
        {"page-faults", PERF_COUNT_SW_PAGE_FAULTS}, {"faults", PERF_COUNT_SW_PAGE_FAULTS},
        {"minor-faults", PERF_COUNT_SW_PAGE_FAULTS_MIN}, {"major-faults", PERF_COUNT_SW_PAGE_FAULTS_MAJ}};
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
        if (strcmp(name, faults[i].name) == 0) {
            pmu->type = PERF_TYPE_SOFTWARE;
            pmu->config = faults[i].config;
            pmu->software = 1;
            pmu->source = PF_WATCH_SRC_SAMPLED;
            pmu->period = 8;    /* faults are few: one in 8 */
            return 1;
        }
    return 0;
}

/* AMD IBS op sampling: its PMU type is in sysfs. */
static int encode_ibs(pf_watch_pmu_t *pmu)
{
    int type = -1;
    if (pf_watch_read_int("/sys/bus/event_source/devices/ibs_op/type", &type) != 0 || type < 0)
        return 0;
    memset(pmu, 0, sizeof *pmu);
    snprintf(pmu->name, sizeof pmu->name, "ibs_op");
    pmu->type = (uint32_t)type;
    pmu->source = PF_WATCH_SRC_PRECISE;
    return 1;
}

static int encode(const char *name, pf_watch_pmu_t *pmu, char *why, size_t n)
{
    memset(pmu, 0, sizeof *pmu);
    snprintf(pmu->name, sizeof pmu->name, "%s", name);
    pmu->source = PF_WATCH_SRC_DECODE;
    if (strcmp(name, "task-clock") == 0 || strcmp(name, "cpu-clock") == 0) {
        pmu->type = PERF_TYPE_SOFTWARE;
        pmu->config = name[0] == 't' ? PERF_COUNT_SW_TASK_CLOCK : PERF_COUNT_SW_CPU_CLOCK;
        pmu->software = 1;
        return 0;
    }
    if (strcmp(name, "cycles") == 0 || strcmp(name, "cpu-cycles") == 0) {
        /* the kernel's generic event, as libpfm4 encodes it too: naming it needs no library (loading
         * libpfm4 keeps 2.3 MiB of its tables resident in the program, every run of --watch on a machine
         * without PEBS or IBS tries cycles before task-clock) */
        pmu->type = PERF_TYPE_HARDWARE;
        pmu->config = PERF_COUNT_HW_CPU_CYCLES;
        return 0;
    }
    if (encode_faults(name, pmu))
        return 0;
    if (strcmp(name, "ibs_op") == 0) {
        if (encode_ibs(pmu))
            return 0;
        snprintf(why, n, "event 'ibs_op': this CPU or VM has no AMD IBS (no /sys/bus/event_source/devices/ibs_op)");
        return -ENOENT;
    }
    char unloaded[160];
    const pf_pfm_t *pfm = pf_pfm(unloaded, sizeof unloaded);
    if (!pfm) {
        snprintf(why, n, "%s: events cannot be named (use task-clock)", unloaded);
        return -ENOSYS;
    }
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    pfm_perf_encode_arg_t arg;
    memset(&arg, 0, sizeof arg);
    arg.size = sizeof arg;
    arg.attr = &a;
    int rc = pfm->get_os_event_encoding(name, PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
    if (rc != PFM_SUCCESS) {
        snprintf(why, n, "event '%s': %s (libpfm4 4.13 has no Zen 5 table: use generic names like cycles, "
                 "raw codes like r0229, or LIBPFM_FORCE_PMU=amd64_fam19h_zen4)", name, pfm->strerror(rc));
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
    if (pmu->kind)
        return 1000000000ull;       /* retired loads or stores: about a third of the instructions */
    return 3000000000ull;           /* cycles-like: about 3 GHz; only the order of magnitude matters */
}

/* Samples the event on this thread over a loop that stores to (or loads from) a fresh 256 KiB buffer, and
 * wants at least 8 samples whose data address is inside it, and no fewer than half of those that carry an
 * address at all. Returns 0, or -errno (-EINVAL: the samples carry no usable address). */
static int addr_selftest(const pf_watch_pmu_t *pmu)
{
    struct perf_event_attr a;
    fill_attr(pmu, &a);
    a.sample_period = pmu->software ? 1 : 1009;
    int fd = (int)pf_watch_perf_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = -EINVAL;
    pf_watch_ring_t ring = {0};
    size_t len = 256 << 10;
    uint64_t *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED || pf_watch_ring_map(fd, &ring) != 0) {
        rc = -errno;
        goto out;
    }
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    volatile uint64_t *w = buf;
    uint64_t sum = 0;
    for (int pass = 0; pass < 40; pass++)
        for (size_t i = 0; i < len / 8; i++) {
            if (pmu->kind == PF_WATCH_ACC_LOAD && pass)
                sum += w[i];
            else
                w[i] = i + (uint64_t)pass + sum;
        }
    ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    pf_watch_ring_count_t c = {.lo = (uint64_t)(uintptr_t)buf, .hi = (uint64_t)(uintptr_t)buf + len};
    pf_watch_ring_count(&ring, &c);
    if (c.in_range >= 8 && c.in_range * 2 >= c.with_addr)
        rc = 0;
out:
    pf_watch_ring_unmap(&ring);
    if (buf != MAP_FAILED)
        munmap(buf, len);
    close(fd);
    return rc;
}

/* Where the machine has them, an event whose samples carry the data address: PEBS loads or stores (one
 * kind per event, so only when one of the two is watched), else IBS ops (loads and stores alike). Returns 0
 * with *pmu set, or -1 (decode). */
int pf_watch_pmu_precise(unsigned modes, pf_watch_pmu_t *pmu)
{
    char why[256];
    int both = (modes & PF_WATCH_MODE_STORES) && (modes & PF_WATCH_MODE_LOADS);
    int max_precise = 0;
    if (!both && pf_watch_read_int("/sys/bus/event_source/devices/cpu/caps/max_precise", &max_precise) == 0 &&
        max_precise > 0) {
        int stores = (modes & PF_WATCH_MODE_STORES) != 0;
        static const char *const store_events[] = {"MEM_INST_RETIRED:ALL_STORES", "MEM_UOPS_RETIRED:ALL_STORES"};
        static const char *const load_events[] = {"MEM_INST_RETIRED:ALL_LOADS", "MEM_UOPS_RETIRED:ALL_LOADS"};
        for (int e = 0; e < 2; e++) {
            if (encode(stores ? store_events[e] : load_events[e], pmu, why, sizeof why) != 0)
                continue;
            pmu->source = PF_WATCH_SRC_PRECISE;
            pmu->kind = stores ? PF_WATCH_ACC_STORE : PF_WATCH_ACC_LOAD;
            for (int p = max_precise > 3 ? 3 : max_precise; p >= 1; p--) {
                pmu->precise_ip = (uint32_t)p;
                if (addr_selftest(pmu) == 0)
                    return 0;
            }
        }
    }
    if (encode_ibs(pmu) && addr_selftest(pmu) == 0)
        return 0;
    return -1;
}

static int setup(const pf_watch_config_t *cfg, pf_watch_pmu_t *pmu, char *why, size_t n)
{
    int rc;
    if (cfg->event && cfg->event[0]) {
        rc = encode(cfg->event, pmu, why, n);
        if (rc)
            return rc;
        if (pmu->source != PF_WATCH_SRC_DECODE && (rc = addr_selftest(pmu)) != 0) {
            if (rc == -EINVAL) {
                snprintf(why, n, "event '%s': its samples carry no usable data address here", pmu->name);
                return rc;
            }
            goto fail;
        }
    } else if (pf_watch_pmu_precise(cfg->modes, pmu) == 0) {
        /* PEBS or IBS: the sample names the address */
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

int pf_watch_pmu_setup(const pf_watch_config_t *cfg, pf_watch_pmu_t *pmu, char *why, size_t n)
{
    int rc = setup(cfg, pmu, why, n);
    pf_pfm_release();   /* its events are encoded in *pmu: what the library's tables held is needed no more */
    return rc;
}

int pf_watch_pmu_open_thread(const pf_watch_pmu_t *pmu, int signo, int tid, pf_watch_ring_t *ring)
{
    struct perf_event_attr a;
    fill_attr(pmu, &a);
    int fd = (int)pf_watch_perf_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct f_owner_ex owner = {.type = F_OWNER_TID, .pid = tid};
    if ((a.sample_type & PERF_SAMPLE_ADDR && pf_watch_ring_map(fd, ring) != 0) ||
        fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) != 0 || fcntl(fd, F_SETSIG, signo) != 0 ||
        fcntl(fd, F_SETOWN_EX, &owner) != 0) {
        int err = errno;
        pf_watch_ring_unmap(ring);
        close(fd);
        return -err;
    }
    return fd;
}
