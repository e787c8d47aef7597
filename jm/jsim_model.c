/* jsim_model.c - the job simulator's per-stage attempt model from a profile (Jockey §4.1:
 * "per-stage distributions of task runtimes and initialization latencies, and the probabilities of
 * single and multiple task failures"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/jsim.h"
#include "jm/jsim_internal.h"

/* Profile stage indices sorted by name, for O(log n) lookups when a job has many stages. */
static int jsim__name_cmp(const void *a, const void *b, void *ctx)
{
    const struct profile *prof = ctx;
    return strcmp(prof->stages[*(const int *)a].name, prof->stages[*(const int *)b].name);
}

static int jsim__find(const struct profile *prof, const int *sorted, const char *name)
{
    int lo = 0, hi = prof->nstages - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(prof->stages[sorted[mid]].name, name);
        if (c == 0)
            return sorted[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* Stages with fewer successful tasks than this borrow the job's pooled run-time dispersion and
 * failure rate (one sample says nothing about stragglers or failures). */
#define JSIM__FEW_TASKS  8
#define JSIM__FAIL_PRIOR 20.0

/* How much of the pooled relative dispersion a stage whose tasks take t seconds borrows from
 * stages whose typical task takes t_ref: a task's run time is the sum of many small pieces
 * whose noise adds up independently, so its relative spread falls as 1/sqrt(t) (a 9.6 s task
 * does not vary by the 40% its job's 0.2 s tasks did under load: issue 22, soykb's own spread
 * 1.32 from its one-task merge stage against runs within 1.11x). Never more than all of it. */
static double jsim__borrow(double t_ref, double t)
{
    return t > t_ref && t_ref > 0 ? sqrt(t_ref / t) : 1;
}

int jsim_model_init(struct jsim_model *m, const jsim_job_t *j, const char *const *stage_names,
                    const struct profile *prof)
{
    if (m == NULL || j == NULL || (prof != NULL && stage_names == NULL))
        return ERR_INVAL;
    struct jsim_model nm = {.nstages = j->nstages};
    nm.stages = mem_calloc((size_t)j->nstages, sizeof *nm.stages);
    int *ps = mem_calloc((size_t)j->nstages, sizeof *ps);
    int *sorted =
        mem_calloc(prof != NULL && prof->nstages > 0 ? (size_t)prof->nstages : 1, sizeof *sorted);
    if (nm.stages == NULL || ps == NULL || sorted == NULL) {
        mem_free(nm.stages);
        mem_free(ps);
        mem_free(sorted);
        return ERR_NOMEM;
    }
    if (prof != NULL) {
        for (int i = 0; i < prof->nstages; i++)
            sorted[i] = i;
        qsort_r(sorted, (size_t)prof->nstages, sizeof *sorted, jsim__name_cmp, (void *)prof);
    }
    for (int t = 0; t < j->ntasks; t++)
        nm.stages[j->task_stage[t]].runtime_total += j->est[t];
    /* Job-wide failure rate and run-time dispersion (quantiles relative to the median), pooled
     * over the stages the profile knows well, weighted by the seconds of work they saw (their
     * task counts times their median run time): a stage of 10 ms tasks whose ratios reach 11x
     * measured a fixed per-task cost, not a relative error, and counted by its task count it
     * gave a one-task 5.7 s stage a tail to 4.8x its median (issue 22: taxprofiler's own spread
     * 1.67 from one run's profile; it ran within 1.08x). */
    double fails = 0, attempts = 0, pooled[PROFILE_NQ] = {0}, pooled_w = 0;
    double rpooled[PROFILE_NQ] = {0}, rpooled_w = 0;
    double t_ref = 0, rt_ref = 0; /* the pooled stages' typical task, seconds (weighted) */
    for (int s = 0; s < j->nstages; s++) {
        ps[s] =
            prof != NULL && stage_names[s] != NULL ? jsim__find(prof, sorted, stage_names[s]) : -1;
        if (ps[s] < 0 || prof->stages[ps[s]].tasks <= 0) {
            ps[s] = -1;
            continue;
        }
        const struct profile_stage *st = &prof->stages[ps[s]];
        fails += st->failures;
        attempts += st->attempts;
        double med = st->runtime_q[(PROFILE_NQ - 1) / 2];
        if (st->tasks >= JSIM__FEW_TASKS && med > 0) {
            double w = st->tasks * med;
            for (int k = 0; k < PROFILE_NQ; k++)
                pooled[k] += w * st->runtime_q[k] / med;
            pooled_w += w;
            t_ref += w * med;
        }
        double rmed = st->ratio_q[(PROFILE_NQ - 1) / 2];
        if (st->ratio_samples >= JSIM__FEW_TASKS && rmed > 0 && med > 0) {
            double w = st->ratio_samples * med;
            for (int k = 0; k < PROFILE_NQ; k++)
                rpooled[k] += w * st->ratio_q[k] / rmed;
            rpooled_w += w;
            rt_ref += w * med;
        }
    }
    t_ref = pooled_w > 0 ? t_ref / pooled_w : 0;
    rt_ref = rpooled_w > 0 ? rt_ref / rpooled_w : 0;
    double job_fail = attempts > 0 ? fails / attempts : 0;
    for (int s = 0; s < j->nstages; s++) {
        struct jsim_stage_model *sm = &nm.stages[s];
        if (ps[s] < 0)
            continue;
        const struct profile_stage *st = &prof->stages[ps[s]];
        sm->from_profile = 1;
        memcpy(sm->runtime_q, st->runtime_q, sizeof sm->runtime_q);
        sm->runtime_max = st->runtime_q[PROFILE_NQ - 1];
        memcpy(sm->init_q, st->init_q, sizeof sm->init_q);
        double med = st->runtime_q[(PROFILE_NQ - 1) / 2];
        if (st->tasks < JSIM__FEW_TASKS && pooled_w > 0) {
            double f = jsim__borrow(t_ref, med);
            for (int k = 0; k < PROFILE_NQ; k++)
                sm->runtime_q[k] = med * (1 + (pooled[k] / pooled_w - 1) * f);
        }
        if (st->ratio_samples > 0) {
            sm->by_ratio = 1;
            memcpy(sm->ratio_q, st->ratio_q, sizeof sm->ratio_q);
            if (st->ratio_samples < JSIM__FEW_TASKS && rpooled_w > 0) {
                double rmed = st->ratio_q[(PROFILE_NQ - 1) / 2];
                double f = jsim__borrow(rt_ref, med);
                for (int k = 0; k < PROFILE_NQ; k++)
                    sm->ratio_q[k] = rmed * (1 + (rpooled[k] / rpooled_w - 1) * f);
            }
        }
        /* Shrink the stage's own failure rate towards the job's (a prior worth 20 attempts). */
        double fp =
            (st->failures + JSIM__FAIL_PRIOR * job_fail) / (st->attempts + JSIM__FAIL_PRIOR);
        sm->fail_prob = fp < 0 ? 0 : fp > 0.9 ? 0.9 : fp;
        /* Scale the profile's totals to this job's stage size (input sizes vary between runs). */
        int n = jsim_job_stage_size(j, s);
        if (sm->by_ratio) {
            double mean = 0; /* trapezoid over the quantile function */
            for (int k = 0; k + 1 < PROFILE_NQ; k++)
                mean += 0.5 * (sm->ratio_q[k] + sm->ratio_q[k + 1]) / (PROFILE_NQ - 1);
            sm->runtime_total *= mean; /* was the sum of this stage's estimates */
        } else {
            sm->runtime_total = profile_stage_runtime_mean(st) * n;
        }
        sm->queue_total = st->tasks > 0 ? st->queue_total / st->tasks * n : 0;
    }
    mem_free(ps);
    mem_free(sorted);
    *m = nm;
    return 0;
}

int jsim_model_init_median(struct jsim_model *out, const struct jsim_model *m)
{
    int n = m->nstages > 0 ? m->nstages : 0;
    out->stages = mem_alloc((size_t)(n > 0 ? n : 1) * sizeof *out->stages);
    if (out->stages == NULL) {
        out->nstages = 0;
        return ERR_NOMEM;
    }
    out->nstages = n;
    for (int st = 0; st < n; st++) {
        out->stages[st] = m->stages[st];
        double med = m->stages[st].init_q[(PROFILE_NQ - 1) / 2];
        for (int q = 0; q < PROFILE_NQ; q++)
            out->stages[st].init_q[q] = med;
    }
    return 0;
}

void jsim_model_close(struct jsim_model *m)
{
    if (m == NULL)
        return;
    mem_free(m->stages);
    m->stages = NULL;
    m->nstages = 0;
}
