/* jockey_table.c - `paddock-sim jockey-table`: what building Jockey's C(p, a) table costs for a
 * synthetic job of N tasks (the JM builds it when it starts; Jockey §4.1).
 *
 *   paddock-sim jockey-table [--tasks N] [--stages S] [--edges] [--runs R] [--max-tokens M]
 *                            [--seed S] [--json]
 *
 * The job has S stages of equal size with all-to-all barriers between consecutive stages, or with
 * --edges, each task depending on three random tasks of the previous stage. Its profile is
 * synthetic: per stage, 200 attempts with lognormal noise (sigma 0.3) around estimates of
 * 5..50 s and 2% failures. Prints the table's size and the wall time to build it.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/jsim.h"
#include "tools/cli.h"

static int jtable__usage(void)
{
    fprintf(cli_usage_out(), "usage: paddock-sim jockey-table [--tasks N] [--stages S] [--edges] "
                             "[--runs R] [--max-tokens M] [--seed S] [--json]\n");
    return 2;
}

static int jtable__cmd(int argc, char **argv)
{
    long tasks = 10000, stages = 4, runs = 24, max_tokens = 0;
    unsigned long long seed = 1;
    int json = 0, edges = 0;
    for (int i = 0; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--edges") == 0) {
            edges = 1;
        } else if (v != NULL && strcmp(argv[i], "--tasks") == 0) {
            tasks = strtol(v, NULL, 10), i++;
        } else if (v != NULL && strcmp(argv[i], "--stages") == 0) {
            stages = strtol(v, NULL, 10), i++;
        } else if (v != NULL && strcmp(argv[i], "--runs") == 0) {
            runs = strtol(v, NULL, 10), i++;
        } else if (v != NULL && strcmp(argv[i], "--max-tokens") == 0) {
            max_tokens = strtol(v, NULL, 10), i++;
        } else if (v != NULL && strcmp(argv[i], "--seed") == 0) {
            seed = strtoull(v, NULL, 10), i++;
        } else {
            return jtable__usage();
        }
    }
    if (tasks < 1 || tasks > JSIM_MAX_TASKS || stages < 1 || stages > tasks || runs < 1 ||
        runs > 10000 || max_tokens < 0 || max_tokens > 1000000) {
        fprintf(stderr, "paddock-sim jockey-table: argument out of range\n");
        return 2;
    }
    struct jsim_rng rng;
    jsim_rng_seed(&rng, seed);
    jsim_job_t *job = jsim_job_new((int)stages, (int)tasks);
    struct profile_attempt *att = mem_calloc((size_t)stages * 200, sizeof *att);
    char **names = mem_calloc((size_t)stages, sizeof *names);
    struct profile prof;
    struct jsim_model model = {0};
    struct progress_model pm = {0};
    jsim_table_t *table = NULL;
    int *n = mem_calloc((size_t)stages, sizeof *n);
    double *Q = mem_calloc((size_t)stages, sizeof *Q), *T = mem_calloc((size_t)stages, sizeof *T);
    int rc = ERR_NOMEM, code = 1;
    char msg[256] = "";
    profile_init(&prof);
    if (job == NULL || att == NULL || names == NULL || n == NULL || Q == NULL || T == NULL)
        goto out;
    long per = tasks / stages;
    for (long t = 0; t < tasks; t++) {
        int s = (int)(t / per < stages ? t / per : stages - 1);
        double est = 5 + 45 * jsim_rng_uniform(&rng);
        if ((rc = jsim_job_set_task(job, (int)t, s, est)) != 0)
            goto out;
        if (edges && s > 0)
            for (int k = 0; k < 3; k++) {
                long from = (long)(s - 1) * per + (long)(jsim_rng_uniform(&rng) * per);
                if ((rc = jsim_job_add_edge(job, (int)from, (int)t)) != 0)
                    goto out;
            }
    }
    for (int s = 1; !edges && s < stages; s++)
        if ((rc = jsim_job_add_barrier(job, s - 1, s)) != 0)
            goto out;
    if ((rc = jsim_job_finalize(job, msg, sizeof msg)) != 0)
        goto out;
    for (int s = 0; s < stages; s++) {
        char buf[32];
        snprintf(buf, sizeof buf, "stage-%d", s);
        if ((names[s] = mem_strdup(buf)) == NULL)
            goto out;
        for (int k = 0; k < 200; k++) {
            double est = 5 + 45 * jsim_rng_uniform(&rng);
            att[s * 200 + k] = (struct profile_attempt){
                .stage = s,
                .queue_s = jsim_rng_exp(&rng, 2),
                .init_s = 0.05 + jsim_rng_exp(&rng, 0.05),
                .run_s = est * jsim_rng_lognormal(&rng, 0.3),
                .est_s = est,
                .ok = jsim_rng_uniform(&rng) >= 0.02,
            };
        }
    }
    if ((rc = profile_build(&prof, "synthetic", (int)stages, (const char *const *)names, att,
                            (size_t)stages * 200, msg, sizeof msg)) != 0 ||
        (rc = jsim_model_init(&model, job, (const char *const *)names, &prof)) != 0)
        goto out;
    jsim_job_stage_sizes(job, n);
    for (int s = 0; s < stages; s++) {
        Q[s] = model.stages[s].queue_total;
        T[s] = model.stages[s].runtime_total;
    }
    if ((rc = progress_init(&pm, PROGRESS_TOTALWORK_Q, (int)stages, n, Q, T, NULL)) != 0)
        goto out;
    struct jsim_table_config cfg;
    jsim_table_config_default(&cfg);
    cfg.runs = (int)runs;
    cfg.max_tokens = (int)max_tokens;
    struct jsim_table_cost cost;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = jsim_table_build(job, &model, &pm, &cfg, &rng, &table, &cost, msg, sizeof msg);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rc != 0)
        goto out;
    double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    if (json) {
        json_t *o = json_pack(
            "{s:i, s:i, s:b, s:i, s:i, s:i, s:i, s:f, s:f, s:f}", "tasks", (int)tasks, "stages",
            (int)stages, "edges", edges, "allocations", cost.nallocs, "max_tokens",
            jsim_table_max_tokens(table), "simulated_runs", (int)cost.runs, "peak_parallelism",
            cost.peak_parallelism, "task_attempts", (double)cost.task_attempts, "build_ms", ms,
            "us_per_attempt", ms * 1e3 / (double)cost.task_attempts);
        char *text = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
        printf("%s\n", text != NULL ? text : "{}");
        free(text);
        json_decref(o);
    } else {
        printf("C(p,a) for %ld tasks in %ld stages (%s): %d allocations up to %d, %ld simulated "
               "runs, %ld task attempts, built in %.0f ms (%.3f us per attempt)\n",
               tasks, stages, edges ? "task edges" : "barriers", cost.nallocs,
               jsim_table_max_tokens(table), cost.runs, cost.task_attempts, ms,
               ms * 1e3 / (double)cost.task_attempts);
    }
    code = 0;
out:
    if (code != 0)
        fprintf(stderr, "paddock-sim jockey-table: %s%s%s\n", err_text(rc), msg[0] ? ": " : "",
                msg);
    jsim_table_destroy(&table);
    progress_close(&pm);
    jsim_model_close(&model);
    profile_close(&prof);
    for (int s = 0; names != NULL && s < stages; s++)
        mem_free(names[s]);
    mem_free(names);
    mem_free(att);
    mem_free(n);
    mem_free(Q);
    mem_free(T);
    jsim_job_destroy(&job);
    return code;
}

CLI_COMMAND("jockey-table", "cost of building Jockey's C(p,a) table for a synthetic job",
            jtable__cmd, jtable__usage)
