/* test_jmd_usage.c - what a run leaves for the next ones, on a real local cluster:
 *  - its usage skyline (jm/usage.h): report.json's "token_s" and "skyline" (what the renewal that
 *    ends the job carries to the RM) match the token units x run times of its attempts;
 *  - --deadline-at: the job works to an absolute deadline, counted from its registration;
 *  - profiles per run (jm/profile.h, "History"): a successful run adds one to
 *    <cluster>/profiles/<name>/, a failed run adds nothing and leaves the files as they were.
 * Checked through the job directory and the profile directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <cmocka.h>

#include "jmd_fixture.h"

static struct jmf g_f;

static int setup(void **state)
{
    (void)state;
    return jmf_up(&g_f, "--rm 1 --pn 2 --pn-cpus 3 --tokens 6");
}

static int teardown(void **state)
{
    (void)state;
    jmf_down(&g_f);
    return 0;
}

static int64_t wall_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* "jmd-usage": four 1-core tasks of 0.6 s, then (after them) one 2-core task of 0.8 s; with
 * `fail`, one more task that always fails. */
static json_t *spec(int fail)
{
    json_t *tasks = json_array();
    char id[32];
    for (int i = 0; i < 4; i++) {
        snprintf(id, sizeof id, "small-%d", i);
        json_array_append_new(tasks, json_pack("{s:s, s:s, s:[s, s], s:f, s:f}", "id", id, "stage",
                                               "small", "cmd", "sleep", "0.6", "runtime_s", 0.6,
                                               "cpu", 1.0));
    }
    json_array_append_new(tasks, json_pack("{s:s, s:s, s:[s, s], s:f, s:f, s:[s]}", "id", "big",
                                           "stage", "big", "cmd", "sleep", "0.8", "runtime_s", 0.8,
                                           "cpu", 2.0, "after", "small-0"));
    if (fail)
        json_array_append_new(tasks, json_pack("{s:s, s:[s]}", "id", "broken", "cmd", "false"));
    return json_pack("{s:i, s:s, s:o}", "version", 1, "name", "jmd-usage", "tasks", tasks);
}

/* The run files in the job's profile history, sorted, joined into buf; returns how many. */
static int runs(char *buf, size_t cap)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/profiles/jmd-usage", g_f.cluster);
    buf[0] = '\0';
    struct dirent **list = NULL;
    int n = scandir(dir, &list, NULL, alphasort);
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (list[i]->d_name[0] != '.') {
            strncat(buf, list[i]->d_name, cap - strlen(buf) - 2);
            strncat(buf, " ", cap - strlen(buf) - 1);
            k++;
        }
        free(list[i]);
    }
    free(list);
    return k;
}

static void test_usage_deadline_and_profiles(void **state)
{
    (void)state;
    /* Run 1: an absolute deadline 45 s ahead. */
    char opts[128];
    int64_t at = wall_ms() + 45000;
    snprintf(opts, sizeof opts, "--deadline-at %lld", (long long)at);
    assert_int_equal(jmf_start_jm(&g_f, spec(0), opts), 0);
    int rc = jmf_wait_jm(&g_f, 60);
    if (rc != 0)
        jmf_dump(&g_f);
    assert_int_equal(rc, 0);
    json_t *st = jmf_job_file(&g_f, "state.json");
    json_t *rep = jmf_job_file(&g_f, "report.json");
    assert_non_null(st);
    assert_non_null(rep);
    double d = json_number_value(json_object_get(st, "deadline_s"));
    int64_t started = json_integer_value(json_object_get(st, "started_ms"));
    assert_true(fabs(started / 1000.0 + d - at / 1000.0) < 0.01);
    assert_true(d > 40 && d <= 45);

    /* token_s against the attempts' own run times (units: 1 per core at the default token) */
    double want = 0;
    json_t *att = json_object_get(rep, "attempts");
    for (size_t i = 0; i < json_array_size(att); i++) {
        json_t *a = json_array_get(att, i);
        const char *task = json_string_value(json_object_get(a, "task"));
        double run = json_number_value(json_object_get(a, "end_s")) -
                     json_number_value(json_object_get(a, "start_s"));
        want += (strcmp(task, "big") == 0 ? 2 : 1) * run;
    }
    double got = json_number_value(json_object_get(rep, "token_s"));
    json_t *sky = json_object_get(rep, "skyline");
    double step = json_number_value(json_object_get(sky, "step_s"));
    json_t *toks = json_object_get(sky, "tokens");
    double area = 0, peak = 0;
    for (size_t i = 0; i < json_array_size(toks); i++) {
        double v = json_number_value(json_array_get(toks, i));
        area += v * step;
        peak = v > peak ? v : peak;
    }
    fprintf(stderr, "token_s %.3f (attempts say %.3f), skyline %zu steps of %.1f s, area %.3f\n",
            got, want, json_array_size(toks), step, area);
    assert_true(want > 4 * 0.6 + 2 * 0.8 - 0.05);
    assert_true(fabs(got - want) <= 0.02 * want + 0.01);
    assert_true(step == 1.0);
    assert_true(json_array_size(toks) >= 2 && json_array_size(toks) <= 6);
    assert_true(fabs(area - got) <= 0.001 * json_array_size(toks) + 1e-9);
    assert_true(peak > 0 && peak <= 6.0);
    json_decref(st);
    json_decref(rep);

    char first[1024], now[1024];
    assert_int_equal(runs(first, sizeof first), 1);

    /* Run 2 fails: no profile from it. */
    assert_int_equal(jmf_new_job(&g_f, "job2"), 0);
    assert_int_equal(jmf_start_jm(&g_f, spec(1), "--max-attempts 1"), 0);
    rc = jmf_wait_jm(&g_f, 60);
    assert_int_equal(rc, 1);
    st = jmf_job_file(&g_f, "state.json");
    assert_string_equal(json_string_value(json_object_get(st, "state")), "failed");
    json_decref(st);
    rep = jmf_job_file(&g_f, "report.json"); /* a failed run still reports its usage */
    assert_true(json_is_number(json_object_get(rep, "token_s")));
    json_decref(rep);
    assert_int_equal(runs(now, sizeof now), 1);
    assert_string_equal(now, first);

    /* Run 3 succeeds: a second run kept beside the first. */
    assert_int_equal(jmf_new_job(&g_f, "job3"), 0);
    assert_int_equal(jmf_start_jm(&g_f, spec(0), ""), 0);
    rc = jmf_wait_jm(&g_f, 60);
    if (rc != 0)
        jmf_dump(&g_f);
    assert_int_equal(rc, 0);
    assert_int_equal(runs(now, sizeof now), 2);
    assert_non_null(strstr(now, first));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_usage_deadline_and_profiles, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
