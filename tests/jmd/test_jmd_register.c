/* test_jmd_register.c - a job manager that registers itself sends its shape (issue 25; jm/jobreg.h,
 * the builder `paddock submit` uses too), so the RM's admission checks its job as it checks a
 * submitted one. On a real local cluster (one RM, one PN of 2 cpus):
 *   - a JM started by hand on a job whose one 30 s task cannot finish within its 5 s deadline is
 *     refused: it exits 1 without running anything, and its state.json says "failed" with the
 *     admission's reason and the earliest feasible finish;
 *   - the same job with a deadline it can meet is admitted and runs to success (the refusal
 *     was the deadline's, not the registration's).
 * Before the builder, such a JM sent no shape and was admitted unchecked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tests/jmd/jmd_fixture.h"

static struct jmf g_f;

static int setup(void **state)
{
    (void)state;
    return jmf_up(&g_f, "--rm 1 --pn 1 --pn-cpus 2");
}

static int teardown(void **state)
{
    (void)state;
    jmf_down(&g_f);
    return 0;
}

/* One task of `runtime_s` (it sleeps 1 s: only admission reads the estimate) and a deadline. */
static json_t *job(const char *name, double runtime_s, double deadline_s)
{
    return json_pack("{s:i, s:s, s:f, s:[{s:s, s:[s, s], s:f, s:f, s:i}]}", "version", 1, "name",
                     name, "deadline_s", deadline_s, "tasks", "id", "t", "cmd", "sleep", "1",
                     "runtime_s", runtime_s, "cpu", 1.0, "mem_mb", 16);
}

static void test_self_registered_job_refused(void **state)
{
    (void)state;
    assert_int_equal(jmf_new_job(&g_f, "late"), 0);
    assert_int_equal(jmf_start_jm(&g_f, job("late", 30, 5), ""), 0);
    int rc = jmf_wait_jm(&g_f, 60);
    json_t *st = jmf_job_file(&g_f, "state.json");
    const char *state_s = json_string_value(json_object_get(st, "state"));
    const char *reason = json_string_value(json_object_get(st, "reason"));
    fprintf(stderr, "late: exit %d, state %s, reason: %s\n", rc, state_s ? state_s : "?",
            reason ? reason : "?");
    if (rc != 1)
        jmf_dump(&g_f);
    assert_int_equal(rc, 1);
    assert_non_null(state_s);
    assert_string_equal(state_s, "failed");
    assert_non_null(reason);
    assert_non_null(strstr(reason, "admission refused"));
    assert_non_null(strstr(reason, "earliest feasible finish"));
    json_decref(st);

    assert_int_equal(jmf_new_job(&g_f, "fits"), 0);
    assert_int_equal(jmf_start_jm(&g_f, job("fits", 2, 60), ""), 0);
    rc = jmf_wait_jm(&g_f, 60);
    if (rc != 0)
        jmf_dump(&g_f);
    assert_int_equal(rc, 0);
    st = jmf_job_file(&g_f, "state.json");
    assert_string_equal(json_string_value(json_object_get(st, "state")), "succeeded");
    json_decref(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_self_registered_job_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
