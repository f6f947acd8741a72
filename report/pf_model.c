/* pf_model.c - builds the model from profile files: load every record of the root process and its
 * children, order the events in time, and sweep them once (allocations, frees, copies, verdicts) into
 * per-line, per-function and whole-program statistics, then once more up to the program's peak to know
 * each line's share of it.
 *
 * Attribution: a record is charged to the innermost frame of its stack that is the user's code
 * (pf_model_is_user_file), else to its innermost frame; a record without frames goes to "[native thread]"
 * (a thread that never ran Python) or "[python startup]" (the main thread before or after Python ran).
 * Frees after a process's finalization mark do not count: what is live then is "live at exit".
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_linetable_int.h"
#include "pf_model_int.h"
#include "pf_reader_int.h"
#include "pf_symbols_int.h"
#include "pf_util_int.h"

#define PF_MAX_CHILD_FILES 4096

/* ---- interned strings ---- */

static uint32_t intern(pf_model_t *m, const char *s, size_t n)
{
    pf_map_t *idx = m->string_index;
    uint64_t h = pf_hash_bytes(s, n, 0x51);
    for (uint64_t probe = h;; probe = probe * 31 + 7) {     /* chain over colliding hashes */
        int created;
        uint64_t *v = pf_map_put(idx, probe & ~(1ull << 63), &created);
        if (created) {
            char **slot = PF_VEC_PUSH(m->strings, m->n_strings, m->cap_strings);
            *slot = pf_xstrndup(s, n);
            *v = m->n_strings - 1;
            return (uint32_t)*v;
        }
        const char *have = m->strings[*v];
        if (strlen(have) == n && memcmp(have, s, n) == 0)
            return (uint32_t)*v;
    }
}

int pf_model_is_user_file(const pf_model_t *m, const char *file)
{
    if (!file[0] || file[0] == '[')
        return 0;
    if (m->profile_only) {
        for (const char *p = m->profile_only; *p;) {
            size_t n = strcspn(p, ",");
            if (n && memmem(file, strlen(file), p, n))
                return 1;
            p += n + (p[n] == ',');
        }
        return 0;
    }
    if (m->profile_all)
        return 1;
    if (strncmp(file, "<frozen ", 8) == 0 || strcmp(file, "<built-in>") == 0)
        return 0;
    if (strstr(file, "/lib/python3") || strstr(file, "/site-packages/") || strstr(file, "/dist-packages/"))
        return 0;
    return 1;
}

/* ---- loading ---- */

typedef struct pcode {
    uint32_t file, function;
    int firstlineno;
    uint32_t format;
    const uint8_t *table;
    uint32_t table_len;
    int is_user;
} pcode_t;

typedef struct event {
    uint64_t t;
    uint32_t seq;       /* file order: keeps ties stable */
    uint16_t type;
    uint16_t aux;
    uint32_t proc;
    const void *payload;
} event_t;

typedef struct module {
    uint64_t start, end, bias;
    uint32_t path;      /* interned */
} module_t;

typedef struct proc_state {
    pf_file_t file;
    module_t *modules;
    size_t n_modules, cap_modules;
    pf_map_t codes;         /* code id -> index+1 into pcodes */
    pcode_t *pcodes;
    size_t n_pcodes, cap_pcodes;
    uint64_t fin_ns;        /* UINT64_MAX = never finalized */
} proc_state_t;

typedef struct loader {
    pf_model_t *m;
    proc_state_t *procs;
    size_t n_procs;
    event_t *events;
    size_t n_events, cap_events;
    uint32_t cur;           /* process being walked */
} loader_t;

static int on_record(void *ctx, const pf_record_t *r)
{
    loader_t *L = ctx;
    proc_state_t *P = &L->procs[L->cur];
    pf_model_t *m = L->m;
    m->records++;
    switch (r->type) {
    case PF_REC_CODE: {
        const pf_rec_code_t *c = r->payload;
        const char *tail = (const char *)(c + 1);
        pcode_t *pc = PF_VEC_PUSH(P->pcodes, P->n_pcodes, P->cap_pcodes);
        /* names come from the profiled process: make them valid UTF-8 once, for every renderer */
        char *file = pf_utf8_clean(tail, c->filename_len), *name = pf_utf8_clean(tail + c->filename_len, c->name_len);
        pc->file = intern(m, file, strlen(file));
        pc->function = intern(m, name, strlen(name));
        free(file);
        free(name);
        pc->firstlineno = c->firstlineno;
        pc->format = r->aux;
        pc->table = (const uint8_t *)tail + c->filename_len + c->name_len;
        pc->table_len = c->linetable_len;
        pc->is_user = pf_model_is_user_file(m, m->strings[pc->file]);
        *pf_map_put(&P->codes, c->code_id, NULL) = P->n_pcodes;
        return 0;
    }
    case PF_REC_MODULE: {
        const pf_rec_module_t *mo = r->payload;
        module_t *slot = PF_VEC_PUSH(P->modules, P->n_modules, P->cap_modules);
        slot->start = mo->start;
        slot->end = mo->end;
        slot->bias = mo->load_bias;
        slot->path = intern(m, (const char *)(mo + 1), mo->path_len);
        return 0;
    }
    case PF_REC_MARK: {
        const pf_rec_mark_t *mk = r->payload;
        if (r->aux == PF_MARK_FINALIZING && mk->t_ns < P->fin_ns)
            P->fin_ns = mk->t_ns;
        if (r->aux == PF_MARK_DROPPED)
            m->dropped += mk->value;
        return 0;
    }
    case PF_REC_EXIT: {
        const pf_rec_exit_t *x = r->payload;
        if (L->cur == 0) {
            m->has_exit = 1;
            m->exit_signaled = (x->flags & PF_EXIT_SIGNALED) != 0;
            m->exit_code = x->code;
            m->elapsed_s = (double)x->elapsed_ns / 1e9;
        }
        return 0;
    }
    case PF_REC_ALLOC:
    case PF_REC_FREE:
    case PF_REC_COPY:
    case PF_REC_VERDICT: {
        event_t *e = PF_VEC_PUSH(L->events, L->n_events, L->cap_events);
        e->t = *(const uint64_t *)r->payload + L->m->procs[L->cur].offset_ns;   /* t_ns leads each payload */
        e->seq = (uint32_t)L->n_events;
        e->type = r->type;
        e->aux = r->aux;
        e->proc = L->cur;
        e->payload = r->payload;
        return 0;
    }
    default:
        return 0;
    }
}

/* Space-joined argv from a header's NUL-separated one; skip_first drops the interpreter. */
static char *join_argv(const pf_file_header_t *h, int skip_first)
{
    size_t n = h->argv_bytes;
    char *s = pf_xmalloc(n + 1);
    size_t o = 0;
    int first = 1;
    for (size_t i = 0; i < n;) {
        size_t len = strnlen(h->argv + i, n - i);
        if (!(skip_first && first)) {
            if (o)
                s[o++] = ' ';
            memcpy(s + o, h->argv + i, len);
            o += len;
        }
        first = 0;
        i += len + 1;
    }
    s[o] = '\0';
    return s;
}

static void root_argv(pf_model_t *m, const pf_file_header_t *h)
{
    size_t n = h->argv_bytes, cap = 0;
    int index = 0;
    for (size_t i = 0; i < n;) {
        size_t len = strnlen(h->argv + i, n - i);
        if (index++ > 0) {  /* argv[0] is the interpreter */
            char **slot = PF_VEC_PUSH(m->argv, m->argc, cap);
            *slot = pf_xstrndup(h->argv + i, len);
        }
        i += len + 1;
    }
}

static int is_child_name(const char *name, const char *base)
{
    size_t bl = strlen(base);
    if (strncmp(name, base, bl) != 0 || name[bl] != '.')
        return 0;
    const char *p = name + bl + 1;
    int dots = 0, digits = 0;
    for (; *p; p++) {
        if (*p == '.') {
            if (!digits || ++dots > 1)
                return 0;
            digits = 0;
        } else if (*p >= '0' && *p <= '9') {
            digits++;
        } else {
            return 0;
        }
    }
    return digits > 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t pf_profile_children(const char *path, char ***out)
{
    *out = NULL;
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    if (slash == path)
        strcpy(dir, "/");
    char **names = NULL;
    size_t n = 0, cap = 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < PF_MAX_CHILD_FILES) {
        if (!is_child_name(de->d_name, base))
            continue;
        char full[PATH_MAX + 256];
        snprintf(full, sizeof full, "%s/%s", dir, de->d_name);
        char **slot = PF_VEC_PUSH(names, n, cap);
        *slot = pf_xstrndup(full, strlen(full));
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, cmp_str);
    *out = names;
    return n;
}

void pf_profile_children_free(char **list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(list[i]);
    free(list);
}

/* ---- the sweep ---- */

typedef struct live_obj {
    int32_t line, func;
    int gpu;            /* a GPU allocation */
    uint32_t native;    /* native site string, 0 = none */
    double est;
    uint64_t size;
} live_obj_t;

typedef struct copy_info {
    int32_t flow;
    double est;
} copy_info_t;

typedef struct sweeper {
    pf_model_t *m;
    loader_t *L;
    pf_map_t line_index;    /* (file, function, line) hash -> row+1 */
    pf_map_t func_index;
    pf_map_t frame_cache;   /* (proc, code id, lasti) -> row+1 */
    pf_map_t live;          /* (proc, addr) -> live_obj index */
    pf_map_t freed;         /* (proc, addr) -> live_obj index of the last block freed there */
    pf_map_t flow_index;    /* edge key -> flow+1 */
    pf_map_t copies;        /* (proc, copy id) -> copy_info index, until its verdict */
    copy_info_t *cinfo;
    size_t n_cinfo, cap_cinfo;
    live_obj_t *objs;
    size_t n_objs, cap_objs;
    uint64_t t_end;
    pf_symbols_t *symbols;
    pf_map_t native_cache;  /* (proc, ip) -> native site string id + 1 (0 stored as 1: none) */
} sweeper_t;

static uint64_t key3(uint64_t a, uint64_t b, uint64_t c)
{
    return pf_hash_bytes((uint64_t[]){a, b, c}, 24, 0x77) & ~(1ull << 63);
}

static int32_t line_row(sweeper_t *S, uint32_t file, uint32_t function, int line)
{
    int created;
    uint64_t *v = pf_map_put(&S->line_index, key3(file, function, (uint64_t)(int64_t)line), &created);
    if (!created)
        return (int32_t)(*v - 1);
    pf_line_t *l = PF_VEC_PUSH(S->m->lines, S->m->n_lines, S->m->cap_lines);
    l->file = file;
    l->function = function;
    l->line = line;
    *v = S->m->n_lines;
    return (int32_t)(S->m->n_lines - 1);
}

static int32_t func_row(sweeper_t *S, uint32_t file, uint32_t function, int first_line)
{
    int created;
    uint64_t *v = pf_map_put(&S->func_index, key3(file, function, 0xF), &created);
    if (!created)
        return (int32_t)(*v - 1);
    pf_func_t *f = PF_VEC_PUSH(S->m->funcs, S->m->n_funcs, S->m->cap_funcs);
    f->file = file;
    f->function = function;
    f->first_line = first_line;
    *v = S->m->n_funcs;
    return (int32_t)(S->m->n_funcs - 1);
}

/* The row (and function row) a stack is charged to. */
static int32_t attribute(sweeper_t *S, uint32_t proc, const pf_rec_pyframe_t *frames, uint16_t n, uint8_t flags,
                         int32_t *func)
{
    pf_model_t *m = S->m;
    proc_state_t *P = &S->L->procs[proc];
    if (n == 0) {
        uint32_t file = intern(m, (flags & PF_ALLOC_NO_PYSTATE) ? "[native thread]" : "[python startup]",
                               (flags & PF_ALLOC_NO_PYSTATE) ? 15 : 16);
        uint32_t fn = intern(m, "", 0);
        *func = func_row(S, file, fn, 0);
        return line_row(S, file, fn, 0);
    }
    /* The innermost frame in a real user file. Code without a file (<string>: python -c, exec) counts only
     * while every frame outside it is user code too: library code generates such code (namedtuple), and
     * that is not the user's line. Else the innermost frame at all. */
    int pick = -1, fallback = -1, chain = 1;
    for (int i = n - 1; i >= 0; i--) {
        uint64_t *ci = pf_map_get(&P->codes, frames[i].code_id);
        if (!ci)
            continue;
        fallback = i;
        const pcode_t *pc = &P->pcodes[*ci - 1];
        if (!pc->is_user)
            chain = 0;
        else if (m->strings[pc->file][0] != '<' || chain)
            pick = i;
    }
    if (pick < 0)
        pick = fallback;
    if (pick < 0) {
        uint32_t file = intern(m, "[unknown]", 9), fn = intern(m, "", 0);
        *func = func_row(S, file, fn, 0);
        return line_row(S, file, fn, 0);
    }
    const pcode_t *pc = &P->pcodes[*pf_map_get(&P->codes, frames[pick].code_id) - 1];
    *func = func_row(S, pc->file, pc->function, pc->firstlineno);
    uint64_t ck = key3(proc, frames[pick].code_id, frames[pick].lasti_bytes);
    int created;
    uint64_t *v = pf_map_put(&S->frame_cache, ck, &created);
    if (created) {
        int line = pf_linetable_line(pc->format, pc->table, pc->table_len, pc->firstlineno, frames[pick].lasti_bytes);
        *v = (uint64_t)line_row(S, pc->file, pc->function, line) + 1;
    }
    return (int32_t)(*v - 1);
}

/* The innermost native frame outside the interpreter, libc and pyflow, as an interned "symbol (library)";
 * 0 when there is none (or no native stack was captured). */
static uint32_t native_site(sweeper_t *S, uint32_t proc, const uint64_t *ips, uint16_t n)
{
    const proc_state_t *P = &S->L->procs[proc];
    for (uint16_t i = 0; i < n; i++) {
        uint64_t ip = ips[i];
        int created;
        uint64_t *v = pf_map_put(&S->native_cache, key3(proc, ip, 0x5e), &created);
        if (created) {
            *v = 1;     /* none, unless a module below says otherwise */
            for (size_t k = 0; k < P->n_modules; k++) {
                const module_t *mo = &P->modules[k];
                if (ip < mo->start || ip >= mo->end)
                    continue;
                const char *path = S->m->strings[mo->path];
                if (!pf_symbols_is_runtime_library(path)) {
                    char name[512];
                    /* return addresses point after the call: look up the call itself */
                    pf_symbols_name(S->symbols, path, ip - mo->bias - (i > 0), name, sizeof name);
                    *v = (uint64_t)intern(S->m, name, strlen(name)) + 1;
                }
                break;
            }
        }
        if (*v > 1)
            return (uint32_t)(*v - 1);
    }
    return 0;
}

static int bucket_of(const sweeper_t *S, uint64_t t)
{
    if (S->t_end == 0)
        return 0;
    uint64_t b = t * PF_TIMELINE_POINTS / (S->t_end + 1);
    return b >= PF_TIMELINE_POINTS ? PF_TIMELINE_POINTS - 1 : (int)b;
}

/* Moves a row's live bytes to a new value at time t, keeping its area, maximum and timeline. */
static void set_live(sweeper_t *S, pf_stats_t *s, uint64_t t, double live)
{
    if (live < 0 && live > -1.0)
        live = 0;   /* rounding of sampled estimates */
    s->area += s->live * (double)(t - s->live_since_ns) / 1e9;
    s->live_since_ns = t;
    int b = bucket_of(S, t);
    while (s->timeline_filled <= b)
        s->timeline[s->timeline_filled++] = s->live;   /* buckets with no change hold the value carried in */
    if (live > s->timeline[b])
        s->timeline[b] = live;
    s->live = live;
    if (live > s->max_live)
        s->max_live = live;
}

/* The program's live GPU bytes changed at t (its timeline keeps each bucket's maximum). */
static void gpu_timeline_set(sweeper_t *S, uint64_t t, double live)
{
    pf_model_t *m = S->m;
    int b = bucket_of(S, t);
    while (m->gpu_timeline_filled <= b)
        m->gpu_timeline[m->gpu_timeline_filled++] = m->total.gpu_live;
    if (live > m->gpu_timeline[b])
        m->gpu_timeline[b] = live;
}

static void touch(pf_stats_t *s, uint64_t t)
{
    if (!s->first_ns || t < s->first_ns)
        s->first_ns = t ? t : 1;
    if (t > s->last_ns)
        s->last_ns = t;
}

static uint64_t addr_key(uint32_t proc, uint64_t addr)
{
    return (addr & ((1ull << 48) - 1)) | ((uint64_t)(proc & 0x7fff) << 48);  /* user addresses: 47 bits */
}

/* The live object containing addr: addr itself or a small header before it (CPython objects). */
static int64_t object_at(sweeper_t *S, uint32_t proc, uint64_t addr)
{
    for (uint64_t back = 0; back <= 64 && back <= addr; back += 8) {
        uint64_t *v = pf_map_get(&S->live, addr_key(proc, addr - back));
        if (v && addr < addr - back + S->objs[*v].size)
            return (int64_t)*v;
    }
    return -1;
}

static void on_alloc(sweeper_t *S, const event_t *e)
{
    pf_model_t *m = S->m;
    const pf_rec_alloc_t *a = e->payload;
    int32_t fn;
    int32_t row = attribute(S, e->proc, (const pf_rec_pyframe_t *)(a + 1), a->n_py, a->flags, &fn);
    double est = (double)a->est_bytes;
    double count = a->size ? est / (double)a->size : 1.0;
    pf_stats_t *rows[3] = {&m->lines[row].s, &m->funcs[fn].s, &m->total};
    for (int i = 0; i < 3; i++) {
        pf_stats_t *s = rows[i];
        s->alloc_bytes += est;
        s->alloc_count += count;
        s->n_recs++;
        if (pf_domain_is_python(a->domain))
            s->python_bytes += est;
        else if (pf_domain_is_native(a->domain))
            s->native_bytes += est;
        else
            s->gpu_bytes += est;
        touch(s, e->t);
        set_live(S, s, e->t, s->live + est);
        if (a->domain == PF_DOMAIN_GPU) {
            if (s == &m->total)
                gpu_timeline_set(S, e->t, s->gpu_live + est);
            s->gpu_live += est;
        }
    }
    pf_process_t *pr = &m->procs[e->proc];
    pr->alloc_bytes += est;
    *(pf_domain_is_python(a->domain) ? &pr->python_bytes
      : pf_domain_is_native(a->domain) ? &pr->native_bytes : &pr->gpu_bytes) += est;
    pr->live += est;
    if (pr->live > pr->peak_bytes)
        pr->peak_bytes = pr->live;
    live_obj_t *o = PF_VEC_PUSH(S->objs, S->n_objs, S->cap_objs);
    o->line = row;
    o->func = fn;
    o->gpu = a->domain == PF_DOMAIN_GPU;
    if (a->n_native)
        o->native = native_site(S, e->proc, (const uint64_t *)((const pf_rec_pyframe_t *)(a + 1) + a->n_py),
                                a->n_native);
    o->est = est;
    o->size = a->size;
    *pf_map_put(&S->live, addr_key(e->proc, a->addr), NULL) = S->n_objs - 1;
}

static void on_free(sweeper_t *S, const event_t *e)
{
    const pf_rec_free_t *f = e->payload;
    uint64_t k = addr_key(e->proc, f->addr);
    uint64_t *v = pf_map_get(&S->live, k);
    if (!v)
        return;
    uint64_t idx = *v;
    *pf_map_put(&S->freed, k, NULL) = idx;
    if (e->t >= S->L->procs[e->proc].fin_ns)
        return;     /* interpreter shutdown: the object stays counted as live at exit */
    pf_map_del(&S->live, k);
    const live_obj_t *o = &S->objs[idx];
    pf_model_t *m = S->m;
    m->procs[e->proc].live -= o->est;
    pf_stats_t *rows[3] = {&m->lines[o->line].s, &m->funcs[o->func].s, &m->total};
    for (int i = 0; i < 3; i++) {
        rows[i]->n_freed++;
        set_live(S, rows[i], e->t, rows[i]->live - o->est);
        if (o->gpu) {
            if (rows[i] == &m->total)
                gpu_timeline_set(S, e->t, rows[i]->gpu_live - o->est);
            rows[i]->gpu_live -= o->est;
        }
    }
}

static void on_copy(sweeper_t *S, const event_t *e)
{
    pf_model_t *m = S->m;
    const pf_rec_copy_t *c = e->payload;
    int32_t fn;
    int32_t at = attribute(S, e->proc, (const pf_rec_pyframe_t *)(c + 1), c->n_py, c->flags, &fn);
    int64_t src = -1, dst = object_at(S, e->proc, c->dst);
    if (e->aux == PF_COPY_REALLOC) {
        uint64_t *v = pf_map_get(&S->freed, addr_key(e->proc, c->src));
        src = v ? (int64_t)*v : -1;
    } else {
        src = object_at(S, e->proc, c->src);
    }
    int32_t src_line = src >= 0 ? S->objs[src].line : -1, dst_line = dst >= 0 ? S->objs[dst].line : -1;
    double est = (double)c->est_bytes, count = c->bytes ? est / (double)c->bytes : 1.0;
    pf_stats_t *rows[3] = {&m->lines[at].s, &m->funcs[fn].s, &m->total};
    for (int i = 0; i < 3; i++) {
        rows[i]->copy_bytes += est;
        rows[i]->copy_count += count;
        touch(rows[i], e->t);
    }
    int created;
    uint64_t *fv = pf_map_put(&S->flow_index,
                              key3(((uint64_t)(uint32_t)src_line << 32) | (uint32_t)dst_line, (uint32_t)at, e->aux),
                              &created);
    if (created) {
        pf_flow_t *fl = PF_VEC_PUSH(m->flows, m->n_flows, m->cap_flows);
        fl->src_line = src_line;
        fl->dst_line = dst_line;
        fl->at_line = at;
        fl->at_func = fn;
        fl->kind = e->aux;
        fl->src_native = src >= 0 ? S->objs[src].native : 0;
        fl->dst_native = dst >= 0 ? S->objs[dst].native : 0;
        if (c->n_native)
            fl->at_native = native_site(S, e->proc, (const uint64_t *)((const pf_rec_pyframe_t *)(c + 1) + c->n_py),
                                        c->n_native);
        *fv = m->n_flows;
    }
    pf_flow_t *fl = &m->flows[*fv - 1];
    fl->bytes += est;
    fl->count += count;
    copy_info_t *ci = PF_VEC_PUSH(S->cinfo, S->n_cinfo, S->cap_cinfo);
    ci->flow = (int32_t)(*fv - 1);
    ci->est = est;
    *pf_map_put(&S->copies, key3(e->proc, c->copy_id, 0xC0), NULL) = S->n_cinfo - 1;
}

static void on_verdict(sweeper_t *S, const event_t *e)
{
    pf_model_t *m = S->m;
    const pf_rec_verdict_t *v = e->payload;
    uint64_t ck = key3(e->proc, v->copy_id, 0xC0);
    uint64_t *c = pf_map_get(&S->copies, ck);
    if (!c)
        return;
    const copy_info_t *ci = &S->cinfo[*c];
    pf_flow_t *fl = &m->flows[ci->flow];
    fl->judged++;
    fl->judged_bytes += ci->est;
    fl->evidence = v->evidence;
    if (e->aux == PF_VERDICT_REDUNDANT) {
        fl->redundant++;
        fl->redundant_judged_bytes += ci->est;
    }
    pf_map_del(&S->copies, ck);
}

/* The runtime judges only the copies its compare budget allows: each edge's redundant bytes are its bytes
 * times the redundant share of the copies that were judged. */
static void extrapolate_redundancy(pf_model_t *m)
{
    for (size_t i = 0; i < m->n_flows; i++) {
        pf_flow_t *fl = &m->flows[i];
        if (fl->judged_bytes <= 0)
            continue;
        fl->redundant_bytes = fl->bytes * (fl->redundant_judged_bytes / fl->judged_bytes);
        if (fl->at_line >= 0)
            m->lines[fl->at_line].s.redundant_copy_bytes += fl->redundant_bytes;
        if (fl->at_func >= 0)
            m->funcs[fl->at_func].s.redundant_copy_bytes += fl->redundant_bytes;
        m->total.redundant_copy_bytes += fl->redundant_bytes;
    }
}

static int cmp_event(const void *a, const void *b)
{
    const event_t *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void finish_stats(pf_stats_t *s, uint64_t t_end)
{
    s->area += s->live * (double)(t_end - s->live_since_ns) / 1e9;
    s->live_since_ns = t_end;
    while (s->timeline_filled < PF_TIMELINE_POINTS)
        s->timeline[s->timeline_filled++] = s->live;
    s->leaked_bytes = s->live > 0.5 ? s->live : 0;
}

/* Replays allocations and frees up to (and including) event `upto`, to know each row's live bytes at the
 * program's peak. */
static void peak_shares(sweeper_t *S, size_t upto, int gpu_only)
{
    pf_model_t *m = S->m;
    pf_map_t live = {0};
    size_t obj = 0;
    for (size_t i = 0; i <= upto && i < S->L->n_events; i++) {
        const event_t *e = &S->L->events[i];
        if (e->type == PF_REC_ALLOC) {
            const pf_rec_alloc_t *a = e->payload;
            const live_obj_t *o = &S->objs[obj];
            *pf_map_put(&live, addr_key(e->proc, a->addr), NULL) = obj++;
            if (gpu_only && !o->gpu)
                continue;
            *(gpu_only ? &m->lines[o->line].s.gpu_peak_bytes : &m->lines[o->line].s.peak_bytes) += o->est;
            *(gpu_only ? &m->funcs[o->func].s.gpu_peak_bytes : &m->funcs[o->func].s.peak_bytes) += o->est;
        } else if (e->type == PF_REC_FREE && e->t < S->L->procs[e->proc].fin_ns) {
            const pf_rec_free_t *f = e->payload;
            uint64_t k = addr_key(e->proc, f->addr);
            uint64_t *v = pf_map_get(&live, k);
            if (v) {
                const live_obj_t *o = &S->objs[*v];
                if (!gpu_only || o->gpu) {
                    *(gpu_only ? &m->lines[o->line].s.gpu_peak_bytes : &m->lines[o->line].s.peak_bytes) -= o->est;
                    *(gpu_only ? &m->funcs[o->func].s.gpu_peak_bytes : &m->funcs[o->func].s.peak_bytes) -= o->est;
                }
                pf_map_del(&live, k);
            }
        }
    }
    pf_map_free(&live);
    for (size_t i = 0; i < m->n_lines; i++)
        if (m->lines[i].s.peak_bytes < 0.5)
            m->lines[i].s.peak_bytes = 0;
    for (size_t i = 0; i < m->n_funcs; i++)
        if (m->funcs[i].s.peak_bytes < 0.5)
            m->funcs[i].s.peak_bytes = 0;
}

static void sweep(loader_t *L)
{
    pf_model_t *m = L->m;
    qsort(L->events, L->n_events, sizeof *L->events, cmp_event);
    sweeper_t S = {.m = m, .L = L, .symbols = pf_symbols_new()};
    S.t_end = L->n_events ? L->events[L->n_events - 1].t : 0;
    if (m->has_exit && (uint64_t)(m->elapsed_s * 1e9) > S.t_end)
        S.t_end = (uint64_t)(m->elapsed_s * 1e9);
    m->end_ns = S.t_end;
    double peak = -1, gpu_peak = 0;
    size_t peak_at = 0, gpu_peak_at = 0;
    for (size_t i = 0; i < L->n_events; i++) {
        const event_t *e = &L->events[i];
        switch (e->type) {
        case PF_REC_ALLOC:
            on_alloc(&S, e);
            break;
        case PF_REC_FREE:
            on_free(&S, e);
            break;
        case PF_REC_COPY:
            on_copy(&S, e);
            break;
        case PF_REC_VERDICT:
            on_verdict(&S, e);
            break;
        }
        if (m->total.live > peak) {
            peak = m->total.live;
            peak_at = i;
            m->peak_ns = e->t;
        }
        if (m->total.gpu_live > gpu_peak) {
            gpu_peak = m->total.gpu_live;
            gpu_peak_at = i;
        }
    }
    m->total.peak_bytes = peak > 0 ? peak : 0;
    extrapolate_redundancy(m);
    for (size_t i = 0; i < m->n_lines; i++)
        finish_stats(&m->lines[i].s, S.t_end);
    for (size_t i = 0; i < m->n_funcs; i++)
        finish_stats(&m->funcs[i].s, S.t_end);
    finish_stats(&m->total, S.t_end);
    while (m->gpu_timeline_filled < PF_TIMELINE_POINTS)
        m->gpu_timeline[m->gpu_timeline_filled++] = m->total.gpu_live;
    if (peak > 0)
        peak_shares(&S, peak_at, 0);
    m->total.gpu_peak_bytes = gpu_peak;
    if (gpu_peak > 0)
        peak_shares(&S, gpu_peak_at, 1);
    m->timeline_end_s = (double)S.t_end / 1e9;
    pf_map_free(&S.line_index);
    pf_map_free(&S.func_index);
    pf_map_free(&S.frame_cache);
    pf_map_free(&S.live);
    pf_map_free(&S.freed);
    pf_map_free(&S.flow_index);
    pf_map_free(&S.copies);
    pf_map_free(&S.native_cache);
    pf_symbols_free(S.symbols);
    free(S.cinfo);
    free(S.objs);
}

/* ---- public ---- */

static int add_process(loader_t *L, const char *path, int root, char *err, size_t errlen)
{
    pf_model_t *m = L->m;
    L->procs = pf_xrealloc(L->procs, (L->n_procs + 1) * sizeof *L->procs);
    proc_state_t *P = &L->procs[L->n_procs];
    memset(P, 0, sizeof *P);
    P->fin_ns = UINT64_MAX;
    int rc = pf_file_open(path, &P->file, err, errlen);
    if (rc < 0)
        return rc;
    const pf_file_header_t *h = &P->file.header;
    pf_process_t *pr = PF_VEC_PUSH(m->procs, m->n_procs, m->cap_procs);
    pr->pid = h->pid;
    pr->ppid = h->ppid;
    pr->root = root;
    pr->argv = join_argv(h, 1);
    pr->python = pf_xstrndup(h->python_version, strlen(h->python_version));
    if (!root && L->n_procs > 0) {
        uint64_t root_start = L->procs[0].file.header.start_mono_ns;
        pr->offset_ns = h->start_mono_ns > root_start ? h->start_mono_ns - root_start : 0;
    }
    if (root) {
        m->exact = (h->flags & PF_HDR_EXACT) != 0;
        m->mean_sample_bytes = h->mean_sample_bytes;
        m->object_threshold = h->object_threshold;
        m->python_version = pf_xstrndup(h->python_version, strlen(h->python_version));
        root_argv(m, h);
    }
    L->cur = (uint32_t)L->n_procs;
    L->n_procs++;
    return pf_file_walk(&P->file, on_record, L, err, errlen);
}

int pf_model_load(const char *path, const pf_load_opts_t *opts, pf_model_t **out, char *err, size_t errlen)
{
    pf_model_t *m = pf_xcalloc(1, sizeof *m);
    m->string_index = pf_xcalloc(1, sizeof(pf_map_t));
    intern(m, "", 0);
    if (opts && opts->profile_only && *opts->profile_only)
        m->profile_only = pf_xstrndup(opts->profile_only, strlen(opts->profile_only));
    m->profile_all = opts && opts->profile_all;
    loader_t L = {.m = m};
    int rc = add_process(&L, path, 1, err, errlen);
    if (rc == 0 && opts && opts->merge_children) {
        char **kids = NULL;
        size_t n = pf_profile_children(path, &kids);
        for (size_t i = 0; i < n; i++) {
            char kid_err[512];
            /* A child killed before it wrote anything leaves an empty file, and one cut mid-record a
             * corrupt tail: skip what cannot be read, keep the rest. */
            add_process(&L, kids[i], 0, kid_err, sizeof kid_err);
        }
        pf_profile_children_free(kids, n);
    }
    if (rc == 0)
        sweep(&L);
    for (size_t i = 0; i < L.n_procs; i++) {
        pf_map_free(&L.procs[i].codes);
        free(L.procs[i].pcodes);
        free(L.procs[i].modules);
        pf_file_close(&L.procs[i].file);
    }
    free(L.procs);
    free(L.events);
    if (rc != 0) {
        pf_model_free(m);
        return rc;
    }
    if (!m->has_exit)
        m->elapsed_s = (double)m->end_ns / 1e9;
    *out = m;
    return 0;
}

void pf_model_free(pf_model_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_strings; i++)
        free(m->strings[i]);
    free(m->strings);
    if (m->string_index)
        pf_map_free(m->string_index);
    free(m->string_index);
    free(m->lines);
    free(m->funcs);
    free(m->flows);
    for (size_t i = 0; i < m->n_procs; i++) {
        free(m->procs[i].argv);
        free(m->procs[i].python);
    }
    free(m->procs);
    for (size_t i = 0; i < m->argc; i++)
        free(m->argv[i]);
    free(m->argv);
    free(m->python_version);
    free(m->profile_only);
    free(m);
}
