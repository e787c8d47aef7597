/* server.c - paddock-rm lifecycle: data directory, Raft, sockets, timers, leadership,
 * batching of commands into log entries. */
#include "rm/rmserver_internal.h"

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "common/notify.h"
#include "proto/pack.h"
#include "proto/view_cells.h"
#include "rm/ledger_cmd.h"
#include "rm/raft_curve.h"
#include "rm/rm_metrics.h"
#include "rm/rm_page.h"
#include "rm/rmview_xpub.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define RMSERVER__POLL_MS 10
#define RMSERVER__TICK_MS 100
const char *rmserver_role_name(int role)
{
    switch (role) {
    case RAFT_LEADER:
        return "leader";
    case RAFT_FOLLOWER:
        return "follower";
    case RAFT_CANDIDATE:
        return "candidate";
    default:
        return "unavailable";
    }
}

const char *rmserver_leader_api(struct rmserver *s, uint64_t *id)
{
    raft_id lid = 0;
    const char *addr = NULL;
    raft_leader(&s->raft, &lid, &addr);
    *id = lid;
    struct rmconf_replica r;
    if (lid == 0 || !rmserver_member_find(s, lid, &r))
        return NULL;
    return r.api;
}

/* ---- batching commands into log entries ---- */

/* A command's borrowed texts and arrays become its own until it is encoded (rmserver_cmd). */
static void rmserver__cmd_free(struct rmserver_cmd *c)
{
    mem_free(c->owned[0]);
    mem_free(c->owned[1]);
    mem_free(c->owned[2]);
    mem_free(c->owned[3]);
    memset(c->owned, 0, sizeof c->owned);
}

static void *rmserver__dup(const void *p, size_t n)
{
    void *q = mem_alloc(n > 0 ? n : 1);
    if (q != NULL && n > 0)
        memcpy(q, p, n);
    return q;
}

int rmserver_submit(struct rmserver *s, const struct ledger_cmd *cmd,
                    const struct rmserver_waiter *w)
{
    if (s->pending.len >= RMSERVER_PENDING_MAX)
        return ERR_FULL;
    struct rmserver_cmd c;
    memset(&c, 0, sizeof c);
    c.cmd = *cmd;
    if (w != NULL)
        c.w = *w;
    if ((cmd->text_len > 0 && (c.owned[0] = rmserver__dup(cmd->text, cmd->text_len)) == NULL) ||
        (cmd->text2_len > 0 && (c.owned[1] = rmserver__dup(cmd->text2, cmd->text2_len)) == NULL) ||
        (cmd->nvals > 0 &&
         (c.owned[2] = rmserver__dup(cmd->vals, 4 * (size_t)cmd->nvals)) == NULL) ||
        (cmd->nvals2 > 0 &&
         (c.owned[3] = rmserver__dup(cmd->vals2, 4 * (size_t)cmd->nvals2)) == NULL)) {
        rmserver__cmd_free(&c);
        return ERR_NOMEM;
    }
    c.cmd.text = c.owned[0];
    c.cmd.text2 = c.owned[1];
    c.cmd.vals = c.owned[2];
    c.cmd.vals2 = c.owned[3];
    int rc = vec_push(&s->pending, c);
    if (rc != 0)
        rmserver__cmd_free(&c);
    return rc;
}

static void rmserver__batch_done(struct rmserver *s, struct rmserver_batch *b, int status)
{
    ledger_t *l = fsm_ledger(s->fsm);
    for (size_t i = 0; i < b->n; i++) {
        struct rmserver_cmd *c = &b->cmds[i];
        if (c->cmd.type == LEDGER_CMD_NODE_LIVENESS && s->liveness_busy > 0)
            s->liveness_busy--;
        if (c->w.sock == NULL)
            continue;
        struct ledger_result res = {0, 0, 0};
        int code = 0;
        if (status != 0)
            code = ERR_NOTLEADER; /* maybe committed: the retry's key tells */
        else if (!ledger_idem_lookup(l, c->cmd.key, &res))
            code = ERR_UNAVAILABLE;
        else
            s->writes_committed++;
        rmserver_reply(s, c, code, &res);
    }
    if (status == 0)
        metrics_hist_observe(&s->commit_hist, (double)(clock_mono_ns() - b->t0_ns) / 1e9);
    for (size_t i = 0; i < b->n; i++)
        rmserver__cmd_free(&b->cmds[i]);
    mem_free(b->cmds);
    mem_free(b);
    s->inflight--;
}

static void rmserver__apply_cb(struct raft_apply *req, int status, void *result)
{
    (void)result;
    struct rmserver_batch *b = req->data;
    if (status != 0)
        log_warn("log entry of %zu commands not committed here: %s", b->n, raft_strerror(status));
    rmserver__batch_done(b->s, b, status);
}

static void rmserver__fail_pending(struct rmserver *s, int code)
{
    for (size_t i = 0; i < s->pending.len; i++) {
        struct rmserver_cmd *c = &s->pending.items[i];
        if (c->cmd.type == LEDGER_CMD_NODE_LIVENESS && s->liveness_busy > 0)
            s->liveness_busy--;
        if (c->w.sock != NULL)
            rmserver_reply(s, c, code, NULL);
        rmserver__cmd_free(c);
    }
    vec_truncate(&s->pending, 0);
}

static void rmserver__flush(struct rmserver *s)
{
    while (s->ready && s->pending.len > 0 && s->inflight < RMSERVER_INFLIGHT_MAX) {
        size_t n =
            s->pending.len < (size_t)s->cfg->batch_max ? s->pending.len : (size_t)s->cfg->batch_max;
        struct rmserver_batch *b = mem_calloc(1, sizeof *b);
        struct rmserver_cmd *cmds = mem_calloc(n, sizeof *cmds);
        struct ledger_cmd *lc = mem_calloc(n, sizeof *lc);
        if (b == NULL || cmds == NULL || lc == NULL) {
            mem_free(b);
            mem_free(cmds);
            mem_free(lc);
            return; /* retried on the next loop turn */
        }
        memcpy(cmds, s->pending.items, n * sizeof *cmds);
        for (size_t i = 0; i < n; i++)
            lc[i] = cmds[i].cmd;
        struct enc_buf eb;
        enc_buf_init(&eb);
        eb.realloc_fn = raft_realloc; /* raft frees the entry */
        ledger_cmd_encode(&eb, lc, n, clock_wall_ms());
        mem_free(lc);
        size_t len = 0;
        struct raft_buffer buf;
        buf.base = enc_buf_take(&eb, &len);
        buf.len = len;
        if (buf.base == NULL) {
            mem_free(b);
            mem_free(cmds);
            return;
        }
        b->s = s;
        b->n = n;
        b->cmds = cmds;
        b->req.data = b;
        memmove(s->pending.items, s->pending.items + n, (s->pending.len - n) * sizeof *cmds);
        vec_truncate(&s->pending, s->pending.len - n);
        s->inflight++;
        b->t0_ns = clock_mono_ns();
        int rc = raft_apply(&s->raft, &b->req, &buf, 1, rmserver__apply_cb);
        if (rc != 0) {
            raft_free(buf.base);
            log_warn("raft_apply: %s", raft_strerror(rc));
            rmserver__batch_done(s, b, rc);
        } else {
            s->entries_appended++;
        }
    }
}

static void rmserver__on_check(uv_check_t *h)
{
    rmserver__flush(h->data);
}

/* ---- leadership ---- */

static void rmserver__reconcile_vcs(struct rmserver *s)
{
    struct rmconf_vc vcs[RMCONF_MAX_VCS];
    size_t n = 0;
    char why[128];
    if (rmconf_vcs(s->cfg, vcs, &n, why, sizeof why) != 0)
        return;
    ledger_t *l = fsm_ledger(s->fsm);
    for (size_t i = 0; i < n; i++) {
        const struct ledger_vc *vc = ledger_vc_find(l, vcs[i].name);
        if (vc != NULL && vc->capacity == vcs[i].capacity &&
            vc->token_cpu_milli == vcs[i].token_cpu_milli &&
            vc->token_mem_mb == vcs[i].token_mem_mb)
            continue;
        struct ledger_cmd c;
        ledger_cmd_init(&c, LEDGER_CMD_VC_SET);
        memcpy(c.vc, vcs[i].name, sizeof c.vc);
        c.count = vcs[i].capacity;
        c.cpus_milli = vcs[i].token_cpu_milli;
        c.mem_mb = vcs[i].token_mem_mb;
        log_info("virtual cluster %s: capacity %u tokens of %.3g cores, %u MiB", vcs[i].name,
                 vcs[i].capacity, vcs[i].token_cpu_milli / 1000.0, vcs[i].token_mem_mb);
        rmserver_submit(s, &c, NULL);
    }
}

static void rmserver__barrier_cb(struct raft_barrier *req, int status)
{
    struct rmserver *s = req->data;
    s->barrier_busy = false;
    if (status != 0 || raft_state(&s->raft) != RAFT_LEADER) {
        log_warn("barrier after election failed: %s", raft_strerror(status));
        return;
    }
    s->ready = true;
    s->ready_mono_ms = (int64_t)clock_mono_ms();
    log_info("leader for term %llu, ledger at index %llu: serving writes",
             (unsigned long long)s->raft.current_term,
             (unsigned long long)raft_last_applied(&s->raft));
    rmserver__reconcile_vcs(s);
    rmserver__flush(s);
}

static void rmserver__on_poll(uv_timer_t *t)
{
    struct rmserver *s = t->data;
    int st = raft_state(&s->raft);
    rmserver_member_poll(s);
    if (st != s->role) {
        log_info("raft: %s -> %s (term %llu)", rmserver_role_name(s->role), rmserver_role_name(st),
                 (unsigned long long)s->raft.current_term);
        if (s->role == RAFT_LEADER) {
            s->ready = false;
            rmserver__fail_pending(s, ERR_NOTLEADER);
        }
        s->role = st;
        notify_status("raft %s, term %llu", rmserver_role_name(st),
                      (unsigned long long)s->raft.current_term);
    }
    if (st == RAFT_LEADER && !s->ready && !s->barrier_busy) {
        /* raft 0.15: a new leader commits earlier terms' entries only through an entry of
         * its own term; the barrier is that entry (docs/architecture.md, "Facts about the
         * dependencies") */
        s->barrier.data = s;
        int rc = raft_barrier(&s->raft, &s->barrier, rmserver__barrier_cb);
        if (rc == 0)
            s->barrier_busy = true;
        else
            log_warn("raft_barrier: %s", raft_strerror(rc));
    }
}

/* ---- leases and liveness (leader) ---- */

static void rmserver__liveness(struct rmserver *s)
{
    ledger_t *l = fsm_ledger(s->fsm);
    int64_t now = (int64_t)clock_mono_ms();
    for (size_t i = 0; i < ledger_node_count(l); i++) {
        const struct ledger_node *n = ledger_node_at(l, i);
        const struct rmview_node *vn = rmview_find(s->view, n->name);
        int64_t heard = vn != NULL && vn->rx_ms > s->ready_mono_ms ? vn->rx_ms : s->ready_mono_ms;
        /* a heartbeat from the node's current boot counts; from an older one it does not */
        if (vn != NULL && vn->boot_id != n->boot_id && vn->rx_ms != 0)
            heard = s->ready_mono_ms;
        enum ledger_liveness want =
            rmview_liveness(heard, now, s->cfg->suspect_after_ms, s->cfg->down_after_ms);
        if (want == n->liveness)
            continue;
        struct ledger_cmd c;
        ledger_cmd_init(&c, LEDGER_CMD_NODE_LIVENESS);
        memcpy(c.name, n->name, sizeof c.name);
        c.state = (uint8_t)want;
        if (rmserver_submit(s, &c, NULL) == 0) {
            s->liveness_busy++; /* a pass before all are applied would submit them again */
            log_info("node %s: %s -> %s", n->name, ledger_node_state_name(n),
                     want == LEDGER_NODE_UP        ? "up"
                     : want == LEDGER_NODE_SUSPECT ? "suspect"
                                                   : "down");
        }
    }
}

static void rmserver__on_tick(uv_timer_t *t)
{
    struct rmserver *s = t->data;
    rmserver_trim(s);
    rmserver_snapshot_bound(s);
    if (!s->ready)
        return;
    ledger_t *l = fsm_ledger(s->fsm);
    if (ledger_next_expiry(l) <= clock_wall_ms()) {
        bool queued = false;
        for (size_t i = 0; i < s->pending.len && !queued; i++)
            queued = s->pending.items[i].cmd.type == LEDGER_CMD_TICK;
        if (!queued) {
            struct ledger_cmd c;
            ledger_cmd_init(&c, LEDGER_CMD_TICK);
            rmserver_submit(s, &c, NULL);
        }
    }
    if (s->liveness_busy == 0)
        rmserver__liveness(s);
    rmserver_recur_tick(s);
    rmserver_jobs_tick(s);
}

/* ---- the view ---- */

static void rmserver__on_applied(void *arg, const struct ledger_cmd *cmd,
                                 const struct ledger_result *res)
{
    struct rmserver *s = arg;
    if (res->code != 0 || cmd->type > LEDGER_CMD_NODE_OUTCOME)
        return;
    const struct ledger_node *n = ledger_node_find(fsm_ledger(s->fsm), cmd->name);
    if (n != NULL)
        rmview_note(s->view, n);
}

static int rmserver__emit(void *arg, const proto_msg_t *msg)
{
    struct rmserver *s = arg;
    char err[128];
    proto_msg_t numbered = *msg, *m = &numbered; /* a snapshot goes to the JMs given its number */
    if (m->type == PROTO_VIEW_SNAPSHOT)
        m->req_id = s->snap_gen;
    /* packed (proto/pack.h): a third of the bytes for every subscriber to take */
    int rc = proto_encode_packed(m, &s->buf, err, sizeof err);
    if (rc != 0) {
        log_error("view: %s", err);
        return rc;
    }
    zuv_send_bytes(s->pub, NULL, 0, s->buf.data, s->buf.len);
    return 0;
}

/* A compact delta (proto/view_cells.h): the nodes whose wait cells alone moved. */
static int rmserver__emit_cells(void *arg, const struct proto_view_cells *c)
{
    struct rmserver *s = arg;
    int rc = proto_view_cells_encode(c, &s->buf);
    if (rc != 0)
        log_error("view: compact delta: %s", err_text(rc));
    else
        zuv_send_bytes(s->pub, NULL, 0, s->buf.data, s->buf.len);
    return rc;
}

static void rmserver__snapshot(struct rmserver *s)
{
    uint64_t t0 = clock_mono_ns();
    /* the ledger may have been replaced by a Raft snapshot: resync durable facts */
    ledger_t *l = fsm_ledger(s->fsm);
    for (size_t i = 0; i < ledger_node_count(l); i++)
        rmview_note(s->view, ledger_node_at(l, i));
    int64_t now = (int64_t)(t0 / 1000000);
    s->snapshots++;
    s->snap_gen++;
    rmview_publish_snapshot(s->view, now, s->id, rmserver__emit, s);
    joinwin_published(&s->join, now, ledger_node_count(l),
                      (int64_t)((clock_mono_ns() - t0) / 1000));
}

static void rmserver__on_join(uv_timer_t *t)
{
    struct rmserver *s = t->data;
    if (s->join.wanted) /* else a delta tick served the joiners first */
        rmserver__snapshot(s);
}

static void rmserver__on_delta(uv_timer_t *t)
{
    struct rmserver *s = t->data;
    /* joiners are served at the window's end (join_timer); deltas keep going until then */
    if (joinwin_due(&s->join, (int64_t)clock_mono_ms(), ledger_node_count(fsm_ledger(s->fsm))))
        rmserver__snapshot(s);
    else /* compact deltas while every subscriber of deltas takes them (rmview_xpub_count) */
        rmview_publish_delta_cells(
            s->view, (int64_t)clock_mono_ms(), s->id, rmserver__emit,
            s->cells_subs >= s->delta_subs && s->cells_subs > 0 ? rmserver__emit_cells : NULL, s);
}

/* The periodic snapshot is for older JMs, which subscribe to everything (""; or to a part of
 * the snapshot topic) and repair a lost delta with the next snapshot. A JM of this version asks
 * for one (the whole snapshot topic) and again when one does not make it whole. */
static void rmserver__on_snapshot(uv_timer_t *t)
{
    struct rmserver *s = t->data;
    unsigned len = 0;
    while (len < PROTO_VIEW_TOPIC_LEN && s->snap_subs[len] == 0)
        len++;
    if (len < PROTO_VIEW_TOPIC_LEN)
        rmserver__snapshot(s);
}

/* ---- start and stop ---- */

static void rmserver__handle_closed(uv_handle_t *h)
{
    struct rmserver *s = h->data;
    s->handles_open--;
}

static void rmserver__raft_closed(struct raft *r)
{
    struct rmserver *s = r->data;
    raft_uv_close(&s->io);
    raft_curve_close(&s->transport);
    s->raft_closed = true;
}

static void rmserver__stop(struct rmserver *s)
{
    if (s->stopping)
        return;
    log_info("stopping");
    notify_stopping();
    rmserver__fail_pending(s, ERR_UNAVAILABLE); /* clients retry on another replica */
    s->stopping = true;
    uv_handle_t *hs[] = {(uv_handle_t *)&s->poll_timer,  (uv_handle_t *)&s->tick_timer,
                         (uv_handle_t *)&s->delta_timer, (uv_handle_t *)&s->snap_timer,
                         (uv_handle_t *)&s->join_timer,  (uv_handle_t *)&s->flush_check,
                         (uv_handle_t *)&s->sigterm,     (uv_handle_t *)&s->sigint};
    for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++) {
        if (hs[i]->data == s && !uv_is_closing(hs[i]))
            uv_close(hs[i], rmserver__handle_closed);
    }
    if (s->hb != s->api)
        zuv_sock_close(&s->hb);
    s->hb = NULL;
    zuv_sock_close(&s->api);
    zuv_sock_close(&s->pub);
    rm_metrics_stop(s);
    if (s->raft_started)
        raft_close(&s->raft, rmserver__raft_closed);
}

static void rmserver__on_signal(uv_signal_t *h, int sig)
{
    struct rmserver *s = h->data;
    log_info("signal %d", sig);
    rmserver__stop(s);
}

/* The view socket is a manual XPUB: a frame starting with 1 is a subscription, with 0 an
 * unsubscription, each from one subscriber, applied here (rmview_xpub.h). A subscription to
 * snapshots (a JM starting, or one that missed a delta) gets one numbered for it, so it never
 * places a job on part of the cluster: at once, or shared by the joins within the join window
 * of the last snapshot (rm/joinwin.h) at the window's end or the next delta tick.
 * Deltas alone ask for nothing. */
static void rmserver__on_pub(zuv_sock_t *zs, zmsg_t **msg, void *arg)
{
    (void)zs;
    struct rmserver *s = arg;
    zframe_t *f = zmsg_first(*msg);
    if (f == NULL || zframe_size(f) < 1 || zframe_data(f)[0] > 1)
        return;
    rmview_xpub_count(zframe_data(f), zframe_size(f), &s->delta_subs, &s->cells_subs);
    int len = rmview_xpub_apply(zsock_resolve(zuv_sock_zsock(s->pub)), zframe_data(f),
                                zframe_size(f), s->snap_gen + 1);
    if (len < 0)
        return;
    if (zframe_data(f)[0] == 0) {
        s->snap_subs[len] -= s->snap_subs[len] > 0;
        return;
    }
    s->snap_subs[len]++;
    if (s->stopping)
        return;
    int64_t wait =
        joinwin_join(&s->join, (int64_t)clock_mono_ms(), ledger_node_count(fsm_ledger(s->fsm)));
    if (wait == 0)
        rmserver__snapshot(s);
    else if (wait > 0)
        uv_timer_start(&s->join_timer, rmserver__on_join, (uint64_t)wait, 0);
}

static int rmserver__lock_dir(struct rmserver *s, char *msg, size_t cap)
{
    const char *dir = s->cfg->data_dir;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return err_fmt(msg, cap, ERR_IO, "data_dir %s: %s", dir, strerror(errno));
    char path[4200];
    snprintf(path, sizeof path, "%s/lock", dir);
    s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (s->lock_fd < 0)
        return err_fmt(msg, cap, ERR_IO, "%s: %s", path, strerror(errno));
    /* A replica killed with SIGKILL holds the lock until its last thread has exited: a
     * restart right after it waits for that (up to 5 s), while a live holder is refused at
     * once. */
    for (int tries = 0; flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0; tries++) {
        int e = errno;
        char buf[32] = "";
        long holder = pread(s->lock_fd, buf, sizeof buf - 1, 0) > 0 ? atol(buf) : 0;
        if (e != EWOULDBLOCK || tries >= 50 || rmserver_proc_running(holder, NULL))
            return err_fmt(msg, cap, ERR_IO, "data_dir %s is in use by another paddock-rm (%s)",
                           dir, strerror(e));
        usleep(100 * 1000);
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(s->lock_fd, 0) != 0 || write(s->lock_fd, pid, (size_t)n) != n)
        log_warn("%s: cannot record the pid", path);
    return 0;
}

static int rmserver__socket(struct rmserver *s, int type, const char *endpoint, bool insecure,
                            zuv_recv_fn *fn, size_t queue_max, zuv_sock_t **out, char *msg,
                            size_t cap)
{
    int rc = curve_check_listen(endpoint, s->curve, insecure, msg, cap);
    if (rc != 0)
        return rc;
    zsock_t *z = zuv_socket(type, PROTO_MAX_MSG_BYTES);
    if (z == NULL)
        return err_fmt(msg, cap, ERR_SYS, "cannot create a socket for %s", endpoint);
    if (type == ZMQ_XPUB) {
        /* two whole snapshots of the largest view per subscriber (a 20,000-node snapshot is 40
         * parts of 200 KiB): a subscriber further behind loses parts, which the next snapshot
         * repairs, rather than holding the RM's memory */
        zsock_set_sndhwm(z, 2 * (int)PROTO_MAX_VIEW_PARTS);
        zsock_set_xpub_verbose(z, 1); /* every subscription, not only a topic's first */
        zsock_set_xpub_manual(z, 1);  /* applied by the RM: rmserver__on_pub */
        zsock_set_backlog(z, RMVIEW_XPUB_BACKLOG); /* a thousand JMs connecting at once */
    }
    /* Inbound pipes keep ZeroMQ's default high-water mark (1,000 messages per peer): a full
     * pipe holds its sender back (TCP backpressure, nothing dropped), while a deeper backlog
     * only costs memory (200,000 per peer held 400 MiB of queued heartbeats at 20,000 nodes) and
     * delivers stale heartbeats late. */
    rc = curve_apply(z, s->curve, CURVE_SERVER, NULL, msg, cap);
    if (rc == 0 && zsock_bind(z, "%s", endpoint) < 0)
        rc = err_fmt(msg, cap, ERR_IO, "cannot bind %s: %s", endpoint, zmq_strerror(zmq_errno()));
    struct zuv_opts o; /* queue_max: RMSERVER_HB_QUEUE_MAX */
    zuv_opts_init(&o);
    if (queue_max > 0)
        o.queue_max = queue_max;
    if (rc == 0)
        rc = zuv_sock_new(out, &s->loop, &z, &o, fn, s);
    if (rc != 0) {
        zsock_destroy(&z);
        if (msg[0] == '\0')
            err_fmt(msg, cap, rc, "%s: %s", endpoint, err_text(rc));
    }
    return rc;
}

static bool rmserver__initialised(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/metadata1", dir);
    if (access(path, F_OK) == 0)
        return true;
    snprintf(path, sizeof path, "%s/metadata2", dir);
    return access(path, F_OK) == 0;
}

static int rmserver__raft_start(struct rmserver *s, bool insecure, bool bootstrap, bool join,
                                char *msg, size_t cap)
{
    const rmconf_t *cfg = s->cfg;
    struct rmconf_replica self;
    rmconf_replica(cfg, (size_t)s->self, &self);
    int rc = raft_curve_init(&s->transport, &s->loop, s->curve, insecure, msg, cap);
    if (rc != 0)
        return rc;
    rm_metrics_add_source(s, raft_curve_metrics, &s->transport); /* refusals by reason */
    rmserver_member_transport(s);
    rc = raft_uv_init(&s->io, &s->loop, cfg->data_dir, &s->wrap);
    if (rc != 0) {
        raft_curve_close(&s->transport);
        return err_fmt(msg, cap, ERR_IO, "raft storage %s: %s", cfg->data_dir, raft_strerror(rc));
    }
    raft_uv_set_segment_size(&s->io, (size_t)cfg->segment_size);
    rc = raft_init(&s->raft, &s->io, fsm_raft(s->fsm), s->id, self.raft);
    if (rc != 0) {
        raft_uv_close(&s->io);
        raft_curve_close(&s->transport);
        return err_fmt(msg, cap, ERR_SYS, "raft_init: %s", raft_strerror(rc));
    }
    s->raft.data = s;
    s->raft_started = true; /* from here raft_close releases io and transport */
    bool initialised = rmserver__initialised(cfg->data_dir);
    if (!initialised && !bootstrap && !join)
        return err_fmt(msg, cap, ERR_STATE,
                       "data_dir %s holds no Raft state: start with --bootstrap to create the "
                       "cluster, or --join to join a running one after `paddock rm add` (a lost "
                       "replica must rejoin under a new id)",
                       cfg->data_dir);
    if (!initialised && join)
        log_info("joining: empty data_dir, waiting for the leader to send the log");
    if (!initialised && !join) {
        struct raft_configuration conf;
        raft_configuration_init(&conf);
        for (size_t i = 0; i < rmconf_replica_count(cfg); i++) {
            struct rmconf_replica r;
            rmconf_replica(cfg, i, &r);
            rc = raft_configuration_add(&conf, r.id, r.raft, RAFT_VOTER);
            if (rc != 0)
                break;
        }
        if (rc == 0)
            rc = raft_bootstrap(&s->raft, &conf);
        raft_configuration_close(&conf);
        if (rc != 0 && rc != RAFT_CANTBOOTSTRAP)
            return err_fmt(msg, cap, ERR_IO, "raft_bootstrap: %s", raft_strerror(rc));
        log_info("bootstrapped a cluster of %zu replicas", rmconf_replica_count(cfg));
    }
    raft_set_election_timeout(&s->raft, (unsigned)cfg->election_timeout_ms);
    raft_set_heartbeat_timeout(&s->raft, (unsigned)cfg->raft_heartbeat_ms);
    raft_set_pre_vote(&s->raft, cfg->pre_vote);
    raft_set_snapshot_threshold(&s->raft, (unsigned)cfg->snapshot_threshold);
    s->snap_threshold = (unsigned)cfg->snapshot_threshold;
    raft_set_snapshot_trailing(&s->raft, (unsigned)cfg->snapshot_trailing);
    /* raft's default is 30 s: a snapshot sent to a replica that died on the way would hold
     * back its catch-up that long after it comes back */
    raft_set_install_snapshot_timeout(&s->raft, (unsigned)cfg->install_snapshot_timeout_ms);
    rc = raft_start(&s->raft);
    if (rc != 0)
        return err_fmt(msg, cap, ERR_IO, "raft_start: %s (%s)", raft_strerror(rc),
                       raft_errmsg(&s->raft));
    return 0;
}

static void rmserver__timer(struct rmserver *s, uv_timer_t *t, uv_timer_cb cb, uint64_t period)
{
    uv_timer_init(&s->loop, t);
    t->data = s;
    s->handles_open++;
    uv_timer_start(t, cb, period, period);
}

static int rmserver__start(struct rmserver *s, bool insecure, bool bootstrap, bool join, char *msg,
                           size_t cap)
{
    const rmconf_t *cfg = s->cfg;
    int rc = rmserver__lock_dir(s, msg, cap);
    if (rc != 0)
        return rc;
    if (cfg->keys_dir != NULL && cfg->keys_dir[0] != '\0') {
        rc = curve_load(&s->curve, cfg->keys_dir, cfg->key_name, NULL, msg, cap);
        char allow[4200];
        snprintf(allow, sizeof allow, "%s/%s", cfg->keys_dir, CURVE_ALLOW_SUBDIR);
        if (rc == 0)
            rc = curve_auth_start(allow, msg, cap);
        if (rc != 0)
            return rc;
    }
    struct rmconf_replica self;
    rmconf_replica(cfg, (size_t)s->self, &self);
    rc = rmserver__socket(s, ZMQ_ROUTER, self.api, insecure, rmserver_on_api, 0, &s->api, msg, cap);
    if (rc == 0 && strcmp(self.heartbeat, self.api) != 0)
        rc = rmserver__socket(s, ZMQ_ROUTER, self.heartbeat, insecure, rmserver_on_hb,
                              RMSERVER_HB_QUEUE_MAX, &s->hb, msg, cap);
    else
        s->hb = s->api;
    if (rc == 0)
        rc = rmserver__socket(s, ZMQ_XPUB, self.pub, insecure, rmserver__on_pub, 0, &s->pub, msg,
                              cap);
    if (rc == 0)
        rc = rm_metrics_start(s, msg, cap);
    if (rc == 0)
        rc = rm_page_start(s, msg, cap); /* the cluster page on the same listener */
    if (rc != 0)
        return rc;
    rmserver_member_load(s);
    rc = rmserver__raft_start(s, insecure, bootstrap, join, msg, cap);
    if (rc != 0)
        return rc;
    rmserver__timer(s, &s->poll_timer, rmserver__on_poll, RMSERVER__POLL_MS);
    rmserver__timer(s, &s->tick_timer, rmserver__on_tick, RMSERVER__TICK_MS);
    rmserver__timer(s, &s->delta_timer, rmserver__on_delta, (uint64_t)cfg->view_delta_ms);
    rmserver__timer(s, &s->snap_timer, rmserver__on_snapshot, (uint64_t)cfg->view_snapshot_ms);
    joinwin_init(&s->join, RMVIEW_XPUB_JOIN_STORM_MS);
    uv_timer_init(&s->loop, &s->join_timer); /* one-shot, started by a joiner (rmserver__on_pub) */
    s->join_timer.data = s;
    s->handles_open++;
    uv_check_init(&s->loop, &s->flush_check);
    s->flush_check.data = s;
    s->handles_open++;
    uv_check_start(&s->flush_check, rmserver__on_check);
    uv_signal_init(&s->loop, &s->sigterm);
    uv_signal_init(&s->loop, &s->sigint);
    s->sigterm.data = s->sigint.data = s;
    s->handles_open += 2;
    uv_signal_start(&s->sigterm, rmserver__on_signal, SIGTERM);
    uv_signal_start(&s->sigint, rmserver__on_signal, SIGINT);
    log_info("replica %llu: raft %s, api %s, heartbeats %s, view %s%s", (unsigned long long)s->id,
             self.raft, self.api, self.heartbeat, self.pub, s->curve != NULL ? ", CURVE on" : "");
    notify_ready(); /* sockets bound and raft started: it serves (as a follower at first) */
    return 0;
}

int rmserver_run(const rmconf_t *cfg, bool insecure, bool bootstrap, bool join, char *msg,
                 size_t cap)
{
    struct rmserver *s = mem_calloc(1, sizeof *s);
    if (s == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    msg[0] = '\0';
    s->cfg = cfg;
    s->id = (uint64_t)cfg->id;
    s->self = rmconf_replica_index(cfg, s->id);
    s->lock_fd = -1;
    s->role = RAFT_UNAVAILABLE;
    vec_init(&s->pending);
    proto_buf_init(&s->buf);
    proto_stats_init(&s->api_stats);
    proto_stats_init(&s->hb_stats);
    static const double commit_b[] = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02,
                                      0.05,   0.1,   0.25,  0.5,   1,    2.5};
    metrics_hist_init(&s->commit_hist, commit_b, sizeof commit_b / sizeof *commit_b);
    int rc = zuv_global_init();
    if (rc == 0 && uv_loop_init(&s->loop) != 0)
        rc = ERR_SYS;
    if (rc != 0) {
        mem_free(s);
        return err_fmt(msg, cap, ERR_SYS, "event loop initialisation failed");
    }
    s->fsm = fsm_new();
    s->view = rmview_new();
    if (s->fsm == NULL || s->view == NULL)
        rc = err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    else
        fsm_set_hook(s->fsm, rmserver__on_applied, s);
    if (rc == 0)
        rc = rmserver__start(s, insecure, bootstrap, join, msg, cap);
    if (rc == 0)
        uv_run(&s->loop, UV_RUN_DEFAULT);
    rmserver__stop(s);
    uv_run(&s->loop, UV_RUN_DEFAULT); /* until every handle has closed */
    if (uv_loop_close(&s->loop) != 0)
        log_warn("event loop closed with handles still open");
    curve_auth_stop();
    curve_destroy(&s->curve);
    fsm_destroy(&s->fsm);
    rmview_destroy(&s->view);
    rm_metrics_free(s);
    rm_page_free(s);
    vec_close(&s->pending);
    proto_buf_close(&s->buf);
    if (s->lock_fd >= 0)
        close(s->lock_fd);
    mem_free(s);
    return rc;
}
