/* arbiter_sim_internal.h - the job set of `paddock-sim arbiter` as the runs read it (private to
 * tools/sim/arbiter_sim*.c). */
#ifndef PADDOCK_TOOLS_SIM_ARBITER_SIM_INTERNAL_H
#define PADDOCK_TOOLS_SIM_ARBITER_SIM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tools/sim/arbiter_sim.h"

/* One job: a DAG of nodes, its tasks first and then zero-length barrier nodes (one per stage of
 * a spec, one between a Facebook job's maps and reduces). Read-only once built. */
struct arbiter_sim_job {
    size_t n;          /* nodes */
    double *est;       /* per node: the estimate, seconds (0 for a barrier) */
    double *dur;       /* per node: the true run time */
    uint32_t *tok;     /* per node: sized tokens (0 for a barrier) */
    uint32_t *npred;   /* per node: predecessors */
    uint32_t *succ_at; /* n + 1 offsets into succ */
    uint32_t *succ;
    double *bl;        /* per node: bottom level on estimates (the node and its longest tail) */
    uint32_t *by_bl;   /* nodes by bottom level, highest first (ties by index) */
    uint32_t *bl_rank; /* per node: its place in by_bl */
    double arrival;    /* seconds */
    double deadline;   /* relative to arrival; 0: none */
    double work_est;   /* token-seconds on estimates */
    double work_true;  /* token-seconds of true run times */
    double path_est;   /* critical path on estimates */
    double work_sd;    /* the shape's standard deviations (conservative bound) */
    double path_sd;
    uint32_t width;      /* most tokens it can use at once (estimates), at most capacity */
    uint32_t max_tok;    /* its largest task */
    double alone;        /* true makespan on the whole cluster */
    uint32_t oracle_dag; /* deadline jobs: smallest constant k meeting it on true run times */
    uint32_t oracle_td;  /* ceil(work_true / deadline) */
    double alpha;        /* its list schedule's place between ARIA's bounds at min(capacity,
                            width) tokens on estimates (rm/arbiter.h arbiter_shape.alpha): from
                            the JM's simulator, jm/shape.h shape_alpha on a WfCommons spec, or
                            jm/jsim on a Facebook job built by hand */
    double path_stretch; /* admission's critical path over path_est: the JM's simulator's path
                            under the task noise's spread (jm/shape.h shape_alpha with a ratio
                            profile; config spread), 1 without it */
    double spread;       /* its own spread (rm/arbiter.h arbiter_shape.spread) from the same
                            simulation with spread on; 0 without it */
    int owns_graph;      /* 1: tok, npred, succ_at, succ, by_bl, bl_rank are this job's; 0:
                            borrowed from a WfCommons template (jobs.tmpl) */
    size_t tmpl_i;       /* WfCommons: its template */
    double scale;        /* WfCommons: its estimates over the template's */
    /* The cluster engine's job (cluster_arbiter.c): a spec whose tasks are this job's (the
     * template's with its estimates; a Facebook job's maps and reduces) and per spec task its
     * true run time (dur of the task's node). */
    struct spec *cspec;
    double *crun;
};

struct arbiter_sim_jobs {
    struct arbiter_sim_job *v;
    size_t n;
    uint32_t capacity;
    double mean_gap;
    struct arbiter_sim_job *tmpl; /* WfCommons templates (est unscaled, no dur) */
    size_t ntmpl;
    char **tmpl_names;
    struct spec **tmpl_spec; /* the cluster engine: each template's spec, imported */
};

/* cluster_arbiter.c: the cluster engine's spec and run times of every job (cspec, crun), made
 * once per job set. 0 or an ERR_* with msg. */
int arbiter_cluster_prepare(struct arbiter_sim_jobs *s, const struct arbiter_sim_config *cfg,
                            char *msg, size_t cap);

/* cluster_arbiter.c: arbiter_sim_run on the cluster engine. */
int arbiter_cluster_run(const arbiter_sim_jobs_t *s, const struct arbiter_sim_config *cfg,
                        enum arbiter_sim_policy p, int admission, const uint8_t *ref_met,
                        uint8_t *met, struct arbiter_sim_result *out);

/* A run's figures as its jobs end, the same for both engines: arbiter_sim_tally_job for every
 * job in order, then arbiter_sim_tally_end. */
struct arbiter_sim_tally {
    double first, last, work, comp, alloc, vs_dag, vs_td, rde;
};

void arbiter_sim_tally_init(struct arbiter_sim_tally *t);

/* Job i (j) ended at `finish` having held `acc` token-seconds, `refused` at admission or not:
 * counted in *out (done, deadlines met and missed, admitted, false refusals) and met[i] (may be
 * NULL) set when it had a deadline and met it; ref_met (may be NULL) says which jobs met theirs
 * when the same seed ran without admission. Returns its time from arrival to end. */
double arbiter_sim_tally_job(struct arbiter_sim_tally *t, struct arbiter_sim_result *out,
                             const struct arbiter_sim_job *j, size_t i, double finish, double acc,
                             int refused, const uint8_t *ref_met, uint8_t *met);

/* The fractions and means of *out over `njobs` jobs on `capacity` tokens. */
void arbiter_sim_tally_end(const struct arbiter_sim_tally *t, struct arbiter_sim_result *out,
                           size_t njobs, double capacity);

/* Makespan of job j on a constant k tokens by greedy list scheduling (highest bottom level
 * first), on true run times (use_true) or estimates; *peak (may be NULL) gets the most tokens in
 * use at once. INFINITY when a task needs more than k tokens; a negative value on ERR_NOMEM. */
double arbiter_sim_makespan(const struct arbiter_sim_job *j, uint32_t k, int use_true,
                            uint32_t *peak);

#endif
