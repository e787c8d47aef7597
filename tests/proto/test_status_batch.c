/* TASK_STATUS_BATCH (proto.h): what proto_batch_* builds decodes to the statuses added, in
 * order, and is byte for byte what proto_encode makes of the same batch; one status goes out
 * as a plain TASK_STATUS; a full batch of the largest statuses encodes; the decoder refuses
 * empty, oversized and partly bad batches with their reasons, counted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "proto/batch.h"
#include "proto/proto.h"
#include "proto/schema.h"
#include "sample.h"

/* Status i of a test batch: its own task id, attempt and state; every third is the typical
 * sample (every field set, a matrix), the others minimal. */
static void status_at(proto_msg_t *m, uint32_t i)
{
    sample_msg(m, PROTO_TASK_STATUS, i % 3 == 1 ? SAMPLE_TYPICAL : SAMPLE_MINIMAL);
    char id[32];
    snprintf(id, sizeof id, "t-%u", i);
    mem_free(m->task_status.task_id);
    m->task_status.task_id = mem_strdup(id);
    m->task_status.attempt = i % (PROTO_MAX_ATTEMPT + 1);
    m->task_status.state = i % PROTO_TASK_STATE_COUNT;
}

static void test_batch_roundtrip(void **state)
{
    (void)state;
    enum { N = 7 };
    proto_msg_t in[N];
    proto_batch_t b;
    proto_batch_init(&b);
    char err[256];
    for (uint32_t i = 0; i < N; i++) {
        status_at(&in[i], i);
        assert_int_equal(proto_batch_add(&b, &in[i].task_status, 100 + i, err, sizeof err), 0);
    }
    assert_int_equal(b.n, N);
    proto_buf_t buf;
    proto_buf_init(&buf);
    assert_int_equal(proto_batch_encode(&b, &buf, err, sizeof err), 0);
    assert_int_equal(b.n, 0); /* emptied */

    proto_msg_t out;
    proto_stats_t st;
    proto_stats_init(&st);
    assert_int_equal(proto_decode(buf.data, buf.len, &out, &st, err, sizeof err), 0);
    assert_int_equal(out.type, PROTO_TASK_STATUS_BATCH);
    assert_int_equal(out.req_id, 0);
    assert_int_equal(out.task_status_batch.nstatuses, N);
    const proto__schema_t *ss = proto__schema_of(PROTO_TASK_STATUS);
    char why[256] = "";
    for (uint32_t i = 0; i < N; i++)
        assert_true(sample_equal(ss, &in[i].task_status, &out.task_status_batch.statuses[i], why,
                                 sizeof why));

    /* The same batch as a struct, through proto_encode: the very same bytes. */
    proto_buf_t ref;
    proto_buf_init(&ref);
    assert_int_equal(proto_encode(&out, &ref, err, sizeof err), 0);
    assert_int_equal(ref.len, buf.len);
    assert_memory_equal(ref.data, buf.data, buf.len);

    /* The builder is reusable after encode. */
    assert_int_equal(proto_batch_add(&b, &in[0].task_status, 5, err, sizeof err), 0);
    assert_int_equal(b.n, 1);

    proto_msg_close(&out);
    for (uint32_t i = 0; i < N; i++)
        proto_msg_close(&in[i]);
    proto_buf_close(&ref);
    proto_buf_close(&buf);
    proto_batch_close(&b);
}

static void test_batch_of_one_is_a_status(void **state)
{
    (void)state;
    proto_msg_t in;
    status_at(&in, 1);
    proto_batch_t b;
    proto_batch_init(&b);
    char err[256];
    assert_int_equal(proto_batch_add(&b, &in.task_status, 0xabcdef, err, sizeof err), 0);
    proto_buf_t buf, ref;
    proto_buf_init(&buf);
    proto_buf_init(&ref);
    assert_int_equal(proto_batch_encode(&b, &buf, err, sizeof err), 0);
    /* exactly what an older PN sends, so an older JM reads it */
    in.req_id = 0xabcdef;
    assert_int_equal(proto_encode(&in, &ref, err, sizeof err), 0);
    assert_int_equal(ref.len, buf.len);
    assert_memory_equal(ref.data, buf.data, buf.len);
    proto_msg_t out;
    assert_int_equal(proto_decode(buf.data, buf.len, &out, NULL, err, sizeof err), 0);
    assert_int_equal(out.type, PROTO_TASK_STATUS);
    assert_int_equal(out.req_id, 0xabcdef);
    proto_msg_close(&out);
    /* nothing held: nothing to encode */
    assert_int_equal(proto_batch_encode(&b, &buf, err, sizeof err), ERR_INVAL);
    proto_msg_close(&in);
    proto_buf_close(&ref);
    proto_buf_close(&buf);
    proto_batch_close(&b);
}

/* PROTO_MAX_BATCH of the largest statuses the schema allows encode and decode; one more is
 * refused by the builder, and a bad status is refused without disturbing the batch. */
static void test_batch_full_of_largest(void **state)
{
    (void)state;
    proto_msg_t big;
    sample_msg(&big, PROTO_TASK_STATUS, SAMPLE_TYPICAL);
    proto_task_status_t *s = &big.task_status;
    mem_free(s->job_id);
    mem_free(s->task_id);
    mem_free(s->node);
    mem_free(s->reason);
    s->job_id = sample_str(PROTO_MAX_NAME, 'a');
    s->task_id = sample_str(PROTO_MAX_NAME, 'b');
    s->node = sample_str(PROTO_MAX_NAME, 'c');
    s->reason = sample_str(PROTO_MAX_TEXT, 'd');
    sample_matrix(&s->matrix, PROTO_MAX_MATRIX_DIM, PROTO_MAX_MATRIX_DIM, 1700000000000);
    proto_batch_t b;
    proto_batch_init(&b);
    char err[256];
    for (uint32_t i = 0; i < PROTO_MAX_BATCH; i++)
        assert_int_equal(proto_batch_add(&b, s, i, err, sizeof err), 0);
    assert_int_equal(proto_batch_add(&b, s, 0, err, sizeof err), ERR_FULL);
    assert_int_equal(b.n, PROTO_MAX_BATCH);

    proto_buf_t buf;
    proto_buf_init(&buf);
    assert_int_equal(proto_batch_encode(&b, &buf, err, sizeof err), 0);
    assert_true(buf.len < PROTO_MAX_MSG_BYTES / 4);
    proto_msg_t out;
    assert_int_equal(proto_decode(buf.data, buf.len, &out, NULL, err, sizeof err), 0);
    assert_int_equal(out.task_status_batch.nstatuses, PROTO_MAX_BATCH);
    char why[256] = "";
    assert_true(sample_equal(proto__schema_of(PROTO_TASK_STATUS), s,
                             &out.task_status_batch.statuses[PROTO_MAX_BATCH - 1], why,
                             sizeof why));
    proto_msg_close(&out);

    /* a status the protocol cannot carry: refused with the reason, the batch as it was */
    assert_int_equal(proto_batch_add(&b, s, 1, err, sizeof err), 0);
    uint32_t was = s->state;
    s->state = PROTO_TASK_STATE_COUNT;
    size_t len = b.items.len;
    assert_int_equal(proto_batch_add(&b, s, 2, err, sizeof err), ERR_RANGE);
    assert_non_null(strstr(err, "state"));
    assert_int_equal(b.n, 1);
    assert_int_equal(b.items.len, len);
    s->state = was;

    proto_msg_close(&big);
    proto_buf_close(&buf);
    proto_batch_close(&b);
}

/* Batches the builder would never make, packed without checks: each is rejected whole with
 * its reason, and counted under TASK_STATUS_BATCH. */
static void test_batch_decoder_refuses(void **state)
{
    (void)state;
    proto_stats_t st;
    proto_stats_init(&st);
    proto_buf_t buf;
    proto_buf_init(&buf);
    proto_msg_t m, out;
    char err[256];

    /* none */
    proto_msg_init(&m, PROTO_TASK_STATUS_BATCH);
    m.task_status_batch.statuses = mem_calloc(1, sizeof(proto_task_status_t));
    m.task_status_batch.nstatuses = 0;
    assert_int_equal(proto_encode(&m, &buf, err, sizeof err), ERR_RANGE);
    assert_int_equal(proto__encode_unchecked(&m, &buf), 0);
    assert_int_not_equal(proto_decode(buf.data, buf.len, &out, &st, err, sizeof err), 0);
    assert_int_equal(st.rejected_by_type[PROTO_TASK_STATUS_BATCH], 1);
    proto_msg_close(&m);

    /* one too many */
    proto_msg_init(&m, PROTO_TASK_STATUS_BATCH);
    m.task_status_batch.nstatuses = PROTO_MAX_BATCH + 1;
    m.task_status_batch.statuses = mem_calloc(PROTO_MAX_BATCH + 1, sizeof(proto_task_status_t));
    for (uint32_t i = 0; i <= PROTO_MAX_BATCH; i++) {
        proto_msg_t one;
        status_at(&one, 0);
        m.task_status_batch.statuses[i] = one.task_status;
    }
    assert_int_not_equal(proto_encode(&m, &buf, err, sizeof err), 0);
    assert_int_equal(proto__encode_unchecked(&m, &buf), 0);
    uint64_t limit = st.rejected_by_reason[PROTO_REJ_LIMIT];
    assert_int_not_equal(proto_decode(buf.data, buf.len, &out, &st, err, sizeof err), 0);
    assert_int_equal(st.rejected_by_reason[PROTO_REJ_LIMIT], limit + 1);
    assert_int_equal(st.rejected_by_type[PROTO_TASK_STATUS_BATCH], 2);

    /* the right count, one bad status among good ones: the whole message goes */
    m.task_status_batch.nstatuses = 3;
    m.task_status_batch.statuses[1].state = PROTO_TASK_STATE_COUNT + 4;
    assert_int_equal(proto__encode_unchecked(&m, &buf), 0);
    uint64_t range = st.rejected_by_reason[PROTO_REJ_RANGE];
    assert_int_not_equal(proto_decode(buf.data, buf.len, &out, &st, err, sizeof err), 0);
    assert_int_equal(st.rejected_by_reason[PROTO_REJ_RANGE], range + 1);
    assert_int_equal(st.rejected_by_type[PROTO_TASK_STATUS_BATCH], 3);
    proto_msg_close(&out); /* safe on a rejected message */

    /* a status without its required job id */
    m.task_status_batch.statuses[1].state = PROTO_TASK_RUNNING;
    mem_free(m.task_status_batch.statuses[2].job_id);
    m.task_status_batch.statuses[2].job_id = NULL;
    assert_int_equal(proto__encode_unchecked(&m, &buf), 0);
    /* the unchecked encoder writes "" for NULL: a job id too short */
    assert_int_not_equal(proto_decode(buf.data, buf.len, &out, &st, err, sizeof err), 0);
    assert_int_equal(st.rejected_by_type[PROTO_TASK_STATUS_BATCH], 4);
    assert_int_equal(st.decoded_total, 0);
    m.task_status_batch.nstatuses = PROTO_MAX_BATCH + 1; /* all of them freed */
    proto_msg_close(&m);
    proto_buf_close(&buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_roundtrip),
        cmocka_unit_test(test_batch_of_one_is_a_status),
        cmocka_unit_test(test_batch_full_of_largest),
        cmocka_unit_test(test_batch_decoder_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
