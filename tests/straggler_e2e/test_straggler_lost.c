/* test_straggler_lost.c - lost outputs on a real local cluster (1 RM, 3 PNs, real paddock-jm;
 * issue 15): a producer writes a node-local output ("outputs": [{"local": true}]) that a child
 * still waiting (on a gate task) needs; the producer's PN is killed (SIGKILL, by pid) after the
 * producer succeeded; once the RM calls the node down, the JM runs the producer again on another
 * node (not counted as a failure), and the child, which checks that an output exists on a live
 * node, succeeds. Skipped while paddock-jm is not built. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <cmocka.h>

#include "tests/e2e/e2e.h"
#include "tests/straggler_e2e/se2e.h"

static int group_setup(void **state)
{
    (void)state;
    return e2e_group_up("--rm 1 --pn 3 --pn-cpus 2 --pn-mem-mb 2048");
}

static int group_teardown(void **state)
{
    (void)state;
    char path[1300];
    snprintf(path, sizeof path, "%s/lost/go", e2e_dir());
    FILE *f = fopen(path, "w"); /* a gate task left on the killed node ends too */
    if (f)
        fclose(f);
    e2e_cluster_down();
    return 0;
}

/* Reads a small file (first line, newline cut) into buf; 0 or -1. */
static int read_line(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fgets(buf, (int)cap, f) != NULL;
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return ok ? 0 : -1;
}

static long pid_of(const char *node)
{
    char path[1300], buf[64];
    snprintf(path, sizeof path, "%s/%s.pid", e2e_dir(), node);
    if (read_line(path, buf, sizeof buf) != 0)
        return -1;
    return strtol(buf, NULL, 10);
}

static void test_lost_output_reruns_producer(void **state)
{
    (void)state;
    e2e_skip_without_jm();
    char dir[1200], spec[1300], doc[8192], path[1400];
    snprintf(dir, sizeof dir, "%s/lost", e2e_dir());
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(path, sizeof path, "%s/out", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    int n = snprintf(
        doc, sizeof doc,
        "{\"version\": 1, \"name\": \"lost-output\", \"tasks\": ["
        "{\"id\": \"produce\", \"runtime_s\": 0.5, \"outputs\": [{\"path\": \"part-0\", "
        "\"local\": true}], \"cmd\": [\"sh\", \"-c\", \"echo x > %s/out/$PADDOCK_NODE && echo "
        "$PADDOCK_NODE >> %s/produce.log\"]},"
        "{\"id\": \"gate\", \"runtime_s\": 5, \"speculate\": false, \"cmd\": [\"sh\", \"-c\", "
        "\"i=0; while [ ! -e "
        "%s/go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\"]},"
        "{\"id\": \"consume\", \"runtime_s\": 0.5, \"after\": [\"produce\", \"gate\"], \"cmd\": "
        "[\"sh\", \"-c\", \"k=$(cat %s/killed); for f in %s/out/*; do [ $(basename $f) != $k ] "
        "&& exit 0; done; exit 1\"]}]}\n",
        dir, dir, dir, dir, dir);
    assert_true(n > 0 && (size_t)n < sizeof doc);
    snprintf(spec, sizeof spec, "%s/job.json", dir);
    e2e_write_file(spec, doc);
    char job[64];
    e2e_submit(spec, job);

    /* the producer succeeded (the JM knows: tasks_succeeded), on node `victim` */
    char victim[64] = "";
    int64_t t0 = e2e_wall_ms();
    snprintf(path, sizeof path, "%s/produce.log", dir);
    while (e2e_wall_ms() - t0 < 30000) {
        if (read_line(path, victim, sizeof victim) == 0 &&
            e2e_state_int(job, "tasks_succeeded") >= 1)
            break;
        e2e_sleep_ms(100);
    }
    if (e2e_state_int(job, "tasks_succeeded") < 1)
        e2e_job_dump(job);
    assert_true(e2e_state_int(job, "tasks_succeeded") >= 1);
    assert_memory_equal(victim, "pn-", 3);
    snprintf(path, sizeof path, "%s/killed", dir);
    char line[80];
    snprintf(line, sizeof line, "%s\n", victim);
    e2e_write_file(path, line);
    long pid = pid_of(victim);
    assert_true(pid > 1);
    assert_int_equal(kill((pid_t)pid, SIGKILL), 0);
    int64_t killed = e2e_wall_ms();
    fprintf(stderr, "produced on %s; killed its PN (pid %ld)\n", victim, pid);

    /* the RM calls the node down (liveness.down_after, 10 s), the JM re-runs the producer */
    while (e2e_wall_ms() - killed < 45000 && se2e_correction(job, "reruns") < 1)
        e2e_sleep_ms(200);
    long long reruns = se2e_correction(job, "reruns");
    fprintf(stderr, "re-run noticed %.1f s after the kill\n",
            (double)(e2e_wall_ms() - killed) / 1000.0);
    if (reruns < 1)
        e2e_job_dump(job);
    assert_int_equal(reruns, 1);
    /* the gate opens only once the producer has run again: its output is on a live node */
    snprintf(path, sizeof path, "%s/produce.log", dir);
    t0 = e2e_wall_ms();
    int lines = 0;
    while (e2e_wall_ms() - t0 < 30000) {
        FILE *f = fopen(path, "r");
        lines = 0;
        char b[128];
        while (f && fgets(b, sizeof b, f))
            lines++;
        if (f)
            fclose(f);
        if (lines >= 2)
            break;
        e2e_sleep_ms(100);
    }
    assert_int_equal(lines, 2);
    snprintf(path, sizeof path, "%s/go", dir);
    e2e_write_file(path, "1\n");

    json_t *st = e2e_job_wait(job, 60);
    if (st == NULL || strcmp(json_string_value(json_object_get(st, "state")), "succeeded") != 0)
        e2e_job_dump(job);
    assert_non_null(st);
    assert_string_equal(json_string_value(json_object_get(st, "state")), "succeeded");
    assert_int_equal(json_integer_value(json_object_get(st, "attempts_failed")), 0);
    json_decref(st);
    json_t *rep = e2e_job_file(job, "report.json");
    assert_non_null(rep);
    char nodes[8][64];
    int ok = se2e_attempts(rep, "produce", "succeeded", nodes);
    int consumed = se2e_attempts(rep, "consume", "succeeded", NULL);
    json_decref(rep);
    assert_int_equal(ok, 2);
    assert_string_equal(nodes[0], victim);
    assert_string_not_equal(nodes[1], victim);
    assert_int_equal(consumed, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lost_output_reruns_producer),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
