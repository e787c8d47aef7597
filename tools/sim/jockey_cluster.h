/* jockey_cluster.h - `paddock-sim jockey` on the cluster simulator (tools/sim/cluster.h; the
 * default engine, docs/jockey.md): the job's JM drives Jockey's controller as the daemon does
 * (cluster_jockey.c), its tasks go through the daemon's placement, dispatch and attempt machine
 * to simulated PNs with real pn/queue, other tenants' work fills half the cores in phases that
 * swing each node's load, and every message takes its delay. The same conditions, seeds and
 * figures as the token-slice engine (jockey_engine.h), which stays for the side-by-side table. */
#ifndef PADDOCK_TOOLS_SIM_JOCKEY_CLUSTER_H
#define PADDOCK_TOOLS_SIM_JOCKEY_CLUSTER_H

#include "tools/sim/jockey_engine.h"

/* Time constants of the simulated cluster (heartbeat, background task length, node timeout)
 * scale with the job's critical path above 10 minutes (so a six-hour job does not cost a million
 * heartbeats a run): max(1, critical path / 600). */
double jockey_cluster_scale(double critical_path_s);

/* The training run: `tokens` fixed, the training conditions c (no spare capacity), every ended
 * attempt recorded for profile_build as the JM records it. */
int jockey_cluster_train(const struct spec *spec, int max_tokens, int tokens, double scale,
                         const struct jockey_cond *c, uint64_t seed, struct jockey_attempts *rec);

/* One judged run of policy p (JOCKEY, NOADAPT, AMDAHL, MAX) with plan (its table built) on the
 * world's deadline; opp_factor: the opportunistic allowance per token (--spare). */
int jockey_cluster_run(const struct jockey_world *w, const struct jsim_plan *plan,
                       enum jockey_policy p, double scale, double opp_factor,
                       const struct jockey_cond *c, uint64_t seed, struct jockey_result *out);

#endif
