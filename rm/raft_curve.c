/* raft_curve.c - raft's libuv transport over CURVE ZeroMQ: socketpairs for raft, a ROUTER to
 * listen, a DEALER per outgoing connection, and a small framing (raft_curve.h). This file is the
 * raft_uv_transport interface and the counters; a connection's life is in raft_curve_conn.c, the
 * listener in raft_curve_listen.c. */
#include "rm/raft_curve_internal.h"

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

void raft_curve__reject(struct rc *t, enum raft_curve_reject why, const char *what)
{
    t->st.rejected[why]++;
    /* at most one line per reason per power of two, so a flood does not flood the log */
    uint64_t n = t->st.rejected[why];
    if ((n & (n - 1)) == 0)
        log_warn("raft transport: refused %s (%s, %llu so far)", what, rc_reject_names[why],
                 (unsigned long long)n);
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
    if (rc == 0 && (zuv_sock_new(&t->router, t->loop, &z, &o, raft_curve__on_router, t) != 0 ||
                    zuv_sock_new(&t->mon, t->loop, &mon, NULL, raft_curve__on_monitor, t) != 0)) {
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
    raft_curve__tick_start(t);
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
    struct rc_conn *c = raft_curve__conn_new(t, true);
    if (c == NULL) {
        zsock_destroy(&z);
        return RAFT_NOMEM;
    }
    struct zuv_opts o;
    zuv_opts_init(&o);
    o.queue_max = 1u << 20; /* the stream's order matters more than its memory */
    if (zuv_sock_new(&c->dealer, t->loop, &z, &o, raft_curve__on_dealer, c) != 0) {
        zsock_destroy(&z);
        raft_curve__conn_drop(c, RAFT_NOMEM, false); /* no handles yet: freed now, no callback */
        return RAFT_NOMEM;
    }
    c->req = req;
    c->cb = cb;
    uv_timer_init(t->loop, &c->timer);
    c->timer.data = c;
    c->timer_init = true;
    c->handles++;
    uv_timer_start(&c->timer, raft_curve__connect_timeout, RAFT_CURVE_CONNECT_MS, 0);
    size_t alen = strlen(t->address);
    uint8_t open[10 + RAFT_CURVE_ADDR_MAX];
    open[0] = RC_OPEN;
    open[1] = RAFT_CURVE_PROTOCOL;
    for (int i = 0; i < 8; i++)
        open[2 + i] = (uint8_t)(t->id >> (56 - 8 * i));
    memcpy(open + 10, t->address, alen);
    /* not sent (the DEALER's queue is full): the connect deadline drops it */
    (void)raft_curve__send(c, open, 10 + alen);
    raft_curve__tick_start(t);
    return 0;
}

static void rc_tick_closed(uv_handle_t *h)
{
    struct rc *t = h->data;
    t->tick_closed = true;
    raft_curve__maybe_closed(t);
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
        raft_curve__conn_drop(t->conns, RAFT_CANCELED, true);
    zuv_sock_close(&t->router);
    /* the close callback always comes from the loop: the tick's close is the last step */
    raft_curve__tick_start(t);
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
