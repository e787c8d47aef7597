/* dispatch.h - capacity management: regular tasks within the granted tokens, opportunistic tasks
 * within the allowance, upgrades when tokens free up (Apollo §2.1, §3.5; docs/architecture.md).
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
 *
 * Sized tokens (Apollo §2.1; rm/arbiter.h): every task has a cost in token units
 * (arbiter_task_tokens of its cpu and memory at the virtual cluster's token size; 1 unless
 * dispatch_set_cost says otherwise). Regular tasks in flight hold at most `tokens` units; the
 * opportunistic allowance floor(c x tokens) is in units too.
 *
 * No livelock for a large task: a task whose cost fits the grant but not the units free now
 * reserves the grant: until it is placed regular (or upgraded), no other task is placed or
 * upgraded regular, so the units free up for it as regular tasks end. The reservation lapses
 * when the task is not offered again within a round (dispatch_round: no node fits it, it is no
 * longer ready), when it ends, or when the grant falls below its cost. A task whose cost exceeds
 * the whole grant cannot run regular; it runs opportunistically when the allowance has room
 * for it, and otherwise when the grant is at least its cost.
 *
 * Tokens can change at any time (Jockey; the RM's arbiter reclaiming spare): when they drop
 * below the regular units in flight, dispatch_downgrades picks regular tasks to turn
 * opportunistic in place (the JM sends TASK_UPGRADE with the opportunistic class). Downgraded
 * tasks count as opportunistic, even beyond the allowance; no new opportunistic task is
 * dispatched until the units are back under it. Pure: no clock, no I/O.
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

/* New dispatcher for ntasks tasks with 0 tokens, every task costing 1 unit. cfg copied (NULL:
 * defaults). ERR_INVAL for a negative or non-finite factor, ERR_NOMEM. Caller owns *out;
 * dispatch_destroy. */
int dispatch_new(const struct dispatch_config *cfg, size_t ntasks, dispatch_t **out);
void dispatch_destroy(dispatch_t **p);

/* Sets the granted token count (the RM's grant) / the factor c (Jockey's controller may move
 * it). */
void dispatch_set_tokens(dispatch_t *d, uint32_t tokens);
void dispatch_set_factor(dispatch_t *d, double opp_factor);

/* A task's cost in token units (0 is taken as 1); a task in flight is recounted at the new
 * cost (the token size changed). ERR_RANGE for a bad index. */
int dispatch_set_cost(dispatch_t *d, size_t task, uint32_t cost);
uint32_t dispatch_cost(const dispatch_t *d, size_t task);

uint32_t dispatch_tokens(const dispatch_t *d);
size_t dispatch_allowance(const dispatch_t *d);       /* floor(c * tokens), units */
size_t dispatch_regular(const dispatch_t *d);         /* regular tasks in flight */
size_t dispatch_opportunistic(const dispatch_t *d);   /* opportunistic tasks in flight */
uint64_t dispatch_regular_units(const dispatch_t *d); /* their token units */
uint64_t dispatch_opportunistic_units(const dispatch_t *d);
size_t dispatch_downgraded(const dispatch_t *d); /* downgrades so far */
enum dispatch_class dispatch_class_of(const dispatch_t *d, size_t task);
int dispatch_running(const dispatch_t *d, size_t task); /* 1 when in flight and started */

/* The class a new dispatch of one unit would get now: REGULAR while regular units < tokens
 * (and no reservation), else OPPORTUNISTIC while opportunistic units < allowance, else NONE (stop
 * dispatching this batch). */
enum dispatch_class dispatch_next(const dispatch_t *d);

/* Dispatches an idle task and returns its class: REGULAR when its cost fits the free units
 * (and no other task holds the reservation), else OPPORTUNISTIC when it fits the allowance's
 * free units, else NONE (nothing recorded; a task that fits the grant but not the free units
 * takes the reservation). Matches are offered in quality order (jm/matcher.h); after NONE the
 * caller may go on offering others (smaller tasks may fit) until dispatch_next() is NONE.
 * ERR_STATE (as a negative int) when the task is already in flight, ERR_RANGE for a bad index. */
int dispatch_place(dispatch_t *d, size_t task);

/* Records an idle task in flight in class `cls` whatever the capacity (a resumed JM adopts an
 * attempt it found at a node: it runs already). Units over the grant are then taken back by
 * dispatch_downgrades as usual. ERR_STATE when in flight, ERR_INVAL for NONE, ERR_RANGE. */
int dispatch_adopt(dispatch_t *d, size_t task, enum dispatch_class cls);
/* Marks the start of a scheduling round: a reservation whose task was not offered to
 * dispatch_place since the previous call (and is not waiting in flight) lapses. */
void dispatch_round(dispatch_t *d);

/* The PN reports the task in another class than recorded (it downgraded or upgraded it itself):
 * moves its units to that class. ERR_STATE when idle, ERR_RANGE, ERR_INVAL for NONE. */
int dispatch_reclass(dispatch_t *d, size_t task, enum dispatch_class cls);

/* The task started executing at its PN (it can no longer be upgraded in the queue). */
int dispatch_started(dispatch_t *d, size_t task);

/* The task's attempt ended (any outcome, or cancelled/lost): its capacity is freed; the task is
 * idle again (a retry dispatches it anew). */
int dispatch_finished(dispatch_t *d, size_t task);

/* Upgrades waiting opportunistic tasks to regular while token units are free for them (their
 * cost fits; only the reserved task while a reservation stands): highest prio first (prio may
 * be NULL: oldest dispatch first; ties oldest first). Writes the upgraded tasks into
 * out (at most cap) and returns how many; they are REGULAR from now on (the JM sends
 * TASK_UPGRADE). */
size_t dispatch_upgrades(dispatch_t *d, const double *prio, size_t *out, size_t cap);

/* Downgrades regular tasks to opportunistic while the regular units in flight exceed the tokens:
 * waiting (queued) tasks first, lowest prio first, newest dispatch first on ties (nothing is
 * lost); then running tasks, the most remaining time first (remaining[task] in seconds; NULL:
 * none known), then lowest prio (prio may be NULL). Writes the downgraded tasks into out (at
 * most cap) and returns how many; they are OPPORTUNISTIC from now on (the JM sends TASK_UPGRADE
 * with the opportunistic class). */
size_t dispatch_downgrades(dispatch_t *d, const double *prio, const double *remaining, size_t *out,
                           size_t cap);

/* Yields tokens to `task` (idle), whose node can start it now (issue 22): while the grant's
 * free units are fewer than its cost, turns waiting (not started) regular tasks opportunistic
 * in place, lowest prio first, newest dispatch first on ties (prio may be NULL). A regular
 * task queued behind work at a busy node holds a token while a core idles elsewhere; yielded,
 * it still starts where it is when a core frees there, and freed units upgrade it again
 * (dispatch_upgrades). Regular units never exceed the grant. Nothing changes when the waiting
 * regular tasks cannot free enough, the cost exceeds the grant or another task holds the
 * reservation. Writes the yielded tasks into out (at most cap) and returns how many; then
 * dispatch_place(task) places it regular. The JM sends each yielded task a TASK_UPGRADE with
 * the opportunistic class. `may` (NULL: any) says which waiting tasks may yield. */
typedef int dispatch_may_yield_fn(void *ctx, size_t task);
size_t dispatch_yield(dispatch_t *d, size_t task, const double *prio, dispatch_may_yield_fn *may,
                      void *ctx, size_t *out, size_t cap);
size_t dispatch_yielded(const dispatch_t *d); /* tasks yielded so far */
/* The units dispatch_yield could free now: the waiting regular tasks' that `may` allows. */
uint64_t dispatch_yieldable(const dispatch_t *d, dispatch_may_yield_fn *may, void *ctx);

#endif
