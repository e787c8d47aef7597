/* test_rm_membership.c - changing the replica set of a running cluster: three replicas up,
 * `paddock rm add` of a fourth under a new id (it starts with an empty data directory and
 * --join, catches up and becomes a voter), `paddock rm remove` of the leader itself, a leader
 * again and writes commit, `paddock rm status --json` shows the new configuration, and the
 * removed id is refused when added again; shrunk to one voter, removing it is refused, and so
 * is a change while another is in progress. The test stops exactly the daemons it started (pid
 * files), also after a crash. */
#include "common/clock.h"
#include "common/err.h"
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
    if (rm_harness_init("rmmember") != 0)
        return -1;
    zsys_init();
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    rm_harness_fini(); /* `cluster down`, then whatever it did not stop */
    return 0;
}

static json_t *admin(rmclient_t *c, int replica, const char *kind)
{
    return rm_harness_admin(c, replica, kind, 1000);
}

static json_int_t jint(json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

/* The index of replica `id` among the client's endpoints (cluster.conf order), or -1. */
static int index_of(rmclient_t *c, uint64_t id)
{
    for (size_t i = 0; i < rmclient_count(c); i++) {
        json_t *st = admin(c, (int)i, "rm_status");
        bool hit = st != NULL && (uint64_t)jint(st, "id") == id;
        json_decref(st);
        if (hit)
            return (int)i;
    }
    return -1;
}

/* Polls every replica until one is a ready leader; its status, or NULL after 15 s. */
static json_t *wait_leader(rmclient_t *c)
{
    return rm_harness_wait_leader(c, 15000);
}

static int register_job(rmclient_t *c, const char *name)
{
    char key[64], msg[256];
    proto_msg_t req, rep;
    proto_msg_init(&req, PROTO_JOB_REGISTER);
    rmclient_new_key(key, sizeof key);
    req.job_register.key = key;
    req.job_register.name = (char *)name;
    req.job_register.virtual_cluster = "default";
    int rc = rmclient_call(c, &req, &rep, 500, 10000, msg, sizeof msg);
    if (rc == 0 && rep.type != PROTO_JOB_REGISTER_REPLY)
        rc = ERR_STATE;
    if (rc == 0)
        proto_msg_close(&rep);
    return rc;
}

static bool conf_has(json_t *conf, uint64_t id, const char *role)
{
    size_t i;
    json_t *r;
    json_array_foreach(conf, i, r)
    {
        if ((uint64_t)jint(r, "id") == id)
            return role == NULL || strcmp(json_string_value(json_object_get(r, "role")), role) == 0;
    }
    return false;
}

static void test_add_catch_up_remove_leader(void **state)
{
    (void)state;
    char msg[256];
    assert_int_equal(rm_harness_cluster("up --rm 3 --pn 0 --tokens 100"), 0);
    rmclient_t *c = NULL;
    assert_int_equal(rmclient_open(&c, rm_harness_dir(), NULL, NULL, msg, sizeof msg), 0);
    for (int i = 0; i < 20; i++)
        assert_int_equal(register_job(c, "before"), 0);
    rmclient_destroy(&c);

    /* a fourth replica under a new id, from an empty data directory */
    int pr = rm_harness_free_port(), pa = rm_harness_free_port(), pp = rm_harness_free_port();
    assert_true(pr > 0 && pa > 0 && pp > 0);
    rm_harness_ports_release(); /* the new replica binds them */
    assert_int_equal(rm_harness_run("rm add 4 127.0.0.1:%d tcp://127.0.0.1:%d tcp://127.0.0.1:%d "
                                    "--dir %s --start",
                                    pr, pa, pp, rm_harness_dir()),
                     0);
    assert_true(rm_harness_rm_pid(4) > 0);
    /* cluster.conf now lists four replicas */
    assert_int_equal(rmclient_open(&c, rm_harness_dir(), NULL, NULL, msg, sizeof msg), 0);
    assert_int_equal(rmclient_count(c), 4);
    int four = index_of(c, 4);
    assert_true(four >= 0);
    /* it catches up: its commit index reaches the leader's */
    json_t *lst = wait_leader(c);
    assert_non_null(lst);
    json_int_t commit = jint(lst, "commit_index");
    uint64_t old_leader = (uint64_t)jint(lst, "id");
    assert_true(conf_has(json_object_get(lst, "configuration"), 4, "voter"));
    json_decref(lst);
    bool caught = false;
    json_t *st = NULL;
    for (uint64_t end = clock_mono_ms() + 15000; !caught && clock_mono_ms() < end;) {
        json_decref(st);
        st = admin(c, four, "rm_status");
        caught =
            st != NULL && jint(st, "commit_index") >= commit && jint(st, "last_applied") >= commit;
        if (!caught)
            usleep(50 * 1000);
    }
    assert_true(caught);
    json_decref(st);
    /* the leader's view of it: match_index reached what was committed before */
    lst = wait_leader(c);
    assert_non_null(lst);
    size_t k;
    json_t *r, *four_conf = NULL;
    json_array_foreach(json_object_get(lst, "configuration"), k, r)
    {
        if (jint(r, "id") == 4)
            four_conf = r;
    }
    assert_non_null(four_conf);
    assert_true(jint(four_conf, "match_index") >= commit);
    json_decref(lst);
    json_t *a = admin(c, four, "jobs"), *b = admin(c, index_of(c, old_leader), "jobs");
    assert_non_null(a);
    assert_int_equal(json_array_size(json_object_get(a, "jobs")), 20);
    assert_true(json_equal(a, b));
    json_decref(a);
    json_decref(b);
    rmclient_destroy(&c);

    /* remove the leader itself: it hands leadership over first */
    assert_int_equal(
        rm_harness_run("rm remove %llu --dir %s", (unsigned long long)old_leader, rm_harness_dir()),
        0);
    long pid = rm_harness_rm_pid(old_leader);
    assert_true(pid > 0);
    kill((pid_t)pid, SIGTERM); /* a removed replica is stopped (docs/deploy.md) */
    assert_int_equal(rmclient_open(&c, rm_harness_dir(), NULL, NULL, msg, sizeof msg), 0);
    assert_int_equal(rmclient_count(c), 3);
    lst = wait_leader(c);
    assert_non_null(lst);
    assert_true((uint64_t)jint(lst, "id") != old_leader);
    json_decref(lst);
    assert_int_equal(register_job(c, "after"), 0);

    /* rm status --json shows the configuration: three voters, the new one in, the old out */
    json_t *doc = rm_harness_json("rm status --cluster %s --json", rm_harness_dir());
    assert_non_null(doc);
    json_t *conf = json_object_get(doc, "configuration");
    assert_int_equal(json_array_size(conf), 3);
    assert_true(conf_has(conf, 4, "voter"));
    assert_false(conf_has(conf, old_leader, NULL));
    json_decref(doc);

    /* the removed id is refused, by the RM and by the CLI */
    char *text = NULL;
    char idtext[24], raft[64], api[64], pub[64];
    snprintf(idtext, sizeof idtext, "%llu", (unsigned long long)old_leader);
    snprintf(raft, sizeof raft, "127.0.0.1:%d", rm_harness_free_port());
    snprintf(api, sizeof api, "tcp://127.0.0.1:%d", rm_harness_free_port());
    snprintf(pub, sizeof pub, "tcp://127.0.0.1:%d", rm_harness_free_port());
    const char *args[5] = {idtext, raft, api, "", pub};
    assert_int_equal(rmclient_admin(c, -1, "replica_add", args, 5, 5000, &text, msg, sizeof msg),
                     ERR_EXISTS);
    assert_non_null(strstr(msg, "never reused"));
    assert_int_not_equal(
        rm_harness_run("rm add %s %s %s %s --cluster %s", idtext, raft, api, pub, rm_harness_dir()),
        0);
    /* an id never seen is not a member to remove */
    assert_int_not_equal(rm_harness_run("rm remove 9 --cluster %s", rm_harness_dir()), 0);
    rmclient_destroy(&c);

    /* shrink to one voter: removing the last one is refused */
    for (uint64_t id = 1; id <= 3; id++) {
        if (id == old_leader)
            continue;
        assert_int_equal(
            rm_harness_run("rm remove %llu --dir %s", (unsigned long long)id, rm_harness_dir()), 0);
        pid = rm_harness_rm_pid(id);
        assert_true(pid > 0);
        kill((pid_t)pid, SIGTERM);
    }
    assert_int_equal(rmclient_open(&c, rm_harness_dir(), NULL, NULL, msg, sizeof msg), 0);
    assert_int_equal(rmclient_count(c), 1);
    lst = wait_leader(c);
    assert_non_null(lst);
    assert_int_equal(jint(lst, "id"), 4);
    json_decref(lst);
    assert_int_equal(register_job(c, "alone"), 0);
    const char *four_arg[1] = {"4"};
    assert_int_equal(
        rmclient_admin(c, 0, "replica_remove", four_arg, 1, 5000, &text, msg, sizeof msg),
        ERR_STATE);
    assert_non_null(strstr(msg, "last voter"));
    /* a change while another is in progress: replica 5 is added but never started, so its
     * promotion waits for a catch-up that does not come */
    snprintf(raft, sizeof raft, "127.0.0.1:%d", rm_harness_free_port());
    const char *five[5] = {"5", raft, api, "", pub};
    assert_int_equal(rmclient_admin(c, 0, "replica_add", five, 5, 300, &text, msg, sizeof msg),
                     ERR_TIMEOUT);
    assert_int_equal(
        rmclient_admin(c, 0, "replica_remove", four_arg, 1, 5000, &text, msg, sizeof msg),
        ERR_STATE);
    assert_non_null(strstr(msg, "in progress"));
    rmclient_destroy(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_catch_up_remove_leader),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
