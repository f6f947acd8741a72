/* Unit tests for recorder/pf_writer.c: the mmap'd profile file. Records are parsed back with a minimal
 * reader written here from core/pf_format.h (the real reader lives in report/ and has its own tests). */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "pf_writer.h"

/* What the runtime normally provides. */
__thread pf_tls_t pf_tls __attribute__((tls_model("initial-exec")));
pf_config_t pf_cfg;
void pf_log(const char *fmt, ...)
{
}

static char dir[] = "/tmp/pf-writer-XXXXXX";

typedef struct parsed {
    uint64_t records, payload_sum, chunks, bad;
    uint64_t writer_changes;    /* PF_REC_WRITER records: chunks handed to another thread */
    uint64_t out_of_order;      /* a thread's tag smaller than its previous one along the file */
} parsed_t;

/* Walks a profile: every record is an 8-byte header + a u64 payload equal to its sequence tag (tags grow
 * along each thread's records), or a change of the chunk's writer. */
static parsed_t parse(const char *path)
{
    parsed_t p = {0};
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)size);
    assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    assert_memory_equal(buf, PF_FILE_MAGIC, 8);
    enum { MAX_TIDS = 64 };
    uint32_t tids[MAX_TIDS];
    uint64_t last_tag[MAX_TIDS];
    unsigned n_tids = 0;
    for (long off = PF_HEADER_BYTES; off + (long)PF_CHUNK_BYTES <= size; off += PF_CHUNK_BYTES) {
        const pf_chunk_header_t *ch = (const pf_chunk_header_t *)(buf + off);
        if (ch->magic == 0)
            continue;
        if (ch->magic != PF_CHUNK_MAGIC) {
            p.bad++;
            continue;
        }
        p.chunks++;
        uint32_t tid = ch->tid;
        for (long r = off + PF_CHUNK_HEADER_BYTES; r + 8 <= off + (long)PF_CHUNK_BYTES;) {
            const pf_rec_header_t *h = (const pf_rec_header_t *)(buf + r);
            if (h->type == 0)
                break;
            if (h->bytes != 16 || (h->type != PF_REC_MARK && h->type != PF_REC_WRITER)) {
                p.bad++;
                break;
            }
            if (h->type == PF_REC_WRITER) {
                tid = ((const pf_rec_writer_t *)(buf + r + 8))->tid;
                p.writer_changes++;
                r += h->bytes;
                continue;
            }
            uint64_t tag = *(const uint64_t *)(buf + r + 8);
            unsigned i = 0;
            while (i < n_tids && tids[i] != tid)
                i++;
            if (i == n_tids && n_tids < MAX_TIDS) {
                tids[n_tids] = tid;
                last_tag[n_tids++] = 0;
            }
            if (i < n_tids) {
                p.out_of_order += tag < last_tag[i];
                last_tag[i] = tag;
            }
            p.records++;
            p.payload_sum += tag;
            r += h->bytes;
        }
    }
    free(buf);
    return p;
}

/* Parses dir/name, which must hold `records` well-formed records, their tags summing to `sum`, each thread's
 * in order; *size (when asked) is the file's size. */
static parsed_t parse_whole(const char *name, uint64_t records, uint64_t sum, uint64_t *size)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    parsed_t p = parse(path);
    assert_int_equal(p.bad, 0);
    assert_int_equal(p.records, records);
    assert_int_equal(p.payload_sum, sum);
    assert_int_equal(p.out_of_order, 0);
    if (size) {
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        *size = (uint64_t)st.st_size;
    }
    return p;
}

static int write_tagged(pf_tls_t *t, uint64_t tag)
{
    char *rec = pf_writer_reserve(t, 16);
    if (!rec)
        return -1;
    *(uint64_t *)(rec + 8) = tag;
    pf_writer_commit(t, rec, PF_REC_MARK, 0, 16);
    return 0;
}

static void open_writer_capped(const char *name, uint64_t max_bytes)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    close(fd);
    pf_writer_info_t info = {.max_bytes = max_bytes, .flags = 0, .python_hex = 0x030b0200, .python_version = "3.11.2"};
    assert_int_equal(pf_writer_open(path, 1, &info), 0);
    memset(&pf_tls, 0, sizeof pf_tls);
}

static void open_writer(const char *name)
{
    open_writer_capped(name, 0);
}

static void test_single_thread_many_chunks(void **state)
{
    open_writer("one.pflow");
    const uint64_t n = 50000;  /* 800 KB of records: ~13 chunks */
    uint64_t sum = 0;
    for (uint64_t i = 1; i <= n; i++) {
        assert_int_equal(write_tagged(&pf_tls, i), 0);
        sum += i;
    }
    uint64_t size;
    parsed_t p = parse_whole("one.pflow", n, sum, &size);
    assert_true(p.chunks >= 12);
    /* its first chunks: grown a chunk at a time, one reserved ahead (for a vfork child, which may not touch
     * the file) */
    assert_int_equal(size, PF_HEADER_BYTES + (p.chunks + 1) * PF_CHUNK_BYTES);
}

/* Writing on a thread's behalf from a vfork child (its descriptors may be closed already): the chunk
 * reserved ahead is there to take; past it, records are dropped rather than the file touched. */
static void test_vfork_child_takes_only_reserved_chunks(void **state)
{
    open_writer("vfork.pflow");
    const uint64_t per_chunk = PF_CHUNK_PAYLOAD_MAX / 16;
    for (uint64_t i = 1; i <= per_chunk; i++)
        assert_int_equal(write_tagged(&pf_tls, i), 0);
    pf_tls.in_vfork_child = 1;
    for (uint64_t i = per_chunk + 1; i <= 2 * per_chunk; i++)
        assert_int_equal(write_tagged(&pf_tls, i), 0);     /* chunk 1: reserved when chunk 0 was taken */
    uint64_t dropped = pf_writer_dropped();
    assert_int_equal(write_tagged(&pf_tls, 2 * per_chunk + 1), -1);
    assert_int_equal(pf_writer_dropped(), dropped + 1);
    pf_tls.in_vfork_child = 0;
    assert_int_equal(write_tagged(&pf_tls, 2 * per_chunk + 2), 0);
    uint64_t n = 2 * per_chunk;
    parse_whole("vfork.pflow", n + 1, n * (n + 1) / 2 + n + 2, NULL);
}

/* Writes records until `chunks` chunks are full (the next record opens one more); returns the last tag. */
static uint64_t fill_chunks(uint64_t chunks, uint64_t *sum)
{
    const uint64_t per_chunk = PF_CHUNK_PAYLOAD_MAX / 16;
    uint64_t tag = 0;
    for (; tag < chunks * per_chunk;) {
        assert_int_equal(write_tagged(&pf_tls, ++tag), 0);
        *sum += tag;
    }
    return tag;
}

/* Past its first chunks a process reserves the file's blocks many chunks ahead, in one call each time
 * (pf_writer.c, reserve_blocks): the file is never sparse over what it holds, always has the chunk ahead
 * (a vfork child's), and ends at most a batch past its last chunk. */
static void test_long_writer_reserves_ahead(void **state)
{
    open_writer("long.pflow");
    uint64_t sum = 0, n = fill_chunks(40, &sum);
    uint64_t size;
    parsed_t p = parse_whole("long.pflow", n, sum, &size);
    assert_int_equal(p.chunks, 40);
    assert_true(size >= PF_HEADER_BYTES + (p.chunks + 1) * PF_CHUNK_BYTES);
    assert_true(size <= PF_HEADER_BYTES + (p.chunks + 16) * PF_CHUNK_BYTES);
    char path[256];
    snprintf(path, sizeof path, "%s/long.pflow", dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true((uint64_t)st.st_blocks * 512 >= size - PF_HEADER_BYTES);    /* reserved, not sparse */
}

/* The chunk ahead of a long writer's last one, in the next segment of the file's mapping: a vfork child
 * takes it (mapped and reserved by the parent's last take, though that take reserved nothing new). */
static void test_vfork_child_takes_chunk_in_next_segment(void **state)
{
    open_writer("vfork-seg.pflow");
    uint64_t sum = 0, n = fill_chunks(64, &sum);    /* chunks 0-63: the first segment */
    pf_tls.in_vfork_child = 1;
    assert_int_equal(write_tagged(&pf_tls, ++n), 0);    /* chunk 64 */
    sum += n;
    pf_tls.in_vfork_child = 0;
    parse_whole("vfork-seg.pflow", n, sum, NULL);
}

static void test_oversized_record_is_dropped(void **state)
{
    open_writer("big.pflow");
    uint64_t before = pf_writer_dropped();
    assert_null(pf_writer_reserve(&pf_tls, PF_CHUNK_BYTES));
    assert_int_equal(pf_writer_dropped(), before + 1);
}

/* Level L once the room left is at most 1/2^L of the cap. */
static void test_fill_levels(void **state)
{
    assert_int_equal(pf_writer_level_for(0, 128), 0);
    assert_int_equal(pf_writer_level_for(63, 128), 0);
    assert_int_equal(pf_writer_level_for(64, 128), 1);
    assert_int_equal(pf_writer_level_for(95, 128), 1);
    assert_int_equal(pf_writer_level_for(96, 128), 2);
    assert_int_equal(pf_writer_level_for(112, 128), 3);
    assert_int_equal(pf_writer_level_for(127, 128), 7);
    assert_int_equal(pf_writer_level_for(128, 128), 24);
    assert_int_equal(pf_writer_level_for(1, 65536), 0);
}

/* A 1 MiB cap: the file never grows past it (plus its header), the fill level climbs as chunks are
 * taken, and every record refused past the cap is counted in the file's own header. */
static void test_size_cap(void **state)
{
    open_writer_capped("cap.pflow", 1 << 20);
    assert_int_equal(pf_writer_fill_level(), 0);
    uint64_t refused = 0, written = 0;
    for (uint64_t i = 1; i <= 100000; i++) {
        if (write_tagged(&pf_tls, i) == 0)
            written++;
        else
            refused++;
        if (written == 8 * (PF_CHUNK_PAYLOAD_MAX / 16) + 1)    /* the 9th of 16 chunks taken */
            assert_int_equal(pf_writer_fill_level(), 1);
    }
    assert_int_equal(written, 16 * (PF_CHUNK_PAYLOAD_MAX / 16));
    assert_true(refused > 0);
    assert_true(pf_writer_fill_level() >= 4);
    char path[256];
    snprintf(path, sizeof path, "%s/cap.pflow", dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size <= PF_HEADER_BYTES + (1 << 20));
    pf_file_header_t h;
    FILE *f = fopen(path, "rb");
    assert_int_equal(fread(&h, sizeof h, 1, f), 1);
    fclose(f);
    assert_int_equal(h.records_dropped, refused);
}

static void *thread_writer(void *arg)
{
    uint64_t base = (uint64_t)(uintptr_t)arg;
    pf_tls.tid = (uint32_t)gettid();
    for (uint64_t i = 0; i < 20000; i++)
        if (write_tagged(&pf_tls, base + i) != 0)
            return (void *)1;
    return NULL;
}

static void test_threads_do_not_mix(void **state)
{
    open_writer("threads.pflow");
    enum { T = 6 };
    pthread_t th[T];
    uint64_t sum = 0;
    for (int i = 0; i < T; i++) {
        uint64_t base = (uint64_t)(i + 1) * 1000000;
        for (uint64_t k = 0; k < 20000; k++)
            sum += base + k;
        pthread_create(&th[i], NULL, thread_writer, (void *)(uintptr_t)base);
    }
    for (int i = 0; i < T; i++) {
        void *rc;
        pthread_join(th[i], &rc);
        assert_null(rc);
    }
    parse_whole("threads.pflow", T * 20000, sum, NULL);
}

/* What a short-lived thread records, and what it records after its chunk was handed on (a later key
 * destructor: a library's thread-exit clean-up freeing memory). */
static pthread_key_t late_key;

static void late_destructor(void *arg)
{
    write_tagged(&pf_tls, (uint64_t)(uintptr_t)arg);
}

static void *short_thread(void *arg)
{
    uint64_t base = (uint64_t)(uintptr_t)arg;
    pf_tls.tid = (uint32_t)gettid();
    for (uint64_t i = 1; i <= 10; i++)
        write_tagged(&pf_tls, base + i);
    pthread_setspecific(late_key, (void *)(uintptr_t)(base + 11));
    return NULL;
}

/* Threads that start one after another, each writing a few records and one more after its exit began,
 * share chunks instead of leaving one each nearly empty: every record is there, each thread's in order
 * along the file, in a handful of chunks. */
static void test_exited_threads_hand_chunks_on(void **state)
{
    open_writer("short.pflow");
    assert_int_equal(pthread_key_create(&late_key, late_destructor), 0);  /* after the writer's: runs later */
    enum { T = 40 };
    uint64_t sum = 0;
    for (int i = 0; i < T; i++) {
        uint64_t base = (uint64_t)(i + 1) * 1000;
        for (uint64_t k = 1; k <= 11; k++)
            sum += base + k;
        pthread_t th;
        pthread_create(&th, NULL, short_thread, (void *)(uintptr_t)base);
        pthread_join(th, NULL);
    }
    pthread_key_delete(late_key);
    uint64_t size;
    parsed_t p = parse_whole("short.pflow", T * 11, sum, &size);
    assert_true(p.writer_changes >= T - 1);
    if (p.chunks > 2)
        fail_msg("%llu chunks for %d short threads", (unsigned long long)p.chunks, T);
    assert_true(size <= PF_HEADER_BYTES + 3 * PF_CHUNK_BYTES);
}

/* The profile's pages this process holds (kB): the file's pages mapped and resident in it. */
static long rss_file_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "RssFile: %ld", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

enum { BUSY_RECORDS = 20000 };  /* 320 KiB: five chunks, fewer than a drop batch */

static void *busy_thread(void *arg)
{
    pf_tls.tid = (uint32_t)gettid();
    for (uint64_t i = 1; i <= BUSY_RECORDS; i++)
        write_tagged(&pf_tls, 1);
    return NULL;
}

/* Threads that each fill a few chunks and end leave none of those pages resident in the process (the data
 * stays in the file): 40 of them kept 12 MiB resident before thread exit dropped them. */
static void test_exited_threads_leave_no_pages(void **state)
{
    open_writer("busy.pflow");
    long before = rss_file_kb();
    if (before < 0)
        skip();
    enum { T = 40 };
    for (int i = 0; i < T; i++) {
        pthread_t th;
        pthread_create(&th, NULL, busy_thread, NULL);
        pthread_join(th, NULL);
    }
    long grown = rss_file_kb() - before;
    if (grown > 3 * 1024)
        fail_msg("%ld kB of the profile resident after %d threads wrote %d kB and ended", grown, T,
                 T * BUSY_RECORDS * 16 / 1024);
    parse_whole("busy.pflow", (uint64_t)T * BUSY_RECORDS, (uint64_t)T * BUSY_RECORDS, NULL);
}

/* A child writes records and reports how many it committed through a pipe, then is killed with SIGKILL
 * while it keeps writing: every record committed before the kill must be in the file. */
static void test_sigkill_keeps_committed_records(void **state)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        open_writer("killed.pflow");
        for (uint64_t i = 1;; i++) {
            write_tagged(&pf_tls, 1);
            if (i == 30000) {
                uint64_t n = i;
                ssize_t w = write(fds[1], &n, sizeof n);
                (void)w;
            }
        }
    }
    uint64_t committed = 0;
    assert_int_equal(read(fds[0], &committed, sizeof committed), sizeof committed);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status));
    char path[256];
    snprintf(path, sizeof path, "%s/killed.pflow", dir);
    parsed_t p = parse(path);
    assert_int_equal(p.bad, 0);
    assert_true(p.records >= committed);
    assert_int_equal(p.payload_sum, p.records);
}

static int group_setup(void **state)
{
    pf_cfg.mean_sample_bytes = 1;
    pf_cfg.object_threshold = 1;
    return mkdtemp(dir) ? 0 : -1;
}

static int group_teardown(void **state)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_thread_many_chunks),
        cmocka_unit_test(test_fill_levels),
        cmocka_unit_test(test_size_cap),
        cmocka_unit_test(test_oversized_record_is_dropped),
        cmocka_unit_test(test_vfork_child_takes_only_reserved_chunks),
        cmocka_unit_test(test_long_writer_reserves_ahead),
        cmocka_unit_test(test_vfork_child_takes_chunk_in_next_segment),
        cmocka_unit_test(test_threads_do_not_mix),
        cmocka_unit_test(test_exited_threads_hand_chunks_on),
        cmocka_unit_test(test_exited_threads_leave_no_pages),
        cmocka_unit_test(test_sigkill_keeps_committed_records),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
