/* grant.h - a JM's tokens: what it reports to the RM, what it asks for in its tail, its
 * opportunistic allowance and its tasks' token costs. One rule each, called by the daemon
 * (jm/daemon/jmd_rm.c, jmd_jockey.c, jmd_sched.c) and by the simulator (tools/sim/cluster_*.c),
 * so the simulator keeps no copy (issue 23). Pure: no clock, socket or process.
 *
 * `unit` is the dispatcher's units per token: GRAIN_UNITS (jm/grain.h) where it counts finer
 * units (the daemon, the simulator with grain on), 1 where it counts whole tokens. */
#ifndef PADDOCK_JM_GRANT_H
#define PADDOCK_JM_GRANT_H

#include <stddef.h>
#include <stdint.h>

#include "jm/dag.h"
#include "jm/dispatch.h"
#include "jm/spec.h"
#include "jm/view.h"

/* Units as whole tokens, rounded up (unit 0 counts as 1). */
uint64_t grant_tokens_of(uint64_t units, uint32_t unit);

/* The demand a lease renewal carries: the tokens covering the units the job could use now (its
 * tasks in flight, regular and opportunistic, and its READY tasks at their cost), plus one (0 on
 * the wire means unknown); max_tokens + 1 when that reaches max_tokens. The arbiter hands a
 * deadline job no spare beyond it. */
uint32_t grant_demand(const dag_t *dag, const dispatch_t *d, uint32_t unit, uint32_t max_tokens);

/* The tail rule of a job without a controller: it asks for `target` (its width); once its
 * unfinished tasks (not SUCCEEDED) fit in at most half of it, it asks for the tokens that cover
 * them (halving steps: a 100-token job sends about seven smaller requests, not one per finished
 * task). Returns the new target (`target` itself when unchanged). */
uint32_t grant_tail(const dag_t *dag, const dispatch_t *d, size_t ntasks, uint32_t unit,
                    uint32_t target);

/* The first request of a job without a controller: its width, the most tokens its tasks use at
 * once (counted in the dispatcher's units at their costs, then rounded up to tokens of `unit`),
 * the larger of two readings: in waves (all ready tasks, then all they release, ...; a copy of
 * the job's DAG from its start, stage barriers included), and as soon as possible at the
 * estimated run times (jm/shape.h, what admission counts). Waves alone undercount a DAG whose
 * short tasks release longer ones: a chain of 0.5 s tasks each releasing four 1.2 s tasks is 5
 * wide in waves and 13 in time. Between 1 and max_tokens; 1 when memory runs out. */
uint32_t grant_width(const struct spec *sp, const dispatch_t *d, uint32_t unit,
                     uint32_t max_tokens);

/* Whole tokens a node of cpu cores and mem_mb MiB holds at the token size (0: the default,
 * rm/arbiter.h): the smaller of its cores and its memory in tokens, rounded down. */
double grant_node_tokens(double cpu, uint64_t mem_mb, double token_cpu, uint64_t token_mem_mb);

/* Tokens the view's up nodes hold beyond `capacity` (the virtual cluster's: cores and memory no
 * token covers, idle to every job's regular work); 0 when none. */
uint32_t grant_beyond(const view_t *v, double token_cpu, uint64_t token_mem_mb, uint32_t capacity);

/* The opportunistic allowance (Jockey's rule, min(c x granted, spare)), applied to the tokens
 * actually held: spare is the virtual cluster's capacity beyond the grant plus `beyond`;
 * capacity 0 (the RM has not said) leaves c x granted. Sets the dispatcher's factor (allowance /
 * granted; 0 without a grant) and returns the allowance in whole tokens, rounded down. A job that
 * holds every token of a cluster with nothing beyond has no spare: an opportunistic task of its
 * own could only take a slot one of its regular tasks was about to. */
int grant_allowance(dispatch_t *d, double opp_factor, uint32_t granted, uint32_t capacity,
                    uint32_t beyond);

/* A grant reaches the JM (after the dispatcher's tokens and allowance are set): downgrades are
 * due when the regular units in flight exceed the tokens (attempt_downgrades), and upgrades are
 * tried after them whatever the change (attempt_upgrades: none while no unit is free). Returns
 * GRANT_DOWNGRADE | GRANT_UPGRADE, what the JM does, in that order. */
#define GRANT_DOWNGRADE 1
#define GRANT_UPGRADE   2
int grant_take(const dispatch_t *d);

/* A task's time left for the downgrade's grace: its run-time estimate (the placement's, est_s,
 * else the spec's, spec_s, written to *estimate) less what it has run (ran_s) when it runs; at
 * least 0. */
double grant_left(double est_s, double spec_s, int running, double ran_s, double *estimate);

/* Every task's cost in the dispatcher at the token size (0: the default): grain_task_units of
 * its cpu and memory. 0 or dispatch_set_cost's error. */
int grant_set_costs(dispatch_t *d, const struct spec *sp, double token_cpu, uint64_t token_mem_mb);

#endif
