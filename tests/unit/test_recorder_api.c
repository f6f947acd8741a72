/* Unit tests for the in-process counters (recorder/pf_api.c): the owned cells move to a thread that counts
 * while their owner is idle, never while the owner counts too, and the totals stay exact while threads take
 * them over from one another. Built with PF_API_MIGRATE_AFTER 16 (recorder_api.cmake), so that take-overs
 * come every few counts. */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pf_rec_int.h"
#include "pyflow_api.h"
#include "test_rec_memcpy.h"  /* the recorder's memcpy, here a plain loop */

pf_config_t pf_cfg;
pf_recorder_host_t pf_host;
__thread pf_tls_t pf_tls __attribute__((tls_model("initial-exec")));

/* What pf_api.c calls besides the counters, as the runtime would answer in an --exact run. */
void pf_sampling_now(uint64_t base_mean, uint64_t base_threshold, uint64_t *mean, uint64_t *threshold)
{
    *mean = base_mean;
    *threshold = base_threshold;
}
uint64_t pf_now_ns(void) { return 0; }
void pf_enter_recording(pf_tls_t *t) { (void)t; }
void pf_record_mark(pf_tls_t *t, int kind, uint64_t value, const char *note)
{
    (void)t, (void)kind, (void)value, (void)note;
}

/* The owner's update, now and then paused (PF_API_TEST_PAUSE): a taker must wait for it to end, or the
 * update stores a total that misses the taker's. */
void pf_api_test_pause(void);
void pf_api_test_pause(void)
{
    static __thread unsigned calls;
    if (++calls % 97 == 0)
        sched_yield();
}

static void *plain_memcpy(void *d, const void *s, size_t n) { return memcpy(d, s, n); }

static pyflow_counters_t counters(void)
{
    pyflow_counters_t c;
    pyflow_counters(&c, sizeof c);
    return c;
}

static void alloc_free(int n, int64_t size)
{
    pf_objinfo_t o = {.size = (uint64_t)size, .domain = PF_DOMAIN_PYOBJ, .flags = PF_ALLOC_EXACT};
    for (int i = 0; i < n; i++)
        pf_api_on_alloc(PF_DOMAIN_PYOBJ, (uint64_t)size);
    for (int i = 0; i < n; i++)
        pf_api_on_free(&o);
}

/* Two threads taking turns: a worker counts `worker_counts`, then the main thread `main_counts`. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int turn, rounds, worker_counts;
} turns_t;

static void *turn_taker(void *arg)
{
    turns_t *T = arg;
    for (int r = 0; r < T->rounds; r++) {
        pthread_mutex_lock(&T->lock);
        while (T->turn != 1)
            pthread_cond_wait(&T->cond, &T->lock);
        pthread_mutex_unlock(&T->lock);
        for (int i = 0; i < T->worker_counts; i++)
            pf_api_on_alloc(PF_DOMAIN_PYOBJ, 8);
        pthread_mutex_lock(&T->lock);
        T->turn = 0;
        pthread_cond_broadcast(&T->cond);
        pthread_mutex_unlock(&T->lock);
    }
    return NULL;
}

/* Take-overs need membarrier's private expedited command (Linux 4.14; a seccomp filter may refuse it). */
static void need_membarrier(void)
{
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) {
        print_message("membarrier's private expedited command is not to be had here: nobody takes over\n");
        skip();
    }
}

static uint32_t takeovers_in_turns(int main_counts, int worker_counts)
{
    need_membarrier();
    for (int i = 0; i < 64; i++)
        pf_api_on_alloc(PF_DOMAIN_PYOBJ, 8);   /* the main thread owns the cells (taken from an earlier
                                                  case's worker, gone since) */
    uint32_t before = __atomic_load_n(&pf_api_takeovers, __ATOMIC_RELAXED);
    turns_t T = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 50, worker_counts};
    pthread_t w;
    pthread_create(&w, NULL, turn_taker, &T);
    for (int r = 0; r < T.rounds; r++) {
        pthread_mutex_lock(&T.lock);
        T.turn = 1;
        pthread_cond_broadcast(&T.cond);
        while (T.turn != 0)
            pthread_cond_wait(&T.cond, &T.lock);
        pthread_mutex_unlock(&T.lock);
        for (int i = 0; i < main_counts; i++)
            pf_api_on_alloc(PF_DOMAIN_PYOBJ, 8);
    }
    pthread_join(w, NULL);
    return __atomic_load_n(&pf_api_takeovers, __ATOMIC_RELAXED) - before;
}

/* A worker that counts while the main thread, the first to count, waits: it takes the cells over (once:
 * the main thread then never counts again). */
static void test_idle_owner_taken_over(void **state)
{
    (void)state;
    assert_int_equal(takeovers_in_turns(0, 200), 1);
}

/* The twin: the owner counts between each of the worker's looks at its cells, so they stay its own. */
static void test_busy_owner_kept(void **state)
{
    (void)state;
    pyflow_counters_t a = counters();
    uint32_t n = takeovers_in_turns(1, 16);
    pyflow_counters_t b = counters();
    assert_int_equal(n, 0);
    assert_int_equal(b.allocated_python - a.allocated_python, (64 + 50 * 17) * 8);
}

/* Four threads in bursts with pauses, on a machine with fewer cores: owners idle and are taken over
 * hundreds of times, amid each other's updates. Every byte counted must be there. */
#define STRESS_THREADS 4
#define STRESS_ROUNDS 3000
#define STRESS_BURST 40
static void *burster(void *arg)
{
    int64_t size = (int64_t)(uintptr_t)arg;
    for (int r = 0; r < STRESS_ROUNDS; r++) {
        alloc_free(STRESS_BURST, size);
        pf_api_on_alloc(PF_DOMAIN_MALLOC, (uint64_t)size);     /* kept: the native layer's live bytes */
        if (r % 8 == 0)
            sched_yield();
    }
    return NULL;
}

static void test_exact_amid_takeovers(void **state)
{
    (void)state;
    need_membarrier();
    pyflow_counters_t a = counters();
    uint32_t before = __atomic_load_n(&pf_api_takeovers, __ATOMIC_RELAXED);
    pthread_t t[STRESS_THREADS];
    int64_t sizes = 0;
    for (int i = 0; i < STRESS_THREADS; i++) {
        sizes += 16 * (i + 1);
        pthread_create(&t[i], NULL, burster, (void *)(uintptr_t)(16 * (i + 1)));
    }
    for (int i = 0; i < STRESS_THREADS; i++)
        pthread_join(t[i], NULL);
    pyflow_counters_t b = counters();
    uint32_t takeovers = __atomic_load_n(&pf_api_takeovers, __ATOMIC_RELAXED) - before;
    print_message("take-overs: %u\n", takeovers);
    assert_true(takeovers >= 10);   /* else the race was not run */
    assert_int_equal(b.allocated_python - a.allocated_python, (int64_t)STRESS_ROUNDS * STRESS_BURST * sizes);
    assert_int_equal(b.live_python - a.live_python, 0);
    assert_int_equal(b.live_native - a.live_native, (int64_t)STRESS_ROUNDS * sizes);
}

int main(void)
{
    pf_cfg.exact = 1;
    pf_host.memcpy = plain_memcpy;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idle_owner_taken_over),
        cmocka_unit_test(test_busy_owner_kept),
        cmocka_unit_test(test_exact_amid_takeovers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
