/* Unit tests of pn/queue's class trade inside one job (queue_pick_trade, issue 22): a job's
 * queued opportunistic task of higher priority starts as regular in the place of the job's
 * regular task about to start, which waits as opportunistic; never across jobs, never when the
 * opportunistic task is of lower priority, does not fit or is held, never moving another job's
 * reservation later. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "common/err.h"
#include "pn/queue.h"

static queue_t *mkq(double cpus)
{
    queue_config_t c = {.cpus = cpus, .mem_mb = 1000};
    queue_t *q = queue_new(&c);
    assert_non_null(q);
    return q;
}

static void push(queue_t *q, uint64_t id, double cpu, double est, queue_class_t k, uint64_t job,
                 double prio)
{
    queue_task_t t = {
        .id = id, .cpu = cpu, .mem_mb = 100, .est_s = est, .klass = k, .job = job, .prio = prio};
    assert_int_equal(queue_push(q, &t), 0);
}

static double expected(queue_t *q, double now, uint64_t id)
{
    loadprof_t p;
    loadprof_init(&p, queue_config(q)->cpus, queue_config(q)->mem_mb);
    double at = -1;
    assert_int_equal(queue_expected_start(q, now, id, &p, &at), 0);
    loadprof_close(&p);
    return at;
}

static void assert_class(queue_t *q, uint64_t id, queue_state_t st, queue_class_t k)
{
    queue_class_t got;
    assert_int_equal(queue_state(q, id, &got), st);
    assert_int_equal(got, k);
}

/* Job A's regular side task (bottom level 1 s) is about to start; A's critical task (10 s),
 * which yielded its token earlier, waits opportunistic at the same node. It starts as regular
 * in the side task's place, and the side task waits as opportunistic: A's regular count is the
 * same. queue_pick (no trade) starts the side task. */
static void test_trade_happens(void **state)
{
    (void)state;
    for (int trade = 0; trade < 2; trade++) {
        queue_t *q = mkq(1);
        push(q, 1, 1, 4, QUEUE_REGULAR, 0xa, 1);
        push(q, 2, 1, 4, QUEUE_OPPORTUNISTIC, 0xa, 10);
        queue_task_t t;
        queue_pick_info_t info = {.traded = -1};
        if (trade) {
            assert_int_equal(queue_pick_trade(q, 0, 0, &t, &info), 0);
            assert_int_equal(t.id, 2);
            assert_int_equal(t.klass, QUEUE_REGULAR);
            assert_int_equal(info.traded, 1);
            assert_int_equal(info.traded_id, 1);
            assert_class(q, 2, QUEUE_RUNNING, QUEUE_REGULAR);
            assert_class(q, 1, QUEUE_QUEUED, QUEUE_OPPORTUNISTIC);
        } else {
            assert_int_equal(queue_pick(q, 0, 0, &t), 0);
            assert_int_equal(t.id, 1);
            assert_class(q, 2, QUEUE_QUEUED, QUEUE_OPPORTUNISTIC);
        }
        queue_stats_t st;
        queue_stats(q, &st);
        assert_int_equal(st.regular_running, 1);
        assert_int_equal(st.regular_queued, 0);
        assert_int_equal(st.opportunistic_queued, 1);
        queue_destroy(&q);
    }
}

/* The trade moves no other job's reservation: B's whole-node task waits for A's task about to
 * start (1 s). A's critical opportunistic task of 10 s in its place would push B to 10 s: no
 * trade. Of 1 s (but larger in memory, so simulated), it trades and B stays at 1 s. */
static void test_trade_keeps_other_jobs(void **state)
{
    (void)state;
    for (int longer = 0; longer < 2; longer++) {
        queue_t *q = mkq(2);
        push(q, 1, 1, 1, QUEUE_REGULAR, 0xa, 1);
        push(q, 2, 2, 5, QUEUE_REGULAR, 0xb, 0);
        queue_task_t o = {.id = 3,
                          .cpu = 1,
                          .mem_mb = 200,
                          .est_s = longer ? 10 : 1,
                          .klass = QUEUE_OPPORTUNISTIC,
                          .job = 0xa,
                          .prio = 20};
        assert_int_equal(queue_push(q, &o), 0);
        assert_true(fabs(expected(q, 0, 2) - 1) < 1e-9);
        queue_task_t t;
        queue_pick_info_t info;
        assert_int_equal(queue_pick_trade(q, 0, 0, &t, &info), 0);
        assert_int_equal(t.id, longer ? 1 : 3);
        assert_int_equal(info.traded, !longer);
        assert_true(fabs(expected(q, 0, 2) - 1) < 1e-9); /* B's reservation did not move */
        assert_class(q, longer ? 3 : 1, QUEUE_QUEUED, QUEUE_OPPORTUNISTIC);
        queue_destroy(&q);
    }
}

/* No trade when the opportunistic task is of lower (or equal) priority, does not fit the free
 * room, is held, belongs to another job, or the tasks are of no particular job (0). */
static void test_no_trade(void **state)
{
    (void)state;
    for (int c = 0; c < 6; c++) {
        queue_t *q = mkq(2);
        push(q, 9, 1, 50, QUEUE_REGULAR, 0xc, 0); /* another job's, running: 1 cpu free */
        queue_task_t t;
        assert_int_equal(queue_pick(q, 0, 0, &t), 0);
        uint64_t job = c == 5 ? 0 : 0xa;
        push(q, 1, 1, 4, QUEUE_REGULAR, job, 5);
        double prio = c == 0 ? 4 : c == 1 ? 5 : 10;
        double cpu = c == 2 ? 2 : 1;
        uint64_t ojob = c == 4 ? 0xb : job;
        push(q, 2, cpu, 4, QUEUE_OPPORTUNISTIC, ojob, prio);
        if (c == 3)
            assert_int_equal(queue_hold(q, 2, 1), 0);
        queue_pick_info_t info;
        assert_int_equal(queue_pick_trade(q, 0, 0, &t, &info), 0);
        assert_int_equal(t.id, 1);
        assert_int_equal(t.klass, QUEUE_REGULAR);
        assert_int_equal(info.traded, 0);
        assert_class(q, 2, QUEUE_QUEUED, QUEUE_OPPORTUNISTIC);
        queue_destroy(&q);
    }
}

/* Among the job's candidates the highest priority trades; the rest keep waiting. */
static void test_trade_highest_first(void **state)
{
    (void)state;
    queue_t *q = mkq(1);
    push(q, 1, 1, 4, QUEUE_REGULAR, 0xa, 1);
    push(q, 2, 1, 4, QUEUE_OPPORTUNISTIC, 0xa, 3);
    push(q, 3, 1, 4, QUEUE_OPPORTUNISTIC, 0xa, 7);
    push(q, 4, 1, 4, QUEUE_OPPORTUNISTIC, 0xa, 7);
    queue_task_t t;
    queue_pick_info_t info;
    assert_int_equal(queue_pick_trade(q, 0, 0, &t, &info), 0);
    assert_int_equal(t.id, 3);
    assert_int_equal(info.traded_id, 1);
    assert_int_equal(queue_pick_trade(q, 0, 0, &t, &info), ERR_NOTFOUND); /* the node is full */
    assert_int_equal(queue_finish(q, 3), 0);
    /* no regular task waits now: the opportunistic pick takes the job's best */
    assert_int_equal(queue_pick_trade(q, 1, 0, &t, &info), 0);
    assert_int_equal(t.id, 4);
    assert_int_equal(t.klass, QUEUE_OPPORTUNISTIC);
    assert_int_equal(info.traded, 0);
    queue_destroy(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trade_happens),
        cmocka_unit_test(test_trade_keeps_other_jobs),
        cmocka_unit_test(test_no_trade),
        cmocka_unit_test(test_trade_highest_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
