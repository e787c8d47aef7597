/* test_ledger.c - the RM ledger as a pure state machine: grants, leases, idempotency, node
 * liveness, snapshots (restored state equals the original), allocation failures; the
 * commands' encoding is tests/rm/test_ledger_cmd.c. */
#include "common/err.h"
#include "common/mem.h"
#include "rm/arbiter.h"
#include "rm/calib.h"
#include "rm/ledger.h"
#include "rm/ledger_cmd.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/rm/ledger_fixture.h"

struct fixture {
    ledger_t *l;
};

static int setup(void **state)
{
    static struct fixture f;
    f.l = ledger_new();
    assert_non_null(f.l);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    ledger_destroy(&f->l);
    assert_null(f->l);
    return 0;
}

static uint64_t job_register(ledger_t *l, const char *name, const char *vc, int64_t lease,
                             int64_t now)
{
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_JOB_REGISTER);
    snprintf(c.name, sizeof c.name, "%s", name);
    snprintf(c.vc, sizeof c.vc, "%s", vc);
    c.lease_ms = lease;
    struct ledger_result r = ledger_fx_apply(l, &c, now);
    assert_int_equal(r.code, 0);
    return r.value;
}

static struct ledger_result tokens(ledger_t *l, enum ledger_cmd_type t, uint64_t job,
                                   uint32_t count, int64_t now)
{
    struct ledger_cmd c;
    ledger_cmd_init(&c, t);
    c.job = job;
    c.count = count;
    return ledger_fx_apply(l, &c, now);
}

static void node_register(ledger_t *l, const char *name, const char *rack, int64_t now)
{
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_NODE_REGISTER);
    snprintf(c.name, sizeof c.name, "%s", name);
    snprintf(c.rack, sizeof c.rack, "%s", rack);
    snprintf(c.address, sizeof c.address, "tcp://127.0.0.1:7000");
    c.cpus_milli = 4000;
    c.mem_mb = 8192;
    c.boot_id = 42;
    assert_int_equal(ledger_fx_apply(l, &c, now).code, 0);
}

static void test_grants_shared_by_the_arbiter(void **state)
{
    struct fixture *f = *state;
    ledger_fx_vc_set(f->l, "default", 10, 1);
    uint64_t a = job_register(f->l, "a", "default", 0, 1);
    uint64_t b = job_register(f->l, "b", "default", 0, 1);
    assert_int_not_equal(a, b);
    assert_int_equal(tokens(f->l, LEDGER_CMD_TOKEN_REQUEST, a, 7, 2).value, 7);
    /* b asks for 6: two jobs without a deadline share the cluster fairly (MinEDF-WC) */
    assert_int_equal(tokens(f->l, LEDGER_CMD_TOKEN_REQUEST, b, 6, 3).value, 5);
    assert_int_equal(ledger_job_find(f->l, a)->tokens, 5);
    assert_int_equal(ledger_vc_find(f->l, "default")->granted, 10);
    assert_int_equal(ledger_job_find(f->l, b)->wanted, 6);
    assert_int_equal(ledger_vc_find(f->l, "default")->spare_reclaims, 2); /* a's, for b */
    /* a lowers its target: the tokens go to b at once */
    assert_int_equal(tokens(f->l, LEDGER_CMD_TOKEN_REQUEST, a, 2, 4).value, 2);
    assert_int_equal(ledger_job_find(f->l, b)->tokens, 6);
    assert_int_equal(tokens(f->l, LEDGER_CMD_TOKEN_RELEASE, b, 4, 6).value, 2);
    assert_int_equal(ledger_vc_find(f->l, "default")->granted, 4);
    /* unknown job, unknown vc */
    assert_int_equal(tokens(f->l, LEDGER_CMD_TOKEN_REQUEST, 999, 1, 7).code, ERR_NOTFOUND);
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_JOB_REGISTER);
    snprintf(c.name, sizeof c.name, "x");
    snprintf(c.vc, sizeof c.vc, "nope");
    assert_int_equal(ledger_fx_apply(f->l, &c, 8).code, ERR_NOTFOUND);
    /* shrinking capacity claws back from the newest job first */
    assert_int_equal(tokens(f->l, LEDGER_CMD_TOKEN_REQUEST, b, 8, 9).value, 8);
    ledger_fx_vc_set(f->l, "default", 5, 10);
    assert_int_equal(ledger_job_find(f->l, b)->tokens, 3);
    assert_int_equal(ledger_job_find(f->l, a)->tokens, 2);
}

/* A deadline job with a shape: W = 100 token-s, L = 10 s, width 10 (rm/arbiter.h). */
static struct ledger_result deadline_job(ledger_t *l, const char *name, int64_t deadline_ms,
                                         uint8_t flags, int64_t now)
{
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_JOB_REGISTER);
    snprintf(c.name, sizeof c.name, "%s", name);
    snprintf(c.vc, sizeof c.vc, "default");
    c.deadline_ms = deadline_ms;
    c.flags = flags;
    c.work_ms = 100000;
    c.path_ms = 10000;
    c.width = 10;
    c.k_milli = 1645;
    return ledger_fx_apply(l, &c, now);
}

static void test_deadline_jobs_arbitrated_and_admitted(void **state)
{
    struct fixture *f = *state;
    ledger_fx_vc_set(f->l, "default", 10, 0);
    uint64_t flood = job_register(f->l, "flood", "default", 0, 0);
    assert_int_equal(tokens(f->l, LEDGER_CMD_TOKEN_REQUEST, flood, 10, 0).value, 10);
    /* due in 60 s: admitted; ARIA's minimum for 60 s is 2 (avg(2) = 52.5 s), the rest of its
     * width is spare taken from the job without a deadline */
    struct ledger_result r = deadline_job(f->l, "a", 60000, 0, 0);
    assert_int_equal(r.code, 0);
    const struct ledger_job *a = ledger_job_find(f->l, r.value);
    assert_int_equal(a->minimum, 2);
    assert_int_equal(a->tokens, 10);
    assert_int_equal(ledger_job_find(f->l, flood)->tokens, 0);
    uint64_t aid = a->id;
    /* its JM renews saying it can use only 4 tokens now (demand + 1 on the wire): its spare is
     * capped there and the other 6 go to the job without a deadline; unknown again (0), it has
     * its registered width */
    struct ledger_cmd rn;
    ledger_cmd_init(&rn, LEDGER_CMD_LEASE_RENEW);
    rn.job = aid;
    rn.count = 4 + 1;
    assert_int_equal(ledger_fx_apply(f->l, &rn, 0).code, 0);
    assert_int_equal(ledger_job_find(f->l, aid)->tokens, 4);
    assert_int_equal(ledger_job_find(f->l, flood)->tokens, 6);
    /* it can use one token now (its last task running, nothing ready): its minimum of 2 is
     * capped there too, so the idle token goes to the job without a deadline */
    rn.count = 1 + 1;
    assert_int_equal(ledger_fx_apply(f->l, &rn, 0).code, 0);
    assert_int_equal(ledger_job_find(f->l, aid)->tokens, 1);
    assert_int_equal(ledger_job_find(f->l, flood)->tokens, 9);
    rn.count = 1; /* nothing running or ready (between retries): its minimum stays */
    assert_int_equal(ledger_fx_apply(f->l, &rn, 0).code, 0);
    assert_int_equal(ledger_job_find(f->l, aid)->tokens, 2);
    rn.count = 0;
    assert_int_equal(ledger_fx_apply(f->l, &rn, 0).code, 0);
    assert_int_equal(ledger_job_find(f->l, aid)->tokens, 10);
    /* A new cluster's error model has seen no outcome: the conservative shape is the model
     * times the prior, 1.5 (rm/calib.h): W 150 token-s, L 15 s. Due in 30 s: alone it needs
     * the whole cluster for 15 s and ends at 28.5 s with its Graham tail; job a's 150 token-s
     * due at 60 fit after it (ends at 43.5 s): admitted, and a's spare is reclaimed for it */
    r = deadline_job(f->l, "b", 30000, 0, 0);
    assert_int_equal(r.code, 0);
    /* b's minimum for 30 s is 4 (means: avg(4) = 28.75 s), a keeps its minimum of 2, and the
     * four tokens left are spare for the earlier deadline */
    const struct ledger_job *b = ledger_job_find(f->l, r.value);
    assert_int_equal(b->minimum, 4);
    assert_int_equal(b->tokens, 8);
    assert_int_equal(ledger_job_find(f->l, aid)->tokens, 2);
    assert_true(ledger_vc_find(f->l, "default")->spare_reclaims >= 8);
    /* a third due in 30 s cannot fit: refused, with the earliest feasible finish of the joint
     * plan (rm/arbiter_joint.c; each job on k tokens takes Graham's upper bound (W - L)/k + L):
     * b keeps its minimum of 9 tokens to 30 s, a then needs 6 to end at 60 s, and c, behind
     * them on what is left, ends on the whole cluster at 70.962 s. (The fluid model let b take
     * the whole cluster for 15 s and c's work catch up before a's: 43.5 s.) */
    r = deadline_job(f->l, "c", 30000, 0, 0);
    assert_int_equal(r.code, ERR_ADMISSION);
    assert_true(r.value >= 70962 && r.value <= 71040); /* bisection to a thousandth */
    assert_true(r.aux > 0 && r.aux <= r.value);
    assert_int_equal(ledger_job_count(f->l), 3); /* nothing registered */
    /* resubmitted with that deadline: admitted */
    assert_int_equal(deadline_job(f->l, "c", (int64_t)r.value, 0, 0).code, 0);

    /* best-effort: admitted without a check */
    assert_int_equal(deadline_job(f->l, "d", 1000, LEDGER_JOB_BEST_EFFORT, 0).code, 0);
    /* the state survives a snapshot */
    struct enc_buf x;
    enc_buf_init(&x);
    ledger_snapshot(f->l, &x);
    ledger_t *copy = NULL;
    char msg[160];
    assert_int_equal(ledger_restore(x.data, x.len, &copy, msg, sizeof msg), 0);
    for (size_t i = 0; i < ledger_job_count(copy); i++)
        assert_memory_equal(ledger_job_at(copy, i), ledger_job_at(f->l, i),
                            sizeof(struct ledger_job));
    assert_memory_equal(ledger_vc_at(copy, 0), ledger_vc_at(f->l, 0), sizeof(struct ledger_vc));
    ledger_destroy(&copy);
    enc_buf_close(&x);
}

/* The error model (rm/calib.h) learns from the jobs that finish: a deadline a new cluster
 * refuses (its prior bound is 1.5x the model) is admitted once jobs have finished close to
 * their predictions, the quoted median follows them, and a snapshot carries the model. */
/* Issue 25: a profiled job's minimum is its controller's raw allocation A^r when its JM says it,
 * not its request (which adds the controller's hysteresis). Two profiled deadline jobs both ask
 * for 8 of 10 tokens; the earlier needs 3 now, the later 6. With the raw allocations the later
 * job gets its 6 (minimums 3 + 6, the spare token to the earlier deadline); with requests only
 * the earlier's 8 left the later 2. The raw allocation survives the log and snapshots. */
static void snapshot_bytes(const ledger_t *l, struct enc_buf *b);

static void test_raw_allocation_is_the_minimum(void **state)
{
    struct fixture *f = *state;
    ledger_fx_vc_set(f->l, "default", 10, 0);
    struct ledger_result r1 = deadline_job(f->l, "early", 60000, LEDGER_JOB_HAS_PROFILE, 0);
    struct ledger_result r2 = deadline_job(f->l, "late", 120000, LEDGER_JOB_HAS_PROFILE, 0);
    assert_int_equal(r1.code, 0);
    assert_int_equal(r2.code, 0);
    uint64_t early = r1.value, late = r2.value;
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_TOKEN_REQUEST);
    c.job = early;
    c.count = 8;
    c.raw = 3;
    assert_int_equal(ledger_fx_apply(f->l, &c, 1).code, 0);
    c.job = late;
    c.raw = 6;
    assert_int_equal(ledger_fx_apply(f->l, &c, 2).code, 0);
    assert_int_equal(ledger_job_find(f->l, late)->raw, 6);
    assert_int_equal(ledger_job_find(f->l, late)->tokens, 6);
    assert_int_equal(ledger_job_find(f->l, late)->minimum, 6);
    assert_int_equal(ledger_job_find(f->l, early)->tokens, 4);
    assert_int_equal(ledger_job_find(f->l, early)->minimum, 3);
    /* the log and a snapshot keep it */
    struct enc_buf b;
    struct ledger_cmd d;
    ledger_fx_roundtrip(&c, &b, &d);
    assert_int_equal(d.raw, 6);
    enc_buf_close(&b);
    char msg[160];
    snapshot_bytes(f->l, &b);
    ledger_t *rl = NULL;
    assert_int_equal(ledger_restore(b.data, b.len, &rl, msg, sizeof msg), 0);
    assert_int_equal(ledger_job_find(rl, late)->raw, 6);
    ledger_destroy(&rl);
    enc_buf_close(&b);
    /* a JM that says no raw allocation (0): its request is its minimum, as before */
    c.job = early;
    c.raw = 0;
    assert_int_equal(ledger_fx_apply(f->l, &c, 3).code, 0);
    assert_int_equal(ledger_job_find(f->l, early)->tokens, 8);
    assert_int_equal(ledger_job_find(f->l, late)->tokens, 2);
}

static void test_calibration_tightens_after_outcomes(void **state)
{
    struct fixture *f = *state;
    ledger_fx_vc_set(f->l, "default", 10, 0);
    /* W 100 token-s, L 10 s, width 10, its list schedule at alpha 0.25: the model says 12.25 s */
    struct ledger_cmd q;
    ledger_cmd_init(&q, LEDGER_CMD_JOB_REGISTER);
    snprintf(q.vc, sizeof q.vc, "default");
    q.work_ms = 100000;
    q.path_ms = 10000;
    q.width = 10;
    q.flags = LEDGER_JOB_HAS_ALPHA;
    q.alpha_milli = 250;
    q.k_milli = 1645;
    struct arbiter_quote a;
    struct arbiter_price curve[4];
    size_t np = 4;
    int64_t now = 1000;
    q.deadline_ms = now + 15000;
    assert_int_equal(ledger_quote(f->l, &q, now, &a, curve, &np), 0);
    assert_false(a.admit); /* 1.5 x: bounds 15 and 28.5, a quarter in: 18.4 s */
    assert_float_equal(a.finish, 15 + 0.25 * 13.5, 1e-6);
    /* twenty such jobs without a deadline, each holding the 10 tokens it asked for, each run
       1.04-1.08 x their prediction */
    for (int i = 0; i < 20; i++) {
        struct ledger_cmd c = q;
        snprintf(c.name, sizeof c.name, "run-%d", i);
        c.deadline_ms = 0;
        struct ledger_result r = ledger_fx_apply(f->l, &c, now);
        assert_int_equal(r.code, 0);
        const struct ledger_job *j = ledger_job_find(f->l, r.value);
        assert_int_equal(j->pred_p50_ms, 12250);
        assert_true(j->pred_bound_ms > j->pred_p50_ms);
        assert_int_equal(tokens(f->l, LEDGER_CMD_TOKEN_REQUEST, r.value, 10, now).value, 10);
        struct ledger_cmd e;
        ledger_cmd_init(&e, LEDGER_CMD_JOB_END);
        e.job = r.value;
        e.state = LEDGER_JOB_DONE;
        now += 12250 * (104 + i % 5) / 100;
        assert_int_equal(ledger_fx_apply(f->l, &e, now).code, 0);
    }
    /* a failed job and a best-effort one teach it nothing */
    struct ledger_cmd c = q;
    snprintf(c.name, sizeof c.name, "late");
    c.deadline_ms = 0;
    struct ledger_result r = ledger_fx_apply(f->l, &c, now);
    struct ledger_cmd e;
    ledger_cmd_init(&e, LEDGER_CMD_JOB_END);
    e.job = r.value;
    e.state = LEDGER_JOB_FAILED;
    now += 60000;
    ledger_fx_apply(f->l, &e, now);
    /* two jobs without a deadline that shared the cluster measure the sharing, not the model:
     * nothing learned, however late they ran */
    uint64_t shared[2];
    for (int i = 0; i < 2; i++) {
        snprintf(c.name, sizeof c.name, "shared-%d", i);
        r = ledger_fx_apply(f->l, &c, now);
        assert_int_equal(r.code, 0);
        shared[i] = r.value;
    }
    now += 40000;
    for (int i = 0; i < 2; i++) {
        assert_true(ledger_job_find(f->l, shared[i])->shared);
        e.job = shared[i];
        e.state = LEDGER_JOB_DONE;
        assert_int_equal(ledger_fx_apply(f->l, &e, now).code, 0);
    }
    struct calib_factors cf;
    ledger_calibration(f->l, &cf);
    assert_int_equal(cf.n, 20);
    assert_true(cf.sample_hi > 1.07 && cf.sample_hi < 1.09);
    assert_true(cf.hi < 1.21 && cf.hi > cf.sample_hi); /* (8 x 1.5 + 20 x 1.08) / 28 */
    assert_true(cf.p50 > 1.0 && cf.p50 < cf.sample_hi);
    q.deadline_ms = now + 15000;
    np = 4;
    assert_int_equal(ledger_quote(f->l, &q, now, &a, curve, &np), 0);
    assert_true(a.admit);
    assert_true(a.finish < 15 && a.finish > 12.25);
    /* the same model on a replica restored from a snapshot */
    struct enc_buf x;
    enc_buf_init(&x);
    ledger_snapshot(f->l, &x);
    ledger_t *copy = NULL;
    char msg[160];
    assert_int_equal(ledger_restore(x.data, x.len, &copy, msg, sizeof msg), 0);
    struct calib_factors cg;
    ledger_calibration(copy, &cg);
    assert_memory_equal(&cf, &cg, sizeof cf);
    ledger_destroy(&copy);
    enc_buf_close(&x);
}

static void test_job_end_releases_and_refuses_more(void **state)
{
    struct fixture *f = *state;
    ledger_fx_vc_set(f->l, "default", 4, 1);
    uint64_t a = job_register(f->l, "a", "default", 0, 1);
    assert_int_equal(tokens(f->l, LEDGER_CMD_TOKEN_REQUEST, a, 4, 2).value, 4);
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_JOB_END);
    c.job = a;
    c.state = LEDGER_JOB_DONE;
    assert_int_equal(ledger_fx_apply(f->l, &c, 3).code, 0);
    assert_int_equal(ledger_vc_find(f->l, "default")->granted, 0);
    assert_int_equal(ledger_job_find(f->l, a)->state, LEDGER_JOB_DONE);
    assert_int_equal(tokens(f->l, LEDGER_CMD_TOKEN_REQUEST, a, 1, 4).code, ERR_STATE);
    c.state = 77;
    uint64_t b = job_register(f->l, "b", "default", 0, 5);
    c.job = b;
    assert_int_equal(ledger_fx_apply(f->l, &c, 5).code, ERR_INVAL);
}

static void test_leases_expire_and_reclaim(void **state)
{
    struct fixture *f = *state;
    ledger_fx_vc_set(f->l, "default", 10, 0);
    uint64_t a = job_register(f->l, "a", "default", 1000, 0);
    uint64_t b = job_register(f->l, "b", "default", 1000, 0);
    tokens(f->l, LEDGER_CMD_TOKEN_REQUEST, a, 4, 100);
    tokens(f->l, LEDGER_CMD_TOKEN_REQUEST, b, 4, 100);
    assert_int_equal(ledger_next_expiry(f->l), 1100);
    /* b renews at 900; at 1100 only a expires */
    assert_int_equal(tokens(f->l, LEDGER_CMD_LEASE_RENEW, b, 0, 900).value, 4);
    struct ledger_cmd tick;
    ledger_cmd_init(&tick, LEDGER_CMD_TICK);
    assert_int_equal(ledger_fx_apply(f->l, &tick, 1099).value, 0);
    assert_int_equal(ledger_fx_apply(f->l, &tick, 1100).value, 1);
    assert_int_equal(ledger_job_find(f->l, a)->state, LEDGER_JOB_EXPIRED);
    assert_int_equal(ledger_job_find(f->l, a)->tokens, 0);
    assert_int_equal(ledger_job_find(f->l, b)->tokens, 4);
    assert_int_equal(ledger_vc_find(f->l, "default")->granted, 4);
    assert_int_equal(tokens(f->l, LEDGER_CMD_LEASE_RENEW, a, 0, 1200).code, ERR_STATE);
    /* a renewal may ask for another lease length, within bounds */
    struct ledger_cmd r;
    ledger_cmd_init(&r, LEDGER_CMD_LEASE_RENEW);
    r.job = b;
    r.lease_ms = 5000;
    assert_int_equal(ledger_fx_apply(f->l, &r, 1200).code, 0);
    assert_int_equal(ledger_job_find(f->l, b)->lease_expiry_ms, 6200);
    r.lease_ms = 1;
    assert_int_equal(ledger_fx_apply(f->l, &r, 1200).code, ERR_RANGE);
    assert_int_equal(ledger_job_find(f->l, b)->lease_ms, 5000);
    /* time never goes back: an entry stamped earlier is applied at the ledger's time */
    assert_int_equal(ledger_fx_apply(f->l, &tick, 500).value, 0);
    assert_int_equal(ledger_now(f->l), 1200);
    assert_int_equal(ledger_fx_apply(f->l, &tick, 6199).value, 0);
    assert_int_equal(ledger_fx_apply(f->l, &tick, 6200).value, 1);
}

static void test_idempotency_keys(void **state)
{
    struct fixture *f = *state;
    ledger_fx_vc_set(f->l, "default", 10, 0);
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_JOB_REGISTER);
    snprintf(c.name, sizeof c.name, "a");
    snprintf(c.vc, sizeof c.vc, "default");
    c.key = 0xabc;
    struct ledger_result r1 = ledger_fx_apply(f->l, &c, 1), r2 = ledger_fx_apply(f->l, &c, 2);
    assert_int_equal(r1.code, 0);
    assert_int_equal(r1.value, r2.value);
    assert_int_equal(ledger_job_count(f->l), 1);
    struct ledger_result got;
    assert_true(ledger_idem_lookup(f->l, 0xabc, &got));
    assert_int_equal(got.value, r1.value);
    assert_false(ledger_idem_lookup(f->l, 0xabd, &got));
    /* a refusal is remembered too */
    struct ledger_cmd t;
    ledger_cmd_init(&t, LEDGER_CMD_TOKEN_REQUEST);
    t.job = 12345;
    t.key = 7;
    assert_int_equal(ledger_fx_apply(f->l, &t, 3).code, ERR_NOTFOUND);
    assert_true(ledger_idem_lookup(f->l, 7, &got));
    assert_int_equal(got.code, ERR_NOTFOUND);
    /* the oldest keys are forgotten after LEDGER_IDEM_CAP newer ones */
    for (uint64_t k = 1000; k < 1000 + LEDGER_IDEM_CAP; k++) {
        struct ledger_cmd r;
        ledger_cmd_init(&r, LEDGER_CMD_LEASE_RENEW);
        r.job = r1.value;
        r.key = k;
        assert_int_equal(ledger_fx_apply(f->l, &r, 4).code, 0);
    }
    assert_false(ledger_idem_lookup(f->l, 0xabc, NULL));
    assert_true(ledger_idem_lookup(f->l, 1000, NULL));
    assert_true(ledger_idem_lookup(f->l, 1000 + LEDGER_IDEM_CAP - 1, NULL));
}

static void test_node_liveness_and_psucc(void **state)
{
    struct fixture *f = *state;
    node_register(f->l, "pn-1", "r1", 10);
    const struct ledger_node *n = ledger_node_find(f->l, "pn-1");
    assert_non_null(n);
    assert_string_equal(ledger_node_state_name(n), "up");
    double p0 = ledger_node_psucc(n);
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_NODE_LIVENESS);
    snprintf(c.name, sizeof c.name, "pn-1");
    c.state = LEDGER_NODE_SUSPECT;
    assert_int_equal(ledger_fx_apply(f->l, &c, 20).code, 0);
    n = ledger_node_find(f->l, "pn-1");
    assert_string_equal(ledger_node_state_name(n), "suspect");
    c.state = LEDGER_NODE_DOWN;
    ledger_fx_apply(f->l, &c, 30);
    ledger_fx_apply(f->l, &c, 31); /* repeated: one transition */
    n = ledger_node_find(f->l, "pn-1");
    assert_int_equal(n->down_count, 1);
    assert_int_equal(n->since_ms, 30);
    assert_true(ledger_node_psucc(n) < p0);
    c.state = 9;
    assert_int_equal(ledger_fx_apply(f->l, &c, 32).code, ERR_INVAL);
    /* re-registration brings it back up */
    node_register(f->l, "pn-1", "r1", 40);
    n = ledger_node_find(f->l, "pn-1");
    assert_int_equal(n->liveness, LEDGER_NODE_UP);
    assert_int_equal(n->registered_ms, 10);
    ledger_cmd_init(&c, LEDGER_CMD_NODE_DRAIN);
    snprintf(c.name, sizeof c.name, "pn-1");
    c.count = 1;
    ledger_fx_apply(f->l, &c, 50);
    assert_string_equal(ledger_node_state_name(ledger_node_find(f->l, "pn-1")), "draining");
    ledger_cmd_init(&c, LEDGER_CMD_NODE_OUTCOME);
    snprintf(c.name, sizeof c.name, "pn-1");
    c.ok = 98;
    c.failed = 0;
    ledger_fx_apply(f->l, &c, 60);
    /* (98 + 1) / (98 + 0 + 1 + 2) */
    assert_true(ledger_node_psucc(ledger_node_find(f->l, "pn-1")) > 0.97);
    /* many nodes: the name index grows and still finds every one */
    char name[32];
    for (int i = 0; i < 3000; i++) {
        snprintf(name, sizeof name, "n%d", i);
        node_register(f->l, name, "r2", 70);
    }
    assert_int_equal(ledger_node_count(f->l), 3001);
    for (int i = 0; i < 3000; i += 7) {
        snprintf(name, sizeof name, "n%d", i);
        assert_non_null(ledger_node_find(f->l, name));
    }
    assert_null(ledger_node_find(f->l, "n3000"));
}

/* Builds a ledger touching every kind of state. */
static void populate(ledger_t *l)
{
    ledger_fx_vc_set(l, "default", 20, 1);
    ledger_fx_vc_set(l, "batch", 5, 1);
    for (int i = 0; i < 50; i++) {
        char name[16];
        snprintf(name, sizeof name, "pn-%d", i);
        node_register(l, name, i % 2 ? "r1" : "r2", 2 + i);
    }
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_NODE_LIVENESS);
    snprintf(c.name, sizeof c.name, "pn-3");
    c.state = LEDGER_NODE_DOWN;
    ledger_fx_apply(l, &c, 100);
    for (int i = 0; i < 30; i++) {
        uint64_t j = job_register(l, i % 3 ? "etl" : "adhoc", i % 4 ? "default" : "batch", 1000 + i,
                                  200 + i);
        struct ledger_cmd t;
        ledger_cmd_init(&t, LEDGER_CMD_TOKEN_REQUEST);
        t.job = j;
        t.count = (uint32_t)(i % 5);
        t.key = 5000 + (uint64_t)i;
        ledger_fx_apply(l, &t, 300 + i);
        if (i % 6 == 0) {
            ledger_cmd_init(&t, LEDGER_CMD_JOB_END);
            t.job = j;
            t.state = LEDGER_JOB_DONE;
            ledger_fx_apply(l, &t, 400);
        }
    }
}

static void snapshot_bytes(const ledger_t *l, struct enc_buf *b)
{
    enc_buf_init(b);
    ledger_snapshot(l, b);
    assert_int_equal(enc_buf_err(b), 0);
}

static void test_snapshot_restore_equal(void **state)
{
    struct fixture *f = *state;
    populate(f->l);
    struct enc_buf a, b;
    snapshot_bytes(f->l, &a);
    char msg[160];
    ledger_t *r = NULL;
    assert_int_equal(ledger_restore(a.data, a.len, &r, msg, sizeof msg), 0);
    ledger_fx_check(r);
    snapshot_bytes(r, &b);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.data, b.data, a.len);
    /* field by field, through the public views */
    assert_int_equal(ledger_now(r), ledger_now(f->l));
    assert_int_equal(ledger_node_count(r), ledger_node_count(f->l));
    for (size_t i = 0; i < ledger_node_count(r); i++) {
        const struct ledger_node *x = ledger_node_at(f->l, i);
        const struct ledger_node *y = ledger_node_find(r, x->name);
        assert_non_null(y);
        assert_memory_equal(x, y, sizeof *x);
    }
    assert_int_equal(ledger_job_count(r), ledger_job_count(f->l));
    for (size_t i = 0; i < ledger_job_count(r); i++)
        assert_memory_equal(ledger_job_at(r, i), ledger_job_at(f->l, i), sizeof(struct ledger_job));
    for (size_t i = 0; i < ledger_vc_count(r); i++)
        assert_memory_equal(ledger_vc_at(r, i), ledger_vc_at(f->l, i), sizeof(struct ledger_vc));
    struct ledger_result x, y;
    assert_true(ledger_idem_lookup(r, 5003, &y));
    assert_true(ledger_idem_lookup(f->l, 5003, &x));
    assert_int_equal(x.value, y.value);
    /* both continue identically */
    uint64_t j1 = job_register(f->l, "after", "default", 0, 1000);
    uint64_t j2 = job_register(r, "after", "default", 0, 1000);
    assert_int_equal(j1, j2);
    ledger_destroy(&r);
    enc_buf_close(&a);
    enc_buf_close(&b);
}

static void test_restore_rejects_bad_bytes(void **state)
{
    struct fixture *f = *state;
    populate(f->l);
    struct enc_buf a;
    snapshot_bytes(f->l, &a);
    char msg[160];
    ledger_t *r = NULL;
    /* every truncation short of the 8-byte padding is refused */
    for (size_t n = 0; n + 8 <= a.len; n += 1 + n / 16) {
        assert_int_equal(ledger_restore(a.data, n, &r, msg, sizeof msg), ERR_PARSE);
        assert_null(r);
    }
    /* flipping bytes never crashes; a state that decodes must pass the invariants */
    for (size_t i = 0; i < a.len; i += 3) {
        a.data[i] ^= 0x5a;
        if (ledger_restore(a.data, a.len, &r, msg, sizeof msg) == 0) {
            ledger_fx_check(r);
            ledger_destroy(&r);
        }
        a.data[i] ^= 0x5a;
    }
    /* a huge count in a short buffer does not allocate */
    uint8_t evil[64] = {0x53, 0x4c, 0x44, 0x50, 1};
    memset(evil + 29, 0xff, 4);
    assert_int_equal(ledger_restore(evil, sizeof evil, &r, msg, sizeof msg), ERR_PARSE);
    enc_buf_close(&a);
}

static void test_allocation_failure_leaves_state(void **state)
{
    struct fixture *f = *state;
    ledger_fx_vc_set(f->l, "default", 3, 0);
    struct enc_buf before, after;
    snapshot_bytes(f->l, &before);
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_NODE_REGISTER);
    snprintf(c.name, sizeof c.name, "pn-x");
    c.cpus_milli = 1000;
    c.mem_mb = 1000;
    c.key = 1;
    mem_fail_after(0);
    struct ledger_result r;
    assert_int_equal(ledger_apply(f->l, &c, 0, &r), ERR_NOMEM);
    mem_fail_reset();
    snapshot_bytes(f->l, &after);
    assert_int_equal(before.len, after.len);
    assert_memory_equal(before.data, after.data, before.len);
    /* not remembered: the retry succeeds */
    assert_int_equal(ledger_apply(f->l, &c, 0, &r), 0);
    enc_buf_close(&before);
    enc_buf_close(&after);
}

/* Issue 14: a JM started again resumes its job under a new epoch, also after its lease lapsed
 * (the history's `expired` record is taken back); a job that ended is not resumed; past the
 * restart limit the job fails with the reason. */
static void test_job_resume_epochs(void **state)
{
    (void)state;
    ledger_t *l = ledger_new();
    assert_non_null(l);
    ledger_fx_vc_set(l, "default", 10, 1000);
    uint64_t id = job_register(l, "etl", "default", 2000, 1000);
    assert_int_equal(ledger_job_find(l, id)->epoch, 1);
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_JOB_RESUME);
    c.job = id;
    c.count = 2; /* the leader's restart limit */
    c.text2 = "/srv/jobs/etl";
    c.text2_len = (uint32_t)strlen(c.text2);
    snprintf(c.address, sizeof c.address, "host-1");
    c.boot_id = 4242;
    struct ledger_result r = ledger_fx_apply(l, &c, 1500);
    assert_int_equal(r.code, 0);
    assert_int_equal(r.value, 2);
    const struct ledger_job *j = ledger_job_find(l, id);
    assert_int_equal(j->epoch, 2);
    assert_string_equal(j->job_dir, "/srv/jobs/etl");
    assert_string_equal(j->host, "host-1");
    assert_int_equal(j->jm_pid, 4242);
    /* the old JM (epoch 1) renews: refused, and it changes nothing */
    struct ledger_cmd rn;
    ledger_cmd_init(&rn, LEDGER_CMD_LEASE_RENEW);
    rn.job = id;
    rn.epoch = 1;
    rn.boot_id = 99;
    assert_int_equal(ledger_fx_apply(l, &rn, 1600).code, ERR_FENCED);
    assert_int_equal(ledger_job_find(l, id)->jm_pid, 4242);
    rn.epoch = 2; /* the current one renews */
    assert_int_equal(ledger_fx_apply(l, &rn, 1700).code, 0);
    assert_int_equal(ledger_job_find(l, id)->jm_pid, 99);

    /* its lease lapses: expired, recorded; a resume brings it back and unrecords it */
    struct ledger_cmd t;
    ledger_cmd_init(&t, LEDGER_CMD_TICK);
    assert_int_equal(ledger_fx_apply(l, &t, 5000).value, 1);
    assert_int_equal(ledger_job_find(l, id)->state, LEDGER_JOB_EXPIRED);
    assert_int_equal(ledger_history_count(l), 1);
    r = ledger_fx_apply(l, &c, 5100);
    assert_int_equal(r.code, 0);
    assert_int_equal(r.value, 3);
    j = ledger_job_find(l, id);
    assert_int_equal(j->state, LEDGER_JOB_ACTIVE);
    assert_int_equal(j->finished_ms, 0);
    assert_true(j->lease_expiry_ms > 5100);
    assert_int_equal(ledger_history_count(l), 0);

    /* a third start is over the limit of 2 restarts: the job fails, saying why */
    r = ledger_fx_apply(l, &c, 5200);
    assert_int_equal(r.code, ERR_FULL);
    j = ledger_job_find(l, id);
    assert_int_equal(j->state, LEDGER_JOB_FAILED);
    assert_int_equal(ledger_history_count(l), 1);
    assert_non_null(strstr(ledger_history_at(l, 0)->reason, "started again 2 times"));
    /* an ended job is not resumed */
    c.count = 0;
    assert_int_equal(ledger_fx_apply(l, &c, 5300).code, ERR_STATE);

    /* an expired job the leader gives up on is failed, its record says so */
    uint64_t id2 = job_register(l, "other", "default", 2000, 6000);
    assert_int_equal(ledger_fx_apply(l, &t, 9000).value, 1);
    struct ledger_cmd e;
    ledger_cmd_init(&e, LEDGER_CMD_JOB_END);
    e.job = id2;
    e.state = LEDGER_JOB_FAILED;
    e.text = "its job manager could not be started again";
    e.text_len = (uint32_t)strlen(e.text);
    assert_int_equal(ledger_fx_apply(l, &e, 9100).code, 0);
    assert_int_equal(ledger_job_find(l, id2)->state, LEDGER_JOB_FAILED);
    assert_string_equal(ledger_history_at(l, 1)->outcome == LEDGER_RUN_FAILED ? "failed" : "?",
                        "failed");
    assert_string_equal(ledger_history_at(l, 1)->reason,
                        "its job manager could not be started again");
    e.state = LEDGER_JOB_DONE; /* done is refused for a job that is not active */
    assert_int_equal(ledger_fx_apply(l, &e, 9200).code, ERR_STATE);
    ledger_destroy(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_grants_shared_by_the_arbiter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deadline_jobs_arbitrated_and_admitted, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_raw_allocation_is_the_minimum, setup, teardown),
        cmocka_unit_test_setup_teardown(test_calibration_tightens_after_outcomes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_end_releases_and_refuses_more, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leases_expire_and_reclaim, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idempotency_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_liveness_and_psucc, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_restore_equal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restore_rejects_bad_bytes, setup, teardown),
        cmocka_unit_test(test_job_resume_epochs),
        cmocka_unit_test_setup_teardown(test_allocation_failure_leaves_state, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
