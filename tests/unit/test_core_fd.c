/* Unit tests for core/pf_fd.c: a descriptor moved high lands above the soft limit where the hard limit
 * leaves room (and the soft limit is the program's again afterwards), in the top 64 below it where not, and
 * from 4032 up where the soft limit is large. The tests run in this order because an unprivileged process
 * cannot raise a hard limit it lowered. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

#include "pf_fd.h"

static int limit(rlim_t soft, rlim_t hard)
{
    struct rlimit r = {soft, hard};
    return setrlimit(RLIMIT_NOFILE, &r);
}

static rlim_t soft_now(void)
{
    struct rlimit r;
    getrlimit(RLIMIT_NOFILE, &r);
    return r.rlim_cur;
}

/* Opens a descriptor, moves it and checks the original is closed and the new one close-on-exec. */
static int moved(void)
{
    int fd = open("/dev/null", O_RDONLY);
    assert_true(fd >= 0);
    int high = pf_fd_high(fd);
    assert_int_not_equal(high, fd);
    assert_int_equal(fcntl(fd, F_GETFD), -1);
    assert_true(fcntl(high, F_GETFD) & FD_CLOEXEC);
    return high;
}

static void test_large_soft_limit(void **state)
{
    struct rlimit r;
    getrlimit(RLIMIT_NOFILE, &r);
    if (r.rlim_max != RLIM_INFINITY && r.rlim_max < 8192)
        skip();
    assert_int_equal(limit(8192, 8192), 0);
    int high = moved();
    assert_true(high >= 4032 && high < 8192);
    assert_int_equal(pf_fd_room(), 4096);
    close(high);
}

static void test_above_soft_limit(void **state)
{
    assert_int_equal(limit(256, 1024), 0);
    int a = moved(), b = moved();
    assert_true(a >= 256 && b >= 256 && a != b);
    assert_int_equal(soft_now(), 256);          /* the program's limit, back after each move */
    assert_int_equal(pf_fd_room(), 768);
    int fd = open("/dev/null", O_RDONLY);       /* the program's own next descriptor is still a low one */
    assert_true(fd >= 0 && fd < 16);
    close(fd);
    pf_fd_fork_child();                         /* idle: leaves the limit alone */
    assert_int_equal(soft_now(), 256);
    close(a);
    close(b);
}

static void test_no_room_above(void **state)
{
    assert_int_equal(limit(256, 256), 0);
    int high = moved();
    assert_true(high >= 192 && high < 256);
    assert_int_equal(pf_fd_room(), 64);
    assert_int_equal(pf_fd_high(-1), -1);
    close(high);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_large_soft_limit),
        cmocka_unit_test(test_above_soft_limit),
        cmocka_unit_test(test_no_room_above),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
