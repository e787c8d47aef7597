/* cmdreg.c - main() of the multi-command tools (paddock, paddock-sim): dispatches to the
 * commands registered with CLI_COMMAND by the files linked beside it. */
#include "tools/cli.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLI_MAX_COMMANDS 64

static const struct cli_command *cli__commands[CLI_MAX_COMMANDS];
static int cli__ncommands;

void cli_register(const struct cli_command *cmd)
{
    if (cli__ncommands < CLI_MAX_COMMANDS)
        cli__commands[cli__ncommands++] = cmd;
}

/* Number of argv words matched by `name` ("rm status" matches argv {"rm","status",...}), or 0. */
static int cli__match(const char *name, int argc, char **argv)
{
    int words = 0;
    const char *p = name;
    while (*p != '\0') {
        size_t len = strcspn(p, " ");
        if (words >= argc || strlen(argv[words]) != len || strncmp(argv[words], p, len) != 0)
            return 0;
        words++;
        p += len;
        while (*p == ' ')
            p++;
    }
    return words;
}

static int cli__cmp(const void *a, const void *b)
{
    const struct cli_command *x = *(const struct cli_command *const *)a;
    const struct cli_command *y = *(const struct cli_command *const *)b;
    return strcmp(x->name, y->name);
}

static const char *cli__prog = "paddock";
static bool cli__help; /* answering --help: usage goes to stdout */

FILE *cli_usage_out(void)
{
    return cli__help ? stdout : stderr;
}

static bool cli__is_help(const char *a)
{
    return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0 || strcmp(a, "help") == 0;
}

static void cli__usage(FILE *out)
{
    fprintf(out, "usage: %s COMMAND [ARGS...]\n\ncommands:\n", cli__prog);
    for (int i = 0; i < cli__ncommands; i++)
        fprintf(out, "  %-22s %s\n", cli__commands[i]->name, cli__commands[i]->summary);
    fprintf(out,
            "\n%s help COMMAND, or COMMAND --help, prints a command's usage.\n"
            "Every query command takes --json. See README.md and docs/.\n",
            cli__prog);
}

/* The commands whose first word is `group` and that have more words ("cluster" for "cluster
 * up"), listed on out; returns how many. */
static int cli__group(const char *group, FILE *out)
{
    size_t len = strlen(group);
    int n = 0;
    for (int i = 0; i < cli__ncommands; i++) {
        const char *name = cli__commands[i]->name;
        if (strncmp(name, group, len) != 0 || name[len] != ' ')
            continue;
        if (out != NULL) {
            if (n == 0)
                fprintf(out, "usage: %s %s SUBCOMMAND [ARGS...]\n\nsubcommands:\n", cli__prog,
                        group);
            fprintf(out, "  %-22s %s\n", name + len + 1, cli__commands[i]->summary);
        }
        n++;
    }
    if (out != NULL && n > 0)
        fprintf(out, "\n%s %s SUBCOMMAND --help prints a subcommand's usage.\n", cli__prog, group);
    return n;
}

/* Whether args ask for help: --help or -h among them, before a "--". */
static bool cli__wants_help(int argc, char **argv)
{
    for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return true;
    return false;
}

int main(int argc, char **argv)
{
    if (argc > 0 && argv[0] != NULL) {
        const char *slash = strrchr(argv[0], '/');
        cli__prog = slash != NULL ? slash + 1 : argv[0];
    }
    qsort(cli__commands, (size_t)cli__ncommands, sizeof cli__commands[0], cli__cmp);
    if (argc < 2) {
        cli__usage(stderr);
        return 2;
    }
    /* `paddock help CMD...` is `paddock CMD... --help` */
    bool help = false;
    if (cli__is_help(argv[1])) {
        if (argc == 2) {
            cli__usage(stdout);
            return 0;
        }
        help = true;
        argc--;
        argv++;
    }
    const struct cli_command *best = NULL;
    int best_words = 0;
    for (int i = 0; i < cli__ncommands; i++) {
        int w = cli__match(cli__commands[i]->name, argc - 1, argv + 1);
        if (w > best_words) {
            best = cli__commands[i];
            best_words = w;
        }
    }
    if (best == NULL) {
        /* a command group: alone, a usage error; with --help, an answer */
        bool asked = help || (argc > 2 && cli__is_help(argv[2]));
        if (cli__group(argv[1], NULL) > 0) {
            if (argc > 2 && !asked)
                fprintf(stderr, "%s %s: unknown subcommand '%s'\n", cli__prog, argv[1], argv[2]);
            cli__group(argv[1], asked ? stdout : stderr);
            return asked ? 0 : 2;
        }
        fprintf(stderr, "%s: unknown command '%s' (try '%s help')\n", cli__prog, argv[1],
                cli__prog);
        return 2;
    }
    int cargc = argc - 1 - best_words;
    char **cargv = argv + 1 + best_words;
    if (best->usage != NULL && (help || cli__wants_help(cargc, cargv))) {
        cli__help = true;
        best->usage();
        return fflush(stdout) == 0 ? 0 : 1;
    }
    if (help && best->usage == NULL) {
        /* a handler that answers --help itself */
        static char help_arg[] = "--help";
        char *hargv[] = {help_arg, NULL};
        return best->run(1, hargv);
    }
    return best->run(cargc, cargv);
}
