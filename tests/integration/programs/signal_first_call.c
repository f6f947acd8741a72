/* signal_first_call.c - a hook's first call from a signal handler while another thread is inside dlopen.
 * Built twice by integration.robustness.signal_first_call: with -DSPIN, the library whose constructor
 * waits (up to 3 s) for the handler; without, a program (linked -rdynamic: the library reads its flags)
 * that dlopens argv[1] while a second thread signals itself, and whose handler calls truncate(2), which
 * nothing in the process called before. The loader holds its lock while a constructor runs, so a hook that
 * looked its real function up with dlsym at that call waited for the lock, and the constructor gave up.
 * Prints "ok" when the handler ran while the constructor waited, "timed out" when it gave up first. */
#include <stdatomic.h>
#include <time.h>

#ifdef SPIN
extern atomic_int pf_test_in_ctor, pf_test_handled, pf_test_gave_up;

__attribute__((constructor)) static void wait_for_handler(void)
{
    atomic_store(&pf_test_in_ctor, 1);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while (!atomic_load(&pf_test_handled) && t.tv_sec - t0.tv_sec < 3);
    if (!atomic_load(&pf_test_handled))
        atomic_store(&pf_test_gave_up, 1);
}
#else
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

atomic_int pf_test_in_ctor, pf_test_handled, pf_test_gave_up;

static void on_usr1(int sig)
{
    (void)sig;
    (void)truncate("/nonexistent/pyflow-signal-first-call", 0);
    atomic_store(&pf_test_handled, 1);
}

static void *signal_itself(void *arg)
{
    (void)arg;
    while (!atomic_load(&pf_test_in_ctor))
        ;
    pthread_kill(pthread_self(), SIGUSR1);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    struct sigaction sa = {.sa_handler = on_usr1};
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t th;
    if (pthread_create(&th, NULL, signal_itself, NULL) != 0)
        return 3;
    void *h = dlopen(argv[1], RTLD_NOW);
    pthread_join(th, NULL);
    if (!h)
        return 4;
    puts(atomic_load(&pf_test_gave_up) ? "timed out" : "ok");
    return 0;
}
#endif
