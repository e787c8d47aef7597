/* zuv.c - ZeroMQ sockets in a libuv loop: the edge-triggered drain and the send queues. */
#include "common/zuv.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/id.h"
#include "common/log.h"
#include "common/map.h"
#include "common/mem.h"

/* A FIFO of messages (ring buffer). */
struct zuv__q {
    zmsg_t **items;
    size_t head, len, cap;
};

/* A ROUTER peer with messages waiting. Exists only while its queue is non-empty. */
struct zuv__peer {
    struct zuv__peer *prev, *next; /* the socket's pending list */
    struct zuv__q q;
    bool unreachable;           /* the last attempt said EHOSTUNREACH */
    uint64_t unreachable_since; /* uv_now() of the first such attempt */
    size_t id_len;
    unsigned char id[256]; /* routing ids are 1..255 bytes */
};

struct zuv_sock {
    uv_loop_t *loop;
    zsock_t *sock;
    void *handle; /* the libzmq socket */
    bool router;
    uv_poll_t poll;
    uv_idle_t idle;
    uv_timer_t timer;
    int open_handles; /* freed when the last close callback runs */
    struct zuv_opts opts;
    zuv_recv_fn *on_recv;
    void *arg;
    struct zuv_stats st;
    struct zuv__q q;           /* non-ROUTER sockets */
    struct map peers;          /* ROUTER: routing id -> struct zuv__peer, pending ones only */
    struct zuv__peer *pending; /* ROUTER: list of the same peers */
    bool in_drain;
    bool closing;
    bool idle_on, timer_on;
    uint64_t full_drops; /* sends refused with ERR_FULL */
};

void zuv_opts_init(struct zuv_opts *o)
{
    o->batch = 256;
    o->queue_max = 100000;
    o->unreachable_ms = 30000;
    o->retry_ms = 5;
    o->on_drop = NULL;
}

int zuv_global_init(void)
{
    static bool done;
    if (done)
        return 0;
    /* libuv owns SIGINT/SIGTERM: czmq must neither install handlers now nor from zactor_new. */
    setenv("ZSYS_SIGHANDLER", "false", 0);
    zsys_handler_set(NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGPIPE, &sa, NULL) != 0)
        return ERR_SYS;
    if (zsys_init() == NULL)
        return ERR_SYS;
    done = true;
    return 0;
}

zsock_t *zuv_socket(int type, int64_t max_msg_size)
{
    if (zuv_global_init() != 0)
        return NULL;
    zsock_t *s = zsock_new(type);
    if (s == NULL)
        return NULL;
    zsock_set_linger(s, 0);
    if (max_msg_size > 0)
        zsock_set_maxmsgsize(s, (int)(max_msg_size > 0x7fffffff ? 0x7fffffff : max_msg_size));
    return s;
}

/* ---- message queues -------------------------------------------------------------------- */

static int zuv__q_push(struct zuv__q *q, zmsg_t *m)
{
    if (q->len == q->cap) {
        size_t ncap = q->cap < 16 ? 16 : q->cap * 2;
        zmsg_t **items = mem_calloc(ncap, sizeof *items);
        if (items == NULL)
            return ERR_NOMEM;
        for (size_t i = 0; i < q->len; i++)
            items[i] = q->items[(q->head + i) % q->cap];
        mem_free(q->items);
        q->items = items;
        q->cap = ncap;
        q->head = 0;
    }
    q->items[(q->head + q->len) % q->cap] = m;
    q->len++;
    return 0;
}

static zmsg_t *zuv__q_peek(const struct zuv__q *q)
{
    return q->len > 0 ? q->items[q->head] : NULL;
}

static zmsg_t *zuv__q_pop(struct zuv__q *q)
{
    if (q->len == 0)
        return NULL;
    zmsg_t *m = q->items[q->head];
    q->head = (q->head + 1) % q->cap;
    q->len--;
    return m;
}

/* Destroys every message; returns how many there were. */
static size_t zuv__q_clear(struct zuv__q *q)
{
    size_t n = q->len;
    zmsg_t *m;
    while ((m = zuv__q_pop(q)) != NULL)
        zmsg_destroy(&m);
    mem_free(q->items);
    memset(q, 0, sizeof *q);
    return n;
}

/* ---- socket plumbing ------------------------------------------------------------------- */

static int zuv__events(zuv_sock_t *s)
{
    int ev = 0;
    size_t len = sizeof ev;
    if (s->handle == NULL || zmq_getsockopt(s->handle, ZMQ_EVENTS, &ev, &len) != 0)
        return 0;
    return ev;
}

/* Hands a message to ZeroMQ without blocking. Returns 0 (sent; the message is still the
 * caller's to destroy), -EAGAIN / -EHOSTUNREACH (nothing sent; retry later) or another
 * -errno (nothing sent, or a partial message: drop it). */
static int zuv__try_send(zuv_sock_t *s, zmsg_t *m)
{
    size_t n = zmsg_size(m);
    size_t i = 0;
    for (zframe_t *f = zmsg_first(m); f != NULL; f = zmsg_next(m), i++) {
        int flags = ZMQ_DONTWAIT | (i + 1 < n ? ZMQ_SNDMORE : 0);
        int rc = zmq_send(s->handle, zframe_data(f), zframe_size(f), flags);
        /* a signal caught mid-message (the PN's SIGCHLD lands on its loop thread): the rest of
           the message is still accepted, so the frame is sent again rather than the message
           dropped */
        for (int tries = 0; rc < 0 && errno == EINTR && i > 0 && tries < 100; tries++)
            rc = zmq_send(s->handle, zframe_data(f), zframe_size(f), flags);
        if (rc < 0) {
            int e = errno;
            if (i > 0) {
                /* libzmq accepts the rest of a message once the first frame is in; this is
                 * not expected to happen. */
                log_error("zuv: send failed after %zu of %zu frames: %s", i, n, zmq_strerror(e));
                return -EPROTO;
            }
            return -e;
        }
    }
    return 0;
}

static void zuv__report(zuv_sock_t *s, const void *peer, size_t peer_len, size_t count, int reason)
{
    if (count == 0)
        return;
    s->st.dropped += count;
    char hex[2 * 255 + 1];
    if (peer != NULL)
        id_hex(hex, peer, peer_len < 255 ? peer_len : 255);
    log_warn("zuv: dropped %zu message(s)%s%s: %s", count, peer != NULL ? " for peer " : "",
             peer != NULL ? hex : "", err_text(reason));
    if (s->opts.on_drop != NULL)
        s->opts.on_drop(s, peer, peer_len, count, reason, s->arg);
}

static void zuv__peer_unlink(zuv_sock_t *s, struct zuv__peer *p)
{
    if (p->prev != NULL)
        p->prev->next = p->next;
    else
        s->pending = p->next;
    if (p->next != NULL)
        p->next->prev = p->prev;
    p->prev = p->next = NULL;
    map_deln(&s->peers, p->id, p->id_len, NULL);
}

static void zuv__timer_cb(uv_timer_t *t);
static void zuv__idle_cb(uv_idle_t *h);

static void zuv__timer_update(zuv_sock_t *s)
{
    if (s->closing)
        return;
    if (s->st.queued > 0 && !s->timer_on) {
        uv_timer_start(&s->timer, zuv__timer_cb, s->opts.retry_ms, s->opts.retry_ms);
        s->timer_on = true;
    } else if (s->st.queued == 0 && s->timer_on) {
        uv_timer_stop(&s->timer);
        s->timer_on = false;
    }
}

static void zuv__idle_set(zuv_sock_t *s, bool on)
{
    if (on && !s->idle_on && !s->closing) {
        uv_idle_start(&s->idle, zuv__idle_cb);
        s->idle_on = true;
    } else if (!on && s->idle_on) {
        uv_idle_stop(&s->idle);
        s->idle_on = false;
    }
}

/* Retries queued messages in order. Returns true if anything was sent. Peers unreachable for
 * longer than unreachable_ms lose their queue (reported after the pass). */
static bool zuv__flush(zuv_sock_t *s)
{
    bool progress = false;
    size_t failed = 0; /* messages ZeroMQ refused for good; reported after the pass, since the
                          drop callback may send or close and so change the queues */
    if (!s->router) {
        zmsg_t *m;
        while ((m = zuv__q_peek(&s->q)) != NULL) {
            int rc = zuv__try_send(s, m);
            if (rc == -EAGAIN || rc == -EINTR)
                break;
            zuv__q_pop(&s->q);
            zmsg_destroy(&m);
            s->st.queued--;
            if (rc == 0) {
                s->st.sent++;
                progress = true;
            } else {
                failed++;
            }
        }
        zuv__timer_update(s);
        zuv__report(s, NULL, 0, failed, ERR_SYS);
        return progress;
    }
    uint64_t now = uv_now(s->loop);
    struct zuv__peer *expired = NULL;
    struct zuv__peer *next;
    for (struct zuv__peer *p = s->pending; p != NULL; p = next) {
        next = p->next;
        zmsg_t *m;
        bool expire = false;
        while ((m = zuv__q_peek(&p->q)) != NULL) {
            int rc = zuv__try_send(s, m);
            if (rc == -EAGAIN || rc == -EINTR) {
                p->unreachable = false;
                break;
            }
            if (rc == -EHOSTUNREACH) {
                if (!p->unreachable) {
                    p->unreachable = true;
                    p->unreachable_since = now;
                } else if (now - p->unreachable_since >= s->opts.unreachable_ms) {
                    expire = true;
                }
                break;
            }
            p->unreachable = false;
            zuv__q_pop(&p->q);
            zmsg_destroy(&m);
            s->st.queued--;
            if (rc == 0) {
                s->st.sent++;
                progress = true;
            } else {
                failed++;
            }
        }
        if (expire || p->q.len == 0) {
            zuv__peer_unlink(s, p);
            if (p->q.len == 0) {
                zuv__q_clear(&p->q);
                mem_free(p);
            } else {
                p->next = expired;
                expired = p;
            }
        }
    }
    zuv__timer_update(s);
    zuv__report(s, NULL, 0, failed, ERR_SYS);
    while (expired != NULL) {
        struct zuv__peer *p = expired;
        expired = p->next;
        size_t n = zuv__q_clear(&p->q);
        s->st.queued -= n;
        zuv__report(s, p->id, p->id_len, n, ERR_UNAVAILABLE);
        mem_free(p);
    }
    return progress;
}

/* The drain: ZMQ_EVENTS at the top of every iteration, receive while POLLIN, at most `batch`
 * messages, then yield through the idle handle. */
static void zuv__drain(zuv_sock_t *s)
{
    if (s->closing || s->in_drain)
        return;
    s->in_drain = true;
    s->st.wakeups++;
    unsigned received = 0;
    bool more = false;
    bool try_flush = true;
    while (!s->closing) {
        int ev = zuv__events(s);
        if (s->st.queued > 0 && try_flush && (ev & ZMQ_POLLOUT)) {
            /* Flush again only while flushing makes progress: a ROUTER says POLLOUT when
             * any peer has room, not necessarily the ones we wait for. */
            try_flush = zuv__flush(s);
            continue; /* sending may have changed the events */
        }
        if (!(ev & ZMQ_POLLIN))
            break;
        if (received >= s->opts.batch) {
            more = true;
            break;
        }
        zmsg_t *m = zmsg_recv(s->sock); /* never blocks: receive timeout 0 */
        if (m == NULL)
            break;
        received++;
        s->st.received++;
        s->on_recv(s, &m, s->arg);
        zmsg_destroy(&m);
    }
    s->in_drain = false;
    if (!s->closing) {
        zuv__idle_set(s, more);
        zuv__timer_update(s);
    }
}

static void zuv__poll_cb(uv_poll_t *h, int status, int events)
{
    zuv_sock_t *s = h->data;
    if (status < 0)
        log_warn("zuv: poll error: %s", uv_strerror(status));
    zuv__drain(s);
}

static void zuv__idle_cb(uv_idle_t *h)
{
    zuv_sock_t *s = h->data;
    zuv__idle_set(s, false);
    zuv__drain(s);
}

static void zuv__timer_cb(uv_timer_t *t)
{
    zuv_sock_t *s = t->data;
    if (s->st.queued > 0)
        zuv__flush(s);
    zuv__drain(s);
}

static void zuv__closed(uv_handle_t *h)
{
    zuv_sock_t *s = h->data;
    if (--s->open_handles == 0) {
        map_close(&s->peers);
        mem_free(s);
    }
}

int zuv_sock_new(zuv_sock_t **out, uv_loop_t *loop, zsock_t **sock, const struct zuv_opts *opts,
                 zuv_recv_fn *on_recv, void *arg)
{
    if (out == NULL || loop == NULL || sock == NULL || *sock == NULL || on_recv == NULL)
        return ERR_INVAL;
    zuv_sock_t *s = mem_calloc(1, sizeof *s);
    if (s == NULL)
        return ERR_NOMEM;
    s->loop = loop;
    s->handle = zsock_resolve(*sock);
    s->router = zsock_type(*sock) == ZMQ_ROUTER;
    if (opts != NULL)
        s->opts = *opts;
    else
        zuv_opts_init(&s->opts);
    if (s->opts.batch == 0)
        s->opts.batch = 1;
    if (s->opts.retry_ms == 0)
        s->opts.retry_ms = 1;
    s->on_recv = on_recv;
    s->arg = arg;
    map_init(&s->peers);
    if (uv_poll_init(loop, &s->poll, zsock_fd(*sock)) != 0) {
        mem_free(s);
        return ERR_SYS;
    }
    uv_idle_init(loop, &s->idle);
    uv_timer_init(loop, &s->timer);
    s->poll.data = s->idle.data = s->timer.data = s;
    s->open_handles = 3;
    if (uv_poll_start(&s->poll, UV_READABLE, zuv__poll_cb) != 0) {
        s->closing = true;
        uv_close((uv_handle_t *)&s->poll, zuv__closed);
        uv_close((uv_handle_t *)&s->idle, zuv__closed);
        uv_close((uv_handle_t *)&s->timer, zuv__closed);
        return ERR_SYS;
    }
    zsock_set_rcvtimeo(*sock, 0);
    zsock_set_sndtimeo(*sock, 0);
    if (s->router)
        zsock_set_router_mandatory(*sock, 1);
    s->sock = *sock;
    *sock = NULL;
    zuv__idle_set(s, true); /* a first drain: messages may have arrived before we watched */
    *out = s;
    return 0;
}

void zuv_sock_close(zuv_sock_t **sp)
{
    if (sp == NULL || *sp == NULL)
        return;
    zuv_sock_t *s = *sp;
    *sp = NULL;
    if (s->closing)
        return;
    s->closing = true;
    uv_poll_stop(&s->poll); /* before the socket (and its fd) goes away */
    zuv__idle_set(s, false);
    uv_timer_stop(&s->timer);
    s->timer_on = false;
    size_t left = zuv__q_clear(&s->q); /* also frees the ring's storage */
    s->st.queued -= left;
    zuv__report(s, NULL, 0, left, ERR_CANCELLED);
    while (s->pending != NULL) {
        struct zuv__peer *p = s->pending;
        zuv__peer_unlink(s, p);
        size_t n = zuv__q_clear(&p->q);
        s->st.queued -= n;
        zuv__report(s, p->id, p->id_len, n, ERR_CANCELLED);
        mem_free(p);
    }
    s->handle = NULL;
    zsock_destroy(&s->sock);
    uv_close((uv_handle_t *)&s->poll, zuv__closed);
    uv_close((uv_handle_t *)&s->idle, zuv__closed);
    uv_close((uv_handle_t *)&s->timer, zuv__closed);
}

/* After a send made outside the drain: the send may have consumed the fd's edge, so read
 * ZMQ_EVENTS now and drain on the next loop iteration if something waits. */
static void zuv__after_send(zuv_sock_t *s)
{
    if (s->in_drain || s->closing)
        return;
    int ev = zuv__events(s);
    if ((ev & ZMQ_POLLIN) || (s->st.queued > 0 && (ev & ZMQ_POLLOUT)))
        zuv__idle_set(s, true);
}

static int zuv__enqueue(zuv_sock_t *s, struct zuv__q *q, zmsg_t *m)
{
    if (q->len >= s->opts.queue_max) {
        zmsg_destroy(&m);
        /* Logged on the first and then every 10,000th: an overloaded peer must not flood. */
        if (s->full_drops++ % 10000 == 0)
            log_warn("zuv: send queue full (%zu messages): message dropped (%" PRIu64 " so far)",
                     q->len, s->full_drops);
        s->st.dropped++;
        return ERR_FULL;
    }
    if (zuv__q_push(q, m) != 0) {
        zmsg_destroy(&m);
        s->st.dropped++;
        return ERR_NOMEM;
    }
    s->st.queued++;
    zuv__timer_update(s);
    return 0;
}

int zuv_send(zuv_sock_t *s, zmsg_t **msg)
{
    if (msg == NULL)
        return ERR_INVAL;
    zmsg_t *m = *msg;
    *msg = NULL;
    if (s == NULL || s->closing) {
        zmsg_destroy(&m);
        return ERR_STATE;
    }
    if (m == NULL || zmsg_size(m) == 0 || (s->router && zmsg_size(m) < 2)) {
        zmsg_destroy(&m);
        return ERR_INVAL;
    }
    if (!s->router) {
        if (s->q.len > 0)
            return zuv__enqueue(s, &s->q, m); /* keep order behind what waits */
        int rc = zuv__try_send(s, m);
        if (rc == -EAGAIN || rc == -EINTR) {
            rc = zuv__enqueue(s, &s->q, m);
            zuv__after_send(s);
            return rc;
        }
        zmsg_destroy(&m);
        if (rc != 0) {
            s->st.dropped++;
            return ERR_SYS;
        }
        s->st.sent++;
        zuv__after_send(s);
        return 0;
    }
    zframe_t *idf = zmsg_first(m);
    size_t id_len = zframe_size(idf);
    if (id_len == 0 || id_len > 255) {
        zmsg_destroy(&m);
        return ERR_INVAL;
    }
    struct zuv__peer *p = map_getn(&s->peers, zframe_data(idf), id_len);
    if (p != NULL)
        return zuv__enqueue(s, &p->q, m);
    int rc = zuv__try_send(s, m);
    if (rc == 0) {
        zmsg_destroy(&m);
        s->st.sent++;
        zuv__after_send(s);
        return 0;
    }
    if (rc != -EAGAIN && rc != -EHOSTUNREACH && rc != -EINTR) {
        zmsg_destroy(&m);
        s->st.dropped++;
        return ERR_SYS;
    }
    p = mem_calloc(1, sizeof *p);
    if (p == NULL || map_putn(&s->peers, zframe_data(idf), id_len, p, NULL) != 0) {
        mem_free(p);
        zmsg_destroy(&m);
        s->st.dropped++;
        return ERR_NOMEM;
    }
    memcpy(p->id, zframe_data(idf), id_len);
    p->id_len = id_len;
    if (rc == -EHOSTUNREACH) {
        p->unreachable = true;
        p->unreachable_since = uv_now(s->loop);
    }
    p->next = s->pending;
    if (p->next != NULL)
        p->next->prev = p;
    s->pending = p;
    rc = zuv__enqueue(s, &p->q, m);
    if (rc != 0) {
        zuv__peer_unlink(s, p);
        mem_free(p);
    }
    zuv__after_send(s);
    return rc;
}

int zuv_send_bytes(zuv_sock_t *s, const void *peer, size_t peer_len, const void *data, size_t len)
{
    zmsg_t *m = zmsg_new();
    if (m == NULL)
        return ERR_NOMEM;
    if ((s != NULL && s->router && zmsg_addmem(m, peer, peer_len) != 0) ||
        zmsg_addmem(m, data, len) != 0) {
        zmsg_destroy(&m);
        return ERR_NOMEM;
    }
    return zuv_send(s, &m);
}

void zuv_kick(zuv_sock_t *s)
{
    if (s != NULL && !s->closing)
        zuv__idle_set(s, true);
}

zsock_t *zuv_sock_zsock(zuv_sock_t *s)
{
    return s->sock;
}

void zuv_sock_stats(const zuv_sock_t *s, struct zuv_stats *out)
{
    *out = s->st;
}
