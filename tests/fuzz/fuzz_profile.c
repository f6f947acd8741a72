/* fuzz_profile.c - libFuzzer target for the reporter: arbitrary bytes as a profile file, loaded and rendered
 * as text, JSON, dot and HTML. The reader must reject what it cannot read with an error, never crash, hang
 * or read out of bounds (built with ASan and UBSan).
 *
 * The input lives in a memfd reached through /proc/self/fd, as a profile file on disk would be: the reader
 * maps files, so this covers the mapping arithmetic too. Children are not merged (they would be other
 * files). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pf_report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("profile", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    if (size && write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64], err[512];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    pf_load_opts_t opts = {0};
    pf_model_t *m = NULL;
    if (pf_model_load(path, &opts, &m, err, sizeof err) == 0) {
        FILE *null = fopen("/dev/null", "w");
        if (null) {
            pf_text_opts_t text = {0};
            text.width = 120;
            pf_render_text(m, null, &text);
            text.width = 30;        /* narrow: every column and the source text cut */
            text.max_lines = 1000;
            text.reduced = 1;
            pf_render_text(m, null, &text);
            pf_render_json(m, null);
            pf_dot_opts_t dot = {0};
            pf_render_dot(m, null, &dot);
            pf_html_opts_t html = {0};
            pf_render_html(m, null, &html);
            pf_render_csv(m, null);
            pf_render_speedscope(m, null);
            pf_render_pprof(m, null);
            fclose(null);
        }
        pf_model_free(m);
    }
    close(fd);
    return 0;
}
