/* pf_watch_probe.c - the capability probes behind `pyflow info` (see pf_watch.h). */
#include "pf_watch_int.h"

#include <signal.h>
#include <ucontext.h>

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include "pf_pfm.h"
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static int perf_open(struct perf_event_attr *attr)
{
    return (int)syscall(SYS_perf_event_open, attr, 0, -1, -1, 0);
}

static int read_int(const char *path, int *out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fscanf(f, "%d", out) == 1;
    fclose(f);
    return ok ? 0 : -1;
}

static pf_probe_t *add(pf_probe_t *out, size_t max, size_t *n, const char *name, pf_probe_status_t st,
                       const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static pf_probe_t *add(pf_probe_t *out, size_t max, size_t *n, const char *name, pf_probe_status_t st,
                       const char *fmt, ...)
{
    if (*n >= max)
        return NULL;
    pf_probe_t *p = &out[(*n)++];
    p->name = name;
    p->status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->detail, sizeof p->detail, fmt, ap);
    va_end(ap);
    return p;
}

/* Why perf_event_open failed, with the knob to turn. */
static const char *why(int err, int paranoid)
{
    static char buf[320];
    (void)paranoid;
    if (err == EACCES || err == EPERM)
        pf_watch_explain_denied(buf, sizeof buf);
    else if (err == ENOENT || err == EOPNOTSUPP || err == ENODEV)
        snprintf(buf, sizeof buf, "this CPU or VM exposes no such event (%s)", strerror(err));
    else
        snprintf(buf, sizeof buf, "%s", strerror(err));
    return buf;
}

static volatile int pf_probe_steps;

static void probe_trap(int sig, siginfo_t *si, void *ucv)
{
    ucontext_t *uc = ucv;
    if (si->si_code == TRAP_TRACE)
        pf_probe_steps++;
    uc->uc_mcontext.gregs[REG_EFL] &= ~0x100;
}

/* The skid fix single-steps with the trap flag from a sample to the next memory instruction: check that
 * setting TF delivers a TRAP_TRACE SIGTRAP here (ptrace-like sandboxes and some VMs do not). */
/* A disabled write breakpoint on the 8-byte word at addr, for this thread; -1 with errno. */
static int open_write_breakpoint(const volatile void *addr)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.type = PERF_TYPE_BREAKPOINT;
    a.size = sizeof a;
    a.bp_type = HW_BREAKPOINT_W;
    a.bp_addr = (unsigned long)(uintptr_t)addr;
    a.bp_len = HW_BREAKPOINT_LEN_8;
    a.sample_period = 1;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.disabled = 1;
    return perf_open(&a);
}

/* Seconds to fault in fresh 8 MiB mappings page by page, `reps` times, on 4 KiB pages or (huge) on
 * transparent huge pages where the kernel gives them. */
static double fault_time(int huge, int reps)
{
    enum { BYTES = 8 << 20 };
    uint64_t t0 = pf_watch_mono_ns();
    for (int r = 0; r < reps; r++) {
        char *p = mmap(NULL, BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return 0;
        madvise(p, BYTES, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
        for (size_t i = 0; i < BYTES; i += 4096)
            ((volatile char *)p)[i] = 1;
        munmap(p, BYTES);
    }
    return (double)(pf_watch_mono_ns() - t0) / 1e9;
}

/* How much longer faults of one kind take with fd's breakpoint armed: the best of 3 runs each way,
 * alternating. 0 when it could not be timed. */
static double armed_factor(int fd, int huge)
{
    double bare = 1e9, armed = 1e9;
    for (int k = 0; k < 3; k++) {
        double t = fault_time(huge, huge ? 8 : 4);
        bare = t < bare ? t : bare;
        ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
        t = fault_time(huge, huge ? 8 : 4);
        ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
        armed = t < armed ? t : armed;
    }
    return bare > 0 && armed > 0 ? armed / bare : 0;
}

/* What an armed watchpoint costs the rest of the thread: in some VMs every page fault takes longer while a
 * debug register is armed (this project's KVM guests: 1.5x on 4 KiB pages, 4-10x on transparent huge pages,
 * which numpy's large arrays get), which is most of --watch=stores/loads' cost on numpy code. */
static void probe_armed_cost(pf_probe_t *out, size_t max, size_t *n)
{
    static volatile uint64_t word;
    int fd = open_write_breakpoint(&word);
    if (fd < 0)
        return;
    double small = armed_factor(fd, 0), huge = armed_factor(fd, 1);
    close(fd);
    if (small <= 0 || huge <= 0)
        return;
    if (small < 1.2 && huge < 1.2)
        add(out, max, n, "armed watchpoint", PF_PROBE_OK, "page faults cost %.2fx (4 KiB) and %.2fx (huge pages) "
            "while one is armed: nothing else pays", small, huge);
    else
        add(out, max, n, "armed watchpoint", PF_PROBE_OK, "page faults take %.1fx (4 KiB) and %.1fx (huge pages) as "
            "long while one is armed (a VM switching debug registers): --watch=stores/loads cost more on code that "
            "touches fresh memory (numpy temporaries)", small, huge);
}

static void probe_single_step(pf_probe_t *out, size_t max, size_t *n, int breakpoints_fire)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = probe_trap;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTRAP, &sa, &old) != 0) {
        add(out, max, n, "single step", PF_PROBE_FAIL, "cannot install a SIGTRAP handler");
        return;
    }
    pf_probe_steps = 0;
    __asm__ volatile("pushfq\n\torq $0x100, (%%rsp)\n\tpopfq\n\tnop\n\tnop" ::: "memory", "cc");
    sigaction(SIGTRAP, &old, NULL);
    if (pf_probe_steps > 0 && breakpoints_fire)
        add(out, max, n, "single step", PF_PROBE_OK, "trap-flag single steps work (the fix for sampling skid)");
    else if (pf_probe_steps > 0)
        add(out, max, n, "single step", PF_PROBE_OK, "trap-flag single steps work: watch emulates its watchpoints "
            "by page protections (a fault and one step per access to a watched page; PYFLOW_WATCH_MECH=steps: "
            "single steps), keeping to --watch-budget of CPU time (%d%%; %d%% for loads alone)",
            PF_WATCH_BUDGET_PCT, PF_WATCH_BUDGET_PCT_LOADS);
    else
        add(out, max, n, "single step", PF_PROBE_FAIL, "setting the trap flag delivered no SIGTRAP: samples "
            "cannot be walked to the next store; watch would be biased");
}

size_t pf_watch_probe(pf_probe_t *out, size_t max)
{
    size_t n = 0;
    int paranoid = 99;
    if (read_int("/proc/sys/kernel/perf_event_paranoid", &paranoid) != 0)
        add(out, max, &n, "perf_event_paranoid", PF_PROBE_FAIL, "no /proc/sys/kernel/perf_event_paranoid: the "
            "kernel has no perf_event support");
    else
        add(out, max, &n, "perf_event_paranoid", paranoid <= 2 ? PF_PROBE_OK : PF_PROBE_FAIL, "%d%s", paranoid,
            paranoid <= 2 ? " (user-space events of one's own process allowed)"
                          : ": user-space events forbidden; run: sysctl kernel.perf_event_paranoid=2");

    /* a cycles counter that can sample (what the decode fallback needs) */
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_HARDWARE;
    a.config = PERF_COUNT_HW_CPU_CYCLES;
    a.sample_period = 1000000;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.disabled = 1;
    int fd = perf_open(&a);
    if (fd >= 0) {
        close(fd);
        int rate = 0;
        read_int("/proc/sys/kernel/perf_event_max_sample_rate", &rate);
        add(out, max, &n, "cycles sampling", PF_PROBE_OK, "hardware cycles overflow sampling works (max %d samples/s "
            "per CPU)", rate);
    } else {
        add(out, max, &n, "cycles sampling", PF_PROBE_FAIL, "%s", why(errno, paranoid));
    }

    /* precise data addresses: Intel PEBS (max_precise) or AMD IBS (ibs_op PMU) */
    int precise = 0;
    int has_precise = read_int("/sys/bus/event_source/devices/cpu/caps/max_precise", &precise) == 0 && precise > 0;
    int has_ibs = access("/sys/bus/event_source/devices/ibs_op", F_OK) == 0;
    pf_watch_pmu_t pmu;
    if ((has_precise || has_ibs) && pf_watch_pmu_precise(PF_WATCH_MODE_STORES, &pmu) == 0)
        add(out, max, &n, "precise addresses", PF_PROBE_OK, "%s%s: watch samples %s (self-test passed)",
            has_precise ? "PEBS (max_precise > 0)" : "", has_ibs ? " AMD IBS (ibs_op)" : "", pmu.name);
    else if (has_precise || has_ibs)
        add(out, max, &n, "precise addresses", PF_PROBE_SKIP, "%s%s, but no event's samples carried the addresses "
            "of a test loop: the watch engine decodes the sampled instruction instead",
            has_precise ? "PEBS (max_precise > 0)" : "", has_ibs ? " AMD IBS (ibs_op)" : "");
    else
        add(out, max, &n, "precise addresses", PF_PROBE_SKIP, "no PEBS or IBS here (common in VMs): the watch engine "
            "decodes the sampled instruction instead");

    /* hardware breakpoints: count the slots a thread can hold */
    static volatile long target[4];
    int fds[8], slots = 0, err = 0;
    for (int i = 0; i < 8; i++) {
        fds[i] = open_write_breakpoint(&target[i % 4]);
        if (fds[i] < 0) {
            err = errno;
            break;
        }
        slots++;
    }
    for (int i = 0; i < slots; i++)
        close(fds[i]);
    if (slots)
        add(out, max, &n, "breakpoint slots", PF_PROBE_OK, "%d per thread (PERF_TYPE_BREAKPOINT)", slots);
    else
        add(out, max, &n, "breakpoint slots", PF_PROBE_FAIL, "%s", why(err, paranoid));
    int fire = 0;
    if (slots) {
        char reason[256];
        fire = pf_watch_slots_selftest(reason, sizeof reason) == 0;
        if (fire)
            add(out, max, &n, "breakpoints fire", PF_PROBE_OK, "a watched word's writes are counted");
        else
            add(out, max, &n, "breakpoints fire", PF_PROBE_FAIL, "%s", reason);
    }
    probe_single_step(out, max, &n, fire);
    if (fire)
        probe_armed_cost(out, max, &n);
    /* what `pyflow run` watches without --watch (recorder/pf_watch_glue.c, PYFLOW_WATCH=auto) */
    if (fire)
        add(out, max, &n, "default watch", PF_PROBE_OK, "copies: `pyflow run` watches them without --watch "
            "(--no-watch: nothing)");
    else
        add(out, max, &n, "default watch", PF_PROBE_SKIP, "nothing: debug registers %s here, and emulated "
            "watchpoints are too slow for a default (--watch=copies asks for them)", slots ? "do not fire" : "are not open");

    /* libpfm4 names events for --event */
    char unloaded[160];
    const pf_pfm_t *pfm = pf_pfm(unloaded, sizeof unloaded);
    if (!pfm) {
        add(out, max, &n, "libpfm4", PF_PROBE_FAIL, "%s", unloaded);
    } else {
        pfm_perf_encode_arg_t arg;
        memset(&arg, 0, sizeof arg);
        memset(&a, 0, sizeof a);
        arg.size = sizeof arg;
        arg.attr = &a;
        int rc = pfm->get_os_event_encoding("cycles", PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
        pfm_pmu_info_t pinfo;
        memset(&pinfo, 0, sizeof pinfo);
        pinfo.size = sizeof pinfo;
        const char *pmu = "generic events only";
        for (int p = PFM_PMU_NONE; p < PFM_PMU_MAX; p++)
            if (pfm->get_pmu_info((pfm_pmu_t)p, &pinfo) == PFM_SUCCESS && pinfo.is_present && pinfo.type == PFM_PMU_TYPE_CORE) {
                pmu = pinfo.name;
                break;
            }
        add(out, max, &n, "libpfm4", rc == PFM_SUCCESS ? PF_PROBE_OK : PF_PROBE_FAIL, "%s; core PMU: %s",
            rc == PFM_SUCCESS ? "events encode by name" : pfm->strerror(rc), pmu);
    }
    /* the signals watch takes: the program keeps its own handlers for them (interpose/pf_hooks_signal.c) */
    add(out, max, &n, "signals", PF_PROBE_OK, "watch uses SIGTRAP (watchpoints, single steps) and SIGRTMIN+5 = %d "
        "(samples); a program's own handlers for them are kept and called for every signal not watch's own",
        SIGRTMIN + 5);
    return n;
}
