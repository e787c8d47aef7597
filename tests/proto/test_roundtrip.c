/* Round trips of every message type: typical and minimal messages, values landing in their
 * fields, the contract's limits and total size, the largest view messages, and the encoder's
 * refusals. Every field at its bounds is in test_roundtrip_bounds.c. */
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

static void test_every_type_typical_and_minimal(void **state)
{
    for (size_t i = 0; i < NTYPES; i++)
        for (int v = SAMPLE_TYPICAL; v <= SAMPLE_MINIMAL; v++) {
            proto_msg_t m;
            sample_msg(&m, all_types[i], v);
            where = v == SAMPLE_TYPICAL ? "typical" : "minimal";
            expect_roundtrip(&m);
            proto_msg_close(&m);
        }
    assert_int_equal(stats.decoded_total, 2 * NTYPES);
    for (size_t i = 0; i < NTYPES; i++)
        assert_int_equal(stats.decoded_by_type[all_types[i]], 2);
}

/* Spot checks that decoding puts values in the right members (the generic comparison would
 * not notice two members swapped consistently by a wrong table). */
static void test_values_land_in_their_fields(void **state)
{
    proto_msg_t m, d;
    sample_msg(&m, PROTO_HEARTBEAT, SAMPLE_TYPICAL);
    assert_int_equal(proto_encode(&m, &buf, NULL, 0), 0);
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, NULL, 0), 0);
    assert_int_equal(d.type, PROTO_HEARTBEAT);
    assert_int_equal(d.req_id, 0xfeedfacecafebeefull);
    assert_string_equal(d.heartbeat.name, "pn-3");
    assert_string_equal(d.heartbeat.rack, "rack-1");
    assert_int_equal(d.heartbeat.seq, 123456);
    assert_int_equal(d.heartbeat.running_regular, 2);
    assert_int_equal(d.heartbeat.running_opportunistic, 1);
    assert_int_equal(d.heartbeat.queued_regular, 5);
    assert_int_equal(d.heartbeat.queued_opportunistic, 9);
    assert_true(d.heartbeat.used_cpu == 2.5);
    assert_int_equal(d.heartbeat.matrix.ncpu, 8);
    assert_int_equal(d.heartbeat.matrix.nmem, 8);
    assert_int_equal(proto_matrix_cell(&d.heartbeat.matrix, 1, 2), 10 * 137);
    assert_int_equal(proto_matrix_cell(&d.heartbeat.matrix, 0, 4), PROTO_WAIT_NEVER);
    proto_msg_close(&d);
    proto_msg_close(&m);

    sample_msg(&m, PROTO_TASK_CREATE, SAMPLE_TYPICAL);
    assert_int_equal(proto_encode(&m, &buf, NULL, 0), 0);
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, NULL, 0), 0);
    assert_int_equal(d.task_create.argc, 4);
    assert_string_equal(d.task_create.argv[3], "exec ./extract.sh --part 0 > out.txt");
    assert_int_equal(d.task_create.nenv, 2);
    assert_string_equal(d.task_create.env[1].key, "PADDOCK_TASK");
    assert_string_equal(d.task_create.env[1].value, "");
    assert_int_equal(d.task_create.task_class, PROTO_CLASS_OPPORTUNISTIC);
    assert_int_equal(d.task_create.files[0].bytes, 2048);
    proto_msg_close(&m);
    proto_msg_close(&d);

    sample_msg(&m, PROTO_TASK_STATUS, SAMPLE_TYPICAL);
    assert_int_equal(proto_encode(&m, &buf, NULL, 0), 0);
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, NULL, 0), 0);
    assert_int_equal(d.task_status.exit_code, -1);
    assert_int_equal(d.task_status.signal, 9);
    assert_int_equal(d.task_status.state, PROTO_TASK_FAILED);
    assert_int_equal(d.task_status.ended_at_ms - d.task_status.started_at_ms, 6100);
    proto_msg_close(&d);
    proto_msg_close(&m);

    /* The arbiter's fields (issue 12): many are adjacent integers of one kind, where a
     * swapped table entry would still round-trip. */
    sample_msg(&m, PROTO_JOB_REGISTER, SAMPLE_TYPICAL);
    assert_int_equal(proto_encode(&m, &buf, NULL, 0), 0);
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, NULL, 0), 0);
    assert_int_equal(d.job_register.work_ms, 3600000);
    assert_int_equal(d.job_register.work_sd_ms, 240000);
    assert_int_equal(d.job_register.path_ms, 420000);
    assert_int_equal(d.job_register.path_sd_ms, 30000);
    assert_int_equal(d.job_register.width, 64);
    assert_true(d.job_register.has_profile);
    assert_true(d.job_register.best_effort);
    assert_true(d.job_register.weight == 2.5);
    proto_msg_close(&d);
    proto_msg_close(&m);

    sample_msg(&m, PROTO_JOB_REGISTER_REPLY, SAMPLE_TYPICAL);
    assert_int_equal(proto_encode(&m, &buf, NULL, 0), 0);
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, NULL, 0), 0);
    assert_int_equal(d.job_register_reply.code, ERR_ADMISSION);
    assert_int_equal(d.job_register_reply.eff_p50_ms, 1080000);
    assert_int_equal(d.job_register_reply.eff_ms, 1260000);
    proto_msg_close(&d);
    proto_msg_close(&m);

    sample_msg(&m, PROTO_TOKEN_GRANT, SAMPLE_TYPICAL);
    assert_int_equal(proto_encode(&m, &buf, NULL, 0), 0);
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, NULL, 0), 0);
    assert_int_equal(d.token_grant.granted, 100);
    assert_int_equal(d.token_grant.minimum, 60);
    assert_true(d.token_grant.token_cpu == 2.0);
    assert_int_equal(d.token_grant.token_mem_mb, 8192);
    proto_msg_close(&d);
    proto_msg_close(&m);

    sample_msg(&m, PROTO_LEASE_RENEW, SAMPLE_TYPICAL);
    assert_int_equal(proto_encode(&m, &buf, NULL, 0), 0);
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, NULL, 0), 0);
    assert_int_equal(d.lease_renew.deadline_ms, 900000);
    assert_int_equal(d.lease_renew.eta_ms, 720000);
    assert_int_equal(d.lease_renew.eta_p95_ms, 840000);
    assert_int_equal(d.lease_renew.demand, 13);
    proto_msg_close(&d);
    proto_msg_close(&m);

    sample_msg(&m, PROTO_LEASE_ACK, SAMPLE_TYPICAL);
    assert_int_equal(proto_encode(&m, &buf, NULL, 0), 0);
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, NULL, 0), 0);
    assert_int_equal(d.lease_ack.granted, 100);
    assert_int_equal(d.lease_ack.minimum, 80);
    assert_true(d.lease_ack.token_cpu == 0.5);
    assert_int_equal(d.lease_ack.token_mem_mb, 2048);
    assert_int_equal(d.lease_ack.spread_milli, 1150);
    assert_int_equal(d.lease_ack.own_factor_milli, 940);
    proto_msg_close(&d);
    proto_msg_close(&m);

    sample_msg(&m, PROTO_TASK_UPGRADE, SAMPLE_TYPICAL);
    assert_int_equal(proto_encode(&m, &buf, NULL, 0), 0);
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, NULL, 0), 0);
    assert_int_equal(d.task_upgrade.attempt, 1);
    assert_int_equal(d.task_upgrade.task_class, PROTO_CLASS_OPPORTUNISTIC);
    assert_int_equal(d.task_upgrade.grace_ms, 30000);
    proto_msg_close(&d);
    proto_msg_close(&m);

    /* An older JM sends neither: the PN reads an upgrade to regular with no grace. */
    sample_msg(&m, PROTO_TASK_UPGRADE, SAMPLE_MINIMAL);
    assert_int_equal(proto_encode(&m, &buf, NULL, 0), 0);
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, NULL, 0), 0);
    assert_int_equal(d.task_upgrade.task_class, PROTO_CLASS_REGULAR);
    assert_int_equal(d.task_upgrade.grace_ms, 0);
    proto_msg_close(&d);
    proto_msg_close(&m);

    sample_msg(&m, PROTO_ERROR, SAMPLE_MINIMAL);
    assert_int_equal(proto_encode(&m, &buf, NULL, 0), 0);
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, NULL, 0), 0);
    assert_int_equal(d.error.code, INT32_MIN);
    assert_string_equal(d.error.text, "");
    assert_null(d.error.leader_endpoint);
    proto_msg_close(&d);
    proto_msg_close(&m);
}

/* The contract values themselves, not just what the table says. */
static void test_contract_limits(void **state)
{
    const proto__schema_t *hb = proto__schema_of(PROTO_HEARTBEAT);
    assert_non_null(hb);
    assert_int_equal(PROTO_MAX_MSG_BYTES, 4u << 20);
    assert_int_equal(PROTO_MAX_MATRIX_DIM, 16);
    proto_msg_t m;
    sample_msg(&m, PROTO_TASK_STATUS, SAMPLE_TYPICAL);
    where = "exit code -1 and 255";
    m.task_status.exit_code = 255;
    expect_roundtrip(&m);
    m.task_status.exit_code = -2;
    expect_reject(&m, ERR_RANGE, PROTO_REJ_RANGE);
    m.task_status.exit_code = 0;
    where = "state lost is the last";
    m.task_status.state = PROTO_TASK_LOST;
    expect_roundtrip(&m);
    m.task_status.state = PROTO_TASK_LOST + 1;
    expect_reject(&m, ERR_RANGE, PROTO_REJ_RANGE);
    proto_msg_close(&m);

    where = "node name of 255 and 256 bytes";
    sample_msg(&m, PROTO_HEARTBEAT, SAMPLE_TYPICAL);
    mem_free(m.heartbeat.name);
    m.heartbeat.name = sample_str(255, 'n');
    expect_roundtrip(&m);
    mem_free(m.heartbeat.name);
    m.heartbeat.name = sample_str(256, 'n');
    expect_reject(&m, ERR_TOOBIG, PROTO_REJ_LIMIT);
    proto_msg_close(&m);

    where = "req_id UINT64_MAX";
    sample_msg(&m, PROTO_TOKEN_GRANT, SAMPLE_MINIMAL);
    m.req_id = UINT64_MAX;
    expect_roundtrip(&m);
    proto_msg_close(&m);
}

/* A message within every per-field limit can still exceed the total size. */
static void test_message_over_total_size(void **state)
{
    proto_msg_t m;
    sample_msg(&m, PROTO_TASK_CREATE, SAMPLE_MINIMAL);
    strv_free(m.task_create.argv, m.task_create.argc);
    m.task_create.argc = PROTO_MAX_ARGV;
    m.task_create.argv = mem_calloc(PROTO_MAX_ARGV, sizeof(char *));
    for (uint32_t i = 0; i < PROTO_MAX_ARGV; i++)
        m.task_create.argv[i] = sample_str(PROTO_MAX_ARG, 'x');
    where = "argv 1024 x 4096 bytes";
    expect_reject(&m, ERR_TOOBIG, PROTO_REJ_SIZE);
    assert_true(buf.len > PROTO_MAX_MSG_BYTES);
    proto_msg_close(&m);
}

/* The limits fit together: the largest view part and delta the limits allow (every node
 * with 255-byte strings and a 16x16 matrix) stay within PROTO_MAX_MSG_BYTES and
 * PROTO_MAX_OBJECTS, as limits.h promises. */
static proto_view_node_t *largest_nodes(void)
{
    proto_view_node_t *v = mem_calloc(PROTO_MAX_VIEW_NODES, sizeof *v);
    for (uint32_t i = 0; i < PROTO_MAX_VIEW_NODES; i++) {
        sample_view_node(&v[i], i, 1);
        mem_free(v[i].name);
        mem_free(v[i].rack);
        mem_free(v[i].endpoint);
        v[i].name = sample_str(PROTO_MAX_NAME, 'n');
        v[i].rack = sample_str(PROTO_MAX_NAME, 'r');
        v[i].endpoint = sample_str(PROTO_MAX_ENDPOINT, 'e');
        v[i].cpu = v[i].used_cpu = 1.0 / 3; /* not representable as float32: 9 bytes */
        v[i].boot_id = v[i].seq = v[i].failures = v[i].successes = UINT64_MAX;
        sample_matrix(&v[i].matrix, PROTO_MAX_MATRIX_DIM, PROTO_MAX_MATRIX_DIM, 1);
        for (uint32_t c = 0; c < PROTO_MAX_MATRIX_CELLS; c++)
            v[i].matrix.cells_ms[c] = UINT32_MAX - c; /* 5 bytes each */
    }
    return v;
}

static void test_largest_view_messages_fit(void **state)
{
    proto_msg_t m;
    sample_msg(&m, PROTO_VIEW_SNAPSHOT, SAMPLE_MINIMAL);
    m.view_snapshot.nodes = largest_nodes();
    m.view_snapshot.nnodes = PROTO_MAX_VIEW_NODES;
    where = "largest snapshot part";
    expect_roundtrip(&m);
    size_t snapshot_bytes = buf.len;
    proto_msg_close(&m);

    sample_msg(&m, PROTO_VIEW_DELTA, SAMPLE_MINIMAL);
    m.view_delta.changed = largest_nodes();
    m.view_delta.nchanged = PROTO_MAX_VIEW_NODES;
    m.view_delta.removed = mem_calloc(PROTO_MAX_VIEW_REMOVED, sizeof(char *));
    m.view_delta.nremoved = PROTO_MAX_VIEW_REMOVED;
    for (uint32_t i = 0; i < PROTO_MAX_VIEW_REMOVED; i++)
        m.view_delta.removed[i] = sample_str(PROTO_MAX_NAME, 'g');
    where = "largest delta";
    expect_roundtrip(&m);
    print_message("largest snapshot part %zu bytes, largest delta %zu bytes (limit %u)\n",
                  snapshot_bytes, buf.len, PROTO_MAX_MSG_BYTES);
    assert_true(buf.len <= PROTO_MAX_MSG_BYTES);
    proto_msg_close(&m);
}

static void test_encode_refuses_unknown_type(void **state)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TYPE_LIMIT);
    char err[128];
    assert_int_equal(proto_encode(&m, &buf, err, sizeof err), ERR_UNKNOWN_TYPE);
    proto_msg_init(&m, PROTO_TYPE_NONE);
    assert_int_equal(proto_encode(&m, &buf, err, sizeof err), ERR_UNKNOWN_TYPE);
}

/* Encoding under allocation failure fails cleanly (ERR_NOMEM), then succeeds. */
static void test_encode_out_of_memory(void **state)
{
    proto_msg_t m;
    sample_msg(&m, PROTO_VIEW_SNAPSHOT, SAMPLE_TYPICAL);
    proto_buf_t b;
    proto_buf_init(&b);
    mem_fail_after(0);
    assert_int_equal(proto_encode(&m, &b, NULL, 0), ERR_NOMEM);
    mem_fail_reset();
    assert_int_equal(proto_encode(&m, &b, NULL, 0), 0);
    proto_buf_close(&b);
    proto_msg_close(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_type_typical_and_minimal),
        cmocka_unit_test(test_values_land_in_their_fields),
        cmocka_unit_test(test_contract_limits),
        cmocka_unit_test(test_message_over_total_size),
        cmocka_unit_test(test_largest_view_messages_fit),
        cmocka_unit_test(test_encode_refuses_unknown_type),
        cmocka_unit_test(test_encode_out_of_memory),
    };
    return cmocka_run_group_tests_name("proto_roundtrip", tests, setup, teardown);
}
