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

#endif /* PF_LINETABLE_INT_H */
