/* test_arbiter.c - the pure arbiter: sized tokens, ARIA bounds against hand-computed values,
 * EDF order, minimums before spare, spare reclaimed for an earlier deadline, a job without a
 * deadline shrinking, admission refusing exactly when the conservative bound says so, the
 * earliest feasible finish, and the price curve's shape. */
#include "common/err.h"
#include "rm/arbiter.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

/* A shape without the calibration fields (rm/arbiter.h). */
#define SHAPE(w, wsd, p, psd, k)                                                                   \
    {                                                                                              \
        .work = (w), .work_sd = (wsd), .path = (p), .path_sd = (psd), .width = (k)                 \
    }

static void sized_tokens(void **state)
{
    (void)state;
    assert_int_equal(arbiter_task_tokens(1.0, 512, 0, 0), 1);
    assert_int_equal(arbiter_task_tokens(0.25, 100, 1.0, 4096), 1);
    assert_int_equal(arbiter_task_tokens(16.0, 1024, 1.0, 4096), 16); /* the example */
    assert_int_equal(arbiter_task_tokens(2.0, 4096, 1.0, 4096), 2);
    assert_int_equal(arbiter_task_tokens(2.01, 4096, 1.0, 4096), 3);
    assert_int_equal(arbiter_task_tokens(1.0, 4097, 1.0, 4096), 2);   /* memory dominates */
    assert_int_equal(arbiter_task_tokens(1.0, 40960, 1.0, 4096), 10); /* 40 GiB: 10 tokens */
    assert_int_equal(arbiter_task_tokens(4.0, 1024, 2.0, 8192), 2);   /* a larger token */
}

/* W = 100 token-s, L = 10 s: low(k) = max(100/k, 10), up(k) = 90/k + 10. */
static void aria_bounds(void **state)
{
    (void)state;
    struct arbiter_shape s = SHAPE(100, 0, 10, 0, 20);
    assert_float_equal(arbiter_time_low(&s, 1), 100, 1e-9);
    assert_float_equal(arbiter_time_up(&s, 1), 100, 1e-9);
    assert_float_equal(arbiter_time_low(&s, 4), 25, 1e-9);
    assert_float_equal(arbiter_time_up(&s, 4), 32.5, 1e-9);
    assert_float_equal(arbiter_time_avg(&s, 4), 28.75, 1e-9);
    assert_float_equal(arbiter_time_low(&s, 20), 10, 1e-9); /* the critical path bounds it */
    assert_float_equal(arbiter_time_up(&s, 20), 14.5, 1e-9);
    /* Verma's n tasks of mean a, max m on k slots: n = 10, a = 10, m = 10 (one stage):
     * low = 100/k, up = 90/k + 10 as above with L = m */
    /* MinEDF: avg(k) = (max(100/k, 10) + 90/k + 10) / 2 <= 30 -> 190/k <= 50 -> k >= 3.8: 4 */
    assert_int_equal(arbiter_min_tokens(&s, 30), 4);
    assert_true(arbiter_time_avg(&s, 3) > 30);
    assert_int_equal(arbiter_min_tokens(&s, 1000), 1);
    assert_int_equal(arbiter_min_tokens(&s, 5), 20); /* cannot be met: all it can use */
    struct arbiter_shape none = SHAPE(0, 0, 0, 0, 0);
    assert_int_equal(arbiter_min_tokens(&none, 10), 0);
    /* the ledger's (and the simulation's) deadline minimum: MinEDF on what is left, or the
     * controller's ask, lowered to its raw allocation when the JM gave one below the ask */
    assert_int_equal(arbiter_deadline_minimum(false, 9, 12, &s, 30), 4);
    assert_int_equal(arbiter_deadline_minimum(true, 0, 12, &s, 30), 12);
    assert_int_equal(arbiter_deadline_minimum(true, 9, 12, &s, 30), 9);
    assert_int_equal(arbiter_deadline_minimum(true, 15, 12, NULL, 30), 12);
    assert_int_equal(arbiter_deadline_minimum(false, 0, 7, NULL, 30), 7); /* no shape: asks */
}

static struct arbiter_job job(uint64_t id, int64_t deadline, uint32_t wanted, uint32_t minimum,
                              uint32_t width)
{
    struct arbiter_job j;
    memset(&j, 0, sizeof j);
    j.id = id;
    j.deadline = deadline;
    j.wanted = wanted;
    j.minimum = minimum;
    j.width = width;
    j.weight = 1;
    return j;
}

static void allocate(enum arbiter_policy p, uint32_t cap, struct arbiter_job *jobs, size_t n)
{
    size_t order[16];
    arbiter_allocate(p, cap, jobs, n, order);
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        sum += jobs[i].grant;
        assert_true(jobs[i].min_part <= jobs[i].grant);
        jobs[i].held = jobs[i].grant; /* the next step starts from this one */
    }
    assert_true(sum <= cap);
}

static void edf_minimums_then_spare(void **state)
{
    (void)state;
    /* ids in arrival order; deadlines 300, 100, 200: EDF serves 2, 3, 1 */
    struct arbiter_job j[4] = {job(1, 300, 3, 3, 10), job(2, 100, 4, 4, 5), job(3, 200, 2, 2, 4),
                               job(4, 0, 20, 0, 20)};
    allocate(ARBITER_MINEDF_WC, 12, j, 4);
    /* minimums 3 + 4 + 2 = 9; spare 3 in EDF order: job 2 is at its width 5 after 1, job 3 takes
     * the other 2 (width 4); job 1 and the best-effort job 4 get none */
    assert_int_equal(j[1].grant, 5);
    assert_int_equal(j[1].min_part, 4);
    assert_int_equal(j[2].grant, 4);
    assert_int_equal(j[2].min_part, 2);
    assert_int_equal(j[0].grant, 3);
    assert_int_equal(j[0].min_part, 3);
    assert_int_equal(j[3].grant, 0);

    /* MinEDF hands no spare to deadline jobs: the rest goes to the job without a deadline */
    allocate(ARBITER_MINEDF, 12, j, 4);
    assert_int_equal(j[1].grant, 4);
    assert_int_equal(j[2].grant, 2);
    assert_int_equal(j[0].grant, 3);
    assert_int_equal(j[3].grant, 3);

    /* the same inputs in another order give the same grants */
    struct arbiter_job r[4] = {j[3], j[2], j[1], j[0]};
    allocate(ARBITER_MINEDF_WC, 12, r, 4);
    allocate(ARBITER_MINEDF_WC, 12, j, 4);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(r[3 - i].grant, j[i].grant);
}

static void capacity_short_edf_first(void **state)
{
    (void)state;
    /* not every minimum fits: the earliest deadlines get theirs, the latest goes short */
    struct arbiter_job j[3] = {job(1, 300, 5, 5, 5), job(2, 100, 4, 4, 4), job(3, 200, 4, 4, 4)};
    allocate(ARBITER_MINEDF_WC, 10, j, 3);
    assert_int_equal(j[1].grant, 4);
    assert_int_equal(j[2].grant, 4);
    assert_int_equal(j[0].grant, 2);
    /* a best-effort job with the earliest deadline waits behind admitted ones */
    j[1].best_effort = true;
    allocate(ARBITER_MINEDF_WC, 10, j, 3);
    assert_int_equal(j[2].grant, 4);
    assert_int_equal(j[0].grant, 5);
    assert_int_equal(j[1].grant, 1);
}

static void spare_reclaimed_for_earlier_deadline(void **state)
{
    (void)state;
    struct arbiter_job j[2] = {job(1, 500, 2, 2, 10), job(2, 0, 0, 0, 0)};
    allocate(ARBITER_MINEDF_WC, 10, j, 1);
    assert_int_equal(j[0].grant, 10); /* alone: its minimum and all the spare */
    assert_int_equal(j[0].min_part, 2);
    /* a job due earlier arrives needing 6: job 1 keeps its minimum, its spare shrinks to 2 */
    j[1] = job(2, 100, 6, 6, 6);
    allocate(ARBITER_MINEDF_WC, 10, j, 2);
    assert_int_equal(j[1].grant, 6);
    assert_int_equal(j[0].grant, 4);
    assert_int_equal(j[0].min_part, 2);
    /* it needs 8: job 1 is down to its minimum */
    j[1].minimum = j[1].wanted = j[1].width = 8;
    allocate(ARBITER_MINEDF_WC, 10, j, 2);
    assert_int_equal(j[1].grant, 8);
    assert_int_equal(j[0].grant, 2);
    /* it ends: the spare comes back */
    allocate(ARBITER_MINEDF_WC, 10, j, 1);
    assert_int_equal(j[0].grant, 10);
}

static void best_effort_shrinks(void **state)
{
    (void)state;
    struct arbiter_job j[3] = {job(1, 0, 10, 0, 10), job(2, 0, 10, 0, 10), job(3, 0, 0, 0, 0)};
    j[1].weight = 3;
    allocate(ARBITER_MINEDF_WC, 8, j, 2);
    assert_int_equal(j[0].grant, 2); /* weights 1:3 */
    assert_int_equal(j[1].grant, 6);
    /* a deadline job's minimum comes first: the two without a deadline share what is left */
    j[2] = job(3, 100, 4, 4, 4);
    allocate(ARBITER_MINEDF_WC, 8, j, 3);
    assert_int_equal(j[2].grant, 4);
    assert_int_equal(j[0].grant + j[1].grant, 4);
    assert_int_equal(j[1].grant, 3);
    assert_int_equal(j[0].min_part + j[1].min_part, 0); /* all of it is spare */
    /* one wants little: the other takes the rest (water-filling) */
    j[1].wanted = 1;
    allocate(ARBITER_MINEDF_WC, 8, j, 3);
    assert_int_equal(j[1].grant, 1);
    assert_int_equal(j[0].grant, 3);
}

static void fcfs_and_edf_keep(void **state)
{
    (void)state;
    /* FCFS: first come, first served up to what each wants, nothing taken back */
    struct arbiter_job j[2] = {job(1, 0, 8, 0, 8), job(2, 100, 6, 6, 6)};
    allocate(ARBITER_FCFS, 10, j, 2);
    assert_int_equal(j[0].grant, 8);
    assert_int_equal(j[1].grant, 2);
    /* EDF serves the deadline first from free tokens, but job 1 keeps the 8 it holds */
    allocate(ARBITER_EDF, 10, j, 2);
    assert_int_equal(j[0].grant, 8);
    assert_int_equal(j[1].grant, 2);
    j[0].wanted = 3; /* job 1 gives back: EDF hands the freed tokens to job 2 */
    allocate(ARBITER_EDF, 10, j, 2);
    assert_int_equal(j[0].grant, 3);
    assert_int_equal(j[1].grant, 6);
    assert_int_equal(arbiter_policy_parse("minedf_wc"), ARBITER_MINEDF_WC);
    assert_int_equal(arbiter_policy_parse("lottery"), -1);
}

/* An empty 10-token cluster; a job of W = 100, L = 10, width 10: alone it finishes at
 * W/10 + L(1 - 1/10) = 19 s (Graham); the median is (max(10, 10) + 19) / 2 = 14.5 s. */
static void admission_alone(void **state)
{
    (void)state;
    struct arbiter_shape s = SHAPE(100, 0, 10, 0, 10);
    struct arbiter_quote q;
    assert_int_equal(arbiter_admit(1.645, 10, NULL, 0, &s, 19, &q), 0);
    assert_true(q.admit);
    assert_float_equal(q.finish, 19, 1e-6);
    assert_float_equal(q.finish_p50, 14.5, 1e-6);
    assert_float_equal(q.eff, 19, 1e-6);
    assert_float_equal(q.eff_p50, 14.5, 1e-6);
    /* refused exactly below the bound */
    assert_int_equal(arbiter_admit(1.645, 10, NULL, 0, &s, 18.99, &q), 0);
    assert_false(q.admit);
    assert_int_equal(q.breaks, 0);
    assert_float_equal(q.eff, 19, 1e-6);
    /* the conservative bound counts k standard deviations: sd 10 token-s at k = 2 is 120
     * token-s, 12 + 9 = 21 s */
    s.work_sd = 10;
    assert_int_equal(arbiter_admit(2, 10, NULL, 0, &s, 20, &q), 0);
    assert_false(q.admit);
    assert_float_equal(q.eff, 21, 1e-6);
    assert_float_equal(q.eff_p50, 14.5, 1e-6);
    struct arbiter_shape none = SHAPE(0, 0, 0, 0, 1);
    assert_int_equal(arbiter_admit(2, 10, NULL, 0, &none, 20, &q), ERR_INVAL);
}

/* The same job with its list schedule known (alpha) and a calibrated cluster (scale): a
 * simulated makespan of 12.25 s between the bounds 10 and 19 is alpha = 0.25; the median is
 * then that makespan, the bound the same place between the bounds of the scaled shape. */
static void admission_calibrated(void **state)
{
    (void)state;
    struct arbiter_shape s = SHAPE(100, 0, 10, 0, 10);
    s.has_alpha = true;
    s.alpha = 0.25;
    struct arbiter_quote q;
    assert_int_equal(arbiter_admit(1.645, 10, NULL, 0, &s, 0, &q), 0);
    assert_float_equal(q.finish_p50, 12.25, 1e-6);
    assert_float_equal(q.finish, 12.25, 1e-6); /* scale 0 is 1: no margin */
    /* scale 1.2: W 120, L 12: bounds 12 and 22.8, a quarter of the way is 14.7 s */
    s.scale = 1.2;
    assert_int_equal(arbiter_admit(1.645, 10, NULL, 0, &s, 14.7, &q), 0);
    assert_true(q.admit);
    assert_float_equal(q.finish_p50, 12.25, 1e-6);
    assert_float_equal(q.finish, 14.7, 1e-6);
    assert_int_equal(arbiter_admit(1.645, 10, NULL, 0, &s, 14.6, &q), 0);
    assert_false(q.admit);
    assert_float_equal(q.eff, 14.7, 1e-6);
    /* the profile's own spread still adds k sd on top: 10 token-s at k = 2 */
    s.work_sd = 10;
    assert_int_equal(arbiter_admit(2, 10, NULL, 0, &s, 0, &q), 0);
    assert_float_equal(q.eff, 14 + 0.25 * (24.8 - 14), 1e-6); /* W 140, L 12 */
    /* an out-of-range alpha is clamped: 1 is Graham's upper bound */
    s = (struct arbiter_shape)SHAPE(100, 0, 10, 0, 10);
    s.has_alpha = true;
    s.alpha = 7;
    assert_int_equal(arbiter_admit(1.645, 10, NULL, 0, &s, 0, &q), 0);
    assert_float_equal(q.finish_p50, 19, 1e-6);
}

static void admission_with_load(void **state)
{
    (void)state;
    /* admitted: job 7 needs the whole 10-token cluster for 10 s (W = 100, L = 0), due at 12 */
    struct arbiter_load load[1] = {{7, 12, SHAPE(100, 0, 0, 0, 10)}};
    struct arbiter_shape s = SHAPE(50, 0, 0, 0, 10);
    struct arbiter_quote q;
    /* due at 6: it goes first and takes 5 s; job 7 would end at 15 > 12: refused, job 7 named */
    assert_int_equal(arbiter_admit(1.645, 10, load, 1, &s, 6, &q), 0);
    assert_false(q.admit);
    assert_int_equal(q.breaks, 7);
    /* behind job 7 it ends at 15: that is the earliest feasible finish */
    assert_float_equal(q.eff, 15, 1e-6);
    assert_int_equal(arbiter_admit(1.645, 10, load, 1, &s, 15, &q), 0);
    assert_true(q.admit);
    assert_float_equal(q.finish, 15, 1e-6);
    /* with slack in job 7 (due at 20), the new job can go first: 5 s, and job 7 ends at 15 */
    load[0].deadline = 20;
    assert_int_equal(arbiter_admit(1.645, 10, load, 1, &s, 6, &q), 0);
    assert_true(q.admit);
    assert_float_equal(q.finish, 5, 1e-6);
    assert_float_equal(q.eff, 5, 1e-6);
    /* a narrow admitted job leaves room beside it: width 4 for 25 s, the new one runs at 6 */
    load[0] = (struct arbiter_load){7, 30, SHAPE(100, 0, 0, 0, 4)};
    assert_int_equal(arbiter_admit(1.645, 10, load, 1, &s, 40, &q), 0);
    assert_true(q.admit);
    assert_float_equal(q.finish, 50.0 / 6, 1e-6);
}

static void price_curve_falls(void **state)
{
    (void)state;
    struct arbiter_load load[2] = {{1, 30, SHAPE(100, 10, 5, 1, 10)},
                                   {2, 60, SHAPE(200, 20, 5, 1, 10)}};
    struct arbiter_shape s = SHAPE(80, 8, 4, 1, 10);
    struct arbiter_price pts[16];
    int n = arbiter_price_curve(1.645, 10, load, 2, &s, pts, 16);
    assert_true(n >= 8);
    struct arbiter_quote q;
    assert_int_equal(arbiter_admit(1.645, 10, load, 2, &s, 0, &q), 0);
    assert_float_equal(pts[0].deadline, q.eff, 1e-9);
    for (int i = 1; i < n; i++) {
        assert_true(pts[i].deadline > pts[i - 1].deadline);
        assert_true(pts[i].price <= pts[i - 1].price + 1e-9); /* falls with slack */
        assert_true(pts[i].slack >= pts[i - 1].slack - 1e-9);
    }
    /* non-linear: it halves by a slack of 1 (p/(δ+1)), and never goes below zero */
    assert_true(pts[n - 1].price < pts[0].price / 2);
    assert_true(pts[n - 1].price > 0);
    /* proportional to work: twice the work, about twice the price at zero slack */
    struct arbiter_shape s2 = s;
    s2.work *= 2;
    s2.work_sd *= 2;
    struct arbiter_price p2[16];
    assert_true(arbiter_price_curve(1.645, 10, NULL, 0, &s2, p2, 16) > 0);
    assert_true(arbiter_price_curve(1.645, 10, NULL, 0, &s, pts, 16) > 0);
    assert_float_equal(p2[0].price / pts[0].price, 2.0, 0.3);
}

/* Morpheus §6-7: a run's reservation comes first, held-back reservations are kept from
 * minimums but lent as spare, reprovisioning takes free tokens before held-back ones. */
static void reservations_first(void **state)
{
    (void)state;
    size_t order[4];
    /* A: a recurring run (deadline 500) reserved 6; B: deadline 100, minimum 8 */
    struct arbiter_job j[2] = {job(1, 500, 6, 6, 6), job(2, 100, 8, 8, 8)};
    j[0].reserved = 6;
    arbiter_allocate_plan(ARBITER_MINEDF_WC, 10, 0, j, 2, order);
    assert_int_equal(j[0].grant, 6); /* despite the later deadline */
    assert_int_equal(j[0].min_part, 6);
    assert_int_equal(j[1].grant, 4);

    /* 4 tokens held back for a recurring job with no run now: B's minimum stops at 6, but
     * the held-back tokens are lent as spare (MinEDF-WC) */
    struct arbiter_job b[1] = {job(2, 100, 8, 8, 10)};
    arbiter_allocate_plan(ARBITER_MINEDF_WC, 10, 4, b, 1, order);
    assert_int_equal(b[0].min_part, 6);
    assert_int_equal(b[0].grant, 10);
    /* under MinEDF (no spare to deadline jobs) they stay unused */
    arbiter_allocate_plan(ARBITER_MINEDF, 10, 4, b, 1, order);
    assert_int_equal(b[0].grant, 6);

    /* reprovisioning: A reserved 4 may take 4 more; B's minimum 3 comes first; A's extra
     * takes the 3 free tokens, then 1 of the 2 held back */
    struct arbiter_job r[2] = {job(1, 500, 8, 4, 8), job(2, 100, 3, 3, 3)};
    r[0].reserved = 4;
    r[0].extra = 4;
    arbiter_allocate_plan(ARBITER_MINEDF_WC, 12, 2, r, 2, order);
    assert_int_equal(r[1].grant, 3);
    assert_int_equal(r[0].grant, 8);
    assert_int_equal(r[0].min_part, 8); /* all of it guaranteed: none is spare */
    /* without held-back tokens it gets only the free ones */
    arbiter_allocate_plan(ARBITER_MINEDF_WC, 10, 0, r, 2, order);
    assert_int_equal(r[0].grant, 7);
    uint64_t sum = r[0].grant + r[1].grant;
    assert_true(sum <= 10);
}

/* Admission against a plan: 10 tokens reserved for the first 5 s leave nothing then. */
static void admission_against_plan(void **state)
{
    (void)state;
    struct arbiter_shape s = SHAPE(100, 0, 1, 0, 10);
    struct arbiter_quote q;
    assert_int_equal(arbiter_admit(1, 10, NULL, 0, &s, 12, &q), 0);
    assert_true(q.admit);
    double t[2] = {0, 5}, tok[2] = {10, 0};
    struct arbiter_reserve plan = {t, tok, 2};
    assert_int_equal(arbiter_admit_plan(1, 10, &plan, NULL, 0, &s, 12, &q), 0);
    assert_false(q.admit);
    assert_true(q.eff >= 15 - 1e-9); /* 5 s reserved, then 10 s of work */
    /* half the capacity reserved for good: twice as long */
    double t2[1] = {0}, tok2[1] = {5};
    struct arbiter_reserve half = {t2, tok2, 1};
    assert_int_equal(arbiter_admit_plan(1, 10, &half, NULL, 0, &s, 30, &q), 0);
    assert_true(q.admit);
    assert_true(q.finish >= 20 - 1e-9 && q.finish <= 21 + 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sized_tokens),
        cmocka_unit_test(aria_bounds),
        cmocka_unit_test(edf_minimums_then_spare),
        cmocka_unit_test(capacity_short_edf_first),
        cmocka_unit_test(spare_reclaimed_for_earlier_deadline),
        cmocka_unit_test(best_effort_shrinks),
        cmocka_unit_test(fcfs_and_edf_keep),
        cmocka_unit_test(admission_alone),
        cmocka_unit_test(admission_calibrated),
        cmocka_unit_test(admission_with_load),
        cmocka_unit_test(price_curve_falls),
        cmocka_unit_test(reservations_first),
        cmocka_unit_test(admission_against_plan),
    };
    return cmocka_run_group_tests_name("arbiter", tests, NULL, NULL);
}
