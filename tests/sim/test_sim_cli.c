/* test_sim_cli.c - `paddock-sim cluster` as a user runs it: the same seed prints the same bytes
 * (docs/architecture.md, "The command line": "the same seed prints the same output"; wall-clock
 * figures left out with --no-timing), another seed another run, the JSON carries the documented
 * figures, --svg writes a plot, and bad usage exits 2. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/common/capture.h"
#include <jansson.h>

static char out_buf[1 << 16];

/* Runs `paddock-sim ARGS`; stdout into out_buf; returns the exit code. */
static int sim(const char *args)
{
    const char *bin = getenv("PADDOCK_BIN_DIR");
    assert_non_null(bin);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s/paddock-sim' %s 2>/dev/null", bin, args);
    return capture_run(cmd, out_buf, sizeof out_buf);
}

#define ARGS "cluster --nodes 80 --jobs 6 --node-mtbf 1500 --fail 0.05 --compare --no-timing"

static void test_same_seed_same_bytes(void **state)
{
    (void)state;
    assert_int_equal(sim(ARGS " --seed 9 --json"), 0);
    char *first = strdup(out_buf);
    assert_int_equal(sim(ARGS " --seed 9 --json"), 0);
    assert_string_equal(first, out_buf);
    assert_int_equal(sim(ARGS " --seed 10 --json"), 0);
    assert_string_not_equal(first, out_buf);
    /* the text form too */
    assert_int_equal(sim(ARGS " --seed 9"), 0);
    char *text = strdup(out_buf);
    assert_int_equal(sim(ARGS " --seed 9"), 0);
    assert_string_equal(text, out_buf);
    assert_non_null(strstr(text, "with estimation:"));
    assert_non_null(strstr(text, "without estimation:"));
    free(first);
    free(text);
}

static void test_json_figures(void **state)
{
    (void)state;
    assert_int_equal(sim("cluster --nodes 60 --jobs 4 --seed 2 --json"), 0);
    json_error_t je;
    json_t *doc = json_loads(out_buf, 0, &je);
    assert_non_null(doc);
    assert_int_equal(json_integer_value(json_object_get(doc, "nodes")), 60);
    json_t *runs = json_object_get(doc, "runs");
    assert_int_equal(json_array_size(runs), 1);
    json_t *r = json_array_get(runs, 0);
    assert_true(json_is_true(json_object_get(r, "estimation")));
    assert_int_equal(json_integer_value(json_object_get(r, "jobs_done")), 4);
    assert_int_equal(json_integer_value(json_object_get(r, "tasks")),
                     json_integer_value(json_object_get(doc, "tasks")));
    const char *keys[] = {"decisions_per_wall_s",   "place_per_wall_s", "peak_rss_kb",
                          "queue_stdev_machines_s", "utilization",      "queue_s"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        assert_non_null(json_object_get(r, keys[i]));
    assert_true(json_integer_value(json_object_get(r, "peak_rss_kb")) > 0);
    json_t *q = json_object_get(r, "queue_s");
    assert_true(json_number_value(json_object_get(q, "p50")) <=
                json_number_value(json_object_get(q, "p99")));
    json_decref(doc);

    assert_int_equal(sim("cluster --nodes 60 --jobs 4 --seed 2 --json --no-estimation"), 0);
    doc = json_loads(out_buf, 0, &je);
    assert_non_null(doc);
    r = json_array_get(json_object_get(doc, "runs"), 0);
    assert_true(json_is_false(json_object_get(r, "estimation")));
    json_decref(doc);
}

static void test_svg_and_usage(void **state)
{
    (void)state;
    char path[] = "/tmp/paddock-sim-cdf-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char args[256];
    snprintf(args, sizeof args, "cluster --nodes 50 --jobs 3 --compare --svg %s", path);
    assert_int_equal(sim(args), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char head[64] = "";
    assert_true(fread(head, 1, sizeof head - 1, f) > 10);
    fclose(f);
    unlink(path);
    assert_true(strncmp(head, "<svg", 4) == 0);

    assert_int_equal(sim("cluster --jobs 3"), 2);                        /* no --nodes */
    assert_int_equal(sim("cluster --nodes 0 --jobs 3"), 2);              /* out of range */
    assert_int_equal(sim("cluster --nodes 10 --jobs 3 --svg x.svg"), 2); /* --svg needs --compare */
    assert_int_equal(sim("cluster --nodes 10 --jobs 3 --bogus 1"), 2);
    assert_int_equal(sim("cluster --nodes 10 --jobs 2 --workloads /nonexistent-dir"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_seed_same_bytes),
        cmocka_unit_test(test_json_figures),
        cmocka_unit_test(test_svg_and_usage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
