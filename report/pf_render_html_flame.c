/* pf_render_html_flame.c - the HTML page's flame graph of the call tree (pf_calltree_int.h): one bar per
 * line of a call path, under the line that called it, as wide as its bytes at the peak (or allocated, or
 * live at exit: the reader picks); hover for the numbers and the source, click a bar to zoom into it.
 *
 * The nodes go into the page as JSON and a short script draws them, so the three measures and the zoom
 * need no second copy of the graph. Both trees go in: the user's lines (the default) and, behind the
 * "library frames" box, the unfolded tree with the library frames in grey (pf_calltree_int.h). Nodes under PF_FLAME_MIN of the program's peak and allocated bytes
 * are left out (their subtrees are smaller still), which bounds the page for programs with many paths.
 */
#include <stdlib.h>
#include <string.h>

#include "pf_html_int.h"
#include "pf_report_int.h"
#include "pf_util_int.h"

#define PF_FLAME_MIN 0.001

static int flame_kept(const pf_model_t *m, const pf_callnode_t *c)
{
    return c->alloc >= 0.5 &&
           (c->peak >= PF_FLAME_MIN * m->total.peak_bytes || c->alloc >= PF_FLAME_MIN * m->total.alloc_bytes ||
            (c->gpu_peak > 0 && c->gpu_peak >= PF_FLAME_MIN * m->total.gpu_peak_bytes));
}

/* A tree's nodes (from first_root), depth first, as the script element `id`: [parent's position or -1,
 * peak, allocated, at exit, function, file:line, source, GPU bytes at the GPU peak, kind (PF_NODE_*)]. */
static void flame_data(FILE *f, const pf_model_t *m, const pf_callnode_t *nodes, size_t n_nodes, int32_t first_root,
                       const char *id)
{
    int32_t *pos = pf_xmalloc((n_nodes + 1) * sizeof *pos);
    int32_t next = 0;
    fprintf(f, "<script type=\"application/json\" id=\"%s\">[", id);
    for (int32_t n = first_root; n >= 0;) {
        const pf_callnode_t *c = &nodes[n];
        int keep = flame_kept(m, c);
        if (keep) {
            const char *file = pf_model_str(m, c->file);
            char where[600];
            if (c->kind == PF_NODE_NATIVE)
                snprintf(where, sizeof where, "[native]");
            else
                snprintf(where, sizeof where, "%s:%d", pf_report_basename(file), c->line);
            pos[n] = next++;
            fprintf(f, "%s[%d,%.0f,%.0f,%.0f,", pos[n] ? ",\n" : "", c->parent < 0 ? -1 : pos[c->parent], c->peak,
                    c->alloc, c->leaked);
            pf_html_script_string(f, pf_model_str(m, c->function));
            fputc(',', f);
            pf_html_script_string(f, where);
            fputc(',', f);
            pf_html_script_string(f, c->kind == PF_NODE_NATIVE ? "" : pf_report_source_line(m, file, c->line));
            fprintf(f, ",%.0f,%d]", c->gpu_peak, c->kind);
        }
        n = pf_calltree_next(nodes, n, keep);
    }
    fputs("]</script>\n", f);
    free(pos);
}

/* Draws the bars: the roots (or the zoomed node, under its callers drawn full width and faded: click one to
 * zoom out to it), each node's children under it in the order given, as wide as their share of the
 * measure picked; a bar is labelled file:line, or "line N" under a caller in the same file, then its source.
 * data-drawn on the graph counts the bars (the tests read it). */
static const char *FLAME_SCRIPT =
    "(function(){var d=document.getElementById('flame-data'),g=document.getElementById('flame');if(!d||!g)return;"
    "var F=JSON.parse(d.textContent),U=JSON.parse(document.getElementById('flame-data-unfolded').textContent),"
    "lib=document.getElementById('flame-library'),N,K={peak:1,alloc:2,exit:3,gpu:7},key=1,zoom=-1,kids,"
    "roots,H=18,ns='http://www.w3.org/2000/svg';"
    "function use(u){N=u?U:F;kids=N.map(function(){return[]});roots=[];zoom=-1;g.dataset.unfolded=u?1:0;"
    "N.forEach(function(n,i){(n[0]<0?roots:kids[n[0]]).push(i)})}use(/library/.test(location.hash));lib.checked=N===U;"
    "lib.addEventListener('change',function(){use(lib.checked);draw()});"
    "function hb(v){var u=['B','KiB','MiB','GiB','TiB'],i=0;while(v>=1024&&i<4){v/=1024;i++}"
    "return(i?v.toFixed(v<10?2:v<100?1:0):Math.round(v))+' '+u[i]}"
    "function hue(s){var h=0;for(var i=0;i<s.length;i++)h=(h*31+s.charCodeAt(i))%360;return h}"
    "function draw(){while(g.firstChild)g.removeChild(g.firstChild);var W=g.clientWidth||1000,"
    "top=zoom<0?roots:[zoom],tot=0,deep=0,callers=[];top.forEach(function(i){tot+=N[i][key]});"
    "for(var a=zoom<0?-1:N[zoom][0];a>=0;a=N[a][0])callers.unshift(a);"
    "function bar(i,x,y,faded){var n=N[i],w=faded?W:tot>0?n[key]/tot*W:0;if(w<0.5)return;deep=Math.max(deep,y);"
    "var r=document.createElementNS(ns,'rect');r.setAttribute('x',x);r.setAttribute('y',y*H);"
    "r.setAttribute('width',Math.max(w-1,0.5));r.setAttribute('height',H-1);"
    "r.setAttribute('fill',n[8]?'hsl('+(n[8]>1?30:210)+',12%,'+(80-Math.min(y,6)*2)+'%)':"
    "'hsl('+(hue(n[5].split(':')[0])+hue(n[4])%40)%360+',60%,'+(72-Math.min(y,6)*3)+'%)');if(n[8])r.setAttribute('class','bar lib');"
    "if(faded)r.setAttribute('fill-opacity','0.45');"
    "if(!n[8])r.setAttribute('class','bar');r.dataset.node=i;var t=document.createElementNS(ns,'title');"
    "t.textContent=(n[8]==1?'library ':n[8]==2?'native ':'')+n[4]+' '+n[5]+(n[6]?'\\n'+n[6]:'')+'\\nat the peak '+hb(n[1])+', allocated '+hb(n[2])+"
    "', live at exit '+hb(n[3])+(n[7]?', GPU at its peak '+hb(n[7]):'');r.appendChild(t);r.addEventListener('click',function(){zoom=zoom===i?-1:i;draw()});"
    "g.appendChild(r);if(w>40){var s=document.createElementNS(ns,'text');s.setAttribute('x',x+3);"
    "s.setAttribute('y',y*H+13);"
    "var f=n[5].replace(/:\\d+$/,''),at=n[0]>=0&&N[n[0]][5].replace(/:\\d+$/,'')===f?'line '+n[5].slice(f.length+1):n[5],"
    "c=Math.floor((w-6)/7),label=at+' '+(n[6]||n[4]);s.textContent=label.length>c?label.slice(0,c-1)+'\\u2026':label;"
    "s.style.pointerEvents='none';g.appendChild(s)}if(faded)return;var cx=x;kids[i].forEach(function(k){bar(k,cx,y+1);"
    "cx+=tot>0?N[k][key]/tot*W:0})}"
    "callers.forEach(function(a,y){bar(a,0,y,1)});"
    "var x=0;top.forEach(function(i){bar(i,x,callers.length);x+=tot>0?N[i][key]/tot*W:0});"
    "g.setAttribute('height',(deep+1)*H);g.dataset.drawn=g.querySelectorAll('rect').length}"
    "document.querySelectorAll('input[name=flame-by]').forEach(function(b){b.addEventListener('change',"
    "function(){key=K[b.value];draw()})});var m=location.hash.match(/flame=(peak|alloc|exit|gpu)/);"
    "if(m){key=K[m[1]];document.querySelector('input[value='+m[1]+']').checked=true}"
    "var z=location.hash.match(/zoom=(\\d+)/);if(z&&+z[1]<N.length)zoom=+z[1];draw();"
    "window.addEventListener('resize',draw)})();";

void pf_html_flame(FILE *f, const pf_model_t *m)
{
    if (m->first_root < 0 || m->total.alloc_bytes < 0.5)
        return;
    fputs("<h2 id=\"call-paths\">Call paths</h2>\n<p>Each bar is a line, under the line of yours that called it, as wide as its "
          "memory and what its callees hold. Hover for numbers and source; click a bar to zoom into it, again "
          "to zoom out (the callers above it zoom out to them). Width: <label><input type=\"radio\" name=\"flame-by\" value=\"peak\" checked> at the "
          "peak</label> <label><input type=\"radio\" name=\"flame-by\" value=\"alloc\"> allocated</label> "
          "<label><input type=\"radio\" name=\"flame-by\" value=\"exit\"> live at exit</label>",
          f);
    if (m->total.gpu_peak_bytes > 0)
        fputs(" <label><input type=\"radio\" name=\"flame-by\" value=\"gpu\"> GPU at its peak</label>", f);
    fputs(" <label title=\"the functions of packages and the standard library between and below your lines "
          "(grey); native ones with --native\"><input type=\"checkbox\" id=\"flame-library\"> library frames</label>"
          "</p>\n<svg id=\"flame\" width=\"100%\" height=\"18\"></svg>\n", f);
    flame_data(f, m, m->nodes, m->n_nodes, m->first_root, "flame-data");
    flame_data(f, m, m->full, m->n_full, m->first_full_root, "flame-data-unfolded");
    fprintf(f, "<script>%s</script>\n", FLAME_SCRIPT);
}
