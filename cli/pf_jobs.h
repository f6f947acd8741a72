/* pf_jobs.h - signals and job control between pyflow and the program it runs, so that they behave as if
 * the program ran directly.
 *
 * The program runs in a process group of its own and, when pyflow was in the terminal's foreground, owns
 * the terminal: Ctrl-C, Ctrl-\ and Ctrl-Z reach the program (and its children) once, from the terminal,
 * and never pyflow. (One exception: pyflow in the foreground as one command of a pipeline, `pyflow run
 * app.py | less`. The program then stays in the pipeline's group, which keeps the terminal for all its
 * commands; the terminal's signals reach the program directly and pyflow does not relay them.) Whatever reaches pyflow instead (kill, killpg of pyflow's group, timeout, a shell's
 * `kill %1`) did not reach the program by the same act, so pyflow passes each such signal on exactly once,
 * every catchable one, and survives it itself. A program that stops (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU)
 * stops pyflow the same way, so the shell sees the job stopped; SIGCONT to pyflow continues the program's
 * group. pyflow's command line as `ps` and `pkill -f` read it no longer repeats the program's, so
 * `pkill -USR1 -f app.py` signals the program only. Signals the program sends pyflow (its parent) are not
 * sent back to it. */
#ifndef PF_JOBS_H
#define PF_JOBS_H

#include <signal.h>
#include <sys/types.h>

typedef struct pf_jobs {
    sigset_t relayed;   /* blocked in pyflow while the program runs, read from a signalfd */
    sigset_t old_mask;
    int tty;            /* the terminal pyflow had the foreground of (handed to the program), or -1 */
    int same_group;     /* the program stays in pyflow's group: a foreground pipeline (pf_jobs_prepare) */
    pid_t own_pgrp;
} pf_jobs_t;

/* Before fork: blocks the relayed signals (so none is lost between fork and the wait). */
void pf_jobs_prepare(pf_jobs_t *j);

/* In the child before exec: its own process group, the terminal if pyflow had it, the original mask. */
void pf_jobs_child(const pf_jobs_t *j);

/* After a failed fork: the original mask back. */
void pf_jobs_abandon(pf_jobs_t *j);

/* Waits for the program to end, relaying signals and stops. Returns 0 with its wait status, or -1 after
 * printing why. The terminal and the signal mask are pyflow's again on return. */
int pf_jobs_wait(pf_jobs_t *j, pid_t pid, int *status);

/* While the program runs, fn(arg) is called whenever fd is readable (-1: nothing watched). */
void pf_jobs_also_watch(int fd, void (*fn)(void *), void *arg);

/* Keeps a copy of argv for pyflow's own use and remembers where the original lies (call first in main). */
char **pf_jobs_keep_argv(int argc, char **argv);

/* Rewrites the original argv area (ps, /proc/PID/cmdline) to name pyflow only, once the program runs. */
void pf_jobs_hide_cmdline(pid_t program);

#endif /* PF_JOBS_H */
