/* test_deadline_eval.c - tools/deadline-eval end to end on one small workload: it starts its own
 * local cluster (3 RMs, 4 PNs of 2 cpus, 8 tokens), runs a scaled-down chain-and-fan-out job
 * at 1.3x its greedy makespan, stops the cluster, and prints the JSON: one run, every
 * key of the issue, the job succeeded, as many starts as tasks at least, an ETA error. Skipped
 * (77) without python3. */
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

static char dir[] = "/tmp/paddock-deval-XXXXXX";

static void test_one_chainfan(void **state)
{
    (void)state;
    const char *bin = getenv("PADDOCK_BIN_DIR"), *src = getenv("PADDOCK_SOURCE_DIR");
    assert_non_null(bin);
    assert_non_null(src);
    assert_non_null(mkdtemp(dir));
    static char out[1 << 20];
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "'%s/paddock' import chainfan -o '%s/small.json' --chain 6 --side 2 --chain-s 0.3 "
             "--side-s 0.6 --name small-chainfan 2>&1",
             bin, dir);
    assert_int_equal(capture_run(cmd, out, sizeof out), 0);
    snprintf(cmd, sizeof cmd,
             "python3 '%s/tools/deadline-eval' '%s/small.json' --paddock '%s/paddock' --dir "
             "'%s/run' --json 2>'%s/stderr'",
             src, dir, bin, dir, dir);
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
    if (doc == NULL)
        fprintf(stderr, "not JSON (%s): %s\n", e.text, out);
    assert_non_null(doc);
    json_t *runs = json_object_get(doc, "runs");
    assert_true(json_is_array(runs));
    /* the default phases: without a deadline (it calibrates admission), then at 1.3x greedy */
    assert_int_equal(json_array_size(runs), 2);
    json_t *r0 = json_array_get(runs, 0);
    assert_true(json_is_null(json_object_get(r0, "factor")));
    assert_true(json_is_null(json_object_get(r0, "admitted")));
    assert_string_equal(json_string_value(json_object_get(r0, "state")), "succeeded");
    json_t *r = json_array_get(runs, 1);
    assert_float_equal(json_number_value(json_object_get(r, "factor")), 1.3, 1e-9);
    static const char *const keys[] = {"workload", "greedy_s",    "quote_p50_s", "quote_bound_s",
                                       "admitted", "makespan_s",  "met",         "starts",
                                       "tasks",    "eta_error_50"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (json_object_get(r, keys[i]) == NULL)
            fprintf(stderr, "missing key %s\n", keys[i]);
        assert_non_null(json_object_get(r, keys[i]));
    }
    assert_string_equal(json_string_value(json_object_get(r, "workload")), "small");
    assert_string_equal(json_string_value(json_object_get(r, "state")), "succeeded");
    /* 6 x 0.3 s of chain, 12 x 0.6 s of fan-out and a 0.1 s join on 8 cpus */
    double g = json_number_value(json_object_get(r, "greedy_s"));
    assert_true(g > 2.0 && g < 3.0);
    assert_true(json_is_boolean(json_object_get(r, "admitted")));
    assert_true(json_is_boolean(json_object_get(r, "met")));
    assert_true(json_number_value(json_object_get(r, "quote_bound_s")) >=
                json_number_value(json_object_get(r, "quote_p50_s")));
    assert_true(json_number_value(json_object_get(r, "makespan_s")) >= g);
    assert_int_equal(json_integer_value(json_object_get(r, "tasks")), 19);
    assert_true(json_integer_value(json_object_get(r, "starts")) >= 19);
    assert_true(json_is_number(json_object_get(r, "eta_error_50")));
    json_decref(doc);
    /* the harness stopped what it started: no daemon's pid file points at a live process */
    snprintf(cmd, sizeof cmd,
             "for f in '%s'/run/cluster/*.pid; do [ -e \"$f\" ] || continue; "
             "kill -0 \"$(cat \"$f\")\" 2>/dev/null && echo alive \"$f\"; done; true",
             dir);
    capture_run(cmd, out, sizeof out);
    assert_null(strstr(out, "alive"));
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
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
        cmocka_unit_test(test_one_chainfan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
