/* grant.c - a JM's tokens: demand, tail, allowance, costs (grant.h). */
#include "jm/grant.h"

#include <math.h>
#include <string.h>

#include "common/mem.h"
#include "jm/grain.h"
#include "jm/shape.h"
#include "rm/arbiter.h"

uint64_t grant_tokens_of(uint64_t units, uint32_t unit)
{
    if (unit == 0)
        unit = 1;
    return units / unit + (units % unit != 0);
}

uint32_t grant_demand(const dag_t *dag, const dispatch_t *d, uint32_t unit, uint32_t max_tokens)
{
    size_t n = 0;
    const size_t *ready = dag_ready(dag, &n);
    uint64_t units = dispatch_regular_units(d) + dispatch_opportunistic_units(d);
    for (size_t i = 0; i < n; i++)
        units += dispatch_cost(d, ready[i]);
    uint64_t tokens = grant_tokens_of(units, unit);
    return tokens >= max_tokens ? max_tokens + 1 : (uint32_t)tokens + 1;
}

uint32_t grant_tail(const dag_t *dag, const dispatch_t *d, size_t ntasks, uint32_t unit,
                    uint32_t target)
{
    uint64_t units = 0, cap = (uint64_t)target * (unit ? unit : 1);
    for (size_t i = 0; i < ntasks && units * 2 <= cap; i++)
        if (dag_state(dag, i) != DAG_SUCCEEDED)
            units += dispatch_cost(d, i);
    uint64_t left = grant_tokens_of(units, unit); /* tokens that cover the unfinished tasks */
    if (left == 0 || target <= 1 || left * 2 > target)
        return target;
    return (uint32_t)left;
}

double grant_node_tokens(double cpu, uint64_t mem_mb, double token_cpu, uint64_t token_mem_mb)
{
    if (!(token_cpu > 0))
        token_cpu = ARBITER_TOKEN_CPU_DEFAULT;
    if (token_mem_mb == 0)
        token_mem_mb = ARBITER_TOKEN_MEM_MB_DEFAULT;
    double by_cpu = cpu > 0 ? cpu / token_cpu : 0;
    double by_mem = (double)mem_mb / (double)token_mem_mb;
    return floor((by_cpu < by_mem ? by_cpu : by_mem) + 1e-9);
}

uint32_t grant_beyond(const view_t *v, double token_cpu, uint64_t token_mem_mb, uint32_t capacity)
{
    double tokens = 0;
    for (size_t i = 0; i < view_count(v); i++) {
        const struct view_node *n = view_node(v, (uint32_t)i);
        if (n != NULL && n->up)
            tokens += grant_node_tokens(n->cpu, n->mem_mb, token_cpu, token_mem_mb);
    }
    double beyond = tokens - (double)capacity;
    return beyond >= (double)UINT32_MAX ? UINT32_MAX : beyond > 0 ? (uint32_t)beyond : 0;
}

int grant_allowance(dispatch_t *d, double opp_factor, uint32_t granted, uint32_t capacity,
                    uint32_t beyond)
{
    double allow = opp_factor * (double)granted;
    if (capacity > 0) {
        double spare = (capacity > granted ? (double)(capacity - granted) : 0) + (double)beyond;
        if (allow > spare)
            allow = spare;
    }
    if (!(allow > 0))
        allow = 0;
    dispatch_set_factor(d, granted > 0 ? allow / (double)granted : 0.0);
    return allow >= (double)INT32_MAX ? INT32_MAX : (int)floor(allow);
}

int grant_take(const dispatch_t *d)
{
    return (dispatch_regular_units(d) > dispatch_tokens(d) ? GRANT_DOWNGRADE : 0) | GRANT_UPGRADE;
}

double grant_left(double est_s, double spec_s, int running, double ran_s, double *estimate)
{
    double r = est_s > 0 ? est_s : spec_s;
    *estimate = r;
    if (running)
        r -= ran_s;
    return r > 0 ? r : 0;
}

int grant_set_costs(dispatch_t *d, const struct spec *sp, double token_cpu, uint64_t token_mem_mb)
{
    for (size_t i = 0; i < sp->ntasks; i++) {
        int rc = dispatch_set_cost(
            d, i, grain_task_units(sp->tasks[i].cpu, sp->tasks[i].mem_mb, token_cpu, token_mem_mb));
        if (rc != 0)
            return rc;
    }
    return 0;
}

uint32_t grant_width(const struct spec *sp, const dispatch_t *d, uint32_t unit, uint32_t max_tokens)
{
    if (max_tokens < 1)
        max_tokens = 1;
    uint64_t widest = 1; /* dispatcher units */
    size_t n;
    dag_t *dag = NULL;
    size_t *wave = mem_calloc(sp->ntasks ? sp->ntasks : 1, sizeof *wave);
    uint32_t *units = mem_calloc(sp->ntasks ? sp->ntasks : 1, sizeof *units);
    if (!wave || !units || dag_new(sp, &dag) != 0) {
        mem_free(wave);
        mem_free(units);
        return 1;
    }
    for (;;) { /* in waves */
        const size_t *ready = dag_ready(dag, &n);
        if (n == 0)
            break;
        uint64_t u = 0;
        for (size_t i = 0; i < n; i++)
            u += dispatch_cost(d, ready[i]);
        if (u > widest)
            widest = u;
        memcpy(wave, ready, n * sizeof *wave);
        for (size_t i = 0; i < n; i++) {
            (void)dag_start(dag, wave[i]); /* ready tasks of a fresh copy: cannot fail */
            (void)dag_succeed(dag, wave[i], NULL);
        }
    }
    dag_destroy(&dag);
    mem_free(wave);
    /* in time, at the dispatcher's units: tasks smaller than a token share one (jm/grain.h) */
    uint64_t peak = 0;
    for (size_t i = 0; i < sp->ntasks; i++)
        units[i] = dispatch_cost(d, i);
    if (shape_peak_units(sp, units, &peak) == 0 && peak > widest)
        widest = peak;
    mem_free(units);
    uint64_t tokens = grant_tokens_of(widest, unit);
    return tokens > max_tokens ? max_tokens : tokens < 1 ? 1 : (uint32_t)tokens;
}
