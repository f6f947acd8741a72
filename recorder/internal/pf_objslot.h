/* pf_objslot.h - the object table's slot word (recorder/pf_objtable.c): one 64-bit word per live object.
 *
 *   bits  0..43  key: the address >> 4 (a 48-bit address space, 16-byte granules); 0 = empty slot
 *   bit     44   wide: the rest names a wide record in the stripe's pool (pf_objtable.c)
 *   bits 45..63  compact: size (12 bits), domain (3 bits), flags (4 bits)
 *                wide: the record's index in the stripe's pool (19 bits)
 *
 * An object is compact when its address is 16-byte aligned and below 2^48, its size below 4 KiB, its
 * domain below 8 and its flags within the low 4 (PF_ALLOC_SAMPLED/EXACT/NO_PYSTATE/TRUNCATED): what a free
 * needs of it (the API's live bytes, its kind, the content check) is then all in the word. A wide
 * object's key is only where it hashes to: its record holds the full address to compare.
 */
#ifndef PF_OBJSLOT_H
#define PF_OBJSLOT_H

#include <stdint.h>

#define PF_SLOT_KEY_BITS 44u
#define PF_SLOT_KEY_MASK ((1ull << PF_SLOT_KEY_BITS) - 1)
#define PF_SLOT_WIDE (1ull << PF_SLOT_KEY_BITS)
#define PF_SLOT_SIZE_SHIFT 45u
#define PF_SLOT_SIZE_BITS 12u
#define PF_SLOT_DOMAIN_SHIFT (PF_SLOT_SIZE_SHIFT + PF_SLOT_SIZE_BITS)
#define PF_SLOT_DOMAIN_BITS 3u
#define PF_SLOT_FLAGS_SHIFT (PF_SLOT_DOMAIN_SHIFT + PF_SLOT_DOMAIN_BITS)
#define PF_SLOT_FLAGS_BITS 4u
#define PF_SLOT_INDEX_SHIFT 45u
#define PF_SLOT_INDEX_BITS 19u
_Static_assert(PF_SLOT_FLAGS_SHIFT + PF_SLOT_FLAGS_BITS == 64, "the compact fields fill the word");
_Static_assert(PF_SLOT_INDEX_SHIFT + PF_SLOT_INDEX_BITS == 64, "the wide index fills the word");

typedef uint64_t pf_objslot_t;

/* The key of an address: never 0 for an address of at least 16 (the table refuses lower ones). */
static inline uint64_t pf_slot_key_of(uint64_t addr)
{
    return (addr >> 4) & PF_SLOT_KEY_MASK;
}

static inline uint64_t pf_slot_key(pf_objslot_t w)
{
    return w & PF_SLOT_KEY_MASK;
}

/* The address a key stands for (a compact object's own; a wide one's only up to its low 4 and high bits). */
static inline uint64_t pf_slot_key_addr(uint64_t key)
{
    return key << 4;
}

static inline int pf_slot_is_wide(pf_objslot_t w)
{
    return (w & PF_SLOT_WIDE) != 0;
}

/* 1 when an object with these facts fits in a compact slot. */
static inline int pf_slot_fits(uint64_t addr, uint64_t size, uint32_t domain, uint32_t flags, uint32_t site)
{
    return (addr & 15) == 0 && (addr >> 48) == 0 && size < (1ull << PF_SLOT_SIZE_BITS) &&
           domain < (1u << PF_SLOT_DOMAIN_BITS) && flags < (1u << PF_SLOT_FLAGS_BITS) && site == 0;
}

static inline pf_objslot_t pf_slot_compact(uint64_t addr, uint64_t size, uint32_t domain, uint32_t flags)
{
    return pf_slot_key_of(addr) | size << PF_SLOT_SIZE_SHIFT | (uint64_t)domain << PF_SLOT_DOMAIN_SHIFT |
           (uint64_t)flags << PF_SLOT_FLAGS_SHIFT;
}

static inline pf_objslot_t pf_slot_wide(uint64_t addr, uint32_t index)
{
    return pf_slot_key_of(addr) | PF_SLOT_WIDE | (uint64_t)index << PF_SLOT_INDEX_SHIFT;
}

static inline uint64_t pf_slot_size(pf_objslot_t w)
{
    return w >> PF_SLOT_SIZE_SHIFT & ((1u << PF_SLOT_SIZE_BITS) - 1);
}

static inline uint32_t pf_slot_domain(pf_objslot_t w)
{
    return (uint32_t)(w >> PF_SLOT_DOMAIN_SHIFT) & ((1u << PF_SLOT_DOMAIN_BITS) - 1);
}

static inline uint32_t pf_slot_flags(pf_objslot_t w)
{
    return (uint32_t)(w >> PF_SLOT_FLAGS_SHIFT) & ((1u << PF_SLOT_FLAGS_BITS) - 1);
}

static inline uint32_t pf_slot_index(pf_objslot_t w)
{
    return (uint32_t)(w >> PF_SLOT_INDEX_SHIFT);
}

#endif /* PF_OBJSLOT_H */
