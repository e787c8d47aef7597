/* The Prometheus text builder: HELP/TYPE once per family, escaping, value spelling,
 * histograms (cumulative buckets, +Inf, _sum, _count), rejections that leave the text valid,
 * and allocation failures that fail cleanly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "common/metrics.h"

static size_t count_lines_with(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

static void test_counter_and_gauge(void **state)
{
    (void)state;
    struct metrics m;
    metrics_init(&m);
    assert_int_equal(
        metrics_family(&m, "paddock_rm_heartbeats_total", METRICS_COUNTER, "Heartbeats ingested."),
        0);
    const char *l1[] = {"reason", "decode", NULL};
    const char *l2[] = {"reason", "auth", NULL};
    assert_int_equal(metrics_sample(&m, l1, 3), 0);
    assert_int_equal(metrics_sample(&m, l2, 0.5), 0);
    assert_int_equal(metrics_gauge1(&m, "paddock_up", "Up.", 1), 0);
    assert_int_equal(metrics_error(&m), 0);
    size_t len;
    const char *t = metrics_text(&m, &len);
    assert_int_equal(strlen(t), len);
    assert_string_equal(t, "# HELP paddock_rm_heartbeats_total Heartbeats ingested.\n"
                           "# TYPE paddock_rm_heartbeats_total counter\n"
                           "paddock_rm_heartbeats_total{reason=\"decode\"} 3\n"
                           "paddock_rm_heartbeats_total{reason=\"auth\"} 0.5\n"
                           "# HELP paddock_up Up.\n"
                           "# TYPE paddock_up gauge\n"
                           "paddock_up 1\n");
    metrics_close(&m);
}

static void test_family_once(void **state)
{
    (void)state;
    struct metrics m;
    metrics_init(&m);
    assert_int_equal(metrics_gauge1(&m, "a_b", NULL, 1), 0);
    assert_int_equal(metrics_family(&m, "a_b", METRICS_GAUGE, "again"), ERR_EXISTS);
    assert_int_equal(metrics_error(&m), ERR_EXISTS);
    const char *t = metrics_text(&m, NULL);
    assert_int_equal(count_lines_with(t, "# TYPE a_b "), 1);
    assert_null(strstr(t, "# HELP")); /* NULL help: no HELP line */
    /* Take leaves the builder empty and reusable; families forgotten. */
    size_t len = 0;
    char *taken = metrics_take(&m, &len);
    assert_non_null(taken);
    assert_int_equal(len, strlen(taken));
    mem_free(taken);
    assert_int_equal(metrics_error(&m), 0);
    assert_string_equal(metrics_text(&m, NULL), "");
    assert_int_equal(metrics_gauge1(&m, "a_b", NULL, 2), 0);
    metrics_close(&m);
}

static void test_escaping(void **state)
{
    (void)state;
    struct metrics m;
    metrics_init(&m);
    assert_int_equal(metrics_family(&m, "x", METRICS_GAUGE, "back\\slash and\nnewline \"q\""), 0);
    const char *l[] = {"vc", "a\"b\\c\nd", NULL};
    assert_int_equal(metrics_sample(&m, l, 1), 0);
    const char *t = metrics_text(&m, NULL);
    assert_non_null(strstr(t, "# HELP x back\\\\slash and\\nnewline \"q\"\n"));
    assert_non_null(strstr(t, "x{vc=\"a\\\"b\\\\c\\nd\"} 1\n"));
    char buf[8];
    assert_int_equal(metrics_escape_label(buf, sizeof buf, "a\"b"), 4);
    assert_string_equal(buf, "a\\\"b");
    assert_int_equal(metrics_escape_label(buf, 3, "a\"b"), 4); /* truncated, terminated */
    assert_string_equal(buf, "a\\");
    metrics_close(&m);
}

static void test_values(void **state)
{
    (void)state;
    struct metrics m;
    metrics_init(&m);
    assert_int_equal(metrics_family(&m, "v", METRICS_GAUGE, NULL), 0);
    const char *a[] = {"k", "nan", NULL}, *b[] = {"k", "pinf", NULL}, *c[] = {"k", "ninf", NULL},
               *d[] = {"k", "tenth", NULL}, *e[] = {"k", "big", NULL};
    metrics_sample(&m, a, NAN);
    metrics_sample(&m, b, INFINITY);
    metrics_sample(&m, c, -INFINITY);
    metrics_sample(&m, d, 0.1);
    metrics_sample(&m, e, 1234567890123.0);
    const char *t = metrics_text(&m, NULL);
    assert_non_null(strstr(t, "v{k=\"nan\"} NaN\n"));
    assert_non_null(strstr(t, "v{k=\"pinf\"} +Inf\n"));
    assert_non_null(strstr(t, "v{k=\"ninf\"} -Inf\n"));
    assert_non_null(strstr(t, "v{k=\"tenth\"} 0.1\n"));
    assert_non_null(strstr(t, "v{k=\"big\"} 1234567890123\n"));
    metrics_close(&m);
}

static void test_rejections(void **state)
{
    (void)state;
    struct metrics m;
    metrics_init(&m);
    assert_int_equal(metrics_sample(&m, NULL, 1), ERR_STATE); /* no family yet */
    assert_int_equal(metrics_family(&m, "9bad", METRICS_GAUGE, NULL), ERR_INVAL);
    assert_int_equal(metrics_family(&m, "bad-name", METRICS_GAUGE, NULL), ERR_INVAL);
    assert_int_equal(metrics_family(&m, "", METRICS_GAUGE, NULL), ERR_INVAL);
    assert_int_equal(metrics_family(&m, "ok:name_1", METRICS_GAUGE, NULL), 0);
    const char *odd[] = {"a", NULL};
    const char *badl[] = {"a-b", "x", NULL};
    const char *reserved[] = {"__name__", "x", NULL};
    const char *many[] = {"a", "1", "b", "1", "c", "1", "d", "1", "e", "1",
                          "f", "1", "g", "1", "h", "1", "i", "1", NULL};
    size_t before = 0;
    metrics_text(&m, &before);
    assert_int_equal(metrics_sample(&m, odd, 1), ERR_INVAL);
    assert_int_equal(metrics_sample(&m, badl, 1), ERR_INVAL);
    assert_int_equal(metrics_sample(&m, reserved, 1), ERR_INVAL);
    assert_int_equal(metrics_sample(&m, many, 1), ERR_INVAL);
    size_t after = 0;
    metrics_text(&m, &after);
    assert_int_equal(before, after); /* nothing partial written */
    struct metrics_hist h;
    double bounds[] = {1, 2};
    assert_int_equal(metrics_hist_init(&h, bounds, 2), 0);
    assert_int_equal(metrics_histogram(&m, NULL, &h), ERR_STATE); /* a gauge family */
    assert_int_equal(metrics_error(&m), ERR_STATE);               /* first error kept */
    metrics_close(&m);
}

static void test_histogram(void **state)
{
    (void)state;
    struct metrics_hist h;
    double bad[] = {1, 1};
    assert_int_equal(metrics_hist_init(&h, bad, 2), ERR_INVAL);
    assert_int_equal(metrics_hist_init(&h, bad, 0), ERR_INVAL);
    double inf[] = {1, INFINITY};
    assert_int_equal(metrics_hist_init(&h, inf, 2), ERR_INVAL);
    double bounds[] = {0.001, 0.01, 0.1};
    assert_int_equal(metrics_hist_init(&h, bounds, 3), 0);
    metrics_hist_observe(&h, 0.0005);
    metrics_hist_observe(&h, 0.001); /* le is inclusive */
    metrics_hist_observe(&h, 0.05);
    metrics_hist_observe(&h, 7);
    struct metrics m;
    metrics_init(&m);
    assert_int_equal(metrics_family(&m, "spawn_seconds", METRICS_HISTOGRAM, "Spawn latency."), 0);
    assert_int_equal(metrics_sample(&m, NULL, 1), ERR_STATE); /* histograms take no samples */
    const char *l[] = {"class", "batch", NULL};
    assert_int_equal(metrics_histogram(&m, l, &h), 0);
    const char *t = metrics_text(&m, NULL);
    assert_non_null(strstr(t, "# TYPE spawn_seconds histogram\n"
                              "spawn_seconds_bucket{class=\"batch\",le=\"0.001\"} 2\n"
                              "spawn_seconds_bucket{class=\"batch\",le=\"0.01\"} 2\n"
                              "spawn_seconds_bucket{class=\"batch\",le=\"0.1\"} 3\n"
                              "spawn_seconds_bucket{class=\"batch\",le=\"+Inf\"} 4\n"
                              "spawn_seconds_sum{class=\"batch\"} 7.0515\n"
                              "spawn_seconds_count{class=\"batch\"} 4\n"));
    /* Unlabelled series: le is the only label. */
    assert_int_equal(metrics_family(&m, "h2_seconds", METRICS_HISTOGRAM, NULL), 0);
    assert_int_equal(metrics_histogram(&m, NULL, &h), 0);
    assert_non_null(strstr(metrics_text(&m, NULL), "h2_seconds_bucket{le=\"+Inf\"} 4\n"
                                                   "h2_seconds_sum 7.0515\n"));
    metrics_close(&m);
}

static void test_alloc_failure(void **state)
{
    (void)state;
    /* Fail the Nth allocation for every N until the whole build succeeds: each run either
     * completes or reports ERR_NOMEM with a text that is a prefix of the full one; no leak
     * (ASan checks). */
    struct metrics ref;
    metrics_init(&ref);
    const char *l[] = {"s", "x", NULL};
    metrics_family(&ref, "a_total", METRICS_COUNTER, "A.");
    metrics_sample(&ref, l, 1);
    metrics_gauge1(&ref, "b", "B.", 2);
    assert_int_equal(metrics_error(&ref), 0);
    const char *full = metrics_text(&ref, NULL);
    bool completed = false;
    for (long n = 0; n < 100 && !completed; n++) {
        struct metrics m;
        metrics_init(&m);
        mem_fail_after(n);
        metrics_family(&m, "a_total", METRICS_COUNTER, "A.");
        metrics_sample(&m, l, 1);
        metrics_gauge1(&m, "b", "B.", 2);
        mem_fail_reset();
        size_t len;
        const char *t = metrics_text(&m, &len);
        assert_memory_equal(t, full, len);
        if (metrics_error(&m) == 0) {
            assert_string_equal(t, full);
            completed = true;
        } else {
            assert_int_equal(metrics_error(&m), ERR_NOMEM);
        }
        metrics_close(&m);
    }
    assert_true(completed);
    metrics_close(&ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counter_and_gauge), cmocka_unit_test(test_family_once),
        cmocka_unit_test(test_escaping),          cmocka_unit_test(test_values),
        cmocka_unit_test(test_rejections),        cmocka_unit_test(test_histogram),
        cmocka_unit_test(test_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
