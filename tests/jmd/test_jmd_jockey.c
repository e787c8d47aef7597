/* test_jmd_jockey.c - Jockey inside paddock-jm on a real local cluster (issue 6, item 2):
 *  - a first run of a job writes its profile; the next run of the same name loads it, builds
 *    the C(p, a) table, and meets its deadline;
 *  - `paddock job deadline` halving the deadline mid-run raises the job's token target and the
 *    job still finishes within the new deadline; doubling it afterwards lowers the target;
 *  - with a profile, the job meets its deadline while a competing job floods the cluster, and its
 *    token target rises (on a cluster whose tokens are over-subscribed against its slots);
 *  - a run three times slower than its profile falls behind, its target rises, and it still
 *    meets its deadline.
 * Checked through report.json's token samples (target over time) and state.json. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "jmd_fixture.h"

static struct jmf g_f;
static struct jmf g_flood; /* a second JM on the same cluster (shares g_f's directories) */

static int setup(void **state)
{
    (void)state;
    return jmf_up(&g_f, "--rm 3 --pn 3 --pn-cpus 2 --tokens 6");
}

static int teardown(void **state)
{
    (void)state;
    if (g_flood.jm > 0 && g_flood.jm_rc < 0) {
        kill(g_flood.jm, SIGKILL);
        waitpid(g_flood.jm, NULL, 0);
    }
    memset(&g_flood, 0, sizeof g_flood);
    jmf_down(&g_f);
    return 0;
}

static int64_t wall_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* n tasks of one stage, each sleeping `sleep_s` seconds on one core though estimated at
 * est_s, with deadline d (0: none). */
static json_t *job_spec_est(const char *name, int n, double sleep_s, double est_s, double d)
{
    json_t *tasks = json_array();
    char id[32], sl[32];
    snprintf(sl, sizeof sl, "%.3f", sleep_s);
    for (int i = 0; i < n; i++) {
        snprintf(id, sizeof id, "t-%d", i);
        json_array_append_new(tasks,
                              json_pack("{s:s, s:s, s:[s, s], s:f, s:f}", "id", id, "stage", "work",
                                        "cmd", "sleep", sl, "runtime_s", est_s, "cpu", 1.0));
    }
    json_t *spec = json_pack("{s:i, s:s, s:o}", "version", 1, "name", name, "tasks", tasks);
    if (d > 0)
        json_object_set_new(spec, "deadline_s", json_real(d));
    return spec;
}

static json_t *job_spec(const char *name, int n, double s, double d)
{
    return job_spec_est(name, n, s, s, d);
}

static const char *state_of(json_t *st)
{
    const char *s = st ? json_string_value(json_object_get(st, "state")) : NULL;
    return s ? s : "";
}

/* Highest token target in report.json samples with from_s <= t_s < to_s. */
static int max_target(json_t *rep, double from_s, double to_s)
{
    int m = 0;
    json_t *toks = json_object_get(rep, "tokens");
    for (size_t i = 0; i < json_array_size(toks); i++) {
        json_t *s = json_array_get(toks, i);
        double t = json_number_value(json_object_get(s, "t_s"));
        int v = (int)json_integer_value(json_object_get(s, "target"));
        if (t >= from_s && t < to_s && v > m)
            m = v;
    }
    return m;
}

/* The last token target in samples before t_s. */
static int target_before(json_t *rep, double t_s)
{
    int v = 0;
    json_t *toks = json_object_get(rep, "tokens");
    for (size_t i = 0; i < json_array_size(toks); i++) {
        json_t *s = json_array_get(toks, i);
        if (json_number_value(json_object_get(s, "t_s")) < t_s)
            v = (int)json_integer_value(json_object_get(s, "target"));
    }
    return v;
}

/* Runs `paddock job deadline ID D` on the fixture's cluster. */
static int set_deadline(const char *job_id, const char *dur)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s/paddock job deadline %s %s --cluster %s >/dev/null 2>&1", g_f.bin,
             job_id, dur, g_f.cluster);
    return system(cmd);
}

/* Polls state.json until `done` tasks succeeded (or the job ended). Returns the document. */
static json_t *wait_done(size_t done, int timeout_s)
{
    for (int i = 0; i < timeout_s * 20; i++) {
        json_t *st = jmf_job_file(&g_f, "state.json");
        if (st) {
            if ((size_t)json_integer_value(json_object_get(st, "tasks_succeeded")) >= done ||
                (strcmp(state_of(st), "running") != 0 && strcmp(state_of(st), "starting") != 0))
                return st;
            json_decref(st);
        }
        jmf_pause(50);
    }
    return NULL;
}

static void test_profile_then_deadline_changes(void **state)
{
    (void)state;
    /* Run 1: writes the profile of "jmd-jockey". */
    assert_int_equal(jmf_start_jm(&g_f, job_spec("jmd-jockey", 12, 0.3, 20.0), ""), 0);
    int rc = jmf_wait_jm(&g_f, 60);
    if (rc != 0)
        jmf_dump(&g_f);
    assert_int_equal(rc, 0);
    char prof[512];
    snprintf(prof, sizeof prof, "%s/profiles/jmd-jockey", g_f.cluster); /* one file per run */
    DIR *pd = opendir(prof);
    assert_non_null(pd);
    struct dirent *e;
    int nprof = 0;
    while ((e = readdir(pd)) != NULL)
        if (strstr(e->d_name, ".json") != NULL && strstr(e->d_name, ".tmp") == NULL) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", prof, e->d_name);
            json_t *p = json_load_file(path, 0, NULL);
            assert_non_null(p);
            json_decref(p);
            nprof++;
        }
    closedir(pd);
    assert_int_equal(nprof, 1);

    /* Run 2: 80 tasks of 0.5 s (40 task-seconds) against 30 s: a few tokens will do. Long enough
       that, after the deadline is doubled halfway through, several control periods (1 s at 30 s)
       remain for the controller to lower its request: with 40 tasks the job once ended 0.9 s
       after the doubling, before a period had passed. */
    assert_int_equal(jmf_new_job(&g_f, "job2"), 0);
    assert_int_equal(jmf_start_jm(&g_f, job_spec("jmd-jockey", 80, 0.5, 30.0), ""), 0);
    json_t *st = wait_done(6, 60);
    assert_non_null(st);
    assert_string_equal(state_of(st), "running");
    /* The ETA from C(p, a) at the grant held: a median and a bound at least as late, both past
       the time already spent; the token size the grant named (the default: 1 core, 4 GiB). */
    json_t *eta = json_object_get(st, "eta_s"), *eta95 = json_object_get(st, "eta_p95_s");
    assert_true(json_is_number(eta) && json_is_number(eta95));
    assert_true(json_number_value(eta) > 0);
    assert_true(json_number_value(eta95) >= json_number_value(eta));
    assert_true(json_number_value(json_object_get(st, "token_cpu")) == 1.0);
    assert_int_equal(json_integer_value(json_object_get(st, "token_mem_mb")), 4096);
    assert_true(json_is_integer(json_object_get(st, "minimum")));
    assert_int_equal(json_integer_value(json_object_get(st, "downgrades")), 0);
    char job_id[64];
    snprintf(job_id, sizeof job_id, "%s", json_string_value(json_object_get(st, "job_id")));
    int64_t started = json_integer_value(json_object_get(st, "started_ms"));
    json_decref(st);

    /* Halve the deadline. */
    double halved_at = (double)(wall_ms() - started) / 1000.0;
    assert_int_equal(set_deadline(job_id, "15s"), 0);
    st = wait_done(40, 60);
    assert_non_null(st);
    json_decref(st);
    /* Double it (from 15 s to 30 s). */
    double doubled_at = (double)(wall_ms() - started) / 1000.0;
    assert_int_equal(set_deadline(job_id, "30s"), 0);

    rc = jmf_wait_jm(&g_f, 60);
    st = jmf_job_file(&g_f, "state.json");
    json_t *rep = jmf_job_file(&g_f, "report.json");
    if (rc != 0 || !rep)
        jmf_dump(&g_f);
    assert_int_equal(rc, 0);
    assert_non_null(rep);
    assert_string_equal(state_of(st), "succeeded");
    double makespan = json_number_value(json_object_get(st, "makespan_s"));
    int before = target_before(rep, halved_at);
    int after_halving = max_target(rep, halved_at, doubled_at);
    int last = target_before(rep, 1e9);
    fprintf(stderr,
            "makespan %.2f s; target %d before halving (t=%.2f), up to %d after, %d at the end "
            "(doubled at t=%.2f)\n",
            makespan, before, halved_at, after_halving, last, doubled_at);
    assert_true(before >= 1);
    assert_true(after_halving > before); /* a shorter deadline raises the allocation */
    assert_true(makespan <= 15.0);       /* and the job finishes within it */
    assert_true(last < after_halving);   /* a longer one lowers it again */
    json_decref(st);
    json_decref(rep);
}

/* Tokens over-subscribed twice over (12 tokens on 6 slots), as shared clusters run them (Jockey
 * §1): a token no longer means an idle slot, and regular tasks queue at the PNs. */
static int setup_oversubscribed(void **state)
{
    (void)state;
    return jmf_up(&g_f, "--rm 3 --pn 3 --pn-cpus 2 --tokens 12");
}

/* A job with a profile meets its deadline while a competing job floods the cluster as it runs,
 * and its allocation visibly rises: the flood's regular tasks fill every slot and queue ahead of
 * the job's, the job falls behind what its profile predicts at its allocation, and the controller
 * asks for more tokens (granted: the virtual cluster has them), which carry it to its deadline
 * once the flood ends. The flood lasts until the rise: how long the job can absorb a stall
 * depends on the slack of the allocation it started with (2 or 3 tokens here, from a profile
 * measured on a loaded machine), and a flood of fixed length either ends before that or leaves
 * too little time to catch up. */
static void test_flood(void **state)
{
    (void)state;
    const int n = 48;
    const double task_s = 0.5, d = 22.0;
    /* Run 1 writes the profile. */
    assert_int_equal(jmf_start_jm(&g_f, job_spec("jmd-flooded", n, task_s, d), ""), 0);
    int rc = jmf_wait_jm(&g_f, 60);
    if (rc != 0)
        jmf_dump(&g_f);
    assert_int_equal(rc, 0);

    /* Run 2; the flood comes as soon as its first tasks are done, before spare capacity (its
       opportunistic tasks) can put it far ahead of its profile. */
    assert_int_equal(jmf_new_job(&g_f, "job2"), 0);
    assert_int_equal(jmf_start_jm(&g_f, job_spec("jmd-flooded", n, task_s, d), ""), 0);
    json_t *st = wait_done(2, 60);
    assert_non_null(st);
    assert_string_equal(state_of(st), "running");
    int64_t started = json_integer_value(json_object_get(st, "started_ms"));
    json_decref(st);

    /* The flood: eight tasks of 60 s that say they take 1 s, with a 10 s deadline, earlier than
       the job's: a JM registers its shape (jm/jobreg.h), so the RM's arbiter serves the earlier
       deadline first, its minimum and then spare up to its width, eight tokens (a flood without
       a deadline would get nothing: MinEDF-WC hands the job spare up to its width first). Six
       of its tasks take every slot (the free ones at once, the job's as its running tasks
       finish) and two queue behind them, and so do the job's next regular tasks. It lasts until
       the job's allocation rises (at most 16 s), then it is stopped: the job must still catch
       up. */
    json_t *flood = job_spec_est("jmd-flood", 8, 60.0, 1.0, 10.0);
    g_flood = g_f;
    assert_int_equal(jmf_new_job(&g_flood, "flood"), 0);
    double flood_at = (double)(wall_ms() - started) / 1000.0;
    assert_int_equal(jmf_start_jm(&g_flood, flood, ""), 0);
    int target_at_flood = -1, target_now = -1;
    for (int i = 0; i < 16 * 20; i++) {
        st = jmf_job_file(&g_f, "state.json");
        if (st) {
            target_now = (int)json_integer_value(json_object_get(st, "tokens_target"));
            if (target_at_flood < 0)
                target_at_flood = target_now;
            int running = strcmp(state_of(st), "running") == 0;
            json_decref(st);
            if (!running || target_now > target_at_flood)
                break;
        }
        jmf_pause(50);
    }
    double flood_end = (double)(wall_ms() - started) / 1000.0;
    kill(g_flood.jm, SIGTERM); /* cancels its tasks: their slots free up */

    rc = jmf_wait_jm(&g_f, 60);
    st = jmf_job_file(&g_f, "state.json");
    json_t *rep = jmf_job_file(&g_f, "report.json");
    if (rc != 0 || !rep)
        jmf_dump(&g_f);
    assert_int_equal(rc, 0);
    assert_non_null(rep);
    double makespan = json_number_value(json_object_get(st, "makespan_s"));
    jmf_wait_jm(&g_flood, 60);
    json_t *frep = jmf_job_file(&g_flood, "report.json");
    assert_non_null(frep);
    /* The flood really competed: its attempts ran while the job still had tasks to finish. */
    double fstart = 1e9;
    int64_t fstarted = json_integer_value(json_object_get(frep, "started_ms"));
    json_t *fatt = json_object_get(frep, "attempts");
    for (size_t i = 0; i < json_array_size(fatt); i++) {
        double t = json_number_value(json_object_get(json_array_get(fatt, i), "start_s"));
        if (t < fstart)
            fstart = t;
    }
    double flood_first = (double)(fstarted - started) / 1000.0 + fstart;
    int before = target_before(rep, flood_at), after = max_target(rep, flood_at, 1e9);
    int granted_after = 0;
    json_t *toks = json_object_get(rep, "tokens");
    for (size_t i = 0; i < json_array_size(toks); i++) {
        json_t *s = json_array_get(toks, i);
        int g = (int)json_integer_value(json_object_get(s, "granted"));
        if (json_number_value(json_object_get(s, "t_s")) >= flood_at && g > granted_after)
            granted_after = g;
    }
    /* How the flood held the job up: its longest wait in a PN's queue, and its attempts moved
       off a long queue or preempted. */
    double longest_wait = 0;
    int moved = 0, preempted = 0;
    json_t *att = json_object_get(rep, "attempts");
    for (size_t i = 0; i < json_array_size(att); i++) {
        json_t *a = json_array_get(att, i);
        const char *as = json_string_value(json_object_get(a, "state"));
        const char *why = json_string_value(json_object_get(a, "reason"));
        int was_moved = why && strncmp(why, "moved", 5) == 0;
        /* A moved attempt waited until it was moved; a finished one until it started. */
        double w = json_number_value(json_object_get(a, was_moved ? "end_s" : "start_s")) -
                   json_number_value(json_object_get(a, "queued_s"));
        if ((was_moved || (as && strcmp(as, "succeeded") == 0)) && w > longest_wait)
            longest_wait = w;
        moved += was_moved;
        preempted += as && strcmp(as, "preempted") == 0;
    }
    fprintf(stderr,
            "makespan %.2f s (deadline %.0f s); flood from t=%.2f (first task t=%.2f) to t=%.2f; "
            "target %d before, up to %d after (granted up to %d); longest queue wait %.2f s, %d "
            "attempts moved, %d preempted\n",
            makespan, d, flood_at, flood_first, flood_end, before, after, granted_after,
            longest_wait, moved, preempted);
    /* state.json counts the attempts the JM moved, as the report's reasons do */
    assert_int_equal(json_integer_value(json_object_get(st, "attempts_moved")), moved);
    assert_true(flood_first < makespan);
    assert_true(longest_wait >= 1.0); /* the flood's regular tasks held the job's up */
    assert_true(before >= 1);
    assert_true(after > before); /* the allocation rises */
    assert_true(granted_after > before);
    assert_true(json_is_true(json_object_get(st, "deadline_met")));
    json_decref(st);
    json_decref(rep);
    json_decref(frep);
}

/* A run much slower than its profile (every task three times as long): the job falls behind, the
 * controller raises its target, and the job still meets its deadline. */
static void test_slower_than_profile(void **state)
{
    (void)state;
    assert_int_equal(jmf_start_jm(&g_f, job_spec("jmd-slow", 24, 0.4, 12.0), ""), 0);
    int rc = jmf_wait_jm(&g_f, 60);
    if (rc != 0)
        jmf_dump(&g_f);
    assert_int_equal(rc, 0);

    assert_int_equal(jmf_new_job(&g_f, "job2"), 0);
    assert_int_equal(jmf_start_jm(&g_f, job_spec_est("jmd-slow", 24, 1.2, 0.4, 12.0), ""), 0);
    rc = jmf_wait_jm(&g_f, 60);
    json_t *st = jmf_job_file(&g_f, "state.json");
    json_t *rep = jmf_job_file(&g_f, "report.json");
    if (rc != 0 || !rep)
        jmf_dump(&g_f);
    assert_int_equal(rc, 0);
    assert_non_null(rep);
    int first = target_before(rep, 0.5), most = max_target(rep, 0, 1e9);
    double makespan = json_number_value(json_object_get(st, "makespan_s"));
    fprintf(stderr, "makespan %.2f s (deadline 12 s); target %d at the start, up to %d\n", makespan,
            first, most);
    assert_true(first >= 1);
    assert_true(most > first); /* behind schedule: the allocation rises */
    assert_true(json_is_true(json_object_get(st, "deadline_met")));
    json_decref(st);
    json_decref(rep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_profile_then_deadline_changes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flood, setup_oversubscribed, teardown),
        cmocka_unit_test_setup_teardown(test_slower_than_profile, setup, teardown),
    };
    if (getenv("PADDOCK_TEST_FILTER"))
        cmocka_set_test_filter(getenv("PADDOCK_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
