/* pf_labels.h - what a distributed engine calls this process (host, rank, ...), recorded as
 * PF_MARK_PROCESS_LABEL notes ("key=value") so that the reporter can name each worker of a merged job. */
#ifndef PF_LABELS_H
#define PF_LABELS_H

#include <stddef.h>

#include "pf_rec_int.h"

/* pf_labels_init and pf_labels_host: pf_recorder.h. */

/* Writes the labels into the current profile file, once per file (writer generation): from the slow path,
 * after the thread's first record, so they land in a chunk that has a writer. */
void pf_labels_write(pf_tls_t *t, unsigned gen) PF_HIDDEN;

#endif /* PF_LABELS_H */
