/* pf_watch_value.c - the pure parts of the watch engine: comparing the value of a watched word before and
 * after the repeating access, the reservoir choice of which slot a new sample takes, and the encoding of
 * a resolved pair into a PF_REC_ACCESS_PAIR record. Kept apart from the signal handling so unit tests can
 * check them on any machine.
 */
#include "pf_watch_int.h"

#include <math.h>
#include <string.h>

static int close_enough(double a, double b, double tol)
{
    if (isnan(a) || isnan(b))
        return 0;       /* NaN payloads compare bitwise only */
    if (a == b)
        return 1;
    double scale = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return fabs(a - b) <= tol * scale;
}

unsigned pf_watch_value_same(const uint8_t *a, const uint8_t *b, uint32_t len, uint32_t float_elem,
                             double rel_tol)
{
    if (memcmp(a, b, len) == 0)
        return PF_ACCESS_REDUNDANT;
    if (!(float_elem == 4 || float_elem == 8) || len % float_elem != 0 || rel_tol <= 0)
        return 0;
    for (uint32_t off = 0; off < len; off += float_elem) {
        double x, y;
        if (float_elem == 8) {
            memcpy(&x, a + off, 8);
            memcpy(&y, b + off, 8);
        } else {
            float fx, fy;
            memcpy(&fx, a + off, 4);
            memcpy(&fy, b + off, 4);
            x = fx;
            y = fy;
        }
        if (!close_enough(x, y, rel_tol))
            return 0;
    }
    return PF_ACCESS_REDUNDANT | PF_ACCESS_APPROX;
}

int pf_watch_reservoir_pick(uint64_t *rng, uint32_t n)
{
    /* xorshift64: handler-safe, no state but the thread's word */
    uint64_t x = *rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *rng = x;
    /* probability 1/(1+n): uniform in [0, 1+n) hits 0 */
    return (x % ((uint64_t)n + 1)) == 0;
}

uint32_t pf_watch_pair_bytes(const pf_watch_pair_t *p)
{
    uint32_t n = 8 + (uint32_t)(p->kind == PF_WATCH_KIND_COPY_WRITE ? sizeof(pf_rec_copy_write_t)
                                                                     : sizeof(pf_rec_access_pair_t));
    if (p->first_valid)
        n += p->first.n_py * (uint32_t)sizeof(pf_rec_pyframe_t) + p->first.n_native * 8u;
    n += p->repeat.n_py * (uint32_t)sizeof(pf_rec_pyframe_t) + p->repeat.n_native * 8u;
    return pf_align8(n);
}

static uint8_t *put_ctx_py(uint8_t *dst, const pf_watch_ctx_t *c,
                           uint32_t (*code_id)(void *ctx, const void *code), void *ctx)
{
    for (unsigned i = 0; i < c->n_py; i++) {
        pf_rec_pyframe_t f;
        f.code_id = code_id ? code_id(ctx, c->py[i].code) : 0;
        f.lasti_bytes = c->py[i].lasti_bytes;
        memcpy(dst, &f, sizeof f);
        dst += sizeof f;
    }
    return dst;
}

static void prepare_ctx(const pf_watch_ctx_t *c, const pf_watch_sink_t *sink)
{
    for (unsigned i = 0; i < c->n_py && sink->code_id; i++)
        sink->code_id(sink->ctx, c->py[i].code);
    if (sink->note_native && c->n_native)
        sink->note_native(sink->ctx, c->native, c->n_native);
}

void pf_watch_pair_prepare(const pf_watch_pair_t *p, const pf_watch_sink_t *sink)
{
    if (p->first_valid)
        prepare_ctx(&p->first, sink);
    prepare_ctx(&p->repeat, sink);
}

void pf_watch_pair_encode(const pf_watch_pair_t *p, void *rec,
                          uint32_t (*code_id)(void *ctx, const void *code), void *ctx)
{
    uint32_t bytes = pf_watch_pair_bytes(p);
    uint8_t *base = rec;
    memset(base + 8, 0, bytes - 8);
    if (p->kind == PF_WATCH_KIND_COPY_WRITE) {
        pf_rec_copy_write_t w;
        memset(&w, 0, sizeof w);
        w.t_ns = p->t_ns;
        w.copy_id = p->copy_id;
        w.addr = p->addr;
        w.len = p->len;
        w.flags = p->flags;
        w.n_py = p->repeat.n_py;
        w.n_native = p->repeat.n_native;
        memcpy(base + 8, &w, sizeof w);
        uint8_t *d = put_ctx_py(base + 8 + sizeof w, &p->repeat, code_id, ctx);
        memcpy(d, p->repeat.native, p->repeat.n_native * 8u);
        return;
    }
    pf_rec_access_pair_t h;
    memset(&h, 0, sizeof h);
    h.t_ns = p->t_ns;
    h.addr = p->addr;
    h.credited_bytes = p->credited;
    h.len = p->len;
    h.flags = p->flags;
    if (p->first_valid) {
        h.n_py_first = p->first.n_py;
        h.n_native_first = p->first.n_native;
    }
    h.n_py_repeat = p->repeat.n_py;
    h.n_native_repeat = p->repeat.n_native;
    memcpy(base + 8, &h, sizeof h);
    uint8_t *d = base + 8 + sizeof h;
    if (p->first_valid) {
        d = put_ctx_py(d, &p->first, code_id, ctx);
        memcpy(d, p->first.native, p->first.n_native * 8u);
        d += p->first.n_native * 8u;
    }
    d = put_ctx_py(d, &p->repeat, code_id, ctx);
    memcpy(d, p->repeat.native, p->repeat.n_native * 8u);
}
