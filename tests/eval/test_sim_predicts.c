/* test_sim_predicts.c - the simulator predicts the cluster (issue 23): tools/deadline-eval on
 * two workloads, the default chain-and-fan-out DAG (chainfan-20x4, a chain whose tasks wait in
 * PN queues behind their siblings) and 1000genome (328 tasks, most of them short: a job bound
 * by per-task costs), each without a deadline and at 1.3x greedy (`--repeats 1`), against the
 * local cluster it starts; beside every real run, `paddock-sim predict`'s makespan for the same
 * spec, nodes, tokens and deadline. Checked: the prediction within 10% of the faster of each
 * workload's two real runs, and met/missed agreeing at 1.3x. The two runs of a workload hold the
 * same tokens: alone on the cluster, a wide job is granted every token whatever its controller
 * asks (the RM's MinEDF-WC lends it the spare; its report's "tokens" say granted 8 throughout),
 * so they are two samples of one prediction. The faster one is compared because the simulator
 * models an idle machine and a loaded one only adds time. Not checked here: chainfan-24x3 (within
 * 6% of eighteen real runs since the simulator re-places upgrades as the daemon does), and montage,
 * predicted well (-8% to +4%) but whose real runs at 1.3x end either side of the deadline (14.7
 * s, 15.5 s, 16.1 s for 15.6 s), so met/missed would flip from run to run (docs/deadline-eval.md).
 * And `paddock-sim predict --deadline` says met or missed by its makespan; `--trace` writes every
 * attempt once, in a report's shape; soykb, whose reservations once never lapsed in the simulator,
 * is predicted in full. Skipped (77) without python3. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "tests/common/capture.h"

static char dir[] = "/tmp/paddock-simpred-XXXXXX";

static void test_chainfans_predicted(void **state)
{
    (void)state;
    const char *bin = getenv("PADDOCK_BIN_DIR"), *src = getenv("PADDOCK_SOURCE_DIR");
    assert_non_null(bin);
    assert_non_null(src);
    assert_non_null(mkdtemp(dir));
    static char out[1 << 20];
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "'%s/paddock' import chainfan -o '%s/chainfan-20x4.json' >/dev/null 2>&1 && "
             "python3 '%s/tools/deadline-eval' '%s/chainfan-20x4.json' "
             "'%s/tests/data/wfcommons/1000genome-chameleon-8ch-250k-001.json' --repeats 1 "
             "--paddock '%s/paddock' --sim '%s/paddock-sim' --dir '%s/run' --json 2>'%s/stderr'",
             bin, dir, src, dir, src, bin, bin, dir, dir);
    int rc = capture_run(cmd, out, sizeof out);
    if (rc != 0) {
        char err[8192];
        snprintf(cmd, sizeof cmd, "tail -c 4000 '%s/stderr'", dir);
        capture_run(cmd, err, sizeof err);
        fprintf(stderr, "deadline-eval: exit %d\nstdout:\n%s\nstderr:\n%s\n", rc, out, err);
    }
    assert_int_equal(rc, 0);
    json_error_t e;
    json_t *doc = json_loads(out, 0, &e);
    assert_non_null(doc);
    json_t *runs = json_object_get(doc, "runs");
    assert_int_equal(json_array_size(runs), 4); /* two workloads, without a deadline and at 1.3x */
    double best[2] = {1e9, 1e9}, predicted[2] = {0, 0};
    size_t i;
    json_t *r;
    json_array_foreach(runs, i, r)
    {
        const char *w = json_string_value(json_object_get(r, "workload"));
        double real = json_number_value(json_object_get(r, "makespan_s"));
        double sim = json_number_value(json_object_get(r, "sim_makespan_s"));
        json_t *met = json_object_get(r, "met"), *sim_met = json_object_get(r, "sim_met");
        double dl = json_number_value(json_object_get(r, "deadline_s"));
        fprintf(stderr, "%s: real %.2f s, simulated %.2f s, deadline %.2f s\n", w, real, sim, dl);
        assert_string_equal(json_string_value(json_object_get(r, "state")), "succeeded");
        assert_true(real > 0 && sim > 0);
        if (json_is_null(json_object_get(r, "factor"))) {
            assert_true(json_is_null(met) && json_is_null(sim_met)); /* no deadline */
        } else {
            assert_true(json_is_boolean(met) && json_is_boolean(sim_met));
            assert_int_equal(json_is_true(met), json_is_true(sim_met));
        }
        size_t k = strcmp(w, "chainfan-20x4") == 0 ? 0 : 1;
        assert_true(k == 0 || strncmp(w, "1000genome", 10) == 0);
        if (real < best[k])
            best[k] = real;
        if (predicted[k] > 0) /* deterministic: the same spec predicts the same makespan */
            assert_float_equal(predicted[k], sim, 1e-9);
        predicted[k] = sim;
    }
    for (size_t k = 0; k < 2; k++) {
        fprintf(stderr, "workload %zu: faster real run %.2f s, simulated %.2f s (%+.1f%%)\n", k,
                best[k], predicted[k], 100 * (predicted[k] - best[k]) / best[k]);
        assert_true(predicted[k] >= 0.9 * best[k] && predicted[k] <= 1.1 * best[k]);
    }
    json_decref(doc);
    snprintf(cmd, sizeof cmd,
             "for f in '%s'/run/cluster/*.pid; do [ -e \"$f\" ] || continue; "
             "kill -0 \"$(cat \"$f\")\" 2>/dev/null && echo alive \"$f\"; done; true",
             dir);
    capture_run(cmd, out, sizeof out);
    assert_null(strstr(out, "alive"));
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* met or missed by the predicted makespan, and the same spec predicts the same bytes */
static void test_predict_deadline(void **state)
{
    (void)state;
    const char *bin = getenv("PADDOCK_BIN_DIR");
    assert_non_null(bin);
    char d[] = "/tmp/paddock-predict-XXXXXX";
    assert_non_null(mkdtemp(d));
    static char out[1 << 16], again[1 << 16];
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s/paddock' import chainfan -o '%s/c.json' >/dev/null 2>&1", bin,
             d);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "'%s/paddock-sim' predict '%s/c.json' --json --trace '%s/t.json'",
             bin, d, d);
    assert_int_equal(capture_run(cmd, out, sizeof out), 0);
    char tpath[512];
    snprintf(tpath, sizeof tpath, "%s/t.json", d);
    json_t *tr = json_load_file(tpath, 0, NULL);
    assert_non_null(tr);
    json_t *atts = json_object_get(tr, "attempts"), *a;
    assert_int_equal(json_array_size(atts), 101); /* every task once */
    size_t ai;
    double last_end = 0;
    json_array_foreach(atts, ai, a)
    {
        double pl = json_number_value(json_object_get(a, "placed_s"));
        double q = json_number_value(json_object_get(a, "queued_s"));
        double st = json_number_value(json_object_get(a, "start_s"));
        double en = json_number_value(json_object_get(a, "end_s"));
        assert_string_equal(json_string_value(json_object_get(a, "state")), "succeeded");
        assert_true(pl >= 0 && q > pl && st >= q && en > st); /* a message on the way, a run */
        assert_true(en - st >= 0.1 + 0.005 - 1e-6); /* the shortest task (the join), the overhead */
        if (en > last_end)
            last_end = en;
    }
    json_decref(tr);
    assert_int_equal(capture_run(cmd, again, sizeof again), 0);
    assert_string_equal(out, again);
    json_t *p = json_loads(out, 0, NULL);
    assert_non_null(p);
    double ms = json_number_value(json_object_get(p, "makespan_s"));
    assert_true(json_is_true(json_object_get(p, "succeeded")));
    assert_true(ms > 14.3); /* above the greedy list schedule, which has no overheads */
    /* The simulated JM corrects queued tasks as the daemon does (a stuck task moved or
     * duplicated, a waiting opportunistic task re-placed by a freed token): such attempts are
     * counted, cancelled before they ran, so they leave the trace of runs above at one per task.
     * On the real cluster chainfan-20x4 carried 18-33 such attempts in six runs (moves 3-10,
     * re-placed upgrades 4-11, PN class trades 3-11, docs/deadline-eval.md); the bound keeps a
     * storm out, not the daemon's own count. */
    json_int_t natt = json_integer_value(json_object_get(p, "attempts"));
    assert_true(natt >= 101 && natt <= 101 + 101 / 2);
    /* The simulated PN swaps classes inside a job as pn/node_run.c does (queue_swap): a queued
     * regular task whose job's own opportunistic work holds the cores goes back to the JM instead
     * of waiting there; the real runs returned 3-11 tasks of chainfan-20x4 so. */
    assert_true(json_integer_value(json_object_get(p, "swaps")) > 0);
    assert_float_equal(last_end, ms, 1e-3); /* the job ends with its last attempt */
    json_decref(p);
    const double dl[2] = {ms * 0.9, ms * 1.1};
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "'%s/paddock-sim' predict '%s/c.json' --deadline %.3f --json",
                 bin, d, dl[k]);
        assert_int_equal(capture_run(cmd, out, sizeof out), 0);
        p = json_loads(out, 0, NULL);
        assert_non_null(p);
        assert_int_equal(json_is_true(json_object_get(p, "met")), k == 1);
        json_decref(p);
    }
    /* soykb's stages hold tasks that fit the grant but not the free units: a reservation that
       never lapsed (no dispatch_round per round, as the daemon calls it) stopped the simulated
       job after 36 of 156 tasks. Greedy on 8 cpus: 93.1 s at this scale. */
    const char *src = getenv("PADDOCK_SOURCE_DIR");
    assert_non_null(src);
    snprintf(cmd, sizeof cmd,
             "'%s/paddock' import wfcommons "
             "'%s/tests/data/wfcommons/soykb-chameleon-10fastq-20ch-001.json' -o '%s/s.json' "
             "--time-scale 0.01 --min-runtime 0.01 --max-cpu 1 --max-mem-mb 1024 >/dev/null 2>&1",
             bin, src, d);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "'%s/paddock-sim' predict '%s/s.json' --json", bin, d);
    assert_int_equal(capture_run(cmd, out, sizeof out), 0);
    p = json_loads(out, 0, NULL);
    assert_non_null(p);
    assert_true(json_is_true(json_object_get(p, "succeeded")));
    /* every task ran; the corrections' moves, duplicates, re-placed upgrades and the PN's class
     * swaps add attempts that never ran (314: more than the daemon's, docs/deadline-eval.md,
     * "Figures after the simulator re-places upgrades and swaps classes"), bounded here */
    natt = json_integer_value(json_object_get(p, "attempts"));
    assert_true(natt >= 156 && natt < 156 * 5 / 2);
    ms = json_number_value(json_object_get(p, "makespan_s"));
    assert_true(ms > 93.0 && ms < 1.2 * 93.1);
    json_decref(p);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    if (system("python3 -c 'import sys; sys.exit(sys.version_info < (3, 7))' >/dev/null 2>&1") !=
        0) {
        fprintf(stderr, "python3 (3.7 or later) is not installed: skipped\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_predict_deadline),
        cmocka_unit_test(test_chainfans_predicted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
