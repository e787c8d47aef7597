/* jsim.c - Jockey's job simulator: its random draws and the job's shape (building, the
 * topological order, priorities, Amdahl's parameters) (Jockey §4.1). One simulated run is in
 * jsim_run.c, the attempt model in jsim_model.c, the C(p, a) table built from many runs in
 * jsim_table.c. */
#include "jm/jsim.h"

#include <math.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/jsim_internal.h"

/* ---- random numbers ---- */

void jsim_rng_seed(struct jsim_rng *r, uint64_t seed)
{
    rng_seed(&r->g, seed);
}

uint64_t jsim_rng_next(struct jsim_rng *r)
{
    return rng_next(&r->g);
}

double jsim_rng_uniform(struct jsim_rng *r)
{
    return rng_unif(&r->g);
}

double jsim_rng_exp(struct jsim_rng *r, double mean)
{
    return rng_exp(&r->g, mean);
}

double jsim_rng_normal(struct jsim_rng *r)
{
    return rng_normal(&r->g);
}

double jsim_rng_lognormal(struct jsim_rng *r, double sigma)
{
    return rng_lognormal(&r->g, 0, sigma);
}

/* ---- the job's shape ---- */

jsim_job_t *jsim_job_new(int nstages, int ntasks)
{
    if (ntasks < 1 || ntasks > JSIM_MAX_TASKS || nstages < 1 || nstages > JSIM_MAX_TASKS)
        return NULL;
    jsim_job_t *j = mem_calloc(1, sizeof *j);
    if (j == NULL)
        return NULL;
    j->nstages = nstages;
    j->ntasks = ntasks;
    j->task_stage = mem_calloc((size_t)ntasks, sizeof *j->task_stage);
    j->est = mem_calloc((size_t)ntasks, sizeof *j->est);
    if (j->task_stage == NULL || j->est == NULL) {
        jsim_job_destroy(&j);
        return NULL;
    }
    for (int t = 0; t < ntasks; t++)
        j->est[t] = 1.0;
    return j;
}

void jsim_job_destroy(jsim_job_t **p)
{
    if (p == NULL || *p == NULL)
        return;
    jsim_job_t *j = *p;
    mem_free(j->task_stage);
    mem_free(j->est);
    mem_free(j->tok);
    mem_free(j->ef);
    mem_free(j->et);
    mem_free(j->bf);
    mem_free(j->bt);
    mem_free(j->succ_off);
    mem_free(j->succ);
    mem_free(j->npred);
    mem_free(j->bsucc_off);
    mem_free(j->bsucc);
    mem_free(j->nbpred);
    mem_free(j->stage_off);
    mem_free(j->stage_tasks);
    mem_free(j->prio);
    mem_free(j->topo);
    mem_free(j);
    *p = NULL;
}

int jsim_job_set_task(jsim_job_t *j, int task, int stage, double est_s)
{
    if (j->finalized)
        return ERR_STATE;
    if (task < 0 || task >= j->ntasks || stage < 0 || stage >= j->nstages)
        return ERR_RANGE;
    if (!isfinite(est_s) || est_s < 0)
        return ERR_INVAL;
    j->task_stage[task] = stage;
    j->est[task] = est_s;
    return 0;
}

int jsim_job_set_tokens(jsim_job_t *j, int task, uint32_t tokens)
{
    if (task < 0 || task >= j->ntasks)
        return ERR_RANGE;
    if (j->tok == NULL) {
        if (tokens <= 1)
            return 0;
        j->tok = mem_calloc((size_t)j->ntasks, sizeof *j->tok);
        if (j->tok == NULL)
            return ERR_NOMEM;
        for (int t = 0; t < j->ntasks; t++)
            j->tok[t] = 1;
    }
    j->tok[task] = tokens > 0 ? tokens : 1;
    return 0;
}

uint32_t jsim_job_task_tokens(const jsim_job_t *j, int task)
{
    return j->tok != NULL && task >= 0 && task < j->ntasks ? j->tok[task] : 1;
}

static int jsim__pair_push(int **a, int **b, size_t *n, size_t *cap, int x, int y)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        int *na = mem_reallocarray(*a, nc, sizeof **a);
        if (na == NULL)
            return ERR_NOMEM;
        *a = na;
        int *nb = mem_reallocarray(*b, nc, sizeof **b);
        if (nb == NULL)
            return ERR_NOMEM;
        *b = nb;
        *cap = nc;
    }
    (*a)[*n] = x;
    (*b)[*n] = y;
    (*n)++;
    return 0;
}

int jsim_job_add_edge(jsim_job_t *j, int from, int to)
{
    if (j->finalized)
        return ERR_STATE;
    if (from < 0 || from >= j->ntasks || to < 0 || to >= j->ntasks || from == to)
        return ERR_RANGE;
    return jsim__pair_push(&j->ef, &j->et, &j->ne, &j->ecap, from, to);
}

int jsim_job_add_barrier(jsim_job_t *j, int from, int to)
{
    if (j->finalized)
        return ERR_STATE;
    if (from < 0 || from >= j->nstages || to < 0 || to >= j->nstages || from == to)
        return ERR_RANGE;
    return jsim__pair_push(&j->bf, &j->bt, &j->nb, &j->bcap, from, to);
}

/* CSR of n lists from pairs (key[i] -> val[i]). */
static int jsim__csr(int n, const int *key, const int *val, size_t m, int **off, int **out)
{
    *off = mem_calloc((size_t)n + 1, sizeof **off);
    *out = mem_calloc(m > 0 ? m : 1, sizeof **out);
    if (*off == NULL || *out == NULL)
        return ERR_NOMEM;
    for (size_t i = 0; i < m; i++)
        (*off)[key[i] + 1]++;
    for (int i = 0; i < n; i++)
        (*off)[i + 1] += (*off)[i];
    int *fill = mem_calloc((size_t)n + 1, sizeof *fill);
    if (fill == NULL)
        return ERR_NOMEM;
    for (size_t i = 0; i < m; i++)
        (*out)[(*off)[key[i]] + fill[key[i]]++] = val[i];
    mem_free(fill);
    return 0;
}

int jsim__release_init(const jsim_job_t *j, struct jsim__release *r)
{
    memset(r, 0, sizeof *r);
    r->pending = mem_calloc((size_t)j->ntasks, sizeof *r->pending);
    r->stage_left = mem_calloc((size_t)j->nstages, sizeof *r->stage_left);
    r->stack = mem_calloc((size_t)j->nstages, sizeof *r->stack);
    if (r->pending == NULL || r->stage_left == NULL || r->stack == NULL) {
        jsim__release_close(r);
        return ERR_NOMEM;
    }
    return 0;
}

void jsim__release_close(struct jsim__release *r)
{
    mem_free(r->pending);
    mem_free(r->stage_left);
    mem_free(r->stack);
    memset(r, 0, sizeof *r);
}

/* Stage s is complete: release what waits on it. Tasks that become ready go to ready(ctx, t). */
static int jsim__stage_done(const jsim_job_t *j, struct jsim__release *r, int s,
                            int (*ready)(void *, int), void *ctx)
{
    int sp = 0;
    r->stack[sp++] = s;
    while (sp > 0) {
        int u = r->stack[--sp];
        if (r->on_stage != NULL)
            r->on_stage(ctx, u);
        for (int k = j->bsucc_off[u]; k < j->bsucc_off[u + 1]; k++) {
            int v = j->bsucc[k];
            for (int q = j->stage_off[v]; q < j->stage_off[v + 1]; q++) {
                int t = j->stage_tasks[q];
                if (--r->pending[t] == 0) {
                    int rc = ready(ctx, t);
                    if (rc != 0)
                        return rc;
                }
            }
            if (--r->stage_left[v] == 0)
                r->stack[sp++] = v; /* each stage completes once, so the stack never overflows */
        }
    }
    return 0;
}

int jsim__release_start(const jsim_job_t *j, struct jsim__release *r, int (*ready)(void *, int),
                        void *ctx)
{
    for (int t = 0; t < j->ntasks; t++)
        r->pending[t] = j->npred[t] + j->nbpred[j->task_stage[t]];
    for (int s = 0; s < j->nstages; s++)
        r->stage_left[s] = (j->stage_off[s + 1] - j->stage_off[s]) + j->nbpred[s];
    for (int t = 0; t < j->ntasks; t++) {
        if (r->pending[t] == 0) {
            int rc = ready(ctx, t);
            if (rc != 0)
                return rc;
        }
    }
    for (int s = 0; s < j->nstages; s++) {
        if (j->nbpred[s] == 0 && j->stage_off[s + 1] == j->stage_off[s]) {
            r->stage_left[s] = -1; /* complete; never decremented again (no predecessors) */
            int rc = jsim__stage_done(j, r, s, ready, ctx);
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}

int jsim__release_task(const jsim_job_t *j, struct jsim__release *r, int t,
                       int (*ready)(void *, int), void *ctx)
{
    for (int k = j->succ_off[t]; k < j->succ_off[t + 1]; k++) {
        int w = j->succ[k];
        if (--r->pending[w] == 0) {
            int rc = ready(ctx, w);
            if (rc != 0)
                return rc;
        }
    }
    int s = j->task_stage[t];
    if (--r->stage_left[s] == 0)
        return jsim__stage_done(j, r, s, ready, ctx);
    return 0;
}

/* Topological order over tasks and stage-completion nodes (id ntasks + s). */
struct jsim__topo_ctx {
    jsim_job_t *j;
    int n;
};

static int jsim__topo_ready(void *ctx, int t)
{
    struct jsim__topo_ctx *c = ctx;
    c->j->topo[c->n++] = t;
    return 0;
}

static void jsim__topo_stage(void *ctx, int s)
{
    struct jsim__topo_ctx *c = ctx;
    c->j->topo[c->n++] = c->j->ntasks + s;
}

/* tail[node] = longest path after node (excluding its own weight) where task t weighs w[t]. */
static void jsim__tails(const jsim_job_t *j, const double *w, double *tail)
{
    int N = j->ntasks + j->nstages;
    for (int i = 0; i < N; i++)
        tail[i] = 0;
    for (int i = N - 1; i >= 0; i--) {
        int x = j->topo[i];
        double best = 0;
        if (x < j->ntasks) {
            for (int k = j->succ_off[x]; k < j->succ_off[x + 1]; k++) {
                int y = j->succ[k];
                if (w[y] + tail[y] > best)
                    best = w[y] + tail[y];
            }
            int sn = j->ntasks + j->task_stage[x];
            if (tail[sn] > best)
                best = tail[sn];
        } else {
            int s = x - j->ntasks;
            for (int k = j->bsucc_off[s]; k < j->bsucc_off[s + 1]; k++) {
                int v = j->bsucc[k];
                int vn = j->ntasks + v;
                if (tail[vn] > best)
                    best = tail[vn];
                for (int q = j->stage_off[v]; q < j->stage_off[v + 1]; q++) {
                    int y = j->stage_tasks[q];
                    if (w[y] + tail[y] > best)
                        best = w[y] + tail[y];
                }
            }
        }
        tail[x] = best;
    }
}

int jsim_job_finalize(jsim_job_t *j, char *msg, size_t cap)
{
    if (j->finalized)
        return ERR_STATE;
    int rc = jsim__csr(j->ntasks, j->ef, j->et, j->ne, &j->succ_off, &j->succ);
    if (rc == 0)
        rc = jsim__csr(j->nstages, j->bf, j->bt, j->nb, &j->bsucc_off, &j->bsucc);
    if (rc != 0)
        return err_fmt(msg, cap, ERR_NOMEM, "jsim: out of memory");
    j->stage_off = mem_calloc((size_t)j->nstages + 1, sizeof *j->stage_off);
    j->stage_tasks = mem_calloc((size_t)j->ntasks, sizeof *j->stage_tasks);
    j->npred = mem_calloc((size_t)j->ntasks, sizeof *j->npred);
    j->nbpred = mem_calloc((size_t)j->nstages, sizeof *j->nbpred);
    j->topo = mem_calloc((size_t)j->ntasks + (size_t)j->nstages, sizeof *j->topo);
    j->prio = mem_calloc((size_t)j->ntasks + (size_t)j->nstages, sizeof *j->prio);
    if (j->stage_off == NULL || j->stage_tasks == NULL || j->npred == NULL || j->nbpred == NULL ||
        j->topo == NULL || j->prio == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "jsim: out of memory");
    for (int t = 0; t < j->ntasks; t++)
        j->stage_off[j->task_stage[t] + 1]++;
    for (int s = 0; s < j->nstages; s++)
        j->stage_off[s + 1] += j->stage_off[s];
    {
        int *fill = mem_calloc((size_t)j->nstages, sizeof *fill);
        if (fill == NULL)
            return err_fmt(msg, cap, ERR_NOMEM, "jsim: out of memory");
        for (int t = 0; t < j->ntasks; t++)
            j->stage_tasks[j->stage_off[j->task_stage[t]] + fill[j->task_stage[t]]++] = t;
        mem_free(fill);
    }
    for (size_t i = 0; i < j->ne; i++)
        j->npred[j->et[i]]++;
    for (size_t i = 0; i < j->nb; i++)
        j->nbpred[j->bt[i]]++;

    /* Kahn's order through the same release logic the simulator uses. */
    struct jsim__release r;
    if (jsim__release_init(j, &r) != 0)
        return err_fmt(msg, cap, ERR_NOMEM, "jsim: out of memory");
    struct jsim__topo_ctx c = {j, 0};
    r.on_stage = jsim__topo_stage;
    rc = jsim__release_start(j, &r, jsim__topo_ready, &c);
    for (int i = 0; rc == 0 && i < c.n; i++) {
        int x = j->topo[i];
        if (x < j->ntasks)
            rc = jsim__release_task(j, &r, x, jsim__topo_ready, &c);
    }
    int bad = -1;
    if (c.n != j->ntasks + j->nstages) {
        for (int t = 0; t < j->ntasks && bad < 0; t++)
            if (r.pending[t] > 0)
                bad = t;
    }
    jsim__release_close(&r);
    if (c.n != j->ntasks + j->nstages)
        return err_fmt(msg, cap, ERR_INVAL,
                       "jsim: dependency cycle: task %d (stage %d) can never become ready", bad,
                       bad >= 0 ? j->task_stage[bad] : -1);
    double *tail = mem_calloc((size_t)j->ntasks + (size_t)j->nstages, sizeof *tail);
    if (tail == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "jsim: out of memory");
    jsim__tails(j, j->est, tail);
    for (int t = 0; t < j->ntasks; t++)
        j->prio[t] = j->est[t] + tail[t];
    mem_free(tail);
    j->finalized = 1;
    return 0;
}

int jsim_job_ntasks(const jsim_job_t *j)
{
    return j->ntasks;
}

int jsim_job_nstages(const jsim_job_t *j)
{
    return j->nstages;
}

int jsim_job_stage_size(const jsim_job_t *j, int s)
{
    if (s < 0 || s >= j->nstages)
        return 0;
    if (j->finalized)
        return j->stage_off[s + 1] - j->stage_off[s];
    int n = 0;
    for (int t = 0; t < j->ntasks; t++)
        n += j->task_stage[t] == s;
    return n;
}

void jsim_job_stage_sizes(const jsim_job_t *j, int *n)
{
    for (int s = 0; s < j->nstages; s++)
        n[s] = jsim_job_stage_size(j, s);
}

int jsim_job_task_stage(const jsim_job_t *j, int t)
{
    return t >= 0 && t < j->ntasks ? j->task_stage[t] : -1;
}

double jsim_job_task_est(const jsim_job_t *j, int t)
{
    return t >= 0 && t < j->ntasks ? j->est[t] : 0;
}

double jsim_job_task_priority(const jsim_job_t *j, int t)
{
    return j->finalized && t >= 0 && t < j->ntasks ? j->prio[t] : 0;
}

double jsim_job_critical_path(const jsim_job_t *j)
{
    double cp = 0;
    if (!j->finalized)
        return 0;
    for (int t = 0; t < j->ntasks; t++)
        if (j->prio[t] > cp)
            cp = j->prio[t];
    return cp;
}

double jsim_job_total_work(const jsim_job_t *j)
{
    double w = 0;
    for (int t = 0; t < j->ntasks; t++)
        w += j->est[t];
    return w;
}

int jsim_job_amdahl(const jsim_job_t *j, const struct jsim_model *m, struct amdahl *out)
{
    if (!j->finalized)
        return ERR_STATE;
    if (m != NULL && m->nstages != j->nstages)
        return ERR_INVAL;
    int S = j->nstages, N = j->ntasks;
    int *n = mem_calloc((size_t)S, sizeof *n);
    double *l = mem_calloc((size_t)S, sizeof *l);
    double *L = mem_calloc((size_t)S, sizeof *L);
    double *T = mem_calloc((size_t)S, sizeof *T);
    double *w = mem_calloc((size_t)N, sizeof *w);
    double *tail = mem_calloc((size_t)N + (size_t)S, sizeof *tail);
    int rc = ERR_NOMEM;
    if (n == NULL || l == NULL || L == NULL || T == NULL || w == NULL || tail == NULL)
        goto out;
    jsim_job_stage_sizes(j, n);
    for (int t = 0; t < N; t++) {
        int s = j->task_stage[t];
        if (m == NULL || !m->stages[s].from_profile) {
            if (j->est[t] > l[s])
                l[s] = j->est[t];
            T[s] += j->est[t] * jsim_job_task_tokens(j, t);
        }
    }
    for (int s = 0; m != NULL && s < S; s++) {
        if (m->stages[s].from_profile) {
            /* T_s in token-seconds: the profile's run time at the stage's mean task size */
            double units = 0;
            for (int k = j->stage_off[s]; k < j->stage_off[s + 1]; k++)
                units += jsim_job_task_tokens(j, j->stage_tasks[k]);
            l[s] = m->stages[s].runtime_max;
            T[s] = m->stages[s].runtime_total * (n[s] > 0 ? units / n[s] : 1);
        }
    }
    for (int t = 0; t < N; t++)
        w[t] = l[j->task_stage[t]];
    jsim__tails(j, w, tail);
    for (int t = 0; t < N; t++) {
        int s = j->task_stage[t];
        if (tail[t] > L[s])
            L[s] = tail[t];
    }
    rc = amdahl_init(out, S, n, l, L, T);
out:
    mem_free(n);
    mem_free(l);
    mem_free(L);
    mem_free(T);
    mem_free(w);
    mem_free(tail);
    return rc;
}
