/* pf_json_int.h - a small streaming JSON writer: commas and nesting tracked for the caller, strings escaped
 * (quotes, backslash, control characters) and invalid UTF-8 replaced by U+FFFD, so an odd file name can
 * never break the document. Numbers are written as integers when whole, else with %.17g; non-finite
 * values become null. */
#ifndef PF_JSON_INT_H
#define PF_JSON_INT_H

#include <stdio.h>

typedef struct pf_json {
    FILE *out;
    int depth;
    int need_comma[64];
    int after_key;
} pf_json_t;

void pf_json_init(pf_json_t *j, FILE *out);
void pf_json_begin_object(pf_json_t *j);
void pf_json_end_object(pf_json_t *j);
void pf_json_begin_array(pf_json_t *j);
void pf_json_end_array(pf_json_t *j);
void pf_json_key(pf_json_t *j, const char *key);
void pf_json_string(pf_json_t *j, const char *s);
void pf_json_number(pf_json_t *j, double v);
void pf_json_int(pf_json_t *j, long long v);
void pf_json_bool(pf_json_t *j, int v);
void pf_json_null(pf_json_t *j);

/* Writes s as a JSON string literal (with quotes) to out. */
void pf_json_write_string(FILE *out, const char *s);

#endif /* PF_JSON_INT_H */
