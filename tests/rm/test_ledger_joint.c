/* test_ledger_joint.c - admission by the joint plan (issue 22, rm/arbiter_joint.c): the admitted
 * jobs and the new one planned together under the arbiter's MinEDF-WC, each at its own pace, so
 * a path-bound job that cannot start while an earlier deadline needs every token is refused where
 * the fluid model (which lets its work catch up at full width afterwards) admitted it; a job that
 * fits beside the admitted one on its minimum is admitted; a lone job is judged exactly as
 * before; an entry written before the joint plan (version 7) replays by the fluid model. */
#include "common/err.h"
#include "rm/arbiter.h"
#include "rm/ledger.h"
#include "rm/ledger_cmd.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tests/rm/ledger_fixture.h"

/* A: 500 token-s on a 50 s path at width 10 (alone: 50 s at 10 tokens). */
static const struct arbiter_shape wide = {.work = 500, .path = 50, .width = 10, .has_alpha = true};
/* B: a chain, 100 token-s on a 100 s path, registered at width 10 (alone: 100 s on 1 token). */
static const struct arbiter_shape chain = {
    .work = 100, .path = 100, .width = 10, .has_alpha = true};

static void test_chain_behind_a_full_cluster(void **state)
{
    (void)state;
    /* A is due at 50 s: it needs all 10 tokens until then, so B's chain starts at 50 s */
    struct arbiter_load a = {.id = 1, .deadline = 50, .remain = wide};
    struct arbiter_quote fl, jt;
    assert_int_equal(arbiter_admit_plan(1.645, 10, NULL, &a, 1, &chain, 105, &fl), 0);
    assert_int_equal(arbiter_admit_joint(1.645, 10, NULL, &a, 1, &chain, 105, &jt), 0);
    /* the fluid model: B's work done at 60 s at 10 tokens after A, its path 100 s: admitted */
    assert_true(fl.admit);
    assert_float_equal(fl.finish, 100, 1e-6);
    /* the joint plan: B runs at its pace, 1 token, from 50 s: 150 s, refused */
    assert_false(jt.admit);
    assert_int_equal(jt.breaks, 0);
    assert_float_equal(jt.finish, 150, 1e-6);
    assert_float_equal(jt.eff, 150, 0.2); /* bisection to a thousandth */
    assert_float_equal(jt.eff_p50, 150, 0.2);
}

static void test_chain_beside_on_its_minimum(void **state)
{
    (void)state;
    /* A is due at 60 s: its minimum is 9 tokens (500 / 60), B's 1 (100 / 105): both fit */
    struct arbiter_load a = {.id = 1, .deadline = 60, .remain = wide};
    struct arbiter_quote jt;
    assert_int_equal(arbiter_admit_joint(1.645, 10, NULL, &a, 1, &chain, 105, &jt), 0);
    assert_true(jt.admit);
    assert_float_equal(jt.finish, 100, 1e-6);
    /* a deadline that leaves B no slack is refused, and one that would make A late is
       refused naming A: B due at 40 s needs 10 tokens (more than its pace can use) */
    assert_int_equal(arbiter_admit_joint(1.645, 10, NULL, &a, 1, &chain, 99, &jt), 0);
    assert_false(jt.admit);
    struct arbiter_shape burst = {.work = 200, .path = 20, .width = 10, .has_alpha = true};
    assert_int_equal(arbiter_admit_joint(1.645, 10, NULL, &a, 1, &burst, 30, &jt), 0);
    assert_false(jt.admit);
    assert_int_equal(jt.breaks, 1);
}

static void test_lone_job_as_before(void **state)
{
    (void)state;
    /* alone, the joint plan puts a job where the fluid model does: its conservative list
       schedule (the median at alpha 0.25 is 12.25 s; with sd and a scale the bound moves) */
    struct arbiter_shape s = {.work = 100,
                              .work_sd = 10,
                              .path = 10,
                              .path_sd = 1,
                              .width = 10,
                              .has_alpha = true,
                              .alpha = 0.25,
                              .scale = 1.3};
    struct arbiter_quote fl, jt;
    for (double d = 10; d <= 30; d += 2.5) {
        assert_int_equal(arbiter_admit_plan(1.645, 10, NULL, NULL, 0, &s, d, &fl), 0);
        assert_int_equal(arbiter_admit_joint(1.645, 10, NULL, NULL, 0, &s, d, &jt), 0);
        assert_int_equal(fl.admit, jt.admit);
        assert_float_equal(fl.finish, jt.finish, 1e-6);
        assert_float_equal(fl.finish_p50, jt.finish_p50, 1e-6);
    }
    assert_float_equal(jt.eff, fl.eff, 1e-2);
    /* without alpha: the upper bound, and the bounds' mean as the median, as the fluid model */
    struct arbiter_shape u = s;
    struct arbiter_quote fl2, jt2;
    u.has_alpha = false;
    assert_int_equal(arbiter_admit_plan(1.645, 10, NULL, NULL, 0, &u, 40, &fl2), 0);
    assert_int_equal(arbiter_admit_joint(1.645, 10, NULL, NULL, 0, &u, 40, &jt2), 0);
    assert_true(jt2.admit && fl2.admit);
    assert_float_equal(fl2.finish, jt2.finish, 1e-6);
    assert_float_equal(fl2.finish_p50, jt2.finish_p50, 1e-6);
    /* a plan that reserves every token for 20 s delays it by 20 s */
    double t[] = {0, 20}, tok[] = {10, 0};
    struct arbiter_reserve plan = {t, tok, 2};
    assert_int_equal(arbiter_admit_joint(1.645, 10, &plan, NULL, 0, &s, 60, &jt), 0);
    assert_float_equal(jt.finish, 20 + fl.finish, 1e-6);
}

static struct ledger_cmd job(const char *name, const struct arbiter_shape *s, int64_t dl_ms)
{
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_JOB_REGISTER);
    snprintf(c.name, sizeof c.name, "%s", name);
    snprintf(c.vc, sizeof c.vc, "default");
    c.work_ms = (uint64_t)(s->work * 1000);
    c.path_ms = (uint64_t)(s->path * 1000);
    c.width = s->width;
    c.flags = LEDGER_JOB_HAS_ALPHA;
    c.k_milli = 1645;
    c.spread_milli = 1000; /* its own spread 1: the bound is the fresh cluster's own factor */
    c.deadline_ms = dl_ms;
    return c;
}

/* The ledger judges a new entry by the joint plan and an entry decoded from version 7 by the
 * fluid model, so a log written before replays to the same verdicts. */
static void test_ledger_rule_by_entry_version(void **state)
{
    (void)state;
    int64_t now = 1000;
    for (int old = 0; old <= 1; old++) {
        ledger_t *l = ledger_new();
        assert_non_null(l);
        struct ledger_cmd c;
        ledger_cmd_init(&c, LEDGER_CMD_VC_SET);
        snprintf(c.vc, sizeof c.vc, "default");
        c.count = 10;
        assert_int_equal(ledger_fx_apply(l, &c, now).code, 0);
        /* A at 1.2 x its spread: due 60 s after now (bound 60 s) */
        struct ledger_cmd a = job("a", &wide, now + 60000);
        assert_int_equal(ledger_fx_apply(l, &a, now).code, 0);
        /* B, bound 120 s alone, due 125 s: the fluid model's 120 s admits it; the joint plan
           starts it once A's 60 s minimum is met (A needs every token) and refuses it */
        struct ledger_cmd b = job("b", &chain, now + 125000);
        struct enc_buf buf;
        enc_buf_init(&buf);
        ledger_cmd_encode(&buf, &b, 1, now);
        assert_int_equal(enc_buf_err(&buf), 0);
        uint8_t *bytes = (uint8_t *)buf.data;
        if (old)
            bytes[4] = 7; /* the entry's version byte, after the magic */
        struct ledger_cmd_iter it;
        char msg[128];
        assert_int_equal(ledger_cmd_iter_init(&it, bytes, buf.len, msg, sizeof msg), 0);
        struct ledger_cmd d;
        assert_int_equal(ledger_cmd_next(&it, &d, msg, sizeof msg), 1);
        assert_int_equal(d.fluid_admission, old);
        assert_int_equal(ledger_fx_apply(l, &d, now).code, old ? 0 : ERR_ADMISSION);
        enc_buf_close(&buf);
        ledger_destroy(&l);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_behind_a_full_cluster),
        cmocka_unit_test(test_chain_beside_on_its_minimum),
        cmocka_unit_test(test_lone_job_as_before),
        cmocka_unit_test(test_ledger_rule_by_entry_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
