/* arbiter_sim_jobs.c - the jobs of `paddock-sim arbiter`: WfCommons DAGs (imported in-process
 * with the importer paddock-sim cluster uses) or Verma §IV's synthetic Facebook mix, their
 * true run times, arrivals, deadlines and oracles. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/jsim.h"
#include "jm/progress.h"
#include "jm/shape.h"
#include "jm/spec.h"
#include "tools/sim/arbiter_sim_internal.h"
#include "tools/sim/cluster.h"
#include "tools/sim/engine.h"

/* Verma §IV Table I (from Zaharia et al., Table 3): maps, reduces, jobs run. */
static const struct {
    uint32_t maps, reduces, jobs;
} asj__fb_bins[] = {{1, 0, 380},   {2, 0, 160},  {10, 3, 140},   {50, 0, 80},     {100, 0, 60},
                    {200, 50, 60}, {400, 0, 40}, {800, 180, 40}, {2400, 360, 20}, {4800, 0, 20}};
#define ASJ_FB_MAP_MU     9.9511 /* LN(9.9511, 1.6764) ms */
#define ASJ_FB_MAP_SIGMA  1.6764
#define ASJ_FB_RED_MU     12.375 /* LN(12.375, 1.6262) ms */
#define ASJ_FB_RED_SIGMA  1.6262
#define ASJ_STREAM_ARRIVE 0x61727276ull
#define ASJ_STREAM_JOB    0x6a6f6200000ull

void arbiter_sim_config_default(struct arbiter_sim_config *c)
{
    *c = (struct arbiter_sim_config){.capacity = 100,
                                     .jobs = 200,
                                     .load = 0.7,
                                     .seed = 1,
                                     .mix = ARBITER_SIM_WFCOMMONS,
                                     .deadline_frac = 0.5,
                                     .alone_min_s = 20,
                                     .alone_max_s = 300,
                                     .fb_task_scale = 0.1,
                                     .fb_time_scale = 0.1,
                                     .task_sigma = 0.3,
                                     .job_sigma = 0.2,
                                     .k = ARBITER_K_DEFAULT,
                                     .slack = 1.2,
                                     .period_frac = 0.04,
                                     .grace_frac = 0.25,
                                     .urgent_frac = 0.2,
                                     .calib_from = ARBITER_SIM_CALIB_LEDGER,
                                     .spread = 1,
                                     .own_spread = 1,
                                     .engine = ARBITER_SIM_ENGINE_CLUSTER,
                                     .node_factor = 2};
}

static void asj__job_free(struct arbiter_sim_job *j)
{
    mem_free(j->est);
    mem_free(j->dur);
    mem_free(j->bl);
    mem_free(j->crun);
    spec_destroy(&j->cspec);
    if (j->owns_graph) {
        mem_free(j->tok);
        mem_free(j->npred);
        mem_free(j->succ_at);
        mem_free(j->succ);
        mem_free(j->by_bl);
        mem_free(j->bl_rank);
    }
    memset(j, 0, sizeof *j);
}

void arbiter_sim_jobs_destroy(arbiter_sim_jobs_t **p)
{
    if (p == NULL || *p == NULL)
        return;
    struct arbiter_sim_jobs *s = *p;
    for (size_t i = 0; i < s->n; i++)
        asj__job_free(&s->v[i]);
    for (size_t i = 0; i < s->ntmpl; i++) {
        asj__job_free(&s->tmpl[i]);
        mem_free(s->tmpl_names[i]);
        if (s->tmpl_spec != NULL)
            spec_destroy(&s->tmpl_spec[i]);
    }
    mem_free(s->tmpl_spec);
    mem_free(s->v);
    mem_free(s->tmpl);
    mem_free(s->tmpl_names);
    mem_free(s);
    *p = NULL;
}

/* ---- building a job's graph ----------------------------------------------------------------- */

struct asj__edges {
    uint32_t *from, *to;
    size_t n, cap;
};

static int asj__edge(struct asj__edges *e, uint32_t from, uint32_t to)
{
    if (e->n == e->cap) {
        size_t nc = e->cap ? e->cap * 2 : 1024;
        uint32_t *f = mem_reallocarray(e->from, nc, sizeof *f);
        if (f == NULL)
            return ERR_NOMEM;
        e->from = f;
        uint32_t *t = mem_reallocarray(e->to, nc, sizeof *t);
        if (t == NULL)
            return ERR_NOMEM;
        e->to = t;
        e->cap = nc;
    }
    e->from[e->n] = from;
    e->to[e->n] = to;
    e->n++;
    return 0;
}

struct asj__blv {
    double bl;
    uint32_t v;
};

static int asj__by_bl_cmp(const void *a, const void *b)
{
    const struct asj__blv *x = a, *y = b;
    if (x->bl != y->bl)
        return x->bl > y->bl ? -1 : 1;
    return (x->v > y->v) - (x->v < y->v);
}

/* With n, est and tok set: the graph from the edges, bottom levels and their order, work, path,
 * largest task. Returns 0 or ERR_NOMEM / ERR_INVAL (a cycle). */
static int asj__finish_graph(struct arbiter_sim_job *j, const struct asj__edges *e)
{
    size_t n = j->n;
    j->owns_graph = 1;
    j->npred = mem_calloc(n, sizeof *j->npred);
    j->succ_at = mem_calloc(n + 1, sizeof *j->succ_at);
    j->succ = mem_calloc(e->n ? e->n : 1, sizeof *j->succ);
    j->bl = mem_calloc(n, sizeof *j->bl);
    j->by_bl = mem_calloc(n, sizeof *j->by_bl);
    j->bl_rank = mem_calloc(n, sizeof *j->bl_rank);
    uint32_t *fill = mem_calloc(n + 1, sizeof *fill), *order = mem_calloc(n, sizeof *order);
    uint32_t *left = mem_calloc(n, sizeof *left);
    int rc = 0;
    if (j->npred == NULL || j->succ_at == NULL || j->succ == NULL || j->bl == NULL ||
        j->by_bl == NULL || j->bl_rank == NULL || fill == NULL || order == NULL || left == NULL) {
        rc = ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < e->n; i++) {
        j->succ_at[e->from[i] + 1]++;
        j->npred[e->to[i]]++;
    }
    for (size_t v = 0; v < n; v++)
        j->succ_at[v + 1] += j->succ_at[v];
    memcpy(fill, j->succ_at, (n + 1) * sizeof *fill);
    for (size_t i = 0; i < e->n; i++)
        j->succ[fill[e->from[i]]++] = e->to[i];
    /* Kahn's order, then bottom levels from the end. */
    memcpy(left, j->npred, n * sizeof *left);
    size_t head = 0, tail = 0;
    for (uint32_t v = 0; v < n; v++)
        if (left[v] == 0)
            order[tail++] = v;
    while (head < tail) {
        uint32_t v = order[head++];
        for (uint32_t x = j->succ_at[v]; x < j->succ_at[v + 1]; x++)
            if (--left[j->succ[x]] == 0)
                order[tail++] = j->succ[x];
    }
    if (tail != n) {
        rc = ERR_INVAL;
        goto out;
    }
    j->work_est = 0;
    j->path_est = 0;
    j->max_tok = 1;
    for (size_t i = n; i-- > 0;) {
        uint32_t v = order[i];
        double tailmax = 0;
        for (uint32_t x = j->succ_at[v]; x < j->succ_at[v + 1]; x++)
            if (j->bl[j->succ[x]] > tailmax)
                tailmax = j->bl[j->succ[x]];
        j->bl[v] = j->est[v] + tailmax;
        if (j->bl[v] > j->path_est)
            j->path_est = j->bl[v];
        j->work_est += j->est[v] * j->tok[v];
        if (j->tok[v] > j->max_tok)
            j->max_tok = j->tok[v];
    }
    struct asj__blv *tmp = mem_calloc(n, sizeof *tmp);
    if (tmp == NULL) {
        rc = ERR_NOMEM;
        goto out;
    }
    for (uint32_t v = 0; v < n; v++)
        tmp[v] = (struct asj__blv){j->bl[v], v};
    qsort(tmp, n, sizeof *tmp, asj__by_bl_cmp);
    for (uint32_t r = 0; r < n; r++) {
        j->by_bl[r] = tmp[r].v;
        j->bl_rank[tmp[r].v] = r;
    }
    mem_free(tmp);
out:
    mem_free(fill);
    mem_free(order);
    mem_free(left);
    return rc;
}

/* The per-node arrays of a new job of n nodes (tasks and barriers): 0 or ERR_NOMEM. */
static int asj__alloc(struct arbiter_sim_job *j, size_t n)
{
    j->n = n;
    j->est = mem_calloc(n, sizeof *j->est);
    j->tok = mem_calloc(n, sizeof *j->tok);
    j->owns_graph = 1;
    return j->est == NULL || j->tok == NULL ? ERR_NOMEM : 0;
}

/* A WfCommons spec as a template: tasks, then one barrier node per stage. */
static int asj__from_spec(const struct spec *s, uint32_t capacity, struct arbiter_sim_job *j)
{
    memset(j, 0, sizeof *j);
    size_t nt = s->ntasks, n = nt + s->nstages;
    if (asj__alloc(j, n) != 0)
        return ERR_NOMEM;
    struct asj__edges e = {0};
    int rc = 0;
    for (size_t t = 0; t < nt && rc == 0; t++) {
        const struct spec_task *st = &s->tasks[t];
        j->est[t] = st->runtime_s;
        uint32_t k = arbiter_task_tokens(st->cpu, st->mem_mb, 0, 0);
        j->tok[t] = k > capacity ? capacity : k;
        for (size_t a = 0; a < st->nafter && rc == 0; a++)
            rc = asj__edge(&e, (uint32_t)st->after[a], (uint32_t)t);
        const struct spec_stage *sg = &s->stages[st->stage];
        for (size_t a = 0; a < sg->nafter && rc == 0; a++)
            rc = asj__edge(&e, (uint32_t)(nt + sg->after[a]), (uint32_t)t);
    }
    for (size_t g = 0; g < s->nstages && rc == 0; g++) {
        const struct spec_stage *sg = &s->stages[g];
        for (size_t a = 0; a < sg->ntasks && rc == 0; a++)
            rc = asj__edge(&e, (uint32_t)sg->tasks[a], (uint32_t)(nt + g));
        for (size_t a = 0; a < sg->nafter && rc == 0; a++)
            rc = asj__edge(&e, (uint32_t)(nt + sg->after[a]), (uint32_t)(nt + g));
    }
    if (rc == 0)
        rc = asj__finish_graph(j, &e);
    mem_free(e.from);
    mem_free(e.to);
    return rc;
}

/* A Facebook job of Table I: maps, a barrier, reduces; estimates in seconds. */
static int asj__facebook(const struct arbiter_sim_config *cfg, struct rng *r,
                         struct arbiter_sim_job *j)
{
    memset(j, 0, sizeof *j);
    uint32_t total = 0;
    for (size_t b = 0; b < sizeof asj__fb_bins / sizeof *asj__fb_bins; b++)
        total += asj__fb_bins[b].jobs;
    uint64_t pick = rng_below(r, total);
    size_t b = 0;
    while (pick >= asj__fb_bins[b].jobs)
        pick -= asj__fb_bins[b++].jobs;
    uint32_t maps = (uint32_t)ceil(asj__fb_bins[b].maps * cfg->fb_task_scale);
    uint32_t reds =
        asj__fb_bins[b].reduces ? (uint32_t)ceil(asj__fb_bins[b].reduces * cfg->fb_task_scale) : 0;
    if (maps < 1)
        maps = 1;
    size_t n = maps + (reds ? reds + 1 : 0);
    if (asj__alloc(j, n) != 0)
        return ERR_NOMEM;
    struct asj__edges e = {0};
    int rc = 0;
    for (uint32_t v = 0; v < maps; v++) {
        j->est[v] = rng_lognormal(r, ASJ_FB_MAP_MU, ASJ_FB_MAP_SIGMA) / 1e3 * cfg->fb_time_scale;
        j->tok[v] = 1;
    }
    if (reds) {
        uint32_t bar = maps;
        for (uint32_t v = 0; v < maps && rc == 0; v++)
            rc = asj__edge(&e, v, bar);
        for (uint32_t v = bar + 1; v < n && rc == 0; v++) {
            j->est[v] =
                rng_lognormal(r, ASJ_FB_RED_MU, ASJ_FB_RED_SIGMA) / 1e3 * cfg->fb_time_scale;
            j->tok[v] = 1;
            rc = asj__edge(&e, bar, v);
        }
    }
    if (rc == 0)
        rc = asj__finish_graph(j, &e);
    mem_free(e.from);
    mem_free(e.to);
    return rc;
}

/* An instance of a WfCommons template scaled to take `alone` seconds on the whole cluster (on
 * estimates); the graph is borrowed from the template. */
static int asj__instance(const struct arbiter_sim_job *t, double scale, struct arbiter_sim_job *j)
{
    *j = *t;
    j->owns_graph = 0;
    j->est = mem_calloc(t->n, sizeof *j->est);
    j->bl = mem_calloc(t->n, sizeof *j->bl);
    j->dur = NULL;
    if (j->est == NULL || j->bl == NULL)
        return ERR_NOMEM;
    for (size_t v = 0; v < t->n; v++) {
        j->est[v] = t->est[v] * scale;
        j->bl[v] = t->bl[v] * scale;
    }
    j->work_est = t->work_est * scale;
    j->path_est = t->path_est * scale;
    return 0;
}

/* The standard normal quantile at p in (0, 1), by bisection on erfc (a few per run). */
static double asj__probit(double p)
{
    double lo = -10, hi = 10;
    for (int i = 0; i < 100; i++) {
        double mid = (lo + hi) / 2;
        if (0.5 * erfc(-mid / sqrt(2.0)) < p)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}

/* What a profile of earlier runs reports of the task noise (run time / estimate, lognormal with
 * mean 1 and sigma task_sigma) as PROFILE_NQ quantiles: the grid's ends at 0.5% and 99.5%, what
 * a few hundred tasks show. */
static void asj__noise_q(double sigma, double *q)
{
    for (int k = 0; k < PROFILE_NQ; k++) {
        double u = (double)k / (PROFILE_NQ - 1);
        u = u < 0.005 ? 0.005 : u > 0.995 ? 0.995 : u;
        q[k] = exp(-sigma * sigma / 2 + sigma * asj__probit(u));
    }
}

/* A profile of spec sp whose every stage saw the task noise (asj__noise_q) over 100 tasks.
 * Returns 0 or ERR_NOMEM (p then empty). */
static int asj__noise_profile(const struct spec *sp, double sigma, struct profile *p)
{
    profile_init(p);
    p->stages = mem_calloc(sp->nstages > 0 ? sp->nstages : 1, sizeof *p->stages);
    if (p->stages == NULL)
        return ERR_NOMEM;
    for (size_t s = 0; s < sp->nstages; s++) {
        struct profile_stage *st = &p->stages[s];
        p->nstages = (int)s + 1;
        if ((st->name = mem_strdup(sp->stages[s].name)) == NULL) {
            profile_close(p);
            return ERR_NOMEM;
        }
        st->tasks = st->attempts = st->ratio_samples = 100;
        asj__noise_q(sigma, st->ratio_q);
        memcpy(st->runtime_q, st->ratio_q, sizeof st->runtime_q);
        st->runtime_total = 100;
    }
    return 0;
}

static int asj__templates(const struct arbiter_sim_config *cfg, struct arbiter_sim_jobs *s,
                          char *msg, size_t cap)
{
    struct cluster_workloads *w = NULL;
    int rc = cluster_workloads_load(cfg->workloads, 1.0, 0, 0, &w, msg, cap);
    if (rc != 0)
        return rc;
    size_t nw = cluster_workloads_count(w);
    s->tmpl = mem_calloc(nw, sizeof *s->tmpl);
    s->tmpl_names = mem_calloc(nw, sizeof *s->tmpl_names);
    s->tmpl_spec = mem_calloc(nw, sizeof *s->tmpl_spec);
    if (s->tmpl == NULL || s->tmpl_names == NULL || s->tmpl_spec == NULL)
        rc = ERR_NOMEM;
    for (size_t i = 0; rc == 0 && i < nw; i++) {
        struct spec *sp = NULL;
        rc = cluster_workloads_make(w, i, cfg->seed, 1, 1, &sp, msg, cap);
        if (rc == 0) {
            rc = asj__from_spec(sp, cfg->capacity, &s->tmpl[i]);
            s->ntmpl = i + 1;
            /* the JM's list schedule of the spec as paddock submit sends it (tools/jobdir.c):
             * the cluster's tokens and, with spread, a profile of the task noise; its place
             * between the bounds and its path's stretch do not change when every run time is
             * scaled, so instances share them */
            struct arbiter_shape sh;
            struct profile prof;
            profile_init(&prof);
            int use = cfg->spread && cfg->task_sigma > 0;
            if (rc == 0 && use)
                rc = asj__noise_profile(sp, cfg->task_sigma, &prof);
            if (rc == 0)
                rc = shape_from_spec(sp, NULL, 0, 0, 0, &sh, msg, cap);
            double path = sh.path;
            if (rc == 0)
                rc = shape_alpha(sp, use ? &prof : NULL, 0, 0, cfg->capacity, &sh, NULL, msg, cap);
            profile_close(&prof);
            if (rc == 0) {
                s->tmpl[i].alpha = sh.alpha;
                s->tmpl[i].path_stretch = path > 0 ? sh.path / path : 1;
                s->tmpl[i].spread = sh.spread;
            }
            if (rc == 0 && (s->tmpl_names[i] = mem_strdup(cluster_workloads_name(w, i))) == NULL)
                rc = ERR_NOMEM;
            if (rc != 0 && msg[0] == '\0')
                err_fmt(msg, cap, rc, "%s: %s", cluster_workloads_name(w, i), err_text(rc));
        }
        if (rc == 0 && cfg->engine == ARBITER_SIM_ENGINE_CLUSTER)
            s->tmpl_spec[i] = sp; /* the cluster engine's jobs are made from it */
        else
            spec_destroy(&sp);
    }
    cluster_workloads_destroy(&w);
    return rc;
}

/* A Facebook job's alpha and path stretch (arbiter_sim_job) from the JM's simulator, as
 * shape_alpha computes them for a spec (shape_place_sim): the job as jm/jsim sees it (maps in
 * stage 0, reduces in stage 1 behind a barrier, unit tokens) on its width (at most capacity),
 * once at the estimates or, with spread, sampled from the task noise as a profile reports it.
 * j's estimates and width are set. Returns 0 or an ERR_*. */
static int asj__fb_alpha(struct arbiter_sim_job *j, int spread, double sigma, char *msg, size_t cap)
{
    size_t maps = 0;
    while (maps < j->n && j->tok[maps] > 0)
        maps++;
    size_t reds = maps < j->n ? j->n - maps - 1 : 0;
    int nstages = reds ? 2 : 1;
    jsim_job_t *jj = jsim_job_new(nstages, (int)(maps + reds));
    if (jj == NULL)
        return ERR_NOMEM;
    int rc = 0;
    for (size_t v = 0; v < maps && rc == 0; v++)
        rc = jsim_job_set_task(jj, (int)v, 0, j->est[v]);
    for (size_t v = 0; v < reds && rc == 0; v++)
        rc = jsim_job_set_task(jj, (int)(maps + v), 1, j->est[maps + 1 + v]);
    if (rc == 0 && reds)
        rc = jsim_job_add_barrier(jj, 0, 1);
    if (rc == 0)
        rc = jsim_job_finalize(jj, msg, cap);
    struct jsim_model m = {0};
    struct progress_model pm = {0};
    int n[2] = {0, 0};
    if (rc == 0)
        rc = jsim_model_init(&m, jj, NULL, NULL);
    for (int st = 0; rc == 0 && spread && st < m.nstages; st++) {
        /* the task noise as a profile reports it (asj__noise_profile) */
        m.stages[st].from_profile = 1;
        m.stages[st].by_ratio = 1;
        asj__noise_q(sigma, m.stages[st].ratio_q);
    }
    if (rc == 0) {
        jsim_job_stage_sizes(jj, n);
        rc = progress_init(&pm, PROGRESS_VERTEXFRAC, nstages, n, NULL, NULL, NULL);
    }
    struct arbiter_shape sh = {.work = j->work_est, .path = j->path_est, .width = j->width};
    if (rc == 0)
        rc = shape_place_sim(jj, &m, &pm, spread ? SHAPE_ALPHA_RUNS : 1, j->width, &sh, NULL);
    progress_close(&pm);
    jsim_model_close(&m);
    jsim_job_destroy(&jj);
    if (rc != 0)
        return err_fmt(msg, cap, rc, "a Facebook job's list schedule: %s", err_text(rc));
    j->alpha = sh.alpha;
    j->path_stretch = j->path_est > 0 ? sh.path / j->path_est : 1;
    j->spread = sh.spread;
    return 0;
}

/* True run times, width, time alone, deadline and oracles of job j (its est set). */
static int asj__draw(const struct arbiter_sim_config *cfg, struct rng *r, struct arbiter_sim_job *j)
{
    j->dur = mem_calloc(j->n, sizeof *j->dur);
    if (j->dur == NULL)
        return ERR_NOMEM;
    double sj = cfg->job_sigma, st = cfg->task_sigma;
    double factor = rng_lognormal(r, -sj * sj / 2, sj);
    double sq = 0;
    j->work_true = 0;
    for (size_t v = 0; v < j->n; v++) {
        double noise = rng_lognormal(r, -st * st / 2, st);
        j->dur[v] = j->est[v] * factor * noise;
        j->work_true += j->dur[v] * j->tok[v];
        sq += (j->est[v] * j->tok[v]) * (j->est[v] * j->tok[v]);
    }
    /* The shape's spread as a profile of this noise would report it (the job factor dominates;
     * task noise averages out over many tasks, not along a short critical path). */
    double cvj = sqrt(exp(sj * sj) - 1), cvt = sqrt(exp(st * st) - 1);
    j->work_sd = sqrt(j->work_est * j->work_est * cvj * cvj + cvt * cvt * (1 + cvj * cvj) * sq);
    j->path_sd = j->path_est * sqrt(cvj * cvj + cvt * cvt);
    uint32_t peak = 0;
    if (arbiter_sim_makespan(j, UINT32_MAX, 0, &peak) < 0)
        return ERR_NOMEM;
    j->width = peak < 1 ? 1 : peak > cfg->capacity ? cfg->capacity : peak;
    if (j->width < j->max_tok)
        j->width = j->max_tok;
    j->alone = arbiter_sim_makespan(j, cfg->capacity, 1, NULL);
    if (j->alone < 0)
        return ERR_NOMEM;
    double u = rng_unif(r);
    if (rng_bernoulli(r, cfg->deadline_frac)) {
        /* A user sets a deadline from what they know, the time alone the estimates give (issue
         * 22 quotes at 1.3x the greedy makespan on the spec); Verma's deadlines on the true
         * time alone tell every job how slow it will run (docs/arbiter.md). */
        double base = j->alone;
        if (cfg->deadlines == ARBITER_SIM_DEADLINE_ESTIMATE &&
            (base = arbiter_sim_makespan(j, cfg->capacity, 0, NULL)) < 0)
            return ERR_NOMEM;
        j->deadline = (1 + u) * base;
        double td = ceil(j->work_true / j->deadline - 1e-9);
        j->oracle_td = td < 1 ? 1 : (uint32_t)td;
        uint32_t lo = j->max_tok, hi = cfg->capacity;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            double m = arbiter_sim_makespan(j, mid, 1, NULL);
            if (m < 0)
                return ERR_NOMEM;
            if (m <= j->deadline * (1 + 1e-9))
                hi = mid;
            else
                lo = mid + 1;
        }
        j->oracle_dag = lo;
    }
    return 0;
}

int arbiter_sim_jobs_new(const struct arbiter_sim_config *cfg, arbiter_sim_jobs_t **out, char *msg,
                         size_t cap)
{
    *out = NULL;
    if (msg != NULL && cap > 0)
        msg[0] = '\0';
    if (cfg->jobs < 1 || cfg->jobs > ARBITER_SIM_MAX_JOBS || cfg->capacity < 1 ||
        cfg->capacity > ARBITER_SIM_MAX_CAPACITY || !(cfg->load > 0))
        return err_fmt(msg, cap, ERR_INVAL, "jobs, capacity or load out of range");
    if (cfg->mix == ARBITER_SIM_WFCOMMONS && cfg->workloads == NULL)
        return err_fmt(msg, cap, ERR_INVAL, "no WfCommons directory");
    struct arbiter_sim_jobs *s = mem_calloc(1, sizeof *s);
    if (s == NULL)
        return ERR_NOMEM;
    s->capacity = cfg->capacity;
    int rc = 0;
    s->v = mem_calloc(cfg->jobs, sizeof *s->v);
    if (s->v == NULL)
        rc = ERR_NOMEM;
    if (rc == 0 && cfg->mix == ARBITER_SIM_WFCOMMONS)
        rc = asj__templates(cfg, s, msg, cap);
    /* Template time alone on the whole cluster (estimates), to scale instances by. */
    double *alone_t = NULL;
    if (rc == 0 && s->ntmpl > 0) {
        alone_t = mem_calloc(s->ntmpl, sizeof *alone_t);
        if (alone_t == NULL)
            rc = ERR_NOMEM;
        for (size_t i = 0; rc == 0 && i < s->ntmpl; i++)
            if ((alone_t[i] = arbiter_sim_makespan(&s->tmpl[i], cfg->capacity, 0, NULL)) <= 0)
                rc = err_fmt(msg, cap, ERR_INVAL, "%s: an empty workload", s->tmpl_names[i]);
    }
    double total = 0;
    for (size_t i = 0; rc == 0 && i < cfg->jobs; i++) {
        struct rng r;
        rng_seed_stream(&r, cfg->seed, ASJ_STREAM_JOB + i);
        struct arbiter_sim_job *j = &s->v[i];
        if (cfg->mix == ARBITER_SIM_FACEBOOK) {
            rc = asj__facebook(cfg, &r, j);
        } else {
            size_t t = (size_t)rng_below(&r, s->ntmpl);
            double lo = log(cfg->alone_min_s), hi = log(cfg->alone_max_s);
            double target = exp(lo + (hi - lo) * rng_unif(&r));
            rc = asj__instance(&s->tmpl[t], target / alone_t[t], j);
            j->tmpl_i = t;
            j->scale = target / alone_t[t];
        }
        s->n = i + 1;
        if (rc == 0)
            rc = asj__draw(cfg, &r, j);
        if (rc == 0 && cfg->mix == ARBITER_SIM_FACEBOOK)
            rc = asj__fb_alpha(j, cfg->spread && cfg->task_sigma > 0, cfg->task_sigma, msg, cap);
        total += j->work_true;
    }
    mem_free(alone_t);
    if (rc == 0 && cfg->engine == ARBITER_SIM_ENGINE_CLUSTER)
        rc = arbiter_cluster_prepare(s, cfg, msg, cap);
    if (rc == 0) {
        /* Offered load = true work / (capacity x horizon), horizon = jobs x mean gap. */
        s->mean_gap = total / (cfg->capacity * cfg->load) / (double)cfg->jobs;
        struct rng r;
        rng_seed_stream(&r, cfg->seed, ASJ_STREAM_ARRIVE);
        double t = 0;
        for (size_t i = 0; i < s->n; i++) {
            s->v[i].arrival = t;
            t += rng_exp(&r, s->mean_gap);
        }
    }
    if (rc != 0) {
        if (msg != NULL && cap > 0 && msg[0] == '\0')
            err_fmt(msg, cap, rc, "%s", err_text(rc));
        arbiter_sim_jobs_destroy(&s);
        return rc;
    }
    *out = s;
    return 0;
}

void arbiter_sim_jobs_info(const arbiter_sim_jobs_t *s, struct arbiter_sim_jobs_info *o)
{
    memset(o, 0, sizeof *o);
    o->jobs = s->n;
    o->mean_gap_s = s->mean_gap;
    double dag = 0, td = 0;
    for (size_t i = 0; i < s->n; i++) {
        const struct arbiter_sim_job *j = &s->v[i];
        for (size_t v = 0; v < j->n; v++)
            o->tasks += j->tok[v] > 0;
        o->work_token_s += j->work_true;
        o->alone_mean_s += j->alone;
        if (j->arrival > o->horizon_s)
            o->horizon_s = j->arrival;
        if (j->deadline > 0) {
            o->deadline_jobs++;
            dag += j->oracle_dag;
            td += j->oracle_td;
        }
    }
    if (s->n > 0)
        o->alone_mean_s /= (double)s->n;
    if (o->deadline_jobs > 0) {
        o->oracle_dag_mean = dag / (double)o->deadline_jobs;
        o->oracle_td_mean = td / (double)o->deadline_jobs;
    }
}

void arbiter_sim_tally_init(struct arbiter_sim_tally *t)
{
    memset(t, 0, sizeof *t);
    t->first = INFINITY;
}

double arbiter_sim_tally_job(struct arbiter_sim_tally *t, struct arbiter_sim_result *out,
                             const struct arbiter_sim_job *j, size_t i, double finish, double acc,
                             int refused, const uint8_t *ref_met, uint8_t *met)
{
    double took = finish - j->arrival;
    out->done++;
    t->first = j->arrival < t->first ? j->arrival : t->first;
    t->last = finish > t->last ? finish : t->last;
    t->work += j->work_true;
    t->comp += took;
    if (met != NULL)
        met[i] = 0;
    if (j->deadline <= 0)
        return took;
    out->deadline_jobs++;
    int missed = took > j->deadline * (1 + 1e-9);
    out->missed += missed;
    if (met != NULL)
        met[i] = !missed;
    if (!refused) {
        out->admitted++;
        out->admitted_missed += missed;
    } else {
        out->refused++;
        out->false_refusals += ref_met != NULL && ref_met[i];
    }
    if (missed)
        t->rde += (took - j->deadline) / j->deadline;
    double a = took > 0 ? acc / took : 0;
    t->alloc += a;
    t->vs_dag += a / j->oracle_dag;
    t->vs_td += a / j->oracle_td;
    return took;
}

void arbiter_sim_tally_end(const struct arbiter_sim_tally *t, struct arbiter_sim_result *out,
                           size_t njobs, double capacity)
{
    double nd = out->deadline_jobs ? (double)out->deadline_jobs : 1;
    out->missed_fraction = (double)out->missed / nd;
    out->relative_deadline_exceeded = t->rde / nd;
    out->admitted_fraction = out->deadline_jobs ? (double)out->admitted / nd : 1;
    out->admitted_missed_fraction =
        out->admitted ? (double)out->admitted_missed / (double)out->admitted : 0;
    out->false_refusal_fraction =
        out->refused ? (double)out->false_refusals / (double)out->refused : 0;
    out->utilization = t->last > t->first ? t->work / (capacity * (t->last - t->first)) : 0;
    out->mean_completion_s = t->comp / (double)njobs;
    out->alloc_mean = t->alloc / nd;
    out->alloc_vs_dag = t->vs_dag / nd;
    out->alloc_vs_td = t->vs_td / nd;
}
