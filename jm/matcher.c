/* matcher.c - candidate sets, the stable matcher, the greedy matcher and the quality order
 * (see matcher.h). The exact optimum is in matcher_optimal.c. */
#include "jm/matcher.h"
#include "jm/matcher_internal.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"

void matcher_cand_config_default(struct matcher_cand_config *cfg)
{
    cfg->significant_frac = 0.1;
    cfg->max_rack_nodes = 16;
    cfg->nrandom = 2;
    cfg->all_nodes_max = 0;
}

int matcher_new(size_t nnodes, matcher_t **out)
{
    *out = NULL;
    matcher_t *m = mem_calloc(1, sizeof *m);
    if (m == NULL)
        return ERR_NOMEM;
    if (matcher_reserve(m, nnodes) != 0) {
        matcher_destroy(&m); /* frees whichever scratch arrays were allocated */
        return ERR_NOMEM;
    }
    *out = m;
    return 0;
}

void matcher_destroy(matcher_t **p)
{
    if (p == NULL || *p == NULL)
        return;
    matcher_t *m = *p;
    mem_free(m->taken);
    mem_free(m->prop);
    mem_free(m->prop_task);
    mem_free(m->prop_saving);
    mem_free(m->mark);
    mem_free(m->col);
    mem_free(m->best);
    mem_free(m->left);
    mem_free(m->touched);
    mem_free(m->used_cpu);
    mem_free(m->used_mem);
    mem_free(m->used);
    mem_free(m->props);
    mem_free(m);
    *p = NULL;
}

static int matcher__grow(void **p, size_t n, size_t size)
{
    void *q = mem_reallocarray(*p, n, size);
    if (q == NULL)
        return ERR_NOMEM;
    *p = q;
    return 0;
}

int matcher_reserve(matcher_t *m, size_t nnodes)
{
    if (nnodes <= m->nnodes && m->taken != NULL)
        return 0;
    size_t n = nnodes < 16 ? 16 : nnodes;
    if (matcher__grow((void **)&m->taken, n, sizeof *m->taken) != 0 ||
        matcher__grow((void **)&m->prop, n, sizeof *m->prop) != 0 ||
        matcher__grow((void **)&m->prop_task, n, sizeof *m->prop_task) != 0 ||
        matcher__grow((void **)&m->prop_saving, n, sizeof *m->prop_saving) != 0 ||
        matcher__grow((void **)&m->mark, n, sizeof *m->mark) != 0 ||
        matcher__grow((void **)&m->col, n, sizeof *m->col) != 0 ||
        matcher__grow((void **)&m->touched, n, sizeof *m->touched) != 0 ||
        matcher__grow((void **)&m->used_cpu, n, sizeof *m->used_cpu) != 0 ||
        matcher__grow((void **)&m->used_mem, n, sizeof *m->used_mem) != 0 ||
        matcher__grow((void **)&m->used, n, sizeof *m->used) != 0)
        return ERR_NOMEM;
    for (size_t i = m->nnodes; i < n; i++) {
        m->taken[i] = 0;
        m->prop[i] = 0;
        m->mark[i] = 0;
        m->used[i] = 0;
    }
    m->nnodes = n;
    return 0;
}

static int matcher__reserve_tasks(matcher_t *m, size_t ntasks)
{
    if (ntasks <= m->ntasks_cap)
        return 0;
    if (matcher__grow((void **)&m->best, ntasks, sizeof *m->best) != 0 ||
        matcher__grow((void **)&m->left, ntasks, sizeof *m->left) != 0 ||
        matcher__grow((void **)&m->props, ntasks, sizeof *m->props) != 0)
        return ERR_NOMEM;
    m->ntasks_cap = ntasks;
    return 0;
}

uint32_t matcher__epoch(matcher_t *m)
{
    if (m->epoch == UINT32_MAX) {
        memset(m->taken, 0, m->nnodes * sizeof *m->taken);
        memset(m->prop, 0, m->nnodes * sizeof *m->prop);
        memset(m->mark, 0, m->nnodes * sizeof *m->mark);
        memset(m->used, 0, m->nnodes * sizeof *m->used);
        m->epoch = 0;
    }
    return ++m->epoch;
}

int matcher__check(const matcher_t *m, const struct matcher_batch *b)
{
    if (b->ntasks > 0 && (b->off == NULL || b->cand == NULL))
        return ERR_INVAL;
    for (size_t i = 0; i < b->ntasks; i++) {
        if (b->off[i + 1] < b->off[i])
            return ERR_INVAL;
        for (size_t k = b->off[i]; k < b->off[i + 1]; k++)
            if (b->cand[k].node >= m->nnodes)
                return ERR_INVAL;
    }
    return 0;
}

size_t matcher_candidates(matcher_t *m, const view_t *view, const struct estimator_task *t,
                          const struct matcher_cand_config *cfg, const double *draws, size_t ndraws,
                          uint32_t *out, size_t cap)
{
    size_t nn = view_count(view), k = 0;
    if (cap == 0 || nn == 0 || matcher_reserve(m, nn) != 0)
        return 0;
    uint32_t ep = matcher__epoch(m);
    uint32_t racks[64];
    size_t nracks = 0;
#define MATCHER__ADD(node)                                                                         \
    do {                                                                                           \
        uint32_t n_ = (node);                                                                      \
        const struct view_node *vn_ = view_node(view, n_);                                         \
        if (k < cap && vn_ != NULL && vn_->up && m->mark[n_] != ep) {                              \
            m->mark[n_] = ep;                                                                      \
            out[k++] = n_;                                                                         \
        }                                                                                          \
    } while (0)
    /* A small cluster: every up node. Sampling is for 20,000 nodes; on four, two random picks
       miss the one node with room half the time, and the task queues behind work elsewhere. */
    if (nn <= cfg->all_nodes_max) {
        for (size_t i = 0; i < nn; i++)
            MATCHER__ADD((uint32_t)i);
        return k;
    }
    double total = (double)t->input_bytes;
    for (size_t i = 0; i < t->ninputs && total > 0; i++) {
        const struct estimator_input *in = &t->inputs[i];
        if ((double)in->bytes < cfg->significant_frac * total || in->bytes == 0)
            continue;
        for (size_t r = 0; r < in->nnodes; r++) {
            if (in->nodes[r] < 0 || (size_t)in->nodes[r] >= nn)
                continue;
            MATCHER__ADD((uint32_t)in->nodes[r]);
            uint32_t rack = view_node(view, (uint32_t)in->nodes[r])->rack;
            int seen = 0;
            for (size_t q = 0; q < nracks; q++)
                seen |= racks[q] == rack;
            if (!seen && nracks < sizeof racks / sizeof racks[0])
                racks[nracks++] = rack;
        }
    }
    double d0 = ndraws > 0 ? draws[0] : 0.0;
    for (size_t q = 0; q < nracks; q++) {
        size_t rn;
        const uint32_t *rv = view_rack_nodes(view, racks[q], &rn);
        if (rn == 0)
            continue;
        size_t start = (size_t)(d0 * (double)rn) % rn;
        size_t take = cfg->max_rack_nodes < rn ? cfg->max_rack_nodes : rn;
        for (size_t i = 0; i < take; i++)
            MATCHER__ADD(rv[(start + i) % rn]);
    }
    /* Nodes holding the task's files (§2.3: "locality should be based on where those files are
       cached rather than input location" when the files outweigh the input). */
    if (t->ncached > 0 && t->cached_nodes != NULL) {
        size_t start = (size_t)(d0 * (double)t->ncached) % t->ncached;
        size_t take = cfg->max_rack_nodes < t->ncached ? cfg->max_rack_nodes : t->ncached;
        for (size_t i = 0; i < take; i++)
            if (t->cached_nodes[(start + i) % t->ncached] < nn)
                MATCHER__ADD(t->cached_nodes[(start + i) % t->ncached]);
    }
    size_t nl;
    const uint32_t *light = view_light(view, &nl);
    /* Distinct picks: a pick that lands on a node already a candidate (or down) takes the next
       one of the list, so a small cluster still offers two choices (a retry can avoid the node
       that failed). */
    const uint32_t *pool = nl > 0 ? light : NULL;
    size_t np = nl > 0 ? nl : nn;
    for (size_t i = 0; i < cfg->nrandom && 1 + i < ndraws; i++) {
        size_t at = (size_t)(draws[1 + i] * (double)np) % np;
        for (size_t probe = 0, had = k; probe < np && probe < 64 && k == had; probe++)
            MATCHER__ADD(pool ? pool[(at + probe) % np] : (uint32_t)((at + probe) % np));
    }
#undef MATCHER__ADD
    return k;
}

static int matcher__cmp(const void *a, const void *b)
{
    const struct matcher_match *x = a, *y = b;
    if (x->wait != y->wait)
        return x->wait < y->wait ? -1 : 1;
    if (x->cost != y->cost)
        return x->cost < y->cost ? -1 : 1;
    return x->task < y->task ? -1 : x->task > y->task;
}

void matcher_sort(struct matcher_match *v, size_t n)
{
    qsort(v, n, sizeof *v, matcher__cmp);
}

/* Room batches: a node is open to task t while it has accepted nothing in the batch or t's
 * request fits beside what it accepted (a small tolerance for sums of fractional cores). */
static int matcher__open(const matcher_t *m, const struct matcher_room *room,
                         const struct matcher_room *need, uint32_t ep, uint32_t node, size_t t)
{
    if (m->used[node] != ep)
        return 1;
    const struct matcher_room *r = &room[node], *q = &need[t];
    return m->used_cpu[node] + q->cpu <= r->cpu + 1e-9 &&
           m->used_mem[node] + q->mem_mb <= r->mem_mb + 1e-9;
}

static void matcher__accept(matcher_t *m, const struct matcher_room *q, uint32_t ep, uint32_t node)
{
    if (m->used[node] != ep) {
        m->used[node] = ep;
        m->used_cpu[node] = m->used_mem[node] = 0;
    }
    m->used_cpu[node] += q->cpu;
    m->used_mem[node] += q->mem_mb;
}

/* Whether saving x beats saving y at a node: by more than MATCHER_SAVING_TIE_S, or within it
 * and x's task comes earlier in the batch (higher priority). Two tasks competing for the one
 * node with room usually have the same next-best node, so their savings are that node's wait
 * plus the estimator's deliberate random term (jm/estimator.h, Apollo §3.4): a difference that
 * small is noise, and letting it decide gave a job's free slot to any of its ready tasks, a
 * critical one no more often than the others. */
static bool matcher__beats(double x, size_t tx, double y, size_t ty)
{
    if (x == y || fabs(x - y) <= MATCHER_SAVING_TIE_S)
        return tx < ty;
    return x > y;
}

/* A node's proposals together, the best saving first (matcher__beats). */
static int matcher__prop_cmp(const void *a, const void *b)
{
    const struct matcher__prop *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    if (x->task == y->task)
        return 0;
    return matcher__beats(x->saving, x->task, y->saving, y->task) ? -1 : 1;
}

int matcher_stable_room(matcher_t *m, const struct matcher_batch *b,
                        const struct matcher_room *room, const struct matcher_room *need,
                        int max_iter, struct matcher_match *out, size_t *nout)
{
    *nout = 0;
    int rc = matcher__check(m, b);
    if (rc != 0)
        return rc;
    if (max_iter < 1 || room == NULL || (need == NULL && b->ntasks > 0))
        return ERR_INVAL;
    if ((rc = matcher__reserve_tasks(m, b->ntasks)) != 0)
        return rc;
    uint32_t ep = matcher__epoch(m);
    size_t nleft = 0, nmatch = 0;
    for (size_t i = 0; i < b->ntasks; i++)
        m->left[nleft++] = i;
    for (int it = 0; it < max_iter && nleft > 0; it++) {
        size_t np = 0;
        for (size_t li = 0; li < nleft; li++) {
            size_t t = m->left[li];
            double c1 = ESTIMATOR_INF, c2 = ESTIMATOR_INF;
            size_t bi = SIZE_MAX;
            for (size_t k = b->off[t]; k < b->off[t + 1]; k++) {
                const struct matcher_cand *c = &b->cand[k];
                if (!(c->cost < ESTIMATOR_INF) || !matcher__open(m, room, need, ep, c->node, t))
                    continue;
                if (c->cost < c1) {
                    c2 = c1;
                    c1 = c->cost;
                    bi = k;
                } else if (c->cost < c2) {
                    c2 = c->cost;
                }
            }
            m->best[t] = bi;
            if (bi == SIZE_MAX)
                continue;
            double saving = c2 >= ESTIMATOR_INF ? INFINITY : c2 - c1;
            m->props[np++] = (struct matcher__prop){b->cand[bi].node, t, saving};
        }
        if (np == 0)
            break;
        qsort(m->props, np, sizeof *m->props, matcher__prop_cmp);
        for (size_t i = 0; i < np; i++) {
            const struct matcher__prop *p = &m->props[i];
            if (!matcher__open(m, room, need, ep, p->node, p->task))
                continue; /* withdrawn: it proposes elsewhere in the next iteration */
            const struct matcher_cand *c = &b->cand[m->best[p->task]];
            matcher__accept(m, &need[p->task], ep, p->node);
            out[nmatch++] = (struct matcher_match){p->task, p->node, c->cost, c->wait};
            m->best[p->task] = SIZE_MAX - 1; /* matched */
        }
        size_t w = 0;
        for (size_t li = 0; li < nleft; li++)
            if (m->best[m->left[li]] != SIZE_MAX - 1)
                m->left[w++] = m->left[li];
        nleft = w;
    }
    matcher_sort(out, nmatch);
    *nout = nmatch;
    return 0;
}

int matcher_stable(matcher_t *m, const struct matcher_batch *b, int max_iter,
                   struct matcher_match *out, size_t *nout)
{
    *nout = 0;
    int rc = matcher__check(m, b);
    if (rc != 0)
        return rc;
    if (max_iter < 1)
        return ERR_INVAL;
    if ((rc = matcher__reserve_tasks(m, b->ntasks)) != 0)
        return rc;
    uint32_t batch_ep = matcher__epoch(m);
    size_t nleft = 0, nmatch = 0;
    for (size_t i = 0; i < b->ntasks; i++)
        m->left[nleft++] = i;
    for (int it = 0; it < max_iter && nleft > 0; it++) {
        uint32_t it_ep = matcher__epoch(m);
        size_t ntouched = 0;
        for (size_t li = 0; li < nleft; li++) {
            size_t t = m->left[li];
            double c1 = ESTIMATOR_INF, c2 = ESTIMATOR_INF;
            size_t bi = SIZE_MAX;
            for (size_t k = b->off[t]; k < b->off[t + 1]; k++) {
                const struct matcher_cand *c = &b->cand[k];
                if (m->taken[c->node] == batch_ep || !(c->cost < ESTIMATOR_INF))
                    continue;
                if (c->cost < c1) {
                    c2 = c1;
                    c1 = c->cost;
                    bi = k;
                } else if (c->cost < c2) {
                    c2 = c->cost;
                }
            }
            m->best[t] = bi;
            if (bi == SIZE_MAX)
                continue;
            double saving = c2 >= ESTIMATOR_INF ? INFINITY : c2 - c1;
            uint32_t node = b->cand[bi].node;
            if (m->prop[node] != it_ep) {
                m->prop[node] = it_ep;
                m->prop_task[node] = t;
                m->prop_saving[node] = saving;
                m->touched[ntouched++] = node;
            } else if (matcher__beats(saving, t, m->prop_saving[node], m->prop_task[node])) {
                m->prop_task[node] = t;
                m->prop_saving[node] = saving;
            }
        }
        if (ntouched == 0)
            break;
        for (size_t i = 0; i < ntouched; i++) {
            uint32_t node = m->touched[i];
            size_t t = m->prop_task[node];
            const struct matcher_cand *c = &b->cand[m->best[t]];
            m->taken[node] = batch_ep;
            out[nmatch++] = (struct matcher_match){t, node, c->cost, c->wait};
            m->best[t] = SIZE_MAX - 1; /* matched */
        }
        size_t w = 0;
        for (size_t li = 0; li < nleft; li++)
            if (m->best[m->left[li]] != SIZE_MAX - 1)
                m->left[w++] = m->left[li];
        nleft = w;
    }
    matcher_sort(out, nmatch);
    *nout = nmatch;
    return 0;
}

int matcher_greedy(matcher_t *m, const struct matcher_batch *b, struct matcher_match *out,
                   size_t *nout)
{
    *nout = 0;
    int rc = matcher__check(m, b);
    if (rc != 0)
        return rc;
    uint32_t ep = matcher__epoch(m);
    size_t nmatch = 0;
    for (size_t t = 0; t < b->ntasks; t++) {
        size_t bi = SIZE_MAX;
        double c1 = ESTIMATOR_INF;
        for (size_t k = b->off[t]; k < b->off[t + 1]; k++) {
            const struct matcher_cand *c = &b->cand[k];
            if (m->taken[c->node] != ep && c->cost < c1) {
                c1 = c->cost;
                bi = k;
            }
        }
        if (bi == SIZE_MAX)
            continue;
        m->taken[b->cand[bi].node] = ep;
        out[nmatch++] =
            (struct matcher_match){t, b->cand[bi].node, b->cand[bi].cost, b->cand[bi].wait};
    }
    matcher_sort(out, nmatch);
    *nout = nmatch;
    return 0;
}
