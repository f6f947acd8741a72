/* pf_model.c - builds the model from profile files: opens the root process's file and (when asked) its
 * children's, walks every record once, keeps code objects, modules and marks per process, and notes where
 * the events that change memory are (pf_model_events.c). pf_model_sweep.c then turns those into the numbers.
 *
 * Invariants: every string in the model is valid UTF-8 without NUL (names come from the profiled process
 * and are cleaned once here, for every renderer); a child that cannot be read is skipped, the root cannot.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_loader_int.h"
#include "pf_origin_int.h"
#include "pf_workers_int.h"

#define PF_MAX_CHILD_FILES 4096

/* ---- interned strings ---- */

uint32_t pf_model_intern(pf_model_t *m, const char *s, size_t n)
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

uint32_t pf_model_intern_maker(pf_model_t *m, const char *function, const char *file, int line)
{
    const char *base = strrchr(file, '/');
    char name[600];
    int len = snprintf(name, sizeof name, "%s (%s:%d)", function, base ? base + 1 : file, line);
    return pf_model_intern(m, name, len > 0 && (size_t)len < sizeof name ? (size_t)len : strlen(name));
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
    if (strncmp(file, "<frozen ", 8) == 0 || strcmp(file, "<built-in>") == 0 || strncmp(file, "<pyflow", 7) == 0)
        return 0;
    if (strstr(file, "/lib/python3") || strstr(file, "/site-packages/") || strstr(file, "/dist-packages/"))
        return 0;
    return 1;
}


/* ---- loading ---- */

/* Threads may race to write the same step, in chunks walked out of time order: keep each factor once, at
 * its earliest time; pf_model_load orders them (a larger factor is always later). */
static void note_sampling_step(pf_model_t *m, double t_s, uint64_t factor)
{
    for (size_t i = 0; i < m->n_sampling_steps; i++)
        if (m->sampling_steps[i].factor == factor) {
            if (t_s < m->sampling_steps[i].t_s)
                m->sampling_steps[i].t_s = t_s;
            return;
        }
    pf_sampling_step_t *st = PF_VEC_PUSH(m->sampling_steps, m->n_sampling_steps, m->cap_sampling_steps);
    st->t_s = t_s;
    st->factor = factor;
}

static int cmp_sampling_step(const void *a, const void *b)
{
    uint64_t x = ((const pf_sampling_step_t *)a)->factor, y = ((const pf_sampling_step_t *)b)->factor;
    return x < y ? -1 : x > y;
}

/* Code the interpreter calls from C while it starts: its import machinery (frozen on every supported
 * version), 3.11's getpath, and the codec search that finds the standard streams' encodings. */
static int is_import_root(const char *file, int is_user)
{
    static const char codecs[] = "/encodings/__init__.py";
    size_t n = strlen(file), c = sizeof codecs - 1;
    return strncmp(file, "<frozen importlib._bootstrap", 28) == 0 || strcmp(file, "<frozen getpath>") == 0 ||
           (!is_user && n > c && strcmp(file + n - c, codecs) == 0);
}

static char *join_argv(const char *argv, size_t n);
static void root_argv(pf_model_t *m, const char *argv, size_t n);

static int on_record(void *ctx, const pf_record_t *r)
{
    loader_t *L = ctx;
    pf_model_t *m = L->m;
    m->records++;
    pf_events_record(L, r);
    if (r->type == PF_REC_ALLOC_SHORT || r->type == PF_REC_FREE || r->type == PF_REC_ALLOC || r->type == PF_REC_PACKED)
        return 0;   /* nearly every record: pf_events_record was all */
    proc_state_t *P = &L->procs[L->cur];
    switch (r->type) {
    case PF_REC_CODE: {
        const pf_rec_code_t *c = r->payload;
        const char *tail = (const char *)(c + 1);
        pcode_t *pc = PF_VEC_PUSH(P->pcodes, P->n_pcodes, P->cap_pcodes);
        /* names come from the profiled process: make them valid UTF-8 once, for every renderer */
        char *file = pf_utf8_clean(tail, c->filename_len), *name = pf_utf8_clean(tail + c->filename_len, c->name_len);
        pc->file = pf_model_intern(m, file, strlen(file));
        pc->function = pf_model_intern(m, name, strlen(name));
        free(file);
        free(name);
        pc->firstlineno = c->firstlineno;
        pc->format = r->aux;
        pc->table = (const uint8_t *)tail + c->filename_len + c->name_len;
        pc->table_len = c->linetable_len;
        pc->is_user = pf_model_is_user_file(m, m->strings[pc->file]);
        pc->is_import_root = is_import_root(m->strings[pc->file], pc->is_user);
        pc->generated = m->strings[pc->file][0] == '<';
        const char *slash = strrchr(m->strings[pc->file], '/');
        pc->thread_run = strcmp(m->strings[pc->function], "run") == 0 &&
                         strcmp(slash ? slash + 1 : m->strings[pc->file], "threading.py") == 0;
        pf_workers_code(&m->procs[L->cur], m->strings[pc->file], m->strings[pc->function]);
        *pf_map_put(&P->codes, c->code_id, NULL) = P->n_pcodes;
        return 0;
    }
    case PF_REC_STACK: {
        const pf_rec_stack_t *st = r->payload;
        *pf_map_put(&P->stacks, st->stack_id, NULL) = (uint64_t)(uintptr_t)st | (r->aux & PF_STACK_NATIVE_BY_ID);
        return 0;
    }
    case PF_REC_NATIVE_STACK: {
        const pf_rec_native_stack_t *ns = r->payload;
        *pf_map_put(&P->natives, ns->native_id, NULL) = (uint64_t)(uintptr_t)ns;
        return 0;
    }
    case PF_REC_MODULE: {
        const pf_rec_module_t *mo = r->payload;
        module_t *slot = PF_VEC_PUSH(P->modules, P->n_modules, P->cap_modules);
        slot->start = mo->start;
        slot->end = mo->end;
        slot->bias = mo->load_bias;
        slot->path = pf_model_intern(m, (const char *)(mo + 1), strnlen((const char *)(mo + 1), mo->path_len));
        return 0;
    }
    case PF_REC_MARK: {
        const pf_rec_mark_t *mk = r->payload;
        /* on the root's clock, like the events it is compared with */
        uint64_t t = mk->t_ns + m->procs[L->cur].offset_ns;
        if (t < mk->t_ns)
            t = UINT64_MAX - 1;
        if (r->aux == PF_MARK_FINALIZING && t < P->fin_ns)
            P->fin_ns = t;
        if ((r->aux == PF_MARK_FINALIZING || r->aux == PF_MARK_EXIT) && t > P->ended_t)
            P->ended_t = t;
        if (r->aux == PF_MARK_EXEC && t >= P->exec_t) {
            P->exec_t = t;
            free(P->exec_command);
            P->exec_command = pf_utf8_clean((const char *)(mk + 1), mk->note_len);
        }
        if (r->aux == PF_MARK_DROPPED)
            m->dropped += mk->value;
        if (r->aux == PF_MARK_PROCESS_LABEL || r->aux == PF_MARK_EXIT)
            pf_workers_mark(m, &m->procs[L->cur], r->aux, mk);
        if (r->aux == PF_MARK_SAMPLING && L->cur == 0 && mk->value > 1)
            note_sampling_step(m, (double)mk->t_ns / 1e9, mk->value);
        if (r->aux == PF_MARK_LABEL && L->cur == 0)
            pf_tests_note(m, (const char *)(mk + 1), mk->note_len);
        return 0;
    }
    case PF_REC_ARGV:
        if (L->cur == 0) {  /* the whole argv, where the header had room for part of it only */
            const char *argv = r->payload;
            size_t n = 0;     /* aux arguments; the padding after them is not one */
            for (unsigned k = 0; k < r->aux && n < r->payload_bytes; k++)
                n += strnlen(argv + n, r->payload_bytes - n) + 1;
            if (n > r->payload_bytes)
                n = r->payload_bytes;
            free(m->procs[0].argv);
            m->procs[0].argv = join_argv(argv, n);
            root_argv(m, argv, n);
        }
        return 0;
    case PF_REC_NOTE:
        if (L->cur == 0) {
            char **grown = realloc(m->notes, (m->n_notes + 1) * sizeof *grown);
            if (!grown)
                return 0;
            m->notes = grown;
            m->notes[m->n_notes++] = pf_xstrndup(r->payload, strnlen(r->payload, r->payload_bytes));
        }
        return 0;
    case PF_REC_RUNNING:
        if (L->cur == 0 && !m->running_known) {
            m->running_known = 1;
            m->n_running = r->aux;
            m->running = pf_xmalloc((r->aux + 1) * sizeof *m->running);
            memcpy(m->running, r->payload, r->aux * sizeof *m->running);
        }
        return 0;
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
    case PF_REC_WATCH_STATS: {
        /* each record supersedes its thread's previous one */
        const pf_rec_watch_stats_t *w = r->payload;
        size_t i = 0;
        while (i < P->n_watch_last && P->watch_last[i]->tid != w->tid)
            i++;
        if (i == P->n_watch_last)
            *PF_VEC_PUSH(P->watch_last, P->n_watch_last, P->cap_watch_last) = w;
        else if (w->t_ns >= P->watch_last[i]->t_ns)
            P->watch_last[i] = w;
        m->watch.modes |= r->aux;
        return 0;
    }
    case PF_REC_WRITER:
        pf_origin_collect(L, r, 0);
        return 0;
    case PF_REC_THREAD:
    case PF_REC_SPAWN: {
        uint64_t t = *(const uint64_t *)r->payload + m->procs[L->cur].offset_ns;   /* t_ns leads both */
        pf_origin_collect(L, r, t < m->procs[L->cur].offset_ns ? UINT64_MAX - 1 : t);
        return 0;
    }
    case PF_REC_AGG_SITES: {   /* --aggregate (an event too: pf_events_record) */
        const pf_rec_agg_snapshot_t *a = r->payload;
        uint64_t t = a->since_ns + m->procs[L->cur].offset_ns;
        if (!m->aggregated || t < m->aggregated_from_ns) {
            m->aggregated_from_ns = t;
            m->aggregated_by_size = (a->flags & PF_AGG_BY_SIZE) != 0;
        }
        if (!m->aggregated || !(a->flags & PF_AGG_FLOWS_KEPT))
            m->aggregated_flows_kept = (a->flags & PF_AGG_FLOWS_KEPT) != 0;     /* every process's, or none */
        m->aggregated = 1;
        return 0;
    }
    default:
        return 0;     /* events: pf_events_record */
    }
}

/* A stream went back in time: every event into L->events, in walk order (pf_events_begin sorts them). */
static int collect_event(void *ctx, const pf_record_t *r)
{
    pf_events_collect(ctx, r);
    return 0;
}

static void collect_events(loader_t *L)
{
    size_t bytes = 0;
    for (size_t i = 0; i < L->n_procs; i++)
        bytes += L->procs[i].file.size;
    /* room for as many as the files can hold (24 bytes is the smallest event): no copying as it grows */
    PF_VEC_RESERVE(L->events, L->cap_events, bytes / 24);
    pf_events_free_streams(L);
    for (L->cur = 0; L->cur < L->n_procs; L->cur++) {
        char err[256];
        pf_file_walk(&L->procs[L->cur].file, collect_event, L, err, sizeof err);    /* walked once already */
    }
}

/* The IPs of a STACK whose native part is a NATIVE_STACK (PF_STACK_NATIVE_BY_ID), or NULL when the file
 * has no NATIVE_STACK of that id and length. */
static const uint64_t *native_ips(const proc_state_t *P, const pf_rec_stack_t *st)
{
    pf_rec_native_ref_t ref;
    memcpy(&ref, (const pf_rec_pyframe_t *)(st + 1) + st->n_py, sizeof ref);
    const pf_rec_native_stack_t *ns = NULL;
    if (P->native_at) {
        ns = ref.native_id < P->n_native_at ? P->native_at[ref.native_id] : NULL;
    } else {
        const uint64_t *at = pf_map_get(&P->natives, ref.native_id);
        ns = at ? (const pf_rec_native_stack_t *)(uintptr_t)*at : NULL;
    }
    return ns && ns->n_native == st->n_native ? (const uint64_t *)(ns + 1) : NULL;
}

/* A stack's IPs, for ips_at. */
static const uint64_t *stack_ips(const proc_state_t *P, const pf_rec_stack_t *st)
{
    if ((uintptr_t)st & PF_STACK_NATIVE_BY_ID)
        return native_ips(P, (const pf_rec_stack_t *)((uintptr_t)st & ~(uintptr_t)PF_STACK_NATIVE_BY_ID));
    return (const uint64_t *)((const pf_rec_pyframe_t *)(st + 1) + st->n_py);
}

pf_stack_view_t pf_loader_stack_lookup(loader_t *L, uint32_t proc, const void *tail, uint8_t flags, uint16_t n_py,
                                       uint16_t n_native)
{
    pf_stack_view_t v = {.attribute_flags = flags};
    if (flags & PF_ALLOC_STACK_REF) {
        pf_rec_stack_ref_t ref;
        memcpy(&ref, tail, sizeof ref);
        proc_state_t *P = &L->procs[proc];
        const pf_rec_stack_t *st = NULL;
        if (P->ips_at) {   /* every stack's IPs resolved by pf_loader_index_stacks */
            st = ref.stack_id < P->n_stack_at ? P->stack_at[ref.stack_id] : NULL;
            const uint64_t *ips = st ? P->ips_at[ref.stack_id] : NULL;
            if (ips) {
                st = (const pf_rec_stack_t *)((uintptr_t)st & ~(uintptr_t)PF_STACK_NATIVE_BY_ID);
                v.stack_id = ref.stack_id;
                v.py = (const pf_rec_pyframe_t *)(st + 1);
                v.ips = ips;
                v.n_py = st->n_py;
                v.n_native = st->n_native;
                return v;
            }
            st = NULL;
        } else if (P->stack_at) {
            st = ref.stack_id < P->n_stack_at ? P->stack_at[ref.stack_id] : NULL;
        } else {
            uint64_t *at = pf_map_get(&P->stacks, ref.stack_id);
            st = at ? (const pf_rec_stack_t *)(uintptr_t)*at : NULL;
        }
        const uint64_t *ips = NULL;
        if (st && ((uintptr_t)st & PF_STACK_NATIVE_BY_ID)) {
            st = (const pf_rec_stack_t *)((uintptr_t)st & ~(uintptr_t)PF_STACK_NATIVE_BY_ID);
            ips = native_ips(P, st);
            if (!ips)
                st = NULL;  /* its native part is not in the file */
        }
        if (!st) {
            P->missing_stacks++;
            v.attribute_flags |= PF_STACK_MISSING;
            return v;
        }
        v.stack_id = ref.stack_id;
        v.py = (const pf_rec_pyframe_t *)(st + 1);
        v.ips = ips ? ips : (const uint64_t *)(v.py + st->n_py);
        v.n_py = st->n_py;
        v.n_native = st->n_native;
        return v;
    }
    v.py = tail;
    v.ips = (const uint64_t *)(v.py + n_py);
    v.n_py = n_py;
    v.n_native = n_native;
    return v;
}

/* The map's values as an array by id (*n ids), or NULL where its ids are too sparse (not pyflow's numbering
 * from 1): the map it is. */
static const void **index_by_id(const pf_map_t *map, size_t *n)
{
    uint64_t max_id = 0;
    for (size_t i = 0; i < map->cap; i++)
        if (map->slots[i].key && map->slots[i].key - 1 > max_id)
            max_id = map->slots[i].key - 1;
    if (!map->len || max_id > 4 * (uint64_t)map->len + 4096)
        return NULL;
    *n = (size_t)max_id + 1;
    const void **at = pf_xcalloc(*n, sizeof *at);
    for (size_t i = 0; i < map->cap; i++)
        if (map->slots[i].key)
            at[map->slots[i].key - 1] = (const void *)(uintptr_t)map->slots[i].val;
    return at;
}

void pf_loader_index_stacks(proc_state_t *P)
{
    P->stack_at = (const pf_rec_stack_t **)index_by_id(&P->stacks, &P->n_stack_at);
    P->native_at = (const pf_rec_native_stack_t **)index_by_id(&P->natives, &P->n_native_at);
    if (!P->stack_at || !P->natives.len)
        return;
    /* an exact profile reads a stack for each of tens of millions of records: its IPs are looked up
     * here once, not through the STACK's reference and the NATIVE_STACK each time */
    P->ips_at = pf_xcalloc(P->n_stack_at, sizeof *P->ips_at);
    for (size_t id = 0; id < P->n_stack_at; id++)
        if (P->stack_at[id])
            P->ips_at[id] = stack_ips(P, P->stack_at[id]);
}

/* Puts ids[0..n) of map into *at (an index by id of *n_at entries, or NULL: the map alone), as index_by_id
 * would build it from the whole map; *max_id is the largest id seen so far. Returns 1 when the index had to be
 * built whole (it was none, or turns sparse or dense). */
static int index_more(const pf_map_t *map, const void ***at, size_t *n_at, uint64_t *max_id, const uint32_t *ids,
                      size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] > *max_id)
            *max_id = ids[i];
    int dense = map->len && *max_id <= 4 * (uint64_t)map->len + 4096;
    if (!*at || !dense) {
        free(*at);
        *at = NULL;
        *n_at = 0;
        if (dense)
            *at = index_by_id(map, n_at);
        return 1;
    }
    if (*max_id + 1 > *n_at) {
        *at = pf_xrealloc(*at, (*max_id + 1) * sizeof **at);
        memset(*at + *n_at, 0, (*max_id + 1 - *n_at) * sizeof **at);
        *n_at = (size_t)*max_id + 1;
    }
    for (size_t i = 0; i < n; i++)
        (*at)[ids[i]] = (const void *)(uintptr_t)*pf_map_get(map, ids[i]);
    return 0;
}

void pf_loader_index_more(proc_state_t *P, pf_stack_index_t *x, const uint32_t *stack_ids, size_t n_stacks,
                          const uint32_t *native_ids, size_t n_natives)
{
    if (!n_stacks && !n_natives)
        return;
    index_more(&P->natives, (const void ***)&P->native_at, &P->n_native_at, &x->max_native, native_ids, n_natives);
    size_t had = P->n_stack_at;
    int whole = index_more(&P->stacks, (const void ***)&P->stack_at, &P->n_stack_at, &x->max_stack, stack_ids,
                           n_stacks);
    if (!P->stack_at || !P->natives.len) {     /* as pf_loader_index_stacks: IPs only beside a dense index */
        free(P->ips_at);
        P->ips_at = NULL;
        return;
    }
    if (whole || !P->ips_at) {
        free(P->ips_at);
        P->ips_at = pf_xcalloc(P->n_stack_at, sizeof *P->ips_at);
        for (size_t id = 0; id < P->n_stack_at; id++)
            if (P->stack_at[id])
                P->ips_at[id] = stack_ips(P, P->stack_at[id]);
        return;
    }
    P->ips_at = pf_xrealloc(P->ips_at, P->n_stack_at * sizeof *P->ips_at);
    memset(P->ips_at + had, 0, (P->n_stack_at - had) * sizeof *P->ips_at);
    for (size_t i = 0; i < n_stacks; i++)
        P->ips_at[stack_ids[i]] = stack_ips(P, P->stack_at[stack_ids[i]]);
}

/* argv (n bytes, NUL separated) joined by spaces, without argv[0] (the interpreter). */
static char *join_argv(const char *argv, size_t n)
{
    char *s = pf_xmalloc(n + 1);
    size_t o = 0;
    int first = 1;
    for (size_t i = 0; i < n;) {
        size_t len = strnlen(argv + i, n - i);
        if (!first) {
            if (o)
                s[o++] = ' ';
            memcpy(s + o, argv + i, len);
            o += len;
        }
        first = 0;
        i += len + 1;
    }
    s[o] = '\0';
    return s;
}

/* The root's arguments (argv[0], the interpreter, left out), replacing any read before. */
static void root_argv(pf_model_t *m, const char *argv, size_t n)
{
    for (size_t i = 0; i < m->argc; i++)
        free(m->argv[i]);
    free(m->argv);
    m->argv = NULL;
    m->argc = 0;
    size_t cap = 0;
    int index = 0;
    for (size_t i = 0; i < n;) {
        size_t len = strnlen(argv + i, n - i);
        if (index++ > 0) {  /* argv[0] is the interpreter */
            char **slot = PF_VEC_PUSH(m->argv, m->argc, cap);
            *slot = pf_xstrndup(argv + i, len);
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
        if (!is_child_name(de->d_name, base) || de->d_type == DT_LNK)
            continue;   /* a link under a child's name (a shared directory) is never followed */
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

/* ---- public ---- */

proc_state_t *pf_loader_new_process(loader_t *L)
{
    L->procs = pf_xrealloc(L->procs, (L->n_procs + 1) * sizeof *L->procs);
    proc_state_t *P = &L->procs[L->n_procs];
    memset(P, 0, sizeof *P);
    P->fin_ns = UINT64_MAX;
    P->first_t = UINT64_MAX;
    return P;
}

int pf_loader_process_opened(loader_t *L, int root, uint64_t start_ns)
{
    pf_model_t *m = L->m;
    proc_state_t *P = &L->procs[L->n_procs];
    if (start_ns)
        P->file.header.start_mono_ns = start_ns;
    const pf_file_header_t *h = &P->file.header;
    if (!root && L->n_procs > 0 && L->procs[0].file.header.run_id && h->run_id != L->procs[0].file.header.run_id) {
        pf_file_close(&P->file);   /* another run's file under a name like ours: not this program's */
        return -ESRCH;
    }
    if (!root && P->file.size <= PF_HEADER_BYTES) {
        /* a child that recorded nothing: a fork that exec'd another program or ended first (subprocess
         * forks and execs in C on 3.8 and 3.9: each `subprocess.run(["git", ...])` left a row of nothing,
         * named after the parent's script) */
        pf_file_close(&P->file);
        return -ESRCH;
    }
    pf_process_t *pr = PF_VEC_PUSH(m->procs, m->n_procs, m->cap_procs);
    pr->pid = h->pid;
    pr->ppid = h->ppid;
    pr->via_pid = h->via_pid;
    pr->root = root;
    pr->argv = join_argv(h->argv, h->argv_bytes);
    pr->python = pf_xstrndup(h->python_version, strlen(h->python_version));
    if (!root && L->n_procs > 0) {
        uint64_t root_start = L->procs[0].file.header.start_mono_ns;
        pr->offset_ns = h->start_mono_ns > root_start ? h->start_mono_ns - root_start : 0;
    }
    m->dropped += h->records_dropped;
    if (root) {
        m->exact = (h->flags & PF_HDR_EXACT) != 0;
        m->mean_sample_bytes = h->mean_sample_bytes;
        m->object_threshold = h->object_threshold;
        m->python_version = pf_xstrndup(h->python_version, strlen(h->python_version));
        root_argv(m, h->argv, h->argv_bytes);
    }
    L->cur = (uint32_t)L->n_procs;
    L->n_procs++;
    L->run++;
    L->run_chunk = L->walk_dropped = 0;
    P->file.skim_packed = !L->strict;
    return 0;
}

int pf_loader_on_record(void *ctx, const pf_record_t *r)
{
    return on_record(ctx, r);
}

void pf_loader_process_walked(loader_t *L, int root)
{
    proc_state_t *P = &L->procs[L->cur];
    pf_events_settle_process(L, L->cur);
    pf_loader_index_stacks(P);
    pf_process_t *pr = &L->m->procs[L->cur];
    pf_workers_ended(pr, P->fin_ns != UINT64_MAX, root && L->m->has_exit);
    /* its image ended in an exec: the last thing it did (an exec that failed is followed by more) */
    if (P->exec_t && P->exec_t >= P->last_t && P->exec_t > P->ended_t) {
        pr->exec_command = P->exec_command;
        P->exec_command = NULL;
        if (pr->end_kind == PF_END_NONE)
            pr->end_kind = PF_END_EXEC;
    }
}

/* start_ns: the file's start on the set's common clock (pf_model_dir.c), or 0 to take its header's */
static int add_process(loader_t *L, const char *path, int root, uint64_t start_ns, char *err, size_t errlen)
{
    proc_state_t *P = pf_loader_new_process(L);
    int rc = pf_file_open(path, &P->file, err, errlen);
    if (rc < 0)
        return rc;
    if ((rc = pf_loader_process_opened(L, root, start_ns)) < 0)
        return rc;
    rc = pf_file_walk(&P->file, on_record, L, err, errlen);
    pf_loader_process_walked(L, root);
    return rc;
}

/* load's result when a strict load must tell (loader_t.redo): not an errno */
#define LOAD_AGAIN 1

static int load(const char *path, const pf_load_opts_t *opts, int strict, pf_model_t **out, char *err, size_t errlen)
{
    pf_model_t *m = pf_model_new(opts);
    loader_t L = {.m = m, .strict = strict};
    if (opts && opts->window_to_ns) {
        L.window_from_ns = opts->window_from_ns;
        L.window_to_ns = opts->window_to_ns;
    }
    const pf_file_set_t *set = opts ? opts->set : NULL;
    int rc = set ? add_process(&L, set->paths[0], 1, set->start_ns[0], err, errlen) : add_process(&L, path, 1, 0, err, errlen);
    m->from_set = set != NULL;
    for (size_t i = 1; rc == 0 && set && i < set->n; i++) {
        char kid_err[512];
        add_process(&L, set->paths[i], 0, set->start_ns[i], kid_err, sizeof kid_err);  /* as children below */
    }
    if (rc == 0 && !set && opts && opts->merge_children && !L.window_to_ns) {   /* a window is the root's clock */
        char **kids = NULL;
        size_t n = pf_profile_children(path, &kids);
        for (size_t i = 0; i < n; i++) {
            char kid_err[512];
            /* A child killed before it wrote anything leaves an empty file, and one cut mid-record a
             * corrupt tail: skip what cannot be read, keep the rest. */
            add_process(&L, kids[i], 0, 0, kid_err, sizeof kid_err);
        }
        pf_profile_children_free(kids, n);
    }
    if (rc == 0 && (L.redo || (L.unordered && !strict)))
        rc = LOAD_AGAIN;    /* the array of an unordered profile is collected from a strict walk */
    if (rc == 0 && L.unordered)
        collect_events(&L);
    if (rc == 0) {
        pf_model_watch_totals(&L);
        pf_origin_index(&L);
        pf_model_sweep(&L);
        if (L.redo)
            rc = LOAD_AGAIN;
        pf_loader_swept(&L);
    }
    pf_loader_free(&L);
    if (rc != 0) {
        pf_model_free(m);
        return rc;
    }
    if (!m->has_exit)
        m->elapsed_s = (double)m->end_ns / 1e9;
    *out = m;
    return 0;
}

pf_model_t *pf_model_new(const struct pf_load_opts *opts)
{
    pf_model_t *m = pf_xcalloc(1, sizeof *m);
    m->string_index = pf_xcalloc(1, sizeof(pf_map_t));
    m->first_root = -1;
    m->first_full_root = -1;
    pf_model_intern(m, "", 0);
    if (opts && opts->profile_only && *opts->profile_only)
        m->profile_only = pf_xstrndup(opts->profile_only, strlen(opts->profile_only));
    m->profile_all = opts && opts->profile_all;
    return m;
}

void pf_loader_swept(loader_t *L)
{
    pf_model_t *m = L->m;
    for (size_t i = 0; i < L->n_procs; i++)
        m->unresolved_stacks += L->procs[i].missing_stacks;
    if (m->n_sampling_steps)
        qsort(m->sampling_steps, m->n_sampling_steps, sizeof *m->sampling_steps, cmp_sampling_step);
}

void pf_loader_free(loader_t *L)
{
    for (size_t i = 0; i < L->n_procs; i++) {
        pf_map_free(&L->procs[i].codes);
        pf_map_free(&L->procs[i].stacks);
        free(L->procs[i].stack_at);
        pf_map_free(&L->procs[i].natives);
        free(L->procs[i].native_at);
        free(L->procs[i].ips_at);
        for (size_t k = 0; k < L->procs[i].n_pcodes; k++)
            pf_linetable_index_free(L->procs[i].pcodes[k].line_index);
        free(L->procs[i].pcodes);
        free(L->procs[i].exec_command);
        free(L->procs[i].modules);
        free(L->procs[i].watch_last);
        pf_origin_free(&L->procs[i]);
        pf_file_close(&L->procs[i].file);
    }
    free(L->procs);
    free(L->events);
    pf_events_free_packed(L);
    pf_events_free_streams(L);
}

int pf_model_load(const char *path, const pf_load_opts_t *opts, pf_model_t **out, char *err, size_t errlen)
{
    int rc = load(path, opts, 0, out, err, errlen);
    return rc == LOAD_AGAIN ? load(path, opts, 1, out, err, errlen) : rc;
}

void pf_model_free(pf_model_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_strings; i++)
        free(m->strings[i]);
    free(m->strings);
    for (size_t i = 0; i < m->n_notes; i++)
        free(m->notes[i]);
    free(m->notes);
    free(m->running);
    if (m->string_index)
        pf_map_free(m->string_index);
    free(m->string_index);
    free(m->lines);
    free(m->funcs);
    free(m->nodes);
    free(m->full);
    free(m->flows);
    free(m->redundancies);
    free(m->waste.recomputations);
    free(m->waste.untouched);
    free(m->sampling_steps);
    pf_tests_free(m);
    pf_workers_free_model(m);
    for (size_t i = 0; i < m->n_procs; i++) {
        free(m->procs[i].argv);
        free(m->procs[i].python);
        free(m->procs[i].exec_command);
    }
    free(m->procs);
    for (size_t i = 0; i < m->n_unprofiled; i++)
        free(m->unprofiled[i].command);
    free(m->unprofiled);
    for (size_t i = 0; i < m->argc; i++)
        free(m->argv[i]);
    free(m->argv);
    free(m->python_version);
    free(m->profile_only);
    free(m);
}
