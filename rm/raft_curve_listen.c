/* raft_curve_listen.c - the listening side of raft's CURVE transport: the ROUTER that accepts
 * connections from other replicas only, and the monitor that tells handshake failures apart. */
#include "rm/raft_curve_internal.h"

#include "common/log.h"
#include "common/map.h"
#include "common/zuv.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* ---- the listener ---- */

static void rc_reply_close(struct rc *t, const uint8_t *rid, size_t rid_len)
{
    uint8_t b = RC_CLOSE;
    (void)zuv_send_bytes(t->router, rid, rid_len, &b, 1); /* best effort; zuv counts a failure */
}

static void rc_accept(struct rc *t, const uint8_t *rid, size_t rid_len, const uint8_t *p, size_t n)
{
    if (n < 10 || p[1] != RAFT_CURVE_PROTOCOL || n - 10 > RAFT_CURVE_ADDR_MAX ||
        memchr(p + 10, '\0', n - 10) != NULL) {
        raft_curve__reject(t, RAFT_CURVE_REJ_FRAME, "a malformed OPEN");
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
        raft_curve__reject(t, RAFT_CURVE_REJ_FRAME, "an OPEN without id or address");
        rc_reply_close(t, rid, rid_len);
        return;
    }
    if (t->closing || t->accept_cb == NULL) {
        rc_reply_close(t, rid, rid_len);
        return;
    }
    struct rc_conn *c = raft_curve__conn_new(t, false);
    if (c == NULL) {
        log_warn("raft transport: %zu connections open: refusing one from %llu", t->nconns,
                 (unsigned long long)id);
        rc_reply_close(t, rid, rid_len);
        return;
    }
    memcpy(c->rid, rid, rid_len);
    c->rid_len = rid_len;
    uv_stream_t *stream = NULL;
    int rc = map_putn(&t->inbound, rid, rid_len, c, NULL) != 0 ? RAFT_NOMEM
                                                               : raft_curve__pair(c, &stream);
    if (rc != 0) {
        log_warn("raft transport: cannot accept a connection from %llu: %s", (unsigned long long)id,
                 raft_strerror(rc));
        c->state = RC_UP;
        t->st.open++;
        raft_curve__conn_drop(c, rc, true);
        return;
    }
    c->state = RC_UP;
    t->st.open++;
    t->st.accepted++;
    uint8_t ack = RC_ACK;
    (void)raft_curve__send(c, &ack, 1); /* not sent: the peer's connect deadline drops it */
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

void raft_curve__on_router(zuv_sock_t *zs, zmsg_t **msg, void *arg)
{
    (void)zs;
    struct rc *t = arg;
    zframe_t *idf = zmsg_first(*msg);
    zframe_t *body = zmsg_next(*msg);
    if (zmsg_size(*msg) != 2 || zframe_size(idf) == 0 || zframe_size(idf) > 255 ||
        zframe_size(body) == 0) {
        raft_curve__reject(t, RAFT_CURVE_REJ_FRAME, "a message that is not one frame");
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
            raft_curve__reject(t, RAFT_CURVE_REJ_AUTH,
                               "an allow-listed key that is not the replicas'");
            rc_reply_close(t, rid, rid_len);
            return;
        }
        if (c != NULL) {
            raft_curve__reject(t, RAFT_CURVE_REJ_FRAME, "a second OPEN on one connection");
            raft_curve__conn_drop(c, 0, true);
            return;
        }
        rc_accept(t, rid, rid_len, p, n);
        return;
    case RC_DATA:
    case RC_PING:
        if (c == NULL) {
            raft_curve__reject(t, RAFT_CURVE_REJ_UNKNOWN, "data for a connection not open here");
            rc_reply_close(t, rid, rid_len);
        } else if (p[0] == RC_DATA) {
            raft_curve__deliver(c, p + 1, n - 1);
        }
        return;
    case RC_CLOSE:
        if (c != NULL) {
            t->st.closed_by_peer++;
            raft_curve__conn_drop(c, 0, false);
        }
        return;
    default:
        raft_curve__reject(t, RAFT_CURVE_REJ_FRAME, "an unknown frame type");
        if (c != NULL)
            raft_curve__conn_drop(c, 0, true);
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

void raft_curve__on_monitor(zuv_sock_t *zs, zmsg_t **msg, void *arg)
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
        raft_curve__reject(t, RAFT_CURVE_REJ_AUTH, "a key not on the allow-list");
        t->failed_pending++;
        return;
    case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
        if (value == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC ||
            value == ZMQ_PROTOCOL_ERROR_ZMTP_KEY_EXCHANGE)
            raft_curve__reject(t, RAFT_CURVE_REJ_CRYPTO, "a CURVE handshake that does not decrypt");
        else
            raft_curve__reject(t, RAFT_CURVE_REJ_HANDSHAKE, "a ZMTP protocol error");
        t->failed_pending++;
        return;
    case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
        raft_curve__reject(t, RAFT_CURVE_REJ_HANDSHAKE,
                           "a connection that never completed a handshake");
        t->failed_pending++;
        return;
    case ZMQ_EVENT_DISCONNECTED:
        f = rc_fd_find(t, fd);
        if (t->failed_pending > 0)
            t->failed_pending--; /* the failed connection's end: counted already */
        else if (f != NULL && f->state == RC_FD_HANDSHAKE)
            raft_curve__reject(t, RAFT_CURVE_REJ_HANDSHAKE, "bytes that are no ZMTP greeting");
        if (f != NULL)
            f->state = RC_FD_FREE;
        return;
    default:
        return;
    }
}
