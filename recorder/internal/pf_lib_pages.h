/* pf_lib_pages.h - the pages of the libraries pyflow brings into the program (libZydis, libunwind, liblzma)
 * that only their loading read, given back once start-up is over (pf_lib_pages.c).
 *
 * Loading a library reads its relocations and symbols and runs its initializers, and each first touch of
 * a file maps 64 KiB of it (the kernel's fault-around): libZydis's 62 KiB of relocations and its init code,
 * liblzma's (loaded as libunwind's dependency, never called), libunwind's symbols were 0.2-0.3 MiB of every
 * profiled program's RSS that nothing reads again until, if ever, the decoder or the unwinder runs. */
#ifndef PF_LIB_PAGES_H
#define PF_LIB_PAGES_H

#include <stdint.h>

/* Gives back the read-only, never-written segments' pages of those libraries (libunwind's code excepted:
 * under --native every stack walks through it). Called once, at the end of start-up. Returns the pages
 * given back. */
uint32_t pf_lib_pages_give_back(void);

#endif /* PF_LIB_PAGES_H */
