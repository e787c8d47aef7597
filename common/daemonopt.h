/* daemonopt.h - the command-line options every Paddock daemon shares.
 *
 * paddock-rm and paddock-pn take the same core options: --config FILE, --set SECTION.KEY=VALUE
 * (repeatable, applied after the file), --insecure (allow a non-loopback listen address without
 * CURVE keys), --print-schema and --print-config. A daemon's main walks argv, offers each
 * argument to daemonopt_take first and handles only its own options after that.
 */
#ifndef PADDOCK_COMMON_DAEMONOPT_H
#define PADDOCK_COMMON_DAEMONOPT_H

#include <stdbool.h>
#include <stddef.h>

#define DAEMONOPT_MAX_SETS 256

struct daemonopt {
    const char *config;             /* borrowed from argv; NULL: defaults only */
    char *sets[DAEMONOPT_MAX_SETS]; /* borrowed from argv */
    size_t nsets;
    bool insecure;
    bool print_schema;
    bool print_config;
};

/* Consumes the shared option at argv[*i] (and its value, advancing *i). Returns true when it
 * was one of them; false for anything else, including --config or --set without a value or
 * more --set options than DAEMONOPT_MAX_SETS, which the caller then reports as unknown. */
bool daemonopt_take(struct daemonopt *o, int argc, char **argv, int *i);

#endif
