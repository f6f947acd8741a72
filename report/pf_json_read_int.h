/* pf_json_read_int.h - a small JSON reader (RFC 8259) into a tree, for `pyflow diff` to read the JSON
 * report back. Strict: a malformed document is refused with the byte offset, never half read. */
#ifndef PF_JSON_READ_INT_H
#define PF_JSON_READ_INT_H

#include <stddef.h>

typedef enum { PF_JV_NULL, PF_JV_BOOL, PF_JV_NUMBER, PF_JV_STRING, PF_JV_ARRAY, PF_JV_OBJECT } pf_jv_kind_t;

typedef struct pf_jv {
    pf_jv_kind_t kind;
    double number;              /* NUMBER, BOOL (0 or 1) */
    char *string;               /* STRING (UTF-8, NUL-terminated; an escaped NUL ends it early) */
    struct pf_jv *items;        /* ARRAY and OBJECT: the values */
    char **keys;                /* OBJECT: the keys, in order */
    size_t n;
} pf_jv_t;

/* Parses text[0..len). Returns 0 and fills *out, or -1 with a sentence in err (with the byte offset). */
int pf_jv_parse(const char *text, size_t len, pf_jv_t *out, char *err, size_t errlen);
void pf_jv_free(pf_jv_t *v);

/* Member `key` of an object (NULL when absent or v is not an object). */
const pf_jv_t *pf_jv_get(const pf_jv_t *v, const char *key);
/* Its number (0 when absent or not a number) and its string ("" when absent or not a string). */
double pf_jv_num(const pf_jv_t *v, const char *key);
/* Its number as an int, rounded toward zero and clamped to [INT_MIN, INT_MAX] (0: absent, NaN). */
int pf_jv_int(const pf_jv_t *v, const char *key);
const char *pf_jv_str(const pf_jv_t *v, const char *key);

#endif /* PF_JSON_READ_INT_H */
