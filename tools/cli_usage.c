/* cli_usage.c - `paddock usage [--by vc|name|user] [--since D] [--json] [--cluster DIR | --rm
 * ENDPOINTS --keys DIR]` (issue 25; Slurm's sacct is the model): the accounting of finished
 * jobs the RM's ledger keeps, each with the token-seconds its JM reported and the price of its
 * admitted deadline (MRM eq. 13's first term, token-seconds; 0 without one), totalled by
 * virtual cluster, job name or user (default: user). --since D keeps jobs that finished in the
 * last D (30s, 5m, 2h, 1d). A user sees their own jobs, an admin everyone's.
 *
 * Exit codes: 0 answered, 1 the RM failed, 2 usage. */
#include "common/err.h"
#include "proto/proto.h"
#include "tools/cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int usage__usage(void)
{
    fprintf(cli_usage_out(), "usage: paddock usage [--by vc|name|user] [--since D] [--json]\n"
                             "                     [--cluster DIR | --rm ENDPOINTS --keys DIR]\n");
    return 2;
}

/* "90", "30s", "5m", "2h", "1d" as ms; -1 when malformed. */
static long long usage__duration(const char *v)
{
    char *end = NULL;
    double x = strtod(v, &end);
    if (end == v || x < 0)
        return -1;
    double unit = *end == '\0' || strcmp(end, "s") == 0 ? 1e3
                  : strcmp(end, "m") == 0               ? 60e3
                  : strcmp(end, "h") == 0               ? 3600e3
                  : strcmp(end, "d") == 0               ? 86400e3
                                                        : -1;
    return unit < 0 ? -1 : (long long)(x * unit);
}

static int usage_main(int argc, char **argv)
{
    struct cli_admin_opts c = {0};
    bool json = false;
    const char *by = "user";
    long long since = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (cli_admin_option(argc, argv, &i, &c)) {
            continue;
        } else if (strcmp(argv[i], "--by") == 0 && i + 1 < argc) {
            by = argv[++i];
            if (strcmp(by, "vc") != 0 && strcmp(by, "name") != 0 && strcmp(by, "user") != 0)
                return usage__usage();
        } else if (strcmp(argv[i], "--since") == 0 && i + 1 < argc) {
            since = usage__duration(argv[++i]);
            if (since < 0) {
                fprintf(stderr, "paddock usage: --since '%s': a duration (30s, 5m, 2h, 1d)\n",
                        argv[i]);
                return 2;
            }
        } else {
            return usage__usage();
        }
    }
    json_t *doc = NULL;
    int rc = cli_admin_ask(&c, "usage", "usage", NULL, 0, NULL, &doc);
    if (rc != 0)
        return rc;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    long long now_ms = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    const char *key = strcmp(by, "vc") == 0 ? "virtual_cluster" : by;
    json_t *groups = json_object(), *order = json_array();
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(doc, "usage"), i, u)
    {
        if (since > 0 && json_integer_value(json_object_get(u, "finished_ms")) < now_ms - since)
            continue;
        const char *k = json_string_value(json_object_get(u, key));
        k = k != NULL && k[0] != '\0' ? k : "-";
        json_t *g = json_object_get(groups, k);
        if (g == NULL) {
            g = json_object();
            json_object_set_new(g, key, json_string(k));
            json_object_set_new(g, "jobs", json_integer(0));
            json_object_set_new(g, "token_s", json_real(0));
            json_object_set_new(g, "price_token_s", json_real(0));
            json_object_set(groups, k, g);
            json_array_append_new(order, g);
        }
        json_object_set_new(g, "jobs",
                            json_integer(json_integer_value(json_object_get(g, "jobs")) + 1));
        json_object_set_new(g, "token_s",
                            json_real(json_real_value(json_object_get(g, "token_s")) +
                                      json_number_value(json_object_get(u, "token_s"))));
        json_object_set_new(g, "price_token_s",
                            json_real(json_real_value(json_object_get(g, "price_token_s")) +
                                      json_number_value(json_object_get(u, "price_token_s"))));
    }
    if (json) {
        json_t *out = json_object();
        json_object_set_new(out, "by", json_string(by));
        json_object_set_new(out, "since_ms", since > 0 ? json_integer(since) : json_null());
        json_object_set(out, "totals", order);
        rc = cli_admin_print_json(out);
        json_decref(out);
    } else {
        printf("%-24s %6s %14s %14s\n",
               strcmp(by, "vc") == 0     ? "VIRTUAL CLUSTER"
               : strcmp(by, "name") == 0 ? "NAME"
                                         : "USER",
               "JOBS", "TOKEN-S", "PRICE");
        json_t *g;
        json_array_foreach(order, i, g)
        {
            printf("%-24s %6lld %14.2f %14.2f\n", json_string_value(json_object_get(g, key)),
                   (long long)json_integer_value(json_object_get(g, "jobs")),
                   json_real_value(json_object_get(g, "token_s")),
                   json_real_value(json_object_get(g, "price_token_s")));
        }
    }
    json_decref(order);
    json_decref(groups);
    json_decref(doc);
    return rc;
}

CLI_COMMAND("usage", "accounting: token-seconds and deadline prices of finished jobs, totalled",
            usage_main, usage__usage)
