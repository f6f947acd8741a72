/* pf_cfi.h - how to step out of the frame at an instruction address, read from the DWARF call frame
 * information (.eh_frame) that covers it: the rule libunwind's fast trace uses for "standard" x86-64
 * frames, kept in a process-wide table so that every thread shares what one has read (pf_cfi.c). */
#ifndef PF_CFI_H
#define PF_CFI_H

#include <stdint.h>

enum {
    PF_CFI_UNKNOWN = 0,     /* no FDE, or a rule the fast walk does not follow: ask libunwind */
    PF_CFI_STANDARD = 1,    /* CFA = rsp or rbp + cfa_off; return address at CFA - 8; rbp at CFA + rbp_off */
    PF_CFI_LAST = 2,        /* the return address is undefined: the outermost frame (_start, clone3) */
};

#define PF_CFI_RBP_KEPT 0   /* rbp_off when the frame leaves rbp as it found it */

typedef struct pf_cfi_rule {
    int32_t cfa_off;
    int16_t rbp_off;        /* where the caller's rbp was saved, from the CFA; PF_CFI_RBP_KEPT: not saved */
    uint8_t cfa_is_rbp;     /* the CFA is rbp-based (a frame-pointer frame), else rsp-based */
    uint8_t kind;           /* PF_CFI_* */
} pf_cfi_rule_t;

/* The rule at ip (an address inside the function: a return address less one). Lock-free; a miss reads the
 * FDE (through the loader's _dl_find_object and the object's .eh_frame_hdr) and files the answer for every
 * thread. */
pf_cfi_rule_t pf_cfi_rule(uint64_t ip);

/* The same from a signal handler, which may have interrupted this thread anywhere, the dynamic loader
 * included: the shared table only (not the thread's own page, which the interrupted code may be filling),
 * no lock, nothing given back (pf_eh_pages.h). */
pf_cfi_rule_t pf_cfi_rule_in_signal(uint64_t ip);

/* The unwinders have read no call frame information for a while (pf_eh_pages.h): a shared table that grew
 * on rules not stepped by since (a program's start-up) is swapped for a small empty one, which the rules
 * still in use fill again from the FDEs, once each. Not from a signal handler. */
void pf_cfi_quiet(void);

/* Code was unloaded (dlclose): its addresses may hold another library's from now on, so every rule kept
 * is dropped (an empty shared table; each thread's own on its next pf_cfi_renewed). Returns 0 when no more
 * tables can be made: rules may then be stale, and the caller must stop using them. */
int pf_cfi_forget(void);

/* Call before a walk's first pf_cfi_rule: 1 (once per thread) when rules were dropped since this thread's
 * last call, its own cache emptied now; the caller forgets whatever else it keeps by address. */
int pf_cfi_renewed(void);

/* Slots of the shared table in use now (tests). */
uint64_t pf_cfi_table_slots(void);

#endif /* PF_CFI_H */
