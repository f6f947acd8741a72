/* pf_export.c - the frames and stacks the exports share (pf_export_int.h). */
#include <math.h>
#include <stdlib.h>

#include "pf_export_int.h"
#include "pf_util_int.h"

const char *const pf_export_weight_names[PF_EXPORT_WEIGHTS] = {"alloc_space", "peak_space", "leaked_space"};
const char *const pf_export_weight_titles[PF_EXPORT_WEIGHTS] = {"allocated bytes", "live at peak",
                                                                "live at exit"};

void pf_export_frames_build(const pf_model_t *m, pf_export_frames_t *out)
{
    *out = (pf_export_frames_t){0};
    out->node_frame = pf_xcalloc(m->n_nodes + 1, sizeof *out->node_frame);
    pf_map_t index = {0};
    for (size_t n = 0; n < m->n_nodes; n++) {
        const pf_callnode_t *c = &m->nodes[n];
        uint64_t words[3] = {c->file, c->function, (uint64_t)(uint32_t)c->line};
        uint64_t key = pf_hash_words(words, 3, 0xF7A3E) & ~(1ull << 63);
        int created;
        uint64_t *v = pf_map_put(&index, key, &created);
        if (created) {
            pf_export_frame_t *fr = PF_VEC_PUSH(out->frames, out->n_frames, out->cap_frames);
            *fr = (pf_export_frame_t){.file = c->file, .function = c->function, .line = c->line};
            *v = out->n_frames - 1;
        }
        out->node_frame[n] = (uint32_t)*v;
    }
    pf_map_free(&index);
}

void pf_export_frames_free(pf_export_frames_t *f)
{
    free(f->frames);
    free(f->node_frame);
    *f = (pf_export_frames_t){0};
}

size_t pf_export_max_depth(const pf_model_t *m)
{
    size_t d = 0;
    for (size_t n = 0; n < m->n_nodes; n++)
        if (m->nodes[n].depth > d)
            d = m->nodes[n].depth;
    return d + 1;
}

size_t pf_export_stack(const pf_model_t *m, const pf_export_frames_t *f, int32_t node, int root_first,
                       uint32_t *out, size_t max)
{
    size_t n = 0;
    for (int32_t k = node; k >= 0 && n < max; k = m->nodes[k].parent)
        out[n++] = f->node_frame[k];
    if (root_first)
        for (size_t i = 0; i < n / 2; i++) {
            uint32_t t = out[i];
            out[i] = out[n - 1 - i];
            out[n - 1 - i] = t;
        }
    return n;
}

int64_t pf_export_whole(double v)
{
    if (!(v > 0))       /* negative, zero or NaN (a corrupt profile's numbers are anything) */
        return 0;
    return v < 9.2e18 ? (int64_t)floor(v + 0.5) : INT64_MAX;
}

void pf_export_node_weights(const pf_callnode_t *c, int64_t out[PF_EXPORT_WEIGHTS])
{
    out[0] = pf_export_whole(c->self_alloc);
    out[1] = pf_export_whole(c->self_peak);
    out[2] = pf_export_whole(c->self_leaked);
}
