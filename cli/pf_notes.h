/* pf_notes.h - messages from the program's child processes (pf_runtime.h, PF_NOTES_NAME): why a child was
 * not profiled (it runs as another user, in a chroot, its profile directory was removed), a full disk.
 * They arrive on a socket the launcher holds, never on the program's stderr; the launcher keeps them in the
 * profile (PF_REC_NOTE records in its trailer), so every report of it names them, and prints them itself
 * when no text report does. */
#ifndef PF_NOTES_H
#define PF_NOTES_H

#include <stddef.h>
#include <stdio.h>

typedef struct pf_notes {
    char **lines;       /* "child process PID (COMM): TEXT", each distinct message once */
    size_t n;
} pf_notes_t;

/* Binds the socket for run_id (close-on-exec: the program never sees it). Returns it, or -1. */
int pf_notes_open(unsigned long long run_id);

/* Reads what arrived (control characters shown as '?'), at most a screenful and a line counting the rest,
 * and closes the socket (fd -1: none). */
void pf_notes_collect(int fd, pf_notes_t *out);

/* Adds a line of the launcher's own (out of memory: dropped). */
void pf_notes_add(pf_notes_t *out, const char *text);

/* Each line, after "pyflow: ". */
void pf_notes_print(const pf_notes_t *notes, FILE *out);

void pf_notes_free(pf_notes_t *notes);

#endif /* PF_NOTES_H */
