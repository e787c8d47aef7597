/* sim_stragglers.c - `paddock-sim stragglers`: the shipped workloads with injected stragglers
 * (a fraction of attempts 3-10x slower, one slow node) under no correction, moves, duplicates
 * and speculation, the JM's own policy code deciding (tools/sim/straggler_sim.h; issue 15).
 *
 *   paddock-sim stragglers [--runs N] [--seed S] [--workloads DIR] [--only NAME] [--nodes N]
 *                          [--slots N] [--load X] [--straggler-prob P] [--slow-factor F]
 *                          [--slack X] [--queued move|duplicate] [--spec-gain G]
 *                          [--spec-cap F] [--engine cluster|slice] [--json]
 *
 * --engine cluster (the default) runs the job on the cluster simulator (straggler_cluster.h:
 * the simulated JM drives the daemon's attempt machine, its copies on the daemon's rule and
 * gate, its moves and duplicates on the daemon's deferred correction). --engine slice keeps the
 * experiment's own slots and queues (straggler_sim.h) for the old figures (docs/stragglers.md).
 *
 * --spec-gain and --spec-cap change jm/speculate.h's gain and its three cap fractions (job in
 * flight, job in all, stage in flight) for the experiment in docs/stragglers.md.
 *
 * --json prints exactly {"modes": {"none"|"move"|"duplicate"|"speculate": {"makespan_p50_s",
 * "makespan_p99_s", "missed_fraction", "copies_started", "copies_won", "extra_work_fraction"}}}.
 * Same arguments and seed, same bytes.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "tools/cli.h"
#include "tools/sim/sim_args.h"
#include "tools/sim/straggler_sim.h"

static int ss__usage(void)
{
    fprintf(cli_usage_out(),
            "usage: paddock-sim stragglers [--runs N] [--seed S] [--workloads DIR] [--only NAME]\n"
            "                              [--nodes N] [--slots N] [--load X] "
            "[--straggler-prob P]\n"
            "                              [--slow-factor F] [--slack X] "
            "[--queued move|duplicate]\n"
            "                              [--spec-gain G] [--spec-cap F] [--tokens N]\n"
            "                              [--opp-factor C] [--engine cluster|slice] [--json]\n"
            "  --workloads defaults to tests/data/wfcommons (WfCommons instances)\n");
    return 2;
}

static int ss__parse(int argc, char **argv, struct straggler_sim_config *c, int *json)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
        if (strcmp(a, "--json") == 0) {
            *json = 1;
            continue;
        }
        if (v == NULL)
            return -1;
        i++;
        if (strcmp(a, "--runs") == 0 && sim_args_num(v, 1, 10000, &x) == 0)
            c->runs = (size_t)x;
        else if (strcmp(a, "--seed") == 0 && sim_args_num(v, 0, 1e15, &x) == 0)
            c->seed = (uint64_t)x;
        else if (strcmp(a, "--workloads") == 0)
            c->workloads = v;
        else if (strcmp(a, "--only") == 0)
            c->only = v;
        else if (strcmp(a, "--nodes") == 0 && sim_args_num(v, 2, 4096, &x) == 0)
            c->cond.nodes = (size_t)x;
        else if (strcmp(a, "--slots") == 0 && sim_args_num(v, 1, 64, &x) == 0)
            c->cond.slots = (size_t)x;
        else if (strcmp(a, "--load") == 0 && sim_args_num(v, 0.01, 0.95, &x) == 0)
            c->cond.load = x;
        else if (strcmp(a, "--straggler-prob") == 0 && sim_args_num(v, 0, 1, &x) == 0)
            c->cond.straggler_prob = x;
        else if (strcmp(a, "--slow-factor") == 0 && sim_args_num(v, 1, 100, &x) == 0)
            c->cond.slow_factor = x;
        else if (strcmp(a, "--slack") == 0 && sim_args_num(v, 1, 100, &x) == 0)
            c->slack = x;
        else if (strcmp(a, "--spec-gain") == 0 && sim_args_num(v, 0, 10, &x) == 0)
            c->cond.speculate.gain = x;
        else if (strcmp(a, "--spec-cap") == 0 && sim_args_num(v, 0, 1, &x) == 0)
            c->cond.speculate.job_cap_frac = c->cond.speculate.job_total_frac =
                c->cond.speculate.stage_cap_frac = x;
        else if (strcmp(a, "--tokens") == 0 && sim_args_num(v, 1, 1000000, &x) == 0)
            c->cond.tokens = (size_t)x;
        else if (strcmp(a, "--opp-factor") == 0 && sim_args_num(v, 0, 100, &x) == 0)
            c->cond.opp_factor = x;
        else if (strcmp(a, "--engine") == 0 && strcmp(v, "cluster") == 0)
            c->engine = STRAGGLER_ENGINE_CLUSTER;
        else if (strcmp(a, "--engine") == 0 && strcmp(v, "slice") == 0)
            c->engine = STRAGGLER_ENGINE_SLICE;
        else if (strcmp(a, "--queued") == 0 && strcmp(v, "move") == 0)
            c->cond.queued_mode = CORRECT_MODE_MOVE;
        else if (strcmp(a, "--queued") == 0 && strcmp(v, "duplicate") == 0)
            c->cond.queued_mode = CORRECT_MODE_DUPLICATE;
        else
            return -1;
    }
    return 0;
}

static int ss__json(const struct straggler_sim_result *r)
{
    json_t *modes = json_object();
    for (int m = 0; m < STRAGGLER_NMODES; m++) {
        const struct straggler_mode_result *x = &r->m[m];
        json_t *o =
            json_pack("{s:f, s:f, s:f, s:I, s:I, s:f}", "makespan_p50_s", x->makespan_p50_s,
                      "makespan_p99_s", x->makespan_p99_s, "missed_fraction", x->missed_fraction,
                      "copies_started", (json_int_t)x->copies_started, "copies_won",
                      (json_int_t)x->copies_won, "extra_work_fraction", x->extra_work_fraction);
        if (!modes || !o || json_object_set_new(modes, straggler_mode_name(m), o) != 0) {
            json_decref(modes);
            return ERR_NOMEM;
        }
    }
    json_t *doc = json_pack("{s:o}", "modes", modes);
    char *text =
        doc ? json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6)) : NULL;
    json_decref(doc);
    if (!text)
        return ERR_NOMEM;
    printf("%s\n", text);
    free(text);
    return 0;
}

static int sim_stragglers_main(int argc, char **argv)
{
    struct straggler_sim_config c;
    straggler_sim_config_default(&c);
    int json = 0;
    if (ss__parse(argc, argv, &c, &json) != 0)
        return ss__usage();
    struct straggler_sim_result r;
    char msg[512] = "";
    int rc = straggler_sim_run(&c, &r, msg, sizeof msg);
    if (rc) {
        fprintf(stderr, "paddock-sim stragglers: %s\n", msg[0] ? msg : err_text(rc));
        return 1;
    }
    if (json)
        return ss__json(&r) ? 1 : 0;
    printf("stragglers (%s engine): %zu workloads x %zu runs on %zu nodes x %zu slots, load %.2f; "
           "attempts "
           "%.0f%% x U[%.0f, %.0f] slower, node 0 %.1fx slower; deadline = no-straggler "
           "makespan x %.2f; speculate treats queued tasks by %s; %zu tokens, allowance %.2f "
           "per token\n",
           c.engine == STRAGGLER_ENGINE_SLICE ? "slice" : "cluster", r.workloads, c.runs,
           c.cond.nodes, c.cond.slots, c.cond.load, 100 * c.cond.straggler_prob,
           c.cond.straggler_min, c.cond.straggler_max, c.cond.slow_factor, c.slack,
           c.cond.queued_mode == CORRECT_MODE_MOVE ? "moves" : "duplicates",
           c.cond.tokens ? c.cond.tokens : c.cond.nodes * c.cond.slots, c.cond.opp_factor);
    printf("%-10s %10s %10s %6s %6s %6s %7s %6s %5s %6s %5s %6s %6s %5s %6s\n", "mode", "p50_s",
           "p99_s", "x_p50", "x_p99", "x_mean", "missed", "dups", "won", "specs", "won", "moves",
           "extra", "work", "gated");
    for (int m = 0; m < STRAGGLER_NMODES; m++) {
        const struct straggler_mode_result *x = &r.m[m];
        char dw[16] = "-", sw[16] = "-";
        if (x->dups_started)
            snprintf(dw, sizeof dw, "%.0f%%",
                     100.0 * (double)x->dups_won / (double)x->dups_started);
        if (x->spec_started)
            snprintf(sw, sizeof sw, "%.0f%%",
                     100.0 * (double)x->spec_won / (double)x->spec_started);
        printf("%-10s %10.1f %10.1f %6.3f %6.3f %6.3f %6.1f%% %6ld %5s %6ld %5s %6ld %5.1f%% %5.3f "
               "%6ld\n",
               straggler_mode_name(m), x->makespan_p50_s, x->makespan_p99_s, x->slowdown_p50,
               x->slowdown_p99, x->slowdown_mean, 100 * x->missed_fraction, x->dups_started, dw,
               x->spec_started, sw, x->moves, 100 * x->extra_work_fraction, x->work_vs_none,
               x->copies_gated);
    }
    return 0;
}

CLI_COMMAND("stragglers",
            "makespans with injected stragglers: no correction, moves, duplicates, speculation",
            sim_stragglers_main, ss__usage)
