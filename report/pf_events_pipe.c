/* pf_events_pipe.c - the merge of the events on a thread of its own, a few batches ahead of the sweep.
 *
 * One producer (the merge thread) and one consumer (the sweep) share a ring of PF_PIPE_SLOTS batches and
 * two counters: published, the batches filled (slot i % PF_PIPE_SLOTS holds batch i), and released, the
 * batches the sweep is done with. The producer fills batch i only once released > i - PF_PIPE_SLOTS, and
 * publishes it with a release store; the sweep reads it after an acquire load that saw it, and releases it
 * (its events and their payloads read) when it asks for the next one. A batch of 0 events is the end.
 *
 * Batches are filled one at a time, in order, by whoever holds the lock `filling`: the merge thread, or the
 * sweep itself when it finds the ring empty and the lock free (the merge thread asleep, or waiting for a
 * CPU on a busy machine: the sweep then merges as it would without the thread, rather than wait). The
 * events and their order are the same whoever fills a batch.
 *
 * A side with nothing to do sleeps on the other's counter with a futex, and the other wakes it only when it
 * says it sleeps (a flag, ordered against the counter by sequentially consistent accesses on both sides,
 * so that a wake-up is never lost). The merge is the faster side (a tenth of the work; with an exact
 * profile's live objects (pf_live_ahead.c), about two thirds of the sweep's): when the ring is
 * full it sleeps at once, until half of it is free, so that it is woken once every PF_PIPE_SLOTS / 2
 * batches, not once a batch (a wake-up is a system call on the sweep's path), and spends no CPU the sweep
 * or another program could use (spinning there cost a tenth more CPU, and on a busy machine the sweep's
 * time). It runs as SCHED_BATCH: woken, it takes a free CPU but does not preempt the sweep on its own.
 * The sweep spins a little when the merge thread is filling the batch it waits for, then sleeps.
 */
#include "pf_events_pipe.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PF_PIPE_SLOTS 16
/* Events a batch: inline, the sweep's batch, whose records, just read, are still in cache when swept;
 * threaded, larger, so that the ring's hand-overs and the merge thread's wake-ups are fewer: one every
 * PF_PIPE_SLOTS / 2 batches, and each a futex wake and a switch that cost 2-4% of an exact profile's
 * report in a VM at 1024 events a batch (~2,000 wake-ups for 12 million events). The ring then holds
 * 3 MiB of the reporter's memory. */
#define PF_PIPE_INLINE_BATCH 256
#define PF_PIPE_THREAD_BATCH 4096
/* The sweep's spins before it sleeps: ~10-50 us of pause instructions. */
#define PF_PIPE_SPINS 2000

typedef struct slot {
    event_t *events;
    pf_rec_alloc_short_t *pay;
    pf_ahead_batch_t ann;       /* with ahead */
    size_t n;
} slot_t;

/* A counter one side advances and the other waits on, with a cache line to itself (padded on both
 * sides: each side writes its own counter, and reads the other's). */
typedef struct counter {
    char before[64];
    _Atomic uint32_t value;
    _Atomic uint32_t sleeping;  /* the waiting side sleeps until value reaches wake_at */
    _Atomic uint32_t wake_at;
    char after[64 - 3 * sizeof(uint32_t)];
} counter_t;

struct pf_events_pipe {
    loader_t *L;
    pf_live_ahead_t *ahead;
    pf_event_iter_t it;
    size_t batch;
    int threaded;
    /* inline: slots[0] is the batch */
    slot_t slots[PF_PIPE_SLOTS];
    uint32_t taken;     /* the sweep's: batches taken (the one held is taken - 1) */
    int held, done;     /* the sweep holds batch taken - 1; it saw the end */
    pthread_t thread;
    counter_t published, released;
    /* who fills the next batch holds this: the merge thread, or the sweep when it finds the ring empty */
    _Atomic int filling;
    int ended;          /* under filling: the batch of 0 events, the end, is published */
    _Atomic int stop;   /* the sweep closed early: the merge ends */
};

static int reached(uint32_t value, uint32_t target)
{
    return (int32_t)(value - target) >= 0;
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Waits until c's value reaches target (after spins polls), or, once asleep, wake_at (>= target: the waker
 * wakes it only then); stop (when not NULL) ends the wait too. Returns the value seen. */
static uint32_t wait_for(counter_t *c, uint32_t target, uint32_t wake_at, int spins, _Atomic int *stop)
{
    uint32_t v;
    for (int i = 0; i < spins; i++) {
        v = atomic_load_explicit(&c->value, memory_order_acquire);
        if (reached(v, target))
            return v;
        cpu_relax();
    }
    atomic_store_explicit(&c->wake_at, wake_at, memory_order_relaxed);
    for (;;) {
        atomic_store(&c->sleeping, 1);  /* seq_cst: ordered before the load below (see advance) */
        v = atomic_load(&c->value);
        if (reached(v, target) || (stop && atomic_load(stop)))
            break;
        /* returns at once if value moved on from v; a spurious return goes round again */
        syscall(SYS_futex, &c->value, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
    }
    atomic_store_explicit(&c->sleeping, 0, memory_order_relaxed);
    return v;   /* the value was loaded seq_cst: what it counts is published to this thread */
}

/* Sets c's value (the release that publishes what it counts) and wakes its waiter if it sleeps and the value
 * reached what it waits for. seq_cst store then load, against the waiter's store of sleeping then load of
 * value: one of the two sides sees the other's store, so the waiter either sees the value or is woken. */
static void advance(counter_t *c, uint32_t value, int force)
{
    atomic_store(&c->value, value);
    if (atomic_load(&c->sleeping) &&
        (force || reached(value, atomic_load_explicit(&c->wake_at, memory_order_relaxed))))
        syscall(SYS_futex, &c->value, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Merges the next batch into s, and annotates it with ahead's objects. */
static void fill(pf_events_pipe_t *p, slot_t *s)
{
    s->n = pf_events_next_batch(&p->it, s->events, s->pay, p->batch);
    if (p->ahead)
        pf_live_ahead_batch(p->ahead, s->events, s->n, s->pay, &s->ann);
}

/* Fills the next batch and publishes it; the caller holds p->filling, and the batch's slot is free. */
static void fill_next(pf_events_pipe_t *p)
{
    uint32_t i = atomic_load_explicit(&p->published.value, memory_order_relaxed);  /* only the filler moves it */
    slot_t *s = &p->slots[i % PF_PIPE_SLOTS];
    fill(p, s);
    p->ended = s->n == 0;
    advance(&p->published, i + 1, 1);
}

static int try_lock(pf_events_pipe_t *p)
{
    return !atomic_load_explicit(&p->filling, memory_order_relaxed) &&
           !atomic_exchange_explicit(&p->filling, 1, memory_order_acquire);
}

static void unlock(pf_events_pipe_t *p)
{
    atomic_store_explicit(&p->filling, 0, memory_order_release);
}

/* 1 when the slot of batch i is free: batch i - PF_PIPE_SLOTS was released. */
static int room_for(pf_events_pipe_t *p, uint32_t i)
{
    return reached(atomic_load_explicit(&p->released.value, memory_order_acquire), i - PF_PIPE_SLOTS + 1);
}

static void *merge_thread(void *arg)
{
    pf_events_pipe_t *p = arg;
    /* woken, it does not preempt the sweep (which fills batches itself when the ring runs dry): it runs on
     * a free CPU, or waits its turn on a busy machine */
    struct sched_param batch = {0};
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &batch);
    while (!atomic_load_explicit(&p->stop, memory_order_relaxed)) {
        uint32_t i = atomic_load_explicit(&p->published.value, memory_order_relaxed);
        if (!room_for(p, i)) {  /* asleep, wait for half the ring */
            uint32_t need = i - PF_PIPE_SLOTS + 1;
            wait_for(&p->released, need, need + PF_PIPE_SLOTS / 2 - 1, 0, &p->stop);
            continue;
        }
        if (!try_lock(p)) {     /* the sweep fills a batch itself: asleep until it is done with it */
            uint32_t r = atomic_load_explicit(&p->released.value, memory_order_relaxed);
            wait_for(&p->released, r + 1, r + 1, 0, &p->stop);
            continue;
        }
        int ended = p->ended;
        if (!ended && room_for(p, atomic_load_explicit(&p->published.value, memory_order_relaxed)))
            fill_next(p);
        ended = p->ended;
        unlock(p);
        if (ended)
            return NULL;
    }
    return NULL;
}

/* The CPUs this process may run on (taskset, cgroups' cpusets), not the machine's. */
static long cpus_allowed(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return CPU_COUNT(&set);
    return sysconf(_SC_NPROCESSORS_ONLN);  /* more CPUs than a cpu_set_t holds */
}

static uint64_t profile_bytes(const loader_t *L)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < L->n_procs; i++)
        bytes += L->procs[i].file.size;
    return bytes;
}

/* PF_PIPE_AUTO's choice: PYFLOW_REPORT_THREADS=1 merges inline, =2 on a thread (for tests: whatever the
 * CPUs and the size); anything else, the machine and the profile decide. */
static pf_pipe_mode_t choose(const loader_t *L)
{
    const char *env = getenv("PYFLOW_REPORT_THREADS");
    if (env && !strcmp(env, "1"))
        return PF_PIPE_INLINE;
    if (env && !strcmp(env, "2"))
        return PF_PIPE_THREAD;
    return cpus_allowed() >= 2 && profile_bytes(L) >= PF_PIPE_MIN_BYTES ? PF_PIPE_THREAD : PF_PIPE_INLINE;
}

/* The merge thread takes no signals: they stay the main thread's, as without it. */
static int start_thread(pf_events_pipe_t *p)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&p->thread, NULL, merge_thread, p);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc == 0;
}

pf_events_pipe_t *pf_events_pipe_open(loader_t *L, pf_pipe_mode_t mode, size_t batch, pf_live_ahead_t *ahead)
{
    pf_events_pipe_t *p = pf_xcalloc(1, sizeof *p);
    p->L = L;
    p->ahead = ahead;
    if (mode == PF_PIPE_AUTO)
        mode = choose(L);
    pf_events_begin(L, &p->it);
    p->batch = batch ? batch : mode == PF_PIPE_THREAD ? PF_PIPE_THREAD_BATCH : PF_PIPE_INLINE_BATCH;
    int slots = mode == PF_PIPE_THREAD ? PF_PIPE_SLOTS : 1;
    for (int i = 0; i < slots; i++) {
        p->slots[i].events = pf_xmalloc(p->batch * sizeof *p->slots[i].events);
        p->slots[i].pay = pf_xmalloc(p->batch * sizeof *p->slots[i].pay);
        if (ahead)
            p->slots[i].ann.ann = pf_xmalloc(p->batch * sizeof *p->slots[i].ann.ann);
    }
    p->threaded = mode == PF_PIPE_THREAD && start_thread(p);
    return p;
}

size_t pf_events_pipe_next(pf_events_pipe_t *p, const event_t **events, const pf_ahead_batch_t **ann)
{
    if (ann)
        *ann = &p->slots[0].ann;
    if (p->done) {
        *events = p->slots[0].events;
        return 0;
    }
    const slot_t *s = &p->slots[0];
    if (!p->threaded) {
        fill(p, &p->slots[0]);
    } else {
        if (p->held)    /* done with the last batch: its slot is the merge's again */
            advance(&p->released, p->taken, 0);
        /* the ring is empty, and no one fills it: the merge thread sleeps, or waits for a CPU (a busy
         * machine), so the sweep fills the batch itself rather than wait; else the merge thread is filling
         * it, microseconds from publishing it */
        if (!reached(atomic_load_explicit(&p->published.value, memory_order_acquire), p->taken + 1) && try_lock(p)) {
            if (!p->ended && !reached(atomic_load_explicit(&p->published.value, memory_order_relaxed), p->taken + 1))
                fill_next(p);
            unlock(p);
        }
        wait_for(&p->published, p->taken + 1, p->taken + 1, PF_PIPE_SPINS, NULL);
        s = &p->slots[p->taken % PF_PIPE_SLOTS];
        p->taken++;
        p->held = 1;
    }
    p->done = s->n == 0;
    p->L->decoded = s->pay;
    *events = s->events;
    if (ann)
        *ann = &s->ann;
    return s->n;
}

int pf_events_pipe_threaded(const pf_events_pipe_t *p)
{
    return p->threaded;
}

int pf_events_pipe_close(pf_events_pipe_t *p)
{
    if (!p)
        return 0;
    if (p->threaded) {
        atomic_store(&p->stop, 1);
        advance(&p->released, p->taken + PF_PIPE_SLOTS, 1);   /* wakes the merge if it waits for room */
        pthread_join(p->thread, NULL);
    }
    for (int i = 0; i < PF_PIPE_SLOTS; i++) {
        free(p->slots[i].events);
        free(p->slots[i].pay);
        free(p->slots[i].ann.ann);
        free(p->slots[i].ann.copies);
    }
    int broken = p->it.broken;     /* read after the merge thread's join, or its unlock of filling */
    pf_events_end(&p->it);
    p->L->decoded = NULL;
    free(p);
    return broken;
}
