/* pf_notes.h - messages from the program's child processes (pf_runtime.h, PF_NOTES_NAME): why a child was
 * not profiled (it runs as another user, in a chroot, its profile directory was removed), a full disk.
 * They arrive on a socket the launcher holds, never on the program's stderr, and are printed after the
 * report, each once. */
#ifndef PF_NOTES_H
#define PF_NOTES_H

#include <stdio.h>

/* Binds the socket for run_id (close-on-exec: the program never sees it). Returns it, or -1. */
int pf_notes_open(unsigned long long run_id);

/* Prints what arrived (control characters shown as '?') and closes the socket. */
void pf_notes_print(int fd, FILE *out);

#endif /* PF_NOTES_H */
