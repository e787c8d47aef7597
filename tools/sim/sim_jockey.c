/* sim_jockey.c - `paddock-sim jockey`: Jockey against its comparison policies (Jockey §5.2) on
 * one workload, in virtual time (docs/jockey.md, docs/architecture.md).
 *
 *   paddock-sim jockey --workload SPEC.json [--runs N] [--seed S] [--json]
 *                      [--max-tokens M] [--deadline SECONDS] [--progress KIND]
 *
 * 1. A training run under other conditions (its own seed, milder noise, no spare capacity, a
 *    fixed allocation of M/2 tokens) yields the job profile (jm/profile.h), as the JM would
 *    write it after an earlier run.
 * 2. From the profile: the job simulator's C(p, a) table, the progress indicator's weights and
 *    the Amdahl model's statistics (Jockey §4.1, §4.2).
 * 3. The deadline is the spec's deadline_s. Without one it is set as in Jockey §5.1, where the
 *    max-allocation policy finished its jobs about 70% early: d = (median simulated makespan at
 *    M tokens) / 0.3. The output says which.
 * 4. N judged runs, each with its own seed: runtime noise, a whole-run slowdown, load phases,
 *    failures, stragglers and fluctuating spare capacity; each policy (jockey, noadapt, amdahl,
 *    max) faces exactly the same conditions in a run.
 *
 * Per policy: missed_fraction (runs finishing after the deadline), mean_alloc_above_oracle (the
 * mean over runs of time-averaged guaranteed tokens / ceil(T / d) - 1, T the run's work) and
 * median_latency_vs_deadline (median completion time / deadline; 1.0 = at the deadline).
 */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/err.h"
#include "common/mem.h"
#include "tools/cli.h"
#include "tools/sim/jockey_cluster.h"
#include "tools/sim/jockey_engine.h"

struct jockey__args {
    const char *workload;
    const char *workloads; /* a directory: every *.json in it */
    int runs;
    uint64_t seed;
    int json;
    int verbose;
    int max_tokens;
    double deadline;
    double change_at, change_to;
    double slowdown, noise, failures; /* < 0: the engine's defaults */
    double spare;                     /* spare capacity at most spare x the oracle estimate */
    int no_speed;
    int hold_runnable;
    int slice; /* --engine slice: the token-slice engine (jockey_engine.h), for the old figures */
    enum progress_kind progress;
};

static int jockey__usage(void)
{
    fprintf(cli_usage_out(),
            "usage: paddock-sim jockey --workload SPEC.json | --workloads DIR\n"
            "                          [--runs N] [--seed S] [--json]\n"
            "                          [--max-tokens M] [--deadline SECONDS]\n"
            "                          [--change-deadline-at SECONDS --change-deadline-to "
            "SECONDS]\n"
            "                          [--slowdown SIGMA] [--noise SIGMA] [--failures P]\n"
            "                          [--spare FRACTION_OF_ORACLE]\n"
            "                          [--no-speed] [--hold-runnable] [--verbose] [--trace-run R]\n"
            "                          [--engine cluster|slice]\n"
            "                          [--progress totalworkWithQ|totalwork|vertexfrac|cp]\n");
    return 2;
}

static int jockey__parse(int argc, char **argv, struct jockey__args *a)
{
    *a = (struct jockey__args){.runs = 100,
                               .seed = 1,
                               .max_tokens = 100,
                               .slowdown = -1,
                               .noise = -1,
                               .failures = -1,
                               .spare = 1.0};
    for (int i = 0; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (strcmp(argv[i], "--json") == 0) {
            a->json = 1;
            continue;
        }
        if (strcmp(argv[i], "--no-speed") == 0) {
            a->no_speed = 1;
            continue;
        }
        if (strcmp(argv[i], "--hold-runnable") == 0) {
            a->hold_runnable = 1;
            continue;
        }
        if (strcmp(argv[i], "--verbose") == 0) {
            a->verbose = 1;
            continue;
        }
        if (strcmp(argv[i], "--trace-run") == 0 && i + 1 < argc) {
            a->verbose = 2 + atoi(argv[++i]);
            continue;
        }
        if (v == NULL)
            return -1;
        if (strcmp(argv[i], "--workload") == 0) {
            a->workload = v;
        } else if (strcmp(argv[i], "--engine") == 0) {
            if (strcmp(v, "slice") == 0)
                a->slice = 1;
            else if (strcmp(v, "cluster") == 0)
                a->slice = 0;
            else
                return -1;
        } else if (strcmp(argv[i], "--workloads") == 0) {
            a->workloads = v;
        } else if (strcmp(argv[i], "--runs") == 0) {
            long n = strtol(v, &end, 10);
            if (*end != '\0' || n < 1 || n > 100000)
                return -1;
            a->runs = (int)n;
        } else if (strcmp(argv[i], "--seed") == 0) {
            unsigned long long s = strtoull(v, &end, 10);
            if (*end != '\0')
                return -1;
            a->seed = s;
        } else if (strcmp(argv[i], "--max-tokens") == 0) {
            long n = strtol(v, &end, 10);
            if (*end != '\0' || n < 1 || n > 1000000)
                return -1;
            a->max_tokens = (int)n;
        } else if (strcmp(argv[i], "--deadline") == 0) {
            a->deadline = strtod(v, &end);
            if (*end != '\0' || !(a->deadline > 0) || !isfinite(a->deadline))
                return -1;
        } else if (strcmp(argv[i], "--change-deadline-at") == 0) {
            a->change_at = strtod(v, &end);
            if (*end != '\0' || !(a->change_at > 0) || !isfinite(a->change_at))
                return -1;
        } else if (strcmp(argv[i], "--change-deadline-to") == 0) {
            a->change_to = strtod(v, &end);
            if (*end != '\0' || !(a->change_to > 0) || !isfinite(a->change_to))
                return -1;
        } else if (strcmp(argv[i], "--spare") == 0) {
            a->spare = strtod(v, &end);
            if (*end != '\0' || !(a->spare >= 0) || a->spare > 100)
                return -1;
        } else if (strcmp(argv[i], "--slowdown") == 0 || strcmp(argv[i], "--noise") == 0 ||
                   strcmp(argv[i], "--failures") == 0) {
            double x = strtod(v, &end);
            if (*end != '\0' || !(x >= 0) || x > 5)
                return -1;
            if (strcmp(argv[i], "--slowdown") == 0)
                a->slowdown = x;
            else if (strcmp(argv[i], "--noise") == 0)
                a->noise = x;
            else if (x > 0.9)
                return -1;
            else
                a->failures = x;
        } else if (strcmp(argv[i], "--progress") == 0) {
            if (progress_kind_parse(v, &a->progress) != 0)
                return -1;
        } else {
            return -1;
        }
        i++;
    }
    if ((a->change_at > 0) != (a->change_to > 0))
        return -1;
    if (a->hold_runnable && !a->slice)
        return -1; /* the cluster's JM holds what the daemon holds */
    return (a->workload != NULL) != (a->workloads != NULL) ? 0 : -1;
}

static int jockey__dcmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double jockey__median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, jockey__dcmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static uint64_t jockey__mix(uint64_t a, uint64_t b)
{
    struct rng r;
    rng_seed_stream(&r, a, b);
    return rng_next(&r);
}

static double jockey__ms_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (t1.tv_sec - t0->tv_sec) * 1e3 + (t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* Over every run of every workload (--workloads). */
struct jockey__agg {
    long runs[4], missed[4];
    double above_sum[4];
    double *latency[4];
    size_t nlat, caplat;
    int workloads;
};

struct jockey__policy_stats {
    int missed;
    double above_sum, alloc_sum, first_sum, before_sum, after_sum;
    int changed; /* runs still going when the deadline changed */
    double *latency;
    long preemptions, failures;
};

/* Everything for one workload: its result object in *out (caller owns), the runs added to agg
 * (may be NULL). Returns 0, or 1 after printing the reason. */
static int jockey__workload(const struct jockey__args *ap, const char *path, json_t **out,
                            struct jockey__agg *agg)
{
    const struct jockey__args a = *ap;
    char msg[512];
    struct spec *spec = NULL;
    dag_t *dag = NULL;
    struct profile prof;
    struct jsim_plan est = {0}, plan = {0};
    struct jockey_attempts rec = {0};
    struct jockey__policy_stats st[4] = {{0}};
    int rc, exit_code = 1;
    profile_init(&prof);

    if ((rc = spec_load(path, NULL, &spec, msg, sizeof msg)) != 0 ||
        (rc = jsim_plan_init(&est, spec, NULL, a.progress, msg, sizeof msg)) != 0) {
        fprintf(stderr, "paddock-sim jockey: %s: %s\n", path, msg);
        goto out;
    }
    if ((rc = dag_new(spec, &dag)) != 0)
        goto out;

    /* 1. The training run (priorities from the spec's estimates) and its profile. */
    struct jockey_world w = {.spec = spec, .job = est.job, .dag = dag, .max_tokens = a.max_tokens};
    w.deadline_s = a.deadline > 0 ? a.deadline : spec->has_deadline ? spec->deadline_s : 1e9;
    controller_config_default(&w.ccfg, w.deadline_s);
    struct jockey_cond train;
    jockey_cond_training(&train);
    struct jockey_result res;
    uint64_t train_seed = jockey__mix(a.seed, 0x747261696eull);
    int train_tokens = a.max_tokens / 2 > 0 ? a.max_tokens / 2 : 1;
    double scale = jockey_cluster_scale(jsim_job_critical_path(est.job));
    if ((rc = a.slice ? jockey_engine_run(&w, JOCKEY_POLICY_FIXED, train_tokens, &train, train_seed,
                                          &rec, &res)
                      : jockey_cluster_train(spec, a.max_tokens, train_tokens, scale, &train,
                                             train_seed, &rec)) != 0 ||
        (rc = profile_build(&prof, spec->name, (int)spec->nstages, est.stage_names, rec.v, rec.n,
                            msg, sizeof msg)) != 0) {
        fprintf(stderr, "paddock-sim jockey: training run: %s\n", err_text(rc));
        goto out;
    }

    /* 2. The offline phase from the profile, as the JM does it (jsim_plan). */
    if ((rc = jsim_plan_init(&plan, spec, &prof, a.progress, msg, sizeof msg)) != 0) {
        fprintf(stderr, "paddock-sim jockey: %s\n", msg);
        goto out;
    }
    w.job = plan.job;

    /* 3. The deadline. */
    const char *deadline_source = "spec";
    struct jsim_rng rng;
    jsim_rng_seed(&rng, jockey__mix(a.seed, 0x7461626c65ull));
    if (a.deadline > 0) {
        deadline_source = "command line";
    } else if (!spec->has_deadline) {
        double mk[11];
        struct jsim_run_stats rs;
        for (int i = 0; i < 11; i++) {
            if ((rc = jsim_run(plan.job, &plan.model, a.max_tokens, &plan.progress, &rng, NULL,
                               &rs)) != 0)
                goto out;
            mk[i] = rs.makespan;
        }
        w.deadline_s = ceil(jockey__median(mk, 11) / 0.3);
        deadline_source = "derived (Jockey 5.1: max allocation finishes 70% early)";
    }
    controller_config_default(&w.ccfg, w.deadline_s);
    w.ccfg.max_tokens = a.max_tokens;
    if (a.deadline <= 0 && (spec->nutility > 0 || spec->has_deadline)) {
        if ((rc = utility_init_spec(&w.utility, spec, msg, sizeof msg)) != 0) {
            fprintf(stderr, "paddock-sim jockey: %s\n", msg);
            goto out;
        }
    } else {
        utility_init_deadline(&w.utility, w.deadline_s);
    }

    /* 4. C(p, a), timed: the JM computes it when it starts. */
    struct jsim_table_config tcfg;
    jsim_table_config_default(&tcfg);
    tcfg.max_tokens = a.max_tokens;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if ((rc = jsim_plan_build_table(&plan, &tcfg, &rng, msg, sizeof msg)) != 0) {
        fprintf(stderr, "paddock-sim jockey: %s\n", msg);
        goto out;
    }
    double table_ms = jockey__ms_since(&t0);
    struct jsim_table_cost cost = plan.cost;
    w.pm = &plan.progress;
    if (!a.no_speed)
        w.stage_ratio = plan.stage_ratio;
    w.hold_runnable = a.hold_runnable;
    w.change_at_s = a.change_at;
    w.change_to_s = a.change_to;
    w.table = plan.table;
    w.amdahl = &plan.amdahl;

    /* 5. The judged runs. */
    double work_est = 0;
    for (int s = 0; s < plan.model.nstages; s++)
        work_est += plan.model.stages[s].runtime_total;
    double oracle_est = ceil(work_est / w.deadline_s);
    struct jockey_cond cond;
    jockey_cond_judged(&cond, w.deadline_s, a.spare * (oracle_est > 1 ? oracle_est : 1));
    if (a.slowdown >= 0)
        cond.slow_sigma = a.slowdown;
    if (a.noise >= 0)
        cond.noise_sigma = a.noise;
    if (a.failures >= 0)
        cond.fail_prob = a.failures;
    for (int p = 0; p < 4; p++) {
        st[p].latency = mem_calloc((size_t)a.runs, sizeof *st[p].latency);
        if (st[p].latency == NULL)
            goto out;
    }
    double oracle_sum = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int r = 0; r < a.runs; r++) {
        uint64_t seed = jockey__mix(a.seed, 1000 + (uint64_t)r);
        for (int p = 0; p < 4; p++) {
            w.trace = a.verbose > 1 && r == a.verbose - 2 ? stderr : NULL;
            if (a.slice)
                rc = jockey_engine_run(&w, (enum jockey_policy)p, 0, &cond, seed, NULL, &res);
            else
                rc = jockey_cluster_run(&w, &plan, (enum jockey_policy)p, scale, a.spare, &cond,
                                        seed, &res);
            if (rc != 0) {
                fprintf(stderr, "paddock-sim jockey: run %d (%s): %s\n", r,
                        jockey_policy_name((enum jockey_policy)p), err_text(rc));
                goto out;
            }
            if (a.verbose)
                fprintf(stderr,
                        "run %d %-7s completion/d %.3f alloc %.2f oracle %d first %d peak %d "
                        "failures %ld preempted %ld upgraded %ld downgraded %ld\n",
                        r, jockey_policy_name((enum jockey_policy)p),
                        res.completion_s / res.deadline_s, res.alloc_mean, res.oracle,
                        res.first_tokens, res.peak_tokens, res.failures, res.preemptions,
                        res.upgrades, res.downgrades);
            st[p].missed += !res.met;
            st[p].above_sum += res.alloc_mean / res.oracle - 1.0;
            st[p].alloc_sum += res.alloc_mean;
            st[p].first_sum += res.first_tokens;
            st[p].latency[r] = res.completion_s / res.deadline_s;
            if (res.alloc_after > 0) {
                st[p].before_sum += res.alloc_before;
                st[p].after_sum += res.alloc_after;
                st[p].changed++;
            }
            st[p].preemptions += res.preemptions;
            st[p].failures += res.failures;
            if (p == 0)
                oracle_sum += res.oracle;
        }
    }
    if (agg != NULL) {
        if (agg->nlat + (size_t)a.runs > agg->caplat) {
            size_t nc = (agg->nlat + (size_t)a.runs) * 2;
            for (int p = 0; p < 4; p++) {
                double *v = mem_reallocarray(agg->latency[p], nc, sizeof *v);
                if (v == NULL) {
                    rc = ERR_NOMEM;
                    goto out;
                }
                agg->latency[p] = v;
            }
            agg->caplat = nc;
        }
        for (int p = 0; p < 4; p++) {
            agg->runs[p] += a.runs;
            agg->missed[p] += st[p].missed;
            agg->above_sum[p] += st[p].above_sum;
            memcpy(agg->latency[p] + agg->nlat, st[p].latency, (size_t)a.runs * sizeof(double));
        }
        agg->nlat += (size_t)a.runs;
        agg->workloads++;
    }
    double runs_ms = jockey__ms_since(&t0);

    json_t *root = json_object(), *pol = json_object();
    json_object_set_new(root, "workload", json_string(spec->name));
    json_object_set_new(root, "tasks", json_integer((json_int_t)spec->ntasks));
    json_object_set_new(root, "stages", json_integer((json_int_t)spec->nstages));
    json_object_set_new(root, "deadline_s", json_real(w.deadline_s));
    json_object_set_new(root, "deadline_source", json_string(deadline_source));
    json_object_set_new(root, "runs", json_integer(a.runs));
    json_object_set_new(root, "seed", json_integer((json_int_t)a.seed));
    json_object_set_new(root, "max_tokens", json_integer(a.max_tokens));
    json_object_set_new(root, "progress", json_string(progress_kind_name(a.progress)));
    json_object_set_new(root, "speed_signal", json_boolean(!a.no_speed));
    json_object_set_new(root, "hold_runnable", json_boolean(a.hold_runnable));
    json_object_set_new(root, "engine", json_string(a.slice ? "slice" : "cluster"));
    json_object_set_new(root, "spare_max_tokens", json_real(cond.spare_max));
    json_object_set_new(root, "critical_path_s", json_real(jsim_job_critical_path(plan.job)));
    json_object_set_new(root, "oracle_mean", json_real(oracle_sum / a.runs));
    json_object_set_new(root, "table",
                        json_pack("{s:f, s:i, s:i, s:i, s:i, s:f}", "build_ms", table_ms,
                                  "allocations", cost.nallocs, "simulated_runs", (int)cost.runs,
                                  "peak_parallelism", cost.peak_parallelism, "task_attempts",
                                  (int)cost.task_attempts, "judged_runs_ms", runs_ms));
    for (int p = 0; p < 4; p++) {
        json_object_set_new(pol, jockey_policy_name((enum jockey_policy)p),
                            json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "missed_fraction",
                                      (double)st[p].missed / a.runs, "mean_alloc_above_oracle",
                                      st[p].above_sum / a.runs, "median_latency_vs_deadline",
                                      jockey__median(st[p].latency, a.runs), "mean_alloc",
                                      st[p].alloc_sum / a.runs, "mean_first_alloc",
                                      st[p].first_sum / a.runs, "preemptions_per_run",
                                      (double)st[p].preemptions / a.runs, "failures_per_run",
                                      (double)st[p].failures / a.runs));
    }
    if (a.change_at > 0) {
        json_object_set_new(root, "deadline_changed_at_s", json_real(a.change_at));
        json_object_set_new(root, "deadline_changed_to_s", json_real(a.change_to));
        for (int p = 0; p < 4; p++) {
            json_t *o = json_object_get(pol, jockey_policy_name((enum jockey_policy)p));
            int c = st[p].changed > 0 ? st[p].changed : 1;
            json_object_set_new(o, "runs_changed", json_integer(st[p].changed));
            json_object_set_new(o, "mean_alloc_before_change", json_real(st[p].before_sum / c));
            json_object_set_new(o, "mean_alloc_after_change", json_real(st[p].after_sum / c));
        }
    }
    json_object_set_new(root, "policies", pol);
    *out = root;
    exit_code = 0;
out:
    if (exit_code != 0 && rc == ERR_NOMEM)
        fprintf(stderr, "paddock-sim jockey: out of memory\n");
    for (int p = 0; p < 4; p++)
        mem_free(st[p].latency);
    mem_free(rec.v);
    jsim_plan_close(&plan);
    jsim_plan_close(&est);
    profile_close(&prof);
    dag_destroy(&dag);
    spec_destroy(&spec);
    return exit_code;
}

static void jockey__print_one(json_t *root)
{
    json_t *pol = json_object_get(root, "policies"), *tbl = json_object_get(root, "table");
    printf("workload %s: %lld tasks, deadline %.0f s (%s), oracle ~%.1f tokens, %lld runs\n",
           json_string_value(json_object_get(root, "workload")),
           (long long)json_integer_value(json_object_get(root, "tasks")),
           json_real_value(json_object_get(root, "deadline_s")),
           json_string_value(json_object_get(root, "deadline_source")),
           json_real_value(json_object_get(root, "oracle_mean")),
           (long long)json_integer_value(json_object_get(root, "runs")));
    printf("C(p,a): %lld allocations, %lld simulated runs, built in %.1f ms\n",
           (long long)json_integer_value(json_object_get(tbl, "allocations")),
           (long long)json_integer_value(json_object_get(tbl, "simulated_runs")),
           json_real_value(json_object_get(tbl, "build_ms")));
    printf("%-8s %8s %10s %10s %10s\n", "policy", "missed", "above-orc", "latency/d", "mean-alloc");
    for (int p = 0; p < 4; p++) {
        json_t *o = json_object_get(pol, jockey_policy_name((enum jockey_policy)p));
        printf("%-8s %8.3f %10.3f %10.3f %10.2f\n", jockey_policy_name((enum jockey_policy)p),
               json_real_value(json_object_get(o, "missed_fraction")),
               json_real_value(json_object_get(o, "mean_alloc_above_oracle")),
               json_real_value(json_object_get(o, "median_latency_vs_deadline")),
               json_real_value(json_object_get(o, "mean_alloc")));
    }
}

static int jockey__json_name_cmp(const struct dirent **x, const struct dirent **y)
{
    return strcmp((*x)->d_name, (*y)->d_name);
}

static int jockey__is_json(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return d->d_name[0] != '.' && n > 5 && strcmp(d->d_name + n - 5, ".json") == 0;
}

static int jockey__cmd(int argc, char **argv)
{
    struct jockey__args a;
    if (jockey__parse(argc, argv, &a) != 0)
        return jockey__usage();
    if (a.workload != NULL) {
        json_t *root = NULL;
        if (jockey__workload(&a, a.workload, &root, NULL) != 0)
            return 1;
        if (a.json) {
            char *text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
            if (text != NULL)
                printf("%s\n", text);
            free(text);
        } else {
            jockey__print_one(root);
        }
        json_decref(root);
        return 0;
    }
    /* Every workload in a directory, in name order, then the policies over all their runs. */
    struct dirent **ents = NULL;
    int n = scandir(a.workloads, &ents, jockey__is_json, jockey__json_name_cmp);
    if (n < 0) {
        fprintf(stderr, "paddock-sim jockey: %s: %s\n", a.workloads, strerror(errno));
        return 1;
    }
    struct jockey__agg agg = {0};
    json_t *all = json_object(), *list = json_array();
    int code = n > 0 ? 0 : 1;
    if (n == 0)
        fprintf(stderr, "paddock-sim jockey: %s: no *.json workloads\n", a.workloads);
    for (int i = 0; i < n && code == 0; i++) {
        char path[4096];
        json_t *root = NULL;
        if (snprintf(path, sizeof path, "%s/%s", a.workloads, ents[i]->d_name) >=
                (int)sizeof path ||
            jockey__workload(&a, path, &root, &agg) != 0) {
            code = 1;
            break;
        }
        if (!a.json) {
            jockey__print_one(root);
            printf("\n");
        }
        json_array_append_new(list, root);
    }
    for (int i = 0; i < n; i++)
        free(ents[i]);
    free(ents);
    if (code == 0) {
        json_t *pol = json_object();
        for (int p = 0; p < 4; p++) {
            json_object_set_new(
                pol, jockey_policy_name((enum jockey_policy)p),
                json_pack("{s:f, s:f, s:f}", "missed_fraction",
                          (double)agg.missed[p] / (double)agg.runs[p], "mean_alloc_above_oracle",
                          agg.above_sum[p] / (double)agg.runs[p], "median_latency_vs_deadline",
                          jockey__median(agg.latency[p], (int)agg.nlat)));
        }
        json_object_set_new(all, "workloads", list);
        list = NULL;
        json_object_set_new(all, "runs_per_workload", json_integer(a.runs));
        json_object_set_new(all, "policies", pol);
        if (a.json) {
            char *text = json_dumps(all, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
            if (text != NULL)
                printf("%s\n", text);
            free(text);
        } else {
            printf("all %d workloads, %ld runs each policy:\n", agg.workloads, agg.runs[0]);
            printf("%-8s %8s %10s %10s\n", "policy", "missed", "above-orc", "latency/d");
            for (int p = 0; p < 4; p++) {
                json_t *o = json_object_get(pol, jockey_policy_name((enum jockey_policy)p));
                printf("%-8s %8.4f %10.3f %10.3f\n", jockey_policy_name((enum jockey_policy)p),
                       json_real_value(json_object_get(o, "missed_fraction")),
                       json_real_value(json_object_get(o, "mean_alloc_above_oracle")),
                       json_real_value(json_object_get(o, "median_latency_vs_deadline")));
            }
        }
    }
    json_decref(list);
    json_decref(all);
    for (int p = 0; p < 4; p++)
        mem_free(agg.latency[p]);
    return code;
}

CLI_COMMAND("jockey", "Jockey vs. no adaptation, Amdahl and max allocation on a workload",
            jockey__cmd, jockey__usage)
