#include "common/daemonopt.h"

#include <string.h>

bool daemonopt_take(struct daemonopt *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (strcmp(a, "--config") == 0 && *i + 1 < argc) {
        o->config = argv[++*i];
    } else if (strcmp(a, "--set") == 0 && *i + 1 < argc && o->nsets < DAEMONOPT_MAX_SETS) {
        o->sets[o->nsets++] = argv[++*i];
    } else if (strcmp(a, "--insecure") == 0) {
        o->insecure = true;
    } else if (strcmp(a, "--print-schema") == 0) {
        o->print_schema = true;
    } else if (strcmp(a, "--print-config") == 0) {
        o->print_config = true;
    } else {
        return false;
    }
    return true;
}
