/* test_sim_predicts.c - the simulator predicts the cluster (issue 23): tools/deadline-eval on the
 * two chain-and-fan-out DAGs (`--chainfans --no-deadline --repeats 2`) against the local cluster
 * it starts; beside every real run, `paddock-sim predict`'s makespan for the same spec, nodes and
 * tokens, within 10% of the faster of the two real runs of each DAG. The simulator models an idle
 * machine; on a machine shared with builds one real run of chainfan-24x3 took 20.4 s where
 * others took 18.1-19.5 s, so the faster run is the one to compare. The deadline phase is not
 * checked here: with a deadline the real JM's controller chooses its tokens, which the prediction
 * does not model, and one run of chainfan-24x3 at 1.3x took 22.5 s where others took 18.8 s
 * (docs/deadline-eval.md). And `paddock-sim predict --deadline` says met or missed by its makespan.
 * Skipped (77) without python3. */
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
             "python3 '%s/tools/deadline-eval' --chainfans --no-deadline --repeats 2 --paddock "
             "'%s/paddock' --sim "
             "'%s/paddock-sim' --dir '%s/run' --json 2>'%s/stderr'",
             src, bin, bin, dir, dir);
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
    assert_int_equal(json_array_size(runs), 4); /* two DAGs, two repeats */
    double best[2] = {1e9, 1e9}, predicted[2] = {0, 0};
    size_t i;
    json_t *r;
    json_array_foreach(runs, i, r)
    {
        const char *w = json_string_value(json_object_get(r, "workload"));
        double real = json_number_value(json_object_get(r, "makespan_s"));
        double sim = json_number_value(json_object_get(r, "sim_makespan_s"));
        json_t *met = json_object_get(r, "met"), *sim_met = json_object_get(r, "sim_met");
        fprintf(stderr, "%s: real %.2f s, simulated %.2f s\n", w, real, sim);
        assert_string_equal(json_string_value(json_object_get(r, "state")), "succeeded");
        assert_true(real > 0 && sim > 0);
        assert_true(json_is_null(met) && json_is_null(sim_met)); /* no deadline */
        size_t k = strcmp(w, "chainfan-20x4") == 0 ? 0 : 1;
        if (real < best[k])
            best[k] = real;
        if (predicted[k] > 0) /* deterministic: the same spec predicts the same makespan */
            assert_float_equal(predicted[k], sim, 1e-9);
        predicted[k] = sim;
    }
    for (size_t k = 0; k < 2; k++) {
        fprintf(stderr, "DAG %zu: faster real run %.2f s, simulated %.2f s (%+.1f%%)\n", k, best[k],
                predicted[k], 100 * (predicted[k] - best[k]) / best[k]);
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
    snprintf(cmd, sizeof cmd, "'%s/paddock-sim' predict '%s/c.json' --json", bin, d);
    assert_int_equal(capture_run(cmd, out, sizeof out), 0);
    assert_int_equal(capture_run(cmd, again, sizeof again), 0);
    assert_string_equal(out, again);
    json_t *p = json_loads(out, 0, NULL);
    assert_non_null(p);
    double ms = json_number_value(json_object_get(p, "makespan_s"));
    assert_true(json_is_true(json_object_get(p, "succeeded")));
    assert_true(ms > 14.3); /* above the greedy list schedule, which has no overheads */
    assert_int_equal(json_integer_value(json_object_get(p, "attempts")), 101);
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
