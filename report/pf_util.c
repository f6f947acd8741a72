/* pf_util.c - containers for the reporter (see pf_util_int.h). */
#include "pf_util_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>


#define PF_HUGE_PAGE ((size_t)2 << 20)

static void oom(size_t n)
{
    fprintf(stderr, "pyflow: out of memory (asked for %zu bytes) while building the report\n", n);
    abort();
}

void *pf_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *pf_xaligned_alloc(size_t align, size_t n)
{
    void *p = aligned_alloc(align, (n + align - 1) / align * align);
    if (!p)
        oom(n);
    return p;
}

void *pf_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom(n * size);
    return p;
}

void *pf_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

char *pf_xstrndup(const char *s, size_t n)
{
    char *d = pf_xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

void pf_vec_grow(void **items, size_t *cap, size_t elem_size)
{
    *cap = *cap ? *cap * 2 : 16;
    *items = pf_xrealloc(*items, *cap * elem_size);
}

void pf_vec_reserve(void **items, size_t *cap, size_t want, size_t elem_size)
{
    if (want <= *cap)
        return;
    void *p = realloc(*items, want * elem_size);
    if (p) {    /* else it grows as it goes */
        *items = p;
        *cap = want;
    }
}

uint64_t pf_hash_bytes(const void *data, size_t n, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull ^ seed;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return pf_mix64(h);
}

uint64_t pf_hash_words(const uint64_t *words, size_t n, uint64_t seed)
{
    uint64_t h = pf_mix64(seed ^ (n * 0x9E3779B97F4A7C15ull));
    for (size_t i = 0; i < n; i++)
        h = pf_mix64(h ^ words[i]);     /* a bijection: tuples differing in one word never collide */
    return h;
}

/* A map's slots are on huge pages from 4 MiB on (pf_xcalloc_huge); a smaller map is in cache, or nearly. */
static int map_on_huge_pages(size_t cap)
{
    return cap * sizeof(pf_map_entry_t) >= 2 * PF_HUGE_PAGE;
}

void pf_map_free(pf_map_t *m)
{
    if (map_on_huge_pages(m->cap))
        pf_free_huge(m->slots, m->cap * sizeof(pf_map_entry_t));
    else
        free(m->slots);
    memset(m, 0, sizeof *m);
}

/* Where a key's probe starts. */
static size_t home_of(const pf_map_t *m, uint64_t key)
{
    return (size_t)pf_mix64(key) & (m->cap - 1);
}

/* The slot of key, or the empty slot that ends its probe, from its home. */
static size_t probe_from(const pf_map_t *m, uint64_t key, size_t i)
{
    size_t mask = m->cap - 1;
    while (m->slots[i].key && m->slots[i].key != key + 1)
        i = (i + 1) & mask;
    return i;
}

static size_t find_slot(const pf_map_t *m, uint64_t key)
{
    return probe_from(m, key, home_of(m, key));
}

uint64_t *pf_map_get(const pf_map_t *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    size_t i = find_slot(m, key);
    return m->slots[i].key ? &m->slots[i].val : NULL;
}

/* Sizes pf_xcalloc_huge maps pages of its own for (the rest is calloc's). */
static int huge_sized(size_t bytes)
{
    return bytes >= PF_HUGE_PAGE && bytes % PF_HUGE_PAGE == 0;
}

/* Anonymous memory starting on a 2 MiB boundary, with prot: mapped with a huge page to spare, its unaligned
 * ends given back, so that every 2 MiB of it can be a huge page. */
static char *map_aligned(size_t bytes, int prot, int flags)
{
    char *p = mmap(NULL, bytes + PF_HUGE_PAGE, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
    if (p == MAP_FAILED)
        oom(bytes);
    size_t head = (PF_HUGE_PAGE - (uintptr_t)p % PF_HUGE_PAGE) % PF_HUGE_PAGE;
    if (head)
        munmap(p, head);
    if (PF_HUGE_PAGE - head)
        munmap(p + head + bytes, PF_HUGE_PAGE - head);
    return p + head;
}

void *pf_xcalloc_huge(size_t bytes)
{
    if (!huge_sized(bytes))
        return pf_xcalloc(bytes, 1);
    /* Fresh anonymous pages are zero already: no memset (it faulted each page in, for the kernel to clear,
     * then wrote it again; the live map of an exact profile grows through tens of megabytes). */
    char *p = map_aligned(bytes, PROT_READ | PROT_WRITE, 0);
    madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

/* What pf_xgrow maps for an array of bytes: whole huge pages from the first one on, else 0 (the allocator's). */
static size_t grow_mapped(size_t bytes)
{
    return bytes >= PF_HUGE_PAGE ? (bytes + PF_HUGE_PAGE - 1) / PF_HUGE_PAGE * PF_HUGE_PAGE : 0;
}

void *pf_xgrow(void *p, size_t old_bytes, size_t new_bytes, size_t align)
{
    size_t old_map = p ? grow_mapped(old_bytes) : 0, new_map = grow_mapped(new_bytes);
    if (!new_map) {     /* small: the allocator's, aligned */
        void *q = pf_xaligned_alloc(align, new_bytes);
        if (p)
            memcpy(q, p, old_bytes < new_bytes ? old_bytes : new_bytes);
        free(p);
        return q;
    }
    if (old_map == new_map)
        return p;
    if (!old_map) {     /* the first mapped size: the bytes so far copied once */
        char *q = map_aligned(new_map, PROT_READ | PROT_WRITE, 0);
        madvise(q, new_map, MADV_HUGEPAGE);
        if (p)
            memcpy(q, p, old_bytes);
        free(p);
        return q;
    }
    /* The kernel moves the pages (whole 2 MiB ones stay whole: both ends are aligned) to an aligned place
     * with room for the new size; the rest is fresh, zero pages of the same mapping. */
    char *dst = map_aligned(new_map, PROT_NONE, MAP_NORESERVE);
    void *q = mremap(p, old_map, new_map, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
    if (q == MAP_FAILED)
        oom(new_bytes);
    return q;
}

void pf_grow_free(void *p, size_t bytes)
{
    size_t mapped = grow_mapped(bytes);
    if (p && mapped)
        munmap(p, mapped);
    else
        free(p);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23      /* Linux 5.14 */
#endif

void *pf_xcalloc_table(size_t cap, size_t size, int huge)
{
    size_t bytes = cap * size;
    char *p = huge ? pf_xcalloc_huge(bytes) : pf_xcalloc(cap, size);
    /* whole pages inside the block (calloc's may share its first and last with other blocks); below 64 KiB
     * calloc hands out heap memory, mostly present already; an older kernel refuses the advice, and the
     * pages then come as they always did */
    uintptr_t from = ((uintptr_t)p + 4095) & ~(uintptr_t)4095, to = ((uintptr_t)p + bytes) & ~(uintptr_t)4095;
    if (bytes >= 65536 && to > from)
        madvise((void *)from, to - from, MADV_POPULATE_WRITE);
    return p;
}

void pf_free_huge(void *p, size_t bytes)
{
    if (p && huge_sized(bytes))
        munmap(p, bytes);
    else
        free(p);
}

/* Zeroed slots for a map: a big one on 2 MiB pages where the kernel allows (its lookups are scattered). */
static pf_map_entry_t *map_slots(size_t cap)
{
    return pf_xcalloc_table(cap, sizeof(pf_map_entry_t), map_on_huge_pages(cap));
}

/* Puts key, absent from m, at empty slot i, the end of its probe; returns the slot. */
static pf_map_entry_t *insert_at(pf_map_t *m, size_t i, uint64_t key)
{
    m->len++;
    m->slots[i].key = key + 1;
    return &m->slots[i];
}

static void grow(pf_map_t *m)
{
    pf_map_t bigger = {0};
    bigger.cap = m->cap ? m->cap * 2 : 64;
    bigger.slots = map_slots(bigger.cap);
    for (size_t i = 0; i < m->cap; i++) {
        uint64_t key = m->slots[i].key - 1;
        if (m->slots[i].key)
            insert_at(&bigger, find_slot(&bigger, key), key)->val = m->slots[i].val;
    }
    pf_map_free(m);
    *m = bigger;
}

uint64_t *pf_map_put(pf_map_t *m, uint64_t key, int *created)
{
    if ((m->len + 1) * 4 > m->cap * 3)
        grow(m);
    size_t i = find_slot(m, key);
    pf_map_entry_t *e = &m->slots[i];
    if (created)
        *created = !e->key;
    if (!e->key)
        insert_at(m, i, key)->val = 0;
    return &e->val;
}

/* Removes the entry at occupied slot i. */
static void del_slot(pf_map_t *m, size_t i)
{
    size_t mask = m->cap - 1, hole = i;
    for (size_t j = (i + 1) & mask; m->slots[j].key; j = (j + 1) & mask)
        if (pf_shift_movable(hole, j, home_of(m, m->slots[j].key - 1))) {
            m->slots[hole] = m->slots[j];
            hole = j;
        }
    m->slots[hole].key = 0;
    m->len--;
}

int pf_map_del(pf_map_t *m, uint64_t key)
{
    if (!m->cap)
        return 0;
    size_t i = find_slot(m, key);
    if (!m->slots[i].key)
        return 0;
    del_slot(m, i);
    return 1;
}

size_t pf_utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0)
        len = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0)
        len = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0)
        len = 4, cp = c & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

char *pf_utf8_clean(const char *s, size_t n)
{
    char *out = pf_xmalloc(n * 3 + 1);
    size_t o = 0;
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t len = p[i] ? pf_utf8_seq(p + i, n - i) : 0;
        if (len == 0) {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        } else {
            memcpy(out + o, p + i, len);
            o += len;
            i += len;
        }
    }
    out[o] = '\0';
    return out;
}
