/* pf_jobs.c - signals and job control as if the program ran directly (pf_jobs.h). */
#include "pf_jobs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

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
}

void pf_jobs_child(const pf_jobs_t *j)
{
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
    kill(-pid, SIGCONT);
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

int pf_jobs_wait(pf_jobs_t *j, pid_t pid, int *status)
{
    setpgid(pid, pid);  /* also here, so no signal relayed to the group finds it not yet made */
    int rc = 0;
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
        siginfo_t si;
        int sig = sigwaitinfo(&j->relayed, &si);
        if (sig <= 0 || sig == SIGCHLD)
            continue;
        if (sig == SIGCONT)
            continue_program(j, pid);
        else if (!(si.si_code <= 0 && si.si_pid == pid))   /* not the program's own signal to its parent */
            kill(pid, sig);
    }
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
