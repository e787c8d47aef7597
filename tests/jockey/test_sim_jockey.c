/* `paddock-sim jockey` end to end on the hand-written three-stage spec, on the cluster simulator
 * and on the token slice: the output contract of docs/architecture.md, "The command line",
 * determinism for a seed, and the policies' relative behaviour. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* paddock-sim jockey FLAG <source dir>/TARGET ARGS: stdout, exit status in *status. */
static char *run_cmd(const char *flag, const char *target, const char *args, int *status)
{
    const char *bin = getenv("PADDOCK_BIN_DIR"), *src = getenv("PADDOCK_SOURCE_DIR");
    assert_non_null(bin);
    assert_non_null(src);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s/paddock-sim jockey %s %s/%s %s", bin, flag, src, target, args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - 1 - n, p)) > 0 && n < cap - 1)
        n += got;
    buf[n] = '\0';
    *status = pclose(p);
    return buf;
}

static char *run(const char *args, int *status)
{
    return run_cmd("--workload", "tests/jockey/etl.json", args, status);
}

/* On either engine: the cluster simulator (the default) or the token slice (--engine slice). */
static void contract_and_behaviour(const char *args, const char *engine)
{
    int status;
    char *out = run(args, &status);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    json_error_t err;
    json_t *root = json_loads(out, 0, &err);
    assert_non_null(root);
    assert_true(json_number_value(json_object_get(root, "deadline_s")) == 1800);
    assert_string_equal(json_string_value(json_object_get(root, "engine")), engine);
    json_t *pol = json_object_get(root, "policies");
    const char *names[4] = {"jockey", "noadapt", "amdahl", "max"};
    double above[4], missed[4];
    for (int i = 0; i < 4; i++) {
        json_t *p = json_object_get(pol, names[i]);
        assert_non_null(p);
        missed[i] = json_number_value(json_object_get(p, "missed_fraction"));
        above[i] = json_number_value(json_object_get(p, "mean_alloc_above_oracle"));
        double lat = json_number_value(json_object_get(p, "median_latency_vs_deadline"));
        assert_true(missed[i] >= 0 && missed[i] <= 1);
        assert_true(lat > 0 && lat < 2);
    }
    /* Max allocation meets every deadline of this feasible job by over-provisioning it; Jockey
     * asks for far fewer tokens than max, and adapting beats the a-priori allocation. */
    assert_true(missed[3] == 0);
    assert_true(above[0] < above[3] / 4);
    assert_true(above[0] < above[1]);
    assert_true(missed[0] <= 0.05);
    json_decref(root);

    /* Same seed, same output. */
    char *again = run(args, &status);
    char *table_a = strstr(out, "\"policies\""), *table_b = strstr(again, "\"policies\"");
    assert_non_null(table_a);
    assert_non_null(table_b);
    assert_string_equal(table_a, table_b);
    free(again);
    free(out);
}

static void test_contract_and_behaviour(void **state)
{
    (void)state;
    contract_and_behaviour("--runs 20 --seed 3 --json", "cluster");
}

static void test_contract_and_behaviour_slice(void **state)
{
    (void)state;
    contract_and_behaviour("--runs 20 --seed 3 --json --engine slice", "slice");
}

static void test_every_workload_in_a_directory(void **state)
{
    (void)state;
    int status;
    /* tests/jockey holds one spec (etl.json): one workload, and the totals over its runs. */
    char *out = run_cmd("--workloads", "tests/jockey", "--runs 6 --seed 2 --json", &status);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    json_error_t err;
    json_t *root = json_loads(out, 0, &err);
    assert_non_null(root);
    json_t *list = json_object_get(root, "workloads");
    assert_int_equal(json_array_size(list), 1);
    json_t *one = json_object_get(json_object_get(json_array_get(list, 0), "policies"), "jockey");
    json_t *all = json_object_get(json_object_get(root, "policies"), "jockey");
    assert_true(json_number_value(json_object_get(one, "mean_alloc_above_oracle")) ==
                json_number_value(json_object_get(all, "mean_alloc_above_oracle")));
    json_decref(root);
    free(out);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    int status;
    char *out = run("--runs 0", &status);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 2);
    free(out);
    out = run("--workload /nonexistent/spec.json", &status);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    free(out);
    out = run("--engine tokens", &status);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 2);
    free(out);
    out = run("--hold-runnable", &status); /* the slice engine's alone */
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 2);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contract_and_behaviour),
        cmocka_unit_test(test_contract_and_behaviour_slice),
        cmocka_unit_test(test_every_workload_in_a_directory),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
