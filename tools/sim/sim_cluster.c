/* sim_cluster.c - `paddock-sim cluster --nodes N --jobs J [--workloads DIR] [--seed S] [--json]
 * [--no-estimation | --compare [--svg FILE]] [options]`: a whole cluster in virtual time
 * (tools/sim/cluster.h). Prints scheduling decisions per second of simulator wall time, task
 * queueing-time percentiles, utilization, the standard deviation of queueing time across machines
 * (Apollo Figure 8c), with or without estimation (Figure 11; --compare runs both on the same jobs
 * and seed), and peak RSS. Without --workloads the jobs are synthetic map-reduce jobs.
 * --no-timing leaves out the wall-clock figures (wall time, decisions per wall second, peak
 * RSS): the rest is a function of the inputs and --seed, so the same seed prints the same bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "common/err.h"
#include "common/mem.h"
#include "tools/cli.h"
#include "tools/sim/sim_args.h"
#include "tools/sim/cluster.h"
#include "tools/sim/engine.h"

static int sc__usage(void)
{
    fprintf(cli_usage_out(),
            "usage: paddock-sim cluster --nodes N --jobs J [--workloads DIR] [--seed S] [--json]\n"
            "         [--no-estimation | --compare [--svg FILE]] [--time-scale X] [--tokens T]\n"
            "         [--bg-util U] [--node-mtbf S] [--arrival S] [--fail P] [--opp C] "
            "[--window S]\n         [--heartbeat S] [--rm-delay S] [--no-status-matrix] "
            "[--no-timing]\n");
    return 2;
}

static long sc__rss_kb(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : 0;
}

/* Everything but the wall-clock measurements is a function of the inputs and the seed; with
 * timing == 0 only that is printed, so two runs with one seed print identical bytes. */
static void sc__json(const struct cluster_result *r, int estimation, int timing)
{
    printf("{\"estimation\": %s, \"decisions\": %llu, \"events\": %llu, \"sim_time_s\": %.3f, "
           "\"tasks\": %llu, \"attempts\": %llu, \"failures\": %llu, \"preemptions\": %llu, "
           "\"lost\": %llu, \"node_losses\": %llu, \"jobs_done\": %zu, \"jobs_failed\": %zu, "
           "\"jobs_peak\": %zu, \"queue_s\": {\"mean\": %.4f, \"p50\": %.4f, \"p90\": %.4f, "
           "\"p99\": %.4f, \"max\": %.4f}, \"queue_stdev_machines_s\": %.4f, "
           "\"queue_stdev_machines_run_s\": %.4f, \"utilization\": %.4f, "
           "\"utilization_jobs\": %.4f, \"makespan_mean_s\": %.3f, \"view_age_mean_s\": %.3f",
           estimation ? "true" : "false", (unsigned long long)r->decisions,
           (unsigned long long)r->events, r->sim_time_s, (unsigned long long)r->tasks,
           (unsigned long long)r->attempts, (unsigned long long)r->failures,
           (unsigned long long)r->preemptions, (unsigned long long)r->lost,
           (unsigned long long)r->node_losses, r->jobs_done, r->jobs_failed, r->jobs_peak,
           r->q_mean, r->q_p50, r->q_p90, r->q_p99, r->q_max, r->q_stdev_machines, r->q_stdev_run,
           r->util, r->util_jobs, r->makespan_mean_s, r->view_age_mean_s);
    if (timing)
        printf(", \"wall_s\": %.3f, \"decisions_per_wall_s\": %.0f, \"place_per_wall_s\": %.0f, "
               "\"peak_rss_kb\": %ld",
               r->wall_s, r->wall_s > 0 ? (double)r->decisions / r->wall_s : 0,
               r->place_wall_s > 0 ? (double)r->decisions / r->place_wall_s : 0, r->peak_rss_kb);
    printf("}");
}

static void sc__text(const struct cluster_result *r, int estimation, int timing)
{
    printf("%s estimation:\n", estimation ? "with" : "without");
    printf("  jobs %zu done, %zu failed, at most %zu at once; %llu tasks, %llu attempts, %llu "
           "failures, %llu preempted, %llu lost, %llu node losses\n",
           r->jobs_done, r->jobs_failed, r->jobs_peak, (unsigned long long)r->tasks,
           (unsigned long long)r->attempts, (unsigned long long)r->failures,
           (unsigned long long)r->preemptions, (unsigned long long)r->lost,
           (unsigned long long)r->node_losses);
    printf("  decisions %llu; %llu events, %.1f s virtual\n", (unsigned long long)r->decisions,
           (unsigned long long)r->events, r->sim_time_s);
    if (timing)
        printf("  wall %.2f s: %.0f decisions/s of simulator wall time (placement code alone "
               "%.0f/s); peak RSS %.1f MiB\n",
               r->wall_s, r->wall_s > 0 ? (double)r->decisions / r->wall_s : 0,
               r->place_wall_s > 0 ? (double)r->decisions / r->place_wall_s : 0,
               (double)r->peak_rss_kb / 1024.0);
    printf("  queueing time s: mean %.3f p50 %.3f p90 %.3f p99 %.3f max %.3f\n", r->q_mean,
           r->q_p50, r->q_p90, r->q_p99, r->q_max);
    printf("  stdev of mean queueing time across machines: %.3f s per window, %.3f s whole run\n",
           r->q_stdev_machines, r->q_stdev_run);
    printf("  utilization %.1f%% (jobs %.1f%%), mean job makespan %.1f s, mean view age at "
           "placement %.2f s\n",
           100 * r->util, 100 * r->util_jobs, r->makespan_mean_s, r->view_age_mean_s);
}

static int sc__main(int argc, char **argv)
{
    struct cluster_config cfg;
    cluster_config_default(&cfg);
    double njobs = 0, time_scale = 1.0, v;
    const char *dir = NULL, *svg = NULL;
    int json = 0, compare = 0, timing = 1;
    int have_nodes = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--json") == 0) {
            json = 1;
            continue;
        }
        if (strcmp(a, "--no-estimation") == 0) {
            cfg.estimation = 0;
            continue;
        }
        if (strcmp(a, "--no-status-matrix") == 0) {
            cfg.status_matrix = 0;
            continue;
        }
        if (strcmp(a, "--no-timing") == 0) {
            timing = 0;
            continue;
        }
        if (strcmp(a, "--compare") == 0) {
            compare = 1;
            continue;
        }
        if (val == NULL)
            return sc__usage();
        i++;
        if (strcmp(a, "--nodes") == 0 && sim_args_num(val, 1, CLUSTER_MAX_NODES, &v) == 0) {
            cfg.nodes = (size_t)v;
            have_nodes = 1;
        } else if (strcmp(a, "--jobs") == 0 && sim_args_num(val, 1, CLUSTER_MAX_JOBS, &v) == 0)
            njobs = v;
        else if (strcmp(a, "--seed") == 0 && sim_args_num(val, 0, 1e18, &v) == 0)
            cfg.seed = (uint64_t)v;
        else if (strcmp(a, "--workloads") == 0)
            dir = val;
        else if (strcmp(a, "--svg") == 0)
            svg = val;
        else if (strcmp(a, "--time-scale") == 0 && sim_args_num(val, 1e-6, 1e6, &time_scale) == 0)
            ;
        else if (strcmp(a, "--tokens") == 0 && sim_args_num(val, 1, 1e6, &v) == 0)
            cfg.tokens = (uint32_t)v;
        else if (strcmp(a, "--bg-util") == 0 && sim_args_num(val, 0, 0.95, &cfg.bg_util) == 0)
            ;
        else if (strcmp(a, "--node-mtbf") == 0 &&
                 sim_args_num(val, 0, 1e12, &cfg.noise.node_mtbf_s) == 0)
            ;
        else if (strcmp(a, "--arrival") == 0 && sim_args_num(val, 0, 1e6, &cfg.arrival_mean_s) == 0)
            ;
        else if (strcmp(a, "--heartbeat") == 0 &&
                 sim_args_num(val, 1e-3, 3600, &cfg.heartbeat_s) == 0)
            ;
        else if (strcmp(a, "--rm-delay") == 0 && sim_args_num(val, 0, 3600, &cfg.rm_delay_s) == 0)
            ;
        else if (strcmp(a, "--window") == 0 && sim_args_num(val, 1e-3, 1e9, &cfg.window_s) == 0)
            ;
        else if (strcmp(a, "--opp") == 0 && sim_args_num(val, 0, 100, &cfg.opp_factor) == 0)
            ;
        else if (strcmp(a, "--fail") == 0 && sim_args_num(val, 0, 1, &cfg.noise.fail_prob) == 0)
            ;
        else
            return sc__usage();
    }
    if (!have_nodes || njobs < 1 || (svg != NULL && !compare))
        return sc__usage();

    char msg[512] = "";
    struct cluster_workloads *wl = NULL;
    int rc = dir != NULL
                 ? cluster_workloads_load(dir, time_scale, cfg.node_cpus / 2,
                                          (uint64_t)(cfg.node_mem_mb / 2), &wl, msg, sizeof msg)
                 : cluster_workloads_synthetic(16, cfg.seed, &wl);
    if (rc != 0) {
        fprintf(stderr, "paddock-sim cluster: %s\n", msg[0] ? msg : err_text(rc));
        return 1;
    }
    size_t nj = (size_t)njobs;
    struct cluster_job *jobs = mem_calloc(nj, sizeof *jobs);
    struct spec **specs = mem_calloc(nj, sizeof *specs);
    if (jobs == NULL || specs == NULL)
        rc = ERR_NOMEM;
    struct rng arr;
    rng_seed_stream(&arr, cfg.seed, 0x500000000ull);
    double t = 0;
    for (size_t i = 0; rc == 0 && i < nj; i++) {
        rc = cluster_workloads_make(wl, i, cfg.seed, cfg.nodes, cfg.rack_size, &specs[i], msg,
                                    sizeof msg);
        jobs[i].spec = specs[i];
        jobs[i].arrival_s = t;
        t += rng_exp(&arr, cfg.arrival_mean_s);
    }
    size_t total_tasks = 0;
    for (size_t i = 0; rc == 0 && i < nj; i++)
        total_tasks += specs[i]->ntasks;
    struct cluster_result res[2];
    memset(res, 0, sizeof res);
    int modes[2] = {cfg.estimation, 0};
    size_t nmodes = compare ? 2 : 1;
    if (compare)
        modes[0] = 1;
    for (size_t m = 0; rc == 0 && m < nmodes; m++) {
        cfg.estimation = modes[m];
        rc = cluster_run(&cfg, jobs, nj, &res[m], msg, sizeof msg);
        res[m].peak_rss_kb = sc__rss_kb();
    }
    if (rc != 0) {
        fprintf(stderr, "paddock-sim cluster: %s\n", msg[0] ? msg : err_text(rc));
    } else {
        if (json) {
            printf("{\"nodes\": %zu, \"jobs\": %zu, \"tasks\": %zu, \"workloads\": %zu, "
                   "\"seed\": %llu, \"runs\": [",
                   cfg.nodes, nj, total_tasks, cluster_workloads_count(wl),
                   (unsigned long long)cfg.seed);
            for (size_t m = 0; m < nmodes; m++) {
                if (m)
                    printf(", ");
                sc__json(&res[m], modes[m], timing);
            }
            printf("]}\n");
        } else {
            printf("paddock-sim cluster: %zu nodes (%.0f cores, %.0f MiB each, racks of %zu), "
                   "%zu jobs (%zu tasks) from %zu workloads, seed %llu\n",
                   cfg.nodes, cfg.node_cpus, cfg.node_mem_mb, cfg.rack_size, nj, total_tasks,
                   cluster_workloads_count(wl), (unsigned long long)cfg.seed);
            for (size_t m = 0; m < nmodes; m++)
                sc__text(&res[m], modes[m], timing);
        }
        if (svg != NULL) {
            const double *s[2] = {res[0].qtimes, res[1].qtimes};
            size_t n[2] = {res[0].nqtimes, res[1].nqtimes};
            const char *labels[2] = {"with estimation", "without estimation"};
            char title[160];
            snprintf(title, sizeof title, "Task queueing time, %zu nodes, %zu jobs (seed %llu)",
                     cfg.nodes, nj, (unsigned long long)cfg.seed);
            if (cluster_svg_cdf(svg, title, s, n, labels, 2) != 0) {
                fprintf(stderr, "paddock-sim cluster: %s: cannot write\n", svg);
                rc = ERR_IO;
            }
        }
    }
    for (size_t m = 0; m < 2; m++)
        mem_free(res[m].qtimes);
    for (size_t i = 0; specs != NULL && i < nj; i++)
        spec_destroy(&specs[i]);
    mem_free(specs);
    mem_free(jobs);
    cluster_workloads_destroy(&wl);
    return rc == 0 ? 0 : 1;
}

CLI_COMMAND("cluster", "a whole cluster in virtual time: decisions/s, queueing, utilization",
            sc__main, sc__usage)
