/* cli_greedy.c - `paddock greedy SPEC.json [--cpus N] [--json]`: the job's greedy makespan on N
 * cpus, the yardstick of issue 22 and tools/deadline-eval (docs/deadline-eval.md).
 *
 * "Greedy" is a list schedule of the spec's estimates with no overheads: whenever cpus are free,
 * the ready task with the longest estimated path to the end of the job (bottom level) starts.
 * It is computed with the JM's own simulator (jm/jsim.h: jsim_plan_init_sized, jsim_run) over
 * the spec's estimates, without a profile, so there is no noise and one run is the answer. A task
 * holds ceil(cpu) cpus (1-cpu tokens; memory is not counted), and a task that needs more cpus
 * than are free waits at the head of the list (no backfilling), as the simulator does.
 *
 * Exit codes: 0 printed, 1 the spec is unusable, 2 usage. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "jm/jsim.h"
#include "jm/spec.h"
#include "tools/cli.h"

/* Memory per 1-cpu token for the simulation: large enough that memory never counts. */
#define GREEDY__TOKEN_MEM_MB (1ull << 40)
#define GREEDY__MAX_CPUS     100000

static int greedy__usage(void)
{
    fprintf(cli_usage_out(),
            "usage: paddock greedy SPEC.json [--cpus N] [--json]\n"
            "  the makespan of a list schedule of the spec's estimates on N cpus (default 8):\n"
            "  bottom-level priority, no overheads, memory not counted (jm/jsim.h)\n");
    return 2;
}

static int greedy_main(int argc, char **argv)
{
    const char *path = NULL;
    long cpus = 8;
    int json = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            return greedy__usage();
        } else if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (strcmp(a, "--cpus") == 0 && i + 1 < argc) {
            char *end = NULL;
            const char *v = argv[++i];
            errno = 0;
            cpus = strtol(v, &end, 10);
            if (end == v || *end != '\0' || errno != 0 || cpus < 1 || cpus > GREEDY__MAX_CPUS) {
                fprintf(stderr, "paddock greedy: --cpus '%s': 1 to %d\n", v, GREEDY__MAX_CPUS);
                return 2;
            }
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "paddock greedy: unknown option '%s'\n", a);
            return greedy__usage();
        } else if (path == NULL) {
            path = a;
        } else {
            return greedy__usage();
        }
    }
    if (path == NULL)
        return greedy__usage();

    char msg[512];
    struct spec *spec = NULL;
    int rc = spec_load(path, NULL, &spec, msg, sizeof msg);
    if (rc != 0) {
        fprintf(stderr, "paddock greedy: %s: %s\n", path, msg);
        return 1;
    }
    struct jsim_plan pl;
    rc = jsim_plan_init_sized(&pl, spec, NULL, PROGRESS_TOTALWORK_Q, 1.0, GREEDY__TOKEN_MEM_MB, msg,
                              sizeof msg);
    if (rc != 0) {
        fprintf(stderr, "paddock greedy: %s: %s\n", path, msg);
        spec_destroy(&spec);
        return 1;
    }
    struct jsim_rng rng;
    jsim_rng_seed(&rng, 1); /* no draw matters: the model is the estimates */
    struct jsim_run_stats st;
    rc = jsim_run(pl.job, &pl.model, (int)cpus, &pl.progress, &rng, NULL, &st);
    if (rc != 0) {
        fprintf(stderr, "paddock greedy: %s: simulation failed: %s\n", path, err_text(rc));
        jsim_plan_close(&pl);
        spec_destroy(&spec);
        return 1;
    }
    double cp = jsim_job_critical_path(pl.job);
    double work = 0; /* cpu-seconds: each task's estimate times the cpus it holds */
    for (int t = 0; t < jsim_job_ntasks(pl.job); t++)
        work += jsim_job_task_est(pl.job, t) * jsim_job_task_tokens(pl.job, t);
    if (json) {
        json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:f, s:f, s:f, s:i}", "spec", path, "name",
                              spec->name, "tasks", (json_int_t)spec->ntasks, "cpus",
                              (json_int_t)cpus, "greedy_s", st.makespan, "critical_path_s", cp,
                              "work_cpu_s", work, "peak_cpus", st.peak_running);
        char *t = o != NULL
                      ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9))
                      : NULL;
        json_decref(o);
        if (t == NULL) {
            fprintf(stderr, "paddock greedy: out of memory\n");
            rc = 1;
        } else {
            printf("%s\n", t);
            free(t);
        }
    } else {
        printf("job \"%s\" (%zu tasks) on %ld cpus\n", spec->name, spec->ntasks, cpus);
        printf("  greedy makespan  %.3f s (list schedule, bottom-level priority, no overheads)\n",
               st.makespan);
        printf("  critical path    %.3f s (%.0f%% of greedy)\n", cp,
               st.makespan > 0 ? 100.0 * cp / st.makespan : 0.0);
        printf("  work             %.3f cpu-s (work / cpus %.3f s)\n", work, work / (double)cpus);
    }
    jsim_plan_close(&pl);
    spec_destroy(&spec);
    return rc == 0 ? 0 : 1;
}

CLI_COMMAND("greedy", "a spec's greedy list-schedule makespan on N cpus (the JM's simulator)",
            greedy_main, greedy__usage)
