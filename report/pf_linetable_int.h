/* pf_linetable_int.h - turns (code object's line table, instruction offset) into a line number, offline,
 * for the three encodings CPython 3.8-3.13 use (pf_linetable_format_t in core/pf_format.h). */
#ifndef PF_LINETABLE_INT_H
#define PF_LINETABLE_INT_H

#include <stddef.h>
#include <stdint.h>

/* Returns the source line of the instruction at lasti_bytes. When the table says "no line" there (or is
 * cut short, or the format is unknown), returns the last line seen before it, or firstlineno. Never reads
 * past len. */
int pf_linetable_line(uint32_t format, const uint8_t *table, size_t len, int firstlineno, uint32_t lasti_bytes);

/* A table decoded once, for a code object asked about at many offsets (a module's body, a large
 * function: each pf_linetable_line walks the table from its start): the line of every range of offsets
 * the table names, in order, and the line past them. pf_linetable_index_line gives what pf_linetable_line
 * gives, for every offset, by a binary search. */
typedef struct pf_linetable_index {
    uint32_t n;
    uint32_t *ends;     /* range i is [ends[i - 1] (0 for i = 0), ends[i]) */
    int *lines;
    int tail;           /* the line of offsets from ends[n - 1] on */
} pf_linetable_index_t;

pf_linetable_index_t *pf_linetable_index_new(uint32_t format, const uint8_t *table, size_t len, int firstlineno);
int pf_linetable_index_line(const pf_linetable_index_t *ix, uint32_t lasti_bytes);
void pf_linetable_index_free(pf_linetable_index_t *ix);

#endif /* PF_LINETABLE_INT_H */
