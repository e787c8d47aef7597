/* test_e2e_eta.c - the JM's ETA band and its error (issue 22, jm/eta.h) on a real local cluster
 * (1 RM, 2 PNs of 2 cpus): the same 24-task job run twice under one name.
 *   - While it runs, state.json's eta_p95_s is never below eta_s.
 *   - Run 1 has no profile, so no spread of its own: its p95 comes from the simulated runs.
 *   - Run 1 leaves a profile; run 2 registers its own spread (jm/shape.h), the RM sends it back
 *     with the learned factor in LEASE_ACK, and the p95 comes from them ("spread").
 *   - Each finished run's state.json and report.json carry the p50 at half done with its error
 *     and the p95 then with whether the job ended by it; `paddock job show` prints both.
 * Skipped while paddock-jm is not built. */
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

#define NTASKS 24

static int group_setup(void **state)
{
    (void)state;
    return e2e_group_up("--rm 1 --pn 2 --pn-cpus 2 --pn-mem-mb 2048");
}

static double num(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : -1;
}

/* Submits the job, checks eta_p95_s >= eta_s on every state.json read while it runs, and returns
 * the final state (caller decrefs); its id in id. */
static json_t *run_job(const char *spec_path, char id[64], int *etas_seen)
{
    e2e_submit(spec_path, id);
    *etas_seen = 0;
    for (time_t end = time(NULL) + 120; time(NULL) <= end;) {
        json_t *st = e2e_job_file(id, "state.json");
        const char *s = json_string_value(json_object_get(st, "state"));
        if (s != NULL && strcmp(s, "running") == 0 && num(st, "eta_s") > 0) {
            (*etas_seen)++;
            if (num(st, "eta_p95_s") < num(st, "eta_s"))
                fprintf(stderr, "eta %.3f s above its p95 %.3f s\n", num(st, "eta_s"),
                        num(st, "eta_p95_s"));
            assert_true(num(st, "eta_p95_s") >= num(st, "eta_s"));
        }
        if (s != NULL && strcmp(s, "running") != 0 && strcmp(s, "starting") != 0)
            return st;
        json_decref(st);
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    e2e_job_dump(id);
    fail_msg("job %s did not end", id);
    return NULL;
}

/* The half-done fields, in state.json and report.json alike. */
static void check_half(const char *id, const json_t *st, const char *from)
{
    const json_t *docs[2] = {st, e2e_job_file(id, "report.json")};
    assert_non_null(docs[1]);
    for (int d = 0; d < 2; d++) {
        const json_t *o = docs[d];
        double half = num(o, "eta_half_s"), p95 = num(o, "eta_half_p95_s");
        double err = num(o, "eta_half_error"), ms = num(o, "makespan_s");
        fprintf(stderr, "%s: ETA at half done %.3f s (error %.1f%%), p95 %.3f s, makespan %.3f s\n",
                d ? "report.json" : "state.json", half, 100 * err, p95, ms);
        assert_true(half > 0 && p95 >= half && ms > 0);
        assert_true(err >= 0 && err < 1e-6 + (half > ms ? half - ms : ms - half) / ms + 1e-6);
        const json_t *cov = json_object_get(o, "eta_half_p95_covered");
        assert_true(json_is_boolean(cov));
        assert_true(json_boolean_value(cov) == (ms <= p95));
        assert_string_equal(json_string_value(json_object_get(o, "eta_p95_from")), from);
    }
    json_decref((json_t *)docs[1]);
}

static void test_eta_band_and_error(void **state)
{
    (void)state;
    e2e_skip_without_jm();
    char spec_path[1200];
    snprintf(spec_path, sizeof spec_path, "%s/eta.json", e2e_dir());
    FILE *f = fopen(spec_path, "w");
    assert_non_null(f);
    fprintf(f, "{\"version\": 1, \"name\": \"eta\", \"tasks\": [\n");
    for (int k = 0; k < NTASKS; k++)
        fprintf(f,
                "  {\"id\": \"t%d\", \"cmd\": [\"sleep\", \"0.5\"], \"cpu\": 1, \"mem_mb\": 16, "
                "\"runtime_s\": 0.5}%s\n",
                k, k + 1 < NTASKS ? "," : "");
    fprintf(f, "]}\n");
    assert_int_equal(fclose(f), 0);

    char id[64];
    int seen = 0;
    /* run 1: no profile, no spread of its own */
    json_t *st = run_job(spec_path, id, &seen);
    assert_string_equal(json_string_value(json_object_get(st, "state")), "succeeded");
    fprintf(stderr, "run 1: %d running states with an ETA\n", seen);
    assert_true(seen > 0);
    assert_true(json_is_null(json_object_get(st, "eta_spread")));
    check_half(id, st, "runs");
    json_decref(st);

    /* run 2: its profile gives it a spread, the RM a learned factor */
    st = run_job(spec_path, id, &seen);
    if (strcmp(json_string_value(json_object_get(st, "state")), "succeeded") != 0)
        e2e_job_dump(id);
    assert_string_equal(json_string_value(json_object_get(st, "state")), "succeeded");
    fprintf(stderr, "run 2: spread %.3f, learned factor %.3f\n", num(st, "eta_spread"),
            num(st, "eta_own_factor"));
    assert_true(seen > 0);
    assert_true(num(st, "eta_spread") >= 1);
    assert_true(num(st, "eta_own_factor") > 0);
    check_half(id, st, "spread");
    json_decref(st);

    struct e2e_run r;
    e2e_paddock(&r, 30, "job show %s", id);
    assert_int_equal(r.status, 0);
    fprintf(stderr, "%s", r.out);
    assert_non_null(strstr(r.out, "eta at half done"));
    assert_non_null(strstr(r.out, "(ended by it: "));
    assert_non_null(strstr(r.out, "own spread "));
    e2e_run_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eta_band_and_error),
    };
    return cmocka_run_group_tests(tests, group_setup, e2e_group_teardown);
}
