/* pf_symbols_int.h - native symbolization, offline: instruction pointers recorded in the profile are turned
 * into "symbol (library)" by reading the ELF symbol tables (.symtab, else .dynsym) of the loaded objects
 * named by PF_REC_MODULE records. Tables are read once per path and cached. */
#ifndef PF_SYMBOLS_INT_H
#define PF_SYMBOLS_INT_H

#include <stddef.h>
#include <stdint.h>

typedef struct pf_symbols pf_symbols_t;

pf_symbols_t *pf_symbols_new(void);
void pf_symbols_free(pf_symbols_t *s);

/* Writes "symbol (library)" for the file address vaddr of the ELF object at path into out, or
 * "0x<vaddr> (library)" when no symbol covers it. Returns out. */
const char *pf_symbols_name(pf_symbols_t *s, const char *path, uint64_t vaddr, char *out, size_t size);

/* One executable mapping of a process (from a PF_REC_MODULE record): [start, end) at runtime, and
 * file vaddr = runtime address - load_bias. */
typedef struct pf_symbols_module {
    uint64_t start, end, load_bias;
    const char *path;
} pf_symbols_module_t;

/* Symbolizes a native stack, innermost first, as "symbol (library)" (or "0x<vaddr> (library)", or
 * "0x<ip> (?)" outside every module) into out[0..n) (each malloc'd; the caller frees them). Frames after
 * the first hold return addresses: the call before them is what is named. Returns n; never fails
 * (allocation failure aborts). */
size_t pf_symbols_stack(pf_symbols_t *s, const pf_symbols_module_t *mods, size_t n_mods, const uint64_t *ips,
                        size_t n, char **out);

/* 1 when a library path is the interpreter, libc, the loader or pyflow itself: frames there are not the
 * "native site" of an allocation (the rule: core/pf_runtime_libs.h). */
int pf_symbols_is_runtime_library(const char *path);

#endif /* PF_SYMBOLS_INT_H */
