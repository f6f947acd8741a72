/* pf_render_csv.c - the per-line table as CSV (RFC 4180: a header row, fields quoted when they hold a
 * comma, quote or line break), for spreadsheets and pandas. Bytes are whole numbers, never MB; the rows
 * are the JSON's "lines", in the same order, with the same numbers. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pf_model_int.h"
#include "pf_report_int.h"

static void field(FILE *out, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

static void number(FILE *out, double v)
{
    fprintf(out, ",%.0f", v > 0 ? floor(v + 0.5) : 0);
}

int pf_render_csv(const pf_model_t *m, FILE *out)
{
    fputs("file,line,function,user_code,alloc_bytes,alloc_count,python_bytes,native_bytes,gpu_bytes,peak_bytes,"
          "leaked_bytes,copy_bytes,copy_count,redundant_copy_bytes\r\n", out);
    size_t *order = pf_report_line_order(m);
    for (size_t k = 0; k < m->n_lines; k++) {
        const pf_line_t *l = &m->lines[order[k]];
        const pf_stats_t *s = &l->s;
        const char *file = pf_model_str(m, l->file);
        field(out, file);
        fprintf(out, ",%d,", l->line);
        field(out, pf_model_str(m, l->function));
        fprintf(out, ",%d", pf_report_file_listed(m, file));
        number(out, s->alloc_bytes);
        number(out, s->alloc_count);
        number(out, s->python_bytes);
        number(out, s->native_bytes);
        number(out, s->gpu_bytes);
        number(out, s->peak_bytes);
        number(out, s->leaked_bytes);
        number(out, s->copy_bytes);
        number(out, s->copy_count);
        number(out, s->redundant_copy_bytes);
        fputs("\r\n", out);
    }
    free(order);
    return ferror(out) ? -EIO : 0;
}
