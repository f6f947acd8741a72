/* pf_report_int.h - derived figures shared by the renderers, so text and JSON never disagree. */
#ifndef PF_REPORT_INT_H
#define PF_REPORT_INT_H

#include <stddef.h>

#include "pf_model_int.h"

/* Row indexes sorted by allocated bytes (then peak share), largest first. Caller frees. */
size_t *pf_report_line_order(const pf_model_t *m);
size_t *pf_report_func_order(const pf_model_t *m);

/* Bytes copied per second over the span in which the row had events (at least 1 ms). */
double pf_report_copy_rate(const pf_stats_t *s);

/* Likelihood (0-1) that what a row holds at exit is a leak: Laplace's rule on its recorded allocations
 * never freed, times the Mann-Kendall trend of its live bytes over the run. Reported at >= 0.5. */
#define PF_LEAK_REPORT_THRESHOLD 0.5
double pf_report_leak_likelihood(const pf_stats_t *s);

/* A flow is reported redundant when most of its judged copies were. */
int pf_report_flow_redundant(const pf_flow_t *f);

/* The text of a source line, trimmed (at most 511 bytes; "" when the file cannot be read). The result is
 * overwritten by the next call. */
const char *pf_report_source_line(const char *file, int lineno);

/* The JSON / Graphviz name of a pf_copy_kind_t: "copy", "realloc", "h2d", "d2h", "d2d", "h2h". */
const char *pf_report_copy_kind_name(unsigned kind);

#endif /* PF_REPORT_INT_H */
