/* shape.c - work, critical path and width of a job in sized tokens (see shape.h). */
#include "jm/shape.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/dag.h"
#include "jm/jsim.h"
#include "jm/priority.h"

/* The mean of a distribution given by PROFILE_NQ quantiles, linear between them. */
static double shape__quantile_mean(const double *q)
{
    double du = 1.0 / (PROFILE_NQ - 1), m1 = 0;
    for (int k = 0; k + 1 < PROFILE_NQ; k++)
        m1 += (q[k] + q[k + 1]) / 2 * du;
    return m1;
}

double shape_quantile_sd(const double *q)
{
    /* X(u) is linear on each segment between quantiles: the segment's mean is (a + b) / 2 and
     * its second moment (a² + ab + b²) / 3, exactly. */
    double du = 1.0 / (PROFILE_NQ - 1), m1 = 0, m2 = 0;
    for (int k = 0; k + 1 < PROFILE_NQ; k++) {
        double a = q[k], b = q[k + 1];
        m1 += (a + b) / 2 * du;
        m2 += (a * a + a * b + b * b) / 3 * du;
    }
    double var = m2 - m1 * m1;
    return var > 0 ? sqrt(var) : 0;
}

/* A min-heap of (finish time, task) for the as-soon-as-possible schedule. */
struct shape__ev {
    double t;
    size_t task;
};

static void shape__push(struct shape__ev *h, size_t *n, struct shape__ev e)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h[p].t <= e.t)
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = e;
}

static struct shape__ev shape__pop(struct shape__ev *h, size_t *n)
{
    struct shape__ev top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1].t < h[c].t)
            c++;
        if (last.t <= h[c].t)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0)
        h[i] = last;
    return top;
}

/* Starts every ready task at time t; adds their tokens to *cur. Starting a task readies no
 * other, so the ready list is read once, into `scratch` (n entries): dag_start edits the list,
 * and reading it again after each start compacted it each time, O(n) per task. */
static int shape__start_ready(dag_t *dag, const double *rt, const uint32_t *tok, double t,
                              struct shape__ev *heap, size_t *nheap, uint64_t *cur, size_t *scratch)
{
    size_t nready;
    const size_t *ready = dag_ready(dag, &nready);
    memcpy(scratch, ready, nready * sizeof *scratch);
    for (size_t i = 0; i < nready; i++) {
        size_t task = scratch[i];
        int rc = dag_start(dag, task);
        if (rc != 0)
            return rc;
        *cur += tok[task];
        shape__push(heap, nheap, (struct shape__ev){t + rt[task], task});
    }
    return 0;
}

/* Peak tokens in use in the as-soon-as-possible schedule with unlimited tokens. Finishes at an
 * instant are applied before the starts they release, so back-to-back tasks do not overlap. */
static int shape__width(dag_t *dag, const double *rt, const uint32_t *tok, uint64_t *peak)
{
    size_t n = dag_ntasks(dag), nheap = 0;
    struct shape__ev *heap = mem_calloc(n > 0 ? n : 1, sizeof *heap);
    size_t *scratch = mem_calloc(n > 0 ? n : 1, sizeof *scratch);
    if (heap == NULL || scratch == NULL) {
        mem_free(heap);
        mem_free(scratch);
        return ERR_NOMEM;
    }
    uint64_t cur = 0;
    *peak = 0;
    int rc = shape__start_ready(dag, rt, tok, 0, heap, &nheap, &cur, scratch);
    if (cur > *peak)
        *peak = cur;
    while (rc == 0 && nheap > 0) {
        double t = heap[0].t;
        while (rc == 0 && nheap > 0 && heap[0].t <= t) {
            struct shape__ev e = shape__pop(heap, &nheap);
            cur -= tok[e.task];
            rc = dag_succeed(dag, e.task, NULL);
        }
        if (rc == 0)
            rc = shape__start_ready(dag, rt, tok, t, heap, &nheap, &cur, scratch);
        if (cur > *peak)
            *peak = cur;
    }
    mem_free(heap);
    mem_free(scratch);
    return rc;
}

int shape_peak_units(const struct spec *spec, const uint32_t *units, uint64_t *peak)
{
    if (spec == NULL || units == NULL || peak == NULL)
        return ERR_INVAL;
    size_t n = spec->ntasks;
    double *rt = mem_calloc(n > 0 ? n : 1, sizeof *rt);
    dag_t *dag = NULL;
    int rc = rt == NULL ? ERR_NOMEM : dag_new(spec, &dag);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rt[i] = spec->tasks[i].runtime_s;
    if (rc == 0)
        rc = shape__width(dag, rt, units, peak);
    dag_destroy(&dag);
    mem_free(rt);
    return rc;
}

static double shape__max(const double *v, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i] > m)
            m = v[i];
    return m;
}

int shape_from_spec(const struct spec *spec, const struct profile *prof, double token_cpu,
                    uint64_t token_mem_mb, double cv, struct arbiter_shape *out, char *msg,
                    size_t cap)
{
    if (spec == NULL || out == NULL)
        return err_fmt(msg, cap, ERR_INVAL, "shape: NULL spec or output");
    if (!isfinite(cv))
        return err_fmt(msg, cap, ERR_INVAL, "shape: cv must be finite");
    if (cv < 0)
        cv = 0;
    size_t n = spec->ntasks, ns = spec->nstages;
    double *rt = mem_calloc(n > 0 ? n : 1, sizeof *rt);
    double *hi = mem_calloc(n > 0 ? n : 1, sizeof *hi);
    double *bl = mem_calloc(n > 0 ? n : 1, sizeof *bl);
    uint32_t *tok = mem_calloc(n > 0 ? n : 1, sizeof *tok);
    double *stage_mean = mem_calloc(ns > 0 ? ns : 1, sizeof *stage_mean);
    double *stage_sd = mem_calloc(ns > 0 ? ns : 1, sizeof *stage_sd);
    double *stage_err = mem_calloc(ns > 0 ? ns : 1, sizeof *stage_err);
    int *stage_seen = mem_calloc(ns > 0 ? ns : 1, sizeof *stage_seen);
    dag_t *dag = NULL;
    int rc = ERR_NOMEM;
    if (rt == NULL || hi == NULL || bl == NULL || tok == NULL || stage_mean == NULL ||
        stage_sd == NULL || stage_err == NULL || stage_seen == NULL) {
        err_fmt(msg, cap, rc, "shape: out of memory");
        goto done;
    }
    /* Per stage: the profile's mean and spread, when it saw successful tasks of the stage. Where
     * it also saw how run times compared with the tasks' own estimates (ratio_q), a task is its
     * estimate times the stage's mean ratio, spread by the ratio's: the tasks of a stage keep
     * their differences (as the JM's simulator has them, jm/jsim.h), and the spread is the
     * error of an estimate, not the difference between a stage's 0.01 s and 7 s tasks, which
     * the spec states. */
    double *stage_ratio = mem_calloc(ns > 0 ? ns : 1, sizeof *stage_ratio);
    double *stage_rsd = mem_calloc(ns > 0 ? ns : 1, sizeof *stage_rsd);
    if (stage_ratio == NULL || stage_rsd == NULL) {
        mem_free(stage_ratio);
        mem_free(stage_rsd);
        err_fmt(msg, cap, rc, "shape: out of memory");
        goto done;
    }
    for (size_t s = 0; s < ns && prof != NULL; s++) {
        int k = profile_find_stage(prof, spec->stages[s].name);
        if (k < 0)
            continue;
        const struct profile_stage *ps = &prof->stages[k];
        double mean = profile_stage_runtime_mean(ps);
        if (ps->tasks <= 0 || !(mean > 0) || !isfinite(mean))
            continue;
        stage_mean[s] = mean;
        stage_sd[s] = shape_quantile_sd(ps->runtime_q);
        stage_seen[s] = ps->tasks;
        double r = shape__quantile_mean(ps->ratio_q);
        if (ps->ratio_samples > 0 && r > 0 && isfinite(r)) {
            stage_ratio[s] = r;
            stage_rsd[s] = shape_quantile_sd(ps->ratio_q);
        }
    }
    double work = 0, var_tasks = 0, sd_linear = 0;
    for (size_t i = 0; i < n; i++) {
        const struct spec_task *t = &spec->tasks[i];
        size_t s = t->stage;
        tok[i] = arbiter_task_tokens(t->cpu, t->mem_mb, token_cpu, token_mem_mb);
        if (stage_seen[s] > 0 && stage_ratio[s] > 0 && t->runtime_s > 0) {
            double sd = t->runtime_s * stage_rsd[s];
            rt[i] = t->runtime_s * stage_ratio[s];
            hi[i] = rt[i] + sd;
            var_tasks += sd * sd * (double)tok[i] * tok[i];
            stage_err[s] += sd * tok[i]; /* the stage's error, tasks together */
        } else if (stage_seen[s] > 0) {
            rt[i] = stage_mean[s];
            hi[i] = stage_mean[s] + stage_sd[s];
            var_tasks += stage_sd[s] * stage_sd[s] * (double)tok[i] * tok[i];
            stage_err[s] += stage_sd[s] * tok[i];
        } else {
            rt[i] = t->runtime_s;
            hi[i] = t->runtime_s * (1 + cv);
            sd_linear += cv * t->runtime_s * tok[i];
        }
        work += rt[i] * tok[i];
    }
    /* The stage mean comes from one run's sample of stage_seen tasks: its standard error moves
     * all of the stage's tasks together. */
    double var_means = 0;
    for (size_t s = 0; s < ns; s++)
        if (stage_seen[s] > 0) {
            double e = stage_err[s] / sqrt((double)stage_seen[s]);
            var_means += e * e;
        }
    mem_free(stage_ratio);
    mem_free(stage_rsd);
    rc = dag_new(spec, &dag);
    if (rc != 0) {
        err_fmt(msg, cap, rc, "shape: cannot build the task graph");
        goto done;
    }
    rc = priority_compute(dag, rt, bl, NULL);
    double path = rc == 0 ? shape__max(bl, n) : 0;
    if (rc == 0)
        rc = priority_compute(dag, hi, bl, NULL);
    double path_hi = rc == 0 ? shape__max(bl, n) : 0;
    uint64_t peak = 0;
    if (rc == 0)
        rc = shape__width(dag, rt, tok, &peak);
    if (rc != 0) {
        err_fmt(msg, cap, rc, "shape: %s", err_text(rc));
        goto done;
    }
    out->work = work;
    out->work_sd = sqrt(var_tasks + var_means) + sd_linear;
    out->path = path;
    out->path_sd = path_hi > path ? path_hi - path : 0;
    out->width = peak > UINT32_MAX ? UINT32_MAX : (uint32_t)peak;
    if (out->width == 0 && work > 0)
        out->width = 1;
    rc = 0;
done:
    dag_destroy(&dag);
    mem_free(rt);
    mem_free(hi);
    mem_free(bl);
    mem_free(tok);
    mem_free(stage_mean);
    mem_free(stage_sd);
    mem_free(stage_err);
    mem_free(stage_seen);
    return rc;
}

static int shape__cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* `runs` simulated makespans at `tokens`, each run seeded alike (jsim_run's streams: equal seeds
 * sample the same run times at any allocation): the median of the first `mruns` into *out and,
 * when q_out is not NULL, the SHAPE_SPREAD_Q quantile of all of them over their median. */
static int shape__runs(const jsim_job_t *job, const struct jsim_model *m,
                       const struct progress_model *pm, int mruns, int runs, int tokens,
                       double *out, double *q_out)
{
    double span[SHAPE_PATH_RUNS];
    struct jsim_rng rng;
    jsim_rng_seed(&rng, 1);
    for (int r = 0; r < runs; r++) {
        struct jsim_run_stats st;
        int rc = jsim_run(job, m, tokens, pm, &rng, NULL, &st);
        if (rc != 0)
            return rc;
        span[r] = st.makespan;
    }
    double first[SHAPE_PATH_RUNS];
    memcpy(first, span, (size_t)mruns * sizeof *span);
    qsort(first, (size_t)mruns, sizeof *first, shape__cmp);
    *out = first[mruns / 2];
    if (q_out != NULL) {
        qsort(span, (size_t)runs, sizeof *span, shape__cmp);
        double pos = SHAPE_SPREAD_Q * (double)(runs - 1);
        int i = (int)pos;
        double f = pos - i, hi = span[i] + f * (span[i + 1 < runs ? i + 1 : i] - span[i]);
        double med = span[runs / 2];
        *q_out = med > 0 ? hi / med : 0;
    }
    return 0;
}

static int shape__median_run(const jsim_job_t *job, const struct jsim_model *m,
                             const struct progress_model *pm, int runs, int tokens, double *out)
{
    return shape__runs(job, m, pm, runs, runs, tokens, out, NULL);
}

/* The normal quantile at p in (0.5, 1) (Abramowitz and Stegun 26.2.23, error < 4.5e-4). */
static double shape__probit_hi(double p)
{
    double t = sqrt(-2.0 * log(1.0 - p));
    return t - (2.515517 + 0.802853 * t + 0.010328 * t * t) /
                   (1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t);
}

/* A stage of n tasks ends with its slowest, which a profile of fewer tasks has not seen: its
 * quantiles stop at the longest run they saw. For the spread, each sampled stage's top quantile
 * is raised to its 1 - 1/(2n) quantile, extrapolated as a log-normal tail through its q90 and
 * q95 (never lowered). */
static void shape__tail(struct jsim_model *m, const jsim_job_t *job)
{
    const double z90 = 1.2816, z95 = 1.6449;
    for (int st = 0; st < m->nstages && st < jsim_job_nstages(job); st++) {
        struct jsim_stage_model *sm = &m->stages[st];
        int n = jsim_job_stage_size(job, st);
        if (!sm->from_profile || n <= 10)
            continue;
        double *q = sm->by_ratio ? sm->ratio_q : sm->runtime_q;
        double q90 = q[PROFILE_NQ - 3], q95 = q[PROFILE_NQ - 2];
        if (!(q90 > 0) || !(q95 > q90))
            continue;
        double b = (log(q95) - log(q90)) / (z95 - z90);
        double ext = exp(log(q95) + b * (shape__probit_hi(1.0 - 0.5 / n) - z95));
        if (ext > q[PROFILE_NQ - 1])
            q[PROFILE_NQ - 1] = ext;
    }
}

int shape_place_sim(const jsim_job_t *job, const struct jsim_model *m,
                    const struct progress_model *pm, int runs, uint32_t k, struct arbiter_shape *s,
                    double *makespan)
{
    if (job == NULL || m == NULL || pm == NULL || s == NULL || runs < 1 || runs > SHAPE_ALPHA_RUNS)
        return ERR_INVAL;
    uint32_t tokens = k < s->width ? k : s->width;
    tokens = tokens < 1 ? 1 : tokens;
    /* each attempt's initialization at its stage's median: a profile's init_q also counts the
     * time a task sat queued at a busy node, which the simulator would add to the token's hold
     * and, with free units, to the path */
    struct jsim_model flat;
    if (jsim_model_init_median(&flat, m) != 0)
        return ERR_NOMEM;
    double S, path = s->path, spread = 0;
    /* the job's own spread: with a sampled model, as many runs at its tokens as the budget of
     * simulated tasks allows (SHAPE_PATH_RUNS at most, never fewer than the median's) */
    int nt = jsim_job_ntasks(job);
    long sper = SHAPE_PATH_TASKS / (nt > 0 ? nt : 1);
    int sruns = runs == 1                ? 1
                : sper > SHAPE_PATH_RUNS ? SHAPE_PATH_RUNS
                : sper < runs            ? runs
                                         : (int)sper;
    int rc = shape__median_run(job, &flat, pm, runs, (int)tokens, &S);
    if (rc == 0 && runs > 1) {
        /* the job's own spread: the runs' SHAPE_SPREAD_Q quantile, under the stages' tails, over
         * the median S the ledger is told */
        struct jsim_model tail;
        double med, rel;
        rc = jsim_model_init_median(&tail, &flat) != 0 ? ERR_NOMEM : 0;
        if (rc == 0) {
            shape__tail(&tail, job);
            rc = shape__runs(job, &tail, pm, sruns, sruns, (int)tokens, &med, &rel);
            jsim_model_close(&tail);
        }
        spread = rc == 0 && S > 0 ? rel * med / S : 0;
    }
    if (rc == 0 && runs > 1) {
        /* every task's units free at once: nothing waits but for its inputs; a median of 5
         * runs moves by a sixth on a one-task path: more runs, within a budget of simulated
         * tasks */
        uint64_t all = 0;
        for (int t = 0; t < jsim_job_ntasks(job); t++) {
            uint32_t u = jsim_job_task_tokens(job, t);
            all += u > 0 ? u : 1;
        }
        int n = jsim_job_ntasks(job);
        long per = SHAPE_PATH_TASKS / (n > 0 ? n : 1);
        int cruns = per > SHAPE_PATH_RUNS ? SHAPE_PATH_RUNS : per < 1 ? 1 : (int)per;
        double cp;
        rc = shape__median_run(job, &flat, pm, cruns, all > INT32_MAX ? INT32_MAX : (int)all, &cp);
        if (rc == 0 && cp > path)
            path = cp;
    }
    jsim_model_close(&flat);
    if (rc != 0)
        return rc;
    double kk = tokens;
    double low = fmax(s->work / kk, path);
    double up = fmax((s->work - path) / kk + path, low);
    double a = up - low > 1e-9 ? (S - low) / (up - low) : 0.5;
    s->path = path;
    s->has_alpha = true;
    s->alpha = a < 0 ? 0 : a > 1 ? 1 : a;
    s->spread = runs > 1 ? (spread > 1 ? spread : 1) : 0;
    if (makespan != NULL)
        *makespan = S;
    return 0;
}

int shape_alpha(const struct spec *spec, const struct profile *prof, double token_cpu,
                uint64_t token_mem_mb, uint32_t k, struct arbiter_shape *s, double *makespan,
                char *msg, size_t cap)
{
    if (spec == NULL || s == NULL)
        return err_fmt(msg, cap, ERR_INVAL, "shape_alpha: NULL argument");
    struct jsim_plan pl;
    int rc = jsim_plan_init_sized(&pl, spec, prof, PROGRESS_VERTEXFRAC, token_cpu, token_mem_mb,
                                  msg, cap);
    if (rc != 0)
        return rc;
    /* the estimates alone are one deterministic run; a profile's spread, a median of a few */
    int runs = pl.from_profile ? SHAPE_ALPHA_RUNS : 1;
    rc = shape_place_sim(pl.job, &pl.model, &pl.progress, runs, k, s, makespan);
    jsim_plan_close(&pl);
    if (rc != 0)
        return err_fmt(msg, cap, rc, "shape_alpha: simulating the job: %s", err_name(rc));
    return 0;
}
