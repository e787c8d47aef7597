/* test_period.c - UTC period arithmetic: instance numbering with offsets (exact boundaries, −1
 * before the first instance), period starts on dates where local clocks jump (DST) or UTC has a
 * leap second, large values without overflow, and the plan's LCM with its cap. */
#include "rm/period.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define DAY_MS  86400000LL
#define HOUR_MS 3600000LL

static void index_with_offset(void **state)
{
    (void)state;
    /* An hourly job at :15 (offset 15 min). */
    int64_t p = HOUR_MS, o = 15 * 60000;
    assert_int_equal(period_index(0, p, o), -1);
    assert_int_equal(period_index(o - 1, p, o), -1); /* before the first instance */
    assert_int_equal(period_index(o, p, o), 0);      /* the first instance starts exactly here */
    assert_int_equal(period_index(o + p - 1, p, o), 0);
    assert_int_equal(period_index(o + p, p, o), 1); /* boundaries belong to the next instance */
    assert_int_equal(period_index(o + 7 * p + 1, p, o), 7);
    assert_int_equal(period_index(o + 7 * p - 1, p, o), 6);
    /* No offset: instance 0 starts at the epoch. */
    assert_int_equal(period_index(0, p, 0), 0);
    assert_int_equal(period_index(p - 1, p, 0), 0);
    assert_int_equal(period_index(p, p, 0), 1);
    /* Out of contract: no division by zero, no instance. */
    assert_int_equal(period_index(1000, 0, 0), -1);
    assert_int_equal(period_index(1000, -5, 0), -1);
    assert_int_equal(period_index(1000, 10, -1), -1);
}

static void start_round_trip(void **state)
{
    (void)state;
    int64_t p = 7000, o = 123;
    assert_int_equal(period_start(0, p, o), 123);
    assert_int_equal(period_start(3, p, o), 21123);
    for (int64_t i = 0; i < 1000; i++) {
        int64_t s = period_start(i, p, o);
        assert_int_equal(period_index(s, p, o), i);
        assert_int_equal(period_index(s - 1, p, o), i - 1);
        assert_int_equal(period_index(s + p - 1, p, o), i);
    }
    assert_int_equal(period_start(-1, p, o), -1);
    assert_int_equal(period_start(1, 0, o), -1);
}

/* A daily job at 02:00 UTC: starts are plain epoch milliseconds, exactly one day apart across the
 * EU spring-forward and fall-back days of 2024, a leap day, and the leap second at the end of
 * 2016 (Unix time does not count it). Expected values are timegm() of those dates at 02:00. */
static void utc_daily(void **state)
{
    (void)state;
    int64_t p = DAY_MS, o = 2 * HOUR_MS;
    struct {
        int64_t index, start;
    } days[] = {
        {19782, 1709172000000LL}, /* 2024-02-29 */
        {19812, 1711764000000LL}, /* 2024-03-30 */
        {19813, 1711850400000LL}, /* 2024-03-31, DST starts in the EU at 01:00 UTC */
        {19814, 1711936800000LL}, /* 2024-04-01 */
        {20023, 1729994400000LL}, /* 2024-10-27, DST ends in the EU */
        {17166, 1483149600000LL}, /* 2016-12-31, a leap second at its end */
        {17167, 1483236000000LL}, /* 2017-01-01 */
    };
    for (size_t i = 0; i < sizeof days / sizeof days[0]; i++) {
        assert_int_equal(period_start(days[i].index, p, o), days[i].start);
        assert_int_equal(period_index(days[i].start, p, o), days[i].index);
        assert_int_equal(period_index(days[i].start - 1, p, o), days[i].index - 1);
        assert_int_equal(period_start(days[i].index + 1, p, o) - period_start(days[i].index, p, o),
                         DAY_MS);
    }
    /* Every day of 2024 is exactly 86400000 ms after the previous one. */
    for (int64_t i = 19722; i < 19722 + 366; i++)
        assert_int_equal(period_start(i + 1, p, o) - period_start(i, p, o), DAY_MS);
    assert_int_equal(period_start(19722 + 366, p, o) - period_start(19722, p, o), 366 * DAY_MS);
}

static void large_values(void **state)
{
    (void)state;
    /* Near the end of int64: no overflow in the subtraction or the division. */
    assert_int_equal(period_index(INT64_MAX, 1, 0), INT64_MAX);
    assert_int_equal(period_index(INT64_MAX, INT64_MAX, 0), 1);
    assert_int_equal(period_index(INT64_MAX, INT64_MAX, INT64_MAX), 0);
    assert_int_equal(period_index(INT64_MAX - 1, INT64_MAX, INT64_MAX), -1);
    assert_int_equal(period_index(INT64_MAX, DAY_MS, 2 * HOUR_MS),
                     (INT64_MAX - 2 * HOUR_MS) / DAY_MS);
    /* A start past the int64 range saturates instead of wrapping negative. */
    int64_t last = (INT64_MAX - 2 * HOUR_MS) / DAY_MS;
    assert_int_equal(period_start(last, DAY_MS, 2 * HOUR_MS), 2 * HOUR_MS + last * DAY_MS);
    assert_int_equal(period_start(last + 1, DAY_MS, 2 * HOUR_MS), INT64_MAX);
    assert_int_equal(period_start(INT64_MAX, INT64_MAX, 0), INT64_MAX);
    assert_int_equal(period_start(1, INT64_MAX, 1), INT64_MAX);
}

static void lcm_basic(void **state)
{
    (void)state;
    bool capped = true;
    uint64_t cap = (uint64_t)DAY_MS;
    assert_int_equal(period_lcm(NULL, 0, cap, &capped), 0);
    assert_false(capped);
    uint64_t one[] = {HOUR_MS};
    assert_int_equal(period_lcm(one, 1, cap, &capped), HOUR_MS);
    assert_false(capped);
    uint64_t a[] = {4 * HOUR_MS, 6 * HOUR_MS}; /* 4 h and 6 h: 12 h */
    assert_int_equal(period_lcm(a, 2, cap, &capped), 12 * HOUR_MS);
    assert_false(capped);
    uint64_t b[] = {15 * 60000, HOUR_MS, 20 * 60000, DAY_MS}; /* the day covers them all */
    assert_int_equal(period_lcm(b, 4, cap, &capped), DAY_MS);
    assert_false(capped); /* exactly the cap is not capped */
    uint64_t c[] = {6, 10, 15};
    assert_int_equal(period_lcm(c, 3, 1000, &capped), 30);
    assert_false(capped);
    /* capped may be NULL */
    assert_int_equal(period_lcm(c, 3, 1000, NULL), 30);
}

static void lcm_cap(void **state)
{
    (void)state;
    bool capped = false;
    uint64_t cap = (uint64_t)DAY_MS;
    uint64_t a[] = {7 * HOUR_MS, 5 * HOUR_MS}; /* 35 h > a day */
    assert_int_equal(period_lcm(a, 2, cap, &capped), cap);
    assert_true(capped);
    capped = false;
    uint64_t b[] = {2 * DAY_MS}; /* one period longer than the cap */
    assert_int_equal(period_lcm(b, 1, cap, &capped), cap);
    assert_true(capped);
    capped = false;
    uint64_t c[] = {6, 10, 15};
    assert_int_equal(period_lcm(c, 3, 29, &capped), 29);
    assert_true(capped);
    capped = false;
    assert_int_equal(period_lcm(c, 3, 30, &capped), 30);
    assert_false(capped);
}

static void lcm_no_overflow(void **state)
{
    (void)state;
    bool capped = false;
    /* Two large coprime periods: the product overflows 64 bits; the cap is returned. */
    uint64_t a[] = {UINT64_MAX, UINT64_MAX - 1};
    assert_true(period_lcm(a, 2, UINT64_MAX, &capped) == UINT64_MAX);
    assert_true(capped);
    capped = false;
    /* 2^32 + 1 and 2^32 − 1 are coprime; their product 2^64 − 1 fits exactly. */
    uint64_t b[] = {(1ULL << 32) + 1, (1ULL << 32) - 1};
    assert_true(period_lcm(b, 2, UINT64_MAX, &capped) == UINT64_MAX);
    assert_false(capped);
    capped = false;
    /* 2^63 and 3: 3·2^63 overflows; capped at a small cap too. */
    uint64_t c[] = {1ULL << 63, 3};
    assert_true(period_lcm(c, 2, UINT64_MAX, &capped) == UINT64_MAX);
    assert_true(capped);
    capped = false;
    assert_true(period_lcm(c, 2, 1000, &capped) == 1000);
    assert_true(capped);
    capped = false;
    /* Equal huge periods: the LCM is the period itself. */
    uint64_t d[] = {UINT64_MAX, UINT64_MAX, UINT64_MAX};
    assert_true(period_lcm(d, 3, UINT64_MAX, &capped) == UINT64_MAX);
    assert_false(capped);
    /* Many small primes: 2·3·5·…·53 = 32589158477190044730 > 2^64; capped without wrapping. */
    uint64_t primes[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53};
    assert_true(period_lcm(primes, 15, UINT64_MAX, &capped) == 614889782588491410ULL);
    assert_false(capped);
    assert_true(period_lcm(primes, 16, UINT64_MAX, &capped) == UINT64_MAX);
    assert_true(capped);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(index_with_offset), cmocka_unit_test(start_round_trip),
        cmocka_unit_test(utc_daily),         cmocka_unit_test(large_values),
        cmocka_unit_test(lcm_basic),         cmocka_unit_test(lcm_cap),
        cmocka_unit_test(lcm_no_overflow),
    };
    return cmocka_run_group_tests_name("rm_period", tests, NULL, NULL);
}
