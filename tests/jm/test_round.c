/* test_round.c - a JM's scheduling round (jm/round.h), the rules the daemon and the simulator
 * share (issue 23): which ready tasks enter and go back to the ready queue (not one backing off
 * after a failure), whether a round may place, and how many tasks it offers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jm/attempt.h"
#include "jm/dag.h"
#include "jm/dispatch.h"
#include "jm/readyq.h"
#include "jm/round.h"
#include "jm/spec.h"
#include "proto/proto.h"

/* a..c independent, d after a */
static const char *SPEC =
    "{\"version\":1,\"name\":\"r\",\"tasks\":[{\"id\":\"a\",\"cmd\":[\"true\"]},"
    "{\"id\":\"b\",\"cmd\":[\"true\"]},{\"id\":\"c\",\"cmd\":[\"true\"]},"
    "{\"id\":\"d\",\"cmd\":[\"true\"],\"after\":[\"a\"]}]}";

struct fx {
    struct spec *spec;
    dag_t *dag;
    dispatch_t *disp;
    attempt_t *att;
    readyq_t *rq;
    double prio[4];
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    char msg[256];
    if (spec_parse(SPEC, strlen(SPEC), NULL, &f->spec, msg, sizeof msg) != 0)
        fail_msg("%s", msg);
    assert_int_equal(dag_new(f->spec, &f->dag), 0);
    assert_int_equal(dispatch_new(NULL, f->spec->ntasks, &f->disp), 0);
    assert_int_equal(attempt_new(NULL, f->spec->ntasks, f->dag, f->disp, NULL, 0, &f->att), 0);
    assert_int_equal(readyq_new(f->spec->ntasks, &f->rq), 0);
    f->prio[0] = 3; /* a first: it releases d */
    f->prio[1] = 1;
    f->prio[2] = 2;
    f->prio[3] = 1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    readyq_destroy(&f->rq);
    attempt_destroy(&f->att);
    dispatch_destroy(&f->disp);
    dag_destroy(&f->dag);
    spec_destroy(&f->spec);
    free(f);
    return 0;
}

/* a placed and failed: READY again in the DAG, but backing off */
static void fail_a(struct fx *f)
{
    struct attempt_action act[ATTEMPT_MAX_ACTIONS];
    struct attempt_event ev = {
        .kind = ATTEMPT_EV_PLACED, .task = 0, .node = 0, .cls = DISPATCH_REGULAR};
    assert_int_equal(dispatch_place(f->disp, 0), DISPATCH_REGULAR);
    assert_true(attempt_step(f->att, &ev, 1000, act, ATTEMPT_MAX_ACTIONS) > 0);
    struct attempt_event st = {.kind = ATTEMPT_EV_STATUS,
                               .task = 0,
                               .attempt = act[0].attempt,
                               .state = PROTO_TASK_FAILED,
                               .cls = DISPATCH_REGULAR};
    assert_true(attempt_step(f->att, &st, 2000, act, ATTEMPT_MAX_ACTIONS) > 0);
    assert_int_equal(dag_state(f->dag, 0), DAG_READY);
    assert_true(attempt_is_held(f->att, 0));
}

static void test_ready_add(void **state)
{
    struct fx *f = *state;
    dispatch_set_tokens(f->disp, 4);
    assert_int_equal(round_ready_add(f->rq, f->att, f->spec, f->prio, 1), 1);
    assert_int_equal(round_ready_add(f->rq, f->att, f->spec, f->prio, 1), 0); /* already there */
    assert_int_equal(round_ready_add(f->rq, f->att, f->spec, f->prio, 2), 1);
    fail_a(f);
    assert_int_equal(round_ready_add(f->rq, f->att, f->spec, f->prio, 0), 0); /* backing off */
    assert_int_equal(readyq_count(f->rq), 2);
    size_t out[4];
    assert_int_equal(readyq_pop(f->rq, out, 4), 2);
    assert_int_equal(out[0], 2); /* priority order */
    assert_int_equal(out[1], 1);
}

/* A batch goes back: the READY tasks not held, not the one placed, not the one backing off. */
static void test_ready_back(void **state)
{
    struct fx *f = *state;
    dispatch_set_tokens(f->disp, 4);
    fail_a(f);
    assert_int_equal(dag_start(f->dag, 1), 0); /* b was placed in the round */
    size_t batch[3] = {0, 1, 2};
    assert_int_equal(round_ready_back(f->rq, f->dag, f->att, f->spec, f->prio, batch, 3), 0);
    assert_int_equal(readyq_count(f->rq), 1);
    assert_true(readyq_contains(f->rq, 2));
    assert_false(readyq_contains(f->rq, 0));
    assert_false(readyq_contains(f->rq, 1));
}

static void test_batch(void **state)
{
    struct fx *f = *state;
    static const struct {
        uint32_t tokens;
        double factor;
        size_t placed; /* regular tasks in flight (one unit each) */
        uint64_t yieldable;
        size_t max;
        size_t want;
        int can;
    } rows[] = {
        {4, 1.0, 0, 0, 512, 4 + 4 + ROUND_SLACK, 1}, /* free regular and opportunistic units */
        {4, 0.0, 0, 0, 512, 4 + ROUND_SLACK, 1},
        {4, 1.0, 0, 0, 10, 10, 1},                   /* at most max_batch */
        {4, 0.0, 2, 3, 512, 2 + 3 + ROUND_SLACK, 1}, /* and what waiting tasks could yield */
        {2, 0.0, 2, 0, 512, ROUND_SLACK, 0},         /* nothing free: no round */
        {2, 0.0, 2, 1, 512, 1 + ROUND_SLACK, 1},     /* ... unless a task may yield */
        {4, 1.0, 0, 0, 3, 3, 1},                     /* a batch smaller than the slack */
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        dispatch_destroy(&f->disp);
        assert_int_equal(dispatch_new(NULL, f->spec->ntasks, &f->disp), 0);
        dispatch_set_tokens(f->disp, rows[i].tokens);
        dispatch_set_factor(f->disp, rows[i].factor);
        for (size_t t = 0; t < rows[i].placed; t++)
            assert_int_equal(dispatch_place(f->disp, t + 1), DISPATCH_REGULAR);
        assert_int_equal(round_batch(f->disp, rows[i].yieldable, rows[i].max), rows[i].want);
        assert_int_equal(round_can_place(f->disp, rows[i].yieldable), rows[i].can);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ready_add, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ready_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
