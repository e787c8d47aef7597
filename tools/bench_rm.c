/* bench_rm - figures for the resource monitor (docs/architecture.md, "Targets").
 *
 *   bench_rm [--nodes N] [--seconds S] [--requests R] [--subscribers K] [--procs P] [--plain]
 *            [--delta-nodes D] [--snapshot-ms MS] [--moving F] [--legacy] [--failovers F]
 *            [--only view|ingest|grant|failover[,...]] [--json]
 *
 * 1. view: the pure view with N nodes (6x7 wait-time matrices, values varied per node and per
 *    heartbeat): the cost of building and encoding one full snapshot (packed, proto/pack.h,
 *    unless --plain) and a JM's cost of decoding and merging it; then K subscribers spread
 *    over P receiving processes (forked; default 4) subscribe to an XPUB on 127.0.0.1 with the
 *    RM's high-water mark, get a snapshot once all have joined, then S seconds of the RM's
 *    schedule (every 250 ms the quarter of the nodes heartbeat, or D nodes, and a delta names
 *    those whose waits moved, a share F of them, default all; a snapshot every 2 s, or MS,
 *    while anyone subscribes to snapshots). Receivers follow the view as a JM does (snapshot
 *    topic until whole, deltas after, a snapshot asked again after a missed delta), or, with
 *    --legacy, take everything as JMs did before the view topics. Per subscriber: time from
 *    subscribing to a whole view, and after that, messages lost, the latest arrival after
 *    publication and the bytes received (target: 1,000 subscribers of a 20,000-node view whole
 *    within 10 s, then fresh within 1 s).
 * 2. ingest: one paddock-rm replica (`paddock cluster up --rm 1`, CURVE on) with N simulated
 *    PNs registered; heartbeats from several DEALER sockets for S seconds; the rate the replica
 *    counted, and its RSS holding the N-node view (targets: 50,000 heartbeats/s on one core,
 *    under 200 MiB).
 * 3. grant: three replicas; R sequential token requests from one client, each committed
 *    through Raft before the grant comes back: p50 and p99 latency.
 * 4. failover: three replicas; F times, SIGKILL the leader and time until a survivor leads and
 *    has committed a write (a token request answered), then start the killed one again and wait
 *    until all three have caught up: min, p50 and max.
 * Daemons are started in a temporary directory and stopped with `paddock cluster down`.
 */
#include "common/clock.h"
#include "common/curve.h"
#include "common/err.h"
#include "common/mem.h"
#include "proto/pack.h"
#include "proto/proto.h"
#include "rm/rmclient.h"
#include "rm/rmview.h"
#include "jm/view.h"
#include "jm/view_proto.h"

#include <czmq.h>
#include <ftw.h>
#include <jansson.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

static char g_bin[PATH_MAX];
static json_t *g_out;
static bool g_plain; /* --plain: views in the version-1 encoding, not packed (proto/pack.h) */
static int g_delta_nodes = -1;   /* --delta-nodes: nodes changed per 250 ms (default: a quarter) */
static int g_snapshot_ms = 2000; /* --snapshot-ms: the RM's view.snapshot_interval */
/* --moving F: the share of heartbeats whose waits move (by up to 5 s); the others repeat the
 * node's waits with a jitter under rmview's tolerance (load changes with every heartbeat) */
static double g_moving = 1.0;
/* --legacy: receivers subscribe to everything (""), as JMs did before the view topics: every
 * periodic snapshot reaches every one of them */
static bool g_legacy;
static uint16_t g_level[100000]; /* each node's wait level while it does not move */
static bool g_level_set[100000];

static int bench_encode(const proto_msg_t *m, proto_buf_t *buf)
{
    return g_plain ? proto_encode(m, buf, NULL, 0) : proto_encode_packed(m, buf, NULL, 0);
}

/* Runs `paddock cluster VERB --dir DIR EXTRA` quietly. */
static int bench_run(const char *verb, const char *dir, const char *extra)
{
    char cmd[2 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "%s/paddock cluster %s --dir %s %s >/dev/null", g_bin, verb, dir,
             extra);
    return system(cmd);
}

static int bench_rm_tree(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* A PN's heartbeat with values as varied as a busy cluster's (each node its own address,
 * boot id, load and wait times, changing with every seq), so that what compresses in the
 * packed view is what would compress in a real one. */
static uint64_t bench_mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static void bench_fill_hb(proto_heartbeat_t *hb, const char *name, uint64_t boot, uint64_t seq)
{
    static char rack[32], ep[64];
    int idx = atoi(name + 3);
    uint64_t h = bench_mix((uint64_t)idx * 1000003u + seq);
    snprintf(rack, sizeof rack, "rack-%03d", idx / 40);
    snprintf(ep, sizeof ep, "tcp://10.%d.%d.%d:7100", idx / 65536, idx / 256 % 256, idx % 256);
    memset(hb, 0, sizeof *hb);
    hb->name = (char *)name;
    hb->rack = rack;
    hb->endpoint = ep;
    hb->boot_id = boot + bench_mix((uint64_t)idx);
    hb->seq = seq;
    hb->cpu = 16;
    hb->mem_mb = 65536;
    hb->used_cpu = (double)(h % 1600) / 100.0;
    hb->used_mem_mb = h % 65536;
    hb->running_regular = (uint32_t)(h >> 16) % 16;
    hb->running_opportunistic = (uint32_t)(h >> 20) % 4;
    hb->queued_regular = (uint32_t)(h >> 24) % 7;
    proto_matrix_t *m = &hb->matrix;
    m->ncpu = 6;
    m->nmem = 7;
    for (uint32_t r = 0; r < 6; r++)
        m->cpu_bounds[r] = 0.5 * (1u << r);
    for (uint32_t c = 0; c < 7; c++)
        m->mem_bounds_mb[c] = 1024ull << c;
    /* waits grow with the request; each node its own, moving with a share of the heartbeats */
    if (!g_level_set[idx] || (double)(bench_mix(h ^ 0x5bd1e995u) % 10000) < g_moving * 10000.0) {
        g_level[idx] = (uint16_t)(bench_mix(h ^ 0x9e3779b9u) % 5000);
        g_level_set[idx] = true;
    }
    uint32_t base = g_level[idx];
    for (uint32_t i = 0; i < 42; i++)
        m->cells_ms[i] = base + (i / 7 + i % 7) * 200 + (uint32_t)(bench_mix(h + i) % 150);
    m->timestamp_ms = clock_wall_ms();
}

/* ---- 1. view publication ---- */

struct bench_pub {
    zsock_t *pub;
    proto_buf_t buf;
    size_t bytes, parts;
};

static int bench_emit(void *arg, const proto_msg_t *m)
{
    struct bench_pub *p = arg;
    if (bench_encode(m, &p->buf) != 0)
        return ERR_RANGE;
    p->bytes += p->buf.len;
    p->parts++;
    if (p->pub != NULL)
        zsock_send(p->pub, "b", p->buf.data, p->buf.len);
    return 0;
}

/* The header of a view message without decoding its nodes: a receiver holding hundreds of
 * subscriptions measures delivery, not msgpack-c (a JM's decoding cost is measured apart). The
 * envelope is [version, type, req_id, {body}] and the encoder writes the body's fields in schema
 * order, so the integers come before the nodes. */
struct bench_hdr {
    int type;
    uint64_t view_seq, base_seq, part, parts;
    int64_t ts;
};

static bool bench_mp_int(const uint8_t **p, const uint8_t *end, int64_t *v)
{
    if (*p >= end)
        return false;
    uint8_t b = *(*p)++;
    int n = 0;
    bool sign = false;
    if (b <= 0x7f) {
        *v = b;
        return true;
    }
    if (b >= 0xe0) {
        *v = (int8_t)b;
        return true;
    }
    switch (b) {
    case 0xcc:
        n = 1;
        break;
    case 0xcd:
        n = 2;
        break;
    case 0xce:
        n = 4;
        break;
    case 0xcf:
        n = 8;
        break;
    case 0xd0:
        n = 1, sign = true;
        break;
    case 0xd1:
        n = 2, sign = true;
        break;
    case 0xd2:
        n = 4, sign = true;
        break;
    case 0xd3:
        n = 8, sign = true;
        break;
    default:
        return false;
    }
    if (end - *p < n)
        return false;
    uint64_t u = 0;
    for (int i = 0; i < n; i++)
        u = u << 8 | (*p)[i];
    *p += n;
    if (sign && n < 8 && (u >> (8 * n - 1)) != 0)
        u |= ~0ull << (8 * n);
    *v = (int64_t)u;
    return true;
}

static bool bench_hdr_read(const uint8_t *p, size_t len, struct bench_hdr *h);

/* A packed message (pack.h, header of fixed widths as proto_encode_packed writes it): inflate
 * only the first bytes, where the plain header lies. */
static bool bench_hdr_packed(const uint8_t *p, size_t len, struct bench_hdr *h)
{
    uint8_t head[256];
    static z_stream z; /* one per receiving process, reset for each message */
    static bool ready;
    if (len < 18 || p[13] != 0xc6)
        return false;
    if (!ready && inflateInit2(&z, -15) != Z_OK)
        return false;
    if (ready && inflateReset(&z) != Z_OK)
        return false;
    ready = true;
    z.next_in = (Bytef *)p + 18;
    z.avail_in = (uInt)(len - 18);
    z.next_out = head;
    z.avail_out = sizeof head;
    int zr = inflate(&z, Z_SYNC_FLUSH);
    size_t n = z.total_out;
    return (zr == Z_OK || zr == Z_STREAM_END || zr == Z_BUF_ERROR) && n > 0 &&
           bench_hdr_read(head, n, h);
}

static bool bench_hdr_read(const uint8_t *p, size_t len, struct bench_hdr *h)
{
    if (len >= 2 && p[0] == 0x94 && p[1] == PROTO_VERSION_PACKED)
        return bench_hdr_packed(p, len, h);
    const uint8_t *end = p + len;
    int64_t v, t, req;
    memset(h, 0, sizeof *h);
    if (len < 2 || *p++ != 0x94 || !bench_mp_int(&p, end, &v) || !bench_mp_int(&p, end, &t) ||
        !bench_mp_int(&p, end, &req) || p >= end)
        return false;
    h->type = (int)t;
    uint8_t b = *p++;
    uint32_t fields = (b & 0xf0) == 0x80 ? b & 0x0fu : 0;
    for (uint32_t i = 0; i < fields && p < end; i++) {
        if ((*p & 0xe0) != 0xa0)
            return false;
        size_t kl = *p++ & 0x1fu;
        if ((size_t)(end - p) < kl)
            return false;
        const char *k = (const char *)p;
        p += kl;
        if (!bench_mp_int(&p, end, &v))
            return true; /* the nodes: the integers are behind us */
#define BENCH_KEY(s) (kl == sizeof s - 1 && memcmp(k, s, kl) == 0)
        if (BENCH_KEY("view_seq"))
            h->view_seq = (uint64_t)v;
        else if (BENCH_KEY("base_seq"))
            h->base_seq = (uint64_t)v;
        else if (BENCH_KEY("part"))
            h->part = (uint64_t)v;
        else if (BENCH_KEY("parts"))
            h->parts = (uint64_t)v;
        else if (BENCH_KEY("timestamp_ms"))
            h->ts = v;
#undef BENCH_KEY
    }
    return true;
}

/* What one subscriber saw. complete_ms: from its connect to holding every part of one
 * snapshot in order (-1: never); lag: after that, publication to receipt of each later message;
 * gaps: deltas that did not follow the view_seq held (a delta lost), each answered as a JM does
 * (snapshots asked for again until whole); snap_after: snapshot parts received after whole. */
struct bench_sub_result {
    int64_t complete_ms;
    uint32_t parts_got, msgs_after, gaps, snap_after, retries;
    int64_t lag_max_ms;
    int64_t fresh_lag_max_ms; /* of the messages published after it completed (-1: none) */
    uint64_t bytes;           /* received in all */
};

struct bench_sub_state {
    zsock_t *z;
    int64_t t_sub, asked_ms;
    uint64_t building, seen_seq;
    uint32_t next_part;
    bool synced;
    struct bench_sub_result r;
};

/* Snapshots on or off, as jm/jmd_rm.c does (the legacy receiver takes everything). */
static void bench_want_snapshots(zsock_t *z, bool want)
{
    if (g_legacy)
        return;
    zmq_setsockopt(zsock_resolve(z), want ? ZMQ_SUBSCRIBE : ZMQ_UNSUBSCRIBE,
                   PROTO_VIEW_TOPIC_SNAPSHOT, PROTO_VIEW_TOPIC_LEN);
}

/* Asks again, as jmd_rm does when a snapshot asked for has sent no part for 5 s. */
static void bench_sub_retry(struct bench_sub_state *b, int64_t now)
{
    if (g_legacy || b->synced || now - b->asked_ms < 5000)
        return;
    bench_want_snapshots(b->z, false);
    bench_want_snapshots(b->z, true);
    b->asked_ms = now;
    b->r.retries++;
}

static void bench_sub_take(struct bench_sub_state *b, const struct bench_hdr *h, int64_t now)
{
    bool was_complete = b->r.complete_ms >= 0;
    if (was_complete) {
        b->r.msgs_after++;
        if (now - h->ts > b->r.lag_max_ms)
            b->r.lag_max_ms = now - h->ts;
        if (h->ts >= b->t_sub + b->r.complete_ms && now - h->ts > b->r.fresh_lag_max_ms)
            b->r.fresh_lag_max_ms = now - h->ts;
    }
    if (h->type == PROTO_VIEW_SNAPSHOT) {
        b->asked_ms = now; /* under way: asked again only when it stalls */
        b->r.parts_got++;
        b->r.snap_after += was_complete;
        if (h->part == 0)
            b->building = h->view_seq, b->next_part = 1;
        else if (b->building != 0 && h->view_seq == b->building && h->part == b->next_part)
            b->next_part++;
        else
            b->building = 0;
        if (b->building != 0 && b->next_part == h->parts) {
            if (!was_complete)
                b->r.complete_ms = now - b->t_sub;
            b->seen_seq = b->building;
            b->building = 0;
            if (!b->synced)
                bench_want_snapshots(b->z, false);
            b->synced = true;
        }
    } else if (h->type == PROTO_VIEW_DELTA && b->synced) {
        if (h->base_seq != b->seen_seq) {
            b->r.gaps++;
            b->synced = false;
            b->asked_ms = now;
            bench_want_snapshots(b->z, true);
        }
        b->seen_seq = h->view_seq;
    }
}

/* A receiving process: n SUB sockets on 127.0.0.1:port; runs until every subscription has
 * completed and `quiet_ms` pass without a message, then writes its results to fd. */
static void bench_receiver(int n, int port, int fd, int64_t quiet_ms)
{
    struct bench_sub_state *s = calloc((size_t)n, sizeof *s);
    zpoller_t *poller = zpoller_new(NULL);
    for (int i = 0; i < n; i++) {
        s[i].z = zsock_new(ZMQ_SUB);
        zsock_set_rcvhwm(s[i].z, 2 * (int)PROTO_MAX_VIEW_PARTS);
        if (g_legacy) {
            zsock_set_subscribe(s[i].z, "");
        } else {
            zmq_setsockopt(zsock_resolve(s[i].z), ZMQ_SUBSCRIBE, PROTO_VIEW_TOPIC_DELTA,
                           PROTO_VIEW_TOPIC_LEN);
            bench_want_snapshots(s[i].z, true);
        }
        s[i].t_sub = s[i].asked_ms = (int64_t)clock_mono_ms();
        zsock_connect(s[i].z, "tcp://127.0.0.1:%d", port);
        s[i].r.complete_ms = -1;
        s[i].r.fresh_lag_max_ms = -1;
        zpoller_add(poller, s[i].z);
    }
    int64_t last = (int64_t)clock_mono_ms();
    for (;;) {
        zsock_t *z = zpoller_wait(poller, 100);
        int64_t now = (int64_t)clock_mono_ms();
        for (int i = 0; i < n; i++)
            bench_sub_retry(&s[i], now);
        if (z == NULL) {
            if (zpoller_terminated(poller) || now - last > quiet_ms)
                break;
            continue;
        }
        last = now;
        /* drain every socket: zpoller names only the first ready one */
        for (int i = 0; i < n; i++) {
            zframe_t *f;
            while ((f = zframe_recv_nowait(s[i].z)) != NULL) {
                struct bench_hdr h;
                s[i].r.bytes += zframe_size(f);
                if (bench_hdr_read(zframe_data(f), zframe_size(f), &h))
                    bench_sub_take(&s[i], &h, now);
                zframe_destroy(&f);
            }
        }
    }
    for (int i = 0; i < n; i++) {
        if (write(fd, &s[i].r, sizeof s[i].r) != (ssize_t)sizeof s[i].r)
            break;
        zsock_destroy(&s[i].z);
    }
    zpoller_destroy(&poller);
    free(s);
}

static int bench_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* A JM's own cost of taking the view: decoding every part of one snapshot and merging it into a
 * jm/view (view_proto.h), as jmd_rm does; milliseconds of CPU per whole snapshot. */
struct bench_take {
    proto_buf_t buf;
    view_t *jv;
    int64_t now;
    uint64_t decode_ns;
};

static int bench_take_emit(void *arg, const proto_msg_t *m)
{
    struct bench_take *t = arg;
    if (bench_encode(m, &t->buf) != 0)
        return ERR_RANGE;
    uint64_t t0 = clock_mono_ns();
    proto_msg_t d;
    if (proto_decode(t->buf.data, t->buf.len, &d, NULL, NULL, 0) == 0) {
        for (uint32_t i = 0; i < d.view_snapshot.nnodes; i++)
            view_update_from_proto(t->jv, &d.view_snapshot.nodes[i], t->now);
        proto_msg_close(&d);
    }
    t->decode_ns += clock_mono_ns() - t0;
    return 0;
}

/* Also sets *heap_mib: the memory a JM's view of the whole cluster holds (mallinfo2, heap and
 * mmapped, after the decoding buffers are freed). */
static double bench_view_take_ms(rmview_t *v, double *heap_mib)
{
    struct bench_take t = {{0}, NULL, 5000, 0};
    proto_buf_init(&t.buf);
    const int rounds = 3;
    for (int r = 0; r < rounds; r++) {
        malloc_trim(0);
        size_t before = mallinfo2().uordblks + mallinfo2().hblkhd;
        view_new(&t.jv);
        rmview_publish_snapshot(v, t.now, 1, bench_take_emit, &t);
        *heap_mib = (double)(mallinfo2().uordblks + mallinfo2().hblkhd - before) / 1048576.0;
        view_destroy(&t.jv);
    }
    proto_buf_close(&t.buf);
    return (double)t.decode_ns / 1e6 / rounds;
}

/* Marks `k` nodes changed from node *next on (a heartbeat each), as the PNs' heartbeats do. */
static void bench_touch(rmview_t *v, int nodes, int k, int *next, uint64_t seq, int64_t now)
{
    char name[32];
    for (int i = 0; i < k; i++) {
        proto_heartbeat_t hb;
        snprintf(name, sizeof name, "pn-%05d", *next);
        bench_fill_hb(&hb, name, 7, seq);
        rmview_ingest(v, &hb, now);
        *next = (*next + 1) % nodes;
    }
}

static void bench_view(int nodes, int subscribers, int procs, double seconds)
{
    rmview_t *v = rmview_new();
    char name[32];
    for (int i = 0; i < nodes; i++) {
        proto_heartbeat_t hb;
        snprintf(name, sizeof name, "pn-%05d", i);
        bench_fill_hb(&hb, name, 7, 1);
        rmview_ingest(v, &hb, 1000);
    }
    struct bench_pub p = {NULL, {0}, 0, 0};
    proto_buf_init(&p.buf);
    rmview_publish_delta(v, 2000, 1, bench_emit,
                         &p); /* the new nodes: a snapshot's own cost next */
    p.bytes = p.parts = 0;
    const int rounds = 5;
    uint64_t t0 = clock_mono_ns();
    for (int r = 0; r < rounds; r++)
        rmview_publish_snapshot(v, 2000, 1, bench_emit, &p);
    double encode_ms = (double)(clock_mono_ns() - t0) / 1e6 / rounds;
    size_t bytes = p.bytes / rounds, parts = p.parts / rounds;
    double view_heap_mib = 0;
    double take_ms = bench_view_take_ms(v, &view_heap_mib);

    /* Receivers are forked before this process touches ZeroMQ (a context does not survive a
     * fork); each learns the port from its pipe and answers on another. */
    if (procs > subscribers)
        procs = subscribers;
    pid_t *pids = calloc((size_t)procs, sizeof *pids);
    int *to = calloc((size_t)procs, sizeof *to), *from = calloc((size_t)procs, sizeof *from);
    for (int k = 0; k < procs; k++) {
        int a[2], b[2];
        if (pipe(a) != 0 || pipe(b) != 0)
            return;
        pids[k] = fork();
        if (pids[k] == 0) {
            close(a[1]);
            close(b[0]);
            int port = 0;
            if (read(a[0], &port, sizeof port) == (ssize_t)sizeof port && port > 0)
                bench_receiver(subscribers / procs + (k < subscribers % procs), port, b[1], 3000);
            _exit(0);
        }
        close(a[0]);
        close(b[1]);
        to[k] = a[1];
        from[k] = b[0];
    }
    /* an XPUB as the RM's, with its high-water mark: a subscriber further behind loses parts */
    p.pub = zsock_new(ZMQ_XPUB);
    zsock_set_sndhwm(p.pub, 2 * (int)PROTO_MAX_VIEW_PARTS);
    zsock_set_xpub_verbose(p.pub, 1);
    int port = zsock_bind(p.pub, "tcp://127.0.0.1:*");
    for (int k = 0; k < procs; k++) {
        if (write(to[k], &port, sizeof port) != (ssize_t)sizeof port)
            break;
        close(to[k]);
    }
    /* every receiver's subscription to snapshots ("" for the legacy ones) has arrived */
    int joined = 0;
    uint32_t topics = 0;
    uint64_t tj = clock_mono_ms();
    zpoller_t *jp = zpoller_new(p.pub, NULL);
    while (joined < subscribers && clock_mono_ms() - tj < 30000) {
        if (zpoller_wait(jp, 1000) == NULL)
            continue;
        zframe_t *f = zframe_recv(p.pub);
        int len = f != NULL && zframe_size(f) >= 1 && zframe_data(f)[0] == 1
                      ? rmview_topic_snapshot(zframe_data(f) + 1, zframe_size(f) - 1)
                      : -1;
        if (len >= 0) {
            joined++;
            topics |= 1u << len;
        }
        zframe_destroy(&f);
    }
    zpoller_destroy(&jp);
    double join_ms = (double)(clock_mono_ms() - tj);
    /* The RM's schedule (rm.conf [view] defaults) and rmserver's rule for snapshots: one for
     * the joiners, then a delta every 250 ms naming the nodes whose heartbeats changed what a
     * JM uses (every PN heartbeats each second), and a whole snapshot every 2 s while anyone
     * subscribes to snapshots, or at the next tick when someone asks again. */
    p.bytes = p.parts = 0;
    t0 = clock_mono_ns();
    rmview_publish_snapshot(v, (int64_t)clock_mono_ms(), 1, bench_emit, &p);
    double first_ms = (double)(clock_mono_ns() - t0) / 1e6;
    int next = 0, snapshots = 1;
    uint64_t seq = 2, end = clock_mono_ms() + (uint64_t)(seconds * 1000), tick = clock_mono_ms();
    int changed = g_delta_nodes >= 0 ? g_delta_nodes : nodes / 4;
    int snap_every = g_snapshot_ms / 250 > 0 ? g_snapshot_ms / 250 : 1;
    size_t deltas = 0;
    for (int n = 1; clock_mono_ms() < end; n++) {
        tick += 250;
        while (clock_mono_ms() < tick)
            zclock_sleep((int)(tick - clock_mono_ms()));
        bool asked = false;
        zframe_t *f;
        while ((f = zframe_recv_nowait(p.pub)) != NULL) {
            int len = zframe_size(f) >= 1 && zframe_data(f)[0] <= 1
                          ? rmview_topic_snapshot(zframe_data(f) + 1, zframe_size(f) - 1)
                          : -1;
            if (len >= 0 && zframe_data(f)[0] == 1) {
                topics |= 1u << len;
                asked = true;
            } else if (len >= 0) {
                topics &= ~(1u << len);
            }
            zframe_destroy(&f);
        }
        int64_t now = (int64_t)clock_mono_ms();
        bench_touch(v, nodes, changed, &next, seq++, now);
        size_t parts_before = p.parts;
        if (asked || (n % snap_every == 0 && (topics & ~(1u << PROTO_VIEW_TOPIC_LEN)) != 0)) {
            rmview_publish_snapshot(v, now, 1, bench_emit, &p);
            snapshots++;
        } else {
            rmview_publish_delta(v, now, 1, bench_emit, &p);
            deltas += p.parts - parts_before;
        }
    }
    double pub_s = (double)(clock_mono_ns() - t0) / 1e9;
    /* results */
    int64_t *done = calloc((size_t)subscribers, sizeof *done);
    int64_t lag_max = 0, fresh_max = -1;
    size_t fresh_none = 0, snap_after = 0, retries = 0;
    double rx_bytes = 0;
    size_t got = 0, complete = 0, gaps = 0, after = 0, nres = 0;
    for (int k = 0; k < procs; k++) {
        struct bench_sub_result r;
        while (read(from[k], &r, sizeof r) == (ssize_t)sizeof r && nres < (size_t)subscribers) {
            got += r.parts_got;
            after += r.msgs_after;
            gaps += r.gaps;
            snap_after += r.snap_after;
            retries += r.retries;
            rx_bytes += (double)r.bytes;
            done[nres++] = r.complete_ms >= 0 ? r.complete_ms : INT64_MAX;
            complete += r.complete_ms >= 0;
            if (r.lag_max_ms > lag_max)
                lag_max = r.lag_max_ms;
            if (r.fresh_lag_max_ms > fresh_max)
                fresh_max = r.fresh_lag_max_ms;
            fresh_none += r.complete_ms >= 0 && r.fresh_lag_max_ms < 0;
        }
        close(from[k]);
        waitpid(pids[k], NULL, 0);
    }
    qsort(done, nres, sizeof *done, bench_cmp_i64);
    double c50 = nres > 0 && done[nres / 2] != INT64_MAX ? (double)done[nres / 2] : -1;
    double cmax = nres > 0 && done[nres - 1] != INT64_MAX ? (double)done[nres - 1] : -1;
    printf("view: %d nodes, snapshot of %zu parts, %.2f MiB (%s): build+encode %.1f ms, a JM's "
           "decode and merge %.1f ms, its view %.1f MiB of heap\n",
           nodes, parts, (double)bytes / 1048576.0, g_plain ? "plain" : "packed", encode_ms,
           take_ms, view_heap_mib);
    double rx_mib = nres > 0 ? rx_bytes / (double)nres / 1048576.0 : 0;
    printf(
        "view: %d subscribers (%s) in %d receiving processes (joined in %.0f ms): %zu complete "
        "(p50 %.0f ms, max %.0f ms from subscribing; -1: not all), first snapshot's %zu "
        "parts published in %.0f ms; then %.1f s of heartbeats every 250 ms (%d nodes each, "
        "waits moving in %.0f%% of them), %zu delta messages and %d snapshots (every %d ms for "
        "subscribers of everything, else "
        "when asked for; %zu asked again): %zu messages after completion, %zu lost, %zu snapshot "
        "parts after whole, latest arrival %lld ms after publication (%lld ms for those published "
        "after "
        "the subscriber was complete; %zu subscribers got none such); %.2f MiB received per "
        "subscriber, %.2f MiB/s\n",
        subscribers, g_legacy ? "legacy: all topics" : "delta and snapshot topics", procs, join_ms,
        complete, c50, cmax, parts, first_ms, seconds,
        g_delta_nodes >= 0 ? g_delta_nodes : nodes / 4, g_moving * 100.0, deltas, snapshots,
        g_snapshot_ms, retries, after, gaps, snap_after, (long long)lag_max, (long long)fresh_max,
        fresh_none, rx_mib, rx_mib / pub_s);
    json_t *o = json_object();
    json_object_set_new(o, "nodes", json_integer(nodes));
    json_object_set_new(o, "parts", json_integer((json_int_t)parts));
    json_object_set_new(o, "snapshot_bytes", json_integer((json_int_t)bytes));
    json_object_set_new(o, "encode_ms", json_real(encode_ms));
    json_object_set_new(o, "jm_take_ms", json_real(take_ms));
    json_object_set_new(o, "jm_view_heap_mib", json_real(view_heap_mib));
    json_object_set_new(o, "subscribers", json_integer(subscribers));
    json_object_set_new(o, "receiving_processes", json_integer(procs));
    json_object_set_new(o, "complete", json_integer((json_int_t)complete));
    json_object_set_new(o, "complete_p50_ms", json_real(c50));
    json_object_set_new(o, "complete_max_ms", json_real(cmax));
    json_object_set_new(o, "snapshot_parts_delivered", json_integer((json_int_t)got));
    json_object_set_new(o, "messages_after", json_integer((json_int_t)after));
    json_object_set_new(o, "lost_after", json_integer((json_int_t)gaps));
    json_object_set_new(o, "lag_max_ms", json_integer(lag_max));
    json_object_set_new(o, "fresh_lag_max_ms", json_integer(fresh_max));
    json_object_set_new(o, "fresh_none", json_integer((json_int_t)fresh_none));
    json_object_set_new(o, "published_mib", json_real((double)p.bytes / 1048576.0));
    json_object_set_new(o, "received_mib_per_subscriber", json_real(rx_mib));
    json_object_set_new(o, "snapshot_parts_after_whole", json_integer((json_int_t)snap_after));
    json_object_set_new(o, "snapshots", json_integer(snapshots));
    json_object_set_new(o, "asked_again", json_integer((json_int_t)retries));
    json_object_set_new(o, "delta_messages", json_integer((json_int_t)deltas));
    json_object_set_new(o, "moving", json_real(g_moving));
    json_object_set_new(o, "legacy", json_boolean(g_legacy));
    json_object_set_new(o, "publish_s", json_real(pub_s));
    json_object_set_new(g_out, "view", o);
    free(done);
    free(pids);
    free(to);
    free(from);
    zsock_destroy(&p.pub);
    proto_buf_close(&p.buf);
    rmview_destroy(&v);
}

/* ---- 2. heartbeat ingest ---- */

static json_t *bench_status(rmclient_t *c, int replica)
{
    char *text = NULL, msg[256];
    if (rmclient_admin(c, replica, "rm_status", NULL, 0, 2000, &text, msg, sizeof msg) != 0)
        return NULL;
    json_t *st = json_loads(text, 0, NULL);
    mem_free(text);
    return st;
}

struct bench_hb {
    const char *endpoint;
    const char *keys;
    int first, count; /* nodes [first, first + count) */
    double seconds;
    uint64_t sent;
};

static zsock_t *bench_dealer(const char *endpoint, const char *keys)
{
    zsock_t *z = zsock_new(ZMQ_DEALER);
    zsock_set_sndhwm(z, 10000);
    curve_t *cv = NULL;
    char msg[256];
    if (curve_load(&cv, keys, CURVE_DEFAULT_NAME, NULL, msg, sizeof msg) == 0)
        curve_apply(z, cv, CURVE_CLIENT, NULL, msg, sizeof msg);
    curve_destroy(&cv);
    zsock_connect(z, "%s", endpoint);
    return z;
}

static void *bench_hb_main(void *arg)
{
    struct bench_hb *b = arg;
    zsock_t *z = bench_dealer(b->endpoint, b->keys);
    proto_buf_t buf;
    proto_buf_init(&buf);
    char name[32];
    uint64_t end = clock_mono_ms() + (uint64_t)(b->seconds * 1000);
    for (uint64_t seq = 2; clock_mono_ms() < end; seq++) {
        for (int i = 0; i < b->count && clock_mono_ms() < end; i++) {
            proto_msg_t m;
            proto_msg_init(&m, PROTO_HEARTBEAT);
            snprintf(name, sizeof name, "pn-%05d", b->first + i);
            bench_fill_hb(&m.heartbeat, name, 1000 + (uint64_t)(b->first + i), seq);
            if (proto_encode(&m, &buf, NULL, 0) == 0 && zsock_send(z, "b", buf.data, buf.len) == 0)
                b->sent++;
        }
    }
    proto_buf_close(&buf);
    zsock_destroy(&z);
    return NULL;
}

/* Registers nodes [0, n) through one pipelined DEALER; returns how many were acknowledged. */
static int bench_register(const char *endpoint, const char *keys, int n)
{
    zsock_t *z = bench_dealer(endpoint, keys);
    zsock_set_sndhwm(z, 0);
    zsock_set_rcvhwm(z, 0);
    proto_buf_t buf;
    proto_buf_init(&buf);
    char name[32], key[48];
    for (int i = 0; i < n; i++) {
        proto_msg_t m;
        proto_msg_init(&m, PROTO_NODE_REGISTER);
        snprintf(name, sizeof name, "pn-%05d", i);
        snprintf(key, sizeof key, "bench-%d-%ld", i, (long)getpid());
        m.req_id = (uint64_t)i + 1;
        m.node_register.key = key;
        m.node_register.name = name;
        m.node_register.rack = "rack-1";
        m.node_register.endpoint = "tcp://127.0.0.1:9";
        m.node_register.boot_id = 1000 + (uint64_t)i;
        m.node_register.cpu = 16;
        m.node_register.mem_mb = 65536;
        if (proto_encode(&m, &buf, NULL, 0) == 0)
            zsock_send(z, "b", buf.data, buf.len);
    }
    int acked = 0;
    zpoller_t *p = zpoller_new(z, NULL);
    while (acked < n && zpoller_wait(p, 10000) != NULL) {
        zframe_t *f = zframe_recv(z);
        proto_msg_t r;
        if (f != NULL && proto_decode(zframe_data(f), zframe_size(f), &r, NULL, NULL, 0) == 0) {
            acked += r.type == PROTO_NODE_REGISTER_ACK &&
                     r.node_register_ack.verdict == PROTO_VERDICT_ACCEPTED;
            proto_msg_close(&r);
        }
        zframe_destroy(&f);
    }
    zpoller_destroy(&p);
    proto_buf_close(&buf);
    zsock_destroy(&z);
    return acked;
}

static void bench_ingest(int nodes, double seconds)
{
    char dir[] = "/tmp/paddock-benchrm-XXXXXX";
    if (mkdtemp(dir) == NULL)
        return;
    if (bench_run("up", dir, "--rm 1 --pn 0") != 0) {
        fprintf(stderr, "bench_rm: cluster up failed (see %s)\n", dir);
        return;
    }
    char msg[256], keys[PATH_MAX + 8];
    snprintf(keys, sizeof keys, "%s/keys", dir);
    rmclient_t *c = NULL;
    rmclient_open(&c, dir, NULL, NULL, msg, sizeof msg);
    const char *api = rmclient_endpoint(c, 0);
    struct rmclient_cluster cl;
    char hbep[256] = "";
    if (rmclient_cluster_load(dir, &cl, msg, sizeof msg) == 0)
        snprintf(hbep, sizeof hbep, "%s", cl.heartbeat[0]);
    rmclient_cluster_close(&cl);
    uint64_t t0 = clock_mono_ms();
    int acked = bench_register(api, keys, nodes);
    double reg_s = (double)(clock_mono_ms() - t0) / 1000.0;
    json_t *before = bench_status(c, 0);
    enum { SENDERS = 4 };
    struct bench_hb hb[SENDERS];
    pthread_t th[SENDERS];
    t0 = clock_mono_ms();
    for (int i = 0; i < SENDERS; i++) {
        hb[i] = (struct bench_hb){hbep[0] ? hbep : api, keys,    i * nodes / SENDERS,
                                  nodes / SENDERS,      seconds, 0};
        pthread_create(&th[i], NULL, bench_hb_main, &hb[i]);
    }
    uint64_t sent = 0;
    for (int i = 0; i < SENDERS; i++) {
        pthread_join(th[i], NULL);
        sent += hb[i].sent;
    }
    /* let the replica drain what is queued, then read its counter */
    json_t *after = NULL;
    uint64_t got = 0, prev = UINT64_MAX;
    for (int k = 0; k < 100; k++) {
        json_decref(after);
        after = bench_status(c, 0);
        got = (uint64_t)json_integer_value(json_object_get(after, "heartbeats")) -
              (uint64_t)json_integer_value(json_object_get(before, "heartbeats"));
        if (got == prev || got >= sent)
            break;
        prev = got;
        zclock_sleep(100);
    }
    double el = (double)(clock_mono_ms() - t0) / 1000.0;
    long rss = (long)json_integer_value(json_object_get(after, "rss_kb"));
    long view_nodes = (long)json_integer_value(json_object_get(after, "view_nodes"));
    printf("ingest: %d of %d simulated PNs registered in %.2f s; %llu heartbeats sent, %llu "
           "ingested in %.2f s: %.0f heartbeats/s (CURVE on); RM RSS %.1f MiB with a %ld-node "
           "view\n",
           acked, nodes, reg_s, (unsigned long long)sent, (unsigned long long)got, el,
           (double)got / el, rss / 1024.0, view_nodes);
    json_t *o = json_object();
    json_object_set_new(o, "nodes_registered", json_integer(acked));
    json_object_set_new(o, "register_s", json_real(reg_s));
    json_object_set_new(o, "heartbeats_sent", json_integer((json_int_t)sent));
    json_object_set_new(o, "heartbeats_ingested", json_integer((json_int_t)got));
    json_object_set_new(o, "heartbeats_per_s", json_real((double)got / el));
    json_object_set_new(o, "rss_mib", json_real(rss / 1024.0));
    json_object_set_new(o, "view_nodes", json_integer(view_nodes));
    json_object_set_new(g_out, "ingest", o);
    json_decref(before);
    json_decref(after);
    rmclient_destroy(&c);
    bench_run("down", dir, "");
    nftw(dir, bench_rm_tree, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- 3. token-grant commit latency ---- */

static int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void bench_grant(int requests)
{
    char dir[] = "/tmp/paddock-benchrm-XXXXXX";
    if (mkdtemp(dir) == NULL)
        return;
    if (bench_run("up", dir, "--rm 3 --pn 0 --tokens 1000") != 0) {
        fprintf(stderr, "bench_rm: cluster up failed (see %s)\n", dir);
        return;
    }
    char msg[256], key[64], jid[32] = "";
    rmclient_t *c = NULL;
    rmclient_open(&c, dir, NULL, NULL, msg, sizeof msg);
    proto_msg_t req, rep;
    proto_msg_init(&req, PROTO_JOB_REGISTER);
    rmclient_new_key(key, sizeof key);
    req.job_register.key = key;
    req.job_register.name = "bench";
    req.job_register.virtual_cluster = "default";
    if (rmclient_call(c, &req, &rep, 1000, 10000, msg, sizeof msg) == 0 &&
        rep.type == PROTO_JOB_REGISTER_REPLY)
        snprintf(jid, sizeof jid, "%s", rep.job_register_reply.job_id);
    proto_msg_close(&rep);
    double *lat = calloc((size_t)requests, sizeof *lat);
    int ok = 0;
    for (int i = 0; i < requests && jid[0] != '\0'; i++) {
        proto_msg_init(&req, PROTO_TOKEN_REQUEST);
        rmclient_new_key(key, sizeof key);
        req.token_request.key = key;
        req.token_request.job_id = jid;
        req.token_request.tokens = (uint32_t)(i % 100);
        uint64_t t0 = clock_mono_ns();
        if (rmclient_call(c, &req, &rep, 1000, 10000, msg, sizeof msg) == 0 &&
            rep.type == PROTO_TOKEN_GRANT)
            lat[ok++] = (double)(clock_mono_ns() - t0) / 1e6;
        proto_msg_close(&rep);
    }
    qsort(lat, (size_t)ok, sizeof *lat, bench_cmp);
    double p50 = ok > 0 ? lat[ok / 2] : 0, p99 = ok > 0 ? lat[(size_t)ok * 99 / 100] : 0;
    printf("grant: %d token requests committed on 3 replicas (CURVE on): p50 %.3f ms, p99 %.3f "
           "ms, max %.3f ms\n",
           ok, p50, p99, ok > 0 ? lat[ok - 1] : 0);
    json_t *o = json_object();
    json_object_set_new(o, "requests", json_integer(ok));
    json_object_set_new(o, "p50_ms", json_real(p50));
    json_object_set_new(o, "p99_ms", json_real(p99));
    json_object_set_new(o, "max_ms", json_real(ok > 0 ? lat[ok - 1] : 0));
    json_object_set_new(g_out, "grant", o);
    free(lat);
    rmclient_destroy(&c);
    bench_run("down", dir, "");
    nftw(dir, bench_rm_tree, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- 4. failover ---- */

/* The index of a replica (0..2) that is a ready leader, with its id, or -1. */
static int bench_leader(rmclient_t *c, int skip, uint64_t *id)
{
    for (int i = 0; i < (int)rmclient_count(c); i++) {
        if (i == skip)
            continue;
        char *text = NULL, msg[128];
        if (rmclient_admin(c, i, "rm_status", NULL, 0, 100, &text, msg, sizeof msg) != 0)
            continue;
        json_t *st = json_loads(text, 0, NULL);
        mem_free(text);
        bool ready = json_is_true(json_object_get(st, "ready"));
        *id = (uint64_t)json_integer_value(json_object_get(st, "id"));
        json_decref(st);
        if (ready)
            return i;
    }
    return -1;
}

/* A token request for `jid` answered by the cluster: 0. */
static int bench_write(rmclient_t *c, const char *jid, int deadline_ms)
{
    char key[64], msg[256];
    proto_msg_t req, rep;
    proto_msg_init(&req, PROTO_TOKEN_REQUEST);
    rmclient_new_key(key, sizeof key);
    req.token_request.key = key;
    req.token_request.job_id = (char *)jid;
    req.token_request.tokens = 1;
    int rc = rmclient_call(c, &req, &rep, 50, deadline_ms, msg, sizeof msg);
    if (rc == 0 && rep.type != PROTO_TOKEN_GRANT)
        rc = -1;
    proto_msg_close(&rep);
    return rc;
}

static void bench_failover(int rounds)
{
    char dir[] = "/tmp/paddock-benchrm-XXXXXX";
    if (mkdtemp(dir) == NULL)
        return;
    if (bench_run("up", dir, "--rm 3 --pn 0 --tokens 1000") != 0) {
        fprintf(stderr, "bench_rm: cluster up failed (see %s)\n", dir);
        return;
    }
    char msg[256], key[64], jid[32] = "";
    rmclient_t *c = NULL;
    rmclient_open(&c, dir, NULL, NULL, msg, sizeof msg);
    proto_msg_t req, rep;
    proto_msg_init(&req, PROTO_JOB_REGISTER);
    rmclient_new_key(key, sizeof key);
    req.job_register.key = key;
    req.job_register.name = "bench-failover";
    req.job_register.virtual_cluster = "default";
    if (rmclient_call(c, &req, &rep, 1000, 10000, msg, sizeof msg) == 0 &&
        rep.type == PROTO_JOB_REGISTER_REPLY)
        snprintf(jid, sizeof jid, "%s", rep.job_register_reply.job_id);
    proto_msg_close(&rep);
    double *elect = calloc((size_t)rounds, sizeof *elect);
    double *commit = calloc((size_t)rounds, sizeof *commit);
    int ok = 0;
    for (int r = 0; r < rounds && jid[0] != '\0'; r++) {
        uint64_t lid = 0;
        int li = -1;
        for (uint64_t end = clock_mono_ms() + 10000; li < 0 && clock_mono_ms() < end;)
            li = bench_leader(c, -1, &lid);
        char pidf[PATH_MAX + 32];
        snprintf(pidf, sizeof pidf, "%s/rm-%llu.pid", dir, (unsigned long long)lid);
        FILE *f = fopen(pidf, "r");
        long pid = 0;
        if (f == NULL || fscanf(f, "%ld", &pid) != 1)
            pid = 0;
        if (f != NULL)
            fclose(f);
        if (li < 0 || pid <= 0 || bench_write(c, jid, 5000) != 0)
            break;
        uint64_t t0 = clock_mono_ns();
        kill((pid_t)pid, SIGKILL);
        uint64_t nid = 0, t1 = 0;
        int ni = -1;
        for (uint64_t end = clock_mono_ms() + 10000; ni < 0 && clock_mono_ms() < end;)
            ni = bench_leader(c, li, &nid);
        t1 = clock_mono_ns();
        if (ni < 0 || bench_write(c, jid, 10000) != 0)
            break;
        uint64_t t2 = clock_mono_ns();
        elect[ok] = (double)(t1 - t0) / 1e6;
        commit[ok++] = (double)(t2 - t0) / 1e6;
        /* the killed replica again; it is caught up once a write commits with all three */
        for (uint64_t end = clock_mono_ms() + 5000; clock_mono_ms() < end;) {
            if (kill((pid_t)pid, 0) != 0)
                break;
            usleep(20000);
        }
        if (bench_run("up", dir, "--rm 3 --pn 0 --tokens 1000") != 0)
            break;
        for (uint64_t end = clock_mono_ms() + 10000; clock_mono_ms() < end;) {
            bench_write(c, jid, 2000);
            json_t *all = NULL;
            char *text = NULL;
            int same = 0;
            long long ci = -1;
            for (int i = 0; i < 3; i++) {
                if (rmclient_admin(c, i, "rm_status", NULL, 0, 200, &text, msg, sizeof msg) != 0)
                    continue;
                all = json_loads(text, 0, NULL);
                mem_free(text);
                long long v = json_integer_value(json_object_get(all, "last_applied"));
                same += ci < 0 || v == ci;
                ci = v;
                json_decref(all);
            }
            if (same == 3)
                break;
            usleep(100000);
        }
    }
    qsort(elect, (size_t)ok, sizeof *elect, bench_cmp);
    qsort(commit, (size_t)ok, sizeof *commit, bench_cmp);
    double e50 = ok > 0 ? elect[ok / 2] : 0, c50 = ok > 0 ? commit[ok / 2] : 0;
    printf("failover: %d leader kills (SIGKILL) on 3 replicas: new ready leader min %.1f p50 %.1f "
           "max %.1f ms; first commit after the kill min %.1f p50 %.1f max %.1f ms\n",
           ok, ok > 0 ? elect[0] : 0, e50, ok > 0 ? elect[ok - 1] : 0, ok > 0 ? commit[0] : 0, c50,
           ok > 0 ? commit[ok - 1] : 0);
    json_t *o = json_object();
    json_object_set_new(o, "kills", json_integer(ok));
    json_object_set_new(o, "leader_p50_ms", json_real(e50));
    json_object_set_new(o, "leader_max_ms", json_real(ok > 0 ? elect[ok - 1] : 0));
    json_object_set_new(o, "commit_p50_ms", json_real(c50));
    json_object_set_new(o, "commit_max_ms", json_real(ok > 0 ? commit[ok - 1] : 0));
    json_object_set_new(g_out, "failover", o);
    free(elect);
    free(commit);
    rmclient_destroy(&c);
    bench_run("down", dir, "");
    nftw(dir, bench_rm_tree, 16, FTW_DEPTH | FTW_PHYS);
}

static bool bench_want(const char *only, const char *what)
{
    if (only == NULL)
        return true;
    size_t n = strlen(what);
    for (const char *p = only; (p = strstr(p, what)) != NULL; p += n) {
        if ((p == only || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
            return true;
    }
    return false;
}

int main(int argc, char **argv)
{
    int nodes = 20000, requests = 2000, subscribers = 100, failovers = 10, procs = 4;
    const char *only = NULL;
    double seconds = 3;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--nodes") == 0 && i + 1 < argc)
            nodes = atoi(argv[++i]);
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--requests") == 0 && i + 1 < argc)
            requests = atoi(argv[++i]);
        else if (strcmp(argv[i], "--subscribers") == 0 && i + 1 < argc)
            subscribers = atoi(argv[++i]);
        else if (strcmp(argv[i], "--procs") == 0 && i + 1 < argc)
            procs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--failovers") == 0 && i + 1 < argc)
            failovers = atoi(argv[++i]);
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (strcmp(argv[i], "--plain") == 0)
            g_plain = true;
        else if (strcmp(argv[i], "--delta-nodes") == 0 && i + 1 < argc)
            g_delta_nodes = atoi(argv[++i]);
        else if (strcmp(argv[i], "--snapshot-ms") == 0 && i + 1 < argc)
            g_snapshot_ms = atoi(argv[++i]);
        else if (strcmp(argv[i], "--moving") == 0 && i + 1 < argc)
            g_moving = atof(argv[++i]);
        else if (strcmp(argv[i], "--legacy") == 0)
            g_legacy = true;
        else {
            fprintf(stderr, "usage: bench_rm [--nodes N] [--seconds S] [--requests R] "
                            "[--subscribers K] [--procs P] [--plain] [--delta-nodes D] "
                            "[--snapshot-ms MS] [--moving F] [--legacy] [--failovers F] [--only "
                            "view|ingest|grant|failover[,...]] [--json]\n");
            return 2;
        }
    }
    if (nodes < 4 || nodes > 99999 || requests < 1 || subscribers < 1 || seconds <= 0 ||
        failovers < 1 || procs < 1 || procs > 64 || g_delta_nodes > nodes || g_snapshot_ms < 250 ||
        !(g_moving >= 0 && g_moving <= 1)) {
        fprintf(stderr, "bench_rm: out-of-range option\n");
        return 2;
    }
    zsys_handler_set(NULL);
    const char *env = getenv("PADDOCK_BIN_DIR");
    if (env != NULL) {
        snprintf(g_bin, sizeof g_bin, "%s", env);
    } else {
        ssize_t n = readlink("/proc/self/exe", g_bin, sizeof g_bin - 1);
        g_bin[n > 0 ? n : 0] = '\0';
        char *slash = strrchr(g_bin, '/');
        if (slash != NULL)
            *slash = '\0';
    }
    g_out = json_object();
    if (bench_want(only, "view"))
        bench_view(nodes, subscribers, procs, seconds);
    if (bench_want(only, "ingest"))
        bench_ingest(nodes, seconds);
    if (bench_want(only, "grant"))
        bench_grant(requests);
    if (bench_want(only, "failover"))
        bench_failover(failovers);
    if (json) {
        char *t = json_dumps(g_out, JSON_INDENT(2));
        printf("%s\n", t);
        free(t);
    }
    json_decref(g_out);
    return 0;
}
