/* pf_render_waste.h - recomputed values and untouched memory in the renderings (pf_render_waste.c). */
#ifndef PF_RENDER_WASTE_H
#define PF_RENDER_WASTE_H

#include <stdio.h>

#include "pf_json_int.h"
#include "pf_model_int.h"

/* Whether an entry is a finding (listed in the text and HTML reports, marked in the dot graph). */
int pf_waste_recompute_shown(const pf_model_t *m, const pf_recomputation_t *r);
int pf_waste_untouched_shown(const pf_model_t *m, const pf_untouched_t *u);
/* A finding in words ("recomputed the same 32 KiB value 19874 times (620 MiB): ..."), into buf. */
const char *pf_waste_recompute_text(const pf_model_t *m, const pf_recomputation_t *r, char *buf, size_t size);
const char *pf_waste_untouched_text(const pf_untouched_t *u, char *buf, size_t size);
/* The header's line on the resident peak, or NULL when nothing of the peak was untouched. */
const char *pf_waste_resident_text(const pf_model_t *m, char *buf, size_t size);

/* JSON (pf_render_json.c): the callers (outermost first) of call-tree node `node` (-1: none), as sites. */
void pf_json_node_callers(pf_json_t *j, const pf_model_t *m, int32_t node);

/* JSON: a line's fields, the totals' fields, and the top-level lists and "waste" object. */
void pf_json_waste_line(pf_json_t *j, const pf_line_t *l);
void pf_json_waste_totals(pf_json_t *j, const pf_model_t *m);
void pf_json_waste(pf_json_t *j, const pf_model_t *m);

/* The HTML page's findings (each a div.finding); returns how many. */
int pf_html_waste_findings(FILE *f, const pf_model_t *m);

/* The text report's findings sections. */
void pf_text_waste(FILE *f, const pf_model_t *m, int width, int color);

#endif /* PF_RENDER_WASTE_H */
