/* libFuzzer target: any bytes through proto_decode (the envelope dispatches to every body
 * decoder). Whatever decodes must encode again and decode to the same message. */
#include <stddef.h>
#include <stdint.h>

#include "proto/proto.h"
#include "fuzz_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_proto_check(data, size);
    return 0;
}
