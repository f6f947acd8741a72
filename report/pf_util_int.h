/* pf_util_int.h - the reporter's small containers: a growable array and an open-addressing map from
 * 64-bit keys to 64-bit values. The reporter runs after the program, in the launcher; plain malloc
 * (jemalloc in the pyflow binary) is fine here. Allocation failure aborts with a message: a reporter that
 * cannot allocate has nothing useful left to do. */
#ifndef PF_UTIL_INT_H
#define PF_UTIL_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

void *pf_xmalloc(size_t n);
void *pf_xcalloc(size_t n, size_t size);
/* Memory aligned to align (a power of two), free()d as usual. */
void *pf_xaligned_alloc(size_t align, size_t n);
void *pf_xrealloc(void *p, size_t n);
char *pf_xstrndup(const char *s, size_t n);
/* Zeroed memory, on 2 MiB pages where the kernel allows when bytes is a multiple of them: a table read at
 * scattered places then costs no TLB miss per lookup. Freed with pf_free_huge, given the same bytes. */
void *pf_xcalloc_huge(size_t bytes);
void pf_free_huge(void *p, size_t bytes);
/* A hash table's zeroed slots (cap of size bytes; huge: as pf_xcalloc_huge, freed as it says), their pages
 * made present and writable now: a probe reads a slot before anything is written there, a read of a fresh
 * page maps the shared zero page, and the write after it then faults again and flushes the page's old
 * mapping from every CPU running the process (an interrupt to the other thread of the reader: a tenth of
 * `pyflow report`'s time). A table's rehash touches every page of it anyway. */
void *pf_xcalloc_table(size_t cap, size_t size, int huge);
/* An array that only grows, from old_bytes (p NULL: none yet) to new_bytes, aligned to align (<= 4096), as
 * realloc keeps contents. From 2 MiB on it is whole 2 MiB pages of its own that the kernel moves as it
 * grows (mremap: no byte copied, and only the new pages are fresh), where realloc's copy faulted in and
 * wrote a new block twice the size of the old. Freed with pf_grow_free, given the bytes it last grew to. */
void *pf_xgrow(void *p, size_t old_bytes, size_t new_bytes, size_t align);
void pf_grow_free(void *p, size_t bytes);

/* Doubles a growable array's room (pf_vec_push's rare path). */
void pf_vec_grow(void **items, size_t *cap, size_t elem_size);

/* Appends one element slot to a growable array (*items, *len, *cap) and returns it (zeroed). Inline, so
 * that the zeroing of a slot of a size known where it is called is a few stores: as a call of its own
 * with a call of memset in it, the leak test's 100,000 survivors of one exact profile took a fifth of the
 * report's work after the program's end (perf). */
static inline void *pf_vec_push(void **items, size_t *len, size_t *cap, size_t elem_size)
{
    if (__builtin_expect(*len == *cap, 0))
        pf_vec_grow(items, cap, elem_size);
    void *slot = (char *)*items + (*len)++ * elem_size;
    memset(slot, 0, elem_size);
    return slot;
}
#define PF_VEC_PUSH(vec, len, cap) ((__typeof__(vec))pf_vec_push((void **)&(vec), &(len), &(cap), sizeof *(vec)))
/* Makes room for at least `want` items in all (no copying as the vector then grows to it), where memory
 * allows: it is only a hint. */
void pf_vec_reserve(void **items, size_t *cap, size_t want, size_t elem_size);
#define PF_VEC_RESERVE(vec, cap, want) pf_vec_reserve((void **)&(vec), &(cap), (want), sizeof *(vec))

/* An entry's key and value side by side: a lookup that finds its key has its value in the same cache
 * line (maps keyed by address are one cache miss per lookup; in separate arrays they were two). */
typedef struct pf_map_entry {
    uint64_t key;       /* key + 1 stored, 0 = empty (so key UINT64_MAX is not allowed) */
    uint64_t val;
} pf_map_entry_t;

/* Hashed homes, linear probing, backward-shift removal. (The sweep's live objects, keyed by address,
 * have a map of their own: pf_live_map.h.) */
typedef struct pf_map {
    pf_map_entry_t *slots;
    size_t cap, len;
} pf_map_t;

/* Backward-shift removal (no tombstones: probe runs stay intact), for an open-addressing table with linear
 * probing: the entry at slot j, whose probe starts at home, moves back into the hole when the hole is on
 * its probe, i.e. its home is not inside (hole, j] (cyclically). */
static inline int pf_shift_movable(size_t hole, size_t j, size_t home)
{
    return hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
}

void pf_map_free(pf_map_t *m);
/* Returns a pointer to the value slot of key, or NULL when absent. */
uint64_t *pf_map_get(const pf_map_t *m, uint64_t key);
/* Returns the value slot of key, inserting it with value 0 (and *created = 1) when absent. */
uint64_t *pf_map_put(pf_map_t *m, uint64_t key, int *created);
/* Removes key; returns 1 if it was present. */
int pf_map_del(pf_map_t *m, uint64_t key);

/* Length of the valid UTF-8 sequence at s (at most n bytes readable), or 0 when invalid (overlong,
 * surrogate, out of range, truncated). */
size_t pf_utf8_seq(const unsigned char *s, size_t n);

/* A copy of s[0..n) as valid UTF-8 (invalid bytes become U+FFFD) and without NUL bytes. */
char *pf_utf8_clean(const char *s, size_t n);

/* A bijective 64-bit mix (murmur3's finalizer): the maps' hash of a key. */
static inline uint64_t pf_mix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return k;
}

uint64_t pf_hash_bytes(const void *data, size_t n, uint64_t seed);
/* The same for whole 64-bit words, a word at a time (a key of three words: 3 mixes, not 24 byte steps). */
uint64_t pf_hash_words(const uint64_t *words, size_t n, uint64_t seed);

#endif /* PF_UTIL_INT_H */
