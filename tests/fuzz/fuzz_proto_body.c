/* libFuzzer target dispatching on the first byte: it picks the message type, the rest is
 * that type's body, wrapped in a valid envelope, so every body decoder is fuzzed directly
 * instead of waiting for the fuzzer to discover the envelope. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"
#include "fuzz_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > PROTO_MAX_MSG_BYTES)
        return 0;
    uint8_t *msg = malloc(size + 3);
    if (msg == NULL)
        return 0;
    msg[0] = 0x94; /* [version, type, req_id, body] */
    msg[1] = PROTO_VERSION;
    msg[2] = (uint8_t)(1 + data[0] % (PROTO_TYPE_LIMIT - 1));
    msg[3] = 0x00;
    memcpy(msg + 4, data + 1, size - 1);
    fuzz_proto_check(msg, size + 3);
    free(msg);
    return 0;
}
