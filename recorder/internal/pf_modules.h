/* pf_modules.h - PF_REC_MODULE records: which loaded object each native instruction pointer belongs to,
 * so the reporter can symbolize offline. Objects are enumerated with dl_iterate_phdr when an address outside
 * every known object shows up (a library loaded later with dlopen), and written once per object. */
#ifndef PF_MODULES_H
#define PF_MODULES_H

#include <stdint.h>

#include "pf_rec_int.h"

/* Makes sure every ips[i] lies in an object already written to the profile. */
void pf_modules_note(pf_tls_t *t, const uint64_t *ips, int n);

/* How many of a native stack's frames (ips, innermost first) to keep: down to the innermost one in a
 * library of the program's choosing (not the interpreter, libc, pyflow: core/pf_runtime_libs.h), the
 * frame the reporter names as the stack's native site; 0 when there is none before the innermost frame of
 * the interpreter's loop (pf_modules_in_eval_loop). The frames beyond it are never read (the reporter
 * stops there), and keeping them made every interpreter path through an import a stack of its own:
 * importing numpy under --exact --native wrote 42,000 native parts of 58 frames. The frames beyond the
 * interpreter's loop are the callers of the Python code running there (a C library calling back into
 * Python: ctypes' callbacks, numpy's object loops), which the Python frames already show; a site among
 * them did not make the allocation. An ip in no known object scans the loaded objects again if any were
 * added since the last scan. */
int pf_modules_native_cut(pf_tls_t *t, const uint64_t *ips, int n);

/* For the walk's remembered stacks (pf_unwinder.c), which give the same IPs again and again: site_at[i]
 * (i <= n, n < 255) is the index of the first native site at or after ips[i], or PF_NO_SITE; so the cut of
 * the IPs from i on is site_at[i] - i + 1 (0 with none) without looking at each IP again. */
#define PF_NO_SITE 0xFFu
void pf_modules_sites(pf_tls_t *t, const uint64_t *ips, int n, uint8_t *site_at);

/* The text of the interpreter's loop (_PyEval_EvalFrameDefault), [pf_eval_lo, pf_eval_hi); both 0 until
 * pf_modules_find_eval_loop found it (or where the interpreter does not export it: then no frame is in
 * it, and a native stack is cut at its site alone). */
extern uint64_t pf_eval_lo PF_HIDDEN, pf_eval_hi PF_HIDDEN;
void pf_modules_find_eval_loop(void);

/* 1 when ra, a return address (a native stack's IP), returns into the interpreter's loop: the call it
 * follows is inside it. */
static inline int pf_modules_in_eval_loop(uint64_t ra)
{
    return ra - 1 - pf_eval_lo < pf_eval_hi - pf_eval_lo;
}

/* 1 when ip lies in libpyflow.so itself (its frames are dropped from native stacks). */
int pf_modules_is_self(uint64_t ip);

/* The executable segment [lo, hi) of the loaded object that contains code. Returns 1, or 0 when none does. */
int pf_modules_text_range(const void *code, uint64_t *lo, uint64_t *hi);

/* Forget what was written (fork child: a new file). */
void pf_modules_reset(void);

#endif /* PF_MODULES_H */
