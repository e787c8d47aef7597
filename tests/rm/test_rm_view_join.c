/* test_rm_view_join.c - one real paddock-rm replica on 127.0.0.1 with CURVE, 520 registered
 * nodes heartbeating (two snapshot parts), and subscribers that follow the view as a JM does
 * (jm/view_proto.h's view_stream, the JM's topics from proto/pack.h, the nodes merged into a
 * jm/view): a JM that joins late gets a whole view at once, stops taking snapshots, then follows
 * deltas in sequence; deltas name only the nodes whose waits moved; another JM joining gets its
 * snapshot without the first one receiving it or losing its place; with nobody subscribed to
 * snapshots the replica publishes none; a JM that missed a delta asks again and is whole again.
 * The test stops exactly the pid it started. */
#include "common/clock.h"
#include "common/err.h"
#include "common/mem.h"
#include "jm/view.h"
#include "jm/view_proto.h"
#include "proto/pack.h"
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
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define NODES    520 /* two snapshot parts */
#define MOVERS   10  /* nodes whose waits move with every heartbeat; the rest hold still */
#define BEAT_MS  100 /* the test's heartbeat period */
#define SNAP_MS  500 /* view.snapshot_interval */
#define DELTA_MS 50  /* view.delta_interval */

static struct rm_replica g_rm;
static pid_t g_pid;
static zsock_t *g_hb;
static uint64_t g_seq;
static int g_nodes = NODES; /* heartbeating: pn-000 .. pn-(g_nodes - 1) */
static int g_silent = -1;   /* a node that stopped heartbeating */
static int g_draining = -1; /* a node that says it drains (a PN stopping in finish mode) */

static int group_setup(void **state)
{
    (void)state;
    zsys_handler_set(NULL);
    char view[128];
    snprintf(view, sizeof view,
             "[liveness]\nsuspect_after = 5s\ndown_after = 20s\n"
             "[view]\ndelta_interval = %dms\nsnapshot_interval = %dms\n",
             DELTA_MS, SNAP_MS);
    return rm_replica_setup(&g_rm, "rmvj", "", view);
}

static int group_teardown(void **state)
{
    (void)state;
    zsock_destroy(&g_hb);
    rm_harness_fini(); /* stops g_pid, the one child it was handed */
    return 0;
}

static void apply_curve(zsock_t *z)
{
    assert_int_equal(rm_replica_curve(z, g_rm.keys, NULL), 0);
}

static void send_msg(zsock_t *z, proto_msg_t *m)
{
    assert_int_equal(rm_replica_send(z, m), 0);
}

/* Node i's heartbeat: a mover's waits change by a second each seq, the others' never. */
static void beat_all(void)
{
    g_seq++;
    char name[32];
    for (int i = 0; i < g_nodes; i++) {
        if (i == g_silent)
            continue;
        proto_msg_t m;
        proto_msg_init(&m, PROTO_HEARTBEAT);
        snprintf(name, sizeof name, "pn-%03d", i);
        m.heartbeat.name = name;
        m.heartbeat.rack = "r1";
        m.heartbeat.endpoint = "tcp://127.0.0.1:9";
        m.heartbeat.boot_id = 1000 + (uint64_t)i;
        m.heartbeat.seq = g_seq;
        m.heartbeat.cpu = 4;
        m.heartbeat.mem_mb = 4096;
        m.heartbeat.used_cpu = (double)(g_seq % 4); /* load alone is no news */
        m.heartbeat.matrix.ncpu = 1;
        m.heartbeat.matrix.nmem = 1;
        m.heartbeat.matrix.cpu_bounds[0] = 4;
        m.heartbeat.matrix.mem_bounds_mb[0] = 4096;
        m.heartbeat.matrix.cells_ms[0] = i < MOVERS ? (uint32_t)(g_seq % 50) * 1000 : 500;
        m.heartbeat.draining = i == g_draining;
        m.heartbeat.timestamp_ms = clock_wall_ms();
        send_msg(g_hb, &m);
    }
    /* answers (none expected for registered nodes) are drained and ignored */
    zframe_t *f;
    while ((f = zframe_recv_nowait(g_hb)) != NULL)
        zframe_destroy(&f);
}

/* A JM's view subscription to the replica, as jm/daemon/jmd_rm.c makes it. */
struct jm {
    zsock_t *sub;
    view_t *view;
    struct view_stream st;
    int snap_sub;
    int drop; /* lose the next delta (as a full pipe would) */
    int snapshot_parts, deltas, gaps, wholes;
    uint32_t max_changed;
    uint64_t whole_ms, t0;
};

static void jm_want_snapshots(struct jm *j, int want)
{
    if (j->snap_sub == want)
        return;
    zmq_setsockopt(zsock_resolve(j->sub), want ? ZMQ_SUBSCRIBE : ZMQ_UNSUBSCRIBE,
                   PROTO_VIEW_TOPIC_SNAPSHOT, PROTO_VIEW_TOPIC_LEN);
    j->snap_sub = want;
}

static void jm_join(struct jm *j)
{
    memset(j, 0, sizeof *j);
    assert_int_equal(view_new(&j->view), 0);
    j->sub = zsock_new(ZMQ_SUB);
    apply_curve(j->sub);
    zmq_setsockopt(zsock_resolve(j->sub), ZMQ_SUBSCRIBE, PROTO_VIEW_TOPIC_DELTA,
                   PROTO_VIEW_TOPIC_LEN);
    jm_want_snapshots(j, 1);
    j->t0 = clock_mono_ms();
    zsock_connect(j->sub, "%s", g_rm.pub);
}

static void jm_leave(struct jm *j)
{
    zsock_destroy(&j->sub);
    view_destroy(&j->view);
}

/* Takes what arrived. */
static void jm_take(struct jm *j)
{
    zframe_t *f;
    while ((f = zframe_recv_nowait(j->sub)) != NULL) {
        proto_msg_t m;
        char err[160];
        int rc = proto_decode(zframe_data(f), zframe_size(f), &m, NULL, err, sizeof err);
        zframe_destroy(&f);
        assert_int_equal(rc, 0);
        if (m.type == PROTO_VIEW_DELTA && j->drop) {
            j->drop = 0;
            proto_msg_close(&m);
            continue;
        }
        int flow = view_stream_take(&j->st, &m);
        const proto_view_node_t *nodes =
            m.type == PROTO_VIEW_SNAPSHOT ? m.view_snapshot.nodes : m.view_delta.changed;
        uint32_t n = m.type == PROTO_VIEW_SNAPSHOT ? m.view_snapshot.nnodes : m.view_delta.nchanged;
        for (uint32_t i = 0; i < n; i++)
            assert_true(view_update_from_replica(j->view, &nodes[i], 0, 0) >= 0);
        if (m.type == PROTO_VIEW_SNAPSHOT) {
            j->snapshot_parts++;
        } else {
            j->deltas++;
            if (n > j->max_changed)
                j->max_changed = n;
        }
        if (flow & VIEW_STREAM_WHOLE) {
            j->wholes++;
            if (j->whole_ms == 0)
                j->whole_ms = clock_mono_ms() - j->t0;
            jm_want_snapshots(j, 0);
        }
        if (flow & VIEW_STREAM_GAP) {
            j->gaps++;
            jm_want_snapshots(j, 1);
        }
        proto_msg_close(&m);
    }
}

/* Beats and takes for `ms`, or until `until` says enough. */
static void run_for(struct jm **js, size_t njs, int ms, bool (*until)(struct jm **, size_t))
{
    uint64_t end = clock_mono_ms() + (uint64_t)ms, next = 0;
    while (clock_mono_ms() < end) {
        if (clock_mono_ms() >= next) {
            beat_all();
            next = clock_mono_ms() + BEAT_MS;
        }
        for (size_t i = 0; i < njs; i++)
            jm_take(js[i]);
        if (until != NULL && until(js, njs))
            return;
        usleep(5 * 1000);
    }
}

static bool all_whole(struct jm **js, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!js[i]->st.synced)
            return false;
    return true;
}

static uint64_t snapshots_published(rmclient_t *c)
{
    json_t *st = rm_harness_admin(c, 0, "rm_status", 1000);
    assert_non_null(st);
    assert_true(json_is_integer(json_object_get(st, "view_snapshots")));
    uint64_t n = (uint64_t)json_integer_value(json_object_get(st, "view_snapshots"));
    json_decref(st);
    return n;
}

static void test_late_join_then_deltas(void **state)
{
    (void)state;
    rmclient_t *c = rm_replica_boot(&g_rm, &g_pid);
    assert_non_null(c);
    /* register every node (pipelined on one DEALER), then heartbeat them */
    g_hb = rm_replica_dealer(&g_rm, g_rm.keys, NULL);
    assert_non_null(g_hb);
    assert_int_equal(rm_replica_register_nodes(g_hb, NODES, 30000), NODES);
    /* the cluster runs a while before the JM starts: the view has moved on from its start */
    run_for(NULL, 0, 1000, NULL);

    struct jm a, b;
    struct jm *one[] = {&a}, *two[] = {&a, &b};
    jm_join(&a);
    run_for(one, 1, 5000, all_whole);
    assert_true(a.st.synced);
    fprintf(stderr, "a late JM whole after %llu ms, %d snapshot parts\n",
            (unsigned long long)a.whole_ms, a.snapshot_parts);
    assert_int_equal(view_count(a.view), NODES);
    assert_int_equal(a.snapshot_parts, 2);
    /* then deltas only, in sequence, naming only the nodes whose waits moved */
    int parts = a.snapshot_parts, deltas = a.deltas;
    a.max_changed = 0;
    run_for(one, 1, 1500, NULL);
    fprintf(stderr, "then %d deltas in 1.5 s, %d gaps, at most %u nodes in one, at seq %llu\n",
            a.deltas - deltas, a.gaps, a.max_changed, (unsigned long long)a.st.seq);
    assert_true(a.deltas - deltas >= 3);
    assert_int_equal(a.gaps, 0);
    assert_true(a.st.synced);
    assert_true(a.max_changed <= MOVERS);
    assert_true(a.max_changed >= 1);
    /* the periodic snapshot (every 500 ms) has nobody left to go to: none published */
    uint64_t snaps = snapshots_published(c);
    run_for(one, 1, 3 * SNAP_MS, NULL);
    assert_int_equal(snapshots_published(c), snaps);
    assert_int_equal(a.snapshot_parts, parts);
    /* the movers' waits in a's view follow the deltas */
    const struct view_node *mover = view_node(a.view, (uint32_t)view_find(a.view, "pn-003"));
    assert_non_null(mover);
    assert_true(mover->seq + 5 >= g_seq);

    /* another JM joins: it gets a snapshot; a gets none and keeps its place */
    jm_join(&b);
    run_for(two, 2, 5000, all_whole);
    assert_true(b.st.synced);
    assert_int_equal(view_count(b.view), NODES);
    run_for(two, 2, 500, NULL);
    assert_true(snapshots_published(c) > snaps);
    assert_int_equal(a.snapshot_parts, parts);
    assert_int_equal(a.gaps, 0);
    assert_true(a.st.synced);

    /* a misses a delta: it sees the gap, asks again, and is whole again */
    a.drop = 1;
    for (uint64_t end = clock_mono_ms() + 3000; a.gaps == 0 && clock_mono_ms() < end;)
        run_for(one, 1, 50, NULL);
    assert_int_equal(a.drop, 0);
    assert_int_equal(a.gaps, 1);
    run_for(one, 1, 5000, all_whole);
    assert_true(a.st.synced);
    assert_int_equal(a.wholes, 2);
    assert_int_equal(a.snapshot_parts, parts + 2);
    fprintf(stderr, "after a missed delta: whole again, %d snapshot parts in all\n",
            a.snapshot_parts);
    jm_leave(&a);
    jm_leave(&b);
    rmclient_destroy(&c);
}

/* The node named `name` in j's view, NULL when absent. */
static const struct view_node *jm_node(const struct jm *j, const char *name)
{
    long i = view_find(j->view, name);
    return i < 0 ? NULL : view_node(j->view, (uint32_t)i);
}

static bool crowd_has_new_node(struct jm **js, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (view_count(js[i]->view) != (size_t)NODES + 1)
            return false;
    return true;
}

static bool crowd_sees_leavers(struct jm **js, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct view_node *d = jm_node(js[i], "pn-007"), *q = jm_node(js[i], "pn-011");
        if (d == NULL || d->up || q == NULL || q->live)
            return false;
    }
    return true;
}

/* Several JMs asking at once (one numbered snapshot shared, rm/rmview_xpub.h) all become whole
 * and follow the deltas in sequence; a node that registers and heartbeats appears in every one
 * of their views, one that drains is no longer up in any, one that goes silent no longer live:
 * the views stay complete and in sequence without a snapshot. Runs on the replica the test
 * above started. */
static void test_crowd_whole_then_nodes_come_and_go(void **state)
{
    (void)state;
    enum { CROWD = 12 };
    struct jm js[CROWD], *all[CROWD];
    for (size_t i = 0; i < CROWD; i++) {
        all[i] = &js[i];
        jm_join(&js[i]);
    }
    run_for(all, CROWD, 10000, all_whole);
    uint64_t wmax = 0;
    for (size_t i = 0; i < CROWD; i++) {
        assert_true(js[i].st.synced);
        assert_int_equal(view_count(js[i].view), NODES);
        assert_int_equal(js[i].snapshot_parts, 2); /* its own snapshot, no other */
        wmax = js[i].whole_ms > wmax ? js[i].whole_ms : wmax;
    }
    fprintf(stderr, "%d JMs asking at once: all whole within %llu ms\n", CROWD,
            (unsigned long long)wmax);

    /* a node joins: registered, then heartbeating */
    assert_int_equal(rm_replica_register_nodes(g_hb, NODES + 1, 30000), NODES + 1);
    g_nodes = NODES + 1;
    run_for(all, CROWD, 5000, crowd_has_new_node);
    char last[32];
    snprintf(last, sizeof last, "pn-%03d", NODES);
    for (size_t i = 0; i < CROWD; i++) {
        assert_int_equal(view_count(js[i].view), NODES + 1);
        const struct view_node *n = jm_node(&js[i], last);
        assert_non_null(n);
        assert_true(n->up);
    }
    /* a node drains, another goes silent */
    g_draining = 7;
    g_silent = 11;
    run_for(all, CROWD, 8000, crowd_sees_leavers);
    assert_true(crowd_sees_leavers(all, CROWD));
    for (size_t i = 0; i < CROWD; i++) {
        assert_int_equal(js[i].gaps, 0);
        assert_true(js[i].st.synced);
        assert_int_equal(js[i].snapshot_parts, 2); /* all of it from deltas */
        assert_int_equal(view_count(js[i].view), NODES + 1);
        const struct view_node *n = jm_node(&js[i], "pn-003");
        assert_true(n != NULL && n->up && n->live);
        jm_leave(&js[i]);
    }
    g_silent = g_draining = -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_late_join_then_deltas),
        cmocka_unit_test(test_crowd_whole_then_nodes_come_and_go),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
