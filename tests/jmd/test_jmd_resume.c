/* test_jmd_resume.c - a job survives its job manager, on a real local cluster (issue 14):
 *  - the JM killed with SIGKILL mid-job and started again with --resume: the job succeeds, every
 *    task ran exactly once (each appends its id to a marker file), the report covers the
 *    attempts of both incarnations and state.json counts the resume;
 *  - a JM paused (SIGSTOP) while another resumes its job: once continued it stops with exit 3
 *    and leaves the newer JM's state.json as it was.
 * Opportunistic dispatch is off (--opp-factor 0): a preempted opportunistic attempt may have
 * appended its mark before it was killed, which is a rerun by design, not the JM's doing. The
 * cluster's own relaunch of dead JMs (docs/rm.md) may win the race to resume: then the test's
 * JM is fenced (exit 3) and the job finishes under the RM's JM, which the checks accept. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "jmd_fixture.h"

#define NTASKS 60

static struct jmf g_f;
static pid_t g_stale; /* a JM the test paused (killed in teardown if still there) */

static int setup(void **state)
{
    (void)state;
    return jmf_up(&g_f, "--rm 3 --pn 3 --pn-cpus 2");
}

static int teardown(void **state)
{
    (void)state;
    if (g_stale > 0 && g_stale != g_f.jm) {
        kill(g_stale, SIGKILL);
        waitpid(g_stale, NULL, 0);
    }
    g_stale = 0;
    jmf_down(&g_f);
    return 0;
}

static json_t *marked_job(const char *name, int n, double sleep_s)
{
    json_t *tasks = json_array();
    for (int i = 0; i < n; i++) {
        char id[32], sh[1024];
        snprintf(id, sizeof id, "t%d", i);
        snprintf(sh, sizeof sh, "sleep %.2f; echo %s >> %s/marks", sleep_s, id, g_f.work);
        json_array_append_new(tasks,
                              json_pack("{s:s, s:[s, s, s], s:f, s:f}", "id", id, "cmd", "sh", "-c",
                                        sh, "runtime_s", sleep_s + 0.05, "cpu", 0.5));
    }
    return json_pack("{s:i, s:s, s:o}", "version", 1, "name", name, "tasks", tasks);
}

/* Lines of the journal that record a success. */
static int journal_successes(void)
{
    char path[512], line[4096];
    snprintf(path, sizeof path, "%s/journal", g_f.job);
    FILE *fp = fopen(path, "r");
    int n = 0;
    while (fp && fgets(line, sizeof line, fp))
        n += strstr(line, "\"state\":\"succeeded\"") != NULL;
    if (fp)
        fclose(fp);
    return n;
}

static const char *state_of(json_t *st)
{
    return st ? json_string_value(json_object_get(st, "state")) : NULL;
}

/* Waits for state.json to say `want`; true when it did within timeout_s. */
static bool await_state(const char *want, int timeout_s)
{
    for (int i = 0; i < timeout_s * 10; i++) {
        json_t *st = jmf_job_file(&g_f, "state.json");
        bool ok = state_of(st) && strcmp(state_of(st), want) == 0;
        json_decref(st);
        if (ok)
            return true;
        jmf_pause(100);
    }
    return false;
}

/* Every task's id exactly once in WORK/marks. */
static void assert_marks_once(int n)
{
    int *count = calloc((size_t)n, sizeof *count);
    assert_non_null(count);
    char path[512], line[256];
    snprintf(path, sizeof path, "%s/marks", g_f.work);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    while (fgets(line, sizeof line, fp)) {
        int id = -1;
        if (sscanf(line, "t%d", &id) == 1 && id >= 0 && id < n)
            count[id]++;
    }
    fclose(fp);
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (count[i] != 1) {
            fprintf(stderr, "t%d ran %d times\n", i, count[i]);
            bad++;
        }
    free(count);
    assert_int_equal(bad, 0);
}

static void test_killed_and_resumed(void **state)
{
    (void)state;
    assert_int_equal(jmf_start_jm(&g_f, marked_job("jmd-resume", NTASKS, 0.4), "--opp-factor 0"),
                     0);
    /* Kill it once a third of the job is journaled. */
    int done = 0;
    for (int i = 0; i < 600 && (done = journal_successes()) < NTASKS / 3; i++)
        jmf_pause(50);
    assert_true(done >= NTASKS / 3);
    assert_true(done < NTASKS);
    kill(g_f.jm, SIGKILL);
    assert_int_equal(jmf_wait_jm(&g_f, 10), 128 + SIGKILL);

    char opts[64];
    snprintf(opts, sizeof opts, "--opp-factor 0 --resume");
    json_t *spec = jmf_job_file(&g_f, "spec.json");
    assert_non_null(spec);
    assert_int_equal(jmf_start_jm(&g_f, spec, opts), 0);
    int rc = jmf_wait_jm(&g_f, 120);
    if (rc != 0 && rc != 3)
        jmf_dump(&g_f);
    assert_true(rc == 0 || rc == 3); /* 3: the cluster's relaunched JM took the job */
    if (!await_state("succeeded", 60))
        jmf_dump(&g_f);
    json_t *st = jmf_job_file(&g_f, "state.json");
    assert_string_equal(state_of(st), "succeeded");
    assert_true(json_integer_value(json_object_get(st, "resumes")) >= 1);
    assert_true(json_integer_value(json_object_get(st, "epoch")) >= 2);
    json_decref(st);
    assert_marks_once(NTASKS);
    /* The report holds the attempts of every incarnation: one success per task at least. */
    json_t *rep = jmf_job_file(&g_f, "report.json");
    assert_non_null(rep);
    json_t *att = json_object_get(rep, "attempts");
    size_t ok = 0, k;
    json_t *a;
    json_array_foreach(att, k, a)
    {
        const char *s = json_string_value(json_object_get(a, "state"));
        ok += s && strcmp(s, "succeeded") == 0;
    }
    assert_true(ok >= NTASKS);
    assert_int_equal(json_integer_value(json_object_get(rep, "tasks_succeeded")), NTASKS);
    json_decref(rep);
    /* The journal starts with its header. */
    char path[512], first[256] = "";
    snprintf(path, sizeof path, "%s/journal", g_f.job);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    assert_non_null(fgets(first, sizeof first, fp));
    fclose(fp);
    assert_non_null(strstr(first, "\"format\":\"paddock-journal\""));
}

static void test_stale_fenced(void **state)
{
    (void)state;
    assert_int_equal(jmf_start_jm(&g_f, marked_job("jmd-stale", 30, 0.3), "--opp-factor 0"), 0);
    pid_t stale = g_stale = g_f.jm;
    for (int i = 0; i < 600 && journal_successes() < 5; i++)
        jmf_pause(50);
    kill(stale, SIGSTOP);
    /* A second JM resumes the job (as a restart would) while the first is paused. */
    json_t *spec = jmf_job_file(&g_f, "spec.json");
    assert_non_null(spec);
    assert_int_equal(jmf_start_jm(&g_f, spec, "--opp-factor 0 --resume"), 0);
    int rc = jmf_wait_jm(&g_f, 120);
    if (rc != 0)
        jmf_dump(&g_f);
    assert_int_equal(rc, 0);
    json_t *st = jmf_job_file(&g_f, "state.json");
    assert_string_equal(state_of(st), "succeeded");
    char *before = json_dumps(st, JSON_SORT_KEYS);
    json_decref(st);
    /* The paused one goes on: it learns it is stale and stops without writing. */
    kill(stale, SIGCONT);
    g_f.jm = stale;
    g_f.jm_rc = -1;
    rc = jmf_wait_jm(&g_f, 30);
    g_stale = 0;
    if (rc != 3)
        jmf_dump(&g_f);
    assert_int_equal(rc, 3);
    st = jmf_job_file(&g_f, "state.json");
    char *after = json_dumps(st, JSON_SORT_KEYS);
    json_decref(st);
    assert_string_equal(before, after);
    free(before);
    free(after);
    assert_marks_once(30);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_killed_and_resumed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_fenced, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
