/* pf_modules.h - PF_REC_MODULE records: which loaded object each native instruction pointer belongs to,
 * so the reporter can symbolize offline. Objects are enumerated with dl_iterate_phdr when an address outside
 * every known object shows up (a library loaded later with dlopen), and written once per object. */
#ifndef PF_MODULES_H
#define PF_MODULES_H

#include <stdint.h>

#include "pf_rec_int.h"

/* Makes sure every ips[i] lies in an object already written to the profile. */
void pf_modules_note(pf_tls_t *t, const uint64_t *ips, int n);

/* 1 when ip lies in libpyflow.so itself (its frames are dropped from native stacks). */
int pf_modules_is_self(uint64_t ip);

/* The executable segment [lo, hi) of the loaded object that contains code. Returns 1, or 0 when none does. */
int pf_modules_text_range(const void *code, uint64_t *lo, uint64_t *hi);

/* Forget what was written (fork child: a new file). */
void pf_modules_reset(void);

#endif /* PF_MODULES_H */
