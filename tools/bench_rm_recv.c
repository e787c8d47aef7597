/* bench_rm_recv.c - bench_rm's receiving processes of the view publication (bench_rm_recv.h). */
#include "tools/bench_rm_recv.h"

#include "common/clock.h"
#include "proto/pack.h"
#include "proto/proto.h"
#include "proto/view_cells.h"
#include "tools/bench_rm.h"

#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <zlib.h>

int64_t g_t0;

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
    if (proto_view_cells_is(p, len) && len >= PROTO_VIEW_CELLS_HDR) {
        /* a compact delta: a link of the delta chain, its header fixed and plain */
        const uint8_t *q = p + PROTO_VIEW_TOPIC_LEN;
        uint64_t f[4] = {0, 0, 0, 0};
        for (int k = 0; k < 4; k++)
            for (int i = 7; i >= 0; i--)
                f[k] = f[k] << 8 | q[8 * k + i];
        memset(h, 0, sizeof *h);
        h->type = PROTO_VIEW_DELTA;
        h->view_seq = f[1];
        h->base_seq = f[2];
        h->ts = (int64_t)f[3];
        return true;
    }
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

struct bench_sub_state {
    zsock_t *z;
    int64_t t_sub, asked_ms;
    uint64_t building, seen_seq;
    uint32_t next_part;
    bool synced;
    struct bench_sub_result r;
};

/* Snapshots on or off, as jm/daemon/jmd_rm.c does (the legacy receiver takes everything). */
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
        int64_t sec = (h->ts - g_t0) / 1000;
        if (h->ts >= b->t_sub + b->r.complete_ms && sec >= 0 && sec < BENCH_FRESH_S &&
            now - h->ts > b->r.fresh_by_s[sec])
            b->r.fresh_by_s[sec] = (int32_t)(now - h->ts);
    }
    if (h->type == PROTO_VIEW_SNAPSHOT) {
        b->asked_ms = now; /* under way: asked again only when it stalls */
        b->r.parts_got++;
        b->r.snap_after += was_complete;
        if (b->r.first_part_ms < 0)
            b->r.first_part_ms = now - b->t_sub;
        if (h->part == 0) {
            b->r.snaps_broken += b->building != 0 && !was_complete;
            b->r.snaps_begun += !was_complete;
            b->building = h->view_seq, b->next_part = 1;
        } else if (b->building != 0 && h->view_seq == b->building && h->part == b->next_part) {
            b->next_part++;
        } else {
            b->r.snaps_broken += b->building != 0 && !was_complete;
            b->building = 0;
        }
        if (b->building != 0 && b->next_part == h->parts) {
            if (!was_complete)
                b->r.complete_ms = now - b->t_sub;
            b->seen_seq = b->building;
            b->building = 0;
            if (!b->synced)
                bench_want_snapshots(b->z, false);
            b->synced = true;
        }
    } else if (h->type == PROTO_VIEW_DELTA && !was_complete) {
        b->r.deltas_before++;
    }
    if (h->type == PROTO_VIEW_DELTA && b->synced) {
        if (h->base_seq != b->seen_seq) {
            b->r.gaps++;
            b->synced = false;
            b->asked_ms = now;
            bench_want_snapshots(b->z, true);
        }
        b->seen_seq = h->view_seq;
    }
}

/* Takes every message queued on subscriber b's socket; returns how many. */
static size_t bench_sub_drain(struct bench_sub_state *b, int64_t now)
{
    zframe_t *f;
    size_t got = 0;
    while ((f = zframe_recv_nowait(b->z)) != NULL) {
        got++;
        struct bench_hdr h;
        b->r.bytes += zframe_size(f);
        if (bench_hdr_read(zframe_data(f), zframe_size(f), &h))
            bench_sub_take(b, &h, now);
        zframe_destroy(&f);
    }
    return got;
}

/* A receiving process: n SUB sockets on 127.0.0.1:port; runs until every subscription has
 * completed and `quiet_ms` pass without a message, then writes its results to fd.
 *
 * It stands for n JMs, each reading its one socket when that socket's ZMQ_FD signals, so it
 * waits on every socket's ZMQ_FD in one epoll set and drains only the sockets that signalled
 * (ZMQ_FD is edge-triggered: a socket is drained to EAGAIN after each wake-up). It used to
 * zmq_poll all n sockets and then try a receive on each after every wake-up: with 125
 * sockets a process, two syscalls (getpid, poll: libzmq's command check) per socket per
 * wake-up, which took more of the two cores than the publisher (perf: 45% of all samples in
 * the receivers' own threads against 32% in the publisher's). A full pass still runs every
 * 100 ms, for what a subscription change (bench_sub_retry) may have left unsignalled. */
void bench_receiver(int n, int port, int fd, int64_t quiet_ms, int proc)
{
    struct bench_sub_state *s = calloc((size_t)n, sizeof *s);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event *evs = calloc((size_t)n, sizeof *evs);
    if (s == NULL || evs == NULL || ep < 0) {
        free(s);
        free(evs);
        if (ep >= 0)
            close(ep);
        return;
    }
    for (int i = 0; i < n; i++) {
        s[i].z = zsock_new(ZMQ_SUB);
        zsock_set_rcvhwm(s[i].z, 2 * (int)PROTO_MAX_VIEW_PARTS);
        if (g_legacy) {
            zsock_set_subscribe(s[i].z, "");
        } else {
            zmq_setsockopt(zsock_resolve(s[i].z), ZMQ_SUBSCRIBE, PROTO_VIEW_TOPIC_DELTA,
                           PROTO_VIEW_TOPIC_LEN);
            zmq_setsockopt(zsock_resolve(s[i].z), ZMQ_SUBSCRIBE, PROTO_VIEW_TOPIC_CELLS,
                           PROTO_VIEW_TOPIC_LEN);
            bench_want_snapshots(s[i].z, true);
        }
        s[i].t_sub = s[i].asked_ms = (int64_t)clock_mono_ms();
        zsock_connect(s[i].z, "tcp://127.0.0.1:%d", port);
        s[i].r.complete_ms = -1;
        s[i].r.fresh_lag_max_ms = -1;
        for (int k = 0; k < BENCH_FRESH_S; k++)
            s[i].r.fresh_by_s[k] = -1;
        s[i].r.first_part_ms = -1;
        s[i].r.proc = proc;
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, zsock_fd(s[i].z), &ev);
    }
    int64_t last = (int64_t)clock_mono_ms(), pass = 0;
    for (;;) {
        int ready = epoll_wait(ep, evs, n, 100);
        int64_t now = (int64_t)clock_mono_ms();
        size_t got = 0;
        for (int e = 0; e < ready; e++)
            got += bench_sub_drain(&s[evs[e].data.u32], now);
        if (now - pass >= 100) {
            pass = now;
            for (int i = 0; i < n; i++) {
                bench_sub_retry(&s[i], now);
                got += bench_sub_drain(&s[i], now);
            }
        }
        if (got > 0) {
            last = now;
            continue;
        }
        /* a process whose subscribers are not all whole waits longer: its connections may
         * not be accepted yet (it stopped after 3 s of silence, and counted them as never) */
        bool whole = true;
        for (int i = 0; i < n && whole; i++)
            whole = s[i].r.complete_ms >= 0;
        if (zsys_interrupted || now - last > (whole ? quiet_ms : 10 * quiet_ms))
            break;
    }
    for (int i = 0; i < n; i++) {
        if (write(fd, &s[i].r, sizeof s[i].r) != (ssize_t)sizeof s[i].r)
            break;
        zsock_destroy(&s[i].z);
    }
    close(ep);
    free(evs);
    free(s);
}
