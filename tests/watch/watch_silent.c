/* watch_silent.c - the watch engine end to end, without Python: a loop that stores the same values again
 * (every store after the first pass is silent) against one that stores a new value each pass. The engine
 * is linked directly (no runtime); records are drained into an in-memory sink and checked.
 *
 * Exits 0 on success, 1 on a wrong verdict, 77 (ctest SKIP) when this machine does not allow
 * perf_event_open or hardware breakpoints, saying why. Sampling is by the default event (cycles, or
 * task-clock where there is no PMU) at a fixed seed; with ~1000 samples per second and 0.5 s per loop the
 * fractions are far from the thresholds (measured 1.00 and 0.00), so the test does not flake.
 *
 * Where debug registers do not fire (Firecracker VMs), the engine's breakpoint emulation (single steps
 * while a watch is armed) checks the same verdicts on a smaller working set; the overhead figures are then
 * meaningless and --bench says so. The fractions asserted are those of pairs on the loop's array (other
 * stores of the test, such as its clock reads, are sampled too and printed apart).
 *
 * With --bench it also times a store loop plain and watched (medians of 5 runs) for the overhead figures.
 */
#include "pf_watch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CELLS 4096
static volatile long cells[CELLS];
static int ncells = CELLS;      /* 64 when breakpoints are emulated by single steps (slow) */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* runs passes over cells; silent: the same value each pass, else a new one. Returns seconds. */
static double store_loop(int silent, long passes)
{
    double t0 = now_s();
    for (long i = 0; i < passes; i++)
        for (int j = 0; j < ncells; j++)
            cells[j] = silent ? j : i + j + 1;   /* +1: never the silent loop's values */
    return now_s() - t0;
}

/* ---- an in-memory sink, as the runtime's writer would be ---- */
static unsigned char sinkbuf[1 << 22];
static size_t sinkpos;
static void *sink_reserve(void *ctx, uint32_t bytes)
{
    if (sinkpos + bytes > sizeof sinkbuf)
        return NULL;
    return sinkbuf + sinkpos;
}
static void sink_commit(void *ctx, void *rec, uint16_t type, uint16_t aux, uint32_t bytes)
{
    pf_rec_header_t h = {type, aux, bytes};
    memcpy(rec, &h, sizeof h);
    sinkpos += bytes;
}
static uint64_t sink_now(void *ctx) { return (uint64_t)(now_s() * 1e9); }
static const pf_watch_sink_t sink = {NULL, NULL, sink_reserve, sink_commit, sink_now, NULL};

typedef struct { long pairs, redundant, all_pairs, all_redundant; uint64_t bytes, red_bytes; } tally_t;

static tally_t tally_records(void)
{
    tally_t t = {0};
    for (size_t off = 0; off < sinkpos;) {
        pf_rec_header_t h;
        memcpy(&h, sinkbuf + off, sizeof h);
        if (h.bytes < 8 || off + h.bytes > sinkpos) {
            fprintf(stderr, "watch_silent: bad record at %zu\n", off);
            exit(1);
        }
        if (h.type == PF_REC_ACCESS_PAIR) {
            pf_rec_access_pair_t p;
            memcpy(&p, sinkbuf + off + 8, sizeof p);
            if (h.aux != PF_ACCESS_STORE || p.len == 0 || p.n_native_repeat == 0) {
                fprintf(stderr, "watch_silent: malformed pair (kind %u len %u)\n", h.aux, p.len);
                exit(1);
            }
            t.all_pairs++;
            t.all_redundant += (p.flags & PF_ACCESS_REDUNDANT) != 0;
            if (p.addr < (uintptr_t)cells || p.addr >= (uintptr_t)(cells + CELLS)) {
                off += h.bytes;
                continue;
            }
            t.pairs++;
            t.bytes += p.credited_bytes;
            if (p.flags & PF_ACCESS_REDUNDANT) {
                t.redundant++;
                t.red_bytes += p.credited_bytes;
            }
        }
        off += h.bytes;
    }
    sinkpos = 0;
    return t;
}

/* runs one loop for about secs, draining as the runtime's slow path would */
static tally_t watched_run(int silent, double secs)
{
    double end = now_s() + secs;
    while (now_s() < end) {
        store_loop(silent, 20);
        pf_watch_drain(&sink);
    }
    pf_watch_drain(&sink);
    return tally_records();
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_loop(int silent, long passes)
{
    double v[5];
    for (int i = 0; i < 5; i++)
        v[i] = store_loop(silent, passes);
    qsort(v, 5, sizeof v[0], cmp_d);
    return v[2];
}

int main(int argc, char **argv)
{
    int bench = argc > 1 && strcmp(argv[1], "--bench") == 0;
    const char *event = getenv("PF_WATCH_EVENT");
    long passes;
    double plain_silent = 0, plain_inc = 0;
    pf_watch_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.modes = PF_WATCH_MODE_STORES;
    cfg.keep_same_call = 1;     /* no Python here: every pair is "inside one call" */
    cfg.seed = 12345;
    cfg.event = event;
    char why[256] = "";
    int rc = pf_watch_init(&cfg, why, sizeof why);
    if (rc == -EOPNOTSUPP) {
        /* debug registers do not fire on this machine: check the verdict logic with emulated breakpoints
         * (single steps), on a working set small enough for the slowdown */
        printf("note: %s\nnote: emulating breakpoints by single-stepping\n", why);
        cfg.emulate_breakpoints = 1;
        ncells = 64;
        rc = pf_watch_init(&cfg, why, sizeof why);
    }
    if (rc == -EACCES || rc == -EPERM || rc == -ENOENT || rc == -ENOSYS || rc == -EOPNOTSUPP || rc == -ENODEV) {
        printf("SKIP: watch unavailable here: %s\n", why);
        return 77;
    }
    if (rc) {
        fprintf(stderr, "watch_silent: pf_watch_init: %s (%s)\n", why, strerror(-rc));
        return 1;
    }
    /* the plain timings: after init (same working set), before this thread is watched */
    passes = cfg.emulate_breakpoints ? 100000 : 40000;
    if (bench) {
        plain_silent = median_loop(1, passes);
        plain_inc = median_loop(0, passes);
    }
    rc = pf_watch_thread_start(why, sizeof why);
    if (rc == -EACCES || rc == -EPERM || rc == -ENOENT || rc == -ENOSYS || rc == -EINVAL) {
        printf("SKIP: watch unavailable on this thread: %s\n", why);
        return 77;
    }
    if (rc) {
        fprintf(stderr, "watch_silent: pf_watch_thread_start: %s\n", why);
        return 1;
    }
    uint64_t period;
    const char *ev = pf_watch_event_name(&period);
    tally_t s = watched_run(1, 0.6);
    tally_t inc = watched_run(0, 0.6);
    pf_watch_totals_t tot;
    pf_watch_get_totals(&tot);
    double fs = s.bytes ? (double)s.red_bytes / (double)s.bytes : 0;
    double fi = inc.bytes ? (double)inc.red_bytes / (double)inc.bytes : 0;
    printf("event %s period %llu: samples %llu armed %llu nomem %llu filter %llu busy %llu reservoir %llu "
           "traps %llu lost %llu\n", ev, (unsigned long long)period, (unsigned long long)tot.samples,
           (unsigned long long)tot.samples_armed, (unsigned long long)tot.dropped_nomem,
           (unsigned long long)tot.dropped_filter, (unsigned long long)tot.dropped_busy,
           (unsigned long long)tot.dropped_reservoir, (unsigned long long)tot.traps,
           (unsigned long long)tot.pairs_lost);
    printf("silent loop: %ld pairs on the array, silent fraction %.3f (all pairs: %ld, %ld silent)\n", s.pairs, fs,
           s.all_pairs, s.all_redundant);
    printf("incrementing loop: %ld pairs on the array, silent fraction %.3f (all pairs: %ld, %ld silent)\n", inc.pairs,
           fi, inc.all_pairs, inc.all_redundant);
    int ok = 1;
    if (s.pairs < 10 || inc.pairs < 10) {   /* fewer samples come when CI loads both cores */
        fprintf(stderr, "watch_silent: too few pairs to judge (%ld, %ld)\n", s.pairs, inc.pairs);
        ok = 0;
    }
    if (fs < 0.9 || fi > 0.05) {
        fprintf(stderr, "watch_silent: wrong verdicts: silent %.3f (want >= 0.9), incrementing %.3f (want <= 0.05)\n",
                fs, fi);
        ok = 0;
    }
    if (bench) {
        double w_silent = median_loop(1, passes), w_inc = median_loop(0, passes);
        printf("bench%s: %ld passes x %d stores; plain silent %.3f s, watched %.3f s (x%.3f); plain incrementing "
               "%.3f s, watched %.3f s (x%.3f)\n",
               cfg.emulate_breakpoints ? " (EMULATED breakpoints: not the hardware overhead)" : "", passes, ncells,
               plain_silent, w_silent, w_silent / plain_silent,
               plain_inc, w_inc, w_inc / plain_inc);
    }
    pf_watch_thread_end(NULL);
    return ok ? 0 : 1;
}
