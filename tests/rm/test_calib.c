/* test_calib.c - admission's error model (rm/calib.h): a new cluster is conservative, the
 * factors follow the outcomes, one absurd outcome is clamped, a decoded model is checked. */
#include "common/err.h"
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_cluster_is_conservative),
        cmocka_unit_test(test_tightens_as_jobs_finish),
        cmocka_unit_test(test_window_and_clamp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
