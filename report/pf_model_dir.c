/* pf_model_dir.c - the profiles of a job's processes, from directories and several files, on one clock.
 *
 * Processes not started by pyflow run (pyflow env) each write DIR/<host>.<pid>, on hosts whose clocks
 * differ. Record times in a file are relative to its header's start_mono_ns (CLOCK_MONOTONIC, per host,
 * since boot); the header also has start_real_ns (CLOCK_REALTIME, the same taken a moment later). Between
 * files of one host the monotonic clock is exact; between hosts only the real-time clock is shared (to
 * NTP's accuracy). So each host's earliest file anchors the host: a file's start on the common clock is
 * its monotonic start plus its host anchor's (real - monotonic). The host is the file's PF_MARK_PROCESS_LABEL
 * host=, found in its first chunks; a file without one (pyflow run -o) counts as one host of its own
 * (its anchor is itself, so its real-time start is taken).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pf_loader_int.h"
#include "pf_report.h"
#include "pf_util_int.h"

#define MAX_SET_FILES 4096

typedef struct member {
    char *path;
    char host[64];
    uint64_t mono, real, start;
} member_t;

typedef struct find_host {
    char *host;
    size_t size;
} find_host_t;

static int on_label(void *ctx, const pf_record_t *r)
{
    find_host_t *fh = ctx;
    if (r->offset > PF_HEADER_BYTES + 4 * (uint64_t)PF_CHUNK_BYTES)
        return 1;   /* labels come with the first thread's first records: not in this file */
    if (r->type != PF_REC_MARK || r->aux != PF_MARK_PROCESS_LABEL)
        return 0;
    const pf_rec_mark_t *mk = r->payload;
    if (mk->note_len > 5 && memcmp(mk + 1, "host=", 5) == 0) {
        size_t n = mk->note_len - 5 < fh->size - 1 ? mk->note_len - 5 : fh->size - 1;
        memcpy(fh->host, (const char *)(mk + 1) + 5, n);
        fh->host[n] = '\0';
        return 1;
    }
    return 0;
}

/* 1 when path starts with the profile magic. */
static int is_profile(const char *path)
{
    FILE *f = fopen(path, "rb");
    char magic[8];
    int ok = f && fread(magic, 1, sizeof magic, f) == sizeof magic && memcmp(magic, PF_FILE_MAGIC, 8) == 0;
    if (f)
        fclose(f);
    return ok;
}

static void add_path(char ***list, size_t *n, size_t *cap, const char *path)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*list)[i], path) == 0)
            return;     /* a file named, and found again as a child or in its directory */
    if (*n < MAX_SET_FILES)
        *PF_VEC_PUSH(*list, *n, *cap) = pf_xstrndup(path, strlen(path));
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every profile in dir (not below), sorted by name. Returns how many were added. */
static size_t add_dir(char ***list, size_t *n, size_t *cap, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    char **names = NULL;
    size_t k = 0, kcap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        char *p = pf_xcalloc(1, len);
        snprintf(p, len, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && is_profile(p))
            *PF_VEC_PUSH(names, k, kcap) = p;
        else
            free(p);
    }
    closedir(d);
    if (k)
        qsort(names, k, sizeof *names, cmp_name);
    size_t before = *n;
    for (size_t i = 0; i < k; i++) {
        add_path(list, n, cap, names[i]);
        free(names[i]);
    }
    free(names);
    return *n - before;
}

static int cmp_start(const void *a, const void *b)
{
    const member_t *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

int pf_model_load_set(const char *const *paths, size_t n_paths, const pf_load_opts_t *opts, pf_model_t **out,
                      char *err, size_t errlen)
{
    char **list = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < n_paths; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0) {
            snprintf(err, errlen, "%s: %s", paths[i], strerror(errno));
            pf_profile_children_free(list, n);
            return -errno;
        }
        if (S_ISDIR(st.st_mode)) {
            if (add_dir(&list, &n, &cap, paths[i]) == 0) {
                snprintf(err, errlen, "%s: no pyflow profile in this directory", paths[i]);
                pf_profile_children_free(list, n);
                return -ENOENT;
            }
            continue;
        }
        add_path(&list, &n, &cap, paths[i]);
        char **kids = NULL;
        size_t k = pf_profile_children(paths[i], &kids);
        for (size_t j = 0; j < k; j++)
            add_path(&list, &n, &cap, kids[j]);
        pf_profile_children_free(kids, k);
    }
    member_t *mem = pf_xcalloc(n ? n : 1, sizeof *mem);
    size_t ok = 0;
    for (size_t i = 0; i < n; i++) {
        pf_file_t f;
        char ferr[512];
        if (pf_file_open(list[i], &f, ferr, sizeof ferr) < 0) {
            if (n_paths == 1 && n == 1) {   /* the one file asked for: say why, as pyflow report FILE does */
                snprintf(err, errlen, "%s", ferr);
                free(mem);
                pf_profile_children_free(list, n);
                return -EINVAL;
            }
            continue;   /* an empty or foreign file among many: a worker killed before it wrote */
        }
        member_t *m = &mem[ok++];
        m->path = list[i];
        m->mono = f.header.start_mono_ns;
        m->real = f.header.start_real_ns;
        find_host_t fh = {m->host, sizeof m->host};
        pf_file_walk(&f, on_label, &fh, ferr, sizeof ferr);
        pf_file_close(&f);
    }
    if (!ok) {
        snprintf(err, errlen, "%s: no readable pyflow profile", n_paths ? paths[0] : "(nothing)");
        free(mem);
        pf_profile_children_free(list, n);
        return -EINVAL;
    }
    for (size_t i = 0; i < ok; i++) {
        /* the host's anchor: its file that started first by the real-time clock */
        const member_t *anchor = &mem[i];
        for (size_t j = 0; j < ok && mem[i].host[0]; j++)
            if (strcmp(mem[j].host, mem[i].host) == 0 && mem[j].real < anchor->real)
                anchor = &mem[j];
        mem[i].start = mem[i].mono + (anchor->real - anchor->mono);
    }
    qsort(mem, ok, sizeof *mem, cmp_start);
    pf_file_set_t set = {.paths = pf_xcalloc(ok, sizeof(char *)), .start_ns = pf_xcalloc(ok, sizeof(uint64_t)), .n = ok};
    for (size_t i = 0; i < ok; i++) {
        set.paths[i] = mem[i].path;
        set.start_ns[i] = mem[i].start ? mem[i].start : 1;
    }
    pf_load_opts_t lo = opts ? *opts : (pf_load_opts_t){0};
    lo.set = &set;
    int rc = pf_model_load(set.paths[0], &lo, out, err, errlen);
    free(set.paths);
    free(set.start_ns);
    free(mem);
    pf_profile_children_free(list, n);
    return rc;
}
