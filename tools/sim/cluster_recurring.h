/* cluster_recurring.h - `paddock-sim recurring` on the cluster simulator (tools/sim/cluster.h;
 * the default engine, docs/recurring-sim.md): the same periodic jobs and ad-hoc arrivals as the
 * token-slice engine (recurring_sim.h), each run a real job spec (its WfCommons instance, run
 * times stretched to the run's duration alone) run by the simulator's JM on per-node queues, and
 * every decision about tokens made by a ledger_t (rm/ledger.h) in the simulation, driven with
 * ledger_apply by the commands the RM applies: RECUR_ADD, RECUR_FIRE and JOB_REGISTER at a
 * period's start, LEASE_RENEW with the run's progress, TOKEN_REQUEST, TICK, JOB_END with the
 * run's skyline (jm/usage.h), RECUR_ACCEPT of the inferred deadlines, and RECUR_MODEL as the
 * leader proposes it (rm/ledger_recur_plan.h: R* over the history, LowCost's placement). The
 * grants the ledger's arbitration decides reach each JM through cl_job_grant (jm/grant.h). */
#ifndef PADDOCK_TOOLS_SIM_CLUSTER_RECURRING_H
#define PADDOCK_TOOLS_SIM_CLUSTER_RECURRING_H

#include "tools/sim/recurring_sim.h"

/* Runs the jobs of j under policy p on the cluster simulator. Fills *out as recurring_sim_run
 * does (planned_tokens_mean, reserved_used_fraction and reprov_token_s are not measured: 0).
 * Returns 0 or an ERR_* (msg: the reason). */
int recurring_cluster_run(const recurring_sim_jobs_t *j, const struct recurring_sim_config *cfg,
                          enum recurring_sim_policy p, struct recurring_sim_result *out, char *msg,
                          size_t cap);

#endif
