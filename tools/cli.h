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
 *
 * Help (the same for every command): a command registered with a usage function answers
 * `--help` or `-h` anywhere among its arguments (before a "--"), and `paddock help CMD`, with
 * that usage on stdout and exit 0, without running the handler; a usage error prints the same
 * text on stderr and exits 2. The usage function writes to cli_usage_out(), which is stdout
 * while answering --help and stderr otherwise. A command group (the first word of multi-word
 * commands, "cluster", "job", "rm") given alone lists its subcommands on stderr and exits 2, as
 * `paddock` alone does: nothing was asked, and a script that forgot the subcommand fails
 * loudly; `paddock GROUP --help` lists them on stdout and exits 0.
 */
#ifndef PADDOCK_TOOLS_CLI_H
#define PADDOCK_TOOLS_CLI_H

#include <stdio.h>

typedef int cli_handler_fn(int argc, char **argv);
/* Prints the command's usage on cli_usage_out(); returns 2 (the usage-error exit code). */
typedef int cli_usage_fn(void);

struct cli_command {
    const char *name;    /* "rm status" */
    const char *summary; /* one line for `paddock help` */
    cli_handler_fn *run;
    cli_usage_fn *usage; /* NULL: the handler answers --help itself */
};

void cli_register(const struct cli_command *cmd);

/* Where usage text goes: stdout while the dispatcher answers --help, stderr otherwise. */
FILE *cli_usage_out(void);

/* The JSON the commands print: reals with at most 15 significant digits, so that a makespan of
 * 43.978 s reads 43.978, not 43.978000000000002 (a double holds 15 such digits exactly; an epoch
 * in seconds keeps its milliseconds). OR it into json_dumps's flags. */
#define CLI_JSON_REALS JSON_REAL_PRECISION(15)

#define CLI__CAT2(a, b) a##b
#define CLI__CAT(a, b)  CLI__CAT2(a, b)
/* CLI_COMMAND(NAME, SUMMARY, HANDLER) or CLI_COMMAND(NAME, SUMMARY, HANDLER, USAGE). */
#define CLI_COMMAND(NAME, SUMMARY, ...)                                                            \
    static const struct cli_command CLI__CAT(cli__cmd_, __LINE__) = {                              \
        .name = NAME, .summary = SUMMARY, .run = __VA_ARGS__};                                     \
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
/* The same without printing: 0 with *doc, or the ERR_* code (the RM's refusal, or why there was
 * no answer) with the reason in msg. */
int cli_admin_query(const struct cli_admin_opts *o, const char *kind, const char *const *args,
                    size_t nargs, const char *data, struct json_t **doc, char *msg, size_t cap);

/* Prints doc as indented JSON on stdout. Returns 0, or 1 when it cannot be serialised. */
int cli_admin_print_json(const struct json_t *doc);

#endif
