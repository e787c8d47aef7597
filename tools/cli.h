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

#endif
