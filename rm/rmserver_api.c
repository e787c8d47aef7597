/* rmserver_api.c - paddock-rm requests: decoding, who asks, dispatch to the ledger (through the log
 * on the leader) or the view, and replies. Bad requests are refused with a reason and counted.
 * The replies sent once a command is applied are in rmserver_reply.c, the admin queries in
 * rmserver_api_admin.c. */
#include "rm/rmserver_api_internal.h"

#include "common/clock.h"
#include "common/err.h"
#include "common/id.h"
#include "common/log.h"
#include "common/mem.h"
#include "common/map.h"
#include "rm/ledger_cmd.h"
#include "rm/rm_metrics.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const rmserver_deny_names[RMSERVER_DENY_COUNT] = {
    "unknown_key", "node",       "submit",  "job",      "cancel",
    "deadline",    "membership", "tenants", "recurring"};

uint64_t rmserver_key_hash(const char *key)
{
    uint64_t h = map_hash(key, strlen(key));
    return h != 0 ? h : 1; /* 0 means "no key" to the ledger */
}

void rmserver_send(struct rmserver *s, zuv_sock_t *sock, const void *peer, size_t peer_len,
                   const proto_msg_t *m)
{
    char err[160];
    /* while stopping, the sockets are closed and raft fails what is in flight: nobody to
     * answer (the waiter's socket pointer is stale by then) */
    if (s->stopping || sock == NULL)
        return;
    if (proto_encode(m, &s->buf, err, sizeof err) != 0) {
        log_error("reply %s: %s", proto_type_name(m->type), err);
        return;
    }
    (void)zuv_send_bytes(sock, peer, peer_len, s->buf.data, s->buf.len); /* zuv counts a failure */
}

void rmserver_send_error(struct rmserver *s, zuv_sock_t *sock, const void *peer, size_t peer_len,
                         uint64_t req_id, proto_type_t in_reply_to, int code, const char *text)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_ERROR);
    m.req_id = req_id;
    m.error.code = code < 0 ? code : ERR_INVAL;
    m.error.text = (char *)(text != NULL && text[0] != '\0' ? text : err_text(code));
    m.error.in_reply_to = (uint32_t)in_reply_to;
    if (code == ERR_NOTLEADER) {
        uint64_t lid = 0;
        const char *api = rmserver_leader_api(s, &lid);
        m.error.leader_endpoint = (char *)(api != NULL ? api : "");
        m.error.leader_id = lid;
    }
    rmserver_send(s, sock, peer, peer_len, &m);
}

/* Job ids on the wire are "j-" + 12 hex digits of the ledger's id. */
int rmserver__parse_job(const char *s, uint64_t *id)
{
    if (s == NULL || !id_job_valid(s, strlen(s)))
        return ERR_INVAL;
    return id_parse_u64(s + 2, ID_JOB_HEX, id) == 0 && *id != 0 ? 0 : ERR_INVAL;
}

void rmserver__reject(struct rmserver *s, zuv_sock_t *sock, const void *peer, size_t peer_len,
                      const proto_msg_t *m, enum rmserver_reject why, int code, const char *text)
{
    s->rejected[why]++;
    log_debug("refused %s: %s", proto_type_name(m->type) ? proto_type_name(m->type) : "?", text);
    rmserver_send_error(s, sock, peer, peer_len, m->req_id, m->type, code, text);
}

/* ---- who asks (issue 27) ---- */

/* The caller of the request in `body`: the allow-list names the key's user. */
static void rmserver__identify(struct rmserver *s, zframe_t *body)
{
    struct rmserver_caller *c = &s->caller;
    memset(c, 0, sizeof *c);
    const char *self = s->cfg->key_name != NULL && s->cfg->key_name[0] != '\0' ? s->cfg->key_name
                                                                               : CURVE_DEFAULT_NAME;
    const char *key = curve_frame_key(body);
    if (s->curve == NULL || key == NULL) {
        /* no CURVE: loopback only (curve_check_listen), the single-user cluster of today */
        snprintf(c->user, sizeof c->user, "%s", self);
        c->admin = c->known = true;
        return;
    }
    if (strcmp(key, curve_public_key(s->curve)) == 0) {
        snprintf(c->user, sizeof c->user, "%s", self); /* the replicas' and PNs' identity */
        c->admin = c->known = true;
        return;
    }
    if (curve_auth_user(key, c->user, sizeof c->user) != 0) {
        snprintf(c->user, sizeof c->user, "?");
        return;
    }
    c->known = true;
    c->admin = strcmp(c->user, self) == 0 ||
               ledger_user_role(fsm_ledger(s->fsm), c->user) == LEDGER_ROLE_ADMIN;
}

/* Refuses a request the caller may not make: counted by what was tried, answered with the
 * reason, and (for the commands users type) a line in the replicated audit trail. Nothing
 * else changes. */
void rmserver__deny(struct rmserver *s, zuv_sock_t *sock, const void *peer, size_t peer_len,
                    const proto_msg_t *m, enum rmserver_deny what, const char *action,
                    const char *target, const char *why)
{
    bool audit = what != RMSERVER_DENY_NODE && what != RMSERVER_DENY_JOB &&
                 what != RMSERVER_DENY_UNKNOWN_KEY;
    if (audit && s->role != RAFT_LEADER) {
        /* a write: refused (counted, audited) by the leader, where the client retries */
        rmserver__reject(s, sock, peer, peer_len, m, RMSERVER_REJ_NOTLEADER, ERR_NOTLEADER,
                         "not the leader");
        return;
    }
    s->rejected[RMSERVER_REJ_DENIED]++;
    s->denied[what]++;
    char text[320];
    snprintf(text, sizeof text, "permission denied: %s", why);
    log_info("denied %s %s to %s: %s", action, target != NULL ? target : "", s->caller.user, why);
    if (audit && s->ready)
        rmserver__audit(s, LEDGER_AUDIT_DENIED, action, target, why);
    rmserver_send_error(s, sock, peer, peer_len, m->req_id, m->type, ERR_DENIED, text);
}

void rmserver__audit(struct rmserver *s, uint8_t state, const char *action, const char *target,
                     const char *text)
{
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_AUDIT);
    snprintf(c.user, sizeof c.user, "%s", s->caller.user);
    snprintf(c.name, sizeof c.name, "%s", action);
    snprintf(c.address, sizeof c.address, "%s", target != NULL ? target : "");
    c.state = state;
    c.text = text;
    c.text_len = (uint32_t)(strlen(text) < LEDGER_REASON_MAX ? strlen(text) : LEDGER_REASON_MAX);
    if (rmserver_submit(s, &c, NULL) != 0) /* a full queue drops the line, not the request */
        log_warn("audit line for %s %s not queued", action, target != NULL ? target : "");
}

/* Whether the caller may act on job `id`: its owner or an admin (a job the ledger does not
 * know is the ledger's to refuse). */
bool rmserver__owns(struct rmserver *s, uint64_t id)
{
    if (s->caller.admin)
        return true;
    const struct ledger_job *j = ledger_job_find(fsm_ledger(s->fsm), id);
    return j == NULL || strcmp(j->user, s->caller.user) == 0;
}

void rmserver__owner_text(struct rmserver *s, uint64_t id, const char *what, char *out, size_t cap)
{
    const struct ledger_job *j = ledger_job_find(fsm_ledger(s->fsm), id);
    snprintf(out, cap, "%s may not %s job j-%012llx of %s (only its owner or an admin)",
             s->caller.user, what, (unsigned long long)(id & 0xffffffffffffull),
             j != NULL && j->user[0] != '\0' ? j->user : "another user");
}

/* ---- requests ---- */

static void rmserver__waiter(struct rmserver_waiter *w, zuv_sock_t *sock, const void *peer,
                             size_t peer_len, const proto_msg_t *m, const char *key)
{
    memset(w, 0, sizeof *w);
    w->sock = sock;
    w->peer_len = peer_len < RMSERVER_PEER_MAX ? peer_len : RMSERVER_PEER_MAX;
    memcpy(w->peer, peer, w->peer_len);
    w->req_id = m->req_id;
    w->type = m->type;
    snprintf(w->key, sizeof w->key, "%s", key != NULL ? key : "");
}

/* A write: answered now when its key was already applied, else queued for the log. */
void rmserver__write(struct rmserver *s, zuv_sock_t *sock, const void *peer, size_t peer_len,
                     const proto_msg_t *m, struct ledger_cmd *cmd, const char *key,
                     const char *admin_kind)
{
    if (s->role != RAFT_LEADER) {
        rmserver__reject(s, sock, peer, peer_len, m, RMSERVER_REJ_NOTLEADER, ERR_NOTLEADER,
                         "not the leader");
        return;
    }
    if (admin_kind == NULL && (key == NULL || key[0] == '\0')) {
        /* every client write must be retry-safe: an empty key would alias all the others */
        rmserver__reject(s, sock, peer, peer_len, m, RMSERVER_REJ_INVALID, ERR_INVAL,
                         "an idempotency key is required");
        return;
    }
    struct rmserver_cmd c;
    c.cmd = *cmd;
    snprintf(c.cmd.user, sizeof c.cmd.user, "%s", s->caller.user); /* issue 27: who asked */
    rmserver__waiter(&c.w, sock, peer, peer_len, m, key);
    if (admin_kind != NULL)
        snprintf(c.w.admin_kind, sizeof c.w.admin_kind, "%s", admin_kind);
    struct ledger_result res;
    if (cmd->key != 0 && ledger_idem_lookup(fsm_ledger(s->fsm), cmd->key, &res)) {
        rmserver_reply(s, &c, 0, &res); /* a retry of something already applied */
        return;
    }
    int rc = rmserver_submit(s, &c.cmd, &c.w);
    if (rc != 0)
        rmserver__reject(s, sock, peer, peer_len, m, RMSERVER_REJ_BUSY, ERR_FULL,
                         "too many requests pending, retry later");
}

static bool rmserver__fits(const char *v, size_t cap)
{
    return v != NULL && strlen(v) < cap;
}

static void rmserver__node_register(struct rmserver *s, zuv_sock_t *sock, const void *peer,
                                    size_t peer_len, const proto_msg_t *m)
{
    const proto_node_register_t *r = &m->node_register;
    if (!s->caller.admin) {
        rmserver__deny(s, sock, peer, peer_len, m, RMSERVER_DENY_NODE, "node_register", r->name,
                       "only the cluster's identity registers nodes");
        return;
    }
    if (!rmserver__fits(r->name, LEDGER_NAME_MAX) || r->name[0] == '\0' ||
        !rmserver__fits(r->rack, LEDGER_RACK_MAX) ||
        !rmserver__fits(r->endpoint, LEDGER_ADDR_MAX) || r->cpu * 1000.0 < 1.0 ||
        r->cpu > 4000000.0 || r->mem_mb == 0 || r->mem_mb > UINT32_MAX) {
        rmserver__reject(s, sock, peer, peer_len, m, RMSERVER_REJ_INVALID, ERR_RANGE,
                         "node name (< 64 bytes), rack (< 32), endpoint (< 128), cpu or mem_mb out "
                         "of range");
        return;
    }
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_NODE_REGISTER);
    c.key = rmserver_key_hash(r->key);
    snprintf(c.name, sizeof c.name, "%s", r->name);
    snprintf(c.rack, sizeof c.rack, "%s", r->rack);
    snprintf(c.address, sizeof c.address, "%s", r->endpoint);
    c.cpus_milli = (uint32_t)(r->cpu * 1000.0 + 0.5);
    c.mem_mb = (uint32_t)r->mem_mb;
    c.boot_id = r->boot_id;
    rmserver__write(s, sock, peer, peer_len, m, &c, r->key, NULL);
}

/* Where a job's JM runs (issue 14), when it fits the ledger: a longer path or host is not kept
 * (the job is then not restarted by the RM). */
static void rmserver__where(struct ledger_cmd *c, const char *dir, const char *host, uint32_t pid)
{
    if (dir != NULL && dir[0] == '/' && strlen(dir) < LEDGER_JOB_DIR_MAX) {
        c->text2 = dir;
        c->text2_len = (uint32_t)strlen(dir);
    }
    if (host != NULL && strlen(host) < LEDGER_NAME_MAX)
        snprintf(c->address, sizeof c->address, "%s", host);
    c->boot_id = pid;
}

static void rmserver__job_register(struct rmserver *s, zuv_sock_t *sock, const void *peer,
                                   size_t peer_len, const proto_msg_t *m)
{
    const proto_job_register_t *r = &m->job_register;
    if (!rmserver__fits(r->name, LEDGER_NAME_MAX) || r->name[0] == '\0' ||
        !rmserver__fits(r->virtual_cluster, LEDGER_NAME_MAX) ||
        r->deadline_ms > (uint64_t)LEDGER_LEASE_MAX_MS * 3650) {
        rmserver__reject(s, sock, peer, peer_len, m, RMSERVER_REJ_INVALID, ERR_RANGE,
                         "job name or virtual cluster (< 64 bytes) or deadline out of range");
        return;
    }
    if (!s->caller.admin &&
        !ledger_vc_granted(fsm_ledger(s->fsm), r->virtual_cluster, s->caller.user)) {
        char why[256];
        snprintf(why, sizeof why, "%s is not granted virtual cluster %s", s->caller.user,
                 r->virtual_cluster);
        rmserver__deny(s, sock, peer, peer_len, m, RMSERVER_DENY_SUBMIT, "submit", r->name, why);
        return;
    }
    if (!s->caller.admin) {
        /* tasks run as their submitter (the PNs check again): a user without a Unix account,
           or root, is refused here already (the RM's hosts share the users' directory) */
        struct passwd *pw = getpwnam(s->caller.user);
        if (pw == NULL || pw->pw_uid == 0) {
            char why[256];
            snprintf(why, sizeof why, "%s %s", s->caller.user,
                     pw == NULL ? "has no Unix account to run tasks as"
                                : "is root: tasks never run as root");
            rmserver__deny(s, sock, peer, peer_len, m, RMSERVER_DENY_SUBMIT, "submit", r->name,
                           why);
            return;
        }
    }
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_JOB_REGISTER);
    c.key = rmserver_key_hash(r->key);
    snprintf(c.name, sizeof c.name, "%s", r->name);
    snprintf(c.vc, sizeof c.vc, "%s", r->virtual_cluster);
    int64_t base = r->submit_ms > 0 ? r->submit_ms : clock_wall_ms();
    c.deadline_ms = r->deadline_ms != 0 ? base + (int64_t)r->deadline_ms : 0;
    c.lease_ms = s->cfg->lease_ms;
    c.flags = (uint8_t)((r->best_effort ? LEDGER_JOB_BEST_EFFORT : 0) |
                        (r->has_profile ? LEDGER_JOB_HAS_PROFILE : 0) |
                        (r->has_alpha ? LEDGER_JOB_HAS_ALPHA : 0));
    c.alpha_milli = r->has_alpha ? r->alpha_milli : 0;
    c.spread_milli = r->spread_milli; /* the ledger refuses one outside 1000..20000 */
    c.weight_milli = (uint32_t)(r->weight * 1000.0 + 0.5);
    c.work_ms = r->work_ms;
    c.work_sd_ms = r->work_sd_ms;
    c.path_ms = r->path_ms;
    c.path_sd_ms = r->path_sd_ms;
    c.width = r->width;
    c.k_milli = (uint32_t)(s->cfg->admission_sd * 1000.0 + 0.5);
    if (r->recurring != NULL && r->recurring[0] != '\0') {
        if (!rmserver__fits(r->recurring, LEDGER_NAME_MAX) || r->period > (uint64_t)INT64_MAX) {
            rmserver__reject(s, sock, peer, peer_len, m, RMSERVER_REJ_INVALID, ERR_RANGE,
                             "recurring job name (< 64 bytes) or period out of range");
            return;
        }
        snprintf(c.recurring, sizeof c.recurring, "%s", r->recurring);
        c.period = (int64_t)r->period;
    }
    /* the files it reads, newline-separated (a path with a newline cannot match anything) */
    char inputs[LEDGER_FILES_MAX];
    size_t used = 0;
    for (uint32_t i = 0; i < r->ninputs; i++) {
        size_t n = strlen(r->inputs[i]);
        if (n == 0 || strchr(r->inputs[i], '\n') != NULL || used + n + 1 > sizeof inputs)
            continue;
        memcpy(inputs + used, r->inputs[i], n);
        used += n;
        inputs[used++] = '\n';
    }
    c.text = inputs;
    c.text_len = (uint32_t)(used > 0 ? used - 1 : 0);
    rmserver__where(&c, r->job_dir, r->host, r->jm_pid);
    /* admission measures the deadline from the entry's time: the submitter's clock may lag */
    rmserver__write(s, sock, peer, peer_len, m, &c, r->key, NULL);
}

/* The task outcomes per node a renewal carries (Apollo §3.3: Psucc): one internal NODE_OUTCOME
 * entry per node, keyed by the renewal's key and the node, so a retried renewal counts them
 * once. They go into the log before the renewal itself: its ack means they are in. A node the
 * ledger does not know is skipped when applied (ERR_NOTFOUND, nobody to tell). */
static int rmserver__outcomes(struct rmserver *s, const proto_lease_renew_t *r)
{
    for (uint32_t i = 0; i < r->noutcomes; i++) {
        const proto_outcome_t *o = &r->outcomes[i];
        if (!rmserver__fits(o->node, LEDGER_NAME_MAX) || (o->ok == 0 && o->failed == 0))
            continue;
        struct ledger_cmd c;
        ledger_cmd_init(&c, LEDGER_CMD_NODE_OUTCOME);
        snprintf(c.name, sizeof c.name, "%s", o->node);
        c.ok = o->ok;
        c.failed = o->failed;
        char k[PROTO_MAX_KEY + LEDGER_NAME_MAX + 8];
        snprintf(k, sizeof k, "%s/o/%s", r->key, o->node);
        c.key = rmserver_key_hash(k);
        if (rmserver_submit(s, &c, NULL) != 0)
            return ERR_FULL; /* the renewal is refused too: its retry brings them again */
    }
    return 0;
}

static void rmserver__job_write(struct rmserver *s, zuv_sock_t *sock, const void *peer,
                                size_t peer_len, const proto_msg_t *m)
{
    struct ledger_cmd c;
    uint32_t sky[PROTO_MAX_SKYLINE < LEDGER_VALS_MAX ? PROTO_MAX_SKYLINE : LEDGER_VALS_MAX];
    const char *key = NULL, *job = NULL;
    switch (m->type) {
    case PROTO_TOKEN_REQUEST:
        ledger_cmd_init(&c, LEDGER_CMD_TOKEN_REQUEST);
        key = m->token_request.key;
        job = m->token_request.job_id;
        c.count = m->token_request.tokens;
        c.raw = m->token_request.raw;
        break;
    case PROTO_TOKEN_RELEASE:
        ledger_cmd_init(&c, LEDGER_CMD_TOKEN_RELEASE);
        key = m->token_release.key;
        job = m->token_release.job_id;
        c.count = m->token_release.all ? UINT32_MAX : m->token_release.tokens;
        break;
    default: {
        const proto_lease_renew_t *r = &m->lease_renew;
        key = r->key;
        job = r->job_id;
        if (r->state == PROTO_JOB_SUCCEEDED || r->state == PROTO_JOB_FAILED ||
            r->state == PROTO_JOB_CANCELLED) {
            /* the JM's last word: the job ended, its tokens go back */
            ledger_cmd_init(&c, LEDGER_CMD_JOB_END);
            c.state = r->state == PROTO_JOB_SUCCEEDED ? LEDGER_JOB_DONE
                      : r->state == PROTO_JOB_FAILED  ? LEDGER_JOB_FAILED
                                                      : LEDGER_JOB_CANCELLED;
            /* its usage for the history and the recurring job's skyline (Morpheus §5) */
            c.started_ms = r->started_ms;
            c.token_ms = r->token_ms;
            if (r->nskyline > 0 && r->skyline_step_ms > 0 && r->nskyline <= LEDGER_VALS_MAX) {
                for (uint32_t i = 0; i < r->nskyline; i++)
                    sky[i] = r->skyline[i].milli;
                c.vals = sky;
                c.nvals = r->nskyline;
                c.step_ms = r->skyline_step_ms;
            }
        } else {
            ledger_cmd_init(&c, LEDGER_CMD_LEASE_RENEW);
            c.lease_ms = r->lease_ms; /* 0: keep the job's lease */
            if (r->tasks_total > 0)
                c.done_permille = (uint32_t)((uint64_t)(r->tasks_succeeded > r->tasks_total
                                                            ? r->tasks_total
                                                            : r->tasks_succeeded) *
                                             1000 / r->tasks_total);
            c.eta_ms = r->eta_ms > (uint64_t)INT64_MAX / 2 ? 0 : (int64_t)r->eta_ms;
            c.eta_p95_ms = r->eta_p95_ms > (uint64_t)INT64_MAX / 2 ? 0 : (int64_t)r->eta_p95_ms;
            c.count = r->demand;
            rmserver__where(&c, r->job_dir, r->host, r->jm_pid);
            c.epoch = r->epoch;
        }
        break;
    }
    }
    if (rmserver__parse_job(job, &c.job) != 0) {
        rmserver__reject(s, sock, peer, peer_len, m, RMSERVER_REJ_INVALID, ERR_INVAL,
                         "job_id is not a job id (j- and 12 hex digits)");
        return;
    }
    if (!rmserver__owns(s, c.job)) {
        char why[256];
        rmserver__owner_text(s, c.job, "act for", why, sizeof why);
        rmserver__deny(s, sock, peer, peer_len, m, RMSERVER_DENY_JOB, proto_type_name(m->type), job,
                       why);
        return;
    }
    c.key = rmserver_key_hash(key);
    if (m->type == PROTO_LEASE_RENEW) /* where its JM's /metrics is (rm_metrics.h) */
        rm_metrics_note_job(s, c.job, m->lease_renew.metrics_url);
    if (m->type == PROTO_LEASE_RENEW && s->role == RAFT_LEADER && key != NULL && key[0] != '\0' &&
        rmserver__outcomes(s, &m->lease_renew) != 0) {
        rmserver__reject(s, sock, peer, peer_len, m, RMSERVER_REJ_BUSY, ERR_FULL,
                         "too many requests pending, retry later");
        return;
    }
    rmserver__write(s, sock, peer, peer_len, m, &c, key, NULL);
}

static void rmserver__job_resume(struct rmserver *s, zuv_sock_t *sock, const void *peer,
                                 size_t peer_len, const proto_msg_t *m)
{
    const proto_job_resume_t *r = &m->job_resume;
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_JOB_RESUME);
    if (rmserver__parse_job(r->job_id, &c.job) != 0) {
        rmserver__reject(s, sock, peer, peer_len, m, RMSERVER_REJ_INVALID, ERR_INVAL,
                         "job_id is not a job id (j- and 12 hex digits)");
        return;
    }
    if (!rmserver__owns(s, c.job)) {
        char why[256];
        rmserver__owner_text(s, c.job, "resume", why, sizeof why);
        rmserver__deny(s, sock, peer, peer_len, m, RMSERVER_DENY_JOB, "job_resume", r->job_id, why);
        return;
    }
    c.key = rmserver_key_hash(r->key);
    c.count = (uint32_t)s->cfg->restart_max;
    rmserver__where(&c, r->job_dir, r->host, r->jm_pid);
    rmserver__write(s, sock, peer, peer_len, m, &c, r->key, NULL);
}

/* Issue 14: the leader tells a PN the state of the jobs it has live tasks of, so it can reap
 * the tasks of jobs that ended (or whose JM is gone) after its grace periods. */
static void rmserver__heartbeat_ack(struct rmserver *s, zuv_sock_t *sock, const void *peer,
                                    size_t peer_len, const proto_heartbeat_t *hb)
{
    ledger_t *l = fsm_ledger(s->fsm);
    proto_job_info_t *jobs = mem_calloc(hb->njobs, sizeof *jobs);
    if (jobs == NULL)
        return;
    for (uint32_t i = 0; i < hb->njobs; i++) {
        uint64_t id = 0;
        jobs[i].job_id = hb->jobs[i];
        const struct ledger_job *j =
            rmserver__parse_job(hb->jobs[i], &id) == 0 ? ledger_job_find(l, id) : NULL;
        jobs[i].state = j != NULL ? j->state : 0;
        jobs[i].epoch = j != NULL ? j->epoch : 0;
    }
    proto_msg_t a;
    proto_msg_init(&a, PROTO_HEARTBEAT_ACK);
    a.heartbeat_ack.jobs = jobs;
    a.heartbeat_ack.njobs = hb->njobs;
    a.heartbeat_ack.rm_id = s->id;
    rmserver_send(s, sock, peer, peer_len, &a);
    mem_free(jobs);
}

static void rmserver__heartbeat(struct rmserver *s, zuv_sock_t *sock, const void *peer,
                                size_t peer_len, const proto_msg_t *m)
{
    const proto_heartbeat_t *hb = &m->heartbeat;
    if (!s->caller.admin) {
        rmserver__deny(s, sock, peer, peer_len, m, RMSERVER_DENY_NODE, "heartbeat", hb->name,
                       "only the cluster's identity sends heartbeats");
        return;
    }
    s->heartbeats++;
    const struct ledger_node *n = ledger_node_find(fsm_ledger(s->fsm), hb->name);
    if (n == NULL || n->boot_id != hb->boot_id) {
        /* not registered (or registered by an earlier boot): the PN registers again */
        s->heartbeats_unregistered++;
        rmserver_send_error(s, sock, peer, peer_len, m->req_id, PROTO_HEARTBEAT, ERR_NOTFOUND,
                            "node not registered with this boot id");
        return;
    }
    int rc = rmview_ingest(s->view, hb, (int64_t)clock_mono_ms());
    rm_metrics_note_node(s, hb->name, hb->metrics_url); /* for `paddock nodes` (rm_metrics.h) */
    if (rc == RMVIEW_STALE)
        s->heartbeats_stale++;
    else if (rc < 0)
        rmserver__reject(s, sock, peer, peer_len, m, RMSERVER_REJ_INVALID, rc,
                         "heartbeat fields too long");
    if (hb->njobs > 0 && s->ready)
        rmserver__heartbeat_ack(s, sock, peer, peer_len, hb);
}

/* Decodes [peer, body]; returns false (after refusing and counting) when unusable. */
static bool rmserver__decode(struct rmserver *s, zuv_sock_t *zs, zmsg_t *msg, proto_stats_t *stats,
                             proto_msg_t *m, zframe_t **peer)
{
    s->requests++;
    if (zmsg_size(msg) != 2) {
        s->rejected[RMSERVER_REJ_FRAMES]++;
        *peer = zmsg_first(msg);
        if (*peer != NULL && zmsg_size(msg) > 1)
            rmserver_send_error(s, zs, zframe_data(*peer), zframe_size(*peer), 0, PROTO_TYPE_NONE,
                                ERR_PARSE, "expected one frame per message");
        return false;
    }
    *peer = zmsg_first(msg);
    zframe_t *body = zmsg_next(msg);
    char err[256];
    int rc = proto_decode(zframe_data(body), zframe_size(body), m, stats, err, sizeof err);
    if (rc != 0) {
        s->rejected[RMSERVER_REJ_DECODE]++;
        log_debug("undecodable request: %s", err);
        rmserver_send_error(s, zs, zframe_data(*peer), zframe_size(*peer), 0, PROTO_TYPE_NONE, rc,
                            err);
        return false;
    }
    return true;
}

void rmserver_on_api(zuv_sock_t *zs, zmsg_t **msg, void *arg)
{
    struct rmserver *s = arg;
    proto_msg_t m;
    zframe_t *peer = NULL;
    if (!rmserver__decode(s, zs, *msg, &s->api_stats, &m, &peer))
        return;
    const void *p = zframe_data(peer);
    size_t plen = zframe_size(peer);
    rmserver__identify(s, zmsg_last(*msg));
    if (!s->caller.known) {
        rmserver__deny(s, zs, p, plen, &m, RMSERVER_DENY_UNKNOWN_KEY, "request", "",
                       "the key is no longer on the allow-list");
        proto_msg_close(&m);
        return;
    }
    switch (m.type) {
    case PROTO_HEARTBEAT:
        rmserver__heartbeat(s, zs, p, plen, &m);
        break;
    case PROTO_NODE_REGISTER:
        rmserver__node_register(s, zs, p, plen, &m);
        break;
    case PROTO_JOB_REGISTER:
        rmserver__job_register(s, zs, p, plen, &m);
        break;
    case PROTO_JOB_RESUME:
        rmserver__job_resume(s, zs, p, plen, &m);
        break;
    case PROTO_TOKEN_REQUEST:
    case PROTO_TOKEN_RELEASE:
    case PROTO_LEASE_RENEW:
        rmserver__job_write(s, zs, p, plen, &m);
        break;
    case PROTO_ADMIN_QUERY:
        rmserver__admin(s, zs, p, plen, &m);
        break;
    default:
        rmserver__reject(s, zs, p, plen, &m, RMSERVER_REJ_TYPE, ERR_UNKNOWN_TYPE,
                         "the RM does not serve this message type");
        break;
    }
    proto_msg_close(&m);
}

void rmserver_on_hb(zuv_sock_t *zs, zmsg_t **msg, void *arg)
{
    struct rmserver *s = arg;
    proto_msg_t m;
    zframe_t *peer = NULL;
    if (!rmserver__decode(s, zs, *msg, &s->hb_stats, &m, &peer))
        return;
    rmserver__identify(s, zmsg_last(*msg));
    if (m.type == PROTO_HEARTBEAT)
        rmserver__heartbeat(s, zs, zframe_data(peer), zframe_size(peer), &m);
    else
        rmserver__reject(s, zs, zframe_data(peer), zframe_size(peer), &m, RMSERVER_REJ_TYPE,
                         ERR_UNKNOWN_TYPE, "the heartbeat socket takes heartbeats only");
    proto_msg_close(&m);
}
