/* pf_render_html_timeline.c - the HTML page's memory timeline: the whole width of the page, a time axis
 * and a byte axis with tick labels at round values, the peak marked, the GPU's live bytes as a second
 * line when the program used a GPU, and the values under the pointer as it hovers.
 *
 * The points go into the page as JSON and a short script draws them at the page's width (text in an SVG
 * stretched by its viewBox would stretch too). Each of the PF_TIMELINE_POINTS buckets holds its slice's
 * maximum (pf_timeline_int.h), drawn at the slice's middle; the peak is the program's own (m->peak_ns).
 */
#include "pf_html_int.h"
#include "pf_report_int.h"

static void points(FILE *f, const double *pts)
{
    fputc('[', f);
    for (int i = 0; i < PF_TIMELINE_POINTS; i++)
        fprintf(f, "%s%.0f", i ? "," : "", pts[i]);
    fputc(']', f);
}

/* Draws #timeline from #timeline-data {t: seconds, host: [...], gpu: [...] or null, peak: [s, bytes],
 * gpu_peak: [s, bytes] or null}: axes (data-ticks on the svg counts the tick labels drawn; the tests read
 * it), the lines, the two peaks (each its own marker: the GPU's need not fall at the host's), and a hover
 * line with the values. */
static const char *TIMELINE_SCRIPT =
    "(function(){var g=document.getElementById('timeline'),D=JSON.parse(document.getElementById('timeline-data').textContent),"
    "ns='http://www.w3.org/2000/svg',L=64,R=12,T=10,B=26,H=200,tip=document.getElementById('timeline-tip');"
    "function hb(v){var u=['B','KiB','MiB','GiB','TiB'],i=0;while(v>=1024&&i<4){v/=1024;i++}"
    "return(i?v.toFixed(v<10?2:v<100?1:0):Math.round(v))+' '+u[i]}"
    "function ts(v,st){return st>=1?v.toFixed(0)+' s':st>=0.1?v.toFixed(1)+' s':st>=0.01?v.toFixed(2)+' s':(v*1000).toFixed(st>=0.001?0:1)+' ms'}"
    "function step(span,n,bin){var raw=span/n,base=bin&&raw>=1?Math.pow(2,Math.floor(Math.log2(raw)/10)*10):Math.pow(10,Math.floor(Math.log10(raw)));"
    "var r=raw/base,m=bin&&base>=1024?[1,2,4,8,16,32,64,128,256,512,1024]:[1,2,5,10];for(var i=0;i<m.length;i++)if(m[i]>=r)return m[i]*base;return m[m.length-1]*base}"
    "function el(n,a,p){var e=document.createElementNS(ns,n);for(var k in a)e.setAttribute(k,a[k]);(p||g).appendChild(e);return e}"
    "function draw(){while(g.firstChild)g.removeChild(g.firstChild);var W=g.clientWidth||1000,n=D.host.length,"
    "top=Math.max.apply(null,D.host.concat(D.gpu||[]).concat([D.peak[1],1])),dt=D.t>0?D.t:1,ticks=0;"
    "var bs=step(top,4,1),ymax=Math.ceil(top/bs)*bs,tst=step(dt,Math.max(2,Math.floor((W-L-R)/110)),0);"
    "function X(t){return L+t/dt*(W-L-R)}function Y(v){return T+(H-T-B)*(1-v/ymax)}"
    "for(var v=0;v<=ymax*1.0001;v+=bs){el('line',{x1:L,x2:W-R,y1:Y(v),y2:Y(v),stroke:'#eee'});"
    "var t=el('text',{x:L-6,y:Y(v)+4,'text-anchor':'end','class':'tick'});t.textContent=hb(v);ticks++}"
    "for(var s=0;s<=dt*1.0001;s+=tst){el('line',{x1:X(s),x2:X(s),y1:H-B,y2:H-B+4,stroke:'#888'});"
    "var t=el('text',{x:X(s),y:H-B+16,'text-anchor':'middle','class':'tick'});t.textContent=ts(s,tst);ticks++}"
    "el('line',{x1:L,x2:W-R,y1:H-B,y2:H-B,stroke:'#888'});el('line',{x1:L,x2:L,y1:T,y2:H-B,stroke:'#888'});"
    "function line(p,c,cls){el('polyline',{fill:'none',stroke:c,'stroke-width':1.5,'class':cls,points:p.map(function(v,i){"
    "return X((i+0.5)*dt/n).toFixed(1)+','+Y(v).toFixed(1)}).join(' ')})}"
    "line(D.host,'#2a6fdb','host');if(D.gpu)line(D.gpu,'#2a9d4a','gpu');"
    "if(D.peak[1]>0){var px=X(D.peak[0]),py=Y(D.peak[1]);el('line',{x1:px,x2:px,y1:T,y2:H-B,stroke:'#d33','stroke-dasharray':'3,3'});"
    "el('circle',{cx:px,cy:py,r:3.5,fill:'#d33','class':'peak'});var pt=el('text',{x:px+(px>W-160?-6:6),y:T+10,fill:'#d33',"
    "'text-anchor':px>W-160?'end':'start','class':'tick'});pt.textContent='peak '+hb(D.peak[1])+' at '+ts(D.peak[0],tst/10)}"
    "if(D.gpu_peak){var gx=X(D.gpu_peak[0]),gy=Y(D.gpu_peak[1]);el('line',{x1:gx,x2:gx,y1:T+14,y2:H-B,stroke:'#2a9d4a','stroke-dasharray':'2,4'});"
    "el('circle',{cx:gx,cy:gy,r:3.5,fill:'#2a9d4a','class':'gpu-peak'});var gt=el('text',{x:gx+(gx>W-200?-6:6),y:T+24,fill:'#2a9d4a',"
    "'text-anchor':gx>W-200?'end':'start','class':'tick'});gt.textContent='GPU peak '+hb(D.gpu_peak[1])+' at '+ts(D.gpu_peak[0],tst/10)}"
    "if(D.gpu){var lg=el('text',{x:W-R,y:T+10,'text-anchor':'end',fill:'#2a9d4a','class':'tick'});lg.textContent='GPU';"
    "var lh=el('text',{x:W-R-36,y:T+10,'text-anchor':'end',fill:'#2a6fdb','class':'tick'});lh.textContent='host + GPU'}"
    "var hv=el('line',{x1:0,x2:0,y1:T,y2:H-B,stroke:'#555',visibility:'hidden'});"
    "var ov=el('rect',{x:L,y:T,width:Math.max(W-L-R,1),height:H-T-B,fill:'transparent'});"
    "ov.addEventListener('mousemove',function(e){var r=g.getBoundingClientRect(),x=e.clientX-r.left,"
    "i=Math.max(0,Math.min(n-1,Math.floor((x-L)/(W-L-R)*n)));hv.setAttribute('x1',x);hv.setAttribute('x2',x);"
    "hv.setAttribute('visibility','visible');tip.textContent=ts(i*dt/n,tst/10)+' to '+ts((i+1)*dt/n,tst/10)+': '+hb(D.host[i])+"
    "(D.gpu?', GPU '+hb(D.gpu[i]):'')+' (the most live in that slice)'});"
    "ov.addEventListener('mouseleave',function(){hv.setAttribute('visibility','hidden');tip.textContent='\\u00a0'});"
    "g.setAttribute('height',H);g.dataset.ticks=ticks}draw();window.addEventListener('resize',draw)})();";

void pf_html_timeline(FILE *f, const pf_model_t *m)
{
    fputs("<h2 id=\"memory-over-time\">Memory over time</h2>\n<svg id=\"timeline\" width=\"100%\" height=\"200\"></svg>\n"
          "<div id=\"timeline-tip\" class=\"tip\">&nbsp;</div>\n<script type=\"application/json\" id=\"timeline-data\">{\"t\":",
          f);
    fprintf(f, "%.6f,\"host\":", m->timeline_end_s);
    points(f, m->total.timeline);
    fputs(",\"gpu\":", f);
    if (m->total.gpu_bytes > 0)
        points(f, m->gpu_timeline);
    else
        fputs("null", f);
    fprintf(f, ",\"peak\":[%.6f,%.0f],\"gpu_peak\":", (double)m->peak_ns / 1e9, m->total.peak_bytes);
    if (m->total.gpu_peak_bytes > 0)
        fprintf(f, "[%.6f,%.0f]", (double)m->gpu_peak_ns / 1e9, m->total.gpu_peak_bytes);
    else
        fputs("null", f);
    fprintf(f, "}</script>\n<script>%s</script>\n", TIMELINE_SCRIPT);
}
