/* pf_idtable.c - hash to id, lock-free reads, growing slot arrays. See pf_idtable.h. */
#include "pf_idtable.h"

#include <string.h>
#include <sys/mman.h>

#define PF_IDTABLE_FIRST_SLOTS 4096u

static pf_idslot_t *current(const pf_idtable_t *t, uint32_t *mask)
{
    uint64_t sm = t->slots_mask;
    *mask = (uint32_t)sm;
    return sm ? t->arrays[sm >> 32] : NULL;
}

static void put(pf_idslot_t *slots, uint32_t mask, pf_idslot_t slot)
{
    uint32_t i = (uint32_t)(slot >> 32) & mask;
    while (slots[i])
        i = (i + 1) & mask;
    __atomic_store_n(&slots[i], slot, __ATOMIC_RELEASE);
}

/* Maps the next, twice larger array (or the first) with every published id in it, and makes it current. */
static int grow(pf_idtable_t *t)
{
    uint32_t old_mask;
    pf_idslot_t *old = current(t, &old_mask);
    if (t->n_arrays == PF_IDTABLE_MAX_ARRAYS)
        return -1;
    uint32_t n = old ? (old_mask + 1) * 2 : PF_IDTABLE_FIRST_SLOTS;
    pf_idslot_t *fresh = pf_sys_alloc_pages((size_t)n * sizeof *fresh);
    if (!fresh)
        return -1;
    for (uint32_t i = 0; old && i <= old_mask; i++)
        if (old[i])
            put(fresh, n - 1, old[i]);
    t->arrays[t->n_arrays] = fresh;
    __atomic_store_n(&t->slots_mask, (uint64_t)t->n_arrays << 32 | (n - 1), __ATOMIC_RELEASE);
    t->n_arrays++;
    if (old)    /* readers still in it now meet empty slots: a miss, looked up again under the lock */
        madvise(old, (size_t)(old_mask + 1) * sizeof *old, MADV_DONTNEED);
    return 0;
}

void *pf_idtable_reserve(pf_idtable_t *t, uint32_t *id)
{
    *id = 0;
    uint32_t next = t->next_id ? t->next_id : 1;
    uint32_t b = (next - 1) / PF_IDTABLE_BLOCK_IDS;
    if (b >= PF_IDTABLE_MAX_BLOCKS)
        return NULL;
    if (!t->blocks[b]) {
        char *block = pf_sys_alloc_pages((size_t)PF_IDTABLE_BLOCK_IDS * t->entry_bytes);
        if (!block)
            return NULL;
        __atomic_store_n(&t->blocks[b], block, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&t->next_id, next + 1, __ATOMIC_RELAXED);
    *id = next;
    return pf_idtable_entry(t, next);
}

int pf_idtable_publish(pf_idtable_t *t, uint64_t h, uint32_t id)
{
    uint32_t mask;
    pf_idslot_t *slots = current(t, &mask);
    if ((!slots || (uint64_t)(t->used + 1) * 4 > (uint64_t)(mask + 1) * 3)) {
        if (grow(t) != 0)
            return -1;
        slots = current(t, &mask);
    }
    put(slots, mask, pf_idslot_make(h, id));
    t->used++;
    return 0;
}

void pf_idtable_reset(pf_idtable_t *t)
{
    uint32_t n = PF_IDTABLE_FIRST_SLOTS;
    for (uint32_t a = 0; a < t->n_arrays; a++, n *= 2)
        pf_sys_munmap(t->arrays[a], (size_t)n * sizeof(pf_idslot_t));
    for (uint32_t b = 0; b < PF_IDTABLE_MAX_BLOCKS && t->blocks[b]; b++)
        pf_sys_munmap(t->blocks[b], (size_t)PF_IDTABLE_BLOCK_IDS * t->entry_bytes);
    uint32_t entry_bytes = t->entry_bytes;
    memset(t, 0, sizeof *t);
    t->entry_bytes = entry_bytes;
}
