/* jsim_plan.c - Jockey's offline phase for one job (Jockey §4, Fig. 2): the job's shape from its
 * spec, the model from the profile, the Amdahl statistics, the progress indicator, C(p, a). */
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/jsim.h"
#include "jm/spec.h"
#include "rm/arbiter.h"

void jsim_plan_close(struct jsim_plan *pl)
{
    if (pl == NULL)
        return;
    jsim_table_destroy(&pl->table);
    progress_close(&pl->progress);
    amdahl_close(&pl->amdahl);
    jsim_model_close(&pl->model);
    jsim_job_destroy(&pl->job);
    mem_free(pl->stage_names);
    mem_free(pl->stage_ratio);
    memset(pl, 0, sizeof *pl);
}

int jsim_plan_init(struct jsim_plan *pl, const struct spec *spec, const struct profile *prof,
                   enum progress_kind kind, char *msg, size_t cap)
{
    return jsim_plan_init_sized(pl, spec, prof, kind, -1, 0, msg, cap);
}

int jsim_plan_init_sized(struct jsim_plan *pl, const struct spec *spec, const struct profile *prof,
                         enum progress_kind kind, double token_cpu, uint64_t token_mem_mb,
                         char *msg, size_t cap)
{
    memset(pl, 0, sizeof *pl);
    int rc = jsim_job_from_spec(spec, &pl->job, msg, cap);
    if (rc != 0)
        return rc;
    if (token_cpu >= 0) {
        pl->sized = 1;
        pl->token_cpu = token_cpu > 0 ? token_cpu : ARBITER_TOKEN_CPU_DEFAULT;
        pl->token_mem_mb = token_mem_mb > 0 ? token_mem_mb : ARBITER_TOKEN_MEM_MB_DEFAULT;
        for (size_t t = 0; rc == 0 && t < spec->ntasks; t++)
            rc = jsim_job_set_tokens(pl->job, (int)t,
                                     arbiter_task_tokens(spec->tasks[t].cpu, spec->tasks[t].mem_mb,
                                                         pl->token_cpu, pl->token_mem_mb));
        if (rc != 0) {
            jsim_plan_close(pl);
            return err_fmt(msg, cap, rc, "jockey plan: %s", err_text(rc));
        }
    }
    int S = jsim_job_nstages(pl->job);
    pl->stage_names = mem_calloc((size_t)S, sizeof *pl->stage_names);
    pl->stage_ratio = mem_calloc((size_t)S, sizeof *pl->stage_ratio);
    int *n = mem_calloc((size_t)S, sizeof *n);
    double *Q = mem_calloc((size_t)S, sizeof *Q), *T = mem_calloc((size_t)S, sizeof *T);
    if (pl->stage_names == NULL || pl->stage_ratio == NULL || n == NULL || Q == NULL || T == NULL) {
        rc = err_fmt(msg, cap, ERR_NOMEM, "jockey plan: out of memory");
        goto out;
    }
    for (int s = 0; s < S; s++)
        pl->stage_names[s] = spec->stages[s].name;
    pl->from_profile = prof != NULL;
    if ((rc = jsim_model_init(&pl->model, pl->job, pl->stage_names, prof)) != 0 ||
        (rc = jsim_job_amdahl(pl->job, &pl->model, &pl->amdahl)) != 0) {
        err_fmt(msg, cap, rc, "jockey plan: %s", err_text(rc));
        goto out;
    }
    jsim_job_stage_sizes(pl->job, n);
    for (int s = 0; s < S; s++) {
        Q[s] = pl->model.stages[s].queue_total;
        T[s] = pl->model.stages[s].runtime_total;
    }
    /* Q is free again: use it for the sum of estimates per stage. */
    memset(Q, 0, (size_t)S * sizeof *Q);
    for (size_t t = 0; t < spec->ntasks; t++)
        Q[spec->tasks[t].stage] += spec->tasks[t].runtime_s;
    for (int s = 0; s < S; s++)
        pl->stage_ratio[s] = Q[s] > 0 ? pl->model.stages[s].runtime_total / Q[s] : 1;
    for (int s = 0; s < S; s++) {
        Q[s] = pl->model.stages[s].queue_total;
    }
    if ((rc = progress_init(&pl->progress, kind, S, n, Q, T, &pl->amdahl)) != 0)
        err_fmt(msg, cap, rc, "jockey plan: progress indicator: %s", err_text(rc));
out:
    mem_free(n);
    mem_free(Q);
    mem_free(T);
    if (rc != 0)
        jsim_plan_close(pl);
    return rc;
}

int jsim_plan_build_table(struct jsim_plan *pl, const struct jsim_table_config *cfg,
                          struct jsim_rng *rng, char *msg, size_t cap)
{
    jsim_table_t *t = NULL;
    struct jsim_table_cost cost;
    int rc = jsim_table_build(pl->job, &pl->model, &pl->progress, cfg, rng, &t, &cost, msg, cap);
    if (rc != 0)
        return rc;
    jsim_table_destroy(&pl->table);
    pl->table = t;
    pl->cost = cost;
    return 0;
}

void jsim_plan_predictor(const struct jsim_plan *pl, controller_predict_fn **fn, void **ctx)
{
    if (pl->table != NULL) {
        *fn = controller_predict_table;
        *ctx = pl->table;
    } else {
        *fn = controller_predict_amdahl;
        *ctx = (void *)&pl->amdahl;
    }
}

double jsim_plan_task_expected(const struct jsim_plan *pl, const struct spec *spec, size_t task)
{
    if (task >= spec->ntasks || pl->stage_ratio == NULL)
        return 0;
    return spec->tasks[task].runtime_s * pl->stage_ratio[spec->tasks[task].stage];
}
