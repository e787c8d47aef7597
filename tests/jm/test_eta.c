/* test_eta.c - the ETA band from admission's model (jm/eta.h): the upper value is the rest's
 * median times the job's own spread times the learned factor, never below the median; without a
 * spread the simulator's own quantile stays; the half-done error and coverage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>

#include <cmocka.h>

#include "common/err.h"
#include "jm/eta.h"

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-9)

/* One row: elapsed, the rest's simulated p50 and q95, spread, learned factor -> the band. */
struct band_case {
    const char *what;
    double t_r, r50, r95, spread, own;
    double want_p50, want_p95, want_factor;
    int want_from_spread;
};

static void test_band_table(void **state)
{
    (void)state;
    static const struct band_case cases[] = {
        /* admission's model: 10 + 8 x 1.25 x 1.2 */
        {"spread x factor", 10, 8, 9, 1.25, 1.2, 18, 22, 1.5, 1},
        /* the simulated q95 (20) is ignored once the job has its own spread */
        {"spread beats the runs", 10, 8, 20, 1.1, 1.0, 18, 18.8, 1.1, 1},
        /* a factor learned below 1 / spread: the bound stays at the median */
        {"factor floored", 4, 10, 12, 1.05, 0.8, 14, 14, 1, 1},
        /* an older RM sent no factor: the spread alone */
        {"factor unknown", 0, 10, 12, 1.3, 0, 10, 13, 1.3, 1},
        {"factor not finite", 0, 10, 12, 1.3, NAN, 10, 13, 1.3, 1},
        /* no spread of its own (no profile): the simulator's q95 */
        {"no spread", 5, 10, 12, 0, 1.2, 15, 17, 1.2, 0},
        {"spread below 1 is none", 5, 10, 12, 0.9, 1.2, 15, 17, 1.2, 0},
        /* a q95 below the median (one noiseless run) is the median */
        {"q95 below p50", 5, 10, 7, 0, 0, 15, 15, 1, 0},
        /* nothing left to run */
        {"rest 0", 30, 0, 0, 1.2, 1.1, 30, 30, 1.32, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct band_case *c = &cases[i];
        struct eta_band b;
        print_message("%s\n", c->what);
        assert_int_equal(eta_band(c->t_r, c->r50, c->r95, c->spread, c->own, &b), 0);
        NEAR(b.p50_s, c->want_p50);
        NEAR(b.p95_s, c->want_p95);
        NEAR(b.factor, c->want_factor);
        assert_int_equal(b.from_spread, c->want_from_spread);
        /* the simulator's own upper value, kept for comparison either way */
        NEAR(b.p95_runs_s, c->t_r + (c->r95 > c->r50 ? c->r95 : c->r50));
        assert_true(b.p95_s >= b.p50_s);
    }
}

static void test_band_refuses_bad_input(void **state)
{
    (void)state;
    struct eta_band b = {.p50_s = 42};
    assert_int_equal(eta_band(-1, 5, 6, 1.2, 1, &b), ERR_INVAL);
    assert_int_equal(eta_band(1, NAN, 6, 1.2, 1, &b), ERR_INVAL);
    assert_int_equal(eta_band(INFINITY, 5, 6, 1.2, 1, &b), ERR_INVAL);
    assert_int_equal(eta_band(1, -5, 6, 1.2, 1, &b), ERR_INVAL);
    assert_int_equal(eta_band(1, 5, 6, 1.2, 1, NULL), ERR_INVAL);
    NEAR(b.p50_s, 42); /* untouched */
}

static void test_half_error_and_coverage(void **state)
{
    (void)state;
    NEAR(eta_half_error(11, 10), 0.1);
    NEAR(eta_half_error(9, 10), 0.1);
    assert_true(eta_half_error(0, 10) < 0);
    assert_true(eta_half_error(10, 0) < 0);
    assert_true(eta_half_error(NAN, 10) < 0);
    assert_int_equal(eta_half_covered(12, 10), 1);
    assert_int_equal(eta_half_covered(10, 10), 1);
    assert_int_equal(eta_half_covered(9.9, 10), 0);
    assert_int_equal(eta_half_covered(0, 10), -1);
    assert_int_equal(eta_half_covered(12, INFINITY), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_band_table),
        cmocka_unit_test(test_band_refuses_bad_input),
        cmocka_unit_test(test_half_error_and_coverage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
