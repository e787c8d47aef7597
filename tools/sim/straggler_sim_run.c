/* straggler_sim_run.c - `paddock-sim stragglers`' experiment: every workload, `runs` seeds, the
 * four modes and the no-straggler baseline that sets each run's deadline (straggler_sim.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "tools/sim/cluster.h"
#include "tools/sim/straggler_cluster.h"
#include "tools/sim/straggler_sim.h"

void straggler_sim_config_default(struct straggler_sim_config *c)
{
    memset(c, 0, sizeof *c);
    c->workloads = "tests/data/wfcommons";
    c->runs = 10;
    c->seed = 1;
    c->slack = 1.2;
    straggler_cond_default(&c->cond);
}

static int ssr__cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank quantile of n sorted values. */
static double ssr__q(const double *v, size_t n, double q)
{
    if (!n)
        return 0;
    size_t r = (size_t)ceil(q * (double)n);
    if (r < 1)
        r = 1;
    if (r > n)
        r = n;
    return v[r - 1];
}

/* One job's run on the configured engine. */
static int ssr__job(const struct straggler_sim_config *c, const struct spec *sp,
                    enum straggler_mode m, const struct straggler_cond *cond, uint64_t seed,
                    struct straggler_run *out)
{
    if (c->engine == STRAGGLER_ENGINE_SLICE)
        return straggler_sim_job(sp, m, cond, seed, out);
    return straggler_cluster_job(sp, m, cond, seed, out);
}

int straggler_sim_run(const struct straggler_sim_config *c, struct straggler_sim_result *out,
                      char *msg, size_t cap)
{
    memset(out, 0, sizeof *out);
    if (c->runs < 1 || !(c->slack >= 1))
        return err_fmt(msg, cap, ERR_INVAL, "runs must be >= 1 and slack >= 1");
    struct cluster_workloads *w = NULL;
    int rc = cluster_workloads_load(c->workloads, 1.0, 0, 0, &w, msg, cap);
    if (rc)
        return rc;
    size_t nw = cluster_workloads_count(w), total = 0;
    for (size_t i = 0; i < nw; i++)
        if (!c->only || strstr(cluster_workloads_name(w, i), c->only))
            total++;
    if (!total) {
        cluster_workloads_destroy(&w);
        return err_fmt(msg, cap, ERR_NOTFOUND, "no workload matches '%s'", c->only);
    }
    total *= c->runs;
    double *mk[STRAGGLER_NMODES], *slow[STRAGGLER_NMODES];
    double work[STRAGGLER_NMODES] = {0}, useful[STRAGGLER_NMODES] = {0};
    size_t missed[STRAGGLER_NMODES] = {0};
    memset(mk, 0, sizeof mk);
    memset(slow, 0, sizeof slow);
    for (int m = 0; m < STRAGGLER_NMODES; m++)
        if (!(mk[m] = mem_calloc(total, sizeof(double))) ||
            !(slow[m] = mem_calloc(total, sizeof(double))))
            rc = ERR_NOMEM;
    struct straggler_cond base = c->cond;
    base.straggler_prob = 0;
    base.slow_factor = 1;
    size_t k = 0;
    for (size_t i = 0; i < nw && !rc; i++) {
        if (c->only && !strstr(cluster_workloads_name(w, i), c->only))
            continue;
        out->workloads++;
        struct spec *sp = NULL;
        rc = cluster_workloads_make(w, i, c->seed, c->cond.nodes, 1, &sp, msg, cap);
        for (size_t r = 0; r < c->runs && !rc; r++, k++) {
            uint64_t seed = c->seed * 1000003u + i * 1009u + r;
            struct straggler_run br;
            rc = ssr__job(c, sp, STRAGGLER_NONE, &base, seed, &br);
            double deadline = br.makespan_s * c->slack;
            for (int m = 0; m < STRAGGLER_NMODES && !rc; m++) {
                struct straggler_run sr;
                rc = ssr__job(c, sp, (enum straggler_mode)m, &c->cond, seed, &sr);
                if (rc)
                    break;
                mk[m][k] = sr.makespan_s;
                slow[m][k] = br.makespan_s > 0 ? sr.makespan_s / br.makespan_s : 1;
                missed[m] += sr.makespan_s > deadline;
                work[m] += sr.work_s;
                useful[m] += sr.useful_s;
                out->m[m].copies_started += sr.copies_started;
                out->m[m].copies_won += sr.copies_won;
                out->m[m].moves += sr.moves;
                out->m[m].dups_started += sr.dups_started;
                out->m[m].dups_won += sr.dups_won;
                out->m[m].spec_started += sr.spec_started;
                out->m[m].spec_won += sr.spec_won;
                out->m[m].copies_gated += sr.copies_gated;
                out->m[m].slowdown_mean += slow[m][k];
            }
            if (rc)
                err_fmt(msg, cap, rc, "%s, run %zu: %s", cluster_workloads_name(w, i), r,
                        err_text(rc));
        }
        spec_destroy(&sp);
    }
    if (!rc) {
        out->runs = k;
        for (int m = 0; m < STRAGGLER_NMODES; m++) {
            struct straggler_mode_result *res = &out->m[m];
            qsort(mk[m], k, sizeof(double), ssr__cmp);
            qsort(slow[m], k, sizeof(double), ssr__cmp);
            res->makespan_p50_s = ssr__q(mk[m], k, 0.5);
            res->makespan_p99_s = ssr__q(mk[m], k, 0.99);
            res->slowdown_p50 = ssr__q(slow[m], k, 0.5);
            res->slowdown_p99 = ssr__q(slow[m], k, 0.99);
            res->slowdown_mean = k ? res->slowdown_mean / (double)k : 0;
            res->missed_fraction = k ? (double)missed[m] / (double)k : 0;
            res->extra_work_fraction = useful[m] > 0 ? (work[m] - useful[m]) / useful[m] : 0;
            res->work_vs_none = work[0] > 0 ? work[m] / work[0] : 0;
        }
    }
    for (int m = 0; m < STRAGGLER_NMODES; m++) {
        mem_free(mk[m]);
        mem_free(slow[m]);
    }
    cluster_workloads_destroy(&w);
    return rc;
}
