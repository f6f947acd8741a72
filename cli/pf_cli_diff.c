/* pf_cli_diff.c - `pyflow diff BASE NEW`: what changed between two runs, for a person (text, HTML) and for
 * CI (--fail-on conditions decide the exit status: 0 all held, 1 one broke, 2 bad input). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_cli_int.h"
#include "pf_diff.h"

#define MAX_CONDS 32

/* Adds the comma-separated conditions of arg. Returns 0, or -1 after saying why. */
static int add_conds(const char *arg, pf_diff_cond_t *conds, size_t *n)
{
    char *copy = strdup(arg), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        char err[300];
        if (*n == MAX_CONDS) {
            fprintf(stderr, "pyflow: at most %d --fail-on conditions\n", MAX_CONDS);
            rc = -1;
        } else if (pf_diff_parse_cond(tok, &conds[*n], err, sizeof err) != 0) {
            fprintf(stderr, "pyflow: %s\n", err);
            rc = -1;
        } else {
            (*n)++;
        }
    }
    free(copy);
    return rc;
}

static int write_to(const char *path, const pf_diff_t *d, const pf_diff_opts_t *o, int html)
{
    FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (!f) {
        fprintf(stderr, "pyflow: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    int rc = html ? pf_diff_render_html(d, f, o) : pf_diff_render_text(d, f, o);
    if (f != stdout && fclose(f) != 0)
        rc = -1;
    if (rc < 0)
        fprintf(stderr, "pyflow: writing %s failed\n", path);
    return rc < 0 ? -1 : 0;
}

int pf_cli_diff(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL}, *format = "text", *out = "-", *html = NULL;
    pf_diff_cond_t conds[MAX_CONDS];
    pf_diff_opts_t opts = {.conds = conds};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int valued = !strcmp(a, "--fail-on") || !strcmp(a, "--format") || !strcmp(a, "-o") || !strcmp(a, "--html") ||
                     !strcmp(a, "--max-lines");
        if (valued && i + 1 >= argc) {
            fprintf(stderr, "pyflow: %s needs a value (see `pyflow --help`)\n", a);
            return 2;
        }
        if (!strcmp(a, "--fail-on") || !strncmp(a, "--fail-on=", 10)) {
            if (add_conds(a[9] == '=' ? a + 10 : argv[++i], conds, &opts.n_conds) != 0)
                return 2;
        } else if (!strcmp(a, "--format")) {
            format = argv[++i];
        } else if (!strcmp(a, "-o")) {
            out = argv[++i];
        } else if (!strcmp(a, "--html")) {
            html = argv[++i];
        } else if (!strcmp(a, "--max-lines")) {
            opts.max_rows = atoi(argv[++i]);
            if (opts.max_rows <= 0) {
                fprintf(stderr, "pyflow: --max-lines needs a positive number, not %s\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: pyflow diff BASE NEW [--fail-on COND[,COND]]... [--format text|html] [-o FILE]\n"
                   "                   [--html FILE] [--max-lines N]\n"
                   "BASE and NEW are profiles (-o) or their JSON reports (--json). COND: MEASURE:+N[unit|%%],\n"
                   "MEASURE one of allocated, peak, leaked, copies, redundant; e.g. peak:+10%%, leaked:+1MB,\n"
                   "redundant:+0. Exit status: 0, 1 when a condition broke, 2 on bad input.\n");
            return 0;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "pyflow: unknown diff option %s (see `pyflow diff --help`)\n", a);
            return 2;
        } else if (!paths[0]) {
            paths[0] = a;
        } else if (!paths[1]) {
            paths[1] = a;
        } else {
            fprintf(stderr, "pyflow: diff compares two runs (got a third: %s)\n", a);
            return 2;
        }
    }
    if (!paths[1]) {
        fprintf(stderr, "pyflow: diff needs two profiles or JSON reports: pyflow diff BASE NEW\n");
        return 2;
    }
    if (strcmp(format, "text") != 0 && strcmp(format, "html") != 0) {
        fprintf(stderr, "pyflow: unknown diff format %s (text or html)\n", format);
        return 2;
    }
    pf_diff_side_t sides[2];
    for (int s = 0; s < 2; s++) {
        char err[1024];
        if (pf_diff_load(paths[s], &sides[s], err, sizeof err) != 0) {
            fprintf(stderr, "pyflow: %s\n", err);
            if (s == 1)
                pf_diff_side_free(&sides[0]);
            return 2;
        }
    }
    pf_diff_t d;
    pf_diff_match(&d, &sides[0], &sides[1]);
    int rc = write_to(out, &d, &opts, strcmp(format, "html") == 0);
    if (html && write_to(html, &d, &opts, 1) != 0)
        rc = -1;
    int broken = 0;
    for (size_t i = 0; i < opts.n_conds; i++)
        broken |= pf_diff_cond_broken(&d, &conds[i]);
    pf_diff_free(&d);
    return rc < 0 ? 2 : broken ? 1 : 0;
}
