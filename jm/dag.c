/* dag.c - run-time state of a job's task graph (see dag.h). */
#include "jm/dag.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"

#define DAG__NONE SIZE_MAX

struct dag {
    const struct spec *spec;
    size_t n, ns;
    unsigned char *state;  /* enum dag_state per task */
    size_t *pending;       /* unmet dependencies per task (explicit + closed gate) */
    size_t *gate_pending;  /* per stage: stages in "after" not yet complete */
    size_t *stage_pending; /* per stage: tasks not yet succeeded + closed gate */
    unsigned char *stage_done;
    size_t counts[DAG_NSTATES];
    size_t *stage_counts; /* ns * DAG_NSTATES */
    size_t *doff, *dep;   /* task dependents (CSR) */
    size_t *soff, *sdep;  /* stage dependents (CSR) */
    size_t *stack;        /* ns: completing stages */
    /* Ready list: append-only array with tombstones, compacted lazily when read. */
    size_t *ready;
    size_t *ready_pos; /* index into ready (READY) or running (RUNNING), else DAG__NONE */
    size_t nready_slots, nready_live;
    size_t *running; /* the RUNNING tasks, dense, in no order (dag_running) */
    size_t nrunning;
    unsigned char *held; /* per task: 1 while dag_hold keeps it back (NULL until the first hold) */
    size_t nheld;
};

static const char *const dag__names[DAG_NSTATES] = {"waiting", "ready", "running", "succeeded",
                                                    "failed"};

const char *dag_state_name(enum dag_state st)
{
    return (unsigned)st < DAG_NSTATES ? dag__names[st] : "?";
}

static void dag__set(dag_t *d, size_t t, enum dag_state st)
{
    size_t stage = d->spec->tasks[t].stage;
    enum dag_state old = (enum dag_state)d->state[t];
    if (old == DAG_RUNNING && st != DAG_RUNNING) { /* out of the running set: the last fills in */
        size_t at = d->ready_pos[t], last = d->running[--d->nrunning];
        d->running[at] = last;
        d->ready_pos[last] = at;
        d->ready_pos[t] = DAG__NONE;
    } else if (st == DAG_RUNNING && old != DAG_RUNNING) {
        d->ready_pos[t] = d->nrunning;
        d->running[d->nrunning++] = t;
    }
    d->counts[old]--;
    d->stage_counts[stage * DAG_NSTATES + old]--;
    d->state[t] = (unsigned char)st;
    d->counts[st]++;
    d->stage_counts[stage * DAG_NSTATES + st]++;
}

static void dag__compact(dag_t *d)
{
    size_t w = 0;
    for (size_t i = 0; i < d->nready_slots; i++) {
        size_t t = d->ready[i];
        if (t == DAG__NONE)
            continue;
        d->ready[w] = t;
        d->ready_pos[t] = w++;
    }
    d->nready_slots = w;
}

static void dag__make_ready(dag_t *d, size_t t)
{
    dag__set(d, t, DAG_READY);
    if (d->nready_slots == d->n) /* full of tombstones: there are at most n live entries */
        dag__compact(d);
    d->ready_pos[t] = d->nready_slots;
    d->ready[d->nready_slots++] = t;
    d->nready_live++;
}

static void dag__unready(dag_t *d, size_t t)
{
    d->ready[d->ready_pos[t]] = DAG__NONE;
    d->ready_pos[t] = DAG__NONE;
    d->nready_live--;
}

/* Marks stage j complete and cascades through the barriers that wait for it. */
static size_t dag__complete_stage(dag_t *d, size_t j)
{
    size_t released = 0, top = 0;
    d->stack[top++] = j;
    while (top > 0) {
        size_t k = d->stack[--top];
        d->stage_done[k] = 1;
        for (size_t e = d->soff[k]; e < d->soff[k + 1]; e++) {
            size_t m = d->sdep[e];
            if (--d->gate_pending[m] != 0)
                continue;
            const struct spec_stage *sm = &d->spec->stages[m];
            for (size_t i = 0; i < sm->ntasks; i++) {
                size_t t = sm->tasks[i];
                if (--d->pending[t] == 0) {
                    dag__make_ready(d, t);
                    released++;
                }
            }
            if (--d->stage_pending[m] == 0)
                d->stack[top++] = m;
        }
    }
    return released;
}

static void dag__open_gate(dag_t *d, size_t j)
{
    const struct spec_stage *sj = &d->spec->stages[j];
    for (size_t i = 0; i < sj->ntasks; i++) {
        size_t t = sj->tasks[i];
        if (--d->pending[t] == 0)
            dag__make_ready(d, t);
    }
    if (--d->stage_pending[j] == 0)
        dag__complete_stage(d, j);
}

static int dag__idx_cmp(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

void dag_reset(dag_t *d)
{
    const struct spec *s = d->spec;
    memset(d->counts, 0, sizeof d->counts);
    memset(d->stage_counts, 0, d->ns * DAG_NSTATES * sizeof *d->stage_counts);
    memset(d->stage_done, 0, d->ns);
    if (d->held != NULL)
        memset(d->held, 0, d->n);
    d->nheld = 0;
    d->nready_slots = d->nready_live = 0;
    d->nrunning = 0;
    for (size_t i = 0; i < d->n; i++) {
        d->state[i] = DAG_WAITING;
        d->pending[i] = s->tasks[i].nafter + 1;
        d->ready_pos[i] = DAG__NONE;
        d->stage_counts[s->tasks[i].stage * DAG_NSTATES + DAG_WAITING]++;
    }
    d->counts[DAG_WAITING] = d->n;
    for (size_t j = 0; j < d->ns; j++) {
        d->gate_pending[j] = s->stages[j].nafter;
        d->stage_pending[j] = s->stages[j].ntasks + 1;
    }
    /* Open gates in barrier order so pass-through stages cascade correctly. */
    for (size_t k = 0; k < d->ns; k++) {
        size_t j = s->stage_topo[k];
        if (d->gate_pending[j] == 0 && d->stage_pending[j] == s->stages[j].ntasks + 1)
            dag__open_gate(d, j);
    }
    /* The initial ready list is in spec order. */
    qsort(d->ready, d->nready_slots, sizeof *d->ready, dag__idx_cmp);
    for (size_t i = 0; i < d->nready_slots; i++)
        d->ready_pos[d->ready[i]] = i;
}

int dag_new(const struct spec *spec, dag_t **out)
{
    if (out == NULL)
        return ERR_INVAL;
    *out = NULL;
    if (spec == NULL || spec->ntasks == 0 || spec->topo == NULL)
        return ERR_INVAL;
    dag_t *d = mem_calloc(1, sizeof *d);
    if (d == NULL)
        return ERR_NOMEM;
    size_t n = spec->ntasks, ns = spec->nstages;
    d->spec = spec;
    d->n = n;
    d->ns = ns;
    d->state = mem_calloc(n, 1);
    d->pending = mem_calloc(n, sizeof *d->pending);
    d->gate_pending = mem_calloc(ns, sizeof *d->gate_pending);
    d->stage_pending = mem_calloc(ns, sizeof *d->stage_pending);
    d->stage_done = mem_calloc(ns, 1);
    d->stage_counts = mem_calloc(ns * DAG_NSTATES, sizeof *d->stage_counts);
    d->doff = mem_calloc(n + 1, sizeof *d->doff);
    d->soff = mem_calloc(ns + 1, sizeof *d->soff);
    d->stack = mem_calloc(ns, sizeof *d->stack);
    d->ready = mem_calloc(n, sizeof *d->ready);
    d->ready_pos = mem_calloc(n, sizeof *d->ready_pos);
    d->running = mem_calloc(n, sizeof *d->running);
    if (d->running == NULL || d->state == NULL || d->pending == NULL || d->gate_pending == NULL ||
        d->stage_pending == NULL || d->stage_done == NULL || d->stage_counts == NULL ||
        d->doff == NULL || d->soff == NULL || d->stack == NULL || d->ready == NULL ||
        d->ready_pos == NULL)
        goto nomem;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < spec->tasks[i].nafter; k++)
            d->doff[spec->tasks[i].after[k] + 1]++;
    for (size_t j = 0; j < ns; j++)
        for (size_t k = 0; k < spec->stages[j].nafter; k++)
            d->soff[spec->stages[j].after[k] + 1]++;
    for (size_t i = 0; i < n; i++)
        d->doff[i + 1] += d->doff[i];
    for (size_t j = 0; j < ns; j++)
        d->soff[j + 1] += d->soff[j];
    d->dep = mem_calloc(d->doff[n] + 1, sizeof *d->dep);
    d->sdep = mem_calloc(d->soff[ns] + 1, sizeof *d->sdep);
    if (d->dep == NULL || d->sdep == NULL)
        goto nomem;
    /* Fill using pending/stack as cursors (both are re-initialised by dag_reset). */
    memcpy(d->pending, d->doff, n * sizeof *d->pending);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < spec->tasks[i].nafter; k++)
            d->dep[d->pending[spec->tasks[i].after[k]]++] = i;
    if (ns > 0)
        memcpy(d->stack, d->soff, ns * sizeof *d->stack);
    for (size_t j = 0; j < ns; j++)
        for (size_t k = 0; k < spec->stages[j].nafter; k++)
            d->sdep[d->stack[spec->stages[j].after[k]]++] = j;
    dag_reset(d);
    *out = d;
    return 0;
nomem:
    dag_destroy(&d);
    return ERR_NOMEM;
}

void dag_destroy(dag_t **p)
{
    if (p == NULL || *p == NULL)
        return;
    dag_t *d = *p;
    mem_free(d->state);
    mem_free(d->pending);
    mem_free(d->gate_pending);
    mem_free(d->stage_pending);
    mem_free(d->stage_done);
    mem_free(d->stage_counts);
    mem_free(d->doff);
    mem_free(d->dep);
    mem_free(d->soff);
    mem_free(d->sdep);
    mem_free(d->stack);
    mem_free(d->ready);
    mem_free(d->ready_pos);
    mem_free(d->running);
    mem_free(d->held);
    mem_free(d);
    *p = NULL;
}

const struct spec *dag_spec(const dag_t *dag)
{
    return dag->spec;
}

size_t dag_ntasks(const dag_t *dag)
{
    return dag->n;
}

enum dag_state dag_state(const dag_t *dag, size_t task)
{
    return task < dag->n ? (enum dag_state)dag->state[task] : DAG_NSTATES;
}

size_t dag_count(const dag_t *dag, enum dag_state st)
{
    return (unsigned)st < DAG_NSTATES ? dag->counts[st] : 0;
}

size_t dag_stage_count(const dag_t *dag, size_t stage, enum dag_state st)
{
    if (stage >= dag->ns || (unsigned)st >= DAG_NSTATES)
        return 0;
    return dag->stage_counts[stage * DAG_NSTATES + st];
}

int dag_stage_complete(const dag_t *dag, size_t stage)
{
    return stage < dag->ns && dag->stage_done[stage];
}

const size_t *dag_ready(const dag_t *dag, size_t *n)
{
    /* Logically const: compaction only drops tombstones. */
    dag_t *d = (dag_t *)dag;
    if (d->nready_slots != d->nready_live)
        dag__compact(d);
    *n = d->nready_live;
    return d->ready;
}

const size_t *dag_running(const dag_t *dag, size_t *n)
{
    *n = dag->nrunning;
    return dag->running;
}

int dag_start(dag_t *dag, size_t task)
{
    if (task >= dag->n)
        return ERR_RANGE;
    if (dag->state[task] != DAG_READY)
        return ERR_STATE;
    dag__unready(dag, task);
    dag__set(dag, task, DAG_RUNNING);
    return 0;
}

int dag_requeue(dag_t *dag, size_t task)
{
    if (task >= dag->n)
        return ERR_RANGE;
    if (dag->state[task] != DAG_RUNNING)
        return ERR_STATE;
    dag__make_ready(dag, task);
    return 0;
}

static void dag__finish(dag_t *dag, size_t task, size_t *released);

int dag_succeed(dag_t *dag, size_t task, size_t *released)
{
    if (released != NULL)
        *released = 0;
    if (task >= dag->n)
        return ERR_RANGE;
    if (dag->state[task] != DAG_RUNNING)
        return ERR_STATE;
    dag__finish(dag, task, released);
    return 0;
}

/* The task succeeded (state set here): its dependents and its stage's barrier are released. */
static void dag__finish(dag_t *dag, size_t task, size_t *released)
{
    dag__set(dag, task, DAG_SUCCEEDED);
    size_t rel = 0;
    for (size_t e = dag->doff[task]; e < dag->doff[task + 1]; e++) {
        size_t t = dag->dep[e];
        if (--dag->pending[t] == 0) {
            dag__make_ready(dag, t);
            rel++;
        }
    }
    size_t j = dag->spec->tasks[task].stage;
    if (--dag->stage_pending[j] == 0)
        rel += dag__complete_stage(dag, j);
    if (released != NULL)
        *released = rel;
}

int dag_redo(dag_t *dag, size_t task)
{
    if (task >= dag->n)
        return ERR_RANGE;
    if (dag->state[task] != DAG_SUCCEEDED)
        return ERR_STATE;
    size_t j = dag->spec->tasks[task].stage;
    if (dag->stage_done[j] && dag->soff[j + 1] > dag->soff[j])
        return ERR_STATE; /* a barrier it completed released other stages: not undone */
    for (size_t e = dag->doff[task]; e < dag->doff[task + 1]; e++) {
        enum dag_state st = (enum dag_state)dag->state[dag->dep[e]];
        if (st == DAG_RUNNING || st == DAG_FAILED)
            return ERR_STATE;
    }
    for (size_t e = dag->doff[task]; e < dag->doff[task + 1]; e++) {
        size_t t = dag->dep[e];
        if (dag->state[t] == DAG_SUCCEEDED)
            continue; /* it has consumed the output already */
        if (dag->state[t] == DAG_READY) {
            dag__unready(dag, t);
            dag__set(dag, t, DAG_WAITING);
        }
        dag->pending[t]++;
    }
    if (dag->stage_done[j])
        dag->stage_done[j] = 0;
    dag->stage_pending[j]++;
    dag__make_ready(dag, task);
    return 0;
}

int dag_fail(dag_t *dag, size_t task)
{
    if (task >= dag->n)
        return ERR_RANGE;
    if (dag->state[task] != DAG_RUNNING)
        return ERR_STATE;
    dag__set(dag, task, DAG_FAILED);
    return 0;
}

int dag_done(const dag_t *dag)
{
    return dag->counts[DAG_SUCCEEDED] == dag->n;
}

int dag_failed(const dag_t *dag)
{
    return dag->counts[DAG_FAILED] > 0;
}

const size_t *dag_topo(const dag_t *dag, size_t *n)
{
    *n = dag->n;
    return dag->spec->topo;
}

const size_t *dag_dependents(const dag_t *dag, size_t task, size_t *n)
{
    if (task >= dag->n) {
        *n = 0;
        return NULL;
    }
    *n = dag->doff[task + 1] - dag->doff[task];
    return dag->dep + dag->doff[task];
}

const size_t *dag_stage_dependents(const dag_t *dag, size_t stage, size_t *n)
{
    if (stage >= dag->ns) {
        *n = 0;
        return NULL;
    }
    *n = dag->soff[stage + 1] - dag->soff[stage];
    return dag->sdep + dag->soff[stage];
}

size_t dag_pending(const dag_t *dag, size_t task)
{
    return task < dag->n ? dag->pending[task] : 0;
}

int dag_hold(dag_t *dag, size_t task)
{
    if (task >= dag->n)
        return ERR_RANGE;
    enum dag_state st = (enum dag_state)dag->state[task];
    if ((st != DAG_WAITING && st != DAG_READY) || (dag->held != NULL && dag->held[task]))
        return ERR_STATE;
    if (dag->held == NULL && (dag->held = mem_calloc(dag->n, 1)) == NULL)
        return ERR_NOMEM;
    if (st == DAG_READY) {
        dag__unready(dag, task);
        dag__set(dag, task, DAG_WAITING);
    }
    dag->pending[task]++;
    dag->held[task] = 1;
    dag->nheld++;
    return 0;
}

int dag_held(const dag_t *dag, size_t task)
{
    return task < dag->n && dag->held != NULL && dag->held[task];
}

size_t dag_nheld(const dag_t *dag)
{
    return dag->nheld;
}

int dag_release(dag_t *dag, size_t task)
{
    if (task >= dag->n)
        return ERR_RANGE;
    if (!dag_held(dag, task))
        return ERR_STATE;
    dag->held[task] = 0;
    dag->nheld--;
    if (--dag->pending[task] == 0)
        dag__make_ready(dag, task);
    return 0;
}

int dag_skip(dag_t *dag, size_t task, size_t *released)
{
    if (released != NULL)
        *released = 0;
    if (task >= dag->n)
        return ERR_RANGE;
    if (!dag_held(dag, task) || dag->pending[task] != 1)
        return ERR_STATE;
    dag->held[task] = 0;
    dag->nheld--;
    dag->pending[task] = 0;
    dag__finish(dag, task, released);
    return 0;
}
