/* pf_pymem.c - wraps CPython's three allocator domains (RAW, MEM, OBJ) and pymalloc's arena allocator.
 *
 * Installed from the runtime's constructor, before Py_Initialize, through PyMem_GetAllocator /
 * PyMem_SetAllocator found with dlsym (Debian's python3 links libpython statically, so its internal calls
 * cannot be interposed by symbol: only the allocator tables reach them). Each wrapper raises the guard
 * around the wrapped allocator, so memory it takes from malloc or mmap is counted once, here, as Python.
 *
 * The structs below are the stable public ABI of PyMemAllocatorEx and PyObjectArenaAllocator (unchanged
 * 3.8-3.13); declaring them here keeps CPython headers out of the runtime (see pf_pyframes.h).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>

#include "pf_hooks_int.h"
#include "pf_sys.h"
#include "pf_watch.h"

typedef struct pf_pymem_allocator {
    void *ctx;
    void *(*malloc)(void *ctx, size_t size);
    void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
    void *(*realloc)(void *ctx, void *ptr, size_t new_size);
    void (*free)(void *ctx, void *ptr);
} pf_pymem_allocator_t;

typedef struct pf_pyarena_allocator {
    void *ctx;
    void *(*alloc)(void *ctx, size_t size);
    void (*free)(void *ctx, void *ptr, size_t size);
} pf_pyarena_allocator_t;

enum { PF_PYMEM_DOMAINS = 3 };  /* PYMEM_DOMAIN_RAW = 0, MEM = 1, OBJ = 2 == PF_DOMAIN_PY* */

static pf_pymem_allocator_t wrapped[PF_PYMEM_DOMAINS];
static pf_pyarena_allocator_t wrapped_arena;

static void *pymem_malloc(void *ctx, size_t size)
{
    const int domain = (int)(intptr_t)ctx;
    pf_tls_t *t = &pf_tls;
    pf_guard_enter(t);
    void *p = wrapped[domain].malloc(wrapped[domain].ctx, size);
    pf_guard_leave(t);
    if (PF_LIKELY(t->guard == 0))
        pf_account_alloc(p, size, domain);
    return p;
}

static void *pymem_calloc(void *ctx, size_t nelem, size_t elsize)
{
    const int domain = (int)(intptr_t)ctx;
    pf_tls_t *t = &pf_tls;
    pf_guard_enter(t);
    void *p = wrapped[domain].calloc(wrapped[domain].ctx, nelem, elsize);
    pf_guard_leave(t);
    if (PF_LIKELY(t->guard == 0))
        pf_account_alloc(p, nelem * elsize, domain);
    return p;
}

static void *pymem_realloc(void *ctx, void *old, size_t size)
{
    const int domain = (int)(intptr_t)ctx;
    pf_tls_t *t = &pf_tls;
    int outer = t->guard == 0;
    pf_objinfo_t old_obj;
    int tracked = outer && old && PF_UNLIKELY(pf_objtable_maybe(old)) && pf_on_free_slow_info(t, old, domain, &old_obj);
    pf_guard_enter(t);
    pf_watch_on_free(old, 512);
    void *p = wrapped[domain].realloc(wrapped[domain].ctx, old, size);
    pf_guard_leave(t);
    if (outer)
        pf_account_alloc(p, size, domain);
    if (PF_UNLIKELY(tracked) && p && p != old)
        pf_on_realloc_moved(t, p, &old_obj, size);
    return p;
}

static void pymem_free(void *ctx, void *p)
{
    const int domain = (int)(intptr_t)ctx;
    pf_tls_t *t = &pf_tls;
    if (PF_LIKELY(t->guard == 0) && p && PF_UNLIKELY(pf_objtable_maybe(p)))
        pf_on_free_slow(t, p, domain);
    /* pymalloc blocks are at most 512 bytes and have no malloc header to ask; larger ones reach free() */
    pf_watch_on_free(p, 512);
    pf_guard_enter(t);
    wrapped[domain].free(wrapped[domain].ctx, p);
    pf_guard_leave(t);
}

/* Arenas hold the objects the OBJ domain already counted: hide their mmaps from the mmap hook. */
static void *arena_alloc(void *ctx, size_t size)
{
    pf_guard_enter(&pf_tls);
    void *p = wrapped_arena.alloc(wrapped_arena.ctx, size);
    pf_guard_leave(&pf_tls);
    return p;
}

static void arena_free(void *ctx, void *p, size_t size)
{
    /* its blocks are all freed, their dense entries cleared: the entries' pages need not stay resident */
    pf_dense_release((uintptr_t)p, size);
    pf_guard_enter(&pf_tls);
    wrapped_arena.free(wrapped_arena.ctx, p, size);
    pf_guard_leave(&pf_tls);
}

typedef void (*pf_get_allocator_fn)(int, pf_pymem_allocator_t *);
typedef void (*pf_set_allocator_fn)(int, pf_pymem_allocator_t *);
static pf_get_allocator_fn get_allocator;
static pf_set_allocator_fn set_allocator;
static int (*is_initialized)(void);
static int verified;    /* 1 once the wrappers were seen in place after Py_Initialize */

static void wrap_domains(void)
{
    for (int d = 0; d < PF_PYMEM_DOMAINS; d++) {
        get_allocator(d, &wrapped[d]);
        pf_pymem_allocator_t mine = {(void *)(intptr_t)d, pymem_malloc, pymem_calloc, pymem_realloc, pymem_free};
        set_allocator(d, &mine);
    }
}

#define PF_CHAIN_DEPTH 3

/* 1 when the allocator cur calls ours underneath, or when that cannot be told; 0 when it does not. A hook
 * installed over our wrappers (tracemalloc, started during start-up by -X tracemalloc or PYTHONTRACEMALLOC)
 * keeps the allocator it wrapped in a struct its ctx points at, as CPython's own hooks do (tracemalloc:
 * ctx = &saved PyMemAllocatorEx; the debug hooks: ctx = &{api id, PyMemAllocatorEx}): the saved struct is
 * at ctx or one word after it. Wrapping such a hook again would have ours call it and it call ours, until
 * the stack overflows. Followed through at most PF_CHAIN_DEPTH such hooks. */
static int calls_ours(const pf_pymem_allocator_t *cur, int depth)
{
    if (cur->malloc == pymem_malloc)
        return 1;
    if (!cur->ctx || depth == PF_CHAIN_DEPTH)
        return 0;
    for (size_t skip = 0; skip <= sizeof(void *); skip += sizeof(void *)) {
        pf_pymem_allocator_t saved;
        if (pf_sys_read_own((const char *)cur->ctx + skip, &saved, sizeof saved) != 0) {
            if (errno == EFAULT)
                continue;
            return 1;   /* cannot look: leaving the allocator as it is loses counts, wrapping it may recurse */
        }
        if (saved.malloc && calls_ours(&saved, depth + 1))
            return 1;
    }
    return 0;
}

void pf_pymem_recheck(void)
{
    if (PF_LIKELY(verified) || !get_allocator)
        return;
    /* PYTHONMALLOC=... and -X dev install fresh allocators during start-up, replacing the wrappers set from
     * the constructor. Wrapping again is allowed at any time (the new ones are what we wrap), so put them
     * back, until the interpreter is initialized and they are seen in place (or under a hook that wraps
     * them). */
    pf_pymem_allocator_t cur;
    get_allocator(PF_PYMEM_DOMAINS - 1, &cur);
    if (cur.malloc != pymem_malloc) {
        int saved_errno = errno;    /* a hook's caller sees errno as without pyflow */
        if (!calls_ours(&cur, 0))
            wrap_domains();
        errno = saved_errno;
    }
    if (is_initialized && is_initialized()) {
        verified = 1;
        /* nothing left to check: the slow paths stop calling (an indirect call on every recorded event) */
        __atomic_store_n(&pf_host.pymem_recheck, NULL, __ATOMIC_RELAXED);
    }
}

int pf_pymem_install(void)
{
    pf_get_allocator_fn get = (pf_get_allocator_fn)dlsym(RTLD_DEFAULT, "PyMem_GetAllocator");
    pf_set_allocator_fn set = (pf_set_allocator_fn)dlsym(RTLD_DEFAULT, "PyMem_SetAllocator");
    is_initialized = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    void (*get_arena)(pf_pyarena_allocator_t *) =
        (void (*)(pf_pyarena_allocator_t *))dlsym(RTLD_DEFAULT, "PyObject_GetArenaAllocator");
    void (*set_arena)(pf_pyarena_allocator_t *) =
        (void (*)(pf_pyarena_allocator_t *))dlsym(RTLD_DEFAULT, "PyObject_SetArenaAllocator");
    if (!get || !set)
        return -1;
    get_allocator = get;
    set_allocator = set;
    wrap_domains();
    if (get_arena && set_arena) {
        get_arena(&wrapped_arena);
        pf_pyarena_allocator_t mine = {NULL, arena_alloc, arena_free};
        set_arena(&mine);
    }
    return 0;
}
