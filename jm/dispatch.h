/* dispatch.h - capacity management: regular tasks within the granted tokens, opportunistic tasks
 * within the allowance, upgrades when tokens free up (Apollo §2.1, §3.5; DESIGN.md 4).
 *
 * From §3.5: "Each scheduler first applies optimistic scheduling to dispatch regular tasks with
 * its allocated tokens. If all the tokens are utilized and there are still pending tasks to be
 * scheduled, opportunistic scheduling may be applied ... a job with n tokens can have up to cn
 * opportunistic tasks dispatched for some constant c." and "tasks scheduled opportunistically
 * can be upgraded to regular tasks after being assigned a token ... When scheduling a regular
 * task, the scheduler considers both unscheduled tasks and previously scheduled opportunistic
 * tasks that still wait for execution ... in a descending order of their priorities."
 *
 * A small state machine over task indices (0..ntasks-1): each task is idle or in flight as
 * regular or opportunistic, and an in-flight task is waiting (queued at a PN) or running.
 * Tokens can change at any time (Jockey); when they drop below the regular tasks in flight none
 * is preempted, new regular dispatches simply wait. Pure: no clock, no I/O.
 */
#ifndef PADDOCK_JM_DISPATCH_H
#define PADDOCK_JM_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

enum dispatch_class {
    DISPATCH_NONE = 0,      /* not dispatched (no capacity) / idle */
    DISPATCH_REGULAR,       /* covered by a token */
    DISPATCH_OPPORTUNISTIC, /* within the opportunistic allowance */
};

struct dispatch_config {
    double opp_factor; /* c: allowance = floor(c * tokens) (default 1.0; 0 disables) */
};

void dispatch_config_default(struct dispatch_config *cfg);

typedef struct dispatch dispatch_t;

/* New dispatcher for ntasks tasks with 0 tokens. cfg copied (NULL: defaults). ERR_INVAL for a
 * negative or non-finite factor, ERR_NOMEM. Caller owns *out; dispatch_destroy. */
int dispatch_new(const struct dispatch_config *cfg, size_t ntasks, dispatch_t **out);
void dispatch_destroy(dispatch_t **p);

/* Sets the granted token count (the RM's grant) / the factor c (Jockey's controller may move
 * it). */
void dispatch_set_tokens(dispatch_t *d, uint32_t tokens);
void dispatch_set_factor(dispatch_t *d, double opp_factor);

uint32_t dispatch_tokens(const dispatch_t *d);
size_t dispatch_allowance(const dispatch_t *d);     /* floor(c * tokens) */
size_t dispatch_regular(const dispatch_t *d);       /* regular tasks in flight */
size_t dispatch_opportunistic(const dispatch_t *d); /* opportunistic tasks in flight */
enum dispatch_class dispatch_class_of(const dispatch_t *d, size_t task);
int dispatch_running(const dispatch_t *d, size_t task); /* 1 when in flight and started */

/* The class a new dispatch would get now: REGULAR while regular < tokens, else OPPORTUNISTIC
 * while opportunistic < allowance, else NONE (stop dispatching this batch). */
enum dispatch_class dispatch_next(const dispatch_t *d);

/* Dispatches an idle task with dispatch_next()'s class and returns it (NONE: nothing recorded,
 * no capacity). Matches are offered in quality order (jm/matcher.h) until NONE. ERR_STATE (as a
 * negative int) when the task is already in flight, ERR_RANGE for a bad index. */
int dispatch_place(dispatch_t *d, size_t task);

/* The task started executing at its PN (it can no longer be upgraded in the queue). */
int dispatch_started(dispatch_t *d, size_t task);

/* The task's attempt ended (any outcome, or cancelled/lost): its capacity is freed; the task is
 * idle again (a retry dispatches it anew). */
int dispatch_finished(dispatch_t *d, size_t task);

/* Upgrades waiting opportunistic tasks to regular while tokens are free: highest prio first
 * (prio may be NULL: oldest dispatch first; ties oldest first). Writes the upgraded tasks into
 * out (at most cap) and returns how many; they are REGULAR from now on (the JM sends
 * TASK_UPGRADE). */
size_t dispatch_upgrades(dispatch_t *d, const double *prio, size_t *out, size_t cap);

#endif
