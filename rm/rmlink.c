/* rmlink.c - asynchronous RM API client with leader redirects. */
#include "rm/rmlink.h"

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "common/zuv.h"
#include "rm/rmclient.h"

#include <string.h>

#define RMLINK__TICK_MS    10
#define RMLINK__PAUSE_MS   20 /* before asking the next replica during an election */
#define RMLINK__MAX_QUEUED 10000

struct rmlink__req {
    uint64_t req_id;
    uint8_t *bytes; /* the encoded request, re-sent as is */
    size_t len;
    size_t target;
    int try_ms;
    uint64_t try_end, deadline, resend_at; /* resend_at 0: sent, waiting */
    rmlink_reply_fn *cb;
    void *arg;
};

struct rmlink {
    uv_loop_t *loop;
    size_t n;
    zuv_sock_t *sock[RMCLIENT_MAX_REPLICAS];
    char *endpoint[RMCLIENT_MAX_REPLICAS];
    int leader;
    uint64_t next_req;
    struct rmlink__req *reqs;
    size_t nreqs, capreqs;
    uv_timer_t *timer; /* own allocation: freed by its close callback */
    proto_buf_t buf;
    size_t dropped; /* replies that did not decode (rmlink_dropped) */
};

size_t rmlink_pending(const rmlink_t *l)
{
    return l->nreqs;
}

size_t rmlink_dropped(const rmlink_t *l)
{
    return l->dropped;
}

static void rmlink__send(rmlink_t *l, struct rmlink__req *r)
{
    uint64_t now = clock_mono_ms();
    r->resend_at = 0;
    r->try_end = now + (uint64_t)r->try_ms;
    int rc = zuv_send_bytes(l->sock[r->target], NULL, 0, r->bytes, r->len);
    if (rc != 0) { /* not even queued (the socket's queue is full): the same replica, shortly */
        log_debug("RM request %llu not sent to %s: %s", (unsigned long long)r->req_id,
                  l->endpoint[r->target], err_text(rc));
        r->resend_at = now + RMLINK__PAUSE_MS;
    }
}

/* Removes request i and runs its callback (the callback may call rmlink_call). */
static void rmlink__finish(rmlink_t *l, size_t i, int status, const proto_msg_t *reply)
{
    struct rmlink__req r = l->reqs[i];
    l->reqs[i] = l->reqs[--l->nreqs];
    mem_free(r.bytes);
    r.cb(r.arg, status, reply);
}

static int rmlink__index(const rmlink_t *l, const char *endpoint)
{
    for (size_t i = 0; endpoint != NULL && i < l->n; i++) {
        if (strcmp(l->endpoint[i], endpoint) == 0)
            return (int)i;
    }
    return -1;
}

static void rmlink__on_recv(zuv_sock_t *zs, zmsg_t **msg, void *arg)
{
    rmlink_t *l = arg;
    size_t from = 0;
    while (from < l->n && l->sock[from] != zs)
        from++;
    zframe_t *f = zmsg_first(*msg);
    proto_msg_t m;
    char why[160] = "";
    int rc = zmsg_size(*msg) != 1
                 ? err_fmt(why, sizeof why, ERR_INVAL, "%zu frames, not 1", zmsg_size(*msg))
                 : proto_decode(zframe_data(f), zframe_size(f), &m, NULL, why, sizeof why);
    if (rc != 0) { /* dropped and counted, logged the first time and every 100th after */
        if (l->dropped++ % 100 == 0)
            log_warn("dropped an undecodable message from the RM at %s (%zu so far): %s",
                     from < l->n ? l->endpoint[from] : "?", l->dropped,
                     why[0] ? why : err_text(rc));
        return;
    }
    size_t i = 0;
    while (i < l->nreqs && l->reqs[i].req_id != m.req_id)
        i++;
    if (i == l->nreqs || from != l->reqs[i].target) { /* late answer to an earlier try */
        proto_msg_close(&m);
        return;
    }
    struct rmlink__req *r = &l->reqs[i];
    if (m.type == PROTO_ERROR &&
        (m.error.code == ERR_NOTLEADER || m.error.code == ERR_UNAVAILABLE)) {
        int hint = rmlink__index(l, m.error.leader_endpoint);
        l->leader = -1;
        if (hint >= 0 && (size_t)hint != r->target) {
            r->target = (size_t)hint;
            rmlink__send(l, r);
        } else {
            r->target = (r->target + 1) % l->n;
            r->resend_at = clock_mono_ms() + RMLINK__PAUSE_MS;
        }
        proto_msg_close(&m);
        return;
    }
    l->leader = (int)r->target;
    rmlink__finish(l, i, 0, &m);
    proto_msg_close(&m);
}

static void rmlink__on_tick(uv_timer_t *t)
{
    rmlink_t *l = t->data;
    uint64_t now = clock_mono_ms();
    for (size_t i = 0; i < l->nreqs;) {
        struct rmlink__req *r = &l->reqs[i];
        if (now >= r->deadline) {
            rmlink__finish(l, i, ERR_TIMEOUT, NULL);
            continue; /* the last request moved into slot i */
        }
        if (r->resend_at != 0 && now >= r->resend_at) {
            rmlink__send(l, r);
        } else if (r->resend_at == 0 && now >= r->try_end) {
            l->leader = -1; /* silent: try the next replica */
            r->target = (r->target + 1) % l->n;
            rmlink__send(l, r);
        }
        i++;
    }
    if (l->nreqs == 0)
        uv_timer_stop(t);
}

int rmlink_new(rmlink_t **out, uv_loop_t *loop, const char *const *endpoints, size_t n,
               const curve_t *curve, char *msg, size_t cap)
{
    *out = NULL;
    if (n == 0 || n > RMCLIENT_MAX_REPLICAS)
        return err_fmt(msg, cap, ERR_INVAL, "between 1 and %d RM endpoints needed",
                       RMCLIENT_MAX_REPLICAS);
    rmlink_t *l = mem_calloc(1, sizeof *l);
    uv_timer_t *t = mem_calloc(1, sizeof *t);
    if (l == NULL || t == NULL) {
        mem_free(l);
        mem_free(t);
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    }
    l->loop = loop;
    l->leader = -1;
    l->next_req = 1;
    l->timer = t;
    uv_timer_init(loop, t);
    t->data = l;
    proto_buf_init(&l->buf);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        zsock_t *z = zuv_socket(ZMQ_DEALER, PROTO_MAX_MSG_BYTES);
        if (z == NULL) {
            rc = err_fmt(msg, cap, ERR_SYS, "cannot create a socket");
            break;
        }
        rc = curve_apply(z, curve, CURVE_CLIENT, NULL, msg, cap);
        if (rc == 0 && zsock_connect(z, "%s", endpoints[i]) != 0)
            rc = err_fmt(msg, cap, ERR_INVAL, "cannot connect to %s", endpoints[i]);
        if (rc == 0)
            rc = zuv_sock_new(&l->sock[i], loop, &z, NULL, rmlink__on_recv, l);
        if (rc != 0) {
            zsock_destroy(&z);
            break;
        }
        zuv_kick(l->sock[i]);
        l->endpoint[i] = mem_strdup(endpoints[i]);
        l->n++;
        if (l->endpoint[i] == NULL)
            rc = err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    }
    if (rc != 0) {
        rmlink_destroy(&l);
        return rc;
    }
    *out = l;
    return 0;
}

static void rmlink__timer_closed(uv_handle_t *h)
{
    mem_free(h);
}

void rmlink_destroy(rmlink_t **lp)
{
    if (lp == NULL || *lp == NULL)
        return;
    rmlink_t *l = *lp;
    *lp = NULL;
    while (l->nreqs > 0)
        rmlink__finish(l, l->nreqs - 1, ERR_CANCELLED, NULL);
    for (size_t i = 0; i < RMCLIENT_MAX_REPLICAS; i++) {
        zuv_sock_close(&l->sock[i]);
        mem_free(l->endpoint[i]);
    }
    uv_close((uv_handle_t *)l->timer, rmlink__timer_closed);
    mem_free(l->reqs);
    proto_buf_close(&l->buf);
    mem_free(l);
}

int rmlink_call(rmlink_t *l, proto_msg_t *req, int try_ms, int deadline_ms, rmlink_reply_fn *cb,
                void *arg)
{
    if (l->nreqs >= RMLINK__MAX_QUEUED)
        return ERR_FULL;
    if (l->nreqs == l->capreqs) {
        size_t cap = l->capreqs < 8 ? 8 : l->capreqs * 2;
        void *p = mem_reallocarray(l->reqs, cap, sizeof *l->reqs);
        if (p == NULL)
            return ERR_NOMEM;
        l->reqs = p;
        l->capreqs = cap;
    }
    req->req_id = l->next_req++;
    int rc = proto_encode(req, &l->buf, NULL, 0);
    if (rc != 0)
        return rc;
    struct rmlink__req *r = &l->reqs[l->nreqs];
    memset(r, 0, sizeof *r);
    r->bytes = mem_alloc(l->buf.len);
    if (r->bytes == NULL)
        return ERR_NOMEM;
    memcpy(r->bytes, l->buf.data, l->buf.len);
    r->len = l->buf.len;
    r->req_id = req->req_id;
    r->target = l->leader >= 0 ? (size_t)l->leader : 0;
    r->try_ms = try_ms > 0 ? try_ms : 1000;
    r->deadline = clock_mono_ms() + (uint64_t)(deadline_ms > 0 ? deadline_ms : 10000);
    r->cb = cb;
    r->arg = arg;
    l->nreqs++;
    rmlink__send(l, r);
    if (!uv_is_active((uv_handle_t *)l->timer))
        uv_timer_start(l->timer, rmlink__on_tick, RMLINK__TICK_MS, RMLINK__TICK_MS);
    return 0;
}
