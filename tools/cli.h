/* cli.h - the `paddock` command-line tool's command registry.
 *
 * Each tools/cli_ file registers its commands with CLI_COMMAND at load time, so commands
 * are added without editing a shared table. A command's name may be several words
 * ("rm status", "cluster up"); the longest registered prefix of argv wins.
 *
 * The same registry serves paddock-sim (tools/sim/).
 *
 * A handler gets argc/argv starting at its first argument after the command words, returns
 * the process exit code (0 success, 1 failure, 2 usage error) and prints errors to stderr.
 */
#ifndef PADDOCK_TOOLS_CLI_H
#define PADDOCK_TOOLS_CLI_H

typedef int cli_handler_fn(int argc, char **argv);

struct cli_command {
    const char *name;    /* "rm status" */
    const char *summary; /* one line for `paddock help` */
    cli_handler_fn *run;
};

void cli_register(const struct cli_command *cmd);

#define CLI__CAT2(a, b) a##b
#define CLI__CAT(a, b)  CLI__CAT2(a, b)
#define CLI_COMMAND(NAME, SUMMARY, FN)                                                             \
    static const struct cli_command CLI__CAT(cli__cmd_, __LINE__) = {NAME, SUMMARY, FN};           \
    __attribute__((constructor)) static void CLI__CAT(cli__reg_, __LINE__)(void)                   \
    {                                                                                              \
        cli_register(&CLI__CAT(cli__cmd_, __LINE__));                                              \
    }

/* The recurring-job commands (`paddock recurring`, `history`, `plan`; tools/cli_recurring.c):
 * the RM options they share and one admin query on the leader. */
#include <stdbool.h>
#include <stddef.h>

struct json_t;

struct cli_admin_opts {
    const char *cluster; /* --cluster DIR, else PADDOCK_CLUSTER when --rm is not given */
    const char *rm;      /* --rm ENDPOINTS */
    const char *keys;    /* --keys DIR */
};

/* When argv[*i] is --cluster, --rm or --keys followed by a value, stores the value in o (borrowed
 * from argv), advances *i past it and returns true. */
bool cli_admin_option(int argc, char **argv, int *i, struct cli_admin_opts *o);

/* Runs admin query `kind` with `args` and `data` (a document, may be NULL) on the RM leader
 * (redirects followed). On 0 *doc is the reply (caller owns: json_decref). Otherwise returns 1
 * after printing "paddock CMD: reason" on stderr (no cluster, no leader, a refusal). */
int cli_admin_ask(const struct cli_admin_opts *o, const char *cmd, const char *kind,
                  const char *const *args, size_t nargs, const char *data, struct json_t **doc);

/* Prints doc as indented JSON on stdout. Returns 0, or 1 when it cannot be serialised. */
int cli_admin_print_json(const struct json_t *doc);

#endif
