/* matcher_optimal.c - the exact per-batch assignment (Hungarian algorithm, potentials form),
 * the reference the stable and greedy matchers are measured against (Apollo §5.5). */
#include "jm/matcher_internal.h"

#include <math.h>
#include <stdlib.h>

#include "common/err.h"
#include "common/mem.h"

#define MATCHER__MAX_CELLS 10000000.0

/* Solves min-cost assignment of every row of a[r][c] (r <= c, row-major) to distinct columns.
 * row_of_col[j] = row assigned to column j (or SIZE_MAX). */
static int matcher__hungarian(const double *a, size_t r, size_t c, size_t *row_of_col)
{
    double *u = mem_calloc(r + 1, sizeof *u);
    double *v = mem_calloc(c + 1, sizeof *v);
    double *minv = mem_calloc(c + 1, sizeof *minv);
    size_t *p = mem_calloc(c + 1, sizeof *p); /* p[j]: 1-based row in column j, 0 = free */
    size_t *way = mem_calloc(c + 1, sizeof *way);
    unsigned char *used = mem_calloc(c + 1, 1);
    int rc = 0;
    if (u == NULL || v == NULL || minv == NULL || p == NULL || way == NULL || used == NULL) {
        rc = ERR_NOMEM;
        goto out;
    }
    for (size_t i = 1; i <= r; i++) {
        p[0] = i;
        size_t j0 = 0;
        for (size_t j = 0; j <= c; j++) {
            minv[j] = INFINITY;
            used[j] = 0;
        }
        do {
            used[j0] = 1;
            size_t i0 = p[j0], j1 = 0;
            double delta = INFINITY;
            const double *row = a + (i0 - 1) * c;
            for (size_t j = 1; j <= c; j++) {
                if (used[j])
                    continue;
                double cur = row[j - 1] - u[i0] - v[j];
                if (cur < minv[j]) {
                    minv[j] = cur;
                    way[j] = j0;
                }
                if (minv[j] < delta) {
                    delta = minv[j];
                    j1 = j;
                }
            }
            for (size_t j = 0; j <= c; j++) {
                if (used[j]) {
                    u[p[j]] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
        } while (p[j0] != 0);
        do {
            size_t j1 = way[j0];
            p[j0] = p[j1];
            j0 = j1;
        } while (j0 != 0);
    }
    for (size_t j = 1; j <= c; j++)
        row_of_col[j - 1] = p[j] == 0 ? SIZE_MAX : p[j] - 1;
out:
    mem_free(u);
    mem_free(v);
    mem_free(minv);
    mem_free(p);
    mem_free(way);
    mem_free(used);
    return rc;
}

/* The assignment minimising the sum of C among those matching the most tasks, using only pairs
 * with C <= tau. */
static int matcher__optimal(matcher_t *m, const struct matcher_batch *b, double tau,
                            struct matcher_match *out, size_t *nout)
{
    *nout = 0;
    int rc = 0;
    uint32_t ep = matcher__epoch(m);
    /* Columns: the distinct candidate nodes. */
    size_t ncol = 0;
    double maxc = 0;
    for (size_t k = 0; k < (b->ntasks > 0 ? b->off[b->ntasks] : 0); k++) {
        uint32_t node = b->cand[k].node;
        if (m->mark[node] != ep) {
            m->mark[node] = ep;
            m->col[node] = (uint32_t)ncol++;
        }
        if (b->cand[k].cost <= tau && b->cand[k].cost > maxc)
            maxc = b->cand[k].cost;
    }
    if (b->ntasks == 0 || ncol == 0)
        return 0;
    if ((double)b->ntasks * (double)ncol > MATCHER__MAX_CELLS)
        return ERR_TOOBIG;
    uint32_t *node_of_col = mem_calloc(ncol, sizeof *node_of_col);
    if (node_of_col == NULL)
        return ERR_NOMEM;
    for (size_t k = 0; k < b->off[b->ntasks]; k++)
        node_of_col[m->col[b->cand[k].node]] = b->cand[k].node;
    int transpose = b->ntasks > ncol; /* rows must be the smaller side */
    size_t r = transpose ? ncol : b->ntasks, c = transpose ? b->ntasks : ncol;
    /* A missing pair costs more than any assignment of real pairs, so the optimum first matches
       as many tasks as possible, then minimises the sum of C. */
    double big = (maxc + 1.0) * (double)(r + 1) * 4.0;
    double *a = mem_calloc(r * c, sizeof *a);
    size_t *row_of_col = mem_calloc(c, sizeof *row_of_col);
    if (a == NULL || row_of_col == NULL) {
        rc = ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < r * c; i++)
        a[i] = big;
    for (size_t t = 0; t < b->ntasks; t++)
        for (size_t k = b->off[t]; k < b->off[t + 1]; k++) {
            const struct matcher_cand *cd = &b->cand[k];
            if (!(cd->cost < ESTIMATOR_INF) || cd->cost > tau)
                continue;
            size_t j = m->col[cd->node];
            double *cell = transpose ? &a[j * c + t] : &a[t * c + j];
            if (cd->cost < *cell)
                *cell = cd->cost;
        }
    if ((rc = matcher__hungarian(a, r, c, row_of_col)) != 0)
        goto out;
    size_t nmatch = 0;
    for (size_t j = 0; j < c; j++) {
        if (row_of_col[j] == SIZE_MAX)
            continue;
        size_t t = transpose ? j : row_of_col[j];
        size_t col = transpose ? row_of_col[j] : j;
        uint32_t node = node_of_col[col];
        /* find the candidate entry (cost and wait) */
        const struct matcher_cand *best = NULL;
        for (size_t k = b->off[t]; k < b->off[t + 1]; k++)
            if (b->cand[k].node == node && b->cand[k].cost < ESTIMATOR_INF &&
                b->cand[k].cost <= tau && (best == NULL || b->cand[k].cost < best->cost))
                best = &b->cand[k];
        if (best == NULL)
            continue; /* a filler pair: the task stays unmatched */
        out[nmatch++] = (struct matcher_match){t, node, best->cost, best->wait};
    }
    matcher_sort(out, nmatch);
    *nout = nmatch;
out:
    mem_free(node_of_col);
    mem_free(a);
    mem_free(row_of_col);
    return rc;
}

int matcher_optimal(matcher_t *m, const struct matcher_batch *b, struct matcher_match *out,
                    size_t *nout)
{
    *nout = 0;
    int rc = matcher__check(m, b);
    if (rc != 0)
        return rc;
    return matcher__optimal(m, b, ESTIMATOR_INF * 0.5, out, nout);
}

/* Kuhn's augmenting paths: size of a maximum matching using pairs with C <= tau. */
struct matcher__kuhn {
    const struct matcher_batch *b;
    double tau;
    size_t *task_of_node; /* indexed by node; SIZE_MAX = free */
    uint32_t *seen;       /* indexed by node: stamp */
    uint32_t stamp;
};

static int matcher__augment(struct matcher__kuhn *k, size_t t, size_t depth)
{
    if (depth > k->b->ntasks + 1)
        return 0;
    for (size_t i = k->b->off[t]; i < k->b->off[t + 1]; i++) {
        const struct matcher_cand *c = &k->b->cand[i];
        if (!(c->cost < ESTIMATOR_INF) || c->cost > k->tau || k->seen[c->node] == k->stamp)
            continue;
        k->seen[c->node] = k->stamp;
        if (k->task_of_node[c->node] == SIZE_MAX ||
            matcher__augment(k, k->task_of_node[c->node], depth + 1)) {
            k->task_of_node[c->node] = t;
            return 1;
        }
    }
    return 0;
}

static size_t matcher__max_matching(struct matcher__kuhn *k, size_t nnodes)
{
    for (size_t j = 0; j < nnodes; j++)
        k->task_of_node[j] = SIZE_MAX;
    size_t n = 0;
    for (size_t t = 0; t < k->b->ntasks; t++) {
        if (++k->stamp == 0) {
            for (size_t j = 0; j < nnodes; j++)
                k->seen[j] = 0;
            k->stamp = 1;
        }
        n += (size_t)matcher__augment(k, t, 0);
    }
    return n;
}

static int matcher__dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int matcher_optimal_bottleneck(matcher_t *m, const struct matcher_batch *b,
                               struct matcher_match *out, size_t *nout)
{
    *nout = 0;
    int rc = matcher__check(m, b);
    if (rc != 0)
        return rc;
    size_t ne = b->ntasks > 0 ? b->off[b->ntasks] : 0;
    if (ne == 0)
        return 0;
    /* The same size bound as the dense step; it also bounds the augmenting paths' recursion
       depth by min(tasks, nodes) <= sqrt(bound). */
    uint32_t ep = matcher__epoch(m);
    size_t ncol = 0;
    for (size_t i = 0; i < ne; i++)
        if (m->mark[b->cand[i].node] != ep) {
            m->mark[b->cand[i].node] = ep;
            ncol++;
        }
    if ((double)b->ntasks * (double)ncol > MATCHER__MAX_CELLS)
        return ERR_TOOBIG;
    double *costs = mem_calloc(ne, sizeof *costs);
    size_t *task_of_node = mem_calloc(m->nnodes, sizeof *task_of_node);
    uint32_t *seen = mem_calloc(m->nnodes, sizeof *seen);
    if (costs == NULL || task_of_node == NULL || seen == NULL) {
        rc = ERR_NOMEM;
        goto out;
    }
    size_t nc = 0;
    for (size_t i = 0; i < ne; i++)
        if (b->cand[i].cost < ESTIMATOR_INF)
            costs[nc++] = b->cand[i].cost;
    if (nc == 0)
        goto out;
    qsort(costs, nc, sizeof *costs, matcher__dcmp);
    struct matcher__kuhn k = {b, costs[nc - 1], task_of_node, seen, 0};
    size_t want = matcher__max_matching(&k, m->nnodes);
    size_t lo = 0, hi = nc - 1; /* smallest index whose cost still allows `want` matches */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        k.tau = costs[mid];
        if (matcher__max_matching(&k, m->nnodes) >= want)
            hi = mid;
        else
            lo = mid + 1;
    }
    rc = matcher__optimal(m, b, costs[lo], out, nout);
out:
    mem_free(costs);
    mem_free(task_of_node);
    mem_free(seen);
    return rc;
}
