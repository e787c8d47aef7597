/* jsim.c - Jockey's job simulator: the job's shape, the attempt model and one simulated run
 * (Jockey §4.1). The C(p, a) table built from many runs is in jsim_table.c. */
#include "jm/jsim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/heap.h"
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
    /* Box-Muller; one value per call keeps the stream simple to reason about. */
    double u1 = jsim_rng_uniform(r), u2 = jsim_rng_uniform(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

double jsim_rng_lognormal(struct jsim_rng *r, double sigma)
{
    return exp(sigma * jsim_rng_normal(r));
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

/* ---- one run ---- */

/* The ready list of a run: sorted runs of entries merged through a heap of runs (common/heap).
 * The tasks that become ready between two reads (a stage's release: thousands at once) are
 * sorted once into a run, and a pop costs log(runs) rather than log(ready tasks). The order (key,
 * then id) is total, so what pops, and when, is what a heap of the entries gives. */
struct jsim__hent {
    double key;
    int id;
};

static int jsim__less(const struct jsim__hent *a, const struct jsim__hent *b)
{
    return a->key < b->key || (a->key == b->key && a->id < b->id);
}

struct jsim__runs {
    struct jsim__hent *pool; /* every entry pushed in this run, batch after batch */
    int npool, cappool, sealed;
    int *head, *end; /* per run: its next entry and its end in pool */
    int nruns, capruns;
    /* runs with entries left, keyed by their head entry: key, then tie = id << 32 | run (the ids
     * of entries not yet popped are distinct, so the run never decides the order) */
    struct heap heap;
    int n; /* entries not yet popped */
};

static void jsim__runs_close(struct jsim__runs *q)
{
    mem_free(q->pool);
    mem_free(q->head);
    mem_free(q->end);
    heap_close(&q->heap);
    memset(q, 0, sizeof *q);
}

static int jsim__runs_push(struct jsim__runs *q, double key, int id)
{
    if (q->npool == q->cappool) {
        int cap = q->cappool ? 2 * q->cappool : 64;
        struct jsim__hent *v = mem_reallocarray(q->pool, (size_t)cap, sizeof *v);
        if (v == NULL)
            return ERR_NOMEM;
        q->pool = v;
        q->cappool = cap;
    }
    q->pool[q->npool++] = (struct jsim__hent){key, id};
    q->n++;
    return 0;
}

static int jsim__hent_cmp(const void *a, const void *b)
{
    const struct jsim__hent *x = a, *y = b;
    return jsim__less(x, y) ? -1 : jsim__less(y, x);
}

/* Enters run r into the heap under its head entry. */
static int jsim__runs_enter(struct jsim__runs *q, int r)
{
    const struct jsim__hent *e = &q->pool[q->head[r]];
    return heap_push_tie(&q->heap, heap_key_from_double(e->key),
                         (uint64_t)(uint32_t)e->id << 32 | (uint32_t)r, NULL);
}

/* Makes the entries pushed since the last seal one sorted run. */
static int jsim__runs_seal(struct jsim__runs *q)
{
    int from = q->sealed, to = q->npool;
    if (from == to)
        return 0;
    if (q->nruns == q->capruns) {
        int cap = q->capruns ? 2 * q->capruns : 16;
        int *h = mem_reallocarray(q->head, (size_t)cap, sizeof *h);
        if (h == NULL)
            return ERR_NOMEM;
        q->head = h;
        int *e = mem_reallocarray(q->end, (size_t)cap, sizeof *e);
        if (e == NULL)
            return ERR_NOMEM;
        q->end = e;
        q->capruns = cap;
    }
    if (heap_reserve(&q->heap, (size_t)q->nruns + 1) != 0)
        return ERR_NOMEM;
    int sorted = 1;
    for (int i = from + 1; i < to && sorted; i++)
        sorted = jsim__less(&q->pool[i - 1], &q->pool[i]);
    if (!sorted)
        qsort(q->pool + from, (size_t)(to - from), sizeof *q->pool, jsim__hent_cmp);
    int r = q->nruns++;
    q->head[r] = from;
    q->end[r] = to;
    q->sealed = to;
    return jsim__runs_enter(q, r); /* reserved: cannot fail */
}

/* The run holding the smallest entry; q->n > 0 and everything pushed sealed. */
static int jsim__runs_top(const struct jsim__runs *q)
{
    struct heap_entry e;
    heap_peek(&q->heap, &e);
    return (int)(uint32_t)e.tie;
}

/* The smallest entry; q->n > 0 and everything pushed sealed. */
static const struct jsim__hent *jsim__runs_peek(const struct jsim__runs *q)
{
    return &q->pool[q->head[jsim__runs_top(q)]];
}

/* Removes the smallest entry into *out; q->n > 0 and everything pushed sealed. */
static int jsim__runs_pop(struct jsim__runs *q, struct jsim__hent *out)
{
    int r = jsim__runs_top(q);
    *out = q->pool[q->head[r]++];
    q->n--;
    heap_pop(&q->heap, NULL);
    if (q->head[r] == q->end[r])
        return 0;
    return jsim__runs_enter(q, r); /* the pop made room: cannot fail */
}

struct jsim__run {
    const jsim_job_t *j;
    struct jsim__runs ready;
    int *attempts;
    /* the rest of a run under way (jsim_run_rest); state == NULL for a whole run */
    const uint8_t *state;
    const double *left;
    /* attempts in flight, by the time they end: key that time, tie 2 * task + failed (a task has
     * one attempt in flight, so the order is total); end_at[task] is the time itself */
    struct heap *events;
    double *end_at;
    uint64_t used; /* token units held by the running attempts */
    int *done_q;   /* tasks done before time 0 whose release is pending */
    int ndone_q;
};

static int jsim__event(struct jsim__run *r, double at, int id)
{
    r->end_at[id / 2] = at;
    return heap_push_tie(r->events, heap_key_from_double(at), (uint64_t)id, NULL);
}

static int jsim__run_ready(void *ctx, int t)
{
    struct jsim__run *r = ctx;
    if (r->state != NULL && r->state[t] == JSIM_REST_DONE) {
        r->done_q[r->ndone_q++] = t; /* released by the caller: the release is not reentrant */
        return 0;
    }
    if (r->state != NULL && r->state[t] == JSIM_REST_RUNNING && r->attempts[t] == 0) {
        r->attempts[t] = 1;
        r->used += jsim_job_task_tokens(r->j, t);
        double left = r->left[t] > 0 && isfinite(r->left[t]) ? r->left[t] : 0;
        return jsim__event(r, left, 2 * t);
    }
    return jsim__runs_push(&r->ready, -r->j->prio[t], t);
}

/* jsim_run with a start state (jsim_run_rest) or without (state == NULL); pm may be NULL when
 * trace is. Durations of attempts started in the run are multiplied by scale. */
static int jsim__run(const jsim_job_t *j, const struct jsim_model *m, int tokens,
                     const struct progress_model *pm, struct jsim_rng *rng,
                     struct jsim_trace *trace, const uint8_t *state, const double *left,
                     double scale, struct jsim_run_stats *out)
{
    memset(out, 0, sizeof *out);
    struct jsim__run run = {.j = j, .state = state, .left = left};
    struct jsim__release rel;
    struct heap events;
    heap_init(&events);
    heap_init(&run.ready.heap);
    run.events = &events;
    int *done = mem_calloc((size_t)j->nstages, sizeof *done);
    run.attempts = mem_calloc((size_t)j->ntasks, sizeof *run.attempts);
    run.end_at = mem_calloc((size_t)j->ntasks, sizeof *run.end_at);
    int rc = jsim__release_init(j, &rel);
    if (rc == 0)
        rc = heap_reserve(&events, tokens < j->ntasks ? (size_t)tokens + 1 : (size_t)j->ntasks + 1);
    if (rc == 0 && (done == NULL || run.attempts == NULL || run.end_at == NULL))
        rc = ERR_NOMEM;
    if (rc == 0 && state != NULL &&
        (run.done_q = mem_calloc((size_t)j->ntasks, sizeof *run.done_q)) == NULL)
        rc = ERR_NOMEM;
    if (rc == 0)
        rc = jsim__release_start(j, &rel, jsim__run_ready, &run);
    if (trace != NULL)
        trace->n = 0;
    double now = 0, p = 0;
    int finished = 0, linear = pm != NULL && progress_is_linear(pm);
    /* Tasks done before time 0: released at once, in any order (each is released once). */
    while (rc == 0 && run.ndone_q > 0) {
        int t = run.done_q[--run.ndone_q];
        done[j->task_stage[t]]++;
        finished++;
        rc = jsim__release_task(j, &rel, t, jsim__run_ready, &run);
    }
    uint64_t run_seed = jsim_rng_next(rng);
    /* An event's id encodes the task and whether the attempt fails: 2 * task + failed. */
    while (rc == 0 && finished < j->ntasks) {
        /* Sized tokens: the task at the head of the ready list waits until its units are free
         * (later ones do not overtake it, as the JM's reservation); one larger than the whole
         * allocation runs alone. */
        if ((rc = jsim__runs_seal(&run.ready)) != 0)
            break;
        while (
            run.ready.n > 0 &&
            (run.used == 0 || run.used + jsim_job_task_tokens(j, jsim__runs_peek(&run.ready)->id) <=
                                  (uint64_t)tokens)) {
            struct jsim__hent top;
            if ((rc = jsim__runs_pop(&run.ready, &top)) != 0)
                break;
            int t = top.id;
            const struct jsim_stage_model *sm = &m->stages[j->task_stage[t]];
            /* Draws come from a stream per (run, task, attempt), so runs of the same seed at
             * different allocations see the same run times (common random numbers): the table's
             * columns then differ by the allocation, not by sampling noise. */
            int k = ++run.attempts[t];
            struct jsim_rng ar;
            jsim_rng_seed(&ar, run_seed ^ ((uint64_t)t * 0x9e3779b97f4a7c15ull) ^
                                   ((uint64_t)k * 0xc2b2ae3d27d4eb4full));
            double u_init = jsim_rng_uniform(&ar), u_run = jsim_rng_uniform(&ar);
            double u_fail = jsim_rng_uniform(&ar), u_frac = jsim_rng_uniform(&ar);
            double init = 0, dur;
            if (sm->by_ratio) {
                init = profile_quantile(sm->init_q, u_init);
                dur = j->est[t] * profile_quantile(sm->ratio_q, u_run);
            } else if (sm->from_profile) {
                init = profile_quantile(sm->init_q, u_init);
                dur = profile_quantile(sm->runtime_q, u_run);
            } else {
                dur = j->est[t];
            }
            init *= scale;
            dur *= scale;
            int fail = 0;
            if (sm->fail_prob > 0 && k < JSIM_MAX_ATTEMPTS && u_fail < sm->fail_prob) {
                fail = 1;
                dur *= u_frac;
                out->failures++;
            }
            out->attempts++;
            out->work += init + dur;
            if ((rc = jsim__event(&run, now + init + dur, 2 * t + fail)) != 0)
                break;
            run.used += jsim_job_task_tokens(j, t);
            if (run.used > (uint64_t)out->peak_running)
                out->peak_running = run.used > INT32_MAX ? INT32_MAX : (int)run.used;
        }
        if (rc != 0)
            break;
        struct heap_entry ev;
        if (!heap_pop(&events, &ev)) {
            rc = ERR_STATE; /* nothing runs and nothing is ready: cannot happen once finalized */
            break;
        }
        int t = (int)(ev.tie / 2);
        now = run.end_at[t];
        run.used -= jsim_job_task_tokens(j, t);
        if (ev.tie & 1) {
            rc = jsim__run_ready(&run, t);
            continue;
        }
        int s = j->task_stage[t];
        done[s]++;
        finished++;
        if (trace != NULL) {
            p = linear ? p + progress_task_weight(pm, s) : progress_eval(pm, done);
            trace->t[trace->n] = now;
            trace->p[trace->n] = p > 1 ? 1 : p;
            trace->n++;
        }
        rc = jsim__release_task(j, &rel, t, jsim__run_ready, &run);
        /* a task done before time 0 released only now (its producer ran again) */
        while (rc == 0 && run.ndone_q > 0) {
            int d = run.done_q[--run.ndone_q];
            done[j->task_stage[d]]++;
            finished++;
            rc = jsim__release_task(j, &rel, d, jsim__run_ready, &run);
        }
    }
    out->makespan = now;
    jsim__release_close(&rel);
    jsim__runs_close(&run.ready);
    heap_close(&events);
    mem_free(done);
    mem_free(run.attempts);
    mem_free(run.end_at);
    mem_free(run.done_q);
    return rc;
}

int jsim_run(const jsim_job_t *j, const struct jsim_model *m, int tokens,
             const struct progress_model *pm, struct jsim_rng *rng, struct jsim_trace *trace,
             struct jsim_run_stats *out)
{
    if (j == NULL || m == NULL || pm == NULL || rng == NULL || out == NULL || tokens < 1 ||
        m->nstages != j->nstages || pm->nstages != j->nstages ||
        (trace != NULL && trace->cap < j->ntasks))
        return ERR_INVAL;
    if (!j->finalized)
        return ERR_STATE;
    return jsim__run(j, m, tokens, pm, rng, trace, NULL, NULL, 1.0, out);
}

int jsim_run_rest(const jsim_job_t *j, const struct jsim_model *m, int tokens, const uint8_t *state,
                  const double *left_s, double scale, struct jsim_rng *rng,
                  struct jsim_run_stats *out)
{
    if (j == NULL || m == NULL || state == NULL || left_s == NULL || rng == NULL || out == NULL ||
        tokens < 1 || m->nstages != j->nstages || !(scale > 0) || !isfinite(scale))
        return ERR_INVAL;
    if (!j->finalized)
        return ERR_STATE;
    return jsim__run(j, m, tokens, NULL, rng, NULL, state, left_s, scale, out);
}
