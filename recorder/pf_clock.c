/* pf_clock.c - record times from the TSC, anchored to CLOCK_MONOTONIC. See pf_clock.h. */
#include "pf_clock.h"

#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
/* The TSC; ordered: read after everything before it. rdtsc alone may run ahead of the loads before it, by
 * up to ~120 ns here, and so read a tick before the one another thread read and handed over (128,000
 * inversions in 1.5 million turns between two threads without the fence, none with it). A thread's own
 * order needs no fence (its times never go back); the order between threads' does. */
static inline uint64_t tsc_read(int ordered)
{
    if (ordered)
        _mm_lfence();
    return __rdtsc();
}
#define PF_HAVE_TSC 1
#else
static inline uint64_t tsc_read(int ordered) { return (void)ordered, 0; }
#define PF_HAVE_TSC 0
#endif

#define PF_CLOCK_PAIR_MOST_NS 20000u     /* a pair that took longer than this is not drawn from */

static int use_tsc;
static uint64_t first_tsc, first_ns;    /* the process's first pair */
static uint32_t first_recorder;         /* the tid of the process's first recording thread */
int pf_clock_many_recorders;            /* pf_clock.h */
uint64_t pf_clock_latest;               /* pf_clock.h */

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A TSC reading paired with CLOCK_MONOTONIC: the middle of the two readings around it; returns the ticks
 * between them (a pair the thread was preempted in is off by half of them). */
static uint64_t pair_now(uint64_t *tsc, uint64_t *ns)
{
    uint64_t before = tsc_read(0);
    *ns = mono_ns();
    uint64_t width = tsc_read(0) - before;
    *tsc = before + width / 2;
    return width;
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
        pair_now(&first_tsc, &first_ns);
}

/* The process's mapping from the TSC to CLOCK_MONOTONIC ns (pf_clock.h): the segment that begins at the
 * latest tsc0 at or before a reading maps it. The current one and the one before are kept (a thread that
 * read the TSC just before another drew a new segment maps its reading by the old one), in four slots:
 * the one drawn next goes where neither lies, and a reader that loads gen, the slots, then gen again
 * unchanged read them whole. */
typedef struct {
    uint64_t tsc0;      /* where it begins */
    uint64_t ns0;       /* the time there */
    uint64_t mult;      /* ns per tick over its span, 32.32 fixed point */
    uint64_t span;      /* ticks after tsc0 when the next is drawn */
    uint64_t rate;      /* ns per tick measured since the first pair (mult is less while it lets
                           CLOCK_MONOTONIC catch up): after the span, where no reading came to draw the next */
} segment_t;

#define SEGMENT_SLOTS 4u
static struct {
    segment_t slot[SEGMENT_SLOTS];
    uint32_t gen;       /* slot[gen % SEGMENT_SLOTS] is the current segment; 0: none yet (not calibrated) */
    int drawing;        /* a thread draws the next one (the others go on with the current) */
} map __attribute__((aligned(64)));

static inline segment_t load_segment(const segment_t *s)
{
    return (segment_t){__atomic_load_n(&s->tsc0, __ATOMIC_RELAXED), __atomic_load_n(&s->ns0, __ATOMIC_RELAXED),
                       __atomic_load_n(&s->mult, __ATOMIC_RELAXED), __atomic_load_n(&s->span, __ATOMIC_RELAXED),
                       __atomic_load_n(&s->rate, __ATOMIC_RELAXED)};
}

/* s's time at tsc, also outside its span (a wide product: ticks times the rate overflow 64 bits after
 * seconds). */
static inline uint64_t segment_at(const segment_t *s, uint64_t tsc)
{
    if (tsc >= s->tsc0) {
        uint64_t d = tsc - s->tsc0;
        if (PF_LIKELY(d < s->span))
            return s->ns0 + (d * s->mult >> 32);
        return s->ns0 + (s->span * s->mult >> 32) + (uint64_t)(((unsigned __int128)(d - s->span) * s->rate) >> 32);
    }
    uint64_t back = (uint64_t)(((unsigned __int128)(s->tsc0 - tsc) * s->mult) >> 32);
    return s->ns0 > back ? s->ns0 - back : 0;
}

/* The segment that maps tsc, and whether a new one is due (tsc is past the current one's span). Returns
 * 0 when there is none yet. */
static inline int segment_for(uint64_t tsc, segment_t *out, int *due)
{
    for (;;) {
        uint32_t gen = __atomic_load_n(&map.gen, __ATOMIC_ACQUIRE);
        if (!gen)
            return 0;
        segment_t cur = load_segment(&map.slot[gen % SEGMENT_SLOTS]);
        int before = tsc < cur.tsc0 && gen > 1;
        if (before)
            cur = load_segment(&map.slot[(gen - 1) % SEGMENT_SLOTS]);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);    /* the slots' loads before gen's second */
        if (__atomic_load_n(&map.gen, __ATOMIC_RELAXED) != gen)
            continue;   /* a segment drawn meanwhile (the third would write over the one before): again */
        *out = cur;
        *due = !before && tsc - cur.tsc0 >= cur.span;
        return 1;
    }
}

/* Draws the next segment from a pair taken now, where no thread is drawing one. It begins at the pair's
 * TSC at CLOCK_MONOTONIC, or at the current one's time there where that is later, and then runs slower by
 * the lead over its span (at most half), so that CLOCK_MONOTONIC catches up with it. Returns the pair's
 * CLOCK_MONOTONIC time, or 0 when another thread was drawing. */
static uint64_t draw_segment(void)
{
    if (__atomic_exchange_n(&map.drawing, 1, __ATOMIC_ACQUIRE))
        return 0;
    uint64_t tsc, ns, width = pair_now(&tsc, &ns);
    uint32_t gen = __atomic_load_n(&map.gen, __ATOMIC_RELAXED);
    if (ns - first_ns >= PF_CLOCK_CALIBRATE_NS && tsc > first_tsc) {
        /* ns per tick in 32.32 fixed point, over the whole time since the first pair */
        uint64_t rate = (uint64_t)(((unsigned __int128)(ns - first_ns) << 32) / (tsc - first_tsc)), mult = rate;
        if ((uint64_t)(((unsigned __int128)width * rate) >> 32) > PF_CLOCK_PAIR_MOST_NS)
            mult = 0;   /* preempted while pairing: the next reading draws instead */
        uint64_t ns0 = ns;
        if (gen) {
            segment_t cur = load_segment(&map.slot[gen % SEGMENT_SLOTS]);
            if (tsc > cur.tsc0) {
                uint64_t at = segment_at(&cur, tsc);
                ns0 = at > ns ? at : ns;
            } else {
                mult = 0;   /* the TSC went back (another CPU's, not synchronized after all): keep the current */
            }
        }
        uint64_t lead = ns0 - ns, half = PF_CLOCK_ANCHOR_NS / 2;
        mult = mult - (uint64_t)(((unsigned __int128)mult * (lead < half ? lead : half)) / PF_CLOCK_ANCHOR_NS);
        if (mult) {
            segment_t *next = &map.slot[(gen + 1) % SEGMENT_SLOTS];
            __atomic_store_n(&next->tsc0, tsc, __ATOMIC_RELAXED);
            __atomic_store_n(&next->ns0, ns0, __ATOMIC_RELAXED);
            __atomic_store_n(&next->mult, mult, __ATOMIC_RELAXED);
            __atomic_store_n(&next->span, (uint64_t)(((unsigned __int128)PF_CLOCK_ANCHOR_NS << 32) / mult),
                             __ATOMIC_RELAXED);
            __atomic_store_n(&next->rate, rate, __ATOMIC_RELAXED);
            __atomic_store_n(&map.gen, gen + 1, __ATOMIC_RELEASE);
        }
    }
    __atomic_store_n(&map.drawing, 0, __ATOMIC_RELEASE);
    return ns;
}

/* Raises pf_clock_latest to ns (a maximum: a plain store could put it back behind another thread's). Every
 * reading of a process with several recording threads passes here, and while one thread records at a time
 * the line stays in its cache: the exchange costs less than the readings it lets that thread save. */
static inline void publish_latest(uint64_t ns)
{
    uint64_t seen = __atomic_load_n(&pf_clock_latest, __ATOMIC_RELAXED);
    while (ns > seen &&
           !__atomic_compare_exchange_n(&pf_clock_latest, &seen, ns, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

uint64_t pf_now_ns(void)
{
    pf_tls_t *t = &pf_tls;
    int many = __atomic_load_n(&pf_clock_many_recorders, __ATOMIC_RELAXED);
    uint64_t ns;
    if (!use_tsc) {
        ns = mono_ns();
    } else {
        uint64_t tsc = tsc_read(many);
        segment_t seg;
        int due = 0;
        if (PF_LIKELY(segment_for(tsc, &seg, &due))) {
            /* past its segment's span (the first reading after an idle spell): a new segment, and the
             * reading again, mapped by it */
            if (PF_UNLIKELY(due) && draw_segment()) {
                tsc = tsc_read(many);
                segment_for(tsc, &seg, &due);
            }
            ns = segment_at(&seg, tsc);
        } else if (!(ns = draw_segment())) {    /* not calibrated yet: the pair's time, or */
            ns = mono_ns();                         /* clock_gettime's while another thread draws */
        }
    }
    /* clock_gettime's times before the first segment may pass its first; on other clocksources this
     * keeps the thread's latest time, which small events reuse (pf_clock.h) */
    if (ns < t->clk_last)
        ns = t->clk_last;
    t->clk_last = ns;
    if (many)
        publish_latest(ns);
    return ns > pf_cfg.start_mono_ns ? ns - pf_cfg.start_mono_ns : 0;
}

uint64_t pf_now_ns_small_read(pf_tls_t *t)
{
    uint64_t ns = pf_now_ns();
    t->clk_reuses = ns - t->clk_read < PF_CLOCK_DENSE_NS ? PF_CLOCK_REUSES : 0;
    t->clk_read = ns;
    return ns;
}

/* A relaxed store is enough: a thread that could order an event against the first one's (a free, and then
 * a new block at the same address) reaches it through the allocator's own lock or the GIL, which carries
 * this store to the first thread before that event. */
void pf_clock_thread_recording(uint32_t tid)
{
    pf_note_thread(&first_recorder, &pf_clock_many_recorders, tid);
}

void pf_clock_fork_child(pf_tls_t *t)
{
    first_recorder = 0;
    pf_clock_many_recorders = 0;
    pf_clock_latest = 0;
    map.drawing = 0;    /* a thread of the parent's may have been drawing: the child has none */
    t->clk_reuses = 0;
}
