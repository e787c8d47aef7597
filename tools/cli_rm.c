/* cli_rm.c - `paddock rm status`, `paddock nodes`, `paddock node show`, `paddock tokens`,
 * `paddock jobs`: queries of the resource monitor (DESIGN.md §3.4). Every command takes
 * --cluster DIR (default PADDOCK_CLUSTER) or --rm ENDPOINTS [--keys DIR], and --json. */
#include "common/err.h"
#include "common/mem.h"
#include "rm/rmclient.h"
#include "tools/cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLI_RM_TIMEOUT_MS 1500

struct cli_rm_opts {
    const char *cluster, *rm, *keys;
    bool json;
    const char *args[4];
    int nargs;
};

static int cli_rm_parse(int argc, char **argv, struct cli_rm_opts *o, int want_args,
                        const char *usage)
{
    memset(o, 0, sizeof *o);
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--cluster") == 0 && i + 1 < argc)
            o->cluster = argv[++i];
        else if (strcmp(argv[i], "--rm") == 0 && i + 1 < argc)
            o->rm = argv[++i];
        else if (strcmp(argv[i], "--keys") == 0 && i + 1 < argc)
            o->keys = argv[++i];
        else if (strcmp(argv[i], "--json") == 0)
            o->json = true;
        else if (argv[i][0] != '-' && o->nargs < 4)
            o->args[o->nargs++] = argv[i];
        else {
            fprintf(stderr, "usage: paddock %s\n", usage);
            return 2;
        }
    }
    if (o->nargs != want_args) {
        fprintf(stderr, "usage: paddock %s\n", usage);
        return 2;
    }
    return 0;
}

/* Every replica's own status (a JSON object each, NULL when it did not answer) and the index
 * of the ready leader (-1 if none answered as one). */
static int cli_rm_statuses(rmclient_t *c, json_t **st, int *leader)
{
    *leader = -1;
    int answered = 0;
    for (size_t i = 0; i < rmclient_count(c); i++) {
        char *text = NULL;
        char msg[256];
        st[i] = NULL;
        if (rmclient_admin(c, (int)i, "rm_status", NULL, 0, CLI_RM_TIMEOUT_MS / 2, &text, msg,
                           sizeof msg) != 0)
            continue;
        st[i] = json_loads(text, 0, NULL);
        mem_free(text);
        if (st[i] == NULL)
            continue;
        answered++;
        const char *role = json_string_value(json_object_get(st[i], "role"));
        if (role != NULL && strcmp(role, "leader") == 0 &&
            json_is_true(json_object_get(st[i], "ready")))
            *leader = (int)i;
    }
    return answered;
}

/* Runs an admin query on the leader when one answers, else on any replica that does. */
static int cli_rm_query(const struct cli_rm_opts *o, const char *kind, const char *const *args,
                        size_t nargs, json_t **doc)
{
    char msg[512];
    rmclient_t *c = NULL;
    *doc = NULL;
    if (rmclient_open(&c, o->cluster, o->rm, o->keys, msg, sizeof msg) != 0) {
        fprintf(stderr, "paddock: %s\n", msg);
        return 1;
    }
    json_t *st[RMCLIENT_MAX_REPLICAS];
    int leader = -1;
    int answered = cli_rm_statuses(c, st, &leader);
    int target = leader;
    for (size_t i = 0; i < rmclient_count(c); i++) {
        if (target < 0 && st[i] != NULL)
            target = (int)i;
        json_decref(st[i]);
    }
    int rc = 1;
    if (answered == 0) {
        fprintf(stderr, "paddock: no RM replica answered\n");
    } else {
        char *text = NULL;
        if (rmclient_admin(c, target, kind, args, nargs, CLI_RM_TIMEOUT_MS, &text, msg,
                           sizeof msg) != 0) {
            fprintf(stderr, "paddock: %s\n", msg);
        } else {
            json_error_t jerr;
            *doc = json_loads(text, 0, &jerr);
            if (*doc == NULL)
                fprintf(stderr, "paddock: bad reply from the RM: %s\n", jerr.text);
            else
                rc = 0;
            mem_free(text);
        }
    }
    rmclient_destroy(&c);
    return rc;
}

static int cli_rm_print_json(json_t *doc)
{
    char *text = json_dumps(doc, JSON_INDENT(2));
    if (text == NULL)
        return 1;
    printf("%s\n", text);
    free(text);
    return 0;
}

static const char *cli_rm_str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s != NULL ? s : "-";
}

static long long cli_rm_int(json_t *o, const char *k)
{
    return (long long)json_integer_value(json_object_get(o, k));
}

/* An integer field as text, "-" when absent or null (an unreachable replica). */
static const char *cli_rm_num(json_t *o, const char *k, char *buf, size_t cap)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_integer(v))
        return "-";
    snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
    return buf;
}

/* ---- rm status ---- */

static int rm_status_main(int argc, char **argv)
{
    struct cli_rm_opts o;
    int rc = cli_rm_parse(argc, argv, &o, 0,
                          "rm status [--cluster DIR | --rm ENDPOINTS [--keys DIR]] [--json]");
    if (rc != 0)
        return rc;
    char msg[512];
    rmclient_t *c = NULL;
    if (rmclient_open(&c, o.cluster, o.rm, o.keys, msg, sizeof msg) != 0) {
        fprintf(stderr, "paddock: %s\n", msg);
        return 1;
    }
    uint64_t ids[RMCLIENT_MAX_REPLICAS] = {0};
    const char *cdir =
        o.cluster != NULL ? o.cluster : (o.rm == NULL ? getenv("PADDOCK_CLUSTER") : NULL);
    if (cdir != NULL) {
        struct rmclient_cluster cl;
        if (rmclient_cluster_load(cdir, &cl, msg, sizeof msg) == 0)
            memcpy(ids, cl.ids, sizeof ids);
        rmclient_cluster_close(&cl);
    }
    json_t *st[RMCLIENT_MAX_REPLICAS];
    int leader = -1;
    int answered = cli_rm_statuses(c, st, &leader);
    json_t *doc = json_object(), *reps = json_array();
    for (size_t i = 0; i < rmclient_count(c); i++) {
        json_t *r = st[i];
        if (r == NULL) {
            r = json_object();
            json_object_set_new(r, "id", ids[i] ? json_integer((json_int_t)ids[i]) : json_null());
            json_object_set_new(r, "address", json_null());
            json_object_set_new(r, "api", json_string(rmclient_endpoint(c, i)));
            json_object_set_new(r, "role", json_string("unreachable"));
            json_object_set_new(r, "term", json_null());
            json_object_set_new(r, "commit_index", json_null());
        }
        json_array_append_new(reps, r);
    }
    json_t *lid = leader >= 0 ? json_object_get(json_array_get(reps, (size_t)leader), "id") : NULL;
    json_object_set_new(doc, "leader", lid != NULL ? json_incref(lid) : json_null());
    json_object_set_new(doc, "replicas", reps);
    if (o.json) {
        cli_rm_print_json(doc);
    } else {
        if (leader >= 0)
            printf("leader: %lld\n", (long long)json_integer_value(lid));
        else
            printf("leader: none\n");
        printf("%-4s %-22s %-12s %6s %10s %10s %6s %6s\n", "ID", "ADDRESS", "ROLE", "TERM",
               "COMMIT", "APPLIED", "NODES", "JOBS");
        size_t i;
        json_t *r;
        json_array_foreach(reps, i, r)
        {
            const char *addr = json_string_value(json_object_get(r, "address"));
            char b[6][24];
            printf("%-4s %-22s %-12s %6s %10s %10s %6s %6s\n", cli_rm_num(r, "id", b[0], 24),
                   addr != NULL ? addr : cli_rm_str(r, "api"), cli_rm_str(r, "role"),
                   cli_rm_num(r, "term", b[1], 24), cli_rm_num(r, "commit_index", b[2], 24),
                   cli_rm_num(r, "last_applied", b[3], 24), cli_rm_num(r, "nodes", b[4], 24),
                   cli_rm_num(r, "jobs", b[5], 24));
        }
    }
    json_decref(doc);
    rmclient_destroy(&c);
    return answered > 0 ? 0 : 1;
}

/* ---- nodes, node show ---- */

static int nodes_main(int argc, char **argv)
{
    struct cli_rm_opts o;
    int rc = cli_rm_parse(argc, argv, &o, 0, "nodes [--cluster DIR | --rm ENDPOINTS] [--json]");
    json_t *doc = NULL;
    if (rc != 0 || (rc = cli_rm_query(&o, "nodes", NULL, 0, &doc)) != 0)
        return rc;
    if (o.json) {
        cli_rm_print_json(doc);
    } else {
        printf("%-20s %-10s %-9s %6s %9s %7s %7s %9s\n", "NAME", "RACK", "STATE", "CPUS", "MEM_MB",
               "RUNNING", "QUEUED", "AGE_MS");
        size_t i;
        json_t *n;
        json_array_foreach(json_object_get(doc, "nodes"), i, n)
        {
            json_t *age = json_object_get(n, "age_ms");
            char agebuf[32];
            snprintf(agebuf, sizeof agebuf, json_is_integer(age) ? "%lld" : "never",
                     (long long)json_integer_value(age));
            printf("%-20s %-10s %-9s %6.2f %9lld %7lld %7lld %9s\n", cli_rm_str(n, "name"),
                   cli_rm_str(n, "rack"), cli_rm_str(n, "state"),
                   json_number_value(json_object_get(n, "cpus")), cli_rm_int(n, "mem_mb"),
                   cli_rm_int(n, "running"), cli_rm_int(n, "queued"), agebuf);
        }
    }
    json_decref(doc);
    return 0;
}

static int node_show_main(int argc, char **argv)
{
    struct cli_rm_opts o;
    int rc =
        cli_rm_parse(argc, argv, &o, 1, "node show NAME [--cluster DIR | --rm ENDPOINTS] [--json]");
    json_t *doc = NULL;
    if (rc != 0 || (rc = cli_rm_query(&o, "node", o.args, 1, &doc)) != 0)
        return rc;
    if (o.json) {
        cli_rm_print_json(doc);
        json_decref(doc);
        return 0;
    }
    const char *k;
    json_t *v;
    json_object_foreach(doc, k, v)
    {
        if (json_is_object(v) || json_is_array(v))
            continue;
        char *t = json_dumps(v, JSON_ENCODE_ANY);
        printf("%-22s %s\n", k, t != NULL ? t : "?");
        free(t);
    }
    json_t *mx = json_object_get(doc, "matrix");
    json_t *mem = json_object_get(mx, "mem_mb"), *cpu = json_object_get(mx, "cpu");
    printf("\nwait-time matrix (ms; rows: cores, columns: MiB)\n%8s", "");
    size_t i, j;
    json_t *x;
    json_array_foreach(mem, i, x) printf(" %8lld", (long long)json_integer_value(x));
    printf("\n");
    json_array_foreach(json_object_get(mx, "cells_ms"), i, x)
    {
        printf("%8.2f", json_number_value(json_array_get(cpu, i)));
        json_t *cell;
        json_array_foreach(x, j, cell)
        {
            if (json_is_null(cell))
                printf(" %8s", "never");
            else
                printf(" %8lld", (long long)json_integer_value(cell));
        }
        printf("\n");
    }
    json_decref(doc);
    return 0;
}

/* ---- tokens, jobs ---- */

static int tokens_main(int argc, char **argv)
{
    struct cli_rm_opts o;
    int rc = cli_rm_parse(argc, argv, &o, 0, "tokens [--cluster DIR | --rm ENDPOINTS] [--json]");
    json_t *doc = NULL;
    if (rc != 0 || (rc = cli_rm_query(&o, "tokens", NULL, 0, &doc)) != 0)
        return rc;
    if (o.json) {
        cli_rm_print_json(doc);
    } else {
        printf("%-20s %9s %9s %9s\n", "VIRTUAL CLUSTER", "CAPACITY", "GRANTED", "FREE");
        size_t i, j;
        json_t *vc, *g;
        json_array_foreach(json_object_get(doc, "virtual_clusters"), i, vc)
        {
            printf("%-20s %9lld %9lld %9lld\n", cli_rm_str(vc, "name"), cli_rm_int(vc, "capacity"),
                   cli_rm_int(vc, "granted"), cli_rm_int(vc, "free"));
            json_array_foreach(json_object_get(vc, "jobs"), j, g)
            {
                printf("  %-16s %-20s tokens %lld (wants %lld)\n", cli_rm_str(g, "job_id"),
                       cli_rm_str(g, "name"), cli_rm_int(g, "tokens"), cli_rm_int(g, "wanted"));
            }
        }
    }
    json_decref(doc);
    return 0;
}

static int jobs_main(int argc, char **argv)
{
    struct cli_rm_opts o;
    int rc = cli_rm_parse(argc, argv, &o, 0, "jobs [--cluster DIR | --rm ENDPOINTS] [--json]");
    json_t *doc = NULL;
    if (rc != 0 || (rc = cli_rm_query(&o, "jobs", NULL, 0, &doc)) != 0)
        return rc;
    if (o.json) {
        cli_rm_print_json(doc);
    } else {
        printf("%-16s %-20s %-12s %-10s %7s %7s\n", "JOB", "NAME", "VC", "STATE", "TOKENS",
               "WANTED");
        size_t i;
        json_t *j;
        json_array_foreach(json_object_get(doc, "jobs"), i, j)
        {
            printf("%-16s %-20s %-12s %-10s %7lld %7lld\n", cli_rm_str(j, "job_id"),
                   cli_rm_str(j, "name"), cli_rm_str(j, "virtual_cluster"), cli_rm_str(j, "state"),
                   cli_rm_int(j, "tokens"), cli_rm_int(j, "wanted"));
        }
    }
    json_decref(doc);
    return 0;
}

CLI_COMMAND("rm status", "the RM replicas: leader, roles, terms, commit indexes", rm_status_main)
CLI_COMMAND("nodes", "the nodes the RM knows, with load and heartbeat age", nodes_main)
CLI_COMMAND("node show", "one node, with its full wait-time matrix", node_show_main)
CLI_COMMAND("tokens", "virtual clusters, token capacity and grants per job", tokens_main)
CLI_COMMAND("jobs", "jobs registered with the RM", jobs_main)
