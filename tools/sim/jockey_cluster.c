/* jockey_cluster.c - `paddock-sim jockey` on the cluster simulator (jockey_cluster.h). */
#include <math.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/place.h"
#include "tools/sim/cluster.h"
#include "tools/sim/jockey_cluster.h"

#define JC__NODE_CPUS 8.0

double jockey_cluster_scale(double critical_path_s)
{
    double s = critical_path_s / 600.0;
    return s > 1.0 ? s : 1.0;
}

/* A cluster with twice the job's largest allocation in cores, half of them busy with other
 * tenants' regular work on average, the daemon's placement settings, no I/O (a task runs its
 * spec's run time, as in the token-slice engine), unit token costs (C(p, a)'s). */
static void jc__config(struct cluster_config *cfg, int max_tokens, double scale,
                       const struct jockey_cond *c, uint64_t seed)
{
    cluster_config_default(cfg);
    size_t nodes = (size_t)ceil(2.0 * max_tokens / JC__NODE_CPUS);
    cfg->nodes = nodes > 0 ? nodes : 1;
    cfg->rack_size = 20;
    cfg->node_cpus = JC__NODE_CPUS;
    cfg->seed = seed;
    cfg->no_io = 1;
    cfg->hold_max_s = PLACE_HOLD_MAX_S;
    cfg->heartbeat_s = scale;
    cfg->rm_delay_s = 0.5 * scale;
    cfg->bg_runtime_s = 20.0 * scale;
    cfg->node_timeout_s = 3.0 * scale;
    cfg->bg_util = 0.5;
    cfg->noise.runtime_sigma = c->noise_sigma;
    cfg->noise.tail_prob = 0;
    cfg->noise.straggler_prob = c->straggler_prob;
    cfg->noise.straggler_min = c->straggler_min > 1 ? c->straggler_min : 1;
    cfg->noise.straggler_max = c->straggler_max > 1 ? c->straggler_max : 1;
    cfg->noise.fail_prob = c->fail_prob;
    cfg->noise.node_mtbf_s = 0;
    /* load phases swing each node's background load: the spare capacity the old engine drew */
    if (c->phase_mean_s > 0) {
        cfg->noise.phase_s = c->phase_mean_s;
    } else {
        cfg->noise.phase_s = 0;
        cfg->noise.phase_sigma = 0;
    }
    struct rng r;
    rng_seed_stream(&r, seed, 0x736c6f77ull);
    cfg->run_slowdown = c->slow_sigma > 0 ? exp(c->slow_sigma * rng_normal(&r)) : 1.0;
}

int jockey_cluster_train(const struct spec *spec, int max_tokens, int tokens, double scale,
                         const struct jockey_cond *c, uint64_t seed, struct jockey_attempts *rec)
{
    struct cluster_config cfg;
    jc__config(&cfg, max_tokens, scale, c, seed);
    cfg.opp_factor = 0; /* no spare capacity */
    cfg.trace = 1;
    cfg.max_time_s = 1e9;
    struct cluster_jockey jk = {.policy = CLUSTER_JOCKEY_FIXED,
                                .fixed_tokens = tokens,
                                .deadline_s = 1e9,
                                .max_tokens = max_tokens};
    struct cluster_job job = {.spec = spec, .arrival_s = 0, .jockey = &jk};
    struct cluster_result res;
    char msg[256];
    int rc = cluster_run(&cfg, &job, 1, &res, msg, sizeof msg);
    if (rc == 0 && (res.job_stats == NULL || !res.job_stats[0].done))
        rc = ERR_INVAL; /* the training run must finish */
    rec->n = 0;
    if (rc == 0 && res.ntrace > rec->cap) {
        struct profile_attempt *v = mem_reallocarray(rec->v, res.ntrace, sizeof *v);
        if (v == NULL)
            rc = ERR_NOMEM;
        else {
            rec->v = v;
            rec->cap = res.ntrace;
        }
    }
    for (size_t i = 0; rc == 0 && i < res.ntrace; i++) {
        const struct cluster_trace_rec *t = &res.trace[i];
        if (t->outcome < 0)
            continue; /* preempted: neither a run nor a failure */
        const struct spec_task *st = &spec->tasks[t->task];
        double q = t->placed_s - t->ready_s, init = t->start_s - t->queued_s;
        rec->v[rec->n++] = (struct profile_attempt){.stage = (int)st->stage,
                                                    .queue_s = q > 0 ? q : 0,
                                                    .init_s = init > 0 ? init : 0,
                                                    .run_s = t->end_s - t->start_s,
                                                    .input_bytes = (double)st->input_bytes,
                                                    .est_s = st->runtime_s,
                                                    .ok = t->outcome == 1};
    }
    mem_free(res.qtimes);
    mem_free(res.trace);
    mem_free(res.job_stats);
    return rc;
}

int jockey_cluster_run(const struct jockey_world *w, const struct jsim_plan *plan,
                       enum jockey_policy p, double scale, double opp_factor,
                       const struct jockey_cond *c, uint64_t seed, struct jockey_result *out)
{
    memset(out, 0, sizeof *out);
    struct cluster_config cfg;
    jc__config(&cfg, w->max_tokens, scale, c, seed);
    cfg.opp_factor = opp_factor;
    cfg.trace = 1; /* the job's preemptions */
    double last_deadline = w->change_at_s > 0 ? w->change_to_s : w->deadline_s;
    cfg.max_time_s = 20.0 * (w->deadline_s > last_deadline ? w->deadline_s : last_deadline);
    struct cluster_jockey jk = {.plan = plan,
                                .deadline_s = w->deadline_s,
                                .utility = &w->utility,
                                .max_tokens = w->max_tokens,
                                .change_at_s = w->change_at_s,
                                .change_to_s = w->change_to_s};
    switch (p) {
    case JOCKEY_POLICY_JOCKEY:
        jk.policy = CLUSTER_JOCKEY_CONTROL;
        jk.speed = w->stage_ratio != NULL;
        break;
    case JOCKEY_POLICY_NOADAPT:
        jk.policy = CLUSTER_JOCKEY_NOADAPT;
        break;
    case JOCKEY_POLICY_AMDAHL:
        jk.policy = CLUSTER_JOCKEY_AMDAHL;
        break;
    default:
        jk.policy = CLUSTER_JOCKEY_FIXED;
        jk.fixed_tokens = w->max_tokens;
        break;
    }
    struct cluster_job job = {.spec = w->spec, .arrival_s = 0, .jockey = &jk};
    struct cluster_result res;
    char msg[256];
    int rc = cluster_run(&cfg, &job, 1, &res, msg, sizeof msg);
    if (rc == 0 && res.job_stats == NULL)
        rc = ERR_NOMEM;
    if (rc == 0) {
        const struct cluster_job_stat *st = &res.job_stats[0];
        out->completion_s = st->makespan_s;
        out->alloc_mean = st->alloc_mean;
        out->work_s = st->work_s;
        out->deadline_s = st->deadline_s;
        out->oracle = (int)ceil(st->work_s / st->deadline_s);
        if (out->oracle < 1)
            out->oracle = 1;
        out->met = st->done && st->makespan_s <= st->deadline_s;
        out->alloc_before = st->alloc_before;
        out->alloc_after = st->alloc_after;
        out->first_tokens = st->first_tokens;
        out->peak_tokens = st->peak_tokens;
        out->attempts = (long)res.attempts;
        out->failures = (long)res.failures;
        out->upgrades = (long)st->upgrades;
        out->downgrades = (long)st->downgrades;
        for (size_t i = 0; i < res.ntrace; i++)
            out->preemptions += res.trace[i].outcome < 0;
    }
    mem_free(res.qtimes);
    mem_free(res.trace);
    mem_free(res.job_stats);
    return rc;
}
