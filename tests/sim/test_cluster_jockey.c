/* Jockey's controller in the cluster simulator's JM (tools/sim/cluster_jockey.c): on a loaded
 * cluster with run-time noise and failures, the controller meets the deadline where a fixed
 * minimal allocation cannot, holds far fewer token-seconds than the max allocation, and moves
 * its grant over the run (raised or lowered as the work narrows), through the daemon's own
 * jm/controller, jm/progress and jm/jsim plan. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/mem.h"
#include "jm/jsim.h"
#include "jm/spec.h"
#include "tools/sim/cluster.h"

#define RUNS       10
#define DEADLINE_S 300.0
#define MAX_TOKENS 40

/* 40 maps of 20 s, 10 reduces of 30 s after them, one 10 s merge: 1,110 s of work, about 60 s
 * with every task at once, 1,110 s on one token. */
static struct spec *make_spec(void)
{
    char buf[16384];
    size_t n = 0;
    n += (size_t)snprintf(buf + n, sizeof buf - n,
                          "{\"version\":1,\"name\":\"mr\",\"stages\":[{\"name\":\"map\"},"
                          "{\"name\":\"reduce\",\"after\":[\"map\"]},"
                          "{\"name\":\"merge\",\"after\":[\"reduce\"]}],\"tasks\":[");
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n,
                              "{\"id\":\"m%d\",\"stage\":\"map\",\"cmd\":[\"/bin/true\"],"
                              "\"runtime_s\":20},",
                              i);
    for (int i = 0; i < 10; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n,
                              "{\"id\":\"r%d\",\"stage\":\"reduce\",\"cmd\":[\"/bin/true\"],"
                              "\"runtime_s\":30},",
                              i);
    n += (size_t)snprintf(buf + n, sizeof buf - n,
                          "{\"id\":\"z\",\"stage\":\"merge\",\"cmd\":[\"/bin/true\"],"
                          "\"runtime_s\":10}]}");
    struct spec *s = NULL;
    char msg[256] = "";
    int rc = spec_parse(buf, n, NULL, &s, msg, sizeof msg);
    if (rc != 0)
        print_error("%s\n", msg);
    assert_int_equal(rc, 0);
    return s;
}

static void config(struct cluster_config *cfg, uint64_t seed)
{
    cluster_config_default(cfg);
    cfg->nodes = 10; /* 80 cores, half of them other tenants' on average */
    cfg->rack_size = 10;
    cfg->bg_util = 0.5;
    cfg->seed = seed;
    cfg->no_io = 1;
    cfg->noise.runtime_sigma = 0.25;
    cfg->noise.tail_prob = 0;
    cfg->noise.fail_prob = 0.02;
    cfg->noise.phase_s = DEADLINE_S / 6;
}

struct tally {
    int met;
    double token_s; /* sum over runs of mean tokens x makespan */
    int moved;      /* runs whose grant changed after the first decision */
    int peak;
};

static void run_policy(const struct spec *s, const struct jsim_plan *plan, int policy, int fixed,
                       struct tally *t)
{
    memset(t, 0, sizeof *t);
    for (uint64_t seed = 1; seed <= RUNS; seed++) {
        struct cluster_config cfg;
        config(&cfg, seed);
        struct cluster_jockey jk = {.policy = policy,
                                    .fixed_tokens = fixed,
                                    .plan = plan,
                                    .deadline_s = DEADLINE_S,
                                    .max_tokens = MAX_TOKENS,
                                    .speed = 1};
        struct cluster_job job = {.spec = s, .arrival_s = 0, .jockey = &jk};
        struct cluster_result r;
        char msg[256] = "";
        int rc = cluster_run(&cfg, &job, 1, &r, msg, sizeof msg);
        if (rc != 0)
            print_error("%s\n", msg);
        assert_int_equal(rc, 0);
        assert_non_null(r.job_stats);
        const struct cluster_job_stat *st = &r.job_stats[0];
        assert_true(st->done);
        assert_true(st->work_s > 1000 && st->work_s < 1300); /* noise has mean 1 */
        t->met += st->makespan_s <= DEADLINE_S;
        t->token_s += st->alloc_mean * st->makespan_s;
        t->moved += st->peak_tokens != st->first_tokens || st->downgrades > 0 ||
                    st->alloc_mean < st->first_tokens - 0.5;
        if (st->peak_tokens > t->peak)
            t->peak = st->peak_tokens;
        mem_free(r.qtimes);
        mem_free(r.trace);
        mem_free(r.job_stats);
    }
}

/* The daemon's plan without a profile (the spec's estimates, Amdahl's predictor). */
static void test_controller_without_profile(void **state)
{
    (void)state;
    struct spec *s = make_spec();
    struct tally ctl, one, max;
    run_policy(s, NULL, CLUSTER_JOCKEY_CONTROL, 0, &ctl);
    run_policy(s, NULL, CLUSTER_JOCKEY_FIXED, 1, &one);
    run_policy(s, NULL, CLUSTER_JOCKEY_FIXED, MAX_TOKENS, &max);
    print_message("controller met %d/%d, %.0f token-s; 1 token met %d; max met %d, %.0f token-s\n",
                  ctl.met, RUNS, ctl.token_s / RUNS, one.met, max.met, max.token_s / RUNS);
    assert_true(ctl.met >= RUNS - 1);
    assert_int_equal(one.met, 0); /* 1,110 s of work on one token (and its one opportunistic) */
    assert_int_equal(max.met, RUNS);
    assert_true(ctl.token_s < 0.4 * max.token_s);
    assert_true(ctl.peak < MAX_TOKENS);
    spec_destroy(&s);
}

/* C(p, a) from the job simulator, as the JM builds it; the grant moves over the run. */
static void test_controller_with_table(void **state)
{
    (void)state;
    struct spec *s = make_spec();
    struct jsim_plan plan;
    char msg[256] = "";
    assert_int_equal(jsim_plan_init(&plan, s, NULL, PROGRESS_TOTALWORK_Q, msg, sizeof msg), 0);
    struct jsim_table_config tc;
    jsim_table_config_default(&tc);
    tc.max_tokens = MAX_TOKENS;
    struct jsim_rng rng;
    jsim_rng_seed(&rng, 7);
    assert_int_equal(jsim_plan_build_table(&plan, &tc, &rng, msg, sizeof msg), 0);
    struct tally ctl, noad, one, max;
    run_policy(s, &plan, CLUSTER_JOCKEY_CONTROL, 0, &ctl);
    run_policy(s, &plan, CLUSTER_JOCKEY_NOADAPT, 0, &noad);
    run_policy(s, &plan, CLUSTER_JOCKEY_FIXED, 1, &one);
    run_policy(s, &plan, CLUSTER_JOCKEY_FIXED, MAX_TOKENS, &max);
    print_message("controller met %d/%d, %.0f token-s, grant moved in %d runs; noadapt met %d, "
                  "%.0f token-s; max %.0f token-s\n",
                  ctl.met, RUNS, ctl.token_s / RUNS, ctl.moved, noad.met, noad.token_s / RUNS,
                  max.token_s / RUNS);
    assert_true(ctl.met >= RUNS - 1);
    assert_true(ctl.met > one.met);
    assert_int_equal(one.met, 0);
    assert_true(ctl.token_s < 0.4 * max.token_s);
    assert_true(ctl.moved >= RUNS / 2); /* the grant changes during the run */
    assert_int_equal(noad.moved, 0);    /* the first decision, kept */
    jsim_plan_close(&plan);
    spec_destroy(&s);
}

/* A bad Jockey setting is refused, not run. */
static void test_bad_jockey(void **state)
{
    (void)state;
    struct spec *s = make_spec();
    struct cluster_config cfg;
    config(&cfg, 1);
    struct cluster_jockey jk = {
        .policy = CLUSTER_JOCKEY_CONTROL, .deadline_s = 0, .max_tokens = MAX_TOKENS};
    struct cluster_job job = {.spec = s, .arrival_s = 0, .jockey = &jk};
    struct cluster_result r;
    char msg[256] = "";
    assert_true(cluster_run(&cfg, &job, 1, &r, msg, sizeof msg) < 0);
    assert_non_null(strstr(msg, "Jockey"));
    jk.deadline_s = 100;
    jk.policy = CLUSTER_JOCKEY_FIXED; /* without fixed_tokens */
    assert_true(cluster_run(&cfg, &job, 1, &r, msg, sizeof msg) < 0);
    spec_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_controller_without_profile),
        cmocka_unit_test(test_controller_with_table),
        cmocka_unit_test(test_bad_jockey),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
