/* pf_writer.c - the profile file: header, segments, per-thread chunks. See pf_writer.h. */
#include "pf_writer.h"
#include "pf_fd.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pf_sys.h"

#define PF_CHUNKS_PER_SEGMENT 64u
#define PF_SEGMENT_BYTES ((uint64_t)PF_CHUNKS_PER_SEGMENT * PF_CHUNK_BYTES)
#define PF_MAX_SEGMENTS 1024u   /* 4 GiB of profile per process (PF_WRITER_MAX_BYTES) */
_Static_assert((uint64_t)PF_MAX_SEGMENTS * PF_SEGMENT_BYTES == PF_WRITER_MAX_BYTES, "the cap is the segment table");

static struct {
    int fd;
    uint32_t gen;
    uint64_t next_chunk;        /* atomic: the next chunk index to hand out */
    uint64_t dropped;           /* atomic */
    pf_file_header_t *header;   /* the file's header page, mapped shared: records_dropped is kept there */
    uint64_t max_chunks;        /* the size cap, in chunks */
    uint32_t level;             /* atomic: pf_writer_fill_level() */
    pf_spinlock_t lock;         /* guards segment mapping and file growth */
    char *segs[PF_MAX_SEGMENTS];
    char base[PATH_MAX];
    uint32_t flags;
    uint32_t python_hex;
    char python_version[32];
    int full_reported;
} W = {.fd = -1};

uint32_t pf_writer_generation(void)
{
    return __atomic_load_n(&W.gen, __ATOMIC_ACQUIRE);
}

uint32_t pf_writer_fill_level(void)
{
    return __atomic_load_n(&W.level, __ATOMIC_RELAXED);
}

uint64_t pf_writer_dropped(void)
{
    return __atomic_load_n(&W.dropped, __ATOMIC_RELAXED);
}

/* Reads /proc/self/cmdline into buf (NUL separated). Returns the bytes used (0 on failure). */
static uint32_t read_cmdline(char *buf, uint32_t size)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    uint32_t used = 0;
    while (used < size) {
        ssize_t n = read(fd, buf + used, size - used);
        if (n <= 0)
            break;
        used += (uint32_t)n;
    }
    close(fd);
    if (used == size)   /* cut at the last complete argument */
        while (used > 0 && buf[used - 1] != '\0')
            used--;
    return used;
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Opens base itself (root, still empty) or a fresh base.<pid>[.<n>]. Returns an fd or -errno. */
static int open_profile_file(int is_root)
{
    if (is_root) {
        int fd = open(W.base, O_RDWR | O_CLOEXEC);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size == 0)
            return fd;
        if (fd >= 0)
            close(fd);
    }
    char path[PATH_MAX + 32];
    int pid = (int)getpid();
    for (int n = 0; n < 1000; n++) {
        if (n == 0)
            snprintf(path, sizeof path, "%s.%d", W.base, pid);
        else
            snprintf(path, sizeof path, "%s.%d.%d", W.base, pid, n);
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST)
            return fd >= 0 ? fd : -errno;
    }
    return -EEXIST;
}

static int write_header(int fd, uint32_t flags)
{
    static pf_file_header_t h;  /* 4 KiB: static, not on a possibly small thread stack (fork child) */
    memset(&h, 0, sizeof h);
    memcpy(h.magic, PF_FILE_MAGIC, 8);
    h.version = PF_FORMAT_VERSION;
    h.header_bytes = PF_HEADER_BYTES;
    h.chunk_bytes = PF_CHUNK_BYTES;
    h.flags = flags;
    h.pid = (uint32_t)getpid();
    h.ppid = (uint32_t)getppid();
    h.start_mono_ns = pf_cfg.start_mono_ns;
    h.start_real_ns = clock_ns(CLOCK_REALTIME);
    h.mean_sample_bytes = pf_cfg.mean_sample_bytes;
    h.object_threshold = pf_cfg.object_threshold;
    h.python_hex = W.python_hex;
    memcpy(h.python_version, W.python_version, sizeof h.python_version);
    h.argv_bytes = read_cmdline(h.argv, sizeof h.argv);
    _Static_assert(sizeof h <= PF_HEADER_BYTES, "header must fit its page");
    if (pwrite(fd, &h, sizeof h, 0) != (ssize_t)sizeof h)
        return -EIO;
    if (ftruncate(fd, PF_HEADER_BYTES) != 0)
        return -errno;
    void *m = pf_sys_mmap(NULL, PF_HEADER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    W.header = m == MAP_FAILED ? NULL : m;     /* without it drops are still counted, only not in the file */
    return 0;
}

static int open_and_start(int is_root)
{
    int fd = pf_fd_high(open_profile_file(is_root));
    if (fd < 0)
        return fd;
    int rc = write_header(fd, W.flags | (is_root ? PF_HDR_ROOT : 0));
    if (rc < 0) {
        close(fd);
        return rc;
    }
    W.fd = fd;
    W.next_chunk = 0;
    W.level = 0;
    memset(W.segs, 0, sizeof W.segs);
    __atomic_add_fetch(&W.gen, 1, __ATOMIC_RELEASE);
    return 0;
}

int pf_writer_open(const char *base_path, int is_root, const pf_writer_info_t *info)
{
    if (strlen(base_path) >= sizeof W.base)
        return -ENAMETOOLONG;
    strcpy(W.base, base_path);
    W.flags = info->flags;
    uint64_t max = info->max_bytes && info->max_bytes < PF_WRITER_MAX_BYTES ? info->max_bytes : PF_WRITER_MAX_BYTES;
    W.max_chunks = max / PF_CHUNK_BYTES > 4 ? max / PF_CHUNK_BYTES : 4;
    W.python_hex = info->python_hex;
    snprintf(W.python_version, sizeof W.python_version, "%s", info->python_version);
    return open_and_start(is_root);
}

int pf_writer_reopen_child(void)
{
    /* The parent's segments are mapped MAP_SHARED on the parent's file: unmap them so nothing in the
     * child can write into the parent's profile. */
    for (unsigned s = 0; s < PF_MAX_SEGMENTS; s++)
        if (W.segs[s])
            pf_sys_munmap(W.segs[s], PF_SEGMENT_BYTES);
    memset(W.segs, 0, sizeof W.segs);
    if (W.header)
        pf_sys_munmap(W.header, PF_HEADER_BYTES);
    W.header = NULL;
    if (W.fd >= 0)
        close(W.fd);
    W.fd = -1;
    W.lock.locked = 0;
    int rc = open_and_start(0);
    if (rc < 0)
        __atomic_add_fetch(&W.gen, 1, __ATOMIC_RELEASE);  /* stale chunks must not be used either way */
    return rc;
}

/* Maps segment s, growing the file to cover it. Returns its base or NULL. */
static char *map_segment(unsigned s)
{
    char *seg = __atomic_load_n(&W.segs[s], __ATOMIC_ACQUIRE);
    if (seg)
        return seg;
    pf_spin_lock(&W.lock);
    seg = W.segs[s];
    if (!seg && W.fd >= 0) {
        off_t off = (off_t)PF_HEADER_BYTES + (off_t)s * (off_t)PF_SEGMENT_BYTES;
        /* Reserve the blocks now: a sparse file on a full disk would turn a later store into SIGBUS in the
         * program. When the disk is full, recording stops and the program runs on. */
        uint64_t cap_end = W.max_chunks * PF_CHUNK_BYTES, seg_start = (uint64_t)s * PF_SEGMENT_BYTES;
        off_t len = (off_t)(cap_end - seg_start < PF_SEGMENT_BYTES ? cap_end - seg_start : PF_SEGMENT_BYTES);
        int err = posix_fallocate(W.fd, off, len);     /* the mapping may run past it: never touched */
        if (err != 0) {
            if (!W.full_reported) {
                W.full_reported = 1;
                pf_log("cannot grow the profile (%s): recording stops here, the program goes on", strerror(err));
            }
            pf_spin_unlock(&W.lock);
            return NULL;
        }
        void *m = pf_sys_mmap(NULL, PF_SEGMENT_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, W.fd, off);
        if (m != MAP_FAILED) {
            seg = m;
            __atomic_store_n(&W.segs[s], seg, __ATOMIC_RELEASE);
        }
    }
    pf_spin_unlock(&W.lock);
    return seg;
}

/* Gives the thread a fresh chunk. Returns 1, or 0 when none can be had. */
static int take_chunk(pf_tls_t *t)
{
    uint32_t gen = pf_writer_generation();
    if (t->chunk_gen == gen && t->chunk_end) {
        /* Done with the old chunk: its bytes are in the file; drop them from our resident set. */
        madvise(t->chunk_end - PF_CHUNK_BYTES, PF_CHUNK_BYTES, MADV_DONTNEED);
    }
    t->chunk_pos = t->chunk_end = NULL;
    t->chunk_gen = gen;
    if (W.fd < 0)
        return 0;
    uint64_t idx = __atomic_fetch_add(&W.next_chunk, 1, __ATOMIC_RELAXED);
    if (idx >= W.max_chunks)
        return 0;
    uint32_t level = pf_writer_level_for(idx + 1, W.max_chunks), was = pf_writer_fill_level();
    while (level > was && !__atomic_compare_exchange_n(&W.level, &was, level, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    char *seg = map_segment((unsigned)(idx / PF_CHUNKS_PER_SEGMENT));
    if (!seg)
        return 0;
    char *chunk = seg + (idx % PF_CHUNKS_PER_SEGMENT) * PF_CHUNK_BYTES;
    pf_chunk_header_t *ch = (pf_chunk_header_t *)chunk;
    ch->tid = t->tid;
    ch->reserved = 0;
    __atomic_store_n(&ch->magic, PF_CHUNK_MAGIC, __ATOMIC_RELEASE);
    t->chunk_pos = chunk + PF_CHUNK_HEADER_BYTES;
    t->chunk_end = chunk + PF_CHUNK_BYTES;
    return 1;
}

void *pf_writer_reserve(pf_tls_t *t, uint32_t bytes)
{
    if (PF_UNLIKELY(t->chunk_gen != pf_writer_generation() || !t->chunk_pos ||
                    (size_t)(t->chunk_end - t->chunk_pos) < bytes)) {
        if (bytes > PF_CHUNK_PAYLOAD_MAX || !take_chunk(t)) {
            __atomic_add_fetch(&W.dropped, 1, __ATOMIC_RELAXED);
            if (W.header)
                __atomic_add_fetch(&W.header->records_dropped, 1, __ATOMIC_RELAXED);
            return NULL;
        }
    }
    return t->chunk_pos;
}

void pf_writer_fork_prepare(void)
{
    pf_spin_lock(&W.lock);
}

void pf_writer_fork_parent(void)
{
    pf_spin_unlock(&W.lock);
}
