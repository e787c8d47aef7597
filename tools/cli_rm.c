/* cli_rm.c - `paddock rm status`, `paddock nodes`, `paddock node show`, `paddock tokens`,
 * `paddock jobs`: queries of the resource monitor (docs/architecture.md, "The command line"), and
 * the options and queries they share with `paddock rm add` / `paddock rm remove`
 * (cli_rm_member.c, tools/cli_rm.h). Every command takes --cluster DIR (default PADDOCK_CLUSTER)
 * or --rm ENDPOINTS [--keys DIR], and --json. */
#include "common/err.h"
#include "common/mem.h"
#include "rm/rmclient.h"
#include "tools/cli.h"
#include "tools/cli_rm.h"
#include "tools/jobdir.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLI_RM_TIMEOUT_MS 1500
#define CLI_RM_SETTLE_MS  100 /* after the first replica answers, how long the others get */

#define CLI_RM_USAGE_RM_STATUS "rm status [--cluster DIR | --rm ENDPOINTS [--keys DIR]] [--json]"
#define CLI_RM_USAGE_NODES     "nodes [--cluster DIR | --rm ENDPOINTS] [--json]"
#define CLI_RM_USAGE_NODE_SHOW "node show NAME [--cluster DIR | --rm ENDPOINTS] [--json]"
#define CLI_RM_USAGE_TOKENS    "tokens [--cluster DIR | --rm ENDPOINTS] [--json]"
#define CLI_RM_USAGE_JOBS      "jobs [--cluster DIR | --rm ENDPOINTS] [--json]"

/* Prints "usage: paddock USAGE" where usage text goes (tools/cli.h); returns 2. */
int cli_rm_usage(const char *usage)
{
    fprintf(cli_usage_out(), "usage: paddock %s\n", usage);
    return 2;
}

static int rm_status_usage(void)
{
    return cli_rm_usage(CLI_RM_USAGE_RM_STATUS);
}

static int nodes_usage(void)
{
    return cli_rm_usage(CLI_RM_USAGE_NODES);
}

static int node_show_usage(void)
{
    return cli_rm_usage(CLI_RM_USAGE_NODE_SHOW);
}

static int tokens_usage(void)
{
    return cli_rm_usage(CLI_RM_USAGE_TOKENS);
}

static int jobs_usage(void)
{
    return cli_rm_usage(CLI_RM_USAGE_JOBS);
}

/* Parses argv into o: exactly `want` positional arguments and the options of `kind`
 * (CLI_RM_QUERY or CLI_RM_CHANGE). --start needs --dir, and --dir stands for --cluster when
 * neither --cluster nor --rm is given. Returns 0, or 2 after printing the usage line. */
int cli_rm_parse(int argc, char **argv, struct cli_rm_opts *o, int want, int kind,
                 const char *usage)
{
    memset(o, 0, sizeof *o);
    bool bad = false;
    for (int i = 0; i < argc && !bad; i++) {
        bool more = i + 1 < argc, change = kind == CLI_RM_CHANGE;
        if (strcmp(argv[i], "--cluster") == 0 && more)
            o->cluster = argv[++i];
        else if (strcmp(argv[i], "--rm") == 0 && more)
            o->rm = argv[++i];
        else if (strcmp(argv[i], "--keys") == 0 && more)
            o->keys = argv[++i];
        else if (strcmp(argv[i], "--json") == 0)
            o->json = true;
        else if (change && strcmp(argv[i], "--dir") == 0 && more)
            o->dir = argv[++i];
        else if (change && strcmp(argv[i], "--heartbeat") == 0 && more)
            o->heartbeat = argv[++i];
        else if (change && strcmp(argv[i], "--start") == 0)
            o->start = true;
        else if (argv[i][0] != '-' && o->nargs < 5)
            o->args[o->nargs++] = argv[i];
        else
            bad = true;
    }
    if (bad || o->nargs != want || (o->start && o->dir == NULL)) {
        return cli_rm_usage(usage);
    }
    if (o->dir != NULL && o->cluster == NULL && o->rm == NULL)
        o->cluster = o->dir;
    return 0;
}

/* Opens a client to the replicas o names (--cluster, --rm/--keys, or PADDOCK_CLUSTER). Returns
 * 0 with *c set (the caller destroys it), or 1 after printing why. */
int cli_rm_open(const struct cli_rm_opts *o, rmclient_t **c)
{
    char msg[512];
    *c = NULL;
    if (rmclient_open(c, o->cluster, o->rm, o->keys, msg, sizeof msg) != 0) {
        fprintf(stderr, "paddock: %s\n", msg);
        return 1;
    }
    return 0;
}

/* Whether a status document is a ready leader's (text match: no parse on the hot path). */
static bool cli_rm_is_leader(const char *json, void *arg)
{
    (void)arg;
    return strstr(json, "\"role\":\"leader\"") != NULL && strstr(json, "\"ready\":true") != NULL;
}

/* Every replica's own status (a JSON object each, NULL when it did not answer) and the index
 * of the ready leader (-1 if none answered as one). With leader_only, the wait ends as soon as
 * the leader has answered (the others' statuses may then be missing). */
static int cli_rm_statuses_ex(rmclient_t *c, json_t **st, int *leader, bool leader_only)
{
    *leader = -1;
    int answered = 0;
    /* all replicas at once: one that is down costs CLI_RM_SETTLE_MS beyond the others, not a
     * timeout of its own */
    char *text[RMCLIENT_MAX_REPLICAS];
    if (rmclient_admin_until(c, "rm_status", NULL, 0, CLI_RM_TIMEOUT_MS / 2, CLI_RM_SETTLE_MS,
                             leader_only ? cli_rm_is_leader : NULL, NULL, text) < 0)
        memset(text, 0, sizeof text);
    for (size_t i = 0; i < rmclient_count(c); i++) {
        st[i] = text[i] != NULL ? json_loads(text[i], 0, NULL) : NULL;
        mem_free(text[i]);
        if (st[i] == NULL)
            continue;
        answered++;
        const char *role = json_string_value(json_object_get(st[i], "role"));
        if (role != NULL && strcmp(role, "leader") == 0 &&
            json_is_true(json_object_get(st[i], "ready")))
            *leader = (int)i;
    }
    if (*leader >= 0) /* the cluster directory's hint follows what the replicas say */
        rmclient_set_leader(c, (size_t)*leader);
    return answered;
}

int cli_rm_statuses(rmclient_t *c, json_t **st, int *leader)
{
    return cli_rm_statuses_ex(c, st, leader, false);
}

int cli_rm_list(rmclient_t *c, int replica, const char *kind, const char *id_key, int timeout_ms,
                json_t **doc, char *msg, size_t cap)
{
    json_t *all = json_array(), *seen = json_object();
    long long from = 0, total = 0;
    int rc = 0;
    *doc = NULL;
    while (rc == 0 && from >= 0) {
        char a0[24], a1[24], *text = NULL;
        snprintf(a0, sizeof a0, "%lld", from);
        snprintf(a1, sizeof a1, "%d", CLI_RM_PAGE);
        const char *args[2] = {a0, a1};
        rc = rmclient_admin(c, replica, kind, args, 2, timeout_ms, &text, msg, cap);
        if (rc != 0)
            break;
        json_t *page = json_loads(text, 0, NULL);
        mem_free(text);
        json_t *list = json_object_get(page, kind), *n;
        if (!json_is_array(list)) {
            json_decref(page);
            rc = err_fmt(msg, cap, ERR_PARSE, "bad reply from the RM");
            break;
        }
        size_t i;
        json_array_foreach(list, i, n)
        {
            const char *name = json_string_value(json_object_get(n, id_key));
            if (name != NULL && json_object_get(seen, name) != NULL)
                continue;
            if (name != NULL)
                json_object_set_new(seen, name, json_true());
            json_array_append(all, n);
        }
        json_t *next = json_object_get(page, "next"), *tot = json_object_get(page, "total");
        total = json_is_integer(tot) ? json_integer_value(tot) : (long long)json_array_size(all);
        /* an older RM: no "total", the whole list at once */
        from = json_is_integer(tot) && json_is_integer(next) && json_integer_value(next) > from
                   ? json_integer_value(next)
                   : -1;
        json_decref(page);
    }
    json_decref(seen);
    if (rc != 0) {
        json_decref(all);
        return rc;
    }
    *doc = json_object();
    json_object_set_new(*doc, kind, all);
    json_object_set_new(*doc, "total", json_integer(total));
    return 0;
}

/* Runs an admin query on the leader when one answers, else on any replica that does ("nodes"
 * and "jobs" in pages, cli_rm_list). */
int cli_rm_query(const struct cli_rm_opts *o, const char *kind, const char *const *args,
                 size_t nargs, json_t **doc)
{
    char msg[512];
    rmclient_t *c = NULL;
    *doc = NULL;
    if (cli_rm_open(o, &c) != 0)
        return 1;
    json_t *st[RMCLIENT_MAX_REPLICAS];
    int leader = -1;
    int answered = cli_rm_statuses_ex(c, st, &leader, true);
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
        bool nodes = strcmp(kind, "nodes") == 0;
        if ((nodes || strcmp(kind, "jobs") == 0) && nargs == 0) {
            if (cli_rm_list(c, target, kind, nodes ? "name" : "job_id", CLI_RM_TIMEOUT_MS, doc, msg,
                            sizeof msg) != 0)
                fprintf(stderr, "paddock: %s\n", msg);
            else
                rc = 0;
        } else if (rmclient_admin(c, target, kind, args, nargs, CLI_RM_TIMEOUT_MS, &text, msg,
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

int cli_rm_print_json(json_t *doc)
{
    char *text = json_dumps(doc, JSON_INDENT(2) | CLI_JSON_REALS);
    if (text == NULL)
        return 1;
    printf("%s\n", text);
    free(text);
    return 0;
}

const char *cli_rm_str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s != NULL ? s : "-";
}

long long cli_rm_int(json_t *o, const char *k)
{
    return (long long)json_integer_value(json_object_get(o, k));
}

int cli_rm_col(json_t *rows, const char *k, int min)
{
    size_t i, w = min > 0 ? (size_t)min : 0;
    json_t *o;
    json_array_foreach(rows, i, o)
    {
        size_t n = strlen(cli_rm_str(o, k));
        w = n > w ? n : w;
    }
    return w > CLI_RM_COL_MAX ? CLI_RM_COL_MAX : (int)w;
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

/* The queries nodes, node show, tokens, jobs: parses argv (`want` positional arguments, handed
 * to admin query `kind` as its arguments), runs the query and prints its answer as JSON with
 * --json, else as `table` prints it. Returns 0, 2 on a usage error, 1 when the RM did not
 * answer (both printed). */
static int cli_rm_show(int argc, char **argv, int want, const char *usage, const char *kind,
                       void (*table)(json_t *doc))
{
    struct cli_rm_opts o;
    json_t *doc = NULL;
    int rc = cli_rm_parse(argc, argv, &o, want, CLI_RM_QUERY, usage);
    if (rc != 0 || (rc = cli_rm_query(&o, kind, o.args, (size_t)o.nargs, &doc)) != 0)
        return rc;
    if (o.json)
        rc = cli_rm_print_json(doc);
    else
        table(doc);
    json_decref(doc);
    return rc;
}

/* ---- rm status ---- */

/* Admission's error model (rm/calib.h), as the leader holds it. */
static void cli_rm_print_calibration(json_t *cal)
{
    if (!json_is_object(cal))
        return;
    long long n = cli_rm_int(cal, "outcomes");
    double q = json_number_value(json_object_get(cal, "quantile"));
    printf("admission calibration: bound = model x %.3f, median = model x %.3f ",
           json_number_value(json_object_get(cal, "bound_factor")),
           json_number_value(json_object_get(cal, "p50_factor")));
    if (n > 0)
        printf("(q%.0f and median of actual/predicted over the last %lld finished jobs: %.3f, "
               "%.3f; prior %.2g worth %.0f jobs)\n",
               q * 100, n, json_number_value(json_object_get(cal, "sample_q")),
               json_number_value(json_object_get(cal, "sample_p50")),
               json_number_value(json_object_get(cal, "prior_bound_factor")),
               json_number_value(json_object_get(cal, "prior_weight")));
    else
        printf("(no job has finished yet: the conservative prior)\n");
    if (json_object_get(cal, "own_factor") != NULL) /* an RM that knows own spreads */
        printf("admission own spreads: bound = model x own spread x %.3f (q%.0f of actual / "
               "(predicted x own spread) over %lld jobs with one; prior %.2g)\n",
               json_number_value(json_object_get(cal, "own_factor")), q * 100,
               cli_rm_int(cal, "own_outcomes"),
               json_number_value(json_object_get(cal, "prior_own_factor")));
}

static int rm_status_main(int argc, char **argv)
{
    struct cli_rm_opts o;
    int rc = cli_rm_parse(argc, argv, &o, 0, CLI_RM_QUERY, CLI_RM_USAGE_RM_STATUS);
    if (rc != 0)
        return rc;
    rmclient_t *c = NULL;
    if (cli_rm_open(&o, &c) != 0)
        return 1;
    char msg[512];
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
            json_object_set_new(r, "metrics", json_null());
        }
        json_array_append_new(reps, r);
    }
    json_t *lid = leader >= 0 ? json_object_get(json_array_get(reps, (size_t)leader), "id") : NULL;
    json_object_set_new(doc, "leader", lid != NULL ? json_incref(lid) : json_null());
    json_t *conf =
        leader >= 0 ? json_object_get(json_array_get(reps, (size_t)leader), "configuration") : NULL;
    json_object_set_new(doc, "configuration", conf != NULL ? json_incref(conf) : json_null());
    json_object_set_new(doc, "replicas", reps);
    bool unprinted = false;
    if (o.json) {
        unprinted = cli_rm_print_json(doc) != 0;
    } else {
        if (leader >= 0)
            printf("leader: %lld\n", (long long)json_integer_value(lid));
        else
            printf("leader: none\n");
        if (json_array_size(conf) > 0) {
            printf("configuration:");
            size_t k;
            json_t *m;
            json_array_foreach(conf, k, m)
            {
                printf(" %lld (%s)", cli_rm_int(m, "id"), cli_rm_str(m, "role"));
            }
            printf("\n");
        }
        printf("%-4s %-22s %-12s %6s %10s %10s %6s %6s  %s\n", "ID", "ADDRESS", "ROLE", "TERM",
               "COMMIT", "APPLIED", "NODES", "JOBS", "METRICS");
        size_t i;
        json_t *r;
        json_array_foreach(reps, i, r)
        {
            const char *addr = json_string_value(json_object_get(r, "address"));
            char b[6][24];
            const char *murl = json_string_value(json_object_get(r, "metrics"));
            printf("%-4s %-22s %-12s %6s %10s %10s %6s %6s  %s\n", cli_rm_num(r, "id", b[0], 24),
                   addr != NULL ? addr : cli_rm_str(r, "api"), cli_rm_str(r, "role"),
                   cli_rm_num(r, "term", b[1], 24), cli_rm_num(r, "commit_index", b[2], 24),
                   cli_rm_num(r, "last_applied", b[3], 24), cli_rm_num(r, "nodes", b[4], 24),
                   cli_rm_num(r, "jobs", b[5], 24), murl != NULL ? murl : "-");
        }
        cli_rm_print_calibration(
            leader >= 0 ? json_object_get(json_array_get(reps, (size_t)leader), "calibration")
                        : NULL);
        /* issue 27: requests refused because the caller may not make them, by what was tried */
        json_t *den =
            leader >= 0
                ? json_object_get(json_object_get(json_array_get(reps, (size_t)leader), "rejected"),
                                  "denied_by")
                : NULL;
        const char *what;
        json_t *v;
        int first = 1;
        json_object_foreach(den, what, v)
        {
            if (json_integer_value(v) == 0)
                continue;
            printf("%s %s %lld", first ? "denied (leader):" : ",", what,
                   (long long)json_integer_value(v));
            first = 0;
        }
        if (!first)
            printf("\n");
    }
    json_decref(doc);
    rmclient_destroy(&c);
    return answered > 0 && !unprinted ? 0 : 1;
}

/* ---- nodes, node show ---- */

static void nodes_table(json_t *doc)
{
    json_t *rows = json_object_get(doc, "nodes");
    int wn = cli_rm_col(rows, "name", 20), wr = cli_rm_col(rows, "rack", 10);
    printf("%-*s %-*s %-9s %6s %9s %7s %7s %9s  %s\n", wn, "NAME", wr, "RACK", "STATE", "CPUS",
           "MEM_MB", "RUNNING", "QUEUED", "AGE_MS", "METRICS");
    size_t i;
    json_t *n;
    json_array_foreach(rows, i, n)
    {
        json_t *age = json_object_get(n, "age_ms");
        char agebuf[32];
        snprintf(agebuf, sizeof agebuf, json_is_integer(age) ? "%lld" : "never",
                 (long long)json_integer_value(age));
        const char *murl = json_string_value(json_object_get(n, "metrics"));
        printf("%-*s %-*s %-9s %6.2f %9lld %7lld %7lld %9s  %s\n", wn, cli_rm_str(n, "name"), wr,
               cli_rm_str(n, "rack"), cli_rm_str(n, "state"),
               json_number_value(json_object_get(n, "cpus")), cli_rm_int(n, "mem_mb"),
               cli_rm_int(n, "running"), cli_rm_int(n, "queued"), agebuf, murl ? murl : "-");
    }
}

static int nodes_main(int argc, char **argv)
{
    return cli_rm_show(argc, argv, 0, CLI_RM_USAGE_NODES, "nodes", nodes_table);
}

static void node_show_table(json_t *doc)
{
    const char *k;
    json_t *v;
    json_object_foreach(doc, k, v)
    {
        if (json_is_object(v) || json_is_array(v))
            continue;
        char *t = json_dumps(v, JSON_ENCODE_ANY | CLI_JSON_REALS);
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
}

static int node_show_main(int argc, char **argv)
{
    return cli_rm_show(argc, argv, 1, CLI_RM_USAGE_NODE_SHOW, "node", node_show_table);
}

/* ---- tokens, jobs ---- */

static void tokens_table(json_t *doc)
{
    json_t *rows = json_object_get(doc, "virtual_clusters");
    int wv = cli_rm_col(rows, "name", 20), wj = 20;
    size_t i, j;
    json_t *vc, *g;
    json_array_foreach(rows, i, vc)
    {
        int w = cli_rm_col(json_object_get(vc, "jobs"), "name", 20);
        wj = w > wj ? w : wj;
    }
    printf("%-*s %9s %9s %9s %9s  %-16s %s\n", wv, "VIRTUAL CLUSTER", "CAPACITY", "GRANTED", "FREE",
           "SPARE", "TOKEN", "SPARE GRANTED/RECLAIMED");
    json_array_foreach(rows, i, vc)
    {
        char size[40];
        snprintf(size, sizeof size, "%g CPU / %lld MiB",
                 json_number_value(json_object_get(vc, "token_cpu")),
                 cli_rm_int(vc, "token_mem_mb"));
        printf("%-*s %9lld %9lld %9lld %9lld  %-16s %lld/%lld\n", wv, cli_rm_str(vc, "name"),
               cli_rm_int(vc, "capacity"), cli_rm_int(vc, "granted"), cli_rm_int(vc, "free"),
               cli_rm_int(vc, "spare"), size, cli_rm_int(vc, "spare_grants"),
               cli_rm_int(vc, "spare_reclaims"));
        json_array_foreach(json_object_get(vc, "jobs"), j, g)
        {
            long long tok = cli_rm_int(g, "tokens"), min = cli_rm_int(g, "minimum");
            printf("  %-16s %-*s tokens %lld (minimum %lld, spare %lld; wants %lld)%s%s\n",
                   cli_rm_str(g, "job_id"), wj, cli_rm_str(g, "name"), tok, min,
                   tok > min ? tok - min : 0, cli_rm_int(g, "wanted"),
                   json_is_integer(json_object_get(g, "deadline_ms")) ? ", deadline" : "",
                   json_is_true(json_object_get(g, "best_effort")) ? " (best effort)" : "");
        }
    }
}

static int tokens_main(int argc, char **argv)
{
    return cli_rm_show(argc, argv, 0, CLI_RM_USAGE_TOKENS, "tokens", tokens_table);
}

/* A job's ETA cell: "4m10s/5m2s" (median/p95 from submission), "-" when unknown, a trailing
 * "*" for a best-effort job (no admission: the deadline is not promised). */
static const char *jobs_eta(json_t *j, char *out, size_t cap)
{
    char a[JOBDIR_DURATION_SIZE], b[JOBDIR_DURATION_SIZE];
    json_t *eta = json_object_get(j, "eta_s"), *p95 = json_object_get(j, "eta_p95_s");
    const char *be = json_is_true(json_object_get(j, "best_effort")) ? "*" : "";
    if (!json_is_number(eta))
        snprintf(out, cap, "-%s", be);
    else if (!json_is_number(p95))
        snprintf(out, cap, "%s%s",
                 jobdir_format_duration(json_number_value(eta), false, a, sizeof a), be);
    else
        snprintf(out, cap, "%s/%s%s",
                 jobdir_format_duration(json_number_value(eta), false, a, sizeof a),
                 jobdir_format_duration(json_number_value(p95), false, b, sizeof b), be);
    return out;
}

static void jobs_table(json_t *doc)
{
    json_t *rows = json_object_get(doc, "jobs");
    int wn = cli_rm_col(rows, "name", 20), wv = cli_rm_col(rows, "virtual_cluster", 12);
    printf("%-16s %-*s %-*s %-10s %7s %7s %9s %s\n", "JOB", wn, "NAME", wv, "VC", "STATE", "TOKENS",
           "WANTED", "DEADLINE", "ETA/P95");
    size_t i;
    json_t *j;
    bool any_be = false;
    json_array_foreach(rows, i, j)
    {
        char eta[2 * JOBDIR_DURATION_SIZE + 4], dl[JOBDIR_DURATION_SIZE] = "-";
        /* deadline_ms is a wall-clock time: shown from submission, as --deadline takes it */
        double d = jobdir_num(j, "deadline_ms", 0), sub = jobdir_num(j, "submitted_ms", 0);
        if (d > 0 && d > sub)
            jobdir_format_duration((d - sub) / 1000.0, false, dl, sizeof dl);
        any_be = any_be || json_is_true(json_object_get(j, "best_effort"));
        printf("%-16s %-*s %-*s %-10s %7lld %7lld %9s %s\n", cli_rm_str(j, "job_id"), wn,
               cli_rm_str(j, "name"), wv, cli_rm_str(j, "virtual_cluster"), cli_rm_str(j, "state"),
               cli_rm_int(j, "tokens"), cli_rm_int(j, "wanted"), dl, jobs_eta(j, eta, sizeof eta));
    }
    if (any_be)
        printf("(* best effort: run without admission, the deadline is not promised)\n");
}

static int jobs_main(int argc, char **argv)
{
    return cli_rm_show(argc, argv, 0, CLI_RM_USAGE_JOBS, "jobs", jobs_table);
}

CLI_COMMAND("rm status", "the RM replicas: leader, roles, terms, commit indexes", rm_status_main,
            rm_status_usage)
CLI_COMMAND("nodes", "the nodes the RM knows, with load and heartbeat age", nodes_main, nodes_usage)
CLI_COMMAND("node show", "one node, with its full wait-time matrix", node_show_main,
            node_show_usage)
CLI_COMMAND("tokens", "virtual clusters, token capacity and grants per job", tokens_main,
            tokens_usage)
CLI_COMMAND("jobs", "jobs registered with the RM", jobs_main, jobs_usage)
