/* test_calib.c - admission's error model (rm/calib.h): a new cluster is conservative, the
 * factors follow the outcomes, one absurd outcome is clamped, a decoded model is checked, a run
 * is measured on the tokens it held. */
#include "common/err.h"
#include "rm/arbiter.h"
#include "rm/calib.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

static void test_new_cluster_is_conservative(void **state)
{
    (void)state;
    struct calib c;
    calib_init(&c);
    struct calib_factors f;
    calib_factors(&c, &f);
    assert_int_equal(f.n, 0);
    assert_float_equal(f.hi, CALIB_PRIOR_HI, 1e-12);
    assert_float_equal(f.p50, CALIB_PRIOR_P50, 1e-12);
    assert_int_equal(calib_check(&c), 0);
}

/* calib_predicted: the model's median on the tokens held on average (held / actual) */
static void test_predicted_on_tokens_held(void **state)
{
    (void)state;
    /* W 100, L 10, width 10, alpha 0.25: on 10 tokens 10 + 0.25 x 9 = 12.25 s; on 4 tokens
       25 + 0.25 x 7.5 = 26.875 s; without alpha halfway: 28.75 s */
    struct arbiter_shape s = {
        .work = 100, .path = 10, .width = 10, .has_alpha = true, .alpha = 0.25};
    assert_float_equal(arbiter_time_p50(&s, 10), 12.25, 1e-9);
    assert_float_equal(arbiter_time_p50(&s, 40), 12.25, 1e-9); /* no more than its width */
    assert_float_equal(calib_predicted(&s, 28, 4 * 28, 0), 26.875, 1e-9);
    assert_float_equal(calib_predicted(&s, 28, 4 * 28, 4 * 28 * 1.1), 26.875, 1e-9);
    assert_float_equal(calib_predicted(&s, 13, 10 * 13, 90), 12.25, 1e-9);
    s.has_alpha = false;
    assert_float_equal(calib_predicted(&s, 28, 4 * 28, 0), 28.75, 1e-9);
    /* teaches nothing: under one token held on average, tasks beyond what it held, nonsense */
    assert_true(calib_predicted(&s, 28, 20, 0) == 0);
    assert_true(calib_predicted(&s, 28, 4 * 28, 4 * 28 * 1.11) == 0);
    assert_true(calib_predicted(&s, 0, 10, 0) == 0);
    assert_true(calib_predicted(&s, 28, -1, 0) == 0);
    struct arbiter_shape empty = {.width = 1};
    assert_true(calib_predicted(&empty, 28, 28, 0) == 0);
}

static void test_tightens_as_jobs_finish(void **state)
{
    (void)state;
    struct calib c;
    calib_init(&c);
    double prev = CALIB_PRIOR_HI;
    /* jobs that finish 2-8% over the prediction: the bound falls towards their q95 */
    for (int i = 0; i < 64; i++) {
        assert_int_equal(calib_add(&c, 100.0 * (1.02 + 0.06 * (i % 7) / 6.0), 100.0), 0);
        struct calib_factors f;
        calib_factors(&c, &f);
        assert_true(f.hi <= prev + 1e-12);
        assert_true(f.hi >= f.p50);
        prev = f.hi;
    }
    struct calib_factors f;
    calib_factors(&c, &f);
    assert_int_equal(f.n, 64);
    assert_true(f.sample_hi > 1.07 && f.sample_hi <= 1.08 + 1e-9);
    assert_true(f.sample_p50 > 1.04 && f.sample_p50 < 1.06);
    /* 8 prior outcomes at 1.5 against 64 at about 1.08 */
    assert_float_equal(f.hi, (8 * 1.5 + 64 * f.sample_hi) / 72, 1e-9);
    assert_true(f.hi < 1.13);
    /* a cluster whose jobs start to run late widens it again */
    for (int i = 0; i < 32; i++)
        calib_add(&c, 140, 100);
    struct calib_factors g;
    calib_factors(&c, &g);
    assert_true(g.hi > 1.3);
}

static void test_window_and_clamp(void **state)
{
    (void)state;
    struct calib c;
    calib_init(&c);
    assert_int_equal(calib_add(&c, 10, 0), ERR_INVAL);
    assert_int_equal(calib_add(&c, 10, -1), ERR_INVAL);
    assert_int_equal(calib_add(&c, 1.0 / 0.0, 10), ERR_INVAL);
    assert_int_equal(c.total, 0);
    assert_int_equal(calib_add(&c, 1e9, 1), 0); /* clamped, not a poison pill */
    assert_int_equal(c.ratio_milli[0], (uint32_t)(CALIB_RATIO_MAX * 1000));
    for (int i = 0; i < CALIB_WINDOW + 10; i++)
        calib_add(&c, 1, 1);
    assert_int_equal(c.n, CALIB_WINDOW);
    assert_int_equal(c.total, CALIB_WINDOW + 11);
    struct calib_factors f;
    calib_factors(&c, &f);
    assert_float_equal(f.sample_hi, 1.0, 1e-12); /* the outlier left the window */
    assert_int_equal(calib_check(&c), 0);
    c.ratio_milli[3] = 0;
    assert_int_equal(calib_check(&c), ERR_PARSE);
    c.ratio_milli[3] = 1000;
    c.head = CALIB_WINDOW;
    assert_int_equal(calib_check(&c), ERR_PARSE);
}

/* A job's own history (issue 22): no repeated job, the prior; each repeat's u over the median of
 * its own earlier runs (at most CALIB_HIST) is what the rule missed; a job's median reads its
 * latest CALIB_HIST runs only. */
static void test_history(void **state)
{
    (void)state;
    struct calib_run r[40];
    struct calib_hist h;
    calib_hist_model(NULL, 0, &h);
    assert_int_equal(h.n, 0);
    assert_float_equal(h.hi, CALIB_PRIOR_OWN, 1e-9);
    struct calib c;
    calib_init(&c);
    struct calib_factors f;
    calib_factors(&c, &f);
    /* no repeated job yet: the cluster's own-spread bound, or the job's median if higher */
    assert_float_equal(calib_hist_bound(&f, &h, 1.1, 0.9), 1.1 * CALIB_PRIOR_OWN, 1e-9);
    assert_float_equal(calib_hist_bound(&f, &h, 1.1, 1.5), 1.1 * 1.5, 1e-9);
    for (int i = 0; i < 10; i++)
        r[i] = (struct calib_run){.key = 100 + (uint64_t)i, .u = 1.0 + 0.02 * i};
    calib_hist_model(r, 10, &h);
    assert_int_equal(h.n, 0); /* ten jobs, none twice */
    double m = 0;
    assert_int_equal(calib_hist_median(r, 10, 7, &m), 0);
    /* job 7 ten times at 0.9, then 0.99 (10% over its median) and 30 times 0.9 again */
    for (int i = 0; i < 40; i++)
        r[i] = (struct calib_run){.key = 7, .u = i == 10 ? 0.99 : 0.9};
    calib_hist_model(r, 11, &h);
    assert_int_equal(h.n, 10);
    assert_float_equal(h.sample_hi, 1.0 + 0.1 * 0.55, 1e-3); /* q95 of nine 1.0 and one 1.1 */
    assert_float_equal(h.hi, (8 * CALIB_PRIOR_OWN + 10 * 1.055) / 18, 1e-3);
    calib_hist_model(r, 40, &h);
    assert_int_equal(h.n, 39);
    assert_true(h.hi < 1.04); /* repeats agree: towards the sample's 1.0 */
    /* an early job's history does not narrow the cluster's bound (1.2); a late one's widens it,
     * towards its own as v's accrue */
    assert_float_equal(calib_hist_bound(&f, &h, 1.0, 0.9), CALIB_PRIOR_OWN, 1e-9);
    double b = calib_hist_bound(&f, &h, 1.0, 1.4);
    assert_float_equal(b, (8 * CALIB_PRIOR_OWN + 39 * 1.4 * h.hi) / 47, 1e-9);
    assert_true(b > 1.4);
    /* a few v's: the prior still weighs (8 x 1.2 + 2 x 1.0) / 10 */
    calib_hist_model(r, 3, &h);
    assert_float_equal(h.hi, 1.16, 1e-9);
    assert_int_equal(calib_hist_median(r, 11, 7, &m), CALIB_HIST);
    assert_float_equal(m, 0.9, 1e-9); /* 0.99 is one of eight */
    r[9].u = r[8].u = r[7].u = r[6].u = 0.99;
    assert_int_equal(calib_hist_median(r, 11, 7, &m), CALIB_HIST);
    assert_float_equal(m, 0.99, 1e-9); /* five of the latest eight */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_cluster_is_conservative),
        cmocka_unit_test(test_tightens_as_jobs_finish),
        cmocka_unit_test(test_predicted_on_tokens_held),
        cmocka_unit_test(test_window_and_clamp),
        cmocka_unit_test(test_history),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
