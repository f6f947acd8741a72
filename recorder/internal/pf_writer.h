/* pf_writer.h - streams records into the profile file (layout: core/pf_format.h).
 *
 * The file is mapped MAP_SHARED one segment (64 chunks) at a time and grown a chunk at a time (16 at a time
 * once a process has written 16: pf_writer.c, reserve_blocks); a thread
 * takes a whole chunk with one atomic add and then writes records into it alone, so the hot path is
 * lock-free and what is written is in the page cache at once (it survives SIGKILL). A chunk a thread has
 * finished is dropped from the process's resident set with MADV_DONTNEED (its contents stay in the file), so
 * the profile costs the program about one chunk of memory per thread. A thread that ends with room left in
 * its chunk hands it to the next thread that starts recording (PF_REC_WRITER), so short-lived threads and
 * processes cost the file about what they record.
 */
#ifndef PF_WRITER_H
#define PF_WRITER_H

#include <stdint.h>

#include "pf_rec_int.h"

/* pf_writer_info_t: pf_recorder.h. */

/* Opens the profile for this process: base_path itself when this is the launched process and the file is
 * still empty, else base_path.<pid> (or base_path.<pid>.<n>). Writes the header. Returns 0, or -errno. */
int pf_writer_open(const char *base_path, int is_root, const pf_writer_info_t *info);

/* In a fork child: forgets the parent's file (without touching it) and opens the child's own.
 * Returns 0, or -errno (recording then stops in the child). */
int pf_writer_reopen_child(void);

/* The writer generation: changes when a fork child opens its own file. */
uint32_t pf_writer_generation(void);

/* Space for a record of `bytes` (a multiple of 8, header included) in the calling thread's chunk, taking a
 * new chunk when needed. Returns NULL when the record cannot be written (no file, file limit reached,
 * record larger than a chunk); the drop is counted. */
void *pf_writer_reserve(pf_tls_t *t, uint32_t bytes);

/* Publishes a record filled after pf_writer_reserve: the header is stored last, with release order. */
static inline void pf_writer_commit(pf_tls_t *t, void *rec, uint16_t type, uint16_t aux, uint32_t bytes)
{
    uint64_t header = (uint64_t)type | ((uint64_t)aux << 16) | ((uint64_t)bytes << 32);
    __atomic_store_n((uint64_t *)rec, header, __ATOMIC_RELEASE);
    t->chunk_pos = (char *)rec + bytes;
}

/* The profile's size cap. Near it, sampling lowers its rate rather than records being dropped: the fill
 * level L is the number of halvings of the room left (level 1 once half the chunks are taken, 2 at three
 * quarters, ...), and the samplers use a mean 4^L times the configured one (pf_record.c). Each level thus
 * lasts about twice as long as the one before at a steady allocation rate, so a run of any length keeps
 * within the cap; what the cap costs is coarser sampling late in the run, said in the report. */
#define PF_WRITER_MAX_BYTES ((uint64_t)4 << 30)
uint32_t pf_writer_fill_level(void);

/* The level for `used` of `max` chunks: floor(log2(max / (max - used))), capped; pure, for unit tests. */
static inline uint32_t pf_writer_level_for(uint64_t used, uint64_t max)
{
    if (used >= max)
        return 24;
    uint64_t left = max - used;
    uint32_t level = 0;
    while (level < 24 && (left << (level + 1)) <= max)
        level++;
    return level;
}

/* Records that could not be written since the start. */
uint64_t pf_writer_dropped(void);

/* Fork safety around the segment lock. */
void pf_writer_fork_prepare(void);
void pf_writer_fork_parent(void);

#define PF_CHUNK_PAYLOAD_MAX (PF_CHUNK_BYTES - PF_CHUNK_HEADER_BYTES)

#endif /* PF_WRITER_H */
