/* test_tenant.c - tenants in the ledger (issue 27) and its accounting (issue 25): owners, roles,
 * grants of virtual clusters, quotas refusing registrations and naming the quota, the audit
 * trail, usage with the price of the admitted deadline, a tighter deadline through admission,
 * snapshots and log entries carrying all of it, and older entries still read. */
#include "common/err.h"
#include "common/mem.h"
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
    return 0;
}

/* A job of 40 token-s over a 10 s path, 4 wide; deadline_s 0: none. */
static struct ledger_result submit(ledger_t *l, const char *user, const char *vc, double deadline_s,
                                   int64_t now)
{
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_JOB_REGISTER);
    snprintf(c.name, sizeof c.name, "job-of-%s", user);
    snprintf(c.vc, sizeof c.vc, "%s", vc);
    snprintf(c.user, sizeof c.user, "%s", user);
    c.deadline_ms = deadline_s > 0 ? now + (int64_t)(deadline_s * 1000) : 0;
    c.work_ms = 40000;
    c.path_ms = 10000;
    c.width = 4;
    c.k_milli = 1000;
    return ledger_fx_apply(l, &c, now);
}

static struct ledger_result rule(ledger_t *l, enum ledger_cmd_type t, const char *who,
                                 const char *user, const char *vc, uint32_t count,
                                 uint64_t token_ms)
{
    struct ledger_cmd c;
    ledger_cmd_init(&c, t);
    snprintf(c.user, sizeof c.user, "%s", who);
    snprintf(c.name, sizeof c.name, "%s", user);
    snprintf(c.vc, sizeof c.vc, "%s", vc);
    c.count = count;
    c.state = (uint8_t)count;
    c.token_ms = token_ms;
    return ledger_fx_apply(l, &c, 0);
}

static struct ledger_result end_job(ledger_t *l, const char *who, uint64_t job, uint8_t state,
                                    uint64_t token_ms, int64_t now)
{
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_JOB_END);
    if (state == LEDGER_JOB_CANCELLED) { /* as `job cancel` sends it */
        c.text = "cancelled by someone";
        c.text_len = (uint32_t)strlen(c.text);
    }
    snprintf(c.user, sizeof c.user, "%s", who);
    c.job = job;
    c.state = state;
    c.token_ms = token_ms;
    return ledger_fx_apply(l, &c, now);
}

static struct ledger_result deadline(ledger_t *l, uint64_t job, double from_submit_s, int64_t now)
{
    const struct ledger_job *j = ledger_job_find(l, job);
    assert_non_null(j);
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_JOB_DEADLINE);
    snprintf(c.user, sizeof c.user, "alice");
    c.job = job;
    c.deadline_ms = j->submitted_ms + (int64_t)(from_submit_s * 1000);
    c.k_milli = 1000;
    return ledger_fx_apply(l, &c, now);
}

static void test_owner_roles_grants(void **state)
{
    struct fixture *f = *state;
    ledger_fx_vc_set(f->l, "default", 8, 0);
    ledger_fx_vc_set(f->l, "batch", 8, 0);
    struct ledger_result r = submit(f->l, "alice", "default", 0, 1000);
    assert_int_equal(r.code, 0);
    assert_string_equal(ledger_job_find(f->l, r.value)->user, "alice");
    /* roles */
    assert_int_equal(ledger_user_role(f->l, "carol"), 0);
    assert_int_equal(rule(f->l, LEDGER_CMD_ROLE_SET, "paddock", "carol", "", 2, 0).code, 0);
    assert_int_equal(ledger_user_role(f->l, "carol"), LEDGER_ROLE_ADMIN);
    assert_int_equal(rule(f->l, LEDGER_CMD_ROLE_SET, "paddock", "carol", "", 3, 0).code, ERR_INVAL);
    /* a cluster is open to all until granted to someone */
    assert_true(ledger_vc_granted(f->l, "batch", "bob"));
    assert_int_equal(rule(f->l, LEDGER_CMD_GRANT_SET, "paddock", "alice", "batch", 1, 0).code, 0);
    assert_true(ledger_vc_granted(f->l, "batch", "alice"));
    assert_false(ledger_vc_granted(f->l, "batch", "bob"));
    assert_true(ledger_vc_granted(f->l, "default", "bob"));
    assert_int_equal(rule(f->l, LEDGER_CMD_GRANT_SET, "paddock", "alice", "nosuch", 1, 0).code,
                     ERR_NOTFOUND);
    /* revoking the last grant opens it again; the empty rule is forgotten */
    size_t n = ledger_rule_count(f->l);
    assert_int_equal(rule(f->l, LEDGER_CMD_GRANT_SET, "paddock", "alice", "batch", 0, 0).code, 0);
    assert_true(ledger_vc_granted(f->l, "batch", "bob"));
    assert_int_equal(ledger_rule_count(f->l), n - 1);
}

static void test_quotas_refuse_and_name_the_quota(void **state)
{
    struct fixture *f = *state;
    ledger_fx_vc_set(f->l, "default", 16, 0);
    /* tokens held at once: 5 for bob; a job needs 1 without a deadline */
    assert_int_equal(rule(f->l, LEDGER_CMD_QUOTA_SET, "paddock", "bob", "default", 5, 0).code, 0);
    struct ledger_result a = submit(f->l, "bob", "default", 0, 1000);
    assert_int_equal(a.code, 0);
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_TOKEN_REQUEST);
    c.job = a.value;
    c.count = 4;
    assert_int_equal(ledger_fx_apply(f->l, &c, 1100).value, 4);
    /* 4 held + a deadline job's MinEDF minimum (40 token-s in 12 s: 4 tokens) > 5 */
    size_t jobs = ledger_job_count(f->l);
    struct ledger_result r = submit(f->l, "bob", "default", 12, 1200);
    assert_int_equal(r.code, ERR_QUOTA);
    assert_int_equal(r.value, LEDGER_QUOTA_TOKENS);
    assert_int_equal(r.aux, 5);
    assert_string_equal(ledger_quota_name(r.value), "tokens held at once");
    assert_int_equal(ledger_job_count(f->l), jobs); /* nothing changed */
    /* 4 + 1 fits; alice has no quota */
    assert_int_equal(submit(f->l, "bob", "default", 0, 1300).code, 0);
    assert_int_equal(submit(f->l, "alice", "default", 30, 1300).code, 0);
    /* token-seconds per day, for every user ("*"): 100 token-s */
    assert_int_equal(rule(f->l, LEDGER_CMD_QUOTA_SET, "paddock", "*", "default", 0, 100000).code,
                     0);
    struct ledger_result x = submit(f->l, "carol", "default", 0, 2000);
    assert_int_equal(x.code, 0);
    assert_int_equal(end_job(f->l, "carol", x.value, LEDGER_JOB_DONE, 100000, 3000).code, 0);
    r = submit(f->l, "carol", "default", 0, 4000);
    assert_int_equal(r.code, ERR_QUOTA);
    assert_int_equal(r.value, LEDGER_QUOTA_TOKEN_S_DAY);
    assert_int_equal(r.aux, 100000);
    /* a day later the usage has aged out */
    assert_int_equal(submit(f->l, "carol", "default", 0, 3000 + LEDGER_DAY_MS + 1).code, 0);
}

/* Tokens held at once bind the grants too, not only admission: two jobs of bob that each want 4
 * get 3 together, the rest goes to alice. */
static void test_quota_caps_grants(void **state)
{
    struct fixture *f = *state;
    ledger_fx_vc_set(f->l, "default", 10, 0);
    assert_int_equal(rule(f->l, LEDGER_CMD_QUOTA_SET, "paddock", "bob", "default", 3, 0).code, 0);
    uint64_t b1 = submit(f->l, "bob", "default", 0, 1000).value;
    uint64_t b2 = submit(f->l, "bob", "default", 0, 1000).value;
    uint64_t a1 = submit(f->l, "alice", "default", 0, 1000).value;
    uint64_t ids[3] = {b1, b2, a1};
    for (int i = 0; i < 3; i++) {
        struct ledger_cmd c;
        ledger_cmd_init(&c, LEDGER_CMD_TOKEN_REQUEST);
        c.job = ids[i];
        c.count = i < 2 ? 4 : 7;
        ledger_fx_apply(f->l, &c, 1100);
    }
    uint32_t bob = ledger_job_find(f->l, b1)->tokens + ledger_job_find(f->l, b2)->tokens;
    assert_int_equal(bob, 3);
    assert_int_equal(ledger_job_find(f->l, a1)->tokens, 7);
    /* a quota changed binds at once: 2 */
    assert_int_equal(rule(f->l, LEDGER_CMD_QUOTA_SET, "paddock", "bob", "default", 2, 0).code, 0);
    bob = ledger_job_find(f->l, b1)->tokens + ledger_job_find(f->l, b2)->tokens;
    assert_int_equal(bob, 2);
    /* without the quota, bob's jobs get their asks back (alice asks less now) */
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_TOKEN_REQUEST);
    c.job = a1;
    c.count = 2;
    ledger_fx_apply(f->l, &c, 1200);
    assert_int_equal(rule(f->l, LEDGER_CMD_QUOTA_SET, "paddock", "bob", "default", 0, 0).code, 0);
    bob = ledger_job_find(f->l, b1)->tokens + ledger_job_find(f->l, b2)->tokens;
    assert_int_equal(bob, 8);
}

/* The day's token-seconds count what running jobs have held so far too. */
static void test_quota_counts_running_jobs(void **state)
{
    struct fixture *f = *state;
    ledger_fx_vc_set(f->l, "default", 8, 0);
    assert_int_equal(rule(f->l, LEDGER_CMD_QUOTA_SET, "paddock", "bob", "default", 0, 100000).code,
                     0);
    uint64_t b = submit(f->l, "bob", "default", 0, 1000).value;
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_TOKEN_REQUEST);
    c.job = b;
    c.count = 4;
    c.lease_ms = 0;
    ledger_fx_apply(f->l, &c, 1000);
    /* 4 tokens for 20 s: 80 token-s, under 100 */
    assert_int_equal(submit(f->l, "bob", "default", 0, 21000).code, 0);
    /* 10 s later the first job alone has held 4 x 30 s = 120 token-s: refused */
    struct ledger_result r = submit(f->l, "bob", "default", 0, 31000);
    assert_int_equal(r.code, ERR_QUOTA);
    assert_int_equal(r.value, LEDGER_QUOTA_TOKEN_S_DAY);
    const struct ledger_job *j = ledger_job_find(f->l, b);
    assert_true(j->held_ms >= 80000);
}

static void test_audit_and_usage(void **state)
{
    struct fixture *f = *state;
    ledger_fx_vc_set(f->l, "default", 8, 0);
    struct ledger_result a = submit(f->l, "alice", "default", 30, 1000);
    assert_int_equal(a.code, 0);
    const struct ledger_job *j = ledger_job_find(f->l, a.value);
    assert_true(j->price_milli > 0);
    assert_true(j->price_milli <= 40000); /* at most its work: slack >= 0 */
    uint64_t price = j->price_milli;
    assert_int_equal(end_job(f->l, "alice", a.value, LEDGER_JOB_CANCELLED, 0, 2000).code, 0);
    /* its JM's last word comes after the cancel: refused, but its usage is counted */
    struct ledger_cmd last;
    ledger_cmd_init(&last, LEDGER_CMD_JOB_END);
    last.job = a.value;
    last.state = LEDGER_JOB_CANCELLED;
    last.token_ms = 5000;
    assert_int_equal(ledger_fx_apply(f->l, &last, 2050).code, ERR_STATE);
    /* a JM's own end of a job that succeeded is not a command to audit */
    struct ledger_result b = submit(f->l, "bob", "default", 0, 2100);
    assert_int_equal(end_job(f->l, "bob", b.value, LEDGER_JOB_DONE, 7000, 2500).code, 0);
    assert_int_equal(rule(f->l, LEDGER_CMD_QUOTA_SET, "paddock", "bob", "default", 2, 0).code, 0);
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_AUDIT);
    snprintf(c.user, sizeof c.user, "bob");
    snprintf(c.name, sizeof c.name, "replica_remove");
    snprintf(c.address, sizeof c.address, "3");
    c.state = LEDGER_AUDIT_DENIED;
    c.text = "not an admin";
    c.text_len = 12;
    assert_int_equal(ledger_fx_apply(f->l, &c, 2600).code, 0);
    const char *want[][3] = {{"alice", "submit", ""},
                             {"alice", "cancel", ""},
                             {"bob", "submit", ""},
                             {"paddock", "quota", "bob"},
                             {"bob", "replica_remove", "3"}};
    assert_int_equal(ledger_audit_count(f->l), 5);
    for (size_t i = 0; i < 5; i++) {
        const struct ledger_audit *x = ledger_audit_at(f->l, i);
        assert_string_equal(x->who, want[i][0]);
        assert_string_equal(x->action, want[i][1]);
        if (want[i][2][0] != '\0')
            assert_string_equal(x->target, want[i][2]);
    }
    assert_int_equal(ledger_audit_at(f->l, 4)->code, ERR_DENIED);
    assert_string_equal(ledger_audit_at(f->l, 4)->detail, "not an admin");
    assert_int_equal(ledger_audit_at(f->l, 1)->at_ms, 2000);
    /* accounting: both finished jobs, with their token-seconds and price */
    assert_int_equal(ledger_usage_count(f->l), 2);
    const struct ledger_usage *u = ledger_usage_at(f->l, 0);
    assert_string_equal(u->user, "alice");
    assert_string_equal(u->vc, "default");
    assert_int_equal(u->token_ms, 5000);
    assert_int_equal(u->price_milli, price);
    assert_int_equal(u->state, LEDGER_JOB_CANCELLED);
    u = ledger_usage_at(f->l, 1);
    assert_string_equal(u->user, "bob");
    assert_int_equal(u->token_ms, 7000);
    assert_int_equal(u->price_milli, 0); /* no deadline, no price */
}

static void test_tighter_deadline_through_admission(void **state)
{
    struct fixture *f = *state;
    ledger_fx_vc_set(f->l, "default", 4, 0);
    struct ledger_result a = submit(f->l, "alice", "default", 100, 1000);
    assert_int_equal(a.code, 0);
    int64_t was = ledger_job_find(f->l, a.value)->deadline_ms;
    /* 5 s is shorter than its 10 s path: refused, with the earliest feasible finish (26.25 s
     * by the conservative bound), and the old deadline stays */
    struct ledger_result r = deadline(f->l, a.value, 5, 1000);
    assert_int_equal(r.code, ERR_ADMISSION);
    assert_int_equal(r.value, 26250);
    assert_int_equal(ledger_job_find(f->l, a.value)->deadline_ms, was);
    /* a feasible tighter one is admitted */
    assert_int_equal(deadline(f->l, a.value, 60, 1000).code, 0);
    assert_int_equal(ledger_job_find(f->l, a.value)->deadline_ms, 1000 + 60000);
    /* a second job, admitted with 35 s, runs first; tightening the first to 30 s would put
     * it first and make the second late (41.25 s): refused */
    struct ledger_result b = submit(f->l, "bob", "default", 35, 1000);
    assert_int_equal(b.code, 0);
    r = deadline(f->l, a.value, 30, 1000);
    assert_int_equal(r.code, ERR_ADMISSION);
    assert_int_equal(ledger_job_find(f->l, a.value)->deadline_ms, 1000 + 60000);
    /* looser always passes, as does none */
    assert_int_equal(deadline(f->l, a.value, 1000, 1000).code, 0);
    assert_int_equal(ledger_job_find(f->l, a.value)->deadline_ms, 1000 + 1000000);
    /* the audit trail says which was refused */
    size_t n = ledger_audit_count(f->l);
    assert_true(n >= 5);
    assert_int_equal(ledger_audit_at(f->l, n - 2)->code, ERR_ADMISSION);
    assert_int_equal(ledger_audit_at(f->l, n - 1)->code, 0);
}

static void test_snapshot_and_entries(void **state)
{
    struct fixture *f = *state;
    ledger_fx_vc_set(f->l, "default", 8, 0);
    struct ledger_result a = submit(f->l, "alice", "default", 30, 1000);
    assert_int_equal(rule(f->l, LEDGER_CMD_GRANT_SET, "paddock", "alice", "default", 1, 0).code, 0);
    assert_int_equal(rule(f->l, LEDGER_CMD_QUOTA_SET, "paddock", "*", "default", 6, 9000).code, 0);
    assert_int_equal(rule(f->l, LEDGER_CMD_ROLE_SET, "paddock", "carol", "", 2, 0).code, 0);
    assert_int_equal(end_job(f->l, "alice", a.value, LEDGER_JOB_CANCELLED, 1234, 2000).code, 0);
    struct enc_buf x, y;
    enc_buf_init(&x);
    ledger_snapshot(f->l, &x);
    char msg[160];
    ledger_t *r = NULL;
    assert_int_equal(ledger_restore(x.data, x.len, &r, msg, sizeof msg), 0);
    enc_buf_init(&y);
    ledger_snapshot(r, &y);
    assert_int_equal(x.len, y.len);
    assert_memory_equal(x.data, y.data, x.len);
    assert_int_equal(ledger_user_role(r, "carol"), LEDGER_ROLE_ADMIN);
    assert_false(ledger_vc_granted(r, "default", "bob"));
    assert_int_equal(ledger_audit_count(r), ledger_audit_count(f->l));
    assert_int_equal(ledger_usage_at(r, 0)->token_ms, 1234);
    assert_string_equal(ledger_job_find(r, a.value)->user, "alice");
    /* every truncation of the snapshot is refused, never read past */
    for (size_t cut = x.len - 8; cut > x.len - 400 && cut > 0; cut -= 7) {
        ledger_t *t = NULL;
        assert_int_not_equal(ledger_restore(x.data, cut, &t, msg, sizeof msg), 0);
        assert_null(t);
    }
    ledger_destroy(&r);
    enc_buf_close(&x);
    enc_buf_close(&y);

    /* a log entry carries who asked and the new commands */
    struct ledger_cmd cmds[3];
    ledger_cmd_init(&cmds[0], LEDGER_CMD_QUOTA_SET);
    snprintf(cmds[0].user, sizeof cmds[0].user, "paddock");
    snprintf(cmds[0].name, sizeof cmds[0].name, "bob");
    snprintf(cmds[0].vc, sizeof cmds[0].vc, "default");
    cmds[0].count = 3;
    cmds[0].token_ms = 77;
    ledger_cmd_init(&cmds[1], LEDGER_CMD_JOB_DEADLINE);
    snprintf(cmds[1].user, sizeof cmds[1].user, "alice");
    cmds[1].job = 9;
    cmds[1].deadline_ms = 5;
    cmds[1].k_milli = 1500;
    ledger_cmd_init(&cmds[2], LEDGER_CMD_AUDIT);
    snprintf(cmds[2].name, sizeof cmds[2].name, "replica_add");
    snprintf(cmds[2].address, sizeof cmds[2].address, "4");
    cmds[2].text = "ok";
    cmds[2].text_len = 2;
    enc_buf_init(&x);
    ledger_cmd_encode(&x, cmds, 3, 77);
    struct ledger_cmd_iter it;
    struct ledger_cmd d;
    assert_int_equal(ledger_cmd_iter_init(&it, x.data, x.len, msg, sizeof msg), 0);
    assert_int_equal(ledger_cmd_next(&it, &d, msg, sizeof msg), 1);
    assert_string_equal(d.user, "paddock");
    assert_string_equal(d.name, "bob");
    assert_int_equal(d.count, 3);
    assert_int_equal(d.token_ms, 77);
    assert_int_equal(ledger_cmd_next(&it, &d, msg, sizeof msg), 1);
    assert_string_equal(d.user, "alice");
    assert_int_equal(d.k_milli, 1500);
    assert_int_equal(ledger_cmd_next(&it, &d, msg, sizeof msg), 1);
    assert_string_equal(d.address, "4");
    assert_int_equal(d.text_len, 2);
    assert_int_equal(ledger_cmd_next(&it, &d, msg, sizeof msg), 0);
    enc_buf_close(&x);

    /* a version 4 entry (before tenants): JOB_DEADLINE without k_milli, nobody named */
    enc_buf_init(&x);
    enc_u32(&x, 0x50444c45u);
    enc_u8(&x, 4);
    enc_i64(&x, 5);
    enc_u32(&x, 1);
    enc_u8(&x, LEDGER_CMD_JOB_DEADLINE);
    enc_u64(&x, 0);
    enc_u64(&x, 3);
    enc_i64(&x, 99);
    assert_int_equal(ledger_cmd_iter_init(&it, x.data, x.len, msg, sizeof msg), 0);
    assert_int_equal(ledger_cmd_next(&it, &d, msg, sizeof msg), 1);
    assert_int_equal(d.deadline_ms, 99);
    assert_int_equal(d.k_milli, 0);
    assert_string_equal(d.user, "");
    assert_int_equal(ledger_cmd_next(&it, &d, msg, sizeof msg), 0);
    enc_buf_close(&x);
    /* ... and a tenant command cannot hide in one */
    enc_buf_init(&x);
    enc_u32(&x, 0x50444c45u);
    enc_u8(&x, 4);
    enc_i64(&x, 5);
    enc_u32(&x, 1);
    enc_u8(&x, LEDGER_CMD_ROLE_SET);
    enc_u64(&x, 0);
    enc_str(&x, "bob");
    enc_u8(&x, 2);
    assert_int_equal(ledger_cmd_iter_init(&it, x.data, x.len, msg, sizeof msg), 0);
    assert_int_equal(ledger_cmd_next(&it, &d, msg, sizeof msg), ERR_PARSE);
    enc_buf_close(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_owner_roles_grants, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quotas_refuse_and_name_the_quota, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quota_caps_grants, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quota_counts_running_jobs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_audit_and_usage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tighter_deadline_through_admission, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_and_entries, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
