/* pf_eh_pages.h - the pages of call frame information (.eh_frame_hdr, .eh_frame) that pyflow's unwinders
 * fault in, given back once the unwinders stop reading them (pf_eh_pages.c).
 *
 * Under --native a miss in the rule table (pf_cfi.c) and libunwind's checks of new stacks read the FDEs of
 * the interpreter, libc and every library a stack passes through. The program itself never reads them
 * (short of a C++ exception), and each first touch maps a 64 KiB window of the file (the kernel's fault-
 * around): 320 KiB of the interpreter's and 140 KiB of libc's stayed in the program's RSS for the whole run
 * of `--exact --native` on a small program, a fifth of what pyflow added to it. */
#ifndef PF_EH_PAGES_H
#define PF_EH_PAGES_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>

#include "pf_recorder.h"

/* Files the span of obj's call frame information (from the module scan, pf_modules.c): the whole pages
 * from its .eh_frame_hdr to the end of the read-only segment that holds it. An object whose span could be
 * written (a writable or RELRO segment over it, text relocations) is left out; size is dl_iterate_phdr's. */
void pf_eh_pages_add(const struct dl_phdr_info *obj, size_t size);

/* An unwinder read the call frame information of the objects holding ips[0..n): their spans are given back
 * after the next quiet spell. Async-signal-safe. */
void pf_eh_pages_read(const uint64_t *ips, int n);

/* After a read: gives the spans back at once when the interpreter is finalizing (pf_eh_pages_finalizing),
 * else nothing. */
void pf_eh_pages_read_done(void);

/* The interpreter began finalizing: the program's memory is at its largest (nothing torn down yet) and
 * teardown runs code no stack passed through before, whose reads would otherwise stay until exit (a 256 KiB
 * rise of the peak at the end of a small program). From now on each read's span is given back as it ends. */
void pf_eh_pages_finalizing(void);

/* Spans read since they were last given back (0: nothing to do). */
extern uint32_t pf_eh_pages_pending;

void pf_eh_pages_quiet_step(void);

/* Called at every stack captured (pf_record.c) and every chunk a thread takes for its records (pf_writer.c):
 * once PF_EH_PAGES_QUIET_TICKS ticks of this thread, or PF_EH_PAGES_QUIET_NS, passed with no read by any
 * thread, the spans read are given back (madvise MADV_DONTNEED: clean file pages, mapped again from the page
 * cache if an unwinder reads them again). Under --exact a stack is every allocation, so the pages
 * go within a millisecond of the last new stack, before most programs reach their peak; in the sampled mode
 * and under --exact alone (copy watches' traps unwind) the time decides. One load while nothing is pending. */
#define PF_EH_PAGES_QUIET_TICKS 1024u
#define PF_EH_PAGES_QUIET_NS 20000000ull
static inline void pf_eh_pages_tick(void)
{
    if (PF_UNLIKELY(__atomic_load_n(&pf_eh_pages_pending, __ATOMIC_RELAXED)))
        pf_eh_pages_quiet_step();
}

/* dlclose (interpose/pf_hooks_dl.c): begin = 1 before the real call, no span is given back until the call
 * after it (begin = 0), which says whether the loader removed an object; once one was, none is again. */
void pf_eh_pages_unloading(int begin, int removed);

/* Spans filed, spans given back so far (tests). */
uint32_t pf_eh_pages_spans(void);
uint32_t pf_eh_pages_released(void);

/* Forget every span (fork child keeps them: the same mappings; tests only). */
void pf_eh_pages_reset(void);

#endif /* PF_EH_PAGES_H */
