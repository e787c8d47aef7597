/* test_noise.c - the simulator's noise models have the distributions tools/sim/engine_noise.h and
 * tools/sim/engine.h state: means and quantiles within tolerance over many seeded draws. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "tools/sim/engine.h"
#include "tools/sim/engine_noise.h"

#define N 200000

static double v[N];

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double mean(const double *x, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    return s / (double)n;
}

static void near(double got, double want, double rel)
{
    if (!(fabs(got - want) <= rel * fabs(want))) {
        print_error("got %g, want %g within %g%%\n", got, want, 100 * rel);
        fail();
    }
}

static void test_exponential(void **state)
{
    (void)state;
    struct rng r;
    rng_seed_stream(&r, 1, 1);
    for (size_t i = 0; i < N; i++)
        v[i] = rng_exp(&r, 2.5);
    near(mean(v, N), 2.5, 0.02);
    qsort(v, N, sizeof *v, cmp);
    near(v[N / 2], 2.5 * log(2.0), 0.02); /* median */
    near(v[(size_t)(0.9 * N)], 2.5 * log(10.0), 0.03);
    assert_true(rng_exp(&r, 0) == 0);
}

static void test_normal_lognormal(void **state)
{
    (void)state;
    struct rng r;
    rng_seed_stream(&r, 2, 1);
    double s = 0, s2 = 0;
    for (size_t i = 0; i < N; i++) {
        double z = rng_normal(&r);
        s += z;
        s2 += z * z;
    }
    assert_true(fabs(s / N) < 0.01);
    near(s2 / N, 1.0, 0.02);
    for (size_t i = 0; i < N; i++)
        v[i] = rng_lognormal(&r, 1.0, 0.5);
    near(mean(v, N), exp(1.0 + 0.125), 0.02);
    qsort(v, N, sizeof *v, cmp);
    near(v[N / 2], exp(1.0), 0.02);
}

static void test_pareto_tail(void **state)
{
    (void)state;
    struct rng r;
    rng_seed_stream(&r, 3, 1);
    size_t over2 = 0, over10 = 0;
    for (size_t i = 0; i < N; i++) {
        double x = rng_pareto(&r, 1.0, 1.5);
        assert_true(x >= 1.0);
        over2 += x > 2;
        over10 += x > 10;
    }
    near((double)over2 / N, pow(0.5, 1.5), 0.03);
    near((double)over10 / N, pow(0.1, 1.5), 0.08);
    /* alpha = 3: finite mean 1.5 * xm */
    for (size_t i = 0; i < N; i++)
        v[i] = rng_pareto(&r, 2.0, 3.0);
    near(mean(v, N), 3.0, 0.02);
}

static void test_runtime_noise(void **state)
{
    (void)state;
    struct engine_noise n;
    engine_noise_default(&n);
    n.tail_prob = 0;
    n.straggler_prob = 0;
    struct rng r;
    rng_seed_stream(&r, 4, 1);
    for (size_t i = 0; i < N; i++)
        v[i] = engine_noise_runtime(&n, &r, 10.0, NULL);
    near(mean(v, N), 10.0, 0.02); /* the variance keeps the mean */
    qsort(v, N, sizeof *v, cmp);
    near(v[N / 2], 10.0 * exp(-0.5 * 0.3 * 0.3), 0.02);
    near(v[(size_t)(0.9 * N)], 10.0 * exp(-0.045 + 0.3 * 1.2815516), 0.02);

    /* Stragglers: the stated share, each slowed by U(min, max). */
    engine_noise_none(&n);
    n.straggler_prob = 0.05;
    size_t strag = 0;
    double slow = 0;
    for (size_t i = 0; i < N; i++) {
        int s = 0;
        double t = engine_noise_runtime(&n, &r, 1.0, &s);
        if (s) {
            strag++;
            slow += t;
            assert_true(t >= 2.0 && t <= 5.0);
        } else {
            assert_true(t == 1.0);
        }
    }
    near((double)strag / N, 0.05, 0.05);
    near(slow / (double)strag, 3.5, 0.02);

    /* Heavy tail: P(run > 2 x base) = tail_prob * 2^-alpha without other noise. */
    engine_noise_none(&n);
    n.tail_prob = 0.1;
    n.tail_alpha = 1.5;
    size_t over = 0;
    for (size_t i = 0; i < N; i++)
        over += engine_noise_runtime(&n, &r, 1.0, NULL) > 2.0;
    near((double)over / N, 0.1 * pow(0.5, 1.5), 0.05);
}

static void test_failures_loss_phases(void **state)
{
    (void)state;
    struct engine_noise n;
    engine_noise_default(&n);
    n.fail_prob = 0.1;
    struct rng r;
    rng_seed_stream(&r, 5, 1);
    size_t fails = 0;
    double at = 0;
    for (size_t i = 0; i < N; i++) {
        double f = engine_noise_failure(&n, &r, 8.0);
        if (f >= 0) {
            assert_true(f < 8.0);
            fails++;
            at += f;
        }
    }
    near((double)fails / N, 0.1, 0.03);
    near(at / (double)fails, 4.0, 0.03); /* uniform over the run */

    n.node_mtbf_s = 3600;
    n.node_down_s = 60;
    for (size_t i = 0; i < N; i++)
        v[i] = engine_noise_uptime(&n, &r);
    near(mean(v, N), 3600, 0.02);
    for (size_t i = 0; i < N; i++)
        v[i] = engine_noise_downtime(&n, &r);
    near(mean(v, N), 60, 0.02);
    n.node_mtbf_s = 0;
    assert_true(isinf(engine_noise_uptime(&n, &r)));

    /* Spare-capacity phases: multiplier of mean 1, median exp(-s^2/2). */
    for (size_t i = 0; i < N; i++)
        v[i] = engine_noise_phase_mult(&n, &r);
    near(mean(v, N), 1.0, 0.03);
    qsort(v, N, sizeof *v, cmp);
    near(v[N / 2], exp(-0.5 * 0.8 * 0.8), 0.03);
    for (size_t i = 0; i < 1000; i++)
        v[i] = engine_noise_phase_len(&n, &r);
    near(mean(v, 1000), 30, 0.1);
    engine_noise_none(&n);
    assert_true(engine_noise_phase_mult(&n, &r) == 1.0);
    assert_true(isinf(engine_noise_phase_len(&n, &r)));
    assert_true(engine_noise_failure(&n, &r, 1.0) < 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exponential),          cmocka_unit_test(test_normal_lognormal),
        cmocka_unit_test(test_pareto_tail),          cmocka_unit_test(test_runtime_noise),
        cmocka_unit_test(test_failures_loss_phases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
