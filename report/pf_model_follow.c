/* pf_model_follow.c - an exact profile's model built while its program runs (see pf_report.h).
 *
 * `pyflow run --exact` printed its report after the program: the whole profile read and swept then, a
 * third of the run on the bench's small-object programs. A profile is written a chunk at a time and a
 * single-threaded program's chunks follow one another in the file, so while it runs a thread of the
 * launcher walks each chunk once the next one is claimed (it is then complete) and sweeps its events:
 * at the end only the last chunks are left. The walk, the stream of events and the sweep are the loader's
 * own, taken in steps; the timelines do not depend on the run's end (pf_timeline_int.h), and what does (the
 * end itself, the processes' fates) is taken at the end, so the model is the one pf_model_load builds.
 *
 * Anything that load would take otherwise makes the follower give up, and the caller loads the profile
 * as before: a second thread's records (their merge needs every stream), a file of a child process, an
 * exec'd image, events out of order, a record the walk or the merge refuses.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pf_loader_int.h"
#include "pf_origin_int.h"
#include "pf_report.h"
#include "pf_report_int.h"

#define FOLLOW_BATCH 4096
#define FOLLOW_IDLE_NS 2000000L     /* a look at the file every 2 ms when it had nothing new */
#define FOLLOW_MEMORY_EVERY_NS 100000000ull     /* a look at the machine's free memory every 100 ms */

struct pf_follow {
    loader_t L;
    pf_sweep_run_t *R;
    pf_event_iter_t it;
    event_t *batch;
    pf_rec_alloc_short_t *pay;
    char *path;
    pf_load_opts_t opts;
    uint64_t next_chunk;    /* offset of the first chunk not walked */
    uint32_t tid;           /* the one thread whose chunks these are */
    uint64_t memory_seen_ns;    /* when the machine's free memory was last looked at */
    uint64_t min_available;     /* the least MemAvailable it follows with (bytes; 0 until known) */
    uint32_t *new_stacks, *new_natives;         /* the ids of the stacks the walk brought since the index */
    size_t n_new_stacks, cap_new_stacks, n_new_natives, cap_new_natives;
    pf_stack_index_t index;
    size_t sorted_spawns;   /* how many starts pf_origin_index sorted */
    int opened, gave_up, final;
    const char *why;        /* what it gave up on */
    pthread_t thread;
    int threaded;
    atomic_int stop;
};

/* Everything let go; the caller loads the profile instead. */
static void give_up(pf_follow_t *F, const char *why)
{
    if (F->gave_up)
        return;
    F->gave_up = 1;
    F->why = why;
    if (F->R)
        pf_sweep_end(F->R);
    F->R = NULL;
    pf_events_end(&F->it);
    pf_loader_free(&F->L);
    pf_model_free(F->L.m);
    F->L.m = NULL;
    free(F->batch);
    free(F->pay);
    F->batch = NULL;
    F->pay = NULL;
}

/* The walk's callback: a record of the one thread (or, at the end, of the launcher's trailer). */
static int on_record(void *ctx, const pf_record_t *r)
{
    pf_follow_t *F = ctx;
    if (r->tid != F->tid && !(F->final && r->tid == 0))
        return 1;   /* another writer */
    if (r->type == PF_REC_STACK)
        *PF_VEC_PUSH(F->new_stacks, F->n_new_stacks, F->cap_new_stacks) = ((const pf_rec_stack_t *)r->payload)->stack_id;
    else if (r->type == PF_REC_NATIVE_STACK)
        *PF_VEC_PUSH(F->new_natives, F->n_new_natives, F->cap_new_natives) =
            ((const pf_rec_native_stack_t *)r->payload)->native_id;
    return pf_loader_on_record(&F->L, r);
}

/* A chunk's magic, as its writer published it (its records before it, in the writer's order). */
static uint32_t chunk_magic(const pf_file_t *f, uint64_t off)
{
    return __atomic_load_n((const uint32_t *)(const void *)(f->data + off), __ATOMIC_ACQUIRE);
}

static int open_profile(pf_follow_t *F)
{
    loader_t *L = &F->L;
    proc_state_t *P = pf_loader_new_process(L);
    char err[512];
    int rc = pf_file_open_growing(F->path, &P->file, err, sizeof err);
    if (rc == -EAGAIN || rc == -ENOENT)
        return 0;   /* not created yet */
    if (rc < 0 || !(P->file.header.flags & PF_HDR_EXACT) || pf_loader_process_opened(L, 1, 0) < 0) {
        if (rc == 0 && L->n_procs == 0)
            pf_file_close(&P->file);
        give_up(F, rc < 0 ? "the profile cannot be read" : "not an exact profile");
        return 0;
    }
    F->next_chunk = PF_HEADER_BYTES;
    F->R = pf_sweep_begin(L, 1);
    pf_events_follow_begin(L, &F->it);
    F->opened = 1;
    return 1;
}

/* 1 when the machine runs short of memory: what /proc/meminfo says is available is below min_available,
 * an eighth of the machine's memory (PYFLOW_REPORT_FOLLOW_MIN_AVAILABLE bytes where set: tests). The
 * follower's model then lets the program have it back, and the report waits for the program to end, as
 * before: built after the program, the model never shared the machine's memory with it. */
static int memory_short(pf_follow_t *F)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    if (F->memory_seen_ns && now - F->memory_seen_ns < FOLLOW_MEMORY_EVERY_NS)
        return 0;
    F->memory_seen_ns = now;
    FILE *f = fopen("/proc/meminfo", "re");
    if (!f)
        return 0;
    unsigned long long total = 0, available = 0, kb;
    char key[64];
    while ((!total || !available) && fscanf(f, "%63s %llu kB\n", key, &kb) == 2) {
        if (!strcmp(key, "MemTotal:"))
            total = kb << 10;
        else if (!strcmp(key, "MemAvailable:"))
            available = kb << 10;
    }
    fclose(f);
    if (!F->min_available) {
        const char *env = getenv("PYFLOW_REPORT_FOLLOW_MIN_AVAILABLE");
        F->min_available = env && *env ? strtoull(env, NULL, 10) : total / 8;
    }
    return total && available && available < F->min_available;
}

/* The stacks' index let go, to be built again with those the walk brought (pf_loader_index_stacks builds
 * one from nothing). */
static void forget_stack_index(proc_state_t *P)
{
    free(P->stack_at);
    free(P->native_at);
    free(P->ips_at);
    P->stack_at = NULL;
    P->native_at = NULL;
    P->ips_at = NULL;
    P->n_stack_at = P->n_native_at = 0;
}

/* Walks the chunks now complete (all of them, final) and sweeps their events. Returns 1 when it walked any. */
static int step(pf_follow_t *F)
{
    if (F->gave_up || (!F->opened && !open_profile(F)))
        return 0;
    loader_t *L = &F->L;
    proc_state_t *P = &L->procs[0];
    pf_file_t *f = &P->file;
    if (pf_file_follow(f) < 0) {
        give_up(F, "the profile cannot be mapped");
        return 0;
    }
    const uint64_t cb = f->header.chunk_bytes;
    uint64_t to = F->next_chunk;
    if (F->final) {
        to = f->size;
    } else {
        /* a chunk is complete once the one after it is claimed: one writer fills its chunks in turn */
        while (to + cb + PF_CHUNK_HEADER_BYTES <= f->size && chunk_magic(f, to + cb))
            to += cb;
    }
    if (to <= F->next_chunk && !F->final)
        return 0;
    if (!F->tid && to > F->next_chunk) {
        uint32_t magic = chunk_magic(f, F->next_chunk);
        F->tid = ((const pf_chunk_header_t *)(const void *)(f->data + F->next_chunk))->tid;
        if (magic != PF_CHUNK_MAGIC || !F->tid) {
            give_up(F, "no chunk of a thread first");
            return 0;
        }
    }
    char err[512];
    int walked = to > F->next_chunk ? pf_file_walk_chunks(f, F->next_chunk, to, on_record, F, err, sizeof err) : 0;
    if (walked || L->unordered || L->redo || L->n_streams > 1) {
        give_up(F, walked > 0 ? "a second thread's records" : walked < 0 ? "a record the walk refuses"
                   : L->n_streams > 1 ? "a second thread's events" : "events out of order");
        return 0;
    }
    if (P->n_spawns != F->sorted_spawns) {
        /* the threads and processes started, in the order the origins' lookups search (a start is in the
         * one stream before every event after it: the lookups see all that pf_model_load's would) */
        pf_origin_index(L);
        F->sorted_spawns = P->n_spawns;
    }
    if (to > F->next_chunk)
        F->next_chunk = to;
    if (F->final) {     /* the streams settled, the index built whole as the loader builds it */
        forget_stack_index(P);
        pf_loader_process_walked(L, 1);
    } else {            /* the stacks this step brought added to the index: building it whole each step was
                           a sixth of the launcher's time following an import of scikit-learn */
        pf_loader_index_more(P, &F->index, F->new_stacks, F->n_new_stacks, F->new_natives, F->n_new_natives);
    }
    F->n_new_stacks = F->n_new_natives = 0;
    pf_sweep_walked(F->R);
    size_t n;
    while ((n = pf_events_next_batch(&F->it, F->batch, F->pay, FOLLOW_BATCH))) {
        L->decoded = F->pay;
        pf_sweep_events(F->R, F->batch, n, NULL);
    }
    if (F->it.broken)
        give_up(F, "events out of order");
    else if (!F->final && memory_short(F))
        give_up(F, "memory is short");
    return 1;
}

static void *follow_thread(void *arg)
{
    pf_follow_t *F = arg;
    /* woken, it does not preempt the program: it runs on a CPU the program leaves free, or waits its turn */
    struct sched_param batch = {0};
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &batch);
    while (!atomic_load(&F->stop) && !F->gave_up) {
        if (!step(F)) {
            struct timespec idle = {0, FOLLOW_IDLE_NS};
            nanosleep(&idle, NULL);
        }
    }
    return NULL;
}

pf_follow_t *pf_follow_new(const char *path, const pf_load_opts_t *opts)
{
    pf_follow_t *F = pf_xcalloc(1, sizeof *F);
    F->path = pf_xstrndup(path, strlen(path));
    if (opts)
        F->opts = *opts;
    F->L.m = pf_model_new(&F->opts);
    F->batch = pf_xmalloc(FOLLOW_BATCH * sizeof *F->batch);
    F->pay = pf_xmalloc(FOLLOW_BATCH * sizeof *F->pay);
    return F;
}

int pf_follow_step(pf_follow_t *F)
{
    return step(F);
}

pf_follow_t *pf_follow_start(const char *path, const pf_load_opts_t *opts)
{
    pf_follow_t *F = pf_follow_new(path, opts);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);  /* signals stay the launcher's main thread's */
    F->threaded = pthread_create(&F->thread, NULL, follow_thread, F) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!F->threaded) {
        pf_follow_free(F);
        return NULL;
    }
    return F;
}

void pf_follow_free(pf_follow_t *F)
{
    if (!F)
        return;
    if (F->threaded) {
        atomic_store(&F->stop, 1);
        pthread_join(F->thread, NULL);
        F->threaded = 0;
    }
    give_up(F, "let go");
    free(F->path);
    free(F->new_stacks);
    free(F->new_natives);
    free(F);
}

/* PYFLOW_REPORT_FOLLOW_SAY set: one line on stderr, which way the model came (tests). */
static void say(const pf_follow_t *F)
{
    const char *say = getenv("PYFLOW_REPORT_FOLLOW_SAY");
    if (say && *say)
        fprintf(stderr, "pyflow: report %s\n", F->gave_up ? F->why : "followed");
}

static int given_up(pf_follow_t *F)
{
    say(F);
    pf_follow_free(F);
    return -1;
}

int pf_follow_finish(pf_follow_t *F, pf_model_t **out)
{
    if (F->threaded) {
        atomic_store(&F->stop, 1);
        pthread_join(F->thread, NULL);
        F->threaded = 0;
    }
    loader_t *L = &F->L;
    F->final = 1;
    step(F);
    if (!F->opened)
        give_up(F, "no profile");
    char **kids = NULL;
    size_t n_kids = F->gave_up || !F->opts.merge_children ? 0 : pf_profile_children(F->path, &kids);
    pf_profile_children_free(kids, n_kids);
    if (n_kids || (!F->gave_up && pf_report_process_replaced(L->m, 0)))
        give_up(F, n_kids ? "children's profiles" : "an image exec'd");   /* pf_model_load's */
    if (F->gave_up)
        return given_up(F);
    /* the one header field the runtime changes as it runs: what it had to drop, counted at open */
    const pf_file_header_t *h = (const pf_file_header_t *)(const void *)L->procs[0].file.data;
    L->m->dropped += __atomic_load_n(&h->records_dropped, __ATOMIC_RELAXED) - L->procs[0].file.header.records_dropped;
    pf_model_watch_totals(L);
    pf_origin_index(L);
    pf_sweep_end(F->R);
    F->R = NULL;
    pf_model_t *m = L->m;
    if (L->redo) {
        give_up(F, "a record the merge refuses");
        return given_up(F);
    }
    say(F);
    pf_loader_swept(L);
    pf_events_end(&F->it);
    pf_loader_free(L);
    L->m = NULL;
    if (!m->has_exit)
        m->elapsed_s = (double)m->end_ns / 1e9;
    free(F->batch);
    free(F->pay);
    F->batch = NULL;
    F->pay = NULL;
    F->gave_up = 1;     /* nothing left to free but F */
    free(F->path);
    free(F->new_stacks);
    free(F->new_natives);
    free(F);
    *out = m;
    return 0;
}
