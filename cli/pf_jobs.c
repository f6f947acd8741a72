/* pf_jobs.c - signals and job control as if the program ran directly (pf_jobs.h). */
#include "pf_jobs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

/* 1 when another process shares pyflow's process group (pyflow is one command of a pipeline, or of a
 * script run in the foreground); 0 when none does or /proc cannot tell. */
static int group_shared(pid_t pgrp)
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    int shared = 0;
    struct dirent *de;
    char path[64], stat[512];
    while (!shared && (de = readdir(d))) {
        long pid = strtol(de->d_name, NULL, 10);
        if (pid <= 0 || pid == getpid())
            continue;
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, stat, sizeof stat - 1) : -1;
        if (fd >= 0)
            close(fd);
        if (n <= 0)
            continue;
        stat[n] = '\0';
        const char *end = strrchr(stat, ')');   /* the name may hold spaces and parentheses */
        char state;
        long ppid, group;
        if (end && sscanf(end + 1, " %c %ld %ld", &state, &ppid, &group) == 3 && group == pgrp && state != 'Z')
            shared = 1;
    }
    closedir(d);
    return shared;
}

void pf_jobs_prepare(pf_jobs_t *j)
{
    sigfillset(&j->relayed);
    /* faults of pyflow's own are its own; SIGKILL and SIGSTOP cannot be caught */
    static const int own[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGKILL, SIGSTOP};
    for (size_t i = 0; i < sizeof own / sizeof *own; i++)
        sigdelset(&j->relayed, own[i]);
    sigprocmask(SIG_BLOCK, &j->relayed, &j->old_mask);
    j->tty = -1;
    j->own_pgrp = getpgrp();
    for (int fd = 0; fd <= 2 && j->tty < 0; fd++)
        if (isatty(fd) && tcgetpgrp(fd) == j->own_pgrp)
            j->tty = fd;
    /* In the terminal's foreground with other commands (`pyflow run app.py | less`), the group must stay the
     * foreground one for all of them: the program stays in it too, and what the terminal sends the group
     * reaches it directly (pyflow relays only what was sent to it by a process). */
    j->same_group = j->tty >= 0 && group_shared(j->own_pgrp);
    if (j->same_group)
        j->tty = -1;
}

void pf_jobs_child(const pf_jobs_t *j)
{
    if (!j->same_group)
        setpgid(0, 0);
    if (j->tty >= 0)
        tcsetpgrp(j->tty, getpid());    /* SIGTTOU is blocked here: allowed from the background */
    sigprocmask(SIG_SETMASK, &j->old_mask, NULL);
}

void pf_jobs_abandon(pf_jobs_t *j)
{
    sigprocmask(SIG_SETMASK, &j->old_mask, NULL);
}

/* The terminal to the program's group, when pyflow's group has it (pyflow runs in the foreground). */
static void terminal_to(const pf_jobs_t *j, pid_t from, pid_t to)
{
    if (j->tty >= 0 && tcgetpgrp(j->tty) == from)
        tcsetpgrp(j->tty, to);
}

/* SIGCONT pending for pyflow is consumed and passed to the program's group, once. */
static void continue_program(const pf_jobs_t *j, pid_t pid)
{
    sigset_t cont;
    sigemptyset(&cont);
    sigaddset(&cont, SIGCONT);
    struct timespec zero = {0, 0};
    while (sigtimedwait(&cont, NULL, &zero) == SIGCONT) {
    }
    terminal_to(j, j->own_pgrp, pid);
    kill(j->same_group ? pid : -pid, SIGCONT);
}

/* The program stopped with sig: pyflow stops the same way (the shell sees the job stopped) and, once
 * continued, continues the program. */
static void stop_like(const pf_jobs_t *j, pid_t pid, int sig)
{
    terminal_to(j, pid, j->own_pgrp);
    struct sigaction dfl = {.sa_handler = SIG_DFL}, old;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, &old);
    kill(getpid(), sig);
    if (sig != SIGSTOP) {
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        sigprocmask(SIG_UNBLOCK, &one, NULL);   /* stops here (unless the group is orphaned) */
        sigprocmask(SIG_BLOCK, &one, NULL);
    }
    sigaction(sig, &old, NULL);
    continue_program(j, pid);
}

static int watched_fd = -1;
static void (*watched_fn)(void *);
static void *watched_arg;

void pf_jobs_also_watch(int fd, void (*fn)(void *), void *arg)
{
    watched_fd = fd;
    watched_fn = fn;
    watched_arg = arg;
}

/* The next relayed signal (its number, its code and sender in *code, *from), calling the watched
 * descriptor's function whenever that is readable meanwhile. 0 when interrupted. */
static int next_signal(pf_jobs_t *j, int sfd, int *code, pid_t *from)
{
    if (sfd < 0) {
        siginfo_t si;
        int sig = sigwaitinfo(&j->relayed, &si);
        *code = si.si_code;
        *from = si.si_pid;
        return sig > 0 ? sig : 0;
    }
    struct pollfd p[2] = {{.fd = sfd, .events = POLLIN}, {.fd = watched_fd, .events = POLLIN}};
    if (poll(p, watched_fd >= 0 ? 2 : 1, -1) <= 0)
        return 0;
    if (watched_fd >= 0 && p[1].revents)
        watched_fn(watched_arg);
    struct signalfd_siginfo si;
    if (!(p[0].revents & POLLIN) || read(sfd, &si, sizeof si) != (ssize_t)sizeof si)
        return 0;
    *code = si.ssi_code;
    *from = (pid_t)si.ssi_pid;
    return (int)si.ssi_signo;
}

int pf_jobs_wait(pf_jobs_t *j, pid_t pid, int *status)
{
    if (!j->same_group)
        setpgid(pid, pid);  /* also here, so no signal relayed to the group finds it not yet made */
    int rc = 0;
    int sfd = signalfd(-1, &j->relayed, SFD_CLOEXEC);
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG | WUNTRACED | WCONTINUED);
        if (r == pid) {
            if (WIFSTOPPED(*status))
                stop_like(j, pid, WSTOPSIG(*status));
            if (WIFSTOPPED(*status) || WIFCONTINUED(*status))
                continue;
            break;
        }
        if (r < 0 && errno != EINTR) {
            fprintf(stderr, "pyflow: waiting for the program failed: %s\n", strerror(errno));
            rc = -1;
            break;
        }
        int code = 0;
        pid_t from = 0;
        int sig = next_signal(j, sfd, &code, &from);
        if (sig <= 0 || sig == SIGCHLD)
            continue;
        if (sig == SIGCONT)
            continue_program(j, pid);
        else if (!(code <= 0 && from == pid) && !(j->same_group && code > 0))
            kill(pid, sig);     /* not the program's own signal to its parent, nor the terminal's to both */
    }
    if (sfd >= 0)
        close(sfd);
    terminal_to(j, pid, j->own_pgrp);
    /* what arrived after the program ended was meant for it: dropped, not turned on pyflow */
    struct timespec zero = {0, 0};
    while (sigtimedwait(&j->relayed, NULL, &zero) > 0) {
    }
    sigprocmask(SIG_SETMASK, &j->old_mask, NULL);
    return rc;
}

static char *argv_area;
static size_t argv_area_len;

char **pf_jobs_keep_argv(int argc, char **argv)
{
    char **copy = calloc((size_t)argc + 1, sizeof *copy);
    if (!copy)
        return argv;
    size_t len = 0;
    int contiguous = 1;
    for (int i = 0; i < argc; i++) {
        copy[i] = strdup(argv[i]);
        if (!copy[i])
            return argv;
        if (i && argv[i] != argv[i - 1] + strlen(argv[i - 1]) + 1)
            contiguous = 0;
        len += strlen(argv[i]) + 1;
    }
    if (contiguous && argc > 0) {
        argv_area = argv[0];
        argv_area_len = len;
    }
    return copy;
}

void pf_jobs_hide_cmdline(pid_t program)
{
    if (!argv_area || argv_area_len < 8)
        return;
    char name[64];
    snprintf(name, sizeof name, "pyflow [profiling pid %d]", (int)program);
    if (strlen(name) >= argv_area_len)
        snprintf(name, sizeof name, "pyflow");
    memset(argv_area, 0, argv_area_len);
    memcpy(argv_area, name, strlen(name));
}
