/* cli_audit.c - tenants on the command line (issue 27):
 *   paddock audit [--json] [--limit N]        the replicated audit trail, oldest first: when,
 *                                             who, what, on what, the result, details
 *   paddock user whoami [--json]              the caller as the RM sees the key
 *   paddock user list [--json]                roles, grants and quotas
 *   paddock user role USER admin|user|none    (admins only, as the three below)
 *   paddock user grant USER VC                a virtual cluster with grants is open only to its
 *   paddock user revoke USER VC               grantees (and admins)
 *   paddock user quota USER|* VC [--tokens N] [--token-s-per-day S]   0 or absent: no quota
 * each with [--cluster DIR | --rm ENDPOINTS --keys DIR]. A user sees their own audit lines, an
 * admin everyone's.
 *
 * Exit codes: 0 done, 1 the RM failed or refused (the reason on stderr), 2 usage. */
#include "common/err.h"
#include "proto/proto.h"
#include "tools/cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void audit__time(json_int_t ms, char *out, size_t cap)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, cap, "%Y-%m-%d %H:%M:%S", &tm);
}

static int audit__usage(void)
{
    fprintf(cli_usage_out(), "usage: paddock audit [--json] [--limit N]\n"
                             "                     [--cluster DIR | --rm ENDPOINTS --keys DIR]\n");
    return 2;
}

static int audit_main(int argc, char **argv)
{
    struct cli_admin_opts c = {0};
    bool json = false;
    long limit = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (cli_admin_option(argc, argv, &i, &c)) {
            continue;
        } else if (strcmp(argv[i], "--limit") == 0 && i + 1 < argc) {
            char *end = NULL;
            limit = strtol(argv[++i], &end, 10);
            if (end == argv[i] || *end != '\0' || limit <= 0) {
                fprintf(stderr, "paddock audit: --limit '%s': a positive number of lines\n",
                        argv[i]);
                return 2;
            }
        } else {
            return audit__usage();
        }
    }
    json_t *doc = NULL;
    int rc = cli_admin_ask(&c, "audit", "audit", NULL, 0, NULL, &doc);
    if (rc != 0)
        return rc;
    json_t *lines = json_object_get(doc, "audit");
    while (limit > 0 && json_array_size(lines) > (size_t)limit)
        json_array_remove(lines, 0); /* the newest N */
    if (json) {
        rc = cli_admin_print_json(doc);
    } else {
        printf("%-19s  %-10s %-14s %-16s %-13s %s\n", "TIME (UTC)", "USER", "ACTION", "TARGET",
               "RESULT", "DETAIL");
        size_t i;
        json_t *a;
        json_array_foreach(lines, i, a)
        {
            char when[32];
            audit__time(json_integer_value(json_object_get(a, "at_ms")), when, sizeof when);
            printf("%-19s  %-10s %-14s %-16s %-13s %s\n", when,
                   json_string_value(json_object_get(a, "user")),
                   json_string_value(json_object_get(a, "action")),
                   json_string_value(json_object_get(a, "target")),
                   json_string_value(json_object_get(a, "result")),
                   json_string_value(json_object_get(a, "detail")));
        }
    }
    json_decref(doc);
    return rc;
}

CLI_COMMAND("audit",
            "the audit trail: who submitted, cancelled, changed what, and what was refused",
            audit_main, audit__usage)

static int user__usage(void)
{
    fprintf(cli_usage_out(),
            "usage: paddock user whoami|list [--json]\n"
            "       paddock user role USER admin|user|none\n"
            "       paddock user grant|revoke USER VC\n"
            "       paddock user quota USER|* VC [--tokens N] [--token-s-per-day S]\n"
            "       (each with [--cluster DIR | --rm ENDPOINTS --keys DIR])\n");
    return 2;
}

/* Collects the positional words and the options every `user` command takes. */
static int user__args(int argc, char **argv, struct cli_admin_opts *c, bool *json, const char **pos,
                      size_t want, const char **tokens, const char **ts)
{
    size_t n = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 && json != NULL) {
            *json = true;
        } else if (cli_admin_option(argc, argv, &i, c)) {
            continue;
        } else if (strcmp(argv[i], "--tokens") == 0 && tokens != NULL && i + 1 < argc) {
            *tokens = argv[++i];
        } else if (strcmp(argv[i], "--token-s-per-day") == 0 && ts != NULL && i + 1 < argc) {
            *ts = argv[++i];
        } else if ((argv[i][0] != '-' || strcmp(argv[i], "*") == 0) && n < want) {
            pos[n++] = argv[i];
        } else {
            return user__usage();
        }
    }
    return n == want ? 0 : user__usage();
}

static int user__write(const struct cli_admin_opts *c, const char *cmd, const char *kind,
                       const char *const *args, size_t nargs, const char *done)
{
    json_t *doc = NULL;
    int rc = cli_admin_ask(c, cmd, kind, args, nargs, NULL, &doc);
    if (rc == 0)
        printf("%s\n", done);
    json_decref(doc);
    return rc;
}

static int user_whoami(int argc, char **argv)
{
    struct cli_admin_opts c = {0};
    bool json = false;
    if (user__args(argc, argv, &c, &json, NULL, 0, NULL, NULL) != 0)
        return 2;
    json_t *doc = NULL;
    int rc = cli_admin_ask(&c, "user whoami", "whoami", NULL, 0, NULL, &doc);
    if (rc != 0)
        return rc;
    if (json) {
        rc = cli_admin_print_json(doc);
    } else {
        printf("%s (%s); may submit to:", json_string_value(json_object_get(doc, "user")),
               json_string_value(json_object_get(doc, "role")));
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(doc, "virtual_clusters"), i, v)
        {
            printf(" %s", json_string_value(v));
        }
        printf("\n");
    }
    json_decref(doc);
    return rc;
}

static int user_list(int argc, char **argv)
{
    struct cli_admin_opts c = {0};
    bool json = false;
    if (user__args(argc, argv, &c, &json, NULL, 0, NULL, NULL) != 0)
        return 2;
    json_t *doc = NULL;
    int rc = cli_admin_ask(&c, "user list", "tenants", NULL, 0, NULL, &doc);
    if (rc != 0)
        return rc;
    if (json) {
        rc = cli_admin_print_json(doc);
    } else if (json_array_size(json_object_get(doc, "rules")) == 0) {
        /* an empty table would read as "nobody may do anything": the opposite holds */
        printf("no roles, grants or quotas: only the cluster's key is an admin, every virtual "
               "cluster is open to every user, and no user has a quota\n");
    } else {
        printf("%-16s %-16s %-8s %-8s %s\n", "USER", "VC", "ROLE", "GRANTED", "QUOTA");
        size_t i;
        json_t *r;
        json_array_foreach(json_object_get(doc, "rules"), i, r)
        {
            json_t *vc = json_object_get(r, "virtual_cluster");
            json_t *mt = json_object_get(r, "max_tokens");
            json_t *ms = json_object_get(r, "max_token_s_per_day");
            char quota[96] = "-";
            if (json_is_integer(mt) || json_is_integer(ms)) {
                char a[32] = "-", b[32] = "-";
                if (json_is_integer(mt))
                    snprintf(a, sizeof a, "%lld", (long long)json_integer_value(mt));
                if (json_is_integer(ms))
                    snprintf(b, sizeof b, "%lld", (long long)json_integer_value(ms));
                snprintf(quota, sizeof quota, "tokens %s, token-s/day %s", a, b);
            }
            printf("%-16s %-16s %-8s %-8s %s\n", json_string_value(json_object_get(r, "user")),
                   vc != NULL ? json_string_value(vc) : "-",
                   json_object_get(r, "role") != NULL
                       ? json_string_value(json_object_get(r, "role"))
                       : "-",
                   vc == NULL                                    ? "-"
                   : json_is_true(json_object_get(r, "granted")) ? "yes"
                                                                 : "no",
                   quota);
        }
    }
    json_decref(doc);
    return rc;
}

static int user_role(int argc, char **argv)
{
    struct cli_admin_opts c = {0};
    const char *pos[2];
    if (user__args(argc, argv, &c, NULL, pos, 2, NULL, NULL) != 0)
        return 2;
    char done[256];
    snprintf(done, sizeof done, "%s is now %s", pos[0],
             strcmp(pos[1], "none") == 0 ? "an ordinary user" : pos[1]);
    return user__write(&c, "user role", "role_set", pos, 2, done);
}

static int user__grant(int argc, char **argv, bool grant)
{
    struct cli_admin_opts c = {0};
    const char *pos[3];
    if (user__args(argc, argv, &c, NULL, pos, 2, NULL, NULL) != 0)
        return 2;
    pos[2] = grant ? "1" : "0";
    char done[256];
    snprintf(done, sizeof done, "%s %s virtual cluster %s", pos[0],
             grant ? "is granted" : "is no longer granted", pos[1]);
    return user__write(&c, grant ? "user grant" : "user revoke", "grant_set", pos, 3, done);
}

static int user_grant(int argc, char **argv)
{
    return user__grant(argc, argv, true);
}

static int user_revoke(int argc, char **argv)
{
    return user__grant(argc, argv, false);
}

static int user_quota(int argc, char **argv)
{
    struct cli_admin_opts c = {0};
    const char *pos[4], *tokens = "0", *ts = "0";
    if (user__args(argc, argv, &c, NULL, pos, 2, &tokens, &ts) != 0)
        return 2;
    pos[2] = tokens;
    pos[3] = ts;
    char done[320];
    snprintf(done, sizeof done, "quota of %s in %s: tokens held at once %s, token-s per day %s",
             pos[0], pos[1], strcmp(tokens, "0") == 0 ? "unlimited" : tokens,
             strcmp(ts, "0") == 0 ? "unlimited" : ts);
    return user__write(&c, "user quota", "quota_set", pos, 4, done);
}

CLI_COMMAND("user whoami", "the user and role the RM derives from your key", user_whoami,
            user__usage)
CLI_COMMAND("user list", "users' roles, grants of virtual clusters, quotas", user_list, user__usage)
CLI_COMMAND("user role", "make a user an admin or an ordinary user (admins only)", user_role,
            user__usage)
CLI_COMMAND("user grant", "open a virtual cluster to a user (admins only)", user_grant, user__usage)
CLI_COMMAND("user revoke", "take a virtual cluster's grant back (admins only)", user_revoke,
            user__usage)
CLI_COMMAND("user quota", "tokens held at once and token-seconds per day (admins only)", user_quota,
            user__usage)
