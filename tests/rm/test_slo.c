/* test_slo.c - deadline inference from synthetic histories of a daily job: consumers reading at
 * a fixed time give that time, scattered reads or reads right at the end fall back to the p95
 * completion time × 1.2, too few successful runs give nothing, failed runs are ignored, and
 * nearest-rank percentiles at their edges. */
#include "common/err.h"
#include "common/mem.h"
#include "rm/slo.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define MIN  60000LL
#define HOUR (60 * MIN)

static struct slo_params defaults(void)
{
    struct slo_params p;
    slo_params_default(&p);
    return p;
}

static void params_and_names(void **state)
{
    (void)state;
    struct slo_params p = defaults();
    assert_int_equal(p.min_runs, 3);
    assert_float_equal(p.cv_max, 0.25, 0);
    assert_float_equal(p.slack_min, 0.1, 0);
    assert_float_equal(p.read_pct, 50, 0);
    assert_float_equal(p.completion_pct, 95, 0);
    assert_float_equal(p.completion_margin, 1.2, 0);
    assert_string_equal(slo_source_name(SLO_NONE), "none");
    assert_string_equal(slo_source_name(SLO_CONSUMERS), "consumers");
    assert_string_equal(slo_source_name(SLO_COMPLETION), "completion");
    assert_string_equal(slo_source_name(99), "none");
}

static void percentile_edges(void **state)
{
    (void)state;
    double one[] = {7};
    assert_float_equal(slo_percentile(one, 1, 0), 7, 0);
    assert_float_equal(slo_percentile(one, 1, 50), 7, 0);
    assert_float_equal(slo_percentile(one, 1, 100), 7, 0);
    double four[] = {40, 10, 30, 20};                       /* unsorted: reordered in place */
    assert_float_equal(slo_percentile(four, 4, 50), 20, 0); /* rank ceil(2) = 2 */
    assert_float_equal(four[0], 10, 0);
    assert_float_equal(four[3], 40, 0);
    assert_float_equal(slo_percentile(four, 4, 0), 10, 0);
    assert_float_equal(slo_percentile(four, 4, 25), 10, 0);   /* rank 1 exactly */
    assert_float_equal(slo_percentile(four, 4, 25.1), 20, 0); /* just above: rank 2 */
    assert_float_equal(slo_percentile(four, 4, 75), 30, 0);
    assert_float_equal(slo_percentile(four, 4, 76), 40, 0);
    assert_float_equal(slo_percentile(four, 4, 100), 40, 0);
    assert_float_equal(slo_percentile(four, 4, 150), 40, 0); /* clamped */
    assert_float_equal(slo_percentile(four, 4, -5), 10, 0);
    assert_float_equal(slo_percentile(four, 4, NAN), 10, 0);
    /* 95 % of 20 is rank 19 exactly (not 20 by a rounding error); of 10 it is rank 10. */
    double twenty[20], ten[10];
    for (int i = 0; i < 20; i++)
        twenty[i] = 20 - i;
    for (int i = 0; i < 10; i++)
        ten[i] = i + 1;
    assert_float_equal(slo_percentile(twenty, 20, 95), 19, 0);
    assert_float_equal(slo_percentile(ten, 10, 95), 10, 0);
    assert_float_equal(slo_percentile(ten, 10, 90), 9, 0);
    assert_float_equal(slo_percentile(ten, 10, 10), 1, 0);
    double hundred[100];
    for (int i = 0; i < 100; i++)
        hundred[i] = i + 1;
    assert_float_equal(slo_percentile(hundred, 100, 99), 99, 0);
    assert_float_equal(slo_percentile(hundred, 100, 99.5), 100, 0);
    assert_float_equal(slo_percentile(hundred, 100, 0.5), 1, 0);
    assert_float_equal(slo_percentile(NULL, 0, 50), 0, 0);
}

/* A daily job starting around 02:00 and ending around 05:00; a report reads its output at
 * 16:00 ± 5 minutes. Read offsets in minutes, sorted: −5 −3 −2 −1 0 1 2 3 4 5: the nearest-rank
 * median (rank 5 of 10) is 0, so the deadline is 16:00 exactly; |deviations| sorted
 * 0 1 1 2 2 3 3 4 5 5 give MAD = 2 min, CV = 2/960. */
static const int64_t read_off[10] = {-5, -3, -1, 0, 2, 4, 1, -2, 3, 5};
static const int64_t end_off[10] = {0, 10, -10, 20, 5, -5, 15, 30, -20, 25};

static void fill_daily(struct slo_run *runs)
{
    for (int i = 0; i < 10; i++) {
        runs[i].start = 2 * HOUR + (i % 3) * MIN;
        runs[i].end = 5 * HOUR + end_off[i] * MIN;
        runs[i].out_read = 16 * HOUR + read_off[i] * MIN;
        runs[i].ok = true;
    }
}

static void consumers_at_fixed_time(void **state)
{
    (void)state;
    struct slo_run runs[10];
    fill_daily(runs);
    struct slo_params p = defaults();
    struct slo_inference inf;
    assert_int_equal(slo_infer(runs, 10, &p, &inf), 0);
    assert_int_equal(inf.source, SLO_CONSUMERS);
    assert_int_equal(inf.deadline, 16 * HOUR);
    assert_int_equal(inf.read_median, 16 * HOUR);
    assert_int_equal(inf.runs, 10);
    assert_int_equal(inf.consumed, 10);
    assert_float_equal(inf.read_cv, 2.0 / 960, 1e-12);
    /* The ends, sorted: 4:40 .. 5:30; p95 of 10 is rank 10, 5:30. */
    assert_int_equal(inf.end_pct, 5 * HOUR + 30 * MIN);
    /* Slack (16:00 − end) / (end − start) is about 11 h / 3 h. */
    assert_true(inf.slack_ratio > 3 && inf.slack_ratio < 4.2);
    /* Another percentile of the reads: rank 9 of 10 is +4 min. */
    p.read_pct = 90;
    assert_int_equal(slo_infer(runs, 10, &p, &inf), 0);
    assert_int_equal(inf.source, SLO_CONSUMERS);
    assert_int_equal(inf.deadline, 16 * HOUR + 4 * MIN);
    assert_int_equal(inf.read_median, 16 * HOUR);
}

/* Reads spread over the day, 06:00 .. 23:00: median 14:00, |deviations| 0 2 2 4 4 6 6 8 8 9 h,
 * MAD 4 h, CV 4/14 > 0.25. The fallback is p95 of the ends (the latest, 5:30) × 1.2 = 6:36. */
static void scattered_reads_fall_back(void **state)
{
    (void)state;
    struct slo_run runs[10];
    fill_daily(runs);
    const int64_t hours[10] = {6, 8, 10, 12, 14, 16, 18, 20, 22, 23};
    for (int i = 0; i < 10; i++)
        runs[i].out_read = hours[(i * 3) % 10] * HOUR; /* any order */
    struct slo_params p = defaults();
    struct slo_inference inf;
    assert_int_equal(slo_infer(runs, 10, &p, &inf), 0);
    assert_int_equal(inf.source, SLO_COMPLETION);
    assert_int_equal(inf.read_median, 14 * HOUR);
    assert_float_equal(inf.read_cv, 4.0 / 14, 1e-12);
    assert_int_equal(inf.end_pct, 5 * HOUR + 30 * MIN);
    assert_int_equal(inf.deadline, (5 * HOUR + 30 * MIN) * 6 / 5);
    assert_int_equal(inf.deadline, 6 * HOUR + 36 * MIN);
    /* A looser CV threshold accepts the same reads: the deadline is their median. */
    p.cv_max = 0.3;
    assert_int_equal(slo_infer(runs, 10, &p, &inf), 0);
    assert_int_equal(inf.source, SLO_CONSUMERS);
    assert_int_equal(inf.deadline, 14 * HOUR);
}

/* The output is read a minute after each run ends, at a steady time: no slack (1 min / 3 h is
 * far below 0.1), so it is not a deadline but a consumer waiting for the job. */
static void reads_at_the_end_fall_back(void **state)
{
    (void)state;
    struct slo_run runs[10];
    fill_daily(runs);
    for (int i = 0; i < 10; i++)
        runs[i].out_read = runs[i].end + MIN;
    struct slo_params p = defaults();
    struct slo_inference inf;
    assert_int_equal(slo_infer(runs, 10, &p, &inf), 0);
    assert_true(inf.read_cv <= p.cv_max); /* the reads are steady; only the slack fails */
    assert_true(inf.slack_ratio < 0.01);
    assert_int_equal(inf.source, SLO_COMPLETION);
    assert_int_equal(inf.deadline, 6 * HOUR + 36 * MIN);
    /* With a slack threshold of 0, the same reads would be a deadline. */
    p.slack_min = 0;
    assert_int_equal(slo_infer(runs, 10, &p, &inf), 0);
    assert_int_equal(inf.source, SLO_CONSUMERS);
}

static void too_few_runs(void **state)
{
    (void)state;
    struct slo_run runs[10];
    fill_daily(runs);
    for (int i = 2; i < 10; i++)
        runs[i].ok = false; /* two successes, eight failures */
    struct slo_params p = defaults();
    struct slo_inference inf;
    assert_int_equal(slo_infer(runs, 10, &p, &inf), 0);
    assert_int_equal(inf.source, SLO_NONE);
    assert_int_equal(inf.deadline, 0);
    assert_int_equal(inf.runs, 2);
    assert_int_equal(inf.consumed, 2);
    runs[2].ok = true; /* the third makes min_runs */
    assert_int_equal(slo_infer(runs, 10, &p, &inf), 0);
    assert_int_equal(inf.source, SLO_CONSUMERS);
    assert_int_equal(inf.runs, 3);
    /* No history at all. */
    assert_int_equal(slo_infer(NULL, 0, &p, &inf), 0);
    assert_int_equal(inf.source, SLO_NONE);
    assert_int_equal(inf.runs, 0);
    /* Enough runs but fewer than min_runs of them consumed: completion. */
    fill_daily(runs);
    for (int i = 2; i < 10; i++)
        runs[i].out_read = -1;
    assert_int_equal(slo_infer(runs, 10, &p, &inf), 0);
    assert_int_equal(inf.source, SLO_COMPLETION);
    assert_int_equal(inf.consumed, 2);
}

/* Failed runs with wild read times, late ends and even an end before the start change nothing. */
static void failed_runs_ignored(void **state)
{
    (void)state;
    struct slo_run runs[16];
    fill_daily(runs);
    for (int i = 10; i < 16; i++) {
        runs[i].start = 3 * HOUR;
        runs[i].end = i == 15 ? HOUR : 23 * HOUR;
        runs[i].out_read = (i - 9) * 2 * HOUR;
        runs[i].ok = false;
    }
    struct slo_params p = defaults();
    struct slo_inference a, b;
    assert_int_equal(slo_infer(runs, 10, &p, &a), 0);
    assert_int_equal(slo_infer(runs, 16, &p, &b), 0);
    assert_memory_equal(&a, &b, sizeof a);
    assert_int_equal(b.source, SLO_CONSUMERS);
    assert_int_equal(b.runs, 10);
    assert_int_equal(b.deadline, 16 * HOUR);
}

static void invalid(void **state)
{
    (void)state;
    struct slo_run runs[10];
    fill_daily(runs);
    struct slo_params p = defaults();
    struct slo_inference inf;
    assert_int_equal(slo_infer(runs, 10, &p, NULL), ERR_INVAL);
    assert_int_equal(slo_infer(runs, 10, NULL, &inf), ERR_INVAL);
    assert_int_equal(slo_infer(NULL, 3, &p, &inf), ERR_INVAL);
    struct slo_params bad = p;
    bad.read_pct = 101;
    assert_int_equal(slo_infer(runs, 10, &bad, &inf), ERR_INVAL);
    bad = p;
    bad.completion_pct = -1;
    assert_int_equal(slo_infer(runs, 10, &bad, &inf), ERR_INVAL);
    bad = p;
    bad.completion_margin = 0;
    assert_int_equal(slo_infer(runs, 10, &bad, &inf), ERR_INVAL);
    bad = p;
    bad.cv_max = NAN;
    assert_int_equal(slo_infer(runs, 10, &bad, &inf), ERR_INVAL);
    runs[4].end = runs[4].start - 1; /* a successful run cannot end before it starts */
    assert_int_equal(slo_infer(runs, 10, &p, &inf), ERR_INVAL);
}

static void nomem(void **state)
{
    (void)state;
    struct slo_run runs[10];
    fill_daily(runs);
    struct slo_params p = defaults();
    struct slo_inference inf;
    mem_fail_after(0);
    assert_int_equal(slo_infer(runs, 10, &p, &inf), ERR_NOMEM);
    mem_fail_reset();
    mem_fail_after(-1);
    assert_int_equal(slo_infer(runs, 10, &p, &inf), 0);
    assert_int_equal(inf.deadline, 16 * HOUR);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(params_and_names),
        cmocka_unit_test(percentile_edges),
        cmocka_unit_test(consumers_at_fixed_time),
        cmocka_unit_test(scattered_reads_fall_back),
        cmocka_unit_test(reads_at_the_end_fall_back),
        cmocka_unit_test(too_few_runs),
        cmocka_unit_test(failed_runs_ignored),
        cmocka_unit_test(invalid),
        cmocka_unit_test(nomem),
    };
    return cmocka_run_group_tests_name("rm_slo", tests, NULL, NULL);
}
