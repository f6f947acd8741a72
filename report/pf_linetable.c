/* pf_linetable.c - CPython line tables, decoded the way each version's PyCode_Addr2Line walks them.
 *   3.9  co_lnotab: (address increment, signed line increment) byte pairs; byte offsets.
 *   3.10 co_linetable (PEP 626): (byte length, signed line delta) pairs; -128 = no line; byte offsets.
 *   3.11+ location table (PEP 657): entries of 1..8 code units; a first byte 1CCCCLLL (code, length-1)
 *        then code-dependent varints; code 15 = no location; 13/14 carry a signed line delta, 10-12 a
 *        delta of 0-2, others keep the line.
 */
#include "pf_linetable_int.h"

#include "pf_format.h"

#include <limits.h>
#include <stdlib.h>

#include "pf_util_int.h"

/* line + delta, saturated: a corrupt profile's first line number can sit next to INT_MAX (signed overflow
 * is undefined behaviour; found by tests/fuzz). */
static int line_add(int line, int delta)
{
    long long v = (long long)line + delta;
    return v > INT_MAX ? INT_MAX : v < INT_MIN ? INT_MIN : (int)v;
}

/* Reads an unsigned varint of 6-bit chunks (bit 6 = more). Returns the value; advances *i. */
static uint32_t read_varint(const uint8_t *t, size_t len, size_t *i)
{
    uint32_t v = 0;
    unsigned shift = 0;
    while (*i < len) {
        uint8_t b = t[(*i)++];
        v |= (uint32_t)(b & 63) << shift;
        shift += 6;
        if (!(b & 64) || shift > 30)
            break;
    }
    return v;
}

static int read_svarint(const uint8_t *t, size_t len, size_t *i)
{
    uint32_t v = read_varint(t, len, i);
    return (v & 1) ? -(int)(v >> 1) : (int)(v >> 1);
}

/* Each format's table is walked the way its PyCode_Addr2Line walks it, as consecutive ranges of offsets
 * from 0: visit(ctx, end, line) for each range [the previous end, end) and the line of its offsets; a
 * visit returning nonzero stops the walk. Returns the line of every offset past the last range. The
 * lookup (pf_linetable_line) stops at the range holding its offset; the index keeps every range. */
typedef int (*range_fn)(void *ctx, uint32_t end, int line);

/* 3.9 lnotab: offsets below an entry's address have the line before its increment */
static inline int lnotab_walk(const uint8_t *t, size_t len, int first, range_fn visit, void *ctx)
{
    int line = first;
    uint32_t addr = 0;
    for (size_t i = 0; i + 1 < len; i += 2) {
        uint32_t next = addr + t[i];
        if (next > addr && visit(ctx, next, line))
            return line;
        addr = next;
        line = line_add(line, (int8_t)t[i + 1]);
    }
    return line;
}

/* 3.10 linetable: a "no line" entry (-128) has the last line seen before it */
static inline int linetable310_walk(const uint8_t *t, size_t len, int first, range_fn visit, void *ctx)
{
    int computed = first, last_valid = first;
    uint32_t start, end = 0;
    for (size_t i = 0; i + 1 < len; i += 2) {
        start = end;
        end += t[i];
        int8_t ldelta = (int8_t)t[i + 1];
        int line = -1;
        if (ldelta != -128) {
            computed = line_add(computed, ldelta);
            line = computed;
        }
        if (start == end)
            continue;
        if (visit(ctx, end, line >= 0 ? line : last_valid))
            return last_valid;
        if (line >= 0)
            last_valid = line;
    }
    return last_valid;
}

/* 3.11+ locations */
static inline int locations_walk(const uint8_t *t, size_t len, int first, range_fn visit, void *ctx)
{
    int computed = first, last_valid = first;
    uint32_t end = 0;
    size_t i = 0;
    while (i < len) {
        uint8_t head = t[i];
        if (!(head & 128))
            break;  /* not at an entry start: corrupt or cut table */
        int code = (head >> 3) & 15;
        end += (uint32_t)((head & 7) + 1) * 2;
        size_t j = i + 1;
        int delta = 0;
        if (code == 13 || code == 14)
            delta = read_svarint(t, len, &j);
        else if (code >= 10 && code <= 12)
            delta = code - 10;
        computed = line_add(computed, delta);
        int line = code == 15 ? -1 : computed;
        if (visit(ctx, end, line >= 0 ? line : last_valid))
            return last_valid;
        if (line >= 0)
            last_valid = line;
        /* skip to the next entry start */
        i++;
        while (i < len && !(t[i] & 128))
            i++;
    }
    return last_valid;
}

static inline int walk(uint32_t format, const uint8_t *table, size_t len, int first, range_fn visit, void *ctx)
{
    if (!table)
        return first;
    switch (format) {
    case PF_LT_LNOTAB:
        return lnotab_walk(table, len, first, visit, ctx);
    case PF_LT_LINETABLE:
        return linetable310_walk(table, len, first, visit, ctx);
    case PF_LT_LOCATIONS:
        return locations_walk(table, len, first, visit, ctx);
    default:
        return first;
    }
}

/* ---- one offset: the walk stops at its range ---- */

typedef struct lookup {
    uint32_t lasti;
    int found, line;
} lookup_t;

static int stop_at_offset(void *ctx, uint32_t end, int line)
{
    lookup_t *q = ctx;
    if (q->lasti >= end)
        return 0;
    q->found = 1;
    q->line = line;
    return 1;
}

int pf_linetable_line(uint32_t format, const uint8_t *table, size_t len, int firstlineno, uint32_t lasti_bytes)
{
    lookup_t q = {lasti_bytes, 0, 0};
    int tail = walk(format, table, len, firstlineno, stop_at_offset, &q);
    return q.found ? q.line : tail;
}

/* ---- the index: every range, kept ---- */

typedef struct building {
    pf_linetable_index_t *ix;
    size_t cap;
} building_t;

static int keep_range(void *ctx, uint32_t end, int line)
{
    building_t *b = ctx;
    pf_linetable_index_t *ix = b->ix;
    if (ix->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 16;
        ix->ends = pf_xrealloc(ix->ends, b->cap * sizeof *ix->ends);
        ix->lines = pf_xrealloc(ix->lines, b->cap * sizeof *ix->lines);
    }
    ix->ends[ix->n] = end;
    ix->lines[ix->n++] = line;
    return 0;
}

pf_linetable_index_t *pf_linetable_index_new(uint32_t format, const uint8_t *table, size_t len, int firstlineno)
{
    pf_linetable_index_t *ix = pf_xcalloc(1, sizeof *ix);
    building_t b = {ix, 0};
    ix->tail = walk(format, table, len, firstlineno, keep_range, &b);
    return ix;
}

int pf_linetable_index_line(const pf_linetable_index_t *ix, uint32_t lasti_bytes)
{
    uint32_t lo = 0, hi = ix->n;    /* the first range ending past lasti_bytes */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ix->ends[mid] <= lasti_bytes)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ix->n ? ix->lines[lo] : ix->tail;
}

void pf_linetable_index_free(pf_linetable_index_t *ix)
{
    if (!ix)
        return;
    free(ix->ends);
    free(ix->lines);
    free(ix);
}
