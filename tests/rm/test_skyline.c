/* test_skyline.c - resampling (averages, repeats, time-weighted non-multiples, token-seconds
 * conserved) and the Morpheus §5 LP fit against skylines solved by hand: one run, identical
 * runs, debt caught up later but over-allocation lost, ties broken by ε, α = 1 giving the
 * pointwise minimum, α near 0 covering every run's debt, invalid input, allocation failure, and
 * the largest fit (32 runs × 512 steps) with its time printed. */
#include "common/err.h"
#include "common/mem.h"
#include "rm/skyline.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#define TOL 1e-6

static void assert_vec(const double *got, const double *want, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (fabs(got[i] - want[i]) > TOL)
            fail_msg("step %zu: got %.9g, want %.9g", i, got[i], want[i]);
    }
}

/* Final debt D_{i,K} of one run under s, from the definition. */
static double final_debt(const double *run, const double *s, size_t k)
{
    double d = 0;
    for (size_t q = 0; q < k; q++) {
        d += run[q] - s[q];
        if (d < 0)
            d = 0;
    }
    return d;
}

/* ---- resampling ---- */

static void resample_down_averages(void **state)
{
    (void)state;
    double in[] = {1, 3, 5, 7}, out[8];
    assert_int_equal(skyline_resample(in, 4, 1000, out, 8, 2000), 2);
    assert_vec(out, (double[]){2, 6}, 2);
    /* An odd length: the last output step is half past the run's end, which used nothing. */
    assert_int_equal(skyline_resample(in, 3, 1000, out, 8, 2000), 2);
    assert_vec(out, (double[]){2, 2.5}, 2);
    /* 1 s to 4 s: one step of the mean. */
    assert_int_equal(skyline_resample(in, 4, 1000, out, 8, 4000), 1);
    assert_float_equal(out[0], 4, TOL);
}

static void resample_up_repeats(void **state)
{
    (void)state;
    double in[] = {2, 6}, out[8];
    assert_int_equal(skyline_resample(in, 2, 2000, out, 8, 1000), 4);
    assert_vec(out, (double[]){2, 2, 6, 6}, 4);
    /* Same step: a copy. */
    assert_int_equal(skyline_resample(in, 2, 2000, out, 8, 2000), 2);
    assert_vec(out, in, 2);
}

static void resample_time_weighted(void **state)
{
    (void)state;
    double out[8];
    /* 3 s steps to 2 s: [0,2) = 3, [2,4) = (3·1 + 6·1)/2, [4,6) = 6. */
    assert_int_equal(skyline_resample((double[]){3, 6}, 2, 3000, out, 8, 2000), 3);
    assert_vec(out, (double[]){3, 4.5, 6}, 3);
    /* 2 s steps to 3 s: [0,3) = (1·2 + 2·1)/3, [3,6) = (2·1 + 3·2)/3. */
    assert_int_equal(skyline_resample((double[]){1, 2, 3}, 3, 2000, out, 8, 3000), 2);
    assert_vec(out, (double[]){4.0 / 3, 8.0 / 3}, 2);
    /* 1 s to 1.5 s: ceil(1/1.5) = 1 step holding 1 s of use. */
    assert_int_equal(skyline_resample((double[]){1}, 1, 1000, out, 8, 1500), 1);
    assert_float_equal(out[0], 2.0 / 3, TOL);
    /* Token-seconds are conserved for any pair of steps. */
    double in[37];
    for (size_t i = 0; i < 37; i++)
        in[i] = (double)((i * 7919) % 13);
    double want = 0;
    for (size_t i = 0; i < 37; i++)
        want += in[i] * 700;
    uint32_t steps[] = {100, 300, 700, 999, 1000, 4900, 30000};
    for (size_t t = 0; t < sizeof steps / sizeof steps[0]; t++) {
        double big[300];
        size_t m = skyline_resample(in, 37, 700, big, 300, steps[t]);
        assert_int_equal(m, (37 * 700 + steps[t] - 1) / steps[t]);
        double got = 0;
        for (size_t j = 0; j < m; j++)
            got += big[j] * steps[t];
        assert_float_equal(got, want, 1e-6 * want);
    }
}

static void resample_cap_and_invalid(void **state)
{
    (void)state;
    double in[] = {1, 2, 3, 4, 5}, out[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    assert_int_equal(skyline_resample(in, 5, 1000, out, 3, 1000), 3);
    assert_vec(out, (double[]){1, 2, 3}, 3);
    assert_float_equal(out[3], -1, 0); /* nothing written past cap */
    assert_int_equal(skyline_resample(in, 5, 1000, out, 3, 500), 3);
    assert_vec(out, (double[]){1, 1, 2}, 3);
    assert_int_equal(skyline_resample(in, 5, 0, out, 8, 1000), 0);
    assert_int_equal(skyline_resample(in, 5, 1000, out, 8, 0), 0);
    assert_int_equal(skyline_resample(in, 0, 1000, out, 8, 1000), 0);
    assert_int_equal(skyline_resample(NULL, 5, 1000, out, 8, 1000), 0);
    assert_int_equal(skyline_resample(in, 5, 1000, NULL, 8, 1000), 0);
}

/* ---- the fit ---- */

static void fit_one_run(void **state)
{
    (void)state;
    double r[] = {1, 4, 4, 0, 2.5};
    const double *runs[] = {r};
    double s[5];
    struct skyline_fit_info info = {-1, -1, -1, -1};
    assert_int_equal(skyline_fit(runs, 1, 5, SKYLINE_ALPHA, s, &info), 0);
    assert_vec(s, r, 5);
    assert_float_equal(info.over, 0, TOL);
    assert_float_equal(info.under, 0, TOL);
    assert_float_equal(info.epsilon, 0, TOL);
    assert_float_equal(info.value, 0, TOL);
    assert_int_equal(skyline_fit(runs, 1, 5, 1.0, s, NULL), 0); /* info may be NULL */
    assert_vec(s, r, 5);
}

/* Identical runs: V = 0. With the paper's β = 0.1·V = 0, deferring work to a later step would
 * be as good (its debt is caught up, nothing is over); the fit must still return the run. */
static void fit_identical_runs(void **state)
{
    (void)state;
    double r[] = {0, 3, 1, 0, 2, 2};
    const double *runs[] = {r, r, r, r};
    double s[6];
    struct skyline_fit_info info;
    assert_int_equal(skyline_fit(runs, 4, 6, SKYLINE_ALPHA, s, &info), 0);
    assert_vec(s, r, 6);
    assert_float_equal(info.value, 0, TOL);
    assert_float_equal(info.epsilon, 0, TOL);
    assert_int_equal(skyline_fit(runs, 4, 6, 0.9, s, &info), 0);
    assert_vec(s, r, 6);
}

/* Runs A = [2,2,2] and B = [4,0,2], α = 0.5, N = 2: f = ¼(Σ over + D_A + D_B).
 * With s = (a,b,c):
 *  - c: each unit above 2 is over for both runs (cost 2·¼) and pays at most 1 debt per run
 *    (saves at most 2·¼); each unit below 2 adds 1 debt to each run. So c = 2 is optimal, and
 *    strictly when no debt is left at step 2.
 *  - with c = 2, a = 2 + δ (0 <= δ <= 2): for b <= 2 − δ the cost is 4 − b (in quarters),
 *    for 2 − δ <= b <= 2 it is 2 + δ, and b > 2 is over for both: min 2 + δ, so a = 2, b = 2.
 *  - a < 2 adds debt to both runs, which b > 2 would repay at the same price: no better.
 * R* = (2,2,2), V = ¼·2 = 0.5: B's shortage at step 1 (4 vs 2) is caught up at step 2, where
 * B uses nothing, so the 2 tokens there count as B's over-allocation (lost), but its debt is 0.
 * A_o = 2/2 = 1, A_u = 0, ε = ½(0/6 + 2/6) = 1/6.
 * Second solve, β = 0.05: raising a by t cuts ε by t/12 (saves 0.05·t/12) but costs t/4 in f:
 * R* stays (2,2,2). */
static void fit_debt_caught_up(void **state)
{
    (void)state;
    double a[] = {2, 2, 2}, b[] = {4, 0, 2};
    const double *runs[] = {a, b};
    double s[3];
    struct skyline_fit_info info;
    assert_int_equal(skyline_fit(runs, 2, 3, 0.5, s, &info), 0);
    assert_vec(s, (double[]){2, 2, 2}, 3);
    assert_float_equal(info.value, 0.5, TOL);
    assert_float_equal(info.over, 1, TOL);
    assert_float_equal(info.under, 0, TOL);
    assert_float_equal(info.epsilon, 1.0 / 6, TOL);
    /* The order of the runs does not matter. */
    const double *swapped[] = {b, a};
    assert_int_equal(skyline_fit(swapped, 2, 3, 0.5, s, NULL), 0);
    assert_vec(s, (double[]){2, 2, 2}, 3);
}

/* Runs [0,2] and [2,0], α = 0.5: s = (0,2) costs ¼·2 (2 over for the second run at step 2, which
 * repays its step-1 debt); any a > 0 adds a to over; s = (1,1) costs ¼·3; (2,0) costs ¼·4. The
 * lazy answer (0,2) is the optimum, V = 0.5, ε = ½(0 + 2/2) = ½, and β = 0.05 is far too small
 * to change it (a unit of a saves 0.05/4 and costs ¼). */
static void fit_lazy_is_optimal(void **state)
{
    (void)state;
    double a[] = {0, 2}, b[] = {2, 0};
    const double *runs[] = {a, b};
    double s[2];
    struct skyline_fit_info info;
    assert_int_equal(skyline_fit(runs, 2, 2, 0.5, s, &info), 0);
    assert_vec(s, (double[]){0, 2}, 2);
    assert_float_equal(info.value, 0.5, TOL);
    assert_float_equal(info.over, 1, TOL);
    assert_float_equal(info.under, 0, TOL);
    assert_float_equal(info.epsilon, 0.5, TOL);
}

/* Runs [2,0] and [4,0], α = 0.5: f = ¼((a−2)+ + (a−4)+ + 2b + D_1 + D_2). Every a in [2,4]
 * with b = 0 costs ¼·2 (a unit of a is over for the first run or debt for the second), so
 * V = 0.5 has a whole edge of optima. ε = ½(4 − a)/4 picks a = 4: R* = (4,0), A_o = 1, A_u = 0,
 * ε = 0. */
static void fit_tie_broken_by_epsilon(void **state)
{
    (void)state;
    double a[] = {2, 0}, b[] = {4, 0};
    const double *runs[] = {a, b};
    double s[2];
    struct skyline_fit_info info;
    assert_int_equal(skyline_fit(runs, 2, 2, 0.5, s, &info), 0);
    assert_vec(s, (double[]){4, 0}, 2);
    assert_float_equal(info.value, 0.5, TOL);
    assert_float_equal(info.over, 1, TOL);
    assert_float_equal(info.under, 0, TOL);
    assert_float_equal(info.epsilon, 0, TOL);
}

/* α = 1: only over-allocation counts, so V = 0 for every s under the pointwise minimum (s = 0
 * included: β = 0.1·V = 0 would not choose). Minimising ε among those optima raises each s_k to
 * the minimum over the runs: R* = min(A, B) = (2,0,2), A_o = 0, debts 2 and 2 (A_u = 2),
 * ε = ½(2/6 + 2/6) = 1/3. */
static void fit_alpha_one_minimum(void **state)
{
    (void)state;
    double a[] = {2, 2, 2}, b[] = {4, 0, 2};
    const double *runs[] = {a, b};
    double s[3];
    struct skyline_fit_info info;
    assert_int_equal(skyline_fit(runs, 2, 3, 1.0, s, &info), 0);
    assert_vec(s, (double[]){2, 0, 2}, 3);
    assert_float_equal(info.value, 0, TOL);
    assert_float_equal(info.over, 0, TOL);
    assert_float_equal(info.under, 2, TOL);
    assert_float_equal(info.epsilon, 1.0 / 3, TOL);

    double c[] = {5, 1, 3, 3, 0}, d[] = {1, 4, 4, 2, 1}, e[] = {3, 3, 3, 3, 3};
    const double *three[] = {c, d, e};
    double t[5];
    assert_int_equal(skyline_fit(three, 3, 5, 1.0, t, &info), 0);
    assert_vec(t, (double[]){1, 1, 3, 2, 0}, 5);
    assert_float_equal(info.over, 0, TOL);
}

/* Runs [1,1], [1,1], [1,3], N = 3.
 * α = 0.5: f = (1/6)(Σ over + Σ D). s = (1,1) leaves the third run 2 in debt: f = 2/6. Raising
 * s_2 by t is over for two runs (2t) and repays t: worse; raising s_1 cannot bank credit.
 * R* = (1,1), A_u = 2/3.
 * α = 0.01: a unit of final debt costs 0.99/3 and covering it at step 2 costs 2·0.01/3, so every
 * run ends without debt: R* = (1,3), A_u = 0, A_o = 4/3. */
static void fit_alpha_near_zero_covers_debt(void **state)
{
    (void)state;
    double a[] = {1, 1}, b[] = {1, 1}, c[] = {1, 3};
    const double *runs[] = {a, b, c};
    double s[2];
    struct skyline_fit_info info;
    assert_int_equal(skyline_fit(runs, 3, 2, 0.5, s, &info), 0);
    assert_vec(s, (double[]){1, 1}, 2);
    assert_float_equal(info.under, 2.0 / 3, TOL);
    assert_float_equal(final_debt(c, s, 2), 2, TOL);

    assert_int_equal(skyline_fit(runs, 3, 2, 0.01, s, &info), 0);
    assert_vec(s, (double[]){1, 3}, 2);
    assert_float_equal(info.under, 0, TOL);
    assert_float_equal(info.over, 4.0 / 3, TOL);
    for (size_t i = 0; i < 3; i++)
        assert_float_equal(final_debt(runs[i], s, 2), 0, TOL);

    /* Three less regular runs: still no debt left for any of them. */
    double d[] = {3, 0, 1, 4, 2, 0}, e[] = {1, 2, 2, 2, 0, 3}, f[] = {0, 5, 0, 0, 4, 1};
    const double *more[] = {d, e, f};
    double t[6];
    assert_int_equal(skyline_fit(more, 3, 6, 0.01, t, &info), 0);
    assert_float_equal(info.under, 0, TOL);
    for (size_t i = 0; i < 3; i++)
        assert_float_equal(final_debt(more[i], t, 6), 0, TOL);
}

static void fit_zero_runs(void **state)
{
    (void)state;
    double z[] = {0, 0, 0}, a[] = {0, 2, 0};
    const double *runs[] = {z, a};
    double s[3];
    struct skyline_fit_info info;
    /* A run that used nothing is skipped in ε; over-allocation for it still counts. */
    assert_int_equal(skyline_fit(runs, 2, 3, 0.5, s, &info), 0);
    for (size_t q = 0; q < 3; q++)
        assert_true(s[q] >= 0);
    assert_true(isfinite(info.epsilon));
    const double *zeros[] = {z, z};
    assert_int_equal(skyline_fit(zeros, 2, 3, 0.5, s, &info), 0);
    assert_vec(s, z, 3);
}

static void fit_invalid(void **state)
{
    (void)state;
    double a[] = {1, 2}, b[] = {2, 1}, neg[] = {1, -0.5}, nan_[] = {NAN, 1}, inf[] = {1, INFINITY};
    const double *runs[] = {a, b};
    double s[2] = {-7, -7};
    assert_int_equal(skyline_fit(NULL, 2, 2, 0.5, s, NULL), ERR_INVAL);
    assert_int_equal(skyline_fit(runs, 2, 2, 0.5, NULL, NULL), ERR_INVAL);
    assert_int_equal(skyline_fit(runs, 0, 2, 0.5, s, NULL), ERR_INVAL);
    assert_int_equal(skyline_fit(runs, SKYLINE_MAX_RUNS + 1, 2, 0.5, s, NULL), ERR_INVAL);
    assert_int_equal(skyline_fit(runs, 2, 0, 0.5, s, NULL), ERR_INVAL);
    assert_int_equal(skyline_fit(runs, 2, SKYLINE_MAX_STEPS + 1, 0.5, s, NULL), ERR_INVAL);
    assert_int_equal(skyline_fit(runs, 2, 2, -0.01, s, NULL), ERR_INVAL);
    assert_int_equal(skyline_fit(runs, 2, 2, 1.01, s, NULL), ERR_INVAL);
    assert_int_equal(skyline_fit(runs, 2, 2, NAN, s, NULL), ERR_INVAL);
    const double *with_null[] = {a, NULL};
    assert_int_equal(skyline_fit(with_null, 2, 2, 0.5, s, NULL), ERR_INVAL);
    const double *with_neg[] = {a, neg};
    assert_int_equal(skyline_fit(with_neg, 2, 2, 0.5, s, NULL), ERR_INVAL);
    const double *with_nan[] = {nan_, b};
    assert_int_equal(skyline_fit(with_nan, 2, 2, 0.5, s, NULL), ERR_INVAL);
    const double *with_inf[] = {a, inf};
    assert_int_equal(skyline_fit(with_inf, 2, 2, 0.5, s, NULL), ERR_INVAL);
    const double *one_neg[] = {neg};
    assert_int_equal(skyline_fit(one_neg, 1, 2, 0.5, s, NULL), ERR_INVAL);
    assert_float_equal(s[0], -7, 0); /* untouched */
    assert_float_equal(s[1], -7, 0);
    /* The bounds themselves are accepted. */
    assert_int_equal(skyline_fit(runs, 2, 2, 0.0, s, NULL), 0);
    assert_int_equal(skyline_fit(runs, 2, 2, 1.0, s, NULL), 0);
}

static void fit_nomem(void **state)
{
    (void)state;
    double a[] = {2, 2, 2}, b[] = {4, 0, 2};
    const double *runs[] = {a, b};
    double s[3] = {-7, -7, -7};
    for (long n = 0; n < 5; n++) { /* each of the fit's five arrays */
        mem_fail_after(n);
        assert_int_equal(skyline_fit(runs, 2, 3, 0.5, s, NULL), ERR_NOMEM);
        mem_fail_reset();
        mem_fail_after(-1);
        assert_vec(s, (double[]){-7, -7, -7}, 3);
    }
    assert_int_equal(skyline_fit(runs, 2, 3, 0.5, s, NULL), 0);
    assert_vec(s, (double[]){2, 2, 2}, 3);
}

/* The largest fit the header allows: 32 runs × 512 steps (~50k variables and constraints). */
static void fit_largest(void **state)
{
    (void)state;
    static double data[SKYLINE_MAX_RUNS][SKYLINE_MAX_STEPS];
    const double *runs[SKYLINE_MAX_RUNS];
    uint32_t x = 12345;
    for (size_t i = 0; i < SKYLINE_MAX_RUNS; i++) {
        /* A two-stage shape with noise: wide map, narrow reduce, the run's length varying. */
        size_t len = 400 + (i * 37) % 112;
        for (size_t q = 0; q < SKYLINE_MAX_STEPS; q++) {
            x = x * 1103515245u + 12345u;
            double noise = (double)((x >> 16) % 1000) / 1000.0;
            double base = q < len / 2 ? 40 : q < len ? 10 : 0;
            data[i][q] = base > 0 ? base + 8 * noise : 0;
        }
        runs[i] = data[i];
    }
    static double s[SKYLINE_MAX_STEPS];
    struct skyline_fit_info info;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = skyline_fit(runs, SKYLINE_MAX_RUNS, SKYLINE_MAX_STEPS, SKYLINE_ALPHA, s, &info);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    print_message("skyline_fit 32 runs x 512 steps: %.3f s (V = %.4f, over %.3f, under %.3f, "
                  "eps %.4f)\n",
                  secs, info.value, info.over, info.under, info.epsilon);
    assert_int_equal(rc, 0);
    /* The envelope stays within the runs' range and the optimum is no worse than either simple
     * answer (the pointwise mean and maximum) under the same objective. */
    for (size_t q = 0; q < SKYLINE_MAX_STEPS; q++) {
        assert_true(s[q] >= 0);
        assert_true(s[q] <= 48 + TOL);
    }
    double cand[SKYLINE_MAX_STEPS];
    for (int which = 0; which < 2; which++) {
        for (size_t q = 0; q < SKYLINE_MAX_STEPS; q++) {
            double m = 0;
            for (size_t i = 0; i < SKYLINE_MAX_RUNS; i++)
                m = which ? fmax(m, data[i][q]) : m + data[i][q] / SKYLINE_MAX_RUNS;
            cand[q] = m;
        }
        double over = 0, under = 0;
        for (size_t i = 0; i < SKYLINE_MAX_RUNS; i++) {
            for (size_t q = 0; q < SKYLINE_MAX_STEPS; q++)
                over += fmax(cand[q] - data[i][q], 0);
            under += final_debt(data[i], cand, SKYLINE_MAX_STEPS);
        }
        double f = (SKYLINE_ALPHA * over + (1 - SKYLINE_ALPHA) * under) / SKYLINE_MAX_RUNS;
        assert_true(info.value <= f + 1e-6 * f);
    }
    /* The regulariser may trade a little of f for a smaller ε, never much (β = 0.1·V). */
    double f_got = SKYLINE_ALPHA * info.over + (1 - SKYLINE_ALPHA) * info.under;
    assert_true(f_got >= info.value - 1e-6 * info.value);
    assert_true(f_got <= 1.01 * info.value);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(resample_down_averages),
        cmocka_unit_test(resample_up_repeats),
        cmocka_unit_test(resample_time_weighted),
        cmocka_unit_test(resample_cap_and_invalid),
        cmocka_unit_test(fit_one_run),
        cmocka_unit_test(fit_identical_runs),
        cmocka_unit_test(fit_debt_caught_up),
        cmocka_unit_test(fit_lazy_is_optimal),
        cmocka_unit_test(fit_tie_broken_by_epsilon),
        cmocka_unit_test(fit_alpha_one_minimum),
        cmocka_unit_test(fit_alpha_near_zero_covers_debt),
        cmocka_unit_test(fit_zero_runs),
        cmocka_unit_test(fit_invalid),
        cmocka_unit_test(fit_nomem),
        cmocka_unit_test(fit_largest),
    };
    return cmocka_run_group_tests_name("rm_skyline", tests, NULL, NULL);
}
