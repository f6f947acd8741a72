/* pf_sweep_recent.c - the sweep's blocks freed lately (pf_sweep_recent_int.h), keeping count of those a
 * later allocation may continue. */
#include "pf_sweep_recent_int.h"

#include <stdlib.h>

#include "pf_util_int.h"

void pf_recent_init(pf_recent_frees_t *R)
{
    R->slots = pf_xcalloc_table(PF_RECENT_FREES, sizeof *R->slots, 1);
    R->pending_bits = pf_xcalloc(PF_RECENT_FREES / 64, sizeof *R->pending_bits);
    R->pending = 0;
}

void pf_recent_free_table(pf_recent_frees_t *R)
{
    pf_free_huge(R->slots, PF_RECENT_FREES * sizeof *R->slots);
    free(R->pending_bits);
    R->slots = NULL;
    R->pending_bits = NULL;
    R->pending = 0;
}

void pf_recent_unmark(pf_recent_frees_t *R, uint32_t s)
{
    uint64_t bit = 1ull << (s & 63), *word = &R->pending_bits[s >> 6];
    if (*word & bit) {
        *word &= ~bit;
        R->pending--;
    }
}

void pf_recent_by_realloc(pf_recent_frees_t *R, uint64_t key)
{
    recent_free_t *r = pf_recent_find(R, key);
    if (!r || r->by_realloc)
        return;
    r->by_realloc = 1;
    if (r->dst_copy1) {
        uint32_t s = (uint32_t)(r - R->slots);
        R->pending_bits[s >> 6] |= 1ull << (s & 63);
        R->pending++;
    }
}

int64_t pf_recent_take_chain(pf_recent_frees_t *R, uint64_t key, int proven)
{
    if (!proven && !R->pending)
        return -1;
    recent_free_t *r = pf_recent_find(R, key);
    if (!r || !r->dst_copy1 || !(proven || r->by_realloc))
        return -1;
    pf_recent_unmark(R, (uint32_t)(r - R->slots));
    int64_t chain = r->dst_copy1 - 1;
    r->dst_copy1 = 0;   /* one block continues it */
    return chain;
}
