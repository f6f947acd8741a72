/* pf_aggregate_flows.c - copy flows of the aggregated recording. See pf_aggregate_flows.h.
 *
 * A fixed open-addressed table under a spin lock: copies are recorded by bytes sampled (a few thousand a
 * second at most on a copy-bound program), each already capturing a stack, so one lock per copy costs
 * nothing that shows. Flows in use are listed in the order they were first used, so a snapshot visits only
 * those. A program with more than PF_AGG_MAX_FLOWS distinct flows counts the rest on their lines only.
 */
#include "pf_aggregate_flows.h"

#include <string.h>

#include "pf_sys.h"

#define PF_AGG_MAX_FLOWS 8192u      /* a power of two */
#define PF_AGG_FLOW_SLOTS (2 * PF_AGG_MAX_FLOWS)
#define N_TOTALS 8                  /* pf_rec_agg_flow_t's counters, bytes .. redundant_count */

typedef struct flow {
    uint64_t key;                   /* 0: empty slot */
    pf_rec_agg_flow_t rec;          /* identity fields; its counters are taken from totals[] */
    uint64_t totals[N_TOTALS];
    uint64_t written[N_TOTALS];
} flow_t;

static flow_t *slots;
static uint32_t *used;              /* slot indexes in order of first use */
static uint32_t n_used;
static int failed;
static pf_spinlock_t lock;

/* A domain in 3 bits: PF_DOMAIN_COUNT < 7, and 7 for an untracked end. */
static uint64_t domain3(uint8_t domain)
{
    return domain == PF_AGG_UNTRACKED ? 7u : domain & 7u;
}

static uint64_t key_of(uint32_t stack_id, int kind, pf_agg_end_t s, pf_agg_end_t d)
{
    /* stack ids are below 65536 (pf_stacks.c), kinds below 8; the top bit keeps a key from being 0 */
    return 1ull << 63 | (uint64_t)(stack_id & 0xffff) | (uint64_t)(s.stack_id & 0xffff) << 16 |
           (uint64_t)(d.stack_id & 0xffff) << 32 | domain3(s.domain) << 48 | domain3(d.domain) << 51 |
           (uint64_t)(kind & 7) << 54;
}

static int ready(void)
{
    if (slots)
        return 1;
    if (failed)
        return 0;
    flow_t *s = pf_sys_alloc_pages(PF_AGG_FLOW_SLOTS * sizeof *s);
    uint32_t *u = pf_sys_alloc_pages(PF_AGG_MAX_FLOWS * sizeof *u);
    if (!s || !u) {
        failed = 1;
        return 0;
    }
    used = u;
    slots = s;
    return 1;
}

/* The slot of key, taken if new (lock held); -1: the table is full. */
static int64_t slot_of(uint64_t key, int *created)
{
    uint64_t h = key * 0x9e3779b97f4a7c15ull;
    for (uint32_t i = 0, at = (uint32_t)(h >> 40) & (PF_AGG_FLOW_SLOTS - 1); i < PF_AGG_FLOW_SLOTS;
         i++, at = (at + 1) & (PF_AGG_FLOW_SLOTS - 1)) {
        if (slots[at].key == key)
            return at;
        if (!slots[at].key) {
            if (n_used == PF_AGG_MAX_FLOWS)
                return -1;
            slots[at].key = key;
            __atomic_store_n(&used[n_used], at, __ATOMIC_RELAXED);
            __atomic_store_n(&n_used, n_used + 1, __ATOMIC_RELEASE);
            *created = 1;
            return at;
        }
    }
    return -1;
}

uint64_t pf_agg_flows_copy(uint32_t stack_id, uint8_t stack_flags, int kind, pf_agg_end_t src, pf_agg_end_t dst,
                           uint64_t est, uint64_t count, int candidate, uint8_t ends)
{
    pf_spin_lock(&lock);
    int created = 0;
    int64_t at = ready() ? slot_of(key_of(stack_id, kind, src, dst), &created) : -1;
    if (at < 0) {
        pf_spin_unlock(&lock);
        return 0;
    }
    flow_t *f = &slots[at];
    if (created)
        f->rec = (pf_rec_agg_flow_t){.flow_id = (uint32_t)at, .stack_id = stack_id, .src_stack_id = src.stack_id,
                                     .dst_stack_id = dst.stack_id, .kind = (uint8_t)kind, .stack_flags = stack_flags,
                                     .src_domain = src.domain, .src_stack_flags = src.stack_flags,
                                     .dst_domain = dst.domain, .dst_stack_flags = dst.stack_flags};
    f->totals[0] += est;
    f->totals[1] += count;
    if (candidate) {
        f->totals[2] += est;
        f->totals[3] += count;
    }
    if (ends)
        f->rec.ends |= (uint8_t)(1u << PF_COPY_END_SRC(ends) | 1u << (4 + PF_COPY_END_DST(ends)));
    pf_spin_unlock(&lock);
    return PF_AGG_FLOW_COPY_ID | (uint64_t)at;
}

void pf_agg_flows_verdict(uint64_t copy_id, int redundant, uint64_t compared)
{
    uint64_t at = copy_id & ~PF_AGG_FLOW_COPY_ID;
    if (!slots || at >= PF_AGG_FLOW_SLOTS)
        return;
    pf_spin_lock(&lock);
    flow_t *f = &slots[at];
    if (f->key) {
        f->totals[4] += compared;
        f->totals[5]++;
        if (redundant) {
            f->totals[6] += compared;
            f->totals[7]++;
        }
    }
    pf_spin_unlock(&lock);
}

int pf_agg_flows_next_changed(uint32_t *cursor, pf_rec_agg_flow_t *out)
{
    if (!slots)
        return 0;
    uint32_t n = __atomic_load_n(&n_used, __ATOMIC_ACQUIRE);
    while (*cursor < n) {
        flow_t *f = &slots[__atomic_load_n(&used[(*cursor)++], __ATOMIC_RELAXED)];
        pf_spin_lock(&lock);
        int changed = memcmp(f->totals, f->written, sizeof f->totals) != 0;
        if (changed) {
            memcpy(f->written, f->totals, sizeof f->totals);
            *out = f->rec;
        }
        pf_spin_unlock(&lock);
        if (!changed)
            continue;
        uint64_t *v = &out->bytes;
        _Static_assert(sizeof(pf_rec_agg_flow_t) == 24 + N_TOTALS * sizeof(uint64_t), "the counters close the entry");
        memcpy(v, f->written, sizeof f->written);
        return 1;
    }
    return 0;
}

void pf_agg_flows_reset(void)
{
    memset(&lock, 0, sizeof lock);
    if (!slots)
        return;
    pf_sys_munmap(slots, PF_AGG_FLOW_SLOTS * sizeof *slots);
    pf_sys_munmap(used, PF_AGG_MAX_FLOWS * sizeof *used);
    slots = NULL;
    used = NULL;
    n_used = 0;
}
