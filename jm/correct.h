/* correct.h - the JM's deferred correction of a placement (Apollo §3.4, "duplicate scheduling").
 *
 * A task is placed on the wait-time matrices the JM had at the time; they may have been stale,
 * another JM may have queued work on the same node at the same moment, a task ahead of it may
 * run longer than estimated. Apollo re-evaluates a queued task when fresh information arrives
 * (the PN's answer to the creation, or while the task waits) and schedules it again elsewhere
 * when its expected wait turns out much higher than the one it was placed on and another node
 * would now do clearly better.
 *
 * Paddock's JM keeps one attempt per task in flight, so a correction *moves* the task: the
 * queued attempt is cancelled at its PN and the task placed again (docs/jm-placement.md). This
 * module is the rule deciding when; the daemon (jm/jmd_sched.c) feeds it.
 *
 * For a regular task still queued at its node (not started):
 *   left_wait = what it still has to wait there: the PN's own expected wait for it (its queue
 *               simulated forward, reported in TASK_STATUS) minus the time since that report;
 *               without one, the node's matrix wait minus the task's own share of it;
 *   left      = left_wait + its run time R.
 *   1. it has been moved fewer than max_moves times;
 *   2. it has waited at least min_wait_s, and waited + left_wait is at least wait_factor times
 *      the wait it was placed on (the placement underestimated the wait);
 *   3. the best placement now, on another node, would finish at least max(margin_s, gain x left)
 *      sooner: its I + W + R (the estimate without the failure term, like left) is that much
 *      under left.
 *
 * Pure: no clock, no sockets; times in seconds from the caller.
 */
#ifndef PADDOCK_JM_CORRECT_H
#define PADDOCK_JM_CORRECT_H

#include <stdint.h>

struct correct_config {
    double min_wait_s;  /* never move a task that waited less (default 1 s) */
    double wait_factor; /* the wait must exceed the placed one this many times (default 2) */
    double gain;        /* the move must save this fraction of what is left (default 0.25) */
    double margin_s;    /* ... and at least this much (default 0.5 s) */
    uint32_t max_moves; /* moves per task (default 3) */
};

void correct_config_default(struct correct_config *cfg);

/* What the JM knows about one queued task (public value). */
struct correct_input {
    double waited_s;       /* time since it was sent to its node */
    double placed_wait_s;  /* the wait W it was placed on */
    double pn_wait_s;      /* the PN's expected wait for it at its last report, < 0: none */
    double since_report_s; /* time since that report */
    double cur_wait_s;     /* its node's matrix wait now, for a task of its size */
    double own_share_s;    /* the part of cur_wait_s that is the task itself (R x cpu share) */
    double run_s;          /* its estimated run time R */
    double alt_c_s;        /* I + W + R at the best other node (>= 1e300: none) */
    uint32_t moves;        /* times it was moved already */
};

enum correct_verdict {
    CORRECT_STAY = 0,     /* fine where it is */
    CORRECT_MOVE = 1,     /* move it to the other node */
    CORRECT_TOO_SOON = 2, /* rules 1 or 2 say no whatever the other nodes offer */
};

/* Applies the rule. When `left_s` is not NULL it receives `left` (for logs). NULL cfg:
 * defaults. A caller may ask first with alt_c_s = 1e300 and look for another node only when
 * the answer is not CORRECT_TOO_SOON. */
enum correct_verdict correct_check(const struct correct_config *cfg, const struct correct_input *in,
                                   double *left_s);

#endif
