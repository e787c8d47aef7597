/* cluster_node.c - the simulated PNs (a real pn/queue and pn/matrix each), their background load,
 * node loss, and the heartbeats that carry each PN's matrix to the RM and, late, to the JMs. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "proto/proto.h"
#include "tools/sim/cluster_internal.h"
#include "tools/sim/engine_noise.h"

#define CL_BG_MEM_MB 2048.0

uint64_t cl_key(size_t job, size_t task, uint32_t attempt)
{
    return ((uint64_t)job << 40) | ((uint64_t)task << 16) | (attempt & 0xffffu);
}

void cl_key_split(uint64_t key, size_t *job, size_t *task, uint32_t *attempt)
{
    *job = (size_t)(key >> 40);
    *task = (size_t)((key >> 16) & 0xffffffu);
    *attempt = (uint32_t)(key & 0xffffu);
}

uint64_t cl_qid(size_t job, size_t task)
{
    return ((uint64_t)job << 32) | (uint64_t)task;
}

static uint64_t cl__bg_id(uint32_t node, uint32_t boot, uint32_t n)
{
    return CL_BG_BIT | ((uint64_t)node << 40) | ((uint64_t)(boot & 0xffu) << 32) | n;
}

void cl_account(struct cl_world *w, double dcpu, double djobs)
{
    double now = engine_now(w->eng);
    w->cpu_int += w->used_cpu * (now - w->last_t);
    w->jobs_int += w->used_jobs * (now - w->last_t);
    w->last_t = now;
    w->used_cpu += dcpu;
    w->used_jobs += djobs;
}

void cl_trace(struct cl_world *w, size_t job, size_t task, int outcome)
{
    if (!w->cfg.trace)
        return;
    struct cluster_result *r = w->res;
    if (r->ntrace == w->ctrace) {
        size_t nc = w->ctrace ? w->ctrace * 2 : 1024;
        struct cluster_trace_rec *t = mem_reallocarray(r->trace, nc, sizeof *t);
        if (t == NULL) {
            if (w->err == 0)
                w->err = ERR_NOMEM;
            engine_stop(w->eng);
            return;
        }
        r->trace = t;
        w->ctrace = nc;
    }
    const struct cl_job *j = &w->jobs[job];
    const struct cl_task *tk = &j->tasks[task];
    r->trace[r->ntrace++] = (struct cluster_trace_rec){
        .job = (uint32_t)job,
        .task = (uint32_t)task,
        .attempt = tk->attempt,
        .node = tk->node,
        .ready_s = tk->ready_at - j->arrival,
        .placed_s = tk->placed_at - j->arrival,
        .queued_s = tk->pushed_at - j->arrival,
        .start_s = tk->started_at - j->arrival,
        .end_s = engine_now(w->eng) - j->arrival,
        .outcome = outcome,
    };
}

static int cl__new_queue(struct cl_world *w, struct cl_node *nd)
{
    queue_config_t qc = {0};
    qc.cpus = w->cfg.node_cpus;
    qc.mem_mb = w->cfg.node_mem_mb;
    qc.default_est_s = w->cfg.bg_runtime_s;
    qc.sim_depth = 64;
    nd->q = queue_new(&qc);
    nd->dirty = 1;
    nd->changes++;
    nd->cpu_used = nd->cpu_jobs = 0;
    return nd->q != NULL ? 0 : ERR_NOMEM;
}

int cl_nodes_init(struct cl_world *w)
{
    size_t n = w->cfg.nodes;
    w->nodes = mem_calloc(n, sizeof *w->nodes);
    if (w->nodes == NULL)
        return ERR_NOMEM;
    w->nnodes = n;
    loadprof_init(&w->scratch, w->cfg.node_cpus, w->cfg.node_mem_mb);
    for (size_t i = 0; i < n; i++) {
        struct cl_node *nd = &w->nodes[i];
        int rc = matrix_init(&nd->m, NULL, 0, NULL, 0);
        if (rc != 0)
            return rc;
        if ((rc = cl__new_queue(w, nd)) != 0)
            return rc;
        nd->hb_wait = mem_calloc(nd->m.ncpu * nd->m.nmem, sizeof *nd->hb_wait);
        if (nd->hb_wait == NULL)
            return ERR_NOMEM;
        nd->up = nd->hb_up = 1;
        nd->boot = 1;
        nd->matrix_at = -1e9;
        nd->rack = (uint32_t)(i / w->cfg.rack_size);
        snprintf(nd->name, sizeof nd->name, "pn-%zu", i);
        snprintf(nd->rack_name, sizeof nd->rack_name, "r-%u", nd->rack);
        rng_seed_stream(&nd->rng, w->cfg.seed, 0x100000000ull + i);
        nd->bg_mult = engine_noise_phase_mult(&w->cfg.noise, &nd->rng);
        nd->phase_end = engine_noise_phase_len(&w->cfg.noise, &nd->rng);
        if (w->bg_rate > 0 && (rc = engine_at(w->eng, rng_exp(&nd->rng, 1.0 / w->bg_rate),
                                              cl_bg_arrival_ev, w, i)) != 0)
            return rc;
        double up = engine_noise_uptime(&w->cfg.noise, &nd->rng);
        if (isfinite(up) && (rc = engine_at(w->eng, up, cl_node_loss_ev, w, i)) != 0)
            return rc;
    }
    return 0;
}

void cl_nodes_close(struct cl_world *w)
{
    for (size_t i = 0; w->nodes != NULL && i < w->nnodes; i++) {
        queue_destroy(&w->nodes[i].q);
        mem_free(w->nodes[i].hb_wait);
    }
    mem_free(w->nodes);
    w->nodes = NULL;
    loadprof_close(&w->scratch);
}

static void cl__fail(struct cl_world *w, int rc)
{
    if (w->err == 0)
        w->err = rc;
    engine_stop(w->eng);
}

/* A PN's TASK_STATUS carries its matrix to the task's JM (Apollo §3.1: "once a task is
 * scheduled to a PN, the JM obtains up-to-date load information directly from the PN"). The JMs
 * share one view here, so every JM sees it (an optimistic simplification, docs/benchmarks.md).
 * As pn/node.c does, the matrix of a queued or running status is recomputed only when the last
 * one is at least matrix_min_interval_s old (an end's always), and the JM takes it as news from
 * when it arrives (jm/view: info_ms is the receive time), which clears the claims of tasks sent
 * there meanwhile: two tasks that reach an idle node within the interval leave the JM seeing the
 * room the first one found. */
static void cl__status_matrix(struct cl_world *w, uint32_t n, int ended)
{
    struct cl_node *nd = &w->nodes[n];
    if (!w->cfg.estimation || !w->cfg.status_matrix || !nd->up)
        return;
    double now = engine_now(w->eng);
    if (nd->dirty && (ended || now - nd->matrix_at >= w->cfg.matrix_min_interval_s)) {
        int rc = matrix_compute(&nd->m, nd->q, now, &w->scratch);
        if (rc != 0) {
            cl__fail(w, rc);
            return;
        }
        nd->dirty = 0;
        nd->matrix_at = now;
    }
    double cells[MATRIX_MAX_BINS * MATRIX_MAX_BINS];
    for (size_t c = 0; c < nd->m.ncpu; c++)
        for (size_t m = 0; m < nd->m.nmem; m++)
            cells[c * nd->m.nmem + m] = nd->m.wait_s[c][m];
    int rc = view_set_matrix(w->view, n, (uint32_t)nd->m.ncpu, (uint32_t)nd->m.nmem, nd->m.cpu_bins,
                             nd->m.mem_bins, cells,
                             (int64_t)llround((now + w->cfg.net_delay_s) * 1000.0));
    if (rc != 0)
        cl__fail(w, rc);
}

static void cl_bg_end_ev(engine_t *e, void *ctx, uint64_t id)
{
    struct cl_world *w = ctx;
    uint32_t n = (uint32_t)((id >> 40) & 0x7fffffu);
    struct cl_node *nd = &w->nodes[n];
    if (!nd->up || ((id >> 32) & 0xffu) != (nd->boot & 0xffu))
        return; /* the node was lost meanwhile */
    if (queue_finish(nd->q, id) != 0)
        return;
    nd->cpu_used -= w->cfg.bg_cpu;
    cl_account(w, -w->cfg.bg_cpu, 0);
    nd->dirty = 1;
    nd->changes++;
    cl_node_try_start(w, n);
    (void)e;
}

static void cl_task_end_ev(engine_t *e, void *ctx, uint64_t key)
{
    struct cl_world *w = ctx;
    size_t job, task;
    uint32_t attempt;
    cl_key_split(key, &job, &task, &attempt);
    struct cl_job *j = &w->jobs[job];
    struct cl_task *tk = cl_attempt_of(j, task, attempt);
    if ((tk->attempt & 0xffffu) != attempt || !tk->running)
        return; /* fenced: the node was lost, or the attempt cancelled */
    struct cl_node *nd = &w->nodes[tk->node];
    if (queue_finish(nd->q, cl_qid(job, task)) != 0)
        return;
    double cpu = j->spec->tasks[task].cpu;
    nd->cpu_used -= cpu;
    nd->cpu_jobs -= cpu;
    cl_account(w, -cpu, -cpu);
    nd->dirty = 1;
    nd->changes++;
    tk->running = 0;
    int outcome = tk->klass >= 0x100 ? 0 : 1; /* failure flag set at start */
    tk->klass &= 0xff;
    uint32_t node = tk->node;
    cl_trace(w, job, task, outcome);
    cl_node_try_start(w, node);
    cl__status_matrix(w, node, 1);
    cl_job_report(w, job, task, attempt, outcome, engine_now(e) - tk->started_at);
}

/* A job task starts at its PN: sample its queueing time, draw its run (per task and attempt, so
 * the same task meets the same noise whichever node and mode), schedule its end. */
static void cl__start_job_task(struct cl_world *w, uint32_t n, const queue_task_t *t)
{
    size_t job = (size_t)(t->id >> 32), task = (size_t)(t->id & 0xffffffffu);
    struct cl_job *j = &w->jobs[job];
    struct cl_task *tk = cl_attempt_at(j, task, n);
    double now = engine_now(w->eng);
    struct cl_node *nd = &w->nodes[n];
    nd->cpu_used += t->cpu;
    nd->cpu_jobs += t->cpu;
    cl_account(w, t->cpu, t->cpu);
    tk->running = 1;
    tk->started_at = now;
    if (w->nsamples == w->csamples) {
        size_t nc = w->csamples ? w->csamples * 2 : 4096;
        struct cl_sample *s = mem_reallocarray(w->samples, nc, sizeof *s);
        if (s == NULL) {
            cl__fail(w, ERR_NOMEM);
            return;
        }
        w->samples = s;
        w->csamples = nc;
    }
    w->samples[w->nsamples++] = (struct cl_sample){now, now - tk->pushed_at, n};
    struct rng r;
    rng_seed_stream(&r, w->cfg.seed ^ 0x7a5c0000ull, cl_key(job, task, tk->attempt));
    double slow = w->cfg.run_slowdown > 0 ? w->cfg.run_slowdown : 1.0;
    double run =
        (j->run_s != NULL ? j->run_s[task] * slow
                          : engine_noise_runtime(&w->cfg.noise, &r,
                                                 j->spec->tasks[task].runtime_s * slow, NULL)) +
        tk->planned_io + w->cfg.task_overhead_s;
    run *= engine_noise_node_factor(&w->cfg.noise, n);
    double fail_at = engine_noise_failure(&w->cfg.noise, &r, run);
    if (fail_at >= 0) {
        run = fail_at;
        tk->klass |= 0x100;
    }
    uint32_t attempt = tk->attempt; /* tk moves when a duplicate that started first takes over */
    cl_job_started(w, job, task, attempt);
    int rc = engine_after(w->eng, run, cl_task_end_ev, w, cl_key(job, task, attempt));
    if (rc != 0)
        cl__fail(w, rc);
}

static void cl__kill(struct cl_world *w, uint32_t n, uint64_t id)
{
    struct cl_node *nd = &w->nodes[n];
    if (queue_finish(nd->q, id) != 0)
        return;
    nd->dirty = 1;
    nd->changes++;
    w->res->preemptions++;
    if (id & CL_BG_BIT) {
        nd->cpu_used -= w->cfg.bg_cpu;
        cl_account(w, -w->cfg.bg_cpu, 0);
        return;
    }
    size_t job = (size_t)(id >> 32), task = (size_t)(id & 0xffffffffu);
    struct cl_task *tk = cl_attempt_at(&w->jobs[job], task, n);
    double cpu = w->jobs[job].spec->tasks[task].cpu;
    nd->cpu_used -= cpu;
    nd->cpu_jobs -= cpu;
    cl_account(w, -cpu, -cpu);
    tk->running = 0; /* fences the scheduled end */
    tk->klass &= 0xff;
    cl_trace(w, job, task, -1);
    cl_job_report(w, job, task, tk->attempt, CL_PREEMPTED, 0);
}

/* The node's class trade inside one job (queue_pick_trade): the JM hears both class changes at
 * once, the task made regular first (its units over-count for a moment, never under), as the
 * daemon's statuses carry them (PROTO_REASON_TRADED). */
static void cl__traded(struct cl_world *w, uint32_t n, uint64_t up, uint64_t down)
{
    uint64_t ids[2] = {up, down};
    for (int i = 0; i < 2; i++) {
        size_t job = (size_t)(ids[i] >> 32), task = (size_t)(ids[i] & 0xffffffffu);
        struct cl_job *j = &w->jobs[job];
        struct cl_task *tk = cl_attempt_at(j, task, n); /* a copy there, if that is what traded */
        int cls = i == 0 ? QUEUE_REGULAR : QUEUE_OPPORTUNISTIC;
        tk->klass = (tk->klass & 0x100) | cls;
        if (tk != &j->tasks[task])
            continue; /* a speculative copy's units are cluster_straggler.c's: not followed */
        struct attempt_event ev = {
            .kind = ATTEMPT_EV_STATUS,
            .task = task,
            .attempt = tk->attempt,
            .state = PROTO_TASK_QUEUED,
            .cls = i == 0 ? DISPATCH_REGULAR : DISPATCH_OPPORTUNISTIC,
            .traded = 1,
        };
        struct attempt_action act[ATTEMPT_MAX_ACTIONS];
        int rc = attempt_step(j->core.att, &ev, (int64_t)(engine_now(w->eng) * 1000.0 + 0.5), act,
                              ATTEMPT_MAX_ACTIONS);
        if (rc < 0)
            cl__fail(w, rc);
    }
    w->res->trades++;
}

/* The node's class swap inside one job (queue_swap, as pn/node_run.c calls it before any
 * preemption): the job's running opportunistic tasks turned regular tell their JM so (a status,
 * its class the PN's word), and its queued regular task that gave up its place goes back to the
 * JM, cancelled before it ran ("returned", pn/node_handle.c), to be placed again. */
static void cl__swapped(struct cl_world *w, uint32_t n, const uint64_t *up, size_t k, uint64_t down)
{
    struct cl_node *nd = &w->nodes[n];
    double now = engine_now(w->eng);
    int64_t now_ms = (int64_t)(now * 1000.0 + 0.5);
    w->res->swaps++;
    for (size_t i = 0; i < k; i++) {
        size_t job = (size_t)(up[i] >> 32), task = (size_t)(up[i] & 0xffffffffu);
        struct cl_job *j = &w->jobs[job];
        struct cl_task *tk = cl_attempt_at(j, task, n);
        tk->klass = (tk->klass & 0x100) | QUEUE_REGULAR;
        if (tk != &j->tasks[task])
            continue; /* a speculative copy's units are cluster_straggler.c's: not followed */
        struct attempt_event ev = {.kind = ATTEMPT_EV_STATUS,
                                   .task = task,
                                   .attempt = tk->attempt,
                                   .state = PROTO_TASK_RUNNING,
                                   .cls = DISPATCH_REGULAR};
        struct attempt_action act[ATTEMPT_MAX_ACTIONS];
        int rc = attempt_step(j->core.att, &ev, now_ms, act, ATTEMPT_MAX_ACTIONS);
        if (rc < 0)
            cl__fail(w, rc);
    }
    if (queue_cancel(nd->q, down) != 0)
        return;
    nd->dirty = 1;
    nd->changes++;
    size_t job = (size_t)(down >> 32), task = (size_t)(down & 0xffffffffu);
    struct cl_job *j = &w->jobs[job];
    struct cl_task *tk = cl_attempt_at(j, task, n);
    if (tk != &j->tasks[task]) { /* a copy: it ends as one the node refused */
        cl_job_report(w, job, task, tk->attempt, CL_REFUSED, 0);
        return;
    }
    struct attempt_event ev = {.kind = ATTEMPT_EV_STATUS,
                               .task = task,
                               .attempt = tk->attempt,
                               .state = PROTO_TASK_CANCELLED};
    int rc = cl_job_event(w, j, &ev);
    if (rc != 0)
        cl__fail(w, rc);
}

void cl_node_try_start(struct cl_world *w, uint32_t n)
{
    struct cl_node *nd = &w->nodes[n];
    double now = engine_now(w->eng);
    for (int guard = 0; guard < 100000 && nd->up; guard++) {
        queue_task_t t;
        queue_pick_info_t info;
        int rc = queue_pick_trade(nd->q, now, rng_unif(&nd->rng), &t, &info);
        if (rc == 0 && info.traded)
            cl__traded(w, n, t.id, info.traded_id);
        if (rc == ERR_NOTFOUND) {
            uint64_t ids[16], down = 0;
            size_t k = queue_swap(nd->q, now, ids, 16, &down);
            if (k > 0) { /* the job's own opportunistic work turned regular: nothing killed */
                cl__swapped(w, n, ids, k, down);
                continue;
            }
            k = queue_preempt(nd->q, now, ids, 16);
            if (k == 0)
                return;
            for (size_t i = 0; i < k; i++)
                cl__kill(w, n, ids[i]);
            continue;
        }
        if (rc != 0)
            return;
        nd->dirty = 1;
        nd->changes++;
        if (t.id & CL_BG_BIT) {
            nd->cpu_used += t.cpu;
            cl_account(w, t.cpu, 0);
            rc =
                engine_after(w->eng, rng_exp(&nd->rng, w->cfg.bg_runtime_s), cl_bg_end_ev, w, t.id);
            if (rc != 0)
                cl__fail(w, rc);
        } else {
            cl__start_job_task(w, n, &t);
        }
    }
}

void cl_bg_arrival_ev(engine_t *e, void *ctx, uint64_t node)
{
    struct cl_world *w = ctx;
    struct cl_node *nd = &w->nodes[node];
    double now = engine_now(e);
    while (now >= nd->phase_end) {
        nd->bg_mult = engine_noise_phase_mult(&w->cfg.noise, &nd->rng);
        nd->phase_end += engine_noise_phase_len(&w->cfg.noise, &nd->rng);
    }
    if (nd->up) {
        queue_task_t t = {0};
        t.id = cl__bg_id((uint32_t)node, nd->boot, nd->next_bg++);
        t.cpu = w->cfg.bg_cpu;
        t.mem_mb = CL_BG_MEM_MB;
        t.est_s = w->cfg.bg_runtime_s;
        t.klass = QUEUE_REGULAR;
        if (queue_push(nd->q, &t) == 0) {
            nd->dirty = 1;
            nd->changes++;
            cl_node_try_start(w, (uint32_t)node);
        }
    }
    double rate = w->bg_rate * nd->bg_mult;
    if (rate > 0) {
        int rc = engine_after(e, rng_exp(&nd->rng, 1.0 / rate), cl_bg_arrival_ev, w, node);
        if (rc != 0)
            cl__fail(w, rc);
    }
}

/* Fires twice per loss: arg without the top bit = the node goes down, with it = it comes back. */
void cl_node_loss_ev(engine_t *e, void *ctx, uint64_t arg)
{
    struct cl_world *w = ctx;
    uint32_t n = (uint32_t)(arg & 0xffffffffu);
    struct cl_node *nd = &w->nodes[n];
    int rc;
    if (arg >> 63) {
        nd->boot++;
        if ((rc = cl__new_queue(w, nd)) != 0) {
            cl__fail(w, rc);
            return;
        }
        nd->up = 1;
        double up = engine_noise_uptime(&w->cfg.noise, &nd->rng);
        if (isfinite(up) && (rc = engine_after(e, up, cl_node_loss_ev, w, n)) != 0)
            cl__fail(w, rc);
        return;
    }
    nd->up = 0;
    w->res->node_losses++;
    cl_account(w, -nd->cpu_used, -nd->cpu_jobs);
    queue_destroy(&nd->q);
    /* The JMs notice node_timeout_s later (missed heartbeats and status) and re-place. */
    for (size_t j = 0; j < w->njobs; j++) {
        struct cl_job *jb = &w->jobs[j];
        if (!jb->arrived || jb->done)
            continue;
        for (size_t t = 0; t < jb->spec->ntasks; t++) {
            struct cl_task *tk = &jb->tasks[t];
            if (tk->node != n || dispatch_class_of(jb->core.disp, t) == DISPATCH_NONE)
                continue;
            tk->running = 0;
            tk->klass &= 0xff;
            w->res->lost++;
            rc = engine_after(e, w->cfg.node_timeout_s, cl_lost_ev, w, cl_key(j, t, tk->attempt));
            if (rc != 0)
                cl__fail(w, rc);
        }
    }
    cl_sg_node_down(w, n);
    rc = engine_after(e, engine_noise_downtime(&w->cfg.noise, &nd->rng), cl_node_loss_ev, w,
                      (1ull << 63) | n);
    if (rc != 0)
        cl__fail(w, rc);
}

void cl_lost_ev(engine_t *e, void *ctx, uint64_t key)
{
    struct cl_world *w = ctx;
    size_t job, task;
    uint32_t attempt;
    cl_key_split(key, &job, &task, &attempt);
    cl_job_report(w, job, task, attempt, CL_NODE_LOST, 0);
    (void)e;
}

static void cl_refused_ev(engine_t *e, void *ctx, uint64_t key)
{
    struct cl_world *w = ctx;
    size_t job, task;
    uint32_t attempt;
    cl_key_split(key, &job, &task, &attempt);
    cl_job_report(w, job, task, attempt, CL_REFUSED, 0);
    (void)e;
}

void cl_task_create_ev(engine_t *e, void *ctx, uint64_t key)
{
    struct cl_world *w = ctx;
    size_t job, task;
    uint32_t attempt;
    cl_key_split(key, &job, &task, &attempt);
    struct cl_job *j = &w->jobs[job];
    struct cl_task *tk = cl_attempt_of(j, task, attempt);
    if ((tk->attempt & 0xffffu) != attempt || !cl_attempt_live(j, task, tk))
        return; /* the JM gave it up on the way */
    struct cl_node *nd = &w->nodes[tk->node];
    const struct spec_task *st = &j->spec->tasks[task];
    queue_task_t t = {0};
    t.id = cl_qid(job, task);
    t.cpu = st->cpu;
    t.mem_mb = (double)st->mem_mb;
    t.est_s = tk->est_s;
    t.job = (uint64_t)job + 1; /* as the daemon's TASK_CREATE: the PN starts a job's queued tasks */
    t.prio = j->core.task_bl[task]; /* highest bottom level first (pn/queue.h) */
    t.klass = (queue_class_t)(tk->klass & 0xff);
    if (!nd->up || queue_push(nd->q, &t) != 0) {
        /* Refused or the node is gone: the JM hears it one message later and re-places. */
        w->res->lost++;
        int rc = engine_after(e, w->cfg.net_delay_s, cl_refused_ev, w, cl_key(job, task, attempt));
        if (rc != 0)
            cl__fail(w, rc);
        return;
    }
    tk->pushed_at = engine_now(e);
    /* Its QUEUED status carries the PN's expected wait for a regular task (node__expected_wait,
       the queue simulated forward, as stale as the matrix); none when it starts at once. */
    double at = tk->pushed_at;
    tk->pn_wait_at = 0;
    if (t.klass == QUEUE_REGULAR &&
        queue_expected_start_tail(nd->q, tk->pushed_at, w->cfg.matrix_min_interval_s, t.id,
                                  &w->scratch, &at) == 0 &&
        at > tk->pushed_at) {
        tk->pn_wait = at - tk->pushed_at;
        tk->pn_wait_at = tk->pushed_at + w->cfg.net_delay_s;
    }
    nd->dirty = 1;
    nd->changes++;
    cl_node_try_start(w, tk->node);
    cl__status_matrix(w, tk->node, 0);
}

static void cl_view_ev(engine_t *e, void *ctx, uint64_t group);

void cl_heartbeat_ev(engine_t *e, void *ctx, uint64_t group)
{
    struct cl_world *w = ctx;
    double now = engine_now(e);
    size_t g = w->cfg.hb_groups;
    for (size_t i = (size_t)group; i < w->nnodes; i += g) {
        struct cl_node *nd = &w->nodes[i];
        if (!nd->up) {
            /* No heartbeat; the RM declares it down after the timeout. */
            if (nd->hb_up && now - nd->hb_at >= w->cfg.node_timeout_s) {
                nd->hb_up = 0;
                nd->seq++;
            }
            continue;
        }
        /* As the PN daemon does (pn/node.c), the matrix is recomputed only when the queue
           changed since the last computation; otherwise the last one is sent again. */
        if (nd->dirty) {
            int rc = matrix_compute(&nd->m, nd->q, now, &w->scratch);
            if (rc != 0) {
                cl__fail(w, rc);
                return;
            }
            nd->dirty = 0;
            nd->matrix_at = now;
        }
        if (nd->hb_changes != nd->changes || !nd->hb_up) {
            for (size_t c = 0; c < nd->m.ncpu; c++)
                for (size_t m = 0; m < nd->m.nmem; m++)
                    nd->hb_wait[c * nd->m.nmem + m] = nd->m.wait_s[c][m];
            queue_stats_t st;
            queue_stats(nd->q, &st);
            nd->hb_running = (uint32_t)(st.regular_running + st.opportunistic_running);
            nd->hb_queued = (uint32_t)(st.regular_queued + st.opportunistic_queued);
            nd->hb_changes = nd->changes;
        }
        nd->hb_up = 1;
        nd->hb_at = now;
        nd->seq++;
    }
    int rc = engine_after(e, w->cfg.rm_delay_s, cl_view_ev, w, group);
    if (rc == 0)
        rc = engine_after(e, w->cfg.heartbeat_s, cl_heartbeat_ev, w, group);
    if (rc != 0)
        cl__fail(w, rc);
}

/* Node i's entry as the RM publishes it (from its last heartbeat) into the JMs' view. */
static int cl__view_put(struct cl_world *w, size_t i, double now)
{
    struct cl_node *nd = &w->nodes[i];
    struct view_entry ve = {0};
    ve.name = nd->name;
    ve.rack = nd->rack_name;
    ve.cpu = w->cfg.node_cpus;
    ve.mem_mb = (uint64_t)w->cfg.node_mem_mb;
    ve.up = nd->hb_up;
    ve.boot_id = nd->boot;
    ve.seq = nd->seq;
    ve.age_ms = (uint64_t)llround((now - nd->hb_at) * 1000.0);
    if (w->cfg.estimation) {
        ve.running = nd->hb_running;
        ve.queued = nd->hb_queued;
        ve.ncpu = (uint32_t)nd->m.ncpu;
        ve.nmem = (uint32_t)nd->m.nmem;
        ve.cpu_bins = nd->m.cpu_bins;
        ve.mem_bins_mb = nd->m.mem_bins;
        ve.wait_s = nd->hb_wait;
    }
    int rc = view_update(w->view, &ve, (int64_t)llround(now * 1000.0));
    return rc < 0 ? rc : 0;
}

/* The RM's publication of a heartbeat group reaches the JMs. */
static void cl_view_ev(engine_t *e, void *ctx, uint64_t group)
{
    struct cl_world *w = ctx;
    double now = engine_now(e);
    for (size_t i = (size_t)group; i < w->nnodes; i += w->cfg.hb_groups) {
        int rc = cl__view_put(w, i, now);
        if (rc != 0) {
            cl__fail(w, rc);
            return;
        }
    }
    if (group + 1 == w->cfg.hb_groups) {
        size_t light = w->cfg.estimation ? (w->nnodes / 10 > 16 ? w->nnodes / 10 : 16) : w->nnodes;
        int rc = view_refresh_light(w->view, light);
        if (rc != 0) {
            cl__fail(w, rc);
            return;
        }
        for (size_t j = 0; j < w->njobs; j++)
            if (w->jobs[j].arrived && !w->jobs[j].done)
                cl_job_kick(w, &w->jobs[j]);
    }
}

int cl_view_init(struct cl_world *w)
{
    /* Every node registers before the first job arrives (an idle entry, age 0), in index order:
       the view numbers nodes by first appearance, so view index i is node i ("pn-i"). */
    for (size_t i = 0; i < w->nnodes; i++) {
        int rc = cl__view_put(w, i, 0.0);
        if (rc != 0)
            return rc;
    }
    if (view_count(w->view) != w->nnodes)
        return ERR_STATE;
    if (view_refresh_light(w->view, w->nnodes) != 0)
        return ERR_NOMEM;
    for (size_t g = 0; g < w->cfg.hb_groups; g++) {
        double at = w->cfg.heartbeat_s * (double)g / (double)w->cfg.hb_groups;
        int rc = engine_at(w->eng, at, cl_heartbeat_ev, w, g);
        if (rc != 0)
            return rc;
    }
    return 0;
}
