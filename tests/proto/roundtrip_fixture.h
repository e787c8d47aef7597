/* roundtrip_fixture.h - what the round-trip tests of the wire protocol (test_roundtrip.c,
 * test_roundtrip_bounds.c) share: every message type, one encode buffer and decode statistics
 * per test group, and the two checks, a round trip and a rejection on both sides. */
#ifndef PADDOCK_TESTS_PROTO_ROUNDTRIP_FIXTURE_H
#define PADDOCK_TESTS_PROTO_ROUNDTRIP_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/proto.h"

/* Every message type of proto/proto.h's table, NTYPES of them. */
extern const proto_type_t all_types[];
extern const size_t ntypes;
#define NTYPES ntypes

extern proto_buf_t buf;
extern proto_stats_t stats;
extern const char *where; /* the field under test, for failure messages */

/* cmocka group setup and teardown: buf and stats fresh, buf freed. */
int setup(void **state);
int teardown(void **state);
/* Encodes, decodes, compares, and checks re-encoding gives the same bytes. */
void expect_roundtrip(const proto_msg_t *m);
/* The encoder refuses with enc_code; packed anyway, the decoder rejects with `reason`. */
void expect_reject(const proto_msg_t *m, int enc_code, proto_reject_t reason);
/* Frees n strings of v, then v (mem_free). */
void strv_free(char **v, uint32_t n);

#endif
