/* test_rmview_pub.c - what the view publishes for a thousand JMs (issue 24): wait cells on a
 * grid, numbered snapshots whose first bytes are their number's topic, an empty delta a second
 * when nothing changed, and a JM's view relabelled as the replica it follows now. */
#include "jm/view.h"
#include "jm/view_proto.h"
#include "proto/pack.h"
#include "proto/proto.h"
#include "rm/rmview.h"
#include "tests/rm/rmview_hb.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* Published waits lie on a grid (50 ms below 1.6 s, then 50 ms x 2^k within a sixteenth of the
 * wait), within half a step of the PN's, far inside the tolerance a change must exceed to be
 * published at all; "never" stays never, and the grid is what lets a view compress. */
static void test_quantized_waits(void **state)
{
    (void)state;
    assert_int_equal(rmview_quantize_ms(PROTO_WAIT_NEVER), PROTO_WAIT_NEVER);
    assert_int_equal(rmview_quantize_ms(0), 0);
    assert_int_equal(rmview_quantize_ms(24), 0);
    assert_int_equal(rmview_quantize_ms(25), 50);
    assert_int_equal(rmview_quantize_ms(1000), 1000);
    assert_int_equal(rmview_quantize_ms(1599), 1600);
    assert_int_equal(rmview_quantize_ms(1649), 1600);   /* step 100 from 1.6 s */
    assert_int_equal(rmview_quantize_ms(5099), 5000);   /* step 200 from 3.2 s */
    assert_int_equal(rmview_quantize_ms(60000), 60800); /* step 3,200 ms */
    uint32_t prev = 0, distinct = 0, last = UINT32_MAX;
    for (uint32_t ms = 0; ms < 10000000; ms += ms < 100000 ? 1 : 997) {
        uint32_t q = rmview_quantize_ms(ms);
        uint32_t err = q > ms ? q - ms : ms - q;
        uint32_t bound = ms / 32 > 25 ? ms / 32 : 25;
        assert_true(err <= bound);
        assert_true(err <= RMVIEW_WAIT_TOL_MS / 2 || err <= ms / (2 * RMVIEW_WAIT_TOL_DIV));
        assert_true(q >= prev); /* monotonic: the order of two nodes' waits is kept or tied */
        prev = q;
        distinct += q != last;
        last = q;
    }
    assert_true(distinct < 400); /* 32 steps to 1.6 s, then 16 values per doubling */
    assert_int_equal(rmview_quantize_ms(PROTO_WAIT_NEVER - 1) < PROTO_WAIT_NEVER, 1);
}

/* A numbered snapshot's parts start with the topic of their number and no other
 * (rmview_gen_topic), which a JM's subscription to the whole snapshot topic also matches. */
static int gen_emit(void *arg, const proto_msg_t *msg)
{
    proto_buf_t *b = arg;
    proto_msg_t m = *msg;
    m.req_id = 0x0102030405060708ull;
    return proto_encode_packed(&m, b, NULL, 0);
}

static void test_gen_topic(void **state)
{
    (void)state;
    rmview_t *v = rmview_new();
    proto_heartbeat_t hb;
    heartbeat(&hb, "pn-1", 1, 1);
    assert_int_equal(rmview_ingest(v, &hb, 1000), RMVIEW_FRESH);
    proto_buf_t b;
    proto_buf_init(&b);
    assert_int_equal(rmview_publish_snapshot(v, 1000, 1, gen_emit, &b), 0);
    uint8_t t[RMVIEW_GEN_TOPIC_LEN];
    assert_int_equal(rmview_gen_topic(0x0102030405060708ull, t), RMVIEW_GEN_TOPIC_LEN);
    assert_true(b.len > RMVIEW_GEN_TOPIC_LEN);
    assert_memory_equal(b.data, t, RMVIEW_GEN_TOPIC_LEN);
    assert_memory_equal(t, PROTO_VIEW_TOPIC_SNAPSHOT, PROTO_VIEW_TOPIC_LEN);
    rmview_gen_topic(0x0102030405060709ull, t);
    assert_memory_not_equal(b.data, t, RMVIEW_GEN_TOPIC_LEN);
    proto_buf_close(&b);
    rmview_destroy(&v);
}

/* A replica with nothing to say publishes one empty delta a second (none before the chain
 * starts): it decodes packed, moves the chain by one and a JM's stream takes it in sequence. */
struct keep {
    int msgs;
    uint32_t nchanged;
    uint64_t base, seq;
    struct view_stream st;
    int flow;
};

static int keep_emit(void *arg, const proto_msg_t *msg)
{
    struct keep *k = arg;
    proto_buf_t b;
    proto_buf_init(&b);
    assert_int_equal(proto_encode_packed(msg, &b, NULL, 0), 0);
    proto_msg_t d;
    char err[128];
    assert_int_equal(proto_decode(b.data, b.len, &d, NULL, err, sizeof err), 0);
    proto_buf_close(&b);
    k->msgs++;
    k->flow = view_stream_take(&k->st, &d);
    if (d.type == PROTO_VIEW_DELTA) {
        k->nchanged = d.view_delta.nchanged;
        k->base = d.view_delta.base_seq;
        k->seq = d.view_delta.view_seq;
    }
    proto_msg_close(&d);
    return 0;
}

static void test_keepalive(void **state)
{
    (void)state;
    rmview_t *v = rmview_new();
    struct keep k;
    memset(&k, 0, sizeof k);
    assert_int_equal(rmview_publish_delta(v, 5000, 1, keep_emit, &k), 0);
    assert_int_equal(k.msgs, 0); /* an empty view, no chain yet: nothing */
    proto_heartbeat_t hb;
    heartbeat(&hb, "pn-1", 1, 1);
    assert_int_equal(rmview_ingest(v, &hb, 5000), RMVIEW_FRESH);
    assert_int_equal(rmview_publish_snapshot(v, 5000, 1, keep_emit, &k), 0);
    assert_true(k.st.synced);
    uint64_t seq = rmview_seq(v);
    k.msgs = 0;
    assert_int_equal(rmview_publish_delta(v, 5999, 1, keep_emit, &k), 0);
    assert_int_equal(k.msgs, 0); /* the last delta is under a second old */
    assert_int_equal(rmview_publish_delta(v, 5000 + RMVIEW_KEEPALIVE_MS, 1, keep_emit, &k), 0);
    assert_int_equal(k.msgs, 1);
    assert_int_equal(k.nchanged, 0);
    assert_int_equal(k.base, seq);
    assert_int_equal(k.seq, seq + 1);
    assert_int_equal(k.flow, VIEW_STREAM_NEXT);
    assert_int_equal(rmview_publish_delta(v, 5500 + RMVIEW_KEEPALIVE_MS, 1, keep_emit, &k), 0);
    assert_int_equal(k.msgs, 1); /* one a second */
    /* news goes out at once, and the keepalive counts from it */
    heartbeat(&hb, "pn-1", 1, 2);
    hb.matrix.cells_ms[3] = 9000;
    assert_int_equal(rmview_ingest(v, &hb, 6600), RMVIEW_FRESH);
    assert_int_equal(rmview_publish_delta(v, 6600, 1, keep_emit, &k), 0);
    assert_int_equal(k.msgs, 2);
    assert_int_equal(k.nchanged, 1);
    assert_int_equal(rmview_publish_delta(v, 7500, 1, keep_emit, &k), 0);
    assert_int_equal(k.msgs, 2);
    assert_int_equal(rmview_publish_delta(v, 7600, 1, keep_emit, &k), 0);
    assert_int_equal(k.msgs, 3);
    assert_int_equal(k.nchanged, 0);
    rmview_destroy(&v);
}

/* A JM that moves to another replica's view relabels what it holds as that replica's
 * (view_adopt), so that the new replica's in-sequence deltas confirm the nodes they omit. */
static void test_adopt_then_confirm(void **state)
{
    (void)state;
    view_t *jv = NULL;
    assert_int_equal(view_new(&jv), 0);
    char name[32];
    for (int i = 0; i < 10; i++) {
        proto_view_node_t w;
        proto_heartbeat_t hb;
        snprintf(name, sizeof name, "pn-%d", i);
        heartbeat(&hb, name, 1, 1);
        memset(&w, 0, sizeof w);
        w.name = name;
        w.rack = "r1";
        w.endpoint = "tcp://127.0.0.1:9";
        w.cpu = hb.cpu;
        w.mem_mb = hb.mem_mb;
        w.matrix = hb.matrix;
        w.boot_id = 1;
        w.seq = 1;
        w.age_ms = 100;
        assert_int_equal(view_update_from_replica(jv, &w, 1000, 0), 1);
    }
    assert_int_equal(view_confirm(jv, 2, 5000), 0); /* replica 1's word: nothing of its own */
    assert_int_equal(view_adopt(jv, 2), 10);
    assert_int_equal(view_adopt(jv, 2), 0);
    assert_int_equal(view_confirm(jv, 2, 5000), 10);
    assert_int_equal(view_node(jv, 3)->info_ms, 5000);
    view_destroy(&jv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantized_waits),
        cmocka_unit_test(test_gen_topic),
        cmocka_unit_test(test_keepalive),
        cmocka_unit_test(test_adopt_then_confirm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
