/* pf_record_packed.h - exact allocations and frees as packed events (PF_REC_PACKED, core/pf_packed.h).
 *
 * A thread appends each event to the packed record it has open at the end of its chunk; the record stays
 * open only while nothing else is written after it: any other record, a new chunk, a chunk handed on as
 * the thread ends, a fork child's new file, each leaves the thread's chunk position elsewhere, and the next
 * event then opens a new packed record there. So the records of a chunk keep the order the events had.
 */
#ifndef PF_RECORD_PACKED_H
#define PF_RECORD_PACKED_H

#include <stdint.h>

#include "pf_rec_int.h"

/* The ALLOC_SHORT that an exact allocation with an interned stack would be (flags: PF_ALLOC_EXACT and the
 * stack's PF_ALLOC_NO_PYSTATE / PF_ALLOC_TRUNCATED), as a packed event. Returns 0, 1 when it is not one
 * that packs (write the ALLOC_SHORT instead), or -1 when no room could be had (the drop is counted). */
int pf_packed_alloc(pf_tls_t *t, void *p, uint32_t size, int domain, uint8_t flags, uint32_t stack_id);

/* The FREE of p (a block of size bytes) with that aux (PF_FREE_AUX, PF_FREE_BY_REALLOC), as a packed event.
 * Returns as above. */
int pf_packed_free(pf_tls_t *t, void *p, uint64_t size, uint16_t aux);

/* Forgets the thread's open record (a fork child: the parent's file). */
static inline void pf_packed_forget(pf_tls_t *t)
{
    t->packed_rec = NULL;
}

#endif /* PF_RECORD_PACKED_H */
