/* rm_metrics.c - an RM replica's /metrics (see rm_metrics.h and docs/metrics.md). */
#include "rm/rm_metrics.h"

#include "common/err.h"
#include "common/log.h"
#include "common/map.h"
#include "common/mem.h"
#include "proto/limits.h"
#include "rm/calib.h"
#include "rm/ledger.h"
#include "rm/rmserver_internal.h"

#include <stdio.h>
#include <string.h>

struct rm_metrics {
    httpd_t *http;
    char url[HTTPD_LISTEN_MAX + 32];
    struct map nodes; /* node name -> char * URL */
    struct map jobs;  /* job id (8 bytes) -> char * URL */
    struct {
        rm_metrics_source_fn *fn;
        void *arg;
    } sources[RM_METRICS_SOURCES_MAX];
    size_t nsources;
    uint64_t scrapes;
};

/* Names of enum rmserver_reject, as `rm status` spells them. */
static const char *const rm_metrics__reject_names[] = {"decode",     "frames", "type",  "invalid",
                                                       "not_leader", "busy",   "denied"};
_Static_assert(sizeof rm_metrics__reject_names / sizeof rm_metrics__reject_names[0] ==
                   RMSERVER_REJ_COUNT,
               "one name per rmserver_reject");

static struct rm_metrics *rm_metrics__get(struct rmserver *s)
{
    if (s->metrics == NULL) {
        s->metrics = mem_calloc(1, sizeof *s->metrics);
        if (s->metrics != NULL) {
            map_init(&s->metrics->nodes);
            map_init(&s->metrics->jobs);
        }
    }
    return s->metrics;
}

static void rm_metrics__clear(struct map *m)
{
    size_t it = 0;
    const char *k;
    size_t kl;
    void *v;
    while (map_next(m, &it, &k, &kl, &v))
        mem_free(v);
    map_close(m);
    map_init(m);
}

static void rm_metrics__note(struct map *m, const void *key, size_t klen, const char *url)
{
    void *old = NULL;
    if (url == NULL || url[0] == '\0' || strlen(url) > PROTO_MAX_ENDPOINT) {
        if (map_deln(m, key, klen, &old))
            mem_free(old);
        return;
    }
    const char *cur = map_getn(m, key, klen);
    if (cur != NULL && strcmp(cur, url) == 0)
        return; /* the hot path: a heartbeat repeating the URL it sent last time */
    if (cur == NULL && m->len >= RM_METRICS_URLS_MAX)
        rm_metrics__clear(m); /* bounded; live senders fill it again within a period */
    char *copy = mem_strdup(url);
    if (copy == NULL)
        return;
    if (map_putn(m, key, klen, copy, &old) != 0) {
        mem_free(copy);
        return;
    }
    mem_free(old);
}

void rm_metrics_note_node(struct rmserver *s, const char *node, const char *url)
{
    struct rm_metrics *rm = rm_metrics__get(s);
    if (rm != NULL && node != NULL)
        rm_metrics__note(&rm->nodes, node, strlen(node), url);
}

void rm_metrics_note_job(struct rmserver *s, uint64_t job_id, const char *url)
{
    struct rm_metrics *rm = rm_metrics__get(s);
    if (rm != NULL)
        rm_metrics__note(&rm->jobs, &job_id, sizeof job_id, url);
}

const char *rm_metrics_node_url(struct rmserver *s, const char *node)
{
    return s->metrics && node ? map_get(&s->metrics->nodes, node) : NULL;
}

const char *rm_metrics_job_url(struct rmserver *s, uint64_t job_id)
{
    return s->metrics ? map_getn(&s->metrics->jobs, &job_id, sizeof job_id) : NULL;
}

int rm_metrics_add_source(struct rmserver *s, rm_metrics_source_fn *fn, void *arg)
{
    struct rm_metrics *rm = rm_metrics__get(s);
    if (rm == NULL)
        return ERR_NOMEM;
    if (fn == NULL)
        return ERR_INVAL;
    if (rm->nsources >= RM_METRICS_SOURCES_MAX)
        return ERR_FULL;
    rm->sources[rm->nsources].fn = fn;
    rm->sources[rm->nsources].arg = arg;
    rm->nsources++;
    return 0;
}

static void rm_metrics__raft(struct rmserver *s, struct metrics *m)
{
    static const struct {
        int role;
        const char *name;
    } roles[] = {{RAFT_LEADER, "leader"},
                 {RAFT_FOLLOWER, "follower"},
                 {RAFT_CANDIDATE, "candidate"},
                 {RAFT_UNAVAILABLE, "unavailable"}};
    int role = raft_state(&s->raft);
    metrics_family(m, "paddock_rm_raft_role", METRICS_GAUGE,
                   "1 for this replica's current Raft role, 0 for the others.");
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++) {
        const char *l[] = {"role", roles[i].name, NULL};
        metrics_sample(m, l, role == roles[i].role ? 1 : 0);
    }
    metrics_gauge1(m, "paddock_rm_ready", "1 when this replica is the leader and serves writes.",
                   s->ready ? 1 : 0);
    metrics_gauge1(m, "paddock_rm_replica_id", "This replica's Raft id.", (double)s->id);
    metrics_gauge1(m, "paddock_rm_raft_term", "Current Raft term.", (double)s->raft.current_term);
    metrics_gauge1(m, "paddock_rm_raft_commit_index", "Raft commit index.",
                   (double)s->raft.commit_index);
    metrics_gauge1(m, "paddock_rm_raft_applied_index", "Last Raft index applied to the ledger.",
                   (double)raft_last_applied(&s->raft));
    metrics_gauge1(m, "paddock_rm_raft_last_index", "Last index in this replica's Raft log.",
                   (double)raft_last_index(&s->raft));
}

static void rm_metrics__traffic(struct rmserver *s, struct metrics *m)
{
    metrics_counter1(m, "paddock_rm_requests_total", "API requests received.", (double)s->requests);
    metrics_counter1(m, "paddock_rm_heartbeats_total", "PN heartbeats ingested.",
                     (double)s->heartbeats);
    metrics_counter1(m, "paddock_rm_heartbeats_stale_total",
                     "PN heartbeats ignored as older than one already ingested.",
                     (double)s->heartbeats_stale);
    metrics_counter1(m, "paddock_rm_heartbeats_unregistered_total",
                     "PN heartbeats refused: no node registered with that name and boot id.",
                     (double)s->heartbeats_unregistered);
    metrics_family(m, "paddock_rm_messages_rejected_total", METRICS_COUNTER,
                   "Messages refused, by reason (decode: see paddock_rm_decode_rejected_total).");
    for (int i = 0; i < RMSERVER_REJ_COUNT; i++) {
        const char *l[] = {"reason", rm_metrics__reject_names[i], NULL};
        metrics_sample(m, l, (double)s->rejected[i]);
    }
    metrics_family(m, "paddock_rm_denied_total", METRICS_COUNTER,
                   "Requests refused because the caller may not make them, by what was tried.");
    for (int i = 0; i < RMSERVER_DENY_COUNT; i++) {
        const char *l[] = {"action", rmserver_deny_names[i], NULL};
        metrics_sample(m, l, (double)s->denied[i]);
    }
    metrics_family(m, "paddock_rm_decode_rejected_total", METRICS_COUNTER,
                   "Messages the protocol decoder refused, by reason.");
    for (int r = 0; r < PROTO_REJ_COUNT; r++) {
        const char *l[] = {"reason", proto_reject_name((proto_reject_t)r), NULL};
        metrics_sample(
            m, l, (double)(s->api_stats.rejected_by_reason[r] + s->hb_stats.rejected_by_reason[r]));
    }
    metrics_counter1(m, "paddock_rm_writes_committed_total", "Ledger commands committed.",
                     (double)s->writes_committed);
    metrics_counter1(m, "paddock_rm_log_entries_appended_total",
                     "Raft log entries this replica appended as leader.",
                     (double)s->entries_appended);
    metrics_family(m, "paddock_rm_commit_seconds", METRICS_HISTOGRAM,
                   "Time from a log entry's append as leader to its commit (a quorum's write), "
                   "per entry (a batch of commands).");
    metrics_histogram(m, NULL, &s->commit_hist);
    metrics_gauge1(m, "paddock_rm_commands_pending", "Commands waiting for a log entry.",
                   (double)s->pending.len);
    metrics_gauge1(m, "paddock_rm_entries_inflight", "Log entries appended and not yet applied.",
                   (double)s->inflight);
    metrics_gauge1(m, "paddock_rm_view_nodes", "Nodes in this replica's cluster view.",
                   (double)rmview_count(s->view));
}

static void rm_metrics__ledger(struct rmserver *s, struct metrics *m)
{
    ledger_t *l = fsm_ledger(s->fsm);
    static const char *const nstates[] = {"up", "suspect", "down", "draining"};
    double ncount[4] = {0};
    for (size_t i = 0; i < ledger_node_count(l); i++) {
        const char *st = ledger_node_state_name(ledger_node_at(l, i));
        for (size_t k = 0; k < 4; k++)
            if (strcmp(st, nstates[k]) == 0)
                ncount[k]++;
    }
    metrics_family(m, "paddock_rm_nodes", METRICS_GAUGE, "Registered nodes by state.");
    for (size_t k = 0; k < 4; k++) {
        const char *lb[] = {"state", nstates[k], NULL};
        metrics_sample(m, lb, ncount[k]);
    }

    size_t nvc = ledger_vc_count(l);
    static const char *const tf[] = {"paddock_rm_tokens_capacity", "paddock_rm_tokens_granted",
                                     "paddock_rm_tokens_spare"};
    static const char *const th[] = {
        "Tokens a virtual cluster has.", "Tokens granted to the virtual cluster's jobs.",
        "Of the granted tokens, those above the jobs' guaranteed minimums."};
    for (int f = 0; f < 3; f++) {
        metrics_family(m, tf[f], METRICS_GAUGE, th[f]);
        for (size_t i = 0; i < nvc; i++) {
            const struct ledger_vc *vc = ledger_vc_at(l, i);
            const char *lb[] = {"virtual_cluster", vc->name, NULL};
            metrics_sample(m, lb, f == 0 ? vc->capacity : f == 1 ? vc->granted : (double)vc->spare);
        }
    }

    static const char *const jstates[] = {"active", "done", "failed", "cancelled", "expired"};
    double jcount[5] = {0};
    for (size_t i = 0; i < ledger_job_count(l); i++) {
        uint8_t st = ledger_job_at(l, i)->state;
        if (st >= LEDGER_JOB_ACTIVE && st <= LEDGER_JOB_EXPIRED)
            jcount[st - LEDGER_JOB_ACTIVE]++;
    }
    metrics_family(m, "paddock_rm_jobs", METRICS_GAUGE, "Jobs in the ledger by state.");
    for (size_t k = 0; k < 5; k++) {
        const char *lb[] = {"state", jstates[k], NULL};
        metrics_sample(m, lb, jcount[k]);
    }
    struct calib_factors cf;
    ledger_calibration(l, &cf);
    metrics_gauge1(m, "paddock_rm_admission_bound_factor",
                   "Admission's conservative bound as a multiple of its model (rm/calib.h).",
                   cf.hi);
    metrics_gauge1(m, "paddock_rm_admission_median_factor",
                   "Admission's median as a multiple of its model.", cf.p50);
    metrics_gauge1(m, "paddock_rm_admission_outcomes",
                   "Finished jobs the admission error model holds (its window).", (double)cf.n);
    metrics_gauge1(m, "paddock_rm_admission_own_factor",
                   "Admission's bound of a job with its own spread, as a multiple of that spread.",
                   cf.hi_own);
}

char *rm_metrics_text(struct rmserver *s, size_t *len)
{
    struct metrics m;
    metrics_init(&m);
    rm_metrics__raft(s, &m);
    rm_metrics__traffic(s, &m);
    rm_metrics__ledger(s, &m);
    struct rm_metrics *rm = s->metrics;
    if (rm != NULL) {
        metrics_counter1(&m, "paddock_rm_metrics_scrapes_total", "Scrapes of this endpoint.",
                         (double)rm->scrapes);
        for (size_t i = 0; i < rm->nsources; i++)
            rm->sources[i].fn(&m, rm->sources[i].arg);
    }
    metrics_process(&m);
    if (metrics_error(&m) != 0)
        log_warn("metrics: %s while building the exposition", err_name(metrics_error(&m)));
    char *t = metrics_take(&m, len);
    metrics_close(&m);
    return t;
}

static void rm_metrics__serve(const struct httpd_req *req, struct httpd_resp *resp, void *arg)
{
    struct rmserver *s = arg;
    if (strcmp(req->path, RM_METRICS_PATH) != 0) {
        httpd_resp_status(resp, 404);
        httpd_resp_body(resp, "not found\n", 10);
        return;
    }
    s->metrics->scrapes++;
    size_t len = 0;
    char *t = rm_metrics_text(s, &len);
    if (t == NULL) {
        resp->err = ERR_NOMEM;
        return;
    }
    httpd_resp_type(resp, METRICS_CONTENT_TYPE);
    httpd_resp_take(resp, &t, len);
}

int rm_metrics_start(struct rmserver *s, char *msg, size_t cap)
{
    const char *listen = s->cfg->metrics_listen;
    if (listen == NULL || listen[0] == '\0')
        return 0;
    struct rm_metrics *rm = rm_metrics__get(s);
    if (rm == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    char why[256];
    int rc = httpd_start(&rm->http, &s->loop, listen, why, sizeof why);
    if (rc != 0)
        return err_fmt(msg, cap, rc, "[metrics] listen: %s", why);
    rc = httpd_route(rm->http, RM_METRICS_PATH, rm_metrics__serve, s);
    if (rc != 0) {
        httpd_stop(&rm->http);
        return err_fmt(msg, cap, rc, "[metrics] cannot route %s", RM_METRICS_PATH);
    }
    snprintf(rm->url, sizeof rm->url, "%s%s", httpd_url(rm->http), RM_METRICS_PATH);
    log_info("metrics on %s", rm->url);
    return 0;
}

void rm_metrics_stop(struct rmserver *s)
{
    if (s->metrics != NULL)
        httpd_stop(&s->metrics->http);
}

void rm_metrics_free(struct rmserver *s)
{
    struct rm_metrics *rm = s->metrics;
    if (rm == NULL)
        return;
    httpd_stop(&rm->http);
    rm_metrics__clear(&rm->nodes);
    rm_metrics__clear(&rm->jobs);
    map_close(&rm->nodes);
    map_close(&rm->jobs);
    mem_free(rm);
    s->metrics = NULL;
}

httpd_t *rm_metrics_httpd(struct rmserver *s)
{
    return s->metrics ? s->metrics->http : NULL;
}

const char *rm_metrics_url(struct rmserver *s)
{
    return s->metrics && s->metrics->http ? s->metrics->url : NULL;
}
