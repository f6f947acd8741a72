/* pf_addr_home.h - where a key goes in an open-addressing table keyed by address, when neighbours come and
 * go together (a pymalloc pool filled, a dict torn down): the runtime's object table (recorder/pf_objtable.c) and the
 * reporter's map of live objects (report/). With fully hashed homes each of those was a cache miss.
 *
 * The objects of one 1 KiB block get homes in one window of 128 slots, two slots per 16-byte granule in
 * address order, so neighbours' inserts and removals walk the array in order. Two slots a granule leave
 * every other slot free even where a block is packed with 16-byte objects, so a neighbouring window running
 * into it probes one slot further, not across it. The window's start is the caller's hash of the block,
 * not aligned to 128: page-aligned objects (one a block, all at offset 0) then still spread (aligned
 * windows gave them 37 slots of mean displacement against 0.8 fully hashed). */
#ifndef PF_ADDR_HOME_H
#define PF_ADDR_HOME_H

#include <stdint.h>

/* The block whose hash starts an address's window. */
static inline uint64_t pf_home_block(uint64_t addr)
{
    return addr >> 10;
}

/* The home of addr, given its block's hash (the caller masks it to its array). */
static inline uint64_t pf_home_in_window(uint64_t block_hash, uint64_t addr)
{
    return block_hash + ((addr >> 3) & 126);
}

#endif /* PF_ADDR_HOME_H */
