/* test_rmview.c - the cluster view (pure): heartbeat freshness by (boot id, seq), durable facts
 * from the ledger, snapshots in parts and chained deltas that decode, per-node staleness, and
 * the liveness rule; packed publications (proto/pack.h) taken into a JM's view; rmconf's
 * cross-field checks. */
#include "common/bloom.h"
#include "common/err.h"
#include "common/mem.h"
#include "jm/view.h"
#include "jm/view_proto.h"
#include "proto/pack.h"
#include "proto/proto.h"
#include "rm/rmconf.h"
#include "rm/rmview.h"
#include "tests/rm/rmview_hb.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void test_freshness(void **state)
{
    (void)state;
    rmview_t *v = rmview_new();
    assert_non_null(v);
    proto_heartbeat_t hb;
    heartbeat(&hb, "pn-1", 1, 5);
    assert_int_equal(rmview_ingest(v, &hb, 100), RMVIEW_FRESH);
    heartbeat(&hb, "pn-1", 1, 5); /* repeated */
    assert_int_equal(rmview_ingest(v, &hb, 110), RMVIEW_STALE);
    heartbeat(&hb, "pn-1", 1, 4); /* older */
    assert_int_equal(rmview_ingest(v, &hb, 120), RMVIEW_STALE);
    assert_int_equal(rmview_find(v, "pn-1")->running_regular, 5);
    assert_int_equal(rmview_find(v, "pn-1")->rx_ms, 100);
    heartbeat(&hb, "pn-1", 2, 1); /* the PN restarted: a new boot replaces the entry */
    assert_int_equal(rmview_ingest(v, &hb, 130), RMVIEW_FRESH);
    assert_int_equal(rmview_find(v, "pn-1")->boot_id, 2);
    assert_int_equal(rmview_find(v, "pn-1")->matrix.cells_ms[3], 1000);
    char longname[100];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    heartbeat(&hb, longname, 1, 1);
    assert_int_equal(rmview_ingest(v, &hb, 140), ERR_INVAL);
    assert_int_equal(rmview_count(v), 1);
    rmview_destroy(&v);
    assert_null(v);
}

static void test_liveness_rule(void **state)
{
    (void)state;
    assert_int_equal(rmview_liveness(1000, 1500, 3000, 10000), LEDGER_NODE_UP);
    assert_int_equal(rmview_liveness(1000, 4000, 3000, 10000), LEDGER_NODE_SUSPECT);
    assert_int_equal(rmview_liveness(1000, 10999, 3000, 10000), LEDGER_NODE_SUSPECT);
    assert_int_equal(rmview_liveness(1000, 11000, 3000, 10000), LEDGER_NODE_DOWN);
}

struct collected {
    int snapshots, deltas;
    uint64_t last_seq;
    uint32_t nodes;
    uint64_t oldest_age;
    bool chained;
};

/* Encodes and decodes every message, as a subscriber would see it. */
static int collect(void *arg, const proto_msg_t *m)
{
    struct collected *c = arg;
    proto_buf_t buf;
    proto_buf_init(&buf);
    char err[128];
    assert_int_equal(proto_encode(m, &buf, err, sizeof err), 0);
    proto_msg_t d;
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, err, sizeof err), 0);
    proto_buf_close(&buf);
    if (d.type == PROTO_VIEW_SNAPSHOT) {
        c->snapshots++;
        c->last_seq = d.view_snapshot.view_seq;
        c->nodes += d.view_snapshot.nnodes;
        for (uint32_t i = 0; i < d.view_snapshot.nnodes; i++) {
            if (d.view_snapshot.nodes[i].age_ms > c->oldest_age)
                c->oldest_age = d.view_snapshot.nodes[i].age_ms;
        }
    } else {
        assert_int_equal(d.type, PROTO_VIEW_DELTA);
        c->chained = c->chained && d.view_delta.base_seq == c->last_seq;
        c->last_seq = d.view_delta.view_seq;
        c->deltas++;
        c->nodes += d.view_delta.nchanged;
        for (uint32_t i = 0; i < d.view_delta.nchanged; i++) {
            if (d.view_delta.changed[i].age_ms > c->oldest_age)
                c->oldest_age = d.view_delta.changed[i].age_ms;
        }
    }
    proto_msg_close(&d);
    return 0;
}

static void test_publish_snapshot_and_deltas(void **state)
{
    (void)state;
    rmview_t *v = rmview_new();
    char name[32];
    const int n = 1200; /* three snapshot parts */
    for (int i = 0; i < n; i++) {
        proto_heartbeat_t hb;
        snprintf(name, sizeof name, "pn-%d", i);
        heartbeat(&hb, name, 1, 1);
        assert_int_equal(rmview_ingest(v, &hb, 1000 + i), RMVIEW_FRESH);
    }
    struct collected c = {0, 0, 0, 0, 0, true};
    assert_int_equal(rmview_publish_snapshot(v, 5000, 7, collect, &c), 0);
    /* what changed goes out as deltas first (512 + 512 + 176), then the snapshot at their seq */
    assert_int_equal(c.deltas, 3);
    assert_int_equal(c.snapshots, 3);
    assert_int_equal(c.nodes, 2 * n);
    assert_int_equal(c.last_seq, 3);
    assert_int_equal(rmview_seq(v), 3);
    assert_true(c.chained);
    assert_int_equal(c.oldest_age, 4000); /* pn-0 was heard at 1000 */
    c.deltas = 0;
    /* nothing changed: no delta */
    c.nodes = 0;
    assert_int_equal(rmview_publish_delta(v, 5100, 7, collect, &c), 0);
    assert_int_equal(c.deltas, 0);
    /* 600 nodes heartbeat: two chained deltas (512 + 88) */
    for (int i = 0; i < 600; i++) {
        proto_heartbeat_t hb;
        snprintf(name, sizeof name, "pn-%d", i * 2);
        heartbeat(&hb, name, 1, 2);
        rmview_ingest(v, &hb, 6000);
    }
    assert_int_equal(rmview_publish_delta(v, 6100, 7, collect, &c), 0);
    assert_int_equal(c.deltas, 2);
    assert_int_equal(c.nodes, 600);
    assert_true(c.chained); /* the first delta's base is the snapshot's seq */
    assert_int_equal(rmview_seq(v), c.last_seq);
    /* heartbeats that change only the load, and waits within the tolerance: no delta */
    for (int i = 0; i < 600; i++) {
        proto_heartbeat_t hb;
        snprintf(name, sizeof name, "pn-%d", i * 2);
        heartbeat(&hb, name, 1, 3);
        hb.matrix.cells_ms[3] = 2000 + RMVIEW_WAIT_TOL_MS; /* 2000 published: within an 8th */
        hb.used_cpu = 3.5;
        assert_int_equal(rmview_ingest(v, &hb, 6050), RMVIEW_FRESH);
    }
    c.nodes = 0;
    assert_int_equal(rmview_publish_delta(v, 6100, 7, collect, &c), 0);
    assert_int_equal(c.nodes, 0);
    /* past the tolerance (an eighth of 2000 is under 251 ms... 2000 + 251 is not) */
    proto_heartbeat_t moved;
    heartbeat(&moved, "pn-4", 1, 4);
    moved.matrix.cells_ms[3] = 2000 + RMVIEW_WAIT_TOL_MS + 1;
    assert_int_equal(rmview_ingest(v, &moved, 6060), RMVIEW_FRESH);
    heartbeat(&moved, "pn-6", 1, 4);
    moved.matrix.cells_ms[3] = PROTO_WAIT_NEVER; /* never is always news */
    assert_int_equal(rmview_ingest(v, &moved, 6060), RMVIEW_FRESH);
    assert_int_equal(rmview_publish_delta(v, 6100, 7, collect, &c), 0);
    assert_int_equal(c.nodes, 2);
    assert_true(c.chained);
    /* a ledger fact (down) marks the node changed */
    struct ledger_node ln;
    memset(&ln, 0, sizeof ln);
    snprintf(ln.name, sizeof ln.name, "pn-1");
    ln.liveness = LEDGER_NODE_DOWN;
    ln.down_count = 1;
    assert_int_equal(rmview_note(v, &ln), 0);
    assert_int_equal(rmview_find(v, "pn-1")->state, PROTO_NODE_DOWN);
    c.nodes = 0;
    assert_int_equal(rmview_publish_delta(v, 6200, 7, collect, &c), 0);
    assert_int_equal(c.nodes, 1);
    /* the 600 nodes published live (heard at 6000-6060) go silent: each published once more,
       with its age, so that JMs stop taking deltas as news of them */
    c.nodes = 0;
    c.oldest_age = 0;
    assert_int_equal(rmview_publish_delta(v, 8060, 7, collect, &c), 0);
    assert_int_equal(c.nodes, 600);
    assert_true(c.oldest_age >= PROTO_VIEW_LIVE_MS);
    c.nodes = 0;
    assert_int_equal(rmview_publish_delta(v, 8100, 7, collect, &c), 0);
    assert_int_equal(c.nodes, 0);
    assert_true(c.chained);
    /* a registered node never heard from is published as maximally stale */
    snprintf(ln.name, sizeof ln.name, "pn-silent");
    ln.liveness = LEDGER_NODE_UP;
    snprintf(ln.address, sizeof ln.address, "tcp://127.0.0.1:9");
    ln.cpus_milli = 2500;
    ln.mem_mb = 100;
    assert_int_equal(rmview_note(v, &ln), 0);
    assert_true(rmview_find(v, "pn-silent")->cpu == 2.5);
    c.oldest_age = 0;
    c.nodes = 0;
    c.deltas = c.snapshots = 0;
    assert_int_equal(rmview_publish_snapshot(v, 9000, 7, collect, &c), 0);
    assert_int_equal(c.deltas, 1); /* pn-silent, new */
    assert_int_equal(c.snapshots, 3);
    assert_int_equal(c.nodes, 1 + n + 1);
    assert_int_equal(c.oldest_age, PROTO_MAX_DURATION_MS);
    assert_true(c.chained);
    /* the topics a subscriber takes snapshots with: "" and the packed snapshot header's prefixes */
    assert_int_equal(rmview_topic_snapshot(NULL, 0), 0);
    assert_int_equal(rmview_topic_snapshot(PROTO_VIEW_TOPIC_SNAPSHOT, PROTO_VIEW_TOPIC_LEN),
                     (int)PROTO_VIEW_TOPIC_LEN);
    assert_int_equal(rmview_topic_snapshot(PROTO_VIEW_TOPIC_SNAPSHOT, 2), 2);
    assert_int_equal(rmview_topic_snapshot(PROTO_VIEW_TOPIC_DELTA, PROTO_VIEW_TOPIC_LEN), -1);
    assert_int_equal(rmview_topic_snapshot(PROTO_VIEW_TOPIC_PLAIN_SNAPSHOT, 3), -1);
    uint8_t longer[PROTO_VIEW_TOPIC_LEN + 1];
    memcpy(longer, PROTO_VIEW_TOPIC_SNAPSHOT, PROTO_VIEW_TOPIC_LEN);
    longer[PROTO_VIEW_TOPIC_LEN] = 0;
    assert_int_equal(rmview_topic_snapshot(longer, sizeof longer), -1);
    rmview_destroy(&v);
}

/* What the RM publishes packed, a JM takes whole: a 1,200-node snapshot and two chained deltas,
 * each message packed as rmserver sends it, decoded and merged into a jm/view. */
struct to_jm {
    view_t *jv;
    size_t plain, packed;
    int64_t now;
};

static int to_jm(void *arg, const proto_msg_t *m)
{
    struct to_jm *t = arg;
    proto_buf_t a, b;
    proto_buf_init(&a);
    proto_buf_init(&b);
    char err[128];
    assert_int_equal(proto_encode(m, &a, err, sizeof err), 0);
    assert_int_equal(proto_encode_packed(m, &b, err, sizeof err), 0);
    t->plain += a.len;
    t->packed += b.len;
    proto_msg_t d;
    assert_int_equal(proto_decode(b.data, b.len, &d, NULL, err, sizeof err), 0);
    assert_int_equal(d.version, PROTO_VERSION_PACKED);
    const proto_view_node_t *v =
        d.type == PROTO_VIEW_SNAPSHOT ? d.view_snapshot.nodes : d.view_delta.changed;
    uint32_t n = d.type == PROTO_VIEW_SNAPSHOT ? d.view_snapshot.nnodes : d.view_delta.nchanged;
    for (uint32_t i = 0; i < n; i++)
        assert_true(view_update_from_proto(t->jv, &v[i], t->now) >= 0);
    proto_msg_close(&d);
    proto_buf_close(&a);
    proto_buf_close(&b);
    return 0;
}

static void test_packed_to_jm_view(void **state)
{
    (void)state;
    rmview_t *v = rmview_new();
    struct to_jm t = {NULL, 0, 0, 5000};
    assert_int_equal(view_new(&t.jv), 0);
    char name[32];
    const int n = 1200;
    for (int i = 0; i < n; i++) {
        proto_heartbeat_t hb;
        snprintf(name, sizeof name, "pn-%d", i);
        heartbeat(&hb, name, 1, 1);
        hb.matrix.cells_ms[0] = (uint32_t)i * 7; /* each node its own wait */
        assert_int_equal(rmview_ingest(v, &hb, 1000), RMVIEW_FRESH);
    }
    assert_int_equal(rmview_publish_snapshot(v, 5000, 7, to_jm, &t), 0);
    assert_int_equal(view_count(t.jv), n);
    assert_true(t.packed * 2 < t.plain);
    for (int i = 0; i < 600; i++) {
        proto_heartbeat_t hb;
        snprintf(name, sizeof name, "pn-%d", i * 2);
        heartbeat(&hb, name, 1, 2);
        hb.matrix.cells_ms[0] = (uint32_t)i * 7;
        rmview_ingest(v, &hb, 6000);
    }
    t.now = 6100;
    assert_int_equal(rmview_publish_delta(v, 6100, 7, to_jm, &t), 0);
    assert_int_equal(view_count(t.jv), n);
    const struct view_node *a = view_node(t.jv, (uint32_t)view_find(t.jv, "pn-10"));
    const struct view_node *b = view_node(t.jv, (uint32_t)view_find(t.jv, "pn-11"));
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(a->seq, 2); /* from the delta */
    assert_int_equal(b->seq, 1); /* from the snapshot */
    assert_int_equal(a->running, 2);
    /* published on the RM's grid (rmview_quantize_ms): 35 ms as 50, 77 ms as 100 */
    assert_true(a->wait_s[0] == 0.05f);
    assert_true(b->wait_s[0] == 0.1f);
    assert_true(a->wait_s[3] == 2.0f);
    assert_string_equal(a->endpoint, "tcp://127.0.0.1:7000");
    view_destroy(&t.jv);
    rmview_destroy(&v);
}

/* The JM's side of the stream (jm/view_proto.h view_stream): whole after every part of one
 * snapshot in order, then in sequence through the deltas, a gap when one is missed, whole again
 * with the next snapshot; an in-sequence delta confirms the live nodes it omits (view_confirm). */
struct stream_jm {
    struct view_stream st;
    view_t *jv;
    int64_t now;
    int flows[64];
    int n;
    int skip_part, skip_delta; /* lose part 1 of the next snapshot / the next delta */
};

static int stream_jm(void *arg, const proto_msg_t *m)
{
    struct stream_jm *t = arg;
    if (m->type == PROTO_VIEW_SNAPSHOT && t->skip_part && m->view_snapshot.part == 1) {
        t->skip_part = 0;
        return 0;
    }
    if (m->type == PROTO_VIEW_DELTA && t->skip_delta) {
        t->skip_delta = 0;
        return 0;
    }
    int flow = view_stream_take(&t->st, m);
    if (t->n < 64)
        t->flows[t->n++] = flow;
    const proto_view_node_t *v =
        m->type == PROTO_VIEW_SNAPSHOT ? m->view_snapshot.nodes : m->view_delta.changed;
    uint32_t n = m->type == PROTO_VIEW_SNAPSHOT ? m->view_snapshot.nnodes : m->view_delta.nchanged;
    for (uint32_t i = 0; i < n; i++)
        assert_true(view_update_from_replica(t->jv, &v[i], t->now, 2) >= 0);
    if (flow & VIEW_STREAM_NEXT)
        view_confirm(t->jv, 3, t->now - PROTO_VIEW_LIVE_MS / 2);
    return 0;
}

static void test_stream_and_confirm(void **state)
{
    (void)state;
    rmview_t *v = rmview_new();
    struct stream_jm t;
    memset(&t, 0, sizeof t);
    assert_int_equal(view_new(&t.jv), 0);
    char name[32];
    for (int i = 0; i < 1100; i++) { /* three parts */
        proto_heartbeat_t hb;
        snprintf(name, sizeof name, "pn-%d", i);
        heartbeat(&hb, name, 1, 1);
        assert_int_equal(rmview_ingest(v, &hb, 1000), RMVIEW_FRESH);
    }
    /* part 1 lost: not whole; the deltas before the snapshot are taken, out of sequence */
    t.skip_part = 1;
    t.now = 1100;
    assert_int_equal(rmview_publish_snapshot(v, 1100, 7, stream_jm, &t), 0);
    assert_int_equal(t.st.synced, 0);
    for (int i = 0; i < t.n; i++)
        assert_int_equal(t.flows[i], 0);
    t.n = 0;
    assert_int_equal(rmview_publish_snapshot(v, 1200, 7, stream_jm, &t), 0);
    assert_int_equal(t.n, 3); /* nothing changed: the parts alone */
    assert_int_equal(t.flows[2], VIEW_STREAM_WHOLE);
    assert_int_equal(t.st.seq, rmview_seq(v));
    /* deltas follow in sequence; a node that did not change is confirmed as of the delta */
    proto_heartbeat_t hb;
    heartbeat(&hb, "pn-5", 1, 2);
    assert_int_equal(rmview_ingest(v, &hb, 1800), RMVIEW_FRESH);
    t.n = 0;
    t.now = 2500;
    assert_int_equal(rmview_publish_delta(v, 2500, 7, stream_jm, &t), 0);
    assert_int_equal(t.n, 1);
    assert_int_equal(t.flows[0], VIEW_STREAM_NEXT);
    const struct view_node *quiet = view_node(t.jv, (uint32_t)view_find(t.jv, "pn-6"));
    assert_int_equal(quiet->src, 3);
    assert_int_equal(quiet->live, 1);
    assert_int_equal(view_age_ms(quiet, 2500), PROTO_VIEW_LIVE_MS / 2); /* heard at 1000 */
    /* a delta lost: the next one is a gap; the next snapshot makes the JM whole again */
    heartbeat(&hb, "pn-5", 1, 3);
    rmview_ingest(v, &hb, 2600);
    t.skip_delta = 1;
    assert_int_equal(rmview_publish_delta(v, 2600, 7, stream_jm, &t), 0);
    heartbeat(&hb, "pn-5", 1, 4);
    rmview_ingest(v, &hb, 2700);
    t.n = 0;
    assert_int_equal(rmview_publish_delta(v, 2700, 7, stream_jm, &t), 0);
    assert_int_equal(t.flows[0], VIEW_STREAM_GAP);
    assert_int_equal(t.st.gaps, 1);
    t.n = 0;
    assert_int_equal(rmview_publish_snapshot(v, 2800, 7, stream_jm, &t), 0);
    assert_int_equal(t.flows[t.n - 1], VIEW_STREAM_WHOLE);
    assert_int_equal(t.st.wholes, 2);
    /* a node the replica stopped hearing from is published once, not live: no more confirms */
    t.n = 0;
    t.now = 3500;
    heartbeat(&hb, "pn-5", 1, 5);
    rmview_ingest(v, &hb, 3400);
    assert_int_equal(rmview_publish_delta(v, 3500, 7, stream_jm, &t), 0);
    quiet = view_node(t.jv, (uint32_t)view_find(t.jv, "pn-6"));
    assert_int_equal(quiet->live, 0);
    int64_t age = view_age_ms(quiet, 3500);
    assert_true(age >= PROTO_VIEW_LIVE_MS);
    t.now = 3600;
    heartbeat(&hb, "pn-5", 1, 6);
    rmview_ingest(v, &hb, 3600);
    assert_int_equal(rmview_publish_delta(v, 3600, 7, stream_jm, &t), 0);
    assert_int_equal(t.flows[t.n - 1], VIEW_STREAM_NEXT);
    assert_int_equal(view_age_ms(quiet, 3600), age + 100); /* not confirmed */
    assert_int_equal(view_age_ms(view_node(t.jv, (uint32_t)view_find(t.jv, "pn-5")), 3600), 0);
    view_destroy(&t.jv);
    rmview_destroy(&v);
}

/* The JM's view is compact: names and endpoints at their length, shared bins, cells at the
 * matrix's size; 20,000 nodes of 6 x 7 cells in under 8 MiB; an endpoint that changes is taken,
 * a matrix that grows gets room. */
static void test_compact_jm_view(void **state)
{
    (void)state;
    view_t *jv = NULL;
    assert_int_equal(view_new(&jv), 0);
    double cpu[6], mem[7], cells[42];
    for (int i = 0; i < 6; i++)
        cpu[i] = 0.5 * (1 << i);
    for (int i = 0; i < 7; i++)
        mem[i] = 1024.0 * (1 << i);
    char name[32], ep[64], rack[16];
    for (int i = 0; i < 20000; i++) {
        for (int c = 0; c < 42; c++)
            cells[c] = (double)((i + c) % 97) / 10.0;
        snprintf(name, sizeof name, "pn-%05d", i);
        snprintf(ep, sizeof ep, "tcp://10.0.%d.%d:7100", i / 256, i % 256);
        snprintf(rack, sizeof rack, "rack-%03d", i / 40);
        struct view_entry e = {.name = name,
                               .rack = rack,
                               .endpoint = ep,
                               .cpu = 16,
                               .mem_mb = 65536,
                               .up = 1,
                               .boot_id = 1,
                               .seq = 1,
                               .ncpu = 6,
                               .nmem = 7,
                               .cpu_bins = cpu,
                               .mem_bins_mb = mem,
                               .wait_s = cells};
        assert_int_equal(view_update(jv, &e, 100), 1);
    }
    print_message("a 20,000-node view: %.2f MiB\n", (double)view_bytes(jv) / 1048576.0);
    assert_true(view_bytes(jv) < 8u * 1024u * 1024u);
    const struct view_node *a = view_node(jv, 7), *b = view_node(jv, 19999);
    assert_ptr_equal(a->cpu_bins, b->cpu_bins);
    assert_ptr_equal(a->mem_bins_mb, b->mem_bins_mb);
    assert_string_equal(a->name, "pn-00007");
    assert_string_equal(a->endpoint, "tcp://10.0.0.7:7100");
    assert_true(a->wait_s[41] == (float)((7 + 41) % 97) / 10.0f);
    /* a new endpoint and a larger matrix */
    double big[16 * 16], bins[16];
    for (int i = 0; i < 16; i++)
        bins[i] = i + 1;
    for (int i = 0; i < 256; i++)
        big[i] = i;
    struct view_entry e = {.name = "pn-00007",
                           .rack = "rack-000",
                           .endpoint = "tcp://h:1",
                           .cpu = 16,
                           .mem_mb = 65536,
                           .up = 1,
                           .boot_id = 1,
                           .seq = 2,
                           .ncpu = 16,
                           .nmem = 16,
                           .cpu_bins = bins,
                           .mem_bins_mb = bins,
                           .wait_s = big};
    assert_int_equal(view_update(jv, &e, 200), 1);
    a = view_node(jv, 7);
    assert_string_equal(a->endpoint, "tcp://h:1");
    assert_int_equal(a->ncpu, 16);
    assert_true(a->wait_s[255] == 255.0f);
    assert_true(view_wait(a, 16, 16, 0) == 255.0);
    assert_true(view_node(jv, 8)->wait_s[41] == (float)((8 + 41) % 97) / 10.0f); /* untouched */
    view_destroy(&jv);
}

/* Collects the cache filters of a publication's nodes (after the wire). */
struct filters {
    int nodes, with_filter;
    uint32_t len0;     /* the first node's filter length */
    uint8_t first[16]; /* its first bytes */
    size_t max_msg;    /* largest encoded message */
    size_t max_packed; /* largest packed one */
};

static int collect_filters(void *arg, const proto_msg_t *m)
{
    struct filters *c = arg;
    proto_buf_t buf;
    proto_buf_init(&buf);
    char err[128];
    assert_int_equal(proto_encode(m, &buf, err, sizeof err), 0);
    if (buf.len > c->max_msg)
        c->max_msg = buf.len;
    proto_buf_t packed; /* as the RM publishes it: must fit too */
    proto_buf_init(&packed);
    assert_int_equal(proto_encode_packed(m, &packed, err, sizeof err), 0);
    if (packed.len > c->max_packed)
        c->max_packed = packed.len;
    proto_buf_close(&packed);
    proto_msg_t d;
    assert_int_equal(proto_decode(buf.data, buf.len, &d, NULL, err, sizeof err), 0);
    proto_buf_close(&buf);
    const proto_view_node_t *v =
        d.type == PROTO_VIEW_SNAPSHOT ? d.view_snapshot.nodes : d.view_delta.changed;
    uint32_t n = d.type == PROTO_VIEW_SNAPSHOT ? d.view_snapshot.nnodes : d.view_delta.nchanged;
    for (uint32_t i = 0; i < n; i++, c->nodes++) {
        if (v[i].cache_filter_len == 0)
            continue;
        if (c->with_filter++ == 0) {
            c->len0 = v[i].cache_filter_len;
            memcpy(c->first, v[i].cache_filter, sizeof c->first);
        }
    }
    proto_msg_close(&d);
    return 0;
}

static uint32_t make_filter(uint8_t *out, size_t cap, uint32_t m_bits, const char *key)
{
    bloom_t *b = NULL;
    assert_int_equal(bloom_new(m_bits, 4, &b), 0);
    bloom_add(b, key, strlen(key));
    size_t len = 0;
    assert_int_equal(bloom_encode(b, out, cap, &len), 0);
    bloom_destroy(&b);
    return (uint32_t)len;
}

/* The PN's cache advertisement: kept per node (a copy), published in snapshots and deltas,
 * replaced by a newer heartbeat's, cleared by one without; a full snapshot part of nodes with
 * the largest filters and matrices still fits in one message. */
static void test_cache_filter(void **state)
{
    (void)state;
    rmview_t *v = rmview_new();
    uint8_t f1[PROTO_MAX_CACHE_FILTER], f2[PROTO_MAX_CACHE_FILTER];
    proto_heartbeat_t hb;
    heartbeat(&hb, "pn-1", 1, 1);
    hb.cache_filter = f1;
    hb.cache_filter_len = make_filter(f1, sizeof f1, 1024, "/data/a");
    assert_int_equal(rmview_ingest(v, &hb, 100), RMVIEW_FRESH);
    memset(f1, 0, sizeof f1); /* the view holds its own copy */
    const struct rmview_node *n = rmview_find(v, "pn-1");
    assert_int_equal(n->cache_filter_len, BLOOM_HEADER_BYTES + 128);
    assert_int_equal(n->cache_filter[0], 'B');
    struct filters c = {0};
    assert_int_equal(rmview_publish_snapshot(v, 200, 7, collect_filters, &c), 0);
    assert_int_equal(c.with_filter, 2); /* the new node's delta, then the snapshot */
    assert_int_equal(c.len0, BLOOM_HEADER_BYTES + 128);
    assert_memory_equal(c.first, "BF", 2);
    /* a newer heartbeat with another filter: in the delta */
    heartbeat(&hb, "pn-1", 1, 2);
    hb.cache_filter = f2;
    hb.cache_filter_len = make_filter(f2, sizeof f2, 2048, "/data/b");
    assert_int_equal(rmview_ingest(v, &hb, 300), RMVIEW_FRESH);
    memset(&c, 0, sizeof c);
    assert_int_equal(rmview_publish_delta(v, 400, 7, collect_filters, &c), 0);
    assert_int_equal(c.with_filter, 1);
    assert_int_equal(c.len0, BLOOM_HEADER_BYTES + 256);
    /* a stale heartbeat changes nothing; one without a filter clears it */
    heartbeat(&hb, "pn-1", 1, 2);
    assert_int_equal(rmview_ingest(v, &hb, 500), RMVIEW_STALE);
    assert_int_equal(rmview_find(v, "pn-1")->cache_filter_len, BLOOM_HEADER_BYTES + 256);
    heartbeat(&hb, "pn-1", 1, 3);
    assert_int_equal(rmview_ingest(v, &hb, 600), RMVIEW_FRESH);
    assert_null(rmview_find(v, "pn-1")->cache_filter);
    assert_int_equal(rmview_find(v, "pn-1")->cache_filter_len, 0);
    /* over the bound: refused */
    heartbeat(&hb, "pn-1", 1, 4);
    hb.cache_filter = f2;
    hb.cache_filter_len = PROTO_MAX_CACHE_FILTER + 1;
    assert_int_equal(rmview_ingest(v, &hb, 700), ERR_INVAL);
    /* 600 nodes with 16x16 matrices and 4 KiB filters: two parts, each under the message limit */
    uint32_t big =
        make_filter(f2, sizeof f2, (PROTO_MAX_CACHE_FILTER - BLOOM_HEADER_BYTES) * 8, "/data/c");
    assert_int_equal(big, PROTO_MAX_CACHE_FILTER);
    char name[32];
    for (int i = 0; i < 600; i++) {
        snprintf(name, sizeof name, "pn-big-%d", i);
        heartbeat(&hb, name, 1, 1);
        hb.matrix.ncpu = hb.matrix.nmem = PROTO_MAX_MATRIX_DIM;
        for (uint32_t k = 0; k < PROTO_MAX_MATRIX_DIM; k++) {
            hb.matrix.cpu_bounds[k] = k + 1;
            hb.matrix.mem_bounds_mb[k] = 1024u * (k + 1);
        }
        for (uint32_t k = 0; k < PROTO_MAX_MATRIX_CELLS; k++)
            hb.matrix.cells_ms[k] = 4000000000u - k;
        hb.cache_filter = f2;
        hb.cache_filter_len = big;
        assert_int_equal(rmview_ingest(v, &hb, 800), RMVIEW_FRESH);
    }
    memset(&c, 0, sizeof c);
    assert_int_equal(rmview_publish_snapshot(v, 900, 7, collect_filters, &c), 0);
    assert_int_equal(c.nodes, 601 + 601); /* what changed (pn-1 too) as deltas, then the snapshot */
    assert_int_equal(c.with_filter, 2 * 600);
    assert_true(c.max_msg < PROTO_MAX_MSG_BYTES);
    assert_true(c.max_packed > 0 && c.max_packed < PROTO_MAX_MSG_BYTES);
    print_message("largest view part, 512 nodes with 4 KiB filters: %zu bytes\n", c.max_msg);
    rmview_destroy(&v);
}

/* A failed allocation refuses the heartbeat and leaves the view as it was. */
static void test_allocation_failure(void **state)
{
    (void)state;
    rmview_t *v = rmview_new();
    proto_heartbeat_t hb;
    char name[32];
    for (int i = 0; i < 64; i++) { /* fills the first node array exactly */
        snprintf(name, sizeof name, "pn-%d", i);
        heartbeat(&hb, name, 1, 1);
        assert_int_equal(rmview_ingest(v, &hb, 10), RMVIEW_FRESH);
    }
    heartbeat(&hb, "pn-new", 1, 1);
    mem_fail_after(0);
    assert_int_equal(rmview_ingest(v, &hb, 20), ERR_NOMEM);
    mem_fail_reset();
    assert_int_equal(rmview_count(v), 64);
    assert_null(rmview_find(v, "pn-new"));
    /* an update of a known node needs no allocation */
    heartbeat(&hb, "pn-3", 1, 2);
    mem_fail_after(0);
    assert_int_equal(rmview_ingest(v, &hb, 30), RMVIEW_FRESH);
    mem_fail_reset();
    heartbeat(&hb, "pn-new", 1, 1);
    assert_int_equal(rmview_ingest(v, &hb, 40), RMVIEW_FRESH);
    assert_int_equal(rmview_count(v), 65);
    assert_non_null(rmview_find(v, "pn-new"));
    rmview_destroy(&v);
}

static void test_rmconf_checks(void **state)
{
    (void)state;
    rmconf_t c;
    char msg[256];
    char *ok[] = {"rm.id=2",
                  "cluster.ids=1,2,3",
                  "cluster.raft=a:1,b:2,c:3",
                  "cluster.api=tcp://a:1,tcp://b:2,tcp://c:3",
                  "cluster.pub=tcp://a:4,tcp://b:5,tcp://c:6",
                  "ledger.virtual_clusters=x=5,y=0"};
    memset(&c, 0, sizeof c);
    assert_int_equal(rmconf_load(&c, NULL, ok, 6, msg, sizeof msg), 0);
    assert_int_equal(rmconf_replica_count(&c), 3);
    struct rmconf_replica r;
    assert_true(rmconf_replica(&c, 1, &r));
    assert_int_equal(r.id, 2);
    assert_string_equal(r.heartbeat, "tcp://b:2"); /* defaults to the API socket */
    assert_int_equal(rmconf_replica_index(&c, 3), 2);
    struct rmconf_vc vcs[RMCONF_MAX_VCS];
    size_t n = 0;
    assert_int_equal(rmconf_vcs(&c, vcs, &n, msg, sizeof msg), 0);
    assert_int_equal(n, 2);
    assert_int_equal(vcs[0].capacity, 5);
    rmconf_close(&c);
    const char *bad[][2] = {
        {"rm.id=4", "rm.id 4 is not in"},
        {"cluster.api=tcp://a:1", "one item per replica"},
        {"ledger.virtual_clusters=x", "not name=tokens"},
        {"liveness.down_after=1s", "longer than"},
        {"cluster.ids=1,1,3", "twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *sets[7];
        for (int k = 0; k < 6; k++)
            sets[k] = ok[k];
        sets[6] = (char *)bad[i][0];
        memset(&c, 0, sizeof c);
        assert_int_equal(rmconf_load(&c, NULL, sets, 7, msg, sizeof msg), ERR_CONFIG);
        if (strstr(msg, bad[i][1]) == NULL)
            fail_msg("%s: message \"%s\" lacks \"%s\"", bad[i][0], msg, bad[i][1]);
        rmconf_close(&c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_freshness),
        cmocka_unit_test(test_liveness_rule),
        cmocka_unit_test(test_publish_snapshot_and_deltas),
        cmocka_unit_test(test_allocation_failure),
        cmocka_unit_test(test_cache_filter),
        cmocka_unit_test(test_packed_to_jm_view),
        cmocka_unit_test(test_stream_and_confirm),
        cmocka_unit_test(test_compact_jm_view),
        cmocka_unit_test(test_rmconf_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
