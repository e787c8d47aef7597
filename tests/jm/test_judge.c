/* test_judge.c - the one step the daemon and the simulator share for the correction and
 * speculation rules' inputs (jm/judge.h): what it fills from the estimator and the view, that no
 * other node is looked at when the rule cannot act, and the verdicts it passes on; and whether a
 * freed token re-places an opportunistic task or upgrades it in place (judge_upgrade). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>

#include <cmocka.h>

#include "jm/judge.h"
#include "jm/view.h"
#include "jm_fixture.h"

struct skip_ctx {
    uint32_t self;
    int calls;
};

/* The node the task is on is not a place for a second attempt; counts the looks. */
static int skip_self(void *ctx, uint32_t n)
{
    struct skip_ctx *c = ctx;
    c->calls++;
    return n == c->self;
}

struct world {
    view_t *v;
    estimator_t *est;
    uint32_t busy, idle;
    struct estimator_task t;
};

static void world_init(struct world *w)
{
    w->v = NULL;
    assert_int_equal(view_new(&w->v), 0);
    w->busy = fx_node(w->v, "busy", "r1", 8, 1, 0); /* 8 s of work ahead, 16 cpus */
    w->idle = fx_node(w->v, "idle", "r1", 0, 1, 0);
    w->est = NULL;
    assert_int_equal(estimator_new(NULL, 1, &w->est), 0);
    w->t = (struct estimator_task){.stage = SIZE_MAX, .cpu = 1, .mem_mb = 512, .runtime_s = 1};
}

static void world_close(struct world *w)
{
    estimator_destroy(&w->est);
    view_destroy(&w->v);
}

static void test_queued_stuck_task(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    struct skip_ctx sk = {w.busy, 0};
    struct judge_where wh = {w.est, w.v, &w.t, 0, skip_self, &sk};
    struct judge_queued q = {.node = w.busy,
                             .waited_s = 1.5,
                             .placed_wait_s = 0,
                             .pn_wait_s = -1, /* no PN report: the matrix less its own share */
                             .speculate = 1};
    struct correct_dup_input in;
    struct estimate alt;
    unsigned conds = 0;
    long to = -7;
    assert_int_equal(
        judge_queued(NULL, CORRECT_MODE_DUPLICATE, &wh, &q, &to, &alt, &in, &conds, NULL),
        CORRECT_ACT_DUPLICATE);
    assert_int_equal(to, (long)w.idle);
    assert_true(conds & CORRECT_COND_WAIT_GREW);
    assert_true(sk.calls > 0);
    assert_true(in.q.run_s > 0);
    /* its own share of the 16-cpu node's wait: R x 1/16 */
    assert_true(fabs(in.q.own_share_s - in.q.run_s / 16) < 1e-9);
    assert_true(fabs(in.q.alt_c_s - alt.e_s) < 1e-9);
    assert_true(in.stage_avg_wait_s < 0); /* no stage average yet */
    q.no_room = 1;                        /* no class for a duplicate: it moves */
    assert_int_equal(
        judge_queued(NULL, CORRECT_MODE_DUPLICATE, &wh, &q, &to, &alt, NULL, NULL, NULL),
        CORRECT_ACT_MOVE);
    q.speculate = 0, q.no_room = 0; /* "speculate": false moves too */
    assert_int_equal(
        judge_queued(NULL, CORRECT_MODE_DUPLICATE, &wh, &q, &to, &alt, NULL, NULL, NULL),
        CORRECT_ACT_MOVE);
    q.stage_wait_sum_s = 3, q.stage_wait_n = 2;
    assert_int_equal(judge_queued(NULL, CORRECT_MODE_MOVE, &wh, &q, &to, &alt, &in, NULL, NULL),
                     CORRECT_ACT_MOVE);
    assert_true(fabs(in.stage_avg_wait_s - 1.5) < 1e-9);
    world_close(&w);
}

static void test_queued_too_soon_looks_nowhere(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    struct skip_ctx sk = {w.busy, 0};
    struct judge_where wh = {w.est, w.v, &w.t, 0, skip_self, &sk};
    struct judge_queued q = {
        .node = w.busy, .waited_s = 0.1, .pn_wait_s = -1, .speculate = 1, .no_room = 1};
    struct estimate alt;
    long to = 5;
    unsigned conds = 9;
    assert_int_equal(
        judge_queued(NULL, CORRECT_MODE_DUPLICATE, &wh, &q, &to, &alt, NULL, &conds, NULL),
        CORRECT_NONE);
    assert_int_equal(to, -1);
    assert_int_equal(conds, 0);
    assert_int_equal(sk.calls, 0); /* no node was looked at */
    world_close(&w);
}

static void test_running_straggler(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    struct speculate_dist d;
    speculate_dist_init(&d);
    for (int i = 0; i < 8; i++)
        assert_int_equal(speculate_dist_add(&d, 0.9 + 0.025 * i), 0);
    struct skip_ctx sk = {w.busy, 0};
    struct judge_where wh = {w.est, w.v, &w.t, 0, skip_self, &sk};
    struct judge_running r = {.elapsed_s = 0.5,
                              .fallback_r_s = 1,
                              .dist = &d,
                              .cpu = 1,
                              .speculate = 1,
                              .job_running = 4,
                              .job_tasks = 100,
                              .stage_tasks = 50};
    long to = 5;
    struct estimate e;
    struct speculate_input in;
    double rr = 0;
    /* half its peers' time: fine, and no node is looked at */
    assert_int_equal(judge_running(NULL, &wh, &r, &to, &e, &in, NULL, &rr), SPECULATE_NO);
    assert_int_equal(to, -1);
    assert_int_equal(sk.calls, 0);
    assert_true(rr > 0);
    assert_true(in.progress < 0); /* no reading from the PN */
    r.elapsed_s = 6;              /* six times its peers' */
    struct speculate_why why;
    assert_int_equal(judge_running(NULL, &wh, &r, &to, &e, &in, &why, NULL), SPECULATE_COPY);
    assert_int_equal(to, (long)w.idle);
    assert_true(fabs(in.copy_c_s - e.e_s) < 1e-9);
    assert_true(in.copy_spread_s > 0);
    r.cpu_s = 0.5; /* half its CPU done by the PN's reading */
    (void)judge_running(NULL, &wh, &r, &to, &e, &in, NULL, &rr);
    assert_true(fabs(in.progress - 0.5 / rr) < 1e-6);
    r.speculate = 0;
    assert_int_not_equal(judge_running(NULL, &wh, &r, &to, &e, NULL, NULL, NULL), SPECULATE_COPY);
    speculate_dist_close(&d);
    world_close(&w);
}

/* An opportunistic task a freed token upgrades: re-placed on the idle node when its own node's
 * wait is long, upgraded in place when its node is as good, when no other node is free to go to,
 * and when the view does not know its node. */
static void test_upgrade_replaces_only_when_worth_it(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    struct skip_ctx sk = {w.busy, 0};
    struct judge_where wh = {w.est, w.v, &w.t, 0, skip_self, &sk};
    struct estimate alt;
    long to = 5;
    double here = 0;
    /* queued behind 8 s of work: the idle node finishes it ~8 s sooner */
    assert_int_equal(judge_upgrade(NULL, &wh, w.busy, 3.0, &to, &alt, &here), 1);
    assert_int_equal(to, (long)w.idle);
    assert_true(here > 8);
    assert_true(alt.e_s < here - 5);
    assert_true(sk.calls > 0);
    /* on the idle node already: the busy one is no better, upgraded in place */
    struct skip_ctx sk2 = {w.idle, 0};
    wh.skip_ctx = &sk2;
    to = 5;
    assert_int_equal(judge_upgrade(NULL, &wh, w.idle, 3.0, &to, &alt, NULL), 0);
    assert_int_equal(to, -1);
    /* on the busy node, but the idle one is taken by the task's other attempt: in place */
    struct skip_ctx sk3 = {w.idle, 0};
    wh.skip = skip_self;
    wh.skip_ctx = &sk3;
    uint32_t third = fx_node(w.v, "third", "r1", 8, 1, 0); /* as busy as its own node */
    to = 5;
    assert_int_equal(judge_upgrade(NULL, &wh, w.busy, 3.0, &to, &alt, NULL), 0);
    assert_int_equal(to, -1);
    (void)third;
    /* a node the view does not know: no estimate here, in place */
    wh.skip_ctx = &sk;
    assert_int_equal(judge_upgrade(NULL, &wh, 999, 3.0, &to, &alt, &here), 0);
    assert_int_equal(to, -1);
    world_close(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queued_stuck_task),
        cmocka_unit_test(test_queued_too_soon_looks_nowhere),
        cmocka_unit_test(test_running_straggler),
        cmocka_unit_test(test_upgrade_replaces_only_when_worth_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
