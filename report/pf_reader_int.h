/* pf_reader_int.h - opens a profile file, checks it, and walks its records (layout: core/pf_format.h).
 *
 * Validation happens at two depths: the header when the file is opened (magic, version, sizes), and every
 * record while walking (length, alignment, bounds, and each type's own counts against its length). What
 * is wrong is said in one sentence naming the file and the byte offset. A file cut short (the program was
 * killed while the file grew) is not an error: the walk ends where the data ends.
 */
#ifndef PF_READER_INT_H
#define PF_READER_INT_H

#include <stddef.h>
#include <stdint.h>

#include "pf_format.h"

typedef struct pf_file {
    char *path;
    const unsigned char *data;
    size_t size;
    pf_file_header_t header;    /* copied out, argv NUL-terminated */
    /* Set by the caller before a walk: a PF_REC_PACKED record's first event is checked, not every one (the
     * report's loader: its merge decodes and checks them all as it reads them, pf_model_events.c) */
    int skim_packed;
    /* a file its program is still writing (pf_file_open_growing): the address space kept for it, and its
     * descriptor; 0 for a file opened whole */
    size_t reserved;
    int fd;
} pf_file_t;

/* The loader keeps a record's place as a 32-bit count of 8-byte units: 32 GiB, eight times the size cap
 * of a profile (recorder/internal/pf_writer.h). */
#define PF_READER_MAX_BYTES ((uint64_t)32 << 30)

/* Maps path and checks its header. Returns 0, or -errno / -EINVAL with a sentence in err. */
int pf_file_open(const char *path, pf_file_t *f, char *err, size_t errlen);
void pf_file_close(pf_file_t *f);

/* Opens a profile its program is still writing: its header checked as pf_file_open checks it, and its bytes
 * mapped in address space kept for the largest profile, where pf_file_follow maps what it gains. Returns as
 * pf_file_open; -EAGAIN while the file is shorter than a header (it is being created). */
int pf_file_open_growing(const char *path, pf_file_t *f, char *err, size_t errlen);
/* Maps what a file opened growing has gained: f->size is then its size. Returns 0, or -errno. */
int pf_file_follow(pf_file_t *f);

/* One record: its header, payload (bytes after the header) and where it was found. */
typedef struct pf_record {
    uint16_t type;
    uint16_t aux;
    uint32_t payload_bytes;
    const void *payload;
    uint32_t tid;       /* its writer: the chunk's, or the latest PF_REC_WRITER's before it in the chunk */
    uint64_t offset;    /* of the record header in the file */
    uint64_t chunk;     /* of its chunk's header (the walk knows it: no division per record to find it) */
    /* PF_REC_PACKED: its events (checked, one by one, as the walk checks every record) and the first and
     * last one's t_ns; 0 otherwise. Skimmed (pf_file_t.skim_packed): 1 when it holds an event, and the
     * first one's t_ns in both, packed_skimmed set. */
    uint32_t packed_events;
    uint8_t packed_skimmed;
    uint64_t packed_first_ns, packed_last_ns;
} pf_record_t;

/* Calls fn for every record of every chunk, in file order (per thread, that is time order), PF_REC_WRITER
 * records included (r->tid is then the new writer). fn returns 0 to go on. Returns 0, fn's non-zero
 * result, or -EINVAL with a sentence in err for a corrupt record. */
int pf_file_walk(const pf_file_t *f, int (*fn)(void *ctx, const pf_record_t *r), void *ctx, char *err,
                 size_t errlen);

/* pf_file_walk over the chunks that start in [from, to) (from a chunk's offset), bytes past to unread. */
int pf_file_walk_chunks(const pf_file_t *f, uint64_t from, uint64_t to, int (*fn)(void *ctx, const pf_record_t *r),
                        void *ctx, char *err, size_t errlen);

/* Where a SPAWN record's command line (PF_SPAWN_UNPROFILED) starts: after its fixed part and its stack. */
static inline const char *pf_spawn_command(const pf_rec_spawn_t *s)
{
    uint64_t stack = s->flags & PF_ALLOC_STACK_REF ? sizeof(pf_rec_stack_ref_t)
                                                   : (uint64_t)s->n_py * sizeof(pf_rec_pyframe_t) + (uint64_t)s->n_native * 8;
    return (const char *)(s + 1) + stack;
}

#endif /* PF_READER_INT_H */
