/* test_rng.c - common/rng.h: splitmix64's published first outputs, the same sequence for the
 * same seed, uniform draws in [0, 1) with the right mean, exponential draws with theirs; seeded
 * streams (equal for equal (seed, stream), apart otherwise); below, bernoulli, normal,
 * lognormal and pareto with their moments, and their degenerate arguments drawing nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>

#include "common/rng.h"

static void test_known_values(void **state)
{
    (void)state;
    struct rng r = {0}; /* the reference implementation's state 0 */
    assert_true(rng_next(&r) == 0xe220a8397b1dcdafull);
    assert_true(rng_next(&r) == 0x6e789e6aa1b965f4ull);
    assert_true(rng_next(&r) == 0x06c45d188009454full);
}

static void test_seeded(void **state)
{
    (void)state;
    struct rng a, b, c;
    rng_seed(&a, 42);
    rng_seed(&b, 42);
    rng_seed(&c, 43);
    int differ = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t x = rng_next(&a);
        assert_true(x == rng_next(&b));
        differ |= x != rng_next(&c);
    }
    assert_true(differ);
    double sum = 0, esum = 0;
    const int n = 100000;
    for (int i = 0; i < n; i++) {
        double u = rng_draw(&a);
        assert_true(u >= 0 && u < 1);
        sum += u;
        esum += rng_exp(&b, 2.0);
    }
    assert_true(sum / n > 0.49 && sum / n < 0.51);
    assert_true(esum / n > 1.96 && esum / n < 2.04);
}

static void test_streams(void **state)
{
    (void)state;
    struct rng a, b, c;
    rng_seed_stream(&a, 42, 7);
    rng_seed_stream(&b, 42, 7);
    rng_seed_stream(&c, 42, 8);
    int same_c = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = rng_next(&a), y = rng_next(&b), z = rng_next(&c);
        assert_true(x == y);
        same_c += x == z;
    }
    assert_true(same_c < 3);
    /* (seed, stream) and (seed + 1, stream - 1), (stream, seed): different starts. */
    struct rng d, e, f;
    rng_seed_stream(&d, 42, 7);
    rng_seed_stream(&e, 43, 6);
    rng_seed_stream(&f, 7, 42);
    assert_true(d.s != e.s && d.s != f.s && e.s != f.s);
    /* Neighbouring streams of one seed are not shifted copies of one another within a run's
     * draws: stream 1's first output does not appear among stream 0's first 100000. */
    rng_seed_stream(&d, 1, 0);
    rng_seed_stream(&e, 1, 1);
    uint64_t first = rng_next(&e);
    for (int i = 0; i < 100000; i++)
        assert_true(rng_next(&d) != first);
}

static void test_below_bernoulli(void **state)
{
    (void)state;
    struct rng a;
    rng_seed_stream(&a, 5, 0);
    int seen[10] = {0};
    for (int i = 0; i < 100000; i++) {
        uint64_t k = rng_below(&a, 10);
        assert_true(k < 10);
        seen[k]++;
    }
    for (int k = 0; k < 10; k++)
        assert_true(seen[k] > 9500 && seen[k] < 10500);
    int hits = 0;
    for (int i = 0; i < 100000; i++)
        hits += rng_bernoulli(&a, 0.3);
    assert_true(hits > 29500 && hits < 30500);
    /* Degenerate arguments: a fixed answer and no draw (the stream does not move). */
    struct rng before = a;
    assert_true(rng_below(&a, 0) == 0);
    assert_true(rng_below(&a, 1) == 0); /* n == 1 draws once: the stream moves */
    assert_true(a.s != before.s);
    a = before;
    assert_int_equal(rng_bernoulli(&a, 0), 0);
    assert_int_equal(rng_bernoulli(&a, -1), 0);
    assert_int_equal(rng_bernoulli(&a, NAN), 0);
    assert_int_equal(rng_bernoulli(&a, 1), 1);
    assert_true(rng_exp(&a, 0) == 0);
    assert_true(rng_exp(&a, -2) == 0);
    assert_true(rng_pareto(&a, 2, 0) == 2);
    assert_true(a.s == before.s);
}

static void test_normal_family(void **state)
{
    (void)state;
    struct rng a;
    rng_seed(&a, 9);
    const int n = 200000;
    double s1 = 0, s2 = 0, ln = 0, par = 0;
    int par_below = 0;
    for (int i = 0; i < n; i++) {
        double z = rng_normal(&a);
        assert_true(isfinite(z));
        s1 += z;
        s2 += z * z;
        ln += log(rng_lognormal(&a, 1.0, 0.5));
        double p = rng_pareto(&a, 2.0, 3.0);
        par_below += p < 2.0;
        par += p;
    }
    assert_true(fabs(s1 / n) < 0.01);
    assert_true(fabs(s2 / n - 1) < 0.02);
    assert_true(fabs(ln / n - 1.0) < 0.01); /* log of a lognormal: mean mu */
    assert_int_equal(par_below, 0);
    assert_true(fabs(par / n - 3.0) < 0.05); /* alpha xm / (alpha - 1) */
    /* Two uniform draws per normal: the stream's position is known. */
    struct rng b, c;
    rng_seed(&b, 11);
    rng_seed(&c, 11);
    (void)rng_normal(&b);
    (void)rng_unif(&c);
    (void)rng_unif(&c);
    assert_true(b.s == c.s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_values),  cmocka_unit_test(test_seeded),
        cmocka_unit_test(test_streams),       cmocka_unit_test(test_below_bernoulli),
        cmocka_unit_test(test_normal_family),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
