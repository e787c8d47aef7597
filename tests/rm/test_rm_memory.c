/* test_rm_memory.c - one real paddock-rm replica: what it keeps in memory stays bounded.
 *
 * 1. Liveness: 2,000 registered nodes that never heartbeat go suspect, then down, with one
 *    command per log entry (so a pass spans more entries than are in flight at once): at most
 *    one liveness command per node and transition. Before, the first applied entry let the next 100
 * ms tick submit every transition not yet applied again (at 20,000 nodes, 70,000 liveness commands
 *    for 40,000 transitions).
 * 2. Unread replies: a sender on the heartbeat socket that never reads its replies (here 100,000
 *    heartbeats of a node the RM does not know, each refused) holds at most
 *    RMSERVER_HB_QUEUE_MAX (1,024) replies in the RM; the rest are dropped and counted. Before,
 *    zuv kept up to 100,000 per peer (a bench's four senders: 180,000 refusals, 200-400 MiB).
 *
 * 3. The Raft log in bytes: with raft.snapshot_threshold at 1,000,000 entries and
 *    raft.snapshot_bytes at 64 KiB, the entries of tests 1 and 2 take snapshots (before, the
 *    threshold counted entries only, of up to ledger.batch_max commands each).
 *
 * Stops only the replica it started (rm_harness_fini, by pid). */
#include "common/clock.h"
#include "common/mem.h"
#include "rm/rmclient.h"
#include "tests/rm/rm_harness.h"
#include "tests/rm/rm_replica.h"

#include <czmq.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

enum { NODES = 2000, UNREAD = 100000, HB_QUEUE_MAX = 1024 };

static struct rm_replica g_rm;
static char g_hb[64]; /* the replica's heartbeat endpoint */
static rmclient_t *g_c;

static json_t *status(void)
{
    char *text = NULL, msg[256];
    if (rmclient_admin(g_c, 0, "rm_status", NULL, 0, 1000, &text, msg, sizeof msg) != 0)
        return NULL;
    json_t *doc = json_loads(text, 0, NULL);
    mem_free(text);
    return doc;
}

static json_int_t field(json_t *st, const char *obj, const char *key)
{
    json_t *o = obj != NULL ? json_object_get(st, obj) : st;
    return json_integer_value(json_object_get(o, key));
}

static int group_setup(void **state)
{
    (void)state;
    zsys_handler_set(NULL);
    int hb = rm_harness_free_port();
    if (hb < 0)
        return -1;
    snprintf(g_hb, sizeof g_hb, "tcp://127.0.0.1:%d", hb);
    char sections[256];
    snprintf(sections, sizeof sections,
             "[liveness]\nsuspect_after = 300ms\ndown_after = 900ms\n[cluster]\nheartbeat = %s\n"
             "[raft]\nsnapshot_threshold = 1000000\nsnapshot_bytes = 64KiB\n",
             g_hb);
    if (rm_replica_setup(&g_rm, "rmmem", "batch_max = 1\n", sections) != 0)
        return -1;
    char log[512];
    snprintf(log, sizeof log, "%s/rm.log", g_rm.dir);
    char *boot[] = {"--bootstrap", NULL};
    pid_t pid = rm_replica_spawn(&g_rm, boot, log);
    if (pid <= 0)
        return -1;
    rm_harness_child(pid);
    char msg[256];
    if (rmclient_open(&g_c, NULL, g_rm.api, g_rm.keys, msg, sizeof msg) != 0)
        return -1;
    for (uint64_t end = clock_mono_ms() + 10000; clock_mono_ms() < end; usleep(20 * 1000)) {
        json_t *st = status();
        bool ready = json_is_true(json_object_get(st, "ready"));
        json_decref(st);
        if (ready)
            return 0;
    }
    return -1;
}

static int group_teardown(void **state)
{
    (void)state;
    rmclient_destroy(&g_c);
    rm_harness_fini();
    return 0;
}

static void test_liveness_once_per_transition(void **state)
{
    (void)state;
    json_t *st = status();
    assert_non_null(st);
    json_int_t registered = field(st, "fsm", "commands") + NODES;
    json_decref(st);
    zsock_t *d = rm_replica_dealer(&g_rm, g_rm.keys, NULL);
    assert_non_null(d);
    assert_int_equal(rm_replica_register_nodes(d, NODES, 20000), NODES);
    zsock_destroy(&d);
    /* every node suspect after 0.3 s and down after 0.9 s; then nothing more to do */
    json_int_t cmds = 0, last = -1;
    uint64_t stable_since = clock_mono_ms();
    for (uint64_t end = clock_mono_ms() + 30000; clock_mono_ms() < end; usleep(100 * 1000)) {
        st = status();
        if (st == NULL)
            continue; /* busy: asked again */
        cmds = field(st, "fsm", "commands");
        json_decref(st);
        if (cmds != last)
            stable_since = clock_mono_ms();
        last = cmds;
        if (cmds - registered >= NODES && clock_mono_ms() - stable_since > 1500)
            break;
    }
    /* nodes registered more than 0.9 s after the RM became ready go down at once (one
     * transition), the others suspect and then down (two) */
    print_message("liveness commands: %lld for %d nodes\n", (long long)(cmds - registered), NODES);
    assert_true(cmds - registered >= NODES);
    assert_true(cmds - registered <= 2 * NODES);
}

static void test_unread_replies_bounded(void **state)
{
    (void)state;
    zsock_t *z = zsock_new(ZMQ_DEALER);
    assert_non_null(z);
    zsock_set_linger(z, 0);
    zsock_set_sndhwm(z, 0);    /* everything reaches the RM */
    zsock_set_rcvhwm(z, 1);    /* and almost nothing of what it answers is taken off it */
    zsock_set_rcvbuf(z, 4096); /* nor kept in this socket's kernel buffer */
    assert_int_equal(rm_replica_curve(z, g_rm.keys, NULL), 0);
    assert_int_equal(zsock_connect(z, "%s", g_hb), 0);
    json_t *st = status();
    json_int_t before = field(st, NULL, "heartbeats_unregistered");
    json_decref(st);
    for (int i = 0; i < UNREAD; i++) {
        proto_msg_t m;
        proto_msg_init(&m, PROTO_HEARTBEAT);
        m.heartbeat.name = "ghost";
        m.heartbeat.rack = "r1";
        m.heartbeat.endpoint = "tcp://127.0.0.1:9";
        m.heartbeat.boot_id = 7;
        m.heartbeat.seq = (uint64_t)i + 1;
        m.heartbeat.cpu = 4;
        m.heartbeat.mem_mb = 4096;
        assert_int_equal(rm_replica_send(z, &m), 0);
    }
    json_int_t refused = 0, queued = 0, dropped = 0;
    for (uint64_t end = clock_mono_ms() + 60000; clock_mono_ms() < end; usleep(100 * 1000)) {
        st = status();
        if (st == NULL)
            continue;
        refused = field(st, NULL, "heartbeats_unregistered") - before;
        queued = field(st, "memory", "replies_queued");
        dropped = field(st, "memory", "replies_dropped");
        json_decref(st);
        if (refused >= UNREAD)
            break;
    }
    print_message("refused %lld, replies queued %lld, dropped %lld\n", (long long)refused,
                  (long long)queued, (long long)dropped);
    assert_int_equal(refused, UNREAD);
    assert_true(queued <= HB_QUEUE_MAX);
    assert_true(dropped > 0);
    zsock_destroy(&z);
}

static void test_log_bounded_in_bytes(void **state)
{
    (void)state;
    /* the first test wrote 2,000 registrations and up to 4,000 liveness changes, one entry each
     * (some 300 KiB), far below 1,000,000 entries: only the byte bound takes snapshots */
    json_t *st = NULL;
    json_int_t snaps = 0, since = 0;
    for (uint64_t end = clock_mono_ms() + 10000; clock_mono_ms() < end; usleep(100 * 1000)) {
        json_decref(st);
        st = status();
        snaps = field(st, "fsm", "snapshots");
        since = field(st, "fsm", "since_snapshot_bytes");
        if (snaps > 0)
            break;
    }
    print_message("snapshots %lld, entries %lld, bytes since the last %lld\n", (long long)snaps,
                  (long long)field(st, "fsm", "entries"), (long long)since);
    json_decref(st);
    assert_true(snaps > 0);
    assert_true(since <= 2 * 64 * 1024);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_liveness_once_per_transition),
        cmocka_unit_test(test_unread_replies_bounded),
        cmocka_unit_test(test_log_bounded_in_bytes),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
