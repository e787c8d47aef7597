/* estimator.c - completion-time estimates (see estimator.h). */
#include "jm/estimator.h"

#include <math.h>
#include <stdlib.h>

#include "common/err.h"
#include "common/mem.h"

struct estimator__stage {
    size_t n;           /* observations */
    double cpu_sum;     /* observed CPU parts, seconds */
    double bytes_sum;   /* their input bytes */
    double cpu_nobytes; /* CPU parts of observations without input, seconds */
    size_t n_nobytes;
    double cpu_est, est_sum; /* observations with the task's own estimate: CPU parts, estimates */
    double est_min, est_max; /* the range of those estimates */
};

struct estimator {
    struct estimator_config cfg;
    double local_bps, rack_bps, remote_bps, staging_bps;
    size_t nstages;
    struct estimator__stage *stages;
};

void estimator_config_default(struct estimator_config *cfg)
{
    cfg->bw_local_mbs = 160;
    cfg->bw_rack_mbs = 100;
    cfg->bw_remote_mbs = 80;
    cfg->staging_mbs = 80;
    cfg->kfail = 2.0;
    cfg->stale_after_ms = 3000;
    cfg->stale_max_steps = 2;
    cfg->heartbeat_s = 1.0;
    cfg->random_frac = 0.05;
}

int estimator_new(const struct estimator_config *cfg, size_t nstages, estimator_t **out)
{
    *out = NULL;
    struct estimator_config def;
    if (cfg == NULL) {
        estimator_config_default(&def);
        cfg = &def;
    }
    if (!(cfg->bw_local_mbs > 0) || !(cfg->bw_rack_mbs > 0) || !(cfg->bw_remote_mbs > 0) ||
        !(cfg->staging_mbs > 0) || !(cfg->kfail >= 1) || cfg->stale_after_ms <= 0 ||
        cfg->stale_max_steps < 0 || !(cfg->heartbeat_s >= 0) || !(cfg->random_frac >= 0))
        return ERR_INVAL;
    estimator_t *e = mem_calloc(1, sizeof *e);
    if (e == NULL)
        return ERR_NOMEM;
    e->stages = mem_calloc(nstages + 1, sizeof *e->stages);
    if (e->stages == NULL) {
        mem_free(e);
        return ERR_NOMEM;
    }
    e->cfg = *cfg;
    e->nstages = nstages;
    e->local_bps = cfg->bw_local_mbs * 1e6;
    e->rack_bps = cfg->bw_rack_mbs * 1e6;
    e->remote_bps = cfg->bw_remote_mbs * 1e6;
    e->staging_bps = cfg->staging_mbs * 1e6;
    *out = e;
    return 0;
}

void estimator_destroy(estimator_t **p)
{
    if (p == NULL || *p == NULL)
        return;
    mem_free((*p)->stages);
    mem_free(*p);
    *p = NULL;
}

const struct estimator_config *estimator_config(const estimator_t *est)
{
    return &est->cfg;
}

void estimator_observe(estimator_t *est, size_t stage, uint64_t input_bytes, double exec_s,
                       double io_s)
{
    estimator_observe_est(est, stage, input_bytes, exec_s, io_s, 0);
}

void estimator_observe_est(estimator_t *est, size_t stage, uint64_t input_bytes, double exec_s,
                           double io_s, double estimate_s)
{
    if (stage >= est->nstages || !isfinite(exec_s) || exec_s < 0 || !isfinite(io_s))
        return;
    double cpu = exec_s - (io_s > 0 ? io_s : 0);
    if (cpu < 0)
        cpu = 0;
    struct estimator__stage *s = &est->stages[stage];
    if (estimate_s > 0 && isfinite(estimate_s)) {
        if (s->est_sum == 0 || estimate_s < s->est_min)
            s->est_min = estimate_s;
        if (s->est_sum == 0 || estimate_s > s->est_max)
            s->est_max = estimate_s;
        s->cpu_est += cpu;
        s->est_sum += estimate_s;
    }
    s->n++;
    if (input_bytes > 0) {
        s->cpu_sum += cpu;
        s->bytes_sum += (double)input_bytes;
    } else {
        s->cpu_nobytes += cpu;
        s->n_nobytes++;
    }
}

size_t estimator_observed(const estimator_t *est, size_t stage)
{
    return stage < est->nstages ? est->stages[stage].n : 0;
}

double estimator_cpu_s(const estimator_t *est, const struct estimator_task *t)
{
    if (t->stage >= est->nstages)
        return t->runtime_s;
    const struct estimator__stage *s = &est->stages[t->stage];
    if (s->n == 0)
        return t->runtime_s;
    /* Estimates that differ within the stage say more about each task than its input does (a
       WfCommons stage of 0.01-7 s tasks whose inputs do not follow): the task's own estimate,
       scaled by what the stage ran against what it was estimated at. */
    if (s->est_sum > 0 && s->est_max > s->est_min * ESTIMATOR_OWN_SPREAD && t->runtime_s > 0)
        return t->runtime_s * s->cpu_est / s->est_sum;
    if (t->input_bytes > 0 && s->bytes_sum > 0)
        return s->cpu_sum / s->bytes_sum * (double)t->input_bytes;
    /* No input to scale by: the mean over every observation of the stage. */
    return (s->cpu_sum + s->cpu_nobytes) / (double)s->n;
}

int estimator_stale_steps(const estimator_t *est, int64_t age_ms)
{
    if (age_ms < est->cfg.stale_after_ms)
        return 0;
    int64_t steps = age_ms / est->cfg.stale_after_ms;
    return steps > est->cfg.stale_max_steps ? est->cfg.stale_max_steps : (int)steps;
}

static int estimator__cached(const uint32_t *v, size_t n, uint32_t node)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] == node)
            return 1;
        if (v[mid] < node)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

double estimator_estimate(const estimator_t *est, const view_t *view,
                          const struct estimator_task *t, uint32_t node, int64_t now_ms,
                          double draw, struct estimate *out)
{
    struct estimate tmp;
    if (out == NULL)
        out = &tmp;
    *out = (struct estimate){0, 0, 0, 0, ESTIMATOR_INF, ESTIMATOR_INF};
    const struct view_node *n = view_node(view, node);
    if (n == NULL || !n->up)
        return ESTIMATOR_INF;
    int steps = estimator_stale_steps(est, view_age_ms(n, now_ms));
    double w = view_wait(n, t->cpu, t->mem_mb, steps);
    if (w < 0)
        return ESTIMATOR_INF;
    double io = 0;
    for (size_t i = 0; i < t->ninputs; i++) {
        const struct estimator_input *in = &t->inputs[i];
        double bps = est->remote_bps;
        for (size_t k = 0; k < in->nnodes; k++) {
            int32_t r = in->nodes[k];
            if (r < 0)
                continue;
            if ((uint32_t)r == node) {
                bps = est->local_bps;
                break;
            }
            const struct view_node *rn = view_node(view, (uint32_t)r);
            if (rn != NULL && rn->rack == n->rack)
                bps = est->rack_bps;
        }
        io += (double)in->bytes / bps;
    }
    double init = 0;
    if (t->file_bytes > 0 && !estimator__cached(t->cached_nodes, t->ncached, node))
        init = (double)t->file_bytes / est->staging_bps;
    double r = estimator_cpu_s(est, t) + io;
    out->i_s = init;
    out->w_s = w;
    out->io_s = io;
    out->r_s = r;
    out->e_s = init + w + r + draw * est->cfg.random_frac * est->cfg.heartbeat_s;
    out->c_s = out->e_s * (n->psucc + est->cfg.kfail * (1.0 - n->psucc));
    return out->c_s;
}

long estimator_best_node(const estimator_t *est, const view_t *view, const struct estimator_task *t,
                         int64_t now_ms, estimator_skip_fn *skip, void *ctx, struct estimate *out)
{
    long best = -1;
    double least = ESTIMATOR_INF;
    for (uint32_t n = 0; n < view_count(view); n++) {
        const struct view_node *vn = view_node(view, n);
        if (vn == NULL || !vn->up || (skip != NULL && skip(ctx, n)))
            continue;
        struct estimate e;
        double c = estimator_estimate(est, view, t, n, now_ms, 0.5, &e);
        if (c < least) {
            least = c;
            best = (long)n;
            *out = e;
        }
    }
    return best;
}
