/* test_usage.c - a job's token usage over time (jm/usage.h): per-step averages and total
 * token-ms against hand-computed numbers, late events, step doubling. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "jm/usage.h"

/* 2 units over [0, 2000) and 1 unit over [500, 3200) from the first start at t = 1000. */
static void test_steps_and_total(void **state)
{
    (void)state;
    struct usage u;
    usage_init(&u, USAGE_MAX_STEPS);
    uint32_t m[8];
    assert_int_equal(usage_export(&u, m, 8), 0);
    usage_add(&u, 500, -1); /* nothing started yet: ignored */
    assert_false(usage_started(&u));
    usage_add(&u, 1000, 2);
    usage_add(&u, 1500, 1);
    usage_add(&u, 3000, -2);
    usage_add(&u, 4200, -1);
    usage_finish(&u, 4200);
    assert_true(usage_started(&u));
    assert_int_equal(usage_origin(&u), 1000);
    assert_int_equal(usage_step_ms(&u), 1000);
    assert_int_equal(usage_token_ms(&u), 6700);
    assert_int_equal(usage_export(&u, m, 8), 4);
    assert_int_equal(m[0], 2500);
    assert_int_equal(m[1], 3000);
    assert_int_equal(m[2], 1000);
    assert_int_equal(m[3], 200); /* the partial last step averaged over a whole step */
    assert_int_equal(usage_export(&u, m, 2), 2);
}

/* A start reported after later events counts from when it happened; one before the first
 * start counts from the first start. */
static void test_late_events(void **state)
{
    (void)state;
    struct usage u;
    usage_init(&u, USAGE_MAX_STEPS);
    usage_add(&u, 1000, 1); /* A: [0, 3000) */
    usage_add(&u, 3000, 1); /* B: [2000, 3000) */
    usage_add(&u, 2000, 1); /* C: [1000, 3000), reported after B */
    usage_add(&u, 4000, -3);
    usage_add(&u, 500, 1); /* D: before the first start: from 0 to its end */
    usage_add(&u, 4000, -1);
    usage_finish(&u, 4000);
    uint32_t m[8];
    assert_int_equal(usage_export(&u, m, 8), 3);
    assert_int_equal(m[0], 1000 + 1000);
    assert_int_equal(m[1], 2000 + 1000);
    assert_int_equal(m[2], 3000 + 1000);
    assert_int_equal(usage_token_ms(&u), 6000 + 3000);
}

/* Outgrowing max_steps merges pairs and doubles the step, as often as needed. */
static void test_step_doubling(void **state)
{
    (void)state;
    struct usage u;
    usage_init(&u, 4);
    usage_add(&u, 0, 3);
    usage_add(&u, 2500, -3);
    usage_add(&u, 2500, 1);
    assert_int_equal(usage_step_ms(&u), 1000);
    usage_add(&u, 5000, -1); /* 5 steps of 1 s do not fit in 4 */
    usage_finish(&u, 5000);
    assert_int_equal(usage_step_ms(&u), 2000);
    uint32_t m[8];
    assert_int_equal(usage_export(&u, m, 8), 3);
    assert_int_equal(m[0], 3000);
    assert_int_equal(m[1], 1500);
    assert_int_equal(m[2], 500);
    assert_int_equal(usage_token_ms(&u), 10000);

    usage_init(&u, 4);
    usage_add(&u, 0, 1);
    usage_add(&u, 10000, -1); /* 10 steps: 1 s -> 2 s (5) -> 4 s (3) */
    assert_int_equal(usage_step_ms(&u), 4000);
    assert_int_equal(usage_export(&u, m, 8), 3);
    assert_int_equal(m[0], 1000);
    assert_int_equal(m[1], 1000);
    assert_int_equal(m[2], 500);
    assert_int_equal(usage_token_ms(&u), 10000);
}

/* Units still in use at the end run until finish(). */
static void test_finish_counts_running(void **state)
{
    (void)state;
    struct usage u;
    usage_init(&u, USAGE_MAX_STEPS);
    usage_add(&u, 100, 2);
    usage_finish(&u, 1600);
    uint32_t m[4];
    assert_int_equal(usage_export(&u, m, 4), 2);
    assert_int_equal(m[0], 2000);
    assert_int_equal(m[1], 1000);
    assert_int_equal(usage_token_ms(&u), 3000);
    usage_finish(&u, 1000); /* earlier than what is integrated: nothing changes */
    assert_int_equal(usage_token_ms(&u), 3000);
}

/* A long job at many steps stays within max_steps and keeps its total exactly. */
static void test_long_job(void **state)
{
    (void)state;
    struct usage u;
    usage_init(&u, USAGE_MAX_STEPS);
    int64_t total = 0;
    for (int64_t t = 0; t < 3600000; t += 700) { /* one task of 1..4 units every 0.7 s for 1 h */
        int64_t units = 1 + t % 4;
        usage_add(&u, t, units);
        usage_add(&u, t + 1300, -units);
        total += units * 1300;
    }
    usage_finish(&u, 3600000 + 1300);
    assert_int_equal(usage_token_ms(&u), (uint64_t)total);
    uint32_t m[USAGE_MAX_STEPS];
    uint32_t n = usage_export(&u, m, USAGE_MAX_STEPS);
    assert_true(n <= USAGE_MAX_STEPS && n > USAGE_MAX_STEPS / 2);
    assert_int_equal(usage_step_ms(&u), 8000); /* 3601.3 s / 512 > 4 s */
    double sum = 0;
    for (uint32_t i = 0; i < n; i++)
        sum += (double)m[i] * usage_step_ms(&u) / 1000.0;
    assert_true(sum > total - 4.0 * n && sum < total + 4.0 * n); /* rounding per step only */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steps_and_total), cmocka_unit_test(test_late_events),
        cmocka_unit_test(test_step_doubling),   cmocka_unit_test(test_finish_counts_running),
        cmocka_unit_test(test_long_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
