/* test_fsm_fixture.c - the ledger under Raft, driven deterministically by canonical/raft's
 * fixture (in-memory I/O, virtual time): grants never exceed capacity across interleavings of
 * clients, crashes and partitions (checked on every replica after every fixture event), leases
 * expire and are reclaimed through the log, a snapshot installed on a lagging follower restores
 * a state equal to the leader's, a partitioned minority cannot commit, and a leader change in
 * the middle of an arbiter decision changes nothing. */
#include "common/err.h"
#include "common/rng.h"
#include "rm/fsm.h"
#include "rm/ledger_cmd.h"
#include "rm/period.h"

#include <raft.h>
#include <raft/fixture.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define N_SERVERS 3
#define N_JOBS    6
#define CAPACITY  10

struct fixture {
    struct raft_fixture rf;
    fsm_t *fsm[N_SERVERS];
    unsigned long events;
    struct rng rng; /* the fixture's random choices (common/rng.h) */
};

static struct fixture *g_fixture;

/* Checked after every fixture event: every replica's ledger keeps its invariants. */
static void check_hook(struct raft_fixture *rf, struct raft_fixture_event *ev)
{
    (void)rf;
    (void)ev;
    g_fixture->events++;
    for (unsigned i = 0; i < N_SERVERS; i++) {
        char msg[160];
        if (ledger_check(fsm_ledger(g_fixture->fsm[i]), msg, sizeof msg) != 0)
            fail_msg("replica %u after event %lu: %s", i, g_fixture->events, msg);
    }
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    g_fixture = f;
    rng_seed(&f->rng, 1);
    assert_int_equal(raft_fixture_initialize(&f->rf), 0);
    for (unsigned i = 0; i < N_SERVERS; i++) {
        f->fsm[i] = fsm_new();
        assert_non_null(f->fsm[i]);
        assert_int_equal(raft_fixture_grow(&f->rf, fsm_raft(f->fsm[i])), 0);
    }
    struct raft_configuration conf;
    assert_int_equal(raft_fixture_configuration(&f->rf, N_SERVERS, &conf), 0);
    assert_int_equal(raft_fixture_bootstrap(&f->rf, &conf), 0);
    raft_configuration_close(&conf);
    assert_int_equal(raft_fixture_start(&f->rf), 0);
    raft_fixture_hook(&f->rf, check_hook);
    raft_fixture_elect(&f->rf, 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    raft_fixture_close(&f->rf);
    for (unsigned i = 0; i < N_SERVERS; i++)
        fsm_destroy(&f->fsm[i]);
    free(f);
    g_fixture = NULL;
    return 0;
}

static uint64_t next_rand(struct fixture *f)
{
    return rng_next(&f->rng);
}

struct submit {
    struct raft_apply req;
    int status;
    bool done;
};

static void apply_cb(struct raft_apply *req, int status, void *result)
{
    (void)result;
    struct submit *s = req->data;
    s->status = status;
    s->done = true;
}

/* Appends one entry holding `cmds` on server `i`, stamped with the fixture's time. Returns the
 * raft_apply return code; on 0 the submit completes later. */
static int submit(struct fixture *f, unsigned i, struct submit *s, const struct ledger_cmd *cmds,
                  size_t n)
{
    struct enc_buf b;
    enc_buf_init(&b);
    b.realloc_fn = raft_realloc;
    ledger_cmd_encode(&b, cmds, n, (int64_t)raft_fixture_time(&f->rf));
    size_t len = 0;
    struct raft_buffer buf;
    buf.base = enc_buf_take(&b, &len);
    buf.len = len;
    assert_non_null(buf.base);
    memset(s, 0, sizeof *s);
    s->req.data = s;
    int rc = raft_apply(raft_fixture_get(&f->rf, i), &s->req, &buf, 1, apply_cb);
    if (rc != 0)
        raft_free(buf.base);
    return rc;
}

static bool is_done(struct raft_fixture *rf, void *arg)
{
    (void)rf;
    return ((struct submit *)arg)->done;
}

/* Submits on the leader and steps until the entry is applied there; returns the status. */
static int commit(struct fixture *f, const struct ledger_cmd *cmds, size_t n)
{
    unsigned leader = raft_fixture_leader_index(&f->rf);
    assert_true(leader < N_SERVERS);
    struct submit s;
    assert_int_equal(submit(f, leader, &s, cmds, n), 0);
    assert_true(raft_fixture_step_until(&f->rf, is_done, &s, 5000));
    return s.status;
}

static void setup_jobs(struct fixture *f, uint64_t *jobs, int64_t lease)
{
    struct ledger_cmd c[1 + N_JOBS];
    ledger_cmd_init(&c[0], LEDGER_CMD_VC_SET);
    snprintf(c[0].vc, sizeof c[0].vc, "default");
    c[0].count = CAPACITY;
    for (int j = 0; j < N_JOBS; j++) {
        ledger_cmd_init(&c[1 + j], LEDGER_CMD_JOB_REGISTER);
        snprintf(c[1 + j].name, sizeof c[1 + j].name, "job-%d", j);
        snprintf(c[1 + j].vc, sizeof c[1 + j].vc, "default");
        c[1 + j].lease_ms = lease;
        c[1 + j].key = 100 + (uint64_t)j;
    }
    assert_int_equal(commit(f, c, 1 + N_JOBS), 0);
    ledger_t *l = fsm_ledger(f->fsm[raft_fixture_leader_index(&f->rf)]);
    for (int j = 0; j < N_JOBS; j++) {
        struct ledger_result r;
        assert_true(ledger_idem_lookup(l, 100 + (uint64_t)j, &r));
        assert_int_equal(r.code, 0);
        jobs[j] = r.value;
    }
}

static bool all_applied(struct raft_fixture *rf, void *arg)
{
    (void)arg;
    raft_index want = raft_last_index(raft_fixture_get(rf, raft_fixture_leader_index(rf)));
    for (unsigned i = 0; i < N_SERVERS; i++) {
        if (raft_fixture_alive(rf, i) && raft_last_applied(raft_fixture_get(rf, i)) < want)
            return false;
    }
    return true;
}

static void assert_replicas_equal(struct fixture *f)
{
    struct enc_buf want;
    enc_buf_init(&want);
    ledger_snapshot(fsm_ledger(f->fsm[0]), &want);
    for (unsigned i = 1; i < N_SERVERS; i++) {
        struct enc_buf got;
        enc_buf_init(&got);
        ledger_snapshot(fsm_ledger(f->fsm[i]), &got);
        assert_int_equal(got.len, want.len);
        assert_memory_equal(got.data, want.data, want.len);
        enc_buf_close(&got);
    }
    enc_buf_close(&want);
}

/* Many clients submit token requests of random sizes to whoever they think leads, while
 * followers crash and links drop; grants never exceed capacity on any replica at any step. */
static void test_grants_never_exceed_capacity(void **state)
{
    struct fixture *f = *state;
    uint64_t jobs[N_JOBS];
    setup_jobs(f, jobs, 60000);
    struct submit subs[64];
    int nsubs = 0, accepted = 0, refused = 0;
    for (int round = 0; round < 300; round++) {
        unsigned target = (unsigned)(next_rand(f) % N_SERVERS);
        struct ledger_cmd c[3];
        size_t n = 1 + next_rand(f) % 3;
        for (size_t k = 0; k < n; k++) {
            bool release = next_rand(f) % 4 == 0;
            ledger_cmd_init(&c[k], release ? LEDGER_CMD_TOKEN_RELEASE : LEDGER_CMD_TOKEN_REQUEST);
            c[k].job = jobs[next_rand(f) % N_JOBS];
            c[k].count = (uint32_t)(next_rand(f) % (CAPACITY + 3));
            c[k].key = 1000 + (uint64_t)round * 4 + k;
        }
        if (nsubs == 64) {
            raft_fixture_step_until_elapsed(&f->rf, 500);
            nsubs = 0;
        }
        if (submit(f, target, &subs[nsubs], c, n) == 0) {
            nsubs++;
            accepted++;
        } else {
            refused++; /* RAFT_NOTLEADER: a follower has no forwarding */
        }
        /* chaos: kill, revive, disconnect, reconnect a follower now and then */
        uint64_t chaos = next_rand(f) % 40;
        unsigned victim = (unsigned)(next_rand(f) % N_SERVERS);
        if (victim != raft_fixture_leader_index(&f->rf)) {
            if (chaos == 0 && raft_fixture_alive(&f->rf, victim))
                raft_fixture_kill(&f->rf, victim);
            else if (chaos == 1 && !raft_fixture_alive(&f->rf, victim))
                raft_fixture_revive(&f->rf, victim);
        }
        raft_fixture_step_n(&f->rf, 1 + (unsigned)(next_rand(f) % 20));
    }
    for (unsigned i = 0; i < N_SERVERS; i++) {
        if (!raft_fixture_alive(&f->rf, i))
            raft_fixture_revive(&f->rf, i);
    }
    assert_true(raft_fixture_step_until_has_leader(&f->rf, 10000));
    assert_true(raft_fixture_step_until(&f->rf, all_applied, NULL, 20000));
    assert_true(accepted > 50);
    assert_true(refused > 50);
    assert_replicas_equal(f);
    const struct ledger_vc *vc = ledger_vc_find(fsm_ledger(f->fsm[0]), "default");
    assert_true(vc->granted <= CAPACITY);
    assert_true(g_fixture->events > 1000);
}

/* A job that stops renewing loses its tokens through a TICK entry the leader appends once the
 * lease has passed; one that renews keeps them. */
static void test_leases_expire_and_reclaim(void **state)
{
    struct fixture *f = *state;
    uint64_t jobs[N_JOBS];
    setup_jobs(f, jobs, 2000);
    struct ledger_cmd c[2];
    ledger_cmd_init(&c[0], LEDGER_CMD_TOKEN_REQUEST);
    c[0].job = jobs[0];
    c[0].count = 4;
    ledger_cmd_init(&c[1], LEDGER_CMD_TOKEN_REQUEST);
    c[1].job = jobs[1];
    c[1].count = 5;
    assert_int_equal(commit(f, c, 2), 0);
    ledger_t *l = fsm_ledger(f->fsm[raft_fixture_leader_index(&f->rf)]);
    int64_t expiry = ledger_next_expiry(l);
    assert_true(expiry > (int64_t)raft_fixture_time(&f->rf));
    /* job 1 renews every 500 ms; job 0 stays silent */
    int ticks = 0;
    while ((int64_t)raft_fixture_time(&f->rf) < expiry + 2000) {
        raft_fixture_step_until_elapsed(&f->rf, 500);
        struct ledger_cmd r;
        ledger_cmd_init(&r, LEDGER_CMD_LEASE_RENEW);
        r.job = jobs[1];
        assert_int_equal(commit(f, &r, 1), 0);
        l = fsm_ledger(f->fsm[raft_fixture_leader_index(&f->rf)]);
        if (ledger_next_expiry(l) <= (int64_t)raft_fixture_time(&f->rf)) {
            struct ledger_cmd t;
            ledger_cmd_init(&t, LEDGER_CMD_TICK);
            assert_int_equal(commit(f, &t, 1), 0);
            ticks++;
        }
    }
    assert_true(ticks >= 1);
    assert_true(raft_fixture_step_until(&f->rf, all_applied, NULL, 5000));
    for (unsigned i = 0; i < N_SERVERS; i++) {
        l = fsm_ledger(f->fsm[i]);
        assert_int_equal(ledger_job_find(l, jobs[0])->state, LEDGER_JOB_EXPIRED);
        assert_int_equal(ledger_job_find(l, jobs[0])->tokens, 0);
        assert_int_equal(ledger_job_find(l, jobs[1])->tokens, 5);
        assert_int_equal(ledger_vc_find(l, "default")->granted, 5);
    }
    assert_replicas_equal(f);
}

/* A follower that misses many entries catches up from an InstallSnapshot: its restored ledger
 * equals the leader's, byte for byte. */
static void test_snapshot_install_restores_equal_state(void **state)
{
    struct fixture *f = *state;
    for (unsigned i = 0; i < N_SERVERS; i++) {
        raft_set_snapshot_threshold(raft_fixture_get(&f->rf, i), 8);
        raft_set_snapshot_trailing(raft_fixture_get(&f->rf, i), 2);
    }
    uint64_t jobs[N_JOBS];
    setup_jobs(f, jobs, 60000);
    raft_fixture_kill(&f->rf, 2);
    for (int k = 0; k < 40; k++) {
        struct ledger_cmd c;
        ledger_cmd_init(&c, LEDGER_CMD_TOKEN_REQUEST);
        c.job = jobs[k % N_JOBS];
        c.count = (uint32_t)(k % 4);
        assert_int_equal(commit(f, &c, 1), 0);
    }
    struct fsm_stats st;
    fsm_stats(f->fsm[0], &st);
    assert_true(st.snapshots > 0);
    raft_fixture_revive(&f->rf, 2);
    assert_true(raft_fixture_step_until(&f->rf, all_applied, NULL, 20000));
    fsm_stats(f->fsm[2], &st);
    assert_true(st.restores > 0);
    assert_replicas_equal(f);
}

static unsigned old_leader;

static bool majority_has_leader(struct raft_fixture *rf, void *arg)
{
    (void)arg;
    for (unsigned i = 0; i < N_SERVERS; i++) {
        if (i != old_leader && raft_state(raft_fixture_get(rf, i)) == RAFT_LEADER)
            return true;
    }
    return false;
}

/* The leader cut off from both followers cannot commit; the majority elects a new leader and
 * commits; after healing the old leader's uncommitted entry is gone and all replicas agree. */
/* Cuts server `old` off from the others (or heals the cut). */
static void partition(struct fixture *f, unsigned old, bool cut)
{
    for (unsigned i = 0; i < N_SERVERS; i++) {
        if (i == old)
            continue;
        if (cut) {
            raft_fixture_disconnect(&f->rf, old, i);
            raft_fixture_disconnect(&f->rf, i, old);
        } else {
            raft_fixture_reconnect(&f->rf, old, i);
            raft_fixture_reconnect(&f->rf, i, old);
        }
    }
}

/* Steps until the servers other than `old` elect a leader; returns its index. */
static unsigned elect_without(struct fixture *f, unsigned old)
{
    old_leader = old;
    assert_true(raft_fixture_step_until(&f->rf, majority_has_leader, NULL, 20000));
    unsigned now_leader = N_SERVERS;
    for (unsigned i = 0; i < N_SERVERS; i++) {
        if (i != old && raft_state(raft_fixture_get(&f->rf, i)) == RAFT_LEADER)
            now_leader = i;
    }
    assert_true(now_leader < N_SERVERS);
    return now_leader;
}

static void test_partitioned_minority_cannot_commit(void **state)
{
    struct fixture *f = *state;
    uint64_t jobs[N_JOBS];
    setup_jobs(f, jobs, 60000);
    assert_true(raft_fixture_step_until(&f->rf, all_applied, NULL, 5000));
    unsigned old = raft_fixture_leader_index(&f->rf);
    /* raft_fixture_elect parked the followers' timers; let them campaign again: the new value
     * is drawn when the next heartbeat resets their timers */
    for (unsigned i = 0; i < N_SERVERS; i++)
        raft_fixture_set_randomized_election_timeout(&f->rf, i, 1000 + 100 * i);
    raft_fixture_step_until_elapsed(&f->rf, 300);
    partition(f, old, true);
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_TOKEN_REQUEST);
    c.job = jobs[0];
    c.count = 7;
    c.key = 4242;
    struct submit s;
    assert_int_equal(submit(f, old, &s, &c, 1), 0);
    raft_fixture_step_until_elapsed(&f->rf, 3000);
    /* never applied on the minority side (the callback may report leadership lost) */
    assert_true(!s.done || s.status != 0);
    assert_false(ledger_idem_lookup(fsm_ledger(f->fsm[old]), 4242, NULL));
    assert_int_equal(ledger_job_find(fsm_ledger(f->fsm[old]), jobs[0])->tokens, 0);
    /* the majority elects a new leader and commits a different grant */
    unsigned now_leader = elect_without(f, old);
    struct submit s2;
    c.count = 3;
    c.key = 4343;
    assert_int_equal(submit(f, now_leader, &s2, &c, 1), 0);
    assert_true(raft_fixture_step_until(&f->rf, is_done, &s2, 5000));
    assert_int_equal(s2.status, 0);
    partition(f, old, false);
    assert_true(raft_fixture_step_until_has_leader(&f->rf, 10000));
    assert_true(raft_fixture_step_until(&f->rf, all_applied, NULL, 10000));
    for (unsigned i = 0; i < N_SERVERS; i++) {
        ledger_t *l = fsm_ledger(f->fsm[i]);
        assert_false(ledger_idem_lookup(l, 4242, NULL));
        assert_true(ledger_idem_lookup(l, 4343, NULL));
        assert_int_equal(ledger_job_find(l, jobs[0])->tokens, 3);
    }
    assert_replicas_equal(f);
}

/* The arbiter's scenario of test_leader_change_mid_decision: a 10-token cluster, a job without a
 * deadline wanting all 10, and a deadline job with a profile asking for 3 (width 6). */
static void arbiter_setup(struct ledger_cmd *c, size_t *n, int64_t now)
{
    ledger_cmd_init(&c[0], LEDGER_CMD_VC_SET);
    snprintf(c[0].vc, sizeof c[0].vc, "default");
    c[0].count = CAPACITY;
    for (int j = 0; j < 2; j++) {
        ledger_cmd_init(&c[1 + j], LEDGER_CMD_JOB_REGISTER);
        snprintf(c[1 + j].name, sizeof c[1 + j].name, j == 0 ? "flood" : "a");
        snprintf(c[1 + j].vc, sizeof c[1 + j].vc, "default");
        c[1 + j].key = 200 + (uint64_t)j;
        c[1 + j].lease_ms = 600000;
    }
    c[2].deadline_ms = now + 600000;
    c[2].flags = LEDGER_JOB_HAS_PROFILE;
    c[2].work_ms = 60000;
    c[2].path_ms = 10000;
    c[2].width = 6;
    for (int j = 0; j < 2; j++) {
        ledger_cmd_init(&c[3 + j], LEDGER_CMD_TOKEN_REQUEST);
        c[3 + j].job = 1 + (uint64_t)j;
        c[3 + j].count = j == 0 ? 10 : 3;
        c[3 + j].key = 210 + (uint64_t)j;
    }
    *n = 5;
}

/* The decision under test: job b, due earlier, registers and asks for 5 (its width): the
 * arbiter reclaims a's spare and the flood's share for it. One entry, two commands. */
static void arbiter_decision(struct ledger_cmd *c, int64_t now)
{
    ledger_cmd_init(&c[0], LEDGER_CMD_JOB_REGISTER);
    snprintf(c[0].name, sizeof c[0].name, "b");
    snprintf(c[0].vc, sizeof c[0].vc, "default");
    c[0].key = 300;
    c[0].lease_ms = 600000;
    c[0].deadline_ms = now + 300000;
    c[0].flags = LEDGER_JOB_HAS_PROFILE;
    c[0].work_ms = 40000;
    c[0].path_ms = 8000;
    c[0].width = 5;
    ledger_cmd_init(&c[1], LEDGER_CMD_TOKEN_REQUEST);
    c[1].job = 3;
    c[1].count = 5;
    c[1].key = 301;
}

/* A leader change in the middle of an arbiter decision changes nothing: the decision is cut
 * after `cut` fixture events (before, while or after it replicates), the old leader is
 * partitioned away, the client retries on the new leader with the same keys; every replica
 * ends with the grants a single ledger computes from the same commands, and b exists once. */
static void leader_change_at(unsigned cut)
{
    struct fixture *f = NULL;
    assert_int_equal(setup((void **)&f), 0);
    int64_t t0 = (int64_t)raft_fixture_time(&f->rf);
    struct ledger_cmd c[8];
    size_t n = 0;
    arbiter_setup(c, &n, t0);
    assert_int_equal(commit(f, c, n), 0);
    assert_true(raft_fixture_step_until(&f->rf, all_applied, NULL, 5000));
    unsigned old = raft_fixture_leader_index(&f->rf);
    for (unsigned i = 0; i < N_SERVERS; i++)
        raft_fixture_set_randomized_election_timeout(&f->rf, i, 1000 + 100 * i);
    raft_fixture_step_until_elapsed(&f->rf, 300);

    struct ledger_cmd d[2];
    arbiter_decision(d, t0);
    struct submit s;
    assert_int_equal(submit(f, old, &s, d, 2), 0);
    for (unsigned k = 0; k < cut; k++)
        raft_fixture_step(&f->rf);
    partition(f, old, true);
    unsigned now_leader = elect_without(f, old);
    struct submit s2;
    assert_int_equal(submit(f, now_leader, &s2, d, 2), 0); /* the client's retry */
    assert_true(raft_fixture_step_until(&f->rf, is_done, &s2, 5000));
    assert_int_equal(s2.status, 0);
    partition(f, old, false);
    assert_true(raft_fixture_step_until_has_leader(&f->rf, 10000));
    assert_true(raft_fixture_step_until(&f->rf, all_applied, NULL, 10000));
    assert_replicas_equal(f);

    /* the same commands in one ledger, without Raft */
    ledger_t *ref = ledger_new();
    assert_non_null(ref);
    for (size_t i = 0; i < n; i++)
        ledger_apply(ref, &c[i], t0, NULL);
    for (size_t i = 0; i < 2; i++)
        ledger_apply(ref, &d[i], t0, NULL);
    ledger_t *l = fsm_ledger(f->fsm[0]);
    assert_int_equal(ledger_job_count(l), 3);
    for (uint64_t id = 1; id <= 3; id++) {
        const struct ledger_job *x = ledger_job_find(l, id), *y = ledger_job_find(ref, id);
        assert_non_null(x);
        assert_int_equal(x->tokens, y->tokens);
        assert_int_equal(x->minimum, y->minimum);
    }
    /* b's minimum 5, a keeps its 3 and the 2 spare, the flood is shrunk to nothing */
    assert_int_equal(ledger_job_find(l, 3)->tokens, 5);
    assert_int_equal(ledger_job_find(l, 2)->tokens, 5);
    assert_int_equal(ledger_job_find(l, 2)->minimum, 3);
    assert_int_equal(ledger_job_find(l, 1)->tokens, 0);
    assert_int_equal(ledger_vc_find(l, "default")->spare_reclaims,
                     ledger_vc_find(ref, "default")->spare_reclaims);
    ledger_destroy(&ref);
    void *st = f;
    assert_int_equal(teardown(&st), 0);
}

static void test_leader_change_mid_decision(void **state)
{
    (void)state;
    for (unsigned cut = 0; cut <= 12; cut += 3)
        leader_change_at(cut);
}

/* A malformed entry is skipped identically by every replica and counted. */
static void test_malformed_entry_skipped(void **state)
{
    struct fixture *f = *state;
    unsigned leader = raft_fixture_leader_index(&f->rf);
    struct raft_buffer buf;
    buf.len = 16;
    buf.base = raft_malloc(buf.len);
    memset(buf.base, 0xee, buf.len);
    struct submit s;
    memset(&s, 0, sizeof s);
    s.req.data = &s;
    assert_int_equal(raft_apply(raft_fixture_get(&f->rf, leader), &s.req, &buf, 1, apply_cb), 0);
    assert_true(raft_fixture_step_until(&f->rf, is_done, &s, 5000));
    assert_true(raft_fixture_step_until(&f->rf, all_applied, NULL, 5000));
    for (unsigned i = 0; i < N_SERVERS; i++) {
        struct fsm_stats st;
        fsm_stats(f->fsm[i], &st);
        assert_int_equal(st.malformed, 1);
    }
    uint64_t jobs[N_JOBS];
    setup_jobs(f, jobs, 60000);
    assert_true(jobs[0] > 0);
}

/* Issue 13: each period the cluster starts exactly one run, across leader changes. The leader
 * proposes RECUR_FIRE for a due period and is cut off right after (the entry may or may not
 * have been replicated); the new leader, which cannot know, proposes the same period again.
 * Exactly one of the two fires is applied on every replica, the second JM of the run is refused,
 * and the replicas stay byte for byte equal. */
static void test_recurring_fires_once(void **state)
{
    struct fixture *f = *state;
    struct ledger_cmd c[2];
    ledger_cmd_init(&c[0], LEDGER_CMD_VC_SET);
    snprintf(c[0].vc, sizeof c[0].vc, "default");
    c[0].count = CAPACITY;
    ledger_cmd_init(&c[1], LEDGER_CMD_RECUR_ADD);
    snprintf(c[1].name, sizeof c[1].name, "etl");
    snprintf(c[1].vc, sizeof c[1].vc, "default");
    c[1].period_ms = 2000;
    c[1].deadline_ms = 1500;
    c[1].text = "{}";
    c[1].text_len = 2;
    c[1].key = 500;
    assert_int_equal(commit(f, c, 2), 0);
    assert_true(raft_fixture_step_until(&f->rf, all_applied, NULL, 5000));
    /* step into the next period, so that one is due */
    int64_t due = period_index((int64_t)raft_fixture_time(&f->rf), 2000, 0) + 1;
    while (period_index((int64_t)raft_fixture_time(&f->rf), 2000, 0) < due)
        raft_fixture_step_until_elapsed(&f->rf, 100);
    unsigned old = raft_fixture_leader_index(&f->rf);
    for (unsigned i = 0; i < N_SERVERS; i++)
        raft_fixture_set_randomized_election_timeout(&f->rf, i, 1000 + 100 * i);
    raft_fixture_step_until_elapsed(&f->rf, 300);
    struct ledger_cmd fire;
    ledger_cmd_init(&fire, LEDGER_CMD_RECUR_FIRE);
    snprintf(fire.name, sizeof fire.name, "etl");
    fire.period = due;
    fire.key = 501; /* the old leader's proposal */
    struct submit s1;
    assert_int_equal(submit(f, old, &s1, &fire, 1), 0);
    raft_fixture_step_n(&f->rf, 1 + (unsigned)(next_rand(f) % 3));
    partition(f, old, true);
    unsigned now_leader = elect_without(f, old);
    fire.key = 502; /* the new leader's, for the same period */
    struct submit s2;
    assert_int_equal(submit(f, now_leader, &s2, &fire, 1), 0);
    assert_true(raft_fixture_step_until(&f->rf, is_done, &s2, 5000));
    assert_int_equal(s2.status, 0);
    /* two JMs of the same run register: one is refused */
    struct ledger_cmd reg[2];
    for (int k = 0; k < 2; k++) {
        ledger_cmd_init(&reg[k], LEDGER_CMD_JOB_REGISTER);
        snprintf(reg[k].name, sizeof reg[k].name, "etl");
        snprintf(reg[k].vc, sizeof reg[k].vc, "default");
        snprintf(reg[k].recurring, sizeof reg[k].recurring, "etl");
        reg[k].period = due;
        reg[k].lease_ms = 60000;
        reg[k].key = 510 + (uint64_t)k;
    }
    struct submit s3;
    assert_int_equal(submit(f, now_leader, &s3, reg, 2), 0);
    assert_true(raft_fixture_step_until(&f->rf, is_done, &s3, 5000));
    partition(f, old, false);
    assert_true(raft_fixture_step_until_has_leader(&f->rf, 10000));
    assert_true(raft_fixture_step_until(&f->rf, all_applied, NULL, 10000));
    for (unsigned i = 0; i < N_SERVERS; i++) {
        ledger_t *l = fsm_ledger(f->fsm[i]);
        struct ledger_result a = {1, 0, 0}, b;
        bool had_a = ledger_idem_lookup(l, 501, &a);
        assert_true(ledger_idem_lookup(l, 502, &b));
        /* exactly one fire applied: the old leader's (then the new one's was refused) or the
         * new one's (the old entry was lost with its term) */
        assert_true((had_a && a.code == 0 && b.code == ERR_EXISTS) || (!had_a && b.code == 0) ||
                    (had_a && a.code != 0 && b.code == 0));
        const struct ledger_recurring *r = ledger_recurring_find(l, "etl");
        assert_int_equal(r->last_fired, due);
        assert_int_equal(r->pend_period, due);
        struct ledger_result r0, r1;
        assert_true(ledger_idem_lookup(l, 510, &r0));
        assert_true(ledger_idem_lookup(l, 511, &r1));
        assert_int_equal(r0.code, 0);
        assert_int_equal(r1.code, ERR_EXISTS);
        assert_int_equal(r->pend_job, r0.value);
    }
    assert_replicas_equal(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_grants_never_exceed_capacity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leases_expire_and_reclaim, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_install_restores_equal_state, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_partitioned_minority_cannot_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed_entry_skipped, setup, teardown),
        cmocka_unit_test(test_leader_change_mid_decision),
        cmocka_unit_test_setup_teardown(test_recurring_fires_once, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
