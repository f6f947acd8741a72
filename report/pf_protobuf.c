/* pf_protobuf.c - protocol buffers wire format, writing (pf_protobuf_int.h). */
#include <stdlib.h>
#include <string.h>

#include "pf_protobuf_int.h"
#include "pf_util_int.h"

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

void pf_pb_free(pf_pb_t *b)
{
    free(b->data);
    *b = (pf_pb_t){0};
}

static void append(pf_pb_t *b, const void *data, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        b->data = pf_xrealloc(b->data, cap);
        b->cap = cap;
    }
    if (n)
        memcpy(b->data + b->len, data, n);
    b->len += n;
}

void pf_pb_varint(pf_pb_t *b, uint64_t v)
{
    uint8_t buf[10];
    size_t n = 0;
    do {
        buf[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    append(b, buf, n);
}

static void key(pf_pb_t *b, unsigned field, unsigned wire)
{
    pf_pb_varint(b, (uint64_t)field << 3 | wire);
}

void pf_pb_uint(pf_pb_t *b, unsigned field, uint64_t v)
{
    key(b, field, WIRE_VARINT);
    pf_pb_varint(b, v);
}

void pf_pb_bytes(pf_pb_t *b, unsigned field, const void *data, size_t len)
{
    key(b, field, WIRE_LEN);
    pf_pb_varint(b, len);
    append(b, data, len);
}

void pf_pb_string(pf_pb_t *b, unsigned field, const char *s)
{
    pf_pb_bytes(b, field, s, strlen(s));
}

void pf_pb_message(pf_pb_t *b, unsigned field, const pf_pb_t *msg)
{
    pf_pb_bytes(b, field, msg->data, msg->len);
}

void pf_pb_packed(pf_pb_t *b, unsigned field, const uint64_t *v, size_t n)
{
    pf_pb_t body = {0};
    for (size_t i = 0; i < n; i++)
        pf_pb_varint(&body, v[i]);
    pf_pb_message(b, field, &body);
    pf_pb_free(&body);
}
