/* pf_render_pprof.c - the call tree as a pprof profile (github.com/google/pprof proto/profile.proto,
 * gzipped), read by `pprof`, Pyroscope and Grafana. Three sample types, each in bytes: alloc_space (bytes
 * allocated), peak_space (live at the program's peak), leaked_space (live at exit); one sample per
 * call-tree node with its own bytes, its locations leaf first; a location per line (file, function, line
 * number), a function per (file, function). Field numbers are profile.proto's. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "pf_export_int.h"
#include "pf_protobuf_int.h"
#include "pf_report_int.h"
#include "pf_util_int.h"

/* profile.proto's field numbers */
enum {
    PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_LOCATION = 4, PROFILE_FUNCTION = 5,
    PROFILE_STRING_TABLE = 6, PROFILE_DURATION_NANOS = 10, PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12,
    PROFILE_COMMENT = 13, PROFILE_DEFAULT_SAMPLE_TYPE = 14,
    VALUETYPE_TYPE = 1, VALUETYPE_UNIT = 2,
    SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2,
    LOCATION_ID = 1, LOCATION_LINE = 4,
    LINE_FUNCTION_ID = 1, LINE_LINE = 2,
    FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4,
};

/* The profile's string table: index 0 is "", each string once. */
typedef struct strings {
    pf_pb_t *profile;
    pf_map_t index;     /* hash -> index (a collision only costs a duplicate entry: never a wrong name) */
    const char **seen;  /* by index, to confirm a hash hit */
    size_t n, cap;
} strings_t;

static uint64_t string_index(strings_t *s, const char *str)
{
    uint64_t key = pf_hash_bytes(str, strlen(str), 0x5751) & ~(1ull << 63);
    int created;
    uint64_t *v = pf_map_put(&s->index, key, &created);
    if (!created && strcmp(s->seen[*v], str) == 0)
        return *v;
    const char **slot = PF_VEC_PUSH(s->seen, s->n, s->cap);
    *slot = str;
    pf_pb_string(s->profile, PROFILE_STRING_TABLE, str);
    if (created)
        *v = s->n - 1;
    return s->n - 1;
}

static void value_type(pf_pb_t *profile, unsigned field, strings_t *s, const char *type, const char *unit)
{
    pf_pb_t vt = {0};
    pf_pb_uint(&vt, VALUETYPE_TYPE, string_index(s, type));
    pf_pb_uint(&vt, VALUETYPE_UNIT, string_index(s, unit));
    pf_pb_message(profile, field, &vt);
    pf_pb_free(&vt);
}

/* The functions (file, function) and the locations (one per frame); fills loc_func for the locations. */
static void functions_and_locations(pf_pb_t *profile, strings_t *s, const pf_model_t *m,
                                    const pf_export_frames_t *f)
{
    pf_map_t funcs = {0};
    uint64_t next_id = 1;
    for (size_t i = 0; i < f->n_frames; i++) {
        const pf_export_frame_t *fr = &f->frames[i];
        uint64_t words[2] = {fr->file, fr->function};
        uint64_t key = pf_hash_words(words, 2, 0xF0) & ~(1ull << 63);
        int created;
        uint64_t *id = pf_map_put(&funcs, key, &created);
        if (created) {
            *id = next_id++;
            const char *name = pf_model_str(m, fr->function);
            pf_pb_t fn = {0};
            pf_pb_uint(&fn, FUNCTION_ID, *id);
            pf_pb_uint(&fn, FUNCTION_NAME, string_index(s, name[0] ? name : "<module>"));
            pf_pb_uint(&fn, FUNCTION_SYSTEM_NAME, string_index(s, name[0] ? name : "<module>"));
            pf_pb_uint(&fn, FUNCTION_FILENAME, string_index(s, pf_model_str(m, fr->file)));
            pf_pb_message(profile, PROFILE_FUNCTION, &fn);
            pf_pb_free(&fn);
        }
        pf_pb_t line = {0}, loc = {0};
        pf_pb_uint(&line, LINE_FUNCTION_ID, *id);
        pf_pb_uint(&line, LINE_LINE, (uint64_t)(int64_t)fr->line);
        pf_pb_uint(&loc, LOCATION_ID, i + 1);
        pf_pb_message(&loc, LOCATION_LINE, &line);
        pf_pb_message(profile, PROFILE_LOCATION, &loc);
        pf_pb_free(&line);
        pf_pb_free(&loc);
    }
    pf_map_free(&funcs);
}

static void samples(pf_pb_t *profile, const pf_model_t *m, const pf_export_frames_t *f)
{
    size_t depth = pf_export_max_depth(m);
    uint32_t *stack = pf_xmalloc(depth * sizeof *stack);
    uint64_t *ids = pf_xmalloc(depth * sizeof *ids);
    for (size_t n = 0; n < m->n_nodes; n++) {
        int64_t w[PF_EXPORT_WEIGHTS];
        pf_export_node_weights(&m->nodes[n], w);
        if (w[0] <= 0 && w[1] <= 0 && w[2] <= 0)
            continue;
        size_t k = pf_export_stack(m, f, (int32_t)n, 0, stack, depth);
        for (size_t i = 0; i < k; i++)
            ids[i] = (uint64_t)stack[i] + 1;
        uint64_t values[PF_EXPORT_WEIGHTS];
        for (int i = 0; i < PF_EXPORT_WEIGHTS; i++)
            values[i] = (uint64_t)w[i];
        pf_pb_t sample = {0};
        pf_pb_packed(&sample, SAMPLE_LOCATION_ID, ids, k);
        pf_pb_packed(&sample, SAMPLE_VALUE, values, PF_EXPORT_WEIGHTS);
        pf_pb_message(profile, PROFILE_SAMPLE, &sample);
        pf_pb_free(&sample);
    }
    free(stack);
    free(ids);
}

/* Writes data gzipped (the on-disk form profile.proto asks for). Returns 0 or -EIO. */
static int write_gzip(FILE *out, const uint8_t *data, size_t len)
{
    z_stream z = {0};
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -EIO;
    uint8_t buf[1 << 16];
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)len;
    int rc;
    do {
        z.next_out = buf;
        z.avail_out = sizeof buf;
        rc = deflate(&z, Z_FINISH);
        if (rc == Z_STREAM_ERROR)
            break;
        fwrite(buf, 1, sizeof buf - z.avail_out, out);
    } while (rc != Z_STREAM_END);
    deflateEnd(&z);
    return rc == Z_STREAM_END && !ferror(out) ? 0 : -EIO;
}

int pf_render_pprof(const pf_model_t *m, FILE *out)
{
    pf_pb_t profile = {0};
    strings_t s = {.profile = &profile};
    string_index(&s, "");
    pf_export_frames_t f;
    pf_export_frames_build(m, &f);
    for (int w = 0; w < PF_EXPORT_WEIGHTS; w++)
        value_type(&profile, PROFILE_SAMPLE_TYPE, &s, pf_export_weight_names[w], "bytes");
    samples(&profile, m, &f);
    functions_and_locations(&profile, &s, m, &f);
    pf_pb_uint(&profile, PROFILE_DURATION_NANOS, (uint64_t)pf_export_whole(m->elapsed_s * 1e9));
    value_type(&profile, PROFILE_PERIOD_TYPE, &s, "space", "bytes");
    pf_pb_uint(&profile, PROFILE_PERIOD, m->exact ? 1 : m->mean_sample_bytes);
    char comment[300];
    snprintf(comment, sizeof comment, "pyflow profile of %s (%s)", m->argc ? m->argv[0] : "?",
             m->exact ? "exact" : "sampled");
    pf_pb_uint(&profile, PROFILE_COMMENT, string_index(&s, comment));
    pf_pb_uint(&profile, PROFILE_DEFAULT_SAMPLE_TYPE, string_index(&s, pf_export_weight_names[0]));
    int rc = write_gzip(out, profile.data, profile.len);
    pf_pb_free(&profile);
    pf_map_free(&s.index);
    free(s.seen);
    pf_export_frames_free(&f);
    return rc;
}
