/* test_place_critical.c - a critical task is neither held in the JM behind its own job's
 * lower-priority work nor left waiting while a lower-priority task takes the core that starts
 * now (issue 22, "critical paths that do not wait"; jm/place.h place_overtakes and
 * priority_first).
 *
 * Late binding (place_hold) keeps a task in the JM while its best node has no room, for at
 * most 2 s. On cycles, the join task that starts the critical tail became ready while the job's
 * lower-priority tasks filled every node's queue: no node ever showed room (each freed core went
 * to a queued task), so it waited the whole hold, 0.4-2.0 s on the critical path every run,
 * though at any of those nodes the PN would have started it ahead of them (pn/queue.h: within
 * one job the JM's priority decides). And the stable matcher orders by cost, not priority: a
 * lower-priority task could take the only node that starts work now while the critical one was
 * matched where it waits, and held. */
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

/* q: the job's low-priority work (its input on node a); r: the critical task (bottom levels
 * below: PRIO) */
static const char *SPEC =
    "{\"version\":1,\"tasks\":["
    "{\"id\":\"q\",\"cmd\":[\"true\"],\"cpu\":1,\"mem_mb\":512,\"runtime_s\":1,"
    "\"inputs\":[{\"bytes\":1000000000,\"nodes\":[\"a\"]}]},"
    "{\"id\":\"q2\",\"cmd\":[\"true\"],\"cpu\":1,\"mem_mb\":512,\"runtime_s\":1},"
    "{\"id\":\"r\",\"cmd\":[\"true\"],\"cpu\":1,\"mem_mb\":512,\"runtime_s\":5}]}";
static const double PRIO[3] = {1.0, 1.0, 8.0};

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

/* Sends `task` to `node` as the dispatcher classes it; it stays queued there. */
static void queue_on(struct fx *f, size_t task, uint32_t node, int want_cls, int64_t now)
{
    int cls = dispatch_place(f->disp, task);
    assert_int_equal(cls, want_cls);
    struct attempt_action act[ATTEMPT_MAX_ACTIONS];
    struct attempt_event ev = {
        .kind = ATTEMPT_EV_PLACED, .task = task, .node = (int)node, .cls = cls};
    assert_true(attempt_step(f->att, &ev, now, act, ATTEMPT_MAX_ACTIONS) >= 1);
    assert_int_equal(act[0].kind, ATTEMPT_ACT_CREATE);
}

/* Both nodes busy (a: a core in 0.5 s, b: in 1.5 s); the job's q is queued regular at a. r,
 * critical, is matched to a, where it waits: place_hold keeps it in the JM, place_overtakes
 * says it would start ahead of q there, so it is sent. */
static void test_overtakes_own_queued_work(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    uint32_t a = node2(f.view, "a", 0, 0.5, 1, 0);
    uint32_t b = node2(f.view, "b", 0, 1.5, 1, 0);
    assert_int_equal(view_refresh_light(f.view, 10), 0);
    assert_int_equal(place_resolve(f.place, f.view), 0);
    dispatch_set_tokens(f.disp, 2);
    dispatch_round(f.disp);
    queue_on(&f, 0, a, DISPATCH_REGULAR, 10);

    size_t task = 2;
    struct place_match m[1];
    size_t n = 0;
    assert_int_equal(place_queued_update(f.place, f.att, PRIO), 0);
    assert_int_equal(place_round(f.place, f.view, f.est, &task, 1, 20, draw_half, NULL, m, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(m[0].node, a);
    assert_true(m[0].est.w_s > PLACE_HOLD_WAIT_S);
    assert_int_equal(place_hold(&f.cfg, &m[0], 0), 1); /* before: held up to 2 s */
    assert_int_equal(place_overtakes(f.place, &m[0], PRIO), 1);

    /* not ahead of its equals, nor where its job has nothing queued */
    double flat[3] = {1.0, 1.0, 1.0};
    assert_int_equal(place_queued_update(f.place, f.att, flat), 0);
    assert_int_equal(place_overtakes(f.place, &m[0], flat), 0);
    assert_int_equal(place_queued_update(f.place, f.att, PRIO), 0);
    struct place_match on_b = m[0];
    on_b.node = b;
    assert_int_equal(place_overtakes(f.place, &on_b, PRIO), 0);

    /* q starts: nothing of the job is queued at a any more, r would wait for a core there */
    const struct attempt_task *qt = attempt_get(f.att, 0);
    struct attempt_action act[ATTEMPT_MAX_ACTIONS];
    struct attempt_event ev = {.kind = ATTEMPT_EV_STATUS,
                               .task = 0,
                               .attempt = qt->attempt,
                               .state = PROTO_TASK_RUNNING,
                               .cls = DISPATCH_REGULAR};
    assert_true(attempt_step(f.att, &ev, 30, act, ATTEMPT_MAX_ACTIONS) >= 0);
    assert_int_equal(place_queued_update(f.place, f.att, PRIO), 0);
    assert_int_equal(place_overtakes(f.place, &m[0], PRIO), 0);
    fx_close(&f);
}

/* Node a starts one task now, b only in 0.5 s. The batch is r (critical) then q, whose input is
 * on a: by cost alone the matcher gives a to q (it saves more there) and r goes to b, to be
 * held; with priority_first (the daemon's setting) r takes a and q waits for b. */
static void test_priority_first(void **state)
{
    (void)state;
    for (int pf = 0; pf <= 1; pf++) {
        struct fx f;
        fx_open(&f);
        f.cfg.priority_first = pf;
        place_destroy(&f.place);
        assert_int_equal(place_new(f.spec, &f.cfg, &f.place), 0);
        uint32_t a = node2(f.view, "a", 1, 0.5, 1, 0);
        uint32_t b = node2(f.view, "b", 0, 0.5, 1, 0);
        assert_int_equal(view_refresh_light(f.view, 10), 0);
        assert_int_equal(place_resolve(f.place, f.view), 0);
        size_t batch[2] = {2, 0};
        struct place_match m[2];
        size_t n = 0;
        assert_int_equal(place_round(f.place, f.view, f.est, batch, 2, 20, draw_half, NULL, m, &n),
                         0);
        assert_int_equal(n, 2);
        const struct place_match *r = m[0].task == 2 ? &m[0] : &m[1];
        const struct place_match *q = m[0].task == 2 ? &m[1] : &m[0];
        assert_int_equal(r->task, 2);
        assert_int_equal(q->task, 0);
        assert_int_equal(r->node, pf ? a : b);
        assert_int_equal(q->node, pf ? b : a);
        assert_int_equal(place_hold(&f.cfg, r, 0), !pf); /* before: the critical one held */
        assert_true(pf ? r->est.w_s <= PLACE_HOLD_WAIT_S : q->est.w_s <= PLACE_HOLD_WAIT_S);
        fx_close(&f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overtakes_own_queued_work),
        cmocka_unit_test(test_priority_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
