/* node_handle.c - the PN's requests: TASK_CREATE, TASK_CANCEL, TASK_DOWNGRADE, TASK_UPGRADE,
 * TASK_ESTIMATE and TASK_QUERY decoded and answered (node_handle), with the job records and
 * epoch fences they check and the downgrade grace and queue swaps and trades they start. */
#include "pn/node.h"

#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "pn/exec.h"
#include "pn/fence.h"
#include "pn/node_internal.h"

/* Job records a TASK_QUERY may create for jobs without tasks here (each kept for retention). */
#define NODE__MAX_JOBS 100000

static void node__reply_error(node_t *n, const void *peer, size_t plen, uint64_t req_id,
                              proto_type_t in_reply_to, int code, const char *text)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_ERROR);
    m.req_id = req_id;
    m.error.code = code;
    m.error.text = (char *)text;
    m.error.in_reply_to = in_reply_to;
    node__statuses_flush(n); /* statuses made before it go before it */
    if (proto_encode(&m, &n->buf, NULL, 0) == 0)
        n->send(n->send_arg, peer, plen, NULL, n->buf.data, n->buf.len);
}

/* Fencing: 0 when a request with `epoch` may act on the job; otherwise ERR_FENCED, answered
 * with ERROR and counted. Admission does not raise the epoch: node__job does. */
static int node__fenced(node_t *n, const char *job_id, uint32_t epoch, const void *peer,
                        size_t plen, uint64_t req_id, proto_type_t type)
{
    node__job_t *j = map_get(&n->jobs, job_id);
    if (!j || fence_check(j->epoch, epoch) == 0)
        return 0;
    n->c.refused_fenced++;
    if (type == PROTO_TASK_CREATE)
        n->c.creates_refused[NODE_REFUSED_FENCED]++;
    char msg[PROTO_MAX_NAME + 96];
    snprintf(msg, sizeof msg, "job %s: epoch %u is older than %u", job_id, epoch, j->epoch);
    log_debug("refused %s: %s", proto_type_name(type), msg);
    node__reply_error(n, peer, plen, req_id, type, ERR_FENCED, msg);
    return ERR_FENCED;
}

void node__raise(node__job_t *j, uint32_t epoch, const char *by)
{
    uint32_t was = j->epoch;
    if (fence_admit(&j->epoch, epoch) == 1 && was > 0)
        log_info("job %s: epoch %u (was %u, from %s): older job managers are fenced", j->job_id,
                 epoch, was, by);
}

/* The job's reply address follows the latest peer speaking for it; a new peer gets the state
 * of every remembered task of the job (a JM that reconnected) unless resync is 0 (a query,
 * answered with every state anyway). A higher epoch raises the job's (the caller checked
 * node__fenced first). */
static node__job_t *node__job(node_t *n, const char *job_id, const void *peer, size_t plen,
                              uint64_t req_id, uint32_t epoch, int resync)
{
    node__job_t *j = map_get(&n->jobs, job_id);
    int changed = 0;
    if (!j) {
        j = mem_calloc(1, sizeof *j);
        if (!j || !(j->job_id = mem_strdup(job_id)) || map_put(&n->jobs, job_id, j, NULL)) {
            if (j)
                mem_free(j->job_id);
            mem_free(j);
            return NULL;
        }
        memcpy(j->user, n->caller.user, sizeof j->user);
    } else if (j->plen != plen || memcmp(j->peer, peer, plen) != 0) {
        changed = 1;
        if (n->sb_job == j) /* held statuses go where they were made for */
            node__statuses_flush(n);
    }
    if (plen > NODE__PEER_MAX)
        plen = NODE__PEER_MAX;
    memcpy(j->peer, peer, plen);
    j->plen = plen;
    j->req_id = req_id;
    j->touched_ms = clock_wall_ms();
    node__raise(j, epoch, "a job manager");
    uint64_t now = clock_mono_ms();
    if (resync && changed &&
        now - j->resync_ms >= 1000) { /* a JM alternating sockets cannot storm */
        j->resync_ms = now;
        size_t it = 0;
        void *v;
        while (map_next(&n->tasks, &it, NULL, NULL, &v)) {
            node__task_t *t = v;
            if (t->job == j)
                node__send_status(n, t);
        }
    }
    return j;
}

/* Statuses of the job go to `endpoint` from now on (NULL or empty: to the peer). */
static void node__job_reply(node_t *n, node__job_t *j, const char *endpoint)
{
    const char *reply = endpoint && endpoint[0] ? endpoint : NULL;
    if ((reply == NULL) != (j->reply == NULL) || (reply && strcmp(reply, j->reply) != 0)) {
        if (n->sb_job == j) /* held statuses go where they were made for */
            node__statuses_flush(n);
        char *r = reply ? mem_strdup(reply) : NULL;
        if (!reply || r) {
            mem_free(j->reply);
            j->reply = r;
        }
    }
}

static char *node__key(const char *job, const char *task, uint32_t attempt, size_t *len)
{
    char tail[16];
    int tl = snprintf(tail, sizeof tail, "%u", attempt);
    size_t jl = strlen(job), kl = strlen(task);
    char *k = mem_alloc(jl + kl + (size_t)tl + 3);
    if (!k)
        return NULL;
    memcpy(k, job, jl + 1);
    memcpy(k + jl + 1, task, kl + 1);
    memcpy(k + jl + kl + 2, tail, (size_t)tl + 1);
    *len = jl + kl + (size_t)tl + 2;
    return k;
}

static node__task_t *node__lookup(node_t *n, const char *job, const char *task, uint32_t attempt)
{
    size_t len;
    char *k = node__key(job, task, attempt, &len);
    node__task_t *t = k ? map_getn(&n->tasks, k, len) : NULL;
    mem_free(k);
    return t;
}

int node_task_dir(node_t *n, const char *job, const char *task, uint32_t attempt, const char **dir,
                  proto_task_state_t *state, uint32_t *found)
{
    uint32_t lo = attempt ? attempt : 1, hi = attempt ? attempt : PROTO_MAX_ATTEMPT;
    for (uint32_t a = hi; a >= lo; a--) { /* attempt 0: the newest remembered */
        node__task_t *t = node__lookup(n, job, task, a);
        if (t && !n->caller.admin && strcmp(t->user, n->caller.user) != 0)
            return ERR_DENIED; /* issue 27: a user reads their own tasks' output */
        if (t) {
            *dir = t->dir_lazy ? NULL : t->dir; /* NULL: nothing written yet */
            *state = t->state;
            *found = a;
            return 0;
        }
    }
    return ERR_NOTFOUND;
}

const char *node_tasks_dir(const node_t *n)
{
    return n->tasks_dir;
}

bool node_caller_admin(const node_t *n)
{
    return n->caller.admin != 0;
}

/* The queue's key of a job (pn/oppweight.h): FNV-1a of its id. */
static uint64_t node__job_key(const char *job_id)
{
    uint64_t h = 14695981039346656037ull;
    for (const unsigned char *p = (const unsigned char *)job_id; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h;
}

static void node__create(node_t *n, const void *peer, size_t plen, uint64_t req_id,
                         const proto_task_create_t *tc)
{
    if (node__fenced(n, tc->job_id, tc->epoch, peer, plen, req_id, PROTO_TASK_CREATE))
        return;
    node__job_t *j = node__job(n, tc->job_id, peer, plen, req_id, tc->epoch, 1);
    if (!j) {
        n->c.creates_refused[NODE_REFUSED_NO_MEMORY]++;
        node__reply_error(n, peer, plen, req_id, PROTO_TASK_CREATE, ERR_NOMEM, "out of memory");
        return;
    }
    node__job_reply(n, j, tc->reply_endpoint);
    j->batch = tc->batch_statuses;
    node__task_t *t = node__lookup(n, tc->job_id, tc->task_id, tc->attempt);
    if (t) { /* a retry of the same attempt: idempotent, answer with where it stands */
        t->req_id = req_id;
        node__send_status(n, t);
        return;
    }
    char msg[512];
    if (tc->cpu > n->cfg->cpus || tc->mem_mb > (n->cfg->memory >> 20)) {
        n->c.refused_other++;
        n->c.creates_refused[NODE_REFUSED_CAPACITY]++;
        snprintf(msg, sizeof msg, "task needs %.3g cores and %llu MiB; node has %.3g and %llu",
                 tc->cpu, (unsigned long long)tc->mem_mb, n->cfg->cpus,
                 (unsigned long long)(n->cfg->memory >> 20));
        node__reply_error(n, peer, plen, req_id, PROTO_TASK_CREATE, ERR_CAPACITY, msg);
        return;
    }
    uint64_t spec = 0; /* what the task will hold, bounded before anything is allocated */
    for (uint32_t i = 0; i < tc->argc; i++)
        spec += strlen(tc->argv[i]) + 1;
    for (uint32_t i = 0; i < tc->nenv; i++)
        spec += strlen(tc->env[i].key) + (tc->env[i].value ? strlen(tc->env[i].value) : 0) + 2;
    for (uint32_t i = 0; i < tc->nfiles; i++)
        spec += strlen(tc->files[i].path) + 1;
    spec += tc->cwd ? strlen(tc->cwd) : 0;
    if (n->spec_bytes + spec > n->cfg->max_spec_bytes) {
        n->c.refused_full++;
        n->c.creates_refused[NODE_REFUSED_SPEC_BYTES]++;
        snprintf(msg, sizeof msg, "queued task specs over %llu bytes",
                 (unsigned long long)n->cfg->max_spec_bytes);
        node__reply_error(n, peer, plen, req_id, PROTO_TASK_CREATE, ERR_FULL, msg);
        return;
    }
    t = mem_calloc(1, sizeof *t);
    if (!t || !(t->key = node__key(tc->job_id, tc->task_id, tc->attempt, &t->keylen)) ||
        !(t->task_id = mem_strdup(tc->task_id))) {
        node__task_free(t);
        n->c.creates_refused[NODE_REFUSED_NO_MEMORY]++;
        node__reply_error(n, peer, plen, req_id, PROTO_TASK_CREATE, ERR_NOMEM, "out of memory");
        return;
    }
    t->id = ++n->next_id;
    t->job = j;
    t->uid = n->caller.uid != (uid_t)-1 ? n->caller.uid : n->uid;
    t->gid = n->caller.uid != (uid_t)-1 ? n->caller.gid : n->gid;
    memcpy(t->user, n->caller.user, sizeof t->user);
    t->attempt = tc->attempt;
    t->req_id = req_id;
    t->klass = tc->task_class == PROTO_CLASS_OPPORTUNISTIC ? PROTO_CLASS_OPPORTUNISTIC
                                                           : PROTO_CLASS_REGULAR;
    t->cpu = tc->cpu;
    t->mem_mb = tc->mem_mb;
    t->exit_code = -1;
    queue_task_t qt = {.id = t->id,
                       .cpu = tc->cpu,
                       .mem_mb = (double)tc->mem_mb,
                       .est_s = (double)tc->runtime_ms / 1000.0,
                       .weight = tc->weight,
                       .job = node__job_key(tc->job_id),
                       .prio = tc->priority,
                       .klass = t->klass == PROTO_CLASS_OPPORTUNISTIC ? QUEUE_OPPORTUNISTIC
                                                                      : QUEUE_REGULAR};
    int rc = node__prepare(n, t, tc, msg, sizeof msg);
    if (!rc) {
        rc = queue_push(n->queue, &qt);
        if (rc == ERR_FULL) {
            n->c.refused_full++;
            n->c.creates_refused[NODE_REFUSED_QUEUE_FULL]++;
            queue_stats_t st;
            queue_stats(n->queue, &st);
            snprintf(msg, sizeof msg, "%s queue full (%zu tasks)",
                     qt.klass == QUEUE_REGULAR ? "regular" : "opportunistic",
                     qt.klass == QUEUE_REGULAR ? st.regular_queued : st.opportunistic_queued);
        } else if (rc) {
            n->c.refused_other++;
            n->c.creates_refused[rc == ERR_CAPACITY ? NODE_REFUSED_CAPACITY
                                                    : NODE_REFUSED_INVALID]++;
            snprintf(msg, sizeof msg, "not queued: %s", err_text(rc));
        }
    }
    uint64_t id = t->id;
    if (!rc && (map_putn(&n->tasks, t->key, t->keylen, t, NULL) ||
                map_putn(&n->byid, &id, sizeof id, t, NULL))) {
        map_deln(&n->tasks, t->key, t->keylen, NULL);
        queue_cancel(n->queue, t->id);
        rc = ERR_NOMEM;
        snprintf(msg, sizeof msg, "out of memory");
    }
    if (rc) {
        if (rc == ERR_NOMEM)
            n->c.creates_refused[NODE_REFUSED_NO_MEMORY]++;
        node__task_free(t);
        node__reply_error(n, peer, plen, req_id, PROTO_TASK_CREATE, rc, msg);
        return;
    }
    n->c.created++;
    j->ntasks++;
    j->nlive++;
    int graces_ended = 0;
    if (tc->urgent && t->klass == PROTO_CLASS_REGULAR && queue_end_graces(n->queue) > 0) {
        graces_ended = 1;
        n->c.graces_ended++;
        n->matrix_dirty = 1; /* the graced tasks no longer hold their room */
    }
    t->spec_bytes = spec;
    n->spec_bytes += spec;
    t->queued_at_ms = clock_wall_ms();
    t->created_mono_ns = clock_mono_ns();
    if (!node__dir_at_start(n, t)) {    /* else ready at once: its directory comes with its start */
        queue_hold(n->queue, t->id, 1); /* until its directory and files are ready */
        if (node__setup_start(n, t) != 0) {
            queue_cancel(n->queue, t->id);
            node__set_state(n, t, PROTO_TASK_FAILED, "set-up could not start: out of memory");
            node__finish(n, t);
            return;
        }
    }
    /* A regular task that will start as soon as its directory is ready (its expected wait is
       0) needs no QUEUED status: its RUNNING one, a moment later, answers the create. Held
       back, and sent after all should it not start in the scheduling pass after its set-up
       (node__send_unsent). One message and one queue walk fewer per task on an idle node. */
    uint64_t wait_ms = 1;
    if (!t->nfiles && t->klass == PROTO_CLASS_REGULAR && n->cfg->quiet_queued &&
        node__expected_wait(n, t, &wait_ms) == 0) {
        t->unsent = wait_ms == 0;
        n->wait_known = t->id; /* its QUEUED status, if sent now, says the same */
        n->wait_known_ms = wait_ms;
    }
    node__set_state_ex(n, t, t->nfiles ? PROTO_TASK_STAGING : PROTO_TASK_QUEUED, NULL, !t->unsent);
    n->wait_known = 0;
    if (t->dir_lazy && t->unsent) /* said after the next scheduling pass if it did not start */
        node__note_unsent(n, t);
    if (graces_ended) /* preempt them if regular work waits; the new task itself is held */
        node__schedule(n);
}

static void node__cancel(node_t *n, const void *peer, size_t plen, uint64_t req_id,
                         const proto_task_cancel_t *tc)
{
    if (node__fenced(n, tc->job_id, tc->epoch, peer, plen, req_id, PROTO_TASK_CANCEL))
        return;
    node__task_t *t = node__lookup(n, tc->job_id, tc->task_id, tc->attempt);
    if (!t) {
        node__reply_error(n, peer, plen, req_id, PROTO_TASK_CANCEL, ERR_NOTFOUND, "no such task");
        return;
    }
    if (!n->caller.admin && strcmp(t->user, n->caller.user) != 0) { /* issue 27 */
        n->c.rejected++;
        node__reply_error(n, peer, plen, req_id, PROTO_TASK_CANCEL, ERR_DENIED,
                          "permission denied: the task belongs to another user");
        return;
    }
    node__job(n, tc->job_id, peer, plen, req_id, tc->epoch, 1);
    t->req_id = req_id;
    if (proto_task_state_terminal(t->state)) {
        node__send_status(n, t);
        return;
    }
    char reason[PROTO_MAX_TEXT];
    snprintf(reason, sizeof reason, "cancelled%s%s", tc->reason ? ": " : "",
             tc->reason ? tc->reason : "");
    if (t->state == PROTO_TASK_RUNNING || t->spawning) { /* spawning: killed on its result */
        if (t->kill == NODE__KILL_NONE || t->kill == NODE__KILL_PREEMPT)
            t->kill = NODE__KILL_CANCEL;
        node__kill(n, t);
        return; /* reported when reaped */
    }
    queue_cancel(n->queue, t->id);
    node__set_state(n, t, PROTO_TASK_CANCELLED, reason);
    node__finish(n, t);
    node__schedule(n);
}

/* A downgrade (the job's spare tokens were reclaimed): the task runs on at the opportunistic
 * CPU weight and nice value; the queue keeps it from preemption until its grace ends, and
 * node__grace_tick looks again then. 0 or the queue's error. */
static int node__downgrade(node_t *n, node__task_t *t, uint64_t grace_ms)
{
    double now = node__now_s();
    double until = grace_ms ? now + (double)grace_ms / 1e3 : 0;
    int rc = queue_downgrade(n->queue, t->id, until);
    if (rc)
        return rc;
    t->klass = PROTO_CLASS_OPPORTUNISTIC;
    n->c.downgrades++;
    if (t->state == PROTO_TASK_RUNNING) {
        if (t->cg)
            taskcg_set_weight(n->cg, t->cg, 1);
        if (exec_renice_group(t->pid, (int)n->cfg->opportunistic_nice) != 0)
            log_warn("task %s/%s downgraded but its nice value stays", t->job->job_id, t->task_id);
    }
    n->grace_wake_s = queue_next_grace(n->queue, now);
    n->matrix_dirty = 1;
    log_info("task %s/%s downgraded to opportunistic (grace %llu ms)", t->job->job_id, t->task_id,
             (unsigned long long)grace_ms);
    return 0;
}

void node__swapped(node_t *n, const uint64_t *up, size_t k, uint64_t down)
{
    n->c.swaps++;
    for (size_t i = 0; i < k; i++) {
        node__task_t *t = map_getn(&n->byid, &up[i], sizeof up[i]);
        if (!t)
            continue;
        t->klass = PROTO_CLASS_REGULAR;
        n->c.swapped++;
        if (t->state == PROTO_TASK_RUNNING) {
            if (t->cg)
                taskcg_set_weight(n->cg, t->cg, 100);
            if (exec_renice_group(t->pid, 0) != 0)
                log_debug("task %s/%s made regular but its nice value stays (no privilege)",
                          t->job->job_id, t->task_id);
        }
        node__send_status(n, t); /* its JM moves its units to the regular class */
    }
    /* The queued task that gave up its regular place goes back to its JM, which places it
       again where it can start: kept here as opportunistic it waited behind every regular task
       of the node, unseen by the matrix (which counts regular work only) and by the JM's
       corrections (regular tasks only), while other nodes stood idle. It never ran: no work
       is lost and no start counted. */
    node__task_t *d = map_getn(&n->byid, &down, sizeof down);
    if (d) {
        log_info("task %s/%s returned to its job: %zu running opportunistic task%s of the job "
                 "made regular in its place instead of preempted",
                 d->job->job_id, d->task_id, k, k == 1 ? "" : "s");
        queue_cancel(n->queue, d->id);
        node__set_state(n, d, PROTO_TASK_CANCELLED,
                        "returned: its job's own opportunistic work here turned regular in its "
                        "place (no self-preemption)");
        node__finish(n, d);
    }
    n->grace_wake_s = queue_next_grace(n->queue, node__now_s());
    n->matrix_dirty = 1;
}

void node__traded(node_t *n, node__task_t *up, uint64_t down)
{
    n->c.trades++;
    node__task_t *d = map_getn(&n->byid, &down, sizeof down);
    node__task_t *both[2] = {up, d};
    for (int i = 0; i < 2; i++) { /* the upgrade first: its units over-count, never under */
        node__task_t *t = both[i];
        if (!t)
            continue;
        t->klass = i == 0 ? PROTO_CLASS_REGULAR : PROTO_CLASS_OPPORTUNISTIC;
        node__set_state(n, t, t->state,
                        i == 0 ? PROTO_REASON_TRADED ": regular in the place of its job's "
                                                     "lower-priority task"
                               : PROTO_REASON_TRADED ": opportunistic, its job's higher-priority "
                                                     "task regular in its place");
        mem_free(t->reason); /* said once: a later status is not a trade's */
        t->reason = NULL;
    }
    if (up && d)
        log_info("task %s/%s starts regular in the place of %s (a class trade in its job)",
                 up->job->job_id, up->task_id, d->task_id);
    n->matrix_dirty = 1;
}

void node__grace_tick(node_t *n)
{
    double now = node__now_s();
    if (n->grace_wake_s <= 0 || now < n->grace_wake_s)
        return;
    n->grace_wake_s = queue_next_grace(n->queue, now);
    n->matrix_dirty = 1;
    node__schedule(n);
}

static void node__upgrade(node_t *n, const void *peer, size_t plen, uint64_t req_id,
                          const proto_task_upgrade_t *tu)
{
    if (node__fenced(n, tu->job_id, tu->epoch, peer, plen, req_id, PROTO_TASK_UPGRADE))
        return;
    node__task_t *t = node__lookup(n, tu->job_id, tu->task_id, tu->attempt);
    if (!t) {
        node__reply_error(n, peer, plen, req_id, PROTO_TASK_UPGRADE, ERR_NOTFOUND, "no such task");
        return;
    }
    node__job(n, tu->job_id, peer, plen, req_id, tu->epoch, 1);
    t->req_id = req_id;
    if (tu->task_class == PROTO_CLASS_OPPORTUNISTIC) {
        if (!proto_task_state_terminal(t->state) && t->klass == PROTO_CLASS_REGULAR) {
            int rc = node__downgrade(n, t, tu->grace_ms);
            if (rc) {
                node__reply_error(n, peer, plen, req_id, PROTO_TASK_UPGRADE, rc, err_text(rc));
                return;
            }
        }
    } else if (!proto_task_state_terminal(t->state) && t->klass == PROTO_CLASS_OPPORTUNISTIC) {
        int rc = queue_upgrade(n->queue, t->id);
        if (rc) {
            node__reply_error(n, peer, plen, req_id, PROTO_TASK_UPGRADE, rc, err_text(rc));
            return;
        }
        t->klass = PROTO_CLASS_REGULAR;
        n->c.upgrades++;
        if (t->state == PROTO_TASK_RUNNING) {
            /* a preemption already signalled stands: the task is reported preempted */
            if (t->cg)
                taskcg_set_weight(n->cg, t->cg, 100);
            if (exec_renice_group(t->pid, 0) != 0)
                log_warn("task %s/%s upgraded but its nice value stays (no privilege)",
                         t->job->job_id, t->task_id);
        }
        n->matrix_dirty = 1;
    }
    node__send_status(n, t);
    node__schedule(n);
}

/* TASK_ESTIMATE: the JM refined a live task's R; the queue's simulation (its expected waits,
 * the matrix, backfill) takes it from now on. No reply (an older epoch: ERROR). */
static void node__estimate(node_t *n, const void *peer, size_t plen, uint64_t req_id,
                           const proto_task_estimate_t *te)
{
    if (node__fenced(n, te->job_id, te->epoch, peer, plen, req_id, PROTO_TASK_ESTIMATE))
        return;
    node__task_t *t = node__lookup(n, te->job_id, te->task_id, te->attempt);
    if (!t || proto_task_state_terminal(t->state) ||
        queue_set_estimate(n->queue, t->id, (double)te->runtime_ms / 1000.0) != 0) {
        n->c.estimates_ignored++;
        return;
    }
    n->c.estimates++;
    n->matrix_dirty = 1;
    node__schedule_soon(n); /* a reservation may have moved to now (backfill) */
}

/* TASK_QUERY: every remembered task's status, then the count. A query with an epoch makes the
 * node remember the job even when it has no task here, so that a create from an older JM that
 * arrives after the query is refused (the resumed JM schedules only what the answer lacks). */
static void node__query(node_t *n, const void *peer, size_t plen, uint64_t req_id,
                        const proto_task_query_t *q)
{
    if (node__fenced(n, q->job_id, q->epoch, peer, plen, req_id, PROTO_TASK_QUERY))
        return;
    node__job_t *j = map_get(&n->jobs, q->job_id);
    if (!j && q->epoch > 0 && n->jobs.len >= NODE__MAX_JOBS) {
        n->c.refused_full++;
        node__reply_error(n, peer, plen, req_id, PROTO_TASK_QUERY, ERR_FULL,
                          "too many jobs remembered");
        return;
    }
    if (j || q->epoch > 0) {
        j = node__job(n, q->job_id, peer, plen, req_id, q->epoch, 0);
        if (!j) {
            node__reply_error(n, peer, plen, req_id, PROTO_TASK_QUERY, ERR_NOMEM, "out of memory");
            return;
        }
        node__job_reply(n, j, q->reply_endpoint);
    }
    n->c.queries++;
    uint32_t sent = 0;
    if (j) {
        size_t it = 0;
        void *v;
        while (map_next(&n->tasks, &it, NULL, NULL, &v)) {
            node__task_t *t = v;
            if (t->job == j) {
                node__status(n, t, req_id);
                sent++;
            }
        }
    }
    proto_msg_t m;
    node__statuses_flush(n); /* the statuses it counts arrive before it */
    proto_msg_init(&m, PROTO_TASK_QUERY_REPLY);
    m.req_id = req_id;
    m.task_query_reply.job_id = q->job_id;
    m.task_query_reply.node = n->cfg->name;
    m.task_query_reply.tasks = sent;
    char err[256];
    if (proto_encode(&m, &n->buf, err, sizeof err) != 0) {
        log_error("query of %s: %s", q->job_id, err);
        return;
    }
    const char *reply = q->reply_endpoint && q->reply_endpoint[0] ? q->reply_endpoint : NULL;
    if (j)
        n->send(n->send_arg, j->peer, j->plen, j->reply, n->buf.data, n->buf.len);
    else
        n->send(n->send_arg, peer, plen, reply, n->buf.data, n->buf.len);
}

/* Kills (running) or ends (queued, staging) one live task of a job the RM says is over. */
void node_count_draining(node_t *n)
{
    n->c.creates_refused[NODE_REFUSED_DRAINING]++;
}

void node_count_rejected(node_t *n)
{
    n->c.requests++;
    n->c.rejected++;
}

void node_set_caller(node_t *n, const char *user, uid_t uid, gid_t gid, int admin,
                     const char *refuse)
{
    snprintf(n->caller.user, sizeof n->caller.user, "%s", user != NULL ? user : "");
    n->caller.uid = uid;
    n->caller.gid = gid;
    n->caller.admin = admin;
    snprintf(n->caller.refuse, sizeof n->caller.refuse, "%s", refuse != NULL ? refuse : "");
}

void node_handle(node_t *n, const void *peer, size_t plen, const void *data, size_t len)
{
    n->c.requests++;
    proto_msg_t m;
    char err[256];
    if (plen == 0 || plen > NODE__PEER_MAX) {
        n->c.rejected++;
        return;
    }
    int rc = proto_decode(data, len, &m, &n->pstats, err, sizeof err);
    if (rc) {
        n->c.rejected++;
        log_debug("rejected a request: %s", err);
        node__reply_error(n, peer, plen, 0, PROTO_TYPE_NONE, rc, err);
        return;
    }
    if (m.type == PROTO_TASK_CREATE && n->caller.refuse[0]) {
        /* issue 27: no such user here, root, or a revoked key; refused before the job is
           remembered, so that it names no owner */
        n->c.creates_refused[NODE_REFUSED_USER]++;
        node__reply_error(n, peer, plen, m.req_id, m.type, ERR_DENIED, n->caller.refuse);
        proto_msg_close(&m);
        return;
    }
    /* issue 27: a job's tasks, statuses and epoch are its user's (and the admins') alone */
    const char *jid = m.type == PROTO_TASK_CREATE     ? m.task_create.job_id
                      : m.type == PROTO_TASK_CANCEL   ? m.task_cancel.job_id
                      : m.type == PROTO_TASK_UPGRADE  ? m.task_upgrade.job_id
                      : m.type == PROTO_TASK_QUERY    ? m.task_query.job_id
                      : m.type == PROTO_TASK_ESTIMATE ? m.task_estimate.job_id
                                                      : NULL;
    node__job_t *owner = jid != NULL && !n->caller.admin ? map_get(&n->jobs, jid) : NULL;
    if (owner != NULL && strcmp(owner->user, n->caller.user) != 0) {
        n->c.rejected++;
        if (m.type == PROTO_TASK_CREATE)
            n->c.creates_refused[NODE_REFUSED_USER]++;
        char why[160];
        snprintf(why, sizeof why, "permission denied: job %s belongs to another user", jid);
        node__reply_error(n, peer, plen, m.req_id, m.type, ERR_DENIED, why);
        proto_msg_close(&m);
        return;
    }
    switch (m.type) {
    case PROTO_TASK_CREATE:
        node__create(n, peer, plen, m.req_id, &m.task_create);
        break;
    case PROTO_TASK_CANCEL:
        node__cancel(n, peer, plen, m.req_id, &m.task_cancel);
        break;
    case PROTO_TASK_UPGRADE:
        node__upgrade(n, peer, plen, m.req_id, &m.task_upgrade);
        break;
    case PROTO_TASK_QUERY:
        node__query(n, peer, plen, m.req_id, &m.task_query);
        break;
    case PROTO_TASK_ESTIMATE:
        node__estimate(n, peer, plen, m.req_id, &m.task_estimate);
        break;
    default:
        n->c.rejected++;
        node__reply_error(
            n, peer, plen, m.req_id, m.type, ERR_UNKNOWN_TYPE,
            "a process node answers TASK_CREATE, TASK_CANCEL, TASK_UPGRADE, TASK_QUERY, "
            "TASK_ESTIMATE");
        break;
    }
    proto_msg_close(&m);
}
