/* pf_diff.c - reading the two runs of `pyflow diff`, matching their rows, and --fail-on (pf_diff.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pf_diff.h"
#include "pf_json_read_int.h"
#include "pf_report.h"
#include "pf_report_int.h"
#include "pf_util_int.h"

const char *const pf_diff_measure_names[PF_DIFF_MEASURES] = {"allocated", "peak", "leaked", "copies",
                                                             "redundant"};
/* the JSON report's field of each measure */
static const char *const json_fields[PF_DIFF_MEASURES] = {"alloc_bytes", "peak_bytes", "leaked_bytes",
                                                          "copy_bytes", "redundant_copy_bytes"};

/* The whole file, NUL-terminated. */
static char *slurp(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0, got;
    char *buf = pf_xmalloc(cap);
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap)
            buf = pf_xrealloc(buf, cap *= 2);
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "cannot read %s", path);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* A profile rendered to its JSON report in memory. */
static char *profile_json(const char *path, size_t *len, char *err, size_t errlen)
{
    pf_model_t *model;
    pf_load_opts_t lo = {.merge_children = 1};
    if (pf_model_load(path, &lo, &model, err, errlen) < 0)
        return NULL;
    char *text = NULL;
    FILE *mem = open_memstream(&text, len);
    int rc = mem ? pf_render_json(model, mem) : -ENOMEM;
    if (mem)
        fclose(mem);
    pf_model_free(model);
    if (rc < 0 || !text) {
        snprintf(err, errlen, "cannot render %s", path);
        free(text);
        return NULL;
    }
    return text;
}

static char *join(const char *const *parts, size_t n)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(parts[i]) + 1;
    char *out = pf_xmalloc(len), *w = out;
    for (size_t i = 0; i < n; i++)
        w += sprintf(w, "%s%s", i ? "\x1f" : "", parts[i]);
    return out;
}

/* A row's key: its parts, and which occurrence of those parts it is on its side (a function with the same
 * line twice has two rows). */
static char *occurrence_key(pf_map_t *seen, const char *const *parts, size_t n)
{
    char *base = join(parts, n);
    uint64_t h = pf_hash_bytes(base, strlen(base), 0xD1FF) & ~(1ull << 63);
    int created;
    uint64_t *count = pf_map_put(seen, h, &created);
    char nth[24];
    snprintf(nth, sizeof nth, "%llu", (unsigned long long)(*count)++);
    const char *with[2] = {base, nth};
    char *key = join(with, 2);
    free(base);
    return key;
}

/* The source of file:line on this side: the report's "source", else the file as it is now. */
typedef struct source_index {
    pf_map_t map;               /* hash(file, line) -> row index + 1 into lines */
    const pf_diff_row_t *lines;
} source_index_t;

static uint64_t site_hash(const char *file, int line)
{
    return (pf_hash_bytes(file, strlen(file), (uint64_t)(uint32_t)line) & ~(1ull << 63));
}

static const char *source_of(const source_index_t *si, const char *file, int line)
{
    uint64_t *v = pf_map_get(&si->map, site_hash(file, line));
    if (v && strcmp(si->lines[*v - 1].file, file) == 0 && si->lines[*v - 1].line == line)
        return si->lines[*v - 1].source;
    return "";
}

static void fill_values(pf_diff_row_t *r, const pf_jv_t *o, const char *const fields[PF_DIFF_MEASURES])
{
    for (int k = 0; k < PF_DIFF_MEASURES; k++)
        r->v[k] = fields[k] ? pf_jv_num(o, fields[k]) : 0;
}

/* The "lines" (si: indexed by file and line for the call paths) or "functions" of a report. A line is
 * keyed by its file, function and text (a line whose text is unknown or blank only by its number), a
 * function by its file and name. */
static void read_rows(pf_diff_side_t *side, int table, const pf_jv_t *items, source_index_t *si)
{
    size_t n = items && items->kind == PF_JV_ARRAY ? items->n : 0;
    pf_diff_row_t *rows = pf_xcalloc(n + 1, sizeof *rows);
    pf_map_t seen = {0};
    for (size_t i = 0; i < n; i++) {
        const pf_jv_t *o = &items->items[i];
        pf_diff_row_t *r = &rows[i];
        r->file = strdup(pf_jv_str(o, "file"));
        r->function = strdup(pf_jv_str(o, "function"));
        r->line = pf_jv_int(o, "line");
        r->source = strdup(table == PF_DIFF_LINES ? pf_jv_str(o, "source") : "");
        char number[24];
        snprintf(number, sizeof number, "#%d", r->line);
        const char *parts[3] = {r->file, r->function, r->source[0] ? r->source : number};
        r->key = occurrence_key(&seen, parts, table == PF_DIFF_LINES ? 3 : 2);
        fill_values(r, o, json_fields);
        if (si) {
            int created;
            uint64_t *v = pf_map_put(&si->map, site_hash(r->file, r->line), &created);
            if (created)
                *v = i + 1;
        }
    }
    pf_map_free(&seen);
    side->rows[table] = rows;
    side->n[table] = n;
    if (si)
        si->lines = rows;
}

/* Call paths: a call-tree node's own bytes, keyed by the chain of its lines (file, function, source) from
 * the outermost. The JSON lists parents before their children, by id. */
static void read_paths(pf_diff_side_t *side, const pf_jv_t *tree, const source_index_t *si)
{
    static const char *const fields[PF_DIFF_MEASURES] = {"self_alloc_bytes", "self_peak_bytes",
                                                         "self_leaked_bytes", NULL, NULL};
    size_t n = tree && tree->kind == PF_JV_ARRAY ? tree->n : 0;
    pf_diff_row_t *rows = pf_xcalloc(n + 1, sizeof *rows);
    char **chain = pf_xcalloc(n + 1, sizeof *chain);    /* per node: its key's path part, and its label */
    char **labels = pf_xcalloc(n + 1, sizeof *labels);
    pf_map_t seen = {0};
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        const pf_jv_t *o = &tree->items[i];
        long parent = pf_jv_int(o, "parent");
        const char *file = pf_jv_str(o, "file"), *func = pf_jv_str(o, "function");
        int line = pf_jv_int(o, "line");
        const pf_jv_t *own = pf_jv_get(o, "source");
        const char *src = own ? pf_jv_str(o, "source") : source_of(si, file, line);
        char number[24], here[512];
        snprintf(number, sizeof number, "#%d", line);
        const char *site[3] = {file, func, src[0] ? src : number};
        char *me = join(site, 3);
        snprintf(here, sizeof here, "%s:%d", func[0] ? func : pf_report_basename(file), line);
        int has_parent = parent >= 0 && (size_t)parent < i && chain[parent];
        const char *path[2] = {has_parent ? chain[parent] : "", me};
        chain[i] = join(path, 2);
        free(me);
        size_t ll = strlen(here) + (has_parent ? strlen(labels[parent]) + 4 : 1);
        labels[i] = pf_xmalloc(ll);
        snprintf(labels[i], ll, "%s%s%s", has_parent ? labels[parent] : "", has_parent ? " > " : "", here);
        pf_diff_row_t *r = &rows[kept];
        fill_values(r, o, fields);
        if (r->v[0] <= 0 && r->v[1] <= 0 && r->v[2] <= 0)
            continue;   /* bytes only below it: its children are the paths */
        kept++;
        r->file = strdup(file);
        r->function = strdup(func);
        r->source = strdup(src);
        r->label = strdup(labels[i]);
        r->line = line;
        const char *parts[1] = {chain[i]};
        r->key = occurrence_key(&seen, parts, 1);
    }
    for (size_t i = 0; i < n; i++) {
        free(chain[i]);
        free(labels[i]);
    }
    free(chain);
    free(labels);
    pf_map_free(&seen);
    side->rows[PF_DIFF_PATHS] = rows;
    side->n[PF_DIFF_PATHS] = kept;
}

/* Copies and redundant copies counted over the user's lines (those with source text, start-up excluded):
 * the interpreter's start-up copies vary by a megabyte from run to run and are nobody's to fix, so over
 * the whole program `redundant:+0` would fail by chance. A report without source text keeps the totals. */
static void user_copies(pf_diff_side_t *side)
{
    double copies = 0, redundant = 0;
    int any = 0;
    for (size_t i = 0; i < side->n[PF_DIFF_LINES]; i++) {
        const pf_diff_row_t *r = &side->rows[PF_DIFF_LINES][i];
        if (!r->source[0] || r->file[0] == '[')
            continue;
        any = 1;
        copies += r->v[PF_DM_COPIES];
        redundant += r->v[PF_DM_REDUNDANT];
    }
    if (any) {
        side->total[PF_DM_COPIES] = copies;
        side->total[PF_DM_REDUNDANT] = redundant;
    }
}

int pf_diff_load(const char *path, pf_diff_side_t *side, char *err, size_t errlen)
{
    memset(side, 0, sizeof *side);
    size_t len = 0;
    char *text = slurp(path, &len, err, errlen);
    if (!text)
        return -1;
    size_t at = strspn(text, " \t\r\n");
    if (text[at] != '{') {   /* not JSON: a profile */
        free(text);
        text = profile_json(path, &len, err, errlen);
        if (!text)
            return -1;
    }
    pf_jv_t doc;
    char why[200];
    if (pf_jv_parse(text, len, &doc, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s is neither a profile nor a pyflow JSON report: %s", path, why);
        free(text);
        return -1;
    }
    free(text);
    if (strcmp(pf_jv_str(&doc, "schema"), "pyflow-profile/1") != 0) {
        snprintf(err, errlen, "%s is JSON but not a pyflow report (no \"schema\": \"pyflow-profile/1\")", path);
        pf_jv_free(&doc);
        return -1;
    }
    side->name = strdup(path);
    const pf_jv_t *totals = pf_jv_get(&doc, "totals");
    for (int k = 0; k < PF_DIFF_MEASURES; k++)
        side->total[k] = pf_jv_num(totals, json_fields[k]);
    source_index_t si = {0};
    read_rows(side, PF_DIFF_LINES, pf_jv_get(&doc, "lines"), &si);
    user_copies(side);
    read_rows(side, PF_DIFF_FUNCS, pf_jv_get(&doc, "functions"), NULL);
    read_paths(side, pf_jv_get(&doc, "call_tree"), &si);
    pf_map_free(&si.map);
    pf_jv_free(&doc);
    return 0;
}

static int by_key(const void *a, const void *b)
{
    return strcmp(((const pf_diff_row_t *)a)->key, ((const pf_diff_row_t *)b)->key);
}

static int by_size(const void *a, const void *b)
{
    double x = ((const pf_diff_entry_t *)a)->size, y = ((const pf_diff_entry_t *)b)->size;
    return x < y ? 1 : x > y ? -1 : 0;
}

static int same_function(const pf_diff_row_t *a, const pf_diff_row_t *b)
{
    return strcmp(a->file, b->file) == 0 && strcmp(a->function, b->function) == 0;
}

/* How many entries of e[0..n) are in that function, unmatched, on the base (side 0) or the new side. */
static size_t unmatched_in(const pf_diff_entry_t *e, size_t n, const pf_diff_row_t *r, int side)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        const pf_diff_row_t *x = side ? e[i].new_ : e[i].base;
        count += x && !(side ? e[i].base : e[i].new_) && same_function(x, r);
    }
    return count;
}

/* A line edited in place: its function lost exactly one line and gained exactly one. Those two are one
 * entry (the edit), not one gone and one new. Returns the entries left. */
static size_t pair_edits(pf_diff_entry_t *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!e[i].base || e[i].new_ || unmatched_in(e, n, e[i].base, 0) != 1 || unmatched_in(e, n, e[i].base, 1) != 1)
            continue;
        for (size_t j = 0; j < n; j++) {
            if (!e[j].new_ || e[j].base || !same_function(e[j].new_, e[i].base))
                continue;
            e[i].new_ = e[j].new_;
            e[i].edited = 1;
            e[i].size = 0;
            for (int m = 0; m < PF_DIFF_MEASURES; m++) {
                e[i].delta[m] = e[i].new_->v[m] - e[i].base->v[m];
                if (fabs(e[i].delta[m]) > e[i].size)
                    e[i].size = fabs(e[i].delta[m]);
            }
            e[j].new_ = NULL;   /* taken: dropped below */
            break;
        }
    }
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (e[i].base || e[i].new_)
            e[kept++] = e[i];
    return kept;
}

static void match_table(pf_diff_t *d, int t)
{
    pf_diff_row_t *b = d->base.rows[t], *n = d->new_.rows[t];
    size_t nb = d->base.n[t], nn = d->new_.n[t], i = 0, j = 0;
    qsort(b, nb, sizeof *b, by_key);
    qsort(n, nn, sizeof *n, by_key);
    pf_diff_entry_t *out = pf_xcalloc(nb + nn + 1, sizeof *out);
    size_t k = 0;
    while (i < nb || j < nn) {
        int c = i >= nb ? 1 : j >= nn ? -1 : strcmp(b[i].key, n[j].key);
        pf_diff_entry_t e = {.base = c <= 0 ? &b[i] : NULL, .new_ = c >= 0 ? &n[j] : NULL};
        i += c <= 0;
        j += c >= 0;
        for (int m = 0; m < PF_DIFF_MEASURES; m++) {
            e.delta[m] = (e.new_ ? e.new_->v[m] : 0) - (e.base ? e.base->v[m] : 0);
            if (fabs(e.delta[m]) > e.size)
                e.size = fabs(e.delta[m]);
        }
        if (e.size >= 0.5)
            out[k++] = e;
    }
    if (t == PF_DIFF_LINES)
        k = pair_edits(out, k);
    qsort(out, k, sizeof *out, by_size);
    d->entries[t] = out;
    d->n[t] = k;
}

void pf_diff_match(pf_diff_t *d, pf_diff_side_t *base, pf_diff_side_t *new_)
{
    memset(d, 0, sizeof *d);
    d->base = *base;
    d->new_ = *new_;
    for (int t = 0; t < 3; t++)
        match_table(d, t);
}

void pf_diff_side_free(pf_diff_side_t *s)
{
    for (int t = 0; t < 3; t++) {
        for (size_t i = 0; i < s->n[t]; i++) {
            pf_diff_row_t *r = &s->rows[t][i];
            free(r->key);
            free(r->file);
            free(r->function);
            free(r->source);
            free(r->label);
        }
        free(s->rows[t]);
    }
    free(s->name);
}

void pf_diff_free(pf_diff_t *d)
{
    pf_diff_side_free(&d->base);
    pf_diff_side_free(&d->new_);
    for (int t = 0; t < 3; t++)
        free(d->entries[t]);
    memset(d, 0, sizeof *d);
}

int pf_diff_parse_cond(const char *s, pf_diff_cond_t *c, char *err, size_t errlen)
{
    static const struct {
        const char *name;
        int measure;
    } names[] = {{"alloc", PF_DM_ALLOC}, {"allocated", PF_DM_ALLOC}, {"peak", PF_DM_PEAK},
                 {"leaked", PF_DM_LEAKED}, {"leaks", PF_DM_LEAKED}, {"copies", PF_DM_COPIES},
                 {"copy", PF_DM_COPIES}, {"redundant", PF_DM_REDUNDANT}};
    static const struct {
        const char *suffix;
        double factor;
    } units[] = {{"", 1}, {"b", 1}, {"k", 1024}, {"kb", 1e3}, {"kib", 1024}, {"m", 1 << 20}, {"mb", 1e6},
                 {"mib", 1 << 20}, {"g", 1 << 30}, {"gb", 1e9}, {"gib", 1 << 30}, {"%", -1}};
    memset(c, 0, sizeof *c);
    snprintf(c->text, sizeof c->text, "%s", s);
    const char *colon = strchr(s, ':');
    c->measure = -1;
    for (size_t i = 0; colon && i < sizeof names / sizeof *names; i++)
        if (strlen(names[i].name) == (size_t)(colon - s) && strncmp(s, names[i].name, colon - s) == 0)
            c->measure = names[i].measure;
    if (c->measure < 0) {
        snprintf(err, errlen, "--fail-on %s: say what may grow and by how much, e.g. peak:+10%%, leaked:+1MB, "
                 "redundant:+0 (measures: allocated, peak, leaked, copies, redundant)", s);
        return -1;
    }
    const char *num = colon + 1 + (colon[1] == '+');
    char *end;
    c->limit = strtod(num, &end);
    if (end == num || c->limit < 0 || !isfinite(c->limit)) {
        snprintf(err, errlen, "--fail-on %s: the growth allowed is a number (+10%%, +1MB, +0)", s);
        return -1;
    }
    while (*end == ' ')
        end++;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (strcasecmp(end, units[i].suffix) == 0) {
            if (units[i].factor < 0)
                c->percent = 1;
            else
                c->limit *= units[i].factor;
            return 0;
        }
    snprintf(err, errlen, "--fail-on %s: unknown unit %s (B, kB, MB, GB, KiB, MiB, GiB or %%)", s, end);
    return -1;
}

int pf_diff_cond_broken(const pf_diff_t *d, const pf_diff_cond_t *c)
{
    double base = d->base.total[c->measure], grew = d->new_.total[c->measure] - base;
    if (!c->percent)
        return grew > c->limit;
    return base > 0 ? grew / base * 100.0 > c->limit : grew > 0;
}
