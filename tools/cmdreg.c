/* cmdreg.c - main() of the multi-command tools (paddock, paddock-sim): dispatches to the
 * commands registered with CLI_COMMAND by the files linked beside it. */
#include "tools/cli.h"

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

static void cli__usage(FILE *out)
{
    fprintf(out, "usage: %s COMMAND [ARGS...]\n\ncommands:\n", cli__prog);
    for (int i = 0; i < cli__ncommands; i++)
        fprintf(out, "  %-22s %s\n", cli__commands[i]->name, cli__commands[i]->summary);
    fprintf(out, "\nEvery query command takes --json. See README.md and docs/.\n");
}

int main(int argc, char **argv)
{
    if (argc > 0 && argv[0] != NULL) {
        const char *slash = strrchr(argv[0], '/');
        cli__prog = slash != NULL ? slash + 1 : argv[0];
    }
    qsort(cli__commands, (size_t)cli__ncommands, sizeof cli__commands[0], cli__cmp);
    if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0) {
        cli__usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
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
        fprintf(stderr, "%s: unknown command '%s' (try '%s help')\n", cli__prog, argv[1],
                cli__prog);
        return 2;
    }
    return best->run(argc - 1 - best_words, argv + 1 + best_words);
}
