#include "pn/server.h"

#include <errno.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/curve.h"
#include "common/err.h"
#include "common/id.h"
#include "common/log.h"
#include "common/map.h"
#include "common/mem.h"
#include "common/metrics.h"
#include "common/notify.h"
#include "common/zuv.h"
#include "pn/chld.h"
#include "pn/exec.h"
#include "pn/metrics_http.h"
#include "pn/node.h"
#include "pn/output.h"

#define SERVER__MAX_RM      16
#define SERVER__MAX_REPLIES 256 /* reply_endpoint sockets kept open at once */

typedef struct server__reply {
    zuv_sock_t *sock;
    uint64_t used_ms;
} server__reply_t;

typedef struct server {
    pnconf_t *cfg;
    uv_loop_t loop;
    node_t *node;
    curve_t *curve;
    zuv_sock_t *router;
    zuv_sock_t *monitor; /* ROUTER handshake events: failed authentication is counted */
    uint64_t auth_failures;
    zuv_sock_t *rm_api[SERVER__MAX_RM];
    zuv_sock_t *rm_hb[SERVER__MAX_RM];
    size_t nrm, nhb;
    int separate_hb;
    uv_timer_t hb_timer, mem_timer, refresh_timer, drain_timer;
    uv_signal_t sigterm, sigint, sigusr1;
    chld_t chld;          /* tasks' exits */
    uv_work_t pool_start; /* starts libuv's thread pool with the loop's signals blocked */
    int registered;
    int draining;               /* no new tasks; exit once queued and running ones are done */
    uint64_t drain_deadline_ms; /* then the rest is handed back (node_destroy) */
    uint64_t boot_id, reg_seq;
    uint64_t last_register_ms;
    proto_buf_t buf;
    proto_stats_t rm_stats;
    struct map replies;   /* reply endpoint -> server__reply_t */
    metrics_http_t *http; /* [metrics] listen: /metrics, or NULL */
    char metrics_url[255 + 32];
    uint64_t heartbeats, scrapes;
} server_t;

static int server__dealer(server_t *s, const char *endpoint, zuv_sock_t **out, zuv_recv_fn *on_recv,
                          char *msg, size_t cap);

/* A reply socket carries statuses out; what comes back on it is not a request. */
static void server__on_reply(zuv_sock_t *zs, zmsg_t **msg, void *arg);

static void server__reply_close(server_t *s, const char *endpoint)
{
    void *v;
    if (map_del(&s->replies, endpoint, &v)) {
        server__reply_t *r = v;
        zuv_sock_close(&r->sock);
        mem_free(r);
    }
}

/* The socket to a JM's reply_endpoint, connected on first use; the least recently used one
 * is closed when SERVER__MAX_REPLIES are open. */
static zuv_sock_t *server__reply_sock(server_t *s, const char *endpoint)
{
    server__reply_t *r = map_get(&s->replies, endpoint);
    if (!r) {
        if (s->replies.len >= SERVER__MAX_REPLIES) {
            size_t it = 0, klen;
            const char *k, *oldest = NULL;
            void *v;
            uint64_t at = UINT64_MAX;
            while (map_next(&s->replies, &it, &k, &klen, &v)) {
                if (((server__reply_t *)v)->used_ms < at) {
                    at = ((server__reply_t *)v)->used_ms;
                    oldest = k;
                }
            }
            if (oldest) {
                char *victim = mem_strdup(oldest);
                if (victim)
                    server__reply_close(s, victim);
                mem_free(victim);
            }
        }
        char msg[256];
        r = mem_calloc(1, sizeof *r);
        if (!r || server__dealer(s, endpoint, &r->sock, server__on_reply, msg, sizeof msg) != 0 ||
            map_put(&s->replies, endpoint, r, NULL) != 0) {
            if (r && r->sock)
                zuv_sock_close(&r->sock);
            mem_free(r);
            log_warn("reply endpoint %s: cannot connect", endpoint);
            return NULL;
        }
    }
    r->used_ms = clock_mono_ms();
    return r->sock;
}

static void server__send(void *arg, const void *peer, size_t plen, const char *endpoint,
                         const void *data, size_t len)
{
    server_t *s = arg;
    zuv_sock_t *via = endpoint ? server__reply_sock(s, endpoint) : NULL;
    int rc = via ? zuv_send_bytes(via, NULL, 0, data, len)
                 : zuv_send_bytes(s->router, peer, plen, data, len);
    if (rc != 0)
        log_warn("status to a job manager dropped (queue full)");
}

/* While draining, a TASK_CREATE is answered ERROR(ERR_UNAVAILABLE) so its JM places the task
 * elsewhere; cancels, upgrades and anything else still reach the node. True when refused. */
static int server__refuse_draining(server_t *s, zframe_t *peer, zframe_t *body)
{
    proto_msg_t m;
    if (proto_decode(zframe_data(body), zframe_size(body), &m, &s->rm_stats, NULL, 0) != 0)
        return 0; /* the node counts and answers what it cannot decode */
    int refuse = m.type == PROTO_TASK_CREATE;
    if (refuse) {
        node_count_draining(s->node);
        proto_msg_t e;
        char err[256];
        proto_msg_error(&e, &m, ERR_UNAVAILABLE, "node draining: no new tasks", NULL);
        if (proto_encode(&e, &s->buf, err, sizeof err) == 0)
            zuv_send_bytes(s->router, zframe_data(peer), zframe_size(peer), s->buf.data,
                           s->buf.len);
    }
    proto_msg_close(&m);
    return refuse;
}

/* Issue 27: the user behind the connection a request came on (allow/NAME.pub is user NAME),
 * and the Unix account their tasks run as. The cluster's own key, and a connection without
 * CURVE (loopback only), keep today's behaviour: tasks run as [pn] run_as. */
static void server__caller(server_t *s, zframe_t *body)
{
    const char *key = curve_frame_key(body);
    if (s->curve == NULL || key == NULL || strcmp(key, curve_public_key(s->curve)) == 0) {
        node_set_caller(s->node, "", (uid_t)-1, (gid_t)-1, 1, NULL);
        return;
    }
    char user[128], why[192];
    if (curve_auth_user(key, user, sizeof user) != 0) {
        node_set_caller(s->node, "?", (uid_t)-1, (gid_t)-1, 0,
                        "permission denied: the key is no longer on the allow-list");
        return;
    }
    if (strcmp(user, s->cfg->key_name[0] ? s->cfg->key_name : CURVE_DEFAULT_NAME) == 0) {
        node_set_caller(s->node, user, (uid_t)-1, (gid_t)-1, 1, NULL); /* the cluster's name */
        return;
    }
    if (geteuid() != 0) {
        /* a PN that is not root cannot change users: its tasks run as the PN (docs/deploy.md) */
        node_set_caller(s->node, user, (uid_t)-1, (gid_t)-1, 0, NULL);
        return;
    }
    struct passwd *pw = getpwnam(user);
    if (pw == NULL || pw->pw_uid == 0) {
        snprintf(why, sizeof why, "permission denied: %s%s", user,
                 pw == NULL ? " has no Unix account on this node"
                            : " is root: tasks never run as root");
        node_set_caller(s->node, user, (uid_t)-1, (gid_t)-1, 0, why);
        return;
    }
    node_set_caller(s->node, user, pw->pw_uid, pw->pw_gid, 0, NULL);
}

/* `paddock logs`: TASK_OUTPUT_READ is answered here, from the task directories, whatever the
 * node is doing (draining included); it changes nothing. */
static void server__output(server_t *s, zframe_t *peer, zframe_t *body)
{
    proto_msg_t m;
    if (proto_decode(zframe_data(body), zframe_size(body), &m, &s->rm_stats, NULL, 0) != 0)
        return; /* counted */
    if (output_answer(s->node, s->cfg->name, &m, &s->buf) == 0)
        zuv_send_bytes(s->router, zframe_data(peer), zframe_size(peer), s->buf.data, s->buf.len);
    proto_msg_close(&m);
}

static void server__on_router(zuv_sock_t *zs, zmsg_t **msg, void *arg)
{
    server_t *s = arg;
    (void)zs;
    if (zmsg_size(*msg) != 2) {
        node_count_rejected(s->node);
        return;
    }
    zframe_t *peer = zmsg_first(*msg);
    zframe_t *body = zmsg_next(*msg);
    if (proto_peek_type(zframe_data(body), zframe_size(body)) == PROTO_TASK_OUTPUT_READ) {
        server__caller(s, body); /* issue 27: whose output it may read */
        server__output(s, peer, body);
        return;
    }
    if (s->draining && server__refuse_draining(s, peer, body))
        return;
    server__caller(s, body);
    node_handle(s->node, zframe_data(peer), zframe_size(peer), zframe_data(body),
                zframe_size(body));
}

static void server__on_rm(zuv_sock_t *zs, zmsg_t **msg, void *arg)
{
    server_t *s = arg;
    (void)zs;
    if (zmsg_size(*msg) != 1)
        return;
    zframe_t *f = zmsg_first(*msg);
    proto_msg_t m;
    if (proto_decode(zframe_data(f), zframe_size(f), &m, &s->rm_stats, NULL, 0) != 0)
        return;
    if (m.type == PROTO_NODE_REGISTER_ACK && m.node_register_ack.boot_id == s->boot_id) {
        if (m.node_register_ack.verdict == PROTO_VERDICT_ACCEPTED) {
            if (!s->registered)
                log_info("registered with the RM (replica %llu)",
                         (unsigned long long)m.node_register_ack.rm_id);
            s->registered = 1;
            uint32_t want = m.node_register_ack.heartbeat_ms;
            if (want >= 10 && want <= 600000 && want != uv_timer_get_repeat(&s->hb_timer)) {
                log_info("heartbeat interval %u ms, as the RM asks", want);
                uv_timer_set_repeat(&s->hb_timer, want);
            }
        } else {
            log_warn("registration refused: %s",
                     m.node_register_ack.reason ? m.node_register_ack.reason : "no reason");
        }
    } else if (m.type == PROTO_HEARTBEAT_ACK) {
        node_jobs_ack(s->node, &m.heartbeat_ack, clock_mono_ms()); /* only the leader answers */
    } else if (m.type == PROTO_ERROR && m.error.in_reply_to == PROTO_HEARTBEAT &&
               m.error.code == ERR_NOTFOUND) {
        s->registered = 0; /* the RM does not know this boot: register again */
    }
    proto_msg_close(&m);
}

/* zmq_socket_monitor events: frame 1 is a 16-bit event id and a 32-bit value. */
static void server__on_monitor(zuv_sock_t *zs, zmsg_t **msg, void *arg)
{
    server_t *s = arg;
    (void)zs;
    zframe_t *f = zmsg_first(*msg);
    if (!f || zframe_size(f) < 2)
        return;
    uint16_t ev;
    memcpy(&ev, zframe_data(f), sizeof ev);
    if (ev & (ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
              ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)) {
        s->auth_failures++;
        log_info("refused a connection: handshake failed (%s)",
                 ev & ZMQ_EVENT_HANDSHAKE_FAILED_AUTH ? "key not allowed" : "protocol");
    }
}

static void server__watch_handshakes(server_t *s, zsock_t *router)
{
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://pn-monitor-%016llx", (unsigned long long)s->boot_id);
    if (zmq_socket_monitor(zsock_resolve(router), ep,
                           ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) != 0)
        return;
    zsock_t *pair = zuv_socket(ZMQ_PAIR, 0);
    if (!pair)
        return;
    if (zsock_connect(pair, "%s", ep) != 0 ||
        zuv_sock_new(&s->monitor, &s->loop, &pair, NULL, server__on_monitor, s) != 0) {
        zsock_destroy(&pair);
        return;
    }
    zuv_kick(s->monitor);
}

static void server__register(server_t *s)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_NODE_REGISTER);
    char key[64];
    snprintf(key, sizeof key, "pn-%016llx-%llu", (unsigned long long)s->boot_id,
             (unsigned long long)++s->reg_seq);
    m.req_id = s->reg_seq;
    m.node_register.key = key;
    m.node_register.name = s->cfg->name;
    m.node_register.rack = s->cfg->rack;
    m.node_register.endpoint = s->cfg->advertise;
    m.node_register.boot_id = s->boot_id;
    m.node_register.cpu = s->cfg->cpus;
    m.node_register.mem_mb = s->cfg->memory >> 20;
    m.node_register.version = "0.1.0";
    m.node_register.timestamp_ms = clock_wall_ms();
    char err[256];
    if (proto_encode(&m, &s->buf, err, sizeof err) != 0) {
        log_error("registration: %s", err);
        return;
    }
    for (size_t i = 0; i < s->nrm; i++)
        zuv_send_bytes(s->rm_api[i], NULL, 0, s->buf.data, s->buf.len);
    s->last_register_ms = clock_mono_ms();
}

static void server__write_status(server_t *s)
{
    char tmp[4200], path[4200];
    snprintf(path, sizeof path, "%s/status.json", s->cfg->work_dir);
    snprintf(tmp, sizeof tmp, "%s/.status.json.tmp", s->cfg->work_dir);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    node_counters_t c;
    node_counters(s->node, &c);
    size_t running, queued, remembered, jobs;
    node_load(s->node, &running, &queued);
    node_remembered(s->node, &remembered, &jobs);
    fprintf(f,
            "{\"name\":\"%s\",\"boot_id\":\"%016llx\",\"registered\":%s,\"running\":%zu,"
            "\"queued\":%zu,\"remembered\":%zu,\"jobs\":%zu,\"requests\":%llu,\"rejected\":%llu,"
            "\"created\":%llu,"
            "\"refused_full\":%llu,\"succeeded\":%llu,\"failed\":%llu,\"cancelled\":%llu,"
            "\"preempted\":%llu,\"upgrades\":%llu,\"downgrades\":%llu,\"graces_ended\":%llu,"
            "\"class_swaps\":%llu,\"class_trades\":%llu,\"priority_reorders\":%llu,"
            "\"refused_fenced\":%llu,\"queries\":%llu,\"reaped\":%llu,\"acks_ignored\":%llu,"
            "\"memory_kills\":%llu,\"cache_hits\":%llu,"
            "\"cache_misses\":%llu,\"statuses_sent\":%llu,\"status_messages\":%llu,"
            "\"status_batches\":%llu,\"auth_failures\":%llu,"
            "\"rss_kb\":%llu,\"draining\":%s,\"metrics_url\":\"%s\"}\n",
            s->cfg->name, (unsigned long long)s->boot_id, s->registered ? "true" : "false", running,
            queued, remembered, jobs, (unsigned long long)c.requests,
            (unsigned long long)c.rejected, (unsigned long long)c.created,
            (unsigned long long)c.refused_full, (unsigned long long)c.succeeded,
            (unsigned long long)c.failed, (unsigned long long)c.cancelled,
            (unsigned long long)c.preempted, (unsigned long long)c.upgrades,
            (unsigned long long)c.downgrades, (unsigned long long)c.graces_ended,
            (unsigned long long)c.swaps, (unsigned long long)c.trades,
            (unsigned long long)c.reorders, (unsigned long long)c.refused_fenced,
            (unsigned long long)c.queries, (unsigned long long)c.reaped,
            (unsigned long long)c.acks_ignored, (unsigned long long)c.memory_kills,
            (unsigned long long)c.cache_hits, (unsigned long long)c.cache_misses,
            (unsigned long long)c.statuses_sent, (unsigned long long)c.status_messages,
            (unsigned long long)c.status_batches, (unsigned long long)s->auth_failures,
            (unsigned long long)(metrics_rss_bytes() / 1024), s->draining ? "true" : "false",
            s->metrics_url);
    if (fclose(f) == 0)
        rename(tmp, path);
}

static void server__on_hb(uv_timer_t *t)
{
    server_t *s = t->data;
    node_sweep(s->node);
    if (s->nrm && !s->registered)
        server__register(s);
    if (s->nhb) {
        proto_msg_t m;
        proto_msg_init(&m, PROTO_HEARTBEAT);
        node_heartbeat(s->node, &m.heartbeat);
        m.heartbeat.draining = s->draining != 0;
        m.heartbeat.metrics_url = s->metrics_url[0] ? s->metrics_url : NULL;
        char err[256];
        if (proto_encode(&m, &s->buf, err, sizeof err) == 0) {
            for (size_t i = 0; i < s->nhb; i++)
                zuv_send_bytes(s->rm_hb[i], NULL, 0, s->buf.data, s->buf.len);
            s->heartbeats++;
        } else {
            log_error("heartbeat: %s", err);
        }
    }
    server__write_status(s);
    if (notify_enabled()) {
        size_t running, queued;
        node_load(s->node, &running, &queued);
        notify_status("%s%s, %zu running, %zu queued", s->draining ? "draining, " : "",
                      s->registered ? "registered" : "not registered", running, queued);
    }
}

static void server__on_refresh(uv_timer_t *t)
{
    server_t *s = t->data;
    node_refresh(s->node);
}

static void server__on_mem(uv_timer_t *t)
{
    server_t *s = t->data;
    node_poll_memory(s->node);
}

static void server__reap(void *arg)
{
    server_t *s = arg;
    node_reap(s->node);
}

/* Draining ends when nothing is queued or running, or at the deadline. */
static void server__on_drain(uv_timer_t *t)
{
    server_t *s = t->data;
    size_t running, queued;
    node_load(s->node, &running, &queued);
    if (running + queued == 0) {
        log_info("drained: no task left, stopping");
        uv_stop(&s->loop);
    } else if (clock_mono_ms() >= s->drain_deadline_ms) {
        log_warn("stop timeout: handing %zu running and %zu queued tasks back", running, queued);
        uv_stop(&s->loop);
    }
}

static void server__drain(server_t *s)
{
    size_t running, queued;
    node_load(s->node, &running, &queued);
    s->draining = 1;
    s->drain_deadline_ms = clock_mono_ms() + (uint64_t)s->cfg->stop_timeout_ms;
    log_info("draining: no new tasks; waiting up to %lld ms for %zu running and %zu queued",
             (long long)s->cfg->stop_timeout_ms, running, queued);
    notify_status("draining, %zu running, %zu queued", running, queued);
    uv_timer_start(&s->drain_timer, server__on_drain, 0, 50);
}

/* SIGTERM/SIGINT: pn.stop_mode "handback" stops at once (node_destroy kills the tasks and
 * reports them lost to their JMs, which place them again); "finish" drains first. A second
 * signal while draining hands back at once. */
static void server__on_stop(uv_signal_t *h, int sig)
{
    server_t *s = h->data;
    notify_stopping();
    if (!s->draining && strcmp(s->cfg->stop_mode, "finish") == 0) {
        log_info("signal %d: stopping after the tasks finish", sig);
        server__drain(s);
        return;
    }
    log_info("signal %d: stopping%s", sig, s->draining ? " now" : "");
    uv_stop(&s->loop);
}

/* SIGUSR1: drain whatever pn.stop_mode says, then exit 0 (an operator's "drain this node"). */
static void server__on_drain_signal(uv_signal_t *h, int sig)
{
    server_t *s = h->data;
    (void)sig;
    if (s->draining)
        return;
    notify_stopping();
    log_info("SIGUSR1: draining");
    server__drain(s);
}

static void server__on_reply(zuv_sock_t *zs, zmsg_t **msg, void *arg)
{
    server_t *s = arg;
    (void)zs;
    (void)msg;
    node_count_rejected(s->node);
}

static int server__dealer(server_t *s, const char *endpoint, zuv_sock_t **out, zuv_recv_fn *on_recv,
                          char *msg, size_t cap)
{
    zsock_t *z = zuv_socket(ZMQ_DEALER, PROTO_MAX_MSG_BYTES);
    if (!z)
        return err_fmt(msg, cap, ERR_SYS, "cannot create a socket");
    int rc = curve_apply(z, s->curve, CURVE_CLIENT, NULL, msg, cap);
    if (!rc && zsock_connect(z, "%s", endpoint) != 0)
        rc = err_fmt(msg, cap, ERR_CONFIG, "cannot connect to %s", endpoint);
    if (!rc)
        rc = zuv_sock_new(out, &s->loop, &z, NULL, on_recv, s);
    if (rc) {
        zsock_destroy(&z);
        return rc ? rc : ERR_SYS;
    }
    zuv_kick(*out);
    return 0;
}

/* Binds the ROUTER; a "*" or 0 port takes a free one, written to WORK/pn.endpoint. */
static int server__bind(server_t *s, char *msg, size_t cap)
{
    zsock_t *z = zuv_socket(ZMQ_ROUTER, PROTO_MAX_MSG_BYTES);
    if (!z)
        return err_fmt(msg, cap, ERR_SYS, "cannot create a socket");
    int rc = curve_apply(z, s->curve, CURVE_SERVER, NULL, msg, cap);
    if (rc) {
        zsock_destroy(&z);
        return rc;
    }
    char ep[512];
    snprintf(ep, sizeof ep, "%s", s->cfg->listen);
    size_t len = strlen(ep);
    int ephemeral = len > 2 && strcmp(ep + len - 2, ":0") == 0;
    if (ephemeral)
        ep[len - 1] = '*';
    int port = zsock_bind(z, "%s", ep);
    if (port < 0) {
        zsock_destroy(&z);
        return err_fmt(msg, cap, ERR_CONFIG, "cannot bind %s: %s", s->cfg->listen,
                       zmq_strerror(zmq_errno()));
    }
    if (port > 0 && strchr(ep, '*')) {
        char *star = strrchr(ep, ':');
        if (star)
            snprintf(star, sizeof ep - (size_t)(star - ep), ":%d", port);
    }
    char *bound = mem_strdup(ep);
    if (bound) {
        if (strcmp(s->cfg->advertise, s->cfg->listen) == 0) {
            mem_free(s->cfg->advertise);
            s->cfg->advertise = mem_strdup(bound);
        }
        mem_free(s->cfg->listen);
        s->cfg->listen = bound;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/pn.endpoint", s->cfg->work_dir);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%s\n", s->cfg->listen);
        fclose(f);
    }
    if (s->curve)
        server__watch_handshakes(s, z);
    rc = zuv_sock_new(&s->router, &s->loop, &z, NULL, server__on_router, s);
    if (rc)
        zsock_destroy(&z);
    return rc;
}

/* GET /metrics: the node's families, then the shell's and the process's. */
static void server__serve_metrics(void *arg, char **body, size_t *blen)
{
    server_t *s = arg;
    s->scrapes++;
    struct metrics m;
    metrics_init(&m);
    char boot[24];
    snprintf(boot, sizeof boot, "%016llx", (unsigned long long)s->boot_id);
    metrics_family(&m, "paddock_pn_info", METRICS_GAUGE,
                   "Always 1: the node's name and this run's boot id.");
    const char *li[] = {"node", s->cfg->name, "boot_id", boot, NULL};
    metrics_sample(&m, li, 1);
    node_metrics(s->node, &m);
    metrics_gauge1(&m, "paddock_pn_registered", "1 once an RM replica accepted the node.",
                   s->registered ? 1 : 0);
    metrics_gauge1(&m, "paddock_pn_draining", "1 while the node takes no new tasks.",
                   s->draining ? 1 : 0);
    metrics_counter1(&m, "paddock_pn_heartbeats_sent_total",
                     "Heartbeats sent (each to every RM replica).", (double)s->heartbeats);
    metrics_counter1(&m, "paddock_pn_auth_failures_total",
                     "Connections refused: CURVE handshake failed.", (double)s->auth_failures);
    metrics_counter1(&m, "paddock_pn_metrics_scrapes_total", "Requests for /metrics served.",
                     (double)s->scrapes);
    metrics_process(&m); /* process_resident_memory_bytes: the PN's RSS */
    if (metrics_error(&m) != 0)
        log_warn("metrics: %s while building the exposition", err_name(metrics_error(&m)));
    *body = metrics_take(&m, blen);
    metrics_close(&m);
}

/* [metrics] listen: the HTTP server, its URL in WORK/metrics.url and in heartbeats. */
static int server__metrics_start(server_t *s, char *msg, size_t cap)
{
    if (!s->cfg->metrics_listen[0])
        return 0;
    char why[256];
    /* the PN's own GET-only responder, not common/httpd's libmicrohttpd: an idle PN stays
     * under 10 MiB (pn/metrics_http.h) */
    int rc = metrics_http_start(&s->http, &s->loop, s->cfg->metrics_listen, "/metrics",
                                server__serve_metrics, s, why, sizeof why);
    if (rc)
        return err_fmt(msg, cap, rc, "[metrics] listen: %s", why);
    snprintf(s->metrics_url, sizeof s->metrics_url, "%s/metrics", metrics_http_url(s->http));
    char path[4200];
    snprintf(path, sizeof path, "%s/metrics.url", s->cfg->work_dir);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%s\n", s->metrics_url);
        fclose(f);
    }
    log_info("metrics on %s", s->metrics_url);
    return 0;
}

static void server__close_cb(uv_handle_t *h)
{
    (void)h;
}

static void server__pool_noop(uv_work_t *w)
{
    (void)w;
}

static void server__pool_started(uv_work_t *w, int status)
{
    (void)w;
    (void)status;
}

int server_run(pnconf_t *cfg, bool insecure, char *msg, size_t cap)
{
    server_t *s = mem_calloc(1, sizeof *s);
    if (!s)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    s->cfg = cfg;
    s->chld.fd = -1;
    proto_buf_init(&s->buf);
    proto_stats_init(&s->rm_stats);
    map_init(&s->replies);
    /* The signals the loop handles reach the loop thread only: every thread made before the
       loop runs (libuv's thread pool, started here; ZeroMQ's and CURVE's; the spawners block
       all) inherits them blocked. A task's exit (SIGCHLD) used to land on an idle pool thread
       as often as not, waking it for libuv's handler, which only writes to the loop's pipe. */
    sigset_t loop_sigs, old_sigs;
    sigemptyset(&loop_sigs);
    sigaddset(&loop_sigs, SIGCHLD);
    sigaddset(&loop_sigs, SIGTERM);
    sigaddset(&loop_sigs, SIGINT);
    sigaddset(&loop_sigs, SIGUSR1);
    int masked = pthread_sigmask(SIG_BLOCK, &loop_sigs, &old_sigs) == 0;
    int rc = uv_loop_init(&s->loop) == 0 ? 0 : err_fmt(msg, cap, ERR_SYS, "uv_loop_init");
    int loop_ok = !rc;
    if (!rc && uv_queue_work(&s->loop, &s->pool_start, server__pool_noop, server__pool_started))
        log_warn("thread pool not started early: its threads may take the loop's signals");
    if (!rc && zuv_global_init() != 0)
        rc = err_fmt(msg, cap, ERR_SYS, "cannot initialise ZeroMQ");
    if (!rc && (cfg->rm_api.len > SERVER__MAX_RM || cfg->rm_heartbeat.len > SERVER__MAX_RM))
        rc = err_fmt(msg, cap, ERR_CONFIG, "more than %d RM endpoints", SERVER__MAX_RM);
    if (!rc && cfg->keys_dir[0]) {
        rc = curve_load(&s->curve, cfg->keys_dir, cfg->key_name, NULL, msg, cap);
        if (!rc) {
            char allow[4200];
            snprintf(allow, sizeof allow, "%s/%s", cfg->keys_dir, CURVE_ALLOW_SUBDIR);
            rc = curve_auth_start(allow, msg, cap);
        }
    }
    if (!rc)
        rc = curve_check_listen(cfg->listen, s->curve, insecure, msg, cap);
    if (!rc && strcmp(cfg->stop_mode, "finish") != 0 && strcmp(cfg->stop_mode, "handback") != 0)
        rc = err_fmt(msg, cap, ERR_CONFIG, "pn.stop_mode: %s is neither finish nor handback",
                     cfg->stop_mode);
    uid_t uid = (uid_t)-1;
    gid_t gid = (gid_t)-1;
    if (!rc && cfg->run_as[0]) {
        if (geteuid() != 0) {
            log_warn("pn.run_as = %s ignored: the PN is not root", cfg->run_as);
        } else {
            struct passwd *pw = getpwnam(cfg->run_as);
            if (!pw)
                rc = err_fmt(msg, cap, ERR_CONFIG, "pn.run_as: no user %s", cfg->run_as);
            else {
                uid = pw->pw_uid;
                gid = pw->pw_gid;
            }
        }
    } else if (!rc && geteuid() == 0) {
        log_warn("running as root without pn.run_as: tasks run as root");
    }
    if (!rc && exec_become_subreaper() != 0)
        log_warn("cannot become a child subreaper: orphaned task processes go to init");
    if (!rc && id_random_u64(&s->boot_id) != 0)
        rc = err_fmt(msg, cap, ERR_SYS, "no random boot id");
    if (!rc) {
        s->node = node_new(cfg, &s->loop, s->boot_id, uid, gid, server__send, s, msg, cap);
        if (!s->node)
            rc = ERR_CONFIG;
    }
    if (!rc)
        rc = server__bind(s, msg, cap);
    if (!rc)
        rc = server__metrics_start(s, msg, cap);
    for (size_t i = 0; !rc && i < cfg->rm_api.len; i++, s->nrm++)
        rc = server__dealer(s, cfg->rm_api.items[i], &s->rm_api[i], server__on_rm, msg, cap);
    if (!rc && cfg->rm_heartbeat.len) {
        s->separate_hb = 1;
        for (size_t i = 0; !rc && i < cfg->rm_heartbeat.len && i < SERVER__MAX_RM; i++, s->nhb++)
            rc = server__dealer(s, cfg->rm_heartbeat.items[i], &s->rm_hb[i], server__on_rm, msg,
                                cap);
    } else if (!rc) {
        for (size_t i = 0; i < s->nrm; i++)
            s->rm_hb[i] = s->rm_api[i];
        s->nhb = s->nrm;
    }
    int handles = 0;
    if (!rc) {
        handles = 1;
        uv_timer_init(&s->loop, &s->hb_timer);
        uv_timer_init(&s->loop, &s->mem_timer);
        uv_timer_init(&s->loop, &s->refresh_timer);
        uv_timer_init(&s->loop, &s->drain_timer);
        uv_signal_init(&s->loop, &s->sigterm);
        uv_signal_init(&s->loop, &s->sigint);
        uv_signal_init(&s->loop, &s->sigusr1);
        s->hb_timer.data = s->mem_timer.data = s->refresh_timer.data = s->drain_timer.data = s;
        s->sigterm.data = s->sigint.data = s->sigusr1.data = s;
        uv_timer_start(&s->hb_timer, server__on_hb, 0, (uint64_t)cfg->heartbeat_ms);
        uv_timer_start(&s->mem_timer, server__on_mem, (uint64_t)cfg->memory_poll_ms,
                       (uint64_t)cfg->memory_poll_ms);
        if (cfg->status_refresh_ms > 0)
            uv_timer_start(&s->refresh_timer, server__on_refresh, (uint64_t)cfg->status_refresh_ms,
                           (uint64_t)cfg->status_refresh_ms);
        chld_start(&s->chld, &s->loop, masked, &old_sigs, server__reap, s);
        uv_signal_start(&s->sigterm, server__on_stop, SIGTERM);
        uv_signal_start(&s->sigint, server__on_stop, SIGINT);
        uv_signal_start(&s->sigusr1, server__on_drain_signal, SIGUSR1);
        if (strchr(cfg->advertise, '*') || strstr(cfg->advertise, "0.0.0.0"))
            log_warn("pn.advertise = %s: job managers cannot connect there; set pn.advertise",
                     cfg->advertise);
        log_info("%s: listening on %s%s, %.3g cores, %llu MiB, %zu RM replicas", cfg->name,
                 cfg->listen, s->curve ? " (CURVE)" : "", cfg->cpus,
                 (unsigned long long)(cfg->memory >> 20), s->nrm);
        notify_ready();
        notify_status("listening on %s, not registered", cfg->listen);
        if (masked) { /* a signal that came meanwhile is delivered now, to its handler */
            pthread_sigmask(SIG_SETMASK, &old_sigs, NULL);
            masked = 0;
        }
        uv_run(&s->loop, UV_RUN_DEFAULT);
        /* staging jobs in flight must come back before the node goes */
        while (s->node && node_busy(s->node) > 0)
            uv_run(&s->loop, UV_RUN_ONCE);
    }
    metrics_http_stop(&s->http); /* its handles close on the loop run below */
    node_destroy(&s->node);      /* reports running tasks lost */
    if (s->router)               /* give those last statuses a moment to leave */
        zsock_set_linger(zuv_sock_zsock(s->router), 200);
    if (handles) {
        uv_close((uv_handle_t *)&s->hb_timer, server__close_cb);
        uv_close((uv_handle_t *)&s->mem_timer, server__close_cb);
        uv_close((uv_handle_t *)&s->refresh_timer, server__close_cb);
        uv_close((uv_handle_t *)&s->drain_timer, server__close_cb);
        uv_close((uv_handle_t *)&s->sigusr1, server__close_cb);
        chld_close(&s->chld, server__close_cb);
        uv_close((uv_handle_t *)&s->sigterm, server__close_cb);
        uv_close((uv_handle_t *)&s->sigint, server__close_cb);
    }
    zuv_sock_close(&s->router);
    zuv_sock_close(&s->monitor);
    size_t rit = 0;
    void *rv;
    while (map_next(&s->replies, &rit, NULL, NULL, &rv)) {
        server__reply_t *r = rv;
        zuv_sock_close(&r->sock);
        mem_free(r);
    }
    map_close(&s->replies);
    for (size_t i = 0; i < s->nrm; i++)
        zuv_sock_close(&s->rm_api[i]);
    for (size_t i = 0; s->separate_hb && i < s->nhb; i++)
        zuv_sock_close(&s->rm_hb[i]);
    if (loop_ok) {
        uv_run(&s->loop, UV_RUN_DEFAULT);
        uv_loop_close(&s->loop);
    }
    chld_release(&s->chld); /* SIGCHLD back to this thread as it was before */
    curve_auth_stop();
    curve_destroy(&s->curve);
    proto_buf_close(&s->buf);
    mem_free(s);
    if (masked)
        pthread_sigmask(SIG_SETMASK, &old_sigs, NULL);
    return rc;
}
