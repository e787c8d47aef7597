/* test_sim_arbiter_cluster.c - `paddock-sim arbiter` on the cluster engine (issue 23, the
 * default engine; docs/arbiter.md, "The cluster engine"): every job run by the simulated JM on
 * per-node queues, its tokens from an rm/ledger driven by ledger_apply. The same seed prints the
 * same bytes; the JSON keeps every key for every policy; the ledger's arbitration shows (spare
 * granted and taken back under MinEDF-WC, never under FCFS); admission refuses jobs and the ones
 * it refused would mostly have missed; on a mix whose deadlines are loose everything is admitted
 * and met; --trace's critical-chain walk adds up; and the slice engine is still there. */
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

static int sim(const char *args)
{
    return capture_tool("paddock-sim", args, out_buf, sizeof out_buf);
}

static json_t *sim_json(const char *args)
{
    assert_int_equal(sim(args), 0);
    json_error_t je;
    json_t *doc = json_loads(out_buf, 0, &je);
    assert_non_null(doc);
    return doc;
}

static double fig(json_t *doc, const char *policy, const char *key)
{
    json_t *o = json_object_get(json_object_get(doc, "policies"), policy);
    assert_non_null(o);
    json_t *v = json_object_get(o, key);
    assert_non_null(v);
    return json_number_value(v);
}

/* A small Facebook mix: 30 jobs, about a second of CPU each. */
#define FB "arbiter --mix facebook --jobs 30 --load 0.9 --json"

static const char *const policies[] = {"fcfs", "edf", "minedf", "minedf_wc", "paddock"};
static const char *const keys[] = {"missed_fraction",       "relative_deadline_exceeded",
                                   "utilization",           "spare_grants",
                                   "spare_reclaims",        "work_lost_s",
                                   "admitted_fraction",     "admitted_missed_fraction",
                                   "false_refusal_fraction"};

static void test_same_seed_same_bytes(void **state)
{
    (void)state;
    assert_int_equal(sim(FB " --seed 1"), 0);
    char *first = strdup(out_buf);
    assert_int_equal(sim(FB " --seed 1 --engine cluster"), 0); /* the default */
    assert_string_equal(first, out_buf);
    assert_int_equal(sim(FB " --seed 2"), 0);
    assert_string_not_equal(first, out_buf);
    free(first);
}

static void test_keys_and_ledger_arbitration(void **state)
{
    (void)state;
    json_t *doc = sim_json(FB " --seed 1");
    assert_int_equal(json_object_size(json_object_get(doc, "policies")), 10);
    for (size_t p = 0; p < 5; p++)
        for (int a = 0; a < 2; a++) {
            char name[64];
            snprintf(name, sizeof name, "%s%s", policies[p], a ? "+admission" : "");
            for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
                double v = fig(doc, name, keys[k]);
                assert_true(v >= 0);
            }
            double u = fig(doc, name, "utilization");
            assert_true(u > 0.01 && u <= 1.0 + 1e-9);
        }
    /* the ledger's MinEDF-WC lends spare and takes it back; FCFS (ledger_set_policy) never does */
    assert_true(fig(doc, "minedf_wc", "spare_grants") > 0);
    assert_true(fig(doc, "minedf_wc", "spare_reclaims") > 0);
    assert_true(fig(doc, "paddock", "spare_reclaims") > 0);
    assert_true(fig(doc, "fcfs", "spare_grants") == 0);
    assert_true(fig(doc, "fcfs", "spare_reclaims") == 0);
    /* tokens taken back reach the JMs as downgrades (jm/attempt.h), in paddock's cluster */
    assert_true(fig(doc, "paddock", "downgrades") > 0);
    /* EDF orders by deadline: it misses no more than FCFS on a loaded mix */
    assert_true(fig(doc, "edf", "missed_fraction") <= fig(doc, "fcfs", "missed_fraction"));
    /* without admission every deadline job counts as admitted */
    assert_true(fig(doc, "paddock", "admitted_fraction") == 1.0);
    json_decref(doc);
}

static void test_admission_through_the_ledger(void **state)
{
    (void)state;
    json_t *doc = sim_json(FB " --seed 1 --admission both");
    double adm = fig(doc, "paddock+admission", "admitted_fraction");
    assert_true(adm > 0 && adm < 1); /* the ledger refused some, admitted others */
    /* an admitted job misses less often than the jobs did without admission */
    assert_true(fig(doc, "paddock+admission", "admitted_missed_fraction") <=
                fig(doc, "paddock", "missed_fraction"));
    /* a refused job is reported against minedf_wc without admission: a fraction */
    double fr = fig(doc, "paddock+admission", "false_refusal_fraction");
    assert_true(fr >= 0 && fr <= 1);
    json_decref(doc);
    /* WfCommons jobs of 20-300 s, deadlines at least their time alone, no noise, little load,
     * over four seeds (one draw of 10 jobs may hold one tight pair, or let admission take all):
     * Paddock without admission meets every deadline, and so does every job the ledger admits;
     * a fresh cluster's error model (its conservative prior) refuses some that met them: false
     * refusals. MinEDF without work conservation gives each job just its minimum: it misses more
     * than MinEDF-WC. */
    double admitted = 0, refused_met = 0, minedf = 0, minedf_wc = 0;
    for (int seed = 1; seed <= 4; seed++) {
        char args[128];
        snprintf(args, sizeof args, "arbiter --jobs 10 --load 0.05 --task-sigma 0 --seed %d --json",
                 seed);
        doc = sim_json(args);
        assert_true(fig(doc, "paddock", "missed_fraction") == 0);
        assert_true(fig(doc, "paddock+admission", "admitted_missed_fraction") == 0);
        admitted += fig(doc, "paddock+admission", "admitted_fraction") / 4;
        refused_met += fig(doc, "paddock+admission", "false_refusal_fraction") / 4;
        minedf += fig(doc, "minedf", "missed_fraction") / 4;
        minedf_wc += fig(doc, "minedf_wc", "missed_fraction") / 4;
        json_decref(doc);
    }
    assert_true(admitted > 0 && admitted < 1);
    assert_true(refused_met > 0);
    assert_true(minedf > minedf_wc);
}

/* --trace's walk of each deadline job's critical chain (tools/sim/arbiter_sim_wait.c) covers the
 * job's whole time: start, the chain's runs, lost attempts, JM and PN waits add up to the time
 * from arrival to end, for admitted and refused jobs, and some chain has more than one task. */
static void test_wait_trace_adds_up(void **state)
{
    (void)state;
    const char *bin = getenv("PADDOCK_BIN_DIR"), *src = getenv("PADDOCK_SOURCE_DIR");
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s/paddock-sim' arbiter --mix wfcommons --jobs 12 --load 0.9 "
             "--admission on --trace 2>&1 >/dev/null | grep '^wait [a-z]* job '",
             src, bin);
    assert_int_equal(capture_run(cmd, out_buf, sizeof out_buf), 0);
    static const char *const parts[] = {"start",         "run",          "lost",
                                        "jm_short",      "jm_other",     "pn_own",
                                        "pn_other_nodl", "pn_other_adm", "pn_other_be"};
    int lines = 0, long_chain = 0;
    for (char *line = strtok(out_buf, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        double took = -1, sum = 0;
        int chain = 0;
        char *save = NULL, *prev = NULL;
        for (char *w = strtok_r(line, " ", &save); w != NULL; w = strtok_r(NULL, " ", &save)) {
            if (prev != NULL && strcmp(prev, "took") == 0)
                took = atof(w);
            if (prev != NULL && strcmp(prev, "chain") == 0)
                chain = atoi(w);
            for (size_t k = 0; prev != NULL && k < sizeof parts / sizeof *parts; k++)
                if (strcmp(prev, parts[k]) == 0)
                    sum += atof(w);
            prev = w;
        }
        assert_true(took >= 0);
        /* each part printed to a hundredth of a second */
        if (!(sum > took - 0.01 * 12 && sum < took + 0.01 * 12))
            fail_msg("took %.2f, parts add up to %.2f", took, sum);
        long_chain += chain > 1;
        lines++;
    }
    assert_true(lines > 0);
    assert_true(long_chain > 0);
}

static void test_trace_and_slice(void **state)
{
    (void)state;
    /* --trace: one line per deadline job with the ledger's prediction and the outcome */
    const char *bin = getenv("PADDOCK_BIN_DIR"), *src = getenv("PADDOCK_SOURCE_DIR");
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s/paddock-sim' arbiter --mix facebook --jobs 20 --admission on "
             "--trace 2>&1 >/dev/null | grep -c '^paddock job .* pred_p50 .* \\(met\\|missed\\)'",
             src, bin);
    assert_int_equal(capture_run(cmd, out_buf, sizeof out_buf), 0);
    assert_true(atoi(out_buf) > 0);
    /* the old engine stays for the old column */
    json_t *doc = sim_json(FB " --seed 1 --engine slice");
    assert_int_equal(json_object_size(json_object_get(doc, "policies")), 10);
    json_decref(doc);
    assert_int_equal(sim("arbiter --engine nope"), 2);
    assert_int_equal(sim("arbiter --profiled on"), 2); /* the slice engine's controller only */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_seed_same_bytes),
        cmocka_unit_test(test_keys_and_ledger_arbitration),
        cmocka_unit_test(test_admission_through_the_ledger),
        cmocka_unit_test(test_trace_and_slice),
        cmocka_unit_test(test_wait_trace_adds_up),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
