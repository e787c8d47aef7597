/* queue_internal.h - shared between pn/queue.c (the queues, running work, graces and the
 * simulation of expected starts) and pn/queue_pick.c (what starts next: backfill, the job's own
 * reorders and class trades, swaps and preemptions). Not for use outside pn/queue*.c. */
#ifndef PADDOCK_PN_QUEUE_INTERNAL_H
#define PADDOCK_PN_QUEUE_INTERNAL_H

#include "pn/loadprof.h"
#include "pn/queue.h"

#define QUEUE__EPS 1e-9

typedef struct queue__run {
    queue_task_t t;
    double start;
    double grace_until; /* downgraded: not preempted before this (0: no grace) */
    int preempting;
} queue__run_t;

typedef struct queue__vec {
    queue_task_t *v;
    size_t n, cap;
} queue__vec_t;

struct queue {
    queue_config_t cfg;
    queue__vec_t reg, opp;
    struct oppweight_cand *cand; /* scratch for the opportunistic pick, cap_cand entries */
    size_t cap_cand;
    queue__run_t *run;
    size_t nrun, caprun;
    double cpu_used, mem_used;
    loadprof_t prof; /* scratch for backfill decisions */
    loadprof_t cmp;  /* scratch for the reorder check (queue__reorder) */
    double *res;     /* reservations before and after a reorder, 2 x capres */
    size_t capres;
    /* Changes other than a push at the tail of the regular queue (or a hold) bump gen. The
     * simulation of the whole regular queue is kept in `tail` (made at tail_now, over tail_n
     * tasks, at generation tail_gen): a task pushed at the tail moves no reservation ahead of
     * it, so its expected start is a fit in that profile (queue_expected_start_tail). */
    uint64_t gen, tail_gen;
    loadprof_t tail;
    double tail_now;
    size_t tail_n;
    int tail_ok;
    /* The largest id ever pushed: a push of a larger one (the PN numbers its tasks upwards)
     * cannot repeat an id, so it skips the duplicate check's scans of the whole queue. */
    uint64_t max_id;
};

static inline double queue__est(const queue_t *q, const queue_task_t *t)
{
    return t->est_s > 0 ? t->est_s : q->cfg.default_est_s;
}

static inline int queue__in_grace(const queue__run_t *r, double now)
{
    return r->t.klass == QUEUE_OPPORTUNISTIC && now < r->grace_until;
}

static inline int queue__fits_free(const queue_t *q, const queue_task_t *t)
{
    return !t->held && q->cpu_used + t->cpu <= q->cfg.cpus + QUEUE__EPS &&
           q->mem_used + t->mem_mb <= q->cfg.mem_mb + QUEUE__EPS;
}

/* Appends a copy of t to v. ERR_NOMEM leaves v as it was. */
int queue__vec_push(queue__vec_t *v, const queue_task_t *t);
/* Removes entry i (< v->n) of v, keeping the order of the rest. */
void queue__vec_remove(queue__vec_t *v, size_t i);
/* Starts entry i of `from` (q->reg or q->opp) at `now`, copying it to *out when out is set.
 * ERR_NOMEM starts nothing. */
int queue__start(queue_t *q, queue__vec_t *from, size_t i, double now, queue_task_t *out);
/* Resets p to the profile of regular work running at `now` (pn/queue.c). */
int queue__running_profile(const queue_t *q, double now, loadprof_t *p);

#endif
