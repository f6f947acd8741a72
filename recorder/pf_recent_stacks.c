/* pf_recent_stacks.c - a thread's recent stacks, kept flat. See pf_recent_stacks.h. */
#include "pf_recent_stacks.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "pf_codes.h"

#define RECENT_SETS 16u             /* a power of two; two entries each */
#define RECENT_SET_SHIFT 60         /* 64 - log2(RECENT_SETS) */

typedef struct recent_frame {
    const void *code;
    uint32_t lasti_bytes;
    uint32_t code_id;
    const void *identity[3];        /* the code object's identity fields when filed (pf_code_identity) */
} recent_frame_t;

/* A hit on a stack of one Python frame reads one cache line: the header and py[0] fill the entry's first
 * (the lookup's lines are evicted by the program's own data between two allocations of a loop's line, and
 * the native IPs first in the entry put its header and its Python frames on three lines). */
typedef struct recent_entry {
    uint64_t key;                   /* pf_recent_key; 0: empty */
    uint32_t id;                    /* 0: still to be found (the pending entry), or never */
    uint16_t n_py, n_native;
    uint8_t flags;
    recent_frame_t py[PF_RECENT_MAX_PY];
    uint64_t cache_key;             /* the stack cache's key (pf_record.c) */
    uint64_t native[PF_MAX_NATIVE_FRAMES];
} __attribute__((aligned(64))) recent_entry_t;
_Static_assert(__builtin_offsetof(recent_entry_t, py) + sizeof(recent_frame_t) <= 64,
               "the header and the innermost Python frame share a cache line");

typedef struct recent_table {
    recent_entry_t way[RECENT_SETS][2];
    uint8_t mru[RECENT_SETS];       /* the way last found or filed; the other is replaced next */
} recent_table_t;

#define TABLE_GONE ((recent_table_t *)1)
static __thread recent_table_t *table;     /* NULL: none yet; TABLE_GONE: the thread is ending, or no room */
static __thread recent_entry_t *pending;   /* the entry filed last, with its id still to be found */
static __thread const pf_stack_t *pending_st;

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t table_key;
static int table_key_made;

static void table_free(void *p)
{
    table = TABLE_GONE;
    pending = NULL;
    munmap(p, sizeof(recent_table_t));
}

static void make_key(void)
{
    table_key_made = pthread_key_create(&table_key, table_free) == 0;
}

/* The thread's table, mapped on its first filing; NULL when there is none (and none can be had). */
static recent_table_t *table_mapped(void)
{
    if (PF_LIKELY(table))
        return table == TABLE_GONE ? NULL : table;
    pthread_once(&key_once, make_key);
    void *p = table_key_made ? mmap(NULL, sizeof(recent_table_t), PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
    if (p == MAP_FAILED || pthread_setspecific(table_key, p) != 0) {
        if (p != MAP_FAILED)
            munmap(p, sizeof(recent_table_t));
        table = TABLE_GONE;
        return NULL;
    }
    return table = p;     /* zero-filled: every entry empty */
}

static inline uint32_t set_of(uint64_t key)
{
    return (uint32_t)(key >> RECENT_SET_SHIFT);
}

/* 1 when e is the capture: the same counts and flags, native IPs, code objects and offsets, and each code
 * object's identity unchanged. The native IPs first: under --native, where stacks that share a key differ. */
static inline int entry_is(const recent_entry_t *e, const pf_stack_t *st, const pf_pyframe_t *frames, int n_py)
{
    if (e->n_py != n_py || e->n_native != st->n_native || e->flags != st->flags)
        return 0;
    uint64_t differ = 0;
    for (int i = 0; i < st->n_native; i++)
        differ |= e->native[i] ^ st->native[i];
    for (int i = 0; i < n_py; i++)
        differ |= ((uint64_t)(uintptr_t)e->py[i].code ^ (uint64_t)(uintptr_t)frames[i].code) |
                  (e->py[i].lasti_bytes ^ frames[i].lasti_bytes);
    if (differ)
        return 0;
    for (int i = 0; i < n_py; i++)
        for (int k = 0; k < 3; k++)
            if (pf_code_identity(frames[i].code, k) != e->py[i].identity[k])
                return 0;
    return 1;
}

/* Inlined into the allocation path (link-time optimization; the header declares it extern, so this is also
 * its external definition): most allocations end their stack's capture here. */
__attribute__((always_inline)) inline int pf_recent_find(uint64_t key, pf_stack_t *st, const pf_pyframe_t *frames, int n_py)
{
    recent_table_t *T = table;
    if (!T || T == TABLE_GONE)
        return 0;
    uint32_t s = set_of(key);
    /* The way is picked by arithmetic, not a branch: which of the two holds a loop's stack is a coin toss
     * the predictor missed (a third of this lookup's samples sat on that branch). The other way is tried
     * only when the picked one fails (the same key filed twice: a collision, or a code object replaced). */
    uint32_t w = T->way[s][1].key == key;
    const recent_entry_t *e = &T->way[s][w];
    if (PF_UNLIKELY(e->key != key || !e->id || !entry_is(e, st, frames, n_py))) {
        e = &T->way[s][0];
        if (!w || e->key != key || !e->id || !entry_is(e, st, frames, n_py))
            return 0;
        w = 0;
    }
    T->mru[s] = (uint8_t)w;
    st->id = e->id;
    st->cache_key = e->cache_key;
    for (int i = 0; i < n_py; i++)
        st->py[i] = (pf_rec_pyframe_t){.code_id = e->py[i].code_id, .lasti_bytes = e->py[i].lasti_bytes};
    return 1;
}

void pf_recent_file(uint64_t key, const pf_stack_t *st, const pf_pyframe_t *frames, int n_py)
{
    pending = NULL;
    if ((unsigned)n_py > PF_RECENT_MAX_PY)
        return;
    for (int i = 0; i < n_py; i++)
        if (!st->py[i].code_id)
            return;     /* looked up again each time, as the stack cache's check would */
    recent_table_t *T = table_mapped();
    if (!T)
        return;
    uint32_t s = set_of(key), w = T->mru[s] ^ 1u;
    recent_entry_t *e = &T->way[s][w];
    T->mru[s] = (uint8_t)w;
    e->key = key;
    e->cache_key = st->cache_key;
    e->id = st->id;
    e->n_py = (uint16_t)n_py;
    e->n_native = st->n_native;
    e->flags = st->flags;
    memcpy(e->native, st->native, (size_t)st->n_native * 8);
    for (int i = 0; i < n_py; i++) {
        recent_frame_t *f = &e->py[i];
        f->code = frames[i].code;
        f->lasti_bytes = frames[i].lasti_bytes;
        f->code_id = st->py[i].code_id;
        for (int k = 0; k < 3; k++)
            f->identity[k] = pf_code_identity(frames[i].code, k);
    }
    if (!st->id) {
        pending = e;
        pending_st = st;
    }
}

void pf_recent_resolved(const pf_stack_t *st, uint32_t id)
{
    if (pending && pending_st == st) {
        pending->id = id;
        pending = NULL;
    }
}

void pf_recent_forget(void)
{
    pending = NULL;
    recent_table_t *T = table;
    if (!T || T == TABLE_GONE)
        return;
    for (uint32_t s = 0; s < RECENT_SETS; s++)
        T->way[s][0].key = T->way[s][1].key = 0;
}
