/* cli_rm.h - what the RM's commands share (tools/cli_rm.c: the queries; tools/cli_rm_member.c:
 * rm add, rm remove): their options, parsed once, and the queries on the replicas. Not part of
 * any library: both files are compiled into `paddock`. */
#ifndef PADDOCK_TOOLS_CLI_RM_H
#define PADDOCK_TOOLS_CLI_RM_H

#include "rm/rmclient.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The options of every command here. The membership changes (rm add, rm remove) also take
 * --dir CLUSTER_DIR, --heartbeat ENDPOINT and --start; the queries refuse them. */
struct cli_rm_opts {
    const char *cluster, *rm, *keys, *dir, *heartbeat;
    bool json, start;
    const char *args[5];
    int nargs;
};

#define CLI_RM_QUERY  0 /* --cluster, --rm, --keys, --json */
#define CLI_RM_CHANGE 1 /* those and --dir, --heartbeat, --start */

/* Prints "usage: paddock USAGE" where usage text goes (tools/cli.h); returns 2. */
int cli_rm_usage(const char *usage);
/* Parses argv into o: exactly `want` positional arguments and the options of `kind`
 * (CLI_RM_QUERY or CLI_RM_CHANGE). --start needs --dir, and --dir stands for --cluster when
 * neither --cluster nor --rm is given. Returns 0, or 2 after printing the usage line. */
int cli_rm_parse(int argc, char **argv, struct cli_rm_opts *o, int want, int kind,
                 const char *usage);
/* Opens a client to the replicas o names (--cluster, --rm/--keys, or PADDOCK_CLUSTER). Returns
 * 0 with *c set (the caller destroys it), or 1 after printing why. */
int cli_rm_open(const struct cli_rm_opts *o, rmclient_t **c);
/* Every replica's own status (st[i]: a JSON object the caller owns, NULL when it did not answer;
 * rmclient_count(c) entries) and the index of the ready leader in *leader (-1 if none answered
 * as one). Returns how many answered. */
int cli_rm_statuses(rmclient_t *c, json_t **st, int *leader);
/* Runs an admin query on the leader when one answers, else on any replica that does. Returns 0
 * with *doc (caller owns: json_decref), or 1 after printing why. */
int cli_rm_query(const struct cli_rm_opts *o, const char *kind, const char *const *args,
                 size_t nargs, json_t **doc);
/* The RM's "nodes" or "jobs" document (kind) however long the list, from replica `replica` (-1:
 * any): asked in pages ("KIND FROM COUNT", CLI_RM_PAGE at a time; a whole list outgrows one
 * reply past about 10,000 nodes or 6,000 jobs), the pages joined into {KIND: [...], "total": N}.
 * An item listed on two pages (the list moved between them) is kept once, by its id_key ("name",
 * "job_id"). An older RM answers the whole list to the first page's query, which is then all
 * there is. Returns 0 with *doc (caller owns), or an ERR_* with msg. */
#define CLI_RM_PAGE 2000
int cli_rm_list(rmclient_t *c, int replica, const char *kind, const char *id_key, int timeout_ms,
                json_t **doc, char *msg, size_t cap);
/* Prints doc as indented JSON on stdout. Returns 0, or 1 when it cannot be serialised. */
int cli_rm_print_json(json_t *doc);
/* Field k of o as a string, "-" when absent or not a string (borrowed from o). */
const char *cli_rm_str(json_t *o, const char *k);
/* Field k of o as an integer, 0 when absent or not an integer. */
long long cli_rm_int(json_t *o, const char *k);
/* The width of a table column of field k over the objects of array rows: the longest value
 * (cli_rm_str's, in bytes), at least min, at most CLI_RM_COL_MAX, so that long job, node and
 * rack names keep the columns after them aligned. */
#define CLI_RM_COL_MAX 64
int cli_rm_col(json_t *rows, const char *k, int min);

#endif
