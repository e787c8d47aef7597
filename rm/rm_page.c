/* rm_page.c - the RM leader's live cluster page: the embedded HTML, its JSON document, and who
 * may read them (rm/rm_page.h, docs/cluster-page.md). */
#include "rm/rm_page.h"

#include "common/clock.h"
#include "common/err.h"
#include "common/id.h"
#include "common/log.h"
#include "common/mem.h"
#include "rm/rm_metrics.h"
#include "rm/rmserver_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* rm/page/cluster.html, embedded at build time (rm/page/page.cmake). */
extern const unsigned char rm_page_html[];
extern const size_t rm_page_html_len;

#define RM_PAGE__PATH_MAX 4200

struct rm_page {
    struct rmserver *s;
    char *keys_dir; /* NULL: no token */
    char token[RM_PAGE_TOKEN_MAX + 1];
    struct timespec token_mtime; /* of the file the token was read from */
    ino_t token_ino;
    bool token_seen; /* token_mtime/ino describe a file (read or refused) */
    int64_t refused_log_ms;
    struct rm_page_stats stats;
};

/* ---- authentication (pure) ---- */

static bool rm_page__equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char d = la != lb;
    /* the configured token's length is not a secret; its bytes are */
    for (size_t i = 0; i < lb; i++)
        d |= (unsigned char)(a[i < la ? i : 0] ^ b[i]);
    return d == 0 && la > 0;
}

enum rm_page_auth rm_page_authorize(bool loopback, const char *authorization,
                                    const char *query_token, const char *token)
{
    if (loopback)
        return RM_PAGE_AUTH_OK;
    if (authorization == NULL && query_token == NULL)
        return RM_PAGE_AUTH_MISSING;
    if (token == NULL || token[0] == '\0')
        return RM_PAGE_AUTH_NO_TOKEN;
    if (authorization != NULL) {
        /* RFC 6750 §2.1: "Bearer" is case-insensitive, then one or more spaces */
        if (strncasecmp(authorization, "Bearer ", 7) != 0)
            return RM_PAGE_AUTH_BAD;
        const char *t = authorization + 7;
        while (*t == ' ')
            t++;
        return rm_page__equal(t, token) ? RM_PAGE_AUTH_OK : RM_PAGE_AUTH_BAD;
    }
    return rm_page__equal(query_token, token) ? RM_PAGE_AUTH_OK : RM_PAGE_AUTH_BAD;
}

static void rm_page__token_path(const char *keys_dir, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%s", keys_dir, RM_PAGE_TOKEN_FILE);
}

/* Reads the token again when its file changed (rotation needs no restart). */
static void rm_page__token_refresh(rm_page_t *p)
{
    if (p->keys_dir == NULL)
        return;
    char path[RM_PAGE__PATH_MAX], msg[256];
    rm_page__token_path(p->keys_dir, path, sizeof path);
    struct stat st;
    if (stat(path, &st) != 0) {
        p->token[0] = '\0';
        p->token_seen = false;
        return;
    }
    if (p->token_seen && st.st_ino == p->token_ino && st.st_mtim.tv_sec == p->token_mtime.tv_sec &&
        st.st_mtim.tv_nsec == p->token_mtime.tv_nsec)
        return;
    p->token_seen = true;
    p->token_ino = st.st_ino;
    p->token_mtime = st.st_mtim;
    if (rm_page_token_load(p->keys_dir, p->token, sizeof p->token, msg, sizeof msg) != 0) {
        p->token[0] = '\0';
        log_warn("cluster page: %s: remote clients are refused", msg);
    }
}

/* ---- the document ---- */

static json_t *rm_page__ms(int64_t v)
{
    return v != 0 ? json_integer(v) : json_null();
}

static json_t *rm_page__node(struct rmserver *s, const struct ledger_node *n, int64_t now)
{
    const struct rmview_node *v = rmview_find(s->view, n->name);
    bool heard = v != NULL && v->rx_ms != 0;
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(n->name));
    json_object_set_new(o, "rack", json_string(n->rack));
    bool self_draining = heard && v->draining && n->liveness != LEDGER_NODE_DOWN;
    json_object_set_new(o, "state",
                        json_string(self_draining ? "draining" : ledger_node_state_name(n)));
    json_object_set_new(o, "cpus", json_real(n->cpus_milli / 1000.0));
    json_object_set_new(o, "mem_mb", json_integer(n->mem_mb));
    json_object_set_new(o, "used_cpus", json_real(heard ? v->used_cpu : 0.0));
    json_object_set_new(o, "used_mem_mb", json_integer(heard ? (json_int_t)v->used_mem_mb : 0));
    json_object_set_new(o, "running_regular", json_integer(heard ? v->running_regular : 0));
    json_object_set_new(o, "running_opportunistic",
                        json_integer(heard ? v->running_opportunistic : 0));
    json_object_set_new(o, "queued_regular", json_integer(heard ? v->queued_regular : 0));
    json_object_set_new(o, "queued_opportunistic",
                        json_integer(heard ? v->queued_opportunistic : 0));
    json_object_set_new(o, "age_ms", heard ? json_integer(now - v->rx_ms) : json_null());
    json_object_set_new(o, "psucc", json_real(ledger_node_psucc(n)));
    /* the wait-time matrix, row-major as the PN sent it; null: never fits */
    json_t *mx = json_object(), *cpu = json_array(), *mem = json_array(), *cells = json_array();
    const proto_matrix_t *pm = heard ? &v->matrix : NULL;
    for (uint32_t r = 0; pm != NULL && r < pm->ncpu; r++) {
        json_array_append_new(cpu, json_real(pm->cpu_bounds[r]));
        for (uint32_t c = 0; c < pm->nmem; c++) {
            uint32_t w = proto_matrix_cell(pm, r, c);
            json_array_append_new(cells, w == PROTO_WAIT_NEVER ? json_null() : json_integer(w));
        }
    }
    for (uint32_t c = 0; pm != NULL && c < pm->nmem; c++)
        json_array_append_new(mem, json_integer((json_int_t)pm->mem_bounds_mb[c]));
    json_object_set_new(mx, "cpu", cpu);
    json_object_set_new(mx, "mem_mb", mem);
    json_object_set_new(mx, "cells_ms", cells);
    json_object_set_new(mx, "timestamp_ms", json_integer(pm != NULL ? pm->timestamp_ms : 0));
    json_object_set_new(o, "matrix", mx);
    return o;
}

static json_t *rm_page__job(const ledger_t *l, const struct ledger_job *j)
{
    char jid[ID_JOB_SIZE];
    rmserver_job_id(j->id, jid);
    const struct ledger_vc *vc = ledger_vc_at(l, j->vc);
    json_t *o = json_object();
    json_object_set_new(o, "job_id", json_string(jid));
    json_object_set_new(o, "name", json_string(j->name));
    json_object_set_new(o, "virtual_cluster", json_string(vc != NULL ? vc->name : "?"));
    json_object_set_new(o, "state", json_string(ledger_job_state_name(j->state)));
    json_object_set_new(o, "tokens", json_integer(j->tokens));
    json_object_set_new(o, "wanted", json_integer(j->wanted));
    json_object_set_new(o, "minimum", json_integer(j->minimum));
    json_object_set_new(o, "best_effort", json_boolean(j->best_effort));
    json_object_set_new(o, "submitted_ms", json_integer(j->submitted_ms));
    json_object_set_new(o, "started_ms", rm_page__ms(j->started_ms));
    json_object_set_new(o, "deadline_ms", rm_page__ms(j->deadline_ms));
    json_object_set_new(o, "finished_ms", rm_page__ms(j->finished_ms));
    json_object_set_new(o, "progress", json_real(j->done_permille / 1000.0));
    /* the JM's expected finish, as absolute times (eta_ms counts from submission) */
    json_object_set_new(o, "eta_ms",
                        j->eta_ms ? json_integer(j->submitted_ms + j->eta_ms) : json_null());
    json_object_set_new(o, "eta_p95_ms",
                        j->eta_p95_ms ? json_integer(j->submitted_ms + j->eta_p95_ms)
                                      : json_null());
    json_object_set_new(o, "epoch", json_integer(j->epoch));
    json_object_set_new(o, "restarts", json_integer(j->restarts));
    /* admission's prediction when it registered, uncalibrated (rm/calib.h) */
    json_object_set_new(o, "pred_p50_ms",
                        j->pred_p50_ms > 0 ? json_integer(j->pred_p50_ms) : json_null());
    json_object_set_new(o, "pred_bound_ms",
                        j->pred_p50_ms > 0 ? json_integer(j->pred_bound_ms) : json_null());
    return o;
}

static json_t *rm_page__jobs(const ledger_t *l)
{
    json_t *arr = json_array();
    size_t n = ledger_job_count(l), done = 0;
    /* the active jobs in id order, then the most recently submitted finished ones */
    for (size_t i = 0; i < n; i++)
        if (ledger_job_at(l, i)->state == LEDGER_JOB_ACTIVE)
            json_array_append_new(arr, rm_page__job(l, ledger_job_at(l, i)));
    for (size_t i = n; i-- > 0 && done < RM_PAGE_JOBS_DONE;) {
        const struct ledger_job *j = ledger_job_at(l, i);
        if (j->state != LEDGER_JOB_ACTIVE) {
            json_array_append_new(arr, rm_page__job(l, j));
            done++;
        }
    }
    return arr;
}

/* Every replica of the configuration: this one as it knows itself, the others as the leader's
 * replication progress shows them (raft 0.15 keeps no follower's term: it is ours when it
 * answered within an election timeout). */
static json_t *rm_page__replicas(struct rmserver *s)
{
    json_t *arr = rmserver_member_json(s);
    bool leader = raft_state(&s->raft) == RAFT_LEADER && s->raft.leader_state.progress != NULL;
    const struct raft_configuration *c = &s->raft.configuration;
    for (unsigned i = 0; i < c->n && i < json_array_size(arr); i++) {
        json_t *o = json_array_get(arr, i);
        json_object_set(o, "voter", json_object_get(o, "role"));
        json_object_del(o, "role");
        bool self = c->servers[i].id == s->id;
        const char *role = self ? rmserver_role_name(raft_state(&s->raft)) : "unknown";
        bool reachable = self;
        if (!self && leader) {
            reachable = s->raft.leader_state.progress[i].recent_recv;
            role = reachable ? "follower" : "unreachable";
        }
        json_object_set_new(o, "self", json_boolean(self));
        json_object_set_new(o, "state", json_string(role));
        json_object_set_new(
            o, "term", reachable ? json_integer((json_int_t)s->raft.current_term) : json_null());
        if (self) {
            json_object_set_new(o, "match_index",
                                json_integer((json_int_t)raft_last_index(&s->raft)));
            json_object_set_new(o, "commit_index", json_integer((json_int_t)s->raft.commit_index));
            json_object_set_new(o, "last_applied",
                                json_integer((json_int_t)raft_last_applied(&s->raft)));
        }
    }
    return arr;
}

char *rm_page_json(struct rmserver *s, const struct rm_page_stats *stats)
{
    ledger_t *l = fsm_ledger(s->fsm);
    int64_t mono = (int64_t)clock_mono_ms();
    json_t *doc = json_object();
    json_object_set_new(doc, "version", json_integer(1));
    /* the replica's wall clock: the page measures deadlines and ages against it, not its own */
    json_object_set_new(doc, "now_ms", json_integer(clock_wall_ms()));
    json_t *me = json_object();
    json_object_set_new(me, "id", json_integer((json_int_t)s->id));
    json_object_set_new(me, "role", json_string(rmserver_role_name(raft_state(&s->raft))));
    json_object_set_new(me, "ready", json_boolean(s->ready));
    json_object_set_new(me, "term", json_integer((json_int_t)s->raft.current_term));
    json_object_set_new(me, "commit_index", json_integer((json_int_t)s->raft.commit_index));
    json_object_set_new(me, "last_applied", json_integer((json_int_t)raft_last_applied(&s->raft)));
    json_object_set_new(me, "last_index", json_integer((json_int_t)raft_last_index(&s->raft)));
    json_object_set_new(me, "leader_for_ms", json_integer(s->ready ? mono - s->ready_mono_ms : 0));
    json_object_set_new(me, "heartbeats", json_integer((json_int_t)s->heartbeats));
    json_object_set_new(me, "requests", json_integer((json_int_t)s->requests));
    json_object_set_new(doc, "replica", me);
    json_object_set_new(doc, "replicas", rm_page__replicas(s));
    json_t *nodes = json_array();
    for (size_t i = 0; i < ledger_node_count(l); i++)
        json_array_append_new(nodes, rm_page__node(s, ledger_node_at(l, i), mono));
    json_object_set_new(doc, "nodes", nodes);
    json_object_set_new(doc, "jobs", rm_page__jobs(l));
    json_object_set_new(doc, "virtual_clusters", rmserver_admin_vcs(l, true));
    json_object_set_new(doc, "calibration", rmserver_calibration_json(l));
    if (stats != NULL) {
        json_t *st = json_object();
        json_object_set_new(st, "pages", json_integer((json_int_t)stats->pages));
        json_object_set_new(st, "documents", json_integer((json_int_t)stats->documents));
        json_object_set_new(st, "unauthorized", json_integer((json_int_t)stats->unauthorized));
        json_object_set_new(doc, "page", st);
    }
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    return text;
}

/* ---- serving ---- */

static void rm_page__secure_headers(struct httpd_resp *r)
{
    /* everything is inline; the page fetches only its own document */
    httpd_resp_header(r, "Content-Security-Policy",
                      "default-src 'none'; script-src 'unsafe-inline'; style-src "
                      "'unsafe-inline'; img-src data:; connect-src 'self'; "
                      "frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
    httpd_resp_header(r, "Cache-Control", "no-store");
    httpd_resp_header(r, "X-Content-Type-Options", "nosniff");
    httpd_resp_header(r, "Referrer-Policy", "no-referrer"); /* the address may hold ?token= */
}

static void rm_page__text(struct httpd_resp *r, int status, const char *text)
{
    httpd_resp_status(r, status);
    httpd_resp_type(r, "text/plain; charset=utf-8");
    httpd_resp_body(r, text, strlen(text));
}

static bool rm_page__allowed(rm_page_t *p, const struct httpd_req *req, struct httpd_resp *resp)
{
    const char *auth = httpd_req_header(req, "Authorization");
    const char *q = httpd_req_query(req, "token");
    if (!req->client_loopback)
        rm_page__token_refresh(p);
    enum rm_page_auth a = rm_page_authorize(req->client_loopback, auth, q, p->token);
    if (a == RM_PAGE_AUTH_OK)
        return true;
    p->stats.unauthorized++;
    int64_t now = (int64_t)clock_mono_ms();
    if (now - p->refused_log_ms >= 10000) {
        p->refused_log_ms = now;
        log_warn("cluster page: refused %s from %s (%s; %llu refused so far)", req->path,
                 req->client[0] ? req->client : "?",
                 a == RM_PAGE_AUTH_MISSING ? "no token"
                 : a == RM_PAGE_AUTH_BAD   ? "wrong token"
                                           : "no token configured",
                 (unsigned long long)p->stats.unauthorized);
    }
    httpd_resp_header(resp, "WWW-Authenticate",
                      a == RM_PAGE_AUTH_BAD ? "Bearer realm=\"paddock\", error=\"invalid_token\""
                                            : "Bearer realm=\"paddock\"");
    httpd_resp_header(resp, "Cache-Control", "no-store");
    rm_page__text(
        resp, 401,
        a == RM_PAGE_AUTH_NO_TOKEN
            ? "401 unauthorized: this RM has no web token (KEYS_DIR/" RM_PAGE_TOKEN_FILE
              "): only loopback clients are served\n"
            : "401 unauthorized: send the cluster's web token (KEYS_DIR/" RM_PAGE_TOKEN_FILE
              ") as \"Authorization: Bearer TOKEN\" or open /?token=TOKEN\n");
    return false;
}

/* HTML-escapes text into out (truncating at a character boundary). */
static void rm_page__escape(const char *in, char *out, size_t cap)
{
    size_t o = 0;
    for (; *in != '\0'; in++) {
        const char *rep = *in == '<'    ? "&lt;"
                          : *in == '>'  ? "&gt;"
                          : *in == '&'  ? "&amp;"
                          : *in == '"'  ? "&quot;"
                          : *in == '\'' ? "&#39;"
                                        : NULL;
        size_t n = rep != NULL ? strlen(rep) : 1;
        if (o + n + 1 > cap)
            break;
        if (rep != NULL)
            memcpy(out + o, rep, n);
        else
            out[o] = *in;
        o += n;
    }
    out[o] = '\0';
}

/* The notice a follower (or a leader not yet ready) serves instead of the page. */
static void rm_page__notice(rm_page_t *p, struct httpd_resp *resp)
{
    struct rmserver *s = p->s;
    uint64_t lid = 0;
    const char *lapi = rmserver_leader_api(s, &lid);
    char api[2 * RMSERVER_ADDR_MAX], body[8192];
    rm_page__escape(lapi != NULL ? lapi : "", api, sizeof api);
    const char *role = rmserver_role_name(raft_state(&s->raft));
    int n = snprintf(body, sizeof body,
                     "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                     "<meta http-equiv=\"refresh\" content=\"2\">"
                     "<title>Paddock: replica %llu is not the leader</title>"
                     "<style>body{font:15px system-ui,sans-serif;margin:3em;color:#222}"
                     "code{background:#eee;padding:1px 4px}</style></head>"
                     "<body data-role=\"%s\" data-leader=\"%llu\"><h1>Not the leader</h1>"
                     "<p>This is replica %llu of the Paddock resource monitor, a %s%s. The "
                     "cluster page is served by the Raft leader only.</p>",
                     (unsigned long long)s->id, role, (unsigned long long)lid,
                     (unsigned long long)s->id, role,
                     raft_state(&s->raft) == RAFT_LEADER ? " not yet serving" : "");
    if (lid != 0)
        n += snprintf(body + n, sizeof body - (size_t)n,
                      "<p id=\"leader\">The leader is replica <b>%llu</b> (API <code>%s</code>). "
                      "Open the page on its HTTP listener (<code>[metrics] listen</code> in its "
                      "configuration; <code>paddock rm status</code> lists every replica's "
                      "URL).</p>",
                      (unsigned long long)lid, api);
    else
        n += snprintf(body + n, sizeof body - (size_t)n,
                      "<p id=\"leader\">No leader is known right now (an election may be under "
                      "way). This notice reloads every 2 s.</p>");
    snprintf(body + n, sizeof body - (size_t)n, "</body></html>\n");
    httpd_resp_type(resp, "text/html; charset=utf-8");
    httpd_resp_body(resp, body, strlen(body));
}

static void rm_page__on_page(const struct httpd_req *req, struct httpd_resp *resp, void *arg)
{
    rm_page_t *p = arg;
    if (strcmp(req->path, "/") != 0 && strcmp(req->path, "/index.html") != 0) {
        p->stats.not_found++;
        rm_page__text(resp, 404,
                      "404 not found: the cluster page is / and its data "
                      "/cluster.json\n");
        return;
    }
    if (!rm_page__allowed(p, req, resp))
        return;
    rm_page__secure_headers(resp);
    p->stats.pages++;
    if (!p->s->ready) {
        rm_page__notice(p, resp);
        return;
    }
    httpd_resp_type(resp, "text/html; charset=utf-8");
    httpd_resp_body(resp, rm_page_html, rm_page_html_len);
}

static void rm_page__on_json(const struct httpd_req *req, struct httpd_resp *resp, void *arg)
{
    rm_page_t *p = arg;
    if (strcmp(req->path, RM_PAGE_JSON_PATH) != 0) {
        p->stats.not_found++;
        rm_page__text(resp, 404, "404 not found\n");
        return;
    }
    if (!rm_page__allowed(p, req, resp))
        return;
    httpd_resp_header(resp, "Cache-Control", "no-store");
    httpd_resp_header(resp, "X-Content-Type-Options", "nosniff");
    httpd_resp_type(resp, "application/json");
    struct rmserver *s = p->s;
    char *text = NULL;
    if (!s->ready) {
        /* the open page shows this as its notice and keeps polling */
        p->stats.not_leader++;
        uint64_t lid = 0;
        const char *lapi = rmserver_leader_api(s, &lid);
        json_t *o = json_object(), *ld = json_object();
        json_object_set_new(o, "error", json_string("not the leader"));
        json_object_set_new(o, "id", json_integer((json_int_t)s->id));
        json_object_set_new(o, "role", json_string(rmserver_role_name(raft_state(&s->raft))));
        json_object_set_new(ld, "id", lid != 0 ? json_integer((json_int_t)lid) : json_null());
        json_object_set_new(ld, "api", lapi != NULL ? json_string(lapi) : json_null());
        json_object_set_new(o, "leader", ld);
        text = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        httpd_resp_status(resp, 503);
    } else {
        p->stats.documents++;
        text = rm_page_json(s, &p->stats);
    }
    if (text == NULL) {
        rm_page__text(resp, 500, "500 out of memory\n");
        return;
    }
    httpd_resp_body(resp, text, strlen(text));
    free(text);
}

int rm_page_new(rm_page_t **out, struct rmserver *s, httpd_t *h, const char *keys_dir, char *msg,
                size_t cap)
{
    *out = NULL;
    rm_page_t *p = mem_calloc(1, sizeof *p);
    if (p == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    p->s = s;
    p->refused_log_ms = -100000;
    if (keys_dir != NULL && keys_dir[0] != '\0' && (p->keys_dir = mem_strdup(keys_dir)) == NULL) {
        mem_free(p);
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    }
    if (p->keys_dir != NULL) {
        char why[512];
        if (rm_page_token_create(p->keys_dir, false, why, sizeof why) != 0)
            log_warn("cluster page: cannot create a web token: %s", why);
        rm_page__token_refresh(p);
    }
    /* a route once made holds p until httpd_stop: p is the caller's from here, also on error */
    *out = p;
    int rc = httpd_route(h, RM_PAGE_PATH, rm_page__on_page, p);
    if (rc == 0)
        rc = httpd_route(h, RM_PAGE_JSON_PATH, rm_page__on_json, p);
    if (rc != 0)
        return err_fmt(msg, cap, rc, "cluster page: cannot route: %s", err_text(rc));
    return 0;
}

void rm_page_destroy(rm_page_t **pp)
{
    if (pp == NULL || *pp == NULL)
        return;
    rm_page_t *p = *pp;
    memset(p->token, 0, sizeof p->token);
    mem_free(p->keys_dir);
    mem_free(p);
    *pp = NULL;
}

void rm_page_stats(const rm_page_t *p, struct rm_page_stats *out)
{
    memset(out, 0, sizeof *out);
    if (p != NULL)
        *out = p->stats;
}

static void rm_page__metrics(struct metrics *m, void *arg)
{
    const rm_page_t *p = arg;
    metrics_family(m, "paddock_rm_page_requests_total", METRICS_COUNTER,
                   "Requests to the cluster page (/ and /cluster.json) by result; unauthorized: "
                   "non-loopback clients without the web token, answered 401");
    const struct {
        const char *result;
        uint64_t n;
    } rows[] = {{"page", p->stats.pages},
                {"document", p->stats.documents},
                {"not_leader", p->stats.not_leader},
                {"unauthorized", p->stats.unauthorized},
                {"not_found", p->stats.not_found}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *labels[] = {"result", rows[i].result, NULL};
        metrics_sample(m, labels, (double)rows[i].n);
    }
}

int rm_page_start(struct rmserver *s, char *msg, size_t cap)
{
    httpd_t *h = rm_metrics_httpd(s);
    if (h == NULL || s->page != NULL)
        return 0;
    int rc = rm_page_new(&s->page, s, h, s->cfg->keys_dir, msg, cap);
    if (s->page != NULL && rm_metrics_add_source(s, rm_page__metrics, s->page) != 0)
        log_warn("cluster page: its counters are not in /metrics (no room for a source)");
    if (rc == 0)
        log_info("cluster page at %s/ (remote clients need %s/%s)", httpd_url(h),
                 s->cfg->keys_dir != NULL && s->cfg->keys_dir[0] ? s->cfg->keys_dir : "KEYS_DIR",
                 RM_PAGE_TOKEN_FILE);
    return rc;
}

void rm_page_free(struct rmserver *s)
{
    rm_page_destroy(&s->page);
}
