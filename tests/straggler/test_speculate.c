/* test_speculate.c - straggler detection and speculative copies (jm/speculate.h, Apollo §3.4):
 * when a copy starts and when it does not, the caps, "speculate": false, progress, the copy's
 * class, and the per-task state machine (first to finish wins, the others are cancelled). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/err.h"
#include "jm/speculate.h"

/* Ten finished tasks of the stage, 9.5 .. 10.4 s (median 9.95 s). */
static const double done[10] = {9.5, 9.6, 9.7, 9.8, 9.9, 10.0, 10.1, 10.2, 10.3, 10.4};

/* A task of that stage running 40 s, nothing known of its progress, a copy elsewhere ~11 s. */
static struct speculate_input straggler(void)
{
    struct speculate_input in = {
        .elapsed_s = 40,
        .stage_done = done,
        .nstage_done = 10,
        .est_run_s = 10,
        .progress = -1,
        .copy_c_s = 11,
        .copy_spread_s = 1,
        .speculate = 1,
        .copies = 0,
        .job_inflight = 0,
        .job_started = 0,
        .job_running = 20,
        .job_tasks = 100,
        .stage_inflight = 0,
        .stage_tasks = 20,
    };
    return in;
}

#define NEAR(a, b) assert_true((a) > (b)-1e-6 && (a) < (b) + 1e-6)

static void test_copy_starts_for_a_straggler(void **state)
{
    (void)state;
    struct speculate_input in = straggler();
    struct speculate_why why;
    assert_int_equal(speculate_check(NULL, &in, &why), SPECULATE_COPY);
    /* Past every finished duration: e / 2 = 20 s still to go; the copy at 84%: 11 + 1 = 12 s;
       8 s saved >= max(1 s, 0.5 x 12 s). */
    NEAR(why.remaining_s, 20);
    NEAR(why.copy_q_s, 12);
    NEAR(why.saving_s, 8);
}

static void test_no_copy_when_the_saving_is_small(void **state)
{
    (void)state;
    struct speculate_input in = straggler();
    in.elapsed_s = 30; /* 15 s to go against 12 s: 3 s < 6 s */
    struct speculate_why why;
    assert_int_equal(speculate_check(NULL, &in, &why), SPECULATE_NO);
    NEAR(why.remaining_s, 15);
    in.elapsed_s = 40;
    in.copy_spread_s = 4; /* a copy less certain: 15 s at 84%, 5 s < 7.5 s */
    assert_int_equal(speculate_check(NULL, &in, &why), SPECULATE_NO);
    in.copy_spread_s = 1;
    in.copy_c_s = 1e300; /* no other node */
    assert_int_equal(speculate_check(NULL, &in, NULL), SPECULATE_NO);
}

static void test_within_the_distribution_no_copy(void **state)
{
    (void)state;
    struct speculate_input in = straggler();
    in.elapsed_s = 10.05; /* three peers ran longer: it is expected to end within 0.3 s */
    in.copy_c_s = 0.1;
    in.copy_spread_s = 0;
    struct speculate_why why;
    assert_int_equal(speculate_check(NULL, &in, &why), SPECULATE_NO);
    NEAR(why.remaining_s, (0.05 + 0.15 + 0.25 + 0.35) / 4);
}

static void test_too_early(void **state)
{
    (void)state;
    struct speculate_input in = straggler();
    in.elapsed_s = 9;  /* younger than the stage's median */
    in.progress = 0.1; /* even though its rate says 81 s to go */
    assert_int_equal(speculate_check(NULL, &in, NULL), SPECULATE_TOO_EARLY);
    in.elapsed_s = 0.5; /* and never younger than 1 s */
    in.stage_done = NULL;
    in.nstage_done = 0;
    in.est_run_s = 0.1;
    assert_int_equal(speculate_check(NULL, &in, NULL), SPECULATE_TOO_EARLY);
}

static void test_progress_rate(void **state)
{
    (void)state;
    struct speculate_input in = straggler();
    in.elapsed_s = 12;
    in.progress = 0.3; /* 12 x 0.7 / 0.3 = 28 s to go: a 3x straggler seen early */
    struct speculate_why why;
    assert_int_equal(speculate_check(NULL, &in, &why), SPECULATE_COPY);
    NEAR(why.remaining_s, 28);
    in.progress = 0.9; /* a slow start but nearly done: 1.33 s */
    assert_int_equal(speculate_check(NULL, &in, &why), SPECULATE_NO);
    in.progress = 0.01; /* too little progress to trust: the distribution says 6 s */
    assert_int_equal(speculate_check(NULL, &in, &why), SPECULATE_NO);
    NEAR(why.remaining_s, 6);
    /* Progress from the PN's counters: bytes first, else CPU time. */
    NEAR(speculate_progress(3, 10, 50, 200), 0.25);
    NEAR(speculate_progress(3, 10, 0, 0), 0.3);
    NEAR(speculate_progress(30, 10, 0, 0), 1);
    assert_true(speculate_progress(3, 0, 0, 0) < 0);
}

static void test_worth_a_look(void **state)
{
    (void)state;
    /* 28 s to go (test_progress_rate); a copy's CPU part of 10 s saves 18 s >= max(1, 5) */
    struct speculate_input in = straggler();
    in.elapsed_s = 12;
    in.progress = 0.3;
    assert_true(speculate_worth_a_look(NULL, &in, 10));
    /* a CPU part of 20 s saves 8 s, under the 10 s the gain asks: no node is looked at */
    assert_false(speculate_worth_a_look(NULL, &in, 20));
    /* nearly done (0.63 s to go): under the 1 s margin even for a copy costing nothing */
    in.progress = 0.95;
    assert_false(speculate_worth_a_look(NULL, &in, 0));
}

static void test_few_finished_use_the_estimate(void **state)
{
    (void)state;
    struct speculate_input in = straggler();
    in.nstage_done = 2; /* fewer than min_finished: R = 10 s is the baseline */
    in.est_run_s = 50;  /* ... and R says it is young */
    assert_int_equal(speculate_check(NULL, &in, NULL), SPECULATE_TOO_EARLY);
    in.est_run_s = 10;
    assert_int_equal(speculate_check(NULL, &in, NULL), SPECULATE_COPY);
}

static void test_stage_in_units_of_estimate(void **state)
{
    (void)state;
    /* The stage kept as actual / R (0.95 .. 1.04) and scaled by this task's R = 10 s: the same
       verdicts as the durations themselves. */
    double ratio[10];
    for (size_t i = 0; i < 10; i++)
        ratio[i] = done[i] / 10;
    struct speculate_input in = straggler();
    in.stage_done = ratio;
    in.stage_scale = 10;
    struct speculate_why why;
    assert_int_equal(speculate_check(NULL, &in, &why), SPECULATE_COPY);
    NEAR(why.remaining_s, 20);
    in.elapsed_s = 10.05;
    in.copy_c_s = 0.1;
    in.copy_spread_s = 0;
    assert_int_equal(speculate_check(NULL, &in, &why), SPECULATE_NO);
    NEAR(why.remaining_s, 0.2);
    /* A task of the same stage 5x larger is young at 40 s. */
    in.stage_scale = 50;
    in.elapsed_s = 40;
    assert_int_equal(speculate_check(NULL, &in, &why), SPECULATE_TOO_EARLY);
}

static void test_speculate_false_never_copied(void **state)
{
    (void)state;
    struct speculate_input in = straggler();
    in.speculate = 0;
    in.elapsed_s = 1000;
    in.copy_c_s = 1;
    assert_int_equal(speculate_check(NULL, &in, NULL), SPECULATE_FORBIDDEN);
}

static void test_caps(void **state)
{
    (void)state;
    struct speculate_input in = straggler();
    in.copies = 1; /* one copy per task */
    assert_int_equal(speculate_check(NULL, &in, NULL), SPECULATE_CAPPED);
    in = straggler();
    in.job_inflight = 2; /* 10% of 20 running */
    assert_int_equal(speculate_check(NULL, &in, NULL), SPECULATE_CAPPED);
    in.job_inflight = 1;
    assert_int_equal(speculate_check(NULL, &in, NULL), SPECULATE_COPY);
    in = straggler();
    in.job_started = 10; /* 10% of 100 tasks in all */
    assert_int_equal(speculate_check(NULL, &in, NULL), SPECULATE_CAPPED);
    in.job_tasks = 10; /* a small job still gets 4 */
    in.job_started = 3;
    assert_int_equal(speculate_check(NULL, &in, NULL), SPECULATE_COPY);
    in.job_started = 4;
    assert_int_equal(speculate_check(NULL, &in, NULL), SPECULATE_CAPPED);
    in = straggler();
    in.stage_inflight = 2; /* 10% of the stage's 20 tasks */
    assert_int_equal(speculate_check(NULL, &in, NULL), SPECULATE_CAPPED);
    in.stage_tasks = 1; /* a one-task stage may have its one copy */
    in.stage_inflight = 0;
    assert_int_equal(speculate_check(NULL, &in, NULL), SPECULATE_COPY);
    in.job_running = 1; /* one task running: the job may still have one copy in flight */
    assert_int_equal(speculate_check(NULL, &in, NULL), SPECULATE_COPY);
    /* A configured cap. */
    struct speculate_config cfg;
    speculate_config_default(&cfg);
    cfg.max_copies = 2;
    in = straggler();
    in.copies = 1;
    assert_int_equal(speculate_check(&cfg, &in, NULL), SPECULATE_COPY);
}

static void test_copy_class(void **state)
{
    (void)state;
    assert_int_equal(speculate_copy_class(2, 0, 1), DISPATCH_REGULAR);
    assert_int_equal(speculate_copy_class(1, 4, 2), DISPATCH_OPPORTUNISTIC);
    assert_int_equal(speculate_copy_class(1, 1, 2), DISPATCH_NONE);
}

static void test_dist(void **state)
{
    (void)state;
    struct speculate_dist d;
    speculate_dist_init(&d);
    assert_int_equal(speculate_dist_median(&d), 0);
    assert_true(speculate_dist_stddev(&d) == 0);
    assert_int_equal(speculate_dist_add(&d, 2), 0);
    assert_true(speculate_dist_stddev(&d) == 0); /* one duration: no spread */
    assert_int_equal(speculate_dist_add(&d, 4), 0);
    assert_int_equal(speculate_dist_add(&d, 6), 0);
    assert_float_equal(speculate_dist_stddev(&d), 2.0, 1e-12); /* sample sd of 2, 4, 6 */
    speculate_dist_close(&d);
    speculate_dist_init(&d);
    const double v[] = {5, 1, 4, 2, 3, 3.5};
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(speculate_dist_add(&d, v[i]), 0);
    for (int i = 0; i < 40; i++) /* growth past the first allocation */
        assert_int_equal(speculate_dist_add(&d, 100 + i), 0);
    assert_int_equal(speculate_dist_add(&d, -1), ERR_INVAL);
    assert_int_equal(d.n, 46);
    for (size_t i = 1; i < d.n; i++)
        assert_true(d.v[i - 1] <= d.v[i]);
    assert_true(d.v[0] == 1 && d.v[5] == 5);
    speculate_dist_close(&d);
    assert_null(d.v);
}

/* A stage far larger than SPECULATE_DIST_MAX: a bounded, sorted sample whose quantiles are the
 * stage's (1,000,000 durations 0..999,999 in a scrambled order). */
static void test_dist_bounded(void **state)
{
    (void)state;
    struct speculate_dist d;
    speculate_dist_init(&d);
    const size_t n = 1000000;
    for (size_t i = 0; i < n; i++)
        assert_int_equal(speculate_dist_add(&d, (double)((i * 7919) % n)), 0);
    assert_true(d.n > SPECULATE_DIST_MAX / 2 && d.n <= SPECULATE_DIST_MAX);
    for (size_t i = 1; i < d.n; i++)
        assert_true(d.v[i - 1] <= d.v[i]);
    double med = speculate_dist_median(&d);
    assert_true(med > 0.49 * n && med < 0.51 * n);
    double p90 = d.v[(size_t)(0.9 * (double)(d.n - 1))];
    assert_true(p90 > 0.88 * n && p90 < 0.92 * n);
    speculate_dist_close(&d);
}

static void test_winner_and_cancel(void **state)
{
    (void)state;
    struct speculate_task t;
    speculate_task_init(&t);
    assert_int_equal(speculate_task_add(&t, 1, 3, 0), 0);
    assert_int_equal(speculate_task_started(&t, 1, 0, NULL, 0), 0);
    assert_int_equal(speculate_task_add(&t, 2, 5, 1), 0); /* the copy */
    assert_int_equal(speculate_task_add(&t, 2, 6, 1), ERR_EXISTS);
    assert_int_equal(speculate_task_live(&t), 2);
    assert_int_equal(speculate_task_live_copies(&t), 1);
    uint32_t cancel[SPECULATE_MAX_ATTEMPTS];
    /* The copy finishes first: it wins, the original is cancelled. */
    assert_int_equal(speculate_task_finished(&t, 2, cancel, SPECULATE_MAX_ATTEMPTS), 1);
    assert_int_equal(cancel[0], 1);
    assert_int_equal(t.winner, 1);
    assert_int_equal(t.a[0].state, SPECULATE_A_CANCELLED);
    /* The original's late finish is not a second winner; no new attempt after a winner. */
    assert_int_equal(speculate_task_finished(&t, 1, cancel, SPECULATE_MAX_ATTEMPTS), ERR_STATE);
    assert_int_equal(speculate_task_finished(&t, 9, cancel, SPECULATE_MAX_ATTEMPTS), ERR_NOTFOUND);
    assert_int_equal(speculate_task_add(&t, 3, 1, 1), ERR_STATE);
    assert_int_equal(speculate_task_live(&t), 0);
}

static void test_failed_copy_leaves_the_original(void **state)
{
    (void)state;
    struct speculate_task t;
    speculate_task_init(&t);
    assert_int_equal(speculate_task_add(&t, 1, 0, 0), 0);
    assert_int_equal(speculate_task_add(&t, 2, 1, 1), 0);
    assert_int_equal(speculate_task_failed(&t, 2), 1); /* the original still runs */
    assert_int_equal(speculate_task_failed(&t, 2), ERR_STATE);
    uint32_t cancel[SPECULATE_MAX_ATTEMPTS];
    assert_int_equal(speculate_task_finished(&t, 1, cancel, SPECULATE_MAX_ATTEMPTS), 0);
    assert_int_equal(t.winner, 0);
    /* Both fail: the task needs a retry. */
    speculate_task_init(&t);
    assert_int_equal(speculate_task_add(&t, 1, 0, 0), 0);
    assert_int_equal(speculate_task_add(&t, 2, 1, 1), 0);
    assert_int_equal(speculate_task_failed(&t, 1), 1);
    assert_int_equal(speculate_task_failed(&t, 2), 0);
    /* Slots of dead attempts are reused; live ones are not. */
    for (uint32_t id = 3; id < 3 + SPECULATE_MAX_ATTEMPTS; id++)
        assert_int_equal(speculate_task_add(&t, id, 0, 1), 0);
    assert_int_equal(speculate_task_add(&t, 99, 0, 1), ERR_FULL);
}

static void test_duplicate_discarded_when_one_starts(void **state)
{
    (void)state;
    struct speculate_task t;
    speculate_task_init(&t);
    assert_int_equal(speculate_task_add(&t, 1, 0, 0), 0); /* queued at a slow queue */
    assert_int_equal(speculate_task_add(&t, 2, 1, 1), 0); /* its duplicate elsewhere */
    uint32_t cancel[SPECULATE_MAX_ATTEMPTS];
    assert_int_equal(speculate_task_started(&t, 2, 1, cancel, SPECULATE_MAX_ATTEMPTS), 1);
    assert_int_equal(cancel[0], 1);
    assert_int_equal(speculate_task_live(&t), 1);
    assert_int_equal(speculate_task_started(&t, 1, 1, cancel, SPECULATE_MAX_ATTEMPTS),
                     ERR_NOTFOUND);
    assert_int_equal(speculate_task_finished(&t, 2, cancel, SPECULATE_MAX_ATTEMPTS), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy_starts_for_a_straggler),
        cmocka_unit_test(test_no_copy_when_the_saving_is_small),
        cmocka_unit_test(test_within_the_distribution_no_copy),
        cmocka_unit_test(test_too_early),
        cmocka_unit_test(test_progress_rate),
        cmocka_unit_test(test_worth_a_look),
        cmocka_unit_test(test_few_finished_use_the_estimate),
        cmocka_unit_test(test_stage_in_units_of_estimate),
        cmocka_unit_test(test_speculate_false_never_copied),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_copy_class),
        cmocka_unit_test(test_dist),
        cmocka_unit_test(test_dist_bounded),
        cmocka_unit_test(test_winner_and_cancel),
        cmocka_unit_test(test_failed_copy_leaves_the_original),
        cmocka_unit_test(test_duplicate_discarded_when_one_starts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
