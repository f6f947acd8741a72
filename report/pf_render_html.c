/* pf_render_html.c - one self-contained HTML page (no network): findings first, the whole-program
 * timeline with its peak marked, sortable per-line and per-function tables with inline SVG sparklines
 * (hover for values), the call paths' flame graph (pf_render_html_flame.c), the --watch tables
 * (pf_render_html_watch.c), and the flow graph as SVG when Graphviz
 * made one. Every number comes from the
 * model, as in the text and JSON renderings. Sorting: click a column header, or open the page with
 * #sort=COLUMN:asc|desc. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pf_html_int.h"
#include "pf_render_waste.h"
#include "pf_model_int.h"
#include "pf_report_int.h"
#include "pf_workers_int.h"
#include "pf_util_int.h"

/* An SVG line chart of a 100-point series; each point has a hover title with its time and bytes. */
static void chart(FILE *f, const pf_model_t *m, const double *pts, int w, int h, int mark_peak)
{
    double top = 0;
    int at = 0;
    for (int i = 0; i < PF_TIMELINE_POINTS; i++)
        if (pts[i] > top) {
            top = pts[i];
            at = i;
        }
    fprintf(f, "<svg class=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">", w, h, w, h);
    fputs("<polyline fill=\"none\" stroke=\"#2a6fdb\" stroke-width=\"1.5\" points=\"", f);
    for (int i = 0; i < PF_TIMELINE_POINTS; i++)
        fprintf(f, "%.1f,%.1f ", (double)i * (w - 2) / (PF_TIMELINE_POINTS - 1) + 1,
                h - 1 - (top > 0 ? pts[i] / top * (h - 3) : 0));
    fputs("\"/>", f);
    char b[24];
    for (int i = 0; i < PF_TIMELINE_POINTS; i += (w < 200 ? 10 : 1)) {
        double x = (double)i * (w - 2) / (PF_TIMELINE_POINTS - 1) + 1;
        fprintf(f, "<rect x=\"%.1f\" y=\"0\" width=\"%.1f\" height=\"%d\" fill=\"transparent\"><title>%.2f s: %s</title></rect>",
                x - 1, w < 200 ? (double)w / 10 : (double)w / PF_TIMELINE_POINTS, h,
                m->timeline_end_s * i / PF_TIMELINE_POINTS, pf_report_human_bytes(pts[i], b));
    }
    if (mark_peak && top > 0) {
        double x = (double)at * (w - 2) / (PF_TIMELINE_POINTS - 1) + 1;
        fprintf(f, "<circle class=\"peak\" cx=\"%.1f\" cy=\"3\" r=\"3\" fill=\"#d33\"><title>peak %s</title></circle>"
                   "<text x=\"%.1f\" y=\"12\" font-size=\"10\" fill=\"#d33\">peak %s</text>",
                x, pf_report_human_bytes(top, b), x + 5 > w - 80 ? x - 80 : x + 5, pf_report_human_bytes(top, b));
    }
    fputs("</svg>", f);
}

static void table(FILE *f, const pf_model_t *m, const char *id, int lines)
{
    fprintf(f, "<table id=\"%s\" class=\"sortable\"><thead><tr>"
               "<th data-k=\"where\">%s</th><th data-k=\"function\">function</th>"
               "<th data-k=\"alloc\">allocated</th><th data-k=\"python\">python</th><th data-k=\"native\">native</th>"
               "<th data-k=\"gpu\">gpu</th><th data-k=\"peak\">peak</th><th data-k=\"exit\">at exit</th>"
               "<th data-k=\"copied\">copied</th><th data-k=\"redundant\">redundant</th>",
            id, lines ? "line" : "file");
    int watch_cols = pf_html_watch_columns(m);
    if (watch_cols)
        pf_html_watch_heads(f);
    fprintf(f, "<th>trend</th>%s</tr></thead><tbody>\n", lines ? "<th>source</th>" : "");
    size_t n = lines ? m->n_lines : m->n_funcs;
    size_t *order = lines ? pf_report_line_order(m) : pf_report_func_order(m);
    for (size_t k = 0; k < n; k++) {
        uint32_t file = lines ? m->lines[order[k]].file : m->funcs[order[k]].file;
        uint32_t fn = lines ? m->lines[order[k]].function : m->funcs[order[k]].function;
        int line = lines ? m->lines[order[k]].line : m->funcs[order[k]].first_line;
        const pf_stats_t *s = lines ? &m->lines[order[k]].s : &m->funcs[order[k]].s;
        if (!pf_report_file_listed(m, pf_model_str(m, file)))
            continue;
        if (s->alloc_bytes < 0.5 && s->copy_bytes < 0.5)
            continue;
        fputs("<tr><td data-v=\"", f);
        pf_html_esc(f, pf_report_basename(pf_model_str(m, file)));
        fprintf(f, ":%08d\" title=\"", line);
        pf_html_esc(f, pf_model_str(m, file));
        fputs("\">", f);
        pf_html_esc(f, pf_report_basename(pf_model_str(m, file)));
        fprintf(f, ":%d</td><td>", line);
        pf_html_esc(f, pf_model_str(m, fn));
        fputs("</td>", f);
        if (s->alloc_var > 0) {    /* a sampled estimate: its standard error, and a mark when it is large */
            char b[24];
            fprintf(f, "<td data-v=\"%.0f\" title=\"sampled estimate: &#177;%.0f%% (%u samples)\">%s%s</td>",
                    s->alloc_bytes, 100 * pf_report_alloc_se(s) / s->alloc_bytes, s->n_sampled,
                    pf_report_human_bytes(s->alloc_bytes, b), pf_report_few_samples(s) ? "~" : "");
        } else {
            pf_html_num_cell(f, s->alloc_bytes);
        }
        pf_html_num_cell(f, s->python_bytes);
        pf_html_num_cell(f, s->native_bytes);
        pf_html_num_cell(f, s->gpu_bytes);
        pf_html_num_cell(f, s->peak_bytes);
        pf_html_num_cell(f, s->leaked_bytes);
        pf_html_num_cell(f, s->copy_bytes);
        pf_html_num_cell(f, s->redundant_copy_bytes);
        if (watch_cols)
            pf_html_watch_cells(f, s);
        fputs("<td>", f);
        chart(f, m, s->timeline, 90, 18, 0);
        fputs("</td>", f);
        if (lines) {
            const char *src = pf_report_source_line(m, pf_model_str(m, file), line);
            fputs("<td class=\"src\" title=\"", f);
            pf_html_esc(f, src);
            fputs("\">", f);
            pf_html_esc(f, src);
            fputs("</td>", f);
        }
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
    free(order);
}


/* What the tables leave out: memory no line of the user's code asked for (pf_report_outside_code). */
static void outside_code(FILE *f, const pf_model_t *m)
{
    pf_outside_code_t out;
    pf_report_outside_code(m, &out);
    if (!pf_report_outside_code_shown(m, &out))
        return;
    char a[24];
    fprintf(f, "<p id=\"outside\">Outside your code (no line of yours on the stack: child processes, library threads, "
               "imports): %s allocated (%.0f%%), %.0f%% of the peak, in %zu library lines; the largest:",
            pf_report_human_bytes(out.alloc_bytes, a), 100 * out.alloc_bytes / m->total.alloc_bytes,
            m->total.peak_bytes > 0 ? 100 * out.peak_bytes / m->total.peak_bytes : 0.0, out.lines);
    for (size_t k = 0; k < out.n_top; k++) {
        const pf_line_t *l = &m->lines[out.top[k]];
        fputs(k ? ", <code title=\"" : " <code title=\"", f);
        pf_html_esc(f, pf_model_str(m, l->file));
        fputs("\">", f);
        pf_html_esc(f, pf_report_basename(pf_model_str(m, l->file)));
        fprintf(f, ":%d</code> %s", l->line, pf_report_human_bytes(l->s.alloc_bytes, a));
    }
    fputs(". <code>pyflow report PROFILE --profile-all</code> lists every line.</p>\n", f);
}

/* Rows holding memory of threads and processes they started (pf_report_started_lines). */
static void started_lines(FILE *f, const pf_model_t *m)
{
    size_t top[PF_STARTED_TOP];
    size_t n = pf_report_started_lines(m, top, PF_STARTED_TOP);
    if (!n)
        return;
    fputs("<p id=\"started\">Started by your lines (threads and processes with no line of yours on their own "
          "stacks: their memory is charged to the line that started them, and included above):", f);
    for (size_t k = 0; k < n; k++) {
        const pf_line_t *l = &m->lines[top[k]];
        char a[24], what[64];
        fputs(k ? ", <code title=\"" : " <code title=\"", f);
        pf_html_esc(f, pf_model_str(m, l->file));
        fputs("\">", f);
        pf_html_esc(f, pf_report_basename(pf_model_str(m, l->file)));
        fprintf(f, ":%d</code> %s in %s", l->line, pf_report_human_bytes(l->started_bytes, a),
                pf_report_started_what(l, what));
    }
    fputs(".</p>\n", f);
}

/* One row per process when children were merged, as in the text report. */
static void processes(FILE *f, const pf_model_t *m)
{
    if (pf_report_process_count(m) < 2)
        return;
    fputs("<h2>Processes</h2>\n<table id=\"processes\" class=\"sortable\"><thead><tr><th data-k=\"pid\">pid</th>"
          "<th data-k=\"parent\">parent</th><th data-k=\"alloc\">allocated</th><th data-k=\"peak\">peak</th>"
          "<th data-k=\"exit\">at exit</th><th data-k=\"command\">command</th></tr></thead><tbody>\n", f);
    for (size_t i = 0; i < m->n_procs; i++) {
        const pf_process_t *p = &m->procs[i];
        if (!pf_report_process_shown(m, i))
            continue;
        fprintf(f, "<tr><td data-v=\"%u\">%u</td><td data-v=\"%u\">", p->pid, p->pid,
                p->root ? 0 : p->via_pid ? p->via_pid : p->ppid);
        if (p->root)
            fputs("(root)", f);
        else if (p->via_pid)
            fprintf(f, "%u <span title=\"through a shell or another launcher, pid %u\">*</span>", p->via_pid, p->ppid);
        else
            fprintf(f, "%u", p->ppid);
        fputs("</td>", f);
        pf_html_num_cell(f, p->alloc_bytes);
        pf_html_num_cell(f, p->peak_bytes);
        pf_html_num_cell(f, p->live);
        char tag[PF_REPORT_TAG_BYTES];
        fputs("<td class=\"src\">", f);
        pf_html_esc(f, pf_report_process_tag(m, i, tag, sizeof tag));
        pf_html_esc(f, p->argv);
        fputs("</td></tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
    pf_render_workers_html(m, f);
}

/* The redundant copy bytes no finding lists (pf_report_unlisted_redundancy). Returns 1 when said. */
static int unlisted_copies(FILE *f, const pf_model_t *m)
{
    pf_unlisted_redundancy_t u;
    pf_report_unlisted_redundancy(m, &u);
    int started = pf_report_unlisted_shown(m, u.started_bytes), elsewhere = pf_report_unlisted_shown(m, u.elsewhere_bytes);
    if (!started && !elsewhere)
        return 0;
    char a[24];
    fputs("<div class=\"finding\" id=\"unlisted-copies\"><span class=\"bad\">redundant copies</span> not yours to fix:", f);
    if (started) {
        const pf_line_t *l = &m->lines[u.started_line];
        fprintf(f, " %s by threads and processes your lines started, in library code (most: ",
                pf_report_human_bytes(u.started_bytes, a));
        pf_html_esc(f, pf_report_basename(pf_model_str(m, l->file)));
        fprintf(f, ":%d)%s", l->line, elsewhere ? ";" : "");
    }
    if (elsewhere)
        fprintf(f, " %s outside your code (library lines, imports)", pf_report_human_bytes(u.elsewhere_bytes, a));
    fputs("</div>\n", f);
    return 1;
}

/* Python processes that ran unprofiled, by the line that started them (pf_report_unprofiled_groups). */
static void unprofiled(FILE *f, const pf_model_t *m)
{
    pf_unprofiled_group_t top[PF_UNPROFILED_TOP];
    size_t others, n = pf_report_unprofiled_groups(m, top, PF_UNPROFILED_TOP, &others);
    if (!n)
        return;
    fprintf(f, "<p id=\"unprofiled\">Not profiled: %zu Python process%s started with an environment without "
               "pyflow's <code>LD_PRELOAD</code> or <code>PYFLOW_OUTPUT</code>; their memory is not in this report.",
            m->n_unprofiled, m->n_unprofiled == 1 ? "" : "es");
    for (size_t k = 0; k < n; k++) {
        const pf_unprofiled_t *u = &m->unprofiled[top[k].first];
        fputs(k ? "; " : " Started by ", f);
        if (top[k].row >= 0) {
            const pf_line_t *l = &m->lines[top[k].row];
            fputs("<code title=\"", f);
            pf_html_esc(f, pf_model_str(m, l->file));
            fputs("\">", f);
            pf_html_esc(f, pf_report_basename(pf_model_str(m, l->file)));
            fprintf(f, ":%d</code>", l->line);
        } else {
            fputs("no line of yours", f);
        }
        fprintf(f, " (%zu): <code>", top[k].count);
        pf_html_esc(f, u->command);
        fputs("</code>", f);
    }
    if (others)
        fprintf(f, "; %zu more by other lines", others);
    fputs(". Fix: ", f);
    pf_html_esc(f, PF_UNPROFILED_FIX);
    fputs(".</p>\n", f);
}

static const char *STYLE =
    "body{font:14px system-ui,sans-serif;margin:24px;color:#222}h1{font-size:20px}h2{font-size:16px;margin-top:28px}"
    "table{border-collapse:collapse;font-size:13px}th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:right;white-space:nowrap}"
    "th{cursor:pointer;background:#f6f6f6;position:sticky;top:0}th:first-child,td:first-child,td:nth-child(2),"
    "td.src{text-align:left}svg#flame rect.bar{cursor:pointer}svg#flame text{font:11px monospace;fill:#222}td.src{font-family:monospace;white-space:pre;overflow:hidden;text-overflow:ellipsis}"
    /* the source column takes what the others leave of the page's width, and cuts the rest (the full line
       is its tooltip): a wide table never makes the page scroll sideways */
    "table#lines{width:100%}table#lines th:last-child{text-align:left}table#lines td.src{max-width:0;width:100%}table#lines td:nth-child(2){max-width:14em;overflow:hidden;text-overflow:ellipsis}"
    ".tip{font:12px monospace;color:#444;min-height:1.3em}svg#timeline text.tick{font:11px system-ui,sans-serif;fill:#555}"
    "#flowgraph{overflow:auto;max-width:100%;max-height:80vh;border:1px solid #eee}#flowgraph svg{max-width:100%;height:auto}#flowgraph g.node.sel polygon,"
    "#flowgraph g.node.sel path{stroke-width:3}ol.path{margin:2px 0;font:12px monospace}ol.path li.lib{color:#777}"
    ".finding{margin:4px 0}.bad{color:#c22;font-weight:600}.good{color:#292;font-weight:600}#redundancies td,#needed td{text-align:left}.summary td{text-align:left}svg.chart{vertical-align:middle}";

static const char *SCRIPT =
    "function sortTable(t,k,dir){var h=[].slice.call(t.tHead.rows[0].cells);var i=h.findIndex(function(c){"
    "return c.dataset.k===k});if(i<0)return;var b=t.tBodies[0];var r=[].slice.call(b.rows);"
    "r.sort(function(x,y){var a=x.cells[i].dataset.v,c=y.cells[i].dataset.v;"
    "var na=parseFloat(a),nc=parseFloat(c);var v=(!isNaN(na)&&!isNaN(nc)&&k!=='where'&&k!=='function')?na-nc:"
    "String(a||x.cells[i].textContent).localeCompare(String(c||y.cells[i].textContent));return dir==='asc'?v:-v});"
    "r.forEach(function(x){b.appendChild(x)});t.dataset.sorted=k+':'+dir}"
    "document.querySelectorAll('table.sortable').forEach(function(t){[].slice.call(t.tHead.rows[0].cells)."
    "forEach(function(c){c.addEventListener('click',function(){var d=t.dataset.sorted===c.dataset.k+':desc'?"
    "'asc':'desc';sortTable(t,c.dataset.k,d)})})});"
    "var m=location.hash.match(/^#sort=(\\w+):(asc|desc)$/);if(m)sortTable(document.getElementById('lines'),m[1],m[2]);"
    /* how wide the page is laid out against the window (the tests check it never scrolls sideways) */
    "document.body.dataset.scrollWidth=document.documentElement.scrollWidth;"
    "document.body.dataset.clientWidth=document.documentElement.clientWidth;";

int pf_render_html(const pf_model_t *m, FILE *f, const pf_html_opts_t *opts)
{
    char a[24], b[24], c[24], d[24];
    char argv[1024] = "";
    for (size_t i = 0; i < m->argc; i++) {
        size_t used = strlen(argv);
        snprintf(argv + used, sizeof argv - used, "%s%s", i ? " " : "", m->argv[i]);
    }
    fputs("<!doctype html><html><head><meta charset=\"utf-8\"><title>pyflow: ", f);
    pf_html_esc(f, argv);
    fprintf(f, "</title><style>%s</style></head><body>\n<h1>pyflow: ", STYLE);
    pf_html_esc(f, argv);
    fputs("</h1>\n<table class=\"summary\">", f);
    fprintf(f, "<tr><td>Python</td><td>%s</td></tr><tr><td>elapsed</td><td>%.2f s</td></tr>",
            m->python_version ? m->python_version : "?", m->elapsed_s);
    fprintf(f, "<tr><td>exit</td><td>%s %d</td></tr>", m->exit_signaled ? "killed by signal" : "status", m->exit_code);
    fprintf(f, "<tr><td>peak</td><td>%s</td></tr><tr><td>allocated</td><td>%s (python %s, native %s)</td></tr>",
            pf_report_human_bytes(m->total.peak_bytes, a), pf_report_human_bytes(m->total.alloc_bytes, b), pf_report_human_bytes(m->total.python_bytes, c),
            pf_report_human_bytes(m->total.native_bytes, d));
    fprintf(f, "<tr><td>live at exit</td><td>%s</td></tr><tr><td>copied</td><td>%s (redundant %s)</td></tr>",
            pf_report_human_bytes(m->total.leaked_bytes, a), pf_report_human_bytes(m->total.copy_bytes, b), pf_report_human_bytes(m->total.redundant_copy_bytes, c));
    if (m->total.gpu_bytes > 0)
        fprintf(f, "<tr><td>gpu</td><td>allocated %s, peak %s</td></tr>", pf_report_human_bytes(m->total.gpu_bytes, a),
                pf_report_human_bytes(m->total.gpu_peak_bytes, b));
    fprintf(f, "<tr><td>sampling</td><td>%s</td></tr>",
            m->exact ? "exact: every allocation recorded" : "Poisson by bytes; large allocations exact");
    char lacks[PF_REPORT_INCOMPLETE_BYTES];
    if (pf_report_incomplete(m, lacks))
        fprintf(f, "<tr><td>incomplete</td><td class=\"bad\">%s</td></tr>", lacks);
    if (pf_report_sampling_steps(m, lacks))
        fprintf(f, "<tr><td>size cap</td><td>%s</td></tr>", lacks);
    pf_html_watch_summary(f, m);
    fputs("</table>\n", f);

    fputs("<h2>Findings</h2><div id=\"findings\">", f);
    int any = 0;
    for (size_t i = 0; i < m->n_flows; i++) {
        const pf_flow_t *fl = &m->flows[i];
        if (!pf_report_copy_found(m, fl))
            continue;
        const pf_line_t *at = &m->lines[fl->at_line];
        fprintf(f, "<div class=\"finding\"><span class=\"bad\">redundant copy</span> %s at ", pf_report_human_bytes(fl->redundant_bytes, a));
        pf_html_esc(f, pf_report_basename(pf_model_str(m, at->file)));
        char from[600], callers[1024];
        fprintf(f, ":%d", at->line);
        pf_html_esc(f, pf_report_copy_source(m, fl, from, sizeof from));
        fputs(" <code>", f);
        pf_html_esc(f, pf_report_source_line(m, pf_model_str(m, at->file), at->line));
        fputs("</code>", f);
        const char *via = pf_report_flow_via(m, fl, callers, sizeof callers);
        if (via) {
            fputs(" via ", f);
            pf_html_esc(f, via);
        }
        fprintf(f, " (judged %u copies)", fl->judged);
        if (fl->made_in) {
            fputs(", made inside ", f);
            pf_html_esc(f, pf_model_str(m, fl->made_in));
        }
        fputs(": ", f);
        pf_html_esc(f, pf_report_copy_fix(m, fl));
        fputs("</div>\n", f);
        any++;
    }
    any += unlisted_copies(f, m);
    any += pf_html_watch_findings(f, m);
    any += pf_html_waste_findings(f, m);
    for (size_t i = 0; i < m->n_lines; i++) {
        const pf_line_t *l = &m->lines[i];
        if (!pf_report_leak_found(m, l))
            continue;
        double p = pf_report_leak_likelihood(&l->s);
        fprintf(f, "<div class=\"finding\"><span class=\"bad\">probable leak</span> %s live at exit (likelihood %.0f%%) at ",
                pf_report_human_bytes(l->s.leaked_bytes, a), 100 * p);
        pf_html_esc(f, pf_report_basename(pf_model_str(m, l->file)));
        fprintf(f, ":%d <code>", l->line);
        pf_html_esc(f, pf_report_source_line(m, pf_model_str(m, l->file), l->line));
        fputs("</code>", f);
        char callers[1024];
        size_t paths;
        const char *via = pf_report_via(m, l, 1, callers, sizeof callers, &paths);
        if (via) {      /* which caller of a helper keeps it */
            fputs(" via ", f);
            pf_html_esc(f, via);
        }
        fputs("</div>\n", f);
        any++;
    }
    if (!any)
        fputs("<div class=\"finding\">no redundant copy, redundant access or probable leak found</div>", f);
    fputs("</div>\n", f);
    pf_html_timeline(f, m);
    fputs("\n<h2>Lines</h2>\n", f);
    table(f, m, "lines", 1);
    outside_code(f, m);
    started_lines(f, m);
    fputs("<h2>Functions</h2>\n", f);
    table(f, m, "functions", 0);
    pf_html_flame(f, m);
    processes(f, m);
    unprofiled(f, m);
    pf_html_watch_sections(f, m);
    pf_html_flow_graph(f, m, opts ? opts->flow_svg : NULL);
    fprintf(f, "\n<script>%s</script></body></html>\n", SCRIPT);
    return ferror(f) ? -EIO : 0;
}
