/* schema.h - internal to proto/: one field table per message body, driving encode, decode,
 * free and the checks both ends share. Not for use outside proto/ (tests excepted).
 *
 * Each body struct is described by an array of proto__field_t: the wire key, the C member
 * (offset), the kind, whether it is required, and its bounds. A schema may add a check
 * function for rules across fields (snapshot part < parts, argv[0] non-empty). The encoder
 * and the decoder run the same checks, so an encoded message always decodes.
 */
#ifndef PADDOCK_PROTO_SCHEMA_H
#define PADDOCK_PROTO_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "proto/proto.h"

typedef enum {
    PROTO__BOOL,    /* bool */
    PROTO__U32,     /* uint32_t (also the enums), umin..umax */
    PROTO__U64,     /* uint64_t, umin..umax */
    PROTO__I32,     /* int32_t, imin..imax */
    PROTO__I64,     /* int64_t, imin..imax */
    PROTO__F64,     /* double, finite, dmin..dmax */
    PROTO__STR,     /* char *, length umin..umax bytes, no NUL */
    PROTO__STRS,    /* char ** + uint32_t count at count_off, count umin..umax, each <= item_max */
    PROTO__KVS,     /* proto_kv_t * + count; wire: map str -> str; keys <= PROTO_MAX_ENV_KEY */
    PROTO__STRUCTS, /* array of sub->size structs + count; wire: array of maps */
    PROTO__MATRIX,  /* proto_matrix_t inline */
    PROTO__BIN,     /* uint8_t * + uint32_t count at count_off, umin..umax bytes; wire: bin */
} proto__kind_t;

struct proto__schema;

typedef struct proto__field {
    const char *key;
    uint32_t keylen;
    proto__kind_t kind;
    int required;
    size_t off;
    size_t count_off;
    uint64_t umin, umax;
    int64_t imin, imax;
    double dmin, dmax;
    uint32_t item_max;
    const struct proto__schema *sub;
} proto__field_t;

typedef struct proto__schema {
    const char *name;
    size_t size;
    const proto__field_t *fields;
    uint32_t nfields;
    /* Rules across fields; returns 0 or ERR_RANGE with err filled. May be NULL. */
    int (*check)(const void *body, char *err, size_t errcap);
} proto__schema_t;

/* The schema of a type's body; NULL for a type not in the table. */
const proto__schema_t *proto__schema_of(uint32_t type);
/* Byte offset of the body inside proto_msg_t (the anonymous union). */
#define PROTO__BODY_OFF offsetof(proto_msg_t, node_register)

/* Frees every pointer of a body described by `s` and zeroes it. */
void proto__body_free(const proto__schema_t *s, void *body);

/* Checks a matrix: dims, bounds increasing and positive. 0 or ERR_RANGE. */
int proto__matrix_check(const proto_matrix_t *m, char *err, size_t errcap);

/* Pre-scan: walks one msgpack value at buf[0..len) without allocating. Checks it is complete,
 * nesting <= PROTO_MAX_DEPTH, total objects <= PROTO_MAX_OBJECTS, every container count and
 * string length fits in the bytes left. Returns 0 and the value's size in *used, or a
 * proto_reject_t + 1 (MALFORMED or STRUCTURE) with err filled. */
int proto__prescan(const uint8_t *buf, size_t len, size_t *used, char *err, size_t errcap);

/* Encodes without the checks (for tests that need messages past the limits): same wire
 * format, only the msgpack writing. 0 or ERR_NOMEM / ERR_UNKNOWN_TYPE. */
int proto__encode_unchecked(const proto_msg_t *msg, proto_buf_t *buf);

#endif
