/* raft_curve.c - raft's libuv transport over CURVE ZeroMQ: socketpairs for raft, a ROUTER to
 * listen, a DEALER per outgoing connection, and a small framing (raft_curve.h). */
#include "rm/raft_curve.h"

#include "common/err.h"
#include "common/log.h"
#include "common/map.h"
#include "common/metrics.h"
#include "common/mem.h"
#include "common/zuv.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Frame types: the first byte of every frame's body. */
enum {
    RC_OPEN = 1,  /* client -> server: protocol (1 byte), raft id (8, big endian), address */
    RC_ACK = 2,   /* server -> client: the stream was handed to raft */
    RC_DATA = 3,  /* either way: stream bytes */
    RC_CLOSE = 4, /* either way: the connection is over */
    RC_PING = 5,  /* either way: keepalive */
};

enum rc_state { RC_CONNECTING, RC_UP, RC_DOWN };

#define RC_FDS_MAX 256 /* listener connections followed by the monitor */

enum { RC_FD_FREE, RC_FD_HANDSHAKE, RC_FD_UP };

struct rc_fd {
    int fd;
    uint8_t state;
    uint64_t seq; /* accept order */
};

struct rc;

/* One logical connection. */
struct rc_conn {
    struct rc *t;
    struct rc_conn *prev, *next;
    bool outbound;
    enum rc_state state;
    int status;                  /* what a connect callback not yet fired gets */
    struct raft_uv_connect *req; /* outbound, until connect_cb fired */
    raft_uv_connect_cb cb;
    zuv_sock_t *dealer; /* outbound */
    uint8_t rid[256];   /* inbound: the ROUTER's routing id of the peer */
    size_t rid_len;
    uv_timer_t timer; /* outbound: the connect deadline */
    bool timer_init;
    uv_pipe_t pipe; /* our end of the socketpair */
    bool pipe_init;
    uv_shutdown_t shut;
    int handles; /* libuv handles not yet closed */
    uint64_t last_rx;
};

struct rc {
    struct raft_uv_transport *tr;
    uv_loop_t *loop;
    const curve_t *curve;
    bool insecure;
    raft_id id;
    char address[RAFT_CURVE_ADDR_MAX + 1];
    raft_uv_accept_cb accept_cb;
    raft_uv_transport_close_cb close_cb;
    bool closing;
    zuv_sock_t *router, *mon;
    struct map inbound;           /* routing id -> struct rc_conn */
    struct rc_fd fds[RC_FDS_MAX]; /* the listener's connections (monitor) */
    uint64_t fd_seq;
    unsigned failed_pending; /* handshake failures whose DISCONNECTED has not come yet */
    struct rc_conn *conns;
    size_t nconns; /* allocated, freed once their handles closed */
    uv_timer_t tick;
    bool tick_init, tick_on, tick_closed;
    struct raft_curve_stats st;
    char mon_ep[64];
    char buf[1 + RAFT_CURVE_CHUNK]; /* a DATA frame being read from a pipe */
};

static const char *const rc_reject_names[RAFT_CURVE_REJ_COUNT] = {
    "handshake", "crypto", "auth", "frame", "unknown",
};

const char *raft_curve_reject_name(enum raft_curve_reject r)
{
    return r < RAFT_CURVE_REJ_COUNT ? rc_reject_names[r] : "?";
}

int raft_curve_endpoint(const char *address, char *out, size_t cap)
{
    if (address == NULL || address[0] == '\0')
        return ERR_INVAL;
    int n = strncmp(address, "tcp://", 6) == 0 ? snprintf(out, cap, "%s", address)
                                               : snprintf(out, cap, "tcp://%s", address);
    return n > 0 && (size_t)n < cap ? 0 : ERR_INVAL;
}

static void rc_reject(struct rc *t, enum raft_curve_reject why, const char *what)
{
    t->st.rejected[why]++;
    /* at most one line per reason per power of two, so a flood does not flood the log */
    uint64_t n = t->st.rejected[why];
    if ((n & (n - 1)) == 0)
        log_warn("raft transport: refused %s (%s, %llu so far)", what, rc_reject_names[why],
                 (unsigned long long)n);
}

/* ---- life and death of a connection ---- */

static void rc_maybe_closed(struct rc *t)
{
    if (!t->closing || t->nconns > 0 || !t->tick_closed || t->close_cb == NULL)
        return;
    raft_uv_transport_close_cb cb = t->close_cb;
    t->close_cb = NULL;
    cb(t->tr);
}

static void rc_conn_free(struct rc_conn *c)
{
    struct rc *t = c->t;
    if (c->cb != NULL) {
        raft_uv_connect_cb cb = c->cb;
        c->cb = NULL;
        cb(c->req, NULL, c->status != 0 ? c->status : RAFT_NOCONNECTION);
    }
    mem_free(c);
    t->nconns--;
    rc_maybe_closed(t);
}

static void rc_conn_handle_closed(uv_handle_t *h)
{
    struct rc_conn *c = h->data;
    if (--c->handles == 0)
        rc_conn_free(c);
}

static void rc_conn_shut(uv_shutdown_t *req, int status)
{
    (void)status;
    struct rc_conn *c = req->data;
    uv_close((uv_handle_t *)&c->pipe, rc_conn_handle_closed);
}

static int rc_send(struct rc_conn *c, const void *body, size_t len)
{
    if (c->outbound)
        return c->dealer != NULL ? zuv_send_bytes(c->dealer, NULL, 0, body, len) : ERR_STATE;
    return c->t->router != NULL ? zuv_send_bytes(c->t->router, c->rid, c->rid_len, body, len)
                                : ERR_STATE;
}

/* Ends a connection: tells the peer (when `tell`), closes its channel and our end of the
 * socketpair (raft then reads end-of-file and fails its writes), frees it once libuv has
 * closed its handles. A connect callback not fired yet gets `status`. */
static void rc_conn_drop(struct rc_conn *c, int status, bool tell)
{
    struct rc *t = c->t;
    if (c->state == RC_DOWN)
        return;
    if (c->state == RC_UP)
        t->st.open--;
    if (tell) {
        uint8_t b = RC_CLOSE;
        rc_send(c, &b, 1);
    }
    c->state = RC_DOWN;
    c->status = status;
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        t->conns = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
    if (!c->outbound)
        map_deln(&t->inbound, c->rid, c->rid_len, NULL);
    zuv_sock_close(&c->dealer);
    if (c->timer_init)
        uv_close((uv_handle_t *)&c->timer, rc_conn_handle_closed);
    if (c->pipe_init) {
        uv_read_stop((uv_stream_t *)&c->pipe);
        /* what raft has not read yet still reaches it, then end-of-file */
        c->shut.data = c;
        if (uv_shutdown(&c->shut, (uv_stream_t *)&c->pipe, rc_conn_shut) != 0)
            uv_close((uv_handle_t *)&c->pipe, rc_conn_handle_closed);
    }
    if (c->handles == 0)
        rc_conn_free(c);
}

static struct rc_conn *rc_conn_new(struct rc *t, bool outbound)
{
    if (t->nconns >= RAFT_CURVE_CONNS_MAX)
        return NULL;
    struct rc_conn *c = mem_calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->t = t;
    c->outbound = outbound;
    c->state = RC_CONNECTING;
    c->last_rx = uv_now(t->loop);
    c->next = t->conns;
    if (c->next != NULL)
        c->next->prev = c;
    t->conns = c;
    t->nconns++;
    return c;
}

/* ---- the socketpair ---- */

static void rc_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    struct rc_conn *c = h->data;
    buf->base = c->t->buf + 1;
    buf->len = RAFT_CURVE_CHUNK;
}

/* Raft wrote bytes (or closed its end). */
static void rc_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    (void)buf;
    struct rc_conn *c = stream->data;
    struct rc *t = c->t;
    if (nread == 0 || c->state != RC_UP)
        return;
    if (nread < 0) {
        rc_conn_drop(c, 0, true);
        return;
    }
    t->buf[0] = RC_DATA;
    if (rc_send(c, t->buf, (size_t)nread + 1) != 0) {
        /* a lost chunk would corrupt the stream: end it, raft reconnects */
        log_warn("raft transport: cannot send to the peer: closing the connection");
        rc_conn_drop(c, 0, true);
        return;
    }
    t->st.bytes_out += (uint64_t)nread;
}

struct rc_write {
    uv_write_t req;
    char data[];
};

static void rc_written(uv_write_t *req, int status)
{
    struct rc_conn *c = req->handle->data;
    mem_free(req->data);
    if (status < 0 && status != UV_ECANCELED && c->state == RC_UP)
        rc_conn_drop(c, 0, true); /* raft closed its end */
}

/* Hands bytes from the peer to raft. */
static void rc_deliver(struct rc_conn *c, const uint8_t *p, size_t n)
{
    if (n == 0)
        return;
    c->t->st.bytes_in += n;
    if (c->pipe.write_queue_size == 0) { /* most often raft keeps up: no copy, no request */
        uv_buf_t b = uv_buf_init((char *)p, (unsigned)n);
        int k = uv_try_write((uv_stream_t *)&c->pipe, &b, 1);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
        } else if (k != UV_EAGAIN) {
            rc_conn_drop(c, 0, true);
            return;
        }
        if (n == 0)
            return;
    }
    struct rc_write *w = mem_alloc(sizeof *w + n);
    if (w == NULL) {
        rc_conn_drop(c, 0, true);
        return;
    }
    memcpy(w->data, p, n);
    w->req.data = w;
    uv_buf_t b = uv_buf_init(w->data, (unsigned)n);
    if (uv_write(&w->req, (uv_stream_t *)&c->pipe, &b, 1, rc_written) != 0) {
        mem_free(w);
        rc_conn_drop(c, 0, true);
    }
}

static void rc_free_handle(uv_handle_t *h)
{
    raft_free(h);
}

/* Makes the socketpair: raft's end in *out (raft_malloc'd: raft closes and frees it), ours
 * read into DATA frames. 0 or a RAFT_* code. */
static int rc_pair(struct rc_conn *c, uv_stream_t **out)
{
    struct rc *t = c->t;
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
        return RAFT_IOERR;
    uv_pipe_t *p = raft_malloc(sizeof *p);
    if (p == NULL) {
        close(fds[0]);
        close(fds[1]);
        return RAFT_NOMEM;
    }
    uv_pipe_init(t->loop, p, 0);
    uv_pipe_init(t->loop, &c->pipe, 0);
    c->pipe.data = c;
    c->pipe_init = true;
    c->handles++;
    if (uv_pipe_open(p, fds[0]) != 0) {
        close(fds[0]);
        close(fds[1]);
        uv_close((uv_handle_t *)p, rc_free_handle);
        return RAFT_IOERR; /* our pipe, opened on nothing, closes with the connection */
    }
    if (uv_pipe_open(&c->pipe, fds[1]) != 0 ||
        uv_read_start((uv_stream_t *)&c->pipe, rc_alloc, rc_read) != 0) {
        close(fds[1]);
        uv_close((uv_handle_t *)p, rc_free_handle);
        return RAFT_IOERR;
    }
    *out = (uv_stream_t *)p;
    return 0;
}

/* ---- keepalive ---- */

static void rc_tick_cb(uv_timer_t *h)
{
    struct rc *t = h->data;
    uint64_t now = uv_now(t->loop);
    uint8_t ping = RC_PING;
    struct rc_conn *next;
    for (struct rc_conn *c = t->conns; c != NULL; c = next) {
        next = c->next;
        if (c->state != RC_UP)
            continue;
        if (now - c->last_rx >= RAFT_CURVE_DEAD_MS) {
            t->st.timed_out++;
            log_info("raft transport: %s connection silent for %llu ms: closed",
                     c->outbound ? "outgoing" : "incoming", (unsigned long long)(now - c->last_rx));
            rc_conn_drop(c, 0, true);
        } else {
            rc_send(c, &ping, 1);
        }
    }
}

static void rc_tick_start(struct rc *t)
{
    if (!t->tick_init) {
        uv_timer_init(t->loop, &t->tick);
        t->tick.data = t;
        t->tick_init = true;
    }
    if (!t->tick_on && !t->closing) {
        uv_timer_start(&t->tick, rc_tick_cb, RAFT_CURVE_PING_MS, RAFT_CURVE_PING_MS);
        t->tick_on = true;
    }
}

/* ---- the listener ---- */

static void rc_reply_close(struct rc *t, const uint8_t *rid, size_t rid_len)
{
    uint8_t b = RC_CLOSE;
    zuv_send_bytes(t->router, rid, rid_len, &b, 1);
}

static void rc_accept(struct rc *t, const uint8_t *rid, size_t rid_len, const uint8_t *p, size_t n)
{
    if (n < 10 || p[1] != RAFT_CURVE_PROTOCOL || n - 10 > RAFT_CURVE_ADDR_MAX ||
        memchr(p + 10, '\0', n - 10) != NULL) {
        rc_reject(t, RAFT_CURVE_REJ_FRAME, "a malformed OPEN");
        rc_reply_close(t, rid, rid_len);
        return;
    }
    raft_id id = 0;
    for (int i = 0; i < 8; i++)
        id = id << 8 | p[2 + i];
    char addr[RAFT_CURVE_ADDR_MAX + 1];
    memcpy(addr, p + 10, n - 10);
    addr[n - 10] = '\0';
    if (id == 0 || addr[0] == '\0') {
        rc_reject(t, RAFT_CURVE_REJ_FRAME, "an OPEN without id or address");
        rc_reply_close(t, rid, rid_len);
        return;
    }
    if (t->closing || t->accept_cb == NULL) {
        rc_reply_close(t, rid, rid_len);
        return;
    }
    struct rc_conn *c = rc_conn_new(t, false);
    if (c == NULL) {
        log_warn("raft transport: %zu connections open: refusing one from %llu", t->nconns,
                 (unsigned long long)id);
        rc_reply_close(t, rid, rid_len);
        return;
    }
    memcpy(c->rid, rid, rid_len);
    c->rid_len = rid_len;
    uv_stream_t *stream = NULL;
    int rc = map_putn(&t->inbound, rid, rid_len, c, NULL) != 0 ? RAFT_NOMEM : rc_pair(c, &stream);
    if (rc != 0) {
        log_warn("raft transport: cannot accept a connection from %llu: %s", (unsigned long long)id,
                 raft_strerror(rc));
        c->state = RC_UP;
        t->st.open++;
        rc_conn_drop(c, rc, true);
        return;
    }
    c->state = RC_UP;
    t->st.open++;
    t->st.accepted++;
    uint8_t ack = RC_ACK;
    rc_send(c, &ack, 1);
    t->accept_cb(t->tr, id, addr, stream);
}

/* Only replicas speak Raft. zauth lets in every allow-listed key (clients, PNs, users) and
 * names the key that passed in the frame's User-Id; replicas connect with the identity they
 * share (the RM's certificate), so an OPEN from any other key is refused. */
static bool rc_peer_is_replica(const struct rc *t, zframe_t *body)
{
    if (t->curve == NULL)
        return true; /* no keys: plaintext, loopback or --insecure */
    const char *uid = zframe_meta(body, "User-Id");
    return uid != NULL && strcmp(uid, curve_public_key(t->curve)) == 0;
}

static void rc_on_router(zuv_sock_t *zs, zmsg_t **msg, void *arg)
{
    (void)zs;
    struct rc *t = arg;
    zframe_t *idf = zmsg_first(*msg);
    zframe_t *body = zmsg_next(*msg);
    if (zmsg_size(*msg) != 2 || zframe_size(idf) == 0 || zframe_size(idf) > 255 ||
        zframe_size(body) == 0) {
        rc_reject(t, RAFT_CURVE_REJ_FRAME, "a message that is not one frame");
        if (idf != NULL && zframe_size(idf) > 0 && zframe_size(idf) <= 255)
            rc_reply_close(t, zframe_data(idf), zframe_size(idf));
        return;
    }
    const uint8_t *rid = zframe_data(idf);
    size_t rid_len = zframe_size(idf);
    const uint8_t *p = zframe_data(body);
    size_t n = zframe_size(body);
    struct rc_conn *c = map_getn(&t->inbound, rid, rid_len);
    if (c != NULL)
        c->last_rx = uv_now(t->loop);
    switch (p[0]) {
    case RC_OPEN:
        if (!rc_peer_is_replica(t, body)) {
            rc_reject(t, RAFT_CURVE_REJ_AUTH, "an allow-listed key that is not the replicas'");
            rc_reply_close(t, rid, rid_len);
            return;
        }
        if (c != NULL) {
            rc_reject(t, RAFT_CURVE_REJ_FRAME, "a second OPEN on one connection");
            rc_conn_drop(c, 0, true);
            return;
        }
        rc_accept(t, rid, rid_len, p, n);
        return;
    case RC_DATA:
    case RC_PING:
        if (c == NULL) {
            rc_reject(t, RAFT_CURVE_REJ_UNKNOWN, "data for a connection not open here");
            rc_reply_close(t, rid, rid_len);
        } else if (p[0] == RC_DATA) {
            rc_deliver(c, p + 1, n - 1);
        }
        return;
    case RC_CLOSE:
        if (c != NULL) {
            t->st.closed_by_peer++;
            rc_conn_drop(c, 0, false);
        }
        return;
    default:
        rc_reject(t, RAFT_CURVE_REJ_FRAME, "an unknown frame type");
        if (c != NULL)
            rc_conn_drop(c, 0, true);
        else
            rc_reply_close(t, rid, rid_len);
        return;
    }
}

/* The listener's socket monitor. libzmq 4.3 names no connection in handshake events (their
 * endpoint is the listener's, their value no fd), but ACCEPTED and DISCONNECTED carry the fd and
 * one I/O thread emits every event in order: a failure event is followed by its connection's
 * DISCONNECTED, a success is the oldest connection still handshaking (handshakes finish in
 * accept order but for races between simultaneous ones), and a connection that disconnects while
 * still handshaking without a failure event was dropped for a bad greeting (raw bytes). */
static struct rc_fd *rc_fd_find(struct rc *t, int fd)
{
    for (size_t i = 0; i < RC_FDS_MAX; i++) {
        if (t->fds[i].state != RC_FD_FREE && t->fds[i].fd == fd)
            return &t->fds[i];
    }
    return NULL;
}

static void rc_on_monitor(zuv_sock_t *zs, zmsg_t **msg, void *arg)
{
    (void)zs;
    struct rc *t = arg;
    zframe_t *ef = zmsg_first(*msg);
    if (ef == NULL || zframe_size(ef) != 6)
        return;
    uint16_t ev;
    uint32_t value;
    memcpy(&ev, zframe_data(ef), 2);
    memcpy(&value, zframe_data(ef) + 2, 4);
    int fd = (int)value;
    struct rc_fd *f = NULL;
    switch (ev) {
    case ZMQ_EVENT_ACCEPTED:
        if ((f = rc_fd_find(t, fd)) == NULL) {
            struct rc_fd *oldest = NULL;
            for (size_t i = 0; i < RC_FDS_MAX && f == NULL; i++) {
                if (t->fds[i].state == RC_FD_FREE)
                    f = &t->fds[i];
                else if (oldest == NULL || t->fds[i].seq < oldest->seq)
                    oldest = &t->fds[i];
            }
            if (f == NULL)
                f = oldest; /* forget the oldest: it is only counted less precisely */
        }
        f->fd = fd;
        f->state = RC_FD_HANDSHAKE;
        f->seq = ++t->fd_seq;
        return;
    case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
        t->st.handshakes++;
        for (size_t i = 0; i < RC_FDS_MAX; i++) {
            if (t->fds[i].state == RC_FD_HANDSHAKE && (f == NULL || t->fds[i].seq < f->seq))
                f = &t->fds[i];
        }
        if (f != NULL)
            f->state = RC_FD_UP;
        return;
    case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
        rc_reject(t, RAFT_CURVE_REJ_AUTH, "a key not on the allow-list");
        t->failed_pending++;
        return;
    case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
        if (value == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC ||
            value == ZMQ_PROTOCOL_ERROR_ZMTP_KEY_EXCHANGE)
            rc_reject(t, RAFT_CURVE_REJ_CRYPTO, "a CURVE handshake that does not decrypt");
        else
            rc_reject(t, RAFT_CURVE_REJ_HANDSHAKE, "a ZMTP protocol error");
        t->failed_pending++;
        return;
    case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
        rc_reject(t, RAFT_CURVE_REJ_HANDSHAKE, "a connection that never completed a handshake");
        t->failed_pending++;
        return;
    case ZMQ_EVENT_DISCONNECTED:
        f = rc_fd_find(t, fd);
        if (t->failed_pending > 0)
            t->failed_pending--; /* the failed connection's end: counted already */
        else if (f != NULL && f->state == RC_FD_HANDSHAKE)
            rc_reject(t, RAFT_CURVE_REJ_HANDSHAKE, "bytes that are no ZMTP greeting");
        if (f != NULL)
            f->state = RC_FD_FREE;
        return;
    default:
        return;
    }
}

/* ---- the outgoing side ---- */

static void rc_on_dealer(zuv_sock_t *zs, zmsg_t **msg, void *arg)
{
    (void)zs;
    struct rc_conn *c = arg;
    struct rc *t = c->t;
    zframe_t *f = zmsg_first(*msg);
    if (zmsg_size(*msg) != 1 || zframe_size(f) == 0) {
        rc_reject(t, RAFT_CURVE_REJ_FRAME, "a reply that is not one frame");
        rc_conn_drop(c, RAFT_NOCONNECTION, true);
        return;
    }
    const uint8_t *p = zframe_data(f);
    size_t n = zframe_size(f);
    c->last_rx = uv_now(t->loop);
    switch (p[0]) {
    case RC_ACK: {
        if (c->state != RC_CONNECTING) {
            rc_reject(t, RAFT_CURVE_REJ_FRAME, "an ACK out of place");
            rc_conn_drop(c, 0, true);
            return;
        }
        uv_timer_stop(&c->timer);
        uv_stream_t *stream = NULL;
        int rc = rc_pair(c, &stream);
        if (rc != 0) {
            rc_conn_drop(c, rc, true);
            return;
        }
        c->state = RC_UP;
        t->st.open++;
        t->st.connected++;
        raft_uv_connect_cb cb = c->cb;
        c->cb = NULL;
        cb(c->req, stream, 0);
        return;
    }
    case RC_DATA:
        if (c->state == RC_UP)
            rc_deliver(c, p + 1, n - 1);
        return;
    case RC_PING:
        return;
    case RC_CLOSE:
        if (c->state == RC_UP)
            t->st.closed_by_peer++;
        rc_conn_drop(c, RAFT_NOCONNECTION, false);
        return;
    default:
        rc_reject(t, RAFT_CURVE_REJ_FRAME, "an unknown frame type");
        rc_conn_drop(c, RAFT_NOCONNECTION, true);
        return;
    }
}

static void rc_connect_timeout(uv_timer_t *h)
{
    struct rc_conn *c = h->data;
    if (c->state != RC_CONNECTING)
        return;
    c->t->st.connect_failed++;
    rc_conn_drop(c, RAFT_NOCONNECTION, false);
}

/* ---- the raft_uv_transport interface ---- */

static int rc_init(struct raft_uv_transport *tr, raft_id id, const char *address)
{
    struct rc *t = tr->impl;
    if (id == 0 || address == NULL || strlen(address) > RAFT_CURVE_ADDR_MAX) {
        snprintf(tr->errmsg, sizeof tr->errmsg, "invalid raft id or address");
        return RAFT_INVALID;
    }
    t->id = id;
    snprintf(t->address, sizeof t->address, "%s", address);
    return 0;
}

static int rc_listen(struct raft_uv_transport *tr, raft_uv_accept_cb cb)
{
    struct rc *t = tr->impl;
    char ep[RAFT_CURVE_ADDR_MAX + 16], msg[256] = "";
    if (raft_curve_endpoint(t->address, ep, sizeof ep) != 0) {
        snprintf(tr->errmsg, sizeof tr->errmsg, "invalid raft address '%.200s'", t->address);
        return RAFT_INVALID;
    }
    if (curve_check_listen(ep, t->curve, t->insecure, msg, sizeof msg) != 0) {
        snprintf(tr->errmsg, sizeof tr->errmsg, "%s", msg);
        return RAFT_INVALID;
    }
    zsock_t *z = zuv_socket(ZMQ_ROUTER, 4 * RAFT_CURVE_CHUNK);
    zsock_t *mon = zsock_new(ZMQ_PAIR);
    int rc = z != NULL && mon != NULL ? 0 : RAFT_NOMEM;
    if (rc == 0) {
        zsock_set_handshake_ivl(z, RAFT_CURVE_HANDSHAKE_MS);
        if (curve_apply(z, t->curve, CURVE_SERVER, NULL, msg, sizeof msg) != 0)
            rc = RAFT_INVALID;
    }
    snprintf(t->mon_ep, sizeof t->mon_ep, "inproc://paddock-raft-monitor-%p", (void *)t);
    if (rc == 0 && (zmq_socket_monitor(
                        zsock_resolve(z), t->mon_ep,
                        ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED |
                            ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                            ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_DISCONNECTED) != 0 ||
                    zsock_connect(mon, "%s", t->mon_ep) != 0)) {
        snprintf(msg, sizeof msg, "cannot monitor the raft socket: %s", zmq_strerror(zmq_errno()));
        rc = RAFT_IOERR;
    }
    if (rc == 0 && zsock_bind(z, "%s", ep) < 0) {
        snprintf(msg, sizeof msg, "cannot bind %.200s: %s", ep, zmq_strerror(zmq_errno()));
        rc = RAFT_IOERR;
    }
    struct zuv_opts o;
    zuv_opts_init(&o);
    o.unreachable_ms = RAFT_CURVE_DEAD_MS; /* replies to a peer gone are not kept long */
    if (rc == 0 && (zuv_sock_new(&t->router, t->loop, &z, &o, rc_on_router, t) != 0 ||
                    zuv_sock_new(&t->mon, t->loop, &mon, NULL, rc_on_monitor, t) != 0)) {
        snprintf(msg, sizeof msg, "cannot watch the raft socket");
        rc = RAFT_NOMEM;
    }
    if (rc != 0) {
        if (t->router != NULL) {
            zmq_socket_monitor(zsock_resolve(zuv_sock_zsock(t->router)), NULL, 0);
            zuv_sock_close(&t->router);
        } else if (z != NULL) {
            zmq_socket_monitor(zsock_resolve(z), NULL, 0);
        }
        zsock_destroy(&z);
        zsock_destroy(&mon);
        snprintf(tr->errmsg, sizeof tr->errmsg, "%s", msg[0] != '\0' ? msg : raft_strerror(rc));
        return rc;
    }
    t->accept_cb = cb;
    rc_tick_start(t);
    log_info("raft transport: listening on %s (%s)", ep,
             t->curve != NULL ? "CURVE, allow-listed keys only" : "no keys: plaintext");
    return 0;
}

static int rc_connect(struct raft_uv_transport *tr, struct raft_uv_connect *req, raft_id id,
                      const char *address, raft_uv_connect_cb cb)
{
    (void)id;
    struct rc *t = tr->impl;
    char ep[RAFT_CURVE_ADDR_MAX + 16], msg[256] = "";
    if (t->closing)
        return RAFT_CANCELED;
    if (raft_curve_endpoint(address, ep, sizeof ep) != 0) {
        snprintf(tr->errmsg, sizeof tr->errmsg, "invalid raft address '%.200s'", address);
        return RAFT_NOCONNECTION;
    }
    zsock_t *z = zuv_socket(ZMQ_DEALER, 4 * RAFT_CURVE_CHUNK);
    if (z == NULL)
        return RAFT_NOMEM;
    if (curve_apply(z, t->curve, CURVE_CLIENT, NULL, msg, sizeof msg) != 0 ||
        zsock_connect(z, "%s", ep) != 0) {
        snprintf(tr->errmsg, sizeof tr->errmsg, "%.100s: %.100s", ep,
                 msg[0] ? msg : "cannot connect");
        zsock_destroy(&z);
        return RAFT_NOCONNECTION;
    }
    struct rc_conn *c = rc_conn_new(t, true);
    if (c == NULL) {
        zsock_destroy(&z);
        return RAFT_NOMEM;
    }
    struct zuv_opts o;
    zuv_opts_init(&o);
    o.queue_max = 1u << 20; /* the stream's order matters more than its memory */
    if (zuv_sock_new(&c->dealer, t->loop, &z, &o, rc_on_dealer, c) != 0) {
        zsock_destroy(&z);
        rc_conn_drop(c, RAFT_NOMEM, false); /* no handles yet: freed now, no callback */
        return RAFT_NOMEM;
    }
    c->req = req;
    c->cb = cb;
    uv_timer_init(t->loop, &c->timer);
    c->timer.data = c;
    c->timer_init = true;
    c->handles++;
    uv_timer_start(&c->timer, rc_connect_timeout, RAFT_CURVE_CONNECT_MS, 0);
    size_t alen = strlen(t->address);
    uint8_t open[10 + RAFT_CURVE_ADDR_MAX];
    open[0] = RC_OPEN;
    open[1] = RAFT_CURVE_PROTOCOL;
    for (int i = 0; i < 8; i++)
        open[2 + i] = (uint8_t)(t->id >> (56 - 8 * i));
    memcpy(open + 10, t->address, alen);
    rc_send(c, open, 10 + alen);
    rc_tick_start(t);
    return 0;
}

static void rc_tick_closed(uv_handle_t *h)
{
    struct rc *t = h->data;
    t->tick_closed = true;
    rc_maybe_closed(t);
}

static void rc_close(struct raft_uv_transport *tr, raft_uv_transport_close_cb cb)
{
    struct rc *t = tr->impl;
    if (t->closing)
        return;
    t->closing = true;
    t->close_cb = cb;
    t->accept_cb = NULL;
    if (t->router != NULL)
        zmq_socket_monitor(zsock_resolve(zuv_sock_zsock(t->router)), NULL, 0);
    zuv_sock_close(&t->mon);
    while (t->conns != NULL)
        rc_conn_drop(t->conns, RAFT_CANCELED, true);
    zuv_sock_close(&t->router);
    /* the close callback always comes from the loop: the tick's close is the last step */
    rc_tick_start(t);
    uv_timer_stop(&t->tick);
    t->tick_on = false;
    uv_close((uv_handle_t *)&t->tick, rc_tick_closed);
}

int raft_curve_init(struct raft_uv_transport *tr, uv_loop_t *loop, const curve_t *curve,
                    bool insecure, char *msg, size_t cap)
{
    struct rc *t = mem_calloc(1, sizeof *t);
    if (t == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "raft transport: out of memory");
    t->tr = tr;
    t->loop = loop;
    t->curve = curve;
    t->insecure = insecure;
    map_init(&t->inbound);
    memset(tr, 0, sizeof *tr);
    tr->impl = t;
    tr->init = rc_init;
    tr->listen = rc_listen;
    tr->connect = rc_connect;
    tr->close = rc_close;
    return 0;
}

void raft_curve_close(struct raft_uv_transport *tr)
{
    struct rc *t = tr->impl;
    if (t == NULL)
        return;
    map_close(&t->inbound);
    mem_free(t);
    tr->impl = NULL;
}

void raft_curve_stats(const struct raft_uv_transport *tr, struct raft_curve_stats *out)
{
    const struct rc *t = tr != NULL ? tr->impl : NULL;
    if (t == NULL)
        memset(out, 0, sizeof *out);
    else
        *out = t->st;
}

void *raft_curve_json(const struct raft_uv_transport *tr)
{
    struct raft_curve_stats st;
    raft_curve_stats(tr, &st);
    json_t *o = json_object();
    json_t *rej = json_object();
    uint64_t total = 0;
    for (int i = 0; i < RAFT_CURVE_REJ_COUNT; i++) {
        json_object_set_new(rej, rc_reject_names[i], json_integer((json_int_t)st.rejected[i]));
        total += st.rejected[i];
    }
    json_object_set_new(rej, "total", json_integer((json_int_t)total));
    json_object_set_new(o, "rejected", rej);
    const struct rc *t = tr != NULL ? tr->impl : NULL;
    json_object_set_new(o, "curve", json_boolean(t != NULL && t->curve != NULL));
#define RC_FIELD(f) json_object_set_new(o, #f, json_integer((json_int_t)st.f))
    RC_FIELD(handshakes);
    RC_FIELD(accepted);
    RC_FIELD(connected);
    RC_FIELD(connect_failed);
    RC_FIELD(timed_out);
    RC_FIELD(closed_by_peer);
    RC_FIELD(open);
    RC_FIELD(bytes_in);
    RC_FIELD(bytes_out);
#undef RC_FIELD
    return o;
}

void raft_curve_metrics(struct metrics *m, void *transport)
{
    struct raft_curve_stats st;
    raft_curve_stats(transport, &st);
    metrics_family(m, "paddock_rm_raft_transport_rejected_total", METRICS_COUNTER,
                   "Connections and frames refused on the Raft port, by reason.");
    for (int i = 0; i < RAFT_CURVE_REJ_COUNT; i++) {
        const char *l[] = {"reason", rc_reject_names[i], NULL};
        metrics_sample(m, l, (double)st.rejected[i]);
    }
    metrics_counter1(m, "paddock_rm_raft_transport_handshakes_total",
                     "CURVE handshakes completed on the Raft port.", (double)st.handshakes);
    metrics_counter1(m, "paddock_rm_raft_transport_accepted_total",
                     "Incoming Raft connections handed to raft.", (double)st.accepted);
    metrics_counter1(m, "paddock_rm_raft_transport_connected_total",
                     "Outgoing Raft connections acknowledged by the peer.", (double)st.connected);
    metrics_counter1(m, "paddock_rm_raft_transport_connect_failures_total",
                     "Outgoing Raft connections not acknowledged in time.",
                     (double)st.connect_failed);
    metrics_counter1(m, "paddock_rm_raft_transport_timeouts_total",
                     "Raft connections closed after a silence (a dead or stopped peer).",
                     (double)st.timed_out);
    metrics_counter1(m, "paddock_rm_raft_transport_peer_closes_total",
                     "Raft connections the other side closed.", (double)st.closed_by_peer);
    metrics_gauge1(m, "paddock_rm_raft_transport_connections", "Raft connections open now.",
                   (double)st.open);
    metrics_counter1(m, "paddock_rm_raft_transport_received_bytes_total",
                     "Raft stream bytes received.", (double)st.bytes_in);
    metrics_counter1(m, "paddock_rm_raft_transport_sent_bytes_total", "Raft stream bytes sent.",
                     (double)st.bytes_out);
}
