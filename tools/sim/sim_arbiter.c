/* sim_arbiter.c - `paddock-sim arbiter`: the RM's arbiter (rm/arbiter.h) between many deadline and
 * best-effort jobs on one shared virtual cluster, every policy with and without admission, on
 * the same jobs (tools/sim/arbiter_sim.h; Verma et al. §IV, MRM §3).
 *
 *   paddock-sim arbiter [--jobs N] [--load X] [--seed S] [--mix wfcommons|facebook]
 *                       [--admission on|off|both] [--workloads DIR] [--capacity C]
 *                       [--deadline-frac F] [--task-sigma S] [--job-sigma S]
 *                       [--deadlines estimate|true] [--calib-from ledger|all|deadline]
 *                       [--json]
 *
 * Prints per policy: missed_fraction, relative_deadline_exceeded, utilization, spare_grants,
 * spare_reclaims, work_lost_s, admitted_fraction, admitted_missed_fraction,
 * false_refusal_fraction (refused jobs that minedf_wc without admission made on time, over the
 * refused ones), and the deadline jobs' mean allocation against the structure-aware oracle and
 * ceil(T/d). With admission a policy's name gets "+admission". Same arguments and seed, same
 * bytes.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "tools/cli.h"
#include "tools/sim/sim_args.h"
#include "tools/sim/arbiter_sim.h"

#define SA_DEFAULT_WORKLOADS "tests/data/wfcommons"

static int sa__usage(void)
{
    fprintf(cli_usage_out(),
            "usage: paddock-sim arbiter [--jobs N] [--load X] [--seed S] "
            "[--mix wfcommons|facebook]\n"
            "                           [--admission on|off|both] [--workloads DIR] "
            "[--capacity C]\n"
            "                           [--deadline-frac F] [--task-sigma S] [--job-sigma S] "
            "[--json]\n"
            "                           [--deadlines estimate|true] "
            "[--calib-from ledger|all|deadline] [--spread on|off] [--own-spread on|off] [--trace]\n"
            "                           [--engine cluster|slice] [--bg-util U] [--node-factor F]\n"
            "                           paddock: [--profiled on|off] [--slack S] "
            "[--period-frac F] [--grace-frac F] [--urgent-frac F]\n"
            "  --workloads defaults to " SA_DEFAULT_WORKLOADS " (WfCommons instances)\n"
            "  --trace: per deadline job, admission's prediction and the outcome, on stderr\n");
    return 2;
}

static int sa__parse(int argc, char **argv, struct arbiter_sim_config *c, int *adm, int *json,
                     int *job_sigma)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
        if (strcmp(a, "--json") == 0) {
            *json = 1;
            continue;
        }
        if (strcmp(a, "--trace") == 0) {
            c->trace = stderr; /* one line per deadline job of each run with admission */
            continue;
        }
        if (v == NULL)
            return -1;
        i++;
        if (strcmp(a, "--jobs") == 0 && sim_args_num(v, 1, ARBITER_SIM_MAX_JOBS, &x) == 0)
            c->jobs = (size_t)x;
        else if (strcmp(a, "--load") == 0 && sim_args_num(v, 0.01, 10, &x) == 0)
            c->load = x;
        else if (strcmp(a, "--seed") == 0 && sim_args_num(v, 0, 1e15, &x) == 0)
            c->seed = (uint64_t)x;
        else if (strcmp(a, "--capacity") == 0 &&
                 sim_args_num(v, 1, ARBITER_SIM_MAX_CAPACITY, &x) == 0)
            c->capacity = (uint32_t)x;
        else if (strcmp(a, "--deadline-frac") == 0 && sim_args_num(v, 0, 1, &x) == 0)
            c->deadline_frac = x;
        else if (strcmp(a, "--task-sigma") == 0 && sim_args_num(v, 0, 3, &x) == 0)
            c->task_sigma = x;
        else if (strcmp(a, "--job-sigma") == 0 && sim_args_num(v, 0, 3, &x) == 0)
            c->job_sigma = x, *job_sigma = 1;
        else if (strcmp(a, "--engine") == 0 && strcmp(v, "cluster") == 0)
            c->engine = ARBITER_SIM_ENGINE_CLUSTER;
        else if (strcmp(a, "--engine") == 0 && strcmp(v, "slice") == 0)
            c->engine = ARBITER_SIM_ENGINE_SLICE;
        else if (strcmp(a, "--bg-util") == 0 && sim_args_num(v, 0, 0.95, &x) == 0)
            c->bg_util = x;
        else if (strcmp(a, "--node-factor") == 0 && sim_args_num(v, 1, 100, &x) == 0)
            c->node_factor = x;
        else if (strcmp(a, "--slack") == 0 && sim_args_num(v, 0.1, 10, &x) == 0)
            c->slack = x;
        else if (strcmp(a, "--period-frac") == 0 && sim_args_num(v, 0.001, 1, &x) == 0)
            c->period_frac = x;
        else if (strcmp(a, "--grace-frac") == 0 && sim_args_num(v, 0, 1, &x) == 0)
            c->grace_frac = x;
        else if (strcmp(a, "--urgent-frac") == 0 && sim_args_num(v, 0, 1, &x) == 0)
            c->urgent_frac = x;
        else if (strcmp(a, "--profiled") == 0 && (strcmp(v, "on") == 0 || strcmp(v, "off") == 0))
            c->profiled = strcmp(v, "on") == 0;
        else if (strcmp(a, "--deadlines") == 0 && strcmp(v, "estimate") == 0)
            c->deadlines = ARBITER_SIM_DEADLINE_ESTIMATE;
        else if (strcmp(a, "--deadlines") == 0 && strcmp(v, "true") == 0)
            c->deadlines = ARBITER_SIM_DEADLINE_TRUE;
        else if (strcmp(a, "--calib-from") == 0 && strcmp(v, "ledger") == 0)
            c->calib_from = ARBITER_SIM_CALIB_LEDGER;
        else if (strcmp(a, "--calib-from") == 0 && strcmp(v, "all") == 0)
            c->calib_from = ARBITER_SIM_CALIB_ALL;
        else if (strcmp(a, "--calib-from") == 0 && strcmp(v, "deadline") == 0)
            c->calib_from = ARBITER_SIM_CALIB_DEADLINE;
        else if (strcmp(a, "--spread") == 0 && (strcmp(v, "on") == 0 || strcmp(v, "off") == 0))
            c->spread = strcmp(v, "on") == 0;
        else if (strcmp(a, "--own-spread") == 0 && (strcmp(v, "on") == 0 || strcmp(v, "off") == 0))
            c->own_spread = strcmp(v, "on") == 0;
        else if (strcmp(a, "--workloads") == 0)
            c->workloads = v;
        else if (strcmp(a, "--mix") == 0 && strcmp(v, "wfcommons") == 0)
            c->mix = ARBITER_SIM_WFCOMMONS;
        else if (strcmp(a, "--mix") == 0 && strcmp(v, "facebook") == 0)
            c->mix = ARBITER_SIM_FACEBOOK;
        else if (strcmp(a, "--admission") == 0 && strcmp(v, "off") == 0)
            *adm = 1;
        else if (strcmp(a, "--admission") == 0 && strcmp(v, "on") == 0)
            *adm = 2;
        else if (strcmp(a, "--admission") == 0 && strcmp(v, "both") == 0)
            *adm = 3;
        else
            return -1;
    }
    return 0;
}

static json_t *sa__result_json(const struct arbiter_sim_result *r)
{
    return json_pack("{s:f, s:f, s:f, s:I, s:I, s:f, s:f, s:f, s:f, s:I, s:I, s:I, s:f, s:f, "
                     "s:f, s:f}",
                     "missed_fraction", r->missed_fraction, "relative_deadline_exceeded",
                     r->relative_deadline_exceeded, "utilization", r->utilization, "spare_grants",
                     (json_int_t)r->spare_grants, "spare_reclaims", (json_int_t)r->spare_reclaims,
                     "work_lost_s", r->work_lost_s, "admitted_fraction", r->admitted_fraction,
                     "admitted_missed_fraction", r->admitted_missed_fraction,
                     "false_refusal_fraction", r->false_refusal_fraction, "kills",
                     (json_int_t)r->kills, "downgrades", (json_int_t)r->downgrades, "preemptions",
                     (json_int_t)r->preemptions, "mean_completion_s", r->mean_completion_s,
                     "alloc_mean", r->alloc_mean, "alloc_vs_oracle_dag", r->alloc_vs_dag,
                     "alloc_vs_oracle_td", r->alloc_vs_td);
}

static int sa__main(int argc, char **argv)
{
    struct arbiter_sim_config cfg;
    arbiter_sim_config_default(&cfg);
    int adm = 3, json = 0, job_sigma = 0;
    if (sa__parse(argc, argv, &cfg, &adm, &json, &job_sigma) != 0)
        return sa__usage();
    /* The cluster engine runs each task for its estimate times the task noise, the model the
       quote's profile describes; --job-sigma brings back the old per-job factor */
    if (cfg.engine == ARBITER_SIM_ENGINE_CLUSTER && !job_sigma)
        cfg.job_sigma = 0;
    if (cfg.engine == ARBITER_SIM_ENGINE_CLUSTER && cfg.profiled) {
        /* the cluster engine's JMs ask for their width, as the daemon without a profile does */
        fprintf(stderr, "paddock-sim arbiter: --profiled on needs --engine slice\n");
        return 2;
    }
    if (cfg.mix == ARBITER_SIM_WFCOMMONS && cfg.workloads == NULL)
        cfg.workloads = SA_DEFAULT_WORKLOADS;
    char msg[512] = "";
    arbiter_sim_jobs_t *jobs = NULL;
    int rc = arbiter_sim_jobs_new(&cfg, &jobs, msg, sizeof msg);
    if (rc != 0) {
        fprintf(stderr, "paddock-sim arbiter: %s\n", msg[0] ? msg : err_text(rc));
        return 1;
    }
    struct arbiter_sim_jobs_info info;
    arbiter_sim_jobs_info(jobs, &info);
    json_t *root =
        json_pack("{s:s, s:I, s:f, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:{s:f, s:f}}", "mix",
                  cfg.mix == ARBITER_SIM_FACEBOOK ? "facebook" : "wfcommons", "jobs",
                  (json_int_t)info.jobs, "load", cfg.load, "seed", (json_int_t)cfg.seed, "capacity",
                  (json_int_t)cfg.capacity, "deadline_jobs", (json_int_t)info.deadline_jobs,
                  "tasks", (json_int_t)info.tasks, "mean_gap_s", info.mean_gap_s, "alone_mean_s",
                  info.alone_mean_s, "work_token_s", info.work_token_s, "oracle", "dag_mean",
                  info.oracle_dag_mean, "td_mean", info.oracle_td_mean);
    json_t *pols = json_object();
    uint8_t *ref_met = NULL;
    if (root == NULL || pols == NULL) {
        rc = ERR_NOMEM;
        goto out;
    }
    /* The reference for false refusals: which deadline jobs minedf_wc meets without admission
     * (run here when --admission on leaves it out of the table). */
    ref_met = calloc(info.jobs ? info.jobs : 1, 1);
    if (ref_met == NULL) {
        rc = ERR_NOMEM;
        goto out;
    }
    if (adm == 2) {
        struct arbiter_sim_result r;
        rc = arbiter_sim_run(jobs, &cfg, ARBITER_SIM_MINEDF_WC, 0, NULL, ref_met, &r);
    }
    for (int a = 0; a < 2 && rc == 0; a++) {
        if (!(adm & (1 << a)))
            continue;
        for (int p = 0; p < ARBITER_SIM_NPOLICIES && rc == 0; p++) {
            struct arbiter_sim_result r;
            int ref = a == 0 && p == ARBITER_SIM_MINEDF_WC;
            rc = arbiter_sim_run(jobs, &cfg, (enum arbiter_sim_policy)p, a, a ? ref_met : NULL,
                                 ref ? ref_met : NULL, &r);
            if (rc != 0)
                break;
            char name[64];
            snprintf(name, sizeof name, "%s%s", arbiter_sim_policy_name((enum arbiter_sim_policy)p),
                     a ? "+admission" : "");
            json_object_set_new(pols, name, sa__result_json(&r));
        }
    }
    if (rc != 0) {
        fprintf(stderr, "paddock-sim arbiter: %s\n", err_text(rc));
        goto out;
    }
    json_object_set(root, "policies", pols);
    if (json) {
        char *text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
        if (text != NULL)
            printf("%s\n", text);
        free(text);
        goto out;
    }
    printf("%s mix: %zu jobs (%zu with a deadline), %zu tasks, %u tokens, load %.2f (mean gap "
           "%.1f s), seed %llu\n",
           cfg.mix == ARBITER_SIM_FACEBOOK ? "facebook" : "wfcommons", info.jobs,
           info.deadline_jobs, info.tasks, cfg.capacity, cfg.load, info.mean_gap_s,
           (unsigned long long)cfg.seed);
    printf("deadline jobs: mean time alone %.1f s; oracle allocation: structure-aware %.2f "
           "tokens, ceil(T/d) %.2f tokens\n",
           info.alone_mean_s, info.oracle_dag_mean, info.oracle_td_mean);
    printf("%-20s %7s %8s %6s %8s %8s %10s %6s %8s %8s %9s %9s\n", "policy", "missed", "rel.exc",
           "util", "spare", "reclaim", "lost tok-s", "admit", "adm.miss", "f.refuse", "alloc/dag",
           "alloc/T/d");
    const char *key;
    json_t *o;
    json_object_foreach(pols, key, o)
    {
        printf("%-20s %7.3f %8.3f %6.3f %8lld %8lld %10.0f %6.3f %8.3f %8.3f %9.2f %9.2f\n", key,
               json_real_value(json_object_get(o, "missed_fraction")),
               json_real_value(json_object_get(o, "relative_deadline_exceeded")),
               json_real_value(json_object_get(o, "utilization")),
               (long long)json_integer_value(json_object_get(o, "spare_grants")),
               (long long)json_integer_value(json_object_get(o, "spare_reclaims")),
               json_real_value(json_object_get(o, "work_lost_s")),
               json_real_value(json_object_get(o, "admitted_fraction")),
               json_real_value(json_object_get(o, "admitted_missed_fraction")),
               json_real_value(json_object_get(o, "false_refusal_fraction")),
               json_real_value(json_object_get(o, "alloc_vs_oracle_dag")),
               json_real_value(json_object_get(o, "alloc_vs_oracle_td")));
    }
out:
    free(ref_met);
    json_decref(pols);
    json_decref(root);
    arbiter_sim_jobs_destroy(&jobs);
    return rc == 0 ? 0 : 1;
}

CLI_COMMAND("arbiter",
            "deadline arbiter policies (fcfs, edf, minedf, minedf_wc, paddock) on a "
            "shared cluster",
            sa__main, sa__usage)
