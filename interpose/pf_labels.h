/* pf_labels.h - what a distributed engine calls this process (host, rank, ...), recorded as
 * PF_MARK_PROCESS_LABEL notes ("key=value") so that the reporter can name each worker of a merged job. */
#ifndef PF_LABELS_H
#define PF_LABELS_H

#include <stddef.h>

#include "pf_rt_int.h"

/* Reads the host name (PYFLOW_HOST, else gethostname) and the engine's variables from the environment.
 * Called once at start; a fork child keeps its parent's (same host, same environment). */
void pf_labels_init(void) PF_HIDDEN;

/* The host name pf_labels_init found, cleaned for use in a file name ("localhost" when unknown). */
const char *pf_labels_host(void) PF_HIDDEN;

/* Writes the labels into the current profile file, once per file (writer generation): from the slow path,
 * after the thread's first record, so they land in a chunk that has a writer. */
void pf_labels_write(pf_tls_t *t, unsigned gen) PF_HIDDEN;

#endif /* PF_LABELS_H */
