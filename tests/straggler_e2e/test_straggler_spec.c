/* test_straggler_spec.c - the spec's "speculate" (task and stage) and "outputs" fields, and
 * dag_redo: a producer that succeeded runs again, its waiting dependents wait for it again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "jm/dag.h"
#include "jm/spec.h"
#include "jm/view.h"

static struct spec *parse(const char *doc, int want_rc, const char *want_msg)
{
    struct spec *s = NULL;
    char msg[512] = "";
    int rc = spec_parse(doc, strlen(doc), NULL, &s, msg, sizeof msg);
    if (rc != want_rc)
        print_error("rc %d (want %d): %s\n", rc, want_rc, msg);
    assert_int_equal(rc, want_rc);
    if (want_msg)
        assert_non_null(strstr(msg, want_msg));
    return s;
}

static void test_speculate_defaults_and_overrides(void **state)
{
    (void)state;
    struct spec *s =
        parse("{\"version\": 1, \"stages\": [{\"name\": \"b\", \"speculate\": false}], \"tasks\": ["
              "{\"id\": \"a0\", \"stage\": \"a\", \"cmd\": [\"true\"]},"
              "{\"id\": \"a1\", \"stage\": \"a\", \"cmd\": [\"true\"], \"speculate\": false},"
              "{\"id\": \"b0\", \"stage\": \"b\", \"cmd\": [\"true\"], \"speculate\": true},"
              "{\"id\": \"c0\", \"cmd\": [\"true\"], \"speculate\": true}]}",
              0, NULL);
    assert_non_null(s);
    assert_int_equal(s->tasks[spec_task_index(s, "a0")].speculate, 1);
    assert_int_equal(s->tasks[spec_task_index(s, "a1")].speculate, 0);
    assert_int_equal(s->tasks[spec_task_index(s, "b0")].speculate, 0); /* the stage's false */
    assert_int_equal(s->tasks[spec_task_index(s, "c0")].speculate, 1);
    assert_int_equal(s->stages[spec_stage_index(s, "b")].speculate, 0);
    assert_int_equal(s->stages[spec_stage_index(s, "a")].speculate, 1);
    spec_destroy(&s);
}

static void test_speculate_bad(void **state)
{
    (void)state;
    parse("{\"version\": 1, \"tasks\": [{\"id\": \"a\", \"cmd\": [\"true\"], \"speculate\": 0}]}",
          ERR_INVAL, "\"speculate\" must be true or false");
    parse("{\"version\": 1, \"stages\": [{\"name\": \"s\", \"speculate\": \"no\"}], \"tasks\": "
          "[{\"id\": \"a\", \"cmd\": [\"true\"]}]}",
          ERR_INVAL, "\"speculate\" must be true or false");
    parse("{\"version\": 1, \"tasks\": [{\"id\": \"a\", \"cmd\": [\"true\"], \"speculat\": "
          "false}]}",
          ERR_INVAL, "unknown key \"speculat\"");
}

static void test_outputs(void **state)
{
    (void)state;
    struct spec *s =
        parse("{\"version\": 1, \"tasks\": [{\"id\": \"p\", \"cmd\": [\"true\"], \"outputs\": ["
              "{\"path\": \"part-0\", \"local\": true, \"bytes\": 10}, {\"path\": \"/shared/x\"}]},"
              "{\"id\": \"q\", \"cmd\": [\"true\"]}]}",
              0, NULL);
    const struct spec_task *p = &s->tasks[spec_task_index(s, "p")];
    assert_int_equal(p->noutputs, 2);
    assert_int_equal(p->local_outputs, 1);
    assert_string_equal(p->outputs[0].path, "part-0");
    assert_int_equal(p->outputs[0].bytes, 10);
    assert_int_equal(p->outputs[0].local, 1);
    assert_int_equal(p->outputs[1].local, 0);
    assert_int_equal(s->tasks[spec_task_index(s, "q")].local_outputs, 0);
    spec_destroy(&s);
    parse("{\"version\": 1, \"tasks\": [{\"id\": \"a\", \"cmd\": [\"true\"], \"outputs\": {}}]}",
          ERR_INVAL, "\"outputs\" must be an array");
    parse("{\"version\": 1, \"tasks\": [{\"id\": \"a\", \"cmd\": [\"true\"], \"outputs\": "
          "[{\"local\": true}]}]}",
          ERR_INVAL, "missing \"path\"");
    parse("{\"version\": 1, \"tasks\": [{\"id\": \"a\", \"cmd\": [\"true\"], \"outputs\": "
          "[{\"path\": \"x\", \"local\": 1}]}]}",
          ERR_INVAL, "\"local\" must be true or false");
    parse("{\"version\": 1, \"tasks\": [{\"id\": \"a\", \"cmd\": [\"true\"], \"outputs\": "
          "[{\"path\": \"x\\ny\"}]}]}",
          ERR_INVAL, "control character");
    parse("{\"version\": 1, \"tasks\": [{\"id\": \"a\", \"cmd\": [\"true\"], \"outputs\": "
          "[{\"path\": \"x\", \"where\": 1}]}]}",
          ERR_INVAL, "unknown key \"where\"");
}

/* p -> c1, p -> c2, x -> c1: p succeeds, c2 succeeds, then p must run again. */
static void test_dag_redo(void **state)
{
    (void)state;
    struct spec *s = parse("{\"version\": 1, \"tasks\": [{\"id\": \"p\", \"cmd\": [\"true\"]},"
                           "{\"id\": \"x\", \"cmd\": [\"true\"]},"
                           "{\"id\": \"c1\", \"cmd\": [\"true\"], \"after\": [\"p\", \"x\"]},"
                           "{\"id\": \"c2\", \"cmd\": [\"true\"], \"after\": [\"p\"]}]}",
                           0, NULL);
    size_t p = (size_t)spec_task_index(s, "p"), x = (size_t)spec_task_index(s, "x");
    size_t c1 = (size_t)spec_task_index(s, "c1"), c2 = (size_t)spec_task_index(s, "c2");
    dag_t *d = NULL;
    assert_int_equal(dag_new(s, &d), 0);
    assert_int_equal(dag_redo(d, p), ERR_STATE); /* not succeeded */
    assert_int_equal(dag_start(d, p), 0);
    assert_int_equal(dag_succeed(d, p, NULL), 0);
    assert_int_equal(dag_state(d, c2), DAG_READY);
    assert_int_equal(dag_start(d, c2), 0);
    assert_int_equal(dag_redo(d, p), ERR_STATE); /* a dependent in flight: requeue it first */
    assert_int_equal(dag_succeed(d, c2, NULL), 0);
    assert_int_equal(dag_redo(d, p), 0);
    assert_int_equal(dag_state(d, p), DAG_READY);
    assert_int_equal(dag_state(d, c2), DAG_SUCCEEDED); /* consumed it already */
    assert_int_equal(dag_state(d, c1), DAG_WAITING);
    assert_int_equal(dag_count(d, DAG_SUCCEEDED), 1);
    assert_int_equal(dag_start(d, x), 0);
    assert_int_equal(dag_succeed(d, x, NULL), 0);
    assert_int_equal(dag_state(d, c1), DAG_WAITING); /* still waits for p's new run */
    size_t rel = 0;
    assert_int_equal(dag_start(d, p), 0);
    assert_int_equal(dag_succeed(d, p, &rel), 0);
    assert_int_equal(rel, 1);
    assert_int_equal(dag_state(d, c1), DAG_READY);
    assert_int_equal(dag_start(d, c1), 0);
    assert_int_equal(dag_succeed(d, c1, NULL), 0);
    assert_true(dag_done(d));
    dag_destroy(&d);
    spec_destroy(&s);
}

/* A READY dependent leaves the ready list; a stage barrier released by the producer's stage
 * cannot be undone. */
static void test_dag_redo_ready_and_barrier(void **state)
{
    (void)state;
    struct spec *s = parse("{\"version\": 1, \"tasks\": [{\"id\": \"p\", \"cmd\": [\"true\"]},"
                           "{\"id\": \"c\", \"cmd\": [\"true\"], \"after\": [\"p\"]}]}",
                           0, NULL);
    dag_t *d = NULL;
    assert_int_equal(dag_new(s, &d), 0);
    assert_int_equal(dag_start(d, 0), 0);
    assert_int_equal(dag_succeed(d, 0, NULL), 0);
    size_t n;
    dag_ready(d, &n);
    assert_int_equal(n, 1);
    assert_int_equal(dag_redo(d, 0), 0);
    const size_t *r = dag_ready(d, &n);
    assert_int_equal(n, 1);
    assert_int_equal(r[0], 0);
    assert_int_equal(dag_state(d, 1), DAG_WAITING);
    dag_destroy(&d);
    spec_destroy(&s);

    s = parse("{\"version\": 1, \"stages\": [{\"name\": \"b\", \"after\": [\"a\"]}], \"tasks\": "
              "[{\"id\": \"p\", \"stage\": \"a\", \"cmd\": [\"true\"]},"
              "{\"id\": \"c\", \"stage\": \"b\", \"cmd\": [\"true\"]}]}",
              0, NULL);
    assert_int_equal(dag_new(s, &d), 0);
    size_t p = (size_t)spec_task_index(s, "p");
    assert_int_equal(dag_start(d, p), 0);
    assert_int_equal(dag_succeed(d, p, NULL), 0);
    assert_int_equal(dag_redo(d, p), ERR_STATE);
    assert_int_equal(dag_state(d, p), DAG_SUCCEEDED);
    dag_destroy(&d);
    spec_destroy(&s);
}

/* The RM's verdict "down" on a node that sent no newer heartbeat reaches the view (lost
 * outputs need it); an old entry that says up does not bring the node back. */
static void test_view_down_same_seq(void **state)
{
    (void)state;
    view_t *v = NULL;
    assert_int_equal(view_new(&v), 0);
    struct view_entry e = {
        .name = "pn-1", .rack = "r", .cpu = 2, .mem_mb = 1024, .up = 1, .boot_id = 7, .seq = 3};
    assert_int_equal(view_update(v, &e, 1000), 1);
    assert_int_equal(view_update(v, &e, 1100), 0); /* the same again: no news */
    e.up = 0;
    assert_int_equal(view_update(v, &e, 1200), 1); /* same heartbeat, now down */
    assert_int_equal(view_node(v, 0)->up, 0);
    e.up = 1;
    assert_int_equal(view_update(v, &e, 1300), 0); /* not brought back without a heartbeat */
    assert_int_equal(view_node(v, 0)->up, 0);
    e.seq = 2;
    e.up = 0;
    assert_int_equal(view_update(v, &e, 1400), 0); /* older: ignored */
    e.seq = 4;
    e.up = 1;
    assert_int_equal(view_update(v, &e, 1500), 1); /* a newer heartbeat: up again */
    assert_int_equal(view_node(v, 0)->up, 1);
    view_destroy(&v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_speculate_defaults_and_overrides),
        cmocka_unit_test(test_speculate_bad),
        cmocka_unit_test(test_outputs),
        cmocka_unit_test(test_dag_redo),
        cmocka_unit_test(test_dag_redo_ready_and_barrier),
        cmocka_unit_test(test_view_down_same_seq),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
