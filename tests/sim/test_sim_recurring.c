/* test_sim_recurring.c - `paddock-sim recurring --engine slice` as a user runs it (issue 13, "It
 * must show" 3; the cluster engine's test is test_sim_recurring_cluster.c):
 * the same seed prints the same bytes, the JSON carries every documented figure for each policy,
 * LowCost with reprovisioning misses well fewer deadlines than the arbiter alone and reserves a
 * lower peak than greedy reservations (Morpheus §9), and bad usage exits 2. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/common/capture.h"
#include <jansson.h>

static char out_buf[1 << 17];

/* Runs `paddock-sim ARGS` in the source directory (the default WfCommons workloads are there);
 * stdout into out_buf; returns the exit code. */
static int sim(const char *args)
{
    return capture_tool("paddock-sim", args, out_buf, sizeof out_buf);
}

static const char *const policies[] = {"none", "greedy", "lowcost", "lowcost_reprov"};
static const char *const keys[] = {"runs",
                                   "missed",
                                   "slo_violation_fraction",
                                   "peak_tokens",
                                   "plan_peak_tokens",
                                   "periodic_grant_peak",
                                   "adhoc_latency_p50_s",
                                   "adhoc_latency_p90_s",
                                   "utilization",
                                   "reserved_used_fraction",
                                   "reprov_steps",
                                   "inferred_deadlines",
                                   "unplaced"};

/* A day of warm-up and a day evaluated: about 2 s per run. */
#define SMALL "recurring --engine slice --eval 1440 --load 0.9"

static double num(json_t *pol, const char *p, const char *k)
{
    json_t *v = json_object_get(json_object_get(pol, p), k);
    assert_true(json_is_number(v));
    return json_number_value(v);
}

static void test_same_seed_same_bytes(void **state)
{
    (void)state;
    assert_int_equal(sim(SMALL " --seed 2 --json"), 0);
    char *first = strdup(out_buf);
    assert_int_equal(sim(SMALL " --seed 2 --json"), 0);
    assert_string_equal(first, out_buf);
    assert_int_equal(sim(SMALL " --seed 1 --json"), 0);
    assert_string_not_equal(first, out_buf);
    free(first);
}

static void test_json_and_orderings(void **state)
{
    (void)state;
    assert_int_equal(sim(SMALL " --seed 2 --json"), 0);
    json_error_t je;
    json_t *doc = json_loads(out_buf, 0, &je);
    assert_non_null(doc);
    assert_int_equal(json_integer_value(json_object_get(doc, "jobs")), 12);
    assert_true(json_integer_value(json_object_get(doc, "adhoc_jobs")) > 0);
    json_t *pol = json_object_get(doc, "policies");
    assert_int_equal(json_object_size(pol), 4);
    for (size_t p = 0; p < 4; p++) {
        for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
            (void)num(pol, policies[p], keys[k]);
        double v = num(pol, policies[p], "slo_violation_fraction");
        assert_true(v >= 0 && v <= 1);
        assert_true(num(pol, policies[p], "runs") > 50);
        assert_true(num(pol, policies[p], "adhoc_latency_p50_s") > 0);
        double u = num(pol, policies[p], "utilization");
        assert_true(u > 0.3 && u <= 1);
        /* the same jobs and the same warm-up: the same deadlines are inferred */
        assert_true(num(pol, policies[p], "inferred_deadlines") ==
                    num(pol, "none", "inferred_deadlines"));
        assert_true(num(pol, policies[p], "peak_tokens") <= 100);
    }
    assert_true(num(pol, "none", "inferred_deadlines") > 0);
    /* none reserves nothing: its peak is what periodic runs were granted at once */
    assert_true(num(pol, "none", "plan_peak_tokens") == 0);
    assert_true(num(pol, "none", "peak_tokens") == num(pol, "none", "periodic_grant_peak"));
    assert_true(num(pol, "lowcost", "plan_peak_tokens") > 0);
    /* Morpheus §9: reservations with reprovisioning miss well fewer deadlines than the arbiter
     * alone, and LowCost packs them under a lower peak than greedy placement. */
    double none = num(pol, "none", "slo_violation_fraction");
    double lr = num(pol, "lowcost_reprov", "slo_violation_fraction");
    assert_true(none > 0.02);
    assert_true(lr <= none / 3);
    assert_true(num(pol, "lowcost_reprov", "peak_tokens") <
                0.95 * num(pol, "greedy", "peak_tokens"));
    assert_true(num(pol, "lowcost", "peak_tokens") < num(pol, "greedy", "peak_tokens"));
    /* only lowcost_reprov reprovisions */
    assert_true(num(pol, "lowcost_reprov", "reprov_steps") > 0);
    for (size_t p = 0; p < 3; p++)
        assert_true(num(pol, policies[p], "reprov_steps") == 0);
    json_decref(doc);
}

static void test_text_and_usage(void **state)
{
    (void)state;
    assert_int_equal(sim("recurring --engine slice --eval 360 --jobs 4 --seed 3"), 0);
    assert_non_null(strstr(out_buf, "lowcost_reprov"));
    assert_non_null(strstr(out_buf, "slo_viol"));
    assert_int_equal(sim("recurring --jobs 0"), 2);
    assert_int_equal(sim("recurring --load -1"), 2);
    assert_int_equal(sim("recurring --admission maybe"), 2);
    assert_int_equal(sim("recurring --bogus 1"), 2);
    assert_int_equal(sim("recurring --engine fluid"), 2);
    assert_int_equal(sim("recurring --policy best"), 2);
    assert_int_equal(sim("recurring --jobs 3 --workloads /nonexistent-dir"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_seed_same_bytes),
        cmocka_unit_test(test_json_and_orderings),
        cmocka_unit_test(test_text_and_usage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
