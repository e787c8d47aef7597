/* test_e2e_status_batch.c - a job's statuses arrive in batches on a real local cluster (1 RM
 * replica, 1 PN of 2 cpus): its JM's TASK_CREATEs set batch_statuses, the PN sends the statuses
 * of a loop pass as one TASK_STATUS_BATCH (docs/pn.md "Status batches"), and the JM takes each
 * as if it came alone: the job of 300 short tasks succeeds with every task done once, its
 * state.json counts the batches it took (pn_status_batches > 0) and nothing dropped.
 * Skipped while paddock-jm is not built. */
#include "tests/e2e/e2e.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define NTASKS 300

static int group_setup(void **state)
{
    (void)state;
    return e2e_group_up("--rm 1 --pn 1 --pn-cpus 2 --pn-mem-mb 2048");
}

static void test_statuses_in_batches(void **state)
{
    (void)state;
    e2e_skip_without_jm();
    char spec_path[1200];
    snprintf(spec_path, sizeof spec_path, "%s/batch.json", e2e_dir());
    FILE *f = fopen(spec_path, "w");
    assert_non_null(f);
    fprintf(f, "{\"version\": 1, \"name\": \"batch\", \"stages\": [{\"name\": \"s\", "
               "\"speculate\": false}],\n \"tasks\": [\n");
    for (int k = 0; k < NTASKS; k++)
        fprintf(f,
                "  {\"id\": \"t%d\", \"stage\": \"s\", \"cmd\": [\"true\"], \"cpu\": 0.05, "
                "\"mem_mb\": 1, \"runtime_s\": 0.01}%s\n",
                k, k + 1 < NTASKS ? "," : "");
    fprintf(f, " ]}\n");
    assert_int_equal(fclose(f), 0);

    char id[64];
    e2e_submit(spec_path, id);

    json_t *st = e2e_job_wait(id, 120);
    if (st == NULL || strcmp(json_string_value(json_object_get(st, "state")), "succeeded") != 0)
        e2e_job_dump(id);
    assert_non_null(st);
    assert_string_equal(json_string_value(json_object_get(st, "state")), "succeeded");
    fprintf(stderr, "status batches: %lld taken for %lld tasks (%lld started), %lld dropped\n",
            e2e_json_int(st, "pn_status_batches"), e2e_json_int(st, "tasks_total"),
            e2e_json_int(st, "attempts_started"), e2e_json_int(st, "pn_dropped"));
    assert_int_equal(e2e_json_int(st, "tasks_total"), NTASKS);
    assert_int_equal(e2e_json_int(st, "attempts_started"), NTASKS);
    assert_true(e2e_json_int(st, "pn_status_batches") > 0);
    assert_int_equal(e2e_json_int(st, "pn_dropped"), 0);
    json_decref(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_statuses_in_batches),
    };
    return cmocka_run_group_tests(tests, group_setup, e2e_group_teardown);
}
