/* correct.h - the JM's deferred correction of a placement (Apollo §3.4, "duplicate scheduling")
 * and the choice of the task a freed token upgrades (§3.5, "task upgrade").
 *
 * A task is placed on the wait-time matrices the JM had at the time; they may have been stale,
 * another JM may have queued work on the same node at the same moment, a task ahead of it may
 * run longer than estimated. Apollo re-evaluates a queued task when fresh information arrives
 * (the PN's answer to the creation, or while the task waits) and schedules it again elsewhere
 * when its expected wait turns out much higher than the one it was placed on and another node
 * would now do clearly better.
 *
 * correct_check is the move rule: the queued attempt is cancelled at its PN and the task placed
 * again (docs/jm-placement.md). correct_decide, below, is Apollo's full rule with the choice of
 * move or duplicate, the one the daemon applies (jm/daemon/jmd_spec.c; docs/stragglers.md:
 * duplicate is the default).
 *
 * correct_check, for a regular task still queued at its node (not started):
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

#include <stddef.h>
#include <stdint.h>

#define CORRECT_SCALE 0.25 /* min_wait_s and margin_s are at most this x the task's run time */

struct correct_config {
    double min_wait_s;   /* never move a task that waited less (default 1 s; at most
                            CORRECT_SCALE x its run time) */
    double wait_factor;  /* the wait must exceed the placed one this many times (default 2) */
    double gain;         /* the move must save this fraction of what is left (default 0.25) */
    double margin_s;     /* ... and at least this much (default 0.5 s; at most CORRECT_SCALE x
                            its run time) */
    uint32_t max_moves;  /* moves per task (default 3) */
    double stage_factor; /* conditions (ii)/(iii): x the stage's average wait (default 1) */
    uint32_t max_dups;   /* duplicates per task (default 1) */
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

/* --- Apollo's three conditions, and move or duplicate (issue 15). ---
 *
 * From Apollo §3.4: "The scheduler re-evaluates the decision if (i) the updated expected wait
 * time is significantly higher than the original; (ii) the expected wait time is greater than the
 * average among the tasks in the same stage; (iii) the elapsed wait time is already greater than
 * the average. [...] Any change in the decision triggers scheduling a duplicate task to a new
 * desired server. Duplicates are discarded when one task starts."
 *
 * With left_wait and left as above and expected = waited + left_wait:
 *   (i)   waited >= min_wait_s and expected >= wait_factor x placed_wait_s (correct_check's 2);
 *   (ii)  expected >= min_wait_s and expected > stage_factor x stage_avg_wait_s;
 *   (iii) waited >= min_wait_s and waited > stage_factor x stage_avg_wait_s;
 * (stage_avg_wait_s < 0: no average yet, (ii) and (iii) do not hold). When one holds, the
 * decision is re-evaluated: the best node other than its own must finish at least
 * max(margin_s, gain x left) sooner (correct_check's 3). Then the action is the mode's:
 *   CORRECT_MODE_MOVE: cancel the queued attempt and place the task again (moves < max_moves);
 *   CORRECT_MODE_DUPLICATE: queue a second attempt there and keep the first; whichever starts
 *     first wins and the other is discarded (jm/speculate.h, speculate_task_started with
 *     discard); dups < max_dups. A discarded duplicate never ran: it costs a queue slot, no work.
 *     A task whose spec forbids copies (no_copies) is moved instead (moves < max_moves).
 *     So is a task whose duplicate would get no class now (no_room): a job holding all its tokens
 *     in queued tasks could start no duplicate, and the task found a node that would finish it
 *     much sooner, tick after tick, while it waited (cycles in the simulator: a task queued 3 s
 *     behind its job's siblings while two nodes sat idle). Moved, it takes its own token there.
 * docs/stragglers.md compares the two (paddock-sim stragglers). */
enum correct_mode {
    CORRECT_MODE_MOVE = 0,
    CORRECT_MODE_DUPLICATE = 1,
};

enum correct_action {
    CORRECT_NONE = 0,
    CORRECT_ACT_MOVE = 1,
    CORRECT_ACT_DUPLICATE = 2,
};

/* Bits of the conditions that held (correct_decide's *conds). */
#define CORRECT_COND_WAIT_GREW   1u /* (i) */
#define CORRECT_COND_ABOVE_STAGE 2u /* (ii) */
#define CORRECT_COND_WAITED_LONG 4u /* (iii) */

struct correct_dup_input {
    struct correct_input q;  /* as for correct_check (q.moves: moves so far) */
    double stage_avg_wait_s; /* average wait of the stage's tasks (started: realised; queued:
                                expected); < 0 when unknown */
    uint32_t dups;           /* duplicates of this task so far */
    int no_copies;           /* the spec's "speculate": false: never two attempts at once, so
                                CORRECT_MODE_DUPLICATE moves it instead (both duplicates may
                                start before the JM hears of either) */
    int no_room;             /* 1: a second attempt would get no class now (no free token, no
                                opportunistic allowance: attempt_copy_class says none), so
                                CORRECT_MODE_DUPLICATE moves it instead, its own token with it */
};

/* Applies the three conditions and the re-evaluation. *conds (may be NULL) gets the bits that
 * held, *left_s (may be NULL) `left`. NULL cfg: defaults. As with correct_check, a caller may
 * ask first with q.alt_c_s = 1e300 and look for another node only when *conds is not 0. */
enum correct_action correct_decide(const struct correct_config *cfg, enum correct_mode mode,
                                   const struct correct_dup_input *in, unsigned *conds,
                                   double *left_s);

/* --- Upgrade with re-match (Apollo §3.5; issue 15). ---
 *
 * From Apollo §3.5: "It is not required that an opportunistic task be upgraded on the same
 * machine, but it might be preferable as there is no initialization time. By calculating all
 * costs holistically, the scheduler favors upgrading opportunistic tasks on machines with fewer
 * regular tasks, while waiting for temporarily heavily loaded machines to drain."
 *
 * When a token frees, the caller lists its opportunistic tasks (queued or running) with, for
 * each, what it would take as a regular task where it is and at the best other node:
 *   here_s = a queued task: its node's regular wait for a task of its size (the PN's matrix, the
 *            wait of a task joining the tail of the regular queue, as queue_upgrade puts it) + R;
 *            a running one: its remaining run time (it keeps running, no re-match);
 *   alt_s  = I + W + R at the best other node (the estimator's e_s; >= 1e300: none).
 * best_s = min(here_s, alt_s) when alt_s saves at least max(margin_s, gain x here_s), else
 * here_s. The task chosen is the one of highest priority; among priorities within prio_eps of the
 * highest, the one with the smallest best_s (the token does the most good there: "favors
 * upgrading opportunistic tasks on machines with fewer regular tasks"). It is re-placed as a
 * regular task on the other node (its opportunistic attempt cancelled) when that saves the
 * margin, else upgraded in place. A running task is always upgraded in place. */
struct correct_upgrade_cand {
    double prio;   /* the task's priority (higher first) */
    double here_s; /* see above */
    double alt_s;  /* see above */
    int running;   /* 1: running (upgrade in place only) */
};

struct correct_upgrade {
    long idx;       /* chosen candidate, -1 when none */
    int replace;    /* 1: re-place as regular at the other node; 0: upgrade in place */
    double best_s;  /* its expected completion as a regular task */
    double saved_s; /* here_s - alt_s when re-placed, else 0 */
};

/* Chooses. NULL cfg: defaults (gain, margin_s). prio_eps < 0: 0. Returns 0, ERR_NOTFOUND when
 * n == 0. */
int correct_upgrade_pick(const struct correct_config *cfg, const struct correct_upgrade_cand *c,
                         size_t n, double prio_eps, struct correct_upgrade *out);

#endif
