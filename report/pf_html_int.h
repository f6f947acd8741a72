/* pf_html_int.h - the HTML page's shared pieces: escaping and byte cells (pf_html_util.c), and its watch
 * sections (pf_render_html_watch.c). */
#ifndef PF_HTML_INT_H
#define PF_HTML_INT_H

#include <stdio.h>

#include "pf_model_int.h"

/* Writes s with & < > " ' escaped (safe in text and in double- or single-quoted attributes). */
void pf_html_esc(FILE *f, const char *s);

/* s as a JSON string safe inside a <script> element: "<" is written \u003c, so no text can close it. */
void pf_html_script_string(FILE *f, const char *s);

/* A table cell of bytes, sortable by its exact value. */
void pf_html_num_cell(FILE *f, double v);

/* The call tree as a flame graph (pf_render_html_flame.c): nothing when nothing was allocated. */
void pf_html_flame(FILE *f, const pf_model_t *m);

/* The program's memory over time (pf_render_html_timeline.c): full width, time and byte axes, the peak and
 * the GPU line marked, hover for values. */
void pf_html_timeline(FILE *f, const pf_model_t *m);

/* The object flow graph (pf_render_html_flows.c): Graphviz's SVG of the default view, and a panel that
 * shows a clicked node's line, source and call path. Nothing when svg is NULL or empty. */
void pf_html_flow_graph(FILE *f, const pf_model_t *m, const char *svg);

/* ---- --watch (pf_render_html_watch.c); each writes nothing when the profile has no watch data ---- */

/* Rows of the summary table: the sampling event and counts, the silent/redundant shares, copy watches. */
void pf_html_watch_summary(FILE *f, const pf_model_t *m);

/* Findings: the largest redundant-access groups and the copies a watched write proved needed. Returns how
 * many it wrote. */
int pf_html_watch_findings(FILE *f, const pf_model_t *m);

/* Sections after the tables: every redundant-access group with both hybrid call paths, and every copy
 * edge a watched write decided, with the write. */
void pf_html_watch_sections(FILE *f, const pf_model_t *m);

/* 1 when the per-line and per-function tables get the silent-store and redundant-load columns. */
int pf_html_watch_columns(const pf_model_t *m);

/* Those columns' headers, and one row's cells. */
void pf_html_watch_heads(FILE *f);
void pf_html_watch_cells(FILE *f, const pf_stats_t *s);

#endif /* PF_HTML_INT_H */
