/* test_place_own.c - a job's own running opportunistic work is no room for its tasks (issue 22,
 * no self-preemption; jm/place.h place_own_update).
 *
 * A PN never preempts a job's opportunistic task for the same job's regular one: it swaps their
 * classes and, when the arriving task is the only one of the job queued there, hands that task
 * back to the JM (pn/queue.h queue_swap). Its matrix counts regular work only, so a node whose
 * cores hold the job's own opportunistic work looks idle. A critical task sent there came back,
 * and then waited in the JM for a token (1-3 returns, 2.5 s lost on a cycles critical chain).
 * Here: a node whose both cores hold the job's running opportunistic task. Before the fix the
 * critical task was matched there with no wait and sent; now the node has no room, the task
 * goes to the node that can start it soonest, or is held in the JM while none can. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "jm/attempt.h"
#include "jm/dag.h"
#include "jm/dispatch.h"
#include "jm/estimator.h"
#include "jm/place.h"
#include "jm/spec.h"
#include "jm/view.h"
#include "proto/proto.h"

/* x: the job's regular work elsewhere; o: two cores, runs opportunistic; r: the critical task */
static const char *SPEC =
    "{\"version\":1,\"tasks\":["
    "{\"id\":\"x\",\"cmd\":[\"true\"],\"cpu\":1,\"mem_mb\":512,\"runtime_s\":5},"
    "{\"id\":\"o\",\"cmd\":[\"true\"],\"cpu\":2,\"mem_mb\":512,\"runtime_s\":5},"
    "{\"id\":\"r\",\"cmd\":[\"true\"],\"cpu\":1,\"mem_mb\":512,\"runtime_s\":1}]}";

static double draw_half(void *ctx)
{
    (void)ctx;
    return 0.5;
}

/* A 2-core node whose regular work leaves `free_cpu` cores free now; the rest wait `wait_s`. */
static uint32_t node2(view_t *v, const char *name, double free_cpu, double wait_s, uint64_t seq,
                      int64_t now_ms)
{
    double cpu_bins[2] = {1, 2}, mem_bins[1] = {4096};
    double cells[2] = {free_cpu >= 1 ? 0 : wait_s, free_cpu >= 2 ? 0 : wait_s};
    struct view_entry e = {.name = name,
                           .rack = "r0",
                           .cpu = 2,
                           .mem_mb = 4096,
                           .up = 1,
                           .boot_id = 1,
                           .seq = seq,
                           .ncpu = 2,
                           .nmem = 1,
                           .cpu_bins = cpu_bins,
                           .mem_bins_mb = mem_bins,
                           .wait_s = cells};
    assert_int_equal(view_update(v, &e, now_ms), 1);
    return (uint32_t)view_find(v, name);
}

struct fx {
    struct spec *spec;
    dag_t *dag;
    dispatch_t *disp;
    attempt_t *att;
    view_t *view;
    estimator_t *est;
    place_t *place;
    struct place_config cfg;
};

static void fx_open(struct fx *f)
{
    memset(f, 0, sizeof *f);
    char msg[256];
    assert_int_equal(spec_parse(SPEC, strlen(SPEC), NULL, &f->spec, msg, sizeof msg), 0);
    assert_int_equal(dag_new(f->spec, &f->dag), 0);
    assert_int_equal(dispatch_new(NULL, f->spec->ntasks, &f->disp), 0);
    assert_int_equal(attempt_new(NULL, f->spec->ntasks, f->dag, f->disp, NULL, 0, &f->att), 0);
    assert_int_equal(view_new(&f->view), 0);
    assert_int_equal(estimator_new(NULL, f->spec->nstages, &f->est), 0);
    place_config_daemon(&f->cfg); /* as the daemon and the simulator place */
    assert_int_equal(place_new(f->spec, &f->cfg, &f->place), 0);
}

static void fx_close(struct fx *f)
{
    place_destroy(&f->place);
    estimator_destroy(&f->est);
    view_destroy(&f->view);
    attempt_destroy(&f->att);
    dispatch_destroy(&f->disp);
    dag_destroy(&f->dag);
    spec_destroy(&f->spec);
}

/* Sends `task` to `node` (its class from the dispatcher) and has the node say it runs. */
static void run_on(struct fx *f, size_t task, uint32_t node, int want_cls, int64_t now)
{
    int cls = dispatch_place(f->disp, task);
    assert_int_equal(cls, want_cls);
    struct attempt_action act[ATTEMPT_MAX_ACTIONS];
    struct attempt_event ev = {
        .kind = ATTEMPT_EV_PLACED, .task = task, .node = (int)node, .cls = cls};
    assert_true(attempt_step(f->att, &ev, now, act, ATTEMPT_MAX_ACTIONS) >= 1);
    assert_int_equal(act[0].kind, ATTEMPT_ACT_CREATE);
    ev = (struct attempt_event){.kind = ATTEMPT_EV_STATUS,
                                .task = task,
                                .attempt = act[0].attempt,
                                .state = PROTO_TASK_RUNNING,
                                .cls = cls};
    assert_true(attempt_step(f->att, &ev, now + 1, act, ATTEMPT_MAX_ACTIONS) >= 0);
    assert_int_equal(attempt_get(f->att, task)->running, 1);
    assert_int_equal(attempt_get(f->att, task)->cls, cls);
}

/* The job holds one token: x runs regular on b, o runs opportunistic on both cores of a. Then
 * the token is free again (x's grant grows to 2) and r, critical, is placed. */
static void fx_scene(struct fx *f, uint32_t *a, uint32_t *b)
{
    *a = node2(f->view, "a", 2, 0, 1, 0);   /* o is invisible to the matrix: a looks idle */
    *b = node2(f->view, "b", 1, 0.5, 1, 0); /* x holds one core, the other is free */
    assert_int_equal(view_refresh_light(f->view, 10), 0);
    assert_int_equal(place_resolve(f->place, f->view), 0);
    dispatch_set_tokens(f->disp, 1);
    dispatch_set_factor(f->disp, 2); /* an opportunistic allowance of two units */
    dispatch_round(f->disp);
    run_on(f, 0, *b, DISPATCH_REGULAR, 10);
    dispatch_round(f->disp);
    run_on(f, 1, *a, DISPATCH_OPPORTUNISTIC, 10);
    dispatch_set_tokens(f->disp, 2); /* a unit for r */
    dispatch_round(f->disp);
}

static void test_own_opportunistic_is_no_room(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    uint32_t a, b;
    fx_scene(&f, &a, &b);
    /* b's second core is taken too (x's sibling, another job): no node can start r now */
    node2(f.view, "b", 0, 0.5, 2, 20);
    assert_int_equal(view_refresh_light(f.view, 20), 0);

    assert_int_equal(place_own_update(f.place, f.att), 0);
    struct matcher_room own = place_own(f.place, a), room;
    assert_true(own.cpu == 2 && own.mem_mb == 512);
    assert_true(place_own(f.place, b).cpu == 0); /* x is regular: the matrix shows it */
    assert_int_equal(place_room(f.place, f.view, a, &room), 0);
    assert_true(room.cpu == 0); /* a's two cores are o's */

    size_t task = 2;
    struct place_match m[1];
    size_t n = 0;
    assert_int_equal(place_round(f.place, f.view, f.est, &task, 1, 30, draw_half, NULL, m, &n), 0);
    assert_int_equal(n, 1);
    /* before the fix: a, no wait, sent (and handed back by a's swap); now it waits for a core
       in the JM rather than be bound behind its own job's opportunistic work */
    assert_true(m[0].est.w_s > PLACE_HOLD_WAIT_S);
    assert_int_equal(place_hold(&f.cfg, &m[0], 0), 1);
    assert_int_equal(place_yield(&f.cfg, &m[0]), 0);
    fx_close(&f);
}

static void test_goes_where_it_starts(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    uint32_t a, b;
    fx_scene(&f, &a, &b);
    size_t task = 2;
    struct place_match m[1];
    size_t n = 0;
    assert_int_equal(place_own_update(f.place, f.att), 0);
    assert_int_equal(place_round(f.place, f.view, f.est, &task, 1, 30, draw_half, NULL, m, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(m[0].node, b); /* b's free core, not a's that o holds */
    assert_true(m[0].est.w_s <= PLACE_HOLD_WAIT_S);
    assert_int_equal(place_hold(&f.cfg, &m[0], 0), 0);

    /* o ends: a is room again, for the next update */
    const struct attempt_task *ot = attempt_get(f.att, 1);
    struct attempt_action act[ATTEMPT_MAX_ACTIONS];
    struct attempt_event ev = {.kind = ATTEMPT_EV_STATUS,
                               .task = 1,
                               .attempt = ot->attempt,
                               .state = PROTO_TASK_SUCCEEDED,
                               .cls = DISPATCH_OPPORTUNISTIC};
    assert_true(attempt_step(f.att, &ev, 40, act, ATTEMPT_MAX_ACTIONS) >= 1);
    assert_true(place_own(f.place, a).cpu == 2); /* until the caller updates */
    assert_int_equal(place_own_update(f.place, f.att), 0);
    assert_true(place_own(f.place, a).cpu == 0);
    struct matcher_room room;
    assert_int_equal(place_room(f.place, f.view, a, &room), 0);
    assert_true(room.cpu == 2);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_opportunistic_is_no_room),
        cmocka_unit_test(test_goes_where_it_starts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
