/* test_jmd_small_nodes.c - paddock-jm on a real local cluster of nodes smaller than a token
 * (`paddock cluster up --rm 1 --pn 4 --pn-cpus 0.25`: four tokens of 0.25 cpu, one per PN),
 * each test with its own cluster:
 *  - tasks of 0.1 cpu run to the end: a PN smaller than the smallest bin of its wait-time matrix
 *    (0.5 cpu by default) once said "never" for everything, and the JM held its token with every
 *    task ready and placed none;
 *  - a task no node can hold (0.5 cpu) is named in state.json ("tasks_unplaceable",
 *    "unplaceable") while the job's other task runs, rather than the job waiting silently.
 * The JM is started by the test on its job directory (the CLI would refuse the second spec at
 * submission, as larger than any node) and checked through state.json. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "jmd_fixture.h"

static struct jmf g_f;

static int setup(void **state)
{
    (void)state;
    return jmf_up(&g_f, "--rm 1 --pn 4 --pn-cpus 0.25");
}

static int teardown(void **state)
{
    (void)state;
    jmf_down(&g_f);
    return 0;
}

static json_t *task(const char *id, double cpu)
{
    return json_pack("{s:s, s:[s], s:f, s:i, s:f}", "id", id, "cmd", "true", "cpu", cpu, "mem_mb",
                     16, "runtime_s", 0.05);
}

static void test_small_tasks_run(void **state)
{
    (void)state;
    json_t *tasks = json_array();
    char id[32];
    for (int i = 0; i < 8; i++) {
        snprintf(id, sizeof id, "t%d", i);
        json_array_append_new(tasks, task(id, 0.1));
    }
    json_t *spec =
        json_pack("{s:i, s:s, s:o}", "version", 1, "name", "small-nodes", "tasks", tasks);
    assert_int_equal(jmf_start_jm(&g_f, spec, ""), 0);
    int rc = jmf_wait_jm(&g_f, 60);
    json_t *st = jmf_job_file(&g_f, "state.json");
    const char *s = st ? json_string_value(json_object_get(st, "state")) : NULL;
    if (rc != 0 || s == NULL || strcmp(s, "succeeded") != 0)
        jmf_dump(&g_f);
    assert_int_equal(rc, 0);
    assert_non_null(s);
    assert_string_equal(s, "succeeded");
    assert_int_equal(json_integer_value(json_object_get(st, "tasks_succeeded")), 8);
    assert_int_equal(json_integer_value(json_object_get(st, "tasks_unplaceable")), 0);
    assert_true(json_is_null(json_object_get(st, "unplaceable")));
    json_decref(st);
}

static void test_unplaceable_named(void **state)
{
    (void)state;
    json_t *spec = json_pack("{s:i, s:s, s:[o, o]}", "version", 1, "name", "too-big", "tasks",
                             task("fits", 0.1), task("big", 0.5));
    assert_int_equal(jmf_start_jm(&g_f, spec, ""), 0);
    json_t *st = NULL;
    for (int i = 0; i < 300; i++) { /* 30 s at most */
        json_decref(st);
        st = jmf_job_file(&g_f, "state.json");
        if (st != NULL && json_integer_value(json_object_get(st, "tasks_succeeded")) == 1 &&
            json_integer_value(json_object_get(st, "tasks_unplaceable")) == 1)
            break;
        jmf_pause(100);
    }
    if (st == NULL || json_integer_value(json_object_get(st, "tasks_unplaceable")) != 1)
        jmf_dump(&g_f);
    assert_non_null(st);
    assert_string_equal(json_string_value(json_object_get(st, "state")), "running");
    assert_int_equal(json_integer_value(json_object_get(st, "tasks_succeeded")), 1);
    assert_int_equal(json_integer_value(json_object_get(st, "tasks_unplaceable")), 1);
    const char *why = json_string_value(json_object_get(st, "unplaceable"));
    assert_non_null(why);
    fprintf(stderr, "state.json unplaceable: %s\n", why);
    assert_non_null(strstr(why, "task \"big\" needs 0.5 cpu"));
    assert_non_null(strstr(why, "of 4 live nodes the largest has 0.25 cpu"));
    json_decref(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_small_tasks_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unplaceable_named, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
