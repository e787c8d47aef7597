/* test_attempt_queued.c - the attempt machine's indexes of the tasks in flight and of the
 * regular ones queued at their node (jm/attempt.h attempt_inflight, attempt_queued), and
 * place_queued_update, which walks the latter instead of every task (issue 24: a million-task
 * job's JM walked every task's record once per placement round).
 *
 * Random transitions of every kind the machine has (placements, statuses of every state and
 * class, refusals, lost and silent nodes, moves, cancels, takeovers, adoptions, downgrades,
 * upgrades, yields, back-offs, the job's end) on fixed seeds; after each one the indexes must
 * hold exactly the tasks a walk over every record finds (in flight; in flight, regular, at a
 * node, not said running), and place_overtakes must answer as the per-node sums of that walk
 * say. */
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
#include "jm/place.h"
#include "jm/spec.h"
#include "proto/proto.h"

#define NTASKS 48
#define NNODES 5
#define NSTEPS 4000

struct fixture {
    struct spec *spec;
    dag_t *dag;
    dispatch_t *disp;
    attempt_t *a;
    place_t *place;
    double prio[NTASKS];
    double remaining[NTASKS], estimate[NTASKS];
    uint64_t rng;
    int64_t now;
    struct attempt_action act[64];
};

static uint32_t rnd(struct fixture *f, uint32_t n)
{
    f->rng ^= f->rng << 13; /* xorshift64 */
    f->rng ^= f->rng >> 7;
    f->rng ^= f->rng << 17;
    return (uint32_t)(f->rng % n);
}

/* NTASKS independent tasks of 1, 2 or 0.5 cores (sums that are not exact in any order: the
 * index's order must not change place_queued_update's figures) */
static char *spec_text(void)
{
    size_t cap = 128 + NTASKS * 96, n = 0;
    char *s = malloc(cap);
    n += (size_t)snprintf(s + n, cap - n, "{\"version\":1,\"name\":\"q\",\"tasks\":[");
    static const char *cpu[] = {"1", "2", "0.5", "0.1", "0.3"};
    for (int i = 0; i < NTASKS; i++)
        n += (size_t)snprintf(s + n, cap - n,
                              "%s{\"id\":\"t%d\",\"cmd\":[\"true\"],\"cpu\":%s,\"runtime_s\":%d}",
                              i ? "," : "", i, cpu[i % 5], 1 + i % 7);
    snprintf(s + n, cap - n, "]}");
    return s;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    char msg[256];
    char *text = spec_text();
    if (spec_parse(text, strlen(text), NULL, &f->spec, msg, sizeof msg) != 0)
        fail_msg("%s", msg);
    free(text);
    assert_int_equal(dag_new(f->spec, &f->dag), 0);
    assert_int_equal(dispatch_new(NULL, f->spec->ntasks, &f->disp), 0);
    dispatch_set_tokens(f->disp, 6);
    struct attempt_config c;
    attempt_config_default(&c);
    c.max_attempts = 1000000; /* the walk goes on: no cap ends the job */
    assert_int_equal(attempt_new(&c, f->spec->ntasks, f->dag, f->disp, NULL, 0, &f->a), 0);
    struct place_config pc;
    place_config_daemon(&pc);
    assert_int_equal(place_new(f->spec, &pc, &f->place), 0);
    for (int i = 0; i < NTASKS; i++) {
        f->prio[i] = (double)(i * 7 % 11); /* ties too */
        f->remaining[i] = 0.5 + i % 4;
        f->estimate[i] = 1 + i % 7;
    }
    f->now = 1000;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    place_destroy(&f->place);
    attempt_destroy(&f->a);
    dispatch_destroy(&f->disp);
    dag_destroy(&f->dag);
    spec_destroy(&f->spec);
    free(f);
    return 0;
}

static int queued_by_walk(const struct attempt_task *t)
{
    return t->inflight && !t->running && t->cls == DISPATCH_REGULAR && t->node >= 0;
}

/* Marks the index's tasks in `in`, failing on a bad or repeated entry. */
static void index_marks(size_t n, const uint32_t *q, unsigned char *in, const char *which,
                        const char *what, int step)
{
    for (size_t i = 0; i < n; i++) {
        if (q[i] >= NTASKS || in[q[i]])
            fail_msg("step %d (%s): %s entry %zu is %u (bad or twice)", step, what, which, i, q[i]);
        in[q[i]] = 1;
    }
}

/* The indexes against a walk over every record, then place_queued_update against the walk's
 * per-node sums (in task order, as place.c did before the index). */
static void check(struct fixture *f, const char *what, int step)
{
    const uint32_t *q = NULL;
    unsigned char in[NTASKS] = {0}, fly[NTASKS] = {0};
    size_t n = attempt_queued(f->a, &q);
    index_marks(n, q, in, "queued", what, step);
    n = attempt_inflight(f->a, &q);
    index_marks(n, q, fly, "in-flight", what, step);
    double cpu[NNODES] = {0}, top[NNODES] = {0};
    for (size_t t = 0; t < NTASKS; t++) {
        const struct attempt_task *at = attempt_get(f->a, t);
        if ((at->inflight != 0) != fly[t])
            fail_msg("step %d (%s): task %zu %s the in-flight index", step, what, t,
                     fly[t] ? "wrongly in" : "missing from");
        int want = queued_by_walk(at);
        if (want != in[t])
            fail_msg("step %d (%s): task %zu %s the index (inflight %d running %d cls %d node %d)",
                     step, what, t, in[t] ? "wrongly in" : "missing from", at->inflight,
                     at->running, at->cls, at->node);
        if (!want)
            continue;
        if (cpu[at->node] <= 0 || f->prio[t] > top[at->node])
            top[at->node] = f->prio[t];
        cpu[at->node] += f->spec->tasks[t].cpu;
    }
    assert_int_equal(place_queued_update(f->place, f->a, f->prio), 0);
    for (uint32_t nd = 0; nd < NNODES; nd++)
        for (size_t t = 0; t < NTASKS; t++) {
            struct place_match m = {.task = t, .node = nd};
            int want =
                cpu[nd] > 0 && cpu[nd] + 1e-9 >= f->spec->tasks[t].cpu && f->prio[t] > top[nd];
            if (place_overtakes(f->place, &m, f->prio) != want)
                fail_msg("step %d (%s): place_overtakes(task %zu, node %u) != %d", step, what, t,
                         nd, want);
        }
}

static const int END_STATES[] = {PROTO_TASK_SUCCEEDED, PROTO_TASK_FAILED, PROTO_TASK_PREEMPTED,
                                 PROTO_TASK_LOST, PROTO_TASK_CANCELLED};

/* One random transition; returns what it was. */
static const char *random_step(struct fixture *f)
{
    size_t task = rnd(f, NTASKS);
    const struct attempt_task *t = attempt_get(f->a, task);
    struct attempt_event ev = {.task = task, .attempt = t->attempt, .cls = DISPATCH_NONE};
    int op = (int)rnd(f, 20);
    f->now += rnd(f, 40);
    if (!t->inflight) {
        if (dag_state(f->dag, task) != DAG_READY)
            return "not ready";
        if (op == 0) {
            uint32_t att = t->seen + 1 + rnd(f, 3);
            int cls = rnd(f, 2) ? DISPATCH_REGULAR : DISPATCH_OPPORTUNISTIC;
            (void)attempt_adopt(f->a, task, att, (int)rnd(f, NNODES), cls, f->now);
            return "adopt";
        }
        if (op == 1) {
            (void)attempt_yield(f->a, task, f->prio, (int64_t)rnd(f, 60), f->now, f->act, 64);
            return "yield";
        }
        if (op == 2) {
            ev.kind = ATTEMPT_EV_JOB_END; /* of a held task: unheld */
            (void)attempt_step(f->a, &ev, f->now, f->act, 64);
            return "job end (idle)";
        }
        dispatch_round(f->disp);
        int cls = dispatch_place(f->disp, task);
        if (cls != DISPATCH_REGULAR && cls != DISPATCH_OPPORTUNISTIC)
            return "no units";
        ev.kind = ATTEMPT_EV_PLACED;
        ev.node = (int)rnd(f, NNODES);
        ev.cls = cls;
        (void)attempt_step(f->a, &ev, f->now, f->act, 64);
        return "placed";
    }
    switch (op) {
    case 0:
    case 1:
    case 2:
    case 3:
    case 4:
        ev.kind = ATTEMPT_EV_STATUS;
        ev.state = rnd(f, 3) == 0 ? PROTO_TASK_QUEUED : PROTO_TASK_RUNNING;
        ev.cls = (int)rnd(f, 3); /* NONE, REGULAR or OPPORTUNISTIC */
        ev.traded = rnd(f, 3) == 0;
        if (rnd(f, 8) == 0)
            ev.attempt--; /* an earlier attempt's */
        break;
    case 5:
    case 6:
        ev.kind = ATTEMPT_EV_STATUS;
        ev.state = END_STATES[rnd(f, 5)];
        ev.extra = rnd(f, 4) == 0;
        break;
    case 7:
        ev.kind = ATTEMPT_EV_REFUSED;
        ev.code = rnd(f, 2) ? ERR_UNAVAILABLE : ERR_INVAL;
        break;
    case 8:
        ev.kind = ATTEMPT_EV_NODE;
        ev.state = rnd(f, 2) ? ATTEMPT_NODE_DOWN : ATTEMPT_NODE_SILENT;
        break;
    case 9:
        ev.kind = ATTEMPT_EV_MOVED; /* refused while it runs */
        break;
    case 10:
        ev.kind = ATTEMPT_EV_CANCEL;
        break;
    case 11:
        ev.kind = ATTEMPT_EV_UNSENDABLE;
        break;
    case 12: {
        uint32_t att = attempt_reserve(f->a, task);
        int cls = rnd(f, 2) ? DISPATCH_REGULAR : DISPATCH_OPPORTUNISTIC;
        (void)attempt_takeover(f->a, task, att, (int)rnd(f, NNODES) - (rnd(f, 6) == 0), cls,
                               (int)rnd(f, 2), f->now);
        return "takeover";
    }
    case 13:
    case 14:
        dispatch_set_tokens(f->disp, rnd(f, 10));
        while (attempt_downgrades(f->a, f->prio, f->remaining, f->estimate, f->now, f->act, 64) ==
               64)
            ;
        return "tokens, downgrades";
    case 15:
    case 16:
        while (attempt_upgrades(f->a, f->prio, f->now, f->act, 64) == 64)
            ;
        return "upgrades";
    case 17: {
        size_t due[NTASKS];
        f->now += 1000 * (int64_t)rnd(f, 3);
        (void)attempt_due(f->a, f->now, due, NTASKS);
        return "due";
    }
    case 18:
        ev.kind = ATTEMPT_EV_JOB_END;
        break;
    default:
        ev.kind = ATTEMPT_EV_STATUS; /* running, in its own class */
        ev.state = PROTO_TASK_RUNNING;
        ev.cls = t->cls;
        break;
    }
    (void)attempt_step(f->a, &ev, f->now, f->act, 64);
    return "event";
}

static void test_random_walk(void **state)
{
    static const uint64_t SEEDS[] = {1, 42, 0x9e3779b97f4a7c15ULL, 7777};
    for (size_t s = 0; s < sizeof SEEDS / sizeof SEEDS[0]; s++) {
        teardown(state);
        setup(state);
        struct fixture *f = *state;
        f->rng = SEEDS[s];
        check(f, "start", 0);
        size_t queued_seen = 0;
        for (int i = 1; i <= NSTEPS; i++) {
            const char *what = random_step(f);
            check(f, what, i);
            const uint32_t *q;
            queued_seen += attempt_queued(f->a, &q);
        }
        assert_true(queued_seen > NSTEPS); /* the walk did queue work, on average over one */
        /* the job ends: nothing is in flight, the index is empty */
        for (size_t t = 0; t < NTASKS; t++) {
            struct attempt_event ev = {.kind = ATTEMPT_EV_JOB_END, .task = t};
            (void)attempt_step(f->a, &ev, f->now, f->act, 64);
        }
        check(f, "the job's end", NSTEPS + 1);
        const uint32_t *q;
        assert_int_equal(attempt_queued(f->a, &q), 0);
        assert_int_equal(attempt_inflight(f->a, &q), 0);
    }
}

/* Without regular work in flight nothing is queued; a placed regular task is, until it runs. */
static void test_queued_basics(void **state)
{
    struct fixture *f = *state;
    const uint32_t *q;
    assert_int_equal(attempt_queued(f->a, &q), 0);
    dispatch_round(f->disp);
    assert_int_equal(dispatch_place(f->disp, 3), DISPATCH_REGULAR);
    struct attempt_event ev = {
        .kind = ATTEMPT_EV_PLACED, .task = 3, .node = 2, .cls = DISPATCH_REGULAR};
    assert_int_equal(attempt_step(f->a, &ev, f->now, f->act, 64), 1);
    assert_int_equal(attempt_queued(f->a, &q), 1);
    assert_int_equal(q[0], 3);
    struct attempt_event run = {.kind = ATTEMPT_EV_STATUS,
                                .task = 3,
                                .attempt = f->act[0].attempt,
                                .state = PROTO_TASK_RUNNING,
                                .cls = DISPATCH_REGULAR};
    assert_true(attempt_step(f->a, &run, f->now, f->act, 64) >= 1);
    assert_int_equal(attempt_queued(f->a, &q), 0);
    check(f, "basics", 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_queued_basics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_walk, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
