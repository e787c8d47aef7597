/* test_rm_daemon.c - one real paddock-rm replica on 127.0.0.1 with CURVE and short timeouts:
 * an empty data directory needs --bootstrap and a locked one is refused; a node that stops
 * heartbeating becomes suspect, then down, through the log, and up again when it returns; the
 * view is published as snapshots and deltas with per-node age; bad requests are refused with a
 * reason and counted; clients with unknown keys or no keys get nothing; an unrenewed lease
 * gives its tokens back; a restart keeps everything committed. The test kills exactly the
 * pid it started. */
#include "common/clock.h"
#include "common/curve.h"
#include "common/err.h"
#include "common/mem.h"
#include "rm/rmclient.h"
#include "tests/rm/rm_harness.h"
#include "tests/rm/rm_replica.h"

#include <czmq.h>
#include <jansson.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static struct rm_replica g_rm;
static pid_t g_pid;

/* Waits (bounded) for a child to exit; returns its exit status or -1 if it still runs. */
static int wait_exit(pid_t pid, int ms)
{
    uint64_t end = clock_mono_ms() + (uint64_t)ms;
    while (clock_mono_ms() < end) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
        usleep(10 * 1000);
    }
    return -1;
}

static json_t *status(rmclient_t *c, const char *kind, const char *arg)
{
    char *text = NULL, msg[256];
    const char *args[1] = {arg};
    if (rmclient_admin(c, 0, kind, arg != NULL ? args : NULL, arg != NULL ? 1 : 0, 500, &text, msg,
                       sizeof msg) != 0)
        return NULL;
    json_t *doc = json_loads(text, 0, NULL);
    mem_free(text);
    return doc;
}

/* Registers a job of that name: asserts it is accepted. */
static void register_job(rmclient_t *c, const char *name)
{
    assert_int_equal(rm_harness_register_job(c, name), 0);
}

static bool wait_ready(rmclient_t *c)
{
    uint64_t end = clock_mono_ms() + 10000;
    while (clock_mono_ms() < end) {
        json_t *st = status(c, "rm_status", NULL);
        bool ready = json_is_true(json_object_get(st, "ready"));
        json_decref(st);
        if (ready)
            return true;
        usleep(20 * 1000);
    }
    return false;
}

static int group_setup(void **state)
{
    (void)state;
    zsys_handler_set(NULL);
    return rm_replica_setup(&g_rm, "rmd", "lease = 600ms\n",
                            "[liveness]\nsuspect_after = 300ms\ndown_after = 900ms\n"
                            "[view]\ndelta_interval = 50ms\nsnapshot_interval = 5s\n"
                            "[raft]\nsnapshot_threshold = 16\nsnapshot_trailing = 8\n");
}

static int group_teardown(void **state)
{
    (void)state;
    rm_harness_fini(); /* stops g_pid, the one child it was handed */
    g_pid = 0;
    return 0;
}

static void test_bootstrap_and_lock(void **state)
{
    (void)state;
    char log[512];
    snprintf(log, sizeof log, "%s/rm.log", g_rm.dir);
    /* an empty data directory without --bootstrap: refused */
    pid_t p = rm_replica_spawn(&g_rm, NULL, log);
    assert_int_equal(wait_exit(p, 10000), 1);
    char *boot[] = {"--bootstrap", NULL};
    g_pid = rm_replica_spawn(&g_rm, boot, log);
    rm_harness_child(g_pid);
    assert_true(g_pid > 0);
    rmclient_t *c = NULL;
    char msg[256];
    assert_int_equal(rmclient_open(&c, NULL, g_rm.api, g_rm.keys, msg, sizeof msg), 0);
    assert_true(wait_ready(c));
    rmclient_destroy(&c);
    /* a second replica on the same data directory: refused (flock) */
    p = rm_replica_spawn(&g_rm, NULL, log);
    assert_int_equal(wait_exit(p, 10000), 1);
    assert_int_equal(kill(g_pid, 0), 0);
}

static zsock_t *dealer(const char *keys, const char *server_key)
{
    zsock_t *z = rm_replica_dealer(&g_rm, keys, server_key);
    assert_non_null(z);
    return z;
}

static void send_msg(zsock_t *z, proto_msg_t *m)
{
    assert_int_equal(rm_replica_send(z, m), 0);
}

static bool recv_msg(zsock_t *z, proto_msg_t *m, int ms)
{
    zpoller_t *p = zpoller_new(z, NULL);
    bool got = zpoller_wait(p, ms) != NULL;
    zpoller_destroy(&p);
    if (!got)
        return false;
    zframe_t *f = zframe_recv(z);
    int rc = proto_decode(zframe_data(f), zframe_size(f), m, NULL, NULL, 0);
    zframe_destroy(&f);
    return rc == 0;
}

static void heartbeat(zsock_t *z, uint64_t seq)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_HEARTBEAT);
    m.heartbeat.name = "pn-x";
    m.heartbeat.rack = "r1";
    m.heartbeat.endpoint = "tcp://127.0.0.1:9";
    m.heartbeat.boot_id = 77;
    m.heartbeat.seq = seq;
    m.heartbeat.cpu = 4;
    m.heartbeat.mem_mb = 4096;
    m.heartbeat.running_regular = 2;
    m.heartbeat.timestamp_ms = clock_wall_ms();
    send_msg(z, &m);
}

static const char *node_state(rmclient_t *c, char *buf, size_t cap)
{
    json_t *n = status(c, "node", "pn-x");
    snprintf(buf, cap, "%s", n != NULL ? json_string_value(json_object_get(n, "state")) : "?");
    json_decref(n);
    return buf;
}

/* Heartbeats every 50 ms until `state` is reached or `ms` pass (0 beats: silence). */
static bool until_state(rmclient_t *c, zsock_t *z, bool beat, uint64_t *seq, const char *want,
                        int ms)
{
    char buf[32];
    uint64_t end = clock_mono_ms() + (uint64_t)ms;
    while (clock_mono_ms() < end) {
        if (beat)
            heartbeat(z, ++*seq);
        if (strcmp(node_state(c, buf, sizeof buf), want) == 0)
            return true;
        usleep(50 * 1000);
    }
    return false;
}

static void test_liveness_and_view(void **state)
{
    (void)state;
    char msg[256];
    rmclient_t *c = NULL;
    assert_int_equal(rmclient_open(&c, NULL, g_rm.api, g_rm.keys, msg, sizeof msg), 0);
    proto_msg_t req, rep;
    proto_msg_init(&req, PROTO_NODE_REGISTER);
    req.node_register.key = "reg-1";
    req.node_register.name = "pn-x";
    req.node_register.rack = "r1";
    req.node_register.endpoint = "tcp://127.0.0.1:9";
    req.node_register.boot_id = 77;
    req.node_register.cpu = 4;
    req.node_register.mem_mb = 4096;
    assert_int_equal(rmclient_call(c, &req, &rep, 1000, 5000, msg, sizeof msg), 0);
    assert_int_equal(rep.type, PROTO_NODE_REGISTER_ACK);
    assert_int_equal(rep.node_register_ack.verdict, PROTO_VERDICT_ACCEPTED);
    proto_msg_close(&rep);
    /* the view: subscribe before the heartbeats */
    zsock_t *sub = zsock_new(ZMQ_SUB);
    curve_t *cv = NULL;
    assert_int_equal(curve_load(&cv, g_rm.keys, CURVE_DEFAULT_NAME, NULL, msg, sizeof msg), 0);
    assert_int_equal(curve_apply(sub, cv, CURVE_CLIENT, NULL, msg, sizeof msg), 0);
    curve_destroy(&cv);
    zsock_set_subscribe(sub, "");
    zsock_connect(sub, "%s", g_rm.pub);
    zsock_t *hb = dealer(g_rm.keys, NULL);
    uint64_t seq = 0;
    assert_true(until_state(c, hb, true, &seq, "up", 3000));
    /* until this replica has heard a heartbeat (bounded) */
    json_t *n = NULL;
    for (uint64_t end = clock_mono_ms() + 3000; clock_mono_ms() < end;) {
        json_decref(n);
        heartbeat(hb, ++seq);
        n = status(c, "node", "pn-x");
        if (json_is_integer(json_object_get(n, "age_ms")))
            break;
        usleep(20 * 1000);
    }
    assert_true(json_is_integer(json_object_get(n, "age_ms")));
    assert_true(json_integer_value(json_object_get(n, "age_ms")) < 300);
    assert_int_equal(json_integer_value(json_object_get(n, "running")), 2);
    json_decref(n);
    bool delta = false;
    uint64_t end = clock_mono_ms() + 3000;
    while (!delta && clock_mono_ms() < end) {
        heartbeat(hb, ++seq);
        proto_msg_t m;
        if (!recv_msg(sub, &m, 100))
            continue;
        if (m.type == PROTO_VIEW_DELTA && m.view_delta.nchanged == 1) {
            assert_string_equal(m.view_delta.changed[0].name, "pn-x");
            /* the first deltas may carry the registration alone (never heard: seq 0) */
            if (m.view_delta.changed[0].seq > 0)
                delta = true;
        }
        proto_msg_close(&m);
    }
    assert_true(delta);
    /* A subscriber joining now gets the whole view at once, not at the next periodic snapshot
       (5 s away at most here) and not only as deltas naming what changed last. */
    zsock_t *sub2 = zsock_new(ZMQ_SUB);
    assert_int_equal(curve_load(&cv, g_rm.keys, CURVE_DEFAULT_NAME, NULL, msg, sizeof msg), 0);
    assert_int_equal(curve_apply(sub2, cv, CURVE_CLIENT, NULL, msg, sizeof msg), 0);
    curve_destroy(&cv);
    zsock_set_subscribe(sub2, "");
    uint64_t joined = clock_mono_ms();
    zsock_connect(sub2, "%s", g_rm.pub);
    bool snap = false;
    end = joined + 1000;
    while (!snap && clock_mono_ms() < end) {
        heartbeat(hb, ++seq);
        proto_msg_t m;
        if (!recv_msg(sub2, &m, 50))
            continue;
        if (m.type == PROTO_VIEW_SNAPSHOT) {
            assert_int_equal(m.view_snapshot.rm_id, 1);
            assert_int_equal(m.view_snapshot.nnodes, 1);
            assert_string_equal(m.view_snapshot.nodes[0].name, "pn-x");
            assert_true(m.view_snapshot.nodes[0].age_ms < 1000);
            snap = true;
        }
        proto_msg_close(&m);
    }
    fprintf(stderr, "a new subscriber's snapshot after %llu ms\n",
            (unsigned long long)(clock_mono_ms() - joined));
    assert_true(snap);
    zsock_destroy(&sub2);
    zsock_destroy(&sub);
    /* silence: suspect, then down, both through the log */
    assert_true(until_state(c, hb, false, &seq, "suspect", 3000));
    assert_true(until_state(c, hb, false, &seq, "down", 3000));
    assert_true(until_state(c, hb, true, &seq, "up", 3000));
    n = status(c, "node", "pn-x");
    assert_int_equal(json_integer_value(json_object_get(n, "down_count")), 1);
    assert_true(json_real_value(json_object_get(n, "psucc")) < 0.5);
    json_decref(n);
    /* a heartbeat from another boot is answered: register again */
    proto_msg_t m;
    proto_msg_init(&m, PROTO_HEARTBEAT);
    m.heartbeat.name = "pn-x";
    m.heartbeat.rack = "r1";
    m.heartbeat.endpoint = "tcp://127.0.0.1:9";
    m.heartbeat.boot_id = 78;
    m.heartbeat.seq = 1;
    m.heartbeat.cpu = 4;
    m.heartbeat.mem_mb = 4096;
    m.heartbeat.timestamp_ms = clock_wall_ms();
    send_msg(hb, &m);
    proto_msg_t r;
    assert_true(recv_msg(hb, &r, 2000));
    assert_int_equal(r.type, PROTO_ERROR);
    assert_int_equal(r.error.code, ERR_NOTFOUND);
    assert_int_equal(r.error.in_reply_to, PROTO_HEARTBEAT);
    proto_msg_close(&r);
    zsock_destroy(&hb);
    rmclient_destroy(&c);
}

static void test_bad_requests_refused_and_counted(void **state)
{
    (void)state;
    char msg[256];
    rmclient_t *c = NULL;
    assert_int_equal(rmclient_open(&c, NULL, g_rm.api, g_rm.keys, msg, sizeof msg), 0);
    json_t *st = status(c, "rm_status", NULL);
    json_int_t before =
        json_integer_value(json_object_get(json_object_get(st, "rejected"), "total"));
    json_decref(st);
    zsock_t *z = dealer(g_rm.keys, NULL);
    /* garbage bytes */
    assert_int_equal(zsock_send(z, "s", "\xc1 not msgpack"), 0);
    proto_msg_t r;
    assert_true(recv_msg(z, &r, 2000));
    assert_int_equal(r.type, PROTO_ERROR);
    assert_int_equal(r.error.code, ERR_PARSE);
    assert_true(strlen(r.error.text) > 0);
    proto_msg_close(&r);
    /* a token request for something that is not a job id */
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TOKEN_REQUEST);
    m.req_id = 9;
    m.token_request.key = "k1";
    m.token_request.job_id = "nope";
    m.token_request.tokens = 1;
    send_msg(z, &m);
    assert_true(recv_msg(z, &r, 2000));
    assert_int_equal(r.type, PROTO_ERROR);
    assert_int_equal(r.req_id, 9);
    assert_int_equal(r.error.code, ERR_INVAL);
    assert_non_null(strstr(r.error.text, "job"));
    proto_msg_close(&r);
    /* a type the RM does not serve */
    proto_msg_init(&m, PROTO_TASK_CANCEL);
    m.task_cancel.job_id = "j-000000000001";
    m.task_cancel.task_id = "t";
    send_msg(z, &m);
    assert_true(recv_msg(z, &r, 2000));
    assert_int_equal(r.error.code, ERR_UNKNOWN_TYPE);
    proto_msg_close(&r);
    /* an unknown admin query */
    char *json = NULL;
    assert_int_equal(rmclient_admin(c, 0, "frobnicate", NULL, 0, 1000, &json, msg, sizeof msg),
                     ERR_INVAL);
    assert_non_null(strstr(msg, "frobnicate"));
    st = status(c, "rm_status", NULL);
    json_t *rej = json_object_get(st, "rejected");
    assert_true(json_integer_value(json_object_get(rej, "total")) >= before + 4);
    assert_true(json_integer_value(json_object_get(rej, "decode")) >= 1);
    assert_true(json_integer_value(json_object_get(rej, "type")) >= 1);
    json_decref(st);
    zsock_destroy(&z);
    rmclient_destroy(&c);
}

/* Several admin queries sent at once (what `paddock submit` asks before it registers): each
 * answer goes to its own query, and a refused one leaves its slot empty, not its neighbours'. */
static void test_admin_many(void **state)
{
    (void)state;
    char msg[256];
    rmclient_t *c = NULL;
    assert_int_equal(rmclient_open(&c, NULL, g_rm.api, g_rm.keys, msg, sizeof msg), 0);
    const char *kinds[3] = {"nodes", "frobnicate", "tokens"};
    char *json[3];
    assert_int_equal(rmclient_admin_many(c, kinds, 3, 3000, json), 2);
    json_t *nodes = json_loads(json[0], 0, NULL), *tokens = json_loads(json[2], 0, NULL);
    assert_true(json_is_array(json_object_get(nodes, "nodes")));
    assert_null(json[1]);
    assert_true(json_is_array(json_object_get(tokens, "virtual_clusters")));
    assert_true(json_is_object(json_object_get(tokens, "largest_node")));
    json_decref(nodes);
    json_decref(tokens);
    mem_free(json[0]);
    mem_free(json[2]);
    /* more than a batch holds: nothing asked */
    const char *many[RMCLIENT_MAX_MANY + 1];
    char *out[RMCLIENT_MAX_MANY + 1];
    for (size_t i = 0; i <= RMCLIENT_MAX_MANY; i++)
        many[i] = "nodes";
    assert_int_equal(rmclient_admin_many(c, many, RMCLIENT_MAX_MANY + 1, 1000, out), 0);
    assert_null(out[0]);
    rmclient_destroy(&c);
}

/* `tokens brief`, what a submit asks: the virtual clusters and the largest node without the
 * active jobs' lines (~150 B each: a thousand jobs made every submit read 150 KB); anything
 * else after "tokens" is refused with the usage. */
static void test_tokens_brief(void **state)
{
    (void)state;
    char msg[256], *text = NULL;
    rmclient_t *c = NULL;
    assert_int_equal(rmclient_open(&c, NULL, g_rm.api, g_rm.keys, msg, sizeof msg), 0);
    json_t *full = status(c, "tokens", NULL);
    json_t *vc = json_array_get(json_object_get(full, "virtual_clusters"), 0);
    assert_true(json_is_array(json_object_get(vc, "jobs")));
    const char *brief[1] = {"brief"};
    assert_int_equal(rmclient_admin(c, 0, "tokens", brief, 1, 3000, &text, msg, sizeof msg), 0);
    json_t *b = json_loads(text, 0, NULL);
    mem_free(text);
    json_t *bvc = json_array_get(json_object_get(b, "virtual_clusters"), 0);
    assert_string_equal(json_string_value(json_object_get(bvc, "name")),
                        json_string_value(json_object_get(vc, "name")));
    assert_int_equal(json_integer_value(json_object_get(bvc, "capacity")),
                     json_integer_value(json_object_get(vc, "capacity")));
    assert_null(json_object_get(bvc, "jobs"));
    assert_true(json_is_object(json_object_get(b, "largest_node")));
    json_decref(b);
    json_decref(full);
    const char *bad[1] = {"everything"};
    assert_int_equal(rmclient_admin(c, 0, "tokens", bad, 1, 3000, &text, msg, sizeof msg),
                     ERR_INVAL);
    assert_non_null(strstr(msg, "usage: tokens [brief]"));
    rmclient_destroy(&c);
}

/* The most cores on one node, the most memory on another. */
static struct rm_replica_size page_node_size(int i)
{
    return (struct rm_replica_size){i == 1234 ? 48 : 2, i == 77 ? 777777 : 64};
}

/* Past about 10,000 nodes the whole "nodes" document outgrows a reply: the RM answers it in
 * pages ("nodes FROM COUNT", with "total" and "next") and `paddock nodes` joins them; the
 * tokens document carries the largest node's size. 2,050 nodes, pipelined registrations. */
static void test_nodes_in_pages(void **state)
{
    (void)state;
    enum { N = 2050 };
    zsock_t *z = dealer(g_rm.keys, NULL);
    zsock_set_sndhwm(z, 0);
    zsock_set_rcvhwm(z, 0);
    assert_int_equal(rm_replica_register_nodes_as(z, "pg", N, page_node_size, 10000), N);
    zsock_destroy(&z);

    char msg[256];
    rmclient_t *c = NULL;
    assert_int_equal(rmclient_open(&c, NULL, g_rm.api, g_rm.keys, msg, sizeof msg), 0);
    json_t *tok = status(c, "tokens", NULL);
    json_t *big = json_object_get(tok, "largest_node");
    assert_true(json_number_value(json_object_get(big, "cpus")) == 48);
    assert_int_equal(json_integer_value(json_object_get(big, "mem_mb")), 777777);
    json_decref(tok);
    /* pages: the slice, the total and where the next one starts; past the end, empty */
    char *text = NULL;
    const char *p1[2] = {"1000", "1000"};
    assert_int_equal(rmclient_admin(c, 0, "nodes", p1, 2, 3000, &text, msg, sizeof msg), 0);
    json_t *page = json_loads(text, 0, NULL);
    mem_free(text);
    size_t total = (size_t)json_integer_value(json_object_get(page, "total"));
    assert_true(total >= N);
    assert_int_equal(json_array_size(json_object_get(page, "nodes")), 1000);
    assert_int_equal(json_integer_value(json_object_get(page, "next")), 2000);
    json_decref(page);
    const char *last[2] = {"2000", "5000"};
    assert_int_equal(rmclient_admin(c, 0, "nodes", last, 2, 3000, &text, msg, sizeof msg), 0);
    page = json_loads(text, 0, NULL);
    mem_free(text);
    assert_int_equal(json_array_size(json_object_get(page, "nodes")), total - 2000);
    assert_true(json_is_null(json_object_get(page, "next")));
    json_decref(page);
    /* refused with the usage: not decimal, a count of 0 or above the page limit, one argument */
    const char *bad[4][2] = {{"x", "10"}, {"0", "0"}, {"0", "5001"}, {"0", NULL}};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(rmclient_admin(c, 0, "nodes", bad[i], bad[i][1] != NULL ? 2 : 1, 3000,
                                        &text, msg, sizeof msg),
                         ERR_INVAL);
        assert_non_null(strstr(msg, "usage: nodes [FROM COUNT]"));
    }
    /* jobs likewise: three registered, two pages of two */
    for (int i = 0; i < 3; i++)
        register_job(c, "paged");
    const char *j0[2] = {"0", "2"};
    assert_int_equal(rmclient_admin(c, 0, "jobs", j0, 2, 3000, &text, msg, sizeof msg), 0);
    page = json_loads(text, 0, NULL);
    mem_free(text);
    size_t jobs = (size_t)json_integer_value(json_object_get(page, "total"));
    assert_true(jobs >= 3);
    assert_int_equal(json_array_size(json_object_get(page, "jobs")), 2);
    assert_int_equal(json_integer_value(json_object_get(page, "next")), 2);
    json_decref(page);
    assert_int_equal(rmclient_admin(c, 0, "jobs", bad[1], 2, 3000, &text, msg, sizeof msg),
                     ERR_INVAL);
    assert_non_null(strstr(msg, "jobs [FROM COUNT]"));
    json_t *alljobs = rm_harness_json("jobs --rm %s --keys %s --json", g_rm.api, g_rm.keys);
    assert_int_equal(json_array_size(json_object_get(alljobs, "jobs")), jobs);
    json_decref(alljobs);
    rmclient_destroy(&c);
    /* `paddock nodes` joins the pages: every node once */
    json_t *all = rm_harness_json("nodes --rm %s --keys %s --json", g_rm.api, g_rm.keys);
    assert_non_null(all);
    json_t *list = json_object_get(all, "nodes"), *n;
    assert_int_equal(json_array_size(list), total);
    assert_int_equal(json_integer_value(json_object_get(all, "total")), total);
    json_t *seen = json_object();
    size_t i;
    json_array_foreach(list, i, n)
    {
        json_object_set(seen, json_string_value(json_object_get(n, "name")), json_true());
    }
    assert_int_equal(json_object_size(seen), total);
    assert_non_null(json_object_get(seen, "pg-2049"));
    json_decref(seen);
    json_decref(all);
}

static void test_unknown_clients_get_nothing(void **state)
{
    (void)state;
    char msg[256], other[600], server_key[64];
    snprintf(other, sizeof other, "%s/other-keys", g_rm.dir);
    assert_int_equal(curve_keygen(other, CURVE_DEFAULT_NAME, false, msg, sizeof msg), 0);
    curve_t *cv = NULL;
    assert_int_equal(curve_load(&cv, g_rm.keys, CURVE_DEFAULT_NAME, NULL, msg, sizeof msg), 0);
    snprintf(server_key, sizeof server_key, "%s", curve_public_key(cv));
    curve_destroy(&cv);
    zsock_t *stranger = dealer(other, server_key); /* valid CURVE, key not allow-listed */
    zsock_t *plain = dealer(NULL, NULL);           /* no CURVE at all */
    proto_msg_t q, r;
    proto_msg_init(&q, PROTO_ADMIN_QUERY);
    q.admin_query.kind = "rm_status";
    send_msg(stranger, &q);
    send_msg(plain, &q);
    assert_false(recv_msg(stranger, &r, 700));
    assert_false(recv_msg(plain, &r, 300));
    zsock_destroy(&stranger);
    zsock_destroy(&plain);
}

static void test_lease_expiry_and_restart(void **state)
{
    (void)state;
    char msg[256], key[64];
    rmclient_t *c = NULL;
    assert_int_equal(rmclient_open(&c, NULL, g_rm.api, g_rm.keys, msg, sizeof msg), 0);
    proto_msg_t req, rep;
    proto_msg_init(&req, PROTO_JOB_REGISTER);
    rmclient_new_key(key, sizeof key);
    req.job_register.key = key;
    req.job_register.name = "silent";
    req.job_register.virtual_cluster = "default";
    assert_int_equal(rmclient_call(c, &req, &rep, 1000, 5000, msg, sizeof msg), 0);
    char jid[32];
    snprintf(jid, sizeof jid, "%s", rep.job_register_reply.job_id);
    proto_msg_close(&rep);
    proto_msg_init(&req, PROTO_TOKEN_REQUEST);
    rmclient_new_key(key, sizeof key);
    req.token_request.key = key;
    req.token_request.job_id = jid;
    req.token_request.tokens = 4;
    assert_int_equal(rmclient_call(c, &req, &rep, 1000, 5000, msg, sizeof msg), 0);
    assert_int_equal(rep.type, PROTO_TOKEN_GRANT);
    assert_int_equal(rep.token_grant.granted, 4);
    assert_int_equal(rep.token_grant.lease_ms, 600);
    proto_msg_close(&rep);
    /* the same key again: the first outcome, not a second grant */
    assert_int_equal(rmclient_call(c, &req, &rep, 1000, 5000, msg, sizeof msg), 0);
    assert_int_equal(rep.token_grant.granted, 4);
    proto_msg_close(&rep);
    /* no renewal: expired, tokens back (bounded poll) */
    bool expired = false;
    uint64_t end = clock_mono_ms() + 5000;
    while (!expired && clock_mono_ms() < end) {
        json_t *j = status(c, "job", jid);
        expired =
            j != NULL && strcmp(json_string_value(json_object_get(j, "state")), "expired") == 0;
        json_decref(j);
        if (!expired)
            usleep(50 * 1000);
    }
    assert_true(expired);
    json_t *tok = status(c, "tokens", NULL);
    json_t *vc = json_array_get(json_object_get(tok, "virtual_clusters"), 0);
    assert_int_equal(json_integer_value(json_object_get(vc, "granted")), 0);
    json_decref(tok);
    /* enough entries for Raft snapshots (threshold 16), so the restart restores one from disk */
    for (int i = 0; i < 40; i++)
        register_job(c, "filler");
    json_t *st = status(c, "rm_status", NULL);
    assert_true(json_integer_value(json_object_get(json_object_get(st, "fsm"), "snapshots")) > 0);
    json_decref(st);
    json_t *before = status(c, "jobs", NULL);
    assert_non_null(before);
    rmclient_destroy(&c);
    /* restart: everything committed is still there */
    kill(g_pid, SIGTERM);
    assert_int_equal(wait_exit(g_pid, 10000), 0);
    char log[512];
    snprintf(log, sizeof log, "%s/rm.log", g_rm.dir);
    g_pid = rm_replica_spawn(&g_rm, NULL, log);
    rm_harness_child(g_pid);
    assert_int_equal(rmclient_open(&c, NULL, g_rm.api, g_rm.keys, msg, sizeof msg), 0);
    assert_true(wait_ready(c));
    json_t *after = status(c, "jobs", NULL);
    /* the same jobs with the same identities and history; the fillers' short leases may have
     * run out (and been reclaimed through the log) while the replica restarted */
    json_t *ja = json_object_get(after, "jobs"), *jb = json_object_get(before, "jobs");
    assert_int_equal(json_array_size(ja), json_array_size(jb));
    for (size_t k = 0; k < json_array_size(jb); k++) {
        json_t *x = json_array_get(jb, k), *y = json_array_get(ja, k);
        const char *keys[] = {"job_id", "name", "virtual_cluster", "submitted_ms", "lease_ms"};
        for (size_t f = 0; f < sizeof keys / sizeof keys[0]; f++)
            assert_true(json_equal(json_object_get(x, keys[f]), json_object_get(y, keys[f])));
        const char *sx = json_string_value(json_object_get(x, "state"));
        const char *sy = json_string_value(json_object_get(y, "state"));
        assert_true(strcmp(sx, sy) == 0 ||
                    (strcmp(sx, "active") == 0 && strcmp(sy, "expired") == 0));
        if (strcmp(json_string_value(json_object_get(x, "job_id")), jid) == 0)
            assert_string_equal(sy, "expired");
    }
    st = status(c, "rm_status", NULL);
    assert_true(json_integer_value(json_object_get(json_object_get(st, "fsm"), "restores")) > 0);
    json_decref(st);
    json_t *n = status(c, "node", "pn-x");
    assert_non_null(n);
    assert_int_equal(json_integer_value(json_object_get(n, "down_count")) >= 1, 1);
    json_decref(n);
    json_decref(before);
    json_decref(after);
    rmclient_destroy(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bootstrap_and_lock),
        cmocka_unit_test(test_liveness_and_view),
        cmocka_unit_test(test_bad_requests_refused_and_counted),
        cmocka_unit_test(test_admin_many),
        cmocka_unit_test(test_tokens_brief),
        cmocka_unit_test(test_nodes_in_pages),
        cmocka_unit_test(test_unknown_clients_get_nothing),
        cmocka_unit_test(test_lease_expiry_and_restart),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
