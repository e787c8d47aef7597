/* test_recur_plan.c - a recurring job's model from the ledger (rm/ledger_recur_plan.h), the
 * functions the RM's leader and `paddock-sim recurring` share: the runs R* is fitted over come
 * from the history (successful runs only, newest first, at most max_runs, resampled to the plan
 * step); the model places R* within the deadline under the capacity and beside another job's
 * reservation; without a deadline it proposes R* without a reservation and says why (a note, not
 * an error); the RECUR_MODEL command it builds is accepted by the ledger and reserves tokens. */
#include "common/err.h"
#include "rm/ledger.h"
#include "rm/ledger_recur_plan.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#define P    10000 /* periods of 10 s, plan steps of 1 s */
#define STEP 1000
#define CAP  10

static const char SPEC[] = "{}";

static void ok(ledger_t *l, struct ledger_cmd *c, int64_t now, struct ledger_result *r)
{
    struct ledger_result tmp;
    assert_int_equal(ledger_apply(l, c, now, r != NULL ? r : &tmp), 0);
}

static void add(ledger_t *l, const char *name, int64_t deadline_ms, int64_t now)
{
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_RECUR_ADD);
    snprintf(c.name, sizeof c.name, "%s", name);
    snprintf(c.vc, sizeof c.vc, "default");
    c.period_ms = P;
    c.deadline_ms = deadline_ms;
    c.text = SPEC;
    c.text_len = (uint32_t)strlen(SPEC);
    ok(l, &c, now, NULL);
}

static ledger_t *setup(void)
{
    ledger_t *l = ledger_new();
    assert_non_null(l);
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_VC_SET);
    snprintf(c.vc, sizeof c.vc, "default");
    c.count = CAP;
    ok(l, &c, 1, NULL);
    add(l, "etl", 6000, 1);
    add(l, "free", 0, 1);
    return l;
}

/* Fires and runs period p of `name`, ending it in `state` with a skyline of n steps of 500 ms
 * of `tokens` each (a fit at 1 s steps sees them averaged in pairs). */
static void run(ledger_t *l, const char *name, int64_t p, uint8_t state, uint32_t tokens,
                uint32_t n)
{
    int64_t start = p * P;
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_RECUR_FIRE);
    snprintf(c.name, sizeof c.name, "%s", name);
    c.period = p;
    ok(l, &c, start, NULL);
    ledger_cmd_init(&c, LEDGER_CMD_JOB_REGISTER);
    snprintf(c.name, sizeof c.name, "%s-%lld", name, (long long)p);
    snprintf(c.vc, sizeof c.vc, "default");
    snprintf(c.recurring, sizeof c.recurring, "%s", name);
    c.period = p;
    c.lease_ms = 60000;
    struct ledger_result r;
    ok(l, &c, start, &r);
    uint32_t sky[16];
    assert_true(n <= 16);
    for (uint32_t i = 0; i < n; i++)
        sky[i] = tokens * 1000;
    ledger_cmd_init(&c, LEDGER_CMD_JOB_END);
    c.job = r.value;
    c.state = state;
    c.started_ms = start;
    c.step_ms = 500;
    c.vals = sky;
    c.nvals = n;
    ok(l, &c, start + n * 500, NULL);
}

static void fit_runs_from_history(void **state)
{
    (void)state;
    ledger_t *l = setup();
    run(l, "etl", 1, LEDGER_JOB_DONE, 4, 6);   /* 3 s of 4 tokens */
    run(l, "etl", 2, LEDGER_JOB_FAILED, 9, 6); /* failed: not fitted */
    run(l, "free", 3, LEDGER_JOB_DONE, 1, 2);  /* another job's */
    run(l, "etl", 4, LEDGER_JOB_DONE, 2, 8);   /* 4 s of 2 tokens, the newest */
    const struct ledger_recurring *r = ledger_recurring_find(l, "etl");
    struct ledger_recur_fit f;
    assert_int_equal(ledger_recur_fit_runs(l, r, STEP, 8, &f), 0);
    assert_int_equal(f.nruns, 2);
    assert_int_equal(f.k, 4);
    assert_true(f.runs[0][0] == 2.0 && f.runs[0][3] == 2.0); /* newest first */
    assert_true(f.runs[1][0] == 4.0 && f.runs[1][2] == 4.0 && f.runs[1][3] == 0.0);
    ledger_recur_fit_close(&f);
    assert_int_equal(ledger_recur_fit_runs(l, r, STEP, 1, &f), 0); /* max_runs */
    assert_int_equal(f.nruns, 1);
    ledger_recur_fit_close(&f);
    ledger_destroy(&l);
}

static void model_places_within_deadline(void **state)
{
    (void)state;
    ledger_t *l = setup();
    const struct ledger_recurring *r = ledger_recurring_find(l, "etl");
    const double rstar[3] = {8, 8, 8}; /* 24 token-steps before the 6 s deadline */
    struct ledger_recur_model m;
    assert_int_equal(ledger_recur_model(l, r, r->generation, STEP, 86400000, LEDGER_RECUR_LOWCOST,
                                        rstar, 3, "", &m),
                     0);
    assert_false(m.failed);
    assert_int_equal(m.nsky, 3);
    assert_int_equal(m.sky[0], 8000);
    assert_true(m.nresv > 0);
    uint64_t area = 0;
    for (uint32_t i = 0; i < m.nresv; i++) {
        assert_true(m.resv[i] <= CAP * 1000);
        area += m.resv[i];
    }
    assert_true(m.first + m.nresv <= 6);         /* within the deadline's 6 steps */
    assert_true(area >= 23900 && area <= 24100); /* R*'s area kept */
    /* the ledger takes the command: the reservation is in its plan */
    struct ledger_cmd c;
    ledger_recur_model_cmd(&m, r, &c);
    assert_int_equal(c.type, LEDGER_CMD_RECUR_MODEL);
    ok(l, &c, 2, NULL);
    r = ledger_recurring_find(l, "etl");
    assert_int_equal(r->nresv, m.nresv);
    uint32_t peak = 0;
    for (int64_t t = P; t < 2 * P; t += STEP) {
        uint32_t v = ledger_plan_at(l, 0, t);
        peak = v > peak ? v : peak;
    }
    assert_true(peak > 0 && peak <= CAP);
    ledger_recur_model_close(&m);
    ledger_destroy(&l);
}

static void model_without_deadline_is_a_note(void **state)
{
    (void)state;
    ledger_t *l = setup();
    const struct ledger_recurring *r = ledger_recurring_find(l, "free");
    const double rstar[2] = {3, 3};
    struct ledger_recur_model m;
    assert_int_equal(ledger_recur_model(l, r, r->generation, STEP, 86400000, LEDGER_RECUR_GREEDY,
                                        rstar, 2, "", &m),
                     0);
    assert_false(m.failed);
    assert_int_equal(m.nsky, 2);
    assert_int_equal(m.nresv, 0);
    assert_non_null(strstr(m.why, "no deadline"));
    ledger_recur_model_close(&m);
    /* R* wider than the capacity before the deadline: no room, an error */
    r = ledger_recurring_find(l, "etl");
    const double wide[6] = {CAP + 5, CAP + 5, CAP + 5, CAP + 5, CAP + 5, CAP + 5};
    assert_int_equal(ledger_recur_model(l, r, r->generation, STEP, 86400000, LEDGER_RECUR_LOWCOST,
                                        wide, 6, "", &m),
                     0);
    assert_true(m.failed);
    assert_int_equal(m.nresv, 0);
    assert_true(m.why[0] != '\0');
    ledger_recur_model_close(&m);
    ledger_destroy(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fit_runs_from_history),
        cmocka_unit_test(model_places_within_deadline),
        cmocka_unit_test(model_without_deadline_is_a_note),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
