/* test_greedy_cli.c - `paddock greedy` on a DAG whose list schedule is worked out by hand, and
 * `paddock import chainfan` against the greedy makespans docs/deadline-eval.md quotes.
 *
 * The DAG: a (2 s) releases b (3 s), c (1 s) and d (1 s); e (4 s) stands alone; f (1 s) waits for
 * b, c, d and e. Bottom levels: a 6, e 5, b 4, c 2, d 2, f 1. On 2 cpus: a and e at 0; b at 2;
 * c at 4; d at 5 (b and c end at 5); f at 6, ending at 7. On 3 cpus: a, e at 0; b, c at 2; d at
 * 3; f at 5 (b ends), ending at 6, the critical path a-b-f. On 1 cpu: the work, 12 s. */
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

static const char *const dag =
    "{\"version\": 1, \"name\": \"by-hand\", \"tasks\": ["
    "{\"id\": \"a\", \"cmd\": [\"true\"], \"runtime_s\": 2},"
    "{\"id\": \"b\", \"cmd\": [\"true\"], \"runtime_s\": 3, \"after\": [\"a\"]},"
    "{\"id\": \"c\", \"cmd\": [\"true\"], \"runtime_s\": 1, \"after\": [\"a\"]},"
    "{\"id\": \"d\", \"cmd\": [\"true\"], \"runtime_s\": 1, \"after\": [\"a\"]},"
    "{\"id\": \"e\", \"cmd\": [\"true\"], \"runtime_s\": 4},"
    "{\"id\": \"f\", \"cmd\": [\"true\"], \"runtime_s\": 1, \"after\": [\"b\", \"c\", \"d\", "
    "\"e\"]}]}";

static char dir[] = "/tmp/paddock-greedy-XXXXXX";

static int setup(void **state)
{
    (void)state;
    if (mkdtemp(dir) == NULL)
        return -1;
    char path[256];
    snprintf(path, sizeof path, "%s/dag.json", dir);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fputs(dag, f);
    return fclose(f);
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Runs `paddock ARGS` (stderr into the output) and returns its exit code. */
static int paddock(const char *args, char *out, size_t cap)
{
    const char *bin = getenv("PADDOCK_BIN_DIR");
    assert_non_null(bin);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s/paddock' %s 2>&1", dir, bin, args);
    return capture_run(cmd, out, cap);
}

static double greedy(const char *spec, int cpus, double *cp)
{
    static char out[1 << 16];
    char args[512];
    snprintf(args, sizeof args, "greedy %s --cpus %d --json", spec, cpus);
    int rc = paddock(args, out, sizeof out);
    if (rc != 0)
        fprintf(stderr, "paddock %s: exit %d:\n%s\n", args, rc, out);
    assert_int_equal(rc, 0);
    json_t *o = json_loads(out, 0, NULL);
    assert_non_null(o);
    assert_int_equal(json_integer_value(json_object_get(o, "cpus")), cpus);
    double g = json_number_value(json_object_get(o, "greedy_s"));
    if (cp != NULL)
        *cp = json_number_value(json_object_get(o, "critical_path_s"));
    json_decref(o);
    return g;
}

static void test_greedy_by_hand(void **state)
{
    (void)state;
    double cp = 0;
    assert_float_equal(greedy("dag.json", 2, &cp), 7.0, 1e-6);
    assert_float_equal(cp, 6.0, 1e-6);
    assert_float_equal(greedy("dag.json", 3, NULL), 6.0, 1e-6);
    assert_float_equal(greedy("dag.json", 1, NULL), 12.0, 1e-6);
    assert_float_equal(greedy("dag.json", 100, NULL), 6.0, 1e-6);
    char out[4096];
    assert_int_equal(paddock("greedy dag.json --cpus 2", out, sizeof out), 0);
    assert_non_null(strstr(out, "greedy makespan  7.000 s"));
}

static void test_greedy_refusals(void **state)
{
    (void)state;
    char out[4096];
    assert_int_equal(paddock("greedy", out, sizeof out), 2);
    assert_non_null(strstr(out, "usage: paddock greedy"));
    assert_int_equal(paddock("greedy dag.json --cpus 0", out, sizeof out), 2);
    assert_non_null(strstr(out, "--cpus '0'"));
    assert_int_equal(paddock("greedy missing.json", out, sizeof out), 1);
    assert_non_null(strstr(out, "missing.json"));
}

/* The two chain-and-fan-out specs of docs/deadline-eval.md. */
static void test_chainfan(void **state)
{
    (void)state;
    char out[4096];
    assert_int_equal(paddock("import chainfan -o cf1.json", out, sizeof out), 0);
    assert_non_null(strstr(out, "101 tasks"));
    double cp = 0;
    assert_float_equal(greedy("cf1.json", 8, &cp), 14.3, 1e-6);
    assert_float_equal(cp, 11.3, 1e-6);
    assert_int_equal(
        paddock("import chainfan -o cf2.json --chain 24 --side 3 --side-s 1.5", out, sizeof out),
        0);
    assert_non_null(strstr(out, "97 tasks"));
    assert_float_equal(greedy("cf2.json", 8, &cp), 16.6, 1e-6);
    assert_float_equal(cp, 13.6, 1e-6);
    assert_int_equal(paddock("import chainfan -o x.json --chain 2.5", out, sizeof out), 2);
    assert_int_equal(paddock("import chainfan --chain 2", out, sizeof out), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_by_hand),
        cmocka_unit_test(test_greedy_refusals),
        cmocka_unit_test(test_chainfan),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
