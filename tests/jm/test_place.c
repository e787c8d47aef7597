/* test_place.c - a JM scheduling round end to end on the pure modules: spec inputs resolved to
 * view nodes, locality wins on an idle cluster, a busy holder loses to an idle rack-mate, a
 * retry avoids the failed node, cached files make a node cheaper, one task per node. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "jm/estimator.h"
#include "jm/place.h"
#include "jm/spec.h"
#include "jm/view.h"
#include "jm_fixture.h"

static double draw_half(void *ctx)
{
    (void)ctx;
    return 0.5;
}

static const char *SPEC =
    "{\"version\":1,\"tasks\":["
    "{\"id\":\"a\",\"stage\":\"s\",\"cmd\":[\"t\"],\"inputs\":[{\"bytes\":1000000000,"
    "\"nodes\":[\"pn-3\",\"ghost\"]}]},"
    "{\"id\":\"b\",\"stage\":\"s\",\"cmd\":[\"t\"],\"inputs\":[{\"bytes\":1000000000,"
    "\"nodes\":[\"pn-7\"]}]},"
    "{\"id\":\"c\",\"stage\":\"s\",\"cmd\":[\"t\"],\"inputs\":[{\"bytes\":1000000000,"
    "\"nodes\":[\"pn-3\"]}]},"
    "{\"id\":\"f\",\"stage\":\"files\",\"cmd\":[\"t\"],\"files\":[{\"path\":\"/x\","
    "\"bytes\":800000000}]}]}";

static const struct place_match *find(const struct place_match *m, size_t n, size_t task)
{
    for (size_t i = 0; i < n; i++)
        if (m[i].task == task)
            return &m[i];
    return NULL;
}

static void test_round(void **state)
{
    (void)state;
    char msg[256];
    struct spec *s = NULL;
    assert_int_equal(spec_parse(SPEC, strlen(SPEC), NULL, &s, msg, sizeof msg), 0);
    view_t *v = NULL;
    assert_int_equal(view_new(&v), 0);
    char name[16];
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "pn-%d", i);
        fx_node(v, name, i < 5 ? "r0" : "r1", 0, 1, 0);
    }
    assert_int_equal(view_refresh_light(v, 10), 0);
    estimator_t *est = NULL;
    assert_int_equal(estimator_new(NULL, s->nstages, &est), 0);
    place_t *p = NULL;
    assert_int_equal(place_new(s, NULL, &p), 0);
    assert_int_equal(place_resolve(p, v), 0);
    const struct estimator_task *ta = place_task(p, 0);
    assert_int_equal(ta->inputs[0].nodes[0], 3);
    assert_int_equal(ta->inputs[0].nodes[1], -1); /* unknown node */

    size_t tasks[4] = {0, 1, 2, 3};
    struct place_match out[4];
    size_t n;
    assert_int_equal(place_round(p, v, est, tasks, 4, 0, draw_half, NULL, out, &n), 0);
    assert_int_equal(n, 4);
    assert_int_equal(find(out, n, 0)->node, 3); /* local */
    assert_int_equal(find(out, n, 1)->node, 7);
    uint32_t cnode = find(out, n, 2)->node; /* pn-3 is taken: a rack-mate of pn-3 */
    assert_true(cnode < 5 && cnode != 3);
    assert_true(find(out, n, 0)->est.io_s > 6.2 && find(out, n, 0)->est.io_s < 6.3);
    for (size_t i = 1; i < n; i++)
        assert_true(out[i - 1].est.w_s <= out[i].est.w_s);

    /* the holder becomes busy: an idle rack-mate wins over it */
    fx_node(v, "pn-3", "r0", 60, 2, 0);
    size_t one[1] = {0};
    assert_int_equal(place_round(p, v, est, one, 1, 0, draw_half, NULL, out, &n), 0);
    assert_int_equal(n, 1);
    assert_true(out[0].node < 5 && out[0].node != 3);
    fx_node(v, "pn-3", "r0", 0, 3, 0);

    /* a failed attempt on pn-3: the retry prefers another node */
    place_note_failed(p, 0, 3);
    assert_int_equal(place_round(p, v, est, one, 1, 0, draw_half, NULL, out, &n), 0);
    assert_int_equal(n, 1);
    assert_int_not_equal(out[0].node, 3);

    /* staging: 800 MB at 80 MB/s is 10 s, unless the stage's files are cached there */
    size_t ft[1] = {3};
    assert_int_equal(place_round(p, v, est, ft, 1, 0, draw_half, NULL, out, &n), 0);
    assert_true(out[0].est.i_s > 9.9);
    assert_int_equal(place_note_cached(p, s->tasks[3].stage, 8), 0);
    assert_int_equal(place_round(p, v, est, ft, 1, 0, draw_half, NULL, out, &n), 0);
    assert_int_equal(out[0].node, 8);
    assert_true(out[0].est.i_s == 0);

    size_t bad[1] = {99};
    assert_int_equal(place_round(p, v, est, bad, 1, 0, draw_half, NULL, out, &n), ERR_RANGE);
    place_destroy(&p);
    assert_null(p);
    estimator_destroy(&est);
    view_destroy(&v);
    spec_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
