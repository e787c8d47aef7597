/* Unit tests of pn/matrix (and pn/loadprof): hand-computed wait-time matrices, downgrades. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "common/err.h"
#include "pn/matrix.h"

struct fixture {
    queue_t *q;
    matrix_t m;
    loadprof_t p;
};

/* Node: 4 cores, 8 GiB. Bins: 1,2,4,8 cores x 1,8,16 GiB. */
static int setup(void **state)
{
    static struct fixture f;
    memset(&f, 0, sizeof f);
    queue_config_t c = {.cpus = 4, .mem_mb = 8192, .overrun_s = 1};
    f.q = queue_new(&c);
    const double cpu[] = {1, 2, 4, 8}, mem[] = {1024, 8192, 16384};
    if (!f.q || matrix_init(&f.m, cpu, 4, mem, 3))
        return -1;
    loadprof_init(&f.p, 4, 8192);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    queue_destroy(&f->q);
    loadprof_close(&f->p);
    return 0;
}

static void run(struct fixture *f, uint64_t id, double cpu, double mem, double est, double now)
{
    queue_task_t t = {.id = id, .cpu = cpu, .mem_mb = mem, .est_s = est, .klass = QUEUE_REGULAR};
    assert_int_equal(queue_push(f->q, &t), 0);
    queue_task_t out;
    assert_int_equal(queue_pick(f->q, now, 0, &out), 0);
    assert_int_equal(out.id, id);
}

static void enqueue(struct fixture *f, uint64_t id, double cpu, double mem, double est)
{
    queue_task_t t = {.id = id, .cpu = cpu, .mem_mb = mem, .est_s = est, .klass = QUEUE_REGULAR};
    assert_int_equal(queue_push(f->q, &t), 0);
}

#define CELL(fx, ci, mi) ((fx)->m.wait_s[ci][mi])

static void assert_never_past_node(struct fixture *f)
{
    for (size_t c = 0; c < 4; c++)
        assert_true(CELL(f, c, 2) == MATRIX_NEVER); /* 16 GiB > 8 GiB */
    for (size_t m = 0; m < 3; m++)
        assert_true(CELL(f, 3, m) == MATRIX_NEVER); /* 8 cores > 4 */
}

static void test_empty_node(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(matrix_compute(&f->m, f->q, 100, &f->p), 0);
    for (size_t c = 0; c < 3; c++)
        for (size_t m = 0; m < 2; m++)
            assert_true(CELL(f, c, m) == 0);
    assert_never_past_node(f);
    assert_true(f->m.computed_at == 100);
}

static void test_full_node(void **state)
{
    struct fixture *f = *state;
    run(f, 1, 4, 8192, 10, 0);
    assert_int_equal(matrix_compute(&f->m, f->q, 0, &f->p), 0);
    for (size_t c = 0; c < 3; c++)
        for (size_t m = 0; m < 2; m++)
            assert_true(fabs(CELL(f, c, m) - 10) < 1e-9);
    assert_never_past_node(f);
    assert_int_equal(matrix_compute(&f->m, f->q, 4, &f->p), 0);
    assert_true(fabs(CELL(f, 0, 0) - 6) < 1e-9);
    /* past its estimate the task is expected to end within overrun_s */
    assert_int_equal(matrix_compute(&f->m, f->q, 12, &f->p), 0);
    assert_true(fabs(CELL(f, 0, 0) - 1) < 1e-9);
}

/* A (2 cores, 10 s) runs; B (1 core, 4 s) queued behind H (4 cores, 5 s).
 * Simulation: H reserved at [10,15); B fits now until 4 without touching H: backfilled at
 * [0,4). Usage: [0,4) 3 cores, [4,10) 2, [10,15) 4, then 0. A new task waits until it fits for
 * good: 1, 2 or 4 cores -> 15 s. Without H: 1 core -> 0, 2 cores -> 4, 4 cores -> 10. */
static void test_queued_work(void **state)
{
    struct fixture *f = *state;
    run(f, 1, 2, 1024, 10, 0);
    enqueue(f, 2, 4, 1024, 5);
    enqueue(f, 3, 1, 1024, 4);
    assert_int_equal(matrix_compute(&f->m, f->q, 0, &f->p), 0);
    for (size_t c = 0; c < 3; c++)
        assert_true(fabs(CELL(f, c, 0) - 15) < 1e-9);
    /* memory matters too: 8 GiB must wait for everything holding memory */
    assert_true(fabs(CELL(f, 0, 1) - 15) < 1e-9);
    assert_int_equal(queue_cancel(f->q, 2), 0);
    assert_int_equal(matrix_compute(&f->m, f->q, 0, &f->p), 0);
    assert_true(fabs(CELL(f, 0, 0) - 0) < 1e-9);
    assert_true(fabs(CELL(f, 1, 0) - 4) < 1e-9);
    assert_true(fabs(CELL(f, 2, 0) - 10) < 1e-9);
    assert_true(fabs(matrix_lookup(&f->m, 1.5, 512) - 4) < 1e-9); /* the 2-core, 1 GiB cell */
    assert_true(matrix_lookup(&f->m, 9, 512) == MATRIX_NEVER);
}

/* The matrix rises as work queues and falls as it drains. */
static void test_rises_and_falls(void **state)
{
    struct fixture *f = *state;
    double prev = -1;
    for (uint64_t id = 1; id <= 6; id++) {
        enqueue(f, id, 4, 1024, 3);
        assert_int_equal(matrix_compute(&f->m, f->q, 0, &f->p), 0);
        assert_true(CELL(f, 0, 0) > prev);
        prev = CELL(f, 0, 0);
    }
    assert_true(fabs(prev - 18) < 1e-9);
    double now = 0;
    for (uint64_t id = 1; id <= 6; id++) {
        queue_task_t t;
        assert_int_equal(queue_pick(f->q, now, 0, &t), 0);
        assert_int_equal(t.id, id);
        now += 3;
        assert_int_equal(queue_finish(f->q, id), 0);
        assert_int_equal(matrix_compute(&f->m, f->q, now, &f->p), 0);
        assert_true(CELL(f, 0, 0) < prev);
        prev = CELL(f, 0, 0);
    }
    assert_true(CELL(f, 0, 0) == 0);
}

/* Opportunistic work yields to regular tasks: it does not raise the matrix. */
static void test_opportunistic_not_counted(void **state)
{
    struct fixture *f = *state;
    queue_task_t t = {.id = 1, .cpu = 4, .mem_mb = 8192, .est_s = 50, .klass = QUEUE_OPPORTUNISTIC};
    assert_int_equal(queue_push(f->q, &t), 0);
    assert_int_equal(queue_pick(f->q, 0, 0, &t), 0);
    assert_int_equal(matrix_compute(&f->m, f->q, 0, &f->p), 0);
    assert_true(CELL(f, 2, 1) == 0);
}

/* A running regular task downgraded (issue 12) leaves the matrix once regular work may take
 * its room: at once without a grace; with one, the wait is until the grace ends (or its
 * expected end, if sooner). */
static void test_downgrade(void **state)
{
    struct fixture *f = *state;
    run(f, 1, 4, 8192, 50, 0);
    assert_int_equal(matrix_compute(&f->m, f->q, 10, &f->p), 0);
    assert_true(fabs(CELL(f, 0, 0) - 40) < 1e-9);
    assert_int_equal(queue_downgrade(f->q, 1, 25), 0); /* 15 s of grace from t=10 */
    assert_int_equal(matrix_compute(&f->m, f->q, 10, &f->p), 0);
    assert_true(fabs(CELL(f, 0, 0) - 15) < 1e-9);
    assert_true(fabs(CELL(f, 2, 1) - 15) < 1e-9);
    assert_int_equal(matrix_compute(&f->m, f->q, 25, &f->p), 0);
    assert_true(CELL(f, 0, 0) == 0); /* the grace is over */
    assert_true(CELL(f, 2, 1) == 0);
    assert_int_equal(queue_finish(f->q, 1), 0);
    /* a grace longer than the expected run: the wait is the expected end */
    run(f, 2, 2, 1024, 10, 30);
    assert_int_equal(queue_downgrade(f->q, 2, 100), 0);
    assert_int_equal(matrix_compute(&f->m, f->q, 30, &f->p), 0);
    assert_true(CELL(f, 0, 0) == 0); /* 2 cores free beside it */
    assert_true(fabs(CELL(f, 2, 0) - 10) < 1e-9);
    /* without a grace: not counted at all */
    run(f, 3, 1, 1024, 50, 30);
    assert_int_equal(matrix_compute(&f->m, f->q, 30, &f->p), 0);
    assert_true(fabs(CELL(f, 2, 0) - 50) < 1e-9);
    assert_int_equal(queue_downgrade(f->q, 3, 0), 0);
    assert_int_equal(matrix_compute(&f->m, f->q, 30, &f->p), 0);
    assert_true(fabs(CELL(f, 2, 0) - 10) < 1e-9); /* only task 2's grace holds it back */
}

/* Past sim_depth queued tasks the rest counts as a fluid block after the exact part: four
 * 1-core, 3 s tasks on 4 cores, two simulated exactly ([0,3) with 2 cores), the other two as
 * 2 x 1/4 x 3 s = 1.5 s of the whole node from t=3. A 1-core task then waits 4.5 s, never less
 * than the exact answer (3 s). */
static void test_fluid_tail(void **state)
{
    (void)state;
    queue_config_t c = {.cpus = 4, .mem_mb = 8192, .sim_depth = 2};
    queue_t *q = queue_new(&c);
    assert_non_null(q);
    for (uint64_t id = 1; id <= 4; id++) {
        queue_task_t t = {.id = id, .cpu = 1, .mem_mb = 100, .est_s = 3};
        assert_int_equal(queue_push(q, &t), 0);
    }
    matrix_t m;
    const double cpu[] = {1, 4}, mem[] = {1024};
    assert_int_equal(matrix_init(&m, cpu, 2, mem, 1), 0);
    loadprof_t p;
    loadprof_init(&p, 4, 8192);
    assert_int_equal(matrix_compute(&m, q, 0, &p), 0);
    assert_true(fabs(m.wait_s[0][0] - 4.5) < 1e-9);
    assert_true(fabs(m.wait_s[1][0] - 4.5) < 1e-9);
    double exact;
    assert_int_equal(queue_expected_start(q, 0, 4, &p, &exact), 0);
    assert_true(exact == 0); /* all four fit at once in truth */
    loadprof_close(&p);
    queue_destroy(&q);
}

static void test_bins(void **state)
{
    (void)state;
    double v[MATRIX_MAX_BINS];
    char msg[128];
    assert_int_equal(matrix_parse_bins("0.5, 1,2,4", v, msg, sizeof msg), 4);
    assert_true(v[0] == 0.5 && v[3] == 4);
    assert_int_equal(matrix_parse_bins("1,1", v, msg, sizeof msg), ERR_RANGE);
    assert_int_equal(matrix_parse_bins("1,x", v, msg, sizeof msg), ERR_PARSE);
    assert_int_equal(matrix_parse_bins("", v, msg, sizeof msg), ERR_PARSE);
    assert_int_equal(matrix_parse_bins("-1", v, msg, sizeof msg), ERR_PARSE);
    assert_int_equal(
        matrix_parse_bins("1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", v, msg, sizeof msg),
        ERR_RANGE);
    matrix_t m;
    assert_int_equal(matrix_init(&m, NULL, 0, NULL, 0), 0);
    assert_int_equal(m.ncpu, 6);
    assert_int_equal(m.nmem, 7);
    const double bad[] = {2, 1};
    assert_int_equal(matrix_init(&m, bad, 2, NULL, 0), ERR_INVAL);
}

static void test_loadprof_fit(void **state)
{
    (void)state;
    loadprof_t p;
    loadprof_init(&p, 2, 100);
    assert_int_equal(loadprof_reset(&p, 0), 0);
    assert_int_equal(loadprof_add(&p, 0, 5, 2, 10), 0);
    assert_int_equal(loadprof_add(&p, 8, 10, 1, 10), 0);
    assert_true(loadprof_fit(&p, 1, 10, 3) == 5);  /* [5,8) free of the 2-core block */
    assert_true(loadprof_fit(&p, 2, 10, 3) == 5);  /* [5,8) fits exactly */
    assert_true(loadprof_fit(&p, 2, 10, 4) == 10); /* would overlap [8,10) */
    assert_true(loadprof_fit(&p, 1, 10, INFINITY) == 5);
    assert_true(isinf(loadprof_fit(&p, 3, 10, 1)));
    assert_int_equal(loadprof_add(&p, 3, 1, 1, 1), ERR_INVAL);
    double c, m;
    loadprof_at(&p, 9, &c, &m);
    assert_true(c == 1 && m == 10);
    loadprof_close(&p);
}

/* A small deterministic generator for the randomised comparisons below. */
static double draw(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*x >> 11) / 9007199254740992.0;
}

/* loadprof_fit_hinted answers exactly as loadprof_fit through a run of fits and adds into one
 * growing profile: alike requests (where the hint skips the profile's start), smaller ones
 * (where it must not), requests that never fit, and the queue's own use of it. */
static void test_loadprof_fit_hinted(void **state)
{
    (void)state;
    uint64_t x = 7;
    int skipped = 0;
    for (int round = 0; round < 200; round++) {
        loadprof_t p;
        loadprof_init(&p, 8, 1000);
        assert_int_equal(loadprof_reset(&p, 10), 0);
        for (int i = 0; i < 30; i++) /* running work, overcommitted at times */
            assert_int_equal(
                loadprof_add(&p, 10, 10 + 5 * draw(&x), floor(4 * draw(&x)), 300 * draw(&x)), 0);
        loadprof_hint_t h = {0};
        double cpu = 1, mem = 100, dur = 1;
        for (int i = 0; i < 150; i++) {
            double r = draw(&x);
            if (r < 0.15) { /* a smaller request */
                cpu = 0.5 * draw(&x);
                mem = 50 * draw(&x);
                dur = 0.5 * draw(&x);
            } else if (r < 0.35) { /* a larger one, at times past the node */
                cpu += 3 * draw(&x);
                mem += 200 * draw(&x);
                dur += draw(&x);
            } /* else alike */
            double want = loadprof_fit(&p, cpu, mem, dur);
            int had = h.set && cpu >= h.cpu && mem >= h.mem && dur >= h.dur && h.at > 10;
            double got = loadprof_fit_hinted(&p, &h, cpu, mem, dur);
            skipped += had;
            if (isinf(want))
                assert_true(isinf(got));
            else
                assert_true(got == want);
            if (!isinf(got))
                assert_int_equal(loadprof_add(&p, got, got + dur, cpu, mem), 0);
        }
        loadprof_close(&p);
    }
    assert_true(skipped > 1000); /* the hint did skip the start of the profile */
}

/* loadprof_reset_ends builds the profile the adds from `now` build: same steps, same usage
 * (to the last bits), same fits; ends at or before now add nothing, INFINITY is kept. */
static void test_loadprof_reset_ends(void **state)
{
    (void)state;
    uint64_t x = 11;
    for (int round = 0; round < 300; round++) {
        loadprof_t a, b;
        loadprof_init(&a, 16, 4096);
        loadprof_init(&b, 16, 4096);
        size_t n = (size_t)(draw(&x) * 120);
        loadprof_item_t it[120];
        assert_int_equal(loadprof_reset(&a, 5), 0);
        for (size_t i = 0; i < n; i++) {
            double r = draw(&x);
            double end = r < 0.05  ? INFINITY
                         : r < 0.1 ? 5 - draw(&x)                /* ended already: nothing */
                         : r < 0.3 ? 5 + floor(4 * draw(&x)) / 4 /* shared ends */
                                   : 5 + 3 * draw(&x);
            it[i] = (loadprof_item_t){end, floor(8 * draw(&x)) / 8, floor(100 * draw(&x))};
            if (end >= 5) /* loadprof_add refuses an end before its start */
                assert_int_equal(loadprof_add(&a, 5, end, it[i].cpu, it[i].mem), 0);
        }
        assert_int_equal(loadprof_reset_ends(&b, 5, it, n), 0);
        assert_int_equal(a.n, b.n);
        for (size_t i = 0; i < a.n; i++) {
            assert_true(a.steps[i].t == b.steps[i].t);
            assert_true(fabs(a.steps[i].cpu - b.steps[i].cpu) < 1e-9);
            assert_true(fabs(a.steps[i].mem - b.steps[i].mem) < 1e-6);
        }
        for (int k = 0; k < 20; k++) {
            double cpu = 16 * draw(&x), mem = 4096 * draw(&x), dur = 2 * draw(&x);
            double fa = loadprof_fit(&a, cpu, mem, dur), fb = loadprof_fit(&b, cpu, mem, dur);
            assert_true(fa == fb || (isinf(fa) && isinf(fb)));
        }
        loadprof_close(&a);
        loadprof_close(&b);
    }
    /* ends in start order (as running tasks mostly are), reversed, and all alike */
    static loadprof_item_t many[500];
    for (int shape = 0; shape < 3; shape++) {
        loadprof_t a, b;
        loadprof_init(&a, 1000, 1000);
        loadprof_init(&b, 1000, 1000);
        assert_int_equal(loadprof_reset(&a, 0), 0);
        for (int i = 0; i < 500; i++) {
            double end = shape == 0 ? 1 + i : shape == 1 ? 500 - i : 3;
            many[i] = (loadprof_item_t){end, 1, 1};
            assert_int_equal(loadprof_add(&a, 0, end, 1, 1), 0);
        }
        assert_int_equal(loadprof_reset_ends(&b, 0, many, 500), 0);
        assert_int_equal(a.n, b.n);
        for (size_t i = 0; i < a.n; i++)
            assert_true(a.steps[i].t == b.steps[i].t && a.steps[i].cpu == b.steps[i].cpu);
        loadprof_close(&a);
        loadprof_close(&b);
    }
    loadprof_t p;
    loadprof_init(&p, 1, 1);
    loadprof_item_t bad[] = {{7, -1, 0}};
    assert_int_equal(loadprof_reset_ends(&p, 5, bad, 1), ERR_INVAL);
    loadprof_item_t none[1];
    assert_int_equal(loadprof_reset_ends(&p, 5, none, 0), 0);
    assert_int_equal(p.n, 1);
    loadprof_close(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_empty_node, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_node, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queued_work, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rises_and_falls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_opportunistic_not_counted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_downgrade, setup, teardown),
        cmocka_unit_test(test_fluid_tail),
        cmocka_unit_test(test_bins),
        cmocka_unit_test(test_loadprof_fit),
        cmocka_unit_test(test_loadprof_fit_hinted),
        cmocka_unit_test(test_loadprof_reset_ends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
