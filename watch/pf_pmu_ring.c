/* pf_pmu_ring.c - the sample ring of an event whose samples carry the data address (Intel PEBS, AMD IBS,
 * the kernel's page-fault events): PERF_SAMPLE_IP | PERF_SAMPLE_ADDR records, read in the overflow signal
 * handler of the thread that owns the ring.
 *
 * One metadata page and PF_WATCH_RING_PAGES data pages per thread: the handler consumes every record at
 * each signal, so the ring never holds more than a few (perf_event_mlock_kb, 516 KiB by default, is shared
 * by all of a user's rings: 8 KiB each leaves room for dozens of threads).
 */
#include "pf_watch_int.h"

#include <linux/perf_event.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static size_t page_size(void)
{
    static size_t ps;
    if (!ps)
        ps = (size_t)sysconf(_SC_PAGESIZE);
    return ps;
}

int pf_watch_ring_map(int fd, pf_watch_ring_t *r)
{
    size_t len = (1 + PF_WATCH_RING_PAGES) * page_size();
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return -1;
    r->base = m;
    r->len = len;
    return 0;
}

void pf_watch_ring_unmap(pf_watch_ring_t *r)
{
    if (r->base)
        munmap(r->base, r->len);
    r->base = NULL;
    r->len = 0;
}

/* Copies n bytes at ring offset off (modulo size) out of the data area, across its end. */
static void ring_copy(const uint8_t *data, uint64_t size, uint64_t off, void *dst, size_t n)
{
    uint64_t at = off % size;
    size_t first = (size_t)(size - at) < n ? (size_t)(size - at) : n;
    memcpy(dst, data + at, first);
    memcpy((uint8_t *)dst + first, data, n - first);
}

int pf_watch_ring_parse(const uint8_t *data, uint64_t size, uint64_t tail, uint64_t head, uint64_t *ip,
                        uint64_t *addr, pf_watch_ring_count_t *count)
{
    int found = 0;
    while (head - tail >= sizeof(struct perf_event_header)) {
        struct perf_event_header h;
        ring_copy(data, size, tail, &h, sizeof h);
        if (h.size < sizeof h || h.size > head - tail)
            break;                  /* torn or corrupt: drop the rest */
        if (h.type == PERF_RECORD_SAMPLE && h.size >= sizeof h + 16) {
            uint64_t v[2];
            ring_copy(data, size, tail + sizeof h, v, sizeof v);
            *ip = v[0];
            *addr = v[1];
            found = 1;
            if (count) {
                count->samples++;
                count->with_addr += v[1] != 0;
                count->in_range += v[1] >= count->lo && v[1] < count->hi;
            }
        }
        tail += h.size;
    }
    return found;
}

static int consume(pf_watch_ring_t *r, uint64_t *ip, uint64_t *addr, pf_watch_ring_count_t *count)
{
    if (!r->base)
        return 0;
    struct perf_event_mmap_page *pg = r->base;
    uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = pg->data_tail;
    uint64_t off = pg->data_offset ? pg->data_offset : page_size();
    uint64_t size = pg->data_size ? pg->data_size : PF_WATCH_RING_PAGES * page_size();
    int found = pf_watch_ring_parse((const uint8_t *)r->base + off, size, tail, head, ip, addr, count);
    __atomic_store_n(&pg->data_tail, head, __ATOMIC_RELEASE);
    return found;
}

int pf_watch_ring_last(pf_watch_ring_t *r, uint64_t *ip, uint64_t *addr) { return consume(r, ip, addr, NULL); }

int pf_watch_ring_count(pf_watch_ring_t *r, pf_watch_ring_count_t *count)
{
    uint64_t ip, addr;
    return consume(r, &ip, &addr, count);
}
