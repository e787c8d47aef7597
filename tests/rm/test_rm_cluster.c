/* test_rm_cluster.c - three real paddock-rm replicas on 127.0.0.1 (started with `paddock
 * cluster up`, CURVE on): a leader is elected; 1,000 token requests from 20 concurrent clients
 * are answered with grants whose sum never exceeds capacity; SIGKILL of the leader gives a new
 * leader within 1 s with the ledger intact; the killed replica restarts and catches up; and
 * `paddock rm status --json` reports all of it. The test stops exactly the daemons it started
 * (`paddock cluster down` reads their pid files), also when an assertion fails. */
#include "common/clock.h"
#include "common/err.h"
#include "rm/rmclient.h"
#include "tests/rm/rm_harness.h"

#include <czmq.h>
#include <jansson.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define CLIENTS     20
#define REQUESTS    50 /* per client: 1,000 in all */
#define CAPACITY    50
#define MAX_ASK     8
#define FAILOVER_MS 1000

struct grant {
    uint64_t index;
    int job;
    uint32_t granted;
    uint32_t asked;
};

static json_t *g_tokens_before_kill;
static uint64_t g_killed_id;
static uint64_t g_commit_after_failover;

static int group_setup(void **state)
{
    (void)state;
    if (rm_harness_init("rmtest") != 0)
        return -1;
    /* czmq's global set-up is not safe to race: do it here, before the client threads */
    zsys_init();
    if (rm_harness_cluster("up --rm 3 --pn 0 --tokens %d", CAPACITY) != 0) {
        fprintf(stderr, "cluster up failed\n");
        return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    rm_harness_fini();
    json_decref(g_tokens_before_kill);
    return 0;
}

static json_t *rm_status(void)
{
    return rm_harness_json("rm status --cluster %s --json", rm_harness_dir());
}

/* `paddock rm status --json` once every replica answers (bounded: replicas that just started
 * may be slow to answer on a loaded machine). */
static json_t *rm_status_all(void)
{
    uint64_t end = clock_mono_ms() + 10000;
    json_t *st = NULL;
    while (clock_mono_ms() < end) {
        json_decref(st);
        st = rm_status();
        bool all = st != NULL && json_is_integer(json_object_get(st, "leader"));
        size_t i;
        json_t *r;
        json_array_foreach(json_object_get(st, "replicas"), i, r) all =
            all && json_is_integer(json_object_get(r, "term"));
        if (all)
            break;
        usleep(50 * 1000);
    }
    return st;
}

static void test_leader_elected(void **state)
{
    (void)state;
    json_t *st = rm_status_all();
    assert_non_null(st);
    assert_true(json_is_integer(json_object_get(st, "leader")));
    json_t *reps = json_object_get(st, "replicas");
    assert_int_equal(json_array_size(reps), 3);
    int leaders = 0;
    size_t i;
    json_t *r;
    json_array_foreach(reps, i, r)
    {
        const char *role = json_string_value(json_object_get(r, "role"));
        assert_non_null(role);
        leaders += strcmp(role, "leader") == 0;
        assert_true(json_is_integer(json_object_get(r, "term")));
        assert_true(json_is_integer(json_object_get(r, "commit_index")));
        assert_non_null(json_string_value(json_object_get(r, "address")));
    }
    assert_int_equal(leaders, 1);
    /* a write sent to a follower is answered with the leader's API endpoint */
    json_int_t lid = json_integer_value(json_object_get(st, "leader"));
    const char *leader_api = NULL;
    size_t follower = 0;
    json_array_foreach(reps, i, r)
    {
        if (json_integer_value(json_object_get(r, "id")) == lid)
            leader_api = json_string_value(json_object_get(r, "api"));
        else
            follower = i;
    }
    assert_non_null(leader_api);
    char msg[256];
    rmclient_t *c = NULL;
    assert_int_equal(rmclient_open(&c, rm_harness_dir(), NULL, NULL, msg, sizeof msg), 0);
    proto_msg_t req, rep;
    proto_msg_init(&req, PROTO_JOB_REGISTER);
    req.job_register.key = "to-a-follower";
    req.job_register.name = "x";
    req.job_register.virtual_cluster = "default";
    assert_int_equal(rmclient_call_at(c, follower, &req, &rep, 2000, msg, sizeof msg), 0);
    assert_int_equal(rep.type, PROTO_ERROR);
    assert_int_equal(rep.error.code, ERR_NOTLEADER);
    assert_string_equal(rep.error.leader_endpoint, leader_api);
    assert_int_equal(rep.error.leader_id, lid);
    proto_msg_close(&rep);
    rmclient_destroy(&c);
    json_decref(st);
}

struct client {
    int idx;
    char job_id[32];
    struct grant grants[REQUESTS];
    int ngrants;
    int failures;
    char why[256];
};

static void *client_main(void *arg)
{
    struct client *c = arg;
    rmclient_t *rc = NULL;
    if (rmclient_open(&rc, rm_harness_dir(), NULL, NULL, c->why, sizeof c->why) != 0) {
        c->failures++;
        return NULL;
    }
    proto_msg_t req, rep;
    char key[64];
    proto_msg_init(&req, PROTO_JOB_REGISTER);
    rmclient_new_key(key, sizeof key);
    char name[32];
    snprintf(name, sizeof name, "client-%d", c->idx);
    req.job_register.key = key;
    req.job_register.name = name;
    req.job_register.virtual_cluster = "default";
    if (rmclient_call(rc, &req, &rep, 1000, 10000, c->why, sizeof c->why) != 0 ||
        rep.type != PROTO_JOB_REGISTER_REPLY || rep.job_register_reply.code != 0) {
        c->failures++;
        proto_msg_close(&rep);
        rmclient_destroy(&rc);
        return NULL;
    }
    snprintf(c->job_id, sizeof c->job_id, "%s", rep.job_register_reply.job_id);
    proto_msg_close(&rep);
    uint32_t seed = (uint32_t)c->idx * 2654435761u + 1;
    for (int k = 0; k < REQUESTS; k++) {
        seed = seed * 1103515245u + 12345u;
        uint32_t ask = (seed >> 16) % (MAX_ASK + 1);
        proto_msg_init(&req, PROTO_TOKEN_REQUEST);
        rmclient_new_key(key, sizeof key);
        req.token_request.key = key;
        req.token_request.job_id = c->job_id;
        req.token_request.tokens = ask;
        if (rmclient_call(rc, &req, &rep, 1000, 10000, c->why, sizeof c->why) != 0) {
            c->failures++;
            continue;
        }
        if (rep.type != PROTO_TOKEN_GRANT || rep.token_grant.granted > ask ||
            strcmp(rep.token_grant.key, key) != 0) {
            snprintf(c->why, sizeof c->why, "unexpected reply %s", proto_type_name(rep.type));
            c->failures++;
        } else {
            struct grant *g = &c->grants[c->ngrants++];
            g->index = rep.token_grant.ledger_index;
            g->job = c->idx;
            g->granted = rep.token_grant.granted;
            g->asked = ask;
        }
        proto_msg_close(&rep);
    }
    rmclient_destroy(&rc);
    return NULL;
}

static int grant_cmp(const void *a, const void *b)
{
    const struct grant *x = a, *y = b;
    return x->index < y->index ? -1 : x->index > y->index;
}

static void test_concurrent_grants_within_capacity(void **state)
{
    (void)state;
    static struct client clients[CLIENTS];
    pthread_t th[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        memset(&clients[i], 0, sizeof clients[i]);
        clients[i].idx = i;
        assert_int_equal(pthread_create(&th[i], NULL, client_main, &clients[i]), 0);
    }
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(th[i], NULL);
    static struct grant all[CLIENTS * REQUESTS];
    size_t n = 0;
    for (int i = 0; i < CLIENTS; i++) {
        if (clients[i].failures != 0)
            fail_msg("client %d: %d failures (%s)", i, clients[i].failures, clients[i].why);
        memcpy(&all[n], clients[i].grants, (size_t)clients[i].ngrants * sizeof all[0]);
        n += (size_t)clients[i].ngrants;
    }
    assert_int_equal(n, CLIENTS * REQUESTS);
    /* the arbiter recomputes every grant at each entry, so a job's reply is its share at that
     * index; the others learn theirs on their next call. Each reply is within what was asked
     * and the capacity, and there was contention: some job got less than it asked for. */
    uint32_t last_ask[CLIENTS] = {0};
    bool contended = false;
    for (size_t i = 0; i < n; i++) {
        assert_true(all[i].granted <= CAPACITY);
        contended |= all[i].granted < all[i].asked;
    }
    qsort(all, n, sizeof all[0], grant_cmp);
    for (size_t i = 0; i < n; i++)
        last_ask[all[i].job] = all[i].asked; /* in commit order: the last one stands */
    assert_true(contended);
    /* the ledger agrees with the last grant of every job */
    json_t *tok = rm_harness_json("tokens --cluster %s --json", rm_harness_dir());
    assert_non_null(tok);
    json_t *vc = json_array_get(json_object_get(tok, "virtual_clusters"), 0);
    assert_string_equal(json_string_value(json_object_get(vc, "name")), "default");
    assert_int_equal(json_integer_value(json_object_get(vc, "capacity")), CAPACITY);
    uint64_t sum = 0;
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(vc, "jobs"), i, g)
    {
        const char *jid = json_string_value(json_object_get(g, "job_id"));
        for (int k = 0; k < CLIENTS; k++) {
            if (strcmp(clients[k].job_id, jid) == 0)
                assert_true(json_integer_value(json_object_get(g, "tokens")) <= last_ask[k]);
        }
        sum += (uint64_t)json_integer_value(json_object_get(g, "tokens"));
    }
    assert_int_equal(json_array_size(json_object_get(vc, "jobs")), CLIENTS);
    assert_int_equal(json_integer_value(json_object_get(vc, "granted")), sum);
    assert_true(sum <= CAPACITY);
    g_tokens_before_kill = tok;
}

static void test_leader_killed_new_leader_within_1s(void **state)
{
    (void)state;
    assert_non_null(g_tokens_before_kill);
    json_t *st = rm_status();
    assert_non_null(st);
    g_killed_id = (uint64_t)json_integer_value(json_object_get(st, "leader"));
    json_decref(st);
    assert_true(g_killed_id >= 1 && g_killed_id <= 3);
    pid_t pid = (pid_t)rm_harness_rm_pid(g_killed_id);
    assert_true(pid > 0);
    char msg[256];
    rmclient_t *c = NULL;
    assert_int_equal(rmclient_open(&c, rm_harness_dir(), NULL, NULL, msg, sizeof msg), 0);
    uint64_t t0 = clock_mono_ms();
    assert_int_equal(kill(pid, SIGKILL), 0);
    /* poll the two survivors until one is a leader serving writes (bounded) */
    int leader = -1;
    uint64_t t1 = 0;
    while (leader < 0 && clock_mono_ms() - t0 < 10000) {
        for (size_t i = 0; i < 3 && leader < 0; i++) {
            if (i + 1 == g_killed_id)
                continue;
            json_t *s = rm_harness_admin(c, (int)i, "rm_status", 100);
            if (s == NULL)
                continue;
            if (json_is_true(json_object_get(s, "ready"))) {
                leader = (int)i;
                t1 = clock_mono_ms();
            }
            json_decref(s);
        }
    }
    assert_true(leader >= 0);
    print_message("new leader %d after %llu ms\n", leader + 1, (unsigned long long)(t1 - t0));
    assert_true(t1 - t0 < FAILOVER_MS);
    /* the ledger is intact on the new leader */
    json_t *tok = rm_harness_json("tokens --cluster %s --json", rm_harness_dir());
    assert_non_null(tok);
    assert_true(json_equal(tok, g_tokens_before_kill));
    json_decref(tok);
    /* and it takes writes */
    proto_msg_t req, rep;
    char key[64];
    proto_msg_init(&req, PROTO_JOB_REGISTER);
    rmclient_new_key(key, sizeof key);
    req.job_register.key = key;
    req.job_register.name = "after-failover";
    req.job_register.virtual_cluster = "default";
    assert_int_equal(rmclient_call(c, &req, &rep, 500, 5000, msg, sizeof msg), 0);
    assert_int_equal(rep.type, PROTO_JOB_REGISTER_REPLY);
    assert_int_equal(rep.job_register_reply.code, 0);
    proto_msg_close(&rep);
    json_t *s = rm_harness_admin(c, leader, "rm_status", 1000);
    assert_non_null(s);
    g_commit_after_failover = (uint64_t)json_integer_value(json_object_get(s, "commit_index"));
    json_decref(s);
    rmclient_destroy(&c);
}

static void test_killed_replica_restarts_and_catches_up(void **state)
{
    (void)state;
    assert_true(g_killed_id != 0);
    assert_int_equal(rm_harness_cluster("up"), 0);
    /* poll `paddock rm status --json` until every replica answers with the same commit index,
     * at least the one reached after the failover (bounded) */
    json_t *st = NULL;
    bool done = false;
    uint64_t t0 = clock_mono_ms();
    while (!done && clock_mono_ms() - t0 < 15000) {
        json_decref(st);
        st = rm_status();
        if (st == NULL)
            continue;
        json_t *reps = json_object_get(st, "replicas");
        done = json_array_size(reps) == 3 && json_is_integer(json_object_get(st, "leader"));
        json_int_t commit = -1;
        size_t i;
        json_t *r;
        json_array_foreach(reps, i, r)
        {
            json_t *ci = json_object_get(r, "last_applied");
            if (!json_is_integer(ci) || (uint64_t)json_integer_value(ci) < g_commit_after_failover)
                done = false;
            else if (commit >= 0 && json_integer_value(ci) != commit)
                done = false;
            else
                commit = json_integer_value(ci);
        }
        if (!done)
            usleep(50 * 1000);
    }
    assert_true(done);
    json_t *reps = json_object_get(st, "replicas");
    json_t *back = json_array_get(reps, g_killed_id - 1);
    assert_int_equal(json_integer_value(json_object_get(back, "id")), g_killed_id);
    assert_string_equal(json_string_value(json_object_get(back, "role")), "follower");
    assert_int_equal(json_integer_value(json_object_get(back, "jobs")), CLIENTS + 1);
    json_decref(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leader_elected),
        cmocka_unit_test(test_concurrent_grants_within_capacity),
        cmocka_unit_test(test_leader_killed_new_leader_within_1s),
        cmocka_unit_test(test_killed_replica_restarts_and_catches_up),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
