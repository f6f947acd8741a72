/* pf_json.c - see pf_json_int.h. */
#include "pf_json_int.h"
#include "pf_util_int.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

void pf_json_init(pf_json_t *j, FILE *out)
{
    memset(j, 0, sizeof *j);
    j->out = out;
}

/* Separates a value from the previous one at this depth (unless it follows a key). */
static void value_prefix(pf_json_t *j)
{
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (j->need_comma[j->depth])
        fputc(',', j->out);
    j->need_comma[j->depth] = 1;
}

static void open_(pf_json_t *j, char c)
{
    value_prefix(j);
    fputc(c, j->out);
    if (j->depth < 63)
        j->depth++;
    j->need_comma[j->depth] = 0;
}

static void close_(pf_json_t *j, char c)
{
    if (j->depth > 0)
        j->depth--;
    fputc(c, j->out);
}

void pf_json_begin_object(pf_json_t *j) { open_(j, '{'); }
void pf_json_end_object(pf_json_t *j) { close_(j, '}'); }
void pf_json_begin_array(pf_json_t *j) { open_(j, '['); }
void pf_json_end_array(pf_json_t *j) { close_(j, ']'); }

void pf_json_key(pf_json_t *j, const char *key)
{
    value_prefix(j);
    pf_json_write_string(j->out, key);
    fputc(':', j->out);
    j->after_key = 1;
}

void pf_json_write_string(FILE *out, const char *str)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    fputc('"', out);
    while (*s) {
        unsigned c = *s;
        if (c == '"' || c == '\\') {
            fputc('\\', out);
            fputc((int)c, out);
            s++;
        } else if (c < 0x20) {
            switch (c) {
            case '\n': fputs("\\n", out); break;
            case '\r': fputs("\\r", out); break;
            case '\t': fputs("\\t", out); break;
            default: fprintf(out, "\\u%04x", c); break;
            }
            s++;
        } else if (c < 0x80) {
            fputc((int)c, out);
            s++;
        } else {
            size_t n = pf_utf8_seq(s, strnlen((const char *)s, 4));
            if (n == 0) {
                fputs("\\ufffd", out);
                s++;
            } else {
                fwrite(s, 1, n, out);
                s += n;
            }
        }
    }
    fputc('"', out);
}

void pf_json_string(pf_json_t *j, const char *s)
{
    value_prefix(j);
    pf_json_write_string(j->out, s);
}

void pf_json_number(pf_json_t *j, double v)
{
    value_prefix(j);
    if (!isfinite(v))
        fputs("null", j->out);
    else if (v == floor(v) && fabs(v) < 9e15)
        fprintf(j->out, "%.0f", v);
    else
        fprintf(j->out, "%.17g", v);
}

void pf_json_int(pf_json_t *j, long long v)
{
    value_prefix(j);
    fprintf(j->out, "%lld", v);
}

void pf_json_bool(pf_json_t *j, int v)
{
    value_prefix(j);
    fputs(v ? "true" : "false", j->out);
}

void pf_json_null(pf_json_t *j)
{
    value_prefix(j);
    fputs("null", j->out);
}
