/* pf_text_int.h - what the text report's two files share (pf_render_text.c: the header, the tables and the
 * sections; pf_render_text_findings.c: the findings): the output, cut to the terminal's width, and its
 * helpers. */
#ifndef PF_TEXT_INT_H
#define PF_TEXT_INT_H

#include <stdio.h>

#include "pf_model_int.h"

typedef struct out {
    FILE *f;
    int width;
    int color;
} out_t;

/* Human bytes in at most 7 characters: "512 B", "1.5 KiB", "32.0 MiB"; "-" for nothing. */
const char *pf_text_human(double v, char buf[16]);
/* Columns s takes on a terminal (wide characters count two; escape sequences none). */
int pf_text_columns(const out_t *o, const char *s);
/* Writes s cut to room columns, ending in an ellipsis when cut. */
void pf_text_put_cut(out_t *o, const char *s, int room);
/* Prints one line of at most o->width columns, built with printf. */
__attribute__((format(printf, 2, 3))) void pf_text_line(out_t *o, const char *fmt, ...);
/* A section's first line: a blank line, its title in bold, what it holds in parentheses. */
void pf_text_heading(out_t *o, const char *title, const char *about);
/* The file name of a path. */
const char *pf_text_path(const char *file);
/* Colour on and off (empty strings without colour). */
const char *pf_text_bold(const out_t *o);
const char *pf_text_red(const out_t *o);
const char *pf_text_reset(const out_t *o);
/* part as a percentage of whole (0 when whole is 0). */
double pf_text_share(double part, double whole);

/* The findings sections (pf_render_text_findings.c). */
void pf_text_peak_contributors(out_t *o, const pf_model_t *m);
void pf_text_findings(out_t *o, const pf_model_t *m);
void pf_text_access_findings(out_t *o, const pf_model_t *m);
void pf_text_leaks(out_t *o, const pf_model_t *m);

#endif /* PF_TEXT_INT_H */
