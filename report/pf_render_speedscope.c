/* pf_render_speedscope.c - the call tree as a speedscope file (https://www.speedscope.app/file-format-schema.json):
 * one "sampled" profile per weight (allocated, live at peak, live at exit), each sample a call-tree node's
 * path weighted by the node's own bytes, so speedscope's flame graph and "left heavy" view add up to the
 * report's per-line numbers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pf_export_int.h"
#include "pf_json_int.h"
#include "pf_report_int.h"
#include "pf_util_int.h"

#define PYFLOW_EXPORTER "pyflow 0.1.0"

static void frames(pf_json_t *j, const pf_model_t *m, const pf_export_frames_t *f)
{
    pf_json_begin_array(j);
    for (size_t i = 0; i < f->n_frames; i++) {
        const pf_export_frame_t *fr = &f->frames[i];
        const char *file = pf_model_str(m, fr->file), *func = pf_model_str(m, fr->function);
        char name[512];
        /* speedscope names a box by its frame's name alone: the line goes in too, so two lines of one
         * function are two boxes, as they are two rows of the report */
        snprintf(name, sizeof name, "%s (%s:%d)", func[0] ? func : "<module>", pf_report_basename(file), fr->line);
        pf_json_begin_object(j);
        pf_json_key(j, "name");
        pf_json_string(j, name);
        pf_json_key(j, "file");
        pf_json_string(j, file);
        pf_json_key(j, "line");
        pf_json_int(j, fr->line);
        pf_json_end_object(j);
    }
    pf_json_end_array(j);
}

static void profile(pf_json_t *j, const pf_model_t *m, const pf_export_frames_t *f, int which, uint32_t *stack,
                    size_t depth)
{
    /* the nodes with bytes of this weight, and their total: speedscope's endValue comes before the lists */
    int32_t *nodes = pf_xmalloc((m->n_nodes + 1) * sizeof *nodes);
    int64_t *weights = pf_xmalloc((m->n_nodes + 1) * sizeof *weights);
    size_t n = 0;
    double total = 0;
    for (size_t k = 0; k < m->n_nodes; k++) {
        int64_t w[PF_EXPORT_WEIGHTS];
        pf_export_node_weights(&m->nodes[k], w);
        if (w[which] > 0) {
            nodes[n] = (int32_t)k;
            weights[n++] = w[which];
            total += (double)w[which];
        }
    }
    pf_json_begin_object(j);
    pf_json_key(j, "type");
    pf_json_string(j, "sampled");
    pf_json_key(j, "name");
    pf_json_string(j, pf_export_weight_titles[which]);
    pf_json_key(j, "unit");
    pf_json_string(j, "bytes");
    pf_json_key(j, "startValue");
    pf_json_int(j, 0);
    pf_json_key(j, "endValue");
    pf_json_number(j, total);
    pf_json_key(j, "samples");
    pf_json_begin_array(j);
    for (size_t i = 0; i < n; i++) {
        size_t k = pf_export_stack(m, f, nodes[i], 1, stack, depth);
        pf_json_begin_array(j);
        for (size_t s = 0; s < k; s++)
            pf_json_int(j, stack[s]);
        pf_json_end_array(j);
    }
    pf_json_end_array(j);
    pf_json_key(j, "weights");
    pf_json_begin_array(j);
    for (size_t i = 0; i < n; i++)
        pf_json_int(j, weights[i]);
    pf_json_end_array(j);
    pf_json_end_object(j);
    free(nodes);
    free(weights);
}

int pf_render_speedscope(const pf_model_t *m, FILE *out)
{
    pf_export_frames_t f;
    pf_export_frames_build(m, &f);
    size_t depth = pf_export_max_depth(m);
    uint32_t *stack = pf_xmalloc(depth * sizeof *stack);
    pf_json_t j;
    pf_json_init(&j, out);
    pf_json_begin_object(&j);
    pf_json_key(&j, "$schema");
    pf_json_string(&j, "https://www.speedscope.app/file-format-schema.json");
    pf_json_key(&j, "name");
    pf_json_string(&j, m->argc ? m->argv[0] : "pyflow profile");
    pf_json_key(&j, "exporter");
    pf_json_string(&j, PYFLOW_EXPORTER);
    pf_json_key(&j, "activeProfileIndex");
    pf_json_int(&j, 0);
    pf_json_key(&j, "shared");
    pf_json_begin_object(&j);
    pf_json_key(&j, "frames");
    frames(&j, m, &f);
    pf_json_end_object(&j);
    pf_json_key(&j, "profiles");
    pf_json_begin_array(&j);
    for (int w = 0; w < PF_EXPORT_WEIGHTS; w++)
        profile(&j, m, &f, w, stack, depth);
    pf_json_end_array(&j);
    pf_json_end_object(&j);
    fputc('\n', out);
    free(stack);
    pf_export_frames_free(&f);
    return ferror(out) ? -EIO : 0;
}
