/* pack.h - the packed envelope: a view message deflated (proto/README.md "Packed views").
 *
 * A 20,000-node view is 40 parts of about 200 KiB in the plain encoding, mostly map keys and
 * node names that repeat; a thousand subscribers made that 8 GiB per snapshot for the RM's
 * view socket to write. The packed form carries the same message in a fraction of the bytes:
 *
 *     packed  = [2, type, req_id, bin]      (msgpack; 2 is PROTO_VERSION_PACKED)
 *     bin     = raw deflate (RFC 1951) of the version-1 encoding of the same message
 *
 * Only the types proto_type_packable() names travel packed (VIEW_SNAPSHOT, VIEW_DELTA). A
 * decoder of this build accepts both forms: proto_decode() inflates a packed message (at most
 * PROTO_MAX_MSG_BYTES, so a deflate bomb is refused at that size, before anything else is
 * allocated) and decodes the inner message with the usual checks; the inner message must be
 * version 1 and carry the envelope's type and req_id. A decoder from before this form rejects
 * it as version 2 (counted under "version"), so an old JM says why its view stays empty.
 */
#ifndef PADDOCK_PROTO_PACK_H
#define PADDOCK_PROTO_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/proto.h"

#define PROTO_VERSION_PACKED 2u

/* View topics (proto/README.md "View subscriptions"): the first bytes of a packed VIEW_SNAPSHOT
 * and of a packed VIEW_DELTA, as a ZeroMQ subscription prefix. A JM subscribes to the delta
 * topic for as long as it runs and to the snapshot topic only until it holds a whole view (or
 * again after it missed a delta); the RM publishes snapshots only while someone subscribes to
 * them. A subscriber of "" (an older JM) takes both. The plain (version-1) forms are
 * PROTO_VIEW_TOPIC_PLAIN_*, for an RM from before the packed form. */
#define PROTO_VIEW_TOPIC_LEN 4u
extern const uint8_t PROTO_VIEW_TOPIC_SNAPSHOT[PROTO_VIEW_TOPIC_LEN];
extern const uint8_t PROTO_VIEW_TOPIC_DELTA[PROTO_VIEW_TOPIC_LEN];
#define PROTO_VIEW_TOPIC_PLAIN_LEN 3u
extern const uint8_t PROTO_VIEW_TOPIC_PLAIN_SNAPSHOT[PROTO_VIEW_TOPIC_PLAIN_LEN];
extern const uint8_t PROTO_VIEW_TOPIC_PLAIN_DELTA[PROTO_VIEW_TOPIC_PLAIN_LEN];

/* A view node published with age_ms below this is live: until the replica publishes it again,
 * every delta of that replica that follows in sequence confirms it unchanged (its waits within
 * the RM's tolerance, rm/rmview.h) as of one heartbeat before the delta. The replica publishes a
 * live node again once it has not heard from it for this long. */
#define PROTO_VIEW_LIVE_MS 2000

/* Whether messages of this type may travel packed. */
bool proto_type_packable(proto_type_t type);

/* Encodes *msg packed into buf when its type is packable, plainly (proto_encode) otherwise.
 * The message is borrowed for the call. Errors as proto_encode's; ERR_NOMEM also when zlib
 * cannot allocate. What it produces always decodes with proto_decode(). */
int proto_encode_packed(const proto_msg_t *msg, proto_buf_t *buf, char *err, size_t errcap);

/* Internal to proto/ (decode.c): reads a packed envelope and inflates its payload into *inner
 * (caller owns; proto_buf_close it on every outcome). Returns 0, or a proto_reject_t + 1 with
 * the reason in err; *type and *req_id are set as soon as they are read (0 before). */
int proto__unpack(const uint8_t *buf, size_t len, proto_buf_t *inner, uint32_t *type,
                  uint64_t *req_id, char *err, size_t errcap);

#endif
