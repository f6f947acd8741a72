/* pf_clock.c - record times from the TSC, anchored to CLOCK_MONOTONIC. See pf_clock.h. */
#include "pf_clock.h"

#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t tsc_now(void) { return __rdtsc(); }
#define PF_HAVE_TSC 1
#else
static inline uint64_t tsc_now(void) { return 0; }
#define PF_HAVE_TSC 0
#endif

static int use_tsc;
static uint64_t first_tsc, first_ns;    /* the process's first pair */
static uint32_t first_recorder;         /* the tid of the process's first recording thread */
int pf_clock_many_recorders;            /* pf_clock.h */

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A TSC reading paired with CLOCK_MONOTONIC: the middle of the two readings around it. */
static uint64_t pair_now(uint64_t *tsc)
{
    uint64_t before = tsc_now();
    uint64_t ns = mono_ns();
    *tsc = before + (tsc_now() - before) / 2;
    return ns;
}

static int clocksource_is_tsc(void)
{
    char buf[32] = {0};
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n >= 3 && strncmp(buf, "tsc", 3) == 0 && (n == 3 || buf[3] == '\n');
}

void pf_clock_init(void)
{
    use_tsc = PF_HAVE_TSC && clocksource_is_tsc();
    if (use_tsc)
        first_ns = pair_now(&first_tsc);
}

/* A new anchor for t (and the time now): the pair, the rate since the first pair, the anchor's span in
 * ticks. While the rate is not measurable yet, t has no anchor and the time is clock_gettime's. t->clk_ok is
 * down while the fields change, so a signal handler recording on this thread meanwhile calls clock_gettime. */
static uint64_t reanchor(pf_tls_t *t)
{
    uint64_t tsc, ns = pair_now(&tsc);
    t->clk_ok = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (ns - first_ns >= PF_CLOCK_CALIBRATE_NS && tsc > first_tsc) {
        /* ns per tick in 32.32 fixed point, over the whole time since the first pair */
        uint64_t mult = (uint64_t)(((unsigned __int128)(ns - first_ns) << 32) / (tsc - first_tsc));
        if (mult) {
            t->clk_tsc = tsc;
            t->clk_ns = ns;
            t->clk_mult = mult;
            t->clk_span = (uint64_t)(((unsigned __int128)PF_CLOCK_ANCHOR_NS << 32) / mult);
            __atomic_signal_fence(__ATOMIC_SEQ_CST);
            t->clk_ok = 1;
        }
    }
    return ns;
}

uint64_t pf_now_ns(void)
{
    pf_tls_t *t = &pf_tls;
    uint64_t ns;
    if (!use_tsc) {
        ns = mono_ns();
    } else {
        uint64_t ticks = tsc_now() - t->clk_tsc;
        if (PF_LIKELY(t->clk_ok && ticks < t->clk_span))
            ns = t->clk_ns + (ticks * t->clk_mult >> 32);
        else
            ns = reanchor(t);
        if (ns < t->clk_last)
            ns = t->clk_last;   /* a new anchor may land a little behind the last extrapolation */
        t->clk_last = ns;
    }
    return ns > pf_cfg.start_mono_ns ? ns - pf_cfg.start_mono_ns : 0;
}

uint64_t pf_now_ns_small_read(pf_tls_t *t)
{
    uint64_t ns = pf_now_ns();
    t->clk_reuses = use_tsc && ns - t->clk_read < PF_CLOCK_DENSE_NS ? PF_CLOCK_REUSES : 0;
    t->clk_read = ns;
    return ns;
}

/* A relaxed store is enough: a thread that could order an event against the first one's (a free, and then
 * a new block at the same address) reaches it through the allocator's own lock or the GIL, which carries
 * this store to the first thread before that event. */
void pf_clock_thread_recording(uint32_t tid)
{
    uint32_t none = 0;
    if (!__atomic_compare_exchange_n(&first_recorder, &none, tid, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED) &&
        none != tid)
        __atomic_store_n(&pf_clock_many_recorders, 1, __ATOMIC_RELAXED);
}

void pf_clock_fork_child(pf_tls_t *t)
{
    first_recorder = 0;
    pf_clock_many_recorders = 0;
    t->clk_reuses = 0;
}
