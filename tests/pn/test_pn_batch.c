/* Integration test: a real paddock-pn sends a job's statuses of one loop pass as one
 * TASK_STATUS_BATCH to a JM whose TASK_CREATE says it takes them (batch_statuses), in the order
 * single statuses would have had, counted in status.json; to a JM that does not say so (an
 * older one), only single TASK_STATUS; and a TASK_QUERY's reply still follows the statuses it
 * counts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pn_client.h"

#define NT 400

static pnc_daemon_t d;

struct tally {
    int order[NT][PROTO_TASK_STATE_COUNT]; /* 1-based rank of each state among the task's */
    int nstatus[NT];
    int last[NT];
    long statuses, messages, batches, largest;
    int done;
};

static int task_index(const char *id)
{
    int i = -1;
    if (id && sscanf(id, "t%d", &i) == 1 && i >= 0 && i < NT)
        return i;
    return -1;
}

static void take(struct tally *y, const proto_task_status_t *st)
{
    int i = task_index(st->task_id);
    assert_true(i >= 0);
    y->statuses++;
    y->nstatus[i]++;
    if (!y->order[i][st->state])
        y->order[i][st->state] = y->nstatus[i];
    y->last[i] = (int)st->state;
    if (proto_task_state_terminal(st->state))
        y->done++;
}

/* Receives one message into the tally: its type, or 0 on timeout. `keep` gets a non-status
 * message (closed by the caller) when not NULL. */
static int pump(zsock_t *s, struct tally *y, int timeout_ms, proto_msg_t *keep)
{
    proto_msg_t m;
    if (pnc_recv(s, &m, timeout_ms) != 0)
        return 0;
    int type = m.type;
    if (m.type == PROTO_TASK_STATUS) {
        y->messages++;
        take(y, &m.task_status);
    } else if (m.type == PROTO_TASK_STATUS_BATCH) {
        y->messages++;
        y->batches++;
        if (m.task_status_batch.nstatuses > y->largest)
            y->largest = m.task_status_batch.nstatuses;
        assert_true(m.task_status_batch.nstatuses >= 2); /* one goes as TASK_STATUS */
        for (uint32_t k = 0; k < m.task_status_batch.nstatuses; k++)
            take(y, &m.task_status_batch.statuses[k]);
    } else if (keep) {
        *keep = m;
        return type;
    }
    proto_msg_close(&m);
    return type;
}

static void run_job(zsock_t *s, const char *job, bool batch, struct tally *y)
{
    memset(y, 0, sizeof *y);
    const char *t_true[] = {"true", NULL};
    char name[32];
    for (int i = 0; i < NT; i++) {
        snprintf(name, sizeof name, "t%d", i);
        pnc_task_t t = {.job = job,
                        .task = name,
                        .cpu = 0.01,
                        .mem_mb = 1,
                        .runtime_ms = 5,
                        .argv = t_true,
                        .batch = batch};
        assert_int_equal(pnc_create(s, &t), 0);
    }
    for (int waited = 0; waited < 60000 && y->done < NT;)
        if (!pump(s, y, 100, NULL))
            waited += 100; /* quiet for 100 ms */
    assert_int_equal(y->done, NT);
    /* every task: one terminal status, last; its states in their order, as singles have them */
    for (int i = 0; i < NT; i++) {
        assert_int_equal(y->last[i], PROTO_TASK_SUCCEEDED);
        int q = y->order[i][PROTO_TASK_QUEUED], r = y->order[i][PROTO_TASK_RUNNING];
        assert_int_equal(y->order[i][PROTO_TASK_SUCCEEDED], y->nstatus[i]);
        assert_true(!q || q == 1);
        assert_true(!r || r == 1 + (q != 0));
    }
}

static int group_setup(void **state)
{
    (void)state;
    const char *extra = "[rm]\nendpoints = tcp://127.0.0.1:9\nheartbeat = 100ms\n"
                        "[node]\ncpus = 2\nmemory = 4GiB\n"
                        "[queue]\nmax_regular = 100000\n"
                        "[tasks]\nstatus_refresh = 0s\n";
    return pnc_start(&d, extra);
}

static int group_teardown(void **state)
{
    (void)state;
    pnc_close_all();
    return pnc_stop(&d);
}

/* status.json's field, once it has caught up with `at_least` (it is written periodically). */
static long long status_field_at_least(const char *key, long long at_least)
{
    long long v = -1;
    for (int i = 0; i < 100; i++) {
        v = pnc_status_field(&d, key);
        if (v >= at_least)
            break;
        usleep(50 * 1000);
    }
    return v;
}

static void test_batches_to_a_jm_that_takes_them(void **state)
{
    (void)state;
    zsock_t *s = pnc_connect(&d);
    assert_non_null(s);
    /* status.json is written periodically: the first one may not be there yet */
    long long msgs0 = status_field_at_least("status_messages", 0);
    long long sent0 = status_field_at_least("statuses_sent", 0);
    assert_true(msgs0 >= 0 && sent0 >= 0);
    static struct tally y;
    run_job(s, "j-0000000000b1", true, &y);
    /* several statuses came in one message, and fewer messages than statuses */
    assert_true(y.batches >= 1);
    assert_true(y.largest >= 2);
    assert_true(y.messages < y.statuses);
    printf("batched: %ld statuses in %ld messages (%ld batches, the largest %ld)\n", y.statuses,
           y.messages, y.batches, y.largest);
    /* counted: every status and every message carrying them */
    assert_true(status_field_at_least("status_messages", msgs0 + y.messages) == msgs0 + y.messages);
    assert_true(status_field_at_least("statuses_sent", sent0 + y.statuses) == sent0 + y.statuses);
    assert_true(pnc_status_field(&d, "status_batches") >= y.batches);
}

static void test_singles_to_an_older_jm(void **state)
{
    (void)state;
    zsock_t *s = pnc_connect(&d);
    assert_non_null(s);
    static struct tally y;
    run_job(s, "j-0000000000b2", false, &y);
    assert_int_equal(y.batches, 0);
    assert_int_equal(y.messages, y.statuses);
}

/* The reply to TASK_QUERY counts the statuses sent before it: held ones go first. */
static void test_query_reply_follows_its_statuses(void **state)
{
    (void)state;
    zsock_t *s = pnc_connect(&d);
    assert_non_null(s);
    static struct tally y;
    run_job(s, "j-0000000000b3", true, &y);
    memset(&y, 0, sizeof y);
    proto_msg_t q;
    proto_msg_init(&q, PROTO_TASK_QUERY);
    q.req_id = 77;
    q.task_query.job_id = "j-0000000000b3";
    proto_buf_t b;
    proto_buf_init(&b);
    assert_int_equal(proto_encode(&q, &b, NULL, 0), 0);
    assert_int_equal(pnc_send_raw(s, b.data, b.len), 0);
    proto_buf_close(&b);
    proto_msg_t reply;
    memset(&reply, 0, sizeof reply);
    int type = 0;
    for (int i = 0; i < 200 && type != PROTO_TASK_QUERY_REPLY; i++)
        type = pump(s, &y, 100, &reply);
    assert_int_equal(type, PROTO_TASK_QUERY_REPLY);
    assert_int_equal(reply.task_query_reply.tasks, NT);
    assert_int_equal(y.statuses, NT); /* all of them before the reply */
    assert_int_equal(y.done, NT);
    assert_true(y.batches >= 1); /* answered in batches too */
    proto_msg_close(&reply);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batches_to_a_jm_that_takes_them),
        cmocka_unit_test(test_singles_to_an_older_jm),
        cmocka_unit_test(test_query_reply_follows_its_statuses),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
