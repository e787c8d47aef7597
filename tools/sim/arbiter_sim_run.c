/* arbiter_sim_run.c - one policy over the jobs of `paddock-sim arbiter` in virtual time: arrivals,
 * admission, the arbiter's grants after every event, kills or downgrades of tasks on reclaimed
 * tokens, and each job's list scheduling within its grant. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/attempt.h"
#include "rm/calib.h"
#include "tools/sim/arbiter_sim_internal.h"
#include "tools/sim/engine.h"

enum { ASR_WAIT = 0, ASR_READY, ASR_REG, ASR_OPP, ASR_DONE };

#define ASR_GEN_BITS  20
#define ASR_NODE_BITS 26
#define ASR_GEN_MASK  ((1ull << ASR_GEN_BITS) - 1)
#define ASR_NODE_MASK ((1ull << ASR_NODE_BITS) - 1)

/* A job's state in one run (private). */
struct asr_job {
    uint32_t *left;  /* per node: predecessors not done */
    uint8_t *st;     /* per node: ASR_* */
    double *start;   /* per node: start of its current attempt */
    uint32_t *gen;   /* per node: attempt generation (stale finish events are ignored) */
    double *grace;   /* per node: a downgraded task is not preempted before this time */
    uint32_t *ready; /* ready nodes in bottom-level order */
    size_t nready;
    uint32_t *run; /* running nodes (regular and opportunistic) */
    size_t nrun;
    uint32_t reg_tok, opp_tok, ready_tok;
    size_t ndone;
    double unstarted_work; /* estimates x tokens of nodes not started */
    size_t blp;            /* by_bl[blp..] holds every node not started (some started too) */
    double done_est, done_true;
    uint32_t grant, min_part, spare, ctl_min;
    int active, finished, refused;
    int shared; /* another job was active at some time while it was (rm/ledger.h) */
    double finish, grant_acc, last_t;
};

struct asr {
    const struct arbiter_sim_jobs *s;
    const struct arbiter_sim_config *cfg;
    enum arbiter_sim_policy pol;
    int admission;
    struct attempt_config att_cfg; /* the daemon's downgrade grace (grace_frac from cfg) */
    engine_t *e;
    struct asr_job *jobs;
    size_t *act; /* active job indices, in arrival order */
    size_t nact;
    struct arbiter_job *aj;
    size_t *order;
    struct arbiter_load *load;
    uint32_t used_reg, used_opp;
    double wake_at;     /* a pending wake-up at a grace's end (0: none) */
    struct calib calib; /* admission's error model, learned from this run's outcomes */
    double *pred;       /* per job: the arbiter's median finish at its arrival, seconds from
                           arrival, uncalibrated (0: none) */
    double *bound;      /* per job: the conservative finish at its arrival (trace only) */
    double *scale;      /* per job: the error model's hi factor at its arrival (trace only) */
    struct arbiter_sim_result *res;
    int rc;
};

static engine_fn asr__finish_ev, asr__tick_ev, asr__wake_ev;

const char *arbiter_sim_policy_name(enum arbiter_sim_policy p)
{
    static const char *const names[] = {"fcfs", "edf", "minedf", "minedf_wc", "paddock"};
    return (unsigned)p < ARBITER_SIM_NPOLICIES ? names[p] : "?";
}

static enum arbiter_policy asr__arbiter_policy(enum arbiter_sim_policy p)
{
    switch (p) {
    case ARBITER_SIM_FCFS:
        return ARBITER_FCFS;
    case ARBITER_SIM_EDF:
        return ARBITER_EDF;
    case ARBITER_SIM_MINEDF:
        return ARBITER_MINEDF;
    default:
        return ARBITER_MINEDF_WC;
    }
}

static double asr__deadline_abs(const struct arbiter_sim_job *j)
{
    return j->arrival + j->deadline;
}

/* What is left of job i on estimates: work (not started, plus the estimated rest of running
 * tasks), critical path, width, and the spread scaled with the work left. */
static void asr__remaining(struct asr *r, size_t i, double now, struct arbiter_shape *out)
{
    const struct arbiter_sim_job *j = &r->s->v[i];
    struct asr_job *x = &r->jobs[i];
    while (x->blp < j->n && x->st[j->by_bl[x->blp]] != ASR_WAIT &&
           x->st[j->by_bl[x->blp]] != ASR_READY)
        x->blp++;
    double work = x->unstarted_work, path = x->blp < j->n ? j->bl[j->by_bl[x->blp]] : 0;
    for (size_t k = 0; k < x->nrun; k++) {
        uint32_t v = x->run[k];
        double el = now - x->start[v];
        double rest = j->est[v] - el;
        work += (rest > 0 ? rest : 0) * j->tok[v];
        double tail = j->bl[v] - el;
        if (tail > path)
            path = tail;
    }
    double frac = j->work_est > 0 ? work / j->work_est : 0;
    *out =
        (struct arbiter_shape){.work = work,
                               .work_sd = j->work_sd * frac,
                               .path = path,
                               .path_sd = j->path_sd * (j->path_est > 0 ? path / j->path_est : 0),
                               .width = j->width};
}

/* What is left of job i as its Jockey-like controller sees it: the remaining shape corrected by
 * the speed the job has shown so far (true over estimated run time of its finished tasks,
 * shrunk towards 1 by a prior of 5% of its work). */
static void asr__remaining_seen(struct asr *r, size_t i, double now, struct arbiter_shape *sh)
{
    const struct arbiter_sim_job *j = &r->s->v[i];
    const struct asr_job *x = &r->jobs[i];
    asr__remaining(r, i, now, sh);
    double prior = 0.05 * j->work_est;
    double speed = (x->done_true + prior) / (x->done_est + prior);
    sh->work *= speed;
    sh->work_sd *= speed;
    sh->path *= speed;
    sh->path_sd *= speed;
}

/* Paddock's per-job controller: ARIA's smallest allocation for the remaining shape as seen,
 * within the time left divided by Jockey's slack. */
static void asr__control(struct asr *r, size_t i, double now)
{
    const struct arbiter_sim_job *j = &r->s->v[i];
    struct arbiter_shape sh;
    asr__remaining_seen(r, i, now, &sh);
    double left = (asr__deadline_abs(j) - now) / r->cfg->slack;
    r->jobs[i].ctl_min = arbiter_min_tokens(&sh, left);
}

static void asr__ready_insert(const struct arbiter_sim_job *j, struct asr_job *x, uint32_t v)
{
    size_t lo = 0, hi = x->nready;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (j->bl_rank[x->ready[mid]] < j->bl_rank[v])
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(x->ready + lo + 1, x->ready + lo, (x->nready - lo) * sizeof *x->ready);
    x->ready[lo] = v;
    x->nready++;
    x->st[v] = ASR_READY;
    x->ready_tok += j->tok[v];
}

/* Node v's predecessors are done: barriers complete at once (and release theirs), tasks become
 * ready. */
static void asr__release(struct asr *r, size_t i, uint32_t v0)
{
    const struct arbiter_sim_job *j = &r->s->v[i];
    struct asr_job *x = &r->jobs[i];
    uint32_t stack[64];
    size_t ns = 0;
    stack[ns++] = v0;
    while (ns > 0) {
        uint32_t v = stack[--ns];
        if (j->tok[v] > 0) {
            asr__ready_insert(j, x, v);
            continue;
        }
        x->st[v] = ASR_DONE;
        x->ndone++;
        for (uint32_t e = j->succ_at[v]; e < j->succ_at[v + 1]; e++) {
            uint32_t w = j->succ[e];
            if (--x->left[w] != 0)
                continue;
            if (ns < sizeof stack / sizeof *stack)
                stack[ns++] = w;
            else
                asr__release(r, i, w); /* deep barrier chains: recurse */
        }
    }
}

static void asr__run_remove(struct asr_job *x, uint32_t v)
{
    for (size_t k = 0; k < x->nrun; k++)
        if (x->run[k] == v) {
            x->run[k] = x->run[--x->nrun];
            return;
        }
}

/* Stops task v of job i (killed or preempted): its work is lost, it is ready again. */
static void asr__stop(struct asr *r, size_t i, uint32_t v, double now)
{
    const struct arbiter_sim_job *j = &r->s->v[i];
    struct asr_job *x = &r->jobs[i];
    if (x->st[v] == ASR_REG) {
        x->reg_tok -= j->tok[v];
        r->used_reg -= j->tok[v];
    } else {
        x->opp_tok -= j->tok[v];
        r->used_opp -= j->tok[v];
    }
    asr__run_remove(x, v);
    r->res->work_lost_s += (now - x->start[v]) * j->tok[v];
    x->gen[v]++;
    x->unstarted_work += j->est[v] * j->tok[v];
    if (j->bl_rank[v] < x->blp)
        x->blp = j->bl_rank[v];
    asr__ready_insert(j, x, v);
}

/* The youngest running task of job i in state st (UINT32_MAX: none). */
static uint32_t asr__youngest(const struct asr *r, size_t i, uint8_t st)
{
    const struct asr_job *x = &r->jobs[i];
    uint32_t best = UINT32_MAX;
    for (size_t k = 0; k < x->nrun; k++) {
        uint32_t v = x->run[k];
        if (x->st[v] == st && (best == UINT32_MAX || x->start[v] > x->start[best] ||
                               (x->start[v] == x->start[best] && v > best)))
            best = v;
    }
    return best;
}

/* The running task of job i in state st with the most estimated time left (UINT32_MAX: none):
 * the order in which the daemon downgrades running tasks (jm/attempt.h, dispatch_downgrades;
 * this simulation has no queued tasks, which the daemon downgrades first). */
static uint32_t asr__most_left(const struct asr *r, size_t i, uint8_t st, double now)
{
    const struct arbiter_sim_job *j = &r->s->v[i];
    const struct asr_job *x = &r->jobs[i];
    uint32_t best = UINT32_MAX;
    double bl = 0;
    for (size_t k = 0; k < x->nrun; k++) {
        uint32_t v = x->run[k];
        if (x->st[v] != st)
            continue;
        double left = j->est[v] - (now - x->start[v]);
        if (best == UINT32_MAX || left > bl || (left == bl && v < best))
            best = v, bl = left;
    }
    return best;
}

/* Frees a slot of `need` tokens by preempting opportunistic tasks, youngest first, never one
 * within its grace (as pn/queue's queue_preempt); when only those are left, wakes the run at the
 * first grace's end. */
static void asr__make_room(struct asr *r, uint32_t need, double now, bool urgent)
{
    while (r->cfg->capacity - r->used_reg - r->used_opp < need && r->used_opp > 0) {
        size_t bj = SIZE_MAX;
        uint32_t bv = UINT32_MAX;
        double wake = INFINITY;
        for (size_t a = 0; a < r->nact; a++) {
            size_t i = r->act[a];
            const struct asr_job *x = &r->jobs[i];
            for (size_t k = 0; k < x->nrun; k++) {
                uint32_t v = x->run[k];
                if (x->st[v] != ASR_OPP)
                    continue;
                if (x->grace[v] > now && !urgent) {
                    wake = x->grace[v] < wake ? x->grace[v] : wake;
                    continue;
                }
                if (bj == SIZE_MAX || x->start[v] > r->jobs[bj].start[bv] ||
                    (x->start[v] == r->jobs[bj].start[bv] && (i > bj || (i == bj && v > bv))))
                    bj = i, bv = v;
            }
        }
        if (bj == SIZE_MAX) {
            if (isfinite(wake) && (r->wake_at <= now || wake < r->wake_at)) {
                r->wake_at = wake;
                if (engine_at(r->e, wake, asr__wake_ev, r, 0) != 0)
                    r->rc = ERR_NOMEM;
            }
            return;
        }
        asr__stop(r, bj, bv, now);
        r->res->preemptions++;
    }
}

static void asr__start(struct asr *r, size_t i, uint32_t v, double now)
{
    const struct arbiter_sim_job *j = &r->s->v[i];
    struct asr_job *x = &r->jobs[i];
    x->st[v] = ASR_REG;
    x->start[v] = now;
    x->gen[v]++;
    x->reg_tok += j->tok[v];
    x->ready_tok -= j->tok[v];
    r->used_reg += j->tok[v];
    x->run[x->nrun++] = v;
    x->unstarted_work -= j->est[v] * j->tok[v];
    if (x->unstarted_work < 0)
        x->unstarted_work = 0;
    uint64_t arg = ((uint64_t)i << (ASR_NODE_BITS + ASR_GEN_BITS)) | ((uint64_t)v << ASR_GEN_BITS) |
                   (x->gen[v] & ASR_GEN_MASK);
    if (engine_after(r->e, j->dur[v], asr__finish_ev, r, arg) != 0)
        r->rc = ERR_NOMEM;
}

/* The arbiter's step and its consequences: grants, reclaims, upgrades and starts. */
static void asr__allocate(struct asr *r)
{
    double now = engine_now(r->e);
    uint32_t cap = r->cfg->capacity;
    int minedf = r->pol == ARBITER_SIM_MINEDF || r->pol == ARBITER_SIM_MINEDF_WC;
    for (size_t a = 0; a < r->nact; a++) {
        size_t i = r->act[a];
        const struct arbiter_sim_job *j = &r->s->v[i];
        struct asr_job *x = &r->jobs[i];
        uint32_t demand = x->reg_tok + x->opp_tok + x->ready_tok;
        demand = demand > cap ? cap : demand;
        uint32_t minimum = 0;
        if (j->deadline > 0 && (minedf || r->pol == ARBITER_SIM_PADDOCK)) {
            /* the ledger's rule (arbiter_deadline_minimum): MinEDF for a job without a profile,
             * its controller's ask for one with (paddock --profiled on) */
            bool asks = !minedf && r->cfg->profiled;
            struct arbiter_shape sh = {0};
            if (!asks)
                asr__remaining(r, i, now, &sh);
            minimum = arbiter_deadline_minimum(asks, 0, x->ctl_min, asks ? NULL : &sh,
                                               asr__deadline_abs(j) - now);
            /* a job must be able to run its largest task on its minimum */
            uint32_t big = demand < j->max_tok ? demand : j->max_tok;
            minimum = minimum < big ? big : minimum;
            minimum = minimum > demand ? demand : minimum;
        }
        int64_t d = 0;
        if (j->deadline > 0) {
            d = llround(asr__deadline_abs(j) * 1000.0);
            d = d < 1 ? 1 : d;
        }
        r->aj[a] = (struct arbiter_job){.id = i + 1,
                                        .deadline = d,
                                        .best_effort = x->refused,
                                        .wanted = demand,
                                        .minimum = minimum,
                                        .width = demand,
                                        .held = x->grant,
                                        .weight = 1};
    }
    /* the RM's ledger allocates through arbiter_allocate_plan (rm/ledger.c); no job here has a
       reservation, so nothing is held back */
    arbiter_allocate_plan(asr__arbiter_policy(r->pol), cap, 0, r->aj, r->nact, r->order);
    for (size_t a = 0; a < r->nact; a++) {
        size_t i = r->act[a];
        const struct arbiter_sim_job *j = &r->s->v[i];
        struct asr_job *x = &r->jobs[i];
        x->grant_acc += x->grant * (now - x->last_t);
        x->last_t = now;
        x->grant = r->aj[a].grant;
        x->min_part = r->aj[a].min_part;
        uint32_t spare = x->grant - x->min_part;
        if (spare > x->spare)
            r->res->spare_grants += spare - x->spare;
        x->spare = spare;
        /* Tokens taken back: Verma kills the tasks on them; Paddock downgrades them. */
        while (x->reg_tok > x->grant) {
            uint32_t v = r->pol == ARBITER_SIM_PADDOCK ? asr__most_left(r, i, ASR_REG, now)
                                                       : asr__youngest(r, i, ASR_REG);
            r->res->spare_reclaims++;
            if (r->pol == ARBITER_SIM_PADDOCK) {
                /* the daemon's downgrade (jm/attempt.h): the most time left first, a grace of
                   its time left only when that is short (attempt_grace_ms) */
                double rest = j->est[v] - (now - x->start[v]);
                rest = rest > 0 ? rest : 0;
                uint64_t g = attempt_grace_ms(&r->att_cfg, 1, rest, j->est[v]);
                x->grace[v] = g > 0 ? now + (double)g / 1000.0 : 0;
                x->st[v] = ASR_OPP;
                x->reg_tok -= j->tok[v];
                x->opp_tok += j->tok[v];
                r->used_reg -= j->tok[v];
                r->used_opp += j->tok[v];
                r->res->downgrades++;
            } else {
                asr__stop(r, i, v, now);
                r->res->kills++;
            }
        }
    }
    for (size_t a = 0; a < r->nact; a++) {
        size_t i = r->act[a];
        const struct arbiter_sim_job *j = &r->s->v[i];
        struct asr_job *x = &r->jobs[i];
        /* Opportunistic tasks of its own first (Apollo's upgrade), in the daemon's order
           (jm/attempt.h attempt_upgrades): the highest bottom level first (by_bl's rank),
           repeated while the grant has room. */
        while (x->opp_tok > 0) {
            uint32_t best = UINT32_MAX;
            for (size_t k = 0; k < x->nrun; k++) {
                uint32_t v = x->run[k];
                if (x->st[v] == ASR_OPP && x->reg_tok + j->tok[v] <= x->grant &&
                    (best == UINT32_MAX || j->bl_rank[v] < j->bl_rank[best]))
                    best = v;
            }
            if (best == UINT32_MAX)
                break;
            x->st[best] = ASR_REG;
            x->opp_tok -= j->tok[best];
            x->reg_tok += j->tok[best];
            r->used_opp -= j->tok[best];
            r->used_reg += j->tok[best];
        }
        size_t w = 0;
        /* Paddock: a job short of slack ends downgraded tasks' graces (TASK_CREATE urgent); under
         * minedf and minedf_wc nothing has a grace */
        bool urgent = false;
        if (r->pol == ARBITER_SIM_PADDOCK && j->deadline > 0 && x->nready > 0) {
            struct arbiter_shape sh;
            asr__remaining(r, i, now, &sh);
            /* its conservative ETA, as paddock-jm's p95 */
            sh.work += r->cfg->k * sh.work_sd;
            sh.path += r->cfg->k * sh.path_sd;
            urgent = now + arbiter_time_up(&sh, x->grant > 0 ? x->grant : 1) >=
                     asr__deadline_abs(j) - r->cfg->urgent_frac * j->deadline;
        }
        for (size_t k = 0; k < x->nready; k++) {
            uint32_t v = x->ready[k];
            if (x->reg_tok + j->tok[v] <= x->grant) {
                asr__make_room(r, j->tok[v], now, urgent);
                if (r->used_reg + r->used_opp + j->tok[v] <= cap) {
                    asr__start(r, i, v, now);
                    continue;
                }
            }
            x->ready[w++] = v;
        }
        x->nready = w;
    }
}

/* Whether finished job i teaches the error model. The ledger's rule (rm/ledger.c
 * ledger__job_finish): where the fluid model describes the run, an admitted deadline job (ahead
 * of everything the model leaves out) or a job that had the cluster to itself; a job without
 * an admitted deadline that shared it measured the sharing. */
static bool asr__teaches(const struct asr *r, size_t i)
{
    const struct arbiter_sim_job *j = &r->s->v[i];
    const struct asr_job *x = &r->jobs[i];
    bool admitted = j->deadline > 0 && !x->refused;
    switch (r->cfg->calib_from) {
    case ARBITER_SIM_CALIB_ALL:
        return !x->refused;
    case ARBITER_SIM_CALIB_DEADLINE:
        return admitted;
    default:
        return admitted || !x->shared;
    }
}

static void asr__admission_shape(const struct asr *r, const struct arbiter_sim_job *j,
                                 struct arbiter_shape *sh);

static void asr__finish_ev(engine_t *e, void *ctx, uint64_t arg)
{
    struct asr *r = ctx;
    size_t i = (size_t)(arg >> (ASR_NODE_BITS + ASR_GEN_BITS));
    uint32_t v = (uint32_t)((arg >> ASR_GEN_BITS) & ASR_NODE_MASK);
    const struct arbiter_sim_job *j = &r->s->v[i];
    struct asr_job *x = &r->jobs[i];
    if ((x->st[v] != ASR_REG && x->st[v] != ASR_OPP) ||
        (x->gen[v] & ASR_GEN_MASK) != (arg & ASR_GEN_MASK))
        return; /* a stopped attempt */
    double now = engine_now(e);
    if (x->st[v] == ASR_REG) {
        x->reg_tok -= j->tok[v];
        r->used_reg -= j->tok[v];
    } else {
        x->opp_tok -= j->tok[v];
        r->used_opp -= j->tok[v];
    }
    asr__run_remove(x, v);
    x->st[v] = ASR_DONE;
    x->ndone++;
    x->done_est += j->est[v] * j->tok[v];
    x->done_true += j->dur[v] * j->tok[v];
    for (uint32_t k = j->succ_at[v]; k < j->succ_at[v + 1]; k++)
        if (--x->left[j->succ[k]] == 0)
            asr__release(r, i, j->succ[k]);
    if (x->ndone == j->n) {
        x->finished = 1;
        x->finish = now;
        x->grant_acc += x->grant * (now - x->last_t);
        x->grant = 0;
        if (r->pred[i] > 0 && asr__teaches(r, i)) {
            /* measured on the tokens it held, as the ledger does (rm/calib.h calib_predicted) */
            struct arbiter_shape sh = {.work = j->work_est, .path = j->path_est, .width = j->width};
            asr__admission_shape(r, j, &sh);
            double pred = calib_predicted(&sh, now - j->arrival, x->grant_acc, x->done_true);
            if (pred > 0)
                calib_add(&r->calib, now - j->arrival, pred);
        }
        for (size_t a = 0; a < r->nact; a++)
            if (r->act[a] == i) {
                memmove(r->act + a, r->act + a + 1, (r->nact - a - 1) * sizeof *r->act);
                r->nact--;
                break;
            }
    }
    asr__allocate(r);
}

static void asr__wake_ev(engine_t *e, void *ctx, uint64_t arg)
{
    (void)e;
    (void)arg;
    asr__allocate(ctx);
}

static void asr__tick_ev(engine_t *e, void *ctx, uint64_t i)
{
    struct asr *r = ctx;
    const struct arbiter_sim_job *j = &r->s->v[i];
    if (r->jobs[i].finished)
        return;
    asr__control(r, (size_t)i, engine_now(e));
    double period = r->cfg->period_frac * j->deadline;
    if (engine_after(e, period > 0.1 ? period : 0.1, asr__tick_ev, r, i) != 0)
        r->rc = ERR_NOMEM;
    asr__allocate(r);
}

/* A shape as admission sees it, as the RM's ledger builds it (rm/ledger.c ledger__shape,
 * ledger__remain): no spread of its own (a spec's estimates carry none: jobdir_shape's cv 0;
 * the error model stands for their error), the job's list-schedule place alpha and critical
 * path as the JM's simulator gives them (with spread: under the task noise as a profile reports
 * it), and the error model's quantile factor as the conservative scale. */
static void asr__admission_shape(const struct asr *r, const struct arbiter_sim_job *j,
                                 struct arbiter_shape *sh)
{
    struct calib_factors f;
    calib_factors(&r->calib, &f);
    sh->work_sd = 0;
    sh->path_sd = 0;
    sh->has_alpha = true;
    sh->alpha = j->alpha;
    sh->scale = f.hi;
    /* the JM's critical path under the profile's spread (jm/shape.h), for what is left too */
    sh->path *= j->path_stretch > 0 ? j->path_stretch : 1;
}

/* Admission (MRM §3) as the ledger does it at registration (rm/ledger.c ledger__job_register):
 * every job is predicted against the admitted jobs still running (their remaining shapes), its
 * median finish kept for the error model; a deadline job is judged at its deadline. Returns 1
 * (admitted, or no deadline), 0 (refused) or an ERR_*. */
static int asr__admit(struct asr *r, size_t i, double now)
{
    const struct arbiter_sim_job *j = &r->s->v[i];
    size_t n = 0;
    for (size_t a = 0; a < r->nact; a++) {
        size_t o = r->act[a];
        if (r->s->v[o].deadline <= 0 || r->jobs[o].refused)
            continue;
        r->load[n].id = o + 1;
        r->load[n].deadline = asr__deadline_abs(&r->s->v[o]) - now;
        /* Paddock's JMs report what is left as their controllers see it (the RM's ledger has
         * their shapes from renewals); the other policies know the spec's estimates only. */
        if (r->pol == ARBITER_SIM_PADDOCK)
            asr__remaining_seen(r, o, now, &r->load[n].remain);
        else
            asr__remaining(r, o, now, &r->load[n].remain);
        asr__admission_shape(r, &r->s->v[o], &r->load[n].remain);
        n++;
    }
    struct arbiter_shape sh = {.work = j->work_est, .path = j->path_est, .width = j->width};
    asr__admission_shape(r, j, &sh);
    struct arbiter_quote q;
    int rc = arbiter_admit(r->cfg->k, r->cfg->capacity, r->load, n, &sh, j->deadline, &q);
    if (rc != 0)
        return rc;
    if (isfinite(q.finish_p50) && q.finish_p50 > 0 && isfinite(q.finish))
        r->pred[i] = q.finish_p50;
    r->bound[i] = q.finish;
    r->scale[i] = sh.scale;
    return j->deadline <= 0 || q.admit ? 1 : 0;
}

static void asr__arrive_ev(engine_t *e, void *ctx, uint64_t arg)
{
    struct asr *r = ctx;
    size_t i = (size_t)arg;
    const struct arbiter_sim_job *j = &r->s->v[i];
    struct asr_job *x = &r->jobs[i];
    double now = engine_now(e);
    x->active = 1;
    x->last_t = now;
    /* the ledger marks both sides shared when a job registers beside an active one */
    for (size_t a = 0; a < r->nact; a++)
        r->jobs[r->act[a]].shared = 1;
    x->shared = r->nact > 0;
    if (r->admission) {
        int ok = asr__admit(r, i, now);
        if (ok < 0) {
            r->rc = ok;
            engine_stop(e);
            return;
        }
        x->refused = !ok;
    }
    r->act[r->nact++] = i;
    for (uint32_t v = 0; v < j->n; v++)
        if (j->npred[v] == 0)
            asr__release(r, i, v);
    if (j->deadline > 0 && r->pol == ARBITER_SIM_PADDOCK) {
        asr__control(r, i, now);
        double period = r->cfg->period_frac * j->deadline;
        if (engine_after(e, period > 0.1 ? period : 0.1, asr__tick_ev, r, i) != 0)
            r->rc = ERR_NOMEM;
    }
    asr__allocate(r);
}

static void asr__free(struct asr *r)
{
    for (size_t i = 0; r->jobs != NULL && i < r->s->n; i++) {
        struct asr_job *x = &r->jobs[i];
        mem_free(x->left);
        mem_free(x->st);
        mem_free(x->start);
        mem_free(x->gen);
        mem_free(x->grace);
        mem_free(x->ready);
        mem_free(x->run);
    }
    mem_free(r->jobs);
    mem_free(r->act);
    mem_free(r->aj);
    mem_free(r->order);
    mem_free(r->load);
    mem_free(r->pred);
    mem_free(r->bound);
    mem_free(r->scale);
    engine_destroy(&r->e);
}

/* One deadline job's line of --trace: its shape, deadline, what admission said at arrival and
 * what happened (times in seconds from its arrival). */
static void asr__trace(const struct asr *r, size_t i, double took)
{
    const struct arbiter_sim_job *j = &r->s->v[i];
    const struct asr_job *x = &r->jobs[i];
    double est = arbiter_sim_makespan(j, r->s->capacity, 0, NULL);
    fprintf(r->cfg->trace,
            "%s job %zu width %u alpha %.3f work %.1f path %.1f est_alone %.2f true_alone %.2f "
            "deadline %.2f pred_p50 %.2f bound %.2f scale %.3f %s took %.2f %s act/pred %.3f "
            "shared %d\n",
            arbiter_sim_policy_name(r->pol), i, j->width, j->alpha, j->work_est, j->path_est, est,
            j->alone, j->deadline, r->pred[i], r->bound[i], r->scale[i],
            x->refused ? "refused" : "admitted", took,
            took > j->deadline * (1 + 1e-9) ? "missed" : "met",
            r->pred[i] > 0 ? took / r->pred[i] : 0, x->shared);
}

int arbiter_sim_run(const arbiter_sim_jobs_t *s, const struct arbiter_sim_config *cfg,
                    enum arbiter_sim_policy p, int admission, const uint8_t *ref_met, uint8_t *met,
                    struct arbiter_sim_result *out)
{
    if (cfg->engine == ARBITER_SIM_ENGINE_CLUSTER)
        return arbiter_cluster_run(s, cfg, p, admission, ref_met, met, out);
    memset(out, 0, sizeof *out);
    struct asr r = {.s = s, .cfg = cfg, .pol = p, .admission = admission, .res = out};
    attempt_config_default(&r.att_cfg);
    r.att_cfg.grace_frac = cfg->grace_frac;
    calib_init(&r.calib);
    size_t n = s->n;
    r.jobs = mem_calloc(n, sizeof *r.jobs);
    r.act = mem_calloc(n, sizeof *r.act);
    r.aj = mem_calloc(n, sizeof *r.aj);
    r.order = mem_calloc(n, sizeof *r.order);
    r.load = mem_calloc(n, sizeof *r.load);
    r.pred = mem_calloc(n, sizeof *r.pred);
    r.bound = mem_calloc(n, sizeof *r.bound);
    r.scale = mem_calloc(n, sizeof *r.scale);
    int rc = r.jobs && r.act && r.aj && r.order && r.load && r.pred && r.bound && r.scale
                 ? engine_new(&r.e)
                 : ERR_NOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const struct arbiter_sim_job *j = &s->v[i];
        struct asr_job *x = &r.jobs[i];
        x->left = mem_calloc(j->n, sizeof *x->left);
        x->st = mem_calloc(j->n, sizeof *x->st);
        x->start = mem_calloc(j->n, sizeof *x->start);
        x->gen = mem_calloc(j->n, sizeof *x->gen);
        x->grace = mem_calloc(j->n, sizeof *x->grace);
        x->ready = mem_calloc(j->n, sizeof *x->ready);
        x->run = mem_calloc(j->n, sizeof *x->run);
        if (!x->left || !x->st || !x->start || !x->gen || !x->grace || !x->ready || !x->run) {
            rc = ERR_NOMEM;
            break;
        }
        memcpy(x->left, j->npred, j->n * sizeof *x->left);
        x->unstarted_work = j->work_est;
        rc = engine_at(r.e, j->arrival, asr__arrive_ev, &r, i);
    }
    if (rc == 0) {
        engine_run(r.e, INFINITY);
        rc = r.rc;
        out->events = engine_events_run(r.e);
    }
    if (rc == 0) {
        struct arbiter_sim_tally tally;
        arbiter_sim_tally_init(&tally);
        for (size_t i = 0; i < n; i++) {
            const struct arbiter_sim_job *j = &s->v[i];
            const struct asr_job *x = &r.jobs[i];
            if (!x->finished) {
                rc = ERR_INVAL; /* a job never finished: a deadlock in the model */
                break;
            }
            double took = arbiter_sim_tally_job(&tally, out, j, i, x->finish, x->grant_acc,
                                                x->refused, ref_met, met);
            if (j->deadline > 0 && cfg->trace != NULL && admission)
                asr__trace(&r, i, took);
        }
        if (rc == 0)
            arbiter_sim_tally_end(&tally, out, n, cfg->capacity);
    }
    asr__free(&r);
    return rc;
}
