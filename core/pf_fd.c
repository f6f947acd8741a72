/* pf_fd.c - pyflow's descriptors live above the program's soft RLIMIT_NOFILE where the hard limit leaves
 * room, else in the top 64 numbers below it.
 *
 * Above the soft limit costs the program nothing: its open() can still reach exactly the limit, and a
 * program running 200 watched threads (5 perf events each) keeps every descriptor it had. A descriptor can
 * only be created below the soft limit, so the limit is raised for the instant of one F_DUPFD and put back;
 * a lock keeps two of pyflow's threads from restoring each other's raised value (never taken in a signal
 * handler; a fork child whose parent held it resets it). Where the soft limit is large (over 4096), the numbers from 4032 up are far from
 * anything the program reaches and the kernel's descriptor table stays small, so no raise is needed.
 */
#include "pf_fd.h"
#include "pf_sys.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PF_FD_LOW_CAP 4096  /* past this soft limit, numbers from PF_FD_LOW_CAP - 64 are out of the way */
#define PF_FD_ABOVE 4096    /* the most numbers used above a small soft limit */

enum { PF_FD_IDLE, PF_FD_BUSY, PF_FD_RAISED };
static int state;                   /* a lock over raise, dup, restore; RAISED: raised_from is valid */
static struct rlimit raised_from;   /* the program's limit while raised (restored in a fork child) */

static int get_limit(struct rlimit *r)
{
    return (int)syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, r);
}

static int set_limit(const struct rlimit *r)
{
    return (int)syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, r, NULL);
}

static int room_above(const struct rlimit *r)
{
    if (r->rlim_cur == RLIM_INFINITY || r->rlim_cur > PF_FD_LOW_CAP || r->rlim_max <= r->rlim_cur)
        return 0;
    rlim_t room = r->rlim_max == RLIM_INFINITY ? PF_FD_ABOVE : r->rlim_max - r->rlim_cur;
    return (int)(room > PF_FD_ABOVE ? PF_FD_ABOVE : room);
}

static int dup_above(int fd)
{
    for (int idle = PF_FD_IDLE;
         !__atomic_compare_exchange_n(&state, &idle, PF_FD_BUSY, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
         idle = PF_FD_IDLE)
        syscall(SYS_sched_yield);   /* another thread is placing one: a few system calls long */
    int high = -1;
    struct rlimit r;
    if (get_limit(&r) == 0 && room_above(&r) > 0) {
        struct rlimit up = {r.rlim_cur + (rlim_t)room_above(&r), r.rlim_max};
        raised_from = r;
        __atomic_store_n(&state, PF_FD_RAISED, __ATOMIC_RELEASE);
        if (set_limit(&up) == 0) {
            high = fcntl(fd, F_DUPFD_CLOEXEC, (int)r.rlim_cur);
            set_limit(&r);
        }
    }
    __atomic_store_n(&state, PF_FD_IDLE, __ATOMIC_RELEASE);
    return high;
}

int pf_fd_high(int fd)
{
    if (fd < 0)
        return fd;
    int high = dup_above(fd);
    struct rlimit r;
    if (high < 0 && get_limit(&r) == 0 && r.rlim_cur >= 256) {
        rlim_t top = r.rlim_cur > PF_FD_LOW_CAP ? PF_FD_LOW_CAP : r.rlim_cur;
        high = fcntl(fd, F_DUPFD_CLOEXEC, (int)(top - 64));
    }
    if (high < 0)
        return fd;
    close(fd);
    return high;
}

int pf_fd_room(void)
{
    struct rlimit r;
    if (get_limit(&r) != 0)
        return 64;
    int above = room_above(&r);
    if (above > 64)
        return above;
    if (r.rlim_cur != RLIM_INFINITY && r.rlim_cur > PF_FD_LOW_CAP) {
        rlim_t room = r.rlim_cur - (PF_FD_LOW_CAP - 64);
        return (int)(room > PF_FD_ABOVE ? PF_FD_ABOVE : room);
    }
    return 64;
}

void pf_fd_fork_child(void)
{
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == PF_FD_RAISED)
        set_limit(&raised_from);    /* forked mid-raise: the child gets the program's limit back */
    __atomic_store_n(&state, PF_FD_IDLE, __ATOMIC_RELEASE);
}
