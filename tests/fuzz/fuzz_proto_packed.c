/* libFuzzer target: the packed envelope (proto/pack.h) around any bytes. The input is taken as
 * a plain message, deflated and wrapped as a packed VIEW_SNAPSHOT or VIEW_DELTA (the first byte
 * picks which), and decoded: the packed form must be accepted exactly when the plain bytes decode
 * to a message of that type, and then to the same message. Damaged envelopes and payloads are
 * fuzz_proto_decode's (its corpus has packed seeds). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "proto/pack.h"
#include "proto/proto.h"
#include "fuzz_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > PROTO_MAX_MSG_BYTES)
        return 0;
    proto_type_t type = (data[0] & 1) ? PROTO_VIEW_DELTA : PROTO_VIEW_SNAPSHOT;
    uLong cap = compressBound((uLong)size) + 64;
    uint8_t *w = malloc(cap + 18);
    z_stream z;
    memset(&z, 0, sizeof z);
    if (w == NULL || deflateInit2(&z, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(w);
        return 0;
    }
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)size;
    z.next_out = w + 18;
    z.avail_out = (uInt)cap;
    int zr = deflate(&z, Z_FINISH);
    uint32_t n = (uint32_t)z.total_out;
    deflateEnd(&z);
    if (zr != Z_STREAM_END) {
        free(w);
        return 0;
    }
    /* [2, type, req_id, bin32]: req_id as the plain message's, read back below */
    proto_msg_t plain, packed;
    int prc = proto_decode(data, size, &plain, NULL, NULL, 0);
    uint64_t req = prc == 0 ? plain.req_id : 0;
    uint8_t h[18] = {0x94, 2, 0xcc, (uint8_t)type, 0xcf};
    for (int i = 0; i < 8; i++)
        h[5 + i] = (uint8_t)(req >> (56 - 8 * i));
    h[13] = 0xc6;
    for (int i = 0; i < 4; i++)
        h[14 + i] = (uint8_t)(n >> (24 - 8 * i));
    memcpy(w, h, sizeof h);
    fuzz_proto_check(w, 18 + n);
    int krc = proto_decode(w, 18 + n, &packed, NULL, NULL, 0);
    bool want = prc == 0 && plain.version == PROTO_VERSION && plain.type == type &&
                18 + n <= PROTO_MAX_MSG_BYTES;
    if ((krc == 0) != want)
        __builtin_trap();
    if (krc == 0) {
        proto_buf_t a, b;
        proto_buf_init(&a);
        proto_buf_init(&b);
        if (proto_encode(&plain, &a, NULL, 0) != 0 || proto_encode(&packed, &b, NULL, 0) != 0 ||
            a.len != b.len || memcmp(a.data, b.data, a.len) != 0)
            __builtin_trap();
        proto_buf_close(&a);
        proto_buf_close(&b);
    }
    proto_msg_close(&plain);
    proto_msg_close(&packed);
    free(w);
    return 0;
}
