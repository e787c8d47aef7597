/* test_straggler_copy.c - straggler detection and speculative copies on a real local cluster
 * (1 RM, 3 PNs of 2 cores, real paddock-jm; issue 15):
 *   - one task of a six-task stage runs 10x longer on the node its first attempt ran on (a
 *     node-local slowdown): the JM starts a copy on another node, the copy wins, the original is
 *     cancelled, and the job ends near the makespan of the same job without the slowdown;
 *   - the same with "speculate": false on the stage: no copy, the job waits for the straggler.
 * Skipped while paddock-jm is not built. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "tests/e2e/e2e.h"
#include "tests/straggler_e2e/se2e.h"

#define NMAP   6
#define SLOW_S 10 /* the straggler's run; the others run 1 s */

static int group_setup(void **state)
{
    (void)state;
    return e2e_group_up("--rm 1 --pn 3 --pn-cpus 2 --pn-mem-mb 2048");
}

/* A job of NMAP map tasks (1 s each) and a reduce after them. With DIR/slow.on, map-0 sleeps
 * SLOW_S s on the node where its first attempt ran, 1 s elsewhere. Returns the spec's path. */
static void make_job(const char *name, int slow, int speculate, char *spec, size_t cap)
{
    char dir[1200], path[1300];
    snprintf(dir, sizeof dir, "%s/%s", e2e_dir(), name);
    assert_int_equal(mkdir(dir, 0755), 0);
    if (slow) {
        snprintf(path, sizeof path, "%s/slow.on", dir);
        e2e_write_file(path, "1\n");
    }
    size_t cap_doc = 16384;
    char *doc = malloc(cap_doc);
    assert_non_null(doc);
    int n = snprintf(doc, cap_doc,
                     "{\"version\": 1, \"name\": \"%s\", \"stages\": [{\"name\": \"map\"%s}], "
                     "\"tasks\": [",
                     name, speculate ? "" : ", \"speculate\": false");
    for (int i = 0; i < NMAP; i++)
        n += snprintf(doc + n, cap_doc - (size_t)n,
                      "{\"id\": \"map-%d\", \"stage\": \"map\", \"runtime_s\": 1, \"cmd\": "
                      "[\"sh\", \"-c\", \"if [ $PADDOCK_TASK_ID = map-0 ] && [ -e %s/slow.on ]; "
                      "then mkdir %s/slow.lock 2>/dev/null && echo $PADDOCK_NODE > "
                      "%s/slow.node; if [ $(cat %s/slow.node) = $PADDOCK_NODE ]; then sleep %d; "
                      "exit 0; fi; fi; sleep 1\"]}, ",
                      i, dir, dir, dir, dir, SLOW_S);
    n += snprintf(doc + n, cap_doc - (size_t)n,
                  "{\"id\": \"reduce\", \"runtime_s\": 0.2, \"cmd\": [\"sleep\", \"0.2\"], "
                  "\"after\": [");
    for (int i = 0; i < NMAP; i++)
        n += snprintf(doc + n, cap_doc - (size_t)n, "%s\"map-%d\"", i ? ", " : "", i);
    n += snprintf(doc + n, cap_doc - (size_t)n, "]}]}\n");
    assert_true((size_t)n < cap_doc);
    snprintf(spec, cap, "%s/job.json", dir);
    e2e_write_file(spec, doc);
    free(doc);
}

/* Runs the job to its end; its state.json (caller decrefs). */
static json_t *run_job(const char *spec, char job[64])
{
    e2e_submit(spec, job);
    json_t *st = e2e_job_wait(job, 90);
    if (st == NULL || strcmp(json_string_value(json_object_get(st, "state")), "succeeded") != 0)
        e2e_job_dump(job);
    assert_non_null(st);
    assert_string_equal(json_string_value(json_object_get(st, "state")), "succeeded");
    return st;
}

static double g_normal_s = -1;

static void test_normal_makespan(void **state)
{
    (void)state;
    e2e_skip_without_jm();
    char spec[1400], job[64];
    make_job("normal", 0, 1, spec, sizeof spec);
    json_t *st = run_job(spec, job);
    g_normal_s = json_real_value(json_object_get(st, "makespan_s"));
    fprintf(stderr, "normal makespan %.2f s\n", g_normal_s);
    assert_true(g_normal_s > 1.0 && g_normal_s < SLOW_S);
    json_decref(st);
}

static void test_straggler_copy_wins(void **state)
{
    (void)state;
    e2e_skip_without_jm();
    assert_true(g_normal_s > 0);
    char spec[1400], job[64];
    make_job("slow", 1, 1, spec, sizeof spec);
    json_t *st = run_job(spec, job);
    double makespan = json_real_value(json_object_get(st, "makespan_s"));
    json_t *c = json_object_get(st, "corrections");
    long long started = json_integer_value(json_object_get(c, "copies_started"));
    long long won = json_integer_value(json_object_get(c, "copies_won"));
    fprintf(stderr, "with a straggler: makespan %.2f s (normal %.2f s), copies %lld, won %lld\n",
            makespan, g_normal_s, started, won);
    json_decref(st);
    json_t *rep = e2e_job_file(job, "report.json");
    assert_non_null(rep);
    char ok[8][64], gone[8][64];
    int nok = se2e_attempts(rep, "map-0", "succeeded", ok);
    int ngone = se2e_attempts(rep, "map-0", "cancelled", gone);
    json_decref(rep);
    if (started < 1 || won < 1 || nok != 1 || ngone != 1)
        e2e_job_dump(job);
    assert_true(started >= 1);
    assert_true(won >= 1);
    /* one success (the copy) and one cancelled attempt (the straggler), on different nodes */
    assert_int_equal(nok, 1);
    assert_int_equal(ngone, 1);
    assert_string_not_equal(ok[0], gone[0]);
    /* near the normal time: far below the straggler's own SLOW_S s */
    assert_true(makespan < g_normal_s + 0.6 * SLOW_S);
    assert_true(makespan < SLOW_S);
}

static void test_speculate_false_never_copied(void **state)
{
    (void)state;
    e2e_skip_without_jm();
    char spec[1400], job[64];
    make_job("nocopy", 1, 0, spec, sizeof spec);
    json_t *st = run_job(spec, job);
    double makespan = json_real_value(json_object_get(st, "makespan_s"));
    json_t *c = json_object_get(st, "corrections");
    long long started = json_integer_value(json_object_get(c, "copies_started"));
    long long dups = json_integer_value(json_object_get(c, "duplicates_started"));
    fprintf(stderr, "speculate false: makespan %.2f s, copies %lld, duplicates %lld\n", makespan,
            started, dups);
    json_decref(st);
    json_t *rep = e2e_job_file(job, "report.json");
    assert_non_null(rep);
    int all = se2e_attempts(rep, "map-0", NULL, NULL);
    json_decref(rep);
    assert_int_equal(started, 0);
    assert_int_equal(dups, 0);
    assert_int_equal(all, 1);
    assert_true(makespan >= SLOW_S); /* it waited for the straggler */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normal_makespan),
        cmocka_unit_test(test_straggler_copy_wins),
        cmocka_unit_test(test_speculate_false_never_copied),
    };
    return cmocka_run_group_tests(tests, group_setup, e2e_group_teardown);
}
