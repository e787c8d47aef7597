/* cluster.h - `paddock-sim cluster`: a whole Apollo cluster in virtual time (Apollo §3, §5.2-5.4;
 * docs/architecture.md, "The simulator").
 *
 * Many simulated PNs, each with a real pn/queue and pn/matrix; an RM whose view of them arrives
 * late (each PN's matrix leaves it on its heartbeat, every heartbeat_s, in one of `hb_groups`
 * phase groups, and reaches the JMs rm_delay_s later); many JMs, each with its own tokens, its
 * own jm/dag, jm/estimator, jm/place (candidate sets + stable matcher) and jm/dispatch, ordering
 * ready tasks with jm/priority. Other tenants' regular work arrives at every PN as background
 * load whose rate swings in phases (fluctuating spare capacity), and tools/sim/engine_noise.h
 * supplies run-time variance, heavy tails, stragglers, task failures and node loss.
 *
 * Simplifications (written down in docs/benchmarks.md): all JMs read one copy of the RM's
 * published view (they would hold identical copies: they subscribe to the same publication), so
 * the matrices PNs return with task status are not modelled; JM<->PN messages take net_delay_s;
 * file staging is folded into the task's I/O time; inputs get three replicas on random nodes
 * (two racks) when a job is loaded; lost tasks are noticed node_timeout_s after the loss.
 *
 * "Without estimation" (Apollo Figure 11) is the same JMs with a view that carries no wait-time
 * matrices and no queue lengths: placement by locality and the random term only, random picks
 * spread over the whole cluster.
 */
#ifndef PADDOCK_TOOLS_SIM_CLUSTER_H
#define PADDOCK_TOOLS_SIM_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "jm/jsim.h"
#include "jm/spec.h"
#include "jm/utility.h"
#include "tools/sim/engine_noise.h"

struct correct_config;
struct speculate_config;

#define CLUSTER_MAX_NODES 100000
#define CLUSTER_MAX_JOBS  100000

/* Public value struct: cluster_config_default() then adjust. */
struct cluster_config {
    size_t nodes;          /* PNs (default 1000) */
    size_t rack_size;      /* nodes per rack (default 40) */
    double node_cpus;      /* cores per node (default 8) */
    double node_mem_mb;    /* MiB per node (default 32768) */
    uint64_t seed;         /* default 1 */
    int estimation;        /* 1: JMs see wait-time matrices (default); 0: Figure 11 baseline */
    int status_matrix;     /* 1: task status carries the PN's matrix to the JMs (default) */
    uint32_t tokens;       /* guaranteed tokens per job (default 40) */
    double opp_factor;     /* opportunistic allowance per token (default 1.0) */
    double arrival_mean_s; /* mean gap between job arrivals (default 0.5) */
    double heartbeat_s;    /* PN heartbeat interval (default 1.0) */
    size_t hb_groups;      /* heartbeat phases (default 10) */
    double rm_delay_s;     /* heartbeat -> JM view (default 0.5; < heartbeat_s) */
    double net_delay_s;    /* one JM<->PN message (default 0.001) */
    double round_s;        /* a JM's scheduling round after something changed (default 0.02) */
    size_t max_batch;      /* tasks placed per round at most (default 256) */
    double hold_max_s;     /* late binding (jm/place.h place_hold; default 0: off, `paddock-sim
                              predict` sets the daemon's PLACE_HOLD_MAX_S) */
    double matrix_min_interval_s; /* a PN recomputes the matrix a queued or running status carries
                                     at most this often (pn.conf matrix_min_interval; an end's
                                     status always fresh; default 0: always fresh) */
    double tick_s;          /* while it holds tasks, a JM looks again this often (default 0.25,
                               the daemon's tick) */
    int max_attempts;       /* per task (default 4) */
    double node_timeout_s;  /* lost node's tasks re-placed after this (default 3 heartbeats) */
    double bg_util;         /* mean background CPU load per node, share of cores (default 0.5) */
    double bg_runtime_s;    /* mean background task run time (default 20) */
    double bg_cpu;          /* cores per background task (default 1) */
    double window_s;        /* window of the per-machine queueing-time stdev (default 60) */
    double max_time_s;      /* virtual-time cap (default 36000) */
    double task_overhead_s; /* added to every job task's run: the PN's process start and exit
                               and the status back (default 0; `paddock-sim predict` sets it) */
    int no_io;              /* 1: job tasks read nothing (sleep-only specs; default 0) */
    int grain;              /* 1: token units as the daemon counts them (jm/grain.h: a task costs
                               its share of a default-sized token in hundredths, a round's batch is
                               the free units and 4 more); 0: one unit per task (default) */
    int trace;              /* 1: every ended job attempt recorded in cluster_result.trace */
    /* 1: a job without a controller holds min(tokens, its width) (jm/grant.h, grant_width: the
       daemon's first request; `paddock-sim predict` sets it); 0: tokens (default) */
    int width_first;
    double run_slowdown; /* every job task's run time times this (a slow run: Jockey's
                            whole-run slowdown; default 1) */
    struct engine_noise noise;
    /* borrowed; NULL: none (each job holds `tokens` or its Jockey's) */
    const struct cluster_hooks *hooks;
    int speculate; /* 1: JMs start speculative copies of stragglers as the daemon does
                      (cluster_straggler.c; not with Jockey or hooks); default 0 */
    const struct speculate_config *spec_cfg; /* borrowed; NULL: jm/speculate.h's defaults */
    int correct; /* queued regular tasks re-evaluated each tick (jm/correct.h, cluster_straggler.c):
                    0 off (default), 1 + enum correct_mode (move or duplicate) */
    const struct correct_config *correct_cfg; /* borrowed; NULL: jm/correct.h's defaults */
};

void cluster_config_default(struct cluster_config *cfg);

/* Hooks into the simulated cluster (cluster_config.hooks): `paddock-sim arbiter` sets every
 * job's tokens from the RM's ledger through them (cluster_arbiter.c). `world` is the run's state
 * (cluster_internal.h). arrive: a job arrived (before its first round); an error stops the run.
 * end: a job ended (succeeded or failed). */
struct cluster_hooks {
    void *ctx;
    int (*arrive)(void *ctx, void *world, size_t job);
    void (*end)(void *ctx, void *world, size_t job);
};

/* Jockey in a job's JM (cluster_jockey.c; docs/jockey.md): the daemon's controller setup
 * (controller_config_jm: a control period of deadline / 30, 1 to 60 s): jm/progress over the stages
 * done, controller_step with the grant, the spare capacity and the observed speed, the guaranteed
 * tokens it asks for granted at once (the simulated RM has them: one virtual cluster of
 * `max_tokens`), the opportunistic allowance by jm/grant.h's rule, and downgrades and upgrades
 * through jm/attempt.h when a grant comes (cl_job_grant). */
enum cluster_jockey_policy {
    CLUSTER_JOCKEY_CONTROL = 0, /* the controller over the plan's predictor (C(p, a) when the plan
                                   has a table, else the Amdahl model): the daemon's */
    CLUSTER_JOCKEY_NOADAPT,     /* the controller's first decision, kept for the whole run */
    CLUSTER_JOCKEY_AMDAHL,      /* the controller over the plan's Amdahl model */
    CLUSTER_JOCKEY_FIXED,       /* fixed_tokens throughout (no controller) */
};

struct cluster_jockey {
    int policy;                      /* enum cluster_jockey_policy */
    int fixed_tokens;                /* CLUSTER_JOCKEY_FIXED */
    const struct jsim_plan *plan;    /* BORROWED; NULL: the daemon's plan without a profile (the
                                        spec's estimates, Amdahl predictor) built per job */
    double deadline_s;               /* > 0 */
    const struct utility *utility;   /* BORROWED; NULL: Jockey 5.1's from deadline_s */
    int max_tokens;                  /* the virtual cluster's capacity: the most a job is granted */
    int speed;                       /* 1: the observed speed goes to the controller (the daemon) */
    double change_at_s, change_to_s; /* > 0: at change_at_s the deadline becomes change_to_s */
};

/* One job to run: a parsed spec (borrowed for the run) and its arrival time. */
struct cluster_job {
    const struct spec *spec;
    double arrival_s;
    const struct cluster_jockey *jockey; /* NULL: cfg.tokens throughout */
    const double *run_s; /* borrowed; per task: its run time in place of the noise model's draw
                            (NULL: drawn from spec runtime_s and cfg.noise) */
};

/* Per job, when any job runs Jockey (cluster_result.job_stats). */
struct cluster_job_stat {
    int done, failed;
    double makespan_s;   /* finish - arrival (until the run's end when not finished) */
    double work_s;       /* run time of the attempts that succeeded */
    double deadline_s;   /* the deadline at the end (the changed one, if it changed) */
    double alloc_mean;   /* time-averaged guaranteed tokens held */
    double alloc_before; /* ... before the deadline changed (0 without a change) */
    double alloc_after;  /* ... after it */
    int first_tokens, peak_tokens;
    uint64_t downgrades, upgrades;
};

/* One ended attempt of a job task (cfg.trace), times in virtual seconds from its job's arrival,
 * in the shape of the attempts of a job's report.json (docs/deadline-eval.md reads both). */
struct cluster_trace_rec {
    uint32_t job, task, attempt, node;
    double ready_s;  /* entered the JM's ready queue */
    double placed_s; /* the JM's decision */
    double queued_s; /* arrival at the PN */
    double start_s, end_s;
    int outcome; /* 1 succeeded, 0 failed, -1 preempted */
};

struct cluster_result {
    size_t nodes, jobs, jobs_done, jobs_failed;
    uint64_t copies_started, copies_won; /* cfg.speculate: copies, and those that finished first */
    uint64_t copies_gated; /* copies the rule wanted and no token or allowance was free for */
    uint64_t moves;        /* cfg.correct: queued tasks moved */
    uint64_t dups_started, dups_won; /* ... duplicated, and duplicates that started first */
    /* upgrades re-placed as regular on a better node (judge_upgrade) */
    uint64_t rematched;
    /* a job's running opportunistic tasks made regular in place of its queued one (queue_swap) */
    uint64_t swaps;
    double work_cpu_s;   /* core-seconds job attempts ran, losers and failures included */
    double useful_cpu_s; /* core-seconds of the attempts that succeeded */
    size_t jobs_peak;    /* most jobs running at once */
    uint64_t tasks, attempts, failures, preemptions, lost, node_losses;
    uint64_t trades;     /* class trades inside one job at the nodes (queue_pick_trade) */
    uint64_t decisions;  /* tasks dispatched by JMs (placement decisions carried out) */
    uint64_t events;     /* engine events run */
    double wall_s;       /* simulator wall time of the run */
    double place_wall_s; /* wall time inside place_round (the JMs' placement code) */
    double sim_time_s;   /* virtual time of the last job completion */
    double q_mean, q_p50, q_p90, q_p99, q_max; /* job tasks' queueing time at the PN, seconds */
    double q_stdev_machines; /* Figure 8c: mean over windows of the stdev across machines of
                                each machine's mean queueing time in the window */
    double q_stdev_run;      /* the same over the whole run as one window */
    double util;             /* CPU used / capacity over the jobs' span (all work) */
    double util_jobs;        /* the jobs' share of it */
    double makespan_mean_s;  /* mean job completion - arrival */
    double view_age_mean_s;  /* mean age of the chosen node's matrix at placement */
    long peak_rss_kb;        /* filled by the caller (getrusage) */
    double *qtimes;          /* every job task attempt's queueing time, sorted (caller owns:
                                mem_free); for the CDF */
    size_t nqtimes;
    struct cluster_trace_rec *trace; /* cfg.trace: in end order (caller owns: mem_free) */
    size_t ntrace;
    struct cluster_job_stat *job_stats; /* per job when any job has `jockey`, else NULL (caller
                                           owns: mem_free) */
};

/* Runs jobs[0..njobs) on the cluster. Fills *out (caller owns out->qtimes). Returns 0,
 * ERR_INVAL (bad configuration, with a reason in msg), ERR_NOMEM, or a module's error. */
int cluster_run(const struct cluster_config *cfg, const struct cluster_job *jobs, size_t njobs,
                struct cluster_result *out, char *msg, size_t cap);

/* Workloads (cluster_workload.c). A loaded workload is a spec document (jansson) whose inputs
 * get replica nodes per job when a job is made from it. */
struct cluster_workloads;

/* Loads every *.json in dir (sorted by name): WfCommons instances are imported in-process
 * (tools/wfcommons.h, time_scale applied, cpu and memory capped at the node's), Paddock specs
 * are taken as they are. ERR_IO, ERR_NOTFOUND (no workload), ERR_PARSE / ERR_INVAL with msg. */
int cluster_workloads_load(const char *dir, double time_scale, double max_cpu, uint64_t max_mem_mb,
                           struct cluster_workloads **out, char *msg, size_t cap);
/* Synthetic map-reduce jobs (a map stage, a reduce stage after it) drawn from `seed`. */
int cluster_workloads_synthetic(size_t count, uint64_t seed, struct cluster_workloads **out);
size_t cluster_workloads_count(const struct cluster_workloads *w);
const char *cluster_workloads_name(const struct cluster_workloads *w, size_t i);
void cluster_workloads_destroy(struct cluster_workloads **p);

/* Makes job i's spec from workload i mod count: every input of at least 10% of its task's
 * bytes gets three replicas ("pn-<n>": a random node, and two nodes of one other rack), drawn
 * from (seed, i). Caller owns *out (spec_destroy). */
int cluster_workloads_make(const struct cluster_workloads *w, size_t i, uint64_t seed, size_t nodes,
                           size_t rack_size, struct spec **out, char *msg, size_t cap);

/* Writes an SVG plot of the queueing-time CDFs (sorted samples) of up to 4 runs. ERR_IO. */
int cluster_svg_cdf(const char *path, const char *title, const double *const *samples,
                    const size_t *n, const char *const *labels, size_t nseries);

#endif
