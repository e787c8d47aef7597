/* test_dag.c - DAG run-time state: ready list, release on success, stage barriers (transitive,
 * pass-through), requeue, failure, counts, reset, and the "no task before its parents" invariant
 * over random executions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "jm/dag.h"
#include "jm/spec.h"

static struct spec *load(const char *name)
{
    const char *d = getenv("PADDOCK_SOURCE_DIR");
    char fp[4096], msg[512] = "";
    snprintf(fp, sizeof fp, "%s/tests/specs/valid/%s", d != NULL ? d : ".", name);
    struct spec *s = NULL;
    if (spec_load(fp, NULL, &s, msg, sizeof msg) != 0)
        fail_msg("%s: %s", name, msg);
    return s;
}

static struct spec *parse(const char *json)
{
    char msg[512] = "";
    struct spec *s = NULL;
    if (spec_parse(json, strlen(json), NULL, &s, msg, sizeof msg) != 0)
        fail_msg("rejected: %s", msg);
    return s;
}

static int ready_has(const dag_t *d, const struct spec *s, const char *id)
{
    size_t n;
    const size_t *r = dag_ready(d, &n);
    long t = spec_task_index(s, id);
    for (size_t i = 0; i < n; i++)
        if ((long)r[i] == t)
            return 1;
    return 0;
}

static void run(dag_t *d, const struct spec *s, const char *id, size_t expect_released)
{
    long t = spec_task_index(s, id);
    assert_true(t >= 0);
    assert_int_equal(dag_start(d, (size_t)t), 0);
    size_t rel = 99;
    assert_int_equal(dag_succeed(d, (size_t)t, &rel), 0);
    assert_int_equal(rel, expect_released);
}

static void test_diamond_barriers(void **state)
{
    (void)state;
    struct spec *s = load("diamond_barriers.json");
    dag_t *d = NULL;
    assert_int_equal(dag_new(s, &d), 0);
    size_t n;
    dag_ready(d, &n);
    /* split-0 and "final"'s stage? final waits for join-0; only split-0 is ready */
    assert_int_equal(n, 1);
    assert_true(ready_has(d, s, "split-0"));
    assert_int_equal(dag_count(d, DAG_WAITING), 6);
    /* split done: the left and right barriers open; right-1 still waits for right-0 */
    run(d, s, "split-0", 3);
    assert_true(ready_has(d, s, "left-0"));
    assert_true(ready_has(d, s, "left-1"));
    assert_true(ready_has(d, s, "right-0"));
    assert_false(ready_has(d, s, "right-1"));
    run(d, s, "left-0", 0);
    run(d, s, "left-1", 0);
    assert_true(dag_stage_complete(d, (size_t)spec_stage_index(s, "left")));
    assert_false(ready_has(d, s, "join-0"));
    run(d, s, "right-0", 1);
    assert_true(ready_has(d, s, "right-1"));
    run(d, s, "right-1", 1); /* join's barrier opens */
    assert_true(ready_has(d, s, "join-0"));
    run(d, s, "join-0", 1);
    assert_false(dag_done(d));
    run(d, s, "final", 0);
    assert_true(dag_done(d));
    assert_int_equal(dag_count(d, DAG_SUCCEEDED), 7);
    dag_ready(d, &n);
    assert_int_equal(n, 0);

    /* reset replays from the start */
    dag_reset(d);
    assert_int_equal(dag_count(d, DAG_SUCCEEDED), 0);
    assert_int_equal(dag_count(d, DAG_READY), 1);
    assert_true(ready_has(d, s, "split-0"));
    assert_false(dag_stage_complete(d, (size_t)spec_stage_index(s, "left")));
    dag_destroy(&d);
    assert_null(d);
    spec_destroy(&s);
}

static void test_passthrough_stage(void **state)
{
    (void)state;
    struct spec *s = load("empty_stage_passthrough.json");
    dag_t *d = NULL;
    assert_int_equal(dag_new(s, &d), 0);
    assert_false(ready_has(d, s, "b0"));
    run(d, s, "a0", 0);
    assert_false(ready_has(d, s, "b0"));
    run(d, s, "a1", 1); /* a complete -> gate (no tasks) complete -> b opens */
    assert_true(ready_has(d, s, "b0"));
    assert_true(dag_stage_complete(d, (size_t)spec_stage_index(s, "gate")));
    dag_destroy(&d);
    spec_destroy(&s);
}

/* Whether task t is in dag_running's set, and the set agrees with the RUNNING count. */
static int running_has(const dag_t *d, size_t t)
{
    size_t n, hits = 0;
    const size_t *r = dag_running(d, &n);
    assert_int_equal(n, dag_count(d, DAG_RUNNING));
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(dag_state(d, r[i]), DAG_RUNNING);
        hits += r[i] == t;
    }
    assert_true(hits <= 1);
    return hits == 1;
}

/* dag_running: tasks enter when started, leave on success, requeue, failure and reset; the
 * ready list is unaffected by the running set sharing its position index. */
static void test_running_set(void **state)
{
    (void)state;
    struct spec *s = parse("{\"version\":1,\"tasks\":[{\"id\":\"t{i}\",\"array\":6,"
                           "\"cmd\":[\"t\"]},{\"id\":\"z\",\"cmd\":[\"t\"],\"after\":[\"t0\"]}]}");
    dag_t *d = NULL;
    assert_int_equal(dag_new(s, &d), 0);
    size_t n;
    dag_running(d, &n);
    assert_int_equal(n, 0);
    for (size_t t = 0; t < 6; t++)
        assert_int_equal(dag_start(d, t), 0);
    for (size_t t = 0; t < 6; t++)
        assert_true(running_has(d, t));
    assert_int_equal(dag_succeed(d, 2, NULL), 0); /* from the middle: the last moves in */
    assert_false(running_has(d, 2));
    assert_int_equal(dag_requeue(d, 5), 0);
    assert_false(running_has(d, 5));
    assert_true(ready_has(d, s, "t5"));
    assert_int_equal(dag_succeed(d, 0, NULL), 0); /* releases z */
    assert_true(ready_has(d, s, "z"));
    assert_int_equal(dag_start(d, 6), 0);
    assert_int_equal(dag_start(d, 5), 0);
    assert_true(running_has(d, 5) && running_has(d, 6) && running_has(d, 1));
    assert_int_equal(dag_fail(d, 3), 0);
    assert_false(running_has(d, 3));
    dag_running(d, &n);
    assert_int_equal(n, 4); /* 1, 4, 5, 6 */
    const size_t *r = dag_ready(d, &n);
    assert_int_equal(n, 0);
    (void)r;
    dag_reset(d);
    dag_running(d, &n);
    assert_int_equal(n, 0);
    assert_int_equal(dag_start(d, 4), 0);
    assert_true(running_has(d, 4));
    dag_destroy(&d);
    spec_destroy(&s);
}

static void test_transitions(void **state)
{
    (void)state;
    struct spec *s = parse("{\"version\":1,\"tasks\":[{\"id\":\"a\",\"cmd\":[\"t\"]},"
                           "{\"id\":\"b\",\"cmd\":[\"t\"],\"after\":[\"a\"]},"
                           "{\"id\":\"c\",\"cmd\":[\"t\"]}]}");
    dag_t *d = NULL;
    assert_int_equal(dag_new(s, &d), 0);
    size_t n;
    const size_t *r = dag_ready(d, &n);
    assert_int_equal(n, 2);
    assert_int_equal(r[0], 0); /* initial ready list in spec order */
    assert_int_equal(r[1], 2);
    assert_int_equal(dag_start(d, 1), ERR_STATE);         /* b waits */
    assert_int_equal(dag_succeed(d, 0, NULL), ERR_STATE); /* a not running */
    assert_int_equal(dag_start(d, 7), ERR_RANGE);
    assert_int_equal(dag_start(d, 0), 0);
    assert_int_equal(dag_state(d, 0), DAG_RUNNING);
    assert_int_equal(dag_start(d, 0), ERR_STATE);
    r = dag_ready(d, &n);
    assert_int_equal(n, 1);
    assert_int_equal(r[0], 2);
    /* a failed attempt is requeued: back at the end of the ready list */
    assert_int_equal(dag_requeue(d, 0), 0);
    r = dag_ready(d, &n);
    assert_int_equal(n, 2);
    assert_int_equal(r[0], 2);
    assert_int_equal(r[1], 0);
    assert_int_equal(dag_start(d, 0), 0);
    assert_int_equal(dag_fail(d, 0), 0);
    assert_true(dag_failed(d));
    assert_int_equal(dag_count(d, DAG_FAILED), 1);
    assert_int_equal(dag_state(d, 1), DAG_WAITING);
    assert_int_equal(dag_pending(d, 1), 1);
    assert_string_equal(dag_state_name(DAG_SUCCEEDED), "succeeded");
    size_t nd;
    const size_t *dep = dag_dependents(d, 0, &nd);
    assert_int_equal(nd, 1);
    assert_int_equal(dep[0], 1);
    assert_int_equal(dag_stage_count(d, s->tasks[0].stage, DAG_FAILED), 1);
    dag_destroy(&d);
    spec_destroy(&s);
}

static uint64_t rnd_state = 88172645463325252ull;
static uint64_t RND(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

/* Random layered DAG with stage barriers and explicit edges; run it in random order many times
 * and check that no task starts before all its dependencies (explicit and barrier) succeeded. */
static void test_random_executions(void **state)
{
    (void)state;
    enum { STAGES = 6, PER = 8 };
    char *buf = malloc(1 << 16);
    size_t len = (size_t)sprintf(buf, "{\"version\":1,\"stages\":[");
    for (int j = 0; j < STAGES; j++) {
        len += (size_t)sprintf(buf + len, "%s{\"name\":\"s%d\"", j ? "," : "", j);
        if (j >= 2 && RND() % 2)
            len += (size_t)sprintf(buf + len, ",\"after\":[\"s%d\"]",
                                   (int)(RND() % (uint64_t)(j - 1)));
        len += (size_t)sprintf(buf + len, "}");
    }
    len += (size_t)sprintf(buf + len, "],\"tasks\":[");
    for (int j = 0; j < STAGES; j++)
        for (int i = 0; i < PER; i++) {
            len +=
                (size_t)sprintf(buf + len, "%s{\"id\":\"t%d_%d\",\"stage\":\"s%d\",\"cmd\":[\"t\"]",
                                (j || i) ? "," : "", j, i, j);
            if (j > 0 && RND() % 3 == 0)
                len += (size_t)sprintf(buf + len, ",\"after\":[\"t%d_%d\"]",
                                       (int)(RND() % (uint64_t)j), (int)(RND() % PER));
            len += (size_t)sprintf(buf + len, "}");
        }
    sprintf(buf + len, "]}");
    struct spec *s = parse(buf);
    free(buf);
    dag_t *d = NULL;
    assert_int_equal(dag_new(s, &d), 0);
    size_t nt = s->ntasks;
    for (int round = 0; round < 50; round++) {
        dag_reset(d);
        size_t running[64], nrun = 0, done = 0;
        while (!dag_done(d)) {
            size_t n;
            const size_t *r = dag_ready(d, &n);
            int start = n > 0 && (nrun == 0 || RND() % 2);
            if (start) {
                size_t t = r[RND() % n];
                /* invariant: every dependency has succeeded */
                for (size_t k = 0; k < s->tasks[t].nafter; k++)
                    assert_int_equal(dag_state(d, s->tasks[t].after[k]), DAG_SUCCEEDED);
                const struct spec_stage *st = &s->stages[s->tasks[t].stage];
                for (size_t k = 0; k < st->nafter; k++)
                    assert_true(dag_stage_complete(d, st->after[k]));
                assert_int_equal(dag_start(d, t), 0);
                running[nrun++] = t;
            } else {
                assert_true(nrun > 0);
                size_t i = RND() % nrun;
                size_t t = running[i];
                running[i] = running[--nrun];
                if (RND() % 10 == 0) {
                    assert_int_equal(dag_requeue(d, t), 0);
                } else {
                    assert_int_equal(dag_succeed(d, t, NULL), 0);
                    done++;
                }
            }
            assert_int_equal(dag_count(d, DAG_WAITING) + dag_count(d, DAG_READY) +
                                 dag_count(d, DAG_RUNNING) + dag_count(d, DAG_SUCCEEDED),
                             nt);
            assert_int_equal(dag_count(d, DAG_RUNNING), nrun);
        }
        assert_int_equal(done, nt);
    }
    dag_destroy(&d);
    spec_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diamond_barriers),  cmocka_unit_test(test_passthrough_stage),
        cmocka_unit_test(test_transitions),       cmocka_unit_test(test_running_set),
        cmocka_unit_test(test_random_executions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
