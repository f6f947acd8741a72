/* pf_cuda_lookup.c - the real CUDA functions behind pyflow's hooks (pf_hooks_cuda.c), and dlsym/dlvsym
 * interposed so that late-loaded CUDA is hooked and lookups stay truthful.
 *
 * Exporting was chosen over wrapping only what dlsym hands out: the PLT route is the one PyTorch's caching
 * allocator and every extension linked against libcudart take, and GOT patching would need a dlopen hook
 * that sees each library as it loads (pf_hooks_paths.c's passes the call on untouched, by a tail call, so
 * that glibc still searches the *caller's* RUNPATH).
 * The price of exporting is that pyflow's symbols could pose as a CUDA library, so the dlsym wrapper keeps
 * lookups truthful: when glibc's answer is pyflow's own hook (a global-scope lookup: RTLD_DEFAULT or the
 * main program's handle), the hook is returned only when a real definition is visible in the global scope
 * too (dlsym(RTLD_NEXT) from here); otherwise the lookup fails with dlerror() set, exactly as without
 * pyflow. So `dlsym(RTLD_DEFAULT, "cudaMalloc")` is NULL in a process without CUDA, and also in one that
 * loaded CUDA RTLD_LOCAL (ctypes' default), as it would be. RTLD_NEXT lookups are passed on by a tail call
 * (forced, also at -O0), so glibc still sees the original caller, the one thing RTLD_NEXT depends on.
 * A lookup on a library's handle that finds libc's allocator, copy or mapping functions is answered with
 * pyflow's hooks (pf_libc_lookup.c).
 *
 * The real function is the one a lookup saw, else the first definition in a loaded object other than this
 * one, found by reading each object's dynamic symbol table (GNU or SysV hash) inside dl_iterate_phdr: a
 * CUDA library loaded RTLD_LOCAL is invisible to dlsym(RTLD_NEXT), and calling dlopen from inside
 * dl_iterate_phdr could deadlock against a concurrent dlopen (the two loader locks taken in opposite
 * order). A hook reached with no CUDA loaded (a weak or lazily bound reference in a library that would
 * otherwise fail) returns cudaErrorInitializationError / CUDA_ERROR_NOT_INITIALIZED, as CUDA without a
 * driver does (pf_hooks_cuda.c's CALL).
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>

#include "pf_cuda_int.h"

#define PF_X_NAME(n) #n,
const char *const pf_cuda_fn_names[F_COUNT] = {PF_CUDA_FNS(PF_X_NAME)};

static void *real_fn[F_COUNT];              /* published with release once found */

/* ---- finding the real functions ---- */

static void *(*real_dlsym)(void *, const char *);
static void *(*real_dlvsym)(void *, const char *, const char *);
static void *elf_find(const char *name, const void *skip);
PF_EXPORT void *dlsym(void *handle, const char *name);
PF_EXPORT void *dlvsym(void *handle, const char *name, const char *version);
/* our own wrappers' addresses, even if another preload defines the names first */
extern __typeof__(dlsym) pf_self_dlsym __attribute__((alias("dlsym"), visibility("hidden"), copy(dlsym)));
extern __typeof__(dlvsym) pf_self_dlvsym __attribute__((alias("dlvsym"), visibility("hidden"), copy(dlvsym)));

/* glibc's dlsym and dlvsym, found in the symbol tables (default versions): asking the loader would
 * reach our own wrappers. Leaves them NULL when absent (then every lookup fails). */
static PF_NOINLINE void init_real_dlsym(void)
{
    pf_guard_enter(&pf_tls);
    void *v = elf_find("dlvsym", (const void *)pf_self_dlvsym);
    void *f = elf_find("dlsym", (const void *)pf_self_dlsym);
    pf_guard_leave(&pf_tls);
    __atomic_store_n(&real_dlvsym, (void *(*)(void *, const char *, const char *))v, __ATOMIC_RELEASE);
    __atomic_store_n(&real_dlsym, (void *(*)(void *, const char *))f, __ATOMIC_RELEASE);
}

static uint32_t gnu_hash(const char *s)
{
    uint32_t h = 5381;
    for (; *s; s++)
        h = h * 33 + (unsigned char)*s;
    return h;
}

static uint32_t sysv_hash(const char *s)
{
    uint32_t h = 0;
    for (; *s; s++) {
        h = (h << 4) + (unsigned char)*s;
        uint32_t g = h & 0xf0000000u;
        if (g)
            h ^= g >> 24;
        h &= ~g;
    }
    return h;
}

typedef struct elf_search {
    const char *name;
    uint32_t gnu, sysv;
    const void *skip;               /* the hook: a definition at this address is ours */
    void *found;
} elf_search_t;

/* The dynamic section's pointers are relocated in place by glibc, except in objects it did not relocate
 * (the vDSO): an address below the load base is still an offset. */
static const void *dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) p)
{
    return (const void *)(p < info->dlpi_addr ? p + info->dlpi_addr : p);
}

/* Whether symbol i is a usable definition of s->name: a default-visibility, default-version function.
 * Returns its address, or NULL. */
static void *elf_match(const struct dl_phdr_info *info, const elf_search_t *s, const ElfW(Sym) *syms,
                       const char *strs, const ElfW(Half) *versym, uint32_t i)
{
    const ElfW(Sym) *sym = &syms[i];
    if (sym->st_shndx == SHN_UNDEF || sym->st_value == 0 || ELF64_ST_TYPE(sym->st_info) != STT_FUNC ||
        ELF64_ST_BIND(sym->st_info) == STB_LOCAL || ELF64_ST_VISIBILITY(sym->st_other) == STV_HIDDEN ||
        ELF64_ST_VISIBILITY(sym->st_other) == STV_INTERNAL || (versym && (versym[i] & 0x8000)) ||
        strcmp(strs + sym->st_name, s->name) != 0)
        return NULL;
    void *addr = (void *)(info->dlpi_addr + sym->st_value);
    return addr == s->skip ? NULL : addr;
}

/* dl_iterate_phdr callback: looks s->name up in one object's dynamic symbol table, without the loader
 * (no dlopen, no locks). Returns 1 (stop) when found. */
static int search_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    elf_search_t *s = arg;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn)
        return 0;
    const ElfW(Sym) *syms = NULL;
    const char *strs = NULL;
    const uint32_t *gnu = NULL, *sysv = NULL;
    const ElfW(Half) *versym = NULL;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_SYMTAB: syms = dyn_ptr(info, dyn->d_un.d_ptr); break;
        case DT_STRTAB: strs = dyn_ptr(info, dyn->d_un.d_ptr); break;
        case DT_GNU_HASH: gnu = dyn_ptr(info, dyn->d_un.d_ptr); break;
        case DT_HASH: sysv = dyn_ptr(info, dyn->d_un.d_ptr); break;
        case DT_VERSYM: versym = dyn_ptr(info, dyn->d_un.d_ptr); break;
        }
    }
    if (!syms || !strs)
        return 0;
    if (gnu) {
        uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_size = gnu[2], shift = gnu[3];
        if (!nbuckets || !bloom_size)
            return 0;
        const ElfW(Addr) *bloom = (const ElfW(Addr) *)(gnu + 4);
        const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size);
        const uint32_t *chain = buckets + nbuckets;
        const unsigned bits = sizeof(ElfW(Addr)) * 8;
        ElfW(Addr) word = bloom[(s->gnu / bits) % bloom_size];
        ElfW(Addr) mask = ((ElfW(Addr))1 << (s->gnu % bits)) | ((ElfW(Addr))1 << ((s->gnu >> shift) % bits));
        if ((word & mask) != mask)
            return 0;
        uint32_t i = buckets[s->gnu % nbuckets];
        if (i < symoffset)
            return 0;
        for (;; i++) {
            uint32_t h = chain[i - symoffset];
            if ((h | 1) == (s->gnu | 1) && (s->found = elf_match(info, s, syms, strs, versym, i)))
                return 1;
            if (h & 1)
                return 0;
        }
    }
    if (sysv) {
        uint32_t nbucket = sysv[0];
        const uint32_t *bucket = sysv + 2, *chain = bucket + nbucket;
        if (!nbucket)
            return 0;
        for (uint32_t i = bucket[s->sysv % nbucket]; i != STN_UNDEF; i = chain[i])
            if ((s->found = elf_match(info, s, syms, strs, versym, i)))
                return 1;
    }
    return 0;
}

/* The first definition of name in a loaded object, in load order, other than the one at skip; NULL when
 * none. Takes no loader lock beyond dl_iterate_phdr's own. */
static void *elf_find(const char *name, const void *skip)
{
    elf_search_t s = {name, gnu_hash(name), sysv_hash(name), skip, NULL};
    dl_iterate_phdr(search_object, &s);
    return s.found;
}

/* The first definition of a hooked function in a loaded object other than pyflow, or NULL when no loaded
 * object defines it. Never returns a hook. */
static PF_NOINLINE void *real_slow(enum pf_cuda_fn fn)
{
    pf_guard_enter(&pf_tls);
    void *found = elf_find(pf_cuda_fn_names[fn], pf_cuda_hooks[fn]);
    pf_guard_leave(&pf_tls);
    if (found) {
        void *expected = NULL;
        if (!__atomic_compare_exchange_n(&real_fn[fn], &expected, found, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return expected;    /* a lookup published one first: use the same everywhere */
    }
    return found;
}

void *pf_cuda_real(enum pf_cuda_fn fn)
{
    void *f = __atomic_load_n(&real_fn[fn], __ATOMIC_ACQUIRE);
    return PF_LIKELY(f != NULL) ? f : real_slow(fn);
}

void pf_cuda_remember_real(enum pf_cuda_fn fn, void *f)
{
    void *expected = NULL;
    __atomic_compare_exchange_n(&real_fn[fn], &expected, f, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

/* ---- dlsym, dlvsym ---- */

/* Which hooked function a name is, or F_COUNT. A linear scan of 70 short names is fine here: dlsym
 * itself costs a symbol-table walk, and almost every name fails the first test. */
static enum pf_cuda_fn hooked_name(const char *name)
{
    if (!name || name[0] != 'c' || name[1] != 'u')
        return F_COUNT;
    for (int i = 0; i < F_COUNT; i++)
        if (strcmp(name, pf_cuda_fn_names[i]) == 0)
            return (enum pf_cuda_fn)i;
    return F_COUNT;
}

/* Sets dlerror() to an "undefined symbol" failure for name (a lookup in libc, which defines no CUDA
 * function) and returns NULL: callers such as ctypes pass dlerror()'s text on and must not get NULL. The
 * libc handle stays open (libc is never unloaded anyway): a dlclose after the lookup would clear the error. */
static PF_NOINLINE void *lookup_fails(const char *name)
{
    static void *libc;
    void *h = __atomic_load_n(&libc, __ATOMIC_ACQUIRE);
    if (!h) {
        h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
        void *expected = NULL;
        if (h && !__atomic_compare_exchange_n(&libc, &expected, h, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            dlclose(h), h = expected;
    }
    if (h)
        real_dlsym(h, name);
    return NULL;
}

/* What a lookup of a hooked name answers, given glibc's answer f: the hook when a real CUDA definition
 * was found (remembered as the real function), NULL (dlerror set) when only pyflow's own was. */
static PF_NOINLINE void *lookup_hooked(enum pf_cuda_fn fn, const char *name, void *f)
{
    if (f != pf_cuda_hooks[fn]) {
        pf_cuda_remember_real(fn, f);
        return pf_cuda_hooks[fn];
    }
    /* glibc found pyflow's hook first: a global-scope lookup. Truthful only if CUDA is global too. */
    void *next = real_dlsym(RTLD_NEXT, name);   /* not a tail call: the caller must be this object */
    if (!next || next == f)
        return lookup_fails(name);
    pf_cuda_remember_real(fn, next);
    return pf_cuda_hooks[fn];
}

static PF_NOINLINE void *dlsym_lookup(void *handle, const char *name)
{
    void *f = real_dlsym(handle, name);
    enum pf_cuda_fn fn = hooked_name(name);
    if (PF_LIKELY(fn == F_COUNT || !f))
        return pf_libc_lookup(name, f);
    return lookup_hooked(fn, name, f);
}

static PF_NOINLINE void *dlvsym_lookup(void *handle, const char *name, const char *version)
{
    void *f = real_dlvsym(handle, name, version);
    enum pf_cuda_fn fn = hooked_name(name);
    if (PF_LIKELY(fn == F_COUNT || !f))
        return pf_libc_lookup(name, f);
    return lookup_hooked(fn, name, f);
}

/* The RTLD_NEXT branch must compile to a jump (glibc finds "next" from the return address), also in a
 * build without optimization: hence the attribute. */
PF_EXPORT PF_TAIL_CALLS void *dlsym(void *handle, const char *name)
{
    if (PF_UNLIKELY(!real_dlsym))
        init_real_dlsym();
    if (handle == RTLD_NEXT)
        return real_dlsym(handle, name);
    return dlsym_lookup(handle, name);
}

PF_EXPORT PF_TAIL_CALLS void *dlvsym(void *handle, const char *name, const char *version)
{
    if (PF_UNLIKELY(!real_dlvsym))
        init_real_dlsym();
    if (handle == RTLD_NEXT)
        return real_dlvsym(handle, name, version);
    return dlvsym_lookup(handle, name, version);
}
