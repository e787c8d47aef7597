/* fuzz_proto.h - the property both proto fuzz targets check. */
#ifndef PADDOCK_TESTS_FUZZ_PROTO_H
#define PADDOCK_TESTS_FUZZ_PROTO_H

#include <stddef.h>
#include <stdint.h>

/* Decodes data; traps if the decoder and its counters disagree, or if an accepted message
 * does not encode, or does not decode again to the same bytes. */
void fuzz_proto_check(const uint8_t *data, size_t size);

#endif
