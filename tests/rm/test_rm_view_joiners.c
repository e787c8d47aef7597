/* test_rm_view_joiners.c - one real paddock-rm replica on 127.0.0.1 with CURVE, three
 * registered nodes, delta ticks 20 s apart and no periodic snapshot to speak of, and subscribers
 * that ask for snapshots as a JM does (the snapshot topic of proto/pack.h, jm/view_proto.h's
 * view_stream): a JM joining right after another one (within the join window of the last
 * snapshot) is whole within a second, not at the next delta tick, as back-to-back jobs' JMs
 * are; and thirty JMs asking at once share a few snapshots, not one each. The test stops
 * exactly the pid it started. */
#include "common/clock.h"
#include "common/err.h"
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

#define NODES    3
#define DELTA_MS 20000 /* view.delta_interval: a joiner served at a delta tick would wait this */
#define CROWD    30    /* JMs asking at once */

static struct rm_replica g_rm;

static int group_setup(void **state)
{
    (void)state;
    zsys_handler_set(NULL);
    char view[128];
    snprintf(view, sizeof view, "[view]\ndelta_interval = %dms\nsnapshot_interval = 600s\n",
             DELTA_MS);
    return rm_replica_setup(&g_rm, "rmvjs", "", view);
}

static int group_teardown(void **state)
{
    (void)state;
    rm_harness_fini(); /* stops the one child it was handed */
    return 0;
}

/* A JM's view subscription: deltas from the start, snapshots while not whole. */
struct jm {
    zsock_t *sub;
    struct view_stream st;
    uint64_t asked_ms, whole_ms; /* whole_ms: from asking to whole (0: not yet) */
};

static void jm_connect(struct jm *j)
{
    memset(j, 0, sizeof *j);
    j->sub = zsock_new(ZMQ_SUB);
    assert_non_null(j->sub);
    assert_int_equal(rm_replica_curve(j->sub, g_rm.keys, NULL), 0);
    zmq_setsockopt(zsock_resolve(j->sub), ZMQ_SUBSCRIBE, PROTO_VIEW_TOPIC_DELTA,
                   PROTO_VIEW_TOPIC_LEN);
    assert_int_equal(zsock_connect(j->sub, "%s", g_rm.pub), 0);
}

static void jm_ask(struct jm *j)
{
    zmq_setsockopt(zsock_resolve(j->sub), ZMQ_SUBSCRIBE, PROTO_VIEW_TOPIC_SNAPSHOT,
                   PROTO_VIEW_TOPIC_LEN);
    j->asked_ms = clock_mono_ms();
}

static void jm_take(struct jm *j)
{
    zframe_t *f;
    while ((f = zframe_recv_nowait(j->sub)) != NULL) {
        proto_msg_t m;
        char err[160];
        int rc = proto_decode(zframe_data(f), zframe_size(f), &m, NULL, err, sizeof err);
        zframe_destroy(&f);
        assert_int_equal(rc, 0);
        if ((view_stream_take(&j->st, &m) & VIEW_STREAM_WHOLE) && j->whole_ms == 0) {
            j->whole_ms = clock_mono_ms() - j->asked_ms + 1;
            zmq_setsockopt(zsock_resolve(j->sub), ZMQ_UNSUBSCRIBE, PROTO_VIEW_TOPIC_SNAPSHOT,
                           PROTO_VIEW_TOPIC_LEN);
        }
        proto_msg_close(&m);
    }
}

/* Takes what arrives until every JM is whole or `ms` passed; true when all are whole. */
static bool take_until_whole(struct jm *js, size_t n, int ms)
{
    for (uint64_t end = clock_mono_ms() + (uint64_t)ms; clock_mono_ms() < end;) {
        size_t whole = 0;
        for (size_t i = 0; i < n; i++) {
            jm_take(&js[i]);
            whole += js[i].whole_ms != 0;
        }
        if (whole == n)
            return true;
        usleep(1000);
    }
    return false;
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

static void register_nodes(void)
{
    zsock_t *d = rm_replica_dealer(&g_rm, g_rm.keys, NULL);
    assert_non_null(d);
    assert_int_equal(rm_replica_register_nodes(d, NODES, 30000), NODES);
    zsock_destroy(&d);
}

static void test_joiners_served_at_once(void **state)
{
    (void)state;
    rmclient_t *c = rm_replica_boot(&g_rm, NULL);
    assert_non_null(c);
    register_nodes();

    /* a JM, then another right after it is whole: both at once, far before a delta tick */
    struct jm a, b;
    jm_connect(&a);
    jm_ask(&a);
    assert_true(take_until_whole(&a, 1, 5000));
    jm_connect(&b);
    jm_ask(&b);
    assert_true(take_until_whole(&b, 1, 5000));
    fprintf(stderr, "first JM whole in %llu ms, the next right after it in %llu ms\n",
            (unsigned long long)a.whole_ms, (unsigned long long)b.whole_ms);
    assert_true(b.whole_ms < 1000);

    /* a crowd connected (deltas only), then all asking at once: a few snapshots, all whole */
    struct jm *crowd = calloc(CROWD, sizeof *crowd);
    assert_non_null(crowd);
    for (size_t i = 0; i < CROWD; i++)
        jm_connect(&crowd[i]);
    take_until_whole(crowd, CROWD, 500); /* lets the connections settle; nobody asked yet */
    uint64_t before = snapshots_published(c);
    for (size_t i = 0; i < CROWD; i++)
        jm_ask(&crowd[i]);
    assert_true(take_until_whole(crowd, CROWD, 5000));
    uint64_t wmax = 0;
    for (size_t i = 0; i < CROWD; i++)
        wmax = crowd[i].whole_ms > wmax ? crowd[i].whole_ms : wmax;
    uint64_t snaps = snapshots_published(c) - before;
    fprintf(stderr, "%d JMs asking at once: all whole within %llu ms, %llu snapshots\n", CROWD,
            (unsigned long long)wmax, (unsigned long long)snaps);
    assert_true(wmax < 2000);
    assert_true(snaps >= 1);
    assert_true(snaps <= CROWD / 3);
    for (size_t i = 0; i < CROWD; i++)
        zsock_destroy(&crowd[i].sub);
    free(crowd);
    zsock_destroy(&a.sub);
    zsock_destroy(&b.sub);
    rmclient_destroy(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_joiners_served_at_once),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
