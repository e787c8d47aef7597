/* libFuzzer target for TASK_STATUS_BATCH: the input is a batch's body, wrapped in a valid
 * envelope. Besides fuzz_proto_check's property (counters agree, what decodes re-encodes to the
 * same bytes), what decodes must rebuild through proto_batch_add / proto_batch_encode (the
 * PN's way) into the very bytes proto_encode makes of it: the builder and the decoder agree on
 * every batch the decoder accepts. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_proto.h"
#include "proto/batch.h"
#include "proto/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > PROTO_MAX_MSG_BYTES - 4)
        return 0;
    uint8_t *msg = malloc(size + 4);
    if (msg == NULL)
        return 0;
    msg[0] = 0x94; /* [version, type, req_id, body] */
    msg[1] = PROTO_VERSION;
    msg[2] = PROTO_TASK_STATUS_BATCH;
    msg[3] = 0x00;
    if (size > 0)
        memcpy(msg + 4, data, size);
    fuzz_proto_check(msg, size + 4);
    proto_msg_t m;
    char err[256];
    if (proto_decode(msg, size + 4, &m, NULL, err, sizeof err) == 0) {
        if (m.type != PROTO_TASK_STATUS_BATCH)
            __builtin_trap();
        const proto_task_status_batch_t *b = &m.task_status_batch;
        if (b->nstatuses < 1 || b->nstatuses > PROTO_MAX_BATCH)
            __builtin_trap();
        proto_batch_t pb;
        proto_batch_init(&pb);
        for (uint32_t i = 0; i < b->nstatuses; i++)
            if (proto_batch_add(&pb, &b->statuses[i], 0, err, sizeof err) != 0)
                __builtin_trap();
        proto_buf_t built, ref;
        proto_buf_init(&built);
        proto_buf_init(&ref);
        if (proto_batch_encode(&pb, &built, err, sizeof err) != 0)
            __builtin_trap();
        proto_msg_t one; /* a batch of one goes out as its TASK_STATUS */
        if (b->nstatuses == 1) {
            proto_msg_init(&one, PROTO_TASK_STATUS);
            one.task_status = b->statuses[0];
        }
        if (proto_encode(b->nstatuses == 1 ? &one : &m, &ref, err, sizeof err) != 0 ||
            ref.len != built.len || memcmp(ref.data, built.data, ref.len) != 0)
            __builtin_trap();
        proto_buf_close(&built);
        proto_buf_close(&ref);
        proto_batch_close(&pb);
        proto_msg_close(&m);
    }
    free(msg);
    return 0;
}
