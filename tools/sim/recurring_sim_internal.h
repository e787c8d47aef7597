/* recurring_sim_internal.h - the jobs of `paddock-sim recurring` as the runs read them (private to
 * tools/sim/recurring_sim*.c). */
#ifndef PADDOCK_TOOLS_SIM_RECURRING_SIM_INTERNAL_H
#define PADDOCK_TOOLS_SIM_RECURRING_SIM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tools/sim/recurring_sim.h"

/* A job's stages on estimates: a DAG, read-only once built. Work in token-steps. */
struct rsim_shape {
    size_t ns;
    double *work;      /* per stage: estimated work */
    uint32_t *width;   /* per stage: most tokens it can use at once (>= 1) */
    uint32_t *npred;   /* per stage: stages it waits for */
    uint32_t *succ_at; /* ns + 1 offsets into succ */
    uint32_t *succ;
    double *bl;      /* per stage: bottom level on estimates at full width, steps */
    uint32_t *order; /* stages by bottom level, highest first */
    double work_est, path_est;
    uint32_t width_max; /* most tokens it can use at once, at full width */
};

/* A periodic job. */
struct rsim_periodic {
    struct rsim_shape sh;
    uint32_t period;   /* steps */
    uint32_t deadline; /* given, steps from the release; 0: none (inferred after the warm-up) */
    size_t tmpl;
};

/* An ad-hoc job. */
struct rsim_adhoc {
    struct rsim_shape sh;
    double *noise;     /* per stage: true / estimated work */
    uint32_t arrive;   /* step */
    uint32_t deadline; /* steps from the arrival; 0: none */
    size_t tmpl;
};

struct recurring_sim_jobs {
    struct rsim_periodic *p;
    size_t np;
    struct rsim_adhoc *a;
    size_t na;
    uint32_t lcm;
    double periodic_load, adhoc_load, adhoc_gap;
    uint64_t seed;
    double step_s;
};

/* Stream numbers of the engine's random streams. */
#define RSIM_STREAM_RUN 0x72756e0000000000ull /* | job << 24 | run */

#endif
