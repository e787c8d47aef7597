/* test_e2e_lone_job.c - a job alone on a real local cluster (3 RM replicas, 2 PNs of 2 cpus)
 * never kills its own work (issue 22, "no self-preemption"): 40 one-second tasks of 0.5 cpu,
 * more than its tokens cover, so its JM runs some opportunistically and its later regular tasks
 * meet them at the nodes. The PNs swap classes instead of preempting (pn/queue.h), so:
 *   - state.json counts as many process starts as tasks and no preemption, and so do
 *     report.json and `paddock job show --json`;
 *   - every task's side effect (a line appended to a file) happened exactly once.
 * The stage says "speculate": false, so no speculative copy or duplicate adds a start of its
 * own. Skipped while paddock-jm is not built. */
#include "tests/e2e/e2e.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define NTASKS 40

static int group_setup(void **state)
{
    (void)state;
    return e2e_group_up("--rm 3 --pn 2 --pn-cpus 2 --pn-mem-mb 2048");
}

static void test_lone_job_starts_equal_tasks(void **state)
{
    (void)state;
    e2e_skip_without_jm();
    char spec_path[1200], marks[1200];
    snprintf(spec_path, sizeof spec_path, "%s/lone.json", e2e_dir());
    snprintf(marks, sizeof marks, "%s/marks", e2e_dir());
    FILE *f = fopen(spec_path, "w");
    assert_non_null(f);
    fprintf(f, "{\"version\": 1, \"name\": \"lone\", \"stages\": [{\"name\": \"s\", "
               "\"speculate\": false}],\n \"tasks\": [\n");
    for (int k = 0; k < NTASKS; k++)
        fprintf(f,
                "  {\"id\": \"t%d\", \"stage\": \"s\", \"cmd\": [\"sh\", \"-c\", \"sleep 1; echo "
                "t%d >> %s\"], \"cpu\": 0.5, \"mem_mb\": 16, \"runtime_s\": 1}%s\n",
                k, k, marks, k + 1 < NTASKS ? "," : "");
    fprintf(f, " ]}\n");
    assert_int_equal(fclose(f), 0);

    struct e2e_run r;
    char id[64];
    e2e_submit(spec_path, id);

    json_t *st = e2e_job_wait(id, 180);
    if (st == NULL || strcmp(json_string_value(json_object_get(st, "state")), "succeeded") != 0)
        e2e_job_dump(id);
    assert_non_null(st);
    assert_string_equal(json_string_value(json_object_get(st, "state")), "succeeded");
    fprintf(stderr, "lone job: %lld starts for %lld tasks, %lld preempted, makespan %.1f s\n",
            e2e_json_int(st, "attempts_started"), e2e_json_int(st, "tasks_total"),
            e2e_json_int(st, "attempts_preempted"),
            json_number_value(json_object_get(st, "makespan_s")));
    assert_int_equal(e2e_json_int(st, "tasks_total"), NTASKS);
    assert_int_equal(e2e_json_int(st, "attempts_preempted"), 0);
    assert_int_equal(e2e_json_int(st, "attempts_started"), NTASKS);
    json_decref(st);

    json_t *rep = e2e_job_file(id, "report.json");
    assert_non_null(rep);
    assert_int_equal(e2e_json_int(rep, "attempts_started"), NTASKS);
    assert_int_equal(e2e_json_int(rep, "attempts_preempted"), 0);
    json_decref(rep);

    e2e_paddock(&r, 30, "job show %s --json", id);
    assert_int_equal(r.status, 0);
    json_t *show = json_loads(r.out, 0, NULL);
    assert_non_null(show);
    assert_int_equal(e2e_json_int(show, "attempts_started"), NTASKS);
    assert_int_equal(e2e_json_int(show, "attempts_preempted"), 0);
    json_decref(show);
    e2e_run_close(&r);
    e2e_paddock(&r, 30, "job show %s", id);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "40 started for 40 tasks, 0 preempted"));
    e2e_run_close(&r);

    /* each task's side effect happened once */
    int seen[NTASKS] = {0};
    f = fopen(marks, "r");
    assert_non_null(f);
    char line[64];
    while (fgets(line, sizeof line, f) != NULL) {
        int k = -1;
        if (sscanf(line, "t%d", &k) == 1 && k >= 0 && k < NTASKS)
            seen[k]++;
    }
    fclose(f);
    for (int k = 0; k < NTASKS; k++)
        assert_int_equal(seen[k], 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lone_job_starts_equal_tasks),
    };
    return cmocka_run_group_tests(tests, group_setup, e2e_group_teardown);
}
