/* straggler_cluster.c - `paddock-sim stragglers` on the cluster simulator (straggler_cluster.h). */
#include "tools/sim/straggler_cluster.h"

#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/place.h"
#include "tools/sim/cluster.h"

int straggler_cluster_job(const struct spec *sp, enum straggler_mode m,
                          const struct straggler_cond *c, uint64_t seed, struct straggler_run *out)
{
    memset(out, 0, sizeof *out);
    if (m >= STRAGGLER_NMODES || sp == NULL || sp->ntasks == 0 || c->nodes < 2 || c->slots < 1 ||
        !(c->load >= 0) || !(c->load < 1) || !(c->opp_factor >= 0))
        return ERR_INVAL;
    double mean = 0;
    for (size_t t = 0; t < sp->ntasks; t++)
        mean += sp->tasks[t].runtime_s > 0 ? sp->tasks[t].runtime_s : 0.01;
    mean /= (double)sp->ntasks;
    struct cluster_config cfg;
    cluster_config_default(&cfg);
    cfg.nodes = c->nodes;
    cfg.rack_size = 1;
    cfg.node_cpus = (double)c->slots;
    cfg.seed = seed;
    cfg.tokens = c->tokens ? (uint32_t)c->tokens : (uint32_t)(c->nodes * c->slots);
    cfg.opp_factor = c->opp_factor;
    cfg.no_io = 1; /* a task runs its spec's run time, as on the slice engine */
    cfg.hold_max_s = PLACE_HOLD_MAX_S;
    cfg.max_attempts = 1000; /* no failures are injected */
    cfg.bg_util = c->load;
    cfg.bg_runtime_s = mean;
    cfg.bg_cpu = 1;
    cfg.max_time_s = 1e9;
    engine_noise_none(&cfg.noise);
    cfg.noise.runtime_sigma = c->noise_sigma;
    cfg.noise.straggler_prob = c->straggler_prob;
    cfg.noise.straggler_min = c->straggler_min;
    cfg.noise.straggler_max = c->straggler_max;
    cfg.noise.slow_nodes = c->slow_factor > 1 ? 1 : 0;
    cfg.noise.slow_factor = c->slow_factor;
    if (c->burst_rate > 0) { /* the load swings per node instead of bursting */
        cfg.noise.phase_s = 20 * mean;
        cfg.noise.phase_sigma = 0.8;
    }
    cfg.speculate = m == STRAGGLER_SPECULATE;
    cfg.spec_cfg = &c->speculate;
    cfg.correct = m == STRAGGLER_MOVE        ? 1 + CORRECT_MODE_MOVE
                  : m == STRAGGLER_DUPLICATE ? 1 + CORRECT_MODE_DUPLICATE
                  : m == STRAGGLER_SPECULATE ? 1 + (int)c->queued_mode
                                             : 0;
    cfg.correct_cfg = &c->correct;
    struct cluster_job job = {.spec = sp, .arrival_s = 5 * mean};
    struct cluster_result res;
    char msg[256];
    int rc = cluster_run(&cfg, &job, 1, &res, msg, sizeof msg);
    if (rc == 0 && res.jobs_done != 1)
        rc = ERR_STATE;
    if (rc == 0) {
        out->makespan_s = res.makespan_mean_s;
        out->spec_started = (long)res.copies_started;
        out->spec_won = (long)res.copies_won;
        out->dups_started = (long)res.dups_started;
        out->dups_won = (long)res.dups_won;
        out->copies_started = out->spec_started + out->dups_started;
        out->copies_won = out->spec_won + out->dups_won;
        out->moves = (long)res.moves;
        out->copies_gated = (long)res.copies_gated;
        /* the work integral and the winners' sum differ by rounding when nothing was lost */
        out->work_s =
            res.work_cpu_s > res.useful_cpu_s * (1 + 1e-9) ? res.work_cpu_s : res.useful_cpu_s;
        out->useful_s = res.useful_cpu_s;
    }
    mem_free(res.qtimes);
    mem_free(res.trace);
    mem_free(res.job_stats);
    return rc;
}
