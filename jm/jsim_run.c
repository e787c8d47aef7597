/* jsim_run.c - one simulated run of a job under an allocation (jsim_run, jsim_run_rest): the
 * ready list in priority order, attempts in flight in a heap of their end times (common/heap),
 * failures and retries, sized tokens (Jockey §4.1). The job's shape is in jsim.c. */
#include "jm/jsim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/heap.h"
#include "common/mem.h"
#include "jm/jsim_internal.h"

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
