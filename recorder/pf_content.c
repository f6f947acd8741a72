/* pf_content.c - what a tracked object held when it was freed: the pages it never touched (untouched
 * memory) and a fingerprint of its contents (recomputed values). One PF_REC_CONTENT record, written just
 * before the object's FREE, and at exit for the objects still live.
 *
 * Untouched pages come from mincore() on the whole pages inside the object: a page of a fresh anonymous
 * mapping (glibc serves blocks of 128 KiB and more, numpy's large arrays, from their own mmap) is not
 * resident until it is written or read. That is exact for such blocks; a page malloc had used before (a
 * heap page reused) is resident whatever this object did with it, so untouched bytes are a lower bound
 * there, never an over-count. A page swapped out would read as untouched: profiling runs rarely swap.
 *
 * Cost: only tracked objects (sampled, or at least the object threshold) reach here: a mincore system call
 * per 4 MiB of an object with a whole page, and a hash of at most 16 KiB and 1024 words
 * (core/pf_content_scan.h). The whole thing is off with PYFLOW_NO_WASTE=1.
 */
#include <sys/mman.h>
#include <unistd.h>

#include "pf_content_scan.h"
#include "pf_objkind.h"
#include "pf_objtable.h"
#include "pf_rec_int.h"
#include "pf_writer.h"

/* Objects smaller than this are not fingerprinted: a few words repeated say little (small structs, short
 * keys), and the interpreter caches its small constants anyway. */
#define PF_CONTENT_MIN_HASH 128u
#define PF_MINCORE_PAGES 1024u      /* pages asked per mincore call (its vector is on the stack) */

static uint32_t page_shift;

/* Pages of [addr, addr + size) wholly inside it: how many (*checked) and how many not resident. Returns
 * -1 when mincore failed (then nothing is known). */
static int untouched_pages(uintptr_t addr, uint64_t size, uint32_t *checked, uint32_t *untouched)
{
    const uintptr_t page = (uintptr_t)1 << page_shift;
    uintptr_t first = (addr + page - 1) & ~(page - 1), last = (addr + size) & ~(page - 1);
    *checked = *untouched = 0;
    if (last <= first)
        return 0;
    unsigned char vec[PF_MINCORE_PAGES];
    uint64_t n_pages = (last - first) >> page_shift;
    for (uint64_t done = 0; done < n_pages;) {
        uint64_t n = n_pages - done < PF_MINCORE_PAGES ? n_pages - done : PF_MINCORE_PAGES;
        if (mincore((void *)(first + (done << page_shift)), n << page_shift, vec) != 0)
            return -1;
        for (uint64_t i = 0; i < n; i++)
            *untouched += !(vec[i] & 1);
        done += n;
    }
    *checked = n_pages > UINT32_MAX ? UINT32_MAX : (uint32_t)n_pages;
    return 0;
}

/* Where an object's value starts, or -1 when its bytes are no value to compare: a Python object other
 * than str or bytes holds pointers and a reference count; GPU memory is not readable here. */
static int64_t value_offset(const pf_objinfo_t *o)
{
    if (o->domain == PF_DOMAIN_GPU || o->size < PF_CONTENT_MIN_HASH)
        return -1;
    if (o->domain == PF_DOMAIN_PYOBJ)   /* skip the reference count and the type */
        return pf_objkind_str_bytes(o) != PF_OBJ_UNKNOWN ? 2 * (int64_t)sizeof(uintptr_t) : -1;
    return 0;
}

static void write_content(pf_tls_t *t, const pf_objinfo_t *o, uint32_t flags)
{
    if (!page_shift)
        page_shift = (uint32_t)__builtin_ctzl((unsigned long)sysconf(_SC_PAGESIZE));
    pf_rec_content_t c = {.addr = o->addr, .flags = flags};
    int known = untouched_pages(o->addr, o->size, &c.checked_pages, &c.untouched_pages) == 0;
    if (!known)
        c.checked_pages = c.untouched_pages = 0;
    /* An object with pages never touched is untouched memory; reading it would fault them in. At exit
     * nothing is read at all: an object still in the table may have been freed where pyflow's hooks could
     * not see it (tracemalloc installed over them) and its pages unmapped since; mincore() only asks. */
    int64_t skip = -1;
    if (known && c.untouched_pages == 0 && !(flags & PF_CONTENT_AT_EXIT))
        skip = value_offset(o);
    if (skip >= 0) {
        pf_content_scan_t s;
        pf_content_scan((const void *)o->addr, o->size, (uint64_t)skip, &s);
        if (s.all_zero)
            c.flags |= PF_CONTENT_ZERO;
        else if (pf_content_pointerish(&s))
            c.flags |= PF_CONTENT_POINTERS;
        else {
            c.flags |= PF_CONTENT_HASHED;
            c.fingerprint = s.hash;
        }
    }
    if (!c.checked_pages && !(c.flags & PF_CONTENT_HASHED))
        return;     /* nothing the reporter could use */
    uint32_t bytes = (uint32_t)(sizeof(pf_rec_header_t) + sizeof c);
    char *rec = pf_writer_reserve(t, bytes);
    if (!rec)
        return;
    c.t_ns = pf_now_ns();
    memcpy(rec + sizeof(pf_rec_header_t), &c, sizeof c);
    pf_writer_commit(t, rec, PF_REC_CONTENT, (uint16_t)page_shift, bytes);
}

void pf_content_on_free(pf_tls_t *t, const pf_objinfo_t *o)
{
    /* Most frees of an --exact run are of small objects, with neither a whole page nor a value worth a
     * fingerprint: nothing to look at. */
    if (pf_cfg.waste && (o->size >= PF_CONTENT_MIN_HASH || o->size >= (uint64_t)1 << page_shift || !page_shift))
        write_content(t, o, 0);
}

static void at_exit_one(const pf_objinfo_t *o, void *arg)
{
    write_content((pf_tls_t *)arg, o, PF_CONTENT_AT_EXIT);
}

/* At exit(), the objects still live: their untouched pages too (np.zeros kept to the end). An object
 * freed later during exit gets a second record; the reporter keeps the first. Not after os._exit or a
 * signal: then what is still live goes without. */
__attribute__((destructor)) static void content_at_exit(void)
{
    pf_tls_t *t = &pf_tls;
    if (!pf_cfg.waste || !__atomic_load_n(&pf_cfg.enabled, __ATOMIC_ACQUIRE) || t->guard)
        return;
    pf_guard_enter(t);
    pf_enter_recording(t);
    if (!page_shift)
        page_shift = (uint32_t)__builtin_ctzl((unsigned long)sysconf(_SC_PAGESIZE));
    pf_objtable_each((uint64_t)1 << page_shift, at_exit_one, t);
    pf_guard_leave(t);
}
