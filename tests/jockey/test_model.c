/* Jockey's utility functions, Amdahl model and progress indicators against hand-computed values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "common/err.h"
#include "jm/amdahl.h"
#include "jm/jsim.h"
#include "jm/progress.h"
#include "jm/spec.h"
#include "jm/utility.h"

static void test_utility_from_deadline(void **state)
{
    (void)state;
    struct utility u;
    assert_int_equal(utility_init_deadline(&u, 3600), 0);
    assert_true(fabs(utility_eval(&u, 0) - 1) < 1e-12);
    assert_true(fabs(utility_eval(&u, 3600) - 1) < 1e-12);
    assert_true(fabs(utility_eval(&u, 3600 + 300) - 0) < 1e-12);
    assert_true(fabs(utility_eval(&u, 3600 + 600) - (-1)) < 1e-12);
    assert_true(fabs(utility_eval(&u, 3600 + 60000) - (-1000)) < 1e-9);
    /* Past the last point the final slope continues: later is still worse. */
    assert_true(utility_eval(&u, 3600 + 70000) < -1000);
    assert_true(fabs(utility_deadline(&u) - 3600) < 1e-12);
    utility_shift(&u, 180);
    assert_true(fabs(utility_deadline(&u) - 3420) < 1e-12);
    assert_true(utility_eval(&u, 3500) < 1);
    /* A one-minute deadline: the ramps shrink sixty-fold. */
    assert_int_equal(utility_init_deadline(&u, 60), 0);
    assert_true(fabs(utility_eval(&u, 60) - 1) < 1e-12);
    assert_true(fabs(utility_eval(&u, 70) - (-1)) < 1e-12);
    assert_true(fabs(utility_eval(&u, 60 + 1000) - (-1000)) < 1e-9);
    assert_int_equal(utility_init_deadline(&u, 0), ERR_INVAL);
    assert_int_equal(utility_init_deadline(&u, NAN), ERR_INVAL);
}

static void test_utility_points(void **state)
{
    (void)state;
    struct utility u;
    char msg[128];
    const double t[] = {0, 900, 1500};
    const double v[] = {1, 1, -1};
    assert_int_equal(utility_init_points(&u, t, v, 3, msg, sizeof msg), 0);
    assert_true(fabs(utility_eval(&u, 1200) - 0) < 1e-12);
    assert_true(fabs(utility_deadline(&u) - 900) < 1e-12);
    const double bad_t[] = {0, 900, 900};
    assert_int_equal(utility_init_points(&u, bad_t, v, 3, msg, sizeof msg), ERR_INVAL);
    assert_non_null(strstr(msg, "increase"));
    const double flat_t[] = {0, 100};
    const double flat_v[] = {1, 1};
    assert_int_equal(utility_init_points(&u, flat_t, flat_v, 2, msg, sizeof msg), 0);
    assert_true(isinf(utility_deadline(&u)));
    assert_int_equal(utility_init_points(&u, t, v, 0, msg, sizeof msg), ERR_INVAL);
}

static void test_utility_from_spec(void **state)
{
    (void)state;
    const char *with_points = "{\"version\":1,\"deadline_s\":900,"
                              "\"utility\":[[0,1],[900,1],[1500,-1]],"
                              "\"tasks\":[{\"id\":\"a\",\"cmd\":[\"true\"]}]}";
    const char *deadline_only = "{\"version\":1,\"deadline_s\":900,"
                                "\"tasks\":[{\"id\":\"a\",\"cmd\":[\"true\"]}]}";
    const char *neither = "{\"version\":1,\"tasks\":[{\"id\":\"a\",\"cmd\":[\"true\"]}]}";
    struct spec *sp = NULL;
    struct utility u;
    char msg[128];
    assert_int_equal(spec_parse(with_points, strlen(with_points), NULL, &sp, msg, sizeof msg), 0);
    assert_int_equal(utility_init_spec(&u, sp, msg, sizeof msg), 0);
    assert_int_equal(u.n, 3);
    assert_true(fabs(utility_eval(&u, 1200)) < 1e-12);
    spec_destroy(&sp);
    assert_int_equal(spec_parse(deadline_only, strlen(deadline_only), NULL, &sp, msg, sizeof msg),
                     0);
    assert_int_equal(utility_init_spec(&u, sp, msg, sizeof msg), 0);
    assert_int_equal(u.n, 4);
    assert_true(fabs(utility_deadline(&u) - 900) < 1e-12);
    spec_destroy(&sp);
    assert_int_equal(spec_parse(neither, strlen(neither), NULL, &sp, msg, sizeof msg), 0);
    assert_int_equal(utility_init_spec(&u, sp, msg, sizeof msg), ERR_NOTFOUND);
    spec_destroy(&sp);
}

/* map: 4 tasks x 10 s; reduce: 1 task x 20 s, barrier map -> reduce. */
static jsim_job_t *mapreduce(void)
{
    jsim_job_t *j = jsim_job_new(2, 5);
    assert_non_null(j);
    for (int t = 0; t < 4; t++)
        assert_int_equal(jsim_job_set_task(j, t, 0, 10), 0);
    assert_int_equal(jsim_job_set_task(j, 4, 1, 20), 0);
    assert_int_equal(jsim_job_add_barrier(j, 0, 1), 0);
    assert_int_equal(jsim_job_finalize(j, NULL, 0), 0);
    return j;
}

static void test_amdahl_hand_computed(void **state)
{
    (void)state;
    jsim_job_t *j = mapreduce();
    struct amdahl am;
    assert_int_equal(jsim_job_amdahl(j, NULL, &am), 0);
    /* l = {10, 20}, L = {20, 0}, T = {40, 20}. */
    assert_true(fabs(am.l[0] - 10) < 1e-12 && fabs(am.l[1] - 20) < 1e-12);
    assert_true(fabs(am.L[0] - 20) < 1e-12 && fabs(am.L[1] - 0) < 1e-12);
    assert_true(fabs(am.S0 - 30) < 1e-12);
    assert_true(fabs(am.P0 - 60) < 1e-12);
    assert_true(fabs(amdahl_remaining(&am, NULL, 4) - 45) < 1e-12);
    int done[2] = {2, 0};
    /* S = max(0.5 * 10 + 20, 20) = 25, P = 20 + 20 = 40. */
    assert_true(fabs(amdahl_serial(&am, done) - 25) < 1e-12);
    assert_true(fabs(amdahl_parallel(&am, done) - 40) < 1e-12);
    assert_true(fabs(amdahl_remaining(&am, done, 2) - 45) < 1e-12);
    int all[2] = {4, 1};
    assert_true(fabs(amdahl_remaining(&am, all, 1)) < 1e-12);
    /* a below 1 counts as 1 token. */
    assert_true(fabs(amdahl_remaining(&am, NULL, 0) - 90) < 1e-12);
    amdahl_close(&am);
    jsim_job_destroy(&j);
    assert_null(j);
}

static void test_progress_indicators(void **state)
{
    (void)state;
    jsim_job_t *j = mapreduce();
    struct amdahl am;
    assert_int_equal(jsim_job_amdahl(j, NULL, &am), 0);
    const int n[2] = {4, 1};
    const double Q[2] = {10, 0}, T[2] = {40, 20};
    int done[2] = {2, 0};
    struct progress_model pm;

    assert_int_equal(progress_init(&pm, PROGRESS_TOTALWORK_Q, 2, n, Q, T, NULL), 0);
    assert_true(fabs(progress_eval(&pm, done) - 25.0 / 70.0) < 1e-12);
    assert_true(fabs(progress_task_weight(&pm, 0) - 12.5 / 70.0) < 1e-12);
    progress_close(&pm);

    assert_int_equal(progress_init(&pm, PROGRESS_TOTALWORK, 2, n, Q, T, NULL), 0);
    assert_true(fabs(progress_eval(&pm, done) - 20.0 / 60.0) < 1e-12);
    progress_close(&pm);

    assert_int_equal(progress_init(&pm, PROGRESS_VERTEXFRAC, 2, n, NULL, NULL, NULL), 0);
    assert_true(fabs(progress_eval(&pm, done) - 2.0 / 5.0) < 1e-12);
    progress_close(&pm);

    assert_int_equal(progress_init(&pm, PROGRESS_CP, 2, n, NULL, NULL, &am), 0);
    assert_false(progress_is_linear(&pm));
    /* S_0 = 30, S_t = 25: a sixth of the critical path is done. */
    assert_true(fabs(progress_eval(&pm, done) - (1.0 - 25.0 / 30.0)) < 1e-12);
    int all[2] = {4, 1};
    assert_true(fabs(progress_eval(&pm, all) - 1.0) < 1e-12);
    progress_close(&pm);

    /* No profile data at all: totalworkWithQ falls back to vertexfrac weights. */
    const double zero[2] = {0, 0};
    assert_int_equal(progress_init(&pm, PROGRESS_TOTALWORK_Q, 2, n, zero, zero, NULL), 0);
    assert_true(fabs(progress_eval(&pm, done) - 2.0 / 5.0) < 1e-12);
    progress_close(&pm);

    assert_int_equal(progress_init(&pm, PROGRESS_CP, 2, n, NULL, NULL, NULL), ERR_INVAL);
    enum progress_kind k;
    assert_int_equal(progress_kind_parse("vertexfrac", &k), 0);
    assert_int_equal(k, PROGRESS_VERTEXFRAC);
    assert_int_equal(progress_kind_parse("nope", &k), ERR_INVAL);
    amdahl_close(&am);
    jsim_job_destroy(&j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utility_from_deadline), cmocka_unit_test(test_utility_points),
        cmocka_unit_test(test_utility_from_spec),     cmocka_unit_test(test_amdahl_hand_computed),
        cmocka_unit_test(test_progress_indicators),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
