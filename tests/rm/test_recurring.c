/* test_recurring.c - recurring jobs in the pure ledger (Morpheus): one run per period (a repeated
 * or early fire is refused), one registration per run, the run's deadline from its period,
 * skipped periods and runs that never started in the history, the model's generation check,
 * the reservation granted before an earlier deadline, held-back tokens, reprovisioning, the
 * history's bound, the first read of an output, and log entries and snapshots that carry it
 * all unchanged. */
#include "common/err.h"
#include "rm/ledger.h"
#include "rm/ledger_cmd.h"
#include "rm/period.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#define P   10000 /* the period: 10 s */
#define CAP 10

static const char SPEC[] = "{\"version\": 1, \"name\": \"etl\", \"tasks\": []}";
static const char OUTS[] = "/data/etl/out\n/data/etl/summary";

static int apply(ledger_t *l, struct ledger_cmd *c, int64_t now, struct ledger_result *r)
{
    struct ledger_result tmp;
    int rc = ledger_apply(l, c, now, r != NULL ? r : &tmp);
    char why[160];
    assert_int_equal(ledger_check(l, why, sizeof why), 0);
    return rc;
}

static ledger_t *setup_ledger(int64_t now)
{
    ledger_t *l = ledger_new();
    assert_non_null(l);
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_VC_SET);
    snprintf(c.vc, sizeof c.vc, "default");
    c.count = CAP;
    assert_int_equal(apply(l, &c, now, NULL), 0);
    ledger_cmd_init(&c, LEDGER_CMD_RECUR_ADD);
    snprintf(c.name, sizeof c.name, "etl");
    snprintf(c.vc, sizeof c.vc, "default");
    c.period_ms = P;
    c.offset_ms = 2000;
    c.deadline_ms = 6000;
    c.text = SPEC;
    c.text_len = (uint32_t)strlen(SPEC);
    c.text2 = OUTS;
    c.text2_len = (uint32_t)strlen(OUTS);
    assert_int_equal(apply(l, &c, now, NULL), 0);
    return l;
}

static int fire(ledger_t *l, int64_t period, int64_t now)
{
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_RECUR_FIRE);
    snprintf(c.name, sizeof c.name, "etl");
    c.period = period;
    return apply(l, &c, now, NULL);
}

static int reg(ledger_t *l, int64_t period, int64_t now, uint64_t *id)
{
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_JOB_REGISTER);
    snprintf(c.name, sizeof c.name, "etl");
    snprintf(c.vc, sizeof c.vc, "default");
    snprintf(c.recurring, sizeof c.recurring, "etl");
    c.period = period;
    c.lease_ms = 60000;
    struct ledger_result r;
    int rc = apply(l, &c, now, &r);
    if (id != NULL)
        *id = r.value;
    return rc;
}

static void end_job(ledger_t *l, uint64_t id, uint8_t state, int64_t now)
{
    static const uint32_t sky[4] = {2000, 3000, 1500, 500};
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_JOB_END);
    c.job = id;
    c.state = state;
    c.started_ms = now - 3500;
    c.token_ms = 7000;
    c.step_ms = 1000;
    c.vals = sky;
    c.nvals = 4;
    assert_int_equal(apply(l, &c, now, NULL), 0);
}

static void add_refusals(void **state)
{
    (void)state;
    ledger_t *l = setup_ledger(1000);
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_RECUR_ADD);
    snprintf(c.name, sizeof c.name, "etl");
    snprintf(c.vc, sizeof c.vc, "default");
    c.period_ms = P;
    c.text = SPEC;
    c.text_len = (uint32_t)strlen(SPEC);
    assert_int_equal(apply(l, &c, 1000, NULL), ERR_EXISTS);
    snprintf(c.name, sizeof c.name, "other");
    c.period_ms = 999; /* under a second */
    assert_int_equal(apply(l, &c, 1000, NULL), ERR_INVAL);
    c.period_ms = P;
    c.deadline_ms = P + 1; /* longer than the period */
    assert_int_equal(apply(l, &c, 1000, NULL), ERR_INVAL);
    c.deadline_ms = 0;
    snprintf(c.vc, sizeof c.vc, "nowhere");
    assert_int_equal(apply(l, &c, 1000, NULL), ERR_NOTFOUND);
    assert_int_equal(ledger_recurring_count(l), 1);
    const struct ledger_recurring *r = ledger_recurring_find(l, "etl");
    assert_string_equal(r->outputs, OUTS);
    assert_int_equal(ledger_recurring_deadline(r), 6000);
    /* added during instance 0 (which began at 2 s without it): instance 1 is the first */
    assert_int_equal(r->last_fired, -1);
    ledger_destroy(&l);
}

/* From the issue: each period the cluster starts exactly one run. */
static void one_run_per_period(void **state)
{
    (void)state;
    ledger_t *l = setup_ledger(1000);              /* before instance 0 starts at 2 s */
    assert_int_equal(fire(l, 0, 1500), ERR_STATE); /* not due yet */
    assert_int_equal(fire(l, 0, 2000), 0);
    assert_int_equal(fire(l, 0, 2100), ERR_EXISTS); /* a new leader repeating it */
    assert_int_equal(fire(l, 1, 2050), ERR_STATE);  /* not due, and period 0's run pending */
    uint64_t id = 0;
    assert_int_equal(reg(l, 1, 2500, NULL), ERR_EXISTS); /* not the due run */
    assert_int_equal(reg(l, 0, 2500, &id), 0);
    assert_int_equal(reg(l, 0, 2600, NULL), ERR_EXISTS); /* a second JM for the same run */
    const struct ledger_job *j = ledger_job_find(l, id);
    assert_int_equal(j->deadline_ms, period_start(0, P, 2000) + 6000); /* from its period */
    assert_int_equal(j->period, 0);
    end_job(l, id, LEDGER_JOB_DONE, 7000);
    const struct ledger_recurring *r = ledger_recurring_find(l, "etl");
    assert_int_equal(r->pend_period, -1);
    assert_int_equal(r->runs, 1);
    assert_int_equal(r->met, 1);
    assert_int_equal(r->generation, 1); /* the new skyline asks for a new model */
    assert_int_equal(ledger_history_count(l), 1);
    const struct ledger_run *h = ledger_history_at(l, 0);
    assert_int_equal(h->outcome, LEDGER_RUN_SUCCEEDED);
    assert_string_equal(h->recurring, "etl");
    assert_int_equal(h->nsky, 4);
    assert_int_equal(h->sky_milli[1], 3000);
    assert_int_equal(h->start_ms, 3500);
    assert_int_equal(h->token_ms, 7000);

    /* the next fire after an outage: periods 1 and 2 were missed and are recorded */
    assert_int_equal(fire(l, 3, 32500), 0);
    assert_int_equal(ledger_history_count(l), 3);
    assert_int_equal(ledger_history_at(l, 1)->outcome, LEDGER_RUN_SKIPPED);
    assert_int_equal(ledger_history_at(l, 1)->period, 1);
    assert_int_equal(ledger_history_at(l, 2)->period, 2);
    /* the next period is due, but the run of period 3 has not ended: it waits */
    assert_int_equal(fire(l, 4, 42500), ERR_STATE);
    ledger_destroy(&l);
}

static void note_and_give_up(void **state)
{
    (void)state;
    ledger_t *l = setup_ledger(1000);
    assert_int_equal(fire(l, 0, 2000), 0);
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_RECUR_NOTE);
    snprintf(c.name, sizeof c.name, "etl");
    c.period = 0;
    c.state = 1;
    assert_int_equal(apply(l, &c, 2100, NULL), 0);
    c.state = 2;
    c.text = "paddock-jm: cannot read spec.json";
    c.text_len = (uint32_t)strlen(c.text);
    assert_int_equal(apply(l, &c, 12100, NULL), 0);
    const struct ledger_recurring *r = ledger_recurring_find(l, "etl");
    assert_int_equal(r->pend_launches, 1);
    assert_string_equal(r->pend_reason, "paddock-jm: cannot read spec.json");
    c.state = 3;
    assert_int_equal(apply(l, &c, 12200, NULL), 0);
    r = ledger_recurring_find(l, "etl");
    assert_int_equal(r->pend_period, -1);
    assert_int_equal(r->missed, 1);
    assert_int_equal(ledger_history_at(l, 0)->outcome, LEDGER_RUN_NOT_STARTED);
    assert_string_equal(ledger_history_at(l, 0)->reason, "paddock-jm: cannot read spec.json");
    /* a note for a run that is not pending is refused */
    assert_int_equal(apply(l, &c, 12300, NULL), ERR_STATE);
    ledger_destroy(&l);
}

static int model(ledger_t *l, uint32_t gen, const uint32_t *resv, uint32_t n, uint32_t first,
                 int64_t now)
{
    static const uint32_t sky[3] = {4000, 4000, 2000};
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_RECUR_MODEL);
    snprintf(c.name, sizeof c.name, "etl");
    c.count = gen;
    c.width = 1000;
    c.cpus_milli = 1000; /* plan step */
    c.mem_mb = first;
    c.vals = sky;
    c.nvals = 3;
    c.vals2 = resv;
    c.nvals2 = n;
    return apply(l, &c, now, NULL);
}

/* Morpheus §6-7 in the grants: the reservation first, held back without a run, reprovisioning
 * up to ρ = 2 times the recent reservation. */
static void reservation_in_grants(void **state)
{
    (void)state;
    ledger_t *l = setup_ledger(1000);
    static const uint32_t resv[4] = {4000, 4000, 4000, 2000};   /* steps 1..4 of the period */
    assert_int_equal(model(l, 1, resv, 4, 1, 1100), ERR_STATE); /* generation 0 is current */
    assert_int_equal(model(l, 0, resv, 4, 1, 1100), 0);
    const struct ledger_recurring *r = ledger_recurring_find(l, "etl");
    assert_int_equal(r->nresv, 4);
    assert_int_equal(ledger_recurring_reserved_at(r, 2000 + 1500), 4); /* step 1 of instance 0 */
    assert_int_equal(ledger_recurring_reserved_at(r, 12000 + 4200), 2);
    assert_int_equal(ledger_recurring_reserved_at(r, 12000 + 5000), 0);
    assert_int_equal(ledger_plan_at(l, 0, 12000 + 1000), 4);

    /* an ad-hoc deadline job whose Jockey asks for 3 and that can use 10, during the
     * reservation with no run: the 4 held back are lent to it as spare */
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_JOB_REGISTER);
    snprintf(c.name, sizeof c.name, "adhoc");
    snprintf(c.vc, sizeof c.vc, "default");
    c.lease_ms = 600000;
    c.deadline_ms = 3000 + 300000;
    c.flags = LEDGER_JOB_HAS_PROFILE;
    c.work_ms = 100000;
    c.path_ms = 1000;
    c.width = 10;
    struct ledger_result res;
    assert_int_equal(apply(l, &c, 3100, &res), 0);
    uint64_t adhoc = res.value;
    ledger_cmd_init(&c, LEDGER_CMD_TOKEN_REQUEST);
    c.job = adhoc;
    c.count = 3;
    assert_int_equal(apply(l, &c, 3200, NULL), 0);
    assert_int_equal(ledger_job_find(l, adhoc)->tokens, 10);
    assert_int_equal(ledger_job_find(l, adhoc)->minimum, 3);

    /* the run arrives: its reservation is taken back from the ad-hoc job's spare */
    assert_int_equal(fire(l, 0, 3300), 0);
    uint64_t run = 0;
    assert_int_equal(reg(l, 0, 3400, &run), 0);
    ledger_cmd_init(&c, LEDGER_CMD_TOKEN_REQUEST);
    c.job = run;
    c.count = 4;
    assert_int_equal(apply(l, &c, 3500, NULL), 0);
    assert_int_equal(ledger_job_find(l, run)->tokens, 4);
    assert_int_equal(ledger_job_find(l, adhoc)->tokens, 6);

    /* behind its skyline, it asks for 9: reprovisioning allows up to 2 x 4 = 8, taken from
     * spare (the ad-hoc job's 3 above its minimum), not from the ad-hoc job's minimum */
    c.count = 9;
    assert_int_equal(apply(l, &c, 3600, NULL), 0);
    assert_int_equal(ledger_job_find(l, run)->tokens, 7);
    assert_int_equal(ledger_job_find(l, run)->minimum, 7);
    assert_int_equal(ledger_job_find(l, adhoc)->tokens, 3);
    /* with the ad-hoc job gone: 8 guaranteed (the bound), the 9th as reclaimable spare */
    ledger_cmd_init(&c, LEDGER_CMD_JOB_END);
    c.job = adhoc;
    c.state = LEDGER_JOB_CANCELLED;
    assert_int_equal(apply(l, &c, 3700, NULL), 0);
    assert_int_equal(ledger_job_find(l, run)->tokens, 9);
    assert_int_equal(ledger_job_find(l, run)->minimum, 8);
    ledger_destroy(&l);
}

/* Morpheus §4: a job reading a recurring job's output marks that output's first read. */
static void outputs_first_read(void **state)
{
    (void)state;
    ledger_t *l = setup_ledger(1000);
    assert_int_equal(fire(l, 0, 2000), 0);
    uint64_t id = 0;
    assert_int_equal(reg(l, 0, 2100, &id), 0);
    end_job(l, id, LEDGER_JOB_DONE, 6000);
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_JOB_REGISTER);
    snprintf(c.name, sizeof c.name, "report");
    snprintf(c.vc, sizeof c.vc, "default");
    c.lease_ms = 60000;
    c.text = "/other\n/data/etl/summary";
    c.text_len = (uint32_t)strlen(c.text);
    assert_int_equal(apply(l, &c, 7000, NULL), 0);
    assert_int_equal(apply(l, &c, 9000, NULL), 0); /* a second reader changes nothing */
    assert_int_equal(ledger_history_at(l, 0)->out_read_ms, 7000);
    c.text = "/data/etl/summary-not";
    c.text_len = (uint32_t)strlen(c.text);
    ledger_t *m = setup_ledger(1000);
    assert_int_equal(fire(m, 0, 2000), 0);
    assert_int_equal(reg(m, 0, 2100, &id), 0);
    end_job(m, id, LEDGER_JOB_DONE, 6000);
    assert_int_equal(apply(m, &c, 7000, NULL), 0);
    assert_int_equal(ledger_history_at(m, 0)->out_read_ms, 0);
    ledger_destroy(&m);
    ledger_destroy(&l);
}

static void history_is_bounded(void **state)
{
    (void)state;
    ledger_t *l = setup_ledger(1000);
    struct ledger_cmd c;
    for (int i = 0; i < LEDGER_HISTORY_CAP + 50; i++) {
        ledger_cmd_init(&c, LEDGER_CMD_JOB_REGISTER);
        snprintf(c.name, sizeof c.name, "job-%d", i);
        snprintf(c.vc, sizeof c.vc, "default");
        c.lease_ms = 60000;
        struct ledger_result r;
        assert_int_equal(ledger_apply(l, &c, 2000 + i, &r), 0);
        ledger_cmd_init(&c, LEDGER_CMD_JOB_END);
        c.job = r.value;
        c.state = i % 3 == 0 ? LEDGER_JOB_FAILED : LEDGER_JOB_DONE;
        assert_int_equal(ledger_apply(l, &c, 2000 + i, NULL), 0);
    }
    assert_int_equal(ledger_history_count(l), LEDGER_HISTORY_CAP);
    assert_string_equal(ledger_history_at(l, 0)->name, "job-50"); /* the oldest forgotten */
    assert_string_equal(ledger_history_at(l, LEDGER_HISTORY_CAP - 1)->name, "job-2097");
    ledger_destroy(&l);
}

static void snapshot_equal(ledger_t *l)
{
    struct enc_buf a, b;
    enc_buf_init(&a);
    enc_buf_init(&b);
    ledger_snapshot(l, &a);
    assert_int_equal(enc_buf_err(&a), 0);
    ledger_t *r = NULL;
    char msg[160];
    assert_int_equal(ledger_restore(a.data, a.len, &r, msg, sizeof msg), 0);
    ledger_snapshot(r, &b);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.data, b.data, a.len);
    /* every truncation is refused without a crash (short of the zero padding to 8 bytes, which
     * a snapshot may lose) */
    for (size_t cut = 0; cut + 8 < a.len; cut += 1 + cut / 16) {
        ledger_t *t = NULL;
        assert_int_not_equal(ledger_restore(a.data, cut, &t, msg, sizeof msg), 0);
        assert_null(t);
    }
    ledger_destroy(&r);
    enc_buf_close(&a);
    enc_buf_close(&b);
}

static void snapshot_and_log_roundtrip(void **state)
{
    (void)state;
    ledger_t *l = setup_ledger(1000);
    assert_int_equal(fire(l, 0, 2000), 0);
    uint64_t id = 0;
    assert_int_equal(reg(l, 0, 2100, &id), 0);
    end_job(l, id, LEDGER_JOB_DONE, 6000);
    static const uint32_t resv[3] = {1000, 2500, 3000};
    assert_int_equal(model(l, 1, resv, 3, 2, 6100), 0);
    assert_int_equal(fire(l, 1, 12000), 0);
    snapshot_equal(l);

    /* the new commands survive a log entry unchanged, a 100 KiB spec included */
    static char big[100 * 1024];
    memset(big, 'x', sizeof big);
    struct ledger_cmd in[2];
    ledger_cmd_init(&in[0], LEDGER_CMD_RECUR_ADD);
    snprintf(in[0].name, sizeof in[0].name, "big");
    snprintf(in[0].vc, sizeof in[0].vc, "default");
    in[0].period_ms = 60000;
    in[0].text = big;
    in[0].text_len = sizeof big;
    in[0].text2 = OUTS;
    in[0].text2_len = (uint32_t)strlen(OUTS);
    ledger_cmd_init(&in[1], LEDGER_CMD_RECUR_MODEL);
    snprintf(in[1].name, sizeof in[1].name, "etl");
    in[1].vals = resv;
    in[1].nvals = 3;
    in[1].vals2 = resv;
    in[1].nvals2 = 2;
    struct enc_buf b;
    enc_buf_init(&b);
    ledger_cmd_encode(&b, in, 2, 5000);
    assert_int_equal(enc_buf_err(&b), 0);
    struct ledger_cmd_iter it;
    struct ledger_cmd out;
    char msg[160];
    assert_int_equal(ledger_cmd_iter_init(&it, b.data, b.len, msg, sizeof msg), 0);
    assert_int_equal(ledger_cmd_next(&it, &out, msg, sizeof msg), 1);
    assert_int_equal(out.text_len, sizeof big);
    assert_memory_equal(out.text, big, sizeof big);
    assert_int_equal(out.text2_len, strlen(OUTS));
    assert_int_equal(ledger_cmd_next(&it, &out, msg, sizeof msg), 1);
    assert_int_equal(out.nvals, 3);
    assert_int_equal(out.vals[2], 3000);
    assert_int_equal(out.nvals2, 2);
    assert_int_equal(ledger_cmd_next(&it, &out, msg, sizeof msg), 0);
    /* a truncated entry is refused, not read past its end */
    for (size_t cut = 8; cut < b.len - 8; cut += 997) {
        int rc = ledger_cmd_iter_init(&it, b.data, cut, msg, sizeof msg);
        while (rc == 0 && (rc = ledger_cmd_next(&it, &out, msg, sizeof msg)) == 1)
            ;
        assert_int_equal(rc, ERR_PARSE);
    }
    enc_buf_close(&b);
    ledger_destroy(&l);
}

static void pause_and_remove(void **state)
{
    (void)state;
    ledger_t *l = setup_ledger(1000);
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_RECUR_PAUSE);
    snprintf(c.name, sizeof c.name, "etl");
    c.count = 1;
    assert_int_equal(apply(l, &c, 1500, NULL), 0);
    assert_int_equal(fire(l, 0, 2000), ERR_STATE); /* paused */
    c.count = 0;
    assert_int_equal(apply(l, &c, 33000, NULL), 0);                   /* resumed in instance 3 */
    assert_int_equal(ledger_recurring_find(l, "etl")->last_fired, 3); /* none caught up */
    assert_int_equal(fire(l, 3, 33000), ERR_EXISTS);
    assert_int_equal(fire(l, 4, 42000), 0);
    uint64_t id = 0;
    assert_int_equal(reg(l, 4, 42100, &id), 0);
    ledger_cmd_init(&c, LEDGER_CMD_RECUR_REMOVE);
    snprintf(c.name, sizeof c.name, "etl");
    assert_int_equal(apply(l, &c, 42200, NULL), 0);
    assert_null(ledger_recurring_find(l, "etl"));
    assert_int_equal(ledger_job_find(l, id)->recur, 0); /* it finishes as an ordinary job */
    end_job(l, id, LEDGER_JOB_DONE, 45000);
    assert_string_equal(ledger_history_at(l, 0)->recurring, "");
    ledger_destroy(&l);
}

/* Morpheus §4 through the ledger: three runs whose output is read 7 s into each period give
 * an inferred deadline of 7 s (advisory) that `accept` adopts. */
static void inferred_deadline_accepted(void **state)
{
    (void)state;
    ledger_t *l = ledger_new();
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_VC_SET);
    snprintf(c.vc, sizeof c.vc, "default");
    c.count = CAP;
    assert_int_equal(apply(l, &c, 500, NULL), 0);
    ledger_cmd_init(&c, LEDGER_CMD_RECUR_ADD);
    snprintf(c.name, sizeof c.name, "etl");
    snprintf(c.vc, sizeof c.vc, "default");
    c.period_ms = P;
    c.text = SPEC;
    c.text_len = (uint32_t)strlen(SPEC);
    c.text2 = OUTS;
    c.text2_len = (uint32_t)strlen(OUTS);
    assert_int_equal(apply(l, &c, 500, NULL), 0);
    ledger_cmd_init(&c, LEDGER_CMD_RECUR_ACCEPT);
    snprintf(c.name, sizeof c.name, "etl");
    assert_int_equal(apply(l, &c, 600, NULL), ERR_STATE); /* nothing inferred yet */
    for (int64_t p = 1; p <= 3; p++) {
        int64_t ps = p * P;
        assert_int_equal(fire(l, p, ps), 0);
        uint64_t id = 0;
        assert_int_equal(reg(l, p, ps + 100, &id), 0);
        end_job(l, id, LEDGER_JOB_DONE, ps + 3000 + 10 * p);
        ledger_cmd_init(&c, LEDGER_CMD_JOB_REGISTER);
        snprintf(c.name, sizeof c.name, "report");
        snprintf(c.vc, sizeof c.vc, "default");
        c.lease_ms = 60000;
        c.text = "/data/etl/out";
        c.text_len = (uint32_t)strlen(c.text);
        assert_int_equal(apply(l, &c, ps + 7000 + 20 * p, NULL), 0);
    }
    const struct ledger_recurring *r = ledger_recurring_find(l, "etl");
    assert_int_equal(r->slo_source, 1 /* SLO_CONSUMERS */);
    assert_int_equal(r->slo_consumed, 3);
    assert_int_equal(r->slo_deadline_ms, 7040);        /* the median read */
    assert_int_equal(ledger_recurring_deadline(r), 0); /* advisory until accepted */
    uint32_t gen = r->generation;
    ledger_cmd_init(&c, LEDGER_CMD_RECUR_ACCEPT);
    snprintf(c.name, sizeof c.name, "etl");
    struct ledger_result res;
    assert_int_equal(apply(l, &c, 40000, &res), 0);
    assert_int_equal(res.value, 7040);
    r = ledger_recurring_find(l, "etl");
    assert_int_equal(ledger_recurring_deadline(r), 7040);
    assert_int_equal(r->deadline_source, LEDGER_DEADLINE_INFERRED);
    assert_int_equal(r->generation, gen + 1); /* replanned with its deadline */
    ledger_destroy(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(add_refusals),
        cmocka_unit_test(one_run_per_period),
        cmocka_unit_test(note_and_give_up),
        cmocka_unit_test(reservation_in_grants),
        cmocka_unit_test(outputs_first_read),
        cmocka_unit_test(history_is_bounded),
        cmocka_unit_test(snapshot_and_log_roundtrip),
        cmocka_unit_test(pause_and_remove),
        cmocka_unit_test(inferred_deadline_accepted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
