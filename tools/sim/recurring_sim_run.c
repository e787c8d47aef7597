/* recurring_sim_run.c - one policy over the jobs of `paddock-sim recurring`, one step at a time:
 * releases and arrivals, admission, the plan's reservations, the arbiter's grants, and every
 * job's stages running as fluids on what it is granted. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "rm/arbiter.h"
#include "rm/lowcost.h"
#include "rm/skyline.h"
#include "rm/slo.h"
#include "tools/sim/engine.h"
#include "tools/sim/recurring_sim_internal.h"

/* A periodic run or an ad-hoc job in one simulation (private). */
struct rsr_inst {
    const struct rsim_shape *sh;
    double *left;  /* per stage: true work left */
    double *ratio; /* per stage: true / estimated work */
    uint32_t *pl;  /* per stage: predecessors not done */
    uint32_t *wid; /* per stage: tokens it can use at once in this run */
    uint32_t wid_max;
    uint32_t ndone;
    uint32_t release;  /* step */
    uint32_t deadline; /* absolute step; 0: none */
    size_t job;        /* periodic: its job; ad-hoc: its index */
    int periodic, refused, reserved_run, finished, eval;
    uint32_t finish; /* step after the last one it ran in */
    uint32_t grant, demand, asked;
    double used, est_done;
    double *sky; /* periodic: tokens used per step from the release */
    size_t nsky;
};

/* A periodic job's state in one simulation (private). */
struct rsr_job {
    double **hist; /* last skylines (ring of fit_runs) */
    size_t *hist_n;
    size_t nhist, hist_at;
    struct slo_run *ends; /* warm-up runs, for slo_infer */
    size_t nends, ends_cap;
    uint32_t deadline; /* steps from the release; 0: none */
    int inferred;
    double *resv;         /* the plan's reservation, per step of the period; NULL: none */
    struct rsr_inst *cur; /* the run of the current period (may have finished) */
};

struct rsr {
    const struct recurring_sim_jobs *s;
    const struct recurring_sim_config *cfg;
    enum recurring_sim_policy pol;
    struct rsr_job *jobs;
    struct rsr_inst **act;
    size_t nact;
    struct rsr_inst *pool; /* every instance, in creation order */
    size_t npool, pool_cap;
    struct arbiter_job *aj;
    size_t *order;
    struct arbiter_load *load;
    size_t nload_cap;
    struct lowcost_plan plan;
    int planned;
    double *seg_t, *seg_tok;
    struct recurring_sim_result *res;
    char *msg;
    size_t msgcap;
};

const char *recurring_sim_policy_name(enum recurring_sim_policy p)
{
    static const char *const names[] = {"none", "greedy", "lowcost", "lowcost_reprov"};
    return (unsigned)p < RECURRING_SIM_NPOLICIES ? names[p] : "?";
}

static void rsr__inst_free(struct rsr_inst *x)
{
    mem_free(x->left);
    mem_free(x->ratio);
    mem_free(x->pl);
    mem_free(x->wid);
    mem_free(x->sky);
}

/* A new instance of shape sh released at step t with per-stage true/estimate ratios drawn by
 * the caller into ratio (transferred) and its stages' widths x wf (more input, more tasks). */
static struct rsr_inst *rsr__inst_new(struct rsr *r, const struct rsim_shape *sh, uint32_t t,
                                      double *ratio, double wf)
{
    if (r->npool == r->pool_cap) {
        mem_free(ratio);
        return NULL;
    }
    struct rsr_inst *x = &r->pool[r->npool];
    memset(x, 0, sizeof *x);
    x->sh = sh;
    x->ratio = ratio;
    x->release = t;
    x->left = mem_calloc(sh->ns, sizeof *x->left);
    x->pl = mem_calloc(sh->ns, sizeof *x->pl);
    x->wid = mem_calloc(sh->ns, sizeof *x->wid);
    if (x->left == NULL || x->pl == NULL || x->wid == NULL || x->ratio == NULL) {
        rsr__inst_free(x);
        return NULL;
    }
    r->npool++;
    for (size_t g = 0; g < sh->ns; g++) {
        x->left[g] = sh->work[g] * ratio[g];
        x->pl[g] = sh->npred[g];
        double w = round(sh->width[g] * wf);
        x->wid[g] = w < 1 ? 1 : w > r->cfg->capacity ? r->cfg->capacity : (uint32_t)w;
    }
    double w = round(sh->width_max * wf);
    x->wid_max = w < 1 ? 1 : w > r->cfg->capacity ? r->cfg->capacity : (uint32_t)w;
    return x;
}

/* What is left of x on estimates (the spec's work scaled by the share of each stage done), and
 * the same as its controller sees it: multiplied by its speed so far (token-steps used over
 * estimated work done, with a prior of 5% of its work at speed 1). */
static void rsr__remaining(const struct rsr_inst *x, int seen, struct arbiter_shape *out)
{
    const struct rsim_shape *sh = x->sh;
    double work = 0, path = 0;
    for (size_t g = 0; g < sh->ns; g++) {
        if (x->left[g] <= 0)
            continue;
        double est_left = x->left[g] / x->ratio[g];
        work += est_left;
        double p = sh->bl[g] - (sh->work[g] - est_left) / sh->width[g];
        path = p > path ? p : path;
    }
    double speed = 1;
    if (seen) {
        double prior = 0.05 * sh->work_est;
        speed = (x->used + prior) / (x->est_done + prior);
    }
    double cv = 0.2;
    *out = (struct arbiter_shape){.work = work * speed,
                                  .work_sd = work * speed * cv,
                                  .path = path * speed,
                                  .path_sd = path * speed * cv,
                                  .width = x->wid_max};
}

/* Admission (MRM §3) of deadline instance x at step t: against the admitted deadline jobs
 * running without a reservation, and the plan's reservations ahead when there is one. */
static int rsr__admit(struct rsr *r, struct rsr_inst *x, uint32_t t)
{
    size_t n = 0;
    for (size_t a = 0; a < r->nact; a++) {
        const struct rsr_inst *o = r->act[a];
        if (o->deadline == 0 || o->refused || o->reserved_run)
            continue;
        r->load[n].id = (uint64_t)(o - r->pool) + 1;
        r->load[n].deadline = (double)o->deadline - t;
        rsr__remaining(o, 0, &r->load[n].remain);
        n++;
    }
    struct arbiter_shape sh;
    rsr__remaining(x, 0, &sh);
    struct arbiter_quote q;
    struct arbiter_reserve plan = {0};
    int rc;
    if (r->planned) {
        /* the plan from now to twice the job's deadline, in segments of equal load */
        uint32_t h = 2 * (x->deadline - t) + 1;
        size_t ns = 0;
        for (uint32_t k = 0; k < h; k++) {
            double v = r->plan.load[(t + k) % r->plan.nsteps];
            if (ns > 0 && r->seg_tok[ns - 1] == v)
                continue;
            r->seg_t[ns] = k;
            r->seg_tok[ns] = v;
            ns++;
        }
        plan = (struct arbiter_reserve){.t = r->seg_t, .tokens = r->seg_tok, .n = ns};
        rc = arbiter_admit_plan(ARBITER_K_DEFAULT, r->cfg->capacity, &plan, r->load, n, &sh,
                                (double)x->deadline - t, &q);
    } else {
        rc = arbiter_admit(ARBITER_K_DEFAULT, r->cfg->capacity, r->load, n, &sh,
                           (double)x->deadline - t, &q);
    }
    if (rc != 0)
        return rc;
    x->refused = !q.admit;
    return 0;
}

static int rsr__activate(struct rsr *r, struct rsr_inst *x, uint32_t t)
{
    int rc = 0;
    if (x->deadline > 0 && r->cfg->admission && !x->reserved_run)
        rc = rsr__admit(r, x, t);
    r->act[r->nact++] = x;
    return rc;
}

static int rsr__release(struct rsr *r, size_t j, uint32_t t, uint32_t end)
{
    const struct rsim_periodic *p = &r->s->p[j];
    struct rsr_job *jb = &r->jobs[j];
    uint32_t k = t / p->period;
    struct rng g;
    rng_seed_stream(&g, r->s->seed, RSIM_STREAM_RUN | ((uint64_t)j << 24) | k);
    double *ratio = mem_calloc(p->sh.ns, sizeof *ratio);
    if (ratio == NULL)
        return ERR_NOMEM;
    double sr = r->cfg->run_sigma, ss = r->cfg->stage_sigma;
    double factor = rng_lognormal(&g, -sr * sr / 2, sr);
    double slow = rng_unif(&g);
    if (rng_bernoulli(&g, r->cfg->slow_prob))
        factor *= 1.5 + 0.5 * slow;
    for (size_t s = 0; s < p->sh.ns; s++)
        ratio[s] = factor * rng_lognormal(&g, -ss * ss / 2, ss);
    struct rsr_inst *x = rsr__inst_new(r, &p->sh, t, ratio, pow(factor, r->cfg->elastic));
    if (x == NULL)
        return ERR_NOMEM;
    x->periodic = 1;
    x->job = j;
    x->eval = t >= r->cfg->warmup_steps && t < end;
    x->deadline = jb->deadline > 0 ? t + jb->deadline : 0;
    x->reserved_run = jb->resv != NULL;
    x->sky = mem_calloc(SKYLINE_MAX_STEPS, sizeof *x->sky);
    if (x->sky == NULL)
        return ERR_NOMEM;
    jb->cur = x;
    if (x->eval)
        r->res->runs++;
    return rsr__activate(r, x, t);
}

static int rsr__arrive(struct rsr *r, size_t i, uint32_t t, uint32_t end)
{
    const struct rsim_adhoc *a = &r->s->a[i];
    double *ratio = mem_calloc(a->sh.ns, sizeof *ratio);
    if (ratio == NULL)
        return ERR_NOMEM;
    memcpy(ratio, a->noise, a->sh.ns * sizeof *ratio);
    struct rsr_inst *x = rsr__inst_new(r, &a->sh, t, ratio, 1);
    if (x == NULL)
        return ERR_NOMEM;
    x->job = i;
    x->eval = t >= r->cfg->warmup_steps && t < end;
    x->deadline = a->deadline > 0 ? t + a->deadline : 0;
    if (x->eval)
        r->res->adhoc++;
    return rsr__activate(r, x, t);
}

/* After the warm-up: deadlines (given or inferred from completion, Morpheus §4), R* (§5) and,
 * for the planned policies, the plan (§6). */
static int rsr__model(struct rsr *r)
{
    const struct recurring_sim_config *cfg = r->cfg;
    double step_ms = cfg->step_s * 1000;
    struct slo_params sp;
    slo_params_default(&sp);
    int rc = 0;
    for (size_t j = 0; j < r->s->np && rc == 0; j++) {
        const struct rsim_periodic *p = &r->s->p[j];
        struct rsr_job *jb = &r->jobs[j];
        jb->deadline = p->deadline;
        if (jb->deadline == 0 && jb->nends > 0) {
            struct slo_inference inf;
            rc = slo_infer(jb->ends, jb->nends, &sp, &inf);
            if (rc != 0)
                break;
            if (inf.source != SLO_NONE) {
                double d = ceil((double)inf.deadline / step_ms - 1e-9);
                jb->deadline = d > p->period ? p->period : d < 1 ? 1 : (uint32_t)d;
                jb->inferred = 1;
                r->res->inferred++;
            }
        }
        if (!r->planned || jb->nhist == 0)
            continue;
        size_t k = 1;
        const double *runs[SKYLINE_MAX_RUNS];
        for (size_t i = 0; i < jb->nhist; i++) {
            runs[i] = jb->hist[i];
            k = jb->hist_n[i] > k ? jb->hist_n[i] : k;
        }
        double *rstar = mem_calloc(k, sizeof *rstar);
        jb->resv = mem_calloc(p->period, sizeof *jb->resv);
        if (rstar == NULL || jb->resv == NULL) {
            mem_free(rstar);
            return ERR_NOMEM;
        }
        struct skyline_fit_info info;
        rc = skyline_fit(runs, jb->nhist, k, cfg->alpha, rstar, &info);
        if (rc != 0) {
            mem_free(rstar);
            err_fmt(r->msg, r->msgcap, rc, "skyline_fit (job %zu): %s", j, err_text(rc));
            break;
        }
        while (k > 1 && rstar[k - 1] <= 1e-9) /* trailing zeros */
            k--;
        uint32_t win = jb->deadline > 0 ? jb->deadline : p->period;
        if (k > win) {
            /* a model longer than its window: squeezed into it, its area kept */
            double *sq = mem_calloc(win, sizeof *sq);
            if (sq == NULL) {
                mem_free(rstar);
                return ERR_NOMEM;
            }
            size_t m = skyline_resample(rstar, k, win, sq, win, (uint32_t)k);
            for (size_t i = 0; i < m; i++)
                sq[i] *= (double)k / win;
            mem_free(rstar);
            rstar = sq;
            k = m;
        }
        struct lowcost_job lj = {.period = p->period,
                                 .release = 0,
                                 .deadline = win,
                                 .demand = rstar,
                                 .nstages = (uint32_t)k};
        int prc = r->pol == RECURRING_SIM_GREEDY ? lowcost_place_greedy(&r->plan, &lj, jb->resv)
                                                 : lowcost_place(&r->plan, &lj, jb->resv);
        mem_free(rstar);
        if (prc == ERR_FULL || prc == ERR_INVAL) {
            mem_free(jb->resv);
            jb->resv = NULL;
            r->res->unplaced++;
        } else if (prc != 0) {
            rc = prc;
            err_fmt(r->msg, r->msgcap, rc, "lowcost (job %zu): %s", j, err_text(rc));
        }
    }
    if (rc == 0 && r->planned) {
        r->res->plan_peak_tokens = lowcost_peak(&r->plan);
        double sum = 0;
        for (uint32_t i = 0; i < r->plan.nsteps; i++)
            sum += r->plan.load[i];
        r->res->planned_tokens_mean = sum / r->plan.nsteps;
    }
    return rc;
}

static uint32_t rsr__tokens(double v)
{
    double c = ceil(v - 1e-6);
    return c < 0 ? 0 : (uint32_t)c;
}

/* A finished periodic run of the warm-up leaves its skyline and completion time. */
static int rsr__record(struct rsr *r, struct rsr_inst *x)
{
    struct rsr_job *jb = &r->jobs[x->job];
    size_t nfit = r->cfg->fit_runs;
    size_t at = jb->nhist < nfit ? jb->nhist++ : jb->hist_at;
    jb->hist_at = (at + 1) % nfit;
    mem_free(jb->hist[at]);
    jb->hist[at] = x->sky;
    jb->hist_n[at] = x->nsky;
    x->sky = NULL;
    if (jb->nends == jb->ends_cap) {
        size_t nc = jb->ends_cap ? 2 * jb->ends_cap : 32;
        struct slo_run *v = mem_reallocarray(jb->ends, nc, sizeof *v);
        if (v == NULL)
            return ERR_NOMEM;
        jb->ends = v;
        jb->ends_cap = nc;
    }
    double step_ms = r->cfg->step_s * 1000;
    jb->ends[jb->nends++] = (struct slo_run){
        .start = 0, .end = llround((x->finish - x->release) * step_ms), .out_read = -1, .ok = 1};
    return 0;
}

static int rsr__cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One step: the arbiter's inputs, its grants, and every job's progress. */
static int rsr__step(struct rsr *r, uint32_t t, uint32_t end)
{
    const struct recurring_sim_config *cfg = r->cfg;
    uint32_t cap = cfg->capacity;
    int eval = t >= cfg->warmup_steps && t < end;
    uint32_t held_back = 0;
    for (size_t j = 0; r->planned && j < r->s->np; j++) {
        const struct rsr_job *jb = &r->jobs[j];
        uint32_t p = r->s->p[j].period;
        if (jb->resv == NULL)
            continue;
        const struct rsr_inst *c = jb->cur;
        if (c == NULL || c->finished || c->release != t - t % p)
            held_back += rsr__tokens(jb->resv[t % p]);
    }
    for (size_t a = 0; a < r->nact; a++) {
        struct rsr_inst *x = r->act[a];
        const struct rsim_shape *sh = x->sh;
        uint64_t demand = 0;
        for (size_t g = 0; g < sh->ns; g++)
            if (x->pl[g] == 0 && x->left[g] > 0)
                demand += x->wid[g];
        x->demand = demand > cap ? cap : (uint32_t)demand;
        uint32_t minimum = 0, reserved = 0, extra = 0;
        if (x->deadline > 0) {
            struct arbiter_shape shp;
            rsr__remaining(x, 0, &shp);
            minimum = arbiter_min_tokens(&shp, (double)x->deadline - t);
            minimum = minimum < 1 ? 1 : minimum;
            minimum = minimum > x->demand ? x->demand : minimum;
        }
        if (x->periodic && x->reserved_run && r->planned) {
            const struct rsr_job *jb = &r->jobs[x->job];
            uint32_t p = r->s->p[x->job].period;
            uint32_t off = t - x->release;
            if (off < p)
                reserved = rsr__tokens(jb->resv[off]);
            if (r->pol == RECURRING_SIM_LOWCOST_REPROV && x->deadline > 0) {
                /* §7: the run's controller asks for what meets its deadline at the speed it has
                 * shown; above its reservation it gets extra, capped at rho x its largest
                 * reservation of the recent past */
                struct arbiter_shape seen;
                rsr__remaining(x, 1, &seen);
                double tl = ((double)x->deadline - t) / cfg->slack;
                uint32_t ask = tl > 0 ? arbiter_min_tokens(&seen, tl) : x->demand;
                ask = ask > x->demand ? x->demand : ask;
                x->asked = ask;
                uint32_t w = (uint32_t)ceil(cfg->recent_frac * p);
                w = w < 2 ? 2 : w;
                uint32_t hi = off < p ? off : p - 1;
                double recent = 0;
                for (uint32_t o = hi >= w ? hi - w : 0; o <= hi; o++)
                    recent = jb->resv[o] > recent ? jb->resv[o] : recent;
                uint32_t lim = rsr__tokens(cfg->rho * recent);
                if (ask > reserved && lim > reserved)
                    extra = (ask < lim ? ask : lim) - reserved;
            }
        }
        r->aj[a] = (struct arbiter_job){.id = (uint64_t)(x - r->pool) + 1,
                                        .deadline = x->deadline > 0 ? (int64_t)x->deadline + 1 : 0,
                                        .best_effort = x->refused,
                                        .wanted = x->demand,
                                        .minimum = minimum,
                                        .width = x->demand,
                                        .held = x->grant,
                                        .weight = 1,
                                        .reserved = reserved,
                                        .extra = extra};
    }
    arbiter_allocate_plan(ARBITER_MINEDF_WC, cap, held_back, r->aj, r->nact, r->order);
    double periodic_grant = 0, used_all = 0;
    uint64_t granted = 0;
    for (size_t a = 0; a < r->nact; a++) {
        struct rsr_inst *x = r->act[a];
        const struct rsim_shape *sh = x->sh;
        struct arbiter_job *aj = &r->aj[a];
        x->grant = aj->grant;
        granted += aj->grant;
        if (x->periodic)
            periodic_grant += aj->grant;
        if (eval && aj->extra > 0 && aj->grant > aj->reserved) {
            uint32_t more = aj->grant - aj->reserved;
            more = more < aj->extra ? more : aj->extra;
            r->res->reprov_steps++;
            r->res->reprov_token_s += more * cfg->step_s;
        }
        /* the ready stages, longest tail first, each up to its width */
        uint32_t left = aj->grant;
        double used = 0;
        for (size_t k = 0; k < sh->ns && left > 0; k++) {
            uint32_t g = sh->order[k];
            if (x->pl[g] != 0 || x->left[g] <= 0)
                continue;
            uint32_t give = x->wid[g] < left ? x->wid[g] : left;
            left -= give;
            double done = give < x->left[g] ? give : x->left[g];
            x->left[g] -= done;
            used += done;
            x->est_done += done / x->ratio[g];
            if (x->left[g] <= 1e-9) {
                x->left[g] = 0;
                x->ndone++;
            }
        }
        /* successors of the stages done this step become ready at the next */
        for (size_t g = 0; g < sh->ns; g++) {
            if (x->left[g] != 0 || x->pl[g] == UINT32_MAX)
                continue;
            x->pl[g] = UINT32_MAX; /* released */
            for (uint32_t e = sh->succ_at[g]; e < sh->succ_at[g + 1]; e++)
                x->pl[sh->succ[e]]--;
        }
        x->used += used;
        used_all += used;
        if (eval && aj->reserved > 0)
            r->res->reserved_used_fraction += used < aj->reserved ? used : aj->reserved;
        if (x->periodic && x->sky != NULL && x->nsky < SKYLINE_MAX_STEPS)
            x->sky[x->nsky++] = used;
        if (x->ndone == sh->ns) {
            x->finished = 1;
            x->finish = t + 1;
            x->grant = 0;
        }
    }
    if (granted > cap)
        return err_fmt(r->msg, r->msgcap, ERR_STATE, "granted %llu of %u tokens",
                       (unsigned long long)granted, cap);
    if (eval) {
        r->res->utilization += used_all;
        if (periodic_grant > r->res->periodic_grant_peak)
            r->res->periodic_grant_peak = periodic_grant;
    }
    /* the finished leave; warm-up runs leave their history */
    size_t w = 0;
    int rc = 0;
    for (size_t a = 0; a < r->nact; a++) {
        struct rsr_inst *x = r->act[a];
        if (!x->finished) {
            r->act[w++] = x;
            continue;
        }
        if (x->periodic && x->release < cfg->warmup_steps && rc == 0)
            rc = rsr__record(r, x);
        if (x->periodic && x->eval && x->deadline > 0 && x->finish > x->deadline)
            r->res->missed++;
        mem_free(x->left); /* the job is done: its buffers go */
        x->left = NULL;
        mem_free(x->pl);
        x->pl = NULL;
        mem_free(x->wid);
        x->wid = NULL;
    }
    r->nact = w;
    return rc;
}

int recurring_sim_run(const recurring_sim_jobs_t *s, const struct recurring_sim_config *cfg,
                      enum recurring_sim_policy p, struct recurring_sim_result *out, char *msg,
                      size_t cap)
{
    memset(out, 0, sizeof *out);
    if (msg != NULL && cap > 0)
        msg[0] = '\0';
    struct rsr r = {.s = s, .cfg = cfg, .pol = p, .res = out, .msg = msg, .msgcap = cap};
    uint32_t end = cfg->warmup_steps + cfg->eval_steps;
    uint32_t stop = end + RECURRING_SIM_DAY; /* the drain: what has not finished by then missed */
    size_t runs = 0;
    for (size_t j = 0; j < s->np; j++)
        runs += end / s->p[j].period + 1;
    r.pool_cap = runs + s->na;
    r.pool = mem_calloc(r.pool_cap, sizeof *r.pool);
    r.act = mem_calloc(r.pool_cap, sizeof *r.act);
    r.aj = mem_calloc(r.pool_cap, sizeof *r.aj);
    r.order = mem_calloc(r.pool_cap, sizeof *r.order);
    r.load = mem_calloc(r.pool_cap, sizeof *r.load);
    r.jobs = mem_calloc(s->np, sizeof *r.jobs);
    r.seg_t = mem_calloc(4 * RECURRING_SIM_DAY + 2, sizeof *r.seg_t);
    r.seg_tok = mem_calloc(4 * RECURRING_SIM_DAY + 2, sizeof *r.seg_tok);
    r.plan = (struct lowcost_plan){.nsteps = s->lcm, .capacity = cfg->capacity};
    r.plan.load = mem_calloc(s->lcm, sizeof *r.plan.load);
    double *lat = mem_calloc(s->na + 1, sizeof *lat);
    int rc = r.pool && r.act && r.aj && r.order && r.load && r.jobs && r.seg_t && r.seg_tok &&
                     r.plan.load && lat
                 ? 0
                 : ERR_NOMEM;
    for (size_t j = 0; rc == 0 && j < s->np; j++) {
        r.jobs[j].hist = mem_calloc(cfg->fit_runs, sizeof *r.jobs[j].hist);
        r.jobs[j].hist_n = mem_calloc(cfg->fit_runs, sizeof *r.jobs[j].hist_n);
        if (r.jobs[j].hist == NULL || r.jobs[j].hist_n == NULL)
            rc = ERR_NOMEM;
    }
    size_t next_adhoc = 0;
    uint32_t t = 0;
    for (; rc == 0 && t < stop; t++) {
        if (t == cfg->warmup_steps) {
            r.planned = p != RECURRING_SIM_NONE;
            rc = rsr__model(&r);
            if (rc != 0)
                break;
        }
        for (size_t j = 0; rc == 0 && t < end && j < s->np; j++)
            if (t % s->p[j].period == 0)
                rc = rsr__release(&r, j, t, end);
        while (rc == 0 && next_adhoc < s->na && s->a[next_adhoc].arrive == t)
            rc = rsr__arrive(&r, next_adhoc++, t, end);
        if (rc == 0)
            rc = rsr__step(&r, t, end);
        if (t >= end && r.nact == 0)
            break;
    }
    if (rc == 0) {
        size_t nl = 0, dl = 0, dl_missed = 0, dl_admitted = 0;
        for (size_t i = 0; i < r.npool; i++) {
            const struct rsr_inst *x = &r.pool[i];
            if (!x->eval)
                continue;
            if (x->periodic) {
                if (!x->finished && x->deadline > 0)
                    out->missed++; /* never finished */
                continue;
            }
            lat[nl++] = ((x->finished ? x->finish : t) - x->release) * cfg->step_s;
            if (x->deadline > 0) {
                dl++;
                dl_missed += !x->finished || x->finish > x->deadline;
                dl_admitted += !x->refused;
            }
        }
        qsort(lat, nl, sizeof *lat, rsr__cmp_double);
        if (nl > 0) {
            out->adhoc_latency_p50_s = slo_percentile(lat, nl, 50);
            out->adhoc_latency_p90_s = slo_percentile(lat, nl, 90);
        }
        out->adhoc_deadline_missed_fraction = dl ? (double)dl_missed / dl : 0;
        out->adhoc_admitted_fraction = dl ? (double)dl_admitted / dl : 1;
        size_t counted = 0;
        for (size_t i = 0; i < r.npool; i++)
            counted += r.pool[i].eval && r.pool[i].periodic && r.pool[i].deadline > 0;
        out->slo_violation_fraction = counted ? (double)out->missed / counted : 0;
        out->utilization /= (double)cfg->capacity * cfg->eval_steps;
        double planned = out->planned_tokens_mean * cfg->eval_steps;
        out->reserved_used_fraction = planned > 0 ? out->reserved_used_fraction / planned : 0;
        out->peak_tokens = r.planned ? out->plan_peak_tokens : out->periodic_grant_peak;
    }
    for (size_t i = 0; i < r.npool; i++)
        rsr__inst_free(&r.pool[i]);
    for (size_t j = 0; r.jobs != NULL && j < s->np; j++) {
        for (size_t i = 0; r.jobs[j].hist != NULL && i < cfg->fit_runs; i++)
            mem_free(r.jobs[j].hist[i]);
        mem_free(r.jobs[j].hist);
        mem_free(r.jobs[j].hist_n);
        mem_free(r.jobs[j].ends);
        mem_free(r.jobs[j].resv);
    }
    mem_free(r.jobs);
    mem_free(r.pool);
    mem_free(r.act);
    mem_free(r.aj);
    mem_free(r.order);
    mem_free(r.load);
    mem_free(r.seg_t);
    mem_free(r.seg_tok);
    mem_free(r.plan.load);
    mem_free(lat);
    if (rc != 0 && msg != NULL && cap > 0 && msg[0] == '\0')
        err_fmt(msg, cap, rc, "%s", err_text(rc));
    return rc;
}
