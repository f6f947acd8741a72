/* Races of the object table's lock-free dense entries (recorder/pf_objtable.c, issue #29): a dense object's
 * insert and free take no lock, and the one other writer of a live entry, a lookup from another thread that
 * moves the object to a hashed slot (a copy's end), must neither lose the free nor tell it twice. Each test
 * runs its threads on every core the machine has and checks what the table says after each step and at
 * the end: every free found its object exactly once, with its facts, and nothing stale is left. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sched.h>
#include <stdlib.h>

#include <cmocka.h>

#include "pf_objdense.h"
#include "pf_objtable.h"

static int setup_dense(void **state)
{
    (void)state;
    pf_objtable_reset();
    int rc = pf_objtable_init();
    return rc ? rc : pf_objtable_dense(1);
}

enum { OBJECTS = 64, ROUNDS = 20000 };
static const uintptr_t base = 0x7e5000000000ull;
static int done;     /* the run is over (or failed): every spinning thread stops */

static uintptr_t addr_of(int i) { return base + (uintptr_t)i * 48; }
static uint64_t size_of(int i) { return (uint64_t)(16 + i * 7); }

/* The owner: allocates each object, then frees it, ROUNDS times; every free must find it, once. */
static void *owner_rounds(void);

static void *owner(void *arg)
{
    (void)arg;
    void *rc = owner_rounds();
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    return rc;
}

static void *owner_rounds(void)
{
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < OBJECTS; i++) {
            pf_objinfo_t o = {.addr = addr_of(i), .size = size_of(i), .domain = 2, .flags = 2};
            if (pf_objtable_insert(&o) != 0)
                return (void *)1;
        }
        for (int i = 0; i < OBJECTS; i++) {
            pf_objinfo_t got;
            if (!pf_objtable_maybe((void *)addr_of(i)) || pf_objtable_remove(addr_of(i), &got) != 1 ||
                got.addr != addr_of(i) || got.size != size_of(i) || got.domain != 2)
                return (void *)2;
            if (pf_objtable_remove(addr_of(i), &got) != 0)     /* told once */
                return (void *)3;
        }
    }
    return NULL;
}

/* Another thread looks the objects up (each lookup of a dense one moves it to a hashed slot) while the
 * owner frees them: what it finds must be the object as inserted. */
static void *looker(void *arg)
{
    (void)arg;
    uint64_t found = 0;
    while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
        for (int i = 0; i < OBJECTS; i++) {
            pf_objinfo_t got;
            if (pf_objtable_lookup(addr_of(i), &got)) {
                if (got.addr != addr_of(i) || got.size != size_of(i) || got.domain != 2 || !got.serial)
                    return (void *)4;
                found++;
            }
        }
    }
    return found ? NULL : (void *)5;    /* 5: the race was never run */
}

static void free_against_lookup(void)
{
    done = 0;
    pthread_t a, b;
    pthread_create(&b, NULL, looker, NULL);
    pthread_create(&a, NULL, owner, NULL);
    void *ra, *rb;
    pthread_join(a, &ra);
    pthread_join(b, &rb);
    if (ra || rb)
        print_message("owner %p, looker %p\n", ra, rb);
    assert_null(ra);
    assert_null(rb);
    assert_int_equal(pf_objtable_count(), 0);
    for (int i = 0; i < OBJECTS; i++)
        assert_int_equal(pf_objtable_maybe((void *)addr_of(i)), 0);   /* no stale slot, no stale count */
}

/* A lost race shows only when the threads meet in a window of a few instructions: run it a few times. */
static void test_free_against_lookup(void **state)
{
    (void)state;
    for (int k = 0; k < 3; k++)
        free_against_lookup();
}

/* Objects freed on another thread than the one that made them (the allocator hands blocks across threads):
 * a producer inserts, hands each address over through a ring, a consumer removes; meanwhile a third thread
 * looks them up. Every handed-over object is removed exactly once with its facts. */
#define RING 256u
static uintptr_t ring[RING];
static unsigned head, tail;
enum { HANDED = 100000 };

static void *producer(void *arg)
{
    (void)arg;
    for (unsigned n = 0; n < HANDED; n++) {
        int i = (int)(n % (RING / 2));     /* an address comes back once its last object was removed */
        while (__atomic_load_n(&head, __ATOMIC_ACQUIRE) - __atomic_load_n(&tail, __ATOMIC_ACQUIRE) >= RING / 2)
            if (__atomic_load_n(&done, __ATOMIC_ACQUIRE))
                return (void *)4;
            else
                sched_yield();     /* two cores and three threads: let the consumer run */
        pf_objinfo_t o = {.addr = addr_of(i), .size = size_of(i % 60), .domain = 1, .flags = 2};
        if (pf_objtable_insert(&o) != 0) {
            __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
            return (void *)1;
        }
        __atomic_store_n(&ring[head % RING], addr_of(i), __ATOMIC_RELAXED);
        __atomic_store_n(&head, head + 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    (void)arg;
    for (unsigned n = 0; n < HANDED; n++) {
        while (__atomic_load_n(&tail, __ATOMIC_ACQUIRE) == __atomic_load_n(&head, __ATOMIC_ACQUIRE))
            if (__atomic_load_n(&done, __ATOMIC_ACQUIRE))
                return (void *)5;
            else
                sched_yield();
        uintptr_t a = __atomic_load_n(&ring[tail % RING], __ATOMIC_RELAXED);
        int i = (int)((a - base) / 48);
        pf_objinfo_t got;
        if (pf_objtable_remove(a, &got) != 1 || got.size != size_of(i % 60) || got.domain != 1) {
            __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
            return (void *)2;
        }
        __atomic_store_n(&tail, tail + 1, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void *any_looker(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE))
        for (int i = 0; i < (int)(RING / 2); i++) {
            pf_objinfo_t got;
            if (pf_objtable_lookup(addr_of(i), &got) && (got.size != size_of(i % 60) || got.domain != 1)) {
                __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
                return (void *)3;
            }
        }
    return NULL;
}

static void test_freed_on_another_thread(void **state)
{
    (void)state;
    done = 0;
    head = tail = 0;
    pthread_t p, c, l;
    pthread_create(&l, NULL, any_looker, NULL);
    pthread_create(&c, NULL, consumer, NULL);
    pthread_create(&p, NULL, producer, NULL);
    void *rp, *rc, *rl;
    pthread_join(p, &rp);
    pthread_join(c, &rc);
    pthread_join(l, &rl);
    if (rp || rc || rl)
        print_message("producer %p, consumer %p, looker %p\n", rp, rc, rl);
    assert_null(rp);
    assert_null(rc);
    assert_null(rl);
    assert_int_equal(pf_objtable_count(), 0);
    for (int i = 0; i < (int)(RING / 2); i++)
        assert_int_equal(pf_objtable_maybe((void *)addr_of(i)), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_free_against_lookup, setup_dense),
        cmocka_unit_test_setup(test_freed_on_another_thread, setup_dense),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
