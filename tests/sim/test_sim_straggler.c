/* test_sim_straggler.c - a second attempt per task on the cluster simulator (issue 23;
 * tools/sim/cluster_straggler.c): with one node eight times slower than the rest, a job finishes
 * sooner when its JM starts speculative copies (jm/speculate.h's rule, as the daemon's tick
 * applies it) than without, and most copies win; tasks that say "speculate": false get no copy
 * and run exactly as without speculation; a copy is started only when jm/attempt.h's gate finds
 * a free token unit or room in the opportunistic allowance. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/mem.h"
#include "jm/spec.h"
#include "jm/speculate.h"
#include "tools/sim/cluster.h"

#define SEEDS 4

/* 32 tasks of 10 s in stage a, then 8 of 10 s in stage b: on 8 nodes of 4 cores, one round per
 * stage when nothing is slow; a task on the slow node takes 80 s. */
static struct spec *make_spec(int speculate)
{
    char buf[16384];
    size_t n = 0;
    const char *flag = speculate ? "" : ",\"speculate\":false";
    n += (size_t)snprintf(buf + n, sizeof buf - n,
                          "{\"version\":1,\"name\":\"slow\",\"stages\":[{\"name\":\"a\"},"
                          "{\"name\":\"b\",\"after\":[\"a\"]}],\"tasks\":[");
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n,
                              "%s{\"id\":\"t%d\",\"stage\":\"%s\",\"cmd\":[\"/bin/true\"],"
                              "\"runtime_s\":10%s}",
                              i ? "," : "", i, i < 32 ? "a" : "b", flag);
    n += (size_t)snprintf(buf + n, sizeof buf - n, "]}");
    struct spec *s = NULL;
    char msg[256] = "";
    int rc = spec_parse(buf, n, NULL, &s, msg, sizeof msg);
    if (rc != 0)
        print_error("%s\n", msg);
    assert_int_equal(rc, 0);
    return s;
}

/* jm/speculate.h's defaults but for the caps: a copy for each of the slow node's four tasks
 * (the defaults allow 4 copies in all to a 40-task job, 1 in flight to a stage of 8). */
static struct speculate_config spec_cfg;

static void config(struct cluster_config *cfg, uint64_t seed, int speculate)
{
    speculate_config_default(&spec_cfg);
    spec_cfg.job_cap_frac = spec_cfg.job_total_frac = spec_cfg.stage_cap_frac = 0.5;
    cluster_config_default(cfg);
    cfg->nodes = 8;
    cfg->rack_size = 8;
    cfg->node_cpus = 4;
    cfg->tokens = 32;
    cfg->bg_util = 0.1;
    cfg->bg_runtime_s = 10;
    cfg->seed = seed;
    cfg->no_io = 1;
    engine_noise_none(&cfg->noise);
    cfg->noise.runtime_sigma = 0.1;
    cfg->noise.slow_nodes = 1;
    cfg->noise.slow_factor = 8;
    cfg->speculate = speculate;
    cfg->spec_cfg = &spec_cfg;
}

static void run(const struct cluster_config *cfg, const struct spec *s, struct cluster_result *r)
{
    struct cluster_job job = {.spec = s, .arrival_s = 5};
    char msg[256] = "";
    int rc = cluster_run(cfg, &job, 1, r, msg, sizeof msg);
    if (rc != 0)
        print_error("%s\n", msg);
    assert_int_equal(rc, 0);
    assert_int_equal(r->jobs_done, 1);
    assert_int_equal(r->tasks, 40);
    assert_true(r->useful_cpu_s > 0 && r->work_cpu_s >= r->useful_cpu_s - 1e-6);
}

static void done(struct cluster_result *r)
{
    mem_free(r->qtimes);
    mem_free(r->trace);
    mem_free(r->job_stats);
}

static void test_slow_node_sooner_with_copies(void **state)
{
    (void)state;
    struct spec *s = make_spec(1);
    double without = 0, with = 0;
    uint64_t started = 0, won = 0;
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        struct cluster_config cfg;
        struct cluster_result r;
        config(&cfg, seed, 0);
        run(&cfg, s, &r);
        assert_int_equal(r.copies_started, 0);
        without += r.makespan_mean_s;
        done(&r);
        config(&cfg, seed, 1);
        run(&cfg, s, &r);
        with += r.makespan_mean_s;
        started += r.copies_started;
        won += r.copies_won;
        assert_true(r.copies_won <= r.copies_started);
        /* the losers ran too: more work than the winners' */
        if (r.copies_started > 0)
            assert_true(r.work_cpu_s > r.useful_cpu_s);
        done(&r);
    }
    printf("mean makespan without copies %.1f s, with %.1f s; %lu copies, %lu won\n",
           without / SEEDS, with / SEEDS, (unsigned long)started, (unsigned long)won);
    assert_true(with < 0.8 * without);
    assert_true(started > 0 && 2 * won >= started);
    spec_destroy(&s);
}

static void test_speculate_false_no_copies(void **state)
{
    (void)state;
    struct spec *s = make_spec(0);
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        struct cluster_config cfg;
        struct cluster_result off, on;
        config(&cfg, seed, 0);
        run(&cfg, s, &off);
        config(&cfg, seed, 1);
        run(&cfg, s, &on);
        assert_int_equal(on.copies_started, 0);
        assert_int_equal(on.copies_gated, 0); /* forbidden before any capacity is looked at */
        /* the same run as without speculation, to the event */
        assert_true(on.makespan_mean_s == off.makespan_mean_s);
        assert_int_equal(on.attempts, off.attempts);
        done(&off);
        done(&on);
    }
    spec_destroy(&s);
}

static void test_copy_needs_a_free_unit(void **state)
{
    (void)state;
    struct spec *s = make_spec(1);
    uint64_t gated = 0;
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        struct cluster_config cfg;
        struct cluster_result r;
        /* one token and no allowance: the task in flight always holds the only unit */
        config(&cfg, seed, 1);
        cfg.tokens = 1;
        cfg.opp_factor = 0;
        run(&cfg, s, &r);
        assert_int_equal(r.copies_started, 0);
        gated += r.copies_gated;
        done(&r);
    }
    /* the rule wanted copies of the tasks on the slow node; the gate held them back */
    assert_true(gated > 0);
    spec_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slow_node_sooner_with_copies),
        cmocka_unit_test(test_speculate_false_no_copies),
        cmocka_unit_test(test_copy_needs_a_free_unit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
