/* test_rm_small_nodes.c - `paddock cluster up` with PNs smaller than a 1-core token (2 PNs of
 * 0.25 cpu): the default virtual cluster gets one token per PN, each the PN's size (before, the
 * sum 0.5 cpu rounded down to 0 tokens and no job was ever granted one), a task larger than
 * the largest node is refused at submit, and a job of 0.25-cpu tasks runs to the end. Skipped when
 * paddock-pn or paddock-jm is not built. Kills only pids from the cluster's own pid files
 * (rm_harness_fini). */
#include "common/clock.h"
#include "tests/rm/rm_harness.h"

#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static int group_setup(void **state)
{
    (void)state;
    return rm_harness_init("rmsmall");
}

static int group_teardown(void **state)
{
    (void)state;
    rm_harness_fini();
    return 0;
}

static bool have_bin(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", rm_harness_bin(), name);
    return access(path, X_OK) == 0;
}

/* The job's state.json "state" once it is final, polled for up to MS milliseconds; "" when it
 * never got there. */
static const char *final_state(const char *job_id, int ms, char *out, size_t cap)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/jobs/%s/state.json", rm_harness_dir(), job_id);
    out[0] = '\0';
    for (uint64_t end = clock_mono_ms() + (uint64_t)ms; clock_mono_ms() < end;) {
        json_t *st = json_load_file(path, 0, NULL);
        const char *s = json_string_value(json_object_get(st, "state"));
        if (s != NULL && (strcmp(s, "succeeded") == 0 || strcmp(s, "failed") == 0 ||
                          strcmp(s, "cancelled") == 0)) {
            snprintf(out, cap, "%s", s);
            json_decref(st);
            return out;
        }
        json_decref(st);
        usleep(50 * 1000);
    }
    return out;
}

static void test_small_nodes(void **state)
{
    (void)state;
    if (!have_bin("paddock-pn") || !have_bin("paddock-jm"))
        skip();
    assert_int_equal(rm_harness_cluster("up --rm 1 --pn 2 --pn-cpus 0.25 --pn-mem-mb 512"), 0);

    json_t *t = rm_harness_json("tokens --cluster %s --json", rm_harness_dir());
    assert_non_null(t);
    json_t *vc = json_array_get(json_object_get(t, "virtual_clusters"), 0);
    assert_non_null(vc);
    assert_string_equal(json_string_value(json_object_get(vc, "name")), "default");
    assert_int_equal(json_integer_value(json_object_get(vc, "capacity")), 2);
    assert_true(json_number_value(json_object_get(vc, "token_cpu")) == 0.25);
    /* the largest node's size comes with the tokens, so a submit need not fetch every node */
    json_t *big = json_object_get(t, "largest_node");
    assert_true(json_number_value(json_object_get(big, "cpus")) == 0.25);
    assert_int_equal(json_integer_value(json_object_get(big, "mem_mb")), 512);
    json_decref(t);

    /* a task larger than any node is refused at submit, by cores and by memory */
    char spec[1100];
    snprintf(spec, sizeof spec, "%s/big.json", rm_harness_dir());
    static const char *const too_big[2] = {"\"cpu\": 0.5, \"mem_mb\": 64",
                                           "\"cpu\": 0.25, \"mem_mb\": 513"};
    for (int i = 0; i < 2; i++) {
        FILE *bf = fopen(spec, "w");
        assert_non_null(bf);
        fprintf(bf,
                "{\"version\": 1, \"name\": \"big\", \"tasks\": [{\"id\": \"a\", "
                "\"cmd\": [\"true\"], %s}]}\n",
                too_big[i]);
        assert_int_equal(fclose(bf), 0);
        assert_int_not_equal(rm_harness_run("submit %s --cluster %s", spec, rm_harness_dir()), 0);
    }

    snprintf(spec, sizeof spec, "%s/small.json", rm_harness_dir());
    FILE *f = fopen(spec, "w");
    assert_non_null(f);
    fputs("{\"version\": 1, \"name\": \"small\", \"tasks\": ["
          "{\"id\": \"a\", \"cmd\": [\"true\"], \"cpu\": 0.25, \"mem_mb\": 64},"
          "{\"id\": \"b\", \"cmd\": [\"true\"], \"cpu\": 0.25, \"mem_mb\": 64},"
          "{\"id\": \"c\", \"cmd\": [\"true\"], \"cpu\": 0.25, \"mem_mb\": 64, \"after\": [\"a\"]}"
          "]}\n",
          f);
    assert_int_equal(fclose(f), 0);
    json_t *sub = rm_harness_json("submit %s --cluster %s --json", spec, rm_harness_dir());
    assert_non_null(sub);
    const char *id = json_string_value(json_object_get(sub, "job_id"));
    assert_non_null(id);
    char st[32];
    assert_string_equal(final_state(id, 30000, st, sizeof st), "succeeded");
    json_decref(sub);
    assert_int_equal(rm_harness_cluster("down"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_nodes),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
