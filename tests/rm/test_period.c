/* test_period.c - UTC period arithmetic: instance numbering with offsets (exact boundaries, −1
 * before the first instance), period starts on dates where local clocks jump (DST) or UTC has a
 * leap second, large values without overflow, and the plan's LCM with its cap. */
#include "rm/period.h"
#include "common/err.h"

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

/* ---- period inference (Morpheus §4) ---- */

#define MIN_MS 60000ll
#define HOUR   3600000ll
#define DAY    86400000ll
/* 2026-11-27T00:00:00Z */
#define T0 1795737600000ll

static struct period_fit infer(const int64_t *t, size_t n, int64_t now)
{
    struct period_params p;
    period_params_default(&p);
    struct period_fit f;
    assert_int_equal(period_infer(t, n, now, &p, &f), 0);
    return f;
}

/* A job submitted every 30 s six times (the example): periodic, period 30 s, the
 * offset where the submissions fall, the evidence. */
static void infer_every_30s(void **state)
{
    (void)state;
    int64_t t[6];
    static const int64_t jitter[6] = {120, 80, 410, 150, 90, 200}; /* cron and queueing */
    for (int i = 0; i < 6; i++)
        t[i] = T0 + 7000 + i * 30000ll + jitter[i];
    struct period_fit f = infer(t, 6, t[5] + 1000);
    assert_int_equal(f.verdict, PERIOD_PERIODIC);
    assert_int_equal(f.runs, 6);
    assert_int_equal(f.period_ms, 30000);
    assert_int_equal(f.offset_ms, 7000); /* 7.08..7.41 s into each 30 s, rounded down */
    assert_true(f.cv < 0.02);
    assert_int_equal(f.first_ms, t[0]);
    assert_int_equal(f.last_ms, t[5]);
    assert_int_equal(f.next_ms, T0 + 7000 + 6 * 30000ll);
    /* every submission is in the period it was meant for */
    for (int i = 0; i < 6; i++)
        assert_int_equal(period_nearest_start(t[i], f.period_ms, f.offset_ms),
                         T0 + 7000 + i * 30000ll);
    /* order does not matter, nor a duplicate record of the newest */
    int64_t r[7] = {t[3], t[0], t[5], t[1], t[4], t[2], t[5]};
    struct period_fit g = infer(r, 6, t[5] + 1000);
    assert_int_equal(g.period_ms, 30000);
    assert_int_equal(g.offset_ms, 7000);
}

/* Daily at 02:00 UTC with a few minutes of jitter: snapped to a day, the offset 02:00. */
static void infer_daily_snaps(void **state)
{
    (void)state;
    int64_t t[8];
    for (int i = 0; i < 8; i++)
        t[i] = T0 + i * DAY + 2 * HOUR + (i % 3) * MIN_MS; /* 02:00, 02:01, 02:02 */
    struct period_fit f = infer(t, 8, t[7] + HOUR);
    assert_int_equal(f.verdict, PERIOD_PERIODIC);
    assert_int_equal(f.period_ms, DAY);
    assert_int_equal(f.offset_ms, 2 * HOUR + MIN_MS); /* the median phase */
    /* hourly, a little late every time: 61 min gaps are within 5% of an hour */
    for (int i = 0; i < 8; i++)
        t[i] = T0 + i * (HOUR + MIN_MS);
    f = infer(t, 8, t[7]);
    assert_int_equal(f.verdict, PERIOD_PERIODIC);
    assert_int_equal(f.period_ms, HOUR);
}

/* Submissions around the period's boundary (a minute before and after midnight) do not split
 * into two phases half a day apart. */
static void infer_phase_around_boundary(void **state)
{
    (void)state;
    int64_t t[6];
    for (int i = 0; i < 6; i++)
        t[i] = T0 + i * DAY + (i % 2 ? MIN_MS : -MIN_MS);
    struct period_fit f = infer(t, 6, t[5]);
    assert_int_equal(f.verdict, PERIOD_PERIODIC);
    assert_int_equal(f.period_ms, DAY);
    /* the phase is within a minute of midnight, on either side */
    assert_true(f.offset_ms >= DAY - MIN_MS || f.offset_ms <= MIN_MS);
    for (int i = 0; i < 6; i++)
        assert_int_equal(
            period_nearest_start(t[i], f.period_ms, f.offset_ms) / 1000,
            (T0 + i * DAY + (f.offset_ms > DAY / 2 ? f.offset_ms - DAY : f.offset_ms)) / 1000);
}

/* What is not offered, and why. */
static void infer_refusals(void **state)
{
    (void)state;
    int64_t t[8];
    /* too few */
    for (int i = 0; i < 3; i++)
        t[i] = T0 + i * 30000ll;
    struct period_fit f = infer(t, 3, t[2]);
    assert_int_equal(f.verdict, PERIOD_TOO_FEW);
    assert_int_equal(f.period_ms, 30000); /* still measured, as evidence */
    f = infer(t, 0, T0);
    assert_int_equal(f.verdict, PERIOD_TOO_FEW);
    assert_int_equal(f.runs, 0);
    /* irregular: ad-hoc submissions */
    static const int64_t adhoc[8] = {0, 12000, 90000, 95000, 240000, 300000, 301000, 420000};
    for (int i = 0; i < 8; i++)
        t[i] = T0 + adhoc[i];
    f = infer(t, 8, t[7]);
    assert_int_equal(f.verdict, PERIOD_IRREGULAR);
    assert_true(f.cv > 0.1);
    /* a burst: a retry loop every 200 ms is not a period */
    for (int i = 0; i < 8; i++)
        t[i] = T0 + i * 200;
    f = infer(t, 8, t[7]);
    assert_int_equal(f.verdict, PERIOD_TOO_SHORT);
    /* regular, but it stopped three periods ago */
    for (int i = 0; i < 6; i++)
        t[i] = T0 + i * HOUR;
    f = infer(t, 6, t[5] + 3 * HOUR);
    assert_int_equal(f.verdict, PERIOD_STALE);
    assert_int_equal(f.period_ms, HOUR);
    f = infer(t, 6, t[5] + 2 * HOUR);
    assert_int_equal(f.verdict, PERIOD_PERIODIC);
    /* one late submission among many does not break it (the median and MAD are robust) */
    for (int i = 0; i < 8; i++)
        t[i] = T0 + i * 30000ll + (i == 4 ? 9000 : 0);
    f = infer(t, 8, t[7]);
    assert_int_equal(f.verdict, PERIOD_PERIODIC);
    assert_int_equal(f.period_ms, 30000);
}

/* Only the newest max_runs count: a job that became periodic after ad-hoc runs is found. */
static void infer_newest_runs(void **state)
{
    (void)state;
    int64_t t[80];
    for (int i = 0; i < 50; i++)
        t[i] = T0 + i * 7777ll * (i % 3 + 1); /* irregular for a long time */
    int64_t base = T0 + 10 * DAY;
    for (int i = 50; i < 60; i++)
        t[i] = base + (i - 50) * 60000ll; /* then every minute */
    struct period_params p;
    period_params_default(&p);
    struct period_fit f;
    assert_int_equal(period_infer(t, 60, t[59], &p, &f), 0);
    assert_int_equal(f.runs, 60);
    assert_int_equal(f.verdict, PERIOD_IRREGULAR);
    p.max_runs = 10;
    assert_int_equal(period_infer(t, 60, t[59], &p, &f), 0);
    assert_int_equal(f.runs, 10);
    assert_int_equal(f.verdict, PERIOD_PERIODIC);
    assert_int_equal(f.period_ms, 60000);
    assert_int_equal(f.first_ms, base);
    /* a few outliers among many regular runs: the median and MAD do not move */
    for (int i = 0; i < 4; i++)
        t[i] = T0 + i * 7777ll * (i % 3 + 1);
    for (int i = 4; i < 64; i++)
        t[i] = base + (i - 4) * 60000ll;
    p.max_runs = 64;
    assert_int_equal(period_infer(t, 64, t[63], &p, &f), 0);
    assert_int_equal(f.verdict, PERIOD_PERIODIC);
    /* the quantum: a 90 s median with a 60 s plan step is 2 min (rounded to the nearest) */
    for (int i = 0; i < 6; i++)
        t[i] = T0 + i * 90000ll;
    p.max_runs = 64;
    p.quantum_ms = 60000;
    assert_int_equal(period_infer(t, 6, t[5], &p, &f), 0);
    assert_int_equal(f.period_ms, 120000);
    assert_int_equal(f.offset_ms % 60000, 0);
    /* bad arguments */
    assert_int_equal(period_infer(NULL, 3, 0, &p, &f), ERR_INVAL);
    p.max_runs = PERIOD_MAX_RUNS + 1;
    assert_int_equal(period_infer(t, 6, 0, &p, &f), ERR_INVAL);
    period_params_default(&p);
    p.quantum_ms = 0;
    assert_int_equal(period_infer(t, 6, 0, &p, &f), ERR_INVAL);
    assert_string_equal(period_verdict_name(PERIOD_IRREGULAR), "irregular");
    assert_string_equal(period_verdict_name(99), "?");
}

static void nearest_start(void **state)
{
    (void)state;
    assert_int_equal(period_nearest_start(10999, 1000, 0), 11000);
    assert_int_equal(period_nearest_start(11400, 1000, 0), 11000);
    assert_int_equal(period_nearest_start(11600, 1000, 0), 12000);
    assert_int_equal(period_nearest_start(3400, 1000, 300), 3300);
    assert_int_equal(period_nearest_start(200, 1000, 300), 300); /* early for the first */
    assert_int_equal(period_nearest_start(5, 1000, 0), 0);
    assert_int_equal(period_nearest_start(5, 0, 0), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(index_with_offset), cmocka_unit_test(start_round_trip),
        cmocka_unit_test(utc_daily),         cmocka_unit_test(large_values),
        cmocka_unit_test(lcm_basic),         cmocka_unit_test(lcm_cap),
        cmocka_unit_test(lcm_no_overflow),   cmocka_unit_test(infer_every_30s),
        cmocka_unit_test(infer_daily_snaps), cmocka_unit_test(infer_phase_around_boundary),
        cmocka_unit_test(infer_refusals),    cmocka_unit_test(infer_newest_runs),
        cmocka_unit_test(nearest_start),
    };
    return cmocka_run_group_tests_name("rm_period", tests, NULL, NULL);
}
