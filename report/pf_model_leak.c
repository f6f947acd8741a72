/* pf_model_leak.c - the leak test: a line leaks when what it holds at exit accumulated over the run.
 *
 * A leak is memory from a site that keeps accumulating while the program runs. Two measurements, each
 * blind to what the line frees:
 *
 * 1. Spread of the survivors. The recorded allocations of the line still live at exit (its survivors) were
 *    allocated at some times; weighted by their bytes, the 10th to 90th percentile of those times, as a
 *    share of the run, is the spread. Time here is the program's free clock: the bytes freed so far of
 *    objects allocated outside import lines, from the first allocation of the user's code to the root's
 *    finalization, read on the rest of the program (the line's own frees taken out: live_obj_t.at; a
 *    process's frees are also the own of the user's line that started it). A block freed because realloc
 *    moved it is taken off again when its new block is matched (pf_sweep_leak_grew): a list growing is
 *    not work that came and went. A leak accumulates while the program does work that comes and goes: a
 *    growing cache, a per-request log, a slow leak keep
 *    survivors all along the frees of that work, spread ~0.8 of the part of the run the growth spans.
 *    Data built once keeps what it makes while little else is freed, however many lines build it
 *    together (a table of tuples whose keys, strings and lists are made on two lines of one loop), and
 *    however long it takes: one burst, spread ~0. So do a bounded cache (its survivors are its last
 *    entries), an interpreter or library cache filled on import, and a burst of the line's own temporaries
 *    (a comprehension that makes a temporary for each value it keeps).
 *    Wall time was not the same in both modes (with --exact a comprehension making 300,000 small objects
 *    is slowed by recording each one, and its burst then filled half the run; the scheduler stretched a
 *    preempted burst); bytes freed are the same sampled and exact (the estimates are unbiased), and what an
 *    import drops (loading numpy) does not count. The clock was once bytes allocated: there, the kept bytes
 *    of one line of a loop that builds a table counted as the program's work for the other line, and its
 *    survivors spread a quarter of the run. A block re-allocated as it grew (bytearray +=) is followed
 *    through its reallocs (pf_sweep_leak_grew): each piece it gained is a survivor of its own, at its
 *    time. A line needs PF_LEAK_MIN_SURVIVORS survivors holding as many sampling means' worth of bytes (so
 *    that a leak too small to be seen sampled is not one with --exact), and PF_LEAK_MIN_SPREAD. Import
 *    lines are no leak (pf_report_is_import).
 *
 * 2. Growth of what the line keeps. Its live bytes, each timeline bucket's *minimum* (a temporary on the
 *    same line is freed within the bucket, so the minimum is what stays between temporaries), from the
 *    line's first event to the end of the run, tested for an upward trend by Mann-Kendall (one-sided, ties
 *    corrected): likelihood = 1 - p. The growth rate is the Theil-Sen slope of the same series (median of
 *    pairwise slopes), not live-at-exit over elapsed time.
 *
 * Both read only what survives and when, so the verdict is the same with every allocation recorded
 * (--exact) and with sampled ones (a sample stands for its bytes; fewer survivors, same times).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pf_loader_int.h"
#include "pf_origin_int.h"
#include "pf_report_int.h"
#include "pf_aggregate_int.h"
#include "pf_sweep_int.h"

typedef struct survivor {
    int32_t line;
    double t;           /* on the free clock */
    double bytes;
} survivor_t;

/* A survivor's time as an unsigned key in the same order (-0 as +0: equal times stay equal). */
static uint64_t time_key(double t)
{
    uint64_t bits;
    if (t == 0)
        t = 0;
    memcpy(&bits, &t, sizeof bits);
    return bits >> 63 ? ~bits : bits | (1ull << 63);
}

/* Sorts one line's survivors s[0..n) by time, keeping equal times in their order (as qsort's merge sort
 * did: the line's bytes are added up in this order), with tmp room for n. More than a few by an LSD radix
 * sort on bytes of the time's key, skipping the bytes every key shares (most: the times of one line lie
 * close); a few (most lines with more than one are import lines with a handful) by insertion, as a radix
 * pass zeroes and sums its 257 counts whatever the number it sorts. */
#define PF_INSERTION_MAX 32

static void sort_by_time(survivor_t *s, survivor_t *tmp, size_t n)
{
    if (n <= PF_INSERTION_MAX) {
        for (size_t i = 1; i < n; i++) {
            survivor_t x = s[i];
            size_t j = i;
            for (; j > 0 && s[j - 1].t > x.t; j--)
                s[j] = s[j - 1];
            s[j] = x;
        }
        return;
    }
    uint64_t all_or = 0, all_and = ~0ull;
    for (size_t i = 0; i < n; i++) {
        uint64_t k = time_key(s[i].t);
        all_or |= k;
        all_and &= k;
    }
    for (unsigned shift = 0; shift < 64; shift += 8) {
        if (!(((all_or ^ all_and) >> shift) & 0xff))
            continue;   /* every key has this byte */
        size_t at[257] = {0};
        for (size_t i = 0; i < n; i++)
            at[((time_key(s[i].t) >> shift) & 0xff) + 1]++;
        for (int b = 0; b < 256; b++)
            at[b + 1] += at[b];
        for (size_t i = 0; i < n; i++)
            tmp[at[(time_key(s[i].t) >> shift) & 0xff]++] = s[i];
        memcpy(s, tmp, n * sizeof *s);
    }
}

/* Sorts survivors by line, then time, in a stable order: by line with a counting sort (lines are the
 * model's rows), then each line's by time. qsort with a comparison call per step was 4% of the
 * instructions of an exact profile's report (100,000 survivors), and most of what follows the program's
 * end where the report is built while it runs. */
static void sort_survivors(survivor_t *sv, size_t n)
{
    if (n < 2)
        return;
    size_t n_lines = 0;
    for (size_t i = 0; i < n; i++)
        if ((size_t)sv[i].line >= n_lines)
            n_lines = (size_t)sv[i].line + 1;     /* add_survivor: line >= 0 */
    size_t *start = pf_xcalloc(n_lines + 1, sizeof *start);
    for (size_t i = 0; i < n; i++)
        start[sv[i].line + 1]++;
    for (size_t l = 0; l < n_lines; l++)
        start[l + 1] += start[l];
    survivor_t *tmp = pf_xcalloc_table(n, sizeof *tmp, 0);     /* present at once, as the survivors */
    size_t *next = pf_xmalloc((n_lines + 1) * sizeof *next);
    memcpy(next, start, (n_lines + 1) * sizeof *next);
    for (size_t i = 0; i < n; i++)
        tmp[next[sv[i].line]++] = sv[i];
    memcpy(sv, tmp, n * sizeof *sv);
    for (size_t l = 0; l < n_lines; l++)
        sort_by_time(sv + start[l], tmp, start[l + 1] - start[l]);
    free(next);
    free(tmp);
    free(start);
}

/* The time below which a share q of the bytes of survivors s[0..n) (sorted by time) was allocated. */
static double weighted_time(const survivor_t *s, size_t n, double total, double q)
{
    double acc = 0;
    for (size_t i = 0; i < n; i++) {
        acc += s[i].bytes;
        if (acc >= q * total)
            return s[i].t;
    }
    return s[n - 1].t;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* One-sided Mann-Kendall test for an upward trend of v[0..n): the p-value (1 when no upward trend). */
static double mann_kendall_p(const double *v, int n)
{
    if (n < 4)
        return 1;
    double s = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            s += (v[j] > v[i]) - (v[j] < v[i]);
    /* variance with the correction for tied groups (a flat stretch is one tied group) */
    double sorted[PF_TIMELINE_POINTS];
    for (int i = 0; i < n; i++)
        sorted[i] = v[i];
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
    double var = (double)n * (n - 1) * (2 * n + 5);
    for (int i = 0; i < n;) {
        int k = i;
        while (k < n && sorted[k] == sorted[i])
            k++;
        double t = k - i;
        var -= t * (t - 1) * (2 * t + 5);
        i = k;
    }
    var /= 18;
    if (s <= 0 || var <= 0)
        return 1;
    double z = (s - 1) / sqrt(var);
    return 0.5 * erfc(z / sqrt(2.0));
}

/* Theil-Sen slope of v[0..n) over equally spaced points dt seconds apart: bytes per second. */
static double theil_sen(const double *v, int n, double dt)
{
    size_t pairs = (size_t)n * (size_t)(n - 1) / 2, k = 0;
    if (!pairs || dt <= 0)
        return 0;
    double *slopes = pf_xmalloc(pairs * sizeof *slopes);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            slopes[k++] = (v[j] - v[i]) / ((j - i) * dt);
    qsort(slopes, pairs, sizeof *slopes, cmp_double);
    double med = pairs % 2 ? slopes[pairs / 2] : (slopes[pairs / 2 - 1] + slopes[pairs / 2]) / 2;
    free(slopes);
    return med;
}

static void learn_import_state(pf_model_t *m, pf_line_t *l)
{
    if (!l->import_state)   /* the user's lines only: a library's own lines are not read from their files */
        l->import_state = pf_model_is_user_file(m, pf_model_str(m, l->file)) && pf_report_is_import(m, l) ? 1 : 2;
}

void pf_sweep_leak_clock_slow(sweeper_t *S, int32_t row, uint32_t proc, uint64_t t)
{
    pf_model_t *m = S->m;
    pf_line_t *l = &m->lines[row];
    learn_import_state(m, l);
    if (S->clock_end < 0 && m->procs[proc].root && t >= S->L->procs[proc].fin_ns)
        S->clock_end = S->leak_clock;   /* the root's interpreter began its shutdown */
    if (l->import_state == 1)
        return;
    if (S->clock_start < 0 && pf_model_is_user_file(m, pf_model_str(m, l->file)))
        S->clock_start = S->leak_clock;
}

double pf_sweep_leak_free_slow(sweeper_t *S, int32_t row, uint32_t proc, double est)
{
    pf_model_t *m = S->m;
    pf_line_t *l = &m->lines[row];
    learn_import_state(m, l);
    if (l->import_state == 1)
        return 0;   /* what an import made and dropped (loading numpy) is not the program's work */
    if (S->clock_origin[proc] == -2)    /* the process's first free on the clock */
        S->clock_origin[proc] = pf_origin_process_row(S, proc);
    pf_sweep_leak_step(S, row, S->clock_origin[proc], est);
    return est;
}

static uint32_t grow_slot(uint64_t key)
{
    return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 40) & (PF_RECENT_GROWS - 1);
}

void pf_sweep_leak_freed(sweeper_t *S, uint64_t key, const live_obj_t *o, uint32_t proc, uint64_t t,
                         double counted)
{
    S->recent_grows[grow_slot(key)] = (recent_grow_t){
        .key1 = key + 1, .line = o->line, .size = o->size, .t = t, .est = o->est, .at = o->at, .chain = o->chain,
        .counted = counted, .origin = counted > 0 ? S->clock_origin[proc] : -1};
}

void pf_sweep_leak_by_realloc(sweeper_t *S, uint64_t key, uint64_t t)
{
    recent_grow_t *r = &S->recent_grows[grow_slot(key)];
    if (r->key1 == key + 1 && r->t == t)    /* this very free's, not an older block's at the address */
        r->by_realloc = 1;
}

void pf_sweep_leak_moved(sweeper_t *S, uint64_t key)
{
    recent_grow_t *r = &S->recent_grows[grow_slot(key)];
    if (r->key1 == key + 1)
        r->by_realloc = 0;
}

static int64_t push_piece(sweeper_t *S, double at, double bytes, int64_t prev)
{
    *PF_VEC_PUSH(S->pieces, S->n_pieces, S->cap_pieces) = (leak_piece_t){at, bytes, prev};
    return (int64_t)S->n_pieces - 1;
}

void pf_sweep_leak_grew(sweeper_t *S, uint64_t old_key, live_obj_t *o, uint64_t t, uint64_t max_gap)
{
    recent_grow_t *r = &S->recent_grows[grow_slot(old_key)];
    if (r->key1 != old_key + 1 || r->line != o->line || r->t > t || (t - r->t > max_gap && !r->by_realloc))
        return;
    r->key1 = 0;    /* continued once */
    /* The old block's free was a move of what the line keeps, not work that came and went: off the clock.
     * (The line's own objects' places on the rest of the clock do not move; the objects of others made
     * between the free and this allocation, microseconds on one thread, keep theirs.) */
    pf_sweep_leak_step(S, r->line, r->origin, -r->counted);
    int64_t prev = r->chain >= 0 ? r->chain : push_piece(S, r->at, r->est, -1);
    /* what it gained, in its own estimate's units (a sampled estimate stands for more than its size) */
    double gained = o->size > r->size && o->size ? o->est * (double)(o->size - r->size) / (double)o->size : 0;
    o->chain = pf_sweep_index32(push_piece(S, o->at, gained, prev), "realloc pieces");
}

/* The end of the run the growth test reads: the root process's finalization (or the end). */
static uint64_t run_end(const sweeper_t *S)
{
    const pf_model_t *m = S->m;
    uint64_t end = S->t_end;
    for (size_t i = 0; i < m->n_procs; i++)
        if (m->procs[i].root && S->L->procs[i].fin_ns < end)
            end = S->L->procs[i].fin_ns;
    return end;
}

/* The growth test of one line: timeline_low from the line's first event to the end of the run. */
static void growth(const sweeper_t *S, pf_stats_t *s, uint64_t end)
{
    int from = pf_timeline_bucket(s->first_ns, S->t_end), to = pf_timeline_bucket(end, S->t_end);
    int n = to - from + 1;
    s->leak.p_value = mann_kendall_p(s->timeline_low + from, n);
    double dt = (double)S->t_end / 1e9 / PF_TIMELINE_POINTS;
    s->leak.rate = n >= 2 ? theil_sen(s->timeline_low + from, n, dt) : 0;
}

/* --aggregate: a site's survivors come from its snapshots (pf_model_aggregate.c). */
typedef struct survivors {
    survivor_t *sv;
    size_t n, cap;
} survivors_t;

static void add_survivor(void *arg, int32_t line, double clock, double bytes)
{
    survivors_t *s = arg;
    if (line >= 0 && bytes > 0)
        *PF_VEC_PUSH(s->sv, s->n, s->cap) = (survivor_t){line, clock, bytes};
}

void pf_sweep_leaks(sweeper_t *S)
{
    pf_model_t *m = S->m;
    size_t n_aggregated = pf_sweep_aggregate_survivors(S, NULL, NULL);
    /* sized for one survivor a live object or piece, but grown when needed: a profile whose blocks share a
     * chain of pieces (a realloc continuing a block still counted live, freed after finalization) has more */
    survivors_t agg = {NULL, 0, S->live.len + S->n_pieces + n_aggregated + 1};
    /* its pages made present at once: page by page, their faults were a third of the report's work after
     * the program's end where the report is built while it runs (a guest's faults are dear) */
    agg.sv = pf_xcalloc_table(agg.cap, sizeof *agg.sv, 0);
    for (size_t i = 0; i < S->live.cap; i++) {
        if (!S->live.slots[i].key1)
            continue;
        const live_obj_t *o = &S->objs[S->live.slots[i].idx];
        if (o->line < 0 || !(o->est > 0))
            continue;
        if (o->chain < 0) {
            add_survivor(&agg, o->line, o->at, o->est);
            continue;
        }
        /* a block re-allocated along the run: each piece it gained is a survivor of its own, at the time
         * it was gained (scaled to the block's estimate: a shrink gave some back) */
        double sum = 0;
        for (int64_t p = o->chain; p >= 0; p = S->pieces[p].prev)
            sum += S->pieces[p].bytes;
        for (int64_t p = o->chain; p >= 0 && sum > 0; p = S->pieces[p].prev)
            if (S->pieces[p].bytes > 0)
                add_survivor(&agg, o->line, S->pieces[p].at, S->pieces[p].bytes * o->est / sum);
    }
    pf_sweep_aggregate_survivors(S, add_survivor, &agg);
    survivor_t *sv = agg.sv;
    size_t n = agg.n;
    sort_survivors(sv, n);
    uint64_t end = run_end(S);
    double clock_end = S->clock_end >= 0 ? S->clock_end : S->leak_clock;
    double run = clock_end - (S->clock_start >= 0 ? S->clock_start : 0);
    /* what a leak must hold to be seen alike sampled and --exact: as many samples' worth as survivors */
    double floor_bytes = PF_LEAK_MIN_SURVIVORS * (double)(m->mean_sample_bytes ? m->mean_sample_bytes : 1);
    for (size_t i = 0; i < n;) {
        size_t k = i;
        double total = 0;
        while (k < n && sv[k].line == sv[i].line)
            total += sv[k++].bytes;
        pf_stats_t *s = &m->lines[sv[i].line].s;
        pf_leak_test_t *lt = &s->leak;
        lt->survivors = (uint32_t)(k - i);
        double lo = weighted_time(sv + i, k - i, total, 0.1), hi = weighted_time(sv + i, k - i, total, 0.9);
        /* on the rest of the program's clock: a burst of the line's own (data built by the last statement,
         * a comprehension) spreads over nothing else the program did, however much of the run it is */
        double rest = run - m->lines[sv[i].line].leak_own;
        lt->spread = rest > 0 ? (hi - lo) / rest : 0;
        if (lt->spread > 1)
            lt->spread = 1;
        lt->p_value = 1;
        /* the growth test (quadratic in the buckets) only where the survivors could make a leak */
        if (lt->survivors >= PF_LEAK_MIN_SURVIVORS && total >= floor_bytes && lt->spread >= PF_LEAK_MIN_SPREAD) {
            growth(S, s, end);
            if (lt->rate > 0)
                lt->likelihood = 1 - lt->p_value;
        }
        i = k;
    }
    free(sv);
}
