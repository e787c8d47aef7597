/* test_grant.c - a JM's tokens (jm/grant.h) and its controller's configuration and observation
 * (jm/controller.h, controller_config_jm, controller_obs_jm): the rules the daemon and the
 * simulator share (issue 23), table-driven. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jm/controller.h"
#include "jm/dag.h"
#include "jm/dispatch.h"
#include "jm/grain.h"
#include "jm/grant.h"
#include "jm/spec.h"
#include "tests/jm/jm_fixture.h"

/* a..d independent, half a core each; e after a, one core and 8 GiB */
static const char *SPEC =
    "{\"version\":1,\"name\":\"g\",\"tasks\":["
    "{\"id\":\"a\",\"cmd\":[\"true\"],\"cpu\":0.5,\"mem_mb\":512},"
    "{\"id\":\"b\",\"cmd\":[\"true\"],\"cpu\":0.5,\"mem_mb\":512},"
    "{\"id\":\"c\",\"cmd\":[\"true\"],\"cpu\":0.5,\"mem_mb\":512},"
    "{\"id\":\"d\",\"cmd\":[\"true\"],\"cpu\":0.5,\"mem_mb\":512},"
    "{\"id\":\"e\",\"cmd\":[\"true\"],\"cpu\":1,\"mem_mb\":8192,\"after\":[\"a\"]}]}";

struct fx {
    struct spec *spec;
    dag_t *dag;
    dispatch_t *disp;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    char msg[256];
    if (spec_parse(SPEC, strlen(SPEC), NULL, &f->spec, msg, sizeof msg) != 0)
        fail_msg("%s", msg);
    assert_int_equal(dag_new(f->spec, &f->dag), 0);
    assert_int_equal(dispatch_new(NULL, f->spec->ntasks, &f->disp), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    dispatch_destroy(&f->disp);
    dag_destroy(&f->dag);
    spec_destroy(&f->spec);
    free(f);
    return 0;
}

static void succeed(struct fx *f, size_t task)
{
    assert_int_equal(dag_start(f->dag, task), 0);
    assert_int_equal(dag_succeed(f->dag, task, NULL), 0);
}

static void test_tokens_of(void **state)
{
    (void)state;
    static const struct {
        uint64_t units;
        uint32_t unit;
        uint64_t want;
    } rows[] = {{0, 100, 0},   {1, 100, 1}, {100, 100, 1}, {101, 100, 2},
                {250, 100, 3}, {7, 1, 7},   {7, 0, 7},     {0, 1, 0}};
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        assert_int_equal(grant_tokens_of(rows[i].units, rows[i].unit), rows[i].want);
}

/* Costs at the token size: the larger share of a token's cpu or memory, in GRAIN_UNITS. */
static void test_costs(void **state)
{
    struct fx *f = *state;
    assert_int_equal(grant_set_costs(f->disp, f->spec, 0, 0), 0); /* 1 core, 4 GiB */
    assert_int_equal(dispatch_cost(f->disp, 0), 50);
    assert_int_equal(dispatch_cost(f->disp, 4), 200); /* 8 GiB: two tokens of memory */
    assert_int_equal(grant_set_costs(f->disp, f->spec, 0.25, 16384), 0);
    assert_int_equal(dispatch_cost(f->disp, 0), 200);
    assert_int_equal(dispatch_cost(f->disp, 4), 400);
}

/* The renewal's demand: tokens covering what is in flight and ready, plus one. */
static void test_demand(void **state)
{
    struct fx *f = *state;
    /* whole tokens (every cost 1): four ready tasks */
    assert_int_equal(grant_demand(f->dag, f->disp, 1, 1000000), 5);
    assert_int_equal(grant_demand(f->dag, f->disp, 1, 3), 4); /* capped: max + 1 */
    /* finer units: four half-core tasks are two tokens */
    assert_int_equal(grant_set_costs(f->disp, f->spec, 0, 0), 0);
    assert_int_equal(grant_demand(f->dag, f->disp, GRAIN_UNITS, 1000000), 3);
    /* a in flight still counts; its release of e adds two tokens once it succeeds */
    dispatch_set_tokens(f->disp, grain_units(4));
    assert_int_equal(dispatch_place(f->disp, 0), DISPATCH_REGULAR);
    assert_int_equal(dag_start(f->dag, 0), 0);
    assert_int_equal(grant_demand(f->dag, f->disp, GRAIN_UNITS, 1000000), 3);
    assert_int_equal(dag_succeed(f->dag, 0, NULL), 0);
    assert_int_equal(dispatch_finished(f->disp, 0), 0);
    assert_int_equal(grant_demand(f->dag, f->disp, GRAIN_UNITS, 1000000),
                     5); /* 350 units: 4 tokens, + 1 */
}

/* The tail: a smaller target once the unfinished tasks need at most half of it. */
static void test_tail(void **state)
{
    struct fx *f = *state;
    static const struct {
        uint32_t unit, target, want;
    } whole[] = {
        {1, 10, 5}, /* five tasks left: at most half of 10 */
        {1, 9, 9},  /* 5 x 2 > 9: keeps asking */
        {1, 1, 1},  /* one token stays */
        {1, 0, 0},
    };
    for (size_t i = 0; i < sizeof whole / sizeof *whole; i++)
        assert_int_equal(
            grant_tail(f->dag, f->disp, f->spec->ntasks, whole[i].unit, whole[i].target),
            whole[i].want);
    assert_int_equal(grant_set_costs(f->disp, f->spec, 0, 0), 0); /* 4 x 50 + 200 = 4 tokens */
    assert_int_equal(grant_tail(f->dag, f->disp, f->spec->ntasks, GRAIN_UNITS, 8), 4);
    assert_int_equal(grant_tail(f->dag, f->disp, f->spec->ntasks, GRAIN_UNITS, 7), 7);
    for (size_t t = 0; t < 4; t++)
        succeed(f, t); /* e left: two tokens */
    assert_int_equal(grant_tail(f->dag, f->disp, f->spec->ntasks, GRAIN_UNITS, 7), 2);
    assert_int_equal(grant_tail(f->dag, f->disp, f->spec->ntasks, GRAIN_UNITS, 4), 2);
    assert_int_equal(grant_tail(f->dag, f->disp, f->spec->ntasks, GRAIN_UNITS, 3), 3);
    succeed(f, 4); /* nothing left: the target stands (the job is ending) */
    assert_int_equal(grant_tail(f->dag, f->disp, f->spec->ntasks, GRAIN_UNITS, 7), 7);
}

/* The first request of a job without a controller: its width, the larger of waves and time. */
static void test_width(void **state)
{
    struct fx *f = *state;
    /* whole tokens, one a task: a..d at once is 4 wide (e after a: 4 at most either way) */
    assert_int_equal(grant_width(f->spec, f->disp, 1, 100), 4);
    assert_int_equal(grant_width(f->spec, f->disp, 1, 3), 3); /* at most max_tokens */
    assert_int_equal(grant_width(f->spec, f->disp, 1, 0), 1); /* at least one */
    assert_int_equal(grant_set_costs(f->disp, f->spec, 0, 0), 0);
    /* at the token's hundredths: 4 x 50 units, then e's 200 (8 GiB): 2 tokens */
    assert_int_equal(grant_width(f->spec, f->disp, GRAIN_UNITS, 100), 2);
    /* a chain of 0.5 s tasks each releasing four 1.2 s tasks: 5 wide in waves, 8 in time (the
       four sides of c1 still run when c2's four start) */
    static const char *CHAIN =
        "{\"version\":1,\"name\":\"w\",\"tasks\":["
        "{\"id\":\"c1\",\"cmd\":[\"true\"],\"runtime_s\":0.5},"
        "{\"id\":\"c2\",\"cmd\":[\"true\"],\"runtime_s\":0.5,\"after\":[\"c1\"]},"
        "{\"id\":\"a1\",\"cmd\":[\"true\"],\"runtime_s\":1.2,\"after\":[\"c1\"]},"
        "{\"id\":\"a2\",\"cmd\":[\"true\"],\"runtime_s\":1.2,\"after\":[\"c1\"]},"
        "{\"id\":\"a3\",\"cmd\":[\"true\"],\"runtime_s\":1.2,\"after\":[\"c1\"]},"
        "{\"id\":\"a4\",\"cmd\":[\"true\"],\"runtime_s\":1.2,\"after\":[\"c1\"]},"
        "{\"id\":\"b1\",\"cmd\":[\"true\"],\"runtime_s\":1.2,\"after\":[\"c2\"]},"
        "{\"id\":\"b2\",\"cmd\":[\"true\"],\"runtime_s\":1.2,\"after\":[\"c2\"]},"
        "{\"id\":\"b3\",\"cmd\":[\"true\"],\"runtime_s\":1.2,\"after\":[\"c2\"]},"
        "{\"id\":\"b4\",\"cmd\":[\"true\"],\"runtime_s\":1.2,\"after\":[\"c2\"]}]}";
    struct spec *sp = NULL;
    char msg[256];
    if (spec_parse(CHAIN, strlen(CHAIN), NULL, &sp, msg, sizeof msg) != 0)
        fail_msg("%s", msg);
    dispatch_t *d = NULL;
    assert_int_equal(dispatch_new(NULL, sp->ntasks, &d), 0);
    assert_int_equal(grant_width(sp, d, 1, 100), 8);
    assert_int_equal(grant_width(sp, d, 1, 6), 6);
    dispatch_destroy(&d);
    spec_destroy(&sp);
}

static void test_node_tokens(void **state)
{
    (void)state;
    static const struct {
        double cpu;
        uint64_t mem;
        double tcpu;
        uint64_t tmem;
        double want;
    } rows[] = {
        {8, 32768, 0, 0, 8},
        {8, 16384, 0, 0, 4}, /* memory binds */
        {2.5, 65536, 0, 0, 2},
        {8, 32768, 0.5, 0, 8},
        {8, 65536, 0.5, 0, 16},
        {3.9999999999, 65536, 1, 4096, 4}, /* rounding noise is not a lost token */
        {0, 4096, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        assert_true(grant_node_tokens(rows[i].cpu, rows[i].mem, rows[i].tcpu, rows[i].tmem) ==
                    rows[i].want);
}

/* Tokens the up nodes hold beyond the virtual cluster. */
static void test_beyond(void **state)
{
    (void)state;
    view_t *v = NULL;
    assert_int_equal(view_new(&v), 0);
    assert_int_equal(grant_beyond(v, 0, 0, 10), 0);
    uint32_t a = fx_node(v, "n1", "r1", 0, 1, 1000); /* 16 cores, 64 GiB: 16 tokens */
    fx_node(v, "n2", "r1", 0, 1, 1000);
    assert_int_equal(grant_beyond(v, 0, 0, 20), 12);
    assert_int_equal(grant_beyond(v, 0, 0, 40), 0);
    assert_int_equal(grant_beyond(v, 2, 0, 10), 6); /* tokens of 2 cores: 8 a node */
    assert_int_equal(view_set_up(v, a, 0), 0);      /* a node down holds nothing */
    assert_int_equal(grant_beyond(v, 0, 0, 10), 6);
    view_destroy(&v);
}

/* min(c x granted, spare), spare = (capacity - granted) + beyond; the dispatcher's factor. */
static void test_allowance(void **state)
{
    struct fx *f = *state;
    static const struct {
        double c;
        uint32_t granted, capacity, beyond;
        int want;
        size_t units; /* dispatch_allowance at the grant in GRAIN_UNITS */
    } rows[] = {
        {1.0, 4, 0, 0, 4, 400},   /* the RM has not said: c x granted */
        {1.0, 4, 6, 0, 2, 200},   /* two spare tokens */
        {1.0, 4, 6, 3, 4, 400},   /* and nodes beyond the virtual cluster */
        {0.5, 4, 100, 0, 2, 200}, /* c binds */
        {1.0, 8, 8, 0, 0, 0},     /* every token held, nothing beyond: none */
        {1.0, 8, 8, 3, 3, 300},   /* ... but the nodes' own */
        {1.0, 10, 8, 0, 0, 0},    /* granted over capacity */
        {1.0, 0, 10, 0, 0, 0},    /* no grant: none */
        {1.5, 3, 100, 0, 4, 450}, /* rounded down in tokens, exact in units */
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        dispatch_set_tokens(f->disp, grain_units(rows[i].granted));
        int got =
            grant_allowance(f->disp, rows[i].c, rows[i].granted, rows[i].capacity, rows[i].beyond);
        assert_int_equal(got, rows[i].want);
        assert_int_equal(dispatch_allowance(f->disp), rows[i].units);
    }
}

/* What a grant's arrival does: downgrades when the regular units exceed it, then upgrades. */
static void test_take(void **state)
{
    struct fx *f = *state;
    dispatch_set_tokens(f->disp, 3);
    for (size_t t = 0; t < 3; t++)
        assert_int_equal(dispatch_place(f->disp, t), DISPATCH_REGULAR);
    assert_int_equal(grant_take(f->disp), GRANT_UPGRADE); /* 3 of 3: none due */
    dispatch_set_tokens(f->disp, 2);
    assert_int_equal(grant_take(f->disp), GRANT_DOWNGRADE | GRANT_UPGRADE);
    dispatch_set_tokens(f->disp, 8);
    assert_int_equal(grant_take(f->disp), GRANT_UPGRADE);
}

/* The time left a downgrade's grace is judged by. */
static void test_left(void **state)
{
    (void)state;
    static const struct {
        double est, spec;
        int running;
        double ran, want, want_est;
    } rows[] = {
        {4, 10, 0, 3, 4, 4},  /* queued: the placement's estimate, whatever it ran */
        {4, 10, 1, 3, 1, 4},  /* running: less what it ran */
        {0, 10, 1, 3, 7, 10}, /* no placement estimate: the spec's */
        {4, 10, 1, 9, 0, 4},  /* overran: none left */
        {-1, 2, 0, 0, 2, 2},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        double est = -1;
        assert_true(grant_left(rows[i].est, rows[i].spec, rows[i].running, rows[i].ran, &est) ==
                    rows[i].want);
        assert_true(est == rows[i].want_est);
    }
}

static void test_controller_config(void **state)
{
    (void)state;
    static const struct {
        double deadline, period, want;
    } rows[] = {
        {60, 0, 2}, {10, 0, 1}, {3600, 0, 60}, {600, -1, 20}, {60, 5, 5},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        struct controller_config c;
        controller_config_jm(&c, rows[i].deadline, rows[i].period, 37, 0.75);
        assert_true(c.period_s == rows[i].want);
        assert_int_equal(c.max_tokens, 37);
        assert_true(c.opp_factor == 0.75);
        struct controller_config d;
        controller_config_default(&d, rows[i].deadline);
        assert_true(c.slack == d.slack && c.deadzone_s == d.deadzone_s && c.alpha == d.alpha);
    }
}

static void test_controller_obs(void **state)
{
    (void)state;
    struct controller_obs o;
    memset(&o, 0, sizeof o);
    controller_obs_jm(&o, 10, 4, 0, 0, 100);
    assert_int_equal(o.spare_tokens, 6);
    assert_int_equal(o.granted, 4);
    assert_true(o.speed == 0); /* nothing expected yet: unused */
    controller_obs_jm(&o, 10, 12, 20, 10, 100);
    assert_int_equal(o.spare_tokens, 0);
    assert_int_equal(o.granted, 12);
    assert_true(o.speed > 1.6666 && o.speed < 1.6667); /* (20 + 5) / (10 + 5) */
    controller_obs_jm(&o, 0, UINT32_MAX, 1, 2, 0);
    assert_int_equal(o.granted, INT32_MAX);
    assert_true(o.speed == 0.5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokens_of),
        cmocka_unit_test_setup_teardown(test_costs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_demand, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_width, setup, teardown),
        cmocka_unit_test(test_node_tokens),
        cmocka_unit_test(test_beyond),
        cmocka_unit_test_setup_teardown(test_allowance, setup, teardown),
        cmocka_unit_test_setup_teardown(test_take, setup, teardown),
        cmocka_unit_test(test_left),
        cmocka_unit_test(test_controller_config),
        cmocka_unit_test(test_controller_obs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
