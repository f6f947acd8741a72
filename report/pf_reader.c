/* pf_reader.c - profile file validation and record walking. See pf_reader_int.h. */
#include "pf_reader_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pf_packed.h"
#include "pf_util_int.h"

/* Copies a pipe, to its end, into a memory-backed file, so that it maps and drops pages like a profile on
 * disk. Returns the new descriptor (the pipe is closed), or -errno (EFBIG past PF_READER_MAX_BYTES). */
static int stream_to_memfd(int fd)
{
    int mem = memfd_create("pyflow-profile", MFD_CLOEXEC);
    int e = mem < 0 ? errno : 0;
    uint64_t total = 0;
    static char buf[1 << 16];
    while (!e) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            e = n < 0 ? errno : 0;
            break;
        }
        if ((total += (uint64_t)n) > PF_READER_MAX_BYTES)
            e = EFBIG;
        for (ssize_t done = 0; !e && done < n;) {
            ssize_t w = write(mem, buf + done, (size_t)(n - done));
            if (w < 0 && errno != EINTR)
                e = errno;
            else if (w > 0)
                done += w;
        }
    }
    close(fd);
    if (e) {
        if (mem >= 0)
            close(mem);
        return -e;
    }
    return mem;
}

static int check_header(const char *path, pf_file_t *f, char *err, size_t errlen);

/* f emptied and path opened for reading: the descriptor, or -errno with a sentence in err. */
static int open_profile(const char *path, pf_file_t *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    return fd;
}

int pf_file_open(const char *path, pf_file_t *f, char *err, size_t errlen)
{
    int fd = open_profile(path, f, err, errlen);
    if (fd < 0)
        return fd;
    struct stat st;
    if (fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) {
        /* a pipe (`pyflow report <(...)`, a FIFO): read once, to its end */
        fd = stream_to_memfd(fd);
        if (fd < 0) {
            snprintf(err, errlen, "%s: %s", path, fd == -EFBIG ? "far larger than any profile pyflow writes (4 GiB)"
                     : strerror(-fd));
            return fd;
        }
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int e = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        snprintf(err, errlen, "%s: %s", path, e == EISDIR ? "is a directory" : "not a regular file");
        close(fd);
        return -e;
    }
    if (st.st_size == 0) {
        snprintf(err, errlen, "%s is empty: the program did not start under pyflow's runtime", path);
        close(fd);
        return -EINVAL;
    }
    if ((size_t)st.st_size < sizeof(pf_file_header_t) || (size_t)st.st_size < 8) {
        snprintf(err, errlen, "%s is not a pyflow profile (%lld bytes, too short for a header)", path,
                 (long long)st.st_size);
        close(fd);
        return -EINVAL;
    }
    if ((uint64_t)st.st_size > PF_READER_MAX_BYTES) {
        snprintf(err, errlen, "%s is %lld bytes, far larger than any profile pyflow writes (4 GiB): not a "
                 "profile, or corrupt", path, (long long)st.st_size);
        close(fd);
        return -EINVAL;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        int e = errno;
        snprintf(err, errlen, "%s: cannot map it: %s", path, strerror(e));
        return -e;
    }
    f->data = m;
    f->size = (size_t)st.st_size;
    return check_header(path, f, err, errlen);
}

/* The header of the mapped f: copied out and checked. Returns 0, or -EINVAL (f closed). */
static int check_header(const char *path, pf_file_t *f, char *err, size_t errlen)
{
    f->path = pf_xstrndup(path, strlen(path));
    memcpy(&f->header, f->data, sizeof f->header);
    const pf_file_header_t *h = &f->header;
    const char *why = NULL;
    char version[160];
    snprintf(version, sizeof version, "has format version %u; this pyflow reads versions 1 to %u (%s)", h->version,
             PF_FORMAT_VERSION, h->version > PF_FORMAT_VERSION ? "written by a newer pyflow: update pyflow to read it"
                                                               : "corrupt at offset 8");
    if (memcmp(h->magic, PF_FILE_MAGIC, 8) != 0)
        why = "is not a pyflow profile (wrong magic at offset 0)";
    else if (h->version > PF_FORMAT_VERSION || h->version == 0)
        why = version;
    else if (h->header_bytes != PF_HEADER_BYTES)
        why = "is corrupt: unexpected header size at offset 12";
    else if (h->chunk_bytes < 4096 || h->chunk_bytes > (64u << 20) || (h->chunk_bytes & 7))
        why = "is corrupt: unexpected chunk size at offset 16";
    else if (h->argv_bytes > PF_ARGV_BYTES)
        why = "is corrupt: argv length out of range";
    if (why) {
        snprintf(err, errlen, "%s %s", path, why);
        pf_file_close(f);
        return -EINVAL;
    }
    f->header.argv[PF_ARGV_BYTES - 1] = '\0';
    f->header.python_version[sizeof f->header.python_version - 1] = '\0';
    return 0;
}

static size_t page_up(size_t n)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (n + page - 1) / page * page;
}

int pf_file_open_growing(const char *path, pf_file_t *f, char *err, size_t errlen)
{
    int fd = open_profile(path, f, err, errlen);
    if (fd < 0)
        return fd;
    struct stat st;
    int stated = fstat(fd, &st) == 0;
    if (!stated || !S_ISREG(st.st_mode) || (size_t)st.st_size < PF_HEADER_BYTES) {
        /* the runtime writes the whole header, then sets the size to a header's: shorter, it is coming */
        int e = !stated || S_ISREG(st.st_mode) ? EAGAIN : EINVAL;
        snprintf(err, errlen, "%s: %s", path, e == EAGAIN ? "no header yet" : "not a regular file");
        close(fd);
        return -e;
    }
    void *base = mmap(NULL, (size_t)PF_READER_MAX_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
        int e = errno;
        snprintf(err, errlen, "%s: cannot map it: %s", path, strerror(e));
        close(fd);
        return -e;
    }
    f->data = base;
    f->reserved = (size_t)PF_READER_MAX_BYTES;
    f->fd = fd;
    int rc = pf_file_follow(f);
    if (rc < 0) {
        snprintf(err, errlen, "%s: cannot map it: %s", path, strerror(-rc));
        pf_file_close(f);
        return rc;
    }
    return check_header(path, f, err, errlen);
}

int pf_file_follow(pf_file_t *f)
{
    struct stat st;
    if (fstat(f->fd, &st) != 0)
        return -errno;
    size_t size = (size_t)st.st_size < f->reserved ? (size_t)st.st_size : f->reserved;
    size_t mapped = page_up(f->size), want = page_up(size);
    if (want > mapped &&
        mmap((void *)(f->data + mapped), want - mapped, PROT_READ, MAP_PRIVATE | MAP_FIXED, f->fd, (off_t)mapped) ==
            MAP_FAILED)
        return -errno;
    if (size > f->size)
        f->size = size;
    return 0;
}

void pf_file_close(pf_file_t *f)
{
    if (f->data)
        munmap((void *)f->data, f->reserved ? f->reserved : f->size);
    if (f->reserved)
        close(f->fd);
    free(f->path);
    memset(f, 0, sizeof *f);
}

/* 1 when a fixed part of `fixed` bytes followed by n_py Python frames and n_native IPs fits in n bytes. */
static int frames_fit(size_t fixed, uint16_t n_py, uint16_t n_native, uint32_t n)
{
    return (uint64_t)fixed + (uint64_t)n_py * sizeof(pf_rec_pyframe_t) + (uint64_t)n_native * 8 <= n;
}

/* 1 when the stack part of an ALLOC or COPY after its fixed part is wrong: inline frames that do not fit,
 * or a reference to a STACK record (PF_ALLOC_STACK_REF) that does not fit or comes with inline frames. */
static int check_stack_tail(size_t fixed, uint8_t flags, uint16_t n_py, uint16_t n_native, uint32_t n)
{
    if (!(flags & PF_ALLOC_STACK_REF))
        return !frames_fit(fixed, n_py, n_native, n);
    return n_py || n_native || fixed + sizeof(pf_rec_stack_ref_t) > n;
}

/* Checks a record's type-specific lengths. Returns NULL when consistent, else what is wrong. */
static const char *check_payload(pf_record_t *r, int skim)
{
    const unsigned char *p = r->payload;
    uint32_t n = r->payload_bytes;
    switch (r->type) {
    case PF_REC_ALLOC: {
        if (n < sizeof(pf_rec_alloc_t))
            return "allocation record shorter than its fixed part";
        const pf_rec_alloc_t *a = (const void *)p;
        if (check_stack_tail(sizeof *a, a->flags, a->n_py, a->n_native, n))
            return "allocation record's stack does not fit it (frame counts or stack reference)";
        if (a->domain >= PF_DOMAIN_COUNT)
            return "allocation record with an unknown domain";
        return NULL;
    }
    case PF_REC_ALLOC_SHORT: {
        if (n < sizeof(pf_rec_alloc_short_t))
            return "short allocation record too short";
        if ((r->aux & 0xff) >= PF_DOMAIN_COUNT)
            return "allocation record with an unknown domain";
        return r->aux >> 8 & PF_ALLOC_STACK_REF ? NULL : "short allocation record without its stack reference";
    }
    case PF_REC_FREE:
        return n < sizeof(pf_rec_free_t) ? "free record too short" : NULL;
    case PF_REC_PACKED: {
        int rc = pf_pk_span(p, n, skim, &r->packed_events, &r->packed_first_ns, &r->packed_last_ns);
        r->packed_skimmed = (uint8_t)(skim && r->packed_events);
        return rc < 0 ? "packed record holds bytes that are no event" : NULL;
    }
    case PF_REC_CONTENT:
        return n < sizeof(pf_rec_content_t) ? "content record too short" : NULL;
    case PF_REC_CODE: {
        if (n < sizeof(pf_rec_code_t))
            return "code record shorter than its fixed part";
        const pf_rec_code_t *c = (const void *)p;
        if ((uint64_t)sizeof *c + c->filename_len + c->name_len + c->linetable_len > n)
            return "code record's string lengths exceed its length";
        return NULL;
    }
    case PF_REC_MODULE: {
        if (n < sizeof(pf_rec_module_t))
            return "module record too short";
        const pf_rec_module_t *m = (const void *)p;
        return sizeof *m + (uint64_t)m->path_len > n ? "module record's path exceeds its length" : NULL;
    }
    case PF_REC_THREAD: {
        if (n < sizeof(pf_rec_thread_t))
            return "thread record too short";
        const pf_rec_thread_t *t = (const void *)p;
        uint64_t handle = r->aux & PF_THREAD_HANDLE ? 8 : 0;
        return sizeof *t + handle + t->name_len > n ? "thread record's name exceeds its length" : NULL;
    }
    case PF_REC_MARK: {
        if (n < sizeof(pf_rec_mark_t))
            return "mark record too short";
        const pf_rec_mark_t *m = (const void *)p;
        return sizeof *m + (uint64_t)m->note_len > n ? "mark record's note exceeds its length" : NULL;
    }
    case PF_REC_EXIT:
        return n < sizeof(pf_rec_exit_t) ? "exit record too short" : NULL;
    case PF_REC_RUNNING:
        return n < (uint64_t)r->aux * sizeof(uint32_t) ? "running-children record shorter than its count" : NULL;
    case PF_REC_COPY: {
        if (n < sizeof(pf_rec_copy_t))
            return "copy record shorter than its fixed part";
        const pf_rec_copy_t *c = (const void *)p;
        if (check_stack_tail(sizeof *c, c->flags, c->n_py, c->n_native, n))
            return "copy record's stack does not fit it (frame counts or stack reference)";
        return NULL;
    }
    case PF_REC_COPY_SHORT:
        if (n < sizeof(pf_rec_copy_short_t))
            return "short copy record too short";
        return r->aux >> 8 & PF_ALLOC_STACK_REF ? NULL : "short copy record without its stack reference";
    case PF_REC_VERDICT:
        return n < sizeof(pf_rec_verdict_t) ? "verdict record too short" : NULL;
    case PF_REC_SPAWN: {
        if (n < sizeof(pf_rec_spawn_t))
            return "spawn record shorter than its fixed part";
        const pf_rec_spawn_t *s = (const void *)p;
        if (check_stack_tail(sizeof *s, s->flags, s->n_py, s->n_native, n))
            return "spawn record's stack does not fit it (frame counts or stack reference)";
        if ((uint64_t)(pf_spawn_command(s) - (const char *)p) + s->command_len > n)
            return "spawn record's command line exceeds its length";
        return r->aux == PF_SPAWN_THREAD || r->aux == PF_SPAWN_PROCESS ? NULL : "spawn record of an unknown kind";
    }
    case PF_REC_ACCESS_PAIR: {
        if (n < sizeof(pf_rec_access_pair_t))
            return "access-pair record shorter than its fixed part";
        const pf_rec_access_pair_t *a = (const void *)p;
        uint64_t frames = (uint64_t)a->n_py_first + a->n_py_repeat, ips = (uint64_t)a->n_native_first + a->n_native_repeat;
        if (sizeof *a + frames * sizeof(pf_rec_pyframe_t) + ips * 8 > n)
            return "access-pair record's frame counts exceed its length";
        if (r->aux != PF_ACCESS_STORE && r->aux != PF_ACCESS_LOAD)
            return "access-pair record of an unknown kind";
        return NULL;
    }
    case PF_REC_STACK: {
        if (n < sizeof(pf_rec_stack_t))
            return "stack record shorter than its fixed part";
        const pf_rec_stack_t *st = (const void *)p;
        if (r->aux & PF_STACK_NATIVE_BY_ID) {
            if (!frames_fit(sizeof *st + sizeof(pf_rec_native_ref_t), st->n_py, 0, n))
                return "stack record's frame counts exceed its length";
        } else if (!frames_fit(sizeof *st, st->n_py, st->n_native, n)) {
            return "stack record's frame counts exceed its length";
        }
        return st->stack_id ? NULL : "stack record with id 0";
    }
    case PF_REC_NATIVE_STACK: {
        if (n < sizeof(pf_rec_native_stack_t))
            return "native stack record shorter than its fixed part";
        const pf_rec_native_stack_t *ns = (const void *)p;
        if (!frames_fit(sizeof *ns, 0, ns->n_native, n))
            return "native stack record's frame count exceeds its length";
        return ns->native_id ? NULL : "native stack record with id 0";
    }
    case PF_REC_WATCH_STATS:
        return n < sizeof(pf_rec_watch_stats_t) ? "watch statistics record too short" : NULL;
    case PF_REC_WRITER:
        return n < sizeof(pf_rec_writer_t) ? "writer record too short" : NULL;
    case PF_REC_COPY_WRITE: {
        if (n < sizeof(pf_rec_copy_write_t))
            return "copy-write record shorter than its fixed part";
        const pf_rec_copy_write_t *w = (const void *)p;
        if (!frames_fit(sizeof *w, w->n_py, w->n_native, n))
            return "copy-write record's frame counts exceed its length";
        return NULL;
    }
    default:
        return NULL;    /* unknown types are skipped by length */
    }
}

int pf_file_walk(const pf_file_t *f, int (*fn)(void *ctx, const pf_record_t *r), void *ctx, char *err,
                 size_t errlen)
{
    return pf_file_walk_chunks(f, PF_HEADER_BYTES, f->size, fn, ctx, err, errlen);
}

int pf_file_walk_chunks(const pf_file_t *f, uint64_t from, uint64_t to, int (*fn)(void *ctx, const pf_record_t *r),
                        void *ctx, char *err, size_t errlen)
{
    const uint64_t cb = f->header.chunk_bytes;
    if (to > f->size)
        to = f->size;
    for (uint64_t off = from; off + PF_CHUNK_HEADER_BYTES <= to; off += cb) {
        pf_chunk_header_t ch;
        memcpy(&ch, f->data + off, sizeof ch);
        if (ch.magic == 0)
            continue;   /* never handed out */
        if (ch.magic != PF_CHUNK_MAGIC) {
            snprintf(err, errlen, "%s is corrupt: bad chunk magic 0x%08x at offset %llu", f->path, ch.magic,
                     (unsigned long long)off);
            return -EINVAL;
        }
        uint64_t end = off + cb < f->size ? off + cb : f->size;    /* the last chunk may be cut short */
        int cut = off + cb > f->size;
        for (uint64_t p = off + PF_CHUNK_HEADER_BYTES; p + sizeof(pf_rec_header_t) <= end;) {
            pf_rec_header_t h;
            memcpy(&h, f->data + p, sizeof h);
            if (h.type == PF_REC_END)
                break;
            const char *why = NULL;
            /* a packed record's length is its valid bytes; the next record starts at the aligned end */
            uint32_t span = h.type == PF_REC_PACKED ? pf_align8(h.bytes) : h.bytes;
            if (h.bytes < sizeof h || span < h.bytes || (span & 7))
                why = "its length is not a multiple of 8 of at least 8";
            else if (p + span > off + cb)
                why = "it runs past the end of its chunk";
            if (why) {
                snprintf(err, errlen, "%s is corrupt: record at offset %llu (type %u, length %u): %s", f->path,
                         (unsigned long long)p, h.type, h.bytes, why);
                return -EINVAL;
            }
            if (p + span > end) {
                if (cut)
                    break;  /* truncated file: the rest never made it to disk */
            }
            pf_record_t r = {h.type, h.aux, h.bytes - (uint32_t)sizeof h, f->data + p + sizeof h, ch.tid, p, off, 0, 0, 0, 0};
            why = check_payload(&r, f->skim_packed);
            if (why) {
                snprintf(err, errlen, "%s is corrupt: record at offset %llu: %s", f->path, (unsigned long long)p,
                         why);
                return -EINVAL;
            }
            if (h.type == PF_REC_WRITER)   /* the rest of the chunk is another thread's */
                r.tid = ch.tid = ((const pf_rec_writer_t *)r.payload)->tid;
            int rc = fn(ctx, &r);
            if (rc)
                return rc;
            p += span;
        }
    }
    return 0;
}
