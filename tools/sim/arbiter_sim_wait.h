/* arbiter_sim_wait.h - where an admitted deadline job's time went on the cluster engine (private
 * to tools/sim; arbiter_sim_wait.c says how the critical chain is walked). */
#ifndef PADDOCK_TOOLS_SIM_ARBITER_SIM_WAIT_H
#define PADDOCK_TOOLS_SIM_ARBITER_SIM_WAIT_H

#include <stddef.h>
#include <stdint.h>

#include "jm/spec.h"
#include "tools/sim/cluster.h"

/* A job's grants over time as its JM learned them: v[i] tokens from t[i] on (borrowed). */
struct arbiter_wait_grants {
    const double *t;
    const uint32_t *v;
    size_t n;
};

/* Seconds along the job's critical chain, from its arrival to its last task's end. */
struct arbiter_wait {
    size_t chain;       /* tasks on it */
    double start;       /* arrival to the chain's first task ready */
    double run;         /* successful attempts' run times */
    double lost;        /* earlier attempts of chain tasks (preempted or failed) */
    size_t lost_opp;    /* ... those attempts that started beyond the job's grant */
    size_t lost_reg;    /* ... and within it (regular, downgraded or killed later) */
    double jm_short;    /* ready to queued while the job's grant was all in use (its attempts
                           queued or running then held every token it had) */
    double jm_other;    /* ready to queued at a full grant (placement, dispatch), and gaps */
    double pn_own;      /* queued to started, the node busy with nothing of another job's */
    double pn_other[3]; /* ... behind another job's attempt: [0] no deadline, [1] admitted
                           deadline job, [2] refused deadline job (best effort) */
};

/* Fills *out for job `job` (its spec sp, width, grants g; arrival[j]: job j's arrival) from the
 * trace tr[0..ntr); cls[j] is job j's class as in pn_other. 0, or -1 when out of memory. */
int arbiter_wait_job(const struct cluster_trace_rec *tr, size_t ntr, uint32_t job,
                     const struct spec *sp, const double *arrival, uint32_t width,
                     const struct arbiter_wait_grants *g, const uint8_t *cls,
                     struct arbiter_wait *out);

#endif
