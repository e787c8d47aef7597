/* straggler_cluster.h - `paddock-sim stragglers` on the cluster simulator (tools/sim/cluster.h;
 * the default engine, docs/stragglers.md): the job's JM is the simulator's (cluster_job.c: the
 * daemon's placement, dispatch and attempt machine), its copies are started on the daemon's rule
 * and gate (cluster_straggler.c), the PNs run real pn/queue with other tenants' work at the
 * experiment's load, and the stragglers are the experiment's (a share of attempts 3-10x slower,
 * the slow node; tools/sim/engine_noise.h). straggler_sim.h's conditions map onto it:
 *   nodes x slots       nodes of `slots` cores (one rack per node, as the workload's replicas);
 *   load                other tenants' regular work, bg_util, tasks of the job's mean estimate,
 *                       in load phases of 20 mean task times (the slice engine's bursts);
 *   noise_sigma, straggler_prob/min/max, slow_factor   engine_noise (node 0 slow);
 *   tokens, opp_factor  the job's grant and allowance; speculate  jm/speculate.h's settings.
 * The job arrives after a warm-up of 5 mean task times. All four modes run: move and duplicate
 * are the simulated JM's deferred correction of queued tasks (cfg.correct), speculate adds
 * copies of running ones (cfg.speculate) to queued_mode's correction. */
#ifndef PADDOCK_TOOLS_SIM_STRAGGLER_CLUSTER_H
#define PADDOCK_TOOLS_SIM_STRAGGLER_CLUSTER_H

#include <stdint.h>

#include "tools/sim/straggler_sim.h"

/* As straggler_sim_job, on the cluster simulator. ERR_INVAL,
 * ERR_NOMEM, ERR_STATE (the job did not finish). */
int straggler_cluster_job(const struct spec *sp, enum straggler_mode m,
                          const struct straggler_cond *c, uint64_t seed, struct straggler_run *out);

#endif
