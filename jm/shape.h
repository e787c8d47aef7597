/* shape.h - a job's shape for the RM's deadline arbiter, in sized tokens (rm/arbiter.h).
 *
 * The arbiter sees a job as W (work, token-seconds), L (critical path, seconds), their standard
 * deviations, and a width (Verma et al. §II: ARIA's bounds max(W/k, L) <= T(k) <= (W - L)/k + L;
 * MRM §3: the conservative bound adds k standard deviations). This module computes them from a
 * validated spec and, when one is given, the job's profile (jm/profile.h):
 *
 *  - a task's runtime: with a profile stage that compared run times with the tasks' estimates
 *    (ratio_q), its own runtime_s times the stage's mean ratio; with a profile stage without
 *    ratios, the stage's mean run time; else the spec's runtime_s;
 *  - a task's tokens: arbiter_task_tokens(cpu, mem_mb, token_cpu, token_mem_mb);
 *  - work = sum over tasks of runtime x tokens;
 *  - work_sd: with a profile stage with ratios, each task's runtime_s times the ratio's standard
 *    deviation, as independent tasks plus a stage term as below (the error of an estimate, not
 *    the spread between a stage's tasks, which the spec states); without ratios, the per-task
 *    variance of the stage's run-time distribution
 *    (from its quantiles) times tokens², summed over tasks (independent tasks), plus a term for
 *    the uncertainty of the stage mean itself (one run's sample: the stage's token-weighted task
 *    count x sd / sqrt(tasks the profile saw)), the part that would show up between runs; tasks
 *    without a profile stage contribute cv x runtime x tokens, added linearly (fully correlated:
 *    a spec's estimate is off by the same factor for all of them), so without a profile
 *    work_sd = cv x work;
 *  - path = the longest path of runtimes over explicit task edges and stage barriers
 *    (priority_compute's bottom levels, jm/priority.h);
 *  - path_sd = (the longest path with every task at runtime + sd) - path: the spread of the
 *    critical path when the tasks on it are slow together (fully correlated, conservative);
 *    without a profile this is cv x path;
 *  - width = the most tokens in use at once when every task starts as soon as its dependencies
 *    allow (the as-soon-as-possible schedule at the mean runtimes with unlimited tokens). An
 *    approximation: with other runtimes tasks overlap differently. It is at least the largest
 *    token demand of any single task, so a job can always run (>= 1 when work > 0). The
 *    simpler "max over stages of the stage's tokens" is not used: a spec without "stages" has
 *    one stage per task, and independent stages run at the same time.
 *
 * Pure: no clock, no I/O; allocations are scratch freed before returning.
 */
#ifndef PADDOCK_JM_SHAPE_H
#define PADDOCK_JM_SHAPE_H

#include <stddef.h>
#include <stdint.h>

#include "jm/profile.h"
#include "jm/spec.h"
#include "rm/arbiter.h"

#define SHAPE_CV_DEFAULT 0.25 /* coefficient of variation of a spec-only estimate */

/* Computes the shape of the whole job `spec` (borrowed) at token size token_cpu cores /
 * token_mem_mb MiB (<= 0 / 0: rm/arbiter.h's defaults); prof (borrowed) may be NULL. cv < 0 is
 * taken as 0. Returns 0 and fills *out, or ERR_INVAL (NULL argument, non-finite cv) /
 * ERR_NOMEM with the reason in msg (cap bytes); *out is untouched on error. */
int shape_from_spec(const struct spec *spec, const struct profile *prof, double token_cpu,
                    uint64_t token_mem_mb, double cv, struct arbiter_shape *out, char *msg,
                    size_t cap);

/* Where the job's own list schedule falls between ARIA's bounds at k tokens (rm/arbiter.h,
 * arbiter_shape.alpha): the JM's simulator (jm/jsim.h) runs the job at min(k, width) tokens
 * with bottom-level priority, at the spec's estimates or, with a profile, the median of
 * SHAPE_ALPHA_RUNS seeded runs sampled from it; alpha = (S − low) / (up − low) with low =
 * max(W/k, L) and up = (W − L)/k + L of the shape `s` (as shape_from_spec computed it), clamped
 * to [0, 1] (0.5 when the bounds meet). With a profile, the path first becomes the critical
 * path under the profile's spread (shape_place_sim): a wide stage ends with its slowest task
 * (issue 22: "stage runtime spread from its profile and history"). Sets s->has_alpha, s->alpha
 * (and s->path, as said), and *makespan (may be NULL) to S. Deterministic. Returns 0, or
 * ERR_INVAL / ERR_TOOBIG / ERR_NOMEM with the reason in msg (s untouched). */
#define SHAPE_ALPHA_RUNS 5
#define SHAPE_SPREAD_Q   0.95   /* the job's own spread: this quantile of its makespan / median */
#define SHAPE_PATH_RUNS  31     /* runs for the path under the spread (a median of 5 moves by */
#define SHAPE_PATH_TASKS 300000 /* a sixth on a one-task path), within this many tasks */
int shape_alpha(const struct spec *spec, const struct profile *prof, double token_cpu,
                uint64_t token_mem_mb, uint32_t k, struct arbiter_shape *s, double *makespan,
                char *msg, size_t cap);

/* shape_alpha on a job as the JM's simulator holds it (jm/jsim.h: a finalized job, its attempt
 * model, a progress model for the runs; all borrowed): `runs` (1..SHAPE_ALPHA_RUNS) seeded runs
 * at min(k, s->width) tokens give S, their median. With runs > 1 (a model sampled from a
 * profile), seeded runs with every task's units free at once give the critical path with the
 * run times drawn (every run here takes each attempt's initialization at its stage's median
 * init_q: a profile's latency tail is time tasks sat queued at busy nodes, which a simulated
 * token would hold and a free unit would add to the path; issue 22, measured on real runs): the
 * median of SHAPE_PATH_RUNS of them, or of as many as SHAPE_PATH_TASKS simulated tasks allow (at
 * least one); when it is longer than s->path it replaces it, before alpha is computed as
 * shape_alpha says. With runs > 1, the job's own spread (issue 22) too: s->spread = the
 * SHAPE_SPREAD_Q quantile of SHAPE_PATH_RUNS seeded makespans at the same tokens (or as many as
 * SHAPE_PATH_TASKS simulated tasks allow, at least `runs`) over S, >= 1. For these runs a stage
 * of n > 10 tasks samples a tail to its 1 - 1/(2n) quantile (log-normal through its q90 and q95):
 * a profile's quantiles stop at the longest run it saw, and a wide stage ends with its slowest
 * task (issue 22: on the simulator a 619-task workflow ran up to 1.5x its median against a
 * spread of 1.13 without the tail); with one run
 * (no spread to sample) s->spread = 0: none, the ledger then bounds the job by the cluster's
 * factor alone. The simulator (tools/sim/arbiter_sim) calls this for jobs it builds by hand.
 * Returns 0, ERR_INVAL or ERR_NOMEM (s untouched on error). */
struct jsim_job;
struct jsim_model;
struct progress_model;
int shape_place_sim(const struct jsim_job *job, const struct jsim_model *m,
                    const struct progress_model *pm, int runs, uint32_t k, struct arbiter_shape *s,
                    double *makespan);

/* The width of shape_from_spec at the spec's estimates with each task costing units[i] (any
 * unit: the JM's dispatcher counts finer ones, jm/grain.h): the most units in use at once in the
 * as-soon-as-possible schedule, into *peak. 0, ERR_INVAL (NULL argument) or ERR_NOMEM. */
int shape_peak_units(const struct spec *spec, const uint32_t *units, uint64_t *peak);

/* The standard deviation of a run-time distribution given by PROFILE_NQ quantiles (linear
 * between quantiles, as profile_quantile reads them). 0 for a point mass. */
double shape_quantile_sd(const double *q);

#endif
