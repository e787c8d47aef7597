/* node_heartbeat.c - what the PN tells the RM and its JMs unasked: the heartbeat (queue
 * stats, wait-time matrix, cache filter, live jobs), the periodic status refresh, and the
 * reaping of jobs the RM's heartbeat acks say are over (orphan.h). */
#include "pn/node.h"

#include <stdio.h>
#include <string.h>

#include "common/bloom.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/mem.h"
#include "pn/node_internal.h"

static void node__reap_task(node_t *n, node__task_t *t, proto_task_state_t s, const char *reason)
{
    n->c.reaped++;
    if (t->state == PROTO_TASK_RUNNING || t->spawning) {
        if (t->kill == NODE__KILL_NONE || t->kill == NODE__KILL_PREEMPT) {
            t->kill = NODE__KILL_REAP;
            t->reap_state = s;
            char *r = mem_strdup(reason);
            if (r) {
                mem_free(t->reason);
                t->reason = r;
            }
        }
        node__kill(n, t);
        return; /* reported when reaped (node_reap) */
    }
    queue_cancel(n->queue, t->id);
    node__set_state(n, t, s, reason);
    node__finish(n, t);
}

static void node__reap_job(void *arg, const orphan_verdict_t *v)
{
    node_t *n = arg;
    node__job_t *j = map_get(&n->jobs, v->job_id);
    if (!j)
        return;
    static const char *const what[] = {"unknown to the RM", "active",
                                       "ended (done)",      "ended (failed)",
                                       "ended (cancelled)", "expired"};
    char reason[PROTO_MAX_NAME + 96];
    snprintf(reason, sizeof reason, "job %s %s: reaped after %llu s", j->job_id,
             v->state <= ORPHAN_EXPIRED ? what[v->state] : "over",
             (unsigned long long)((v->waited_ms + 500) / 1000));
    proto_task_state_t s = v->ended ? PROTO_TASK_CANCELLED : PROTO_TASK_LOST;
    log_info("%s: killing its %zu live task%s", reason, j->nlive, j->nlive == 1 ? "" : "s");
    size_t it = 0;
    void *t;
    while (map_next(&n->byid, &it, NULL, NULL, &t)) /* node__finish deletes: allowed */
        if (((node__task_t *)t)->job == j && !proto_task_state_terminal(((node__task_t *)t)->state))
            node__reap_task(n, t, s, reason);
}

void node_jobs_ack(node_t *n, const proto_heartbeat_ack_t *ack, uint64_t now_ms)
{
    for (uint32_t i = 0; i < ack->njobs; i++) {
        const proto_job_info_t *ji = &ack->jobs[i];
        node__job_t *j = map_get(&n->jobs, ji->job_id);
        if (!j || j->nlive == 0) { /* nothing of it runs here (any more) */
            orphan_forget(n->orphan, ji->job_id);
            continue;
        }
        node__raise(j, ji->epoch, "the RM");
        if (orphan_note(n->orphan, ji->job_id, ji->state, now_ms) != 0)
            n->c.acks_ignored++;
    }
    if (orphan_due(n->orphan, now_ms, node__reap_job, n) > 0) {
        n->matrix_dirty = 1;
        node__schedule(n);
    }
}

static void node__count_path(void *arg, const char *path)
{
    (void)path;
    (*(size_t *)arg)++;
}

static void node__add_path(void *arg, const char *path)
{
    bloom_add(arg, path, strlen(path));
}

/* The cache advertisement (issue 15): a Bloom filter of the source paths the cache holds,
 * rebuilt when the cache learnt a path since; sized for a 1% false-positive rate within
 * PROTO_MAX_CACHE_FILTER bytes (4096 paths, the stage memo's bound, fit at about 2%). */
static void node__cache_filter(node_t *n)
{
    uint64_t gen = stage_generation(n->stage) + 1;
    if (gen == n->hb_filter_gen)
        return;
    size_t count = 0;
    stage_paths(n->stage, node__count_path, &count);
    n->hb_filter_len = 0;
    uint32_t m = 0;
    unsigned k = 0;
    bloom_t *b = NULL;
    if (count == 0 ||
        bloom_size(count, 0.01, PROTO_MAX_CACHE_FILTER - BLOOM_HEADER_BYTES, &m, &k) != 0 ||
        bloom_new(m, k, &b) != 0)
        return;
    if (!n->hb_filter && !(n->hb_filter = mem_alloc(PROTO_MAX_CACHE_FILTER))) {
        bloom_destroy(&b);
        return;
    }
    stage_paths(n->stage, node__add_path, b);
    size_t len = 0;
    if (bloom_encode(b, n->hb_filter, PROTO_MAX_CACHE_FILTER, &len) == 0) {
        n->hb_filter_len = (uint32_t)len;
        n->hb_filter_gen = gen;
    }
    bloom_destroy(&b);
}

void node_heartbeat(node_t *n, proto_heartbeat_t *hb)
{
    queue_stats_t st;
    queue_stats(n->queue, &st);
    memset(hb, 0, sizeof *hb);
    hb->name = n->cfg->name;
    hb->rack = n->cfg->rack;
    hb->endpoint = n->cfg->advertise;
    hb->boot_id = n->boot_id;
    hb->seq = ++n->hb_seq;
    hb->cpu = n->cfg->cpus;
    hb->mem_mb = n->cfg->memory >> 20;
    hb->used_cpu = st.cpu_used;
    hb->used_mem_mb = (uint64_t)st.mem_used;
    hb->running_regular = (uint32_t)st.regular_running;
    hb->running_opportunistic = (uint32_t)st.opportunistic_running;
    hb->queued_regular = (uint32_t)st.regular_queued;
    hb->queued_opportunistic = (uint32_t)st.opportunistic_queued;
    node__matrix_wire(n, &hb->matrix, false);
    hb->timestamp_ms = clock_wall_ms();
    node__cache_filter(n);
    if (n->hb_filter_len) {
        hb->cache_filter = n->hb_filter;
        hb->cache_filter_len = n->hb_filter_len;
    }
    if (!n->hb_jobs && !(n->hb_jobs = mem_calloc(PROTO_MAX_NODE_JOBS, sizeof *n->hb_jobs)))
        return; /* no room: the heartbeat names no job this time */
    uint64_t round = ++n->hb_round;
    size_t it = 0;
    void *v;
    while (hb->njobs < PROTO_MAX_NODE_JOBS && map_next(&n->byid, &it, NULL, NULL, &v)) {
        node__task_t *t = v; /* queued, staging or running */
        if (t->job->hb_round == round || proto_task_state_terminal(t->state))
            continue;
        t->job->hb_round = round;
        n->hb_jobs[hb->njobs++] = t->job->job_id;
    }
    hb->jobs = n->hb_jobs;
}

void node_refresh(node_t *n)
{
    /* Every running task's status (with its CPU time and bytes read so far: progress for the
     * JM's straggler detection), and for a job with none running, one of its queued tasks'
     * (the matrix refresh of Apollo §3.2). */
    uint64_t round = ++n->refresh_round;
    size_t it = 0;
    void *v;
    while (map_next(&n->byid, &it, NULL, NULL, &v)) { /* live tasks only */
        node__task_t *t = v;
        if (t->state != PROTO_TASK_RUNNING)
            continue;
        t->job->refreshed = round;
        node__send_status(n, t);
    }
    it = 0;
    while (map_next(&n->byid, &it, NULL, NULL, &v)) {
        node__task_t *t = v;
        if (t->job->refreshed == round || proto_task_state_terminal(t->state))
            continue;
        t->job->refreshed = round;
        node__send_status(n, t);
    }
}
