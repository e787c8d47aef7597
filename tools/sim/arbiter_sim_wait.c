/* arbiter_sim_wait.c - where an admitted deadline job's time went on the cluster engine
 * (`paddock-sim arbiter --trace`; the trace's times are from each job's arrival, docs/arbiter.md
 * "Where admitted jobs lose time").
 *
 * The job's critical chain is walked back from its last task through the trace: each task's
 * predecessor on the chain is the one of its dependencies (explicit or through its stage's) that
 * succeeded last. Along the chain the job's time splits into: the start (arrival to the first
 * task ready), run (the successful attempts' run times), lost (a chain task's earlier attempts:
 * from its first ready to its last attempt's ready), JM wait (ready to queued at a PN; split by
 * whether every token the job was granted then was in use by its own queued or running attempts:
 * the task waited for a token) and PN wait (queued to started; split by whether another job's
 * attempt occupied the node when it was queued). Figures only: nothing here changes a run.
 */
#include <math.h>
#include <stdio.h>

#include "common/mem.h"
#include "tools/sim/arbiter_sim_internal.h"
#include "tools/sim/arbiter_sim_wait.h"

/* Is task p a dependency of task k (explicit, or a task of a stage k's stage waits for)? */
static int aw__dep(const struct spec *sp, size_t k, size_t p)
{
    const struct spec_task *t = &sp->tasks[k];
    for (size_t a = 0; a < t->nafter; a++)
        if (t->after[a] == p)
            return 1;
    const struct spec_stage *sg = &sp->stages[t->stage];
    for (size_t a = 0; a < sg->nafter; a++)
        if (sg->after[a] == sp->tasks[p].stage)
            return 1;
    return 0;
}

static double aw__grant_at(const struct arbiter_wait_grants *g, double t)
{
    double v = 0;
    for (size_t i = 0; i < g->n && g->t[i] <= t + 1e-9; i++)
        v = g->v[i];
    return v;
}

int arbiter_wait_job(const struct cluster_trace_rec *tr, size_t ntr, uint32_t job,
                     const struct spec *sp, const double *arrival, uint32_t width,
                     const struct arbiter_wait_grants *g, const uint8_t *cls,
                     struct arbiter_wait *out)
{
    *out = (struct arbiter_wait){0};
    size_t nt = sp->ntasks;
    /* per task: its successful attempt and its first ready */
    size_t *ok = mem_alloc((nt ? nt : 1) * sizeof *ok);
    double *first = mem_alloc((nt ? nt : 1) * sizeof *first);
    if (ok == NULL || first == NULL) {
        mem_free(ok);
        mem_free(first);
        return -1;
    }
    for (size_t k = 0; k < nt; k++) {
        ok[k] = SIZE_MAX;
        first[k] = INFINITY;
    }
    size_t last = SIZE_MAX;
    for (size_t r = 0; r < ntr; r++) {
        const struct cluster_trace_rec *x = &tr[r];
        if (x->job != job || x->task >= nt)
            continue;
        if (x->ready_s < first[x->task])
            first[x->task] = x->ready_s;
        if (x->outcome == 1 && ok[x->task] == SIZE_MAX) {
            ok[x->task] = r;
            if (last == SIZE_MAX || x->end_s > tr[last].end_s)
                last = r;
        }
    }
    size_t k = last != SIZE_MAX ? tr[last].task : SIZE_MAX;
    while (k != SIZE_MAX) {
        const struct cluster_trace_rec *x = &tr[ok[k]];
        out->chain++;
        out->run += x->end_s - x->start_s;
        out->lost += x->ready_s - first[k];
        /* the chain task's lost attempts: did each start beyond the job's grant (its queued
           and running attempts already held every token: opportunistic work) or within it
           (a regular attempt, downgraded later, then preempted)? */
        for (size_t r = 0; r < ntr; r++) {
            const struct cluster_trace_rec *y = &tr[r];
            if (y->job != job || y->task != k || y->outcome == 1)
                continue;
            double busy = 0;
            for (size_t q = 0; q < ntr; q++) {
                const struct cluster_trace_rec *z = &tr[q];
                if (q != r && z->job == job && z->queued_s <= y->start_s + 1e-9 &&
                    z->end_s > y->start_s + 1e-9)
                    busy += sp->tasks[z->task].cpu;
            }
            if (busy + 1e-9 >= aw__grant_at(g, y->start_s + arrival[job]))
                out->lost_opp++;
            else
                out->lost_reg++;
        }
        double jm = x->queued_s - x->ready_s, pn = x->start_s - x->queued_s;
        /* the tokens the job had in use when the task became ready: its attempts queued or
           running then (a queued task holds its token) */
        double busy = 0;
        for (size_t r = 0; r < ntr && jm > 1e-9; r++) {
            const struct cluster_trace_rec *y = &tr[r];
            if (y->job == job && y->queued_s <= x->ready_s + 1e-9 && y->end_s > x->ready_s + 1e-9)
                busy += sp->tasks[y->task].cpu;
        }
        if (jm > 1e-9 && busy + 1e-9 >= aw__grant_at(g, x->ready_s + arrival[job]))
            out->jm_short += jm;
        else
            out->jm_other += jm;
        int other = -1;
        for (size_t r = 0; r < ntr && pn > 1e-9 && other < 0; r++) {
            const struct cluster_trace_rec *y = &tr[r];
            double at = x->queued_s + arrival[job], dy = arrival[y->job];
            if (y->job != job && y->node == x->node && y->start_s + dy <= at + 1e-9 &&
                y->end_s + dy > at + 1e-9)
                other = cls[y->job] < 3 ? cls[y->job] : 0;
        }
        if (other >= 0)
            out->pn_other[other] += pn;
        else
            out->pn_own += pn;
        size_t pred = SIZE_MAX;
        for (size_t p = 0; p < nt; p++)
            if (p != k && ok[p] != SIZE_MAX && tr[ok[p]].end_s <= first[k] + 1e-6 &&
                (pred == SIZE_MAX || tr[ok[p]].end_s > tr[ok[pred]].end_s) && aw__dep(sp, k, p))
                pred = p;
        if (pred == SIZE_MAX) {
            out->start = first[k];
            break;
        }
        /* the gap between the predecessor's end and this task's ready: the JM's bookkeeping */
        out->jm_other += first[k] - tr[ok[pred]].end_s;
        k = pred;
    }
    mem_free(ok);
    mem_free(first);
    return 0;
}
