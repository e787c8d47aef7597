/* The job simulator against hand-computed DAGs, and the C(p, a) table built from it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/jsim.h"
#include "jm/progress.h"
#include "jm/spec.h"

struct fixture {
    jsim_job_t *job;
    struct jsim_model model;
    struct progress_model pm;
};

static void fixture_progress(struct fixture *f)
{
    int S = jsim_job_nstages(f->job);
    int n[8];
    double Q[8], T[8];
    jsim_job_stage_sizes(f->job, n);
    for (int s = 0; s < S; s++) {
        Q[s] = f->model.stages[s].queue_total;
        T[s] = f->model.stages[s].runtime_total;
    }
    assert_int_equal(progress_init(&f->pm, PROGRESS_TOTALWORK_Q, S, n, Q, T, NULL), 0);
}

static void fixture_ready(struct fixture *f, const struct profile *prof, const char **names)
{
    assert_int_equal(jsim_model_init(&f->model, f->job, names, prof), 0);
    fixture_progress(f);
}

static int setup_mapreduce(void **state)
{
    /* map: 4 x 10 s -> barrier -> reduce: 1 x 20 s. */
    struct fixture *f = test_calloc(1, sizeof *f);
    f->job = jsim_job_new(2, 5);
    for (int t = 0; t < 4; t++)
        jsim_job_set_task(f->job, t, 0, 10);
    jsim_job_set_task(f->job, 4, 1, 20);
    jsim_job_add_barrier(f->job, 0, 1);
    if (jsim_job_finalize(f->job, NULL, 0) != 0)
        return -1;
    fixture_ready(f, NULL, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    progress_close(&f->pm);
    jsim_model_close(&f->model);
    jsim_job_destroy(&f->job);
    test_free(f);
    return 0;
}

static double makespan(struct fixture *f, int tokens, struct jsim_run_stats *st)
{
    struct jsim_rng rng;
    jsim_rng_seed(&rng, 1);
    assert_int_equal(jsim_run(f->job, &f->model, tokens, &f->pm, &rng, NULL, st), 0);
    return st->makespan;
}

static void test_mapreduce_by_hand(void **state)
{
    struct fixture *f = *state;
    struct jsim_run_stats st;
    assert_true(fabs(makespan(f, 1, &st) - 60) < 1e-9); /* 4 * 10 + 20 */
    assert_true(fabs(makespan(f, 2, &st) - 40) < 1e-9); /* 2 waves of 10 + 20 */
    assert_true(fabs(makespan(f, 3, &st) - 40) < 1e-9); /* still two waves */
    assert_true(fabs(makespan(f, 4, &st) - 30) < 1e-9);
    assert_true(fabs(makespan(f, 100, &st) - 30) < 1e-9);
    assert_int_equal(st.peak_running, 4);
    assert_true(fabs(st.work - 60) < 1e-9);
    assert_int_equal(st.attempts, 5);
    assert_true(fabs(jsim_job_critical_path(f->job) - 30) < 1e-9);
    assert_true(fabs(jsim_job_total_work(f->job) - 60) < 1e-9);
}

/* Sized tokens: map tasks of 4 units each on a allocations in token units; the reduce of
 * 8 units is larger than a 6-unit allocation and runs alone. */
static void test_mapreduce_sized(void **state)
{
    struct fixture *f = *state;
    for (int t = 0; t < 4; t++)
        assert_int_equal(jsim_job_set_tokens(f->job, t, 4), 0);
    assert_int_equal(jsim_job_set_tokens(f->job, 4, 8), 0);
    assert_int_equal(jsim_job_set_tokens(f->job, 9, 8), ERR_RANGE);
    assert_int_equal(jsim_job_task_tokens(f->job, 4), 8);
    struct jsim_run_stats st;
    assert_true(fabs(makespan(f, 4, &st) - 60) < 1e-9);  /* one map at a time */
    assert_true(fabs(makespan(f, 6, &st) - 60) < 1e-9);  /* still one: 8 > 6 */
    assert_true(fabs(makespan(f, 8, &st) - 40) < 1e-9);  /* two at a time */
    assert_true(fabs(makespan(f, 16, &st) - 30) < 1e-9); /* all four */
    assert_int_equal(st.peak_running, 16);
    assert_true(fabs(makespan(f, 1, &st) - 60) < 1e-9); /* each alone */
    /* Amdahl's T_s counts token-seconds */
    struct amdahl am;
    assert_int_equal(jsim_job_amdahl(f->job, NULL, &am), 0);
    assert_true(fabs(am.P0 - (4 * 10 * 4 + 20 * 8)) < 1e-9);
    amdahl_close(&am);
}

/* The rest of a run under way (the JM's ETA): map tasks 0 and 1 done, task 2 running with 4 s
 * left, task 3 not started, the reduce waiting on the barrier. */
static void test_rest_of_a_run(void **state)
{
    struct fixture *f = *state;
    uint8_t st[5] = {JSIM_REST_DONE, JSIM_REST_DONE, JSIM_REST_RUNNING, JSIM_REST_PENDING,
                     JSIM_REST_PENDING};
    double left[5] = {0, 0, 4, 0, 0};
    struct jsim_rng rng;
    jsim_rng_seed(&rng, 1);
    struct jsim_run_stats r;
    /* 2 tokens: task 3 runs beside task 2 (10 s), then the reduce: 10 + 20 */
    assert_int_equal(jsim_run_rest(f->job, &f->model, 2, st, left, 1.0, &rng, &r), 0);
    assert_true(fabs(r.makespan - 30) < 1e-9);
    assert_int_equal(r.attempts, 2); /* task 3 and the reduce start in the run */
    /* 1 token: task 3 waits for task 2 (4 s), runs 10 s, then the reduce */
    assert_int_equal(jsim_run_rest(f->job, &f->model, 1, st, left, 1.0, &rng, &r), 0);
    assert_true(fabs(r.makespan - 34) < 1e-9);
    /* tasks running slower than modelled: what starts in the run takes `scale` times longer */
    assert_int_equal(jsim_run_rest(f->job, &f->model, 2, st, left, 1.5, &rng, &r), 0);
    assert_true(fabs(r.makespan - 45) < 1e-9);
    /* everything but the reduce done, the reduce running with 7 s left */
    uint8_t st2[5] = {JSIM_REST_DONE, JSIM_REST_DONE, JSIM_REST_DONE, JSIM_REST_DONE,
                      JSIM_REST_RUNNING};
    double left2[5] = {0, 0, 0, 0, 7};
    assert_int_equal(jsim_run_rest(f->job, &f->model, 1, st2, left2, 1.0, &rng, &r), 0);
    assert_true(fabs(r.makespan - 7) < 1e-9);
    assert_int_equal(r.attempts, 0);
    /* nothing done: the whole run, as jsim_run */
    memset(st, JSIM_REST_PENDING, sizeof st);
    assert_int_equal(jsim_run_rest(f->job, &f->model, 2, st, left, 1.0, &rng, &r), 0);
    assert_true(fabs(r.makespan - 40) < 1e-9);
    /* a done reduce whose map 0 is not (its producer runs again): released when that ends */
    uint8_t bad[5] = {JSIM_REST_PENDING, JSIM_REST_DONE, JSIM_REST_DONE, JSIM_REST_DONE,
                      JSIM_REST_DONE};
    assert_int_equal(jsim_run_rest(f->job, &f->model, 2, bad, left, 1.0, &rng, &r), 0);
    assert_true(fabs(r.makespan - 10) < 1e-9); /* task 0, then the done reduce is released */
    assert_int_equal(jsim_run_rest(f->job, &f->model, 0, st, left, 1.0, &rng, &r), ERR_INVAL);
    assert_int_equal(jsim_run_rest(f->job, &f->model, 2, st, left, 0, &rng, &r), ERR_INVAL);
}

/* jsim_model_init_median: a copy whose initializations are each stage's median, so a queueing
 * tail in a profile's init_q no longer stretches the simulated rest (admission's shape and the
 * JM's ETA both run on it); the model it copies is left as it was. */
static void test_median_initialization(void **state)
{
    struct fixture *f = *state;
    int mid = (PROFILE_NQ - 1) / 2;
    /* the maps as a profile saw them: 10 s each, half started at once, the rest waited 3 s */
    f->model.stages[0].from_profile = 1;
    for (int q = 0; q < PROFILE_NQ; q++) {
        f->model.stages[0].runtime_q[q] = 10;
        f->model.stages[0].init_q[q] = q <= mid ? 0.0 : 3.0;
    }
    struct jsim_model med;
    assert_int_equal(jsim_model_init_median(&med, &f->model), 0);
    assert_int_equal(med.nstages, f->model.nstages);
    for (int q = 0; q < PROFILE_NQ; q++)
        assert_true(med.stages[0].init_q[q] == 0.0);
    assert_true(f->model.stages[0].init_q[PROFILE_NQ - 1] == 3.0);
    uint8_t st[5] = {JSIM_REST_DONE, JSIM_REST_DONE, JSIM_REST_RUNNING, JSIM_REST_PENDING,
                     JSIM_REST_PENDING};
    double left[5] = {0, 0, 4, 0, 0};
    struct jsim_run_stats r;
    double tail_max = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        struct jsim_rng rng;
        jsim_rng_seed(&rng, seed);
        assert_int_equal(jsim_run_rest(f->job, &f->model, 2, st, left, 1.0, &rng, &r), 0);
        tail_max = r.makespan > tail_max ? r.makespan : tail_max;
        jsim_rng_seed(&rng, seed);
        assert_int_equal(jsim_run_rest(f->job, &med, 2, st, left, 1.0, &rng, &r), 0);
        assert_true(fabs(r.makespan - 30) < 1e-9); /* as with no latency: 10 + 20 */
    }
    assert_true(tail_max > 32.9); /* the tail's draws do reach the rest */
    jsim_model_close(&med);
    assert_null(med.stages);
}

static void test_task_level_dag_by_hand(void **state)
{
    (void)state;
    /* a(5) -> b(3), a -> c(7), b, c -> d(2); every task its own stage. */
    struct fixture f = {0};
    f.job = jsim_job_new(4, 4);
    const double est[4] = {5, 3, 7, 2};
    for (int t = 0; t < 4; t++)
        assert_int_equal(jsim_job_set_task(f.job, t, t, est[t]), 0);
    assert_int_equal(jsim_job_add_edge(f.job, 0, 1), 0);
    assert_int_equal(jsim_job_add_edge(f.job, 0, 2), 0);
    assert_int_equal(jsim_job_add_edge(f.job, 1, 3), 0);
    assert_int_equal(jsim_job_add_edge(f.job, 2, 3), 0);
    assert_int_equal(jsim_job_add_edge(f.job, 0, 0), ERR_RANGE);
    assert_int_equal(jsim_job_finalize(f.job, NULL, 0), 0);
    assert_int_equal(jsim_job_add_edge(f.job, 0, 3), ERR_STATE);
    fixture_ready(&f, NULL, NULL);
    struct jsim_run_stats st;
    assert_true(fabs(makespan(&f, 1, &st) - 17) < 1e-9);
    assert_true(fabs(makespan(&f, 2, &st) - 14) < 1e-9); /* 5 + max(3, 7) + 2 */
    assert_true(fabs(jsim_job_critical_path(f.job) - 14) < 1e-9);
    /* Progress trace: vertexfrac-like weights (no profile, Q = 0): ends at 1. */
    double tt[4], pp[4];
    struct jsim_trace tr = {tt, pp, 0, 4};
    struct jsim_rng rng;
    jsim_rng_seed(&rng, 3);
    assert_int_equal(jsim_run(f.job, &f.model, 2, &f.pm, &rng, &tr, &st), 0);
    assert_int_equal(tr.n, 4);
    assert_true(fabs(tt[0] - 5) < 1e-9 && fabs(pp[0] - 5.0 / 17) < 1e-9);
    assert_true(fabs(tt[3] - 14) < 1e-9 && fabs(pp[3] - 1) < 1e-9);
    progress_close(&f.pm);
    jsim_model_close(&f.model);
    jsim_job_destroy(&f.job);
}

static void test_pass_through_stage_and_cycle(void **state)
{
    (void)state;
    /* A (2 x 4 s) -> B (no tasks) -> C (1 x 1 s). */
    struct fixture f = {0};
    f.job = jsim_job_new(3, 3);
    jsim_job_set_task(f.job, 0, 0, 4);
    jsim_job_set_task(f.job, 1, 0, 4);
    jsim_job_set_task(f.job, 2, 2, 1);
    jsim_job_add_barrier(f.job, 0, 1);
    jsim_job_add_barrier(f.job, 1, 2);
    assert_int_equal(jsim_job_finalize(f.job, NULL, 0), 0);
    assert_true(fabs(jsim_job_critical_path(f.job) - 5) < 1e-9);
    fixture_ready(&f, NULL, NULL);
    struct jsim_run_stats st;
    assert_true(fabs(makespan(&f, 2, &st) - 5) < 1e-9);
    assert_true(fabs(makespan(&f, 1, &st) - 9) < 1e-9);
    progress_close(&f.pm);
    jsim_model_close(&f.model);
    jsim_job_destroy(&f.job);

    jsim_job_t *j = jsim_job_new(1, 3);
    jsim_job_add_edge(j, 0, 1);
    jsim_job_add_edge(j, 1, 2);
    jsim_job_add_edge(j, 2, 1);
    char msg[128];
    assert_int_equal(jsim_job_finalize(j, msg, sizeof msg), ERR_INVAL);
    assert_non_null(strstr(msg, "cycle"));
    jsim_job_destroy(&j);

    /* Two stages waiting on each other. */
    j = jsim_job_new(2, 2);
    jsim_job_set_task(j, 1, 1, 1);
    jsim_job_add_barrier(j, 0, 1);
    jsim_job_add_barrier(j, 1, 0);
    assert_int_equal(jsim_job_finalize(j, msg, sizeof msg), ERR_INVAL);
    jsim_job_destroy(&j);
}

/* A profile whose stage "map" always runs 10 s and fails with probability `fail`. */
static void one_stage_profile(struct profile *p, int tasks, double fail)
{
    int nfail = (int)lround(fail / (1 - fail) * tasks);
    struct profile_attempt *a = test_calloc((size_t)(tasks + nfail), sizeof *a);
    for (int i = 0; i < tasks + nfail; i++)
        a[i] = (struct profile_attempt){.stage = 0, .init_s = 0, .run_s = 10, .ok = i < tasks};
    const char *names[1] = {"map"};
    profile_init(p);
    assert_int_equal(profile_build(p, "j", 1, names, a, (size_t)(tasks + nfail), NULL, 0), 0);
    test_free(a);
}

static void test_failures_from_profile(void **state)
{
    (void)state;
    struct profile prof;
    one_stage_profile(&prof, 100, 0.5);
    struct fixture f = {0};
    f.job = jsim_job_new(1, 2000);
    assert_int_equal(jsim_job_finalize(f.job, NULL, 0), 0);
    const char *names[1] = {"map"};
    fixture_ready(&f, &prof, names);
    assert_true(f.model.stages[0].from_profile);
    assert_true(fabs(f.model.stages[0].fail_prob - 0.5) < 1e-9);
    struct jsim_run_stats st;
    struct jsim_rng rng;
    jsim_rng_seed(&rng, 42);
    assert_int_equal(jsim_run(f.job, &f.model, 2000, &f.pm, &rng, NULL, &st), 0);
    /* Geometric attempts with p = 0.5 (capped at JSIM_MAX_ATTEMPTS): mean just under 2. */
    double per_task = (double)st.attempts / 2000;
    assert_true(per_task > 1.85 && per_task < 2.1);
    assert_int_equal(st.attempts - st.failures, 2000);
    /* Some task needed several 10 s attempts; none more than the cap. */
    assert_true(st.makespan > 20 && st.makespan <= 10.0 * JSIM_MAX_ATTEMPTS + 1e-9);
    progress_close(&f.pm);
    jsim_model_close(&f.model);
    jsim_job_destroy(&f.job);
    profile_close(&prof);
}

static void test_ratio_model_and_pooled_dispersion(void **state)
{
    (void)state;
    /* Profile: "map" tasks ran 2x their estimates (ratios 1.5..2.5 over 20 attempts), the
     * one-task "reduce" exactly 3x. */
    struct profile_attempt a[21];
    for (int i = 0; i < 20; i++)
        a[i] = (struct profile_attempt){
            .stage = 0, .run_s = 10 * (1.5 + i / 19.0), .est_s = 10, .ok = true};
    a[20] = (struct profile_attempt){.stage = 1, .run_s = 60, .est_s = 20, .ok = true};
    const char *names[2] = {"map", "reduce"};
    struct profile prof;
    profile_init(&prof);
    assert_int_equal(profile_build(&prof, "mr", 2, names, a, 21, NULL, 0), 0);
    struct fixture f = {0};
    f.job = jsim_job_new(2, 5);
    for (int t = 0; t < 4; t++)
        jsim_job_set_task(f.job, t, 0, 10);
    jsim_job_set_task(f.job, 4, 1, 20);
    jsim_job_add_barrier(f.job, 0, 1);
    assert_int_equal(jsim_job_finalize(f.job, NULL, 0), 0);
    fixture_ready(&f, &prof, names);
    const struct jsim_stage_model *map = &f.model.stages[0], *red = &f.model.stages[1];
    assert_true(map->by_ratio && red->by_ratio);
    assert_true(fabs(map->ratio_q[0] - 1.5) < 1e-9 &&
                fabs(map->ratio_q[PROFILE_NQ - 1] - 2.5) < 1e-9);
    /* The singleton keeps its median (3) but borrows map's spread, [1.5, 2.5] / 2 around 1,
     * scaled to its length: its 60 s task varies by sqrt(20 / 60) of what map's 20 s tasks do
     * (issue 22); 3 * (1 -+ 0.25 * sqrt(1/3)). */
    int mid = (PROFILE_NQ - 1) / 2;
    double b = sqrt(20.0 / 60.0);
    assert_true(fabs(red->ratio_q[mid] - 3) < 1e-9);
    assert_true(fabs(red->ratio_q[0] - 3 * (1 - 0.25 * b)) < 1e-9);
    assert_true(fabs(red->ratio_q[PROFILE_NQ - 1] - 3 * (1 + 0.25 * b)) < 1e-9);
    /* No failures anywhere: none are simulated. T_s follows estimates x mean ratio. */
    assert_true(map->fail_prob == 0 && red->fail_prob == 0);
    assert_true(fabs(map->runtime_total - 40 * 2) < 1e-6);
    /* With 4 tokens a run takes one map wave (15..25 s) plus the reduce (45..75 s). */
    struct jsim_run_stats st;
    for (int seed = 0; seed < 20; seed++) {
        struct jsim_rng rng;
        jsim_rng_seed(&rng, (uint64_t)seed);
        assert_int_equal(jsim_run(f.job, &f.model, 4, &f.pm, &rng, NULL, &st), 0);
        assert_true(st.makespan >= 15 + 45 - 1e-9 && st.makespan <= 25 + 75 + 1e-9);
    }
    progress_close(&f.pm);
    jsim_model_close(&f.model);
    jsim_job_destroy(&f.job);
    profile_close(&prof);
}

static void test_table_mapreduce(void **state)
{
    struct fixture *f = *state;
    struct jsim_table_config cfg;
    jsim_table_config_default(&cfg);
    cfg.runs = 4;
    cfg.buckets = 10;
    struct jsim_rng rng;
    jsim_rng_seed(&rng, 7);
    jsim_table_t *t = NULL;
    struct jsim_table_cost cost;
    char msg[128];
    assert_int_equal(
        jsim_table_build(f->job, &f->model, &f->pm, &cfg, &rng, &t, &cost, msg, sizeof msg), 0);
    assert_int_equal(cost.peak_parallelism, 4);
    assert_int_equal(jsim_table_nallocs(t), 4); /* 1, 2, 3, 4 */
    assert_int_equal(jsim_table_max_tokens(t), 4);
    double q[JSIM_NQ];
    /* At p = 0 with 4 tokens the job is somewhere in its first 10 s: 20 to 30 s remain. */
    assert_int_equal(jsim_table_predict(t, 0, 4, q), JSIM_NQ);
    for (int k = 0; k < JSIM_NQ; k++) {
        assert_true(q[k] >= 20 - 1e-6 && q[k] <= 30 + 1e-6);
        if (k > 0)
            assert_true(q[k] >= q[k - 1]);
    }
    /* With one token, before the first map finishes: 50 to 60 s remain. */
    jsim_table_predict(t, 0, 1, q);
    for (int k = 0; k < JSIM_NQ; k++)
        assert_true(q[k] >= 50 - 1e-6 && q[k] <= 60 + 1e-6);
    /* Once all maps are done (p = 40/60) only the reduce remains: at most 20 s. */
    jsim_table_predict(t, 0.7, 4, q);
    assert_true(q[JSIM_NQ - 1] <= 20 + 1e-6);
    /* More tokens never predict more remaining time; clamped beyond the grid. */
    double q2[JSIM_NQ], q8[JSIM_NQ];
    jsim_table_predict(t, 0.1, 2, q2);
    jsim_table_predict(t, 0.1, 8, q8);
    for (int k = 0; k < JSIM_NQ; k++)
        assert_true(q8[k] <= q2[k] + 1e-9);
    jsim_table_destroy(&t);
    assert_null(t);
}

static void test_table_large_job(void **state)
{
    (void)state;
    /* 10,000 tasks in three stages with barriers; runtimes from a noisy profile. */
    struct profile prof;
    struct profile_attempt a[200];
    for (int i = 0; i < 200; i++)
        a[i] = (struct profile_attempt){.stage = i % 3,
                                        .queue_s = 1,
                                        .init_s = 0.2,
                                        .run_s = 1 + (i * 37 % 19),
                                        .ok = i % 50 != 0};
    const char *names[3] = {"extract", "transform", "load"};
    profile_init(&prof);
    assert_int_equal(profile_build(&prof, "big", 3, names, a, 200, NULL, 0), 0);
    struct fixture f = {0};
    f.job = jsim_job_new(3, 10000);
    for (int t = 0; t < 10000; t++)
        jsim_job_set_task(f.job, t, t < 6000 ? 0 : t < 9900 ? 1 : 2, 5);
    jsim_job_add_barrier(f.job, 0, 1);
    jsim_job_add_barrier(f.job, 1, 2);
    assert_int_equal(jsim_job_finalize(f.job, NULL, 0), 0);
    fixture_ready(&f, &prof, names);
    struct jsim_table_config cfg;
    jsim_table_config_default(&cfg);
    cfg.runs = 2;
    cfg.nallocs = 12;
    cfg.max_tokens = 500;
    struct jsim_rng rng;
    jsim_rng_seed(&rng, 11);
    jsim_table_t *t = NULL;
    struct jsim_table_cost cost;
    assert_int_equal(jsim_table_build(f.job, &f.model, &f.pm, &cfg, &rng, &t, &cost, NULL, 0), 0);
    assert_int_equal(cost.nallocs, 12);
    assert_true(cost.task_attempts >= 10000L * 12 * 2);
    double lo[JSIM_NQ], hi[JSIM_NQ];
    jsim_table_predict(t, 0.0, 10, lo);
    jsim_table_predict(t, 0.0, 500, hi);
    assert_true(hi[JSIM_NQ / 2] < lo[JSIM_NQ / 2] / 5);
    jsim_table_destroy(&t);
    progress_close(&f.pm);
    jsim_model_close(&f.model);
    jsim_job_destroy(&f.job);
    profile_close(&prof);
}

static void test_from_spec(void **state)
{
    (void)state;
    /* extract (2 x 4 s) -> barrier -> join (1 x 3 s); "side" (5 s) feeds join by a task edge;
     * "orphan" has no stage (a stage of its own). */
    const char *text =
        "{\"version\":1,\"name\":\"j\",\"stages\":[{\"name\":\"join\",\"after\":[\"extract\"]}],"
        "\"tasks\":["
        "{\"id\":\"e0\",\"stage\":\"extract\",\"cmd\":[\"true\"],\"runtime_s\":4},"
        "{\"id\":\"e1\",\"stage\":\"extract\",\"cmd\":[\"true\"],\"runtime_s\":4},"
        "{\"id\":\"side\",\"stage\":\"side\",\"cmd\":[\"true\"],\"runtime_s\":5},"
        "{\"id\":\"j0\",\"stage\":\"join\",\"cmd\":[\"true\"],\"runtime_s\":3,"
        "\"after\":[\"side\"]},"
        "{\"id\":\"orphan\",\"cmd\":[\"true\"],\"runtime_s\":9}]}";
    struct spec *sp = NULL;
    char msg[256];
    assert_int_equal(spec_parse(text, strlen(text), NULL, &sp, msg, sizeof msg), 0);
    struct fixture f = {0};
    assert_int_equal(jsim_job_from_spec(sp, &f.job, msg, sizeof msg), 0);
    assert_int_equal(jsim_job_ntasks(f.job), 5);
    assert_int_equal(jsim_job_nstages(f.job), (int)sp->nstages);
    long e = spec_stage_index(sp, "extract"), jn = spec_stage_index(sp, "join");
    assert_int_equal(jsim_job_stage_size(f.job, (int)e), 2);
    assert_int_equal(jsim_job_task_stage(f.job, (int)spec_task_index(sp, "j0")), (int)jn);
    /* Critical path: max(extract 4, side 5) + join 3 = 8, against the orphan's 9. */
    assert_true(fabs(jsim_job_critical_path(f.job) - 9) < 1e-9);
    fixture_ready(&f, NULL, NULL);
    struct jsim_run_stats st;
    /* 3 tokens: e0, e1, side start at 0 (the orphan's 9 s path has the highest priority, so it
     * takes a token first and e1 or side waits). Unlimited: 9 s. */
    assert_true(fabs(makespan(&f, 10, &st) - 9) < 1e-9);
    assert_true(fabs(makespan(&f, 1, &st) - 25) < 1e-9);
    progress_close(&f.pm);
    jsim_model_close(&f.model);
    jsim_job_destroy(&f.job);

    /* The plan: without a profile, Amdahl from the estimates; with one, the table. */
    struct jsim_plan pl;
    controller_predict_fn *fn;
    void *ctx;
    assert_int_equal(jsim_plan_init(&pl, sp, NULL, PROGRESS_TOTALWORK_Q, msg, sizeof msg), 0);
    assert_false(pl.from_profile);
    jsim_plan_predictor(&pl, &fn, &ctx);
    assert_ptr_equal(fn, controller_predict_amdahl);
    assert_true(fabs(pl.amdahl.S0 - 9) < 1e-9); /* the orphan's 9 s */
    jsim_plan_close(&pl);

    struct profile_attempt att[5];
    for (int i = 0; i < 5; i++)
        att[i] = (struct profile_attempt){.stage = (int)sp->tasks[i].stage,
                                          .run_s = 2 * sp->tasks[i].runtime_s,
                                          .est_s = sp->tasks[i].runtime_s,
                                          .ok = true};
    const char *names[8];
    for (size_t k = 0; k < sp->nstages; k++)
        names[k] = sp->stages[k].name;
    struct profile prof;
    profile_init(&prof);
    assert_int_equal(profile_build(&prof, "j", (int)sp->nstages, names, att, 5, NULL, 0), 0);
    assert_int_equal(jsim_plan_init(&pl, sp, &prof, PROGRESS_TOTALWORK_Q, msg, sizeof msg), 0);
    assert_true(pl.from_profile);
    /* Every task ran twice its estimate: that is what the plan now expects of each. */
    for (size_t t = 0; t < sp->ntasks; t++)
        assert_true(fabs(jsim_plan_task_expected(&pl, sp, t) - 2 * sp->tasks[t].runtime_s) < 1e-9);
    assert_true(jsim_plan_task_expected(&pl, sp, sp->ntasks) == 0);
    struct jsim_rng rng;
    jsim_rng_seed(&rng, 9);
    struct jsim_table_config cfg;
    jsim_table_config_default(&cfg);
    cfg.runs = 2;
    assert_int_equal(jsim_plan_build_table(&pl, &cfg, &rng, msg, sizeof msg), 0);
    jsim_plan_predictor(&pl, &fn, &ctx);
    assert_ptr_equal(fn, controller_predict_table);
    /* Every task runs twice its estimate: unlimited tokens finish in 18 s. */
    double q[JSIM_NQ];
    jsim_table_predict(pl.table, 0, 10, q);
    assert_true(fabs(q[JSIM_NQ - 1] - 18) < 0.5);
    jsim_plan_close(&pl);
    jsim_plan_close(&pl); /* closing twice is harmless */
    profile_close(&prof);
    spec_destroy(&sp);
}

static void test_plan_under_allocation_failure(void **state)
{
    (void)state;
    const char *text =
        "{\"version\":1,\"name\":\"j\",\"stages\":[{\"name\":\"b\",\"after\":[\"a\"]}],"
        "\"tasks\":[{\"id\":\"a0\",\"stage\":\"a\",\"cmd\":[\"true\"],\"runtime_s\":2},"
        "{\"id\":\"a1\",\"stage\":\"a\",\"cmd\":[\"true\"],\"runtime_s\":3},"
        "{\"id\":\"b0\",\"stage\":\"b\",\"cmd\":[\"true\"],\"runtime_s\":1}]}";
    struct spec *sp = NULL;
    assert_int_equal(spec_parse(text, strlen(text), NULL, &sp, NULL, 0), 0);
    struct jsim_table_config cfg;
    jsim_table_config_default(&cfg);
    cfg.runs = 2;
    cfg.buckets = 5;
    int ok = 0;
    for (long n = 0; n < 400 && !ok; n++) {
        struct jsim_plan pl;
        struct jsim_rng rng;
        jsim_rng_seed(&rng, 1);
        mem_fail_after(n);
        int rc = jsim_plan_init(&pl, sp, NULL, PROGRESS_TOTALWORK_Q, NULL, 0);
        if (rc == 0)
            rc = jsim_plan_build_table(&pl, &cfg, &rng, NULL, 0);
        mem_fail_reset();
        if (rc == 0)
            ok = 1;
        else
            assert_int_equal(rc, ERR_NOMEM);
        jsim_plan_close(&pl); /* safe after a failed init too; ASan checks nothing leaks */
    }
    assert_true(ok);
    spec_destroy(&sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mapreduce_by_hand, setup_mapreduce, teardown),
        cmocka_unit_test_setup_teardown(test_mapreduce_sized, setup_mapreduce, teardown),
        cmocka_unit_test_setup_teardown(test_rest_of_a_run, setup_mapreduce, teardown),
        cmocka_unit_test_setup_teardown(test_median_initialization, setup_mapreduce, teardown),
        cmocka_unit_test(test_task_level_dag_by_hand),
        cmocka_unit_test(test_pass_through_stage_and_cycle),
        cmocka_unit_test(test_failures_from_profile),
        cmocka_unit_test(test_ratio_model_and_pooled_dispersion),
        cmocka_unit_test_setup_teardown(test_table_mapreduce, setup_mapreduce, teardown),
        cmocka_unit_test(test_table_large_job),
        cmocka_unit_test(test_from_spec),
        cmocka_unit_test(test_plan_under_allocation_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
