/* test_open.c - an open job's pure parts: the spec's "open" and the DAG's holds and skips
 * (jm/spec.h, jm/dag.h, docs/snakemake.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "jm/dag.h"
#include "jm/spec.h"

/* a -> b -> d, a -> c -> d: a diamond whose tasks all start held */
static const char *const diamond =
    "{\"version\":1,\"name\":\"wf\",\"open\":{\"spool\":\"/tmp/x\",\"idle_s\":5},\"tasks\":["
    "{\"id\":\"a\",\"cmd\":[\"true\"]},"
    "{\"id\":\"b\",\"cmd\":[\"true\"],\"after\":[\"a\"]},"
    "{\"id\":\"c\",\"cmd\":[\"true\"],\"after\":[\"a\"]},"
    "{\"id\":\"d\",\"cmd\":[\"true\"],\"after\":[\"b\",\"c\"]}]}";

struct fixture {
    struct spec *spec;
    dag_t *dag;
};

static int setup(void **state)
{
    static struct fixture f;
    memset(&f, 0, sizeof f);
    char msg[256];
    if (spec_parse(diamond, strlen(diamond), NULL, &f.spec, msg, sizeof msg) != 0 ||
        dag_new(f.spec, &f.dag) != 0)
        return -1;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    dag_destroy(&f->dag);
    spec_destroy(&f->spec);
    return 0;
}

static void test_spec_open(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(f->spec->open, 1);
    assert_string_equal(f->spec->open_spool, "/tmp/x");
    assert_true(f->spec->open_idle_s == 5.0);

    struct spec *s = NULL;
    char msg[256];
    const char *rel = "{\"version\":1,\"open\":{\"spool\":\"x\"},\"tasks\":[{\"id\":\"a\","
                      "\"cmd\":[\"true\"]}]}";
    assert_int_equal(spec_parse(rel, strlen(rel), NULL, &s, msg, sizeof msg), ERR_INVAL);
    assert_non_null(strstr(msg, "absolute"));
    const char *typo = "{\"version\":1,\"open\":{\"spool\":\"/x\",\"idle\":3},\"tasks\":[{\"id\":"
                       "\"a\",\"cmd\":[\"true\"]}]}";
    assert_int_equal(spec_parse(typo, strlen(typo), NULL, &s, msg, sizeof msg), ERR_INVAL);
    assert_non_null(strstr(msg, "idle"));
    const char *nospool = "{\"version\":1,\"open\":{},\"tasks\":[{\"id\":\"a\",\"cmd\":[\"t\"]}]}";
    assert_int_equal(spec_parse(nospool, strlen(nospool), NULL, &s, msg, sizeof msg), ERR_INVAL);
    const char *closed = "{\"version\":1,\"tasks\":[{\"id\":\"a\",\"cmd\":[\"true\"]}]}";
    assert_int_equal(spec_parse(closed, strlen(closed), NULL, &s, msg, sizeof msg), 0);
    assert_int_equal(s->open, 0);
    assert_null(s->open_spool);
    spec_destroy(&s);
}

static void hold_all(dag_t *d)
{
    for (size_t i = 0; i < dag_ntasks(d); i++)
        assert_int_equal(dag_hold(d, i), 0);
}

static void test_hold_release(void **state)
{
    struct fixture *f = *state;
    dag_t *d = f->dag;
    size_t n;
    assert_int_equal(dag_state(d, 0), DAG_READY);
    hold_all(d);
    assert_int_equal(dag_nheld(d), 4);
    assert_int_equal(dag_count(d, DAG_READY), 0);
    dag_ready(d, &n);
    assert_int_equal(n, 0);
    assert_int_equal(dag_hold(d, 0), ERR_STATE); /* held already */
    assert_int_equal(dag_release(d, 0), 0);
    assert_int_equal(dag_release(d, 0), ERR_STATE);
    assert_int_equal(dag_state(d, 0), DAG_READY);
    /* b released before its parent ran: it waits for a, not for its hold */
    assert_int_equal(dag_release(d, 1), 0);
    assert_int_equal(dag_state(d, 1), DAG_WAITING);
    assert_int_equal(dag_start(d, 0), 0);
    assert_int_equal(dag_hold(d, 0), ERR_STATE); /* running */
    size_t rel = 0;
    assert_int_equal(dag_succeed(d, 0, &rel), 0);
    assert_int_equal(rel, 1); /* b only: c is still held */
    assert_int_equal(dag_state(d, 1), DAG_READY);
    assert_int_equal(dag_state(d, 2), DAG_WAITING);
    assert_int_equal(dag_pending(d, 2), 1);
    assert_int_equal(dag_nheld(d), 2);
    dag_reset(d);
    assert_int_equal(dag_nheld(d), 0);
    assert_int_equal(dag_state(d, 0), DAG_READY);
}

static void test_skip(void **state)
{
    struct fixture *f = *state;
    dag_t *d = f->dag;
    hold_all(d);
    size_t rel = 0;
    /* b's parent a has not run: b cannot be skipped yet */
    assert_int_equal(dag_skip(d, 1, &rel), ERR_STATE);
    /* a skipped (done elsewhere): b and c stay held, their only unmet dependency the hold */
    assert_int_equal(dag_skip(d, 0, &rel), 0);
    assert_int_equal(rel, 0);
    assert_int_equal(dag_state(d, 0), DAG_SUCCEEDED);
    assert_int_equal(dag_pending(d, 1), 1);
    assert_int_equal(dag_release(d, 1), 0);
    assert_int_equal(dag_state(d, 1), DAG_READY);
    assert_int_equal(dag_skip(d, 1, NULL), ERR_STATE); /* not held any more */
    assert_int_equal(dag_skip(d, 2, &rel), 0);
    assert_int_equal(dag_start(d, 1), 0);
    assert_int_equal(dag_succeed(d, 1, &rel), 0);
    assert_int_equal(rel, 0); /* d is held */
    assert_int_equal(dag_pending(d, 3), 1);
    assert_int_equal(dag_skip(d, 3, &rel), 0);
    assert_true(dag_done(d));
    assert_int_equal(dag_count(d, DAG_SUCCEEDED), 4);
    assert_int_equal(dag_nheld(d), 0);
    assert_int_equal(dag_hold(d, 3), ERR_STATE); /* succeeded */
    assert_int_equal(dag_hold(d, 9), ERR_RANGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_spec_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hold_release, setup, teardown),
        cmocka_unit_test_setup_teardown(test_skip, setup, teardown),
    };
    return cmocka_run_group_tests_name("open", tests, NULL, NULL);
}
