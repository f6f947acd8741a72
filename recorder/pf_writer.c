/* pf_writer.c - the profile file: header, segments, per-thread chunks. See pf_writer.h. */
#include "pf_writer.h"
#include "pf_eh_pages.h"
#include "pf_fd.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "pf_sys.h"

#define PF_CHUNKS_PER_SEGMENT 64u
#define PF_SEGMENT_BYTES ((uint64_t)PF_CHUNKS_PER_SEGMENT * PF_CHUNK_BYTES)
#define PF_MAX_SEGMENTS 1024u   /* 4 GiB of profile per process (PF_WRITER_MAX_BYTES) */
#define PF_SPARE_CHUNKS 64u     /* exited threads' chunks waiting for a new thread */
#define PF_SPARE_MIN_ROOM 4096u /* less room than this left in an exited thread's chunk: not worth a hand-off */
#define PF_PAGE_BYTES 4096u     /* what a dropped range is rounded to (on larger pages the madvise fails: harmless) */
_Static_assert((uint64_t)PF_MAX_SEGMENTS * PF_SEGMENT_BYTES == PF_WRITER_MAX_BYTES, "the cap is the segment table");

static struct {
    int fd;
    uint32_t gen;
    uint64_t next_chunk;        /* atomic: the next chunk index to hand out */
    uint64_t dropped;           /* atomic */
    pf_file_header_t *header;   /* the file's header page, mapped shared: records_dropped is kept there */
    uint64_t max_chunks;        /* the size cap, in chunks */
    uint64_t aggregate_chunk;   /* handing out this chunk switches to aggregated recording (0: never) */
    void (*on_aggregate_size)(void);
    uint32_t level;             /* atomic: pf_writer_fill_level() */
    pf_spinlock_t lock;         /* guards segment mapping and the spare chunks */
    char *segs[PF_MAX_SEGMENTS];
    uint64_t reserved[PF_MAX_SEGMENTS * PF_CHUNKS_PER_SEGMENT / 64];   /* atomic: chunks whose blocks are reserved */
    struct spare { char *pos, *end; } spare[PF_SPARE_CHUNKS];   /* chunks of the current generation */
    unsigned n_spare;
    pthread_key_t exit_key;     /* its destructor hands an exiting thread's chunk on */
    int exit_key_made;
    char base[PATH_MAX];
    char path[PATH_MAX + 32];   /* the file being written: base, or base.<pid>[.<n>] */
    dev_t dev;                  /* ... and its identity, to tell it from another file on the same number */
    ino_t ino;
    uint32_t flags;
    uint32_t python_hex;
    char python_version[32];
    uint32_t via_pid, via_child;
    uint64_t run_id;
    int full_reported;
    int full;                   /* atomic: a reservation failed for want of room: no chunk is taken any more */
    uint32_t first_writer;      /* atomic: the tid of the first thread that took a chunk */
    int many_writers;           /* atomic: a second thread took one (drop_written's batch) */
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
        int fd = open(W.base, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size == 0) {
            snprintf(W.path, sizeof W.path, "%s", W.base);
            return fd;
        }
        if (fd >= 0)
            close(fd);
    }
    char *path = W.path;
    int pid = (int)getpid();
    for (int n = 0; n < 1000; n++) {
        if (n == 0)
            snprintf(path, sizeof W.path, "%s.%d", W.base, pid);
        else
            snprintf(path, sizeof W.path, "%s.%d.%d", W.base, pid, n);
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
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
    h.via_pid = W.via_pid;
    h.via_child = W.via_child;
    h.run_id = W.run_id;
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
    struct stat st;
    if (fstat(fd, &st) == 0) {
        W.dev = st.st_dev;
        W.ino = st.st_ino;
    }
    W.fd = fd;
    W.next_chunk = 0;
    W.level = 0;
    memset(W.segs, 0, sizeof W.segs);
    memset(W.reserved, 0, sizeof W.reserved);
    W.full = 0;
    W.n_spare = 0;
    __atomic_add_fetch(&W.gen, 1, __ATOMIC_RELEASE);
    return 0;
}

static void thread_exiting(void *arg);

int pf_writer_open(const char *base_path, int is_root, const pf_writer_info_t *info)
{
    if (strlen(base_path) >= sizeof W.base)
        return -ENAMETOOLONG;
    if (!W.exit_key_made)
        W.exit_key_made = pthread_key_create(&W.exit_key, thread_exiting) == 0;
    strcpy(W.base, base_path);
    W.flags = info->flags;
    uint64_t max = info->max_bytes && info->max_bytes < PF_WRITER_MAX_BYTES ? info->max_bytes : PF_WRITER_MAX_BYTES;
    W.max_chunks = max / PF_CHUNK_BYTES > 4 ? max / PF_CHUNK_BYTES : 4;
    W.on_aggregate_size = info->on_aggregate_size;
    W.aggregate_chunk = info->aggregate_after_bytes && W.on_aggregate_size ? info->aggregate_after_bytes / PF_CHUNK_BYTES + 1 : 0;
    W.python_hex = info->python_hex;
    W.via_pid = info->via_pid;
    W.via_child = info->via_child;
    W.run_id = info->run_id;
    snprintf(W.python_version, sizeof W.python_version, "%s", info->python_version);
    return open_and_start(is_root);
}

/* 1 when fd is the profile being written (not a number the program reused after closing ours). */
static int names_profile(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && st.st_dev == W.dev && st.st_ino == W.ino;
}

int pf_writer_reopen_child(void)
{
    /* The parent's segments are mapped MAP_SHARED on the parent's file: unmap them so nothing in the
     * child can write into the parent's profile. */
    for (unsigned s = 0; s < PF_MAX_SEGMENTS; s++)
        if (W.segs[s])
            pf_sys_munmap(W.segs[s], PF_SEGMENT_BYTES);
    memset(W.segs, 0, sizeof W.segs);
    W.n_spare = 0;
    if (W.header)
        pf_sys_munmap(W.header, PF_HEADER_BYTES);
    W.header = NULL;
    if (W.fd >= 0 && names_profile(W.fd))
        close(W.fd);    /* else the number is the program's now (keep_descriptor) */
    W.fd = -1;
    W.lock.locked = 0;
    W.via_pid = W.via_child = 0;     /* the child's parent is this process */
    int rc = open_and_start(0);
    if (rc < 0)
        __atomic_add_fetch(&W.gen, 1, __ATOMIC_RELEASE);  /* stale chunks must not be used either way */
    return rc;
}

/* The program may have closed the profile's descriptor (subprocess's close_fds in a fork child about to
 * exec, a daemon closing everything, os.closerange) and even reused its number for a file of its own:
 * before the descriptor grows the file, make sure it is still the profile, else open the profile again by
 * its path. Once a chunk, so an fstat per 64 KiB of records. */
static void keep_descriptor(void)
{
    int fd = __atomic_load_n(&W.fd, __ATOMIC_ACQUIRE);
    if (fd < 0 || names_profile(fd))
        return;     /* still ours; or lost already, and not looked for again at every record */
    pf_spin_lock(&W.lock);
    fd = W.fd;
    if (fd >= 0 && !names_profile(fd)) {
        fd = pf_fd_high(open(W.path, O_RDWR | O_CLOEXEC));
        if (fd >= 0 && !names_profile(fd)) {
            close(fd);      /* the profile was replaced or removed: stop growing it */
            fd = -1;
        }
        __atomic_store_n(&W.fd, fd, __ATOMIC_RELEASE);     /* the old number is no longer ours to close */
    }
    pf_spin_unlock(&W.lock);
}

/* Maps segment s (address space only: the file grows as chunks are reserved, reserve_blocks). Returns its base or
 * NULL. The mapping may run past the end of the file; only chunks whose blocks are reserved are touched. */
static char *map_segment(unsigned s)
{
    char *seg = __atomic_load_n(&W.segs[s], __ATOMIC_ACQUIRE);
    if (seg)
        return seg;
    pf_spin_lock(&W.lock);
    seg = W.segs[s];
    if (!seg && W.fd >= 0) {
        off_t off = (off_t)PF_HEADER_BYTES + (off_t)s * (off_t)PF_SEGMENT_BYTES;
        void *m = pf_sys_mmap(NULL, PF_SEGMENT_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, W.fd, off);
        if (m != MAP_FAILED) {
            seg = m;
            __atomic_store_n(&W.segs[s], seg, __ATOMIC_RELEASE);
        }
    }
    pf_spin_unlock(&W.lock);
    return seg;
}

static int is_reserved(uint64_t idx)
{
    return (__atomic_load_n(&W.reserved[idx / 64], __ATOMIC_ACQUIRE) >> (idx % 64)) & 1;
}

/* Reserves the disk blocks of chunk idx and of the one after it, growing the file over them, and maps the
 * next one's segment. Reserved, not sparse: a sparse file on a full disk would turn a later store into
 * SIGBUS in the program. A chunk at a time (plus the one ahead) for a process's first RESERVE_SMALL_UNTIL
 * chunks, so a process that writes little (a short child process) costs the disk little; after that
 * RESERVE_AHEAD chunks at once, each call skipped while its chunks are reserved already (a call for each
 * chunk was 1.1% of an --exact recording of small objects; at most 1 MiB of the file stays unused). The
 * chunk ahead is for a vfork child (take_chunk), which may not touch the file: its descriptors may be
 * closed already. Chunks are handed out in index order but may be reserved out of it (two threads may
 * reserve the same ones: harmless); one never reserved, or reserved and never handed out, reads as zeros.
 *
 * A call reserves from the first chunk not reserved yet, never over one reserved before: a call that fails
 * for want of room may give back what its range held that was never written (tmpfs does), and a chunk
 * reserved before would become a hole inside the file, which a reader's page fault cannot fill on the
 * full file system: SIGBUS in the launcher (integration.robustness.full_disk). A batch that does not fit
 * is asked again as the chunk and the one ahead; where that fails too and idx itself was reserved, idx is
 * still taken and the next take finds the file system full. Once full, no chunk is taken again (W.full):
 * each take would move the next index on, and a later call far along, when some room came back, made the
 * file gigabytes long and sparse (the same SIGBUS, reading its hole). Returns 0 or an errno. */
#define RESERVE_SMALL_UNTIL 16u
#define RESERVE_AHEAD 16u
static int reserve_blocks(uint64_t idx)
{
    int have = is_reserved(idx), ahead = idx + 1 < W.max_chunks;
    if (!have || (ahead && !is_reserved(idx + 1))) {
        uint64_t from = have ? idx + 1 : idx, least = idx + 2 - from;
        uint64_t n = idx < RESERVE_SMALL_UNTIL ? least : RESERVE_AHEAD;
        if (n > W.max_chunks - from)
            n = W.max_chunks - from;
        const off_t at = (off_t)PF_HEADER_BYTES + (off_t)from * PF_CHUNK_BYTES;
        int err = posix_fallocate(W.fd, at, (off_t)(n * PF_CHUNK_BYTES));
        if (err != 0 && n > least) {
            n = least < W.max_chunks - from ? least : W.max_chunks - from;
            err = posix_fallocate(W.fd, at, (off_t)(n * PF_CHUNK_BYTES));
        }
        if (err != 0) {
            if (err == ENOSPC || err == EFBIG || err == EDQUOT)
                __atomic_store_n(&W.full, 1, __ATOMIC_RELAXED);
            if (!__atomic_exchange_n(&W.full_reported, 1, __ATOMIC_RELAXED))
                pf_log("cannot grow the profile (%s): recording stops here, the program goes on", strerror(err));
            return have ? 0 : err;
        }
        for (uint64_t i = from; i < from + n; i++)
            __atomic_or_fetch(&W.reserved[i / 64], 1ull << (i % 64), __ATOMIC_RELEASE);
    }
    if (ahead)
        map_segment((unsigned)((idx + 1) / PF_CHUNKS_PER_SEGMENT));
    return 0;
}

/* A spare chunk with room for bytes plus the WRITER record, or 0; only the one ending at `only_end` when
 * that is set. The caller starts recording into it. */
static int take_spare(pf_tls_t *t, uint32_t bytes, const char *only_end)
{
    const uint32_t writer_bytes = (uint32_t)(sizeof(pf_rec_header_t) + sizeof(pf_rec_writer_t));
    if (!__atomic_load_n(&W.n_spare, __ATOMIC_RELAXED))
        return 0;
    pf_spin_lock(&W.lock);
    for (unsigned i = W.n_spare; i-- > 0;) {
        if ((only_end && W.spare[i].end != only_end) ||
            (size_t)(W.spare[i].end - W.spare[i].pos) < (size_t)bytes + writer_bytes)
            continue;
        t->chunk_pos = W.spare[i].pos;
        t->chunk_end = W.spare[i].end;
        W.spare[i] = W.spare[--W.n_spare];
        pf_spin_unlock(&W.lock);
        char *rec = t->chunk_pos;
        pf_rec_writer_t *w = (pf_rec_writer_t *)(rec + sizeof(pf_rec_header_t));
        w->tid = t->tid;
        w->reserved = 0;
        pf_writer_commit(t, rec, PF_REC_WRITER, 0, writer_bytes);
        return 1;
    }
    pf_spin_unlock(&W.lock);
    return 0;
}

static void drop_pending(pf_tls_t *t);

/* The thread is ending: the pages it filled leave the resident set now, the chunks it finished and the
 * written part of its current one, which it hands on or keeps for what its last destructors record (a page
 * dropped here faults back in, with its data, if it is written again: the mapping is the file's). Without
 * this, each exited thread left up to PF_DROP_BATCH + PF_CHUNK_BYTES resident for the rest of the run: a
 * program starting a thread for each task (1000 short threads under --exact) peaked at 420 MB for 10. */
static void drop_thread_pages(pf_tls_t *t)
{
    drop_pending(t);
    if (!t->chunk_pos || !t->chunk_end)
        return;
    char *start = t->chunk_end - PF_CHUNK_BYTES;
    char *filled = (char *)((uintptr_t)t->chunk_pos & ~(uintptr_t)(PF_PAGE_BYTES - 1));
    if (filled > start)
        madvise(start, (size_t)(filled - start), MADV_DONTNEED);
}

/* The exit-key destructor: glibc calls it as the thread ends, after the thread's own code (and, since it is
 * created first, before most libraries' key destructors). Whatever the thread records after this goes into
 * the chunk it handed on, if no thread took it meanwhile, else into a fresh one; the key is set again so
 * that chunk is handed on as well. */
static void thread_exiting(void *arg)
{
    pf_tls_t *t = arg;
    pf_guard_enter(t);     /* no record from this thread while its chunk changes hands */
    t->chunk_exited = 1;
    if (t->chunk_gen == pf_writer_generation())    /* else the ranges are another generation's mapping */
        drop_thread_pages(t);
    if (t->chunk_gen == pf_writer_generation() && t->chunk_pos &&
        (size_t)(t->chunk_end - t->chunk_pos) >= PF_SPARE_MIN_ROOM) {
        pf_spin_lock(&W.lock);
        if (t->chunk_gen == pf_writer_generation() && W.n_spare < PF_SPARE_CHUNKS) {
            W.spare[W.n_spare++] = (struct spare){t->chunk_pos, t->chunk_end};
            t->chunk_handed_end = t->chunk_end;
            t->chunk_pos = t->chunk_end = NULL;
        }
        pf_spin_unlock(&W.lock);
    }
    pf_guard_leave(t);
}

/* Done with a chunk: its bytes are in the file, and it leaves this process's resident set, with the
 * thread's earlier filled chunks when they lie next to it, PF_DROP_BATCH bytes at a time (each madvise
 * flushes the TLB on every CPU the process's threads run on: 6% of an --exact run when each chunk went
 * alone, measured when a chunk's pages still faulted in one by one). What waits for the drop is resident
 * at the program's peak: at 512 KiB that was 3% of a 16 MiB program's (bench/workloads/indexing.py); at
 * 128 KiB the recording's CPU time stayed within the noise of 512 KiB's on a guest with the TSC as its
 * clock (2026-11-26, docs/overhead.md). On a kvm-clock guest whose page-table changes are dear (shadow
 * paging), each drop of 128 KiB cost ~100 us, 5% of that --exact run; 256 KiB took 4% off its time and
 * ~0.1 MiB onto its peak RSS (of 19.9), 512 KiB 6% and 0.4 MiB (2026-11-29). What waits adds up over the
 * threads, so the larger batch is only for a process that has had one recording thread (64 threads
 * waiting together kept 16 MiB at 256 KiB each: integration.robustness.exact_rss_writer_threads). */
#define PF_DROP_BATCH (128u * 1024u)
#define PF_DROP_BATCH_ONE_THREAD (256u * 1024u)

/* The thread's filled chunks not dropped yet leave the resident set. */
static void drop_pending(pf_tls_t *t)
{
    if (t->written_to)
        madvise(t->written_from, (size_t)(t->written_to - t->written_from), MADV_DONTNEED);
    t->written_from = t->written_to = NULL;
}

static void drop_written(pf_tls_t *t, char *chunk)
{
    if (t->written_to != chunk) {
        drop_pending(t);
        t->written_from = chunk;
    }
    t->written_to = chunk + PF_CHUNK_BYTES;
    size_t batch = __atomic_load_n(&W.many_writers, __ATOMIC_RELAXED) ? PF_DROP_BATCH : PF_DROP_BATCH_ONE_THREAD;
    if ((size_t)(t->written_to - t->written_from) >= batch)
        drop_pending(t);
}

/* Writes the (still zero) chunk idx through the descriptor, so that its pages are in the page cache before
 * they are mapped. Reserved blocks read as zeros, but a fault on them takes the file system's read path
 * (readahead over unwritten extents, then a page_mkwrite each): on ext4 in this project's VMs 87 us a
 * chunk, against 24 us written first and mapped after (an --exact run of small objects, 2,000 chunks in
 * 2.4 s: 7% of it in the populating madvise before, its system time 0.27 -> 0.16 s). The chunk is this thread's alone and nothing is in it yet. A failed write changes
 * nothing: the pages fault in as before. */
static void fill_page_cache(uint64_t idx)
{
    static char zeros[PF_PAGE_BYTES];   /* .bss: reading it maps the zero page, no memory of its own */
    struct iovec iov[PF_CHUNK_BYTES / PF_PAGE_BYTES];
    for (size_t i = 0; i < sizeof iov / sizeof *iov; i++)
        iov[i] = (struct iovec){zeros, sizeof zeros};
    ssize_t done = pwritev(W.fd, iov, (int)(sizeof iov / sizeof *iov),
                           (off_t)PF_HEADER_BYTES + (off_t)(idx * PF_CHUNK_BYTES));
    (void)done;
}

#ifdef MADV_POPULATE_WRITE
#define PF_MADV_POPULATE_WRITE MADV_POPULATE_WRITE
#else
#define PF_MADV_POPULATE_WRITE 23
#endif

/* Gives the thread a chunk with room for bytes: an exited thread's when this thread has none yet, or back
 * the one it handed on as it began to end (never another spare: one with a lower index would put its
 * records out of time order along the file), else a fresh one. Returns 1, or 0 when none can be had. */
static int take_chunk(pf_tls_t *t, uint32_t bytes)
{
    pf_eh_pages_tick();     /* a clock of every mode's records (pf_eh_pages.h) */
    uint32_t gen = pf_writer_generation();
    int first = t->chunk_gen != gen || !t->chunk_end;
    if (first)
        t->written_from = t->written_to = NULL;   /* another generation's mapping: not ours to drop */
    else
        drop_written(t, t->chunk_end - PF_CHUNK_BYTES);
    t->chunk_pos = t->chunk_end = NULL;
    t->chunk_gen = gen;
    if (W.fd < 0 || __atomic_load_n(&W.full, __ATOMIC_RELAXED))
        return 0;
    if (W.exit_key_made)
        pthread_setspecific(W.exit_key, t);  /* again after thread_exiting ran: glibc then calls it again */
    if (first)
        pf_note_thread(&W.first_writer, &W.many_writers, t->tid);
    if (first && (!t->chunk_exited || t->chunk_handed_end) &&
        take_spare(t, bytes, t->chunk_exited ? t->chunk_handed_end : NULL))
        return 1;
    uint64_t idx = __atomic_fetch_add(&W.next_chunk, 1, __ATOMIC_RELAXED);
    if (idx >= W.max_chunks)
        return 0;
    if (PF_UNLIKELY(idx + 1 == W.aggregate_chunk))
        W.on_aggregate_size();  /* the profile passed --aggregate-after's size */
    uint32_t level = pf_writer_level_for(idx + 1, W.max_chunks), was = pf_writer_fill_level();
    while (level > was && !__atomic_compare_exchange_n(&W.level, &was, level, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    char *seg;
    if (t->in_vfork_child) {
        /* The file is the parent's, but not its descriptors: only a chunk reserved and mapped already. */
        seg = __atomic_load_n(&W.segs[idx / PF_CHUNKS_PER_SEGMENT], __ATOMIC_ACQUIRE);
        if (!seg || !is_reserved(idx))
            return 0;
    } else {
        keep_descriptor();
        seg = map_segment((unsigned)(idx / PF_CHUNKS_PER_SEGMENT));
        if (!seg || reserve_blocks(idx) != 0)
            return 0;
    }
    char *chunk = seg + (idx % PF_CHUNKS_PER_SEGMENT) * PF_CHUNK_BYTES;
    /* A thread that filled a chunk will fill this one too: one call maps its pages writable, instead of
     * a page fault for each as records fill it (dear in a VM: 20% of an --exact run's time). A thread's
     * first chunk is left to fault in, so a thread that records little dirties only what it wrote.
     * Kernels before 5.14 lack the call and the pages fault in as before. */
    if (!first && !t->in_vfork_child) {
        fill_page_cache(idx);
        madvise(chunk, PF_CHUNK_BYTES, PF_MADV_POPULATE_WRITE);
    }
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
        if (bytes > PF_CHUNK_PAYLOAD_MAX || !take_chunk(t, bytes)) {
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
