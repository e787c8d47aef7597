/* roundtrip_fixture.c - see roundtrip_fixture.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "common/bloom.h"
#include "proto/proto.h"
#include "proto/schema.h"
#include "sample.h"
#include "roundtrip_fixture.h"

const proto_type_t all_types[] = {
#define T_(e, value, name, member, type) e,
    PROTO_TYPES(T_)
#undef T_
};
const size_t ntypes = sizeof all_types / sizeof all_types[0];

proto_buf_t buf;
proto_stats_t stats;
const char *where;

int setup(void **state)
{
    proto_buf_init(&buf);
    proto_stats_init(&stats);
    return 0;
}

int teardown(void **state)
{
    proto_buf_close(&buf);
    return 0;
}

void expect_roundtrip(const proto_msg_t *m)
{
    char err[256] = "";
    int rc = proto_encode(m, &buf, err, sizeof err);
    if (rc != 0)
        fail_msg("%s: %s: encode: %s (%s)", proto_type_name(m->type), where, err_name(rc), err);
    proto_msg_t d;
    rc = proto_decode(buf.data, buf.len, &d, &stats, err, sizeof err);
    if (rc != 0)
        fail_msg("%s: %s: decode: %s (%s)", proto_type_name(m->type), where, err_name(rc), err);
    assert_int_equal(d.version, PROTO_VERSION);
    if (!sample_msg_equal(m, &d, err, sizeof err))
        fail_msg("%s: %s: round trip: %s", proto_type_name(m->type), where, err);
    proto_buf_t again;
    proto_buf_init(&again);
    assert_int_equal(proto_encode(&d, &again, err, sizeof err), 0);
    assert_int_equal(again.len, buf.len);
    assert_memory_equal(again.data, buf.data, buf.len);
    proto_buf_close(&again);
    proto_msg_close(&d);
}

void expect_reject(const proto_msg_t *m, int enc_code, proto_reject_t reason)
{
    char err[256] = "";
    int rc = proto_encode(m, &buf, err, sizeof err);
    if (rc != enc_code)
        fail_msg("%s: %s: encode gave %s, expected %s (%s)", proto_type_name(m->type), where,
                 err_name(rc), err_name(enc_code), err);
    assert_int_equal(proto__encode_unchecked(m, &buf), 0);
    proto_msg_t d;
    proto_reject_t got = PROTO_REJ_COUNT;
    uint64_t before = stats.rejected_by_reason[reason];
    /* Past the envelope the type is known, and the rejection is counted under it. */
    uint32_t t = reason > PROTO_REJ_UNKNOWN_TYPE ? m->type : 0;
    uint64_t before_type = stats.rejected_by_type[t];
    rc = proto_decode_ex(buf.data, buf.len, &d, &stats, &got, err, sizeof err);
    if (rc == 0) {
        proto_msg_close(&d);
        fail_msg("%s: %s: decoder accepted a bad message", proto_type_name(m->type), where);
    }
    if (got != reason)
        fail_msg("%s: %s: decoder said %s (%s), expected %s", proto_type_name(m->type), where,
                 proto_reject_name(got), err, proto_reject_name(reason));
    assert_int_equal(stats.rejected_by_reason[reason], before + 1);
    assert_int_equal(stats.rejected_by_type[t], before_type + 1);
}

void strv_free(char **v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        mem_free(v[i]);
    mem_free(v);
}
