/* test_sim_recurring_cluster.c - `paddock-sim recurring` on the cluster engine (the default;
 * issue 23): the runs are cluster jobs and their plans come from the RM's ledger through
 * ledger_apply. Under lowcost the recurring runs are registered with the reservation the ledger's
 * plan holds for them (RECUR_MODEL from rm/ledger_recur_plan.h) and miss fewer deadlines than
 * under the arbiter alone; under none nothing is reserved; the same seed prints the same bytes. */
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
static char lowcost_out[1 << 17]; /* the lowcost run's bytes, for the second test */

/* Runs `paddock-sim ARGS` in the source directory (the default WfCommons workloads are there);
 * stdout into out_buf; returns the exit code. */
static int sim(const char *args)
{
    return capture_tool("paddock-sim", args, out_buf, sizeof out_buf);
}

/* Four periodic jobs on 40 tokens, six hours of warm-up, half a day evaluated: ~3 s a policy.
 * Load 0.9 and two seeds: the claim is about deadlines the arbiter alone misses, and one
 * four-job draw at load 0.7 may give it none to miss (seed 1 missed 5 of 27 under the
 * simulator's former xoshiro streams and 1 of 15 under common/rng's). */
#define SMALL  "recurring --jobs 4 --warmup 360 --eval 720 --capacity 40 --load 0.9 --json"
#define NSEEDS 2

static json_t *run_policy(const char *policy, int seed)
{
    char args[256];
    snprintf(args, sizeof args, SMALL " --seed %d --policy %s", seed, policy);
    assert_int_equal(sim(args), 0);
    if (strcmp(policy, "lowcost") == 0 && seed == 1)
        snprintf(lowcost_out, sizeof lowcost_out, "%s", out_buf);
    json_error_t e;
    json_t *doc = json_loads(out_buf, 0, &e);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "engine")), "cluster");
    json_t *pol = json_object_get(json_object_get(doc, "policies"), policy);
    assert_non_null(pol);
    json_incref(pol);
    json_decref(doc);
    return pol;
}

static double num(json_t *pol, const char *k)
{
    json_t *v = json_object_get(pol, k);
    assert_true(json_is_number(v));
    return json_number_value(v);
}

static void test_reservations_through_the_ledger(void **state)
{
    (void)state;
    double runs = 0, reserved = 0, missed_none = 0, missed_low = 0;
    for (int seed = 1; seed <= NSEEDS; seed++) {
        json_t *none = run_policy("none", seed);
        json_t *low = run_policy("lowcost", seed);
        double r = num(low, "runs");
        assert_true(num(none, "runs") == r); /* the same runs under both policies */
        /* the arbiter alone: no plan, no reserved run */
        assert_true(num(none, "reserved_runs") == 0);
        assert_true(num(none, "plan_peak_tokens") == 0);
        /* lowcost: the ledger's plan holds reservations within the capacity */
        assert_true(num(low, "plan_peak_tokens") > 0);
        assert_true(num(low, "plan_peak_tokens") <= 40);
        assert_true(num(low, "reserved_runs") <= r);
        assert_true(num(low, "utilization") > 0.2);
        runs += r;
        reserved += num(low, "reserved_runs");
        missed_none += num(none, "missed");
        missed_low += num(low, "missed");
        json_decref(none);
        json_decref(low);
    }
    assert_true(runs >= 10); /* evaluated periodic runs with a deadline */
    /* most evaluated runs registered under a reservation (a run fired while its job had no room
       in the plan has none) */
    assert_true(reserved >= runs / 2);
    /* and their reservations keep deadlines the arbiter alone misses, over the seeds together */
    assert_true(missed_low < missed_none);
}

static void test_same_seed_same_bytes(void **state)
{
    (void)state;
    assert_true(lowcost_out[0] != '\0'); /* the first test ran lowcost */
    assert_int_equal(sim(SMALL " --seed 1 --policy lowcost"), 0);
    assert_string_equal(lowcost_out, out_buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reservations_through_the_ledger),
        cmocka_unit_test(test_same_seed_same_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
