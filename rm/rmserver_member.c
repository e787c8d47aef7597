/* rmserver_member.c - changing the replica set at run time: replica_add (raft_add as a spare,
 * then raft_assign RAFT_VOTER, which in raft 0.15 first catches the spare up with the log) and
 * replica_remove (raft_remove; the leader removing itself first hands leadership over with
 * raft_transfer). One change at a time; ids are never reused (docs/architecture.md,
 * "Facts about the dependencies").
 *
 * Where a replica added at run time listens is replicated with the Raft configuration itself:
 * its address there is "RAFT|API|HEARTBEAT|PUB", and the transport below hands rm/raft_curve.c the
 * RAFT part only. Replicas bootstrapped from the configuration file keep plain addresses and
 * their endpoints come from the file. */
#include "rm/rmserver_internal.h"

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"

#include <errno.h>
#include <jansson.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the wrapping transport ---- */

/* Copies the RAFT part of `addr` (up to the first '|') into out. */
static const char *rmserver__raft_part(const char *addr, char *out, size_t cap)
{
    size_t n = strcspn(addr, "|");
    if (n >= cap)
        n = cap - 1;
    memcpy(out, addr, n);
    out[n] = '\0';
    return out;
}

static int rmserver__t_init(struct raft_uv_transport *t, raft_id id, const char *address)
{
    struct rmserver *s = t->impl;
    s->transport.data = t->data; /* raft_uv's callbacks find their state through ->data */
    rmserver__raft_part(address, s->wrap_addr, sizeof s->wrap_addr);
    int rc = s->transport.init(&s->transport, id, s->wrap_addr);
    if (rc != 0)
        memcpy(t->errmsg, s->transport.errmsg, sizeof t->errmsg);
    return rc;
}

static int rmserver__t_listen(struct raft_uv_transport *t, raft_uv_accept_cb cb)
{
    struct rmserver *s = t->impl;
    s->transport.data = t->data;
    return s->transport.listen(&s->transport, cb);
}

static int rmserver__t_connect(struct raft_uv_transport *t, struct raft_uv_connect *req, raft_id id,
                               const char *address, raft_uv_connect_cb cb)
{
    struct rmserver *s = t->impl;
    char raft[RMSERVER_ADDR_MAX];
    s->transport.data = t->data;
    return s->transport.connect(&s->transport, req, id,
                                rmserver__raft_part(address, raft, sizeof raft), cb);
}

static void rmserver__t_close(struct raft_uv_transport *t, raft_uv_transport_close_cb cb)
{
    struct rmserver *s = t->impl;
    s->transport.data = t->data;
    s->transport.close(&s->transport, cb);
}

void rmserver_member_transport(struct rmserver *s)
{
    memset(&s->wrap, 0, sizeof s->wrap);
    s->wrap.impl = s;
    s->wrap.init = rmserver__t_init;
    s->wrap.listen = rmserver__t_listen;
    s->wrap.connect = rmserver__t_connect;
    s->wrap.close = rmserver__t_close;
}

/* ---- endpoints ---- */

static const struct raft_server *rmserver__server(const struct raft_configuration *c, uint64_t id)
{
    for (unsigned i = 0; i < c->n; i++) {
        if (c->servers[i].id == id)
            return &c->servers[i];
    }
    return NULL;
}

bool rmserver_member_find(struct rmserver *s, uint64_t id, struct rmconf_replica *out)
{
    const struct raft_server *srv = rmserver__server(&s->raft.configuration, id);
    if (srv != NULL && strchr(srv->address, '|') != NULL) {
        const char *p = srv->address;
        for (int i = 0; i < 4; i++) {
            size_t n = strcspn(p, "|");
            if (n >= RMSERVER_ADDR_MAX)
                n = RMSERVER_ADDR_MAX - 1;
            memcpy(s->member.ep[i], p, n);
            s->member.ep[i][n] = '\0';
            p += n;
            if (*p == '|')
                p++;
        }
        out->id = id;
        out->raft = s->member.ep[0];
        out->api = s->member.ep[1];
        out->heartbeat = s->member.ep[2][0] != '\0' ? s->member.ep[2] : s->member.ep[1];
        out->pub = s->member.ep[3];
        return true;
    }
    int i = rmconf_replica_index(s->cfg, id);
    return i >= 0 && rmconf_replica(s->cfg, (size_t)i, out);
}

/* ---- ids ever seen ---- */

static void rmserver__max_path(struct rmserver *s, char *out, size_t cap)
{
    snprintf(out, cap, "%s/max-id", s->cfg->data_dir);
}

void rmserver_member_load(struct rmserver *s)
{
    char path[4200];
    rmserver__max_path(s, path, sizeof path);
    FILE *f = fopen(path, "r");
    unsigned long long v = 0;
    if (f != NULL) {
        if (fscanf(f, "%llu", &v) != 1)
            v = 0;
        fclose(f);
    }
    s->member.max_id = v;
    for (size_t i = 0; i < rmconf_replica_count(s->cfg); i++) {
        struct rmconf_replica r;
        if (rmconf_replica(s->cfg, i, &r) && r.id > s->member.max_id)
            s->member.max_id = r.id;
    }
}

static void rmserver__note_id(struct rmserver *s, uint64_t id)
{
    if (id <= s->member.max_id)
        return;
    s->member.max_id = id;
    char path[4200], tmp[4300];
    rmserver__max_path(s, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL || fprintf(f, "%llu\n", (unsigned long long)id) < 0 || fclose(f) != 0 ||
        rename(tmp, path) != 0)
        log_warn("%s: cannot record id %llu: %s", path, (unsigned long long)id, strerror(errno));
}

void rmserver_member_poll(struct rmserver *s)
{
    const struct raft_configuration *c = &s->raft.configuration;
    for (unsigned i = 0; i < c->n; i++)
        rmserver__note_id(s, c->servers[i].id);
}

/* ---- the admin operations ---- */

static const char *rmserver__role(int role)
{
    return role == RAFT_VOTER ? "voter" : role == RAFT_STANDBY ? "standby" : "spare";
}

void *rmserver_member_json(struct rmserver *s)
{
    json_t *arr = json_array();
    const struct raft_configuration *c = &s->raft.configuration;
    for (unsigned i = 0; i < c->n; i++) {
        struct rmconf_replica r;
        json_t *o = json_object();
        json_object_set_new(o, "id", json_integer((json_int_t)c->servers[i].id));
        json_object_set_new(o, "role", json_string(rmserver__role(c->servers[i].role)));
        if (raft_state(&s->raft) == RAFT_LEADER && s->raft.leader_state.progress != NULL)
            json_object_set_new(
                o, "match_index",
                json_integer((json_int_t)s->raft.leader_state.progress[i].match_index));
        if (rmserver_member_find(s, c->servers[i].id, &r)) {
            json_object_set_new(o, "raft", json_string(r.raft));
            json_object_set_new(o, "api", json_string(r.api));
            json_object_set_new(o, "heartbeat", json_string(r.heartbeat));
            json_object_set_new(o, "pub", json_string(r.pub));
        }
        json_array_append_new(arr, o);
    }
    return arr;
}

static void rmserver__answer(struct rmserver *s, const struct rmserver_waiter *w, int code,
                             const char *why)
{
    if (s->stopping || w->sock == NULL)
        return; /* the sockets are gone; the client retries elsewhere */
    if (code != 0) {
        rmserver_send_error(s, w->sock, w->peer, w->peer_len, w->req_id, w->type, code, why);
        return;
    }
    json_t *doc = json_object();
    json_object_set_new(doc, "ok", json_true());
    json_object_set_new(doc, "kind", json_string(w->admin_kind));
    json_object_set_new(doc, "id", json_integer((json_int_t)s->member.id));
    json_object_set_new(doc, "configuration", rmserver_member_json(s));
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    proto_msg_t m;
    proto_msg_init(&m, PROTO_ADMIN_REPLY);
    m.req_id = w->req_id;
    m.admin_reply.json = text != NULL ? text : (char *)"{}";
    rmserver_send(s, w->sock, w->peer, w->peer_len, &m);
    free(text);
}

static void rmserver__finish(struct rmserver *s, int code, const char *why)
{
    s->member.busy = false;
    rmserver__answer(s, &s->member.w, code, why);
}

static void rmserver__change_failed(struct rmserver *s, const char *what, int status)
{
    char why[256];
    snprintf(why, sizeof why, "%s of replica %llu failed: %s", what,
             (unsigned long long)s->member.id, raft_strerror(status));
    log_warn("%s", why);
    /* lost leadership: maybe committed; the client's retry finds out */
    rmserver__finish(
        s, status == RAFT_LEADERSHIPLOST || status == RAFT_NOTLEADER ? ERR_NOTLEADER : ERR_STATE,
        why);
}

static void rmserver__assign_cb(struct raft_change *req, int status)
{
    struct rmserver *s = req->data;
    if (status != 0) {
        rmserver__change_failed(s, "promotion to voter", status);
        return;
    }
    log_info("replica %llu is a voter", (unsigned long long)s->member.id);
    rmserver__finish(s, 0, NULL);
}

static void rmserver__assign(struct rmserver *s)
{
    s->member.change.data = s;
    int rc =
        raft_assign(&s->raft, &s->member.change, s->member.id, RAFT_VOTER, rmserver__assign_cb);
    if (rc != 0)
        rmserver__change_failed(s, "promotion to voter", rc);
}

static void rmserver__add_cb(struct raft_change *req, int status)
{
    struct rmserver *s = req->data;
    if (status != 0) {
        rmserver__change_failed(s, "adding", status);
        return;
    }
    log_info("replica %llu added as a spare: catching it up, then promoting it",
             (unsigned long long)s->member.id);
    if (s->stopping)
        return;
    rmserver__assign(s);
}

static void rmserver__remove_cb(struct raft_change *req, int status)
{
    struct rmserver *s = req->data;
    if (status != 0) {
        rmserver__change_failed(s, "removal", status);
        return;
    }
    log_info("replica %llu removed", (unsigned long long)s->member.id);
    rmserver__finish(s, 0, NULL);
}

static void rmserver__transfer_cb(struct raft_transfer *req)
{
    struct rmserver *s = req->data;
    s->member.transfer = false;
    log_info("leadership handed over before removing this replica");
}

static bool rmserver__parse_id(const char *text, uint64_t *id)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = text != NULL ? strtoull(text, &end, 10) : 0;
    if (text == NULL || end == text || *end != '\0' || errno != 0 || v == 0 || text[0] == '-')
        return false;
    *id = v;
    return true;
}

static unsigned rmserver__voters(const struct raft_configuration *c)
{
    unsigned n = 0;
    for (unsigned i = 0; i < c->n; i++)
        n += c->servers[i].role == RAFT_VOTER;
    return n;
}

static bool rmserver__endpoint_ok(const char *e, bool may_be_empty)
{
    return e != NULL && (e[0] != '\0' || may_be_empty) && strchr(e, '|') == NULL && strlen(e) < 256;
}

/* Starts replica_add; returns 0 when under way or done (answered), else the refusal. */
static int rmserver__add(struct rmserver *s, const proto_admin_query_t *q, char *why, size_t cap)
{
    uint64_t id = 0;
    if (q->nargs != 5 || !rmserver__parse_id(q->args[0], &id) ||
        !rmserver__endpoint_ok(q->args[1], false) || !rmserver__endpoint_ok(q->args[2], false) ||
        !rmserver__endpoint_ok(q->args[3], true) || !rmserver__endpoint_ok(q->args[4], false))
        return err_fmt(why, cap, ERR_INVAL,
                       "usage: replica_add ID RAFT_ADDR API HEARTBEAT(or \"\") PUB (endpoints "
                       "under 256 bytes, without '|')");
    char addr[RMSERVER_ADDR_MAX];
    snprintf(addr, sizeof addr, "%s|%s|%s|%s", q->args[1], q->args[2], q->args[3], q->args[4]);
    const struct raft_server *srv = rmserver__server(&s->raft.configuration, id);
    if (srv != NULL && strcmp(srv->address, addr) != 0)
        return err_fmt(why, cap, ERR_EXISTS,
                       "replica %llu is already a member at %s: ids are never reused, choose a "
                       "new one",
                       (unsigned long long)id, srv->address);
    if (srv == NULL && id <= s->member.max_id)
        return err_fmt(why, cap, ERR_EXISTS,
                       "id %llu may have been a member of this cluster: ids are never reused; "
                       "use an id above %llu",
                       (unsigned long long)id, (unsigned long long)s->member.max_id);
    if (srv != NULL && srv->role == RAFT_VOTER) {
        s->member.id = id;
        rmserver__answer(s, &s->member.w, 0, NULL); /* a retry of a finished add */
        return 0;
    }
    s->member.busy = true;
    s->member.adding = true;
    s->member.id = id;
    snprintf(s->member.addr, sizeof s->member.addr, "%s", addr);
    s->member.change.data = s;
    if (srv != NULL) { /* a retry after the spare was added */
        rmserver__assign(s);
        return 0;
    }
    int rc = raft_add(&s->raft, &s->member.change, id, s->member.addr, rmserver__add_cb);
    if (rc != 0) {
        s->member.busy = false;
        return err_fmt(why, cap, ERR_STATE, "raft_add: %s", raft_strerror(rc));
    }
    rmserver__note_id(s, id);
    log_info("adding replica %llu at %s", (unsigned long long)id, addr);
    return 0;
}

static int rmserver__remove(struct rmserver *s, const proto_admin_query_t *q, char *why, size_t cap)
{
    uint64_t id = 0;
    if (q->nargs != 1 || !rmserver__parse_id(q->args[0], &id))
        return err_fmt(why, cap, ERR_INVAL, "usage: replica_remove ID");
    const struct raft_configuration *c = &s->raft.configuration;
    const struct raft_server *srv = rmserver__server(c, id);
    if (srv == NULL) {
        if (id <= s->member.max_id) {
            s->member.id = id;
            rmserver__answer(s, &s->member.w, 0, NULL); /* already removed: a retry */
            return 0;
        }
        return err_fmt(why, cap, ERR_NOTFOUND, "no replica %llu in the configuration",
                       (unsigned long long)id);
    }
    if (srv->role == RAFT_VOTER && rmserver__voters(c) <= 1)
        return err_fmt(why, cap, ERR_STATE,
                       "replica %llu is the last voter: removing it leaves no quorum",
                       (unsigned long long)id);
    if (id == s->id) {
        /* hand leadership to the most up-to-date voter; the client retries with the new
         * leader (rmclient follows the redirect) */
        if (!s->member.transfer) {
            s->member.xfer.data = s;
            int rc = raft_transfer(&s->raft, &s->member.xfer, 0, rmserver__transfer_cb);
            if (rc == 0)
                s->member.transfer = true;
            else
                log_warn("raft_transfer: %s", raft_strerror(rc));
        }
        return err_fmt(why, cap, ERR_NOTLEADER,
                       "replica %llu leads: handing leadership over first, retry",
                       (unsigned long long)id);
    }
    s->member.busy = true;
    s->member.adding = false;
    s->member.id = id;
    s->member.change.data = s;
    int rc = raft_remove(&s->raft, &s->member.change, id, rmserver__remove_cb);
    if (rc != 0) {
        s->member.busy = false;
        return err_fmt(why, cap, ERR_STATE, "raft_remove: %s", raft_strerror(rc));
    }
    log_info("removing replica %llu", (unsigned long long)id);
    return 0;
}

bool rmserver_member_admin(struct rmserver *s, zuv_sock_t *sock, const void *peer, size_t peer_len,
                           const proto_msg_t *m)
{
    const proto_admin_query_t *q = &m->admin_query;
    bool add = strcmp(q->kind, RMSERVER_ADMIN_REPLICA_ADD) == 0;
    if (!add && strcmp(q->kind, RMSERVER_ADMIN_REPLICA_REMOVE) != 0)
        return false;
    char why[512] = "";
    int code = 0;
    if (!s->ready) {
        code = err_fmt(why, sizeof why, ERR_NOTLEADER, "not the leader");
    } else if (s->member.busy || s->member.transfer) {
        code = err_fmt(why, sizeof why, ERR_STATE,
                       "another replica change is in progress (replica %llu): retry when it "
                       "is done",
                       (unsigned long long)s->member.id);
    } else {
        struct rmserver_waiter *w = &s->member.w;
        memset(w, 0, sizeof *w);
        w->sock = sock;
        w->peer_len = peer_len < RMSERVER_PEER_MAX ? peer_len : RMSERVER_PEER_MAX;
        memcpy(w->peer, peer, w->peer_len);
        w->req_id = m->req_id;
        w->type = m->type;
        snprintf(w->admin_kind, sizeof w->admin_kind, "%s", q->kind);
        code = add ? rmserver__add(s, q, why, sizeof why) : rmserver__remove(s, q, why, sizeof why);
    }
    if (code != 0) {
        s->rejected[code == ERR_NOTLEADER ? RMSERVER_REJ_NOTLEADER : RMSERVER_REJ_INVALID]++;
        log_info("refused %s: %s", q->kind, why);
        rmserver_send_error(s, sock, peer, peer_len, m->req_id, m->type, code, why);
    }
    return true;
}

/* Gives freed heap back to the kernel when much of it is free. A burst (a heartbeat backlog,
 * a large snapshot, a fit on the worker thread) leaves free chunks spread over malloc's arenas,
 * one per thread that allocated, and glibc only trims an arena's top on its own: without this
 * the RSS stays at the burst's peak, and hosts with more cores (faster senders, more backlog)
 * keep more. */
void rmserver_trim(struct rmserver *s)
{
    uint64_t now = clock_mono_ms();
    if (now - s->trim_ms < RMSERVER_TRIM_MS)
        return;
    s->trim_ms = now;
    struct mallinfo2 mi = mallinfo2();
    if (mi.fordblks > RMSERVER_TRIM_FREE && mi.fordblks > mi.uordblks / 4) {
        malloc_trim(0);
        s->trims++;
    }
}

void rmserver_snapshot_bound(struct rmserver *s)
{
    if (!s->raft_started)
        return;
    struct fsm_stats fs;
    fsm_stats(s->fsm, &fs);
    unsigned want = (unsigned)s->cfg->snapshot_threshold;
    if (fs.since_bytes > s->cfg->snapshot_bytes && fs.since_entries < want)
        want = fs.since_entries > 1 ? (unsigned)fs.since_entries : 1;
    if (want != s->snap_threshold) {
        raft_set_snapshot_threshold(&s->raft, want);
        s->snap_threshold = want;
    }
}
