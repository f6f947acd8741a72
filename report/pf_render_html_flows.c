/* pf_render_html_flows.c - the HTML page's object flow graph: Graphviz's SVG of the graph's view
 * (flowgraph/pf_render_dot.c), scrolled inside its own box so a wide graph never widens the page, and a panel that
 * shows a clicked node's line, its source and its call path, library frames included (pf_calltree_int.h).
 *
 * The nodes' facts go into the page as JSON keyed by the SVG ids the graph gives its nodes (flow_nROW); the
 * call path is the unfolded one to the library function that made most of the line's bytes, else the
 * path holding most of them at the peak. */
#include <stdlib.h>
#include <string.h>

#include "pf_flowgraph.h"
#include "pf_html_int.h"
#include "pf_report_int.h"

/* One step of a path as the panel prints it: "function file:line", a library one "module.function:line", a
 * native one its symbol. */
static void step(FILE *f, const pf_model_t *m, const pf_callnode_t *c, int first)
{
    char name[600], lib[400];
    if (c->kind == PF_NODE_NATIVE)
        snprintf(name, sizeof name, "[native] %s", pf_model_str(m, c->function));
    else if (c->kind == PF_NODE_LIBRARY)
        snprintf(name, sizeof name, "%s:%d", pf_flowview_function(m, (int32_t)(c - m->full), lib, sizeof lib), c->line);
    else
        snprintf(name, sizeof name, "%s %s:%d", pf_model_str(m, c->function), pf_report_basename(pf_model_str(m, c->file)),
                 c->line);
    fputs(first ? "" : ",", f);
    fprintf(f, "[%d,", c->kind);
    pf_html_script_string(f, name);
    fputc(']', f);
}

/* The path from the root down to node of tree nodes (m->full or m->nodes), as [[kind, name], ...]. */
static void path(FILE *f, const pf_model_t *m, const pf_callnode_t *nodes, int32_t node)
{
    int32_t chain[2 * PF_MAX_PY_FRAMES + 4];
    size_t n = 0;
    for (int32_t p = node; p >= 0 && n < sizeof chain / sizeof *chain; p = nodes[p].parent)
        chain[n++] = p;
    fputc('[', f);
    for (size_t i = n; i-- > 0;)
        step(f, m, &nodes[chain[i]], i == n - 1);
    fputc(']', f);
}

/* Shows the clicked node's facts in #flow-info; data-shown on it names the node (the tests read it, after
 * #flownode= clicked it). */
static const char *FLOWS_SCRIPT =
    "(function(){var D=JSON.parse(document.getElementById('flow-data').textContent),p=document.getElementById('flow-info');"
    "function esc(s){var d=document.createElement('div');d.textContent=s;return d.innerHTML}"
    "function show(id){var n=D[id];if(!n)return;var h='<b>'+esc(n[0])+'</b> <code>'+esc(n[1])+'</code><br>'+esc(n[2])+"
    "'<div>call path:</div><ol class=\"path\">';n[3].forEach(function(s){h+='<li class=\"'+(s[0]?'lib':'user')+'\">'+esc(s[1])+'</li>'});"
    "p.innerHTML=h+'</ol>';p.dataset.shown=id;document.querySelectorAll('#flowgraph g.node.sel').forEach(function(e){"
    "e.classList.remove('sel')});var g=document.getElementById(id);if(g)g.classList.add('sel')}"
    "document.querySelectorAll('#flowgraph g.node').forEach(function(g){if(D[g.id]){g.style.cursor='pointer';"
    "g.addEventListener('click',function(){show(g.id)})}});"
    /* #flownode=ID clicks that node, as a reader would */
    "var m=location.hash.match(/flownode=(flow_n\\d+)/),t=m&&document.getElementById(m[1]);if(t)t.dispatchEvent(new MouseEvent('click'))})();";

void pf_html_flow_graph(FILE *f, const pf_model_t *m, const char *svg)
{
    if (!svg || !svg[0])
        return;
    fputs("<h2 id=\"flow-graph\">Object flow graph</h2>\n<p>Objects your lines made (boxes: what they are, the library "
          "function that made them, the line) and the copies between them (arrows: bytes, the function that copied, "
          "the line). Click a box for its line and call path.</p>\n<div id=\"flowgraph\">",
          f);
    const char *s = strstr(svg, "<svg");   /* drop the XML prologue and doctype */
    fputs(s ? s : svg, f);
    fputs("</div>\n<div id=\"flow-info\" class=\"tip\">&nbsp;</div>\n<script type=\"application/json\" id=\"flow-data\">{", f);
    pf_flowview_t v;
    pf_flowview_build(m, 0, 1, &v);
    int first = 1;
    for (size_t i = 0; i < m->n_lines; i++) {
        const pf_line_t *l = &m->lines[i];
        if (!v.node[i])
            continue;   /* in no flow: no node in any view */
        char id[32], quoted[40], where[600], kind[160], maker[400], what[700];
        snprintf(id, sizeof id, "flow_n%zu", i);
        snprintf(quoted, sizeof quoted, "id=\"%s\"", id);
        if (!strstr(s ? s : svg, quoted))
            continue;   /* not drawn in this view */
        snprintf(where, sizeof where, "%s:%d", pf_report_basename(pf_model_str(m, l->file)), l->line);
        pf_flowview_function(m, v.maker[i], maker, sizeof maker);
        snprintf(what, sizeof what, "%s%s%s", pf_flowview_kind(m, &v, (int32_t)i, kind, sizeof kind),
                 maker[0] ? ", made by " : "", maker);
        fputs(first ? "\n" : ",\n", f);
        first = 0;
        pf_html_script_string(f, id);
        fputs(":[", f);
        pf_html_script_string(f, where);
        fputc(',', f);
        pf_html_script_string(f, pf_report_source_line(m, pf_model_str(m, l->file), l->line));
        fputc(',', f);
        pf_html_script_string(f, what);
        fputc(',', f);
        size_t paths;
        int32_t folded = pf_report_line_node(m, l, 0, &paths);
        if (v.maker[i] >= 0)
            path(f, m, m->full, v.maker[i]);
        else if (folded >= 0)
            path(f, m, m->nodes, folded);
        else
            fputs("[]", f);
        fputc(']', f);
    }
    pf_flowview_free(&v);
    fprintf(f, "}</script>\n<script>%s</script>\n", FLOWS_SCRIPT);
}
