/* readyq.h - the JM's ready tasks in priority order, kept up to date as tasks become ready, are
 * placed, cancelled or change priority, instead of sorted anew every scheduling round (Apollo
 * §3.3 "Task Priorities"; issue: JM cost per task independent of the job's size).
 *
 * The order is jm/priority.h's: higher priority first, then more input bytes, then the lower
 * task index (spec order), a total order, so the tasks come out exactly as priority_sort would
 * sort them. A task's key (its priority and input bytes) is given when it enters and may be
 * changed in place (readyq_update).
 *
 * An indexed 4-ary heap over task indices 0..ntasks-1: push, remove and update are O(log n),
 * taking the best k is O(k log n), contains and count O(1). All storage is allocated by
 * readyq_new, so nothing after it allocates or fails for lack of memory. Pure.
 */
#ifndef PADDOCK_JM_READYQ_H
#define PADDOCK_JM_READYQ_H

#include <stddef.h>
#include <stdint.h>

typedef struct readyq readyq_t;

/* New empty queue for tasks 0..ntasks-1. 0, ERR_NOMEM. Caller owns *out; readyq_destroy. */
int readyq_new(size_t ntasks, readyq_t **out);

/* Frees the queue and nullifies the caller's reference. NULL-safe. */
void readyq_destroy(readyq_t **p);

/* Adds `task` with priority `prio` (higher first) and `bytes` (more first on equal priority).
 * ERR_RANGE for a bad index or a NaN priority, ERR_EXISTS when it is queued already. */
int readyq_push(readyq_t *q, size_t task, double prio, uint64_t bytes);

/* Changes a queued task's key in place. ERR_RANGE, ERR_NOTFOUND when it is not queued. */
int readyq_update(readyq_t *q, size_t task, double prio, uint64_t bytes);

/* Takes a queued task out (placed elsewhere, started, cancelled). ERR_RANGE, ERR_NOTFOUND. */
int readyq_remove(readyq_t *q, size_t task);

/* 1 when `task` is queued. */
int readyq_contains(const readyq_t *q, size_t task);

size_t readyq_count(const readyq_t *q);

/* The first task in order without taking it; ERR_NOTFOUND when empty. */
int readyq_peek(const readyq_t *q, size_t *task);

/* Takes up to k first tasks out, in order, into out[]; returns how many. The caller pushes back
 * those it does not place (their keys as before). */
size_t readyq_pop(readyq_t *q, size_t *out, size_t k);

/* Empties the queue (O(count)). */
void readyq_clear(readyq_t *q);

#endif
