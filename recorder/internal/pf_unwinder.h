/* pf_unwinder.h - libunwind, started once in a known state, its descriptors out of the program's way. */
#ifndef PF_UNWINDER_H
#define PF_UNWINDER_H

/* Starts libunwind now (at runtime start, not in the first trap's signal handler) for --native stacks and
 * watch's hybrid paths. Idempotent. */
void pf_unwinder_start(void);

#endif /* PF_UNWINDER_H */
