/* raft_curve_conn.c - one connection of raft's CURVE transport: its life and death, the
 * socketpair that carries its bytes to and from raft, the keepalive, and the outgoing side (a
 * DEALER per connection, its connect deadline). */
#include "rm/raft_curve_internal.h"

#include "common/err.h"
#include "common/log.h"
#include "common/map.h"
#include "common/mem.h"
#include "common/zuv.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- life and death of a connection ---- */

void raft_curve__maybe_closed(struct rc *t)
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
    raft_curve__maybe_closed(t);
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

int raft_curve__send(struct rc_conn *c, const void *body, size_t len)
{
    if (c->outbound)
        return c->dealer != NULL ? zuv_send_bytes(c->dealer, NULL, 0, body, len) : ERR_STATE;
    return c->t->router != NULL ? zuv_send_bytes(c->t->router, c->rid, c->rid_len, body, len)
                                : ERR_STATE;
}

/* Ends a connection: tells the peer (when `tell`), closes its channel and our end of the
 * socketpair (raft then reads end-of-file and fails its writes), frees it once libuv has
 * closed its handles. A connect callback not fired yet gets `status`. */
void raft_curve__conn_drop(struct rc_conn *c, int status, bool tell)
{
    struct rc *t = c->t;
    if (c->state == RC_DOWN)
        return;
    if (c->state == RC_UP)
        t->st.open--;
    if (tell) {
        uint8_t b = RC_CLOSE;
        (void)raft_curve__send(c, &b, 1); /* best effort: the peer's keepalive ends it too */
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

struct rc_conn *raft_curve__conn_new(struct rc *t, bool outbound)
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
        raft_curve__conn_drop(c, 0, true);
        return;
    }
    t->buf[0] = RC_DATA;
    if (raft_curve__send(c, t->buf, (size_t)nread + 1) != 0) {
        /* a lost chunk would corrupt the stream: end it, raft reconnects */
        log_warn("raft transport: cannot send to the peer: closing the connection");
        raft_curve__conn_drop(c, 0, true);
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
        raft_curve__conn_drop(c, 0, true); /* raft closed its end */
}

/* Hands bytes from the peer to raft. */
void raft_curve__deliver(struct rc_conn *c, const uint8_t *p, size_t n)
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
            raft_curve__conn_drop(c, 0, true);
            return;
        }
        if (n == 0)
            return;
    }
    struct rc_write *w = mem_alloc(sizeof *w + n);
    if (w == NULL) {
        raft_curve__conn_drop(c, 0, true);
        return;
    }
    memcpy(w->data, p, n);
    w->req.data = w;
    uv_buf_t b = uv_buf_init(w->data, (unsigned)n);
    if (uv_write(&w->req, (uv_stream_t *)&c->pipe, &b, 1, rc_written) != 0) {
        mem_free(w);
        raft_curve__conn_drop(c, 0, true);
    }
}

static void rc_free_handle(uv_handle_t *h)
{
    raft_free(h);
}

/* Makes the socketpair: raft's end in *out (raft_malloc'd: raft closes and frees it), ours
 * read into DATA frames. 0 or a RAFT_* code. */
int raft_curve__pair(struct rc_conn *c, uv_stream_t **out)
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
            raft_curve__conn_drop(c, 0, true);
        } else {
            (void)raft_curve__send(c, &ping, 1); /* a lost ping: the next tick sends another */
        }
    }
}

void raft_curve__tick_start(struct rc *t)
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

/* ---- the outgoing side ---- */

void raft_curve__on_dealer(zuv_sock_t *zs, zmsg_t **msg, void *arg)
{
    (void)zs;
    struct rc_conn *c = arg;
    struct rc *t = c->t;
    zframe_t *f = zmsg_first(*msg);
    if (zmsg_size(*msg) != 1 || zframe_size(f) == 0) {
        raft_curve__reject(t, RAFT_CURVE_REJ_FRAME, "a reply that is not one frame");
        raft_curve__conn_drop(c, RAFT_NOCONNECTION, true);
        return;
    }
    const uint8_t *p = zframe_data(f);
    size_t n = zframe_size(f);
    c->last_rx = uv_now(t->loop);
    switch (p[0]) {
    case RC_ACK: {
        if (c->state != RC_CONNECTING) {
            raft_curve__reject(t, RAFT_CURVE_REJ_FRAME, "an ACK out of place");
            raft_curve__conn_drop(c, 0, true);
            return;
        }
        uv_timer_stop(&c->timer);
        uv_stream_t *stream = NULL;
        int rc = raft_curve__pair(c, &stream);
        if (rc != 0) {
            raft_curve__conn_drop(c, rc, true);
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
            raft_curve__deliver(c, p + 1, n - 1);
        return;
    case RC_PING:
        return;
    case RC_CLOSE:
        if (c->state == RC_UP)
            t->st.closed_by_peer++;
        raft_curve__conn_drop(c, RAFT_NOCONNECTION, false);
        return;
    default:
        raft_curve__reject(t, RAFT_CURVE_REJ_FRAME, "an unknown frame type");
        raft_curve__conn_drop(c, RAFT_NOCONNECTION, true);
        return;
    }
}

void raft_curve__connect_timeout(uv_timer_t *h)
{
    struct rc_conn *c = h->data;
    if (c->state != RC_CONNECTING)
        return;
    c->t->st.connect_failed++;
    raft_curve__conn_drop(c, RAFT_NOCONNECTION, false);
}
