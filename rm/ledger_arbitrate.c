/* ledger_arbitrate.c - the ledger's arbitration and admission: every grant of a virtual cluster
 * recomputed through rm/arbiter.h (MinEDF-WC by default), a deadline job's minimum, what is left of
 * a job's shape, and MRM's admission check and quote against the admitted jobs and the recurring
 * plan. Commands are applied in rm/ledger.c and rm/ledger_job.c. */
#include "rm/ledger.h"
#include "rm/ledger_internal.h"

#include "common/err.h"
#include "common/mem.h"

#include <math.h>
#include <string.h>

void ledger__job_set_tokens(ledger_t *l, struct ledger_job *j, uint32_t tokens)
{
    struct ledger_vc *vc = &l->vcs[j->vc];
    if (j->held_since_ms > 0 && l->now > j->held_since_ms) /* issue 27: tokens x time held */
        j->held_ms += (uint64_t)j->tokens * (uint64_t)(l->now - j->held_since_ms);
    j->held_since_ms = l->now;
    vc->granted = vc->granted - j->tokens + tokens;
    j->tokens = tokens;
}

uint64_t ledger_job_held_ms(const ledger_t *l, const struct ledger_job *j)
{
    return j->held_ms + (j->held_since_ms > 0 && l->now > j->held_since_ms
                             ? (uint64_t)j->tokens * (uint64_t)(l->now - j->held_since_ms)
                             : 0);
}

static double ledger__done(const struct ledger_job *j)
{
    return 1.0 - (double)(j->done_permille > 1000 ? 1000 : j->done_permille) / 1000.0;
}

/* What is left of a job's registered shape, in seconds and token-seconds. */
struct arbiter_shape ledger__shape_of(const struct ledger_job *j, double left)
{
    struct arbiter_shape s = {.work = (double)j->work_ms / 1000.0 * left,
                              .work_sd = (double)j->work_sd_ms / 1000.0 * left,
                              .path = (double)j->path_ms / 1000.0 * left,
                              .path_sd = (double)j->path_sd_ms / 1000.0 * left,
                              .width = j->width,
                              .has_alpha = j->has_alpha,
                              .alpha = (double)j->alpha_milli / 1000.0};
    return s;
}

struct arbiter_shape ledger__remain(const struct ledger_job *j)
{
    return ledger__shape_of(j, ledger__done(j));
}

/* The conservative scale a shape gets now: its own spread (x 1000; 0: none) times what the error
 * model learned own spreads miss, or without one the model's cluster-wide quantile factor. */
static double ledger__scale(const ledger_t *l, uint32_t spread_milli)
{
    struct calib_factors f;
    calib_factors(&l->calib, &f);
    return calib_bound_factor(&f, (double)spread_milli / 1000.0);
}

/* Which job a run belongs to, for its own history: its name within its virtual cluster. */
static uint64_t ledger__run_key(uint32_t vc, const char *name)
{
    uint64_t h = 1469598103934665603ull ^ vc;
    for (const unsigned char *p = (const unsigned char *)name; *p != '\0'; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h;
}

/* Admission's error model as an entry judges by it (rm/calib.h): the cluster's factors and, for
 * entries of version 9 on, the finished runs of jobs with a spread of their own, oldest first
 * (the finished jobs the ledger keeps, by id), and the history model over them. */
struct ledger__model {
    struct calib_factors f;
    bool history;
    struct calib_run *runs;
    size_t nruns;
    struct calib_hist h;
};

static void ledger__model_close(struct ledger__model *m)
{
    mem_free(m->runs);
    m->runs = NULL;
}

static int ledger__model_init(const ledger_t *l, bool history, struct ledger__model *m)
{
    memset(m, 0, sizeof *m);
    calib_factors(&l->calib, &m->f);
    m->history = history;
    if (!history || l->njobs == 0)
        return 0;
    if ((m->runs = mem_alloc(l->njobs * sizeof *m->runs)) == NULL)
        return ERR_NOMEM;
    for (size_t i = 0; i < l->njobs; i++) {
        const struct ledger_job *j = &l->jobs[i];
        /* the runs the error model learned from (ledger__job_finish), with a spread */
        bool modelled = j->deadline_ms != 0 && !j->best_effort ? true : !j->shared;
        if (j->state != LEDGER_JOB_DONE || !modelled || j->reserved_run || j->pred_p50_ms <= 0 ||
            j->spread_milli < 1000 || j->finished_ms < j->submitted_ms)
            continue;
        double r = (double)(j->finished_ms - j->submitted_ms) / (double)j->pred_p50_ms;
        r = r < CALIB_RATIO_MIN ? CALIB_RATIO_MIN : r > CALIB_RATIO_MAX ? CALIB_RATIO_MAX : r;
        m->runs[m->nruns].key = ledger__run_key(j->vc, j->name);
        m->runs[m->nruns].u = r / ((double)j->spread_milli / 1000.0);
        m->nruns++;
    }
    calib_hist_model(m->runs, m->nruns, &m->h);
    return 0;
}

/* The scale of a job of `name` in vc with its own spread (x 1000; 0: none) under model m, and
 * whether its profile's k sd still goes on top (the rule up to entry version 8: a job's own
 * spread, sampled from the same profile, already holds it). *nrun: its own runs read. */
static double ledger__model_scale(const struct ledger__model *m, uint32_t vc, const char *name,
                                  uint32_t spread_milli, bool *keep_sd, uint32_t *nrun)
{
    double spread = (double)spread_milli / 1000.0;
    *keep_sd = !m->history || spread_milli < 1000;
    *nrun = 0;
    double med = 0;
    if (m->history && spread_milli >= 1000 &&
        (*nrun = calib_hist_median(m->runs, m->nruns, ledger__run_key(vc, name), &med)) > 0)
        return calib_hist_bound(&m->f, &m->h, spread, med);
    return calib_bound_factor(&m->f, spread);
}

double ledger_bound_factor(const ledger_t *l, const struct ledger_cmd *c, uint32_t *runs)
{
    size_t vci = 0;
    struct ledger__model m;
    bool keep;
    uint32_t n = 0;
    double f;
    if (ledger__vc_find(l, c->vc, &vci) == NULL || ledger__model_init(l, !c->pooled_calib, &m)) {
        f = ledger__scale(l, c->spread_milli);
    } else {
        f = ledger__model_scale(&m, (uint32_t)vci, c->name, c->spread_milli, &keep, &n);
        ledger__model_close(&m);
    }
    if (runs != NULL)
        *runs = n;
    return f;
}

void ledger_calibration(const ledger_t *l, struct calib_factors *out)
{
    calib_factors(&l->calib, out);
}

int ledger_set_policy(ledger_t *l, int policy)
{
    if (policy < ARBITER_FCFS || policy > ARBITER_MINEDF_WC)
        return ERR_INVAL;
    l->policy_set = 1;
    l->policy = policy;
    return 0;
}

/* A deadline job's minimum: what its Jockey controller needs when it has a profile (or no
 * registered shape): its raw allocation when its JM said one (issue 25: the request adds the
 * controller's hysteresis, which a job granted less kept claiming), else its request; without
 * a profile MinEDF's from ARIA's bounds over what is left and the time left. */
uint32_t ledger__minimum(const ledger_t *l, const struct ledger_job *j)
{
    if (j->deadline_ms == 0)
        return 0;
    bool asks = j->work_ms == 0 || j->width == 0 || (j->has_profile && j->asked);
    struct arbiter_shape s = asks ? (struct arbiter_shape){0} : ledger__remain(j);
    return arbiter_deadline_minimum(asks, j->raw, j->wanted, asks ? NULL : &s,
                                    (double)(j->deadline_ms - l->now) / 1000.0);
}

void ledger__arbitrate(ledger_t *l, size_t vci, uint64_t cause)
{
    struct ledger_vc *vc = &l->vcs[vci];
    size_t n = 0;
    for (size_t i = 0; i < l->njobs; i++) {
        const struct ledger_job *j = &l->jobs[i];
        if (j->vc != vci || j->state != LEDGER_JOB_ACTIVE)
            continue;
        struct arbiter_job *a = &l->arb[n];
        memset(a, 0, sizeof *a);
        a->id = j->id;
        a->deadline = j->deadline_ms;
        a->best_effort = j->best_effort;
        a->wanted = j->wanted;
        a->minimum = ledger__minimum(l, j);
        /* never more guaranteed than it can use now, when its JM says: a late job's minimum is
           its whole remaining width, and held idle while its last tasks run it starved every
           other job (found on the cluster simulator's recurring experiment); the next renewal
           that reports more ready work raises it again. A renewal that says nothing at all
           (between retries) keeps the minimum: that gap is short and the guarantee is the
           promise */
        if (j->demand > 1 && j->deadline_ms != 0 && a->minimum > j->demand - 1)
            a->minimum = j->demand - 1;
        /* spare only up to what it can use now, when its JM says (a narrow phase leaves the
         * rest to others), never below its minimum; a job that registered no shape (width 0)
         * has no spare beyond what it asks for */
        a->width = j->width;
        if (j->demand != 0 && j->deadline_ms != 0 && a->width != 0) {
            uint32_t now_use = j->demand - 1;
            now_use = now_use > a->minimum ? now_use : a->minimum;
            a->width = a->width < now_use ? a->width : now_use;
        }
        a->held = j->tokens;
        a->weight = j->weight_milli != 0 ? (double)j->weight_milli / 1000.0 : 1.0;
        if (j->recur != 0)
            ledger__recur_arb(l, j, a); /* Morpheus §6-7: its reservation, reprovisioning */
        l->arb_pos[n++] = i;
    }
    vc->arbitrated_ms = l->now;
    enum arbiter_policy pol = l->policy_set ? (enum arbiter_policy)l->policy : ARBITER_MINEDF_WC;
    arbiter_allocate_plan(pol, vc->capacity, ledger__held_back(l, vci), l->arb, n, l->arb_order);
    if (ledger__quota_trim(l, vci, l->arb, l->arb_pos, n)) /* issue 27: tokens held at once */
        arbiter_allocate_plan(pol, vc->capacity, ledger__held_back(l, vci), l->arb, n,
                              l->arb_order);
    vc->spare = 0;
    for (size_t k = 0; k < n; k++) {
        struct ledger_job *j = &l->jobs[l->arb_pos[k]];
        const struct arbiter_job *a = &l->arb[k];
        uint32_t was = j->tokens - (j->minimum < j->tokens ? j->minimum : j->tokens);
        uint32_t now = a->grant - a->min_part;
        if (now > was)
            vc->spare_grants += now - was;
        else if (now < was && j->id != cause)
            vc->spare_reclaims += was - now;
        ledger__job_set_tokens(l, j, a->grant);
        j->minimum = a->min_part;
        if (a->extra > 0 && a->min_part > a->reserved &&
            a->min_part - a->reserved > j->reprovisioned)
            j->reprovisioned = a->min_part - a->reserved;
        vc->spare += now;
    }
}

/* The admitted deadline jobs of virtual cluster `vci` as admission sees them at `now`, bounded
 * by model m: a new array the caller frees (NULL when none), or ERR_NOMEM. */
static int ledger__load(const ledger_t *l, const struct ledger__model *m, size_t vci, int64_t now,
                        struct arbiter_load **out, size_t *nout)
{
    struct arbiter_load *load = NULL;
    size_t n = 0;
    for (size_t i = 0; i < l->njobs; i++) {
        const struct ledger_job *j = &l->jobs[i];
        n += j->vc == vci && j->state == LEDGER_JOB_ACTIVE && j->deadline_ms != 0 &&
             !j->best_effort && j->work_ms != 0 && !j->reserved_run;
    }
    if (n > 0 && (load = mem_alloc(n * sizeof *load)) == NULL)
        return ERR_NOMEM;
    n = 0;
    for (size_t i = 0; i < l->njobs; i++) {
        const struct ledger_job *j = &l->jobs[i];
        /* a run with a reservation is covered by the plan */
        if (j->vc != vci || j->state != LEDGER_JOB_ACTIVE || j->deadline_ms == 0 ||
            j->best_effort || j->work_ms == 0 || j->reserved_run)
            continue;
        load[n].id = j->id;
        load[n].deadline = (double)(j->deadline_ms - now) / 1000.0;
        load[n].remain = ledger__remain(j);
        bool keep_sd;
        uint32_t nrun;
        load[n].remain.scale =
            ledger__model_scale(m, j->vc, j->name, j->spread_milli, &keep_sd, &nrun);
        if (!keep_sd)
            load[n].remain.work_sd = load[n].remain.path_sd = 0;
        n++;
    }
    *out = load;
    *nout = n;
    return 0;
}

struct arbiter_shape ledger__shape(const ledger_t *l, const struct ledger_cmd *c)
{
    struct arbiter_shape s = {.work = (double)c->work_ms / 1000.0,
                              .work_sd = (double)c->work_sd_ms / 1000.0,
                              .path = (double)c->path_ms / 1000.0,
                              .path_sd = (double)c->path_sd_ms / 1000.0,
                              .width = c->width};
    s.has_alpha = (c->flags & LEDGER_JOB_HAS_ALPHA) != 0;
    s.alpha = (double)(c->alpha_milli > 1000 ? 1000 : c->alpha_milli) / 1000.0;
    s.scale = ledger__scale(l, c->spread_milli);
    s.spread = (double)c->spread_milli / 1000.0;
    return s;
}

/* MRM's admission computation for c in virtual cluster vci at `now`: the admitted deadline jobs
 * (*load, *n: the caller frees *load, NULL when none), the recurring plan's reservations and c's
 * shape (*s) through the joint plan (arbiter_admit_joint; arbiter_admit_plan's fluid model for an
 * entry written before it) into *q. Returns its result, or ERR_NOMEM (then *load is
 * NULL). */
static int ledger__judge(const ledger_t *l, const struct ledger_cmd *c, size_t vci, int64_t now,
                         struct arbiter_shape *s, struct arbiter_load **load, size_t *n,
                         struct arbiter_quote *q)
{
    *load = NULL;
    *n = 0;
    struct ledger__model m;
    if (ledger__model_init(l, !c->pooled_calib, &m) != 0)
        return ERR_NOMEM;
    if (ledger__load(l, &m, vci, now, load, n) != 0) {
        ledger__model_close(&m);
        return ERR_NOMEM;
    }
    double *pt = NULL, *ptok = NULL;
    size_t pn = 0;
    if (ledger__plan_reserve(l, vci, now, &pt, &ptok, &pn) != 0) {
        ledger__model_close(&m);
        mem_free(*load);
        *load = NULL;
        return ERR_NOMEM;
    }
    struct arbiter_reserve plan = {pt, ptok, pn};
    *s = ledger__shape(l, c);
    bool keep_sd;
    uint32_t nrun;
    s->scale = ledger__model_scale(&m, (uint32_t)vci, c->name, c->spread_milli, &keep_sd, &nrun);
    if (!keep_sd)
        s->work_sd = s->path_sd = 0;
    ledger__model_close(&m);
    double d = c->deadline_ms != 0 ? (double)(c->deadline_ms - now) / 1000.0 : 0;
    /* the joint plan since entry version 8; an older entry replays by the fluid model */
    int rc = c->fluid_admission
                 ? arbiter_admit_plan((double)c->k_milli / 1000.0, l->vcs[vci].capacity,
                                      pn > 0 ? &plan : NULL, *load, *n, s, d, q)
                 : arbiter_admit_joint((double)c->k_milli / 1000.0, l->vcs[vci].capacity,
                                       pn > 0 ? &plan : NULL, *load, *n, s, d, q);
    mem_free(pt);
    mem_free(ptok);
    return rc;
}

/* MRM's admission check of a new job against the admitted ones of its cluster: with a
 * deadline (c->deadline_ms != 0) the verdict (ERR_ADMISSION with the earliest feasible finish
 * in r), else only the prediction. *q receives the quote (zeroed when there is nothing to judge
 * by). */
int ledger__admit(ledger_t *l, const struct ledger_cmd *c, size_t vci, struct ledger_result *r,
                  struct arbiter_quote *q_out)
{
    struct arbiter_load *load;
    size_t n;
    struct arbiter_shape s;
    struct arbiter_quote q;
    int rc = ledger__judge(l, c, vci, l->now, &s, &load, &n, &q);
    mem_free(load);
    memset(q_out, 0, sizeof *q_out);
    if (rc != 0)
        return rc == ERR_NOMEM ? rc : 0; /* nothing to judge by: admitted unchecked */
    *q_out = q;
    if (c->deadline_ms == 0 || q.admit)
        return 0;
    if (!isfinite(q.eff) || !isfinite(q.eff_p50)) {
        r->value = r->aux = 0; /* the plan leaves it nothing: no finish to offer */
        return ERR_ADMISSION;
    }
    struct calib_factors f;
    calib_factors(&l->calib, &f);
    r->value = (uint64_t)ceil(q.eff * 1000.0);
    r->aux = (uint64_t)ceil(q.eff_p50 * f.p50 * 1000.0);
    return ERR_ADMISSION;
}

int ledger_quote(const ledger_t *l, const struct ledger_cmd *c, int64_t now,
                 struct arbiter_quote *q, struct arbiter_price *curve, size_t *ncurve)
{
    size_t vci = 0;
    if (ledger__vc_find(l, c->vc, &vci) == NULL)
        return ERR_NOTFOUND;
    struct arbiter_load *load;
    size_t n;
    struct arbiter_shape s;
    int rc = ledger__judge(l, c, vci, now, &s, &load, &n, q);
    int np = rc == 0 ? arbiter_price_curve((double)c->k_milli / 1000.0, l->vcs[vci].capacity, load,
                                           n, &s, curve, *ncurve)
                     : rc;
    mem_free(load);
    *ncurve = np > 0 ? (size_t)np : 0;
    return rc != 0 ? rc : np < 0 ? np : 0;
}
