/* The packed envelope (proto/pack.h): what packs decodes to the same message, it is smaller,
 * and damaged or hostile packed input is rejected with its reason and counted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/err.h"
#include "common/mem.h"
#include "proto/pack.h"
#include "proto/proto.h"
#include "sample.h"

struct fixture {
    proto_msg_t msg; /* a 512-node snapshot part */
    proto_buf_t plain, packed;
    proto_stats_t stats;
    char err[256];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    proto_msg_init(&f->msg, PROTO_VIEW_SNAPSHOT);
    f->msg.req_id = 42;
    f->msg.view_snapshot.rm_id = 3;
    f->msg.view_snapshot.view_seq = 9;
    f->msg.view_snapshot.part = 1;
    f->msg.view_snapshot.parts = 40;
    f->msg.view_snapshot.timestamp_ms = 1700000000000;
    f->msg.view_snapshot.nnodes = PROTO_MAX_VIEW_NODES;
    f->msg.view_snapshot.nodes = mem_calloc(PROTO_MAX_VIEW_NODES, sizeof(proto_view_node_t));
    for (uint32_t i = 0; i < PROTO_MAX_VIEW_NODES; i++)
        sample_view_node(&f->msg.view_snapshot.nodes[i], i, 1);
    proto_buf_init(&f->plain);
    proto_buf_init(&f->packed);
    proto_stats_init(&f->stats);
    assert_int_equal(proto_encode(&f->msg, &f->plain, f->err, sizeof f->err), 0);
    assert_int_equal(proto_encode_packed(&f->msg, &f->packed, f->err, sizeof f->err), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    proto_msg_close(&f->msg);
    proto_buf_close(&f->plain);
    proto_buf_close(&f->packed);
    free(f);
    return 0;
}

/* Wraps raw deflate of bytes[0..n) in a packed envelope of `type`, as a peer might. */
static size_t wrap(uint8_t *out, size_t cap, uint32_t type, const void *bytes, size_t n)
{
    uLongf zn = (uLongf)(cap - 18);
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(deflateInit2(&z, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (Bytef *)bytes;
    z.avail_in = (uInt)n;
    z.next_out = out + 18;
    z.avail_out = (uInt)zn;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    zn = z.total_out;
    deflateEnd(&z);
    uint8_t h[18] = {0x94, 2, 0xcc, (uint8_t)type, 0xcf, 0, 0, 0, 0, 0, 0, 0, 42, 0xc6};
    for (int i = 0; i < 4; i++)
        h[14 + i] = (uint8_t)(zn >> (24 - 8 * i));
    memcpy(out, h, sizeof h);
    return 18 + zn;
}

static void expect_reject(struct fixture *f, const void *buf, size_t len, proto_reject_t want,
                          const char *says)
{
    proto_msg_t m;
    proto_reject_t why = PROTO_REJ_COUNT;
    uint64_t before = f->stats.rejected_by_reason[want];
    int rc = proto_decode_ex(buf, len, &m, &f->stats, &why, f->err, sizeof f->err);
    assert_int_not_equal(rc, 0);
    assert_int_equal(why, want);
    assert_int_equal(f->stats.rejected_by_reason[want], before + 1);
    if (strstr(f->err, says) == NULL)
        fail_msg("'%s' does not say '%s'", f->err, says);
    proto_msg_close(&m);
}

static void test_roundtrip_smaller(void **state)
{
    struct fixture *f = *state;
    proto_msg_t m;
    assert_int_equal(
        proto_decode(f->packed.data, f->packed.len, &m, &f->stats, f->err, sizeof f->err), 0);
    assert_int_equal(m.version, PROTO_VERSION_PACKED);
    assert_int_equal(m.type, PROTO_VIEW_SNAPSHOT);
    assert_int_equal(m.req_id, 42);
    char why[128];
    if (!sample_msg_equal(&m, &f->msg, why, sizeof why))
        fail_msg("differs: %s", why);
    proto_msg_close(&m);
    /* the sample nodes differ from each other as much as the generator makes them */
    assert_true(f->packed.len * 2 < f->plain.len);
    assert_int_equal(proto_peek_type(f->packed.data, f->packed.len), PROTO_VIEW_SNAPSHOT);
}

static void test_not_packable_is_plain(void **state)
{
    struct fixture *f = *state;
    proto_msg_t m;
    sample_msg(&m, PROTO_HEARTBEAT, SAMPLE_TYPICAL);
    proto_buf_t a, b;
    proto_buf_init(&a);
    proto_buf_init(&b);
    assert_int_equal(proto_encode(&m, &a, NULL, 0), 0);
    assert_int_equal(proto_encode_packed(&m, &b, NULL, 0), 0);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.data, b.data, a.len);
    /* and a heartbeat someone packed all the same is refused */
    uint8_t *w = malloc(a.len + 1024);
    size_t n = wrap(w, a.len + 1024, PROTO_HEARTBEAT, a.data, a.len);
    expect_reject(f, w, n, PROTO_REJ_VERSION, "never travels packed");
    free(w);
    proto_msg_close(&m);
    proto_buf_close(&a);
    proto_buf_close(&b);
}

static void test_damaged(void **state)
{
    struct fixture *f = *state;
    const uint8_t *p = f->packed.data;
    size_t n = f->packed.len;
    /* cut short: the bin says more bytes than there are */
    expect_reject(f, p, n - 10, PROTO_REJ_MALFORMED, "payload");
    /* a payload that is not deflate */
    uint8_t *c = malloc(n + 16);
    memcpy(c, p, n);
    memset(c + 18, 0xff, 32);
    expect_reject(f, c, n, PROTO_REJ_MALFORMED, "inflate");
    /* not a bin */
    memcpy(c, p, n);
    c[13] = 0xa5;
    expect_reject(f, c, n, PROTO_REJ_VERSION, "not a bin");
    /* an unknown type */
    memcpy(c, p, n);
    c[3] = 250;
    expect_reject(f, c, n, PROTO_REJ_UNKNOWN_TYPE, "unknown message type 250");
    /* bytes after the deflate stream, inside the bin */
    memcpy(c, p, n);
    c[n] = 0;
    uint32_t len = (uint32_t)(n - 18 + 1);
    for (int i = 0; i < 4; i++)
        c[14 + i] = (uint8_t)(len >> (24 - 8 * i));
    expect_reject(f, c, n + 1, PROTO_REJ_TRAILING, "after the deflate stream");
    free(c);
}

static void test_inner_must_match(void **state)
{
    struct fixture *f = *state;
    size_t cap = f->plain.len + 4096;
    uint8_t *w = malloc(cap);
    /* a snapshot wrapped as a delta */
    size_t n = wrap(w, cap, PROTO_VIEW_DELTA, f->plain.data, f->plain.len);
    expect_reject(f, w, n, PROTO_REJ_ENVELOPE, "not the VIEW_DELTA it wraps");
    /* packed inside packed: the inner one must be version 1 */
    n = wrap(w, cap, PROTO_VIEW_SNAPSHOT, f->packed.data, f->packed.len);
    expect_reject(f, w, n, PROTO_REJ_VERSION, "version 2");
    free(w);
}

static void test_bomb(void **state)
{
    struct fixture *f = *state;
    /* 64 MiB of zeros deflate to about 64 KiB: refused once 4 MiB have come out */
    size_t big = 64u << 20;
    uint8_t *zeros = calloc(1, big);
    size_t cap = 1u << 20;
    uint8_t *w = malloc(cap);
    size_t n = wrap(w, cap, PROTO_VIEW_SNAPSHOT, zeros, big);
    free(zeros);
    assert_true(n < PROTO_MAX_MSG_BYTES);
    expect_reject(f, w, n, PROTO_REJ_SIZE, "inflates past");
    free(w);
}

static void test_alloc_failures(void **state)
{
    struct fixture *f = *state;
    /* every allocation of the decoder, then of the encoder, failing in turn: a clean error,
       nothing leaked (ASan in CI), and success once enough allocations are allowed */
    for (long k = 0;; k++) {
        proto_msg_t m;
        mem_fail_after(k);
        int rc = proto_decode(f->packed.data, f->packed.len, &m, NULL, NULL, 0);
        mem_fail_reset();
        proto_msg_close(&m);
        if (rc == 0)
            break;
        /* the body decoder reports some failed copies as a range error, as for plain input */
        assert_true(rc == ERR_NOMEM || rc == ERR_RANGE);
        assert_true(k < 100000);
    }
    for (long k = 0;; k++) {
        proto_buf_t b;
        proto_buf_init(&b);
        mem_fail_after(k);
        int rc = proto_encode_packed(&f->msg, &b, NULL, 0);
        mem_fail_reset();
        proto_buf_close(&b);
        if (rc == 0)
            break;
        /* proto_encode reports its own failed allocations as it does for plain messages */
        assert_true(rc == ERR_NOMEM || rc == ERR_RANGE);
        assert_true(k < 1000);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_roundtrip_smaller, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_packable_is_plain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inner_must_match, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bomb, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alloc_failures, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
