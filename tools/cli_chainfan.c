/* cli_chainfan.c - `paddock import chainfan -o OUT.json [--chain N] [--side K] [--chain-s S]
 * [--side-s S] [--join-s S] [--name NAME]`: a synthetic job whose critical path is a chain of
 * short tasks, each releasing a fan-out of K longer tasks that only a final join waits for
 * (issue 22, docs/deadline-eval.md).
 *
 * A greedy list schedule with bottom-level priority runs the chain first and fills the other cpus
 * with the fan-outs; a scheduler that lets fan-out tasks get ahead of the chain (a FIFO queue at a
 * node, tokens held by queued siblings) stretches the makespan by the chain's waits. The
 * defaults (20, 4, 0.5 s, 1.2 s, join 0.1 s) make 101 tasks with a critical path of 11.3 s and a
 * greedy 8-cpu makespan of 14.3 s (`paddock greedy`); --chain 24 --side 3 --side-s 1.5 makes 97
 * tasks, 13.6 s and 16.6 s. Every task is `sleep` of its estimate, 1 cpu, 16 MiB.
 *
 * The spec is validated with the JM's parser (jm/spec.h) before it is written (atomically, or to
 * stdout with -o -). Exit codes: 0 written, 1 failed, 2 usage. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jm/spec.h"
#include "tools/cli.h"
#include "tools/jobdir.h"

#define CHAINFAN__MAX_TASKS 100000

static int chainfan__usage(void)
{
    fprintf(cli_usage_out(),
            "usage: paddock import chainfan -o OUT.json [--chain N] [--side K]\n"
            "                               [--chain-s S] [--side-s S] [--join-s S]\n"
            "                               [--name NAME]\n"
            "  a chain of N tasks of S s (default 20 x 0.5 s), each releasing K tasks of\n"
            "  S s (default 4 x 1.2 s) that only a final join (0.1 s) waits for\n");
    return 2;
}

static int chainfan__num(const char *flag, const char *v, double lo, double hi, double *out)
{
    char *end = NULL;
    errno = 0;
    *out = strtod(v, &end);
    if (end == v || *end != '\0' || errno != 0 || !isfinite(*out) || *out < lo || *out > hi) {
        fprintf(stderr, "paddock import chainfan: %s '%s': %g to %g\n", flag, v, lo, hi);
        return -1;
    }
    return 0;
}

/* One task: `sleep S`, 1 cpu, 16 MiB; `after` is transferred to the task. */
static json_t *chainfan__task(const char *id, const char *stage, double s, json_t *after)
{
    char arg[64];
    snprintf(arg, sizeof arg, "%g", s);
    return json_pack("{s:s, s:s, s:[s,s], s:i, s:i, s:f, s:o}", "id", id, "stage", stage, "cmd",
                     "sleep", arg, "cpu", 1, "mem_mb", 16, "runtime_s", s, "after", after);
}

static int chainfan_main(int argc, char **argv)
{
    double chain = 20, side = 4, chain_s = 0.5, side_s = 1.2, join_s = 0.1;
    const char *outp = NULL, *name = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return chainfan__usage();
        if (i + 1 >= argc)
            return chainfan__usage();
        const char *v = argv[++i];
        int rc = 0;
        if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0)
            outp = v;
        else if (strcmp(a, "--name") == 0)
            name = v;
        else if (strcmp(a, "--chain") == 0)
            rc = chainfan__num(a, v, 1, 10000, &chain);
        else if (strcmp(a, "--side") == 0)
            rc = chainfan__num(a, v, 0, 1000, &side);
        else if (strcmp(a, "--chain-s") == 0)
            rc = chainfan__num(a, v, 0.001, 86400, &chain_s);
        else if (strcmp(a, "--side-s") == 0)
            rc = chainfan__num(a, v, 0.001, 86400, &side_s);
        else if (strcmp(a, "--join-s") == 0)
            rc = chainfan__num(a, v, 0.001, 86400, &join_s);
        else
            return chainfan__usage();
        if (rc != 0)
            return 2;
    }
    int nc = (int)chain, ns = (int)side;
    if (outp == NULL || nc != chain || ns != side) {
        if (outp != NULL)
            fprintf(stderr, "paddock import chainfan: --chain and --side take whole numbers\n");
        return chainfan__usage();
    }
    if ((double)nc * (ns + 1) + 1 > CHAINFAN__MAX_TASKS) {
        fprintf(stderr, "paddock import chainfan: over %d tasks\n", CHAINFAN__MAX_TASKS);
        return 2;
    }
    char defname[64], id[64];
    snprintf(defname, sizeof defname, "chainfan-%dx%d", nc, ns);
    json_t *tasks = json_array(), *join_after = json_array();
    for (int c = 0; tasks != NULL && join_after != NULL && c < nc; c++) {
        char prev[64];
        snprintf(prev, sizeof prev, "c%d", c - 1);
        snprintf(id, sizeof id, "c%d", c);
        json_array_append_new(tasks, chainfan__task(id, "chain", chain_s,
                                                    c > 0 ? json_pack("[s]", prev) : json_array()));
        for (int k = 0; k < ns; k++) {
            char sid[64];
            snprintf(sid, sizeof sid, "s%d_%d", c, k);
            json_array_append_new(tasks, chainfan__task(sid, "side", side_s, json_pack("[s]", id)));
            json_array_append_new(join_after, json_string(sid));
        }
    }
    snprintf(id, sizeof id, "c%d", nc - 1);
    json_array_insert_new(join_after, 0, json_string(id));
    json_array_append_new(tasks, chainfan__task("join", "join", join_s, join_after));
    json_t *doc =
        json_pack("{s:i, s:s, s:o}", "version", 1, "name", name ? name : defname, "tasks", tasks);
    char *text =
        doc != NULL ? json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9))
                    : NULL;
    json_decref(doc);
    if (text == NULL) {
        fprintf(stderr, "paddock import chainfan: out of memory\n");
        return 1;
    }
    char msg[512];
    struct spec *spec = NULL;
    int rc = spec_parse(text, strlen(text), NULL, &spec, msg, sizeof msg);
    spec_destroy(&spec);
    if (rc != 0) {
        fprintf(stderr, "paddock import chainfan: the spec is invalid: %s\n", msg);
        free(text);
        return 1;
    }
    int ok = jobdir_write_text("paddock import chainfan", outp, text) == 0;
    free(text);
    if (!ok)
        return 1;
    fprintf(stderr, "chainfan: %d tasks (chain %d x %g s, fan-out %d x %g s, join %g s) -> %s\n",
            nc * (ns + 1) + 1, nc, chain_s, ns, side_s, join_s, outp);
    return 0;
}

CLI_COMMAND("import chainfan", "write a synthetic chain-and-fan-out job spec (issue 22)",
            chainfan_main, chainfan__usage)
