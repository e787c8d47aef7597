/* sample.h - realistic messages of every type for the proto tests, the garble test, the fuzz
 * seeds and the benchmark. Every pointer in a sample is allocated through mem_*, so
 * proto_msg_close() frees it. */
#ifndef PADDOCK_TESTS_PROTO_SAMPLE_H
#define PADDOCK_TESTS_PROTO_SAMPLE_H

#include "proto/proto.h"
#include "proto/schema.h"

enum sample_variant {
    SAMPLE_TYPICAL, /* every field set, a few entries in each array */
    SAMPLE_MINIMAL, /* required fields only, zero or negative where allowed */
};

/* Fills *msg (caller-owned struct) with a valid message of `type`. */
void sample_msg(proto_msg_t *msg, proto_type_t type, enum sample_variant variant);

/* Fills an n x m matrix with increasing bounds and varied cells. */
void sample_matrix(proto_matrix_t *mx, uint32_t ncpu, uint32_t nmem, int64_t ts);

/* A view node named pn-<i>; `typical` sets every field, else required ones only. */
void sample_view_node(proto_view_node_t *n, uint32_t i, int typical);

/* A mem_* allocated string of `len` bytes (letters, no NUL). */
char *sample_str(size_t len, char fill);

/* Deep comparison of two bodies of schema `s`: 1 if every field is equal. On a difference,
 * writes the field into why. */
int sample_equal(const proto__schema_t *s, const void *a, const void *b, char *why, size_t cap);

/* Deep comparison of two messages (type, req_id and body). */
int sample_msg_equal(const proto_msg_t *a, const proto_msg_t *b, char *why, size_t cap);

#endif
