/* priority.h - task priorities (Apollo §3.3, "Task Priorities"; docs/jm-placement.md).
 *
 * "A static task priority is annotated per stage ... by analyzing the job DAG and calculating
 * the potential critical path of the job execution. Tasks within a stage are prioritized based on
 * the input size." Stage priority = the longest estimated path from the stage to the end of the
 * DAG (runtimes along explicit edges and stage barriers); within a stage, larger input first.
 * Ready tasks are scheduled in descending priority.
 *
 * Pure; no allocation beyond scratch freed before returning.
 */
#ifndef PADDOCK_JM_PRIORITY_H
#define PADDOCK_JM_PRIORITY_H

#include <stddef.h>

#include "jm/dag.h"

/* Computes, for every task, its bottom level (its runtime plus the longest path after it,
 * following explicit edges and barriers) into task_bl[ntasks] (may be NULL) and every stage's
 * priority (the longest bottom level of its tasks, or through a task-less stage the longest path
 * beyond it) into stage_prio[nstages] (may be NULL). `runtime_s` gives per-task estimates
 * (NULL: the spec's runtime_s). Returns 0 or ERR_NOMEM. */
int priority_compute(const dag_t *dag, const double *runtime_s, double *task_bl,
                     double *stage_prio);

/* Sorts tasks[0..n) (task indices of dag's spec) in descending priority: higher stage priority
 * first, then larger input, then lower index (spec order). */
void priority_sort(const dag_t *dag, const double *stage_prio, size_t *tasks, size_t n);

/* 1 when task a goes before task b in priority_sort's order. */
int priority_before(const dag_t *dag, const double *stage_prio, size_t a, size_t b);

#endif
