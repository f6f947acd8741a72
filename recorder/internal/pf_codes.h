/* pf_codes.h - gives each Python code object seen in a stack a small id, and writes a PF_REC_CODE record
 * (file name, function name, first line, raw line table) the first time, so the reporter can turn
 * (code id, instruction offset) into file:line offline, never on the hot path.
 *
 * A code object's address can be reused after it dies, so a cached entry only matches when the object's
 * identity fields (see pf_pyframes.h) are the same pointers too; otherwise a new id is made.
 */
#ifndef PF_CODES_H
#define PF_CODES_H

#include <stdint.h>

#include "pf_rec_int.h"

/* Returns the id of code (>= 1), writing its CODE record into t's chunk first if it is new; returns 0 when
 * the code object cannot be described or the table is full (the frame is then reported as unknown). */
uint32_t pf_codes_id(pf_tls_t *t, const void *code);

/* The id of a code object already seen, or 0: lock-free and writes nothing, so a signal handler may call
 * it on a code object of its own thread's live frames. */
uint32_t pf_codes_lookup(const void *code);

/* Drops from a captured stack (frames[0..n), innermost first) the import machinery's frames
 * (<frozen importlib._bootstrap>, _bootstrap_external) between its innermost and its outermost frame; returns
 * the frames left. The reporter shows none of them (no file a user can open; Python's tracebacks leave them
 * out too) and charges to one only when it is the innermost (the machinery itself allocated) or the
 * outermost (the interpreter's own start-up imports, whose stacks begin in the machinery): those two are
 * kept. They were 80% of the frames of the stacks importing numpy makes, each nested import adding six.
 * Known only once a machinery code object has been described (pf_codes_id): until then frames are kept.
 * The frame reader leaves out the first two files' frames as it walks (pf_codes_machinery_files); this
 * pass runs only for a process that has more (where several interpreters each load the machinery's
 * modules with file name objects of their own, if ever). No test reaches it: the probe's test_dropping
 * covers the walk's rule, which this loop repeats for the other files. */
int pf_codes_drop_machinery(pf_pyframe_t *frames, int n);

/* The machinery's first two file name objects into files[0..2) (NULL where fewer are known), for the frame
 * reader to leave their frames out as it walks (pf_pyframes_api_t's capture_hinted). Returns how many are
 * known: past two, pf_codes_drop_machinery leaves out the others' frames after the walk. */
uint32_t pf_codes_machinery_files(const void *files[2]);

/* 1 when id is the id of code as it is now (the same object, not another one at its address since). code
 * must be a code object (a captured frame's). */
int pf_codes_same(uint32_t id, const void *code);

/* Field k (0-2) of a code object's identity, as identify() gives it (pf_pyframes.h), read in place: a load,
 * not a call into the frame reader. */
static inline const void *pf_code_identity(const void *code, int k)
{
    return *(const void *const *)((const char *)code + pf_cfg.py->identity_offset[k]);
}

/* In a fork child: forget every id (the child's file has none of the parent's CODE records). */
void pf_codes_reset(void);

void pf_codes_fork_prepare(void);
void pf_codes_fork_parent(void);

#endif /* PF_CODES_H */
