/* sim_recurring.c - `paddock-sim recurring`: periodic jobs built from the shipped workloads and
 * ad-hoc arrivals on one token cluster, under four policies on the same jobs: the arbiter alone,
 * greedy reservations, LowCost, and LowCost with dynamic reprovisioning
 * (tools/sim/recurring_sim.h; Morpheus §5-7, §9).
 *
 *   paddock-sim recurring [--jobs N] [--load X] [--seed S] [--capacity C] [--workloads DIR]
 *                         [--periodic-share F] [--warmup STEPS] [--eval STEPS] [--step-s S]
 *                         [--given-frac F] [--run-sigma S] [--slow-prob P] [--elastic E]
 *                         [--adhoc-deadline-frac F] [--admission on|off] [--rho R]
 *                         [--engine cluster|slice] [--policy NAME] [--json]
 *
 * Prints per policy: slo_violation_fraction, peak_tokens, adhoc_latency_p50_s and more. Same
 * arguments and seed, same bytes. The default engine is the cluster simulator with the RM's
 * ledger planning (cluster_recurring.h); `--engine slice` is the token-slice engine with its own
 * fluid jobs (recurring_sim.h), kept for the side-by-side tables.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "tools/cli.h"
#include "tools/sim/cluster_recurring.h"
#include "tools/sim/recurring_sim.h"
#include "tools/sim/sim_args.h"

#define SR_DEFAULT_WORKLOADS "tests/data/wfcommons"

static int sr__usage(void)
{
    fprintf(cli_usage_out(),
            "usage: paddock-sim recurring [--jobs N] [--load X] [--seed S] [--capacity C]\n"
            "                             [--workloads DIR] [--periodic-share F] "
            "[--warmup STEPS] [--eval STEPS]\n"
            "                             [--step-s S] [--given-frac F] [--run-sigma S] "
            "[--slow-prob P] [--elastic E]\n"
            "                             [--adhoc-deadline-frac F] [--admission on|off] "
            "[--rho R]\n"
            "                             [--engine cluster|slice] [--policy NAME] [--json]\n"
            "  --workloads defaults to " SR_DEFAULT_WORKLOADS " (WfCommons instances)\n");
    return 2;
}

struct sr__opts {
    int json;
    int slice;  /* --engine slice */
    int policy; /* --policy: one of them; -1: all */
};

static int sr__parse(int argc, char **argv, struct recurring_sim_config *c, struct sr__opts *o)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
        if (strcmp(a, "--json") == 0) {
            o->json = 1;
            continue;
        }
        if (v == NULL)
            return -1;
        i++;
        if (strcmp(a, "--jobs") == 0 && sim_args_num(v, 1, RECURRING_SIM_MAX_JOBS, &x) == 0)
            c->jobs = (size_t)x;
        else if (strcmp(a, "--load") == 0 && sim_args_num(v, 0.01, 5, &x) == 0)
            c->load = x;
        else if (strcmp(a, "--seed") == 0 && sim_args_num(v, 0, 1e15, &x) == 0)
            c->seed = (uint64_t)x;
        else if (strcmp(a, "--capacity") == 0 &&
                 sim_args_num(v, 1, RECURRING_SIM_MAX_CAPACITY, &x) == 0)
            c->capacity = (uint32_t)x;
        else if (strcmp(a, "--periodic-share") == 0 && sim_args_num(v, 0.01, 1, &x) == 0)
            c->periodic_share = x;
        else if (strcmp(a, "--warmup") == 0 &&
                 sim_args_num(v, 360, 10 * RECURRING_SIM_DAY, &x) == 0)
            c->warmup_steps = (uint32_t)x;
        else if (strcmp(a, "--eval") == 0 && sim_args_num(v, 1, 30 * RECURRING_SIM_DAY, &x) == 0)
            c->eval_steps = (uint32_t)x;
        else if (strcmp(a, "--step-s") == 0 && sim_args_num(v, 0.001, 86400, &x) == 0)
            c->step_s = x;
        else if (strcmp(a, "--given-frac") == 0 && sim_args_num(v, 0, 1, &x) == 0)
            c->given_frac = x;
        else if (strcmp(a, "--run-sigma") == 0 && sim_args_num(v, 0, 2, &x) == 0)
            c->run_sigma = x;
        else if (strcmp(a, "--slow-prob") == 0 && sim_args_num(v, 0, 1, &x) == 0)
            c->slow_prob = x;
        else if (strcmp(a, "--elastic") == 0 && sim_args_num(v, 0, 1, &x) == 0)
            c->elastic = x;
        else if (strcmp(a, "--adhoc-deadline-frac") == 0 && sim_args_num(v, 0, 1, &x) == 0)
            c->adhoc_deadline_frac = x;
        else if (strcmp(a, "--rho") == 0 && sim_args_num(v, 1, 100, &x) == 0)
            c->rho = x;
        else if (strcmp(a, "--admission") == 0 && (strcmp(v, "on") == 0 || strcmp(v, "off") == 0))
            c->admission = strcmp(v, "on") == 0;
        else if (strcmp(a, "--workloads") == 0)
            c->workloads = v;
        else if (strcmp(a, "--engine") == 0 &&
                 (strcmp(v, "cluster") == 0 || strcmp(v, "slice") == 0))
            o->slice = strcmp(v, "slice") == 0;
        else if (strcmp(a, "--policy") == 0) {
            o->policy = -1;
            for (int p = 0; p < RECURRING_SIM_NPOLICIES; p++)
                if (strcmp(v, recurring_sim_policy_name((enum recurring_sim_policy)p)) == 0)
                    o->policy = p;
            if (o->policy < 0)
                return -1;
        } else
            return -1;
    }
    return 0;
}

static json_t *sr__result_json(const struct recurring_sim_result *r)
{
    return json_pack("{s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:I, s:I, s:I, s:f, s:f, s:f, s:f, "
                     "s:f, s:f, s:I, s:f, s:I}",
                     "runs", (json_int_t)r->runs, "missed", (json_int_t)r->missed,
                     "slo_violation_fraction", r->slo_violation_fraction, "peak_tokens",
                     r->peak_tokens, "plan_peak_tokens", r->plan_peak_tokens, "periodic_grant_peak",
                     r->periodic_grant_peak, "planned_tokens_mean", r->planned_tokens_mean,
                     "inferred_deadlines", (json_int_t)r->inferred, "unplaced",
                     (json_int_t)r->unplaced, "adhoc", (json_int_t)r->adhoc, "adhoc_latency_p50_s",
                     r->adhoc_latency_p50_s, "adhoc_latency_p90_s", r->adhoc_latency_p90_s,
                     "adhoc_deadline_missed_fraction", r->adhoc_deadline_missed_fraction,
                     "adhoc_admitted_fraction", r->adhoc_admitted_fraction, "utilization",
                     r->utilization, "reserved_used_fraction", r->reserved_used_fraction,
                     "reprov_steps", (json_int_t)r->reprov_steps, "reprov_token_s",
                     r->reprov_token_s, "reserved_runs", (json_int_t)r->reserved_runs);
}

static int sr__main(int argc, char **argv)
{
    struct recurring_sim_config cfg;
    recurring_sim_config_default(&cfg);
    struct sr__opts opt = {0, 0, -1};
    if (sr__parse(argc, argv, &cfg, &opt) != 0)
        return sr__usage();
    if (cfg.workloads == NULL)
        cfg.workloads = SR_DEFAULT_WORKLOADS;
    char msg[512] = "";
    recurring_sim_jobs_t *jobs = NULL;
    int rc = recurring_sim_jobs_new(&cfg, &jobs, msg, sizeof msg);
    if (rc != 0) {
        fprintf(stderr, "paddock-sim recurring: %s\n", msg[0] ? msg : err_text(rc));
        return 1;
    }
    struct recurring_sim_jobs_info info;
    recurring_sim_jobs_info(jobs, &info);
    json_t *root = json_pack(
        "{s:s, s:I, s:f, s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f}", "engine",
        opt.slice ? "slice" : "cluster", "jobs", (json_int_t)info.periodic, "load", cfg.load,
        "seed", (json_int_t)cfg.seed, "capacity", (json_int_t)cfg.capacity, "step_s", cfg.step_s,
        "warmup_steps", (json_int_t)cfg.warmup_steps, "eval_steps", (json_int_t)cfg.eval_steps,
        "lcm_steps", (json_int_t)info.lcm_steps, "given_deadlines",
        (json_int_t)info.given_deadlines, "adhoc_jobs", (json_int_t)info.adhoc, "periodic_load",
        info.periodic_load, "adhoc_load", info.adhoc_load, "adhoc_mean_gap_s",
        info.adhoc_mean_gap_s);
    json_t *pols = json_object();
    if (root == NULL || pols == NULL) {
        rc = ERR_NOMEM;
        goto out;
    }
    for (int p = 0; p < RECURRING_SIM_NPOLICIES && rc == 0; p++) {
        struct recurring_sim_result r;
        if (opt.policy >= 0 && p != opt.policy)
            continue;
        rc = opt.slice
                 ? recurring_sim_run(jobs, &cfg, (enum recurring_sim_policy)p, &r, msg, sizeof msg)
                 : recurring_cluster_run(jobs, &cfg, (enum recurring_sim_policy)p, &r, msg,
                                         sizeof msg);
        if (rc == 0)
            json_object_set_new(pols, recurring_sim_policy_name((enum recurring_sim_policy)p),
                                sr__result_json(&r));
    }
    if (rc != 0) {
        fprintf(stderr, "paddock-sim recurring: %s\n", msg[0] ? msg : err_text(rc));
        goto out;
    }
    json_object_set(root, "policies", pols);
    if (opt.json) {
        char *text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
        if (text != NULL)
            printf("%s\n", text);
        free(text);
        goto out;
    }
    printf("%zu periodic jobs (%zu with a user deadline), %zu ad-hoc jobs, %u tokens, load %.2f "
           "(periodic %.2f, ad-hoc %.2f), plan of %u steps of %.0f s, seed %llu, %s engine\n",
           info.periodic, info.given_deadlines, info.adhoc, cfg.capacity, cfg.load,
           info.periodic_load, info.adhoc_load, info.lcm_steps, cfg.step_s,
           (unsigned long long)cfg.seed, opt.slice ? "slice" : "cluster");
    printf("%-15s %6s %6s %9s %7s %9s %9s %9s %6s %6s %8s\n", "policy", "runs", "missed",
           "slo_viol", "peak", "grant_pk", "adhoc_p50", "adhoc_p90", "util", "resv_u", "reprov");
    const char *key;
    json_t *o;
    json_object_foreach(pols, key, o)
    {
        printf("%-15s %6lld %6lld %9.3f %7.1f %9.1f %9.0f %9.0f %6.3f %6.3f %8lld\n", key,
               (long long)json_integer_value(json_object_get(o, "runs")),
               (long long)json_integer_value(json_object_get(o, "missed")),
               json_real_value(json_object_get(o, "slo_violation_fraction")),
               json_real_value(json_object_get(o, "peak_tokens")),
               json_real_value(json_object_get(o, "periodic_grant_peak")),
               json_real_value(json_object_get(o, "adhoc_latency_p50_s")),
               json_real_value(json_object_get(o, "adhoc_latency_p90_s")),
               json_real_value(json_object_get(o, "utilization")),
               json_real_value(json_object_get(o, "reserved_used_fraction")),
               (long long)json_integer_value(json_object_get(o, "reprov_steps")));
    }
    printf("peak: the plan's peak reserved tokens (none: the peak of tokens granted to periodic "
           "runs together)\n");
out:
    json_decref(pols);
    json_decref(root);
    recurring_sim_jobs_destroy(&jobs);
    return rc == 0 ? 0 : 1;
}

CLI_COMMAND("recurring",
            "periodic reservations (none, greedy, lowcost, lowcost_reprov) with ad-hoc jobs "
            "on a token cluster",
            sr__main, sr__usage)
