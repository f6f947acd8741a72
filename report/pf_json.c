/* pf_json.c - see pf_json_int.h. */
#include "pf_json_int.h"

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

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when invalid. */
static int utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    int n;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0)
        n = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0)
        n = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0)
        n = 4, cp = c & 0x07;
    else
        return 0;
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;   /* overlong, out of range, or a surrogate */
    return n;
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
            int n = utf8_len(s);
            if (n == 0) {
                fputs("\\ufffd", out);
                s++;
            } else {
                fwrite(s, 1, (size_t)n, out);
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
