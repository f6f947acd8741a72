/* pf_trailer.c - the launcher's EXIT record: one chunk (tid 0) appended after the runtime's chunks, so a
 * saved profile knows how its program ended. Payload first, header last, like the runtime writes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pf_cli_int.h"
#include "pf_format.h"
#include "pf_notes.h"

int pf_trailer_append(int fd, const pf_child_status_t *st, const long *running, size_t n_running,
                      char *const *argv, const pf_notes_t *notes)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return -errno;
    if (sb.st_size < (off_t)PF_HEADER_BYTES)
        return 1;
    uint64_t body = (uint64_t)sb.st_size - PF_HEADER_BYTES;
    uint64_t k = (body + PF_CHUNK_BYTES - 1) / PF_CHUNK_BYTES;
    off_t at = (off_t)(PF_HEADER_BYTES + k * PF_CHUNK_BYTES);
    char *chunk = calloc(1, PF_CHUNK_BYTES);
    if (!chunk)
        return -ENOMEM;
    pf_chunk_header_t ch = {PF_CHUNK_MAGIC, 0, 0};
    memcpy(chunk, &ch, sizeof ch);
    pf_rec_header_t rh = {PF_REC_EXIT, 0, (uint32_t)(sizeof rh + sizeof(pf_rec_exit_t))};
    pf_rec_exit_t x = {st->elapsed_ns, st->code, st->signaled ? PF_EXIT_SIGNALED : 0};
    memcpy(chunk + PF_CHUNK_HEADER_BYTES + sizeof rh, &x, sizeof x);
    memcpy(chunk + PF_CHUNK_HEADER_BYTES, &rh, sizeof rh);
    size_t at_argv = PF_CHUNK_HEADER_BYTES + rh.bytes;
    if (running && n_running <= PF_RUNNING_MAX) {
        pf_rec_header_t nh = {PF_REC_RUNNING, (uint16_t)n_running,
                              (uint32_t)((sizeof nh + n_running * sizeof(uint32_t) + 7) & ~(size_t)7)};
        for (size_t i = 0; i < n_running; i++) {
            uint32_t pid = (uint32_t)running[i];
            memcpy(chunk + at_argv + sizeof nh + i * sizeof pid, &pid, sizeof pid);
        }
        memcpy(chunk + at_argv, &nh, sizeof nh);
        at_argv += nh.bytes;
    }
    /* the children's messages (at most ~21 of 600 bytes: pf_notes.c), then the whole argv: the header has
     * room for 3 KiB of it; here up to the rest of the chunk */
    for (size_t i = 0; notes && i < notes->n; i++) {
        size_t len = strlen(notes->lines[i]) + 1, bytes = (sizeof rh + len + 7) & ~(size_t)7;
        if (at_argv + bytes + sizeof rh > PF_CHUNK_BYTES / 2)
            break;
        pf_rec_header_t nh = {PF_REC_NOTE, 0, (uint32_t)bytes};
        memcpy(chunk + at_argv + sizeof nh, notes->lines[i], len);
        memcpy(chunk + at_argv, &nh, sizeof nh);
        at_argv += bytes;
    }
    size_t room = PF_CHUNK_BYTES - at_argv - sizeof rh, used = 0;
    char *args = chunk + at_argv + sizeof rh;
    uint16_t count = 0;
    for (size_t i = 0; argv && argv[i] && used < room && count < UINT16_MAX; i++, count++) {
        size_t len = strlen(argv[i]) + 1;
        if (len > room - used)
            len = room - used;  /* cut: the last byte stays a NUL */
        memcpy(args + used, argv[i], len);
        used += len;
        args[used - 1] = '\0';
    }
    if (used) {
        pf_rec_header_t ah = {PF_REC_ARGV, count, (uint32_t)((sizeof ah + used + 7) & ~(size_t)7)};
        memcpy(chunk + at_argv, &ah, sizeof ah);
    }
    ssize_t w = pwrite(fd, chunk, PF_CHUNK_BYTES, at);
    int e = w == (ssize_t)PF_CHUNK_BYTES ? 0 : (w < 0 ? -errno : -EIO);
    free(chunk);
    return e;
}
