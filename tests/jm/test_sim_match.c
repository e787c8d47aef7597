/* test_sim_match.c - `paddock-sim match`: the output keys of docs/architecture.md, "The command
 * line", determinism for a seed, and the orderings that must hold whatever the seed (every
 * completion time at least the lower bound; the bottleneck optimum never behind greedy or the sum
 * optimum at one batch). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>
#include <jansson.h>

static json_t *run(const char *args)
{
    const char *bin = getenv("PADDOCK_BIN_DIR");
    if (bin == NULL)
        fail_msg("PADDOCK_BIN_DIR not set");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s/paddock-sim match %s --json", bin, args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, p);
    buf[n] = '\0';
    assert_int_equal(pclose(p), 0);
    json_error_t err;
    json_t *j = json_loads(buf, 0, &err);
    if (j == NULL)
        fail_msg("not JSON: %s", buf);
    return j;
}

static double num(const json_t *j, const char *k)
{
    const json_t *v = json_object_get(j, k);
    if (!json_is_number(v))
        fail_msg("missing number \"%s\"", k);
    return json_number_value(v);
}

static void test_output_and_determinism(void **state)
{
    (void)state;
    json_t *a = run("--tasks 50 --servers 20 --seed 7");
    json_t *b = run("--tasks 50 --servers 20 --seed 7");
    json_t *c = run("--tasks 50 --servers 20 --seed 8");
    assert_true(json_equal(a, b));
    assert_false(json_equal(a, c));
    assert_true(num(a, "tasks") == 50);
    assert_true(num(a, "servers") == 20);
    const char *keys[] = {"stable", "greedy", "optimal", "optimal_sum", "stable_converged"};
    for (int i = 0; i < 5; i++)
        assert_true(num(a, keys[i]) >= num(a, "lower_bound") - 1e-9);
    json_decref(a);
    json_decref(b);
    json_decref(c);
}

static void test_single_batch_orderings(void **state)
{
    (void)state;
    /* fewer tasks than servers: one batch, so the bottleneck optimum is the best completion
       time any full matching reaches */
    for (int seed = 1; seed <= 5; seed++) {
        char args[128];
        snprintf(args, sizeof args, "--tasks 30 --servers 40 --seed %d", seed);
        json_t *j = run(args);
        assert_true(num(j, "optimal") <= num(j, "greedy") + 1e-9);
        assert_true(num(j, "optimal") <= num(j, "optimal_sum") + 1e-9);
        assert_true(num(j, "optimal") <= num(j, "stable_converged") + 1e-9);
        /* bounded iterations only ever leave tasks for a later batch */
        assert_true(num(j, "iterations") == 3);
        json_decref(j);
    }
}

static void test_bad_arguments(void **state)
{
    (void)state;
    const char *bin = getenv("PADDOCK_BIN_DIR");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s/paddock-sim match --tasks 0 --servers 10 2>/dev/null", bin);
    int rc = system(cmd);
    assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
    snprintf(cmd, sizeof cmd, "%s/paddock-sim match --tasks x 2>/dev/null", bin);
    rc = system(cmd);
    assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_output_and_determinism),
        cmocka_unit_test(test_single_batch_orderings),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
