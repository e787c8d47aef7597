/* Unit tests of pn/queue's regular queue: FIFO order, backfill never delays a task ahead, the
 * expected start of a task (kept since the previous push, moved by a new estimate), the weighted
 * random opportunistic pick, bounds and holds. The opportunistic side, class changes and a job's
 * priorities are in test_queue_class.c, class trades in test_queue_trade.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "common/rng.h"
#include "pn/queue.h"
#include "tests/pn/queue_fixture.h"

/* TASK_ESTIMATE: a new R for the running task moves the expected start of the one queued behind
 * it; a new R for a queued task moves the tasks behind it, not itself. */
static void test_set_estimate_moves_expected_start(void **state)
{
    (void)state;
    queue_t *q = mkq(1, 1000, 0, 0);
    loadprof_t p;
    loadprof_init(&p, 1, 1000);
    assert_int_equal(push(q, 1, 1, 100, 30, QUEUE_REGULAR, 0), 0);
    assert_int_equal(pick(q, 0, 0), 1);
    assert_int_equal(push(q, 2, 1, 100, 10, QUEUE_REGULAR, 0), 0);
    assert_int_equal(push(q, 3, 1, 100, 10, QUEUE_REGULAR, 0), 0);
    double at = 0;
    assert_int_equal(queue_expected_start(q, 0, 2, &p, &at), 0);
    assert_float_equal(at, 30, 1e-9);
    /* the tail cache is refreshed after an estimate */
    assert_int_equal(queue_expected_start_tail(q, 0, 100, 3, &p, &at), 0);
    assert_float_equal(at, 40, 1e-9);
    assert_int_equal(queue_set_estimate(q, 1, 5), 0);
    assert_int_equal(queue_expected_start(q, 0, 2, &p, &at), 0);
    assert_float_equal(at, 5, 1e-9);
    assert_int_equal(queue_expected_start_tail(q, 0, 100, 3, &p, &at), 0);
    assert_float_equal(at, 15, 1e-9);
    assert_int_equal(queue_set_estimate(q, 2, 50), 0);
    assert_int_equal(queue_expected_start(q, 0, 2, &p, &at), 0);
    assert_float_equal(at, 5, 1e-9);
    assert_int_equal(queue_expected_start(q, 0, 3, &p, &at), 0);
    assert_float_equal(at, 55, 1e-9);
    /* a running task past its new estimate is given a quarter of it more (0.5 s), at most
     * overrun_s (1 s); one not past it, only what is left of it */
    assert_int_equal(queue_set_estimate(q, 1, 2), 0);
    assert_int_equal(queue_expected_start(q, 3, 2, &p, &at), 0);
    assert_float_equal(at, 3.5, 1e-9);
    assert_int_equal(queue_expected_start(q, 1.8, 2, &p, &at), 0);
    assert_float_equal(at, 2, 1e-9);
    assert_int_equal(queue_set_estimate(q, 1, 8), 0);
    assert_int_equal(queue_expected_start(q, 10, 2, &p, &at), 0);
    assert_float_equal(at, 11, 1e-9);
    assert_int_equal(queue_set_estimate(q, 77, 2), ERR_NOTFOUND);
    assert_int_equal(queue_set_estimate(q, 1, NAN), ERR_INVAL);
    loadprof_close(&p);
    queue_destroy(&q);
}

static void test_fifo_order(void **state)
{
    (void)state;
    queue_t *q = mkq(1, 1000, 0, 0);
    for (uint64_t id = 1; id <= 5; id++)
        assert_int_equal(push(q, id, 1, 100, 5, QUEUE_REGULAR, 0), 0);
    for (uint64_t id = 1; id <= 5; id++) {
        assert_int_equal(pick(q, (double)id, 0), id);
        assert_int_equal(pick(q, (double)id, 0), 0); /* node full */
        assert_int_equal(queue_state(q, id, NULL), QUEUE_RUNNING);
        assert_int_equal(queue_finish(q, id), 0);
    }
    assert_int_equal(pick(q, 10, 0), 0);
    queue_destroy(&q);
    assert_null(q);
}

/* Node of 4 cores; A (3 cores, 10 s) runs; the head H needs 4 cores, so its reservation is at
 * t=10. B (1 core, 5 s) ends before that: backfilled. C (1 core, 20 s) would hold a core at
 * t=10 and delay H: not started. */
static void test_backfill_hand_case(void **state)
{
    (void)state;
    queue_t *q = mkq(4, 1000, 0, 0);
    assert_int_equal(push(q, 1, 3, 100, 10, QUEUE_REGULAR, 0), 0);
    assert_int_equal(pick(q, 0, 0), 1);
    assert_int_equal(push(q, 2, 4, 100, 5, QUEUE_REGULAR, 0), 0);  /* H */
    assert_int_equal(push(q, 3, 1, 100, 20, QUEUE_REGULAR, 0), 0); /* C */
    assert_int_equal(push(q, 4, 1, 100, 5, QUEUE_REGULAR, 0), 0);  /* B */
    loadprof_t p;
    loadprof_init(&p, 4, 1000);
    double h0;
    assert_int_equal(queue_expected_start(q, 0, 2, &p, &h0), 0);
    assert_true(fabs(h0 - 10) < 1e-9);
    assert_int_equal(pick(q, 0, 0), 4); /* B backfills */
    assert_int_equal(pick(q, 0, 0), 0); /* C must wait */
    double h1;
    assert_int_equal(queue_expected_start(q, 0, 2, &p, &h1), 0);
    assert_true(h1 <= h0 + 1e-9);
    /* At t=10 A and B are done: H first (FIFO), then C once H ends. */
    assert_int_equal(queue_finish(q, 4), 0);
    assert_int_equal(queue_finish(q, 1), 0);
    assert_int_equal(pick(q, 10, 0), 2);
    assert_int_equal(pick(q, 10, 0), 0);
    assert_int_equal(queue_finish(q, 2), 0);
    assert_int_equal(pick(q, 15, 0), 3);
    loadprof_close(&p);
    queue_destroy(&q);
}

/* Two resources: A (1 core, 900 of 1000 MiB, 10 s) runs, so the head H (2 cores, 500 MiB)
 * is reserved at t=10. B (1 core, 50 MiB, 20 s) starts now and runs past 10: H and B fit
 * together then. Y (2 cores, 10 MiB) also fits now, but at 10 it would leave H one core
 * short: it waits. Z (100 MiB) does not fit the memory now at all. */
static void test_backfill_two_resources(void **state)
{
    (void)state;
    queue_t *q = mkq(4, 1000, 0, 0);
    assert_int_equal(push(q, 1, 1, 900, 10, QUEUE_REGULAR, 0), 0);
    assert_int_equal(pick(q, 0, 0), 1);
    assert_int_equal(push(q, 2, 2, 500, 5, QUEUE_REGULAR, 0), 0); /* H */
    assert_int_equal(push(q, 3, 1, 50, 20, QUEUE_REGULAR, 0), 0); /* B */
    assert_int_equal(push(q, 4, 2, 10, 20, QUEUE_REGULAR, 0), 0); /* Y */
    assert_int_equal(push(q, 5, 1, 100, 1, QUEUE_REGULAR, 0), 0); /* Z */
    assert_int_equal(pick(q, 0, 0), 3);
    assert_int_equal(pick(q, 0, 0), 0);
    loadprof_t p;
    loadprof_init(&p, 4, 1000);
    double at;
    assert_int_equal(queue_expected_start(q, 0, 2, &p, &at), 0);
    assert_true(fabs(at - 10) < 1e-9);
    assert_int_equal(queue_expected_start(q, 0, 4, &p, &at), 0);
    assert_true(fabs(at - 15) < 1e-9); /* after H */
    loadprof_close(&p);
    queue_destroy(&q);
}

/* The random tests' draws (common/rng.h), each test seeding it afresh so none depends on the
 * order the tests run in. */
static struct rng queue__g;
static double unif(void)
{
    return rng_unif(&queue__g);
}

/* Random workloads: whenever a task starts out of order, no task ahead of it in the queue has
 * its expected start moved later. Also every task eventually runs exactly once. */
static void test_backfill_never_delays_ahead(void **state)
{
    (void)state;
    rng_seed(&queue__g, 42);
    loadprof_t p;
    loadprof_init(&p, 8, 16000);
    int backfilled = 0;
    for (int round = 0; round < 40; round++) {
        queue_t *q = mkq(8, 16000, 0, 0);
        uint64_t next = 1;
        int started = 0;
        double now = 0;
        uint64_t running[256];
        size_t nrun = 0;
        for (int i = 0; i < 60; i++)
            assert_int_equal(push(q, next++, 0.5 + floor(unif() * 8) * 0.5, 500 + unif() * 8000,
                                  1 + unif() * 20, QUEUE_REGULAR, 0),
                             0);
        while (started < 60) {
            /* expected starts of everything queued, before the pick */
            double before[64];
            uint64_t ids[64];
            size_t nq = 0;
            for (uint64_t id = 1; id < next; id++) {
                if (queue_state(q, id, NULL) != QUEUE_QUEUED)
                    continue;
                ids[nq] = id;
                assert_int_equal(queue_expected_start(q, now, id, &p, &before[nq]), 0);
                nq++;
            }
            uint64_t got = pick(q, now, 0);
            if (got) {
                started++;
                running[nrun++] = got;
                if (got != ids[0])
                    backfilled++;
                for (size_t k = 0; k < nq && ids[k] != got; k++) {
                    double after;
                    assert_int_equal(queue_expected_start(q, now, ids[k], &p, &after), 0);
                    assert_true(after <= before[k] + 1e-9);
                }
                continue;
            }
            /* nothing startable: the oldest running task ends, time moves on */
            assert_true(nrun > 0);
            size_t victim = (size_t)(unif() * (double)nrun);
            assert_int_equal(queue_finish(q, running[victim]), 0);
            running[victim] = running[--nrun];
            now += unif() * 3;
        }
        queue_stats_t st;
        queue_stats(q, &st);
        assert_int_equal(st.regular_queued, 0);
        queue_destroy(&q);
    }
    assert_true(backfilled > 0); /* the workloads did exercise backfill */
    loadprof_close(&p);
}

/* The expected start of the task just pushed, from the simulation kept since the previous
 * push, equals a full simulation's at the same time, across random pushes, picks, finishes and
 * cancels (each of which makes it simulate afresh); a task not at the tail is simulated. */
static void test_expected_start_tail_matches(void **state)
{
    (void)state;
    rng_seed(&queue__g, 42);
    loadprof_t p;
    loadprof_init(&p, 8, 16000);
    for (int round = 0; round < 30; round++) {
        queue_t *q = mkq(8, 16000, 0, 0);
        uint64_t next = 1, running[512];
        size_t nrun = 0;
        double now = 0;
        for (int step = 0; step < 300; step++) {
            double r = unif();
            if (r < 0.6) {
                uint64_t id = next++;
                assert_int_equal(push(q, id, 0.5 + floor(unif() * 8) * 0.5, 500 + unif() * 8000,
                                      1 + unif() * 20, QUEUE_REGULAR, 0),
                                 0);
                double fast = -1, full = -2;
                assert_int_equal(queue_expected_start_tail(q, now, 0.5, id, &p, &fast), 0);
                assert_int_equal(queue_expected_start(q, now, id, &p, &full), 0);
                assert_true(fabs(fast - (full < now ? now : full)) < 1e-9);
                if (id > 1 && queue_state(q, id - 1, NULL) == QUEUE_QUEUED) {
                    assert_int_equal(queue_expected_start_tail(q, now, 0.5, id - 1, &p, &fast), 0);
                    assert_int_equal(queue_expected_start(q, now, id - 1, &p, &full), 0);
                    assert_true(fabs(fast - full) < 1e-9); /* not the tail: simulated */
                }
            } else if (r < 0.8) {
                uint64_t got = pick(q, now, 0);
                if (got && nrun < 512)
                    running[nrun++] = got;
            } else if (r < 0.9 && nrun) {
                size_t victim = (size_t)(unif() * (double)nrun);
                assert_int_equal(queue_finish(q, running[victim]), 0);
                running[victim] = running[--nrun];
                now += unif() * 3; /* later than max_age: simulated afresh */
            } else if (next > 1) {
                queue_cancel(q, 1 + (uint64_t)(unif() * (double)(next - 1)));
            }
        }
        queue_destroy(&q);
    }
    loadprof_close(&p);
}

/* Weights 1 and 3: over evenly spread draws the heavier task is picked three times as often;
 * a task that does not fit is never picked. */
static void test_weighted_random_pick(void **state)
{
    (void)state;
    rng_seed(&queue__g, 42);
    queue_t *q = mkq(2, 1000, 0, 0);
    int count[4] = {0};
    for (int i = 0; i < 4000; i++) {
        if (queue_state(q, 1, NULL) == QUEUE_ABSENT)
            assert_int_equal(push(q, 1, 1, 100, 1, QUEUE_OPPORTUNISTIC, 1), 0);
        if (queue_state(q, 2, NULL) == QUEUE_ABSENT)
            assert_int_equal(push(q, 2, 1, 100, 1, QUEUE_OPPORTUNISTIC, 3), 0);
        if (queue_state(q, 3, NULL) == QUEUE_ABSENT)
            assert_int_equal(push(q, 3, 4, 100, 1, QUEUE_OPPORTUNISTIC, 0), ERR_CAPACITY);
        uint64_t got = pick(q, 0, unif());
        assert_true(got == 1 || got == 2);
        count[got]++;
        assert_int_equal(queue_finish(q, got), 0);
    }
    double share = count[2] / 4000.0;
    assert_true(share > 0.72 && share < 0.78);
    /* deterministic draws: below 1/4 picks the first, above picks the second */
    assert_int_equal(queue_cancel(q, 1) + queue_cancel(q, 2), ERR_NOTFOUND); /* one queued */
    assert_int_equal(push(q, 1, 1, 100, 1, QUEUE_OPPORTUNISTIC, 1), 0);
    assert_int_equal(push(q, 2, 1, 100, 1, QUEUE_OPPORTUNISTIC, 3), 0);
    assert_int_equal(pick(q, 0, 0.2), 1);
    assert_int_equal(queue_finish(q, 1), 0);
    assert_int_equal(push(q, 1, 1, 100, 1, QUEUE_OPPORTUNISTIC, 1), 0);
    assert_int_equal(pick(q, 0, 0.3), 2);
    queue_destroy(&q);
}

/* A push of an id above every earlier one skips the duplicate scans; ids pushed out of order
 * are still refused when repeated, in either class and once running. */
static void test_push_duplicates(void **state)
{
    (void)state;
    queue_t *q = mkq(1, 1000, 100, 100);
    assert_int_equal(push(q, 10, 1, 100, 1, QUEUE_REGULAR, 0), 0);
    assert_int_equal(push(q, 5, 1, 100, 1, QUEUE_OPPORTUNISTIC, 0), 0);
    assert_int_equal(push(q, 5, 1, 100, 1, QUEUE_REGULAR, 0), ERR_EXISTS);
    assert_int_equal(push(q, 10, 1, 100, 1, QUEUE_OPPORTUNISTIC, 0), ERR_EXISTS);
    assert_int_equal(push(q, 11, 1, 100, 1, QUEUE_REGULAR, 0), 0);
    assert_int_equal(pick(q, 0, 0.5), 10); /* running now */
    assert_int_equal(push(q, 10, 1, 100, 1, QUEUE_REGULAR, 0), ERR_EXISTS);
    assert_int_equal(queue_finish(q, 10), 0);
    assert_int_equal(push(q, 12, 1, 100, 1, QUEUE_REGULAR, 0), 0);
    queue_destroy(&q);
}

static void test_bounds_and_cancel(void **state)
{
    (void)state;
    queue_t *q = mkq(1, 1000, 2, 1);
    assert_int_equal(push(q, 1, 1, 100, 1, QUEUE_REGULAR, 0), 0);
    assert_int_equal(push(q, 2, 1, 100, 1, QUEUE_REGULAR, 0), 0);
    assert_int_equal(push(q, 3, 1, 100, 1, QUEUE_REGULAR, 0), ERR_FULL);
    assert_int_equal(push(q, 2, 1, 100, 1, QUEUE_OPPORTUNISTIC, 0), ERR_EXISTS);
    assert_int_equal(push(q, 4, 1, 100, 1, QUEUE_OPPORTUNISTIC, 0), 0);
    assert_int_equal(push(q, 5, 1, 100, 1, QUEUE_OPPORTUNISTIC, 0), ERR_FULL);
    assert_int_equal(push(q, 6, 2, 100, 1, QUEUE_REGULAR, 0), ERR_CAPACITY);
    assert_int_equal(push(q, 7, 1, 2000, 1, QUEUE_REGULAR, 0), ERR_CAPACITY);
    assert_int_equal(push(q, 8, 0, 100, 1, QUEUE_REGULAR, 0), ERR_INVAL);
    assert_int_equal(push(q, 9, NAN, 100, 1, QUEUE_REGULAR, 0), ERR_INVAL);
    assert_int_equal(pick(q, 0, 0), 1);
    assert_int_equal(queue_cancel(q, 1), ERR_STATE);
    assert_int_equal(queue_cancel(q, 2), 0);
    assert_int_equal(queue_cancel(q, 2), ERR_NOTFOUND);
    assert_int_equal(push(q, 3, 1, 100, 1, QUEUE_REGULAR, 0), 0); /* room again */
    queue_destroy(&q);
    /* a failed allocation leaves the queue as it was */
    q = mkq(1, 1000, 0, 0);
    mem_fail_after(0);
    assert_int_equal(push(q, 1, 1, 100, 1, QUEUE_REGULAR, 0), ERR_NOMEM);
    mem_fail_reset();
    assert_int_equal(queue_state(q, 1, NULL), QUEUE_ABSENT);
    queue_stats_t st;
    queue_stats(q, &st);
    assert_int_equal(st.regular_queued, 0);
    assert_int_equal(push(q, 1, 1, 100, 1, QUEUE_REGULAR, 0), 0);
    queue_destroy(&q);
}

/* A held task (files still staging) keeps its place: it does not start, a smaller task may
 * backfill only without delaying it, and once released it starts first. */
static void test_hold_keeps_place(void **state)
{
    (void)state;
    queue_t *q = mkq(2, 1000, 0, 0);
    assert_int_equal(push(q, 1, 2, 100, 10, QUEUE_REGULAR, 0), 0);
    assert_int_equal(push(q, 2, 2, 100, 10, QUEUE_REGULAR, 0), 0);
    assert_int_equal(queue_hold(q, 1, 1), 0);
    assert_int_equal(pick(q, 0, 0), 0); /* 2 would delay the held head */
    assert_int_equal(queue_hold(q, 1, 0), 0);
    assert_int_equal(pick(q, 0, 0), 1);
    assert_int_equal(queue_hold(q, 1, 1), ERR_NOTFOUND); /* running, not queued */
    queue_destroy(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_order),
        cmocka_unit_test(test_backfill_hand_case),
        cmocka_unit_test(test_backfill_two_resources),
        cmocka_unit_test(test_backfill_never_delays_ahead),
        cmocka_unit_test(test_expected_start_tail_matches),
        cmocka_unit_test(test_weighted_random_pick),
        cmocka_unit_test(test_set_estimate_moves_expected_start),
        cmocka_unit_test(test_push_duplicates),
        cmocka_unit_test(test_bounds_and_cancel),
        cmocka_unit_test(test_hold_keeps_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
