/* test_cluster.c - small `paddock-sim cluster` runs: every task finishes (with failures, stragglers
 * and node loss), the same seed gives the same run, estimation balances queues, and imported
 * WfCommons workloads run. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "common/mem.h"
#include "jm/spec.h"
#include "tools/sim/cluster.h"

struct jobs {
    struct spec *specs[64];
    struct cluster_job jobs[64];
    size_t n, tasks;
};

static void make_jobs(struct jobs *j, const struct cluster_workloads *wl, size_t n,
                      const struct cluster_config *cfg, double gap)
{
    char msg[256];
    j->n = n;
    j->tasks = 0;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(cluster_workloads_make(wl, i, cfg->seed, cfg->nodes, cfg->rack_size,
                                                &j->specs[i], msg, sizeof msg),
                         0);
        j->jobs[i].spec = j->specs[i];
        j->jobs[i].arrival_s = gap * (double)i;
        j->jobs[i].jockey = NULL;
        j->jobs[i].run_s = NULL;
        j->tasks += j->specs[i]->ntasks;
    }
}

static void free_jobs(struct jobs *j)
{
    for (size_t i = 0; i < j->n; i++)
        spec_destroy(&j->specs[i]);
}

static void small_config(struct cluster_config *cfg)
{
    cluster_config_default(cfg);
    cfg->nodes = 60;
    cfg->rack_size = 10;
    cfg->tokens = 20;
    cfg->bg_util = 0.4;
    cfg->noise.fail_prob = 0.02;
    cfg->noise.straggler_prob = 0.02;
}

static void test_all_tasks_finish(void **state)
{
    (void)state;
    struct cluster_config cfg;
    small_config(&cfg);
    cfg.noise.node_mtbf_s = 400; /* 60 nodes: several losses over the run */
    cfg.noise.node_down_s = 30;
    struct cluster_workloads *wl = NULL;
    assert_int_equal(cluster_workloads_synthetic(4, 7, &wl), 0);
    struct jobs j;
    make_jobs(&j, wl, 6, &cfg, 1.0);
    struct cluster_result r;
    char msg[256] = "";
    int rc = cluster_run(&cfg, j.jobs, j.n, &r, msg, sizeof msg);
    if (rc != 0)
        print_error("%s\n", msg);
    assert_int_equal(rc, 0);
    assert_int_equal(r.jobs_done, 6);
    assert_int_equal(r.jobs_failed, 0);
    assert_int_equal(r.tasks, j.tasks);
    assert_true(r.attempts >= j.tasks);
    assert_true(r.failures > 0);    /* the failure model was active */
    assert_true(r.node_losses > 0); /* and node loss */
    assert_true(r.attempts >= r.tasks + r.failures);
    assert_true(r.nqtimes >= j.tasks);
    for (size_t i = 1; i < r.nqtimes; i++)
        assert_true(r.qtimes[i - 1] <= r.qtimes[i] && r.qtimes[0] >= 0);
    assert_true(r.util > 0 && r.util < 1.0);
    assert_true(r.util_jobs > 0 && r.util_jobs < r.util);
    assert_true(r.sim_time_s > 0 && r.decisions == r.attempts);
    mem_free(r.qtimes);
    free_jobs(&j);
    cluster_workloads_destroy(&wl);
}

static void test_same_seed_same_run(void **state)
{
    (void)state;
    struct cluster_config cfg;
    small_config(&cfg);
    cfg.noise.node_mtbf_s = 600;
    struct cluster_workloads *wl = NULL;
    assert_int_equal(cluster_workloads_synthetic(3, 11, &wl), 0);
    struct jobs j;
    make_jobs(&j, wl, 4, &cfg, 0.5);
    struct cluster_result a, b, c;
    char msg[256];
    assert_int_equal(cluster_run(&cfg, j.jobs, j.n, &a, msg, sizeof msg), 0);
    assert_int_equal(cluster_run(&cfg, j.jobs, j.n, &b, msg, sizeof msg), 0);
    assert_int_equal(a.events, b.events);
    assert_int_equal(a.decisions, b.decisions);
    assert_int_equal(a.preemptions, b.preemptions);
    assert_true(a.sim_time_s == b.sim_time_s);
    assert_true(a.q_stdev_machines == b.q_stdev_machines);
    assert_true(a.util == b.util);
    assert_int_equal(a.nqtimes, b.nqtimes);
    assert_memory_equal(a.qtimes, b.qtimes, a.nqtimes * sizeof *a.qtimes);
    cfg.seed = 2; /* another seed: another run (noise, arrivals at nodes, picks) */
    assert_int_equal(cluster_run(&cfg, j.jobs, j.n, &c, msg, sizeof msg), 0);
    assert_true(c.events != a.events || c.sim_time_s != a.sim_time_s);
    mem_free(a.qtimes);
    mem_free(b.qtimes);
    mem_free(c.qtimes);
    free_jobs(&j);
    cluster_workloads_destroy(&wl);
}

/* Apollo Figure 11: with the wait-time matrices, queues are more balanced across machines and
 * tasks wait less than when placement ignores them. */
static void test_estimation_balances(void **state)
{
    (void)state;
    struct cluster_config cfg;
    small_config(&cfg);
    cfg.nodes = 100;
    cfg.bg_util = 0.6;
    struct cluster_workloads *wl = NULL;
    assert_int_equal(cluster_workloads_synthetic(4, 3, &wl), 0);
    struct jobs j;
    make_jobs(&j, wl, 8, &cfg, 0.5);
    struct cluster_result with, without;
    char msg[256];
    assert_int_equal(cluster_run(&cfg, j.jobs, j.n, &with, msg, sizeof msg), 0);
    cfg.estimation = 0;
    assert_int_equal(cluster_run(&cfg, j.jobs, j.n, &without, msg, sizeof msg), 0);
    assert_int_equal(with.jobs_done, 8);
    assert_int_equal(without.jobs_done, 8);
    assert_true(with.q_mean < without.q_mean);
    assert_true(with.q_stdev_machines < without.q_stdev_machines);
    mem_free(with.qtimes);
    mem_free(without.qtimes);
    free_jobs(&j);
    cluster_workloads_destroy(&wl);
}

static void test_bad_config(void **state)
{
    (void)state;
    struct cluster_config cfg;
    small_config(&cfg);
    struct cluster_result r;
    char msg[256] = "";
    struct cluster_job none = {.spec = NULL, .arrival_s = 0};
    assert_true(cluster_run(&cfg, &none, 1, &r, msg, sizeof msg) < 0);
    cfg.rm_delay_s = cfg.heartbeat_s; /* the view must arrive before the next heartbeat */
    assert_true(cluster_run(&cfg, &none, 1, &r, msg, sizeof msg) < 0);
    assert_true(msg[0] != '\0');
}

/* The shared WfCommons instances, imported in-process, run to completion on a small cluster. */
static void test_wfcommons_workloads(void **state)
{
    (void)state;
    const char *src = getenv("PADDOCK_SOURCE_DIR");
    char dir[4096];
    struct stat st;
    /* the instances in the repository (tests/data), else the shared copy beside it */
    snprintf(dir, sizeof dir, "%s/tests/data/wfcommons", src ? src : ".");
    if (src != NULL && stat(dir, &st) != 0)
        snprintf(dir, sizeof dir, "%s/../shared/workloads/wfcommons", src);
    if (src == NULL || stat(dir, &st) != 0) {
        skip();
        return;
    }
    struct cluster_config cfg;
    small_config(&cfg);
    cfg.nodes = 200;
    cfg.rack_size = 20;
    struct cluster_workloads *wl = NULL;
    char msg[256] = "";
    int rc = cluster_workloads_load(dir, 0.02, cfg.node_cpus / 2, 16384, &wl, msg, sizeof msg);
    if (rc != 0)
        print_error("%s\n", msg);
    assert_int_equal(rc, 0);
    assert_true(cluster_workloads_count(wl) >= 2);
    struct jobs j;
    make_jobs(&j, wl, cluster_workloads_count(wl) < 12 ? cluster_workloads_count(wl) : 12, &cfg,
              1.0);
    struct cluster_result r;
    assert_int_equal(cluster_run(&cfg, j.jobs, j.n, &r, msg, sizeof msg), 0);
    assert_int_equal(r.jobs_done + r.jobs_failed, j.n);
    assert_int_equal(r.jobs_failed, 0);
    assert_int_equal(r.tasks, j.tasks);
    mem_free(r.qtimes);
    free_jobs(&j);
    cluster_workloads_destroy(&wl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_tasks_finish),    cmocka_unit_test(test_same_seed_same_run),
        cmocka_unit_test(test_estimation_balances), cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_wfcommons_workloads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
