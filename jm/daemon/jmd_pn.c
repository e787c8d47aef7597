/* jmd_pn.c - the JM's links to process nodes: one DEALER per PN it uses (endpoint from the view),
 * TASK_CREATE / TASK_CANCEL / TASK_UPGRADE out, TASK_STATUS (and ERROR for a refused create) in.
 * The PN answers over its ROUTER to the DEALER that spoke for the job (docs/pn.md). */
#include <string.h>

#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "jm/daemon/jmd.h"
#include "pn/oppweight.h"

/* req_id of a create: the task and its attempt, so an ERROR names what it refuses. */
static uint64_t jmd_pn__req(size_t task, uint32_t attempt)
{
    return ((uint64_t)attempt << 40) | (uint64_t)task;
}

static void jmd_pn__on_msg(zuv_sock_t *zs, zmsg_t **msg, void *arg)
{
    jmd_t *j = arg;
    long link = -1;
    for (size_t i = 0; i < j->nlinks; i++)
        if (j->links[i].sock == zs) {
            j->links[i].answered = 1;
            link = (long)i;
        }
    zframe_t *f = zmsg_last(*msg);
    if (!f || j->fenced)
        return;
    proto_msg_t m;
    char why[160] = "";
    int rc = proto_decode(zframe_data(f), zframe_size(f), &m, NULL, why, sizeof why);
    if (rc != 0) {
        /* dropped and counted (state.json "pn_dropped"), logged the first time and every 100th */
        if (j->pn_dropped++ % 100 == 0)
            log_warn("dropped an undecodable message from %s (%zu so far): %s",
                     link >= 0 ? j->links[link].endpoint : "a node", j->pn_dropped,
                     why[0] ? why : err_text(rc));
        return;
    }
    if (m.type == PROTO_ERROR && m.error.code == ERR_FENCED) {
        /* Any command of ours refused for an older epoch: a newer JM holds the job. */
        jmd_fenced(j, 0);
    } else if ((m.type == PROTO_TASK_STATUS || m.type == PROTO_TASK_STATUS_BATCH) && j->resync) {
        /* paused: not acted on until the RM says the job is still ours; the nodes are asked
           again then (TASK_QUERY), so nothing is lost */
    } else if (m.type == PROTO_TASK_STATUS && m.task_status.job_id &&
               strcmp(m.task_status.job_id, j->o.job_id) == 0) {
        jmd_sched_status(j, &m.task_status, link);
    } else if (m.type == PROTO_TASK_STATUS_BATCH) {
        /* a PN's statuses of one loop pass: each as if it came alone, in order (one may end
           the job, or fence it: the rest are then not acted on, as single messages would not
           be read) */
        j->pn_batches++;
        for (uint32_t i = 0; i < m.task_status_batch.nstatuses && !j->fenced; i++) {
            const proto_task_status_t *s = &m.task_status_batch.statuses[i];
            if (s->job_id && strcmp(s->job_id, j->o.job_id) == 0)
                jmd_sched_status(j, s, link);
        }
    } else if (m.type == PROTO_TASK_QUERY_REPLY && m.task_query_reply.job_id &&
               strcmp(m.task_query_reply.job_id, j->o.job_id) == 0 && link >= 0) {
        jmd_sched_query_done(j, (size_t)link);
    } else if (m.type == PROTO_ERROR && m.error.in_reply_to == PROTO_TASK_QUERY && link >= 0) {
        /* A PN that cannot answer (an older one): it remembers nothing we can adopt. */
        log_warn("node link %ld refused TASK_QUERY: %s", link,
                 m.error.text ? m.error.text : err_text(m.error.code));
        jmd_sched_query_done(j, (size_t)link);
    } else if (m.type == PROTO_ERROR && m.error.in_reply_to == PROTO_TASK_CREATE) {
        size_t task;
        uint32_t attempt;
        jmd_pn_req_split(m.req_id, &task, &attempt);
        if (!jmd_spec_refused(j, task, attempt, m.error.text ? m.error.text : "refused"))
            jmd_sched_create_refused(j, m.req_id, m.error.code,
                                     m.error.text ? m.error.text : "refused");
    }
    proto_msg_close(&m);
}

/* The link to view node `node`, (re)connected when the view's endpoint changed. */
static struct jmd_node_link *jmd_pn__link(jmd_t *j, uint32_t node)
{
    const struct view_node *vn = view_node(j->view, node);
    if (!vn || !vn->endpoint[0])
        return NULL;
    if (node >= j->nlinks) {
        size_t n = view_count(j->view);
        struct jmd_node_link *l = mem_reallocarray(j->links, n, sizeof *l);
        if (!l)
            return NULL;
        memset(l + j->nlinks, 0, (n - j->nlinks) * sizeof *l);
        j->links = l;
        j->nlinks = n;
    }
    struct jmd_node_link *l = &j->links[node];
    if (l->sock && strcmp(l->endpoint, vn->endpoint) == 0)
        return l;
    zuv_sock_close(&l->sock);
    char msg[256];
    zsock_t *z = zuv_socket(ZMQ_DEALER, PROTO_MAX_MSG_BYTES);
    if (!z)
        return NULL;
    int rc = curve_apply(z, j->curve, CURVE_CLIENT, NULL, msg, sizeof msg);
    if (!rc && zsock_connect(z, "%s", vn->endpoint) != 0)
        rc = err_fmt(msg, sizeof msg, ERR_CONFIG, "cannot connect to %s", vn->endpoint);
    if (!rc)
        rc = zuv_sock_new(&l->sock, &j->loop, &z, NULL, jmd_pn__on_msg, j);
    if (rc) {
        zsock_destroy(&z);
        log_warn("node %s: %s", vn->name, msg);
        return NULL;
    }
    zuv_kick(l->sock);
    snprintf(l->endpoint, sizeof l->endpoint, "%s", vn->endpoint);
    l->connect_mono = jmd_now(j);
    l->answered = 0;
    log_info("connected to %s at %s", vn->name, vn->endpoint);
    return l;
}

/* Encodes first (a message the protocol cannot carry is the task's fault, not the node's: err
 * says why), then sends over the node's link. */
static int jmd_pn__send(jmd_t *j, uint32_t node, const proto_msg_t *m, char *err, size_t cap)
{
    proto_buf_t b;
    proto_buf_init(&b);
    int rc = proto_encode(m, &b, err, cap);
    if (rc == 0) {
        struct jmd_node_link *l = jmd_pn__link(j, node);
        rc = l ? zuv_send_bytes(l->sock, NULL, 0, b.data, b.len) : ERR_UNAVAILABLE;
        if (rc && cap > 0)
            snprintf(err, cap, "node link: %s", err_text(rc));
    } else {
        log_error("cannot encode %s: %s", proto_type_name(m->type), err);
    }
    proto_buf_close(&b);
    return rc;
}

/* A job whose conservative ETA leaves less than a fifth of its deadline as slack cannot wait
 * for another job's downgraded tasks to finish their grace: its regular tasks say so, and the PN
 * preempts those for them (paddock-sim arbiter chose the fifth: docs/arbiter.md). */
static bool jmd_pn__urgent(const jmd_t *j)
{
    return j->has_deadline && j->eta_p95_s > 0 && j->eta_p95_s >= 0.8 * j->deadline_s;
}

/* The JM's refined R (jm/estimator.h: the stage's observed CPU time scaled by input, and the
   I/O at the placement), so the PN's queue simulation uses its best estimate. */
static uint64_t jmd_pn__r_ms(jmd_t *j, size_t task, uint32_t attempt)
{
    double r = estimator_cpu_s(j->core.est, place_task(j->core.place, task));
    if (attempt == j->tasks[task].attempt && j->tasks[task].est.io_s > 0)
        r += j->tasks[task].est.io_s;
    if (!(r > 0) || r > SPEC_MAX_RUNTIME_S)
        r = j->spec->tasks[task].runtime_s;
    return (uint64_t)(r * 1000.0 + 0.5);
}

size_t jmd_pn_estimates(jmd_t *j)
{
    size_t seen = 0;
    for (size_t s = 0; s < j->spec->nstages; s++)
        seen += estimator_observed(j->core.est, s);
    if (seen == j->est_observed)
        return 0;
    j->est_observed = seen;
    size_t sent = 0;
    const uint32_t *fl;
    size_t nf = attempt_inflight(j->core.att, &fl); /* not every task: a look per new outcome */
    for (size_t k = 0; k < nf; k++) {
        size_t i = fl[k];
        struct jmd_task *t = &j->tasks[i];
        if (!t->inflight || t->node < 0 || t->attempt == 0 || t->sent_r_ms == 0)
            continue;
        uint64_t r = jmd_pn__r_ms(j, i, t->attempt);
        uint64_t d = r > t->sent_r_ms ? r - t->sent_r_ms : t->sent_r_ms - r;
        if (d < JMD_PN_ESTIMATE_MIN_MS || (double)d < JMD_PN_ESTIMATE_FRAC * (double)t->sent_r_ms)
            continue;
        proto_msg_t m;
        proto_msg_init(&m, PROTO_TASK_ESTIMATE);
        m.task_estimate.job_id = (char *)j->o.job_id;
        m.task_estimate.task_id = j->spec->tasks[i].id;
        m.task_estimate.attempt = t->attempt;
        m.task_estimate.runtime_ms = r;
        m.task_estimate.epoch = j->epoch;
        char err[256];
        if (jmd_pn__send(j, (uint32_t)t->node, &m, err, sizeof err) == 0) {
            log_debug("R of %s: %.1f s -> %.1f s, sent to its node", j->spec->tasks[i].id,
                      (double)t->sent_r_ms / 1000.0, (double)r / 1000.0);
            t->sent_r_ms = r;
            sent++;
        }
    }
    return sent;
}

int jmd_pn_create(jmd_t *j, size_t task, uint32_t node, char *err, size_t cap)
{
    return jmd_pn_create_attempt(j, task, j->tasks[task].attempt, j->tasks[task].cls, node, err,
                                 cap);
}

int jmd_pn_create_attempt(jmd_t *j, size_t task, uint32_t attempt, int cls, uint32_t node,
                          char *err, size_t cap)
{
    const struct spec_task *t = &j->spec->tasks[task];
    proto_kv_t env[SPEC_MAX_ENV];
    proto_file_t files[SPEC_MAX_FILES];
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_CREATE);
    m.req_id = jmd_pn__req(task, attempt);
    proto_task_create_t *c = &m.task_create;
    c->job_id = (char *)j->o.job_id;
    c->task_id = t->id;
    c->attempt = attempt;
    c->task_class = cls == DISPATCH_OPPORTUNISTIC ? PROTO_CLASS_OPPORTUNISTIC : PROTO_CLASS_REGULAR;
    /* Apollo §3.5: spare capacity "shared fairly among jobs, proportionally to jobs' token
       allocation". The PN draws a job by the mean weight of its queued opportunistic tasks
       (pn/oppweight.h), so each task carries its job's tokens: a job granted 3 tokens gets
       three times the picks of a job granted 1 on a node where both wait, whatever their task
       counts. Regular tasks carry it too, for when they are downgraded. */
    c->weight = oppweight_job_weight(j->granted, 1.0);
    c->urgent = c->task_class == PROTO_CLASS_REGULAR && jmd_pn__urgent(j);
    /* its bottom level: the PN starts this job's queued tasks highest first (pn/queue.h) */
    double bl = j->core.task_bl ? j->core.task_bl[task] : 0;
    c->priority = bl > 0 && bl <= PROTO_MAX_PRIORITY ? bl : bl > 0 ? PROTO_MAX_PRIORITY : 0;
    c->stage = j->spec->stages[t->stage].name;
    c->argv = t->cmd;
    c->argc = (uint32_t)t->ncmd;
    for (size_t i = 0; i < t->nenv && i < SPEC_MAX_ENV; i++) {
        env[i].key = t->env[i].key;
        env[i].value = t->env[i].value;
    }
    c->env = env;
    c->nenv = (uint32_t)t->nenv;
    for (size_t i = 0; i < t->nfiles && i < SPEC_MAX_FILES; i++) {
        files[i].path = t->files[i].path;
        files[i].bytes = t->files[i].bytes;
    }
    c->files = files;
    c->nfiles = (uint32_t)t->nfiles;
    c->cpu = t->cpu;
    c->mem_mb = t->mem_mb;
    c->runtime_ms = jmd_pn__r_ms(j, task, attempt);
    if (attempt == j->tasks[task].attempt)
        j->tasks[task].sent_r_ms = c->runtime_ms;
    c->epoch = j->epoch;
    c->batch_statuses = true; /* jmd_pn__on_msg takes TASK_STATUS_BATCH */
    return jmd_pn__send(j, node, &m, err, cap);
}

void jmd_pn_cancel_attempt(jmd_t *j, size_t task, uint32_t attempt, uint32_t node, const char *why)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_CANCEL);
    m.task_cancel.job_id = (char *)j->o.job_id;
    m.task_cancel.task_id = j->spec->tasks[task].id;
    m.task_cancel.attempt = attempt;
    m.task_cancel.reason = (char *)why;
    m.task_cancel.epoch = j->epoch;
    char err[256];
    (void)jmd_pn__send(j, node, &m, err, sizeof err);
}

int jmd_pn_query(jmd_t *j, uint32_t node)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_QUERY);
    m.task_query.job_id = (char *)j->o.job_id;
    m.task_query.epoch = j->epoch;
    char err[256];
    return jmd_pn__send(j, node, &m, err, sizeof err);
}

void jmd_pn_upgrade(jmd_t *j, size_t task, uint32_t node)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_UPGRADE);
    m.task_upgrade.job_id = (char *)j->o.job_id;
    m.task_upgrade.task_id = j->spec->tasks[task].id;
    m.task_upgrade.attempt = j->tasks[task].attempt;
    m.task_upgrade.epoch = j->epoch;
    char err[256];
    (void)jmd_pn__send(j, node, &m, err, sizeof err);
}

void jmd_pn_downgrade(jmd_t *j, size_t task, uint32_t node, uint64_t grace_ms)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_UPGRADE);
    m.task_upgrade.job_id = (char *)j->o.job_id;
    m.task_upgrade.task_id = j->spec->tasks[task].id;
    m.task_upgrade.attempt = j->tasks[task].attempt;
    m.task_upgrade.task_class = PROTO_CLASS_OPPORTUNISTIC;
    m.task_upgrade.grace_ms = grace_ms;
    m.task_upgrade.epoch = j->epoch;
    char err[256];
    (void)jmd_pn__send(j, node, &m, err, sizeof err);
}

void jmd_pn_check(jmd_t *j)
{
    (void)jmd_pn_estimates(j);
    int64_t now = jmd_now(j);
    for (size_t n = 0; n < j->nlinks; n++) {
        struct jmd_node_link *l = &j->links[n];
        if (!l->sock || l->answered || l->inflight == 0 || now - l->connect_mono < 1000 ||
            l->reconnects >= 5)
            continue;
        const struct view_node *vn = view_node(j->view, (uint32_t)n);
        log_warn("no answer from %s on a new link: connecting again", vn ? vn->name : "?");
        zuv_sock_close(&l->sock);
        l->reconnects++;
        for (size_t t = 0; t < j->spec->ntasks; t++)
            if (j->tasks[t].inflight && j->tasks[t].node == (int)n) {
                char err[256];
                (void)jmd_pn_create(j, t, (uint32_t)n, err, sizeof err);
            }
        jmd_spec_resend(j, (uint32_t)n);
    }
}

void jmd_pn_close(jmd_t *j)
{
    for (size_t i = 0; i < j->nlinks; i++)
        zuv_sock_close(&j->links[i].sock);
    mem_free(j->links);
    j->links = NULL;
    j->nlinks = 0;
}

void jmd_pn_req_split(uint64_t req_id, size_t *task, uint32_t *attempt)
{
    *task = (size_t)(req_id & ((1ull << 40) - 1));
    *attempt = (uint32_t)(req_id >> 40);
}
