/* round.c - a JM's scheduling round: the ready queue's entries and a round's batch (round.h). */
#include "jm/round.h"

#include <string.h>

#include "common/mem.h"

#include "common/err.h"

int round_ready_add(readyq_t *rq, const attempt_t *att, const struct spec *sp, const double *prio,
                    size_t task)
{
    if (attempt_is_held(att, task))
        return 0; /* backing off after a failure: attempt_due releases it */
    int rc = readyq_push(rq, task, prio[task], sp->tasks[task].input_bytes);
    return rc == 0 ? 1 : rc == ERR_EXISTS ? 0 : rc;
}

int round_ready_back(readyq_t *rq, const dag_t *dag, const attempt_t *att, const struct spec *sp,
                     const double *prio, const size_t *tasks, size_t n)
{
    int first = 0;
    for (size_t i = 0; i < n; i++) {
        size_t t = tasks[i];
        if (dag_state(dag, t) != DAG_READY)
            continue;
        int rc = round_ready_add(rq, att, sp, prio, t);
        if (rc < 0 && first == 0)
            first = rc;
    }
    return first;
}

int round_can_place(const dispatch_t *d, uint64_t yieldable)
{
    return dispatch_next(d) != DISPATCH_NONE || yieldable > 0;
}

size_t round_batch(const dispatch_t *d, uint64_t yieldable, size_t max_batch)
{
    struct attempt_free f = attempt_free(d, 0, 0);
    uint64_t head = f.regular + f.opportunistic + yieldable;
    return max_batch > ROUND_SLACK && head < max_batch - ROUND_SLACK ? (size_t)head + ROUND_SLACK
                                                                     : max_batch;
}

void round_job_close(struct round_job *rj)
{
    attempt_destroy(&rj->att);
    place_destroy(&rj->place);
    readyq_destroy(&rj->rq);
    dispatch_destroy(&rj->disp);
    estimator_destroy(&rj->est);
    dag_destroy(&rj->dag);
    mem_free(rj->task_bl);
    mem_free(rj->stage_prio);
    mem_free(rj->matches);
    memset(rj, 0, sizeof *rj);
}
