/* pf_out.h - the files pyflow writes for the user (-o, --json, --html, --dot, report -o), written so that
 * nothing pyflow did not create in this run is deleted, truncated or written through a link.
 *
 * A named output is checked before the program starts (pf_out_prepare) and written once, at the end:
 *   - a regular file (or a name not yet taken) is written to a temporary beside it and renamed over it, so a
 *     reader sees the old file or the whole new one, never half of it, and a symbolic link swapped in is
 *     replaced rather than followed;
 *   - an existing character device or FIFO (/dev/null, a named pipe with a reader) is opened once, for
 *     writing only, and written as it is: nothing replaces a device node;
 *   - /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N name a file pyflow already has open (links
 *     the system made): opened through the link, for writing only, and written as they are;
 *   - another symbolic link, a directory, a socket or a block device is refused with one line.
 * The directory is held open from the check on, and everything after it is relative to that descriptor. */
#ifndef PF_OUT_H
#define PF_OUT_H

#include <stdio.h>
#include <sys/types.h>

typedef struct pf_out {
    const char *what;       /* "JSON report", "profile", ... for messages */
    const char *path;       /* as given */
    int dirfd;              /* the directory it is in */
    char name[256];         /* its last component */
    int in_place;           /* an existing device or FIFO, written as it is */
    int descriptor;         /* /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N: pyflow's own open file */
    int existed;            /* a regular file was there when checked */
    char tmp[300];          /* the temporary being written, "" when none */
} pf_out_t;

/* Checks path as an output before anything runs. `script` (may be NULL) is the program's file, which an
 * output never replaces; `only_profile`: an existing regular file is replaced only when it is a pyflow
 * profile (-o). Returns 0, or -1 after printing one line. */
int pf_out_prepare(pf_out_t *o, const char *what, const char *path, const char *script, int only_profile);

/* Opens the output for writing (a FIFO waits for its reader here). Returns a descriptor, or -1 after
 * printing why. */
int pf_out_open(pf_out_t *o);

/* The same, as a stdio stream (NULL after printing why). */
FILE *pf_out_fopen(pf_out_t *o);

/* Ends the write of fd (closed here): ok, the temporary takes the output's name; else it is removed and
 * the output left as it was. Returns 0, or -1 after printing why. */
int pf_out_commit(pf_out_t *o, int fd, int ok);

/* pf_out_commit for a stream from pf_out_fopen (a failed fclose counts as not ok). */
int pf_out_fcommit(pf_out_t *o, FILE *f, int ok);

/* Releases the directory descriptor. */
void pf_out_release(pf_out_t *o);

/* A random hexadecimal tag for temporary names and run ids. */
unsigned long long pf_out_random(void);

#endif /* PF_OUT_H */
