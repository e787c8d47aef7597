/* test_e2e_pause_query.c - a JM paused for over a second (SIGSTOP, a loaded host) asks the nodes
 * what they hold of its job before acting again; it asks only the nodes it sent work to, not
 * every node of its view. It asked every up node: a JM of a 20,000-node view (bench_rm's
 * ingest into a local cluster) opened over 4,000 sockets and died on czmq's socket limit, and the
 * RM's restarts of it did the same. A local cluster of one replica and three PNs, a job of one
 * long task (one PN linked); the JM stopped for 1.6 s (under its lease): its log says it asked 1
 * of the view's nodes (it asked 3). The job then succeeds. Skipped while paddock-jm is not
 * built. */
#include "tests/e2e/e2e.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static int group_setup(void **state)
{
    (void)state;
    return e2e_group_up("--rm 1 --pn 3 --pn-cpus 2 --pn-mem-mb 2048");
}

/* The last "resume: asked N of M nodes" of the job's log: N into *asked, M into *of; 0 if none. */
static int asked_of(const char *id, long *asked, long *of)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/jobs/%s/jm.log", e2e_dir(), id);
    char *log = e2e_read_file(path, NULL);
    int found = 0;
    for (const char *p = log; p != NULL && (p = strstr(p, "resume: asked ")) != NULL; p++)
        found = sscanf(p, "resume: asked %ld of %ld nodes", asked, of) == 2;
    free(log);
    return found;
}

static void test_paused_jm_asks_its_nodes(void **state)
{
    (void)state;
    e2e_skip_without_jm();
    char spec_path[1200];
    snprintf(spec_path, sizeof spec_path, "%s/pause.json", e2e_dir());
    e2e_write_file(spec_path, "{\"version\": 1, \"name\": \"pause\", \"tasks\": [{\"id\": \"t\", "
                              "\"cmd\": [\"sleep\", \"6\"], \"cpu\": 1, \"mem_mb\": 16, "
                              "\"runtime_s\": 6, \"speculate\": false}]}\n");
    char id[64];
    e2e_submit(spec_path, id);
    long long pid = -1;
    char pidfile[1200];
    snprintf(pidfile, sizeof pidfile, "%s/jobs/%s/jm.pid", e2e_dir(), id);
    for (int i = 0; i < 100 && pid <= 0; i++) {
        e2e_sleep_ms(100);
        char *text = e2e_read_file(pidfile, NULL);
        pid = text != NULL ? atoll(text) : -1;
        free(text);
    }
    assert_true(pid > 0);
    long asked = -1, of = -1;
    assert_false(asked_of(id, &asked, &of)); /* a fresh JM asks nobody */
    e2e_sleep_ms(1500);                      /* the task under way (the JM ends 6 s in) */
    assert_int_equal(kill((pid_t)pid, SIGSTOP), 0);
    for (int64_t end = e2e_wall_ms() + 1600; e2e_wall_ms() < end;) /* a signal cuts a sleep */
        e2e_sleep_ms(end - e2e_wall_ms());
    int cont = kill((pid_t)pid, SIGCONT);
    if (cont != 0)
        e2e_job_dump(id);
    assert_int_equal(cont, 0);
    for (int i = 0; i < 50 && !asked_of(id, &asked, &of); i++)
        e2e_sleep_ms(100);
    fprintf(stderr, "paused JM %lld: asked %ld of %ld nodes\n", pid, asked, of);
    if (asked != 1)
        e2e_job_dump(id);
    assert_int_equal(of, 3);
    assert_int_equal(asked, 1);
    json_t *st = e2e_job_wait(id, 60);
    assert_non_null(st);
    assert_string_equal(json_string_value(json_object_get(st, "state")), "succeeded");
    json_decref(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paused_jm_asks_its_nodes),
    };
    return cmocka_run_group_tests(tests, group_setup, e2e_group_teardown);
}
