/* pf_rec_int.h - private to recorder/: what its modules share beyond pf_recorder.h (stack capture, the
 * copy verdicts and content records at free, the running counters, the sampling in effect). */
#ifndef PF_REC_INT_H
#define PF_REC_INT_H

#include <string.h>

#include "pf_recorder.h"

/* The recorder never calls an exported hook: every memcpy it makes, written out or emitted by the
 * compiler for a structure copy, is bound to pf_rec_memcpy (pf_recorder.c), which calls the real one
 * (pf_host.memcpy) instead of libpyflow.so's own memcpy hook. Small copies of a known size are still
 * inlined by the compiler. */
void *memcpy(void *dst, const void *src, size_t n) __asm__("pf_rec_memcpy") PF_HIDDEN;

void pf_copy_verdict_on_free(pf_tls_t *t, struct pf_objinfo *obj) PF_HIDDEN;
/* pf_content.c: a PF_REC_CONTENT record for a tracked object being freed (untouched pages, fingerprint). */
void pf_content_on_free(pf_tls_t *t, const struct pf_objinfo *o) PF_HIDDEN;
void pf_record_thread_reset(pf_tls_t *t) PF_HIDDEN;
/* pf_api.c: the running counters of pyflow_api.h, kept by the slow paths (a recorded allocation, the free
 * of a tracked one). */
void pf_api_on_alloc(int domain, uint64_t est) PF_HIDDEN;
void pf_api_on_free(const struct pf_objinfo *obj) PF_HIDDEN;
/* A fork child's one thread owns the counters' cells (a thread amid an update at the fork is gone). */
void pf_api_fork_child(pf_tls_t *t) PF_HIDDEN;
extern uint32_t pf_api_takeovers PF_HIDDEN;    /* the times a thread took the cells over (tests) */

/* The sampling mean and object threshold in effect for the configured ones: the mean raised 4^L-fold at
 * the profile's fill level L (pf_writer.h), and from level 1 on the threshold never below it. */
void pf_sampling_now(uint64_t base_mean, uint64_t base_threshold, uint64_t *mean, uint64_t *threshold) PF_HIDDEN;


/* Stack capture shared by ALLOC and COPY records: Python frames (with code ids) and native IPs. */
typedef struct pf_stack {
    uint16_t n_py;
    uint16_t n_native;
    uint8_t flags;                  /* PF_ALLOC_NO_PYSTATE / PF_ALLOC_TRUNCATED */
    uint32_t id;                    /* its interned id, when the thread's stack cache knew it; else 0 */
    uint64_t cache_key;             /* what the stack cache files it under (pf_record.c) */
    uint64_t hash;                  /* its hash in the interning table, once pf_stacks.c worked it out (a
                                       stack new to the thread is looked up there twice); 0: not yet */
    pf_rec_pyframe_t py[PF_MAX_PY_FRAMES];
    uint64_t native[PF_MAX_NATIVE_FRAMES];
} pf_stack_t;

/* Thread tid does something (records, takes a chunk): the first to claims *first; another one raises
 * *many for good. Relaxed: the callers' readers need no order with it (pf_clock.c, pf_writer.c). */
static inline void pf_note_thread(uint32_t *first, int *many, uint32_t tid)
{
    uint32_t none = 0;
    if (!__atomic_compare_exchange_n(first, &none, tid, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED) && none != tid)
        __atomic_store_n(many, 1, __ATOMIC_RELAXED);
}

void pf_stack_capture(pf_tls_t *t, pf_stack_t *st) PF_HIDDEN;
void pf_stack_capture_python(pf_tls_t *t, pf_stack_t *st) PF_HIDDEN;   /* n_native = 0 */
static inline uint32_t pf_stack_bytes(const pf_stack_t *st)
{
    return (uint32_t)st->n_py * sizeof(pf_rec_pyframe_t) + (uint32_t)st->n_native * 8u;
}
void pf_stack_store(const pf_stack_t *st, void *dst) PF_HIDDEN;
/* The interned id of st (pf_stacks.h), or 0: then st goes inline, and its native frames' modules are
 * written first. */
uint32_t pf_record_stack_id(pf_tls_t *t, const pf_stack_t *st) PF_HIDDEN;
/* Space for a record whose fixed part (after the header) is `fixed` bytes, followed by st as a stack
 * reference or inline (interning st first: pf_stacks.h). NULL when it cannot be written; *sid and *bytes
 * are what the record's fill and commit need. */
char *pf_record_reserve_stacked(pf_tls_t *t, const pf_stack_t *st, uint32_t fixed, uint32_t *sid,
                                uint32_t *bytes) PF_HIDDEN;
#endif /* PF_REC_INT_H */
