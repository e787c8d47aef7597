/* test_rm_catchup.c - a replica that was down while the others compacted their logs catches up
 * through Raft's InstallSnapshot over raft_uv's TCP transport: three replicas with a low
 * snapshot threshold, one follower stopped, 200 writes committed by the other two, the follower
 * restarted: it restores the leader's snapshot and its ledger answers exactly as the leader's.
 * The test stops exactly the daemons it started (pid files), also after a crash. */
#include "common/clock.h"
#include "rm/rmclient.h"
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
    if (rm_harness_init("rmcatch") != 0)
        return -1;
    zsys_init();
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    rm_harness_fini();
    return 0;
}

static json_t *admin(rmclient_t *c, int replica, const char *kind)
{
    return rm_harness_admin(c, replica, kind, 1000);
}

static void test_follower_catches_up_from_snapshot(void **state)
{
    (void)state;
    /* a cluster, then the same cluster with a low snapshot threshold */
    assert_int_equal(rm_harness_cluster("up --rm 3 --pn 0 --tokens 1000"), 0);
    assert_int_equal(rm_harness_cluster("down"), 0);
    for (int id = 1; id <= 3; id++) {
        char path[512];
        snprintf(path, sizeof path, "%s/rm-%d.conf", rm_harness_dir(), id);
        FILE *f = fopen(path, "a");
        assert_non_null(f);
        fputs("\n[raft]\nsnapshot_threshold = 32\nsnapshot_trailing = 16\n", f);
        fclose(f);
    }
    assert_int_equal(rm_harness_cluster("up"), 0);
    char msg[256];
    rmclient_t *c = NULL;
    assert_int_equal(rmclient_open(&c, rm_harness_dir(), NULL, NULL, msg, sizeof msg), 0);
    /* stop a follower */
    int follower = -1;
    for (int i = 0; i < 3 && follower < 0; i++) {
        json_t *st = admin(c, i, "rm_status");
        const char *role = json_string_value(json_object_get(st, "role"));
        if (role != NULL && strcmp(role, "follower") == 0)
            follower = i;
        json_decref(st);
    }
    assert_true(follower >= 0);
    long pid = rm_harness_rm_pid((uint64_t)follower + 1);
    assert_true(pid > 0);
    assert_int_equal(kill((pid_t)pid, SIGKILL), 0);
    /* 200 writes on the other two */
    char key[64], jid[32] = "";
    proto_msg_t req, rep;
    proto_msg_init(&req, PROTO_JOB_REGISTER);
    rmclient_new_key(key, sizeof key);
    req.job_register.key = key;
    req.job_register.name = "catchup";
    req.job_register.virtual_cluster = "default";
    assert_int_equal(rmclient_call(c, &req, &rep, 500, 10000, msg, sizeof msg), 0);
    snprintf(jid, sizeof jid, "%s", rep.job_register_reply.job_id);
    proto_msg_close(&rep);
    for (int i = 0; i < 200; i++) {
        proto_msg_init(&req, PROTO_TOKEN_REQUEST);
        rmclient_new_key(key, sizeof key);
        req.token_request.key = key;
        req.token_request.job_id = jid;
        req.token_request.tokens = (uint32_t)(i % 50);
        assert_int_equal(rmclient_call(c, &req, &rep, 500, 10000, msg, sizeof msg), 0);
        assert_int_equal(rep.type, PROTO_TOKEN_GRANT);
        proto_msg_close(&rep);
    }
    int leader = rmclient_leader(c);
    assert_true(leader >= 0 && leader != follower);
    json_t *lst = admin(c, leader, "rm_status");
    assert_true(json_integer_value(json_object_get(json_object_get(lst, "fsm"), "snapshots")) > 0);
    json_int_t commit = json_integer_value(json_object_get(lst, "commit_index"));
    json_decref(lst);
    /* restart it: it must install the leader's snapshot (the entries it missed are gone) */
    assert_int_equal(rm_harness_cluster("up"), 0);
    bool caught = false;
    json_t *st = NULL;
    for (uint64_t end = clock_mono_ms() + 15000; !caught && clock_mono_ms() < end;) {
        json_decref(st);
        st = admin(c, follower, "rm_status");
        caught = st != NULL && json_integer_value(json_object_get(st, "last_applied")) >= commit;
        if (!caught)
            usleep(50 * 1000);
    }
    assert_true(caught);
    assert_true(json_integer_value(json_object_get(json_object_get(st, "fsm"), "restores")) > 0);
    json_decref(st);
    json_t *a = admin(c, follower, "jobs"), *b = admin(c, leader, "jobs");
    assert_non_null(a);
    assert_true(json_equal(a, b));
    json_decref(a);
    json_decref(b);
    a = admin(c, follower, "tokens");
    b = admin(c, leader, "tokens");
    assert_true(json_equal(a, b));
    json_decref(a);
    json_decref(b);
    rmclient_destroy(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_follower_catches_up_from_snapshot),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
