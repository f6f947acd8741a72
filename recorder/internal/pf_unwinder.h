/* pf_unwinder.h - native stacks: libunwind, started once in a known state, its descriptors out of the
 * program's way; and the fast walk that stands in for its unw_backtrace on the record path. */
#ifndef PF_UNWINDER_H
#define PF_UNWINDER_H

#include <stdint.h>

#include "pf_rec_int.h"

/* Starts libunwind now (at runtime start, not in the first trap's signal handler) for --native stacks and
 * watch's hybrid paths. Idempotent. */
void pf_unwinder_start(void);

/* The calling thread's native stack, innermost first, pyflow's own frames left out, at most max IPs (each
 * a return address, as unw_backtrace gives them) into out. Returns how many; *fast is 1 when the
 * fast walk gave them, 0 when libunwind did; *cut is pf_modules_native_cut's count of them, which the fast
 * walk keeps with the walks it remembers. */
int pf_unwinder_capture(pf_tls_t *t, uint64_t *out, int max, int *fast, int *cut);

/* The same stack from libunwind's unw_backtrace (from unw_step once code was unloaded), whatever the walk
 * in effect. */
int pf_unwinder_libunwind(uint64_t *out, int max);

/* The same stack by unw_step, frame by frame (pf_unwinder_step.c): what a fast walk is checked against. */
int pf_unwinder_stepped(uint64_t *out, int max);

/* The interrupted thread's stack from a signal handler's context uc (a ucontext_t), with the fast walk's
 * rules (pf_cfi_rule_in_signal) and none of libunwind: its lookups take the loader's lock through
 * dl_iterate_phdr, which a handler that interrupted the loader taking that very lock waited for forever.
 * ips[0] is the interrupted instruction, then each caller's return address, ending after the first in
 * [stop_lo, stop_hi) (the interpreter's loop, where Python frames take over), at a frame whose rule the
 * walk does not follow, or at max. Reads only the thread's own stack (t's bounds). Returns how many; -1
 * when the context is on another stack or the rules cannot be trusted (code unloaded too often). */
int pf_unwinder_signal_walk(const pf_tls_t *t, const void *uc, uint64_t *ips, int max, uint64_t stop_lo,
                            uint64_t stop_hi);

/* libunwind stepped through these frames (and pyflow's own): the call frame information of their objects
 * was read, and its pages are given back after a quiet spell (pf_eh_pages.h). */
void pf_unwinder_read_frames(const uint64_t *ips, int n);

/* libunwind's one-time set-up (its pipe opened), with no trace cache made (pf_unwinder_step.c). */
void pf_unwinder_set_up(void);

/* A fast walk gave another stack than libunwind (pf_record.c checks each stack new to a thread): from now on
 * every stack comes from libunwind. */
void pf_unwinder_disagreed(void);

#endif /* PF_UNWINDER_H */
