/* bench_rm_view.c - bench_rm's first part, the view publication (see tools/bench_rm.c): the cost
 * of one snapshot built, encoded, decoded and merged, then subscribers in forked receiving
 * processes following the RM's schedule of snapshots and deltas on an XPUB. */
#include "common/clock.h"
#include "common/err.h"
#include "common/mem.h"
#include "proto/pack.h"
#include "proto/proto.h"
#include "proto/view_cells.h"
#include "rm/joinwin.h"
#include "rm/rmview.h"
#include "rm/rmview_xpub.h"
#include "tools/bench_rm.h"
#include "tools/bench_rm_recv.h"
#include "jm/view.h"
#include "jm/view_proto.h"

#include <czmq.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- 1. view publication ---- */

struct bench_pub {
    zsock_t *pub;
    proto_buf_t buf;
    size_t bytes, parts;
    uint64_t gen; /* the snapshots' number (req_id), as the RM numbers them */
};

/* The encoded part in p->buf is counted and, with a socket, published. */
static int bench_pub_sent(struct bench_pub *p)
{
    p->bytes += p->buf.len;
    p->parts++;
    if (p->pub != NULL)
        zsock_send(p->pub, "b", p->buf.data, p->buf.len);
    return 0;
}

static int bench_emit(void *arg, const proto_msg_t *msg)
{
    struct bench_pub *p = arg;
    proto_msg_t numbered = *msg, *m = &numbered;
    if (m->type == PROTO_VIEW_SNAPSHOT)
        m->req_id = p->gen;
    if (bench_encode(m, &p->buf) != 0)
        return ERR_RANGE;
    return bench_pub_sent(p);
}

/* A compact delta as the RM publishes it (rm/rmserver.c rmserver__emit_cells). */
static int bench_emit_cells(void *arg, const struct proto_view_cells *c)
{
    struct bench_pub *p = arg;
    if (proto_view_cells_encode(c, &p->buf) != 0)
        return ERR_RANGE;
    return bench_pub_sent(p);
}

/* The machine's CPU time (all CPUs, in clock ticks) from /proc/stat: *busy all but idle and
 * iowait. False where it cannot be read. */
static bool bench_stat_cpu(uint64_t *busy, uint64_t *total)
{
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long v[8] = {0};
    int n = f != NULL ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                               &v[2], &v[3], &v[4], &v[5], &v[6], &v[7])
                      : 0;
    if (f != NULL)
        fclose(f);
    if (n < 5)
        return false;
    *total = 0;
    for (int i = 0; i < 8; i++)
        *total += v[i];
    *busy = *total - v[3] - v[4];
    return true;
}

/* The machine's busy share by second from the bench's start (percent; -1: not sampled): the
 * publisher, the receivers and whatever else runs. A join whose snapshots saturate the cores
 * shows as seconds near 100 before the steady share of the deltas. */
struct bench_busy {
    int32_t pct[BENCH_FRESH_S];
    int64_t sec;
    uint64_t busy, total;
};

static void bench_busy_init(struct bench_busy *b)
{
    for (int k = 0; k < BENCH_FRESH_S; k++)
        b->pct[k] = -1;
    b->sec = -1;
    b->busy = b->total = 0;
}

static void bench_busy_sample(struct bench_busy *b, int64_t now)
{
    int64_t sec = (now - g_t0) / 1000;
    if (sec == b->sec)
        return;
    uint64_t busy, total;
    if (!bench_stat_cpu(&busy, &total))
        return;
    /* the share since the last sample (a second, or more while the loop waited longer), filed
     * under the second that sample was taken in */
    if (b->sec >= 0 && b->sec < BENCH_FRESH_S && total > b->total)
        b->pct[b->sec] = (int32_t)(100 * (busy - b->busy) / (total - b->total));
    b->sec = sec, b->busy = busy, b->total = total;
}

/* CPU seconds (user + system) of this process or of its waited-for children. */
static double bench_cpu_s(int who)
{
    struct rusage ru;
    if (getrusage(who, &ru) != 0)
        return 0;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
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

/* Where the slow subscribers' time went (step 1 of issue 24's last part): the subscribers
 * whole after 5 s or never, split by what they waited for, the five slowest in full, and when
 * the publisher's snapshots went out (ms after the first subscription). */
#define BENCH_SNAP_AT 32
static int bench_cmp_done(const void *a, const void *b)
{
    const struct bench_sub_result *x = a, *y = b;
    int64_t u = x->complete_ms < 0 ? INT64_MAX : x->complete_ms;
    int64_t v = y->complete_ms < 0 ? INT64_MAX : y->complete_ms;
    return u < v ? 1 : u > v ? -1 : 0;
}

static void bench_view_slowest(struct bench_sub_result *all, size_t n, const double *snap_at,
                               int snapshots, const struct bench_busy *busy)
{
    size_t slow = 0, late_first = 0, broken = 0, retried = 0, never = 0;
    for (size_t i = 0; i < n; i++) {
        const struct bench_sub_result *r = &all[i];
        if (r->complete_ms >= 0 && r->complete_ms < 5000)
            continue;
        slow++;
        never += r->complete_ms < 0;
        late_first += r->first_part_ms < 0 || r->first_part_ms >= 5000;
        broken += r->snaps_broken > 0;
        retried += r->retries > 0;
    }
    qsort(all, n, sizeof *all, bench_cmp_done);
    printf("view: %zu subscribers whole after 5 s or never (%zu never): %zu had no snapshot part "
           "within 5 s of subscribing, %zu lost parts of a snapshot, %zu asked again\n",
           slow, never, late_first, broken, retried);
    for (size_t i = 0; i < n && i < 5; i++)
        printf("view:   slow #%zu (process %d): whole %lld ms, first part %lld ms, %u snapshots "
               "begun, %u broken, %u re-asks, %u deltas before whole, %.2f MiB received\n",
               i + 1, all[i].proc, (long long)all[i].complete_ms, (long long)all[i].first_part_ms,
               all[i].snaps_begun, all[i].snaps_broken, all[i].retries, all[i].deltas_before,
               (double)all[i].bytes / 1048576.0);
    int32_t by_s[BENCH_FRESH_S];
    int last = -1;
    for (int k = 0; k < BENCH_FRESH_S; k++) {
        by_s[k] = -1;
        for (size_t i = 0; i < n; i++)
            by_s[k] = all[i].fresh_by_s[k] > by_s[k] ? all[i].fresh_by_s[k] : by_s[k];
        last = by_s[k] >= 0 ? k : last;
    }
    printf("view: latest arrival after whole (ms), by second of publication from the start:");
    for (int k = 0; k <= last; k++)
        printf(" %d", by_s[k]);
    printf("\n");
    int busy_last = -1;
    for (int k = 0; k < BENCH_FRESH_S; k++)
        busy_last = busy->pct[k] >= 0 ? k : busy_last;
    printf("view: machine CPU busy (%%, every process: the bench's and any other), by second from "
           "the start (-1: not sampled):");
    for (int k = 0; k <= busy_last; k++)
        printf(" %d", busy->pct[k]);
    printf("\n");
    printf("view: snapshots at (ms after the first subscription):");
    for (int i = 0; i < snapshots && i < BENCH_SNAP_AT; i++)
        printf(" %.0f", snap_at[i]);
    printf("\n");
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

void bench_view(int nodes, int subscribers, int procs, double seconds)
{
    g_t0 = (int64_t)clock_mono_ms();
    mem_keep_top(VIEW_PROTO_HEAP_PAD); /* as a JM's heap (jmd_main), and its forked receivers' */
    rmview_t *v = rmview_new();
    char name[32];
    for (int i = 0; i < nodes; i++) {
        proto_heartbeat_t hb;
        snprintf(name, sizeof name, "pn-%05d", i);
        bench_fill_hb(&hb, name, 7, 1);
        rmview_ingest(v, &hb, 1000);
    }
    struct bench_pub p = {NULL, {0}, 0, 0, 0};
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
                bench_receiver(subscribers / procs + (k < subscribers % procs), port, b[1], 3000,
                               k);
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
    zsock_set_backlog(p.pub, RMVIEW_XPUB_BACKLOG);
    if (!g_every_snap) /* rm/rmserver.c: a joiner takes the snapshot made for it alone */
        zsock_set_xpub_manual(p.pub, 1);
    int port = zsock_bind(p.pub, "tcp://127.0.0.1:*");
    for (int k = 0; k < procs; k++) {
        if (write(to[k], &port, sizeof port) != (ssize_t)sizeof port)
            break;
        close(to[k]);
    }
    /* The RM's rules (rm/rmserver.c), from the first subscription on, as JMs join a running
     * RM: a subscription to snapshots gets one at once unless the last was published less than a
     * join window ago and is worth sharing (rm/joinwin.h), else at the window's end, one shared
     * by every joiner within it, or at the next delta tick if that comes first
     * (rmserver__on_pub, __on_join, __on_delta); a delta every 250 ms naming
     * the nodes whose heartbeats changed what a JM uses (every PN heartbeats each second); a
     * whole snapshot every 2 s only while someone subscribes to everything (legacy JMs). The
     * publication runs --seconds after the last receiver's subscription arrived. */
    struct joinwin jw; /* the RM's join window, from the first subscription on */
    joinwin_init(&jw, g_storm_ms);
    int64_t base = joinwin_window_ms(&jw, (size_t)nodes); /* widened up to --storm-ms */
    int joined = 0, snapshots = 0, n = 0, next_node = 0;
    uint32_t topics = 0;
    uint64_t tj = clock_mono_ms(), end = UINT64_MAX, tick = 0, seq = 2;
    double join_ms = -1, first_ms = -1;
    int64_t wanted_at = 0;
    int changed = g_delta_nodes >= 0 ? g_delta_nodes : nodes / 4;
    int snap_every = g_snapshot_ms / 250 > 0 ? g_snapshot_ms / 250 : 1;
    size_t deltas = 0, join_snaps = 0;
    double snap_at[BENCH_SNAP_AT];
    struct bench_busy busy;
    bench_busy_init(&busy);
    zpoller_t *jp = zpoller_new(p.pub, NULL);
    p.bytes = p.parts = 0;
    /* the publisher's CPU (its loop and ZeroMQ's I/O thread, which writes to every socket)
     * against the receivers': which side a thousand subscribers exhaust */
    double cpu_self0 = bench_cpu_s(RUSAGE_SELF), cpu_kids0 = bench_cpu_s(RUSAGE_CHILDREN);
    t0 = clock_mono_ns();
    while (clock_mono_ms() < end && (joined > 0 || clock_mono_ms() - tj < 30000)) {
        int64_t now = (int64_t)clock_mono_ms();
        int64_t until = tick > 0 ? (int64_t)tick : now + 1000;
        if (jw.wanted && wanted_at < until)
            until = wanted_at;
        if (until > now)
            zpoller_wait(jp, (int)(until - now));
        bench_busy_sample(&busy, (int64_t)clock_mono_ms());
        zframe_t *f;
        bool asked = false;
        while ((f = zframe_recv_nowait(p.pub)) != NULL) {
            int len = zframe_size(f) >= 1 && zframe_data(f)[0] <= 1
                          ? rmview_topic_snapshot(zframe_data(f) + 1, zframe_size(f) - 1)
                          : -1;
            if (!g_every_snap)
                rmview_xpub_apply(zsock_resolve(p.pub), zframe_data(f), zframe_size(f), p.gen + 1);
            if (len >= 0 && zframe_data(f)[0] == 1) {
                topics |= 1u << len;
                asked = true;
                if (joined < subscribers && ++joined == subscribers) {
                    join_ms = (double)(clock_mono_ms() - tj);
                    end = clock_mono_ms() + (uint64_t)(seconds * 1000);
                }
            } else if (len >= 0) {
                topics &= ~(1u << len);
            }
            zframe_destroy(&f);
        }
        now = (int64_t)clock_mono_ms();
        if (tick == 0 && joined > 0)
            tick = (uint64_t)now + 250; /* the RM's delta timer, running before anyone joined */
        bool snap = false;
        if (asked) { /* rmserver__on_pub */
            int64_t wait = joinwin_join(&jw, now, (size_t)nodes);
            if (wait == 0)
                snap = true;
            else if (wait > 0)
                wanted_at = now + wait;
        }
        if (jw.wanted && now >= wanted_at)
            snap = true;
        if (tick > 0 && (uint64_t)now >= tick) {
            tick += 250;
            n++;
            bench_touch(v, nodes, changed, &next_node, seq++, now);
            /* a snapshot served at once above does not take the tick's delta's place */
            if (joinwin_due(&jw, now, (size_t)nodes) ||
                (n % snap_every == 0 && (topics & ~(1u << PROTO_VIEW_TOPIC_LEN)) != 0)) {
                snap = true;
            } else {
                size_t parts_before = p.parts;
                /* compact deltas as the RM's, whose subscribers all take them (rmserver__on_delta)
                 */
                rmview_publish_delta_cells(v, now, 1, bench_emit,
                                           g_full_deltas || g_legacy ? NULL : bench_emit_cells, &p);
                deltas += p.parts - parts_before;
            }
        }
        if (snap) {
            uint64_t ts = clock_mono_ns();
            p.gen++;
            rmview_publish_snapshot(v, now, 1, bench_emit, &p);
            if (first_ms < 0)
                first_ms = (double)(clock_mono_ns() - ts) / 1e6;
            if (snapshots < BENCH_SNAP_AT)
                snap_at[snapshots] = (double)(clock_mono_ms() - tj);
            snapshots++;
            join_snaps += asked || jw.wanted;
            joinwin_published(&jw, now, (size_t)nodes, (int64_t)((clock_mono_ns() - ts) / 1000));
        }
    }
    zpoller_destroy(&jp);
    double pub_s = (double)(clock_mono_ns() - t0) / 1e9;
    /* results */
    int64_t *done = calloc((size_t)subscribers, sizeof *done);
    struct bench_sub_result *all = calloc((size_t)subscribers, sizeof *all);
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
            all[nres] = r;
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
    double cpu_pub = bench_cpu_s(RUSAGE_SELF) - cpu_self0;
    double cpu_rx = bench_cpu_s(RUSAGE_CHILDREN) - cpu_kids0;
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
        "waits moving in %.0f%% of them), %zu delta messages and %d snapshots (%zu for joiners, "
        "within a %lld ms join window; every %d ms for subscribers of everything; %zu asked "
        "again): %zu messages after completion, %zu lost, %zu snapshot "
        "parts after whole, latest arrival %lld ms after publication (%lld ms for those published "
        "after "
        "the subscriber was complete; %zu subscribers got none such); %.2f MiB received per "
        "subscriber, %.2f MiB/s; CPU: publisher %.1f s, receivers %.1f s\n",
        subscribers, g_legacy ? "legacy: all topics" : "delta and snapshot topics", procs, join_ms,
        complete, c50, cmax, parts, first_ms, seconds,
        g_delta_nodes >= 0 ? g_delta_nodes : nodes / 4, g_moving * 100.0, deltas, snapshots,
        join_snaps, (long long)base, g_snapshot_ms, retries, after, gaps, snap_after,
        (long long)lag_max, (long long)fresh_max, fresh_none, rx_mib, rx_mib / pub_s, cpu_pub,
        cpu_rx);
    bench_view_slowest(all, nres, snap_at, snapshots, &busy);
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
    json_object_set_new(o, "join_snapshots", json_integer((json_int_t)join_snaps));
    json_object_set_new(o, "join_window_ms", json_integer(base));
    json_object_set_new(o, "asked_again", json_integer((json_int_t)retries));
    json_object_set_new(o, "delta_messages", json_integer((json_int_t)deltas));
    json_object_set_new(o, "moving", json_real(g_moving));
    json_object_set_new(o, "legacy", json_boolean(g_legacy));
    json_object_set_new(o, "publish_s", json_real(pub_s));
    json_object_set_new(o, "publisher_cpu_s", json_real(cpu_pub));
    json_object_set_new(o, "receivers_cpu_s", json_real(cpu_rx));
    json_object_set_new(g_out, "view", o);
    free(done);
    free(all);
    free(pids);
    free(to);
    free(from);
    zsock_destroy(&p.pub);
    proto_buf_close(&p.buf);
    rmview_destroy(&v);
}
