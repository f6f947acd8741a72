/* pf_file_pages.h - whether pages of a loaded object's file mapping can be given back to the kernel
 * (madvise MADV_DONTNEED): only if nothing can have written them, for then the kernel maps them again from
 * the file on the next read; a written page of a private mapping would be lost. Used by pf_eh_pages.c
 * (call frame information) and pf_lib_pages.c (start-up-only library code). */
#ifndef PF_FILE_PAGES_H
#define PF_FILE_PAGES_H

#include <link.h>
#include <stdint.h>

#define PF_FILE_PAGE 4096ull    /* what a span is rounded to (on larger pages the madvise fails: harmless) */

/* 1 when nothing can have written [lo, hi) of obj: no RELRO range over it (the loader writes those, then
 * makes them read-only) and no text relocations in obj (the loader writes read-only segments for them).
 * The caller has checked that the segment holding the range is not writable. */
static inline int pf_file_pages_never_written(const struct dl_phdr_info *obj, uint64_t lo, uint64_t hi)
{
    for (int i = 0; i < obj->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &obj->dlpi_phdr[i];
        uint64_t start = obj->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_GNU_RELRO && start < hi && start + ph->p_memsz > lo)
            return 0;
        if (ph->p_type == PT_DYNAMIC)
            for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)(uintptr_t)start; d->d_tag != DT_NULL; d++)
                if (d->d_tag == DT_TEXTREL || (d->d_tag == DT_FLAGS && (d->d_un.d_val & DF_TEXTREL)))
                    return 0;
    }
    return 1;
}

#endif /* PF_FILE_PAGES_H */
