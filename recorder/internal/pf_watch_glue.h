/* pf_watch_glue.h - the runtime's side of watch/ (see pf_watch_glue.c). Every function is a no-op unless
 * PYFLOW_WATCH asked for watching and the machine allows it. */
#ifndef PF_WATCH_GLUE_H
#define PF_WATCH_GLUE_H

#include <signal.h>
#include <stddef.h>

#include "pf_rec_int.h"
#include "pf_watch.h"   /* pf_watch_on_free: the free hooks' inline disarm check */

/* pf_copies.c, after a copy was linked for a verdict: write watches on a word of each end (--watch=copies). */
void pf_watch_glue_copy(uint64_t copy_id, const void *dst, const void *src, size_t n) PF_HIDDEN;

/* From the constructor, after the profile is open. Returns 0, or -errno after saying once why watch is off. */
int pf_watch_glue_init(pf_tls_t *t) PF_HIDDEN;

/* From a visit that has something to do: starts watching this thread once, drains what its handlers
 * found, expires its copy watches, writes a waiting note. */
void pf_watch_glue_slow(pf_tls_t *t) PF_HIDDEN;

/* 1 while pf_watch_glue_slow may have anything to do (watch is on, or a note for the profile waits). */
extern int pf_watch_glue_wanted PF_HIDDEN;
/* A note for the profile (watch off, or emulated, and why) until the next visit writes it; "" when none. */
extern char pf_watch_glue_note[320] PF_HIDDEN;

/* pf_watch_glue_slow, called only when there is something for it: watch on and this thread not started
 * yet, pairs or armed copy watches of this thread (pf_watch_attention), a note. Every recorded event comes
 * here: three calls on each (the visit, the pending test, the expiry test) were 2.8% of an --exact
 * recording with copy watches on. */
static inline void pf_watch_glue_visit(pf_tls_t *t)
{
    if (PF_UNLIKELY(__atomic_load_n(&pf_watch_glue_wanted, __ATOMIC_RELAXED)) &&
        (!t->watch_started || pf_watch_attention || __atomic_load_n(&pf_watch_glue_note[0], __ATOMIC_RELAXED)))
        pf_watch_glue_slow(t);
}

/* In a fork child, after the runtime's own reset. */
void pf_watch_glue_fork_child(pf_tls_t *t) PF_HIDDEN;

/* Interpreter shutdown: stop sampling (shutdown is not the program's work) and drain this thread. */
void pf_watch_glue_stop(pf_tls_t *t) PF_HIDDEN;

#endif /* PF_WATCH_GLUE_H */
