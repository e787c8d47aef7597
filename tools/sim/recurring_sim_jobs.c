/* recurring_sim_jobs.c - the jobs of `paddock-sim recurring`: WfCommons instances reduced to
 * their stages (imported in-process with the importer paddock-sim cluster uses), scaled into
 * periodic jobs and ad-hoc arrivals. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/spec.h"
#include "rm/arbiter.h"
#include "rm/period.h"
#include "rm/skyline.h"
#include "tools/sim/cluster.h"
#include "tools/sim/engine.h"
#include "tools/sim/recurring_sim_internal.h"

#define RSJ_STREAM_PERIODIC 0x7065720000000000ull
#define RSJ_STREAM_ADHOC    0x6164680000000000ull
#define RSJ_STREAM_ARRIVE   0x6172720000000000ull
#define RSJ_STREAM_SHARE    0x7368720000000000ull
#define RSJ_MEAN_SAMPLE     256 /* ad-hoc jobs drawn to estimate their mean work */

static const uint32_t rsj__periods[] = {60, 120, 180, 240, 360};

void recurring_sim_config_default(struct recurring_sim_config *c)
{
    *c = (struct recurring_sim_config){.capacity = 100,
                                       .jobs = 12,
                                       .load = 0.9,
                                       .periodic_share = 0.5,
                                       .seed = 1,
                                       .step_s = 60,
                                       .warmup_steps = RECURRING_SIM_DAY,
                                       .eval_steps = 2 * RECURRING_SIM_DAY,
                                       .given_frac = 0.5,
                                       .run_sigma = 0.15,
                                       .stage_sigma = 0.1,
                                       .slow_prob = 0.1,
                                       .elastic = 0.5,
                                       .adhoc_deadline_frac = 0.5,
                                       .admission = 1,
                                       .rho = 2,
                                       .recent_frac = 0.25,
                                       .slack = 1.2,
                                       .alpha = SKYLINE_ALPHA,
                                       .fit_runs = 8};
}

static void rsj__shape_free(struct rsim_shape *s)
{
    mem_free(s->work);
    mem_free(s->width);
    mem_free(s->npred);
    mem_free(s->succ_at);
    mem_free(s->succ);
    mem_free(s->bl);
    mem_free(s->order);
    memset(s, 0, sizeof *s);
}

void recurring_sim_jobs_destroy(recurring_sim_jobs_t **p)
{
    if (p == NULL || *p == NULL)
        return;
    struct recurring_sim_jobs *s = *p;
    for (size_t i = 0; i < s->np; i++)
        rsj__shape_free(&s->p[i].sh);
    for (size_t i = 0; i < s->na; i++) {
        rsj__shape_free(&s->a[i].sh);
        mem_free(s->a[i].noise);
    }
    mem_free(s->p);
    mem_free(s->a);
    mem_free(s);
    *p = NULL;
}

static int rsj__alloc(struct rsim_shape *s, size_t ns, size_t nedges)
{
    s->ns = ns;
    s->work = mem_calloc(ns, sizeof *s->work);
    s->width = mem_calloc(ns, sizeof *s->width);
    s->npred = mem_calloc(ns, sizeof *s->npred);
    s->succ_at = mem_calloc(ns + 1, sizeof *s->succ_at);
    s->succ = mem_calloc(nedges ? nedges : 1, sizeof *s->succ);
    s->bl = mem_calloc(ns, sizeof *s->bl);
    s->order = mem_calloc(ns, sizeof *s->order);
    return s->work && s->width && s->npred && s->succ_at && s->succ && s->bl && s->order
               ? 0
               : ERR_NOMEM;
}

static const double *rsj__sort_key;

static int rsj__by_bl(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (rsj__sort_key[x] != rsj__sort_key[y])
        return rsj__sort_key[x] > rsj__sort_key[y] ? -1 : 1;
    return (x > y) - (x < y);
}

/* With work, width and the graph set: bottom levels (at full width), their order, the work, the
 * critical path and the widest moment of the schedule at full width. */
static int rsj__finish(struct rsim_shape *s)
{
    size_t ns = s->ns;
    uint32_t *topo = mem_calloc(ns, sizeof *topo), *left = mem_calloc(ns, sizeof *left);
    double *es = mem_calloc(ns, sizeof *es);
    if (topo == NULL || left == NULL || es == NULL) {
        mem_free(topo);
        mem_free(left);
        mem_free(es);
        return ERR_NOMEM;
    }
    memcpy(left, s->npred, ns * sizeof *left);
    size_t head = 0, tail = 0;
    for (uint32_t v = 0; v < ns; v++)
        if (left[v] == 0)
            topo[tail++] = v;
    while (head < tail) {
        uint32_t v = topo[head++];
        for (uint32_t e = s->succ_at[v]; e < s->succ_at[v + 1]; e++)
            if (--left[s->succ[e]] == 0)
                topo[tail++] = s->succ[e];
    }
    int rc = tail == ns ? 0 : ERR_INVAL;
    s->work_est = s->path_est = 0;
    for (size_t i = ns; rc == 0 && i-- > 0;) {
        uint32_t v = topo[i];
        double t = 0;
        for (uint32_t e = s->succ_at[v]; e < s->succ_at[v + 1]; e++)
            t = s->bl[s->succ[e]] > t ? s->bl[s->succ[e]] : t;
        s->bl[v] = s->work[v] / s->width[v] + t;
        s->path_est = s->bl[v] > s->path_est ? s->bl[v] : s->path_est;
        s->work_est += s->work[v];
    }
    for (size_t i = 0; rc == 0 && i < ns; i++) { /* earliest starts */
        uint32_t v = topo[i];
        double f = es[v] + s->work[v] / s->width[v];
        for (uint32_t e = s->succ_at[v]; e < s->succ_at[v + 1]; e++)
            es[s->succ[e]] = f > es[s->succ[e]] ? f : es[s->succ[e]];
    }
    s->width_max = 1;
    for (size_t a = 0; rc == 0 && a < ns; a++) {
        uint64_t w = 0;
        for (size_t b = 0; b < ns; b++)
            if (es[b] <= es[a] && es[a] < es[b] + s->work[b] / s->width[b])
                w += s->width[b];
        if (w > s->width_max)
            s->width_max = w > UINT32_MAX ? UINT32_MAX : (uint32_t)w;
    }
    for (uint32_t v = 0; rc == 0 && v < ns; v++)
        s->order[v] = v;
    if (rc == 0) {
        rsj__sort_key = s->bl;
        qsort(s->order, ns, sizeof *s->order, rsj__by_bl);
    }
    mem_free(topo);
    mem_free(left);
    mem_free(es);
    return rc;
}

/* A spec reduced to stages: work = sum of runtime x tokens, width = the tokens of its tasks, or
 * fewer when one long task bounds it (work / longest task); a stage waits for its barrier
 * stages and for the stages of its tasks' dependencies. A cyclic stage graph (tasks depending
 * across stages both ways) becomes the chain of the spec's stage order. */
static int rsj__from_spec(const struct spec *sp, struct rsim_shape *s)
{
    size_t ns = sp->nstages;
    uint8_t *dep = mem_calloc(ns * ns, 1);
    if (dep == NULL)
        return ERR_NOMEM;
    double *len = mem_calloc(ns, sizeof *len);
    uint64_t *tok = mem_calloc(ns, sizeof *tok);
    int rc = len && tok ? 0 : ERR_NOMEM;
    double *work = mem_calloc(ns, sizeof *work);
    rc = rc == 0 && work ? 0 : ERR_NOMEM;
    for (size_t t = 0; rc == 0 && t < sp->ntasks; t++) {
        const struct spec_task *st = &sp->tasks[t];
        uint32_t k = arbiter_task_tokens(st->cpu, st->mem_mb, 0, 0);
        work[st->stage] += st->runtime_s * k;
        tok[st->stage] += k;
        len[st->stage] = st->runtime_s > len[st->stage] ? st->runtime_s : len[st->stage];
        for (size_t a = 0; a < st->nafter; a++) {
            size_t from = sp->tasks[st->after[a]].stage;
            if (from != st->stage)
                dep[from * ns + st->stage] = 1;
        }
    }
    for (size_t g = 0; rc == 0 && g < ns; g++)
        for (size_t a = 0; a < sp->stages[g].nafter; a++)
            dep[sp->stages[g].after[a] * ns + g] = 1;
    size_t ne = 0;
    for (size_t i = 0; i < ns * ns; i++)
        ne += dep[i];
    for (int attempt = 0; rc == 0 && attempt < 2; attempt++) {
        if (attempt == 1) { /* a cycle: the chain of the stage order */
            rsj__shape_free(s);
            memset(dep, 0, ns * ns);
            for (size_t i = 1; i < ns; i++)
                dep[sp->stage_topo[i - 1] * ns + sp->stage_topo[i]] = 1;
            ne = ns > 0 ? ns - 1 : 0;
        }
        if ((rc = rsj__alloc(s, ns, ne)) != 0)
            break;
        for (size_t g = 0; g < ns; g++) {
            double w = work[g] > 0 ? work[g] : 1e-3;
            double by_len = len[g] > 0 ? ceil(w / len[g] - 1e-9) : 1;
            double width = (double)tok[g] < by_len ? (double)tok[g] : by_len;
            s->work[g] = w;
            s->width[g] = width < 1 ? 1 : (uint32_t)width;
        }
        size_t e = 0;
        for (size_t a = 0; a < ns; a++) {
            s->succ_at[a] = (uint32_t)e;
            for (size_t b = 0; b < ns; b++)
                if (dep[a * ns + b]) {
                    s->succ[e++] = (uint32_t)b;
                    s->npred[b]++;
                }
        }
        s->succ_at[ns] = (uint32_t)e;
        rc = rsj__finish(s);
        if (rc != ERR_INVAL)
            break;
        rc = 0;
    }
    mem_free(dep);
    mem_free(len);
    mem_free(tok);
    mem_free(work);
    return rc;
}

/* An instance of template t: time x f, tokens x m (widths rounded, at least 1, at most
 * `capacity`). */
static int rsj__instance(const struct rsim_shape *t, double f, double m, uint32_t capacity,
                         struct rsim_shape *s)
{
    int rc = rsj__alloc(s, t->ns, t->succ_at[t->ns]);
    if (rc != 0)
        return rc;
    for (size_t g = 0; g < t->ns; g++) {
        s->work[g] = t->work[g] * f * m;
        double w = round(t->width[g] * m);
        s->width[g] = w < 1 ? 1 : w > capacity ? capacity : (uint32_t)w;
        s->npred[g] = t->npred[g];
    }
    memcpy(s->succ_at, t->succ_at, (t->ns + 1) * sizeof *s->succ_at);
    memcpy(s->succ, t->succ, t->succ_at[t->ns] * sizeof *s->succ);
    return rsj__finish(s);
}

struct rsj__tmpl {
    struct rsim_shape *v;
    size_t n;
};

static void rsj__tmpl_free(struct rsj__tmpl *t)
{
    for (size_t i = 0; i < t->n; i++)
        rsj__shape_free(&t->v[i]);
    mem_free(t->v);
}

static int rsj__templates(const struct recurring_sim_config *cfg, struct rsj__tmpl *t, char *msg,
                          size_t cap)
{
    struct cluster_workloads *w = NULL;
    int rc = cluster_workloads_load(cfg->workloads, 1.0, 0, 0, &w, msg, cap);
    if (rc != 0)
        return rc;
    size_t nw = cluster_workloads_count(w);
    t->v = mem_calloc(nw, sizeof *t->v);
    if (t->v == NULL)
        rc = ERR_NOMEM;
    for (size_t i = 0; rc == 0 && i < nw; i++) {
        struct spec *sp = NULL;
        rc = cluster_workloads_make(w, i, cfg->seed, 1, 1, &sp, msg, cap);
        if (rc == 0) {
            rc = rsj__from_spec(sp, &t->v[i]);
            t->n = i + 1;
            if (rc != 0 && msg[0] == '\0')
                err_fmt(msg, cap, rc, "%s: %s", cluster_workloads_name(w, i), err_text(rc));
        }
        spec_destroy(&sp);
    }
    cluster_workloads_destroy(&w);
    return rc;
}

/* A periodic job: template, period, duration alone U[0.15, 0.35] x period, tokens so that its
 * work per period is `work` token-steps (its width at most half the capacity; a job wider than
 * that runs longer instead, up to half its period, and has less work beyond that). */
static int rsj__periodic(const struct recurring_sim_config *cfg, const struct rsj__tmpl *t,
                         struct rng *r, double share, struct rsim_periodic *p)
{
    p->tmpl = (size_t)rng_below(r, t->n);
    p->period = rsj__periods[rng_below(r, sizeof rsj__periods / sizeof *rsj__periods)];
    const struct rsim_shape *tm = &t->v[p->tmpl];
    double dur = (0.15 + 0.2 * rng_unif(r)) * p->period;
    double work = share * cfg->capacity * p->period;
    double f = dur / tm->path_est, m = work / (tm->work_est * f);
    double wmax = 0.5 * cfg->capacity;
    if (tm->width_max * m > wmax) {
        m = wmax / tm->width_max;
        f = work / (tm->work_est * m);
        if (f * tm->path_est > 0.5 * p->period) /* too much work for its period: less of it */
            f = 0.5 * p->period / tm->path_est;
    }
    double u = rng_unif(r);
    if (rng_bernoulli(r, cfg->given_frac))
        p->deadline = (uint32_t)ceil((0.5 + 0.4 * u) * p->period);
    return rsj__instance(tm, f, m, cfg->capacity, &p->sh);
}

/* An ad-hoc job's shape and noise (not its arrival). */
static int rsj__adhoc(const struct recurring_sim_config *cfg, const struct rsj__tmpl *t,
                      struct rng *r, struct rsim_adhoc *a)
{
    a->tmpl = (size_t)rng_below(r, t->n);
    const struct rsim_shape *tm = &t->v[a->tmpl];
    double dur = exp(log(5) + (log(60) - log(5)) * rng_unif(r));
    double width = (0.1 + 0.4 * rng_unif(r)) * cfg->capacity;
    double m = width / tm->width_max, f = dur / tm->path_est;
    int rc = rsj__instance(tm, f, m, cfg->capacity, &a->sh);
    if (rc != 0)
        return rc;
    a->noise = mem_calloc(a->sh.ns, sizeof *a->noise);
    if (a->noise == NULL)
        return ERR_NOMEM;
    double sj = 0.2, st = 0.2;
    double factor = rng_lognormal(r, -sj * sj / 2, sj);
    for (size_t g = 0; g < a->sh.ns; g++)
        a->noise[g] = factor * rng_lognormal(r, -st * st / 2, st);
    double u = rng_unif(r);
    if (rng_bernoulli(r, cfg->adhoc_deadline_frac))
        a->deadline = (uint32_t)ceil((1 + u) * a->sh.path_est);
    return 0;
}

int recurring_sim_jobs_new(const struct recurring_sim_config *cfg, recurring_sim_jobs_t **out,
                           char *msg, size_t cap)
{
    *out = NULL;
    if (msg != NULL && cap > 0)
        msg[0] = '\0';
    if (cfg->jobs < 1 || cfg->jobs > RECURRING_SIM_MAX_JOBS || cfg->capacity < 1 ||
        cfg->capacity > RECURRING_SIM_MAX_CAPACITY || !(cfg->load > 0) ||
        !(cfg->periodic_share > 0) || cfg->periodic_share > 1 || cfg->eval_steps < 1)
        return err_fmt(msg, cap, ERR_INVAL, "jobs, capacity, load or share out of range");
    if (cfg->workloads == NULL)
        return err_fmt(msg, cap, ERR_INVAL, "no WfCommons directory");
    struct recurring_sim_jobs *s = mem_calloc(1, sizeof *s);
    if (s == NULL)
        return ERR_NOMEM;
    s->seed = cfg->seed;
    s->step_s = cfg->step_s;
    struct rsj__tmpl t = {0};
    int rc = rsj__templates(cfg, &t, msg, cap);
    if (rc == 0 && (s->p = mem_calloc(cfg->jobs, sizeof *s->p)) == NULL)
        rc = ERR_NOMEM;
    /* Shares of the periodic load: U[0.5, 1.5], normalised. */
    double *share = rc == 0 ? mem_calloc(cfg->jobs, sizeof *share) : NULL;
    if (rc == 0 && share == NULL)
        rc = ERR_NOMEM;
    double total = 0;
    struct rng r;
    rng_seed_stream(&r, cfg->seed, RSJ_STREAM_SHARE);
    for (size_t i = 0; rc == 0 && i < cfg->jobs; i++)
        total += share[i] = 0.5 + rng_unif(&r);
    double lp = cfg->load * cfg->periodic_share;
    uint64_t periods[RECURRING_SIM_MAX_JOBS];
    for (size_t i = 0; rc == 0 && i < cfg->jobs; i++) {
        rng_seed_stream(&r, cfg->seed, RSJ_STREAM_PERIODIC + i);
        rc = rsj__periodic(cfg, &t, &r, share[i] / total * lp, &s->p[i]);
        s->np = i + 1;
        periods[i] = s->p[i].period;
        s->periodic_load += s->p[i].sh.work_est / s->p[i].period / cfg->capacity;
    }
    mem_free(share);
    if (rc == 0)
        s->lcm = (uint32_t)period_lcm(periods, s->np, RECURRING_SIM_DAY, NULL);
    /* Ad-hoc arrivals: mean work from a sample, then a Poisson process until the end. */
    double la = cfg->load * (1 - cfg->periodic_share);
    if (rc == 0 && la > 0) {
        double mean = 0;
        for (size_t i = 0; rc == 0 && i < RSJ_MEAN_SAMPLE; i++) {
            struct rsim_adhoc a = {0};
            rng_seed_stream(&r, cfg->seed, RSJ_STREAM_ADHOC + i);
            rc = rsj__adhoc(cfg, &t, &r, &a);
            for (size_t g = 0; rc == 0 && g < a.sh.ns; g++)
                mean += a.sh.work[g] * a.noise[g] / RSJ_MEAN_SAMPLE;
            rsj__shape_free(&a.sh);
            mem_free(a.noise);
        }
        s->adhoc_gap = mean / (la * cfg->capacity);
        double end = (double)cfg->warmup_steps + cfg->eval_steps;
        size_t cap_a = (size_t)(end / s->adhoc_gap * 1.5) + 16;
        if (rc == 0 && (s->a = mem_calloc(cap_a, sizeof *s->a)) == NULL)
            rc = ERR_NOMEM;
        struct rng ar;
        rng_seed_stream(&ar, cfg->seed, RSJ_STREAM_ARRIVE);
        double at = rng_exp(&ar, s->adhoc_gap);
        while (rc == 0 && at < end && s->na < cap_a) {
            struct rsim_adhoc *a = &s->a[s->na];
            rng_seed_stream(&r, cfg->seed, RSJ_STREAM_ADHOC + s->na);
            rc = rsj__adhoc(cfg, &t, &r, a);
            a->arrive = (uint32_t)at;
            s->na++;
            for (size_t g = 0; rc == 0 && g < a->sh.ns; g++)
                s->adhoc_load += a->sh.work[g] * a->noise[g];
            at += rng_exp(&ar, s->adhoc_gap);
        }
        s->adhoc_load /= end * cfg->capacity;
    }
    rsj__tmpl_free(&t);
    if (rc != 0) {
        if (msg != NULL && cap > 0 && msg[0] == '\0')
            err_fmt(msg, cap, rc, "%s", err_text(rc));
        recurring_sim_jobs_destroy(&s);
        return rc;
    }
    *out = s;
    return 0;
}

void recurring_sim_jobs_info(const recurring_sim_jobs_t *s, struct recurring_sim_jobs_info *o)
{
    memset(o, 0, sizeof *o);
    o->periodic = s->np;
    o->adhoc = s->na;
    for (size_t i = 0; i < s->np; i++)
        o->given_deadlines += s->p[i].deadline > 0;
    o->lcm_steps = s->lcm;
    o->periodic_load = s->periodic_load;
    o->adhoc_load = s->adhoc_load;
    o->adhoc_mean_gap_s = s->adhoc_gap * s->step_s;
}
