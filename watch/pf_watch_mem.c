/* pf_watch_mem.c - the copies watch makes itself (pf_watch_int.h binds its memcpy and memmove here): plain
 * loops, never libpyflow.so's exported hooks nor a libc call the compiler would make of a loop. */
#include "pf_watch_int.h"

__attribute__((optimize("no-tree-loop-distribute-patterns"))) void *memcpy(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    for (size_t i = 0; i < n; i++)
        d[i] = s[i];
    return dst;
}

__attribute__((optimize("no-tree-loop-distribute-patterns"))) void *memmove(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (d <= s || d >= s + n) {
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
    } else {
        for (size_t i = n; i > 0; i--)
            d[i - 1] = s[i - 1];
    }
    return dst;
}
