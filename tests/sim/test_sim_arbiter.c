/* test_sim_arbiter.c - `paddock-sim arbiter` as a user runs it (issue 12, "It must show" 3): the
 * same seed prints the same bytes, the JSON carries every documented figure for every policy
 * with and without admission, Verma's ordering holds where it clearly should (MinEDF-WC's
 * relative deadline exceeded at most EDF's on a loaded Facebook mix), admission admits fewer jobs
 * and fewer of them miss, and bad usage exits 2. Issue 22: calibrated admission reports its false
 * refusals, keeps most of its promises, learns as the ledger does, and is judged on deadlines
 * drawn from what a user knows (docs/arbiter.md, "Calibrated admission"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "tests/common/capture.h"
#include <jansson.h>

static char out_buf[1 << 17];

/* Runs `paddock-sim ARGS` in the source directory (the default WfCommons workloads are there);
 * stdout into out_buf; returns the exit code. */
static int sim(const char *args)
{
    /* the token-slice engine's figures (the cluster engine: test_sim_arbiter_cluster.c) */
    char full[2048];
    snprintf(full, sizeof full, "%s%s", args,
             strncmp(args, "arbiter", 7) == 0 ? " --engine slice" : "");
    return capture_tool("paddock-sim", full, out_buf, sizeof out_buf);
}

static const char *const policies[] = {"fcfs", "edf", "minedf", "minedf_wc", "paddock"};
static const char *const keys[] = {"missed_fraction",       "relative_deadline_exceeded",
                                   "utilization",           "spare_grants",
                                   "spare_reclaims",        "work_lost_s",
                                   "admitted_fraction",     "admitted_missed_fraction",
                                   "false_refusal_fraction"};

#define FB "arbiter --mix facebook --jobs 200 --load 0.9"

static void test_same_seed_same_bytes(void **state)
{
    (void)state;
    assert_int_equal(sim(FB " --seed 1 --json"), 0);
    char *first = strdup(out_buf);
    assert_int_equal(sim(FB " --seed 1 --json"), 0);
    assert_string_equal(first, out_buf);
    assert_int_equal(sim(FB " --seed 2 --json"), 0);
    assert_string_not_equal(first, out_buf);
    assert_int_equal(sim("arbiter --jobs 12 --load 0.8 --seed 3"), 0); /* WfCommons, text */
    char *text = strdup(out_buf);
    assert_int_equal(sim("arbiter --jobs 12 --load 0.8 --seed 3"), 0);
    assert_string_equal(text, out_buf);
    assert_non_null(strstr(text, "paddock+admission"));
    assert_non_null(strstr(text, "structure-aware"));
    free(first);
    free(text);
}

static void test_json_and_orderings(void **state)
{
    (void)state;
    /* Verma §IV's setting: deadlines on the true time alone */
    assert_int_equal(sim(FB " --seed 1 --deadlines true --json"), 0);
    json_error_t je;
    json_t *doc = json_loads(out_buf, 0, &je);
    assert_non_null(doc);
    json_t *pol = json_object_get(doc, "policies");
    assert_int_equal(json_object_size(pol), 10);
    for (size_t p = 0; p < 5; p++) {
        for (int a = 0; a < 2; a++) {
            char name[64];
            snprintf(name, sizeof name, "%s%s", policies[p], a ? "+admission" : "");
            json_t *o = json_object_get(pol, name);
            assert_non_null(o);
            for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
                assert_true(json_is_number(json_object_get(o, keys[k])));
            double m = json_number_value(json_object_get(o, "missed_fraction"));
            assert_true(m >= 0 && m <= 1);
            double adm = json_number_value(json_object_get(o, "admitted_fraction"));
            double fr = json_number_value(json_object_get(o, "false_refusal_fraction"));
            assert_true(fr >= 0 && fr <= 1);
            if (a == 0)
                assert_true(adm == 1.0 && fr == 0);
            else
                assert_true(adm > 0 && adm < 1);
        }
    }
    /* Verma's Figure 1 ordering: EDF without tailored allocations exceeds deadlines by more. */
    double edf = json_number_value(
        json_object_get(json_object_get(pol, "edf"), "relative_deadline_exceeded"));
    double wc = json_number_value(
        json_object_get(json_object_get(pol, "minedf_wc"), "relative_deadline_exceeded"));
    assert_true(edf > 0.01);
    assert_true(wc <= edf / 4);
    /* Only the policies that take tokens back kill or downgrade; fcfs and edf never do. */
    for (size_t p = 0; p < 2; p++)
        assert_int_equal(json_integer_value(
                             json_object_get(json_object_get(pol, policies[p]), "spare_reclaims")),
                         0);
    json_t *pd = json_object_get(pol, "paddock");
    assert_true(json_integer_value(json_object_get(pd, "spare_reclaims")) > 0);
    assert_int_equal(json_integer_value(json_object_get(pd, "kills")), 0);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(pol, "minedf_wc"), "downgrades")), 0);
    /* The oracles: ceil(T/d) ignores the DAG, so it is never above the structure-aware one. */
    json_t *orc = json_object_get(doc, "oracle");
    assert_true(json_number_value(json_object_get(orc, "td_mean")) <=
                json_number_value(json_object_get(orc, "dag_mean")) + 1e-9);
    json_decref(doc);
}

/* On WfCommons runs at load 0.9, Paddock downgrades instead of killing. With the daemon's rule
 * (jm/attempt.h: the most time left first, a grace only when at most 5 s and a quarter of the
 * estimate; issue 23) nearly every downgraded task is later preempted, so downgrades no longer
 * save work over Verma's kills here (the simulator's own youngest-first rule with an uncapped
 * grace did, by 0.2%): the bounds say they cost at most 10% more work and 5 points of missed
 * deadlines, over six seeds together (one seed's run moves by more than that: from 2% to 15%
 * more work on seeds 1-6; docs/arbiter.md). */
static void test_downgrades_keep_work(void **state)
{
    (void)state;
    double lost_pd = 0, lost_mw = 0, missed_pd = 0, missed_mw = 0;
    for (int seed = 1; seed <= 6; seed++) {
        char args[128];
        snprintf(args, sizeof args,
                 "arbiter --jobs 100 --load 0.9 --seed %d --admission off --json", seed);
        assert_int_equal(sim(args), 0);
        json_t *doc = json_loads(out_buf, 0, NULL);
        assert_non_null(doc);
        json_t *pol = json_object_get(doc, "policies");
        json_t *pd = json_object_get(pol, "paddock"), *mw = json_object_get(pol, "minedf_wc");
        assert_true(json_integer_value(json_object_get(pd, "downgrades")) > 0);
        assert_int_equal(json_integer_value(json_object_get(pd, "kills")), 0);
        lost_pd += json_number_value(json_object_get(pd, "work_lost_s"));
        lost_mw += json_number_value(json_object_get(mw, "work_lost_s"));
        missed_pd += json_number_value(json_object_get(pd, "missed_fraction")) / 6;
        missed_mw += json_number_value(json_object_get(mw, "missed_fraction")) / 6;
        json_decref(doc);
    }
    assert_true(lost_pd < 1.1 * lost_mw);
    assert_true(missed_pd <= missed_mw + 0.05);
}

static double field(json_t *doc, const char *policy, const char *key)
{
    return json_number_value(
        json_object_get(json_object_get(json_object_get(doc, "policies"), policy), key));
}

/* Issue 22, on CI-sized Facebook runs (docs/arbiter.md, "Calibrated admission"), each figure the
 * mean of eight seeds (one 200-job draw moves admitted_missed_fraction between 0 and 0.19):
 *  - a run is measured on the tokens it held (rm/calib.h calib_predicted), so the jobs that
 *    shared the cluster and waited for tokens no longer read as the model's error: learning
 *    from every job admits about as much as the ledger's rule (learn from admitted deadline
 *    jobs and from jobs alone), and no more. Measured against their medians at registration,
 *    every job's waits counted as error, and learning from all admitted 0.065 against 0.415;
 *  - admission keeps most of its promises: fewer admitted jobs miss than minedf_wc misses
 *    without admission;
 *  - deadlines from the estimates (the default) leave admission fewer false refusals than
 *    Verma's deadlines on the true time alone, under which every refused job is met without
 *    admission;
 *  - without run-time noise no admitted job misses and admission admits more than with it;
 *  - the profile's spread (jm/shape.h) admits about the same share as the estimates alone.
 * The target (admitted >= 0.9 x met, at most 1% missing) is not reached with noise the
 * estimates cannot see; docs/arbiter.md says why no admission can reach it there. Two claims
 * seed 1 alone used to make do not hold over seeds: admitted jobs missing under half as often
 * as minedf_wc's (seeds 7 and 9 broke it before common/rng, seeds 1 and 2 after), and the
 * spread keeping fewer broken promises than the estimates alone (means over seeds 1-12: 0.062
 * against 0.063 before common/rng, 0.063 against 0.062 after). */
#define CAL_SEEDS 8
static void test_calibrated_admission(void **state)
{
    (void)state;
    static const char *const args[] = {"", " --calib-from all", " --deadlines true",
                                       " --job-sigma 0 --task-sigma 0", " --spread off"};
    static const char *const keys3[] = {"admitted_fraction", "admitted_missed_fraction",
                                        "false_refusal_fraction"};
    const char *pa = "paddock+admission", *wa = "minedf_wc+admission";
    double m[5][2][3] = {{{0}}}, wc_missed = 0; /* [run][policy][key] means over the seeds */
    for (int seed = 1; seed <= CAL_SEEDS; seed++) {
        double wc0 = 0;
        for (int i = 0; i < 5; i++) {
            char cmd[256];
            snprintf(cmd, sizeof cmd, FB " --seed %d --json%s", seed, args[i]);
            assert_int_equal(sim(cmd), 0);
            json_t *doc = json_loads(out_buf, 0, NULL);
            assert_non_null(doc);
            for (int p = 0; p < 2; p++)
                for (int k = 0; k < 3; k++)
                    m[i][p][k] += field(doc, p ? pa : wa, keys3[k]) / CAL_SEEDS;
            double wc = field(doc, "minedf_wc", "missed_fraction");
            if (i == 0) {
                wc0 = wc;
                wc_missed += wc / CAL_SEEDS;
            }
            /* the reference run does not depend on the error model's rule */
            if (i == 1)
                assert_true(wc == wc0);
            json_decref(doc);
        }
    }
    enum { ADM, MISS, FREF };
    for (int p = 0; p < 2; p++) {
        /* the ledger's rule against learning from every job: about the same, no less */
        assert_true(m[1][p][ADM] > m[0][p][ADM] - 0.05);
        assert_true(m[0][p][ADM] >= m[1][p][ADM]);
        /* fewer broken promises than without admission */
        assert_true(m[0][p][MISS] < wc_missed);
        /* deadlines on the true time alone forgive every job its own slowness */
        assert_true(m[2][p][FREF] > 0.95);
        assert_true(m[0][p][FREF] < m[2][p][FREF]);
        /* without noise, the model holds */
        assert_true(m[3][p][MISS] <= 0.01);
        assert_true(m[3][p][ADM] > m[0][p][ADM]);
    }
    /* the JM's simulator with the profile's spread admits about the share the estimates alone do */
    assert_true(m[0][1][ADM] > m[4][1][ADM] - 0.05);
}

static char err_buf[1 << 18];

/* Issue 22's per-job view (`--trace`, docs/arbiter.md): it leaves the JSON unchanged, and every
 * line keeps admission's own contract: the error model starts at its conservative prior, the
 * bound is never below the median, and no job is admitted whose bound is past its deadline. */
static void test_trace_explains_admission(void **state)
{
    (void)state;
    const char *bin = getenv("PADDOCK_BIN_DIR"), *src = getenv("PADDOCK_SOURCE_DIR");
    assert_int_equal(sim(FB " --seed 2 --admission on --json"), 0);
    char *plain = strdup(out_buf);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s/paddock-sim' " FB " --seed 2 --admission on --json --trace "
             "--engine slice 2>&1 >/dev/null",
             src, bin);
    assert_int_equal(capture_run(cmd, err_buf, sizeof err_buf), 0);
    assert_int_equal(sim(FB " --seed 2 --admission on --json --trace"), 0);
    assert_string_equal(plain, out_buf);
    free(plain);
    size_t lines = 0, admitted = 0;
    int first = 1;
    for (char *l = strtok(err_buf, "\n"); l != NULL; l = strtok(NULL, "\n")) {
        if (strncmp(l, "paddock job ", 12) != 0)
            continue;
        double d, p50, bound, scale;
        char verdict[16];
        assert_int_equal(sscanf(strstr(l, " deadline "),
                                " deadline %lf pred_p50 %lf bound %lf "
                                "scale %lf %15s",
                                &d, &p50, &bound, &scale, verdict),
                         5);
        if (first) /* the first deadline job meets a model without outcomes: the prior */
            assert_true(scale > 1.49 && scale < 1.51);
        first = 0;
        assert_true(p50 > 0);
        assert_true(bound >= p50 - 1e-6);
        if (strcmp(verdict, "admitted") == 0) {
            admitted++;
            assert_true(bound <= d + 0.01);
        } else {
            assert_string_equal(verdict, "refused");
        }
        lines++;
    }
    assert_true(lines > 50);
    assert_true(admitted > 0 && admitted < lines);
}

static void test_usage(void **state)
{
    (void)state;
    assert_int_equal(sim("arbiter --jobs 0"), 2);
    assert_int_equal(sim("arbiter --mix yahoo"), 2);
    assert_int_equal(sim("arbiter --admission maybe"), 2);
    assert_int_equal(sim("arbiter --calib-from some"), 2);
    assert_int_equal(sim("arbiter --deadlines guessed"), 2);
    assert_int_equal(sim("arbiter --spread maybe"), 2);
    assert_int_equal(sim("arbiter --bogus 1"), 2);
    assert_int_equal(sim("arbiter --jobs 3 --workloads /nonexistent-dir"), 1);
    assert_int_equal(sim("arbiter --mix facebook --jobs 5 --admission off --json"), 0);
    json_t *doc = json_loads(out_buf, 0, NULL);
    assert_non_null(doc);
    assert_int_equal(json_object_size(json_object_get(doc, "policies")), 5);
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_seed_same_bytes),
        cmocka_unit_test(test_downgrades_keep_work),
        cmocka_unit_test(test_json_and_orderings),
        cmocka_unit_test(test_calibrated_admission),
        cmocka_unit_test(test_trace_explains_admission),
        cmocka_unit_test(test_usage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
