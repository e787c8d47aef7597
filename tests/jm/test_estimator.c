/* test_estimator.c - E = I + W + R and C (Apollo §3.3): Figure 4's numbers, a remote idle node
 * preferred over a busy local one, staleness, refinement, Psucc/Kfail, the random term. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>

#include <cmocka.h>

#include "common/err.h"
#include "jm/estimator.h"
#include "jm/view.h"
#include "jm_fixture.h"

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-6)

/* Figure 4: racks {A,B} and {C,D}; A and B idle, C waits 40 s, D 5 s; inputs 100 MB on A and
 * 5 GB on C; I/O-dominated. The paper's table: Wait+I/O = 63.13, 63.5, 72.5, 56.25 s: D wins. */
static void test_figure4(void **state)
{
    (void)state;
    view_t *v = NULL;
    assert_int_equal(view_new(&v), 0);
    uint32_t A = fx_node(v, "A", "r1", 0, 1, 0), B = fx_node(v, "B", "r1", 0, 1, 0);
    uint32_t C = fx_node(v, "C", "r2", 40, 1, 0), D = fx_node(v, "D", "r2", 5, 1, 0);
    estimator_t *est = NULL;
    struct estimator_config cfg;
    estimator_config_default(&cfg);
    cfg.kfail = 1.0; /* no failure history effect: compare E directly */
    assert_int_equal(estimator_new(&cfg, 1, &est), 0);
    int32_t onA[1] = {(int32_t)A}, onC[1] = {(int32_t)C};
    struct estimator_input in[2] = {{100000000ull, onA, 1}, {5000000000ull, onC, 1}};
    struct estimator_task t = {.stage = SIZE_MAX,
                               .cpu = 1,
                               .mem_mb = 1024,
                               .runtime_s = 0,
                               .input_bytes = 5100000000ull,
                               .inputs = in,
                               .ninputs = 2};
    struct estimate e;
    double want[4] = {63.125, 63.5, 72.5, 56.25};
    uint32_t nodes[4] = {A, B, C, D};
    double best = ESTIMATOR_INF;
    uint32_t best_node = 99;
    for (int i = 0; i < 4; i++) {
        estimator_estimate(est, v, &t, nodes[i], 0, 0.0, &e);
        NEAR(e.e_s, want[i]);
        NEAR(e.w_s + e.io_s, want[i]);
        if (e.c_s < best) {
            best = e.c_s;
            best_node = nodes[i];
        }
    }
    assert_int_equal(best_node, D);
    estimator_destroy(&est);
    view_destroy(&v);
}

/* A busy node holding the whole input against an idle node in another rack. */
static void test_remote_idle_beats_busy_local(void **state)
{
    (void)state;
    view_t *v = NULL;
    assert_int_equal(view_new(&v), 0);
    uint32_t local = fx_node(v, "local", "r1", 30, 1, 0);
    uint32_t remote = fx_node(v, "remote", "r2", 0, 1, 0);
    estimator_t *est = NULL;
    assert_int_equal(estimator_new(NULL, 1, &est), 0);
    int32_t on[1] = {(int32_t)local};
    struct estimator_input in = {1600000000ull, on, 1}; /* 10 s local, 20 s remote */
    struct estimator_task t = {.stage = SIZE_MAX,
                               .cpu = 1,
                               .mem_mb = 512,
                               .runtime_s = 5,
                               .input_bytes = in.bytes,
                               .inputs = &in,
                               .ninputs = 1};
    struct estimate el, er;
    double cl = estimator_estimate(est, v, &t, local, 0, 0, &el);
    double cr = estimator_estimate(est, v, &t, remote, 0, 0, &er);
    NEAR(el.e_s, 30 + 5 + 10);
    NEAR(er.e_s, 0 + 5 + 20);
    assert_true(cr < cl);
    /* with a short queue the local node wins again */
    fx_node(v, "local", "r1", 2, 2, 0);
    cl = estimator_estimate(est, v, &t, local, 0, 0, &el);
    assert_true(cl < cr);
    estimator_destroy(&est);
    view_destroy(&v);
}

/* Each input is read from its best replica: local beats same rack beats another rack, unknown
 * replica nodes count as another rack, and inputs add up. */
static void test_best_replica_per_input(void **state)
{
    (void)state;
    view_t *v = NULL;
    assert_int_equal(view_new(&v), 0);
    uint32_t a = fx_node(v, "a", "r1", 0, 1, 0), b = fx_node(v, "b", "r1", 0, 1, 0);
    uint32_t c = fx_node(v, "c", "r2", 0, 1, 0);
    estimator_t *est = NULL;
    assert_int_equal(estimator_new(NULL, 1, &est), 0);
    int32_t reps[3] = {(int32_t)c, -1, (int32_t)b}; /* other rack, unknown, same rack as a */
    int32_t onc[1] = {(int32_t)c};
    struct estimator_input in[2] = {{400000000ull, reps, 3}, {160000000ull, onc, 1}};
    struct estimator_task t = {.stage = SIZE_MAX,
                               .cpu = 1,
                               .mem_mb = 1,
                               .runtime_s = 0,
                               .input_bytes = 560000000ull,
                               .inputs = in,
                               .ninputs = 2};
    struct estimate e;
    estimator_estimate(est, v, &t, a, 0, 0, &e);
    NEAR(e.io_s, 4.0 + 2.0); /* 400 MB at 100 MB/s from b, 160 MB at 80 MB/s from c */
    estimator_estimate(est, v, &t, c, 0, 0, &e);
    NEAR(e.io_s, 2.5 + 1.0); /* both local */
    estimator_estimate(est, v, &t, b, 0, 0, &e);
    NEAR(e.io_s, 2.5 + 2.0); /* first local, second from another rack */
    estimator_destroy(&est);
    view_destroy(&v);
}

static void test_stale_matrix_is_pessimistic(void **state)
{
    (void)state;
    view_t *v = NULL;
    assert_int_equal(view_new(&v), 0);
    double cpu_bins[3] = {1, 2, 4}, mem_bins[3] = {1024, 2048, 4096};
    double cells[9] = {0, 1, 2, /**/ 1, 3, 5, /**/ 2, 5, -1};
    struct view_entry en = {.name = "n",
                            .rack = "r",
                            .cpu = 4,
                            .mem_mb = 4096,
                            .up = 1,
                            .boot_id = 7,
                            .seq = 1,
                            .ncpu = 3,
                            .nmem = 3,
                            .cpu_bins = cpu_bins,
                            .mem_bins_mb = mem_bins,
                            .wait_s = cells};
    assert_int_equal(view_update(v, &en, 1000), 1);
    estimator_t *est = NULL;
    struct estimator_config cfg;
    estimator_config_default(&cfg);
    cfg.kfail = 1;
    cfg.stale_after_ms = 1000;
    cfg.stale_max_steps = 2;
    assert_int_equal(estimator_new(&cfg, 1, &est), 0);
    struct estimator_task t = {.stage = SIZE_MAX, .cpu = 1, .mem_mb = 1000, .runtime_s = 1};
    struct estimate e;
    estimator_estimate(est, v, &t, 0, 1500, 0, &e); /* fresh: cell (0,0) */
    NEAR(e.w_s, 0);
    estimator_estimate(est, v, &t, 0, 2000, 0, &e); /* one step: cell (1,1) */
    NEAR(e.w_s, 3);
    estimator_estimate(est, v, &t, 0, 9000, 0, &e); /* two steps: (2,2) is NEVER -> (1,1) */
    NEAR(e.w_s, 3);
    assert_int_equal(estimator_stale_steps(est, 999), 0);
    assert_int_equal(estimator_stale_steps(est, 2500), 2);
    assert_int_equal(estimator_stale_steps(est, 100000), 2);
    /* a request larger than the node cannot be placed */
    struct estimator_task big = {.stage = SIZE_MAX, .cpu = 8, .mem_mb = 100, .runtime_s = 1};
    assert_true(estimator_estimate(est, v, &big, 0, 1500, 0, &e) >= ESTIMATOR_INF);
    /* a request in the NEVER cell is impossible even fresh */
    struct estimator_task never = {.stage = SIZE_MAX, .cpu = 3, .mem_mb = 3000, .runtime_s = 1};
    assert_true(estimator_estimate(est, v, &never, 0, 1500, 0, &e) >= ESTIMATOR_INF);
    /* a down node is impossible */
    view_set_up(v, 0, 0);
    assert_true(estimator_estimate(est, v, &t, 0, 1500, 0, &e) >= ESTIMATOR_INF);
    estimator_destroy(&est);
    view_destroy(&v);
}

static void test_refinement_scaled_by_input(void **state)
{
    (void)state;
    estimator_t *est = NULL;
    assert_int_equal(estimator_new(NULL, 2, &est), 0);
    struct estimator_task t = {
        .stage = 0, .cpu = 1, .mem_mb = 1, .runtime_s = 100, .input_bytes = 2000000};
    NEAR(estimator_cpu_s(est, &t), 100);          /* the spec's conservative estimate */
    estimator_observe(est, 0, 1000000, 2.5, 0.5); /* cpu part 2 s */
    estimator_observe(est, 0, 1000000, 4.0, 0.0); /* 4 s */
    assert_int_equal(estimator_observed(est, 0), 2);
    NEAR(estimator_cpu_s(est, &t), 6.0); /* 3e-6 s/byte x 2e6 bytes */
    struct estimator_task other = t;
    other.stage = 1;
    NEAR(estimator_cpu_s(est, &other), 100); /* other stages unaffected */
    struct estimator_task nobytes = t;
    nobytes.input_bytes = 0;
    NEAR(estimator_cpu_s(est, &nobytes), 3.0); /* mean */
    estimator_observe(est, 5, 1, 1, 0);        /* bad stage ignored */
    estimator_observe(est, 0, 1, NAN, 0);      /* non-finite ignored */
    assert_int_equal(estimator_observed(est, 0), 2);
    estimator_destroy(&est);
}

/* A stage whose tasks' own estimates differ (by more than ESTIMATOR_OWN_SPREAD) refines each
 * task's estimate by the stage's actual / estimated ratio, not by its input bytes; with equal
 * estimates, Apollo's input scaling stands. */
static void test_refinement_own_estimates(void **state)
{
    (void)state;
    estimator_t *est = NULL;
    assert_int_equal(estimator_new(NULL, 2, &est), 0);
    struct estimator_task t = {
        .stage = 0, .cpu = 1, .mem_mb = 1, .runtime_s = 0.1, .input_bytes = 2000000};
    estimator_observe_est(est, 0, 1000000, 1.1, 0, 1.0);  /* 1 s estimated, 1.1 s ran */
    estimator_observe_est(est, 0, 1000000, 0.11, 0, 0.1); /* 0.1 s estimated, 0.11 s ran */
    NEAR(estimator_cpu_s(est, &t), 0.11);                 /* 0.1 x 1.21 / 1.1 */
    t.runtime_s = 2;
    NEAR(estimator_cpu_s(est, &t), 2.2);
    estimator_observe_est(est, 1, 1000000, 2.0, 0, 1.0); /* equal estimates: by input */
    estimator_observe_est(est, 1, 1000000, 4.0, 0, 1.0);
    t.stage = 1;
    NEAR(estimator_cpu_s(est, &t), 6.0); /* 3e-6 s/byte x 2e6 bytes */
    estimator_destroy(&est);
}

static void test_psucc_kfail_and_random(void **state)
{
    (void)state;
    view_t *v = NULL;
    assert_int_equal(view_new(&v), 0);
    double cb[1] = {16}, mb[1] = {65536}, cells[1] = {1.0};
    struct view_entry en = {.name = "n",
                            .rack = "r",
                            .cpu = 16,
                            .mem_mb = 65536,
                            .up = 1,
                            .boot_id = 1,
                            .seq = 1,
                            .successes = 8,
                            .failures = 0,
                            .ncpu = 1,
                            .nmem = 1,
                            .cpu_bins = cb,
                            .mem_bins_mb = mb,
                            .wait_s = cells};
    view_update(v, &en, 0);
    NEAR(view_node(v, 0)->psucc, 0.9);
    estimator_t *est = NULL;
    assert_int_equal(estimator_new(NULL, 1, &est), 0); /* kfail 2 */
    struct estimator_task t = {.stage = SIZE_MAX, .cpu = 1, .mem_mb = 1, .runtime_s = 9};
    struct estimate e;
    double c = estimator_estimate(est, v, &t, 0, 0, 0, &e);
    NEAR(e.e_s, 10);
    NEAR(c, 10 * (0.9 + 2 * 0.1));
    /* random term: draw x 0.05 x 1 s heartbeat */
    estimator_estimate(est, v, &t, 0, 0, 0.5, &e);
    NEAR(e.e_s, 10.025);
    /* staging: files not cached cost file_bytes / 80 MB/s, cached ones nothing */
    uint32_t cached[1] = {0};
    struct estimator_task f = t;
    f.file_bytes = 80000000;
    estimator_estimate(est, v, &f, 0, 0, 0, &e);
    NEAR(e.i_s, 1.0);
    f.cached_nodes = cached;
    f.ncached = 1;
    estimator_estimate(est, v, &f, 0, 0, 0, &e);
    NEAR(e.i_s, 0.0);
    struct estimator_config bad;
    estimator_config_default(&bad);
    bad.kfail = 0.5;
    estimator_t *x = NULL;
    assert_int_equal(estimator_new(&bad, 1, &x), ERR_INVAL);
    estimator_destroy(&est);
    view_destroy(&v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_figure4),
        cmocka_unit_test(test_remote_idle_beats_busy_local),
        cmocka_unit_test(test_best_replica_per_input),
        cmocka_unit_test(test_stale_matrix_is_pessimistic),
        cmocka_unit_test(test_refinement_scaled_by_input),
        cmocka_unit_test(test_refinement_own_estimates),
        cmocka_unit_test(test_psucc_kfail_and_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
