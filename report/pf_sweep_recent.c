/* pf_sweep_recent.c - the sweep's blocks freed lately (pf_sweep_recent_int.h), keeping count of those a
 * later allocation may continue. */
#include "pf_sweep_recent_int.h"

#include <stdlib.h>

#include "pf_util_int.h"

void pf_recent_init(pf_recent_frees_t *R)
{
    R->slots = pf_xcalloc(PF_RECENT_FREES, sizeof *R->slots);
    R->pending = 0;
}

void pf_recent_free_table(pf_recent_frees_t *R)
{
    free(R->slots);
    R->slots = NULL;
    R->pending = 0;
}

/* 1 when a plain allocation at r's address may continue r's block (counted in pending). */
static int is_pending(const recent_free_t *r)
{
    return r->dst_copy1 && r->by_realloc;
}

void pf_recent_freed(pf_recent_frees_t *R, uint64_t key, alloc_site_t site, int64_t dst_copy)
{
    recent_free_t *r = &R->slots[pf_recent_slot(key)];
    R->pending -= (uint64_t)is_pending(r);  /* overwritten: whatever it held is lost */
    *r = (recent_free_t){key + 1, site, dst_copy + 1, 0};
}

void pf_recent_by_realloc(pf_recent_frees_t *R, uint64_t key)
{
    recent_free_t *r = pf_recent_find(R, key);
    if (!r || r->by_realloc)
        return;
    r->by_realloc = 1;
    R->pending += (uint64_t)is_pending(r);
}

int64_t pf_recent_take_chain(pf_recent_frees_t *R, uint64_t key, int proven)
{
    if (!proven && !R->pending)
        return -1;
    recent_free_t *r = pf_recent_find(R, key);
    if (!r || !r->dst_copy1 || !(proven || r->by_realloc))
        return -1;
    R->pending -= (uint64_t)is_pending(r);
    int64_t chain = r->dst_copy1 - 1;
    r->dst_copy1 = 0;   /* one block continues it */
    return chain;
}
