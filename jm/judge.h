/* judge.h - what the JM knows about one attempt of a task, turned into the inputs of the
 * deferred correction (jm/correct.h) and of straggler copies (jm/speculate.h), and their verdict,
 * with the best other node looked up only when the rule could act on it.
 *
 * The one step the daemon (jm/daemon/jmd_spec_start.c) and the simulator
 * (tools/sim/cluster_straggler.c) both call, so that neither fills the rules' inputs its own way
 * (issue 23): the estimate of the task where it is, its own share of its node's wait, the stage's
 * average wait, R and its fallback, progress from the PN's readings, the copy's spread, and the
 * order of the two looks (the rule without another node first, then with the best one).
 *
 * Pure: no clock, no sockets; times in seconds (and the caller's now in ms for the estimator).
 */
#ifndef PADDOCK_JM_JUDGE_H
#define PADDOCK_JM_JUDGE_H

#include <stddef.h>
#include <stdint.h>

#include "jm/correct.h"
#include "jm/estimator.h"
#include "jm/speculate.h"

/* Where the task's estimates come from, and the nodes a new attempt of it may not go to (those
 * it has attempts on; the daemon's also those it cannot reach). */
struct judge_where {
    const estimator_t *est;
    const view_t *view;
    const struct estimator_task *et;
    int64_t now_ms;
    estimator_skip_fn *skip; /* NULL: none skipped */
    void *skip_ctx;
};

/* A regular task queued at its node (not started). */
struct judge_queued {
    uint32_t node;           /* where it is queued */
    double waited_s;         /* since it was sent there */
    double placed_wait_s;    /* the wait it was placed on */
    double pn_wait_s;        /* the PN's expected wait at its last report, < 0: none */
    double since_report_s;   /* time since that report */
    double stage_wait_sum_s; /* realised waits of its stage's tasks so far ... */
    uint32_t stage_wait_n;   /* ... and how many (0: no average yet) */
    uint32_t moves, dups;    /* moves and duplicates of this task so far */
    int speculate;           /* the spec's "speculate" (0: never two attempts at once) */
    int no_room;             /* a second attempt would get no class now (attempt_copy_class) */
};

/* correct_decide on what the JM knows of the queued task: CORRECT_NONE, or the action and the
 * node for it (*to, *alt: its estimate there). *in (may be NULL) gets the rule's input, *conds
 * and *left_s (may be NULL) as correct_decide gives them. No other node is looked at when none of
 * the three conditions holds. */
enum correct_action judge_queued(const struct correct_config *cfg, enum correct_mode mode,
                                 const struct judge_where *w, const struct judge_queued *q,
                                 long *to, struct estimate *alt, struct correct_dup_input *in,
                                 unsigned *conds, double *left_s);

/* A task running (its first attempt, no copy yet). */
struct judge_running {
    double elapsed_s;                  /* since it started running */
    double io_s;                       /* the I/O part of its estimate where it runs */
    double fallback_r_s;               /* R when the estimator has none (<= 0: none) */
    const struct speculate_dist *dist; /* its stage's finished times / their R */
    double cpu_s;                      /* CPU seconds the PN reported (0: none) */
    uint64_t bytes_read;               /* input bytes read, as reported (0: none) */
    double cpu;                        /* the task's cores */
    uint64_t input_bytes;              /* its input bytes */
    int speculate;                     /* the spec's "speculate" */
    uint32_t copies;                   /* copies of it started so far */
    uint32_t job_inflight, job_started, job_running, job_tasks; /* as struct speculate_input */
    uint32_t stage_inflight, stage_tasks;
};

/* speculate_check on what the JM knows of the running task: SPECULATE_COPY and the node for the
 * copy (*to, *e), or another verdict (*to = -1 when no node was looked at or none is free). *in,
 * *why and *r_s (R as judged) may be NULL. No other node is looked at for a task that is fine
 * (speculate_worth_a_look). */
enum speculate_verdict judge_running(const struct speculate_config *cfg,
                                     const struct judge_where *w, const struct judge_running *r,
                                     long *to, struct estimate *e, struct speculate_input *in,
                                     struct speculate_why *why, double *r_s);

/* An opportunistic task queued at `node` that a freed token upgrades (Apollo §3.5, jm/correct.h's
 * correct_upgrade_pick): 1 when it is re-placed as a regular task at *to (*alt: its estimate
 * there; *here_s, may be NULL: its wait plus run where it is), because the best other node
 * (w->skip: those it has attempts on) finishes it sooner by the correction's margin than its own
 * node's wait plus its run; 0 when it is upgraded in place (no estimate here, no other node, or not
 * worth it). `prio` is its bottom level. The daemon (jm/daemon/jmd_spec_start.c) and the simulator
 * (tools/sim/cluster_straggler.c) both ask it. */
int judge_upgrade(const struct correct_config *cfg, const struct judge_where *w, uint32_t node,
                  double prio, long *to, struct estimate *alt, double *here_s);

#endif
