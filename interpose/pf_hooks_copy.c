/* pf_hooks_copy.c - the memcpy family, interposed to see data moving between objects.
 *
 * Most calls copy a few bytes (CPython copies small strings and tuples all the time), so the hook is the
 * real copy plus one subtraction on a per-thread countdown: copies are sampled by bytes exactly like
 * allocations (pf_sampler.h), so copy volume per line is an unbiased estimate and copies at or above the
 * copy threshold are always recorded. The copy happens first; the slow path then looks at it.
 */
#include "pf_hooks_int.h"

static inline void note_copy(void *dst, const void *src, size_t n, int kind)
{
    pf_tls_t *t = &pf_tls;
    if (PF_UNLIKELY((t->copy_sampler.countdown -= (int64_t)n) <= 0))
        pf_on_copy_slow(t, dst, src, n, kind);
}

PF_EXPORT void *memcpy(void *dst, const void *src, size_t n)
{
    void *r = pf_real.memcpy(dst, src, n);
    note_copy(dst, src, n, PF_COPY_MEMCPY);
    return r;
}

PF_EXPORT void *memmove(void *dst, const void *src, size_t n)
{
    void *r = pf_real.memmove(dst, src, n);
    note_copy(dst, src, n, PF_COPY_MEMMOVE);
    return r;
}

PF_EXPORT void *mempcpy(void *dst, const void *src, size_t n)
{
    void *r = pf_real.mempcpy(dst, src, n);
    note_copy(dst, src, n, PF_COPY_MEMCPY);
    return r;
}

PF_EXPORT void *__memcpy_chk(void *dst, const void *src, size_t n, size_t dst_len)
{
    void *r = pf_real.memcpy_chk(dst, src, n, dst_len);
    note_copy(dst, src, n, PF_COPY_MEMCPY);
    return r;
}

PF_EXPORT void *__memmove_chk(void *dst, const void *src, size_t n, size_t dst_len)
{
    void *r = pf_real.memmove_chk(dst, src, n, dst_len);
    note_copy(dst, src, n, PF_COPY_MEMMOVE);
    return r;
}

PF_SELF_ALIAS(memcpy)
PF_SELF_ALIAS(memmove)
PF_SELF_ALIAS(mempcpy)
PF_SELF_ALIAS(__memcpy_chk)
PF_SELF_ALIAS(__memmove_chk)
