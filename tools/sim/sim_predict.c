/* sim_predict.c - `paddock-sim predict SPEC [--nodes N] [--node-cpus C] [--node-mem-mb M]
 * [--tokens T] [--deadline S] [--overhead-s X] [--net-delay-s X] [--round-s X] [--hold-max-s X]
 * [--heartbeat S] [--trace FILE] [--json]`: what the cluster simulator (tools/sim/cluster.h)
 * predicts for one job alone on a small cluster like the one `paddock cluster up` starts: N nodes
 * of C cpus and M MiB (2048), no other tenants, no noise, tasks that only sleep their estimate
 * (no input reads). The simulated JM drives the daemon's own modules (readyq order, place with
 * late binding, dispatch in token hundredths, dag, estimator, jm/attempt.h) and every node a real
 * pn/queue; what the simulator adds per task is `--overhead-s` (the PN's process start and exit
 * and the status back), `--net-delay-s` per JM<->PN message and `--round-s` from a status to the
 * JM's round (`--hold-max-s`: late binding's PLACE_HOLD_MAX_S; a JM holding tasks looks again
 * every 0.25 s), and the daemon's deferred corrections, straggler copies and re-placed upgrades
 * (jm/correct.h, jm/speculate.h, jm/judge.h through cluster_straggler.c); its nodes swap classes
 * inside a job as the PN does (queue_swap), and a job without a controller holds its width
 * (grant_width). `--json` counts the moves, duplicates, copies, re-placed upgrades and swaps.
 * `--trace FILE` writes every attempt in the shape of a report's. tools/deadline-eval prints the
 * prediction beside each real run (sim_makespan_s, sim_met; docs/deadline-eval.md, which shows
 * where each figure comes from). `--controller` (with a deadline) runs Jockey's controller in the
 * simulated JM as the daemon does for a job without a profile (the spec's estimates, Amdahl's
 * predictor; tools/sim/cluster_jockey.c): its grant follows the controller instead of holding every
 * token.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/correct.h"
#include "jm/place.h"
#include "jm/spec.h"
#include "tools/cli.h"
#include "tools/sim/sim_args.h"
#include "tools/sim/cluster.h"

/* Measured, not fitted: the means of the per-task components read from real runs' report.json
 * (bwa, montage and both chain-and-fan-out DAGs on the default local cluster, 2 cores;
 * docs/deadline-eval.md, "Where the simulator and the cluster part"): a `sleep X` task holds its
 * slot X + 3-6 ms (fork, exec, exit, the status) and starts 1-2 ms after it reaches a PN with
 * room; a token freed by an end carries the next task to a PN 6-9 ms later, two messages and a
 * round that runs at the daemon's next loop turn. */
#define SP__OVERHEAD_S   0.005
#define SP__NET_DELAY_S  0.003
#define SP__HEARTBEAT_S  1.0
#define SP__ROUND_S      0.0015
#define SP__MATRIX_MIN_S 0.02 /* pn.conf's matrix_min_interval default (pn/pnconf.c) */

/* Writes the run's attempts as JSON in the shape of a job report's "attempts" (the same script
 * reads a real run and a simulated one side by side: docs/deadline-eval.md). */
static int sp__trace(const char *path, const struct spec *s, const struct cluster_result *r)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return ERR_IO;
    static const char *state[] = {"preempted", "failed", "succeeded"};
    fprintf(f, "{\"makespan_s\": %.3f, \"attempts\": [", r->makespan_mean_s);
    for (size_t i = 0; i < r->ntrace; i++) {
        const struct cluster_trace_rec *t = &r->trace[i];
        fprintf(f,
                "%s\n{\"task\": \"%s\", \"stage\": \"%s\", \"attempt\": %u, \"node\": \"pn-%u\", "
                "\"placed_s\": %.4f, \"queued_s\": %.4f, \"start_s\": %.4f, \"end_s\": %.4f, "
                "\"state\": \"%s\"}",
                i ? "," : "", s->tasks[t->task].id, s->stages[s->tasks[t->task].stage].name,
                t->attempt, t->node, t->placed_s, t->queued_s, t->start_s, t->end_s,
                state[t->outcome + 1]);
    }
    fprintf(f, "\n]}\n");
    return fclose(f) == 0 ? 0 : ERR_IO;
}

static int sp__usage(void)
{
    fprintf(cli_usage_out(),
            "usage: paddock-sim predict SPEC [--nodes N] [--node-cpus C] [--node-mem-mb M] "
            "[--tokens T]\n"
            "         [--deadline S] [--overhead-s X] [--net-delay-s X] [--heartbeat S] "
            "[--round-s X] [--hold-max-s X] [--opp C]\n"
            "         [--controller] [--trace FILE] [--json]\n");
    return 2;
}

static int sp__main(int argc, char **argv)
{
    struct cluster_config cfg;
    cluster_config_default(&cfg);
    cfg.nodes = 4;
    cfg.node_cpus = 2;
    cfg.tokens = 8;
    cfg.bg_util = 0;
    cfg.arrival_mean_s = 0;
    cfg.heartbeat_s = SP__HEARTBEAT_S;
    cfg.hb_groups = 1;
    cfg.rm_delay_s = 0.05;
    cfg.net_delay_s = SP__NET_DELAY_S;
    cfg.task_overhead_s = SP__OVERHEAD_S;
    cfg.round_s = SP__ROUND_S;
    cfg.max_attempts = 3;
    cfg.hold_max_s = PLACE_HOLD_MAX_S; /* the daemon's late binding */
    cfg.matrix_min_interval_s = SP__MATRIX_MIN_S;
    cfg.grain = 1;          /* the daemon's token units and batch */
    cfg.max_batch = 512;    /* jmd_sched.c's JMD_SCHED__BATCH */
    cfg.node_mem_mb = 2048; /* `paddock cluster up`'s PNs */
    cfg.no_io = 1;
    cfg.opp_factor = 0;  /* a job alone sends no opportunistic work its tokens cover */
    cfg.width_first = 1; /* without a controller it asks for its width, as the daemon's does */
    engine_noise_none(&cfg.noise);
    const char *path = NULL, *trace = NULL;
    double deadline = 0, v;
    int json = 0, controller = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--json") == 0) {
            json = 1;
            continue;
        }
        if (strcmp(a, "--controller") == 0) {
            controller = 1;
            continue;
        }
        if (a[0] != '-') {
            if (path)
                return sp__usage();
            path = a;
            continue;
        }
        if (val == NULL)
            return sp__usage();
        i++;
        if (strcmp(a, "--nodes") == 0 && sim_args_num(val, 1, 10000, &v) == 0)
            cfg.nodes = (size_t)v;
        else if (strcmp(a, "--node-cpus") == 0 && sim_args_num(val, 0.1, 1024, &cfg.node_cpus) == 0)
            ;
        else if (strcmp(a, "--node-mem-mb") == 0 &&
                 sim_args_num(val, 1, 1e9, &cfg.node_mem_mb) == 0)
            ;
        else if (strcmp(a, "--tokens") == 0 && sim_args_num(val, 1, 1e6, &v) == 0)
            cfg.tokens = (uint32_t)v;
        else if (strcmp(a, "--deadline") == 0 && sim_args_num(val, 0, 1e9, &deadline) == 0)
            ;
        else if (strcmp(a, "--overhead-s") == 0 &&
                 sim_args_num(val, 0, 60, &cfg.task_overhead_s) == 0)
            ;
        else if (strcmp(a, "--net-delay-s") == 0 && sim_args_num(val, 0, 10, &cfg.net_delay_s) == 0)
            ;
        else if (strcmp(a, "--trace") == 0) {
            trace = val;
            cfg.trace = 1;
        } else if (strcmp(a, "--opp") == 0 && sim_args_num(val, 0, 100, &cfg.opp_factor) == 0)
            ;
        else if (strcmp(a, "--hold-max-s") == 0 && sim_args_num(val, 0, 60, &cfg.hold_max_s) == 0)
            ;
        else if (strcmp(a, "--round-s") == 0 && sim_args_num(val, 0, 10, &cfg.round_s) == 0)
            ;
        else if (strcmp(a, "--heartbeat") == 0 &&
                 sim_args_num(val, 0.01, 60, &cfg.heartbeat_s) == 0)
            cfg.rm_delay_s = cfg.heartbeat_s / 20;
        else
            return sp__usage();
    }
    if (!path || (controller && !(deadline > 0)))
        return sp__usage();
    if (!controller) { /* the daemon's jmd_spec: copies of stragglers, duplicates or moves of
                          queued tasks (with Jockey's grant the simulator has neither yet) */
        cfg.speculate = 1;
        cfg.correct = 1 + CORRECT_MODE_DUPLICATE;
    }
    cfg.rack_size = cfg.nodes;
    char msg[512] = "";
    struct spec *s = NULL;
    int rc = spec_load(path, NULL, &s, msg, sizeof msg);
    if (rc != 0) {
        fprintf(stderr, "paddock-sim predict: %s: %s\n", path, msg[0] ? msg : err_text(rc));
        return 1;
    }
    struct cluster_jockey jk = {.policy = CLUSTER_JOCKEY_CONTROL,
                                .deadline_s = deadline,
                                .max_tokens = (int)cfg.tokens,
                                .speed = 1};
    struct cluster_job job = {.spec = s, .arrival_s = 0, .jockey = controller ? &jk : NULL};
    struct cluster_result res;
    memset(&res, 0, sizeof res);
    rc = cluster_run(&cfg, &job, 1, &res, msg, sizeof msg);
    if (rc != 0) {
        fprintf(stderr, "paddock-sim predict: %s\n", msg[0] ? msg : err_text(rc));
    } else {
        double ms = res.makespan_mean_s;
        int ok = res.jobs_done == 1;
        char dl[32] = "null", ctl[96] = "";
        if (deadline > 0)
            snprintf(dl, sizeof dl, "%.3f", deadline);
        const struct cluster_job_stat *st = res.job_stats;
        if (json) {
            if (st != NULL)
                snprintf(ctl, sizeof ctl,
                         ", \"controller\": {\"mean_tokens\": %.2f, \"first\": %d, \"peak\": %d}",
                         st->alloc_mean, st->first_tokens, st->peak_tokens);
            printf("{\"tasks\": %zu, \"nodes\": %zu, \"node_cpus\": %g, \"tokens\": %u, "
                   "\"succeeded\": %s, \"makespan_s\": %.3f, \"attempts\": %llu, "
                   "\"preemptions\": %llu, \"trades\": %llu, \"moves\": %llu, "
                   "\"duplicates\": %llu, \"copies\": %llu, \"rematched\": %llu, \"swaps\": %llu, "
                   "\"deadline_s\": %s, \"met\": %s%s}\n",
                   s->ntasks, cfg.nodes, cfg.node_cpus, cfg.tokens, ok ? "true" : "false", ms,
                   (unsigned long long)res.attempts, (unsigned long long)res.preemptions,
                   (unsigned long long)res.trades, (unsigned long long)res.moves,
                   (unsigned long long)res.dups_started, (unsigned long long)res.copies_started,
                   (unsigned long long)res.rematched, (unsigned long long)res.swaps, dl,
                   deadline > 0 ? (ok && ms <= deadline ? "true" : "false") : "null", ctl);
        } else {
            if (st != NULL)
                snprintf(ctl, sizeof ctl, " (controller: %d tokens first, %d at most, %.2f mean)",
                         st->first_tokens, st->peak_tokens, st->alloc_mean);
            printf("%s: %zu tasks on %zu nodes of %g cpus, %u tokens%s: %s in %.2f s "
                   "(simulated)%s\n",
                   s->name, s->ntasks, cfg.nodes, cfg.node_cpus, cfg.tokens, ctl,
                   ok ? "succeeded" : "failed", ms,
                   deadline > 0 ? (ok && ms <= deadline ? ", deadline met" : ", deadline missed")
                                : "");
        }
    }
    if (rc == 0 && trace && sp__trace(trace, s, &res) != 0) {
        fprintf(stderr, "paddock-sim predict: %s: cannot write the trace\n", trace);
        rc = ERR_IO;
    }
    mem_free(res.qtimes);
    mem_free(res.trace);
    mem_free(res.job_stats);
    spec_destroy(&s);
    return rc == 0 ? 0 : 1;
}

CLI_COMMAND("predict", "one job alone on a small cluster: the makespan the simulator predicts",
            sp__main, sp__usage)
