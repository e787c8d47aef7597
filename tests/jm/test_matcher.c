/* test_matcher.c - candidate sets, stable/greedy/optimal matching: Apollo's Figure 5 (stable
 * beats greedy on locality), the optimum against brute force, invariants on random batches. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "common/err.h"
#include "common/rng.h"
#include "jm/estimator.h"
#include "jm/matcher.h"
#include "jm/view.h"
#include "jm_fixture.h"

/* The random tests' draws (common/rng.h), each test seeding it afresh so none depends on the
 * order the tests run in. */
static struct rng matcher__g;
static double rnd(void)
{
    return rng_unif(&matcher__g);
}

static double total_cost(const struct matcher_match *m, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += m[i].cost;
    return s;
}

static const struct matcher_match *find_task(const struct matcher_match *m, size_t n, size_t t)
{
    for (size_t i = 0; i < n; i++)
        if (m[i].task == t)
            return &m[i];
    return NULL;
}

/* Figure 5: Task1 and Task2 read from server A, Task3 from server B; each server starts one
 * task. Greedy: T1->A, T2->B, T3->C. Stable: T1->A, T2->C, T3->B (better locality). Costs come
 * from the estimator: A and B share a rack, C is in another. */
static void test_figure5(void **state)
{
    (void)state;
    view_t *v = NULL;
    assert_int_equal(view_new(&v), 0);
    uint32_t A = fx_node(v, "A", "r1", 0, 1, 0), B = fx_node(v, "B", "r1", 0, 1, 0);
    uint32_t C = fx_node(v, "C", "r2", 0, 1, 0);
    assert_int_equal(view_refresh_light(v, 8), 0);
    estimator_t *est = NULL;
    assert_int_equal(estimator_new(NULL, 1, &est), 0);
    matcher_t *m = NULL;
    assert_int_equal(matcher_new(view_count(v), &m), 0);
    int32_t onA[1] = {(int32_t)A}, onB[1] = {(int32_t)B};
    struct estimator_input inA = {1000000000ull, onA, 1}, inB = {1000000000ull, onB, 1};
    struct estimator_task tasks[3] = {
        {.stage = SIZE_MAX,
         .cpu = 1,
         .mem_mb = 1,
         .runtime_s = 0,
         .input_bytes = inA.bytes,
         .inputs = &inA,
         .ninputs = 1},
        {.stage = SIZE_MAX,
         .cpu = 1,
         .mem_mb = 1,
         .runtime_s = 0,
         .input_bytes = inA.bytes,
         .inputs = &inA,
         .ninputs = 1},
        {.stage = SIZE_MAX,
         .cpu = 1,
         .mem_mb = 1,
         .runtime_s = 0,
         .input_bytes = inB.bytes,
         .inputs = &inB,
         .ninputs = 1},
    };
    /* candidate sets: input holders, their rack-mates and random light nodes (here: all) */
    struct matcher_cand_config cc;
    matcher_cand_config_default(&cc);
    size_t off[4] = {0};
    struct matcher_cand cand[12];
    size_t k = 0;
    for (int t = 0; t < 3; t++) {
        uint32_t nodes[8];
        double draws[3] = {0.0, 0.1, 0.9};
        size_t n = matcher_candidates(m, v, &tasks[t], &cc, draws, 3, nodes, 8);
        assert_int_equal(n, 3); /* holder, its rack-mate, and C from the light list */
        for (size_t i = 0; i < n; i++) {
            struct estimate e;
            double c = estimator_estimate(est, v, &tasks[t], nodes[i], 0, 0, &e);
            cand[k++] = (struct matcher_cand){nodes[i], c, e.w_s};
        }
        off[t + 1] = k;
    }
    /* a view this small offers every up node when asked (the daemon's all_nodes_max) */
    {
        struct estimator_task none = {.stage = SIZE_MAX, .cpu = 1, .mem_mb = 1};
        uint32_t nodes[8];
        double draws[3] = {0.0, 0.1, 0.9};
        /* no input: the two random picks of the light list only */
        assert_int_equal(matcher_candidates(m, v, &none, &cc, draws, 3, nodes, 8), 2);
        cc.all_nodes_max = view_count(v);
        assert_int_equal(matcher_candidates(m, v, &none, &cc, draws, 3, nodes, 8), view_count(v));
        cc.all_nodes_max = view_count(v) - 1; /* a node more than that: sampled again */
        assert_int_equal(matcher_candidates(m, v, &none, &cc, draws, 3, nodes, 8), 2);
        cc.all_nodes_max = 0;
    }
    struct matcher_batch b = {3, off, cand};
    struct matcher_match g[3], s[3], o[3];
    size_t ng, ns, no;
    assert_int_equal(matcher_greedy(m, &b, g, &ng), 0);
    assert_int_equal(matcher_stable(m, &b, 4, s, &ns), 0);
    assert_int_equal(matcher_optimal(m, &b, o, &no), 0);
    assert_int_equal(ng, 3);
    assert_int_equal(ns, 3);
    assert_int_equal(no, 3);
    assert_int_equal(find_task(g, 3, 0)->node, A);
    assert_int_equal(find_task(g, 3, 1)->node, B);
    assert_int_equal(find_task(g, 3, 2)->node, C);
    assert_int_equal(find_task(s, 3, 0)->node, A);
    assert_int_equal(find_task(s, 3, 1)->node, C);
    assert_int_equal(find_task(s, 3, 2)->node, B);
    /* 6.25 + 12.5 + 6.25 against 6.25 + 10 + 12.5 (times Kfail-weighted Psucc, equal here) */
    assert_true(total_cost(s, 3) < total_cost(g, 3));
    assert_true(fabs(total_cost(o, 3) - total_cost(s, 3)) < 1e-9);
    matcher_destroy(&m);
    estimator_destroy(&est);
    view_destroy(&v);
}

/* A node wanted by two tasks goes to the one that would lose most elsewhere (the saving), not
 * to the earlier one, unless the savings are within the tie; the loser proposes again in the
 * next iteration. */
static void test_saving_decides_conflicts(void **state)
{
    (void)state;
    matcher_t *m = NULL;
    assert_int_equal(matcher_new(4, &m), 0);
    /* task 0: A=1, B=2 (saving 1); task 1: A=1, B=10 (saving 9) */
    struct matcher_cand cand[4] = {{0, 1, 0}, {1, 2, 0}, {0, 1, 0}, {1, 10, 0}};
    size_t off[3] = {0, 2, 4};
    struct matcher_batch b = {2, off, cand};
    struct matcher_match out[2];
    size_t n;
    assert_int_equal(matcher_stable(m, &b, 1, out, &n), 0);
    assert_int_equal(n, 1); /* one iteration: only the conflict's winner is matched */
    assert_int_equal(out[0].task, 1);
    assert_int_equal(out[0].node, 0);
    assert_int_equal(matcher_stable(m, &b, 2, out, &n), 0);
    assert_int_equal(n, 2);
    assert_true(fabs(total_cost(out, n) - 3.0) < 1e-12);
    assert_int_equal(find_task(out, n, 0)->node, 1);
    assert_int_equal(matcher_greedy(m, &b, out, &n), 0);
    assert_true(fabs(total_cost(out, n) - 11.0) < 1e-12);
    /* a task with a single candidate has an infinite saving and wins */
    struct matcher_cand c2[3] = {{0, 5, 0}, {0, 1, 0}, {1, 1.5, 0}};
    size_t off2[3] = {0, 1, 3};
    struct matcher_batch b2 = {2, off2, c2};
    assert_int_equal(matcher_stable(m, &b2, 3, out, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(find_task(out, n, 0)->node, 0);
    assert_int_equal(find_task(out, n, 1)->node, 1);
    /* savings within MATCHER_SAVING_TIE_S are a tie: the earlier task (higher priority)
     * wins, as a job's critical task over its siblings; a saving larger by more still wins */
    struct matcher_cand c3[4] = {{0, 0.5, 0}, {1, 1.5, 1}, {0, 1.2, 0}, {1, 2.23, 1}};
    struct matcher_batch b3 = {2, off, c3}; /* savings 1.0 and 1.03 */
    assert_int_equal(matcher_stable(m, &b3, 1, out, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].task, 0);
    c3[3].cost = 2.4; /* saving 1.2 */
    assert_int_equal(matcher_stable(m, &b3, 1, out, &n), 0);
    assert_int_equal(out[0].task, 1);
    matcher_destroy(&m);
}

static double brute(const double *c, size_t n, size_t col, unsigned used)
{
    if (col == n)
        return 0;
    double best = INFINITY;
    for (size_t r = 0; r < n; r++)
        if (!(used & (1u << r))) {
            double x = c[r * n + col] + brute(c, n, col + 1, used | (1u << r));
            if (x < best)
                best = x;
        }
    return best;
}

static double brute_max(const double *c, size_t n, size_t col, unsigned used)
{
    if (col == n)
        return 0;
    double best = INFINITY;
    for (size_t r = 0; r < n; r++)
        if (!(used & (1u << r))) {
            double x = fmax(c[r * n + col], brute_max(c, n, col + 1, used | (1u << r)));
            if (x < best)
                best = x;
        }
    return best;
}

static double max_cost(const struct matcher_match *m, size_t n)
{
    double x = 0;
    for (size_t i = 0; i < n; i++)
        x = fmax(x, m[i].cost);
    return x;
}

static void test_optimal_is_exact(void **state)
{
    (void)state;
    rng_seed(&matcher__g, 1);
    matcher_t *m = NULL;
    assert_int_equal(matcher_new(16, &m), 0);
    for (int round = 0; round < 200; round++) {
        size_t n = 1 + (size_t)(rnd() * 6);
        double c[49];
        size_t off[8];
        struct matcher_cand cand[49];
        for (size_t t = 0; t < n; t++) {
            off[t] = t * n;
            for (size_t j = 0; j < n; j++) {
                c[t * n + j] = floor(rnd() * 100);
                cand[t * n + j] = (struct matcher_cand){(uint32_t)j, c[t * n + j], 0};
            }
        }
        off[n] = n * n;
        struct matcher_batch b = {n, off, cand};
        struct matcher_match o[8], s[8], g[8];
        size_t no, ns, ng;
        assert_int_equal(matcher_optimal(m, &b, o, &no), 0);
        assert_int_equal(no, n);
        /* brute force over columns = nodes, rows = tasks: transpose index */
        double ct[49];
        for (size_t t = 0; t < n; t++)
            for (size_t j = 0; j < n; j++)
                ct[t * n + j] = c[t * n + j];
        double want = brute(ct, n, 0, 0);
        assert_true(fabs(total_cost(o, no) - want) < 1e-9);
        assert_int_equal(matcher_stable(m, &b, 100, s, &ns), 0);
        assert_int_equal(matcher_greedy(m, &b, g, &ng), 0);
        assert_int_equal(ns, n);
        assert_int_equal(ng, n);
        assert_true(total_cost(o, no) <= total_cost(s, ns) + 1e-9);
        assert_true(total_cost(o, no) <= total_cost(g, ng) + 1e-9);
        /* bottleneck optimum: the smallest largest C (brute force), then the smallest sum */
        struct matcher_match bo[8];
        size_t nbo;
        assert_int_equal(matcher_optimal_bottleneck(m, &b, bo, &nbo), 0);
        assert_int_equal(nbo, n);
        double want_max = brute_max(ct, n, 0, 0);
        assert_true(fabs(max_cost(bo, nbo) - want_max) < 1e-9);
        assert_true(max_cost(bo, nbo) <= max_cost(o, no) + 1e-9);
        assert_true(max_cost(bo, nbo) <= max_cost(s, ns) + 1e-9);
        assert_true(total_cost(bo, nbo) >= total_cost(o, no) - 1e-9);
    }
    matcher_destroy(&m);
}

/* Random sparse batches with more tasks than nodes: one task per node, every match is a real
 * candidate, quality order holds, and the optimum matches at least as many tasks. */
static void test_invariants(void **state)
{
    (void)state;
    rng_seed(&matcher__g, 1);
    enum { NODES = 40, TASKS = 120, PER = 6 };
    matcher_t *m = NULL;
    assert_int_equal(matcher_new(NODES, &m), 0);
    size_t off[TASKS + 1];
    struct matcher_cand cand[TASKS * PER];
    struct matcher_match out[TASKS];
    for (int round = 0; round < 30; round++) {
        size_t k = 0;
        for (size_t t = 0; t < TASKS; t++) {
            off[t] = k;
            for (int i = 0; i < PER; i++)
                cand[k++] =
                    (struct matcher_cand){(uint32_t)(rnd() * NODES), 1 + rnd() * 50, rnd() * 10};
        }
        off[TASKS] = k;
        struct matcher_batch b = {TASKS, off, cand};
        size_t counts[3];
        for (int alg = 0; alg < 3; alg++) {
            size_t n;
            int rc = alg == 0   ? matcher_stable(m, &b, 3, out, &n)
                     : alg == 1 ? matcher_greedy(m, &b, out, &n)
                                : matcher_optimal(m, &b, out, &n);
            assert_int_equal(rc, 0);
            counts[alg] = n;
            assert_true(n <= NODES);
            int used[NODES] = {0}, tused[TASKS] = {0};
            for (size_t i = 0; i < n; i++) {
                assert_int_equal(used[out[i].node]++, 0);
                assert_int_equal(tused[out[i].task]++, 0);
                int real = 0;
                for (size_t c = off[out[i].task]; c < off[out[i].task + 1]; c++)
                    real |= cand[c].node == out[i].node && cand[c].cost == out[i].cost;
                assert_true(real);
                if (i > 0)
                    assert_true(out[i - 1].wait <= out[i].wait);
            }
        }
        assert_true(counts[2] >= counts[0]);
        assert_true(counts[2] >= counts[1]);
    }
    /* bad node index */
    struct matcher_cand badc[1] = {{NODES + 100, 1, 1}};
    size_t boff[2] = {0, 1}, n;
    struct matcher_batch bad = {1, boff, badc};
    assert_int_equal(matcher_stable(m, &bad, 3, out, &n), ERR_INVAL);
    matcher_destroy(&m);
}

/* matcher_stable_room: with no room anywhere it is matcher_stable, match for match; with room a
 * node takes several tasks, never more than its room holds beyond its first, by saving. */
static void test_stable_room(void **state)
{
    (void)state;
    rng_seed(&matcher__g, 1);
    enum { NODES = 40, TASKS = 120, PER = 6 };
    matcher_t *m = NULL;
    assert_int_equal(matcher_new(NODES, &m), 0);
    size_t off[TASKS + 1];
    struct matcher_cand cand[TASKS * PER];
    struct matcher_match a[TASKS], b2[TASKS];
    struct matcher_room room[NODES], need[TASKS];
    for (int round = 0; round < 30; round++) {
        size_t k = 0;
        for (size_t t = 0; t < TASKS; t++) {
            off[t] = k;
            need[t] = (struct matcher_room){0.5 + (double)(t % 3), 512};
            for (int i = 0; i < PER; i++)
                cand[k++] =
                    (struct matcher_cand){(uint32_t)(rnd() * NODES), 1 + rnd() * 50, rnd() * 10};
        }
        off[TASKS] = k;
        struct matcher_batch b = {TASKS, off, cand};
        for (int i = 0; i < NODES; i++)
            room[i] = (struct matcher_room){0, 0};
        size_t na, nb;
        assert_int_equal(matcher_stable(m, &b, 3, a, &na), 0);
        assert_int_equal(matcher_stable_room(m, &b, room, need, 3, b2, &nb), 0);
        assert_int_equal(na, nb);
        for (size_t i = 0; i < na; i++) {
            assert_int_equal(a[i].task, b2[i].task);
            assert_int_equal(a[i].node, b2[i].node);
        }
        /* room: every node accepts more, within it */
        for (int i = 0; i < NODES; i++)
            room[i] = (struct matcher_room){(double)(i % 7), 4096};
        assert_int_equal(matcher_stable_room(m, &b, room, need, 3, b2, &nb), 0);
        assert_true(nb >= na);
        double used[NODES] = {0};
        int cnt[NODES] = {0}, tused[TASKS] = {0};
        for (size_t i = 0; i < nb; i++) {
            assert_int_equal(tused[b2[i].task]++, 0);
            used[b2[i].node] += need[b2[i].task].cpu;
            cnt[b2[i].node]++;
            if (i > 0)
                assert_true(b2[i - 1].wait <= b2[i].wait);
        }
        for (int i = 0; i < NODES; i++)
            assert_true(cnt[i] <= 1 || used[i] <= room[i].cpu + 1e-9);
    }
    /* one node with room for two of three tasks: the two with the largest savings win it */
    struct matcher_cand c3[6] = {{0, 1, 0}, {1, 2, 0},  /* saving 1 */
                                 {0, 1, 0}, {1, 20, 0}, /* saving 19 */
                                 {0, 1, 0}, {1, 9, 0}}; /* saving 8 */
    size_t o3[4] = {0, 2, 4, 6};
    struct matcher_batch b3 = {3, o3, c3};
    struct matcher_room r3[2] = {{2, 4096}, {0, 0}}, n3[3] = {{1, 512}, {1, 512}, {1, 512}};
    size_t n;
    assert_int_equal(matcher_stable_room(m, &b3, r3, n3, 3, a, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(find_task(a, n, 1)->node, 0);
    assert_int_equal(find_task(a, n, 2)->node, 0);
    assert_int_equal(find_task(a, n, 0)->node, 1);
    assert_int_equal(matcher_stable_room(m, &b3, NULL, n3, 3, a, &n), ERR_INVAL);
    assert_int_equal(matcher_stable_room(m, &b3, r3, NULL, 3, a, &n), ERR_INVAL);
    assert_int_equal(matcher_stable_room(m, &b3, r3, n3, 0, a, &n), ERR_INVAL);
    matcher_destroy(&m);
}

static void test_candidates(void **state)
{
    (void)state;
    view_t *v = NULL;
    assert_int_equal(view_new(&v), 0);
    char name[32];
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof name, "n%d", i);
        char rack[16];
        snprintf(rack, sizeof rack, "r%d", i / 20);
        fx_node(v, name, rack, i < 50 ? 10.0 + i : (double)(i - 50) * 0.01, 1, 0);
    }
    assert_int_equal(view_refresh_light(v, 10), 0);
    size_t nl;
    const uint32_t *light = view_light(v, &nl);
    assert_int_equal(nl, 10);
    assert_int_equal(light[0], 50); /* wait 0 */
    matcher_t *m = NULL;
    assert_int_equal(matcher_new(100, &m), 0);
    struct matcher_cand_config cc;
    matcher_cand_config_default(&cc);
    cc.max_rack_nodes = 5;
    int32_t big[1] = {3}, small[1] = {77};
    struct estimator_input in[2] = {{1000, big, 1}, {10, small, 1}}; /* second insignificant */
    struct estimator_task t = {.stage = SIZE_MAX,
                               .cpu = 1,
                               .mem_mb = 1,
                               .runtime_s = 1,
                               .input_bytes = 1010,
                               .inputs = in,
                               .ninputs = 2};
    uint32_t out[64];
    double draws[3] = {0.5, 0.0, 0.95};
    size_t n = matcher_candidates(m, v, &t, &cc, draws, 3, out, 64);
    /* n3, 5 rack-mates of rack r0 from offset 10 (n10..n14), light[0] and light[9] */
    assert_int_equal(n, 1 + 5 + 2);
    assert_int_equal(out[0], 3);
    for (int i = 1; i < 6; i++) {
        assert_true(out[i] < 20);
        assert_int_not_equal(out[i], 77);
    }
    assert_int_equal(out[6], light[0]);
    assert_int_equal(out[7], light[9]);
    /* a down node is never a candidate */
    view_set_up(v, 3, 0);
    n = matcher_candidates(m, v, &t, &cc, draws, 3, out, 64);
    for (size_t i = 0; i < n; i++)
        assert_int_not_equal(out[i], 3);
    /* capped output */
    assert_int_equal(matcher_candidates(m, v, &t, &cc, draws, 3, out, 2), 2);
    /* Two random picks landing on the same light node give two distinct candidates (the next
       one of the list), and so does a pick landing on a down node: a task without inputs always
       has a choice, and its retry can avoid the node that failed. */
    struct estimator_task bare = {.stage = SIZE_MAX, .cpu = 1, .mem_mb = 1, .runtime_s = 1};
    double same[3] = {0.0, 0.05, 0.05};
    n = matcher_candidates(m, v, &bare, &cc, same, 3, out, 64);
    assert_int_equal(n, 2);
    assert_int_equal(out[0], light[0]);
    assert_int_equal(out[1], light[1]);
    view_set_up(v, light[0], 0);
    n = matcher_candidates(m, v, &bare, &cc, same, 3, out, 64);
    assert_int_equal(n, 2);
    assert_int_equal(out[0], light[1]);
    assert_int_equal(out[1], light[2]);
    matcher_destroy(&m);
    view_destroy(&v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_figure5),          cmocka_unit_test(test_saving_decides_conflicts),
        cmocka_unit_test(test_optimal_is_exact), cmocka_unit_test(test_invariants),
        cmocka_unit_test(test_candidates),       cmocka_unit_test(test_stable_room),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
