/* pf_protobuf_int.h - the protocol buffers wire format, writing only (varints and length-delimited
 * fields): all the pprof export needs, without a protobuf library. */
#ifndef PF_PROTOBUF_INT_H
#define PF_PROTOBUF_INT_H

#include <stddef.h>
#include <stdint.h>

typedef struct pf_pb {
    uint8_t *data;
    size_t len, cap;
} pf_pb_t;

void pf_pb_free(pf_pb_t *b);
void pf_pb_varint(pf_pb_t *b, uint64_t v);
/* A varint field (int64 and uint64 alike; a negative int64 takes ten bytes, as protobuf writes it). */
void pf_pb_uint(pf_pb_t *b, unsigned field, uint64_t v);
/* A length-delimited field: a string, bytes, or a message already encoded. */
void pf_pb_bytes(pf_pb_t *b, unsigned field, const void *data, size_t len);
void pf_pb_string(pf_pb_t *b, unsigned field, const char *s);
void pf_pb_message(pf_pb_t *b, unsigned field, const pf_pb_t *msg);
/* A packed repeated varint field. */
void pf_pb_packed(pf_pb_t *b, unsigned field, const uint64_t *v, size_t n);

#endif /* PF_PROTOBUF_INT_H */
