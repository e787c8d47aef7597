/* test_e2e_recurring.c - recurring jobs on a real local cluster (3 RM replicas, 2 PNs of 2 cores:
 * 4 tokens, plans in 1 s steps), through the CLI only:
 *   - `paddock recurring add` without a deadline; every 6 s period the leader starts one run;
 *     after each run a consumer job declaring the output in "reads" is submitted 4.5 s into
 *     the period, so the RM infers a deadline from when the output is read (Morpheus §4);
 *   - `recurring show` states the inferred deadline with its evidence; `recurring accept`
 *     adopts it; R* and the reservation then appear (LP fit, LowCost);
 *   - the RM leader is killed with SIGKILL between two periods and started again: no period
 *     is skipped or run twice;
 *   - a later run is made slower on purpose (its tasks read their duration from a file): it is
 *     reprovisioned above its reservation and still meets its deadline;
 *   - `paddock history` lists every run, each period exactly once, at least five runs, and
 *     `paddock plan` shows the reservation.
 * Skipped while paddock-jm is not built. */
#include "tests/e2e/e2e.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define PERIOD_S 6

static char g_slow[1200], g_out[1200], g_marks[1200];

static int group_setup(void **state)
{
    (void)state;
    return e2e_group_up("--rm 3 --pn 2 --pn-cpus 2 --pn-mem-mb 2048");
}

static int group_teardown(void **state)
{
    (void)state;
    struct e2e_run r;
    e2e_paddock(&r, 10, "recurring remove etl");
    e2e_run_close(&r);
    e2e_cluster_down();
    return 0;
}

static json_t *paddock_json(const char *args)
{
    struct e2e_run r;
    e2e_paddock(&r, 20, "%s --json", args);
    if (r.status != 0)
        fprintf(stderr, "paddock %s: %s%s\n", args, r.out, r.err);
    assert_int_equal(r.status, 0);
    json_error_t e;
    json_t *doc = json_loads(r.out, 0, &e);
    if (doc == NULL)
        fprintf(stderr, "paddock %s: not JSON: %s\n", args, r.out);
    assert_non_null(doc);
    e2e_run_close(&r);
    return doc;
}

/* The runs of etl in the history, oldest first, into periods[] (at most cap); returns how many
 * ran (any outcome but skipped) and fails on a period seen twice or a skipped one. */
static size_t runs_of_etl(int64_t *periods, size_t cap, size_t *succeeded)
{
    json_t *doc = paddock_json("history etl");
    json_t *runs = json_object_get(doc, "runs");
    size_t n = 0, ok = 0;
    for (size_t i = json_array_size(runs); i-- > 0;) {
        json_t *h = json_array_get(runs, i);
        const char *outcome = json_string_value(json_object_get(h, "outcome"));
        int64_t p = json_integer_value(json_object_get(h, "period"));
        if (strcmp(outcome, "skipped") == 0 || strcmp(outcome, "not_started") == 0) {
            fprintf(stderr, "period %lld %s: %s\n", (long long)p, outcome,
                    json_string_value(json_object_get(h, "reason")));
            fail();
        }
        for (size_t k = 0; k < n; k++)
            assert_true(periods[k] != p); /* never twice */
        if (n > 0)
            assert_int_equal(p, periods[n - 1] + 1); /* never skipped */
        if (n < cap)
            periods[n++] = p;
        ok += strcmp(outcome, "succeeded") == 0;
    }
    json_decref(doc);
    if (succeeded != NULL)
        *succeeded = ok;
    return n;
}

static size_t g_consumed; /* succeeded runs whose output a consumer has read */

/* Waits until etl has `want` finished runs; with consume, after each newly succeeded run a
 * consumer job reads its output 4.5 s into the period (before the check, so the last run's
 * output is read too). */
static void await_runs(size_t want, bool consume, int timeout_s)
{
    int64_t end = e2e_wall_ms() + 1000LL * timeout_s;
    int64_t periods[64];
    while (e2e_wall_ms() < end) {
        size_t ok = 0;
        size_t n = runs_of_etl(periods, 64, &ok);
        if (consume && ok > g_consumed) {
            g_consumed = ok;
            /* the output is read at a fixed time of the period: 4.5 s after its start */
            int64_t ps = (int64_t)(e2e_wall_ms() / (PERIOD_S * 1000)) * PERIOD_S * 1000;
            int64_t at = ps + 4500;
            if (at < e2e_wall_ms())
                at += PERIOD_S * 1000;
            e2e_sleep_ms(at - e2e_wall_ms());
            struct e2e_run r;
            e2e_paddock(&r, 20, "submit '%s/consumer.json'", e2e_dir());
            if (r.status != 0)
                fprintf(stderr, "consumer: %s%s\n", r.out, r.err);
            assert_int_equal(r.status, 0);
            e2e_run_close(&r);
        }
        if (n >= want)
            return;
        e2e_sleep_ms(200);
    }
    fprintf(stderr, "etl: fewer than %zu runs in %d s\n", want, timeout_s);
    fail();
}

static void kill_leader(void)
{
    json_t *st = paddock_json("rm status");
    json_int_t leader = json_integer_value(json_object_get(st, "leader"));
    json_decref(st);
    assert_true(leader > 0);
    char path[1300];
    snprintf(path, sizeof path, "%s/rm-%lld.pid", e2e_dir(), (long long)leader);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    long pid = 0;
    assert_int_equal(fscanf(f, "%ld", &pid), 1);
    fclose(f);
    assert_true(pid > 1);
    fprintf(stderr, "killing RM leader %lld (pid %ld)\n", (long long)leader, pid);
    assert_int_equal(kill((pid_t)pid, SIGKILL), 0);
    e2e_sleep_ms(300);
    /* cluster up starts what is not running, under the same id and data */
    struct e2e_run r;
    e2e_paddock(&r, 60, "cluster up --dir '%s'", e2e_dir());
    if (r.status != 0)
        fprintf(stderr, "cluster up: %s%s\n", r.out, r.err);
    assert_int_equal(r.status, 0);
    e2e_run_close(&r);
}

static void test_recurring_end_to_end(void **state)
{
    (void)state;
    e2e_skip_without_jm();
    snprintf(g_slow, sizeof g_slow, "%s/slow", e2e_dir());
    snprintf(g_out, sizeof g_out, "%s/etl-out", e2e_dir());
    snprintf(g_marks, sizeof g_marks, "%s/marks", e2e_dir());
    char spec[8192], path[1300];
    int n = snprintf(spec, sizeof spec,
                     "{\"version\": 1, \"name\": \"etl\", \"virtual_cluster\": \"default\",\n"
                     " \"writes\": [\"%s\"],\n \"tasks\": [\n",
                     g_out);
    for (int t = 0; t < 4; t++) {
        char cmd[1400];
        snprintf(cmd, sizeof cmd, "sleep $(cat %s 2>/dev/null || echo 1)", g_slow);
        n += snprintf(spec + n, sizeof spec - (size_t)n,
                      "  {\"id\": \"x%d\", \"stage\": \"extract\", \"cmd\": [\"sh\", \"-c\", "
                      "\"%s\"], \"cpu\": 1, \"mem_mb\": 64, \"runtime_s\": 1},\n",
                      t, cmd);
    }
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "sleep $(cat %s 2>/dev/null || echo 1)", g_slow);
    n += snprintf(spec + n, sizeof spec - (size_t)n,
                  "  {\"id\": \"load\", \"stage\": \"load\", \"after\": [\"x0\", \"x1\", \"x2\", "
                  "\"x3\"], \"cmd\": [\"sh\", \"-c\", \"%s && date +%%s >> %s\"], \"cpu\": 1, "
                  "\"mem_mb\": 64, \"runtime_s\": 1}\n ]}\n",
                  cmd, g_marks);
    assert_true(n < (int)sizeof spec);
    snprintf(path, sizeof path, "%s/etl.json", e2e_dir());
    e2e_write_file(path, spec);
    char consumer[2048];
    snprintf(consumer, sizeof consumer,
             "{\"version\": 1, \"name\": \"report\", \"reads\": [\"%s\"], \"tasks\": [{\"id\": "
             "\"r\", \"cmd\": [\"true\"], \"cpu\": 1, \"mem_mb\": 64, \"runtime_s\": 0.1}]}\n",
             g_out);
    snprintf(path, sizeof path, "%s/consumer.json", e2e_dir());
    e2e_write_file(path, consumer);

    struct e2e_run r;
    e2e_paddock(&r, 20, "recurring add etl --every %ds '%s/etl.json'", PERIOD_S, e2e_dir());
    if (r.status != 0)
        fprintf(stderr, "recurring add: %s%s\n", r.out, r.err);
    assert_int_equal(r.status, 0);
    e2e_run_close(&r);

    /* three runs, each output read 4.5 s into the next period: an inferred deadline */
    await_runs(3, true, 90);
    json_t *show = NULL;
    int64_t end = e2e_wall_ms() + 60000;
    const char *source = "none";
    while (e2e_wall_ms() < end) {
        json_decref(show);
        show = paddock_json("recurring show etl");
        source = json_string_value(json_object_get(json_object_get(show, "slo"), "source"));
        if (strcmp(source, "consumers") == 0)
            break;
        await_runs(json_integer_value(json_object_get(show, "runs")) + 1, true, 30);
    }
    assert_string_equal(source, "consumers");
    double inferred = json_real_value(json_object_get(show, "inferred_deadline_s"));
    fprintf(stderr, "inferred deadline %.3f s\n", inferred);
    assert_true(inferred > 3.5 && inferred < 5.5);
    assert_string_equal(json_string_value(json_object_get(show, "deadline_source")), "none");
    json_decref(show);
    e2e_paddock(&r, 20, "recurring show etl");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "accept")); /* advisory until accepted, and says how */
    e2e_run_close(&r);

    e2e_paddock(&r, 20, "recurring accept etl");
    if (r.status != 0)
        fprintf(stderr, "recurring accept: %s%s\n", r.out, r.err);
    assert_int_equal(r.status, 0);
    e2e_run_close(&r);

    /* the model and the reservation */
    bool reserved = false;
    end = e2e_wall_ms() + 20000;
    while (!reserved && e2e_wall_ms() < end) {
        show = paddock_json("recurring show etl");
        reserved = json_is_true(json_object_get(show, "reserved"));
        if (reserved) {
            assert_string_equal(json_string_value(json_object_get(show, "deadline_source")),
                                "inferred");
            json_t *sky = json_object_get(json_object_get(show, "skyline"), "tokens");
            json_t *resv = json_object_get(json_object_get(show, "reservation"), "tokens");
            assert_true(json_array_size(sky) >= 2);
            assert_true(json_array_size(resv) >= 1);
        }
        json_decref(show);
        if (!reserved)
            e2e_sleep_ms(250);
    }
    assert_true(reserved);
    json_t *plan = paddock_json("plan");
    json_t *p0 = json_array_get(json_object_get(plan, "plans"), 0);
    assert_non_null(p0);
    assert_true(json_integer_value(json_object_get(p0, "peak_tokens")) >= 1);
    json_decref(plan);

    /* the RM leader dies between two periods and comes back */
    size_t before = runs_of_etl((int64_t[64]){0}, 64, NULL);
    int64_t now = e2e_wall_ms();
    int64_t next = (now / (PERIOD_S * 1000) + 1) * PERIOD_S * 1000;
    if (next - now < 3500)
        next += PERIOD_S * 1000; /* let the run under way finish first */
    e2e_sleep_ms(next - 1500 - e2e_wall_ms());
    kill_leader();
    await_runs(before + 2, false, 60);

    /* a slow run: its tasks take 1.6 s instead of 1 */
    size_t runs_now = runs_of_etl((int64_t[64]){0}, 64, NULL);
    e2e_write_file(g_slow, "1.6\n");
    await_runs(runs_now + 1, false, 60);
    unlink(g_slow);
    json_t *hist = paddock_json("history etl");
    json_t *slow = json_array_get(json_object_get(hist, "runs"), 0);
    fprintf(stderr, "slow run: outcome %s, met %s, reprovisioned %lld tokens, %.1f token-s\n",
            json_string_value(json_object_get(slow, "outcome")),
            json_is_true(json_object_get(slow, "met")) ? "yes" : "no",
            (long long)json_integer_value(json_object_get(slow, "reprovisioned_tokens")),
            json_real_value(json_object_get(slow, "token_s")));
    assert_string_equal(json_string_value(json_object_get(slow, "outcome")), "succeeded");
    assert_true(json_is_true(json_object_get(slow, "met")));
    assert_true(json_integer_value(json_object_get(slow, "reprovisioned_tokens")) > 0);
    json_decref(hist);

    /* every period once, none skipped, at least five runs */
    size_t ok = 0;
    size_t total = runs_of_etl((int64_t[64]){0}, 64, &ok);
    fprintf(stderr, "%zu runs, %zu succeeded\n", total, ok);
    assert_true(total >= 5);
    e2e_paddock(&r, 20, "history etl");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "succeeded"));
    e2e_run_close(&r);
    e2e_paddock(&r, 20, "recurring show etl");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "inferred"));
    assert_non_null(strstr(r.out, "reservation"));
    e2e_run_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recurring_end_to_end),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
