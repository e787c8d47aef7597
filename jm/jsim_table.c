/* jsim_table.c - the remaining-time table C(p, a) from many simulated runs (Jockey §4.1):
 * "from each simulation, say at allocation a that finishes in time T, we compute for all discrete
 * t in [0, T] the progress of the job p_t at time t and the remaining time to completion
 * t_c = T - t. Clearly, t_c = C(p_t, a)". */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/jsim.h"
#include "jm/jsim_internal.h"

struct jsim_table {
    int nallocs;
    int alloc[JSIM_MAX_ALLOCS];
    int buckets;
    double *q; /* [nallocs][buckets][JSIM_NQ] remaining-time quantiles */
};

void jsim_table_config_default(struct jsim_table_config *c)
{
    c->runs = 24;
    c->buckets = 100;
    c->samples_per_run = 200;
    c->max_tokens = 0;
    c->nallocs = 40;
}

void jsim_table_destroy(jsim_table_t **p)
{
    if (p == NULL || *p == NULL)
        return;
    mem_free((*p)->q);
    mem_free(*p);
    *p = NULL;
}

struct jsim__sample {
    int b;
    float v;
};

static int jsim__sample_cmp(const void *x, const void *y)
{
    const struct jsim__sample *a = x, *b = y;
    if (a->b != b->b)
        return a->b < b->b ? -1 : 1;
    return (a->v > b->v) - (a->v < b->v);
}

/* Every allocation up to 10, then geometric steps to max (inclusive), at most n values. */
static int jsim__grid(int max, int n, int *out)
{
    int k = 0;
    for (int a = 1; a <= max && a <= 10 && k < n; a++)
        out[k++] = a;
    if (max <= 10 || k >= n)
        return k;
    int left = n - k;
    double ratio = pow((double)max / 10.0, 1.0 / left);
    if (ratio < 1.08)
        ratio = 1.08;
    double x = 10;
    while (k < n - 1) {
        x *= ratio;
        int a = (int)lround(x);
        if (a >= max)
            break;
        if (a > out[k - 1])
            out[k++] = a;
    }
    out[k++] = max;
    return k;
}

static double *jsim__cell(const jsim_table_t *t, int i, int b)
{
    return &t->q[((size_t)i * (size_t)t->buckets + (size_t)b) * JSIM_NQ];
}

int jsim_table_build(const jsim_job_t *j, const struct jsim_model *m,
                     const struct progress_model *pm, const struct jsim_table_config *cfg_in,
                     struct jsim_rng *rng, jsim_table_t **out, struct jsim_table_cost *cost,
                     char *msg, size_t cap)
{
    *out = NULL;
    struct jsim_table_config cfg;
    if (cfg_in != NULL)
        cfg = *cfg_in;
    else
        jsim_table_config_default(&cfg);
    if (j == NULL || m == NULL || pm == NULL || rng == NULL || cfg.runs < 1 || cfg.runs > 100000 ||
        cfg.buckets < 1 || cfg.buckets > JSIM_MAX_BUCKETS || cfg.samples_per_run < 1 ||
        cfg.samples_per_run > 100000 || cfg.max_tokens < 0 || cfg.nallocs < 1)
        return err_fmt(msg, cap, ERR_INVAL, "jsim: bad table configuration");
    if (!j->finalized)
        return err_fmt(msg, cap, ERR_STATE, "jsim: job not finalized");
    if (cfg.nallocs > JSIM_MAX_ALLOCS)
        cfg.nallocs = JSIM_MAX_ALLOCS;
    struct jsim_table_cost c = {0};
    struct jsim_run_stats st;
    struct jsim_trace tr = {0};
    struct jsim__sample *smp = NULL;
    jsim_table_t *t = mem_calloc(1, sizeof *t);
    tr.t = mem_calloc((size_t)j->ntasks, sizeof *tr.t);
    tr.p = mem_calloc((size_t)j->ntasks, sizeof *tr.p);
    tr.cap = j->ntasks;
    size_t nsmp_cap = (size_t)cfg.runs * (size_t)(cfg.samples_per_run + 1);
    smp = mem_calloc(nsmp_cap, sizeof *smp);
    int rc = 0;
    if (t == NULL || tr.t == NULL || tr.p == NULL || smp == NULL) {
        rc = err_fmt(msg, cap, ERR_NOMEM, "jsim: out of memory");
        goto fail;
    }
    /* Peak parallelism with unlimited tokens bounds the useful allocations. */
    rc = jsim_run(j, m, j->ntasks, pm, rng, NULL, &st);
    if (rc != 0) {
        err_fmt(msg, cap, rc, "jsim: run failed: %s", err_text(rc));
        goto fail;
    }
    c.runs++;
    c.task_attempts += st.attempts;
    c.peak_parallelism = st.peak_running;
    int max = cfg.max_tokens > 0 ? cfg.max_tokens : st.peak_running;
    if (max < 1)
        max = 1;
    t->nallocs = jsim__grid(max, cfg.nallocs, t->alloc);
    t->buckets = cfg.buckets;
    t->q = mem_calloc((size_t)t->nallocs * (size_t)t->buckets * JSIM_NQ, sizeof *t->q);
    if (t->q == NULL) {
        rc = err_fmt(msg, cap, ERR_NOMEM, "jsim: out of memory");
        goto fail;
    }
    /* Run r uses the same seed at every allocation (common random numbers). */
    struct jsim_rng base = *rng;
    for (int r = 0; r < cfg.runs; r++)
        jsim_rng_next(rng);
    for (int i = 0; i < t->nallocs; i++) {
        size_t ns = 0;
        struct jsim_rng rr = base;
        for (int r = 0; r < cfg.runs; r++) {
            rc = jsim_run(j, m, t->alloc[i], pm, &rr, &tr, &st);
            if (rc != 0) {
                err_fmt(msg, cap, rc, "jsim: run failed: %s", err_text(rc));
                goto fail;
            }
            c.runs++;
            c.task_attempts += st.attempts;
            double T = st.makespan;
            int k = 0; /* trace entries at or before the sampled instant */
            for (int s = 0; s <= cfg.samples_per_run; s++) {
                double at = T * s / cfg.samples_per_run;
                while (k < tr.n && tr.t[k] <= at && s < cfg.samples_per_run)
                    k++;
                /* The final instant is the completion itself: progress 1, nothing remains. */
                double p = s == cfg.samples_per_run ? 1.0 : k > 0 ? tr.p[k - 1] : 0.0;
                int b = (int)(p * t->buckets);
                if (b >= t->buckets)
                    b = t->buckets - 1;
                smp[ns].b = b;
                smp[ns].v = (float)(T - at);
                ns++;
            }
        }
        c.samples += (long)ns;
        qsort(smp, ns, sizeof *smp, jsim__sample_cmp);
        size_t lo = 0;
        for (int b = 0; b < t->buckets; b++) {
            size_t hi = lo;
            while (hi < ns && smp[hi].b == b)
                hi++;
            double *q = jsim__cell(t, i, b);
            if (hi == lo) {
                q[0] = -1; /* empty: filled below */
                continue;
            }
            size_t cnt = hi - lo;
            for (int k2 = 0; k2 < JSIM_NQ; k2++) {
                double x = (k2 + 0.5) / JSIM_NQ * (double)(cnt - 1);
                size_t a = (size_t)x;
                double w = x - (double)a;
                double va = smp[lo + a].v;
                double vb = a + 1 < cnt ? smp[lo + a + 1].v : va;
                q[k2] = va + w * (vb - va);
            }
            lo = hi;
        }
        /* Buckets no run passed through (progress jumped over them) take the nearest
         * lower-progress bucket's distribution (more remaining: the pessimistic side). */
        int last = -1;
        for (int b = 0; b < t->buckets; b++) {
            double *q = jsim__cell(t, i, b);
            if (q[0] >= 0) {
                last = b;
                continue;
            }
            int from = last;
            if (from < 0)
                for (from = b + 1; from < t->buckets && jsim__cell(t, i, from)[0] < 0; from++)
                    ;
            if (from >= 0 && from < t->buckets)
                memcpy(q, jsim__cell(t, i, from), JSIM_NQ * sizeof *q);
            else
                memset(q, 0, JSIM_NQ * sizeof *q);
        }
    }
    /* More tokens never make the job slower in expectation; remove sampling noise that says so,
     * which would otherwise make the controller's choice jitter. */
    for (int i = 1; i < t->nallocs; i++)
        for (int b = 0; b < t->buckets; b++) {
            double *q = jsim__cell(t, i, b), *prev = jsim__cell(t, i - 1, b);
            for (int k = 0; k < JSIM_NQ; k++)
                if (q[k] > prev[k])
                    q[k] = prev[k];
        }
    c.nallocs = t->nallocs;
    if (cost != NULL)
        *cost = c;
    mem_free(tr.t);
    mem_free(tr.p);
    mem_free(smp);
    *out = t;
    return 0;
fail:
    mem_free(tr.t);
    mem_free(tr.p);
    mem_free(smp);
    jsim_table_destroy(&t);
    return rc;
}

int jsim_table_nallocs(const jsim_table_t *t)
{
    return t->nallocs;
}

int jsim_table_alloc(const jsim_table_t *t, int i)
{
    return i >= 0 && i < t->nallocs ? t->alloc[i] : 0;
}

int jsim_table_max_tokens(const jsim_table_t *t)
{
    return t->alloc[t->nallocs - 1];
}

/* Quantiles at progress p for grid allocation i, interpolated between bucket centres. */
static void jsim__at_p(const jsim_table_t *t, int i, double p, double *out)
{
    double x = p * t->buckets - 0.5;
    if (x < 0)
        x = 0;
    if (x > t->buckets - 1)
        x = t->buckets - 1;
    int b0 = (int)x;
    int b1 = b0 + 1 < t->buckets ? b0 + 1 : b0;
    double w = x - b0;
    const double *q0 = jsim__cell(t, i, b0), *q1 = jsim__cell(t, i, b1);
    for (int k = 0; k < JSIM_NQ; k++)
        out[k] = q0[k] + w * (q1[k] - q0[k]);
}

int jsim_table_predict(const jsim_table_t *t, double p, double a, double *out)
{
    if (!(p >= 0))
        p = 0;
    if (p > 1)
        p = 1;
    int n = t->nallocs;
    if (!(a > t->alloc[0]))
        a = t->alloc[0];
    if (a >= t->alloc[n - 1]) {
        jsim__at_p(t, n - 1, p, out);
        return JSIM_NQ;
    }
    int i = 0;
    while (i + 1 < n && t->alloc[i + 1] <= a)
        i++;
    if (t->alloc[i] == a || i + 1 >= n) {
        jsim__at_p(t, i, p, out);
        return JSIM_NQ;
    }
    double lo[JSIM_NQ], hi[JSIM_NQ];
    jsim__at_p(t, i, p, lo);
    jsim__at_p(t, i + 1, p, hi);
    double inv = 1.0 / a, inv0 = 1.0 / t->alloc[i], inv1 = 1.0 / t->alloc[i + 1];
    double w = (inv0 - inv) / (inv0 - inv1);
    for (int k = 0; k < JSIM_NQ; k++)
        out[k] = lo[k] + w * (hi[k] - lo[k]);
    return JSIM_NQ;
}
