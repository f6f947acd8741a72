/* pf_eh_pages.c - giving back the call frame information pages the unwinders fault in (pf_eh_pages.h).
 *
 * madvise(MADV_DONTNEED) on a private file mapping that was never written only unmaps the pages: the next
 * read maps them again from the page cache. A span is therefore filed only where nothing could have
 * written it (a read-only PT_LOAD, no RELRO range over it, no text relocations in the object), and only
 * while its object is still mapped there: once the loader has removed any object, its range may hold
 * another mapping (the program's own memory), so the first removal turns this off for the rest of the
 * run. A release runs inside dl_iterate_phdr, which holds the loader's list lock and reads the loader's
 * count of removals; dlclose also pauses releases from before it calls the real one until the count is
 * read again after (pf_eh_pages_unloading), so no release can race with an unmap.
 */
#include "pf_eh_pages.h"

#include <stddef.h>
#include <sys/mman.h>
#include <time.h>

#include "pf_cfi.h"
#include "pf_file_pages.h"
#include "pf_recorder.h"
#include "pf_sys.h"

#define PF_EH_MAX_SPANS 1024u

typedef struct eh_span {
    uint64_t obj_lo, obj_hi;    /* the object's mapped range: which reads are its */
    uint64_t lo, hi;            /* the pages given back */
    uint32_t read;              /* read since last given back */
} eh_span_t;

static eh_span_t spans[PF_EH_MAX_SPANS];
static uint32_t n_spans;        /* published with release after the span is filled */
static pf_spinlock_t add_lock;
uint32_t pf_eh_pages_pending;
static uint32_t reads;          /* reads of any span, ever: a thread's quiet count starts again when it moves */
static uint32_t released;
static uint64_t last_read_ns;       /* the coarse clock at the latest read */
static __thread uint32_t seen_reads, quiet_ticks;
static pf_spinlock_t release_lock;  /* a release, or a dlclose under way */
static int unloading;               /* dlclose calls under way (release_lock) */
static int off;                     /* an object was removed: spans may name other mappings now */
static int at_once;                 /* finalizing: each read's span is given back as it ends */
static unsigned long long filed_subs = ~0ull;  /* the loader's count of removals when spans were filed */

void pf_eh_pages_add(const struct dl_phdr_info *obj, size_t size)
{
    if (size < offsetof(struct dl_phdr_info, dlpi_subs) + sizeof obj->dlpi_subs)
        return;     /* a loader that cannot say when objects are removed */
    const ElfW(Phdr) *hdr = NULL;
    uint64_t obj_lo = UINT64_MAX, obj_hi = 0;
    for (int i = 0; i < obj->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &obj->dlpi_phdr[i];
        if (ph->p_type == PT_GNU_EH_FRAME)
            hdr = ph;
        else if (ph->p_type == PT_LOAD) {
            obj_lo = obj->dlpi_addr + ph->p_vaddr < obj_lo ? obj->dlpi_addr + ph->p_vaddr : obj_lo;
            obj_hi = obj->dlpi_addr + ph->p_vaddr + ph->p_memsz > obj_hi ? obj->dlpi_addr + ph->p_vaddr + ph->p_memsz : obj_hi;
        }
    }
    if (!hdr)
        return;
    uint64_t at = obj->dlpi_addr + hdr->p_vaddr, lo = 0, hi = 0;
    for (int i = 0; i < obj->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &obj->dlpi_phdr[i];
        uint64_t start = obj->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && at >= start && at < start + ph->p_filesz) {
            if (ph->p_flags & PF_W)
                return;
            lo = (at + PF_FILE_PAGE - 1) & ~(PF_FILE_PAGE - 1);
            hi = (start + ph->p_filesz) & ~(PF_FILE_PAGE - 1);
        }
    }
    if (lo >= hi || !pf_file_pages_never_written(obj, lo, hi))
        return;
    pf_spin_lock(&add_lock);
    if (filed_subs == ~0ull)
        filed_subs = obj->dlpi_subs;
    else if (filed_subs != obj->dlpi_subs)
        __atomic_store_n(&off, 1, __ATOMIC_RELAXED);
    uint32_t n = n_spans;
    int filed = 0;
    for (uint32_t i = 0; i < n && !filed; i++)
        filed = spans[i].lo == lo && spans[i].hi == hi;
    if (!filed && n < PF_EH_MAX_SPANS) {
        /* read already: libunwind's set-up and the first stacks were unwound before any span was filed */
        spans[n] = (eh_span_t){obj_lo, obj_hi, lo, hi, 1};
        __atomic_store_n(&n_spans, n + 1, __ATOMIC_RELEASE);
        __atomic_store_n(&pf_eh_pages_pending, 1, __ATOMIC_RELEASE);
    }
    pf_spin_unlock(&add_lock);
}

/* CLOCK_MONOTONIC_COARSE: a few ns from the vDSO, async-signal-safe, a tick (1-4 ms) of resolution. */
static uint64_t coarse_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Marks the span ips[i] falls in (the latest one: a later scan's object at a reused range); 1 when one did. */
static int mark(uint64_t ip, uint32_t n_filed)
{
    for (uint32_t i = n_filed; i-- > 0;) {
        eh_span_t *s = &spans[i];
        if (ip >= s->obj_lo && ip < s->obj_hi) {
            if (!__atomic_load_n(&s->read, __ATOMIC_RELAXED))
                __atomic_store_n(&s->read, 1, __ATOMIC_RELAXED);
            return 1;
        }
    }
    return 0;
}

void pf_eh_pages_read(const uint64_t *ips, int n)
{
    uint32_t filed = __atomic_load_n(&n_spans, __ATOMIC_ACQUIRE);
    int any = 0;
    for (int i = 0; i < n; i++)
        any |= mark(ips[i], filed);
    if (!any)
        return;
    /* once for the whole stack: the quiet spell starts again */
    __atomic_add_fetch(&reads, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&last_read_ns, coarse_ns(), __ATOMIC_RELAXED);
    if (!__atomic_load_n(&pf_eh_pages_pending, __ATOMIC_RELAXED))
        __atomic_store_n(&pf_eh_pages_pending, 1, __ATOMIC_RELEASE);
}

/* Gives back every span read since the last time, from inside dl_iterate_phdr (the list lock held), while
 * the loader has removed nothing since the spans were filed. A read racing with this either marks its span
 * again (given back next time) or has its pages mapped again on its next fault: both are only time. */
static int release_read_spans(struct dl_phdr_info *first, size_t size, void *arg)
{
    (void)arg;
    if (size < offsetof(struct dl_phdr_info, dlpi_subs) + sizeof first->dlpi_subs || first->dlpi_subs != filed_subs)
        __atomic_store_n(&off, 1, __ATOMIC_RELAXED);
    if (__atomic_load_n(&off, __ATOMIC_RELAXED))
        return 1;
    uint32_t n = __atomic_load_n(&n_spans, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n; i++) {
        eh_span_t *s = &spans[i];
        if (__atomic_exchange_n(&s->read, 0, __ATOMIC_RELAXED) &&
            madvise((void *)(uintptr_t)s->lo, (size_t)(s->hi - s->lo), MADV_DONTNEED) == 0)
            __atomic_add_fetch(&released, 1, __ATOMIC_RELAXED);
    }
    return 1;   /* the first object's entry is enough: the count is the same in every one */
}

/* Without waiting: a thread inside a dl_iterate_phdr callback (the program's, allocating) holds the loader's
 * lock that a release holding release_lock waits for, and would then wait for release_lock itself. A busy
 * lock leaves the spans pending for the next quiet spell. */
static void release(void)
{
    if (!pf_spin_trylock(&release_lock)) {
        __atomic_store_n(&pf_eh_pages_pending, 1, __ATOMIC_RELAXED);
        return;
    }
    if (!unloading)
        dl_iterate_phdr(release_read_spans, NULL);
    else
        __atomic_store_n(&pf_eh_pages_pending, 1, __ATOMIC_RELAXED);
    pf_spin_unlock(&release_lock);
}

void pf_eh_pages_unloading(int begin, int removed)
{
    pf_spin_lock(&release_lock);
    unloading += begin ? 1 : -1;
    if (removed)
        __atomic_store_n(&off, 1, __ATOMIC_RELAXED);
    pf_spin_unlock(&release_lock);
}

void pf_eh_pages_read_done(void)
{
    if (PF_UNLIKELY(__atomic_load_n(&at_once, __ATOMIC_RELAXED)) &&
        __atomic_exchange_n(&pf_eh_pages_pending, 0, __ATOMIC_ACQ_REL) && !__atomic_load_n(&off, __ATOMIC_RELAXED))
        release();
}

void pf_eh_pages_finalizing(void)
{
    __atomic_store_n(&at_once, 1, __ATOMIC_RELAXED);
}

void pf_eh_pages_quiet_step(void)
{
    uint32_t r = __atomic_load_n(&reads, __ATOMIC_RELAXED);
    if (r != seen_reads) {
        seen_reads = r;
        quiet_ticks = 0;
        return;
    }
    if (++quiet_ticks < PF_EH_PAGES_QUIET_TICKS &&
        coarse_ns() - __atomic_load_n(&last_read_ns, __ATOMIC_RELAXED) < PF_EH_PAGES_QUIET_NS)
        return;
    quiet_ticks = 0;
    if (!__atomic_exchange_n(&pf_eh_pages_pending, 0, __ATOMIC_ACQ_REL))
        return;
    pf_cfi_quiet();     /* the rule table kept for the reads just ended may be far larger than needed now */
    if (!__atomic_load_n(&off, __ATOMIC_RELAXED))
        release();
}

uint32_t pf_eh_pages_spans(void)
{
    return __atomic_load_n(&n_spans, __ATOMIC_ACQUIRE);
}

uint32_t pf_eh_pages_released(void)
{
    return __atomic_load_n(&released, __ATOMIC_RELAXED);
}

void pf_eh_pages_reset(void)
{
    n_spans = 0;
    pf_eh_pages_pending = 0;
    reads = released = 0;
    seen_reads = quiet_ticks = 0;
    last_read_ns = 0;
    add_lock.locked = release_lock.locked = 0;
    unloading = off = at_once = 0;
    filed_subs = ~0ull;
}
