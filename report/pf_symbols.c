/* pf_symbols.c - ELF symbol tables for offline symbolization (see pf_symbols_int.h). Every offset read
 * from a file is bounds-checked: the files are whatever was at those paths when the report runs. */
#include "pf_symbols_int.h"

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pf_runtime_libs.h"
#include "pf_util_int.h"

typedef struct sym {
    uint64_t addr, size;
    char *name;
} sym_t;

typedef struct table {
    char *path;
    sym_t *syms;
    size_t n, cap;
} table_t;

struct pf_symbols {
    table_t *tables;
    size_t n, cap;
};

pf_symbols_t *pf_symbols_new(void)
{
    return pf_xcalloc(1, sizeof(pf_symbols_t));
}

void pf_symbols_free(pf_symbols_t *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        for (size_t k = 0; k < s->tables[i].n; k++)
            free(s->tables[i].syms[k].name);
        free(s->tables[i].syms);
        free(s->tables[i].path);
    }
    free(s->tables);
    free(s);
}

static int cmp_sym(const void *a, const void *b)
{
    const sym_t *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Adds the FUNC symbols of one symbol table section. */
static void read_section(table_t *t, const unsigned char *data, size_t size, const Elf64_Shdr *sh,
                         const Elf64_Shdr *shdrs, uint16_t shnum)
{
    if (sh->sh_link >= shnum || sh->sh_entsize != sizeof(Elf64_Sym))
        return;
    const Elf64_Shdr *strs = &shdrs[sh->sh_link];
    if (sh->sh_offset > size || sh->sh_size > size - sh->sh_offset || strs->sh_offset > size ||
        strs->sh_size > size - strs->sh_offset)
        return;
    const char *names = (const char *)data + strs->sh_offset;
    size_t count = sh->sh_size / sizeof(Elf64_Sym);
    for (size_t i = 0; i < count; i++) {
        Elf64_Sym s;
        memcpy(&s, data + sh->sh_offset + i * sizeof s, sizeof s);
        if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || !s.st_value || s.st_name >= strs->sh_size)
            continue;
        sym_t *slot = PF_VEC_PUSH(t->syms, t->n, t->cap);
        slot->addr = s.st_value;
        slot->size = s.st_size;
        slot->name = pf_xstrndup(names + s.st_name, strnlen(names + s.st_name, strs->sh_size - s.st_name));
    }
}

static void load_table(table_t *t)
{
    int fd = open(t->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        close(fd);
        return;
    }
    size_t size = (size_t)st.st_size;
    unsigned char *data = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (data == MAP_FAILED)
        return;
    Elf64_Ehdr eh;
    memcpy(&eh, data, sizeof eh);
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
        eh.e_shentsize == sizeof(Elf64_Shdr) && eh.e_shoff < size &&
        (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) <= size - eh.e_shoff) {
        Elf64_Shdr *shdrs = pf_xmalloc((size_t)eh.e_shnum * sizeof *shdrs + 1);
        memcpy(shdrs, data + eh.e_shoff, (size_t)eh.e_shnum * sizeof *shdrs);
        int have_symtab = 0;
        for (uint16_t i = 0; i < eh.e_shnum; i++)
            have_symtab |= shdrs[i].sh_type == SHT_SYMTAB;
        for (uint16_t i = 0; i < eh.e_shnum; i++)
            if (shdrs[i].sh_type == (have_symtab ? SHT_SYMTAB : SHT_DYNSYM))
                read_section(t, data, size, &shdrs[i], shdrs, eh.e_shnum);
        free(shdrs);
    }
    munmap(data, size);
    if (t->n)
        qsort(t->syms, t->n, sizeof *t->syms, cmp_sym);
}

static table_t *table_for(pf_symbols_t *s, const char *path)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->tables[i].path, path) == 0)
            return &s->tables[i];
    table_t *t = PF_VEC_PUSH(s->tables, s->n, s->cap);
    t->path = pf_xstrndup(path, strlen(path));
    load_table(t);
    return t;
}

const char *pf_symbols_name(pf_symbols_t *s, const char *path, uint64_t vaddr, char *out, size_t size)
{
    const char *slash = strrchr(path, '/');
    const char *lib = slash ? slash + 1 : path;
    table_t *t = table_for(s, path);
    size_t lo = 0, hi = t->n;
    while (lo < hi) {       /* first symbol above vaddr */
        size_t mid = (lo + hi) / 2;
        if (t->syms[mid].addr <= vaddr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0) {
        const sym_t *sy = &t->syms[lo - 1];
        if (!sy->size || vaddr < sy->addr + sy->size) {
            snprintf(out, size, "%s (%s)", sy->name, lib);
            return out;
        }
    }
    snprintf(out, size, "0x%llx (%s)", (unsigned long long)vaddr, lib);
    return out;
}

size_t pf_symbols_stack(pf_symbols_t *s, const pf_symbols_module_t *mods, size_t n_mods, const uint64_t *ips,
                        size_t n, char **out)
{
    for (size_t i = 0; i < n; i++) {
        char name[512];
        uint64_t ip = ips[i] - (i > 0 && ips[i] > 0);   /* a return address points after its call */
        snprintf(name, sizeof name, "0x%llx (?)", (unsigned long long)ips[i]);
        for (size_t k = 0; k < n_mods; k++)
            if (ip >= mods[k].start && ip < mods[k].end) {
                pf_symbols_name(s, mods[k].path, ip - mods[k].load_bias, name, sizeof name);
                break;
            }
        out[i] = pf_xstrndup(name, strlen(name));
    }
    return n;
}

int pf_symbols_is_runtime_library(const char *path)
{
    return pf_path_is_runtime_library(path);
}
