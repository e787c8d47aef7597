#include "fuzz_proto.h"

#include <string.h>

#include "proto/proto.h"

void fuzz_proto_check(const uint8_t *data, size_t size)
{
    static proto_stats_t st;
    uint64_t calls = st.calls, rejected = st.rejected_total;
    proto_msg_t m;
    proto_reject_t why = PROTO_REJ_COUNT;
    char err[256];
    int rc = proto_decode_ex(data, size, &m, &st, &why, err, sizeof err);
    if (st.calls != calls + 1)
        __builtin_trap();
    if (rc != 0) {
        if (why >= PROTO_REJ_COUNT || st.rejected_total != rejected + 1)
            __builtin_trap();
        return;
    }
    proto_buf_t a, b;
    proto_buf_init(&a);
    proto_buf_init(&b);
    if (proto_encode(&m, &a, err, sizeof err) != 0)
        __builtin_trap();
    proto_msg_t m2;
    if (proto_decode(a.data, a.len, &m2, NULL, err, sizeof err) != 0)
        __builtin_trap();
    if (proto_encode(&m2, &b, err, sizeof err) != 0 || a.len != b.len ||
        memcmp(a.data, b.data, a.len) != 0)
        __builtin_trap();
    proto_msg_close(&m2);
    proto_msg_close(&m);
    proto_buf_close(&a);
    proto_buf_close(&b);
}
