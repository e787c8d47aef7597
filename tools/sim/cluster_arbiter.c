/* cluster_arbiter.c - `paddock-sim arbiter` on the cluster simulator (the default engine;
 * docs/arbiter.md, "The cluster engine").
 *
 * The jobs of tools/sim/arbiter_sim.h (the same mixes, arrivals, deadlines and estimates) run on
 * the cluster simulator (tools/sim/cluster.h): each job's JM is the simulated daemon's (jm/place,
 * jm/dispatch, jm/attempt), its tasks queue at per-node pn/queue, and their true run times are the
 * job set's (cluster_job.run_s). Every job's tokens come from an rm/ledger that this file drives
 * with ledger_apply as the RM's log does (rm/ledger.h), so admission, the error model (rm/calib)
 * and the arbitration are Paddock's own code:
 *   - arrival: JOB_REGISTER with the shape the client sends (jm/shape: work, critical path, width,
 *     alpha; no sd of its own; k); a refused deadline job registers again best-effort, as a user
 *     who resubmits with --best-effort. Without admission a deadline job registers without a
 *     deadline and gets it by JOB_DEADLINE with no k (a deadline set without admission, as an
 *     older log's entry is applied). Then TOKEN_REQUEST for its width.
 *   - every second (the JM's lease renewal, jm/daemon/jmd.c): LEASE_RENEW with its progress and
 *     demand (grant_demand, jm/grant.h); the reply's tokens reach the JM: the dispatcher's
 *     units, downgrades (cl_job_downgrade) or upgrades. A JM learns a grant only from the reply
 *     to its own call, as the daemon does; a smaller target in its tail (grant_tail) goes out as
 *     a new TOKEN_REQUEST. TICK when a lease has run out.
 *   - end: JOB_END, which teaches the ledger's error model.
 * Policies: the ledger's MinEDF-WC for paddock and minedf_wc; fcfs, edf and minedf through
 * ledger_set_policy. Verma's policies run their JMs with no opportunistic allowance (his model
 * has none), paddock with the daemon's (one per token).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/grain.h"
#include "jm/grant.h"
#include "jm/place.h"
#include "rm/calib.h"
#include "rm/ledger.h"
#include "tools/sim/arbiter_sim_internal.h"
#include "tools/sim/arbiter_sim_wait.h"
#include "tools/sim/cluster_internal.h"

#define CA_RENEW_S  1.0   /* the JM's lease renewal (jm/daemon/jmd.c JMD__LEASE_MS) */
#define CA_LEASE_MS 10000 /* LEDGER_LEASE_DEFAULT */
#define CA_VC       "default"

/* ---- the jobs as specs -------------------------------------------------------------------- */

static int ca__task_json(json_t *tasks, const char *id, const char *stage, double cpu,
                         uint64_t mem_mb, double runtime_s, json_t *after)
{
    json_t *t = json_pack("{s:s, s:s, s:[s], s:f, s:I, s:f, s:o}", "id", id, "stage", stage, "cmd",
                          "true", "cpu", cpu, "mem_mb", (json_int_t)mem_mb, "runtime_s",
                          runtime_s > 1e-6 ? runtime_s : 1e-6, "after", after);
    return t != NULL && json_array_append_new(tasks, t) == 0 ? 0 : ERR_NOMEM;
}

static int ca__parse(json_t *doc, struct spec **out, char *msg, size_t cap)
{
    char *text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(doc);
    if (text == NULL)
        return ERR_NOMEM;
    int rc = spec_parse(text, strlen(text), NULL, out, msg, cap);
    free(text);
    return rc;
}

/* A WfCommons template's spec with its estimates scaled: the same tasks, stages and
 * dependencies, nothing to read (the arbiter's jobs do no I/O). */
static int ca__spec_scaled(const struct spec *t, double scale, struct spec **out, char *msg,
                           size_t cap)
{
    json_t *doc =
        json_pack("{s:i, s:s, s:[], s:[]}", "version", 1, "name", "arbiter-job", "tasks", "stages");
    if (doc == NULL)
        return ERR_NOMEM;
    json_t *tasks = json_object_get(doc, "tasks"), *stages = json_object_get(doc, "stages");
    int rc = 0;
    for (size_t g = 0; g < t->nstages && rc == 0; g++) {
        const struct spec_stage *sg = &t->stages[g];
        json_t *after = json_array();
        for (size_t a = 0; after != NULL && a < sg->nafter; a++)
            json_array_append_new(after, json_string(t->stages[sg->after[a]].name));
        json_t *o =
            after != NULL ? json_pack("{s:s, s:o}", "name", sg->name, "after", after) : NULL;
        rc = o != NULL && json_array_append_new(stages, o) == 0 ? 0 : ERR_NOMEM;
    }
    for (size_t i = 0; i < t->ntasks && rc == 0; i++) {
        const struct spec_task *st = &t->tasks[i];
        json_t *after = json_array();
        for (size_t a = 0; after != NULL && a < st->nafter; a++)
            json_array_append_new(after, json_string(t->tasks[st->after[a]].id));
        rc = after != NULL ? ca__task_json(tasks, st->id, t->stages[st->stage].name, st->cpu,
                                           st->mem_mb, st->runtime_s * scale, after)
                           : ERR_NOMEM;
    }
    if (rc != 0) {
        json_decref(doc);
        return rc;
    }
    return ca__parse(doc, out, msg, cap);
}

/* A Facebook job: its maps (nodes 0..maps-1), then after the barrier node its reduces. */
static int ca__spec_facebook(const struct arbiter_sim_job *j, struct spec **out, char *msg,
                             size_t cap)
{
    size_t maps = j->n, reds = 0;
    for (size_t v = 0; v < j->n; v++)
        if (j->tok[v] == 0) { /* the barrier */
            maps = v;
            reds = j->n - v - 1;
            break;
        }
    json_t *doc =
        json_pack("{s:i, s:s, s:[], s:[]}", "version", 1, "name", "arbiter-job", "tasks", "stages");
    if (doc == NULL)
        return ERR_NOMEM;
    json_t *tasks = json_object_get(doc, "tasks"), *stages = json_object_get(doc, "stages");
    int rc = 0;
    if (reds > 0) {
        json_t *o = json_pack("{s:s, s:[s]}", "name", "reduce", "after", "map");
        rc = o != NULL && json_array_append_new(stages, o) == 0 ? 0 : ERR_NOMEM;
    }
    char id[32];
    for (size_t v = 0; v < j->n && rc == 0; v++) {
        if (v == maps)
            continue;
        int map = v < maps;
        snprintf(id, sizeof id, "%s-%zu", map ? "map" : "reduce", map ? v : v - maps - 1);
        rc = ca__task_json(tasks, id, map ? "map" : "reduce", (double)j->tok[v], 256, j->est[v],
                           json_array());
    }
    if (rc != 0) {
        json_decref(doc);
        return rc;
    }
    return ca__parse(doc, out, msg, cap);
}

int arbiter_cluster_prepare(struct arbiter_sim_jobs *s, const struct arbiter_sim_config *cfg,
                            char *msg, size_t cap)
{
    for (size_t i = 0; i < s->n; i++) {
        struct arbiter_sim_job *j = &s->v[i];
        int rc = cfg->mix == ARBITER_SIM_FACEBOOK
                     ? ca__spec_facebook(j, &j->cspec, msg, cap)
                     : ca__spec_scaled(s->tmpl_spec[j->tmpl_i], j->scale, &j->cspec, msg, cap);
        if (rc != 0)
            return rc;
        size_t nt = j->cspec->ntasks;
        j->crun = mem_calloc(nt ? nt : 1, sizeof *j->crun);
        if (j->crun == NULL)
            return ERR_NOMEM;
        /* spec task k is the k-th node that is not a barrier (tok 0), in node order */
        size_t k = 0;
        for (size_t v = 0; v < j->n && k < nt; v++)
            if (j->tok[v] != 0)
                j->crun[k++] = j->dur[v];
        if (k != nt)
            return err_fmt(msg, cap, ERR_INVAL, "job %zu: %zu tasks, %zu run times", i, nt, k);
    }
    return 0;
}

/* ---- the run ------------------------------------------------------------------------------ */

struct ca_job {
    uint64_t id;        /* the ledger's */
    uint32_t granted;   /* what its JM knows it holds */
    uint32_t target;    /* its latest TOKEN_REQUEST */
    int refused, ended; /* refused: runs best-effort */
    double last_t, acc; /* grant x time while it ran */
    double pred, bound; /* the ledger's median and conservative finish at registration */
    double scale_hi;    /* the error model's quantile factor then */
    double *gt;         /* --trace: the grants its JM learned, gv[i] tokens from gt[i] on */
    uint32_t *gv;
    size_t gn, gcap;
};

struct ca {
    const struct arbiter_sim_jobs *s;
    const struct arbiter_sim_config *cfg;
    enum arbiter_sim_policy pol;
    int admission;
    ledger_t *l;
    struct ca_job *jobs;
    double *remaining, *estimate; /* scratch for downgrades (the largest job's tasks) */
    uint64_t downgrades;
    struct cluster_hooks hooks;
};

static int64_t ca__ms(double t)
{
    return (int64_t)(t * 1000.0 + 0.5);
}

static int ca__apply(struct ca *c, struct ledger_cmd *cmd, double now, struct ledger_result *r)
{
    ledger_apply(c->l, cmd, ca__ms(now), r);
    return r->code;
}

/* The grant reaches the JM: units, downgrades or upgrades, a round. */
static void ca__grant(struct ca *c, struct cl_world *w, size_t i, uint32_t tokens)
{
    struct ca_job *x = &c->jobs[i];
    struct cl_job *j = &w->jobs[i];
    double now = engine_now(w->eng);
    x->acc += (double)x->granted * (now - x->last_t);
    x->last_t = now;
    if (tokens == x->granted || j->done)
        return;
    x->granted = tokens;
    if (c->cfg->trace != NULL && x->gn == x->gcap) {
        size_t cap = x->gcap ? 2 * x->gcap : 16;
        double *t = mem_realloc(x->gt, cap * sizeof *t);
        if (t != NULL)
            x->gt = t;
        uint32_t *v = t != NULL ? mem_realloc(x->gv, cap * sizeof *v) : NULL;
        if (v != NULL) {
            x->gv = v;
            x->gcap = cap;
        }
    }
    if (x->gn < x->gcap) {
        x->gt[x->gn] = now;
        x->gv[x->gn++] = tokens;
    }
    c->downgrades += cl_job_grant(w, j, grain_units(tokens), c->remaining, c->estimate, NULL);
}

/* The renewal's demand and the tail's smaller target: the daemon's rules (jm/grant.h). */
static uint32_t ca__demand(const struct cl_job *j)
{
    return grant_demand(j->core.dag, j->core.disp, GRAIN_UNITS, LEDGER_MAX_TOKENS);
}

static uint32_t ca__tail(const struct cl_job *j, uint32_t target)
{
    return grant_tail(j->core.dag, j->core.disp, j->spec->ntasks, GRAIN_UNITS, target);
}

static int ca__request(struct ca *c, struct cl_world *w, size_t i, uint32_t target)
{
    struct ca_job *x = &c->jobs[i];
    struct ledger_cmd cmd;
    struct ledger_result r;
    ledger_cmd_init(&cmd, LEDGER_CMD_TOKEN_REQUEST);
    cmd.job = x->id;
    cmd.count = target;
    x->target = target;
    if (ca__apply(c, &cmd, engine_now(w->eng), &r) != 0)
        return r.code;
    ca__grant(c, w, i, (uint32_t)r.value);
    return 0;
}

static void ca__renew_ev(engine_t *e, void *ctx, uint64_t job)
{
    struct cl_world *w = ctx;
    struct ca *c = w->cfg.hooks->ctx;
    struct cl_job *j = &w->jobs[job];
    struct ca_job *x = &c->jobs[job];
    if (j->done || x->ended)
        return;
    double now = engine_now(e);
    struct ledger_cmd cmd;
    struct ledger_result r;
    int rc = 0;
    if (ledger_next_expiry(c->l) <= ca__ms(now)) {
        ledger_cmd_init(&cmd, LEDGER_CMD_TICK);
        rc = ca__apply(c, &cmd, now, &r);
    }
    if (rc == 0) {
        ledger_cmd_init(&cmd, LEDGER_CMD_LEASE_RENEW);
        cmd.job = x->id;
        size_t nt = j->spec->ntasks ? j->spec->ntasks : 1;
        cmd.done_permille = (uint32_t)(1000 * dag_count(j->core.dag, DAG_SUCCEEDED) / nt);
        cmd.count = ca__demand(j);
        rc = ca__apply(c, &cmd, now, &r);
    }
    if (rc == 0) {
        ca__grant(c, w, job, (uint32_t)r.value);
        uint32_t t = ca__tail(j, x->target);
        if (t != x->target)
            rc = ca__request(c, w, job, t);
    }
    if (rc == 0)
        rc = engine_after(e, CA_RENEW_S, ca__renew_ev, w, job);
    if (rc != 0 && w->err == 0) {
        w->err = rc;
        engine_stop(e);
    }
}

static int ca__register(struct ca *c, size_t i, double now, int64_t deadline_ms, uint8_t flags,
                        struct ledger_result *r)
{
    const struct arbiter_sim_job *sj = &c->s->v[i];
    struct ledger_cmd cmd;
    ledger_cmd_init(&cmd, LEDGER_CMD_JOB_REGISTER);
    snprintf(cmd.name, sizeof cmd.name, "job-%zu", i);
    snprintf(cmd.vc, sizeof cmd.vc, "%s", CA_VC);
    cmd.deadline_ms = deadline_ms;
    cmd.lease_ms = CA_LEASE_MS;
    /* the shape the client sends (tools/jobdir.c): the estimates' work and the JM simulator's
       critical path and list-schedule place, no sd of their own (the error model stands for
       their error) */
    cmd.flags = flags | LEDGER_JOB_HAS_ALPHA;
    cmd.work_ms = (uint64_t)(sj->work_est * 1000.0 + 0.5);
    double path = sj->path_est * (sj->path_stretch > 0 ? sj->path_stretch : 1);
    cmd.path_ms = (uint64_t)(path * 1000.0 + 0.5);
    cmd.width = sj->width;
    cmd.k_milli = (uint32_t)(c->cfg->k * 1000.0 + 0.5);
    double a = sj->alpha < 0 ? 0 : sj->alpha > 1 ? 1 : sj->alpha;
    cmd.alpha_milli = (uint32_t)(a * 1000.0 + 0.5);
    /* and, with the spread on, the job's own spread (jm/shape.h) unless --own-spread off */
    if (c->cfg->own_spread && sj->spread >= 1)
        cmd.spread_milli = (uint32_t)(fmin(sj->spread, LEDGER_SPREAD_MAX / 1000.0) * 1000.0 + 0.5);
    return ca__apply(c, &cmd, now, r);
}

static int ca__arrive(void *ctx, void *world, size_t i)
{
    struct ca *c = ctx;
    struct cl_world *w = world;
    const struct arbiter_sim_job *sj = &c->s->v[i];
    struct ca_job *x = &c->jobs[i];
    double now = engine_now(w->eng);
    struct calib_factors f;
    ledger_calibration(c->l, &f);
    x->scale_hi = f.hi;
    x->last_t = now;
    int64_t dl = sj->deadline > 0 ? ca__ms(now + sj->deadline) : 0;
    struct ledger_result r;
    int rc = ca__register(c, i, now, c->admission ? dl : 0, 0, &r);
    if (rc == ERR_ADMISSION) { /* resubmitted best-effort, its deadline kept */
        x->refused = 1;
        rc = ca__register(c, i, now, dl, LEDGER_JOB_BEST_EFFORT, &r);
    }
    if (rc != 0)
        return rc;
    x->id = r.value;
    const struct ledger_job *lj = ledger_job_find(c->l, x->id);
    if (lj != NULL) {
        x->pred = (double)lj->pred_p50_ms / 1000.0;
        x->bound = (double)lj->pred_bound_ms / 1000.0;
    }
    if (!c->admission && dl != 0) { /* a deadline without admission (no k: not judged) */
        struct ledger_cmd cmd;
        ledger_cmd_init(&cmd, LEDGER_CMD_JOB_DEADLINE);
        cmd.job = x->id;
        cmd.deadline_ms = dl;
        if ((rc = ca__apply(c, &cmd, now, &r)) != 0)
            return rc;
    }
    dispatch_set_tokens(w->jobs[i].core.disp, 0);
    if ((rc = ca__request(c, w, i, sj->width)) != 0)
        return rc;
    return engine_after(w->eng, CA_RENEW_S, ca__renew_ev, w, i);
}

static void ca__end(void *ctx, void *world, size_t i)
{
    struct ca *c = ctx;
    struct cl_world *w = world;
    struct ca_job *x = &c->jobs[i];
    double now = engine_now(w->eng);
    x->acc += (double)x->granted * (now - x->last_t);
    x->last_t = now;
    x->ended = 1;
    struct ledger_cmd cmd;
    struct ledger_result r;
    ledger_cmd_init(&cmd, LEDGER_CMD_JOB_END);
    cmd.job = x->id;
    cmd.state = w->jobs[i].failed ? LEDGER_JOB_FAILED : LEDGER_JOB_DONE;
    if (ca__apply(c, &cmd, now, &r) != 0 && w->err == 0) {
        w->err = r.code;
        engine_stop(w->eng);
    }
}

/* The cluster: node_factor times the virtual cluster's tokens in cores (nodes of 4 cores, or of
 * the largest task), no other tenants unless bg_util says, the daemon's placement settings, no I/O,
 * no noise of its own (the run times are the job set's), token units as the daemon counts them. */
static int ca__config(const struct arbiter_sim_jobs *s, const struct arbiter_sim_config *cfg,
                      enum arbiter_sim_policy p, struct cluster_config *cc)
{
    cluster_config_default(cc);
    double cpus = 4, mem = 16384;
    for (size_t i = 0; i < s->n; i++)
        for (size_t k = 0; k < s->v[i].cspec->ntasks; k++) {
            const struct spec_task *t = &s->v[i].cspec->tasks[k];
            cpus = t->cpu > cpus ? ceil(t->cpu) : cpus;
            mem = (double)t->mem_mb > mem ? (double)t->mem_mb : mem;
        }
    cc->node_cpus = cpus;
    cc->node_mem_mb = mem;
    cc->nodes = (size_t)ceil(cfg->node_factor * (double)cfg->capacity / cpus - 1e-9);
    cc->rack_size = 20;
    cc->seed = cfg->seed;
    cc->no_io = 1;
    cc->grain = 1;
    cc->trace = 1; /* for the work lost to preemption */
    cc->hold_max_s = PLACE_HOLD_MAX_S;
    cc->bg_util = cfg->bg_util;
    cc->max_time_s = 1e9;
    cc->opp_factor = p == ARBITER_SIM_PADDOCK ? 1.0 : 0.0;
    engine_noise_none(&cc->noise);
    if (cfg->bg_util <= 0)
        cc->noise.phase_s = 0;
    return cc->nodes >= 1 && cc->nodes <= CLUSTER_MAX_NODES ? 0 : ERR_INVAL;
}

static void ca__trace(const struct ca *c, size_t i, double took)
{
    const struct arbiter_sim_job *j = &c->s->v[i];
    const struct ca_job *x = &c->jobs[i];
    double est = arbiter_sim_makespan(j, c->s->capacity, 0, NULL);
    fprintf(
        c->cfg->trace,
        "%s job %zu tasks %zu width %u alpha %.3f work %.1f path %.1f stretch %.3f est_alone %.2f "
        "true_alone %.2f deadline %.2f pred_p50 %.2f bound %.2f scale %.3f %s took %.2f %s "
        "act/pred %.3f own_spread %.3f\n",
        arbiter_sim_policy_name(c->pol), i, j->cspec->ntasks, j->width, j->alpha, j->work_est,
        j->path_est, j->path_stretch, est, j->alone, j->deadline, x->pred, x->bound, x->scale_hi,
        x->refused ? "refused" : "admitted", took,
        took > j->deadline * (1 + 1e-9) ? "missed" : "met", x->pred > 0 ? took / x->pred : 0,
        c->cfg->own_spread ? j->spread : 0);
}

/* --trace: where each deadline job's time went (arbiter_sim_wait.h), admitted and refused (run
 * best effort), one line each and the sums over each kind. */
static void ca__wait_trace(const struct ca *c, const struct cluster_result *res)
{
    const struct arbiter_sim_jobs *s = c->s;
    uint8_t *cls = mem_calloc(s->n ? s->n : 1, 1);
    double *arr = mem_calloc(s->n ? s->n : 1, sizeof *arr);
    if (cls == NULL || arr == NULL) {
        mem_free(cls);
        mem_free(arr);
        return;
    }
    for (size_t i = 0; i < s->n; i++) {
        cls[i] = s->v[i].deadline > 0 ? (c->jobs[i].refused ? 2 : 1) : 0;
        arr[i] = s->v[i].arrival;
    }
    for (uint8_t want = 1; want <= 2; want++) { /* admitted, then refused (best effort) */
        struct arbiter_wait sum = {0};
        double took_sum = 0, alone_sum = 0;
        size_t nj = 0, missed = 0;
        const char *what = want == 1 ? "admitted" : "refused";
        for (size_t i = 0; i < s->n; i++) {
            const struct arbiter_sim_job *j = &s->v[i];
            const struct ca_job *x = &c->jobs[i];
            if (cls[i] != want)
                continue;
            struct arbiter_wait_grants g = {.t = x->gt, .v = x->gv, .n = x->gn};
            struct arbiter_wait a;
            if (arbiter_wait_job(res->trace, res->ntrace, (uint32_t)i, j->cspec, arr, j->width, &g,
                                 cls, &a) != 0)
                break;
            double took = x->last_t - j->arrival;
            int late = took > j->deadline * (1 + 1e-9);
            fprintf(c->cfg->trace,
                    "wait %s job %zu took %.2f alone %.2f deadline %.2f %s chain %zu start %.2f "
                    "run %.2f lost %.2f lost_beyond_grant %zu lost_within %zu jm_short %.2f "
                    "jm_other %.2f pn_own %.2f pn_other_nodl %.2f pn_other_adm %.2f pn_other_be "
                    "%.2f mean_grant %.2f width %u\n",
                    what, i, took, j->alone, j->deadline, late ? "missed" : "met", a.chain, a.start,
                    a.run, a.lost, a.lost_opp, a.lost_reg, a.jm_short, a.jm_other, a.pn_own,
                    a.pn_other[0], a.pn_other[1], a.pn_other[2], took > 0 ? x->acc / took : 0,
                    j->width);
            nj++;
            missed += (size_t)late;
            took_sum += took;
            alone_sum += j->alone;
            sum.start += a.start;
            sum.run += a.run;
            sum.lost += a.lost;
            sum.jm_short += a.jm_short;
            sum.jm_other += a.jm_other;
            sum.pn_own += a.pn_own;
            for (int k = 0; k < 3; k++)
                sum.pn_other[k] += a.pn_other[k];
        }
        fprintf(c->cfg->trace,
                "wait %s %s %zu missed %zu took %.1f alone %.1f start %.1f run %.1f lost %.1f "
                "jm_short %.1f jm_other %.1f pn_own %.1f pn_other_nodl %.1f pn_other_adm %.1f "
                "pn_other_be %.1f\n",
                arbiter_sim_policy_name(c->pol), what, nj, missed, took_sum, alone_sum, sum.start,
                sum.run, sum.lost, sum.jm_short, sum.jm_other, sum.pn_own, sum.pn_other[0],
                sum.pn_other[1], sum.pn_other[2]);
    }
    mem_free(cls);
    mem_free(arr);
}

static int ca__figures(struct ca *c, const struct cluster_result *res, const uint8_t *ref_met,
                       uint8_t *met, struct arbiter_sim_result *out)
{
    const struct arbiter_sim_jobs *s = c->s;
    struct arbiter_sim_tally tally;
    arbiter_sim_tally_init(&tally);
    for (size_t i = 0; i < s->n; i++) {
        const struct arbiter_sim_job *j = &s->v[i];
        const struct ca_job *x = &c->jobs[i];
        if (!x->ended)
            return ERR_INVAL; /* a job never finished */
        double took =
            arbiter_sim_tally_job(&tally, out, j, i, x->last_t, x->acc, x->refused, ref_met, met);
        if (j->deadline > 0 && c->cfg->trace != NULL && c->admission)
            ca__trace(c, i, took);
    }
    arbiter_sim_tally_end(&tally, out, s->n, c->cfg->capacity);
    if (c->cfg->trace != NULL && c->admission)
        ca__wait_trace(c, res);
    const struct ledger_vc *vc = ledger_vc_find(c->l, CA_VC);
    out->spare_grants = vc != NULL ? vc->spare_grants : 0;
    out->spare_reclaims = vc != NULL ? vc->spare_reclaims : 0;
    out->downgrades = c->downgrades;
    out->preemptions = res->preemptions;
    for (size_t k = 0; k < res->ntrace; k++) {
        const struct cluster_trace_rec *t = &res->trace[k];
        if (t->outcome == -1 && t->end_s > t->start_s)
            out->work_lost_s += (t->end_s - t->start_s) * s->v[t->job].cspec->tasks[t->task].cpu;
    }
    out->events = res->events;
    return 0;
}

int arbiter_cluster_run(const arbiter_sim_jobs_t *s, const struct arbiter_sim_config *cfg,
                        enum arbiter_sim_policy p, int admission, const uint8_t *ref_met,
                        uint8_t *met, struct arbiter_sim_result *out)
{
    memset(out, 0, sizeof *out);
    struct ca c = {.s = s, .cfg = cfg, .pol = p, .admission = admission};
    size_t most = 1;
    for (size_t i = 0; i < s->n; i++) {
        if (s->v[i].cspec == NULL)
            return ERR_INVAL; /* the job set was made for the slice engine */
        most = s->v[i].cspec->ntasks > most ? s->v[i].cspec->ntasks : most;
    }
    struct cluster_config cc;
    int rc = ca__config(s, cfg, p, &cc);
    if (rc != 0)
        return rc;
    c.jobs = mem_calloc(s->n, sizeof *c.jobs);
    c.remaining = mem_calloc(most, sizeof *c.remaining);
    c.estimate = mem_calloc(most, sizeof *c.estimate);
    struct cluster_job *jobs = mem_calloc(s->n, sizeof *jobs);
    c.l = ledger_new();
    if (c.jobs == NULL || c.remaining == NULL || c.estimate == NULL || jobs == NULL || c.l == NULL)
        rc = ERR_NOMEM;
    struct ledger_cmd cmd;
    struct ledger_result r;
    if (rc == 0) { /* the virtual cluster, default-sized tokens */
        ledger_cmd_init(&cmd, LEDGER_CMD_VC_SET);
        snprintf(cmd.vc, sizeof cmd.vc, "%s", CA_VC);
        cmd.count = cfg->capacity;
        rc = ca__apply(&c, &cmd, 0, &r);
    }
    static const int pol[ARBITER_SIM_NPOLICIES] = {ARBITER_FCFS, ARBITER_EDF, ARBITER_MINEDF,
                                                   ARBITER_MINEDF_WC, ARBITER_MINEDF_WC};
    if (rc == 0 && p != ARBITER_SIM_PADDOCK)
        rc = ledger_set_policy(c.l, pol[p]);
    for (size_t i = 0; rc == 0 && i < s->n; i++)
        jobs[i] = (struct cluster_job){
            .spec = s->v[i].cspec, .arrival_s = s->v[i].arrival, .run_s = s->v[i].crun};
    c.hooks = (struct cluster_hooks){.ctx = &c, .arrive = ca__arrive, .end = ca__end};
    cc.hooks = &c.hooks;
    struct cluster_result res;
    memset(&res, 0, sizeof res);
    char msg[256];
    if (rc == 0)
        rc = cluster_run(&cc, jobs, s->n, &res, msg, sizeof msg);
    if (rc == 0)
        rc = ca__figures(&c, &res, ref_met, met, out);
    mem_free(res.qtimes);
    mem_free(res.trace);
    mem_free(res.job_stats);
    ledger_destroy(&c.l);
    mem_free(jobs);
    for (size_t i = 0; c.jobs != NULL && i < s->n; i++) {
        mem_free(c.jobs[i].gt);
        mem_free(c.jobs[i].gv);
    }
    mem_free(c.jobs);
    mem_free(c.remaining);
    mem_free(c.estimate);
    return rc;
}
