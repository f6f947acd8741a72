/* pf_watch_futile.c - emulated watchpoints: instructions whose watches keep giving up are sampled less.
 *
 * Where debug registers do not fire, a watch single-steps the thread until its word is touched again or
 * the step limit passes. Most of that stepping is spent on watches that give up, and they come from few
 * instructions: examples/watch/loop_invariant.py gave 930 give-ups and 86 repeats from 88 sampled
 * instructions, 865 of the give-ups from 15 instructions that never saw a repeat. A watch that gives up
 * reports nothing (no pair, no bytes in either fraction), so not arming those instructions again changes
 * no fraction and leaves the --watch-budget to the watches that find something. A futile instruction is
 * still tried now and then (after 8, 16, 32 ... skipped samples), and one repeat clears it for good.
 * Per thread, direct-mapped by pc: no locks, and a collision only forgets.
 */
#include "pf_watch_int.h"

#define PF_FUTILE_AFTER 2           /* give-ups without a repeat before an instruction is skipped */
#define PF_FUTILE_BACKOFF_MAX 10    /* skips between retries: 8 << min(give-ups - AFTER, this) */

static pf_watch_futile_t *entry_of(pf_watch_futile_t *tab, uint64_t pc)
{
    uint64_t h = pc * 0x9e3779b97f4a7c15ull;
    return &tab[h >> (64 - PF_WATCH_FUTILE_BITS)];
}

int pf_watch_futile_skip(pf_watch_futile_t *tab, uint64_t pc)
{
    pf_watch_futile_t *e = entry_of(tab, pc);
    if (e->pc != pc || e->repeats || e->give_ups < PF_FUTILE_AFTER)
        return 0;
    unsigned shift = e->give_ups - PF_FUTILE_AFTER;
    uint32_t backoff = 8u << (shift < PF_FUTILE_BACKOFF_MAX ? shift : PF_FUTILE_BACKOFF_MAX);
    if (++e->skipped < backoff)
        return 1;
    e->skipped = 0;     /* one more try */
    return 0;
}

void pf_watch_futile_gave_up(pf_watch_futile_t *tab, uint64_t pc)
{
    pf_watch_futile_t *e = entry_of(tab, pc);
    if (e->pc != pc) {
        e->pc = pc;
        e->give_ups = e->repeats = 0;
        e->skipped = 0;
    }
    if (e->give_ups < UINT16_MAX)
        e->give_ups++;
}

void pf_watch_futile_repeated(pf_watch_futile_t *tab, uint64_t pc)
{
    pf_watch_futile_t *e = entry_of(tab, pc);
    if (e->pc == pc && e->repeats < UINT16_MAX)
        e->repeats++;
}
