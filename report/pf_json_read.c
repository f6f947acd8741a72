/* pf_json_read.c - a small JSON reader (pf_json_read_int.h): recursive descent, depth-limited. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_json_read_int.h"
#include "pf_util_int.h"

#define MAX_DEPTH 256

typedef struct parser {
    const char *s;
    size_t len, pos;
    char *err;
    size_t errlen;
    int failed;
} parser_t;

static int fail(parser_t *p, const char *what)
{
    if (!p->failed)
        snprintf(p->err, p->errlen, "%s at byte %zu", what, p->pos);
    p->failed = 1;
    return -1;
}

static void ws(parser_t *p)
{
    while (p->pos < p->len && strchr(" \t\r\n", p->s[p->pos]) && p->s[p->pos])
        p->pos++;
}

static int literal(parser_t *p, const char *word)
{
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
        return fail(p, "invalid JSON value");
    p->pos += n;
    return 0;
}

static void put_utf8(char *out, size_t *o, unsigned cp)
{
    if (cp < 0x80) {
        out[(*o)++] = (char)cp;
    } else if (cp < 0x800) {
        out[(*o)++] = (char)(0xC0 | cp >> 6);
        out[(*o)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out[(*o)++] = (char)(0xE0 | cp >> 12);
        out[(*o)++] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[(*o)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        out[(*o)++] = (char)(0xF0 | cp >> 18);
        out[(*o)++] = (char)(0x80 | (cp >> 12 & 0x3F));
        out[(*o)++] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[(*o)++] = (char)(0x80 | (cp & 0x3F));
    }
}

static int hex4(parser_t *p, unsigned *cp)
{
    if (p->len - p->pos < 4)
        return fail(p, "truncated \\u escape");
    *cp = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[p->pos++];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return fail(p, "invalid \\u escape");
        *cp = *cp << 4 | (unsigned)d;
    }
    return 0;
}

static int string(parser_t *p, char **out)
{
    p->pos++;   /* the opening quote */
    size_t start = p->pos;
    while (p->pos < p->len && p->s[p->pos] != '"')
        p->pos += p->s[p->pos] == '\\' ? 2 : 1;
    if (p->pos >= p->len)
        return fail(p, "unterminated string");
    size_t end = p->pos;
    char *buf = pf_xmalloc(end - start + 1), *w = buf;
    size_t o = 0;
    p->pos = start;
    while (p->pos < end) {
        unsigned char c = (unsigned char)p->s[p->pos++];
        if (c < 0x20) {
            free(buf);
            return fail(p, "control character in string");
        }
        if (c != '\\') {
            w[o++] = (char)c;
            continue;
        }
        char e = p->s[p->pos++];
        const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
        const char *k = strchr(from, e);
        if (e && k) {
            w[o++] = to[k - from];
        } else if (e == 'u') {
            unsigned cp;
            if (hex4(p, &cp) != 0) {
                free(buf);
                return -1;
            }
            if (cp >= 0xD800 && cp < 0xDC00 && p->pos + 6 <= end && p->s[p->pos] == '\\' && p->s[p->pos + 1] == 'u') {
                unsigned lo;
                p->pos += 2;
                if (hex4(p, &lo) != 0) {
                    free(buf);
                    return -1;
                }
                cp = lo >= 0xDC00 && lo < 0xE000 ? 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00) : 0xFFFD;
            } else if (cp >= 0xD800 && cp < 0xE000) {
                cp = 0xFFFD;
            }
            put_utf8(w, &o, cp);   /* never longer than the escape it replaces */
        } else {
            free(buf);
            return fail(p, "invalid escape in string");
        }
    }
    w[o] = '\0';
    p->pos = end + 1;
    *out = buf;
    return 0;
}

static int value(parser_t *p, pf_jv_t *v, int depth);

static int push(parser_t *p, pf_jv_t *v, size_t *cap, int depth)
{
    if (v->n == *cap) {
        *cap = *cap ? *cap * 2 : 4;
        v->items = pf_xrealloc(v->items, *cap * sizeof *v->items);
        if (v->kind == PF_JV_OBJECT)
            v->keys = pf_xrealloc(v->keys, *cap * sizeof *v->keys);
    }
    memset(&v->items[v->n], 0, sizeof v->items[v->n]);
    if (v->kind == PF_JV_OBJECT)
        v->keys[v->n] = NULL;
    v->n++;
    return value(p, &v->items[v->n - 1], depth + 1);
}

static int container(parser_t *p, pf_jv_t *v, int depth)
{
    int object = p->s[p->pos] == '{';
    char close = object ? '}' : ']';
    v->kind = object ? PF_JV_OBJECT : PF_JV_ARRAY;
    size_t cap = 0;
    p->pos++;
    ws(p);
    if (p->pos < p->len && p->s[p->pos] == close) {
        p->pos++;
        return 0;
    }
    for (;;) {
        char *key = NULL;
        if (object) {
            ws(p);
            if (p->pos >= p->len || p->s[p->pos] != '"')
                return fail(p, "expected a string key");
            if (string(p, &key) != 0)
                return -1;
            ws(p);
            if (p->pos >= p->len || p->s[p->pos] != ':') {
                free(key);
                return fail(p, "expected ':'");
            }
            p->pos++;
        }
        int rc = push(p, v, &cap, depth);
        if (object)
            v->keys[v->n - 1] = key;
        if (rc != 0)
            return -1;
        ws(p);
        if (p->pos < p->len && p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->len && p->s[p->pos] == close) {
            p->pos++;
            return 0;
        }
        return fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int value(parser_t *p, pf_jv_t *v, int depth)
{
    if (depth > MAX_DEPTH)
        return fail(p, "JSON nested too deeply");
    ws(p);
    if (p->pos >= p->len)
        return fail(p, "unexpected end of JSON");
    char c = p->s[p->pos];
    if (c == '{' || c == '[')
        return container(p, v, depth);
    if (c == '"') {
        v->kind = PF_JV_STRING;
        return string(p, &v->string);
    }
    if (c == 't' || c == 'f') {
        v->kind = PF_JV_BOOL;
        v->number = c == 't';
        return literal(p, c == 't' ? "true" : "false");
    }
    if (c == 'n') {
        v->kind = PF_JV_NULL;
        return literal(p, "null");
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        char buf[64];
        size_t n = 0;
        while (p->pos < p->len && n < sizeof buf - 1 && strchr("+-0123456789.eE", p->s[p->pos]) && p->s[p->pos])
            buf[n++] = p->s[p->pos++];
        buf[n] = '\0';
        char *end;
        v->kind = PF_JV_NUMBER;
        v->number = strtod(buf, &end);
        return *end ? fail(p, "invalid number") : 0;
    }
    return fail(p, "invalid JSON value");
}

int pf_jv_parse(const char *text, size_t len, pf_jv_t *out, char *err, size_t errlen)
{
    parser_t p = {.s = text, .len = len, .err = err, .errlen = errlen};
    memset(out, 0, sizeof *out);
    if (value(&p, out, 0) == 0) {
        ws(&p);
        if (p.pos == p.len)
            return 0;
        fail(&p, "trailing data after the JSON document");
    }
    pf_jv_free(out);
    return -1;
}

void pf_jv_free(pf_jv_t *v)
{
    for (size_t i = 0; i < v->n; i++) {
        pf_jv_free(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
    memset(v, 0, sizeof *v);
}

const pf_jv_t *pf_jv_get(const pf_jv_t *v, const char *key)
{
    if (!v || v->kind != PF_JV_OBJECT)
        return NULL;
    for (size_t i = 0; i < v->n; i++)
        if (v->keys[i] && strcmp(v->keys[i], key) == 0)
            return &v->items[i];
    return NULL;
}

double pf_jv_num(const pf_jv_t *v, const char *key)
{
    const pf_jv_t *m = pf_jv_get(v, key);
    return m && m->kind == PF_JV_NUMBER ? m->number : 0;
}

int pf_jv_int(const pf_jv_t *v, const char *key)
{
    double d = pf_jv_num(v, key);
    if (!(d == d))
        return 0;
    return d >= (double)INT_MAX ? INT_MAX : d <= (double)INT_MIN ? INT_MIN : (int)d;
}

const char *pf_jv_str(const pf_jv_t *v, const char *key)
{
    const pf_jv_t *m = pf_jv_get(v, key);
    return m && m->kind == PF_JV_STRING && m->string ? m->string : "";
}
