/* pf_workdir.h - the private directory a run records into.
 *
 * Every run records into a directory of its own, made with mode 0700 and a random name: the launcher creates
 * the root profile in it (and keeps its descriptor), the runtime puts each child's PROFILE.<pid> beside it.
 * Nobody else can add, swap or link anything there, so what the launcher reads back and removes is only
 * what this run made. Without -o it sits in $TMPDIR and goes at the end; with -o it sits beside the output
 * (same file system), and at the end its files are moved to their names there (pf_workdir_publish). */
#ifndef PF_WORKDIR_H
#define PF_WORKDIR_H

#include <limits.h>

#include "pf_out.h"

#define PF_WORKDIR_HELD 256

typedef struct pf_workdir {
    int parentfd;               /* the directory it was made in */
    int fd;                     /* the directory itself */
    char name[300];             /* its name in parentfd */
    char profile[PATH_MAX];     /* .../profile.pflow, for the runtime (PYFLOW_OUTPUT) and the reader */
    int profile_fd;             /* the root profile, created here: the trailer and a copy go through it */
    int inotify_fd;             /* new child profiles, opened as they appear (pf_workdir_hold_new) */
    struct pf_held { int fd; char name[64]; } held[PF_WORKDIR_HELD];
    int n_held;
} pf_workdir_t;

/* Makes the directory in parent_path (held open as parentfd, taken over by w) with names beginning with
 * prefix, and the empty root profile in it. Returns 0, or -errno (nothing left behind). */
int pf_workdir_make(pf_workdir_t *w, int parentfd, const char *parent_path, const char *prefix);

/* Starts noticing child profiles as they are created (returns a descriptor to poll, or -1), and opens
 * those created since (pf_workdir_hold_new, for pf_jobs_also_watch): held open, they survive the program
 * removing the directory. At most PF_WORKDIR_HELD are held. */
int pf_workdir_watch(pf_workdir_t *w);
void pf_workdir_hold_new(void *w);

/* After the program's main process ended: waits for the processes whose profiles are here (and those held)
 * to end too, so that the report is made from finished files. It waits while they are at work (one of them
 * used CPU time in the last grace_ms), at most most_ms, or until SIGINT (Ctrl-C), and says so on stderr
 * once the wait passes PF_CHILDREN_SAY_MS. Fills running (room for max) with those still running then and returns how many there
 * were. */
#define PF_CHILDREN_SAY_MS 2000
size_t pf_workdir_wait_children(pf_workdir_t *w, unsigned grace_ms, unsigned most_ms, long *running, size_t max);

/* Moves the run's profiles to the -o output: PROFILE.<pid> files to OUT.<pid> (OUT.<pid>.<n> when that
 * name is taken: no file is replaced), then the root over OUT in one rename. An output that is a device or
 * a FIFO gets a copy of the root profile. Returns 0, or -1 after printing why (the files stay here). */
int pf_workdir_publish(pf_workdir_t *w, pf_out_t *out);

/* After the run: when the program removed the directory (or the root profile in it), a new one is made
 * with copies of the root profile and of the child profiles held, read through the descriptors pyflow
 * kept, and said so on stderr. Returns 0, or -1 when nothing could be recovered. */
int pf_workdir_recover(pf_workdir_t *w);

/* Closes the descriptors, leaving the files (a profile that could not be moved into place). */
void pf_workdir_release(pf_workdir_t *w);

/* Removes this run's files, then the directory, and closes the descriptors. */
void pf_workdir_remove(pf_workdir_t *w);

#endif /* PF_WORKDIR_H */
