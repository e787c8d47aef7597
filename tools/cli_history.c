/* cli_history.c - `paddock history [NAME] [--json] [--limit N] [--cluster DIR | --rm ENDPOINTS
 * --keys DIR]`: the runs the RM's ledger remembers (issue 13; Slurm's sacct is the model), newest
 * first: job id, name, period index, submit time (UTC), start, end and deadline relative to
 * submission, met or missed, token-seconds, outcome and why. NAME keeps one job's runs (a
 * recurring job's name, or an ad-hoc job's). --json prints the RM's document, cut to --limit.
 *
 * Exit codes: 0 answered, 1 the RM failed, 2 usage. */
#include "common/err.h"
#include "proto/proto.h"
#include "tools/cli.h"
#include "tools/plan_page.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int history__usage(void)
{
    fprintf(cli_usage_out(),
            "usage: paddock history [NAME] [--json] [--limit N]\n"
            "                       [--cluster DIR | --rm ENDPOINTS --keys DIR]\n");
    return 2;
}

static int history_main(int argc, char **argv)
{
    struct cli_admin_opts c = {0};
    const char *name = NULL;
    bool json = false;
    long limit = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0) {
            json = true;
        } else if (cli_admin_option(argc, argv, &i, &c)) {
            continue;
        } else if (strcmp(a, "--limit") == 0 && i + 1 < argc) {
            char *end = NULL;
            const char *v = argv[++i];
            limit = strtol(v, &end, 10);
            if (end == v || *end != '\0' || limit <= 0) {
                fprintf(stderr, "paddock history: --limit '%s': a positive number of runs\n", v);
                return 2;
            }
        } else if (a[0] != '-' && name == NULL) {
            name = a;
        } else {
            return history__usage();
        }
    }
    const char *args[1] = {name};
    json_t *doc = NULL;
    int rc =
        cli_admin_ask(&c, "history", PROTO_ADMIN_HISTORY, args, name != NULL ? 1 : 0, NULL, &doc);
    if (rc != 0)
        return rc;
    json_t *runs = json_object_get(doc, "runs");
    if (json) {
        while (limit > 0 && json_array_size(runs) > (size_t)limit)
            json_array_remove(runs, json_array_size(runs) - 1);
        rc = cli_admin_print_json(doc);
    } else {
        plan_page_history(stdout, runs, (size_t)limit);
    }
    json_decref(doc);
    return rc;
}

CLI_COMMAND("history", "the runs the RM remembers: times, deadline met or missed, token-seconds",
            history_main, history__usage)
