/* test_profile_history.c - profiles per successful run (jm/profile.h "History"): the pooled
 * merge against hand-computed statistics, keeping the newest PROFILE_KEEP runs, passing over an
 * unreadable run, and reading the single file of older versions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/profile.h"

struct fixture {
    char dir[64];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/paddock-profhist-XXXXXX");
    if (mkdtemp(f->dir) == NULL)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        return -1;
    free(f);
    return 0;
}

/* One run of job "etl": stage "map" with 21 tasks running lo, lo+step, ..., lo+20*step seconds
 * (so runtime_q[k] = lo + k*step), each initialising `init` s and queued 1 s, and `fails` failed
 * attempts that ran fail_s; stage "reduce" (when `reduce`) one task of 7 s. */
static void run(struct profile *p, double lo, double step, double init, int fails, double fail_s,
                int reduce)
{
    struct profile_attempt a[40];
    int n = 0;
    for (int i = 0; i < 21; i++)
        a[n++] = (struct profile_attempt){.stage = 0,
                                          .queue_s = 1,
                                          .init_s = init,
                                          .run_s = lo + step * i,
                                          .input_bytes = lo + 100,
                                          .est_s = 0,
                                          .ok = true};
    for (int i = 0; i < fails; i++)
        a[n++] = (struct profile_attempt){
            .stage = 0, .queue_s = 0, .init_s = init, .run_s = fail_s, .ok = false};
    if (reduce)
        a[n++] = (struct profile_attempt){
            .stage = 1, .queue_s = 2, .init_s = 0.5, .run_s = 7, .est_s = 3.5, .ok = true};
    const char *names[2] = {"map", "reduce"};
    char msg[128];
    profile_init(p);
    assert_int_equal(profile_build(p, "etl", reduce ? 2 : 1, names, a, (size_t)n, msg, sizeof msg),
                     0);
}

static void near(double got, double want)
{
    if (fabs(got - want) > 1e-9)
        fail_msg("got %.12g, want %.12g", got, want);
}

/* Run A: map uniform on [0, 20], 1 failure after 3 s, init 1 s. Run B: uniform on [20, 40],
 * 3 failures after 5 s, init 2 s, and a "reduce" stage. */
static void check_ab(const struct profile *m)
{
    assert_string_equal(m->job, "etl");
    assert_int_equal(m->nstages, 2);
    const struct profile_stage *s = &m->stages[profile_find_stage(m, "map")];
    assert_int_equal(s->tasks, 42);
    assert_int_equal(s->attempts, 22 + 24);
    assert_int_equal(s->failures, 4);
    near(profile_stage_fail_prob(s), 4.0 / 46);
    near(s->runtime_total, 210 + 630);
    near(profile_stage_runtime_mean(s), 20);
    near(s->queue_total, 42);
    near(s->fail_run_mean, (3 + 3 * 5) / 4.0);
    near(s->input_mean, (21 * 100 + 21 * 120) / 42.0);
    near(s->input_max, 120);
    for (int k = 0; k < PROFILE_NQ; k++)
        near(s->runtime_q[k], 2.0 * k); /* uniform on [0, 40] */
    /* init: 22 attempts at 1 s, 24 at 2 s */
    double at1 = 22.0 / 46;
    for (int k = 0; k < PROFILE_NQ; k++)
        near(s->init_q[k], (double)k / (PROFILE_NQ - 1) <= at1 ? 1 : 2);
    assert_int_equal(s->ratio_samples, 0);
    const struct profile_stage *r = &m->stages[profile_find_stage(m, "reduce")];
    assert_int_equal(r->tasks, 1);
    assert_int_equal(r->ratio_samples, 1);
    near(r->runtime_q[0], 7);
    near(r->runtime_q[PROFILE_NQ - 1], 7);
    near(r->ratio_q[10], 2);
}

static void test_merge_two_runs(void **state)
{
    (void)state;
    struct profile ab[2], m;
    run(&ab[0], 0, 1, 1, 1, 3, 0);
    run(&ab[1], 20, 1, 2, 3, 5, 1);
    profile_init(&m);
    char msg[128];
    assert_int_equal(profile_merge(&m, ab, 2, msg, sizeof msg), 0);
    check_ab(&m);
    /* the merge's text reads back (sorted quantiles, consistent counts) */
    char *text = profile_to_json(&m);
    struct profile back;
    profile_init(&back);
    assert_int_equal(profile_from_json(&back, text, strlen(text), msg, sizeof msg), 0);
    check_ab(&back);
    mem_free(text);
    profile_close(&back);
    profile_close(&m);

    /* weights: 1 sample at 10 s against 3 at 20 s */
    struct profile one[2];
    const char *names[1] = {"s"};
    struct profile_attempt a[3] = {{.stage = 0, .run_s = 20, .ok = true},
                                   {.stage = 0, .run_s = 20, .ok = true},
                                   {.stage = 0, .run_s = 20, .ok = true}};
    struct profile_attempt b = {.stage = 0, .run_s = 10, .ok = true};
    profile_init(&one[0]);
    profile_init(&one[1]);
    assert_int_equal(profile_build(&one[0], "w", 1, names, &b, 1, msg, sizeof msg), 0);
    assert_int_equal(profile_build(&one[1], "w", 1, names, a, 3, msg, sizeof msg), 0);
    profile_init(&m);
    assert_int_equal(profile_merge(&m, one, 2, msg, sizeof msg), 0);
    for (int k = 0; k < PROFILE_NQ; k++)
        near(m.stages[0].runtime_q[k], k <= 5 ? 10 : 20);
    assert_int_equal(profile_merge(&m, one, 0, msg, sizeof msg), ERR_INVAL);
    near(m.stages[0].runtime_q[PROFILE_NQ - 1], 20); /* untouched on error */
    profile_close(&m);
    for (int i = 0; i < 2; i++) {
        profile_close(&ab[i]);
        profile_close(&one[i]);
    }
}

static size_t count_runs(const char *hist)
{
    DIR *d = opendir(hist);
    if (d == NULL)
        return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Saved runs are merged on load; the newest PROFILE_KEEP are kept; an unreadable run file is
 * passed over and leaves the loaded profile as it was. */
static void test_history(void **state)
{
    struct fixture *f = *state;
    struct profile a, b, m;
    char msg[256], path[4400], hist[4096];
    int runs = -1;
    run(&a, 0, 1, 1, 1, 3, 0);
    run(&b, 20, 1, 2, 3, 5, 1);
    profile_init(&m);
    assert_int_equal(profile_load_job(&m, f->dir, "etl", PROFILE_KEEP, &runs, msg, sizeof msg),
                     ERR_NOTFOUND);
    assert_int_equal(runs, 0);
    assert_int_equal(profile_save_run(&a, f->dir, "job-1", 1000, PROFILE_KEEP, path, sizeof path,
                                      msg, sizeof msg),
                     0);
    assert_non_null(strstr(path, "/etl/0000000001000-job-1.json"));
    assert_int_equal(profile_load_job(&m, f->dir, "etl", PROFILE_KEEP, &runs, msg, sizeof msg), 0);
    assert_int_equal(runs, 1);
    assert_int_equal(m.stages[0].tasks, 21);
    assert_int_equal(
        profile_save_run(&b, f->dir, "job/2", 2000, PROFILE_KEEP, NULL, 0, msg, sizeof msg), 0);
    assert_int_equal(profile_load_job(&m, f->dir, "etl", PROFILE_KEEP, &runs, msg, sizeof msg), 0);
    assert_int_equal(runs, 2);
    check_ab(&m); /* newest first: "map" is still the first stage */

    /* a run file that does not read (a crash mid-copy by hand, a newer format) changes nothing */
    assert_int_equal(profile_history_dir(hist, sizeof hist, f->dir, "etl"), 0);
    snprintf(path, sizeof path, "%s/0000000003000-job-3.json", hist);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("{\"format\": \"paddock-profile\", \"version\": 1, \"job\": \"etl\", \"stag", fp);
    fclose(fp);
    assert_int_equal(profile_load_job(&m, f->dir, "etl", PROFILE_KEEP, &runs, msg, sizeof msg), 0);
    assert_int_equal(runs, 2);
    check_ab(&m);
    unlink(path);

    /* twelve more runs: the newest ten stay, and only they are merged */
    for (int i = 0; i < 12; i++) {
        struct profile x;
        run(&x, 100 + i, 0, 1, 0, 0, 0);
        assert_int_equal(profile_save_run(&x, f->dir, "later", 10000 + i, PROFILE_KEEP, NULL, 0,
                                          msg, sizeof msg),
                         0);
        profile_close(&x);
    }
    assert_int_equal(count_runs(hist), PROFILE_KEEP);
    assert_int_equal(profile_load_job(&m, f->dir, "etl", PROFILE_KEEP, &runs, msg, sizeof msg), 0);
    assert_int_equal(runs, PROFILE_KEEP);
    const struct profile_stage *s = &m.stages[profile_find_stage(&m, "map")];
    assert_int_equal(s->tasks, 21 * PROFILE_KEEP);
    near(s->runtime_q[0], 102); /* runs 2..11 of the twelve: 102 .. 111 s */
    near(s->runtime_q[PROFILE_NQ - 1], 111);
    assert_int_equal(profile_find_stage(&m, "reduce"), -1);
    profile_close(&m);
    profile_close(&a);
    profile_close(&b);
}

/* Without a history directory the single file of older versions is read. */
static void test_old_layout(void **state)
{
    struct fixture *f = *state;
    struct profile a, m;
    char msg[256], path[4096];
    int runs = -1;
    run(&a, 0, 1, 1, 1, 3, 0);
    assert_int_equal(profile_path(path, sizeof path, f->dir, "etl"), 0);
    assert_int_equal(profile_save(&a, path, msg, sizeof msg), 0);
    profile_init(&m);
    assert_int_equal(profile_load_job(&m, f->dir, "etl", PROFILE_KEEP, &runs, msg, sizeof msg), 0);
    assert_int_equal(runs, 1);
    assert_int_equal(m.stages[0].tasks, 21);
    /* once a run is kept the history wins */
    struct profile b;
    run(&b, 20, 1, 2, 3, 5, 1);
    assert_int_equal(profile_save_run(&b, f->dir, "j", 5, PROFILE_KEEP, NULL, 0, msg, sizeof msg),
                     0);
    assert_int_equal(profile_load_job(&m, f->dir, "etl", PROFILE_KEEP, &runs, msg, sizeof msg), 0);
    assert_int_equal(m.nstages, 2);
    near(m.stages[0].runtime_q[0], 20);
    profile_close(&m);
    profile_close(&a);
    profile_close(&b);
}

/* Failed allocations in the merge leak nothing and leave the output untouched. */
static void test_merge_alloc_failure(void **state)
{
    (void)state;
    struct profile ab[2], m;
    run(&ab[0], 0, 1, 1, 1, 3, 0);
    run(&ab[1], 20, 1, 2, 3, 5, 1);
    char msg[128];
    int failures = 0;
    for (long n = 0; n < 100; n++) {
        profile_init(&m);
        mem_fail_after(n);
        int rc = profile_merge(&m, ab, 2, msg, sizeof msg);
        long refused = mem_fail_count();
        mem_fail_reset();
        if (rc == 0) {
            check_ab(&m);
            profile_close(&m);
            if (refused == 0)
                break;
        } else {
            assert_int_equal(rc, ERR_NOMEM);
            assert_int_equal(m.nstages, 0);
            failures++;
        }
    }
    assert_true(failures >= 5);
    profile_close(&ab[0]);
    profile_close(&ab[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_two_runs),
        cmocka_unit_test_setup_teardown(test_history, setup, teardown),
        cmocka_unit_test_setup_teardown(test_old_layout, setup, teardown),
        cmocka_unit_test(test_merge_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
