/* cluster_run.c - setting up a simulated cluster, running it, and its figures. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/err.h"
#include "common/mem.h"
#include "tools/sim/cluster_internal.h"

void cluster_config_default(struct cluster_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->nodes = 1000;
    cfg->rack_size = 40;
    cfg->node_cpus = 8;
    cfg->node_mem_mb = 32768;
    cfg->seed = 1;
    cfg->estimation = 1;
    cfg->status_matrix = 1;
    cfg->tokens = 40;
    cfg->opp_factor = 1.0;
    cfg->arrival_mean_s = 0.5;
    cfg->heartbeat_s = 1.0;
    cfg->hb_groups = 10;
    cfg->rm_delay_s = 0.5;
    cfg->net_delay_s = 0.001;
    cfg->round_s = 0.02;
    cfg->max_batch = 256;
    cfg->tick_s = 0.25;
    cfg->max_attempts = 4;
    cfg->node_timeout_s = 3.0;
    cfg->bg_util = 0.5;
    cfg->bg_runtime_s = 20;
    cfg->bg_cpu = 1;
    cfg->window_s = 60;
    cfg->max_time_s = 36000;
    cfg->run_slowdown = 1.0;
    engine_noise_default(&cfg->noise);
}

static int cl__check(const struct cluster_config *c, char *msg, size_t cap)
{
    if (c->nodes < 1 || c->nodes > CLUSTER_MAX_NODES)
        return err_fmt(msg, cap, ERR_INVAL, "nodes must be 1..%d", CLUSTER_MAX_NODES);
    if (c->rack_size < 1 || !(c->node_cpus > 0) || !(c->node_mem_mb > 0) || c->tokens < 1 ||
        !(c->heartbeat_s > 0) || c->hb_groups < 1 || !(c->rm_delay_s >= 0) ||
        !(c->rm_delay_s < c->heartbeat_s) || !(c->net_delay_s >= 0) || !(c->round_s >= 0) ||
        c->max_batch < 1 || !(c->hold_max_s >= 0) || !(c->tick_s > 0) ||
        !(c->matrix_min_interval_s >= 0) || c->max_attempts < 1 || !(c->bg_util >= 0) ||
        !(c->bg_runtime_s > 0) || !(c->bg_cpu > 0) || c->bg_cpu > c->node_cpus ||
        !(c->window_s > 0) || !(c->max_time_s > 0) || !(c->opp_factor >= 0))
        return err_fmt(msg, cap, ERR_INVAL, "bad cluster configuration");
    return 0;
}

static int cl__cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double cl__quantile(const double *v, size_t n, double q)
{
    if (n == 0)
        return 0;
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    if (i + 1 >= n)
        return v[n - 1];
    return v[i] + (pos - (double)i) * (v[i + 1] - v[i]);
}

/* Figure 8c: per window, each machine's mean queueing time; the stdev of those means across the
 * machines that started a job task in the window. */
static double cl__stdev_windows(const struct cl_world *w, double window, double *sum, uint32_t *cnt,
                                uint32_t *touched)
{
    double acc = 0;
    size_t nwin = 0, i = 0;
    while (i < w->nsamples) {
        double wend = isfinite(window) ? (floor(w->samples[i].t / window) + 1) * window : INFINITY;
        size_t nt = 0;
        for (; i < w->nsamples && w->samples[i].t < wend; i++) {
            uint32_t n = w->samples[i].node;
            if (cnt[n] == 0)
                touched[nt++] = n;
            cnt[n]++;
            sum[n] += w->samples[i].q;
        }
        if (nt >= 2) {
            double m = 0, m2 = 0;
            for (size_t k = 0; k < nt; k++) {
                double x = sum[touched[k]] / cnt[touched[k]];
                m += x;
                m2 += x * x;
            }
            m /= (double)nt;
            double var = m2 / (double)nt - m * m;
            acc += sqrt(var > 0 ? var : 0);
            nwin++;
        }
        for (size_t k = 0; k < nt; k++) {
            sum[touched[k]] = 0;
            cnt[touched[k]] = 0;
        }
    }
    return nwin ? acc / (double)nwin : 0;
}

static int cl__figures(struct cl_world *w, struct cluster_result *r)
{
    size_t n = w->nsamples;
    double *q = mem_calloc(n ? n : 1, sizeof *q);
    double *sum = mem_calloc(w->nnodes, sizeof *sum);
    uint32_t *cnt = mem_calloc(w->nnodes, sizeof *cnt);
    uint32_t *touched = mem_calloc(w->nnodes, sizeof *touched);
    if (q == NULL || sum == NULL || cnt == NULL || touched == NULL) {
        mem_free(q);
        mem_free(sum);
        mem_free(cnt);
        mem_free(touched);
        return ERR_NOMEM;
    }
    double tot = 0;
    for (size_t i = 0; i < n; i++) {
        q[i] = w->samples[i].q;
        tot += q[i];
    }
    qsort(q, n, sizeof *q, cl__cmp_double);
    r->q_mean = n ? tot / (double)n : 0;
    r->q_p50 = cl__quantile(q, n, 0.50);
    r->q_p90 = cl__quantile(q, n, 0.90);
    r->q_p99 = cl__quantile(q, n, 0.99);
    r->q_max = n ? q[n - 1] : 0;
    r->qtimes = q;
    r->nqtimes = n;
    r->q_stdev_machines = cl__stdev_windows(w, w->cfg.window_s, sum, cnt, touched);
    r->q_stdev_run = cl__stdev_windows(w, INFINITY, sum, cnt, touched);
    mem_free(sum);
    mem_free(cnt);
    mem_free(touched);
    double span = w->last_finish - w->first_arrival;
    double capacity = w->cfg.node_cpus * (double)w->nnodes;
    r->util = span > 0 ? w->cpu_int / (capacity * span) : 0;
    r->util_jobs = span > 0 ? w->jobs_int / (capacity * span) : 0;
    r->work_cpu_s = w->jobs_int;
    double ms = 0;
    size_t nd = 0;
    for (size_t j = 0; j < w->njobs; j++)
        if (w->jobs[j].done) {
            ms += w->jobs[j].finish - w->jobs[j].arrival;
            nd++;
        }
    r->makespan_mean_s = nd ? ms / (double)nd : 0;
    r->view_age_mean_s = w->age_n ? w->age_sum / (double)w->age_n : 0;
    r->sim_time_s = w->last_finish;
    return 0;
}

static double cl__wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int cluster_run(const struct cluster_config *cfg, const struct cluster_job *jobs, size_t njobs,
                struct cluster_result *out, char *msg, size_t cap)
{
    memset(out, 0, sizeof *out);
    int rc = cl__check(cfg, msg, cap);
    if (rc != 0)
        return rc;
    if (njobs < 1 || njobs > CLUSTER_MAX_JOBS)
        return err_fmt(msg, cap, ERR_INVAL, "jobs must be 1..%d", CLUSTER_MAX_JOBS);
    for (size_t i = 0; i < njobs; i++)
        if (jobs[i].spec == NULL || jobs[i].spec->ntasks > 0xffffff)
            return err_fmt(msg, cap, ERR_INVAL, "job %zu: no spec or too many tasks", i);
    double t0 = cl__wall();
    struct cl_world *w = mem_calloc(1, sizeof *w);
    if (w == NULL)
        return ERR_NOMEM;
    w->cfg = *cfg;
    w->res = out;
    out->nodes = cfg->nodes;
    out->jobs = njobs;
    w->bg_rate = cfg->bg_util * cfg->node_cpus / (cfg->bg_cpu * cfg->bg_runtime_s);
    if ((rc = engine_new(&w->eng)) != 0 || (rc = view_new(&w->view)) != 0)
        goto done;
    if ((rc = cl_nodes_init(w)) != 0 || (rc = cl_view_init(w)) != 0)
        goto done;
    w->jobs = mem_calloc(njobs, sizeof *w->jobs);
    if (w->jobs == NULL) {
        rc = ERR_NOMEM;
        goto done;
    }
    w->njobs = njobs;
    for (size_t i = 0; i < njobs; i++) {
        if ((rc = cl_job_init(w, &w->jobs[i], &jobs[i], i)) != 0) {
            rc = err_fmt(msg, cap, rc, "job %zu: %s%s", i, err_text(rc),
                         rc == ERR_INVAL && jobs[i].jockey != NULL
                             ? " (Jockey: a deadline, max_tokens and a policy's tokens are needed)"
                             : "");
            goto done;
        }
        if ((rc = engine_at(w->eng, jobs[i].arrival_s, cl_job_arrive_ev, w, i)) != 0)
            goto done;
    }
    engine_run(w->eng, cfg->max_time_s);
    if (w->err != 0) {
        rc = err_fmt(msg, cap, w->err, "simulation stopped: %s", err_text(w->err));
        goto done;
    }
    if (w->jobs_finished < njobs) {
        cl_account(w, 0, 0);
        w->last_finish = engine_now(w->eng);
    }
    out->events = engine_events_run(w->eng);
    rc = cl__figures(w, out);
    for (size_t i = 0; rc == 0 && i < njobs; i++)
        if (jobs[i].jockey != NULL && out->job_stats == NULL &&
            (out->job_stats = mem_calloc(njobs, sizeof *out->job_stats)) == NULL)
            rc = ERR_NOMEM;
    for (size_t i = 0; rc == 0 && out->job_stats != NULL && i < njobs; i++)
        cl_jockey_stat(w, &w->jobs[i], &out->job_stats[i]);
done:
    if (w->jobs != NULL)
        for (size_t i = 0; i < w->njobs; i++)
            cl_job_close(&w->jobs[i]);
    mem_free(w->jobs);
    cl_nodes_close(w);
    mem_free(w->samples);
    view_destroy(&w->view);
    engine_destroy(&w->eng);
    mem_free(w);
    out->wall_s = cl__wall() - t0;
    return rc;
}
