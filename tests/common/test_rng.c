/* test_rng.c - common/rng.h: splitmix64's published first outputs, the same sequence for the
 * same seed, uniform draws in [0, 1) with the right mean, exponential draws with theirs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_values),
        cmocka_unit_test(test_seeded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
