/* pf_render_json.c - the JSON rendering of the model: the contract of docs/json.md
 * ("schema": "pyflow-profile/1"; bytes and seconds, never MB). Fields may be added, never renamed. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pf_flowgraph.h"
#include "pf_json_int.h"
#include "pf_model_int.h"
#include "pf_render_waste.h"
#include "pf_report_int.h"
#include "pf_workers_int.h"
#include "pf_util_int.h"

static void bytes(pf_json_t *j, const char *key, double v)
{
    pf_json_key(j, key);
    pf_json_number(j, v > 0 ? floor(v + 0.5) : 0);
}

static void series(pf_json_t *j, const pf_model_t *m, const double *points)
{
    pf_json_begin_array(j);
    for (int b = 0; b < PF_TIMELINE_POINTS; b++) {
        pf_json_begin_array(j);
        pf_json_number(j, round(m->timeline_end_s * b / PF_TIMELINE_POINTS * 1e6) / 1e6);
        pf_json_number(j, floor(points[b] + 0.5));
        pf_json_end_array(j);
    }
    pf_json_end_array(j);
}

static void timeline(pf_json_t *j, const pf_model_t *m, const pf_stats_t *s)
{
    series(j, m, s->timeline);
}

static double fraction(double part, double whole) { return whole > 0 ? round(part / whole * 1000) / 1000 : 0; }

/* Redundant stores and loads charged to a row (only in a --watch profile). */
static void access_fields(pf_json_t *j, const pf_stats_t *s)
{
    bytes(j, "store_bytes", s->store_bytes);
    bytes(j, "redundant_store_bytes", s->redundant_store_bytes);
    pf_json_key(j, "redundant_store_fraction");
    pf_json_number(j, fraction(s->redundant_store_bytes, s->store_bytes));
    bytes(j, "load_bytes", s->load_bytes);
    bytes(j, "redundant_load_bytes", s->redundant_load_bytes);
    pf_json_key(j, "redundant_load_fraction");
    pf_json_number(j, fraction(s->redundant_load_bytes, s->load_bytes));
}

/* Sampling error (docs/verdicts.md): standard errors of the estimates, 0 where every record is exact. */
static void error_fields(pf_json_t *j, const pf_stats_t *s)
{
    pf_json_key(j, "samples");
    pf_json_int(j, s->n_sampled);
    bytes(j, "alloc_bytes_se", pf_report_alloc_se(s));
    bytes(j, "peak_bytes_se", s->peak_se);
    bytes(j, "leaked_bytes_se", pf_report_leaked_se(s));
    pf_json_key(j, "few_samples");
    pf_json_bool(j, pf_report_few_samples(s));
}

static void stats_fields(pf_json_t *j, const pf_model_t *m, const pf_stats_t *s)
{
    bytes(j, "alloc_bytes", s->alloc_bytes);
    pf_json_key(j, "alloc_count");
    pf_json_number(j, floor(s->alloc_count + 0.5));
    bytes(j, "python_bytes", s->python_bytes);
    bytes(j, "native_bytes", s->native_bytes);
    bytes(j, "gpu_bytes", s->gpu_bytes);
    bytes(j, "peak_bytes", s->peak_bytes);
    bytes(j, "gpu_peak_bytes", s->gpu_peak_bytes);
    bytes(j, "avg_bytes", m->timeline_end_s > 0 ? s->area_ns / (m->timeline_end_s * 1e9) : s->live);
    bytes(j, "leaked_bytes", s->leaked_bytes);
    bytes(j, "copy_bytes", s->copy_bytes);
    pf_json_key(j, "copy_count");
    pf_json_number(j, floor(s->copy_count + 0.5));
    pf_json_key(j, "copy_rate_bytes_s");
    pf_json_number(j, floor(pf_report_copy_rate(s) + 0.5));
    bytes(j, "redundant_copy_bytes", s->redundant_copy_bytes);
    error_fields(j, s);
    if (m->watch.present && (m->watch.modes & (PF_WATCH_MODE_STORES | PF_WATCH_MODE_LOADS)))
        access_fields(j, s);
    pf_json_key(j, "timeline");
    timeline(j, m, s);
}

/* The text of a line of the user's code as it was when the report was made, when the file could be read:
 * `pyflow diff` matches lines across edits by it (library lines, which an edit of the user's does not
 * move, by number). */
static void source_text(pf_json_t *j, const pf_model_t *m, uint32_t file, int line)
{
    const char *name = pf_model_str(m, file);
    if (!pf_report_file_listed(m, name))
        return;
    const char *text = pf_report_source_line(m, name, line);
    if (!text[0])
        return;
    pf_json_key(j, "source");
    pf_json_string(j, text);
}

/* A call-tree node's file, line and function keys. */
static void node_site(pf_json_t *j, const pf_model_t *m, const pf_callnode_t *c)
{
    pf_json_key(j, "file");
    pf_json_string(j, pf_model_str(m, c->file));
    pf_json_key(j, "line");
    pf_json_int(j, c->line);
    pf_json_key(j, "function");
    pf_json_string(j, pf_model_str(m, c->function));
}

/* The unfolded call tree's JSON keeps the nodes holding at least this share of the program's allocated
 * bytes, its peak, or what is live at exit (their subtrees are smaller still): a pandas program's library
 * paths run to thousands of nodes of a few KiB each. */
#define PF_JSON_UNFOLDED_MIN 0.001

static int unfolded_kept(const pf_model_t *m, const pf_callnode_t *c)
{
    const pf_stats_t *t = &m->total;
    return c->alloc >= PF_JSON_UNFOLDED_MIN * t->alloc_bytes || (c->peak > 0 && c->peak >= PF_JSON_UNFOLDED_MIN * t->peak_bytes) ||
           (c->leaked > 0 && c->leaked >= PF_JSON_UNFOLDED_MIN * t->leaked_bytes) ||
           (c->gpu_peak > 0 && c->gpu_peak >= PF_JSON_UNFOLDED_MIN * t->gpu_peak_bytes);
}

/* A call tree (nodes from first_root), flat, in depth-first order (children largest first): each node names
 * its parent by id (its position in the array; -1 for a root), so a tree of any depth is one level of JSON.
 * id receives each written node's id. folded_id: the unfolded tree, whose nodes also say their kind and the
 * id of the folded node they count in (NULL: the folded tree). */
static void tree_nodes(pf_json_t *j, const pf_model_t *m, const pf_callnode_t *nodes, int32_t first_root, int32_t *id,
                       const int32_t *folded_id)
{
    static const char *const kinds[] = {"user", "library", "native"};
    int32_t next_id = 0;
    pf_json_begin_array(j);
    for (int32_t n = first_root; n >= 0;) {
        const pf_callnode_t *c = &nodes[n];
        /* a path only copies went (a flow's via) has no bytes of the tree's, nor below; the unfolded tree
           also leaves out what holds under PF_JSON_UNFOLDED_MIN of each of the program's figures */
        int keep = c->alloc >= 0.5 && (!folded_id || unfolded_kept(m, c));
        if (!keep) {
            n = pf_calltree_next(nodes, n, 0);
            continue;
        }
        id[n] = next_id++;
        pf_json_begin_object(j);
        pf_json_key(j, "id");
        pf_json_int(j, id[n]);
        pf_json_key(j, "parent");
        pf_json_int(j, c->parent < 0 ? -1 : id[c->parent]);
        pf_json_key(j, "depth");
        pf_json_int(j, c->depth);
        node_site(j, m, c);
        if (folded_id) {
            pf_json_key(j, "kind");
            pf_json_string(j, kinds[c->kind < 3 ? c->kind : 0]);
            pf_json_key(j, "library");
            pf_json_bool(j, c->kind != PF_NODE_USER);
            pf_json_key(j, "folded_into");
            pf_json_int(j, c->folded >= 0 && m->nodes[c->folded].alloc >= 0.5 ? folded_id[c->folded] : -1);
        }
        source_text(j, m, c->file, c->line);
        bytes(j, "alloc_bytes", c->alloc);
        bytes(j, "self_alloc_bytes", c->self_alloc);
        bytes(j, "peak_bytes", c->peak);
        bytes(j, "self_peak_bytes", c->self_peak);
        bytes(j, "leaked_bytes", c->leaked);
        bytes(j, "self_leaked_bytes", c->self_leaked);
        bytes(j, "gpu_bytes", c->gpu);
        bytes(j, "gpu_peak_bytes", c->gpu_peak);
        pf_json_end_object(j);
        n = pf_calltree_next(nodes, n, 1);
    }
    pf_json_end_array(j);
}

/* "call_tree" (the user's lines: library frames folded into the line that called them) and
 * "call_tree_unfolded" (with them). */
static void call_trees(pf_json_t *j, const pf_model_t *m)
{
    int32_t *id = pf_xmalloc((m->n_nodes + 1) * sizeof *id), *full_id = pf_xmalloc((m->n_full + 1) * sizeof *full_id);
    pf_json_key(j, "call_tree");
    tree_nodes(j, m, m->nodes, m->first_root, id, NULL);
    pf_json_key(j, "call_tree_unfolded");
    tree_nodes(j, m, m->full, m->first_full_root, full_id, id);
    free(id);
    free(full_id);
}

/* What a flow's candidate copies had at one end (pf_copy_end_t), as names: ["str"], ["bytes", "other"]; [] when
 * the runtime did not say (an older profile, or ends it did not track). */
static void end_kinds(pf_json_t *j, uint8_t kinds)
{
    static const char *const names[] = {"other", "str", "bytes"};
    pf_json_begin_array(j);
    for (unsigned k = 0; k < sizeof names / sizeof *names; k++)
        if (kinds & 1u << k)
            pf_json_string(j, names[k]);
    pf_json_end_array(j);
}

/* The callers (outermost first) of call-tree node `node` (-1: none), as sites. */
void pf_json_node_callers(pf_json_t *j, const pf_model_t *m, int32_t node)
{
    int32_t chain[PF_MAX_PY_FRAMES + 1];
    size_t n = pf_report_caller_chain(m, node, chain, sizeof chain / sizeof *chain);
    pf_json_begin_array(j);
    for (size_t i = 0; i < n; i++) {
        const pf_callnode_t *c = &m->nodes[chain[i]];
        pf_json_begin_object(j);
        node_site(j, m, c);
        pf_json_end_object(j);
    }
    pf_json_end_array(j);
}

/* The callers (outermost first) of the call-tree node holding most of line l's bytes at exit: which caller
 * of a shared helper keeps what it leaks. [] when that node is a root. */
static void leak_callers(pf_json_t *j, const pf_model_t *m, const pf_line_t *l)
{
    size_t paths;
    pf_json_node_callers(j, m, pf_report_line_node(m, l, 1, &paths));
}

/* One entry of "lines" (l) or "functions" (l = NULL). */
static void row_object(pf_json_t *j, const pf_model_t *m, uint32_t file, int line, uint32_t function,
                       const pf_stats_t *s, const pf_line_t *l)
{
    pf_json_begin_object(j);
    pf_json_key(j, "file");
    pf_json_string(j, pf_model_str(m, file));
    pf_json_key(j, "line");
    pf_json_int(j, line);
    pf_json_key(j, "function");
    pf_json_string(j, pf_model_str(m, function));
    stats_fields(j, m, s);
    if (l)
        source_text(j, m, file, line);
    if (l) {    /* of alloc_bytes, what threads and processes this line started allocated (pf_line_t) */
        bytes(j, "started_bytes", l->started_bytes);
        pf_json_key(j, "started_threads");
        pf_json_int(j, (int)l->started_threads);
        pf_json_key(j, "started_processes");
        pf_json_int(j, (int)l->started_procs);
        pf_json_waste_line(j, l);
        pf_json_key(j, "object_kinds");     /* bytes of its objects the runtime saw were of each type */
        pf_json_begin_object(j);
        for (int k = 1; k < PF_OBJ_KINDS; k++)
            if (l->kind_bytes[k] > 0)
                bytes(j, pf_obj_kind_name(k), l->kind_bytes[k]);
        pf_json_end_object(j);
    }
    pf_json_end_object(j);
}

static void site(pf_json_t *j, const pf_model_t *m, int32_t row, uint32_t native)
{
    pf_json_begin_object(j);
    pf_json_key(j, "file");
    pf_json_string(j, row >= 0 ? pf_model_str(m, m->lines[row].file) : "[untracked]");
    pf_json_key(j, "line");
    pf_json_int(j, row >= 0 ? m->lines[row].line : 0);
    pf_json_key(j, "function");
    pf_json_string(j, row >= 0 ? pf_model_str(m, m->lines[row].function) : "");
    pf_json_key(j, "native");
    pf_json_begin_array(j);
    if (native)
        pf_json_string(j, pf_model_str(m, native));
    pf_json_end_array(j);
    pf_json_end_object(j);
}

static void redundancies(pf_json_t *j, const pf_model_t *m)
{
    double total[3] = {0, m->total.store_bytes, m->total.load_bytes};
    pf_json_begin_array(j);
    for (size_t i = 0; i < m->n_redundancies; i++) {
        const pf_redundancy_t *r = &m->redundancies[i];
        pf_json_begin_object(j);
        pf_json_key(j, "kind");
        pf_json_string(j, r->kind == PF_ACCESS_STORE ? "store" : "load");
        bytes(j, "bytes", r->bytes);
        pf_json_key(j, "fraction");
        pf_json_number(j, fraction(r->bytes, total[r->kind <= 2 ? r->kind : 0]));
        pf_json_key(j, "count");
        pf_json_number(j, r->count);
        pf_json_key(j, "approx");
        pf_json_bool(j, r->approx);
        pf_json_key(j, "category");
        pf_json_string(j, r->category);
        pf_json_key(j, "first");
        site(j, m, r->first_line, r->first_native);
        pf_json_key(j, "first_path");
        pf_json_string(j, pf_model_str(m, r->first_path));
        pf_json_key(j, "repeat");
        site(j, m, r->repeat_line, r->repeat_native);
        pf_json_key(j, "repeat_path");
        pf_json_string(j, pf_model_str(m, r->repeat_path));
        pf_json_end_object(j);
    }
    pf_json_end_array(j);
}

/* The watch run's counters, or null for a profile made without --watch. */
static void watch_summary(pf_json_t *j, const pf_model_t *m)
{
    const pf_watch_summary_t *w = &m->watch;
    if (!w->present) {
        pf_json_null(j);
        return;
    }
    pf_json_begin_object(j);
    pf_json_key(j, "event");
    pf_json_string(j, w->event);
    pf_json_key(j, "period");
    pf_json_number(j, (double)w->period);
    pf_json_key(j, "period_max");
    pf_json_number(j, (double)w->period_max);
    pf_json_key(j, "widened_threads");
    pf_json_number(j, (double)w->widened_threads);
    pf_json_key(j, "address_source");
    pf_json_string(j, pf_report_address_source(w->source));
    pf_json_key(j, "watchpoints");
    pf_json_string(j, w->emulated ? "emulated" : "hardware");
    pf_json_key(j, "emulation");
    if (w->emulated)
        pf_json_string(j, pf_report_emulation(w->emulated));
    else
        pf_json_null(j);
    pf_json_key(j, "emulation_budget_pct");
    if (w->emulated && w->budget_pct)
        pf_json_number(j, (double)w->budget_pct);
    else
        pf_json_null(j);
    const struct {
        const char *name;
        uint64_t v;
    } counts[] = {{"samples", w->samples}, {"samples_armed", w->samples_armed}, {"traps", w->traps},
                  {"dropped_filter", w->dropped_filter}, {"dropped_nomem", w->dropped_nomem},
                  {"dropped_busy", w->dropped_busy}, {"dropped_reservoir", w->dropped_reservoir},
                  {"same_call", w->same_call}, {"header_words", w->header_words},
                  {"store_pairs", w->store_pairs}, {"store_bytes", w->store_bytes},
                  {"redundant_store_bytes", w->silent_store_bytes}, {"load_pairs", w->load_pairs},
                  {"load_bytes", w->load_bytes}, {"redundant_load_bytes", w->redundant_load_bytes},
                  {"copy_watches", w->copy_watches}, {"copy_writes", w->copy_writes}};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        pf_json_key(j, counts[i].name);
        pf_json_number(j, (double)counts[i].v);
    }
    pf_json_end_object(j);
}

/* Python processes that ran unprofiled (pf_unprofiled_t), in time order. */
static void unprofiled(pf_json_t *j, const pf_model_t *m)
{
    pf_json_begin_array(j);
    for (size_t i = 0; i < m->n_unprofiled; i++) {
        const pf_unprofiled_t *u = &m->unprofiled[i];
        pf_json_begin_object(j);
        pf_json_key(j, "pid");
        pf_json_int(j, u->pid);
        pf_json_key(j, "started_by_pid");
        pf_json_int(j, u->starter_pid);
        pf_json_key(j, "file");
        if (u->row >= 0)
            pf_json_string(j, pf_model_str(m, m->lines[u->row].file));
        else
            pf_json_null(j);
        pf_json_key(j, "line");
        pf_json_int(j, u->row >= 0 ? m->lines[u->row].line : 0);
        pf_json_key(j, "t_s");
        pf_json_number(j, u->t_s);
        pf_json_key(j, "command");
        pf_json_string(j, u->command);
        pf_json_end_object(j);
    }
    pf_json_end_array(j);
}

int pf_render_json(const pf_model_t *m, FILE *out)
{
    pf_json_t j;
    pf_json_init(&j, out);
    pf_json_begin_object(&j);
    pf_json_key(&j, "schema");
    pf_json_string(&j, "pyflow-profile/1");

    pf_json_key(&j, "program");
    pf_json_begin_object(&j);
    pf_json_key(&j, "argv");
    pf_json_begin_array(&j);
    for (size_t i = 0; i < m->argc; i++)
        pf_json_string(&j, m->argv[i]);
    pf_json_end_array(&j);
    pf_json_key(&j, "python");
    pf_json_string(&j, m->python_version ? m->python_version : "");
    pf_json_key(&j, "exit_code");
    if (m->has_exit && !m->exit_signaled)
        pf_json_int(&j, m->exit_code);
    else
        pf_json_null(&j);
    pf_json_key(&j, "signal");
    if (m->has_exit && m->exit_signaled)
        pf_json_int(&j, m->exit_code);
    else
        pf_json_null(&j);
    pf_json_key(&j, "elapsed_s");
    pf_json_number(&j, round(m->elapsed_s * 1e6) / 1e6);
    pf_json_key(&j, "aggregated");     /* --aggregate: waste and sampling error not recorded */
    pf_json_bool(&j, m->aggregated);
    pf_json_key(&j, "aggregated_from_s");  /* --aggregate-after: full records before it */
    if (m->aggregated)
        pf_json_number(&j, round((double)m->aggregated_from_ns / 1e3) / 1e6);
    else
        pf_json_null(&j);
    pf_json_key(&j, "aggregated_why");     /* "option" (--aggregate, --aggregate-after TIME) or "size" */
    if (m->aggregated)
        pf_json_string(&j, m->aggregated_by_size ? "size" : "option");
    else
        pf_json_null(&j);
    pf_json_key(&j, "aggregated_flows");   /* an aggregated profile has copy flows and verdicts (newer runtimes) */
    pf_json_bool(&j, !m->aggregated || m->aggregated_flows_kept);
    pf_json_end_object(&j);

    pf_json_key(&j, "sampling");
    pf_json_begin_object(&j);
    pf_json_key(&j, "mode");
    pf_json_string(&j, m->exact ? "exact" : "sampled");
    pf_json_key(&j, "mean_sample_bytes");
    pf_json_number(&j, (double)m->mean_sample_bytes);
    pf_json_key(&j, "object_threshold_bytes");
    pf_json_number(&j, (double)m->object_threshold);
    pf_json_key(&j, "records_dropped");
    pf_json_number(&j, (double)m->dropped);
    pf_json_key(&j, "stacks_unresolved");
    pf_json_number(&j, (double)m->unresolved_stacks);
    pf_json_key(&j, "frees_unseen");
    pf_json_number(&j, (double)m->frees_unseen);
    pf_json_key(&j, "coarsened");     /* steps taken near the size cap: from t_s on, means were factor x */
    pf_json_begin_array(&j);
    for (size_t i = 0; i < m->n_sampling_steps; i++) {
        pf_json_begin_object(&j);
        pf_json_key(&j, "t_s");
        pf_json_number(&j, round(m->sampling_steps[i].t_s * 1e6) / 1e6);
        pf_json_key(&j, "factor");
        pf_json_number(&j, (double)m->sampling_steps[i].factor);
        pf_json_key(&j, "mean_sample_bytes");   /* --exact: allocations stay exact, only copies coarsen */
        if (m->exact)
            pf_json_null(&j);
        else
            pf_json_number(&j, (double)m->mean_sample_bytes * (double)m->sampling_steps[i].factor);
        pf_json_end_object(&j);
    }
    pf_json_end_array(&j);
    pf_json_end_object(&j);

    pf_json_key(&j, "totals");
    pf_json_begin_object(&j);
    bytes(&j, "peak_bytes", m->total.peak_bytes);
    pf_json_key(&j, "peak_at_s");
    pf_json_number(&j, (double)m->peak_ns / 1e9);
    bytes(&j, "alloc_bytes", m->total.alloc_bytes);
    bytes(&j, "python_bytes", m->total.python_bytes);
    bytes(&j, "native_bytes", m->total.native_bytes);
    bytes(&j, "gpu_bytes", m->total.gpu_bytes);
    bytes(&j, "gpu_peak_bytes", m->total.gpu_peak_bytes);
    pf_json_key(&j, "gpu_peak_at_s");
    if (m->total.gpu_peak_bytes > 0)
        pf_json_number(&j, (double)m->gpu_peak_ns / 1e9);
    else
        pf_json_null(&j);
    bytes(&j, "copy_bytes", m->total.copy_bytes);
    bytes(&j, "redundant_copy_bytes", m->total.redundant_copy_bytes);
    bytes(&j, "leaked_bytes", m->total.leaked_bytes);
    error_fields(&j, &m->total);
    pf_json_waste_totals(&j, m);
    pf_json_end_object(&j);

    pf_outside_code_t outside;  /* the rows charged to library lines: no line of the user's code on the stack */
    pf_report_outside_code(m, &outside);
    pf_json_key(&j, "outside_code");
    pf_json_begin_object(&j);
    bytes(&j, "alloc_bytes", outside.alloc_bytes);
    bytes(&j, "peak_bytes", outside.peak_bytes);
    bytes(&j, "copy_bytes", outside.copy_bytes);
    pf_json_key(&j, "lines");
    pf_json_number(&j, (double)outside.lines);
    pf_json_end_object(&j);

    pf_json_key(&j, "timeline");
    timeline(&j, m, &m->total);
    pf_json_key(&j, "gpu_timeline");
    series(&j, m, m->gpu_timeline);

    size_t *order = pf_report_line_order(m);
    pf_json_key(&j, "lines");
    pf_json_begin_array(&j);
    for (size_t k = 0; k < m->n_lines; k++) {
        const pf_line_t *l = &m->lines[order[k]];
        row_object(&j, m, l->file, l->line, l->function, &l->s, l);
    }
    pf_json_end_array(&j);

    size_t *forder = pf_report_func_order(m);
    pf_json_key(&j, "functions");
    pf_json_begin_array(&j);
    for (size_t k = 0; k < m->n_funcs; k++) {
        const pf_func_t *f = &m->funcs[forder[k]];
        row_object(&j, m, f->file, f->first_line, f->function, &f->s, NULL);
    }
    pf_json_end_array(&j);

    call_trees(&j, m);

    pf_json_key(&j, "flows");
    pf_json_begin_array(&j);
    for (size_t i = 0; i < m->n_flows; i++) {
        const pf_flow_t *fl = &m->flows[i];
        pf_json_begin_object(&j);
        pf_json_key(&j, "src");
        site(&j, m, fl->src_line, fl->src_native);
        pf_json_key(&j, "dst");
        site(&j, m, fl->dst_line, fl->dst_native);
        pf_json_key(&j, "kind");
        pf_json_string(&j, pf_report_copy_kind_name(fl->kind));
        bytes(&j, "bytes", fl->bytes);
        pf_json_key(&j, "count");
        pf_json_number(&j, floor(fl->count + 0.5));
        pf_json_key(&j, "at");
        site(&j, m, fl->at_line, fl->at_native);
        pf_json_key(&j, "redundant");
        pf_json_bool(&j, pf_report_flow_redundant(fl));
        bytes(&j, "redundant_bytes", fl->redundant_bytes);
        pf_json_key(&j, "redundant_count");
        pf_json_number(&j, floor(fl->redundant_count + 0.5));
        pf_json_key(&j, "started");     /* made by a thread or process `at` started, in library code */
        pf_json_bool(&j, fl->started);
        pf_json_key(&j, "judged");
        pf_json_int(&j, fl->judged);
        pf_json_key(&j, "candidates");  /* copies a verdict may concern (they filled their destination) */
        pf_json_number(&j, floor(fl->candidate_count + 0.5));
        pf_json_key(&j, "stages_upload");   /* a host copy an upload on its line then sent: its verdict */
        pf_json_bool(&j, fl->stages_upload);
        pf_json_key(&j, "made_in");     /* the library function that made it, under the `at` line */
        if (fl->made_in)
            pf_json_string(&j, pf_model_str(m, fl->made_in));
        else
            pf_json_null(&j);
        pf_json_key(&j, "fix");
        if (pf_report_copy_found(m, fl))
            pf_json_string(&j, pf_report_copy_fix(m, fl));
        else
            pf_json_null(&j);
        pf_json_key(&j, "evidence");
        pf_json_string(&j, !fl->judged ? "none" : fl->evidence == PF_EVIDENCE_CONTENT_HASH ? "content-hash"
                               : fl->watch_judged || fl->evidence == PF_EVIDENCE_WATCH ? "watch"
                                                                                        : "compare-at-free");
        /* --watch=copies: how many verdicts a watched write decided, and the first such write */
        pf_json_key(&j, "watch_judged");
        pf_json_int(&j, fl->watch_judged);
        pf_json_key(&j, "first_write");
        if (fl->watch_judged) {
            pf_json_begin_object(&j);
            pf_json_key(&j, "to");
            pf_json_string(&j, fl->write_to_dst ? "copy" : "source");
            pf_json_key(&j, "by");
            site(&j, m, fl->write_line, fl->write_native);
            pf_json_end_object(&j);
        } else {
            pf_json_null(&j);
        }
        pf_json_key(&j, "via");
        pf_json_node_callers(&j, m, fl->via_node);
        pf_json_key(&j, "src_objects");
        end_kinds(&j, fl->src_ends);
        pf_json_key(&j, "dst_objects");
        end_kinds(&j, fl->dst_ends);
        /* how long its copies' destinations lived: the flow graph leaves out copies into temporaries */
        pf_json_key(&j, "dst_lifetime_s");
        if (fl->dst_known)
            pf_json_number(&j, round(fl->dst_life_s * 1e6) / 1e6);
        else
            pf_json_null(&j);
        pf_json_key(&j, "dst_at_peak");
        pf_json_bool(&j, fl->dst_at_peak);
        pf_json_key(&j, "temporary");
        pf_json_bool(&j, pf_flow_temporary(m, fl));
        pf_json_end_object(&j);
    }
    pf_json_end_array(&j);

    pf_json_key(&j, "leaks");
    pf_json_begin_array(&j);
    for (size_t k = 0; k < m->n_lines; k++) {
        const pf_line_t *l = &m->lines[order[k]];
        if (l->s.leaked_bytes <= 0 || !pf_report_leak_found(m, l))
            continue;
        pf_json_begin_object(&j);
        pf_json_key(&j, "file");
        pf_json_string(&j, pf_model_str(m, l->file));
        pf_json_key(&j, "line");
        pf_json_int(&j, l->line);
        pf_json_key(&j, "function");
        pf_json_string(&j, pf_model_str(m, l->function));
        bytes(&j, "leaked_bytes", l->s.leaked_bytes);
        pf_json_key(&j, "likelihood");
        pf_json_number(&j, round(pf_report_leak_likelihood(&l->s) * 1000) / 1000);
        pf_json_key(&j, "rate_bytes_s");     /* the trend's slope (pf_model_leak.c) */
        pf_json_number(&j, floor(l->s.leak.rate + 0.5));
        pf_json_key(&j, "survivors");
        pf_json_int(&j, l->s.leak.survivors);
        pf_json_key(&j, "spread");
        pf_json_number(&j, round(l->s.leak.spread * 1000) / 1000);
        pf_json_key(&j, "p_value");
        pf_json_number(&j, l->s.leak.p_value);
        pf_json_key(&j, "via");
        leak_callers(&j, m, l);
        pf_json_end_object(&j);
    }
    pf_json_end_array(&j);

    pf_json_key(&j, "redundancies");
    redundancies(&j, m);
    pf_json_key(&j, "watch");
    watch_summary(&j, m);
    pf_json_waste(&j, m);

    pf_json_key(&j, "notes");
    pf_json_begin_array(&j);
    for (size_t i = 0; i < m->n_notes; i++)
        pf_json_string(&j, m->notes[i]);
    pf_json_end_array(&j);

    pf_json_key(&j, "processes");
    pf_json_begin_array(&j);
    for (size_t i = 0; i < m->n_procs; i++) {
        const pf_process_t *p = &m->procs[i];
        pf_json_begin_object(&j);
        pf_json_key(&j, "pid");
        pf_json_int(&j, p->pid);
        pf_json_key(&j, "ppid");
        pf_json_int(&j, p->ppid);
        pf_json_key(&j, "via_pid");
        pf_json_int(&j, p->via_pid);
        pf_json_key(&j, "root");
        pf_json_bool(&j, p->root);
        pf_json_key(&j, "replaced_by_exec");
        pf_json_bool(&j, pf_report_process_replaced(m, i));
        pf_json_key(&j, "still_running");
        pf_json_bool(&j, pf_report_process_running(m, i));
        pf_json_key(&j, "exec_command");
        if (p->exec_command)
            pf_json_string(&j, p->exec_command);
        else
            pf_json_null(&j);
        pf_json_key(&j, "argv");
        pf_json_string(&j, p->argv);
        pf_json_key(&j, "python");
        pf_json_string(&j, p->python);
        bytes(&j, "alloc_bytes", p->alloc_bytes);
        bytes(&j, "python_bytes", p->python_bytes);
        bytes(&j, "native_bytes", p->native_bytes);
        bytes(&j, "gpu_bytes", p->gpu_bytes);
        bytes(&j, "peak_bytes", p->peak_bytes);
        bytes(&j, "leaked_bytes", p->live);
        pf_json_end_object(&j);
    }
    pf_json_end_array(&j);

    pf_render_workers_json(m, &j);    /* "workers", "imbalance" (docs/distributed.md) */
    pf_json_key(&j, "unprofiled_processes");
    unprofiled(&j, m);
    pf_json_key(&j, "tests");
    pf_render_tests_json(&j, m);
    pf_json_end_object(&j);
    fputc('\n', out);
    free(order);
    free(forder);
    return ferror(out) ? -EIO : 0;
}
