/* pf_objdense.c - the object table's dense map (pf_objdense.h): a directory of leaves, each leaf the
 * entries of 256 MiB of address space (16 MiB of reserved, unbacked memory: only the pages whose granules
 * hold objects become resident). The directory covers a 48-bit address space in 2^20 pointers (8 MiB
 * reserved, a page of it resident per 512 leaves). Memory comes from raw mmap: this code runs inside
 * malloc. */
#include "pf_objdense.h"

#include <errno.h>
#include <sys/mman.h>

#include "pf_sys.h"

#define PF_DENSE_LEAF_BYTES (PF_DENSE_LEAF_ENTRIES * sizeof(pf_dense_t))
#define PF_DENSE_DIR_ENTRIES (1ull << (48 - PF_DENSE_LEAF_SHIFT))
#define PF_DENSE_DIR_BYTES (PF_DENSE_DIR_ENTRIES * sizeof(pf_dense_t *))

pf_dense_t **pf_objdense_dir;   /* NULL until first enabled */
#define dir pf_objdense_dir
static int enabled;
static uint32_t leaves;

/* Address space that costs nothing until touched (and is not counted against overcommit). */
static void *reserve(size_t bytes)
{
    void *p = pf_sys_mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int pf_dense_enable(int on)
{
    if (on && !__atomic_load_n(&dir, __ATOMIC_ACQUIRE)) {
        pf_dense_t **d = reserve(PF_DENSE_DIR_BYTES), **expected = NULL;
        if (!d)
            return -ENOMEM;
        if (!__atomic_compare_exchange_n(&dir, &expected, d, 0, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
            pf_sys_munmap(d, PF_DENSE_DIR_BYTES);
    }
    __atomic_store_n(&enabled, on, __ATOMIC_RELEASE);
    return 0;
}

int pf_dense_on(void)
{
    return __atomic_load_n(&enabled, __ATOMIC_RELAXED);
}

pf_dense_t *pf_dense_at(uint64_t addr, int create)
{
    pf_dense_t **d = __atomic_load_n(&dir, __ATOMIC_ACQUIRE);
    if (!d || (addr >> 48))
        return NULL;
    pf_dense_t **slot = &d[addr >> PF_DENSE_LEAF_SHIFT];
    pf_dense_t *leaf = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!leaf) {
        if (!create || !(leaf = reserve(PF_DENSE_LEAF_BYTES)))
            return NULL;
        pf_dense_t *expected = NULL;   /* two stripes' threads may map the same leaf: one wins */
        if (__atomic_compare_exchange_n(slot, &expected, leaf, 0, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)) {
            __atomic_add_fetch(&leaves, 1, __ATOMIC_RELAXED);
        } else {
            pf_sys_munmap(leaf, PF_DENSE_LEAF_BYTES);
            leaf = expected;
        }
    }
    return &leaf[pf_objdense_index(addr)];
}

void pf_dense_each_in(uint64_t lo, uint64_t hi, void (*fn)(uint64_t addr, pf_dense_t e, void *arg), void *arg)
{
    const uint64_t granule = 1ull << PF_DENSE_GRANULE_SHIFT;
    pf_dense_t **d = __atomic_load_n(&dir, __ATOMIC_ACQUIRE);
    for (uint64_t a = lo & ~(granule - 1); d && a < hi && !(a >> 48);) {
        const pf_dense_t *leaf = __atomic_load_n(&d[a >> PF_DENSE_LEAF_SHIFT], __ATOMIC_ACQUIRE);
        uint64_t leaf_end = ((a >> PF_DENSE_LEAF_SHIFT) + 1) << PF_DENSE_LEAF_SHIFT;
        uint64_t end = leaf_end < hi ? leaf_end : hi;
        for (; leaf && a < end; a += granule) {
            pf_dense_t e = __atomic_load_n(&leaf[pf_objdense_index(a)], __ATOMIC_RELAXED);
            uint64_t at = pf_dense_addr(a, e);
            if (e && at >= lo && at < hi)
                fn(at, e, arg);
        }
        a = end;
    }
}

void pf_dense_each_leaf(void (*fn)(uint64_t lo, uint64_t hi, void *arg), void *arg)
{
    pf_dense_t **d = __atomic_load_n(&dir, __ATOMIC_ACQUIRE);
    for (uint64_t i = 0; d && i < PF_DENSE_DIR_ENTRIES; i++)
        if (__atomic_load_n(&d[i], __ATOMIC_ACQUIRE))
            fn(i << PF_DENSE_LEAF_SHIFT, (i + 1) << PF_DENSE_LEAF_SHIFT, arg);
}

/* The entries of a granule-aligned span of address space are the same span >> 4: a page of entries covers
 * PF_DENSE_PAGE_SPAN bytes of it. */
#define PF_DENSE_PAGE_BYTES 4096ull
#define PF_DENSE_PAGE_SPAN (PF_DENSE_PAGE_BYTES / sizeof(pf_dense_t) << PF_DENSE_GRANULE_SHIFT)

static int page_is_zero(const pf_dense_t *page)
{
    const uint64_t *w = (const uint64_t *)(const void *)page;
    uint64_t any = 0;
    for (size_t i = 0; i < PF_DENSE_PAGE_BYTES / sizeof *w; i++)
        any |= __atomic_load_n(&w[i], __ATOMIC_RELAXED);
    return any == 0;
}

/* Gives back the run of n zero pages from page, in one call (each madvise flushes the TLB). */
static uint32_t drop_run(pf_dense_t *page, uint32_t n)
{
    return n && madvise(page, n * PF_DENSE_PAGE_BYTES, MADV_DONTNEED) == 0 ? n : 0;
}

uint32_t pf_dense_release(uint64_t addr, uint64_t bytes)
{
    pf_dense_t **d = __atomic_load_n(&dir, __ATOMIC_ACQUIRE);
    uint64_t lo = (addr + PF_DENSE_PAGE_SPAN - 1) & ~(PF_DENSE_PAGE_SPAN - 1);
    uint64_t hi = (addr + bytes) & ~(PF_DENSE_PAGE_SPAN - 1);
    uint32_t dropped = 0, run = 0;
    pf_dense_t *run_start = NULL;
    for (uint64_t a = lo; d && a < hi && !(a >> 48); a += PF_DENSE_PAGE_SPAN) {
        pf_dense_t *leaf = __atomic_load_n(&d[a >> PF_DENSE_LEAF_SHIFT], __ATOMIC_ACQUIRE);
        pf_dense_t *page = leaf ? &leaf[pf_objdense_index(a)] : NULL;
        /* a run ends at a page that holds an entry, at a leaf's end (the next leaf lies elsewhere) */
        if (run && (!page || page != run_start + run * (PF_DENSE_PAGE_BYTES / sizeof *page))) {
            dropped += drop_run(run_start, run);
            run = 0;
        }
        if (!page) {    /* no leaf: on to the next one */
            a = (((a >> PF_DENSE_LEAF_SHIFT) + 1) << PF_DENSE_LEAF_SHIFT) - PF_DENSE_PAGE_SPAN;
            continue;
        }
        /* reading a page never touched maps the shared zero page at most, which the drop unmaps again */
        if (!page_is_zero(page)) {
            dropped += drop_run(run_start, run);
            run = 0;
        } else if (!run++) {
            run_start = page;
        }
    }
    return dropped + drop_run(run_start, run);
}

uint32_t pf_dense_leaves(void)
{
    return __atomic_load_n(&leaves, __ATOMIC_RELAXED);
}

void pf_dense_reset(void)
{
    if (dir) {
        for (uint64_t i = 0; i < PF_DENSE_DIR_ENTRIES; i++)
            if (dir[i])
                pf_sys_munmap(dir[i], PF_DENSE_LEAF_BYTES);
        pf_sys_munmap(dir, PF_DENSE_DIR_BYTES);
    }
    dir = NULL;
    enabled = 0;
    leaves = 0;
}
