/* pf_fd.h - where pyflow's own long-lived descriptors (the profile file, perf events) go: out of the
 * program's way, so that its open() returns the numbers, and reaches the limit, it would without pyflow.
 */
#ifndef PF_FD_H
#define PF_FD_H

/* Moves fd to a number the program does not use and closes the original; returns the descriptor to use
 * (close-on-exec, like the original), or fd itself where no better place exists. Async-signal-safe. */
int pf_fd_high(int fd);

/* How many descriptors pyflow may hold out of the program's way at once (at least 64). */
int pf_fd_room(void);

/* In a fork child: the placement lock may have been held by a thread that no longer exists. */
void pf_fd_fork_child(void);

#endif /* PF_FD_H */
