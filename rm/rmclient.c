/* rmclient.c - blocking RM API client with leader redirects. */
#include "rm/rmclient.h"

#include "common/clock.h"
#include "common/config.h"
#include "common/curve.h"
#include "common/err.h"
#include "common/id.h"
#include "common/mem.h"

#include <czmq.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

struct rmclient {
    size_t n;
    zsock_t *sock[RMCLIENT_MAX_REPLICAS];
    bool linked[RMCLIENT_MAX_REPLICAS]; /* sock[i] connected (rmclient__link) */
    char *endpoint[RMCLIENT_MAX_REPLICAS];
    int leader;
    int hint;        /* the replica the cluster directory's leader file named, or -1 */
    char *hint_path; /* that file, rewritten when another replica proves to lead; NULL: none */
    uint64_t next_req;
    uint64_t cur_req; /* req_id of the request in c->buf */
    proto_buf_t buf;
};

/* ---- cluster.conf ---- */

struct rmclient__file {
    struct config_list ids, api, heartbeat, pub;
    char *keys_dir, *key_name;
};

#define F(x) offsetof(struct rmclient__file, x)
static const struct config_key rmclient__schema[] = {
    {"cluster", "ids", CONFIG_LIST, F(ids), "", "Raft ids of the RM replicas", 0,
     RMCLIENT_MAX_REPLICAS},
    {"cluster", "api", CONFIG_LIST, F(api), "", "API endpoints of the RM replicas", 1,
     RMCLIENT_MAX_REPLICAS},
    {"cluster", "heartbeat", CONFIG_LIST, F(heartbeat), "",
     "heartbeat endpoints of the RM replicas (empty: the API endpoints)", 0, RMCLIENT_MAX_REPLICAS},
    {"cluster", "pub", CONFIG_LIST, F(pub), "", "view PUB endpoints of the RM replicas", 0,
     RMCLIENT_MAX_REPLICAS},
    {"security", "keys_dir", CONFIG_STRING, F(keys_dir), "", "CURVE keys (relative to the dir)", 0,
     4096},
    {"security", "key_name", CONFIG_STRING, F(key_name), "paddock", "certificate name", 1, 255},
    CONFIG_END,
};
#undef F

int rmclient_cluster_load(const char *dir, struct rmclient_cluster *out, char *msg, size_t cap)
{
    memset(out, 0, sizeof *out);
    struct rmclient__file f;
    memset(&f, 0, sizeof f);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, RMCLIENT_CLUSTER_FILE);
    int rc = config_defaults(rmclient__schema, &f, msg, cap);
    if (rc == 0)
        rc = config_load_file(rmclient__schema, &f, path, msg, cap);
    if (rc == 0 && f.api.len == 0)
        rc = err_fmt(msg, cap, ERR_CONFIG, "%s: cluster.api lists no endpoint", path);
    if (rc == 0) {
        out->n = f.api.len;
        for (size_t i = 0; i < f.api.len; i++) {
            out->api[i] = mem_strdup(f.api.items[i]);
            out->pub[i] = mem_strdup(i < f.pub.len ? f.pub.items[i] : "");
            out->heartbeat[i] =
                mem_strdup(i < f.heartbeat.len ? f.heartbeat.items[i] : f.api.items[i]);
            out->ids[i] = i < f.ids.len ? strtoull(f.ids.items[i], NULL, 10) : 0;
        }
        if (f.keys_dir[0] != '\0') {
            char kd[4200];
            if (f.keys_dir[0] == '/')
                snprintf(kd, sizeof kd, "%s", f.keys_dir);
            else
                snprintf(kd, sizeof kd, "%s/%s", dir, f.keys_dir);
            out->keys_dir = mem_strdup(kd);
        }
        out->key_name = mem_strdup(f.key_name);
    }
    config_close(rmclient__schema, &f);
    return rc;
}

void rmclient_cluster_close(struct rmclient_cluster *c)
{
    for (size_t i = 0; i < RMCLIENT_MAX_REPLICAS; i++) {
        mem_free(c->api[i]);
        mem_free(c->pub[i]);
        mem_free(c->heartbeat[i]);
    }
    mem_free(c->keys_dir);
    mem_free(c->key_name);
    memset(c, 0, sizeof *c);
}

/* ---- sockets ---- */

/* Replica i's socket connected: on its first use, but for the replicas linked at the start. */
static int rmclient__link(rmclient_t *c, size_t i)
{
    if (c->linked[i])
        return 0;
    if (zsock_connect(c->sock[i], "%s", c->endpoint[i]) != 0)
        return ERR_INVAL;
    c->linked[i] = true;
    return 0;
}

/* The index among api[0..n) of the replica the leader file at `path` names, or -1. */
static int rmclient__hint_at(const char *path, const char *const *api, size_t n)
{
    char line[512];
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    char *got = fgets(line, sizeof line, f);
    fclose(f);
    if (got == NULL)
        return -1;
    line[strcspn(line, "\r\n")] = '\0';
    for (size_t i = 0; i < n; i++)
        if (api[i] != NULL && strcmp(api[i], line) == 0)
            return (int)i;
    return -1;
}

int rmclient_leader_hint(const char *cluster_dir, const char *const *api, size_t n)
{
    char path[PATH_MAX];
    if (cluster_dir == NULL ||
        snprintf(path, sizeof path, "%s/%s", cluster_dir, RMCLIENT_LEADER_FILE) >= (int)sizeof path)
        return -1;
    return rmclient__hint_at(path, api, n);
}

/* The cluster directory's leader file names replica i: written to a temporary file and renamed,
 * so a reader sees one whole line; a directory this user may not write keeps the old hint. */
static void rmclient__note_leader(rmclient_t *c, size_t i)
{
    c->leader = (int)i;
    if (c->hint_path == NULL || c->hint == (int)i)
        return;
    c->hint = (int)i;
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.%ld", c->hint_path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (f == NULL)
        return;
    bool ok = fprintf(f, "%s\n", c->endpoint[i]) > 0;
    if (fclose(f) != 0 || !ok || rename(tmp, c->hint_path) != 0)
        unlink(tmp);
}

/* rmclient_new, with the replica a leader file named (-1: none): only that one is connected
 * now, the others when first asked; without a hint, all of them. */
static int rmclient__new(rmclient_t **out, const char *const *endpoints, size_t n,
                         const char *keys_dir, const char *key_name, int hint, char *msg,
                         size_t cap)
{
    *out = NULL;
    if (n == 0 || n > RMCLIENT_MAX_REPLICAS)
        return err_fmt(msg, cap, ERR_INVAL, "between 1 and %d RM endpoints needed",
                       RMCLIENT_MAX_REPLICAS);
    zsys_handler_set(NULL);
    curve_t *curve = NULL;
    if (keys_dir != NULL && keys_dir[0] != '\0') {
        int rc = curve_load(&curve, keys_dir, key_name != NULL ? key_name : CURVE_DEFAULT_NAME,
                            NULL, msg, cap);
        if (rc != 0)
            return rc;
    }
    rmclient_t *c = mem_calloc(1, sizeof *c);
    if (c == NULL) {
        curve_destroy(&curve);
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    }
    c->leader = hint;
    c->hint = hint;
    proto_buf_init(&c->buf);
    uint64_t r = 0;
    (void)id_random_u64(&r); /* without the OS's random source, request ids start at 1 */
    c->next_req = (r & 0xffffffffull) + 1;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        zsock_t *z = zsock_new(ZMQ_DEALER);
        if (z == NULL) {
            rc = err_fmt(msg, cap, ERR_SYS, "cannot create a socket");
            break;
        }
        zsock_set_linger(z, 0);
        zsock_set_maxmsgsize(z, PROTO_MAX_MSG_BYTES);
        c->sock[i] = z;
        c->endpoint[i] = mem_strdup(endpoints[i]);
        c->n++;
        rc = curve_apply(z, curve, CURVE_CLIENT, NULL, msg, cap);
        if (rc == 0 && (hint < 0 || (size_t)hint == i) && rmclient__link(c, i) != 0)
            rc = err_fmt(msg, cap, ERR_INVAL, "cannot connect to %s", endpoints[i]);
    }
    curve_destroy(&curve);
    if (rc != 0) {
        rmclient_destroy(&c);
        return rc;
    }
    *out = c;
    return 0;
}

int rmclient_new(rmclient_t **out, const char *const *endpoints, size_t n, const char *keys_dir,
                 const char *key_name, char *msg, size_t cap)
{
    return rmclient__new(out, endpoints, n, keys_dir, key_name, -1, msg, cap);
}

int rmclient_open(rmclient_t **out, const char *cluster_dir, const char *rm_endpoints,
                  const char *keys_dir, char *msg, size_t cap)
{
    *out = NULL;
    if (cluster_dir == NULL && rm_endpoints == NULL)
        cluster_dir = getenv("PADDOCK_CLUSTER");
    if (cluster_dir != NULL && cluster_dir[0] != '\0') {
        struct rmclient_cluster cl;
        int rc = rmclient_cluster_load(cluster_dir, &cl, msg, cap);
        char path[PATH_MAX];
        bool fits = snprintf(path, sizeof path, "%s/%s", cluster_dir, RMCLIENT_LEADER_FILE) <
                    (int)sizeof path;
        int hint =
            rc == 0 && fits ? rmclient__hint_at(path, (const char *const *)cl.api, cl.n) : -1;
        if (rc == 0)
            rc = rmclient__new(out, (const char *const *)cl.api, cl.n,
                               keys_dir != NULL ? keys_dir : cl.keys_dir, cl.key_name, hint, msg,
                               cap);
        rmclient_cluster_close(&cl);
        if (rc == 0 && fits)
            (*out)->hint_path = mem_strdup(path); /* NULL when out of memory: no hint kept */
        return rc;
    }
    if (rm_endpoints == NULL)
        return err_fmt(msg, cap, ERR_INVAL,
                       "no cluster given: use --cluster DIR, --rm ENDPOINTS or PADDOCK_CLUSTER");
    char *copy = mem_strdup(rm_endpoints);
    if (copy == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    const char *eps[RMCLIENT_MAX_REPLICAS];
    size_t n = 0;
    char *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
        if (n == RMCLIENT_MAX_REPLICAS) {
            mem_free(copy);
            return err_fmt(msg, cap, ERR_INVAL, "at most %d RM endpoints", RMCLIENT_MAX_REPLICAS);
        }
        eps[n++] = t;
    }
    int rc = rmclient_new(out, eps, n, keys_dir, NULL, msg, cap);
    mem_free(copy);
    return rc;
}

void rmclient_destroy(rmclient_t **cp)
{
    if (cp == NULL || *cp == NULL)
        return;
    rmclient_t *c = *cp;
    for (size_t i = 0; i < c->n; i++) {
        zsock_destroy(&c->sock[i]);
        mem_free(c->endpoint[i]);
    }
    mem_free(c->hint_path);
    proto_buf_close(&c->buf);
    mem_free(c);
    *cp = NULL;
}

size_t rmclient_count(const rmclient_t *c)
{
    return c->n;
}

const char *rmclient_endpoint(const rmclient_t *c, size_t i)
{
    return i < c->n ? c->endpoint[i] : NULL;
}

int rmclient_leader(const rmclient_t *c)
{
    return c->leader;
}

void rmclient_set_leader(rmclient_t *c, size_t i)
{
    if (i < c->n)
        rmclient__note_leader(c, i);
}

int rmclient_new_key(char *out, size_t cap)
{
    uint8_t b[16];
    if (cap < 35 || id_random_bytes(b, sizeof b) != 0)
        return ERR_SYS;
    char hex[33];
    snprintf(out, cap, "k-%s", id_hex(hex, b, sizeof b));
    return 0;
}

/* The next message on z, decoded into *r: 0, 1 when it did not decode (dropped), -1 when no
 * frame came. */
static int rmclient__recv(zsock_t *z, proto_msg_t *r)
{
    zframe_t *f = zframe_recv(z);
    if (f == NULL)
        return -1;
    int d = proto_decode(zframe_data(f), zframe_size(f), r, NULL, NULL, 0);
    zframe_destroy(&f);
    return d != 0 ? 1 : 0;
}

/* One try on replica i: 0 with *reply, or ERR_TIMEOUT. Late replies to earlier tries (another
 * req_id) are dropped. */
static int rmclient__try(rmclient_t *c, size_t i, int timeout_ms, proto_msg_t *reply)
{
    zsock_t *z = c->sock[i];
    if (rmclient__link(c, i) != 0 || zsock_send(z, "b", c->buf.data, c->buf.len) != 0)
        return ERR_SYS;
    uint64_t req_id = c->cur_req;
    int64_t end = (int64_t)clock_mono_ms() + timeout_ms;
    zpoller_t *p = zpoller_new(z, NULL);
    if (p == NULL)
        return ERR_NOMEM;
    int rc = ERR_TIMEOUT;
    for (;;) {
        int64_t left = end - (int64_t)clock_mono_ms();
        if (left <= 0)
            break;
        if (zpoller_wait(p, (int)left) == NULL)
            break;
        int d = rmclient__recv(z, reply);
        if (d < 0)
            break;
        if (d > 0)
            continue;
        if (reply->req_id == req_id) {
            rc = 0;
            break;
        }
        proto_msg_close(reply);
    }
    zpoller_destroy(&p);
    return rc;
}

static int rmclient__encode(rmclient_t *c, proto_msg_t *req, char *msg, size_t cap)
{
    req->req_id = c->next_req++;
    c->cur_req = req->req_id;
    char err[256];
    int rc = proto_encode(req, &c->buf, err, sizeof err);
    if (rc != 0)
        return err_fmt(msg, cap, rc, "cannot encode %s: %s", proto_type_name(req->type), err);
    return 0;
}

int rmclient_call_at(rmclient_t *c, size_t i, proto_msg_t *req, proto_msg_t *reply, int timeout_ms,
                     char *msg, size_t cap)
{
    memset(reply, 0, sizeof *reply);
    if (i >= c->n)
        return err_fmt(msg, cap, ERR_INVAL, "no replica %zu", i);
    int rc = rmclient__encode(c, req, msg, cap);
    if (rc != 0)
        return rc;
    rc = rmclient__try(c, i, timeout_ms, reply);
    if (rc != 0)
        return err_fmt(msg, cap, rc, "%s: no answer within %d ms", c->endpoint[i], timeout_ms);
    return 0;
}

static int rmclient__index(const rmclient_t *c, const char *endpoint)
{
    for (size_t i = 0; endpoint != NULL && i < c->n; i++) {
        if (strcmp(c->endpoint[i], endpoint) == 0)
            return (int)i;
    }
    return -1;
}

int rmclient_call(rmclient_t *c, proto_msg_t *req, proto_msg_t *reply, int try_ms, int deadline_ms,
                  char *msg, size_t cap)
{
    memset(reply, 0, sizeof *reply);
    int rc = rmclient__encode(c, req, msg, cap);
    if (rc != 0)
        return rc;
    int64_t end = (int64_t)clock_mono_ms() + deadline_ms;
    size_t target = c->leader >= 0 ? (size_t)c->leader : 0;
    bool hint_silent = false; /* the hinted replica did not answer: any that does is better */
    while ((int64_t)clock_mono_ms() < end) {
        int64_t left = end - (int64_t)clock_mono_ms();
        rc = rmclient__try(c, target, (int)(left < try_ms ? left : try_ms), reply);
        if (rc == ERR_TIMEOUT) {
            hint_silent |= (int)target == c->hint;
            c->leader = -1;
            target = (target + 1) % c->n;
            continue;
        }
        if (rc != 0)
            return err_fmt(msg, cap, rc, "%s: %s", c->endpoint[target], err_text(rc));
        if (reply->type == PROTO_ERROR &&
            (reply->error.code == ERR_NOTLEADER || reply->error.code == ERR_UNAVAILABLE)) {
            int hint = rmclient__index(c, reply->error.leader_endpoint);
            proto_msg_close(reply);
            c->leader = -1;
            if (hint >= 0 && (size_t)hint != target) {
                target = (size_t)hint;
                continue;
            }
            /* an election is running: give it a moment, then ask the next replica */
            zclock_sleep(20);
            target = (target + 1) % c->n;
            continue;
        }
        /* Any replica answers an admin query (its reads) and a heartbeat, and refuses what it
           refuses (a malformed request, an unknown key); any other answer is the leader's. A
           replica that answers where the hinted one was silent is a better hint in any case. */
        bool leads = req->type != PROTO_ADMIN_QUERY && req->type != PROTO_HEARTBEAT &&
                     reply->type != PROTO_ERROR;
        if (leads || hint_silent)
            rmclient__note_leader(c, target);
        else
            c->leader = (int)target;
        return 0;
    }
    return err_fmt(msg, cap, ERR_TIMEOUT, "no RM leader answered within %d ms", deadline_ms);
}

/* The document of an admin reply (transferred to the caller), or NULL for anything else. */
static char *rmclient__admin_doc(proto_msg_t *r)
{
    char *doc = NULL;
    if (r->type == PROTO_ADMIN_REPLY && r->admin_reply.code == 0 && r->admin_reply.json != NULL) {
        doc = r->admin_reply.json;
        r->admin_reply.json = NULL;
    }
    return doc;
}

int rmclient_admin_all(rmclient_t *c, const char *kind, const char *const *args, size_t nargs,
                       int timeout_ms, int settle_ms, char **json)
{
    return rmclient_admin_until(c, kind, args, nargs, timeout_ms, settle_ms, NULL, NULL, json);
}

int rmclient_admin_until(rmclient_t *c, const char *kind, const char *const *args, size_t nargs,
                         int timeout_ms, int settle_ms, bool (*enough)(const char *, void *),
                         void *arg, char **json)
{
    for (size_t i = 0; i < c->n; i++)
        json[i] = NULL;
    proto_msg_t q;
    proto_msg_init(&q, PROTO_ADMIN_QUERY);
    q.admin_query.kind = (char *)kind;
    q.admin_query.args = (char **)args;
    q.admin_query.nargs = (uint32_t)nargs;
    char msg[256];
    int rc = rmclient__encode(c, &q, msg, sizeof msg);
    if (rc != 0)
        return rc;
    zpoller_t *p = zpoller_new(NULL);
    if (p == NULL)
        return ERR_NOMEM;
    size_t pending = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (rmclient__link(c, i) == 0 &&
            zsock_send(c->sock[i], "b", c->buf.data, c->buf.len) == 0 &&
            zpoller_add(p, c->sock[i]) == 0)
            pending++;
    }
    int answered = 0;
    int64_t end = (int64_t)clock_mono_ms() + timeout_ms;
    while (pending > 0) {
        int64_t left = end - (int64_t)clock_mono_ms();
        if (left <= 0)
            break;
        zsock_t *z = zpoller_wait(p, (int)left);
        if (z == NULL)
            break;
        proto_msg_t r;
        int d = rmclient__recv(z, &r);
        if (d < 0)
            break;
        if (d > 0)
            continue;
        if (r.req_id == c->cur_req) {
            for (size_t i = 0; i < c->n; i++) {
                if (c->sock[i] == z && json[i] == NULL) {
                    json[i] = rmclient__admin_doc(&r);
                    zpoller_remove(p, z);
                    pending--;
                    answered += json[i] != NULL;
                    /* the first answer: the others get settle_ms more; an answer that is
                     * enough (the leader's) ends the wait */
                    int64_t settle = (int64_t)clock_mono_ms() + settle_ms;
                    if (answered == 1 && settle < end)
                        end = settle;
                    if (json[i] != NULL && enough != NULL && enough(json[i], arg))
                        end = 0;
                }
            }
        }
        proto_msg_close(&r);
    }
    zpoller_destroy(&p);
    return answered;
}

int rmclient_admin_many(rmclient_t *c, const char *const *kinds, size_t n, int timeout_ms,
                        char **json)
{
    uint64_t ids[RMCLIENT_MAX_MANY];
    bool done[RMCLIENT_MAX_MANY];
    for (size_t i = 0; i < n; i++)
        json[i] = NULL;
    if (n == 0 || n > RMCLIENT_MAX_MANY)
        return 0;
    memset(done, 0, sizeof done);
    size_t left = n, answered = 0;
    int64_t end = (int64_t)clock_mono_ms() + timeout_ms;
    size_t target = c->leader >= 0 ? (size_t)c->leader : 0;
    zpoller_t *p = NULL;
    /* every query sent before any reply is awaited: one round trip for all; a replica that
       answers none of them within a second, the next */
    for (size_t tries = 0; tries < c->n && left > 0; tries++, target = (target + 1) % c->n) {
        zsock_t *z = c->sock[target];
        char msg[256];
        if (rmclient__link(c, target) != 0)
            continue;
        for (size_t i = 0; i < n; i++) {
            if (done[i])
                continue;
            proto_msg_t q;
            proto_msg_init(&q, PROTO_ADMIN_QUERY);
            q.admin_query.kind = (char *)kinds[i];
            if (rmclient__encode(c, &q, msg, sizeof msg) != 0 ||
                zsock_send(z, "b", c->buf.data, c->buf.len) != 0) {
                done[i] = true; /* not sendable: left unanswered */
                left--;
                continue;
            }
            ids[i] = c->cur_req;
        }
        zpoller_destroy(&p);
        if (left == 0 || (p = zpoller_new(z, NULL)) == NULL)
            break;
        int64_t try_end = (int64_t)clock_mono_ms() + 1000;
        try_end = try_end < end ? try_end : end;
        bool heard = false;
        while (left > 0) {
            int64_t wait = try_end - (int64_t)clock_mono_ms();
            if (wait <= 0 || zpoller_wait(p, (int)wait) == NULL)
                break;
            proto_msg_t r;
            int d = rmclient__recv(z, &r);
            if (d < 0)
                break;
            if (d > 0)
                continue;
            for (size_t i = 0; i < n; i++) {
                if (!done[i] && r.req_id == ids[i]) {
                    json[i] = rmclient__admin_doc(&r); /* NULL for a refusal */
                    answered += json[i] != NULL;
                    done[i] = heard = true;
                    left--;
                }
            }
            proto_msg_close(&r);
        }
        if (heard || (int64_t)clock_mono_ms() >= end)
            break;
    }
    zpoller_destroy(&p);
    return (int)answered;
}

int rmclient_admin(rmclient_t *c, int replica, const char *kind, const char *const *args,
                   size_t nargs, int timeout_ms, char **json, char *msg, size_t cap)
{
    return rmclient_admin_data(c, replica, kind, args, nargs, NULL, timeout_ms, json, msg, cap);
}

int rmclient_admin_data(rmclient_t *c, int replica, const char *kind, const char *const *args,
                        size_t nargs, const char *data, int timeout_ms, char **json, char *msg,
                        size_t cap)
{
    *json = NULL;
    proto_msg_t q, r;
    proto_msg_init(&q, PROTO_ADMIN_QUERY);
    q.admin_query.kind = (char *)kind;
    q.admin_query.args = (char **)args;
    q.admin_query.nargs = (uint32_t)nargs;
    q.admin_query.data = (char *)data;
    int rc = replica >= 0 ? rmclient_call_at(c, (size_t)replica, &q, &r, timeout_ms, msg, cap)
                          : rmclient_call(c, &q, &r, timeout_ms < 1000 ? timeout_ms : 1000,
                                          timeout_ms, msg, cap);
    if (rc != 0)
        return rc;
    if (r.type == PROTO_ERROR) {
        rc = err_fmt(msg, cap, r.error.code < 0 ? r.error.code : ERR_INVAL, "%s",
                     r.error.text != NULL ? r.error.text : "refused");
    } else if (r.type != PROTO_ADMIN_REPLY || r.admin_reply.json == NULL) {
        rc = err_fmt(msg, cap, ERR_PARSE, "unexpected reply %s", proto_type_name(r.type));
    } else if (r.admin_reply.code != 0) {
        rc = err_fmt(msg, cap, r.admin_reply.code, "%s", err_text(r.admin_reply.code));
    } else {
        *json = r.admin_reply.json;
        r.admin_reply.json = NULL; /* transferred */
    }
    proto_msg_close(&r);
    return rc;
}
