/* speculate.h - straggler detection and speculative copies of running tasks (Apollo §3.4,
 * "Straggler Detection"; issue 15).
 *
 * From Apollo §3.4: "Apollo's straggler detection mechanism monitors the rate at which data is
 * processed and the rate at which CPU is consumed to predict the amount of time remaining for
 * each task. Other tasks in the same stage are used as a baseline for comparison. When the time
 * it would take to rerun a task is significantly less than the time it would take to let it
 * complete, a duplicate copy is started. They will execute in parallel until the first one
 * finishes."
 *
 * The rule (speculate_check), for one running attempt of a task:
 *   rem  = the original's expected remaining time:
 *          - with progress p (0.05 <= p < 1, from the PN's CPU time or bytes read against the
 *            task's totals: speculate_progress), the rate estimate elapsed x (1 - p) / p;
 *          - else from the stage's finished durations D (at least min_finished of them; else the
 *            single point {the estimator's R}): the mean residual E[T - e | T > e] over D; past
 *            every finished duration, e / 2 (the mean residual life of a Pareto tail with shape
 *            3: a task that has run longer than all its peers is expected to run on in proportion
 *            to how long it already ran);
 *   cq   = the copy's completion at the given confidence: C + z x spread, where C is the
 *          estimator's I + W + R on the best node other than the original's (jm/estimator.h);
 *   copy when rem - cq >= max(margin_s, gain x cq): the copy must finish clearly sooner, by
 *          more than a fixed margin and by a fraction of what it costs (Mantri, OSDI'10 §5.1,
 *          asks a copy to save at least its own run, gain = 1; 0.5 here: the loser is killed
 *          when the winner ends, so a copy costs at most its own run and usually less).
 * And before that, in order (the first that applies is the verdict):
 *   - SPECULATE_FORBIDDEN: the spec says "speculate": false (side effects forbid a second copy);
 *   - SPECULATE_TOO_EARLY: it ran less than min_elapsed_s, or less than min_frac x the stage's
 *     median finished duration (the estimator's R without min_finished durations);
 *   - SPECULATE_CAPPED: the task has max_copies copies already, or the job has
 *     job_cap_frac x its running tasks (at least 1) copies in flight, or job_total_frac x its
 *     tasks (at least job_total_min) started in all, or the stage has stage_cap_frac x its tasks
 *     (at least 1) copies in flight;
 *   - SPECULATE_NO: no other node (C infinite) or the saving is too small;
 *   - SPECULATE_COPY.
 *
 * Cap defaults: LATE (Zaharia et al., OSDI'08 §4.2) caps speculative tasks at 10% of the slots
 * ("SpeculativeCap"); Apollo reports duplicates under 0.5% of task creations (§5.4, Table 2).
 * 10% of the running tasks in flight and 10% of the job's tasks in all (at least 4, so a small
 * job can still rescue a few stragglers) bound the extra work; paddock-sim stragglers shows what
 * it costs (docs/stragglers.md).
 *
 * A copy is a task like any other for capacity: speculate_copy_class says which allowance it
 * spends (a token unit when one is free, else the opportunistic allowance, else none: no copy).
 *
 * Winner and cancel (struct speculate_task): each task keeps its live attempts; the first to
 * finish wins and the others are named for cancellation; a failed attempt leaves the others
 * running; a late finish of a loser (its cancellation raced the end) is refused.
 *
 * Pure: no clock, no sockets; times in seconds from the caller.
 */
#ifndef PADDOCK_JM_SPECULATE_H
#define PADDOCK_JM_SPECULATE_H

#include <stddef.h>
#include <stdint.h>

#include "jm/dispatch.h"

struct speculate_config {
    double margin_s;        /* the copy must save at least this (default 1 s) */
    double gain;            /* ... and this fraction of its own completion time (default 0.5) */
    double z;               /* confidence: C + z x spread (default 1.0, ~84% one-sided) */
    double min_elapsed_s;   /* never look at an attempt younger than this (default 1 s) */
    double min_frac;        /* ... or younger than this fraction of the stage median (default 1) */
    uint32_t min_finished;  /* finished durations before the stage's are trusted (default 3) */
    double min_progress;    /* progress below this is too noisy to use (default 0.05) */
    uint32_t max_copies;    /* copies per task besides the original (default 1) */
    double job_cap_frac;    /* copies in flight per job: x running tasks, >= 1 (default 0.1) */
    double job_total_frac;  /* copies started per job: x its tasks (default 0.1) ... */
    uint32_t job_total_min; /* ... but at least this many (default 4) */
    double stage_cap_frac;  /* copies in flight per stage: x its tasks, >= 1 (default 0.1) */
};

void speculate_config_default(struct speculate_config *cfg);

/* What the JM knows about one running attempt (public value). */
struct speculate_input {
    double elapsed_s;         /* since the attempt started running */
    const double *stage_done; /* finished durations of its stage, ascending (speculate_dist) */
    size_t nstage_done;
    double stage_scale;      /* multiplies stage_done (<= 0: 1): a JM that keeps the stage's times
                                per unit of estimate (actual / R, as the estimator refines R from
                                input bytes) passes them with this task's R here */
    double est_run_s;        /* the estimator's R for the task (used without enough finished) */
    double progress;         /* fraction done in [0, 1], < 0 unknown (speculate_progress) */
    double copy_c_s;         /* I + W + R of a fresh copy on the best other node; >= 1e300: none */
    double copy_spread_s;    /* its spread (standard deviation; 0 when unknown) */
    int speculate;           /* the spec's "speculate" (0: never copy) */
    uint32_t copies;         /* copies of this task started so far */
    uint32_t job_inflight;   /* copies in flight in the job */
    uint32_t job_started;    /* copies started in the job so far */
    uint32_t job_running;    /* tasks of the job running now (originals and copies) */
    uint32_t job_tasks;      /* tasks in the job */
    uint32_t stage_inflight; /* copies in flight in the stage */
    uint32_t stage_tasks;    /* tasks in the stage */
};

enum speculate_verdict {
    SPECULATE_NO = 0,        /* let it run */
    SPECULATE_COPY = 1,      /* start a copy on the best other node */
    SPECULATE_FORBIDDEN = 2, /* "speculate": false */
    SPECULATE_TOO_EARLY = 3, /* not judged yet */
    SPECULATE_CAPPED = 4,    /* a per-task, per-job or per-stage cap */
};

const char *speculate_verdict_name(enum speculate_verdict v);

/* Figures behind a verdict (for logs and the simulator). */
struct speculate_why {
    double remaining_s; /* rem (0 when not computed) */
    double copy_q_s;    /* cq */
    double saving_s;    /* rem - cq */
};

/* Applies the rule. NULL cfg: defaults; why may be NULL. */
enum speculate_verdict speculate_check(const struct speculate_config *cfg,
                                       const struct speculate_input *in, struct speculate_why *why);

/* The original's expected remaining time alone (the first half of the rule). */
double speculate_remaining(const struct speculate_config *cfg, const struct speculate_input *in);

/* Whether looking for a node is worth it: even a copy that started at once and ran only its CPU
 * part floor_s (the part that runs anywhere) saves what the rule asks, speculate_remaining(in) -
 * floor_s >= max(margin_s, gain x floor_s). The JM looks for a copy's node only then, which
 * bounds a tick's work on a large cluster. NULL cfg: defaults. */
int speculate_worth_a_look(const struct speculate_config *cfg, const struct speculate_input *in,
                           double floor_s);

/* Progress from what the PN reports: bytes read against the task's input bytes when both are
 * known (> 0), else CPU seconds against the expected CPU seconds (R's CPU part x cores), else -1.
 * Clamped to [0, 1]. */
double speculate_progress(double cpu_s, double cpu_total_s, uint64_t bytes_read,
                          uint64_t bytes_total);

/* The stage's finished durations kept ascending (caller owns; speculate_dist_close frees). At
 * most SPECULATE_DIST_MAX are kept: a full one drops every other duration and from then on keeps
 * one in `stride` of those added (a systematic sample: its quantiles stay those of all of them,
 * to within the sample's step), so a million-task stage costs O(1) per finished task instead
 * of an insertion into a million-long array. */
#define SPECULATE_DIST_MAX 4096
struct speculate_dist {
    double *v;     /* read-only */
    size_t n;      /* read-only */
    size_t cap;    /* private */
    size_t stride; /* private: one in `stride` added is kept (0 or 1: all) */
    size_t seen;   /* private: added since the stride last changed */
};

void speculate_dist_init(struct speculate_dist *d);
void speculate_dist_close(struct speculate_dist *d);
/* Inserts a finished duration in order. ERR_INVAL (NaN, negative), ERR_NOMEM. */
int speculate_dist_add(struct speculate_dist *d, double dur_s);
double speculate_dist_median(const struct speculate_dist *d); /* 0 when empty */
/* The sample standard deviation of the durations kept (n - 1 in the divisor); 0 when fewer
 * than two. */
double speculate_dist_stddev(const struct speculate_dist *d);

/* Which allowance a copy spends: DISPATCH_REGULAR when a token unit is free for it
 * (free_units >= cost), else DISPATCH_OPPORTUNISTIC when the opportunistic allowance has room
 * (opp_free_units >= cost), else DISPATCH_NONE (no copy now). */
enum dispatch_class speculate_copy_class(uint64_t free_units, uint64_t opp_free_units,
                                         uint32_t cost);

/* --- Attempts of one task: first to finish wins, the others are cancelled. --- */

#define SPECULATE_MAX_ATTEMPTS 4

enum speculate_attempt_state {
    SPECULATE_A_NONE = 0,
    SPECULATE_A_LIVE,      /* queued or running */
    SPECULATE_A_WON,       /* finished first */
    SPECULATE_A_CANCELLED, /* named for cancellation (a loser) */
    SPECULATE_A_FAILED,
};

struct speculate_attempt {
    uint32_t id;  /* caller's attempt number, unique within the task */
    int32_t node; /* where it runs */
    int copy;     /* 1 for a speculative copy or a duplicate, 0 for the original */
    int started;  /* running (not only queued) */
    enum speculate_attempt_state state;
};

/* Per task (public value: speculate_task_init; no resources). */
struct speculate_task {
    struct speculate_attempt a[SPECULATE_MAX_ATTEMPTS]; /* read-only */
    size_t n;                                           /* read-only */
    int32_t winner;                                     /* index into a, -1 none (read-only) */
};

void speculate_task_init(struct speculate_task *t);
/* Records a new attempt (live). ERR_FULL (SPECULATE_MAX_ATTEMPTS), ERR_EXISTS (id used),
 * ERR_STATE (the task has a winner already). */
int speculate_task_add(struct speculate_task *t, uint32_t id, int32_t node, int copy);
/* Live attempts. */
size_t speculate_task_live(const struct speculate_task *t);
/* Copies among the live attempts. */
size_t speculate_task_live_copies(const struct speculate_task *t);
/* An attempt started running. For duplicates of a queued task (Apollo: "Duplicates are
 * discarded when one task starts"), with discard != 0 the other live attempts that have not
 * started are named for cancellation: their ids go to cancel (at most cap), the count is
 * returned. ERR_NOTFOUND (unknown or not live attempt). */
int speculate_task_started(struct speculate_task *t, uint32_t id, int discard, uint32_t *cancel,
                           size_t cap);
/* An attempt finished successfully. The first one wins: the other live attempts are named for
 * cancellation (ids into cancel, at most cap; the count returned). A finish after a winner (a
 * loser that ended before its cancellation arrived) or of an unknown attempt: ERR_STATE /
 * ERR_NOTFOUND, and the caller ignores its outputs. */
int speculate_task_finished(struct speculate_task *t, uint32_t id, uint32_t *cancel, size_t cap);
/* An attempt failed or was lost: returns how many attempts are still live (0: the task needs a
 * retry like any failed task). ERR_NOTFOUND. */
int speculate_task_failed(struct speculate_task *t, uint32_t id);

#endif
