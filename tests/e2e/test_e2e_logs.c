/* test_e2e_logs.c - a task's output on a real local cluster (1 RM replica, 2 PNs), issue 25:
 *   - `paddock cluster up` returns with every node's record complete: `paddock nodes --json`
 *     right after shows each node heard from and with its metrics URL;
 *   - `paddock logs JOB TASK` while the task runs prints what it wrote so far; `--follow`
 *     returns once the attempt ended, with every line once; after the job ended the output is
 *     still there (the PN keeps the directory for [tasks] retain), --stderr prints the other
 *     stream, and an output larger than one message (256 KiB) arrives whole;
 *   - a task that fails says why in the job's reason: the last lines of its stderr, set by the
 *     PN; each attempt's output is there by --attempt; an attempt that never ran is an error.
 * Without the job's directory every node is asked. Skipped while paddock-jm is not built. */
#include "tests/e2e/e2e.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#define BIG_BYTES 600000 /* more than two TASK_OUTPUT messages */

static int group_setup(void **state)
{
    (void)state;
    return e2e_group_up("--rm 1 --pn 2 --pn-cpus 2 --pn-mem-mb 2048");
}

/* Writes a spec into the cluster directory and submits it; the job id into id. */
static void submit(const char *name, const char *tasks, char id[64])
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.json", e2e_dir(), name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"version\": 1, \"name\": \"%s\", \"tasks\": [\n%s\n]}\n", name, tasks);
    assert_int_equal(fclose(f), 0);
    e2e_submit(path, id);
}

static void test_cluster_up_node_records_complete(void **state)
{
    (void)state;
    e2e_skip_without_jm();
    /* the group's setup has just returned from `cluster up`: no wait here */
    struct e2e_run r;
    e2e_paddock(&r, 10, "nodes --json");
    assert_int_equal(r.status, 0);
    json_t *doc = json_loads(r.out, 0, NULL);
    assert_non_null(doc);
    json_t *nodes = json_object_get(doc, "nodes");
    assert_int_equal(json_array_size(nodes), 2);
    size_t i;
    json_t *n;
    json_array_foreach(nodes, i, n)
    {
        if (!json_is_string(json_object_get(n, "metrics")))
            fprintf(stderr, "node record without its metrics URL: %s\n", r.out);
        assert_true(json_is_string(json_object_get(n, "metrics")));
        assert_true(json_is_integer(json_object_get(n, "age_ms")));
        assert_string_equal(json_string_value(json_object_get(n, "state")), "up");
    }
    json_decref(doc);
    e2e_run_close(&r);
}

static void test_logs_while_running_and_after(void **state)
{
    (void)state;
    e2e_skip_without_jm();
    char id[64];
    submit("talk",
           "{\"id\": \"talk\", \"cmd\": [\"sh\", \"-c\", \"for i in 1 2 3 4 5 6 7 8; do echo line "
           "$i; sleep 0.5; done; echo bye >&2\"], \"runtime_s\": 4},\n"
           "{\"id\": \"big\", \"cmd\": [\"sh\", \"-c\", \"head -c "
           "600000 /dev/zero | tr '\\\\000' x\"], \"runtime_s\": 0.2}",
           id);
    /* while it runs: what it wrote so far, some lines and not all */
    struct e2e_run r = {0};
    bool seen = false;
    for (int i = 0; i < 100 && !seen; i++) {
        e2e_run_close(&r);
        e2e_paddock(&r, 10, "logs %s talk", id);
        seen = r.status == 0 && strstr(r.out, "line 1\n") != NULL;
        if (!seen)
            e2e_sleep_ms(100);
    }
    if (!seen)
        fprintf(stderr, "logs while running: exit %d\n%s%s\n", r.status, r.out, r.err);
    assert_true(seen);
    assert_null(strstr(r.out, "line 8")); /* 3.5 s of output to come */
    char *early = strdup(r.out);
    e2e_run_close(&r);
    /* --follow: returns once the attempt ended, every line once */
    e2e_paddock(&r, 30, "logs %s talk --follow", id);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\n");
    assert_memory_equal(r.out, early, strlen(early)); /* what it had written so far */
    free(early);
    e2e_run_close(&r);
    json_t *st = e2e_job_wait(id, 60);
    assert_non_null(st);
    assert_string_equal(json_string_value(json_object_get(st, "state")), "succeeded");
    json_decref(st);
    /* after the job: still there; the other stream; an output of several messages */
    e2e_paddock(&r, 10, "logs %s talk", id);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "line 8\n"));
    e2e_run_close(&r);
    e2e_paddock(&r, 10, "logs %s talk --stderr --attempt 1", id);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "bye\n");
    e2e_run_close(&r);
    e2e_paddock(&r, 20, "logs %s big", id);
    assert_int_equal(r.status, 0);
    assert_int_equal(strlen(r.out), BIG_BYTES);
    assert_int_equal(strspn(r.out, "x"), BIG_BYTES);
    e2e_run_close(&r);
}

static void test_failure_reason_and_attempts(void **state)
{
    (void)state;
    e2e_skip_without_jm();
    char id[64];
    submit("fails",
           "{\"id\": \"b\", \"cmd\": [\"sh\", \"-c\", \"echo starting; echo reading /data/x >&2; "
           "echo 'real error: file not found: /data/x' >&2; exit 3\"], \"runtime_s\": 0.1}",
           id);
    json_t *st = e2e_job_wait(id, 60);
    assert_non_null(st);
    assert_string_equal(json_string_value(json_object_get(st, "state")), "failed");
    json_decref(st);
    /* the job's reason carries what the task said last (the PN puts it in the status) */
    struct e2e_run r;
    e2e_paddock(&r, 10, "job show %s", id);
    assert_int_equal(r.status, 0);
    if (strstr(r.out, "stderr: reading /data/x | real error: file not found: /data/x") == NULL)
        fprintf(stderr, "job show:\n%s\n", r.out);
    assert_non_null(strstr(r.out, "exit code 3; stderr: reading /data/x | real error: file not "
                                  "found: /data/x"));
    char hint[200]; /* and how to read the rest */
    snprintf(hint, sizeof hint, "paddock logs %s b --stderr\n", id);
    assert_non_null(strstr(r.out, hint));
    e2e_run_close(&r);
    /* every attempt's output, the newest by default */
    for (int a = 1; a <= 3; a++) {
        e2e_paddock(&r, 10, "logs %s b --stderr --attempt %d", id, a);
        assert_int_equal(r.status, 0);
        assert_string_equal(r.out, "reading /data/x\nreal error: file not found: /data/x\n");
        e2e_run_close(&r);
    }
    e2e_paddock(&r, 10, "logs %s b", id);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "starting\n");
    e2e_run_close(&r);
    /* without the job's directory (a host that did not submit it): every node is asked */
    e2e_paddock(&r, 20, "logs %s b --stderr --jobs-dir '%s/elsewhere'", id, e2e_dir());
    if (r.status != 0)
        fprintf(stderr, "logs without the job directory: %s%s\n", r.out, r.err);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "reading /data/x\nreal error: file not found: /data/x\n");
    e2e_run_close(&r);
    /* an attempt that never ran, a task that does not exist, a bad call */
    e2e_paddock(&r, 20, "logs %s b --attempt 7", id);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "no node has attempt 7"));
    e2e_run_close(&r);
    /* asked one node: its refusal, the node named once, and how long a PN keeps output */
    e2e_paddock(&r, 20, "logs %s b --attempt 7 --node pn-1", id);
    assert_int_equal(r.status, 1);
    if (strstr(r.err, "paddock logs: pn-1: no attempt 7") == NULL)
        fprintf(stderr, "logs --node pn-1: %s\n", r.err);
    assert_non_null(strstr(r.err, "paddock logs: pn-1: no attempt 7"));
    assert_non_null(strstr(r.err, "[tasks] retain"));
    e2e_run_close(&r);
    e2e_paddock(&r, 20, "logs %s nosuch", id);
    assert_int_equal(r.status, 1);
    e2e_run_close(&r);
    e2e_paddock(&r, 10, "logs %s", id);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "usage: paddock logs"));
    e2e_run_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cluster_up_node_records_complete),
        cmocka_unit_test(test_logs_while_running_and_after),
        cmocka_unit_test(test_failure_reason_and_attempts),
    };
    return cmocka_run_group_tests(tests, group_setup, e2e_group_teardown);
}
