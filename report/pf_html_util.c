/* pf_html_util.c - escaping and number formatting for the HTML page (see pf_html_int.h). */
#include <string.h>

#include "pf_html_int.h"
#include "pf_report_int.h"

void pf_html_esc(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

void pf_html_num_cell(FILE *f, double v)
{
    char b[24];
    fprintf(f, "<td data-v=\"%.0f\">%s</td>", v, pf_report_human_bytes(v, b));
}

void pf_html_script_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == '<' || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}
