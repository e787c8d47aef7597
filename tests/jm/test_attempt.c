/* test_attempt.c - the attempt lifecycle (jm/attempt.h), table-driven: each row is a sequence
 * of events on one task and the actions each must give (one letter per action, in order), then
 * the task's counters. The rows cover issue 23's table: re-placement cap, lost nodes (avoided,
 * down on the RM's word, silent after the timeout, outputs re-run), upgrades and downgrades,
 * speculation's gate, and the back-off of retries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "jm/attempt.h"
#include "jm/dag.h"
#include "jm/dispatch.h"
#include "jm/spec.h"
#include "proto/proto.h"

/* four independent tasks a..d, and e after a */
static const char *SPEC =
    "{\"version\":1,\"name\":\"t\",\"tasks\":[{\"id\":\"a\",\"cmd\":[\"true\"],\"runtime_s\":10},"
    "{\"id\":\"b\",\"cmd\":[\"true\"],\"runtime_s\":10},{\"id\":\"c\",\"cmd\":[\"true\"],"
    "\"runtime_s\":10,\"speculate\":false},{\"id\":\"d\",\"cmd\":[\"true\"],\"runtime_s\":10},"
    "{\"id\":\"e\",\"cmd\":[\"true\"],\"after\":[\"a\"]}]}";

struct fixture {
    struct spec *spec;
    dag_t *dag;
    dispatch_t *disp;
    attempt_t *a;
    struct attempt_action act[64];
    int64_t now;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    char msg[256];
    if (spec_parse(SPEC, strlen(SPEC), NULL, &f->spec, msg, sizeof msg) != 0)
        fail_msg("%s", msg);
    assert_int_equal(dag_new(f->spec, &f->dag), 0);
    assert_int_equal(dispatch_new(NULL, f->spec->ntasks, &f->disp), 0);
    dispatch_set_tokens(f->disp, 4);
    assert_int_equal(attempt_new(NULL, f->spec->ntasks, f->dag, f->disp, NULL, 0, &f->a), 0);
    f->now = 1000;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    attempt_destroy(&f->a);
    assert_null(f->a);
    dispatch_destroy(&f->disp);
    dag_destroy(&f->dag);
    spec_destroy(&f->spec);
    free(f);
    return 0;
}

static char kind_letter(int k)
{
    static const char L[] = "?CXOKSRDAYTFN";
    return k > 0 && k <= ATTEMPT_ACT_ROUND ? L[k] : '?';
}

/* Runs one event, returns the actions as letters (static buffer). */
static const char *step(struct fixture *f, struct attempt_event ev)
{
    static char s[64];
    int n = attempt_step(f->a, &ev, f->now, f->act, 64);
    assert_true(n >= 0);
    for (int i = 0; i < n; i++)
        s[i] = kind_letter(f->act[i].kind);
    s[n] = 0;
    return s;
}

static uint32_t place(struct fixture *f, size_t task, int node)
{
    int cls = dispatch_place(f->disp, task);
    assert_true(cls == DISPATCH_REGULAR || cls == DISPATCH_OPPORTUNISTIC);
    struct attempt_event ev = {.kind = ATTEMPT_EV_PLACED, .task = task, .node = node, .cls = cls};
    assert_string_equal(step(f, ev), "C");
    assert_int_equal(f->act[0].node, node);
    return f->act[0].attempt;
}

static struct attempt_event status(size_t task, uint32_t attempt, int state)
{
    struct attempt_event ev = {
        .kind = ATTEMPT_EV_STATUS, .task = task, .attempt = attempt, .state = state};
    return ev;
}

/* ---- the table ---- */

enum { E_PLACE = 100, E_WAIT }; /* pseudo events: place on node `node`; let time pass */

struct row_step {
    int kind;  /* an attempt_ev_kind, E_PLACE or E_WAIT (ms in code) */
    int state; /* STATUS: proto state; NODE: enum attempt_node */
    int node;  /* E_PLACE */
    int code;  /* REFUSED; E_WAIT: ms */
    int extra;
    const char *want; /* action letters */
};

struct row {
    const char *name;
    int repeat; /* the steps run this many times (then `last` once) */
    struct row_step steps[4];
    struct row_step last;
    uint32_t failures, replaced, moves;
    int inflight, held, avoid, dag_state;
};

#define ST(s, w)                                                                                   \
    {                                                                                              \
        ATTEMPT_EV_STATUS, s, 0, 0, 0, w                                                           \
    }
#define PL(n)                                                                                      \
    {                                                                                              \
        E_PLACE, 0, n, 0, 0, "C"                                                                   \
    }
#define END_STEPS                                                                                  \
    {                                                                                              \
        0, 0, 0, 0, 0, NULL                                                                        \
    }

static const struct row ROWS[] = {
    {"success",
     1,
     {PL(1), ST(PROTO_TASK_RUNNING, "S"), ST(PROTO_TASK_SUCCEEDED, "RDN")},
     END_STEPS,
     0,
     0,
     0,
     0,
     0,
     -1,
     DAG_SUCCEEDED},
    {"a failure is charged, backs off and avoids its node",
     1,
     {PL(2), ST(PROTO_TASK_FAILED, "RAYN")},
     END_STEPS,
     1,
     0,
     0,
     0,
     1,
     2,
     DAG_READY},
    {"max_attempts failures fail the job",
     3,
     {PL(1), ST(PROTO_TASK_FAILED, NULL)},
     {0, 0, 0, 0, 0, NULL},
     3,
     0,
     0,
     0,
     0,
     1,
     DAG_FAILED},
    {"re-placement: 10 x max_attempts losses, then the job fails",
     30,
     {PL(1), ST(PROTO_TASK_PREEMPTED, "RYN")},
     {E_PLACE, 0, 1, 0, 0, "C"},
     0,
     30,
     0,
     1,
     0,
     -1,
     DAG_RUNNING},
    {"lost node: down on the RM's word, cancelled, avoided",
     1,
     {PL(3), {ATTEMPT_EV_NODE, ATTEMPT_NODE_DOWN, 0, 0, 0, "XRAYN"}},
     END_STEPS,
     0,
     1,
     0,
     0,
     0,
     3,
     DAG_READY},
    {"silent node: no more tasks there until the view says up",
     1,
     {PL(3), {ATTEMPT_EV_NODE, ATTEMPT_NODE_SILENT, 0, 0, 0, "OXRAYN"}},
     END_STEPS,
     0,
     1,
     0,
     0,
     0,
     3,
     DAG_READY},
    {"a lost status avoids the node, uncharged",
     1,
     {PL(4), ST(PROTO_TASK_LOST, "RAYN")},
     END_STEPS,
     0,
     1,
     0,
     0,
     0,
     4,
     DAG_READY},
    {"refused while draining: re-placed uncharged",
     1,
     {PL(1), {ATTEMPT_EV_REFUSED, 0, 0, ERR_UNAVAILABLE, 0, "ORYN"}},
     END_STEPS,
     0,
     1,
     0,
     0,
     0,
     -1,
     DAG_READY},
    {"refused otherwise: a failure",
     1,
     {PL(1), {ATTEMPT_EV_REFUSED, 0, 0, ERR_INVAL, 0, "RAYN"}},
     END_STEPS,
     1,
     0,
     0,
     0,
     1,
     1,
     DAG_READY},
    {"moved off a long queue",
     1,
     {PL(2), {ATTEMPT_EV_MOVED, 0, 0, 0, 0, "XARYN"}},
     END_STEPS,
     0,
     1,
     1,
     0,
     0,
     2,
     DAG_READY},
    {"a failure with an extra attempt live: it takes over, charged",
     1,
     {PL(2), {ATTEMPT_EV_STATUS, PROTO_TASK_FAILED, 0, 0, 1, "AT"}},
     END_STEPS,
     1,
     0,
     0,
     1,
     0,
     2,
     DAG_RUNNING},
    {"a stale attempt's status is ignored",
     1,
     {PL(1),
      ST(PROTO_TASK_PREEMPTED, "RYN"),
      PL(2),
      {ATTEMPT_EV_STATUS, PROTO_TASK_FAILED, 0, -1, 0, ""}},
     END_STEPS,
     0,
     1,
     0,
     1,
     0,
     -1,
     DAG_RUNNING},
    {"the job ends: cancelled and recorded, nothing retried",
     1,
     {PL(1), {ATTEMPT_EV_JOB_END, 0, 0, 0, 0, "XR"}},
     END_STEPS,
     0,
     0,
     0,
     0,
     0,
     -1,
     DAG_RUNNING},
    {"cancelled by the JM (input lost): placed again, uncharged",
     1,
     {PL(1), {ATTEMPT_EV_CANCEL, 0, 0, 0, 0, "XRYN"}},
     END_STEPS,
     0,
     1,
     0,
     0,
     0,
     -1,
     DAG_READY},
    {"the protocol cannot carry it: a failure",
     1,
     {PL(1), {ATTEMPT_EV_UNSENDABLE, 0, 0, 0, 0, "RAYN"}},
     END_STEPS,
     1,
     0,
     0,
     0,
     1,
     1,
     DAG_READY},
};

static void run_step(struct fixture *f, size_t task, const struct row_step *s, uint32_t *att,
                     const char *name, int release)
{
    if (s->kind == E_PLACE) {
        *att = place(f, task, s->node);
        return;
    }
    struct attempt_event ev = {.kind = s->kind,
                               .task = task,
                               .attempt = *att,
                               .state = s->state,
                               .code = s->code,
                               .extra = s->extra};
    if (s->kind == ATTEMPT_EV_STATUS && s->code == -1)
        ev.attempt = *att - 1; /* the earlier attempt */
    const char *got = step(f, ev);
    if (s->want && strcmp(got, s->want) != 0)
        fail_msg("%s: got \"%s\", want \"%s\"", name, got, s->want);
    for (size_t i = 0; release && got[i]; i++) /* a repeated row waits out each back-off */
        if (f->act[i].kind == ATTEMPT_ACT_RETRY && f->act[i].at_ms > f->now) {
            f->now = f->act[i].at_ms;
            size_t due[8];
            assert_int_equal(attempt_due(f->a, f->now, due, 8), 1);
        }
}

static void test_table(void **state)
{
    for (size_t r = 0; r < sizeof ROWS / sizeof ROWS[0]; r++) {
        teardown(state);
        setup(state);
        struct fixture *f = *state;
        const struct row *row = &ROWS[r];
        size_t task = 1; /* b */
        uint32_t att = 0;
        for (int k = 0; k < row->repeat; k++)
            for (size_t s = 0; s < 4 && row->steps[s].kind; s++)
                run_step(f, task, &row->steps[s], &att, row->name, row->repeat > 1);
        if (row->last.kind)
            run_step(f, task, &row->last, &att, row->name, 0);
        const struct attempt_task *t = attempt_get(f->a, task);
        if (t->failures != row->failures || t->replaced != row->replaced ||
            t->moves != row->moves || t->inflight != row->inflight ||
            attempt_is_held(f->a, task) != row->held || t->avoid != row->avoid ||
            (int)dag_state(f->dag, task) != row->dag_state)
            fail_msg("%s: failures %u replaced %u moves %u inflight %d held %d avoid %d dag %d",
                     row->name, t->failures, t->replaced, t->moves, t->inflight,
                     attempt_is_held(f->a, task), t->avoid, (int)dag_state(f->dag, task));
    }
}

/* The re-placement cap's last loss fails the job naming the cap. */
static void test_replace_cap(void **state)
{
    struct fixture *f = *state;
    for (int i = 0; i < 30; i++) {
        uint32_t a = place(f, 0, 1);
        assert_string_equal(step(f, status(0, a, PROTO_TASK_LOST)), "RAYN");
    }
    uint32_t a = place(f, 0, 1);
    assert_string_equal(step(f, status(0, a, PROTO_TASK_LOST)), "RF");
    assert_int_equal(f->act[1].why, ATTEMPT_WHY_REPLACED);
    assert_int_equal(dag_state(f->dag, 0), DAG_FAILED);
    assert_int_equal(dispatch_regular(f->disp), 0);
}

/* Retries back off 1 s, 2 s, 4 s ... capped at 30 s; the task is held until then. */
static void test_backoff(void **state)
{
    struct fixture *f = *state;
    const struct attempt_config *c = attempt_get_config(f->a);
    int64_t want[] = {1000, 2000, 4000, 8000, 16000, 30000, 30000};
    for (uint32_t n = 1; n <= 7; n++)
        assert_int_equal(attempt_backoff_ms(c, n), want[n - 1]);
    uint32_t a = place(f, 0, 2);
    assert_string_equal(step(f, status(0, a, PROTO_TASK_FAILED)), "RAYN");
    assert_int_equal(f->act[2].at_ms, f->now + 1000);
    assert_int_equal(f->act[1].node, 2); /* avoid the node it failed on */
    assert_int_equal(attempt_held(f->a), 1);
    size_t due[4];
    assert_int_equal(attempt_due(f->a, f->now + 999, due, 4), 0);
    assert_int_equal(attempt_due(f->a, f->now + 1000, due, 4), 1);
    assert_int_equal(due[0], 0);
    assert_int_equal(attempt_held(f->a), 0);
    f->now += 1000;
    a = place(f, 0, 1);
    assert_string_equal(step(f, status(0, a, PROTO_TASK_FAILED)), "RAYN");
    assert_int_equal(f->act[2].at_ms, f->now + 2000);
    /* a placement of a held task (a resumed round) releases it */
    a = place(f, 0, 3);
    assert_int_equal(attempt_held(f->a), 0);
    assert_string_equal(step(f, status(0, a, PROTO_TASK_FAILED)), "RF");
    assert_int_equal(f->act[1].why, ATTEMPT_WHY_FAILED);
}

/* A task killed over its memory request fails the job at its first failure: retrying the same
 * request cannot succeed. Any other failure is retried (the back-off above). */
static void test_fatal_memory(void **state)
{
    struct fixture *f = *state;
    uint32_t a = place(f, 1, 2);
    struct attempt_event ev = status(1, a, PROTO_TASK_FAILED);
    ev.fatal = 1;
    assert_string_equal(step(f, ev), "RF");
    assert_int_equal(f->act[1].why, ATTEMPT_WHY_FATAL);
    assert_int_equal(attempt_get(f->a, 1)->failures, 1);
    /* fatal only counts for a failure: a success flagged so is still a success */
    a = place(f, 0, 1);
    ev = status(0, a, PROTO_TASK_SUCCEEDED);
    ev.fatal = 1;
    assert_string_equal(step(f, ev), "RDN");
}

/* Downgrades: queued tasks first; a running one keeps a grace only when it has at most 5 s and
 * a quarter of its estimate left. Upgrades: the highest bottom level first. */
static void test_grant(void **state)
{
    struct fixture *f = *state;
    uint32_t at[4];
    for (size_t i = 0; i < 4; i++)
        at[i] = place(f, i, (int)i);
    for (size_t i = 0; i < 3; i++) /* a, b, c run; d waits */
        assert_string_equal(step(f, status(i, at[i], PROTO_TASK_RUNNING)), "S");
    double prio[5] = {1, 2, 3, 4, 0}, rem[5] = {2, 4, 30, 10, 0}, est[5] = {10, 10, 40, 10, 10};
    dispatch_set_tokens(f->disp, 1);
    struct attempt_action out[8];
    size_t k = attempt_downgrades(f->a, prio, rem, est, f->now, out, 8);
    assert_int_equal(k, 3);
    assert_int_equal(out[0].task, 3); /* queued first */
    assert_int_equal(out[0].grace_ms, 0);
    assert_int_equal(out[1].task, 2); /* then the most time left: 30 s, no grace */
    assert_int_equal(out[1].grace_ms, 0);
    assert_int_equal(out[2].task, 1); /* 4 s left of 10: over a quarter, no grace */
    assert_int_equal(out[2].grace_ms, 0);
    for (size_t i = 0; i < k; i++) {
        assert_int_equal(out[i].kind, ATTEMPT_ACT_RECLASS);
        assert_int_equal(out[i].cls, DISPATCH_OPPORTUNISTIC);
    }
    assert_int_equal(attempt_get(f->a, 3)->cls, DISPATCH_OPPORTUNISTIC);
    const struct attempt_config *c = attempt_get_config(f->a);
    assert_int_equal(attempt_grace_ms(c, 1, 2.0, 10.0), 2000);
    assert_int_equal(attempt_grace_ms(c, 1, 4.0, 10.0), 0);
    assert_int_equal(attempt_grace_ms(c, 1, 6.0, 100.0), 0);
    assert_int_equal(attempt_grace_ms(c, 0, 1.0, 10.0), 0);
    /* tokens come back: the waiting opportunistic task (d) goes regular; running ones cannot */
    dispatch_set_tokens(f->disp, 4);
    k = attempt_upgrades(f->a, prio, f->now, out, 8);
    assert_int_equal(k, 1);
    assert_int_equal(out[0].task, 3);
    assert_int_equal(out[0].cls, DISPATCH_REGULAR);
    assert_int_equal(attempt_get(f->a, 3)->cls, DISPATCH_REGULAR);
}

static void test_upgrade_order(void **state)
{
    struct fixture *f = *state;
    for (size_t i = 0; i < 4; i++) /* four regular, all queued */
        place(f, i, (int)i);
    double prio[5] = {0, 1, 9, 5, 0};
    dispatch_set_tokens(f->disp, 1);
    struct attempt_action out[8];
    size_t k = attempt_downgrades(f->a, prio, NULL, NULL, f->now, out, 8);
    assert_int_equal(k, 3); /* queued ones, the lowest bottom level first */
    assert_int_equal(out[0].task, 0);
    assert_int_equal(out[1].task, 1);
    assert_int_equal(out[2].task, 3);
    assert_int_equal(attempt_get(f->a, 2)->cls, DISPATCH_REGULAR);
    dispatch_set_tokens(f->disp, 3);
    k = attempt_upgrades(f->a, prio, f->now, out, 8);
    assert_int_equal(k, 2); /* two units free: the highest bottom level first; a waits */
    assert_int_equal(out[0].task, 3);
    assert_int_equal(out[1].task, 1);
    assert_int_equal(attempt_get(f->a, 0)->cls, DISPATCH_OPPORTUNISTIC);
    assert_int_equal(attempt_get(f->a, 3)->cls, DISPATCH_REGULAR);
}

/* Tokens follow the free cores (issue 22): a task whose node can start it now takes the units of
 * a waiting regular task placed at least min_wait_ms ago (one just sent is on its way to a free
 * core), lowest bottom level first, as a RECLASS to opportunistic without grace; a running task
 * never yields, and the regular units stay within the grant. */
static void test_yield(void **state)
{
    struct fixture *f = *state;
    dispatch_set_factor(f->disp, 0);
    uint32_t at[3];
    for (size_t i = 0; i < 3; i++)
        at[i] = place(f, i, (int)i);
    assert_string_equal(step(f, status(0, at[0], PROTO_TASK_RUNNING)), "S");
    f->now += 50;
    place(f, 3, 3); /* d: just sent; every unit of the 4 is held */
    assert_int_equal(dispatch_place(f->disp, 4), DISPATCH_NONE);
    assert_int_equal(attempt_yieldable(f->a, 10, f->now), 2); /* b and c: not a (runs), not d */
    assert_int_equal(attempt_yieldable(f->a, 100, f->now), 0);
    double prio[5] = {1, 9, 2, 0, 0};
    struct attempt_action out[8];
    assert_int_equal(attempt_yield(f->a, 4, prio, 100, f->now, out, 8), 0);
    assert_int_equal(attempt_yield(f->a, 4, prio, 10, f->now, out, 8), 1);
    assert_int_equal(out[0].kind, ATTEMPT_ACT_RECLASS);
    assert_int_equal(out[0].task, 2); /* c: the lower bottom level of the two */
    assert_int_equal(out[0].cls, DISPATCH_OPPORTUNISTIC);
    assert_int_equal(out[0].attempt, at[2]);
    assert_int_equal(out[0].node, 2);
    assert_int_equal(out[0].grace_ms, 0);
    assert_int_equal(attempt_get(f->a, 2)->cls, DISPATCH_OPPORTUNISTIC);
    assert_int_equal(dispatch_place(f->disp, 4), DISPATCH_REGULAR);
    assert_int_equal(dispatch_regular_units(f->disp), 4);
    /* the PN's status in the old class, sent before the change arrived, does not undo it */
    struct attempt_event ev = status(2, at[2], PROTO_TASK_QUEUED);
    ev.cls = DISPATCH_REGULAR;
    step(f, ev);
    assert_int_equal(attempt_get(f->a, 2)->cls, DISPATCH_OPPORTUNISTIC);
    assert_int_equal(dispatch_regular_units(f->disp), 4);
}

/* A status in another class is the PN's word, except just after a change of ours. */
static void test_class_settle(void **state)
{
    struct fixture *f = *state;
    uint32_t a = place(f, 0, 0);
    struct attempt_event ev = status(0, a, PROTO_TASK_QUEUED);
    ev.cls = DISPATCH_OPPORTUNISTIC;
    f->now += 1000;
    assert_string_equal(step(f, ev), "");
    assert_int_equal(attempt_get(f->a, 0)->cls, DISPATCH_REGULAR);
    f->now += 1500;
    assert_string_equal(step(f, ev), "N");
    assert_int_equal(attempt_get(f->a, 0)->cls, DISPATCH_OPPORTUNISTIC);
    assert_int_equal(dispatch_class_of(f->disp, 0), DISPATCH_OPPORTUNISTIC);
}

/* A class trade at the PN (pn/queue.h queue_pick_trade) is its word at once, even just after a
 * change of ours: both statuses taken, the regular units stay within the grant throughout. */
static void test_class_trade(void **state)
{
    struct fixture *f = *state;
    dispatch_set_factor(f->disp, 1);
    dispatch_set_tokens(f->disp, 1);
    uint32_t a0 = place(f, 0, 0);
    uint32_t a1 = place(f, 1, 0);
    assert_int_equal(attempt_get(f->a, 0)->cls, DISPATCH_REGULAR);
    assert_int_equal(attempt_get(f->a, 1)->cls, DISPATCH_OPPORTUNISTIC);
    f->now += 100; /* within class_settle_s of the placements */
    struct attempt_event up = status(1, a1, PROTO_TASK_QUEUED);
    up.cls = DISPATCH_REGULAR;
    struct attempt_event down = status(0, a0, PROTO_TASK_QUEUED);
    down.cls = DISPATCH_OPPORTUNISTIC;
    step(f, up); /* not a trade: settling */
    assert_int_equal(attempt_get(f->a, 1)->cls, DISPATCH_OPPORTUNISTIC);
    up.traded = down.traded = 1;
    assert_string_equal(step(f, up), "N");
    assert_int_equal(attempt_get(f->a, 1)->cls, DISPATCH_REGULAR);
    assert_string_equal(step(f, down), "N");
    assert_int_equal(attempt_get(f->a, 0)->cls, DISPATCH_OPPORTUNISTIC);
    assert_int_equal(dispatch_regular_units(f->disp), 1);
    assert_int_equal(dispatch_class_of(f->disp, 1), DISPATCH_REGULAR);
    assert_int_equal(dispatch_class_of(f->disp, 0), DISPATCH_OPPORTUNISTIC);
}

/* Speculation: only for tasks that allow it, and only on a free unit. */
static void test_copy_gate(void **state)
{
    struct fixture *f = *state;
    dispatch_set_factor(f->disp, 0);
    dispatch_set_tokens(f->disp, 2);
    place(f, 0, 0);
    assert_int_equal(attempt_copy_class(f->disp, 0, 1, 0), DISPATCH_REGULAR);
    assert_int_equal(attempt_copy_class(f->disp, 2, f->spec->tasks[2].speculate, 0),
                     DISPATCH_NONE); /* "speculate": false */
    place(f, 1, 1);
    assert_int_equal(attempt_copy_class(f->disp, 0, 1, 0), DISPATCH_NONE); /* no unit free */
    struct attempt_free fr = attempt_free(f->disp, 0, 0);
    assert_int_equal(fr.regular, 0);
    assert_int_equal(fr.opportunistic, 0);
    dispatch_set_factor(f->disp, 1);
    dispatch_set_tokens(f->disp, 2);
    fr = attempt_free(f->disp, 0, 1);
    assert_int_equal(fr.opportunistic, 1);
    assert_int_equal(attempt_copy_class(f->disp, 0, 1, 1), DISPATCH_OPPORTUNISTIC);
    assert_int_equal(attempt_copy_class(f->disp, 0, 1, 2), DISPATCH_NONE);
}

/* Lost nodes: down when the view and the RM say so (draining keeps its tasks), silent after the
 * timeout; node-local outputs re-run when a dependent still needs them. */
static void test_node_rules(void **state)
{
    struct fixture *f = *state;
    const struct attempt_config *c = attempt_get_config(f->a);
    struct attempt_node_obs o = {.known = 1, .view_up = 1, .rm_known = 1, .heard_ms = 0};
    assert_int_equal(attempt_node_check(c, &o, 1000), ATTEMPT_NODE_OK);
    o.view_up = 0; /* draining: the RM knows it and it is not down */
    assert_int_equal(attempt_node_check(c, &o, 1000), ATTEMPT_NODE_OK);
    o.rm_down = 1;
    assert_int_equal(attempt_node_check(c, &o, 1000), ATTEMPT_NODE_DOWN);
    o.rm_down = 0;
    o.rm_known = 0; /* the RM has not said: the view's word */
    assert_int_equal(attempt_node_check(c, &o, 1000), ATTEMPT_NODE_DOWN);
    o.view_up = 1;
    o.rm_known = 1;
    assert_int_equal(attempt_node_check(c, &o, 15000), ATTEMPT_NODE_OK);
    assert_int_equal(attempt_node_check(c, &o, 15001), ATTEMPT_NODE_SILENT);
    o.placed_ms = 10000; /* placed recently: not yet */
    assert_int_equal(attempt_node_check(c, &o, 15001), ATTEMPT_NODE_OK);
    assert_true(attempt_outputs_lost(1, 1, 1));
    assert_false(attempt_outputs_lost(1, 1, 0));
    assert_false(attempt_outputs_lost(0, 1, 2));
    assert_false(attempt_outputs_lost(1, 0, 2));
}

/* A success releases the dependents; an extra attempt takes over with attempt_takeover. */
static void test_done_takeover(void **state)
{
    struct fixture *f = *state;
    uint32_t a = place(f, 0, 0);
    uint32_t x = attempt_reserve(f->a, 0);
    assert_int_equal(x, a + 1);
    assert_int_equal(attempt_takeover(f->a, 0, x, 5, DISPATCH_OPPORTUNISTIC, 1, f->now), 0);
    assert_true(attempt_tracks(f->a, 0, x));
    assert_false(attempt_tracks(f->a, 0, a));
    assert_int_equal(dispatch_class_of(f->disp, 0), DISPATCH_OPPORTUNISTIC);
    assert_true(dispatch_running(f->disp, 0));
    assert_string_equal(step(f, status(0, x, PROTO_TASK_SUCCEEDED)), "RDN");
    assert_int_equal(f->act[1].released, 1);
    assert_int_equal(f->act[1].node, 5);
    assert_int_equal(attempt_takeover(f->a, 0, x, 5, DISPATCH_REGULAR, 1, f->now), ERR_STATE);
    /* bad input is refused */
    struct attempt_event bad = {.kind = 99, .task = 0};
    assert_int_equal(attempt_step(f->a, &bad, f->now, f->act, 64), ERR_INVAL);
    bad.task = 77;
    assert_int_equal(attempt_step(f->a, &bad, f->now, f->act, 64), ERR_RANGE);
    struct attempt_event ok = {.kind = ATTEMPT_EV_PLACED, .task = 1, .node = 1, .cls = 1};
    assert_int_equal(attempt_step(f->a, &ok, f->now, f->act, 2), ERR_INVAL);
}

/* Resume: an adopted attempt is tracked; a replayed journal counts as the ends did. */
static void test_adopt_replay(void **state)
{
    struct fixture *f = *state;
    attempt_replayed(f->a, 1, 4, PROTO_TASK_FAILED, 0);
    attempt_replayed(f->a, 1, 5, PROTO_TASK_CANCELLED, 1);
    const struct attempt_task *t = attempt_get(f->a, 1);
    assert_int_equal(t->failures, 1);
    assert_int_equal(t->replaced, 1);
    assert_int_equal(t->moves, 1);
    attempt_extra_ended(f->a, 1, PROTO_TASK_FAILED);
    attempt_extra_ended(f->a, 1, PROTO_TASK_CANCELLED);
    assert_int_equal(t->failures, 2);
    assert_int_equal(attempt_adopt(f->a, 1, 7, 2, DISPATCH_REGULAR, f->now), 0);
    assert_true(attempt_tracks(f->a, 1, 7));
    assert_int_equal(attempt_adopt(f->a, 1, 8, 2, DISPATCH_REGULAR, f->now), ERR_STATE);
    assert_string_equal(step(f, status(1, 7, PROTO_TASK_PREEMPTED)), "RYN");
    assert_int_equal(place(f, 1, 0), 8); /* numbered above all seen */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replace_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backoff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fatal_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grant, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upgrade_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_yield, setup, teardown),
        cmocka_unit_test_setup_teardown(test_class_settle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_class_trade, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_gate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_done_takeover, setup, teardown),
        cmocka_unit_test_setup_teardown(test_adopt_replay, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
