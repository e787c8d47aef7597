/* test_rmlink.c - the asynchronous RM client on a libuv loop against three real replicas: a
 * chain of 100 token requests keeps succeeding while the leader is SIGKILLed halfway (redirects
 * and silent replicas handled, each callback exactly once, never from inside rmlink_call);
 * a link to nowhere times out; destroying a link cancels what is pending. Kills only the
 * daemons it started (pid files), also after a crash. */
#include "common/clock.h"
#include "common/curve.h"
#include "common/err.h"
#include "common/zuv.h"
#include "rm/rmclient.h"
#include "rm/rmlink.h"
#include "tests/rm/rm_harness.h"

#include <czmq.h>
#include <jansson.h>
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

static int group_setup(void **state)
{
    (void)state;
    if (rm_harness_init("rmlink") != 0)
        return -1;
    if (zuv_global_init() != 0)
        return -1;
    return rm_harness_cluster("up --rm 3 --pn 0 --tokens 100") == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    rm_harness_fini();
    return 0;
}

struct chain {
    rmlink_t *link;
    uv_loop_t *loop;
    char job[32];
    char key[64];
    int done, failed, calls;
    bool in_call;
    bool killed;
    int callbacks_inside_call;
    char why[160];
};

static void chain_next(struct chain *c);

static void on_grant(void *arg, int status, const proto_msg_t *rep)
{
    struct chain *c = arg;
    c->callbacks_inside_call += c->in_call;
    if (status != 0 || rep->type != PROTO_TOKEN_GRANT) {
        c->failed++;
        snprintf(c->why, sizeof c->why, "status %d type %d (%s)", status,
                 rep != NULL ? (int)rep->type : -1,
                 rep != NULL && rep->type == PROTO_ERROR ? rep->error.text : "");
        uv_stop(c->loop);
        return;
    }
    c->done++;
    if (c->done == 30 && !c->killed) {
        /* SIGKILL the leader halfway through */
        c->killed = true;
        char msg[256];
        rmclient_t *rc = NULL;
        if (rmclient_open(&rc, rm_harness_dir(), NULL, NULL, msg, sizeof msg) == 0) {
            for (int i = 0; i < 3; i++) {
                json_t *st = rm_harness_admin(rc, i, "rm_status", 500);
                const char *role = json_string_value(json_object_get(st, "role"));
                long pid = rm_harness_rm_pid((uint64_t)i + 1);
                if (role != NULL && strcmp(role, "leader") == 0 && pid > 0)
                    kill((pid_t)pid, SIGKILL);
                json_decref(st);
            }
            rmclient_destroy(&rc);
        }
    }
    if (c->done == 100) {
        uv_stop(c->loop);
        return;
    }
    chain_next(c);
}

static void chain_next(struct chain *c)
{
    proto_msg_t req;
    proto_msg_init(&req, PROTO_TOKEN_REQUEST);
    rmclient_new_key(c->key, sizeof c->key);
    req.token_request.key = c->key;
    req.token_request.job_id = c->job;
    req.token_request.tokens = (uint32_t)(c->done % 10);
    c->in_call = true;
    int rc = rmlink_call(c->link, &req, 300, 10000, on_grant, c);
    c->in_call = false;
    c->calls++;
    if (rc != 0) {
        c->failed++;
        uv_stop(c->loop);
    }
}

static void on_registered(void *arg, int status, const proto_msg_t *rep)
{
    struct chain *c = arg;
    c->callbacks_inside_call += c->in_call;
    if (status != 0 || rep->type != PROTO_JOB_REGISTER_REPLY || rep->job_register_reply.code != 0) {
        c->failed++;
        uv_stop(c->loop);
        return;
    }
    snprintf(c->job, sizeof c->job, "%s", rep->job_register_reply.job_id);
    chain_next(c);
}

static rmlink_t *open_link(uv_loop_t *loop)
{
    struct rmclient_cluster cl;
    char msg[256];
    assert_int_equal(rmclient_cluster_load(rm_harness_dir(), &cl, msg, sizeof msg), 0);
    curve_t *cv = NULL;
    assert_int_equal(curve_load(&cv, cl.keys_dir, cl.key_name, NULL, msg, sizeof msg), 0);
    rmlink_t *l = NULL;
    assert_int_equal(rmlink_new(&l, loop, (const char *const *)cl.api, cl.n, cv, msg, sizeof msg),
                     0);
    curve_destroy(&cv);
    rmclient_cluster_close(&cl);
    return l;
}

static void test_chain_survives_leader_kill(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct chain c;
    memset(&c, 0, sizeof c);
    c.loop = &loop;
    c.link = open_link(&loop);
    proto_msg_t req;
    proto_msg_init(&req, PROTO_JOB_REGISTER);
    rmclient_new_key(c.key, sizeof c.key);
    req.job_register.key = c.key;
    req.job_register.name = "linked";
    req.job_register.virtual_cluster = "default";
    c.in_call = true;
    assert_int_equal(rmlink_call(c.link, &req, 300, 10000, on_registered, &c), 0);
    c.in_call = false;
    uint64_t t0 = clock_mono_ms();
    uv_run(&loop, UV_RUN_DEFAULT);
    if (c.failed != 0)
        fail_msg("chain failed after %d grants: %s", c.done, c.why);
    assert_int_equal(c.done, 100);
    assert_true(c.killed);
    assert_int_equal(c.callbacks_inside_call, 0);
    assert_int_equal(rmlink_pending(c.link), 0);
    print_message("100 grants through a leader kill in %llu ms\n",
                  (unsigned long long)(clock_mono_ms() - t0));
    rmlink_destroy(&c.link);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

struct one {
    int calls;
    int status;
};

static void on_one(void *arg, int status, const proto_msg_t *rep)
{
    (void)rep;
    struct one *o = arg;
    o->calls++;
    o->status = status;
}

static void test_timeout_and_cancel(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    const char *nowhere[] = {"tcp://127.0.0.1:1"};
    char msg[256];
    rmlink_t *l = NULL;
    assert_int_equal(rmlink_new(&l, &loop, nowhere, 1, NULL, msg, sizeof msg), 0);
    proto_msg_t q;
    proto_msg_init(&q, PROTO_ADMIN_QUERY);
    q.admin_query.kind = "rm_status";
    struct one a = {0, 1}, b = {0, 1};
    assert_int_equal(rmlink_call(l, &q, 50, 200, on_one, &a), 0);
    assert_int_equal(a.calls, 0);
    /* the sockets keep the loop alive: turn it until the callback ran (bounded) */
    for (uint64_t end = clock_mono_ms() + 5000; a.calls == 0 && clock_mono_ms() < end;)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.status, ERR_TIMEOUT);
    assert_int_equal(rmlink_call(l, &q, 50, 10000, on_one, &b), 0);
    rmlink_destroy(&l);
    assert_int_equal(b.calls, 1);
    assert_int_equal(b.status, ERR_CANCELLED);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* A replica that answers with bytes that do not decode, then with a refusal: the garbage is
 * dropped and counted, the refusal reaches the callback. The "replica" is a ROUTER of the test's
 * own on loopback. */
static void test_undecodable_counted(void **state)
{
    (void)state;
    zsock_t *router = zsock_new_router("@tcp://127.0.0.1:*");
    assert_non_null(router);
    zsock_set_rcvtimeo(router, 5); /* the loop below turns both sides */
    const char *ep = zsock_endpoint(router);
    assert_non_null(ep);
    uv_loop_t loop;
    uv_loop_init(&loop);
    char msg[256];
    rmlink_t *l = NULL;
    assert_int_equal(rmlink_new(&l, &loop, &ep, 1, NULL, msg, sizeof msg), 0);
    proto_msg_t q;
    proto_msg_init(&q, PROTO_ADMIN_QUERY);
    q.admin_query.kind = "rm_status";
    struct one a = {0, 1};
    assert_int_equal(rmlink_call(l, &q, 5000, 8000, on_one, &a), 0);
    assert_int_equal(rmlink_dropped(l), 0);
    bool answered = false;
    for (uint64_t end = clock_mono_ms() + 6000; a.calls == 0 && clock_mono_ms() < end;) {
        uv_run(&loop, UV_RUN_NOWAIT);
        zmsg_t *in = zmsg_recv(router);
        if (in == NULL || answered) {
            zmsg_destroy(&in);
            continue;
        }
        assert_int_equal(zmsg_size(in), 2); /* routing id, request */
        zframe_t *id = zmsg_first(in), *body = zmsg_next(in);
        proto_msg_t req;
        assert_int_equal(proto_decode(zframe_data(body), zframe_size(body), &req, NULL, NULL, 0),
                         0);
        /* first garbage (a msgpack "never used" byte), then two frames where one is expected */
        static const uint8_t junk[] = {0xc1, 0x01, 0x02};
        assert_int_equal(zsock_send(router, "fb", id, junk, sizeof junk), 0);
        assert_int_equal(zsock_send(router, "fbb", id, junk, sizeof junk, junk, sizeof junk), 0);
        proto_msg_t err;
        proto_msg_error(&err, &req, ERR_INVAL, "refused by the test", NULL);
        proto_buf_t buf;
        proto_buf_init(&buf);
        assert_int_equal(proto_encode(&err, &buf, NULL, 0), 0);
        assert_int_equal(zsock_send(router, "fb", id, buf.data, buf.len), 0);
        proto_buf_close(&buf);
        proto_msg_close(&req);
        zmsg_destroy(&in);
        answered = true;
    }
    assert_true(answered);
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.status, 0); /* the refusal is an answer */
    assert_int_equal(rmlink_dropped(l), 2);
    rmlink_destroy(&l);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    zsock_destroy(&router);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_survives_leader_kill),
        cmocka_unit_test(test_timeout_and_cancel),
        cmocka_unit_test(test_undecodable_counted),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
