/* test_oppweight.c - the PN's opportunistic pick, fair across jobs (pn/oppweight.h, Apollo
 * §3.5): a job with few opportunistic tasks is not starved by one with many, weights scale a
 * job's share, ineligible tasks are never picked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "pn/oppweight.h"

#define N 202

/* Job 1 queued 200 tasks, job 2 only 2 (weights 1). */
static void crowd(struct oppweight_cand *c)
{
    for (size_t i = 0; i < N; i++) {
        c[i].job = i < 200 ? 1 : 2;
        c[i].weight = 1;
        c[i].eligible = 1;
    }
}

/* Fraction of picks of job `job` over a grid of `draws` draws. */
static double share(const struct oppweight_cand *c, size_t n, uint64_t job, int draws)
{
    int hit = 0;
    for (int k = 0; k < draws; k++) {
        long i = oppweight_pick(c, n, (k + 0.5) / draws);
        assert_true(i >= 0 && (size_t)i < n);
        assert_true(c[i].eligible);
        hit += c[i].job == job;
    }
    return (double)hit / draws;
}

static void test_few_not_starved_by_many(void **state)
{
    (void)state;
    struct oppweight_cand c[N];
    crowd(c);
    /* A flat pick would give job 2 1% of the node; each job gets half here. */
    double s2 = share(c, N, 2, 4000);
    assert_true(s2 > 0.49 && s2 < 0.51);
    double p = oppweight_prob(c, N, 201);
    assert_true(p > 0.2499 && p < 0.2501);
    p = oppweight_prob(c, N, 0);
    assert_true(p > 0.5 / 200 - 1e-9 && p < 0.5 / 200 + 1e-9);
    /* Every task of the crowded job is reachable. */
    int seen[200] = {0};
    for (int k = 0; k < 4000; k++) {
        long i = oppweight_pick(c, N, (k + 0.5) / 4000);
        if (i < 200)
            seen[i] = 1;
    }
    for (int i = 0; i < 200; i++)
        assert_true(seen[i]);
}

static void test_weights_scale_a_jobs_share(void **state)
{
    (void)state;
    struct oppweight_cand c[N];
    crowd(c);
    /* Job 2 holds 3x job 1's tokens: weight 3 per task, 3/4 of the picks. */
    c[200].weight = c[201].weight = oppweight_job_weight(30, 10);
    double s2 = share(c, N, 2, 4000);
    assert_true(s2 > 0.74 && s2 < 0.76);
    /* Flooding does not help: job 1 doubling its tasks' count changes nothing, and a claimed
       weight past OPPWEIGHT_MAX is clamped. */
    c[200].weight = c[201].weight = 1e9;
    double s = share(c, N, 2, 4000);
    assert_true(s > OPPWEIGHT_MAX / (OPPWEIGHT_MAX + 1) - 0.01);
    assert_true(oppweight_job_weight(0, 10) == OPPWEIGHT_MIN);
    assert_true(oppweight_job_weight(10, 0) == 10);
}

static void test_within_a_job_by_weight(void **state)
{
    (void)state;
    struct oppweight_cand c[3] = {{.job = 7, .weight = 1, .eligible = 1},
                                  {.job = 7, .weight = 3, .eligible = 1},
                                  {.job = 7, .weight = 0, .eligible = 1}}; /* 0: taken as 1 */
    int hit[3] = {0};
    for (int k = 0; k < 5000; k++)
        hit[oppweight_pick(c, 3, (k + 0.5) / 5000)]++;
    assert_true(hit[1] > 2950 && hit[1] < 3050);
    assert_true(hit[0] > 950 && hit[0] < 1050 && hit[2] > 950 && hit[2] < 1050);
}

static void test_ineligible_never_picked(void **state)
{
    (void)state;
    struct oppweight_cand c[N];
    crowd(c);
    c[200].eligible = 0; /* job 2's first task does not fit now */
    assert_true(oppweight_prob(c, N, 200) == 0);
    double s2 = share(c, N, 2, 2000); /* job 2 still has half through its other task */
    assert_true(s2 > 0.49 && s2 < 0.51);
    for (size_t i = 0; i < N; i++)
        c[i].eligible = 0;
    assert_int_equal(oppweight_pick(c, N, 0.3), -1);
    assert_int_equal(oppweight_pick(c, 0, 0.3), -1);
    c[5].eligible = 1;
    assert_int_equal(oppweight_pick(c, N, 0.999), 5);
    assert_int_equal(oppweight_pick(c, N, -3), 5); /* a bad draw is taken as 0 */
}

static void test_many_jobs(void **state)
{
    (void)state;
    /* More jobs than the stack holds: the scan gives the same shares. */
    enum { J = 100 };
    struct oppweight_cand c[2 * J];
    for (size_t i = 0; i < 2 * J; i++) {
        c[i].job = i % J;
        c[i].weight = i % J == 0 ? 5 : 1;
        c[i].eligible = 1;
    }
    double total = 5 + (J - 1);
    double s0 = share(c, 2 * J, 0, 1000);
    assert_true(s0 > 5 / total - 0.005 && s0 < 5 / total + 0.005);
    double p = 0;
    for (size_t i = 0; i < 2 * J; i++)
        p += oppweight_prob(c, 2 * J, i);
    assert_true(p > 0.999999 && p < 1.000001);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_few_not_starved_by_many),
        cmocka_unit_test(test_weights_scale_a_jobs_share),
        cmocka_unit_test(test_within_a_job_by_weight),
        cmocka_unit_test(test_ineligible_never_picked),
        cmocka_unit_test(test_many_jobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
