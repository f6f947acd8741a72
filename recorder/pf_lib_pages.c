/* pf_lib_pages.c - giving back the pages only loading read, of the libraries pyflow brings (pf_lib_pages.h).
 *
 * madvise(MADV_DONTNEED) on a private file mapping that was never written only unmaps its pages: read
 * again (a decode, an unwind, a symbol lookup), they are mapped again from the page cache. So only
 * segments nothing can have written are given back: not writable, not under the RELRO range (written by
 * the loader, then made read-only), and not in a library with text relocations. pf_eh_pages.c gives back
 * the unwinders' reads of every object's call frame information the same way, as they happen.
 */
#include "pf_lib_pages.h"

#include <link.h>
#include <string.h>
#include <sys/mman.h>

#include "pf_file_pages.h"

typedef struct lib_rule {
    const char *prefix;     /* of the file's name */
    int code_too;           /* its executable segment as well */
} lib_rule_t;

static const lib_rule_t libs[] = {
    {"libZydis.so", 1},     /* loaded when watch starts (the decoder's init), then run only when a watch traps */
    {"liblzma.so", 1},      /* libunwind's dependency: its initializer only */
    {"libunwind.so", 0},    /* its code walks every --native stack */
};

static const lib_rule_t *rule_of(const char *path)
{
    const char *name = path ? strrchr(path, '/') : NULL;
    name = name ? name + 1 : path;
    for (size_t i = 0; name && i < sizeof libs / sizeof libs[0]; i++)
        if (strncmp(name, libs[i].prefix, strlen(libs[i].prefix)) == 0)
            return &libs[i];
    return NULL;
}

static int give_back(struct dl_phdr_info *obj, size_t size, void *arg)
{
    (void)size;
    const lib_rule_t *rule = rule_of(obj->dlpi_name);
    if (!rule)
        return 0;
    for (int i = 0; i < obj->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &obj->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W) || ((ph->p_flags & PF_X) && !rule->code_too))
            continue;
        /* a segment's pages are its own: the loader maps each with its own protection */
        uint64_t lo = (obj->dlpi_addr + ph->p_vaddr) & ~(PF_FILE_PAGE - 1);
        uint64_t hi = (obj->dlpi_addr + ph->p_vaddr + ph->p_filesz) & ~(PF_FILE_PAGE - 1);
        if (lo < hi && pf_file_pages_never_written(obj, lo, hi) &&
            madvise((void *)(uintptr_t)lo, (size_t)(hi - lo), MADV_DONTNEED) == 0)
            *(uint32_t *)arg += (uint32_t)((hi - lo) / PF_FILE_PAGE);
    }
    return 0;
}

uint32_t pf_lib_pages_give_back(void)
{
    uint32_t pages = 0;
    dl_iterate_phdr(give_back, &pages);
    return pages;
}
