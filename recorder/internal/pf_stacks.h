/* pf_stacks.h - interned call stacks (format: PF_REC_STACK in core/pf_format.h).
 *
 * A recorded allocation or copy usually repeats a stack recorded before, and the stack is most of its
 * record. The first time a stack is recorded it gets an id and a STACK record in the calling thread's chunk;
 * ALLOC and COPY records then carry the 8-byte id instead of 100-500 bytes of frames. Lookups are lock-free
 * (entries are published once, after their STACK record, and never change) and compare a 128-bit hash of
 * the stack and its frame counts (no copy of the frames is kept in the program's memory; pf_stacks.c says
 * why and how unlikely a shared id is); a miss takes one lock.
 */
#ifndef PF_STACKS_H
#define PF_STACKS_H

#include <stdint.h>

#include "pf_rec_int.h"

/* The id of st (>= 1), writing its STACK record into t's chunk first when it is new. Returns 0 when the
 * stack should be written inline: it is empty, the table or its memory is full, or the record could not be
 * written. Slow paths only (takes a lock on a miss): not from a signal handler. */
uint32_t pf_stacks_id(pf_tls_t *t, const pf_stack_t *st);

/* The id st was interned under, or 0 when it is new (lock-free; nothing written). st's code ids are set. */
uint32_t pf_stacks_known(const pf_stack_t *st);

/* 1 when id is the interned stack of this raw capture (frames: code objects and offsets, innermost first;
 * then native IPs), its code objects the ones their ids were given to; the frames' code ids and offsets
 * are then copied into py. Lock-free: the thread's stack cache checks its guess with it. */
int pf_stacks_match(uint32_t id, const pf_pyframe_t *frames, uint16_t n_py, const uint64_t *native,
                    uint16_t n_native, pf_rec_pyframe_t *py);

/* Writes st after a record's fixed part: a pf_rec_stack_ref_t when id != 0, else the frames inline.
 * Returns the bytes that follow the fixed part (for the record size), or writes when dst != NULL. */
uint32_t pf_stacks_tail_bytes(const pf_stack_t *st, uint32_t id);
void pf_stacks_store_tail(const pf_stack_t *st, uint32_t id, void *dst);

/* A record's stack fields for st under id: PF_ALLOC_STACK_REF added to *flags and no inline frames when
 * id != 0, else st's counts. ALLOC and COPY share them. */
static inline void pf_stacks_fields(const pf_stack_t *st, uint32_t id, uint8_t *flags, uint16_t *n_py,
                                    uint16_t *n_native)
{
    *flags |= st->flags | (id ? PF_ALLOC_STACK_REF : 0);
    *n_py = id ? 0 : st->n_py;
    *n_native = id ? 0 : st->n_native;
}

/* In a fork child: forget every id (the child's file has none of the parent's STACK records). */
void pf_stacks_reset(void);

void pf_stacks_fork_prepare(void);
void pf_stacks_fork_parent(void);

#endif /* PF_STACKS_H */
