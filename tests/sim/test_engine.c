/* test_engine.c - the simulator's event engine: event order, tie-break, scheduling rules, and the
 * seeded random streams. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "tools/sim/engine.h"

struct trace {
    double t[64];
    uint64_t arg[64];
    size_t n;
};

static void rec(engine_t *e, void *ctx, uint64_t arg)
{
    struct trace *tr = ctx;
    if (tr->n < 64) {
        tr->t[tr->n] = engine_now(e);
        tr->arg[tr->n] = arg;
        tr->n++;
    }
}

static void test_time_order_and_ties(void **state)
{
    (void)state;
    engine_t *e = NULL;
    assert_int_equal(engine_new(&e), 0);
    struct trace tr = {0};
    /* Scheduled out of order; equal times must come out in scheduling order. */
    assert_int_equal(engine_at(e, 3.0, rec, &tr, 1), 0);
    assert_int_equal(engine_at(e, 1.0, rec, &tr, 2), 0);
    assert_int_equal(engine_at(e, 2.0, rec, &tr, 3), 0);
    assert_int_equal(engine_at(e, 1.0, rec, &tr, 4), 0);
    assert_int_equal(engine_at(e, 1.0, rec, &tr, 5), 0);
    assert_int_equal(engine_pending(e), 5);
    assert_int_equal(engine_run(e, 100), 5);
    uint64_t want[] = {2, 4, 5, 3, 1};
    double wt[] = {1, 1, 1, 2, 3};
    assert_int_equal(tr.n, 5);
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(tr.arg[i], want[i]);
        assert_true(tr.t[i] == wt[i]);
    }
    assert_true(engine_now(e) == 3.0);
    assert_int_equal(engine_events_run(e), 5);
    assert_int_equal(engine_step(e), 0);
    engine_destroy(&e);
    assert_null(e);
}

static void test_no_past_events(void **state)
{
    (void)state;
    engine_t *e = NULL;
    assert_int_equal(engine_new(&e), 0);
    struct trace tr = {0};
    assert_int_equal(engine_at(e, 5.0, rec, &tr, 1), 0);
    assert_int_equal(engine_step(e), 1);
    assert_int_equal(engine_at(e, 4.999, rec, &tr, 2), ERR_INVAL);
    assert_int_equal(engine_at(e, NAN, rec, &tr, 2), ERR_INVAL);
    assert_int_equal(engine_after(e, -1, rec, &tr, 2), ERR_INVAL);
    assert_int_equal(engine_at(e, 5.0, NULL, &tr, 2), ERR_INVAL);
    assert_int_equal(engine_pending(e), 0);
    assert_int_equal(engine_after(e, 0, rec, &tr, 3), 0); /* "now" is allowed */
    assert_int_equal(engine_step(e), 1);
    assert_true(tr.t[1] == 5.0);
    engine_destroy(&e);
}

/* An event that reschedules itself every second and schedules a same-time follower. */
struct chain {
    struct trace tr;
    int count;
};

static void follower(engine_t *e, void *ctx, uint64_t arg)
{
    struct chain *c = ctx;
    rec(e, &c->tr, 1000 + arg);
}

static void ticker(engine_t *e, void *ctx, uint64_t arg)
{
    struct chain *c = ctx;
    rec(e, &c->tr, arg);
    assert_int_equal(engine_after(e, 0, follower, c, arg), 0);
    if (++c->count == 3) {
        engine_stop(e);
        return;
    }
    assert_int_equal(engine_after(e, 1.0, ticker, c, arg + 1), 0);
}

static void test_reschedule_until_and_stop(void **state)
{
    (void)state;
    engine_t *e = NULL;
    assert_int_equal(engine_new(&e), 0);
    struct chain c = {0};
    assert_int_equal(engine_at(e, 0.5, ticker, &c, 0), 0);
    /* until = 1.6: ticks at 0.5 and 1.5 and their followers. */
    assert_int_equal(engine_run(e, 1.6), 4);
    assert_int_equal(c.tr.n, 4);
    assert_int_equal(c.tr.arg[0], 0);
    assert_int_equal(c.tr.arg[1], 1000);
    assert_int_equal(c.tr.arg[2], 1);
    assert_int_equal(c.tr.arg[3], 1001);
    assert_true(engine_now(e) == 1.5);
    /* The third tick calls engine_stop: the run returns right after it, its same-time follower
       still pending. */
    assert_int_equal(engine_run(e, 100), 1);
    assert_int_equal(c.tr.n, 5);
    assert_int_equal(c.tr.arg[4], 2);
    assert_true(engine_now(e) == 2.5);
    assert_int_equal(engine_pending(e), 1);
    /* Many events: the pool grows past one chunk and recycles. */
    struct trace tr2 = {0};
    for (int i = 0; i < 10000; i++)
        assert_int_equal(engine_after(e, (double)(i % 7), rec, &tr2, (uint64_t)i), 0);
    assert_int_equal(engine_run(e, 1e9), 10000 + 1);
    assert_int_equal(c.tr.arg[5], 1002);
    assert_int_equal(tr2.n, 64);
    assert_int_equal(tr2.arg[0], 0); /* time 2.5 + 0: the multiples of 7, in order */
    assert_int_equal(tr2.arg[1], 7);
    engine_destroy(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_time_order_and_ties),
        cmocka_unit_test(test_no_past_events),
        cmocka_unit_test(test_reschedule_until_and_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
