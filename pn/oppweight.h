/* oppweight.h - the PN's pick of the next opportunistic task, fair across jobs (Apollo §3.5,
 * "Randomized Allocation Mechanism"; issue 15).
 *
 * From Apollo §3.5: "When a PN has spare capacity and the regular queue is empty, the PN picks a
 * random task to execute from the opportunistic-task queue [...] We further enhance the system
 * by allowing each scheduler to increase the weight of an opportunistic task during random
 * selection, to compensate for the reduction in the number of tasks. [...] The total weight of
 * all opportunistic tasks issued by the job must not exceed its opportunistic allowance."
 *
 * A flat weighted pick over tasks (pn/queue.c today, every weight 1) hands a job a share of the
 * node in proportion to how many tasks it queued there: a job with 2 opportunistic tasks behind
 * one with 200 gets 1% of the picks. This picker draws in two levels:
 *   1. a job, with probability proportional to its weight here: the mean weight of its eligible
 *      tasks (so queuing more tasks does not raise a job's share; with every weight 1 each job
 *      with eligible work gets an equal share);
 *   2. one of that job's eligible tasks, with probability proportional to the task's weight.
 * A JM sets its tasks' weight from its token allocation (oppweight_job_weight), so that on a
 * node the jobs present share the opportunistic picks in proportion to their tokens, Apollo's
 * stated goal ("shared fairly among jobs, proportionally to jobs' token allocation"). The weight
 * is clamped to [OPPWEIGHT_MIN, OPPWEIGHT_MAX] here, so no JM can take more than
 * OPPWEIGHT_MAX / OPPWEIGHT_MIN times another's share whatever it claims.
 *
 * Pure: the random draw comes from the caller. */
#ifndef PADDOCK_PN_OPPWEIGHT_H
#define PADDOCK_PN_OPPWEIGHT_H

#include <stddef.h>
#include <stdint.h>

#define OPPWEIGHT_MIN 0.01
#define OPPWEIGHT_MAX 100.0

/* One queued opportunistic task as the picker sees it (public value). */
struct oppweight_cand {
    uint64_t job;  /* the job's key (any stable number: a hash of its id) */
    double weight; /* the task's weight (<= 0 or NaN: 1), clamped to [MIN, MAX] */
    int eligible;  /* 1 when it fits the free resources now */
};

/* Picks among the eligible candidates with one uniform draw in [0, 1) (outside: 0). Returns the
 * index chosen, or -1 when none is eligible. O(n x jobs) for up to OPPWEIGHT_STACK distinct
 * jobs (on the stack, no allocation); past that, an O(n^2) scan, still without allocation. */
#define OPPWEIGHT_STACK 64
long oppweight_pick(const struct oppweight_cand *c, size_t n, double draw);

/* The probability that oppweight_pick chooses candidate i (for tests and reports). */
double oppweight_prob(const struct oppweight_cand *c, size_t n, size_t i);

/* The weight a JM gives its opportunistic tasks: its tokens relative to a reference allocation
 * (ref_tokens > 0, the cluster's typical grant), clamped to [OPPWEIGHT_MIN, OPPWEIGHT_MAX]. */
double oppweight_job_weight(uint32_t tokens, double ref_tokens);

#endif
