/* test_lowcost.c - LowCost (Morpheus §6.3) and the greedy baseline: the paper's Figure 7
 * interval, flattening a spiky R*, a second job avoiding the first one's peak, periodic costs
 * folded over the instances, ERR_FULL leaving everything as it was, conservation of token-steps
 * and an exact lowcost_remove, greedy's earliest fit, malformed jobs, failed allocations, and the
 * time a day's plan of 20 jobs takes. */
#include "common/err.h"
#include "common/mem.h"
#include "common/rng.h"
#include "rm/lowcost.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#define MAXN 1440

struct fixture {
    double load[MAXN];
    double saved[MAXN];
    double resv[MAXN];
    double resv2[MAXN];
    struct lowcost_plan plan;
};

static int setup(void **state)
{
    struct fixture *f = mem_calloc(1, sizeof *f);
    if (!f)
        return -1;
    f->plan.load = f->load;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    mem_fail_reset();
    mem_free(*state);
    return 0;
}

static void plan_init(struct fixture *f, uint32_t nsteps, double capacity)
{
    memset(f->load, 0, sizeof f->load);
    f->plan.nsteps = nsteps;
    f->plan.capacity = capacity;
}

static struct lowcost_job job(uint32_t period, uint32_t release, uint32_t deadline,
                              const double *demand, uint32_t nstages)
{
    struct lowcost_job j = {period, release, deadline, demand, nstages};
    return j;
}

static double sum(const double *v, uint32_t n)
{
    double s = 0;
    for (uint32_t i = 0; i < n; i++)
        s += v[i];
    return s;
}

/* The non-zero steps of resv form one block inside [lo, hi); returns its length. */
static uint32_t assert_contiguous(const double *resv, uint32_t period, uint32_t lo, uint32_t hi)
{
    uint32_t first = period, last = 0, n = 0;
    for (uint32_t x = 0; x < period; x++) {
        assert_true(resv[x] >= 0);
        if (resv[x] > 0) {
            first = x < first ? x : first;
            last = x;
            n++;
        }
    }
    if (n == 0)
        return 0;
    assert_true(first >= lo);
    assert_true(last < hi);
    assert_int_equal(n, last - first + 1);
    return n;
}

static void assert_under_capacity(const struct lowcost_plan *p)
{
    for (uint32_t t = 0; t < p->nsteps; t++)
        assert_true(p->load[t] <= p->capacity + 1e-9 * p->capacity);
}

/* Figure 7: four stages, stage 3 demands 16 of the 38 token-steps of stages 1-3 and 19 steps are
 * available when it is placed, so its interval is 16/38 * 19 = 8 steps. Demands {21, 1, 16, 1},
 * window [0, 20), capacity 2.2: ending before 20 does not fit (stage 1 would need more than 2.2
 * per step), so the allocation ends at 20. Stage 4 (1 token-step) takes step 19, leaving
 * [0, 18] = 19 steps; stage 3 fills its interval [11, 18] at 2 per step; stage 2 (1 token-step)
 * takes step 10; stage 1 spreads 21 over [0, 9], none above the capacity. */
static void figure7_interval(void **state)
{
    struct fixture *f = *state;
    plan_init(f, 20, 2.2);
    const double demand[] = {21, 1, 16, 1};
    struct lowcost_job j = job(20, 0, 20, demand, 4);
    assert_int_equal(lowcost_place(&f->plan, &j, f->resv), 0);
    assert_float_equal(f->resv[19], 1, 1e-9); /* stage 4 */
    uint32_t lo = 19, hi = 0;                 /* stage 3's extent: between stage 2 and 4 */
    for (uint32_t x = 11; x <= 18; x++)
        assert_float_equal(f->resv[x], 2, 1e-9);
    for (uint32_t x = 0; x < 19; x++) {
        if (f->resv[x] > 1.5 && x > 10) {
            lo = x < lo ? x : lo;
            hi = x > hi ? x : hi;
        }
    }
    assert_int_equal(hi - lo + 1, 8); /* 16/38 of 19 */
    assert_float_equal(sum(f->resv + 11, 8), 16, 1e-9);
    assert_float_equal(f->resv[10], 1, 1e-9); /* stage 2, right before stage 3 */
    assert_float_equal(sum(f->resv, 10), 21, 1e-9);
    for (uint32_t x = 0; x < 10; x++) /* the last token in pieces of the room, later first */
        assert_float_equal(f->resv[x], x >= 5 ? 2.2 : 2, 1e-9);
    assert_int_equal(assert_contiguous(f->resv, 20, 0, 20), 20);
    assert_under_capacity(&f->plan);
    assert_float_equal(lowcost_peak(&f->plan), 2.2, 1e-9);
    /* the stage lengths follow the proportions: with a shorter window nothing fits */
    plan_init(f, 20, 2.2);
    j.deadline = 19;
    j.period = 20;
    assert_int_equal(lowcost_place(&f->plan, &j, f->resv), ERR_FULL);
    /* lengths round half up: {2, 1.5} in 4 steps under 1 token fits only when stage 2's 4 * 1.5 /
     * 3.5 = 1.71 steps rounds to 2 */
    plan_init(f, 4, 1);
    const double half[] = {2, 1.5};
    struct lowcost_job jh = job(4, 0, 4, half, 2);
    assert_int_equal(lowcost_place(&f->plan, &jh, f->resv), 0);
    assert_float_equal(f->resv[0], 1, 1e-9);
    assert_float_equal(f->resv[1], 1, 1e-9);
    assert_float_equal(f->resv[2], 0.5, 1e-9);
    assert_float_equal(f->resv[3], 1, 1e-9);
}

/* A spiky R* in an empty plan: greedy reserves the spike as it is; LowCost spreads every stage
 * over its interval, so its peak is far lower, with the same token-steps. */
static void empty_plan_flattens(void **state)
{
    struct fixture *f = *state;
    const double demand[] = {1, 1, 12, 1, 1};
    struct lowcost_job j = job(24, 0, 24, demand, 5);
    plan_init(f, 24, 100);
    assert_int_equal(lowcost_place_greedy(&f->plan, &j, f->resv2), 0);
    double greedy = lowcost_peak(&f->plan);
    assert_float_equal(greedy, 12, 1e-9);
    assert_float_equal(f->resv2[2], 12, 1e-9); /* earliest shift, shape as it is */

    plan_init(f, 24, 100);
    assert_int_equal(lowcost_place(&f->plan, &j, f->resv), 0);
    double low = lowcost_peak(&f->plan);
    assert_true(low <= 2 + 1e-9);
    assert_true(low < greedy);
    assert_float_equal(sum(f->resv, 24), 16, 1e-9);
    assert_true(assert_contiguous(f->resv, 24, 0, 24) >= 8);
}

/* Job A holds 6 of 10 tokens over [0, 4). Job B (4 x 4 token-steps, window [0, 24)) placed with
 * LowCost stays off A's steps and the plan's peak stays 6; greedy would have stacked it on A. */
static void second_avoids_peak(void **state)
{
    struct fixture *f = *state;
    plan_init(f, 24, 10);
    const double a[] = {6, 6, 6, 6};
    struct lowcost_job ja = job(24, 0, 24, a, 4);
    assert_int_equal(lowcost_place_greedy(&f->plan, &ja, f->resv), 0);
    assert_float_equal(f->load[0], 6, 0);
    assert_float_equal(f->load[3], 6, 0);
    memcpy(f->saved, f->load, sizeof f->load);

    const double b[] = {4, 4, 4, 4};
    struct lowcost_job jb = job(24, 0, 24, b, 4);
    assert_int_equal(lowcost_place(&f->plan, &jb, f->resv2), 0);
    for (uint32_t x = 0; x < 4; x++)
        assert_float_equal(f->resv2[x], 0, 0);
    assert_float_equal(lowcost_peak(&f->plan), 6, 1e-9);
    assert_float_equal(sum(f->resv2, 24), 16, 1e-9);
    assert_contiguous(f->resv2, 24, 4, 24);
    for (uint32_t x = 4; x < 24; x++)
        assert_true(f->resv2[x] <= 1 + 1e-9);

    memcpy(f->load, f->saved, sizeof f->load);
    assert_int_equal(lowcost_place_greedy(&f->plan, &jb, f->resv2), 0);
    assert_float_equal(lowcost_peak(&f->plan), 10, 1e-9);
}

/* Period 8 in a plan of 24 (three instances): every instance gets the same reservation at the
 * same offset, and a busy step in one instance makes that offset expensive for all of them. */
static void periodic_instances(void **state)
{
    struct fixture *f = *state;
    const double demand[] = {2, 2};
    struct lowcost_job j = job(8, 0, 8, demand, 2);

    plan_init(f, 24, 10);
    assert_int_equal(lowcost_place(&f->plan, &j, f->resv), 0);
    assert_true(f->resv[2] > 0); /* free plan: the earliest end, over offsets [0, 4) */
    for (uint32_t i = 0; i < 3; i++)
        for (uint32_t x = 0; x < 8; x++)
            assert_float_equal(f->load[i * 8 + x], f->resv[x], 0);

    plan_init(f, 24, 10);
    f->load[8 + 2] = 5; /* the second instance is busy at offset 2 */
    memcpy(f->saved, f->load, sizeof f->load);
    assert_int_equal(lowcost_place(&f->plan, &j, f->resv), 0);
    assert_float_equal(f->resv[2], 0, 0);
    assert_float_equal(sum(f->resv, 8), 4, 1e-9);
    assert_contiguous(f->resv, 8, 3, 8);
    for (uint32_t i = 0; i < 3; i++)
        for (uint32_t x = 0; x < 8; x++)
            assert_float_equal(f->load[i * 8 + x], f->saved[i * 8 + x] + f->resv[x], 0);
    assert_float_equal(lowcost_peak(&f->plan), 5, 0);

    /* greedy sees the folded load too: 2 + 5 > 6 at offset 2 in every instance */
    plan_init(f, 24, 6);
    f->load[16 + 2] = 5;
    const double g[] = {2};
    struct lowcost_job jg = job(8, 1, 8, g, 1);
    assert_int_equal(lowcost_place_greedy(&f->plan, &jg, f->resv), 0);
    assert_float_equal(f->resv[1], 2, 0);
    jg.release = 2;
    assert_int_equal(lowcost_place_greedy(&f->plan, &jg, f->resv), 0);
    assert_float_equal(f->resv[3], 2, 0);
    assert_float_equal(f->resv[2], 0, 0);
}

/* Nothing fits: ERR_FULL, and neither the plan nor resv changes. */
static void full_changes_nothing(void **state)
{
    struct fixture *f = *state;
    plan_init(f, 12, 4);
    for (uint32_t t = 0; t < 12; t++)
        f->load[t] = t == 5 ? 1 : 3.5;
    memcpy(f->saved, f->load, sizeof f->load);
    for (uint32_t x = 0; x < 12; x++)
        f->resv[x] = -7;
    const double demand[] = {2, 2, 2}; /* 6 token-steps: no 2 free in a row for greedy */
    struct lowcost_job j = job(12, 0, 12, demand, 3);
    const double big[] = {3, 3, 3, 3}; /* 12 token-steps: more than 0.5 * 11 + 3 of room */
    struct lowcost_job jb = job(12, 0, 12, big, 4);
    assert_int_equal(lowcost_place(&f->plan, &jb, f->resv), ERR_FULL);
    assert_memory_equal(f->load, f->saved, 12 * sizeof(double));
    for (uint32_t x = 0; x < 12; x++)
        assert_float_equal(f->resv[x], -7, 0);
    assert_int_equal(lowcost_place_greedy(&f->plan, &j, f->resv), ERR_FULL); /* 2 > 0.5 */
    assert_memory_equal(f->load, f->saved, 12 * sizeof(double));
    for (uint32_t x = 0; x < 12; x++)
        assert_float_equal(f->resv[x], -7, 0);
    /* more stages than steps in the window */
    const double many[] = {1, 1, 1, 1};
    struct lowcost_job jm = job(12, 9, 12, many, 4);
    assert_int_equal(lowcost_place(&f->plan, &jm, f->resv), ERR_FULL);
    assert_int_equal(lowcost_place_greedy(&f->plan, &jm, f->resv), ERR_FULL);
    assert_memory_equal(f->load, f->saved, 12 * sizeof(double));
    /* LowCost stretches the same 6 token-steps into the room that greedy cannot use */
    assert_int_equal(lowcost_place(&f->plan, &j, f->resv), 0);
    assert_float_equal(sum(f->resv, 12), 6, 1e-9);
    assert_under_capacity(&f->plan);
}

/* 24 random bits from common/rng (the tree's one generator). */
static uint32_t draw24(struct rng *g)
{
    return (uint32_t)(rng_next(g) >> 40);
}

/* Conservation: every reservation holds its job's token-steps, within its window, contiguous and
 * under capacity; taking them back out in any order restores the plan exactly (half-token
 * demands keep the arithmetic exact) and within rounding for arbitrary fractions. */
static void conservation_and_remove(void **state)
{
    struct fixture *f = *state;
    enum { N = 96, JOBS = 8, STAGES = 10 };
    static double resv[2][JOBS][N];
    static double demand[2][JOBS][STAGES];
    struct rng seed;
    rng_seed(&seed, 7);
    for (int mode = 0; mode < 2; mode++) {
        plan_init(f, N, 64);
        for (uint32_t t = 0; t < N; t++)
            f->load[t] = (double)(draw24(&seed) % 20);
        memcpy(f->saved, f->load, sizeof f->load);
        struct lowcost_job jobs[JOBS];
        for (uint32_t i = 0; i < JOBS; i++) {
            uint32_t period = (uint32_t[]){96, 48, 32, 24}[i % 4];
            for (uint32_t k = 0; k < STAGES; k++) {
                uint32_t r = draw24(&seed);
                demand[mode][i][k] = mode == 0 ? (double)(r % 17) / 2 : (double)(r % 1000) / 97;
            }
            demand[mode][i][3] = 0; /* an inner zero stage reserves nothing */
            uint32_t release = draw24(&seed) % (period / 4);
            jobs[i] = job(period, release, period, demand[mode][i], STAGES);
            int rc = i % 3 == 2 ? lowcost_place_greedy(&f->plan, &jobs[i], resv[mode][i])
                                : lowcost_place(&f->plan, &jobs[i], resv[mode][i]);
            assert_int_equal(rc, 0);
            assert_float_equal(sum(resv[mode][i], period), sum(demand[mode][i], STAGES), 1e-6);
            if (i % 3 != 2)
                assert_contiguous(resv[mode][i], period, release, period);
            assert_under_capacity(&f->plan);
        }
        double total = 0;
        for (uint32_t i = 0; i < JOBS; i++)
            total += sum(demand[mode][i], STAGES) * (N / jobs[i].period);
        assert_float_equal(sum(f->load, N), sum(f->saved, N) + total, 1e-6);
        for (uint32_t i = 0; i < JOBS; i++) { /* out of order: odd jobs first */
            uint32_t k = i < JOBS / 2 ? 2 * i + 1 : 2 * (i - JOBS / 2);
            lowcost_remove(&f->plan, jobs[k].period, resv[mode][k]);
        }
        if (mode == 0) {
            assert_memory_equal(f->load, f->saved, N * sizeof(double));
        } else {
            for (uint32_t t = 0; t < N; t++) { /* rounding noise on a free step is cleared */
                assert_float_equal(f->load[t], f->saved[t], 1e-9);
                if (f->saved[t] == 0)
                    assert_true(f->load[t] == 0);
            }
        }
    }
}

/* Greedy: R* as it is (inner zeros kept, outer zeros dropped) at the earliest shift that fits. */
static void greedy_earliest_fit(void **state)
{
    struct fixture *f = *state;
    plan_init(f, 16, 10);
    f->load[2] = 8;
    f->load[3] = 8;
    f->load[9] = 9;
    const double d[] = {3, 3};
    struct lowcost_job j = job(16, 1, 12, d, 2);
    assert_int_equal(lowcost_place_greedy(&f->plan, &j, f->resv), 0);
    assert_float_equal(f->resv[4], 3, 0);
    assert_float_equal(f->resv[5], 3, 0);
    assert_float_equal(sum(f->resv, 16), 6, 0);
    assert_float_equal(f->load[4], 3, 0);
    /* the shape with an inner gap, 3 _ 3 (outer zeros dropped): from 6 (8 + 3 > 10) and 7
     * (9 + 3 > 10 at step 9) it does not fit; from 8 its gap lies over step 9 */
    const double gap[] = {0, 3, 0, 3, 0};
    struct lowcost_job jg = job(16, 6, 16, gap, 5);
    f->load[6] = 8;
    assert_int_equal(lowcost_place_greedy(&f->plan, &jg, f->resv), 0);
    assert_float_equal(f->resv[7], 0, 0);
    assert_float_equal(f->resv[8], 3, 0);
    assert_float_equal(f->resv[9], 0, 0);
    assert_float_equal(f->resv[10], 3, 0);
    assert_float_equal(sum(f->resv, 16), 6, 0);
    assert_float_equal(f->load[9], 9, 0);
}

/* Malformed plans and jobs: ERR_INVAL, nothing changes. */
static void malformed(void **state)
{
    struct fixture *f = *state;
    plan_init(f, 24, 10);
    memcpy(f->saved, f->load, sizeof f->load);
    const double d[] = {1, 2};
    const double neg[] = {1, -1};
    const double nan_d[] = {1, NAN};
    const double inf_d[] = {INFINITY, 1};
    struct lowcost_job bad[] = {
        job(0, 0, 8, d, 2),     /* no period */
        job(7, 0, 7, d, 2),     /* does not divide 24 */
        job(48, 0, 48, d, 2),   /* longer than the plan */
        job(8, 4, 4, d, 2),     /* empty window */
        job(8, 5, 3, d, 2),     /* release after deadline */
        job(8, 0, 9, d, 2),     /* deadline past the period */
        job(8, 0, 8, NULL, 2),  /* no demand */
        job(8, 0, 8, d, 0),     /* no stages */
        job(8, 0, 8, neg, 2),   /* negative demand */
        job(8, 0, 8, nan_d, 2), /* not a number */
        job(8, 0, 8, inf_d, 2), /* infinite */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(lowcost_place(&f->plan, &bad[i], f->resv), ERR_INVAL);
        assert_int_equal(lowcost_place_greedy(&f->plan, &bad[i], f->resv), ERR_INVAL);
    }
    struct lowcost_job ok = job(8, 0, 8, d, 2);
    assert_int_equal(lowcost_place(&f->plan, NULL, f->resv), ERR_INVAL);
    assert_int_equal(lowcost_place(&f->plan, &ok, NULL), ERR_INVAL);
    assert_int_equal(lowcost_place(NULL, &ok, f->resv), ERR_INVAL);
    f->plan.capacity = 0;
    assert_int_equal(lowcost_place(&f->plan, &ok, f->resv), ERR_INVAL);
    f->plan.capacity = NAN;
    assert_int_equal(lowcost_place_greedy(&f->plan, &ok, f->resv), ERR_INVAL);
    f->plan.capacity = 10;
    f->plan.nsteps = 0;
    assert_int_equal(lowcost_place(&f->plan, &ok, f->resv), ERR_INVAL);
    f->plan.nsteps = LOWCOST_MAX_STEPS + 24;
    assert_int_equal(lowcost_place(&f->plan, &ok, f->resv), ERR_INVAL);
    f->plan.nsteps = 24;
    f->plan.load = NULL;
    assert_int_equal(lowcost_place(&f->plan, &ok, f->resv), ERR_INVAL);
    f->plan.load = f->load;
    assert_memory_equal(f->load, f->saved, 24 * sizeof(double));
    /* an all-zero R* is well formed: an empty reservation */
    const double zero[] = {0, 0, 0};
    struct lowcost_job jz = job(8, 0, 8, zero, 3);
    f->resv[0] = 5;
    assert_int_equal(lowcost_place(&f->plan, &jz, f->resv), 0);
    assert_float_equal(sum(f->resv, 8), 0, 0);
    assert_memory_equal(f->load, f->saved, 24 * sizeof(double));
    /* the valid job places */
    assert_int_equal(lowcost_place(&f->plan, &ok, f->resv), 0);
    assert_float_equal(sum(f->resv, 8), 3, 1e-9);
}

/* Every failed allocation is ERR_NOMEM with the plan and resv as they were. */
static void out_of_memory(void **state)
{
    struct fixture *f = *state;
    plan_init(f, 24, 10);
    f->load[3] = 2;
    memcpy(f->saved, f->load, sizeof f->load);
    const double d[] = {2, 3, 1};
    struct lowcost_job j = job(12, 0, 12, d, 3);
    for (long n = 0; n < 6; n++) {
        for (uint32_t x = 0; x < 12; x++)
            f->resv[x] = -1;
        mem_fail_after(n);
        assert_int_equal(lowcost_place(&f->plan, &j, f->resv), ERR_NOMEM);
        mem_fail_after(0);
        assert_int_equal(lowcost_place_greedy(&f->plan, &j, f->resv), ERR_NOMEM);
        mem_fail_reset();
        assert_memory_equal(f->load, f->saved, 24 * sizeof(double));
        assert_float_equal(f->resv[0], -1, 0);
    }
    mem_fail_after(6);
    assert_int_equal(lowcost_place(&f->plan, &j, f->resv), 0);
    mem_fail_reset();
}

/* A day of minutes, 20 jobs of 60 stages: all placed, under capacity, with a lower peak than
 * greedy's for the same jobs; the time LowCost takes is printed. */
static void day_of_twenty(void **state)
{
    struct fixture *f = *state;
    enum { JOBS = 20, STAGES = 60 };
    static double demand[JOBS][STAGES];
    static double resv[JOBS][MAXN];
    struct lowcost_job jobs[JOBS];
    plan_init(f, 1440, 400);
    struct rng seed;
    rng_seed(&seed, 42);
    double work = 0;
    for (uint32_t i = 0; i < JOBS; i++) {
        uint32_t period = (uint32_t[]){1440, 720, 480, 360, 288, 240}[i % 6];
        for (uint32_t k = 0; k < STAGES; k++)
            demand[i][k] = 1 + draw24(&seed) % 40;
        uint32_t release = draw24(&seed) % (period / 3);
        jobs[i] = job(period, release, period, demand[i], STAGES);
        work += sum(demand[i], STAGES) * (1440 / period);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (uint32_t i = 0; i < JOBS; i++)
        assert_int_equal(lowcost_place(&f->plan, &jobs[i], resv[i]), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    for (uint32_t i = 0; i < JOBS; i++)
        assert_float_equal(sum(resv[i], jobs[i].period), sum(demand[i], STAGES), 1e-6);
    assert_under_capacity(&f->plan);
    double low = lowcost_peak(&f->plan);

    struct lowcost_plan g = {1440, 400, f->saved};
    memset(f->saved, 0, sizeof f->saved);
    for (uint32_t i = 0; i < JOBS; i++)
        assert_int_equal(lowcost_place_greedy(&g, &jobs[i], resv[i]), 0);
    double greedy = lowcost_peak(&g);
    print_message("lowcost: 20 jobs x 60 stages in a plan of 1440 steps: %.1f ms; peak %.1f "
                  "tokens (greedy %.1f, mean load %.1f)\n",
                  ms, low, greedy, work / 1440);
    assert_true(low < greedy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(figure7_interval, setup, teardown),
        cmocka_unit_test_setup_teardown(empty_plan_flattens, setup, teardown),
        cmocka_unit_test_setup_teardown(second_avoids_peak, setup, teardown),
        cmocka_unit_test_setup_teardown(periodic_instances, setup, teardown),
        cmocka_unit_test_setup_teardown(full_changes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(conservation_and_remove, setup, teardown),
        cmocka_unit_test_setup_teardown(greedy_earliest_fit, setup, teardown),
        cmocka_unit_test_setup_teardown(malformed, setup, teardown),
        cmocka_unit_test_setup_teardown(out_of_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(day_of_twenty, setup, teardown),
    };
    return cmocka_run_group_tests_name("rm_lowcost", tests, NULL, NULL);
}
