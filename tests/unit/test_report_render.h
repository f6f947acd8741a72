/* test_report_render.h - the model rendered to a string by each renderer, for the report's unit tests. */
#ifndef TEST_REPORT_RENDER_H
#define TEST_REPORT_RENDER_H

#include <stdio.h>

#include "pf_report.h"

/* The terminal report of m at this width (caller frees). */
__attribute__((unused)) static char *render_text(const pf_model_t *m, int width)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    pf_text_opts_t o = {.width = width};
    assert_int_equal(pf_render_text(m, f, &o), 0);
    fclose(f);
    return text;
}

/* The HTML page of m (caller frees). */
__attribute__((unused)) static char *render_html(const pf_model_t *m)
{
    char *html = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&html, &len);
    assert_int_equal(pf_render_html(m, f, NULL), 0);
    fclose(f);
    return html;
}

/* The JSON rendering of m (caller frees). Not inlined: gcc 12 then takes the buffer open_memstream
 * returns for a pointer to the local that held it (-Wdangling-pointer). */
__attribute__((unused, noinline)) static char *render_json(const pf_model_t *m)
{
    char *json = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&json, &len);
    assert_int_equal(pf_render_json(m, f), 0);
    fclose(f);
    return json;
}

/* The Graphviz flow graph of m, every flow drawn (caller frees). */
__attribute__((unused)) static char *render_dot(const pf_model_t *m)
{
    char *dot = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&dot, &len);
    pf_dot_opts_t o = {.min_bytes = 0};
    assert_int_equal(pf_render_dot(m, f, &o), 0);
    fclose(f);
    return dot;
}


#endif /* TEST_REPORT_RENDER_H */
