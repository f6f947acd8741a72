/* test_rec_memcpy.h - the recorder's memcpy (pf_rec_int.h) for unit tests that link recorder sources
 * without the runtime: a plain byte loop. Include it in one translation unit of the test. */
#ifndef TEST_REC_MEMCPY_H
#define TEST_REC_MEMCPY_H

#include <stddef.h>

__attribute__((visibility("hidden"))) void *pf_rec_memcpy(void *dst, const void *src, size_t n);
void *pf_rec_memcpy(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    while (n--)
        *d++ = *s++;
    return dst;
}

#endif /* TEST_REC_MEMCPY_H */
