/* test_report_writer.h - builds profile files for the reporter's tests, record by record, straight from
 * core/pf_format.h (not through the runtime's writer: the tests must catch a reader and a writer that
 * agree with each other but not with the format). One chunk per b_chunk call; b_save writes the file into
 * the test's temporary directory, optionally cut short, and returns its path. Included by one .c each. */
#ifndef TEST_REPORT_WRITER_H
#define TEST_REPORT_WRITER_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "pf_format.h"
#include "pf_model_int.h"
#include "pf_report.h"


typedef struct builder {
    unsigned char *buf;
    size_t size;        /* bytes used (header + whole chunks) */
    size_t pos;         /* next record in the current chunk */
    size_t chunk_end;
} builder_t;

static inline void b_init(builder_t *b, uint32_t flags, uint32_t pid)
{
    b->buf = calloc(1, PF_HEADER_BYTES);
    b->size = PF_HEADER_BYTES;
    pf_file_header_t *h = (pf_file_header_t *)b->buf;
    memcpy(h->magic, PF_FILE_MAGIC, 8);
    h->version = PF_FORMAT_VERSION;
    h->header_bytes = PF_HEADER_BYTES;
    h->chunk_bytes = PF_CHUNK_BYTES;
    h->flags = flags;
    h->pid = pid;
    h->mean_sample_bytes = 1000;
    h->object_threshold = 1 << 20;
    strcpy(h->python_version, "3.11.2");
    static const char argv[] = "/usr/bin/python3\0app.py\0--flag";
    memcpy(h->argv, argv, sizeof argv);
    h->argv_bytes = sizeof argv;
}

static inline void b_chunk(builder_t *b, uint32_t tid)
{
    b->buf = realloc(b->buf, b->size + PF_CHUNK_BYTES);
    memset(b->buf + b->size, 0, PF_CHUNK_BYTES);
    pf_chunk_header_t ch = {PF_CHUNK_MAGIC, tid, 0};
    memcpy(b->buf + b->size, &ch, sizeof ch);
    b->pos = b->size + PF_CHUNK_HEADER_BYTES;
    b->size += PF_CHUNK_BYTES;
    b->chunk_end = b->size;
}

/* An exact child process pid of ppid, its first chunk begun (its main thread's: tid = pid). */
static inline void b_child(builder_t *b, uint32_t pid, uint32_t ppid)
{
    b_init(b, PF_HDR_EXACT, pid);
    ((pf_file_header_t *)b->buf)->ppid = ppid;
    b_chunk(b, pid);
}

static inline void b_rec(builder_t *b, uint16_t type, uint16_t aux, const void *payload, size_t n)
{
    uint32_t bytes = pf_align8((uint32_t)(sizeof(pf_rec_header_t) + n));
    assert_true(b->pos + bytes <= b->chunk_end);
    pf_rec_header_t h = {type, aux, bytes};
    memcpy(b->buf + b->pos, &h, sizeof h);
    memcpy(b->buf + b->pos + sizeof h, payload, n);
    b->pos += bytes;
}

/* A code object whose every instruction is on `line` (an empty 3.9 line table). */
static inline void b_code(builder_t *b, uint32_t id, const char *file, const char *name, int line)
{
    unsigned char tmp[512];
    pf_rec_code_t c = {id, line, (uint32_t)strlen(file), (uint32_t)strlen(name), 0, 0};
    memcpy(tmp, &c, sizeof c);
    memcpy(tmp + sizeof c, file, c.filename_len);
    memcpy(tmp + sizeof c + c.filename_len, name, c.name_len);
    b_rec(b, PF_REC_CODE, PF_LT_LNOTAB, tmp, sizeof c + c.filename_len + c.name_len);
}

static inline void b_alloc(builder_t *b, uint64_t t, uint64_t addr, uint64_t size, uint64_t est, uint8_t domain, uint8_t flags,
                    int n, const uint32_t *code_ids)
{
    unsigned char tmp[1024];
    pf_rec_alloc_t a = {t, addr, size, est, domain, flags, (uint16_t)n, 0, 0};
    memcpy(tmp, &a, sizeof a);
    for (int i = 0; i < n; i++) {
        pf_rec_pyframe_t f = {code_ids[i], 0};
        memcpy(tmp + sizeof a + i * sizeof f, &f, sizeof f);
    }
    b_rec(b, PF_REC_ALLOC, 0, tmp, sizeof a + (size_t)n * sizeof(pf_rec_pyframe_t));
}

/* An interned stack of n Python frames (lasti 0), and an allocation that refers to one by id. */
static inline void b_stack(builder_t *b, uint32_t id, int n, const uint32_t *code_ids)
{
    unsigned char tmp[1024];
    pf_rec_stack_t st = {id, (uint16_t)n, 0};
    memcpy(tmp, &st, sizeof st);
    for (int i = 0; i < n; i++) {
        pf_rec_pyframe_t f = {code_ids[i], 0};
        memcpy(tmp + sizeof st + i * sizeof f, &f, sizeof f);
    }
    b_rec(b, PF_REC_STACK, 0, tmp, sizeof st + (size_t)n * sizeof(pf_rec_pyframe_t));
}

static inline void b_alloc_ref(builder_t *b, uint64_t t, uint64_t addr, uint64_t size, uint8_t flags, uint32_t stack_id)
{
    unsigned char tmp[64];
    pf_rec_alloc_t a = {t, addr, size, size, PF_DOMAIN_MALLOC, (uint8_t)(flags | PF_ALLOC_STACK_REF), 0, 0, 0};
    pf_rec_stack_ref_t ref = {stack_id, 0};
    memcpy(tmp, &a, sizeof a);
    memcpy(tmp + sizeof a, &ref, sizeof ref);
    b_rec(b, PF_REC_ALLOC, 0, tmp, sizeof a + sizeof ref);
}

/* The short form of b_alloc_ref: exact, its domain and flags in aux (PF_REC_ALLOC_SHORT). */
static inline void b_alloc_short(builder_t *b, uint64_t t, uint64_t addr, uint32_t size, uint8_t domain,
                                 uint8_t flags, uint32_t stack_id)
{
    pf_rec_alloc_short_t a = {t, addr, size, stack_id};
    b_rec(b, PF_REC_ALLOC_SHORT, PF_ALLOC_SHORT_AUX(domain, flags | PF_ALLOC_EXACT | PF_ALLOC_STACK_REF), &a,
          sizeof a);
}

static inline void b_free(builder_t *b, uint64_t t, uint64_t addr)
{
    pf_rec_free_t f = {t, addr};
    b_rec(b, PF_REC_FREE, PF_DOMAIN_MALLOC, &f, sizeof f);
}

static inline void b_mark(builder_t *b, uint64_t t, uint16_t kind)
{
    pf_rec_mark_t m = {t, 0, 0, 0};
    b_rec(b, PF_REC_MARK, kind, &m, sizeof m);
}

/* A copy of kind `kind` (PF_COPY_*), made at a frame of code at_code. */
static inline void b_copy_kind(builder_t *b, uint64_t t, uint64_t id, uint64_t dst, uint64_t src, uint64_t n,
                               uint32_t at_code, uint16_t kind)
{
    unsigned char tmp[256];
    pf_rec_copy_t c = {t, id, dst, src, n, n, PF_ALLOC_EXACT, 0, 1, 0, 0};
    pf_rec_pyframe_t f = {at_code, 0};
    memcpy(tmp, &c, sizeof c);
    memcpy(tmp + sizeof c, &f, sizeof f);
    b_rec(b, PF_REC_COPY, kind, tmp, sizeof c + sizeof f);
}

static inline void b_copy(builder_t *b, uint64_t t, uint64_t id, uint64_t dst, uint64_t src, uint64_t n, uint32_t at_code)
{
    b_copy_kind(b, t, id, dst, src, n, at_code, PF_COPY_MEMMOVE);
}

static inline void b_verdict(builder_t *b, uint64_t t, uint64_t id, uint16_t verdict)
{
    pf_rec_verdict_t v = {t, id, 100, PF_EVIDENCE_COMPARE_AT_FREE, 0};
    b_rec(b, PF_REC_VERDICT, verdict, &v, sizeof v);
}

/* A watched write (--watch=copies) to the copy (to_dst) or its source, by a frame of code writer_code. */
static inline void b_copy_write(builder_t *b, uint64_t t, uint64_t id, uint64_t addr, int to_dst, uint32_t writer_code)
{
    unsigned char tmp[128];
    pf_rec_copy_write_t w = {t, id, addr, 8, (uint8_t)(to_dst ? PF_COPY_WRITE_DST : 0), 1, 0, 0};
    pf_rec_pyframe_t f = {writer_code, 0};
    memcpy(tmp, &w, sizeof w);
    memcpy(tmp + sizeof w, &f, sizeof f);
    b_rec(b, PF_REC_COPY_WRITE, 0, tmp, sizeof w + sizeof f);
}

/* A thread's THREAD record with its pthread_t (PF_THREAD_HANDLE). */
static inline void b_thread(builder_t *b, uint64_t t, uint32_t tid, uint64_t handle)
{
    unsigned char tmp[64];
    pf_rec_thread_t th = {t, tid, 2};
    memcpy(tmp, &th, sizeof th);
    memcpy(tmp + sizeof th, &handle, 8);
    memcpy(tmp + sizeof th + 8, "w1", 2);
    b_rec(b, PF_REC_THREAD, PF_THREAD_HANDLE, tmp, sizeof th + 8 + 2);
}

/* The rest of the current chunk is thread tid's (an exited thread's chunk handed on). */
static inline void b_writer(builder_t *b, uint32_t tid)
{
    pf_rec_writer_t w = {tid, 0};
    b_rec(b, PF_REC_WRITER, 0, &w, sizeof w);
}

/* A start of a thread (child = its handle) or process (child = its pid) by thread tid, from n frames; with
 * child_flags PF_SPAWN_UNPROFILED, of an unprofiled Python running command. */
static inline void b_spawn_of(builder_t *b, uint64_t t, uint16_t kind, uint64_t child, uint32_t tid, int n,
                              const uint32_t *code_ids, uint8_t child_flags, const char *command)
{
    unsigned char tmp[512];
    size_t len = command ? strlen(command) : 0;
    pf_rec_spawn_t s = {.t_ns = t, .child = child, .tid = tid, .n_py = (uint16_t)n, .child_flags = child_flags,
                        .command_len = (uint16_t)len};
    memcpy(tmp, &s, sizeof s);
    for (int i = 0; i < n; i++) {
        pf_rec_pyframe_t f = {code_ids[i], 0};
        memcpy(tmp + sizeof s + i * sizeof f, &f, sizeof f);
    }
    size_t at = sizeof s + (size_t)n * sizeof(pf_rec_pyframe_t);
    memcpy(tmp + at, command ? command : "", len);
    b_rec(b, PF_REC_SPAWN, kind, tmp, at + len);
}

static inline void b_spawn(builder_t *b, uint64_t t, uint16_t kind, uint64_t child, uint32_t tid, int n,
                           const uint32_t *code_ids)
{
    b_spawn_of(b, t, kind, child, tid, n, code_ids, 0, NULL);
}

static char tmpdir[] = "/tmp/pf-report-test-XXXXXX";

static inline const char *b_save(builder_t *b, const char *name, size_t cut)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    size_t n = cut ? cut : b->size;
    assert_int_equal(fwrite(b->buf, 1, n, f), n);
    fclose(f);
    free(b->buf);
    b->buf = NULL;
    return path;
}

static inline pf_model_t *load_ok(const char *path)
{
    char err[512] = "";
    pf_model_t *m = NULL;
    pf_load_opts_t o = {.merge_children = 1};
    int rc = pf_model_load(path, &o, &m, err, sizeof err);
    if (rc != 0)
        fail_msg("load failed: %s", err);
    return m;
}

/* The row of file:line, or NULL. */
static inline const pf_line_t *lookup_line(const pf_model_t *m, const char *file, int line)
{
    for (size_t i = 0; i < m->n_lines; i++)
        if (m->lines[i].line == line && strcmp(pf_model_str(m, m->lines[i].file), file) == 0)
            return &m->lines[i];
    return NULL;
}

static inline const pf_line_t *find_line(const pf_model_t *m, const char *file, int line)
{
    const pf_line_t *l = lookup_line(m, file, line);
    if (!l)
        fail_msg("no line %s:%d", file, line);
    return l;
}

/* The function row named function in file, or NULL. */
static inline const pf_func_t *lookup_func(const pf_model_t *m, const char *file, const char *function)
{
    for (size_t i = 0; i < m->n_funcs; i++)
        if (strcmp(pf_model_str(m, m->funcs[i].function), function) == 0 &&
            strcmp(pf_model_str(m, m->funcs[i].file), file) == 0)
            return &m->funcs[i];
    return NULL;
}

static inline int writer_setup(void **state)
{
    (void)state;
    return mkdtemp(tmpdir) ? 0 : -1;
}

static inline int writer_teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd);
}

#endif /* TEST_REPORT_WRITER_H */
