/* paddock-rm: one replica of the resource monitor (a thin shell: options, configuration,
 * rm/rmserver.c). */
#include "common/config.h"
#include "common/daemonopt.h"
#include "common/zlimit.h"
#include "common/err.h"
#include "common/log.h"
#include "rm/rmconf.h"
#include "rm/rmserver.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: paddock-rm [--config FILE] [--set SECTION.KEY=VALUE]... [--bootstrap | --join]\n"
        "                  [--insecure]\n"
        "       paddock-rm --print-schema | --print-config [--config FILE]\n"
        "Runs one replica of the Paddock resource monitor (Raft-replicated cluster state,\n"
        "the cluster view, the admin API). --bootstrap creates the cluster in an empty\n"
        "data directory (first start only). --join starts a replica added with `paddock rm\n"
        "add` on an empty data directory: it receives the log from the leader. --insecure allows "
        "listening on a non-loopback\n"
        "address without CURVE keys.\n");
}

int main(int argc, char **argv)
{
    struct daemonopt o;
    memset(&o, 0, sizeof o);
    bool bootstrap = false, join = false;
    for (int i = 1; i < argc; i++) {
        if (daemonopt_take(&o, argc, argv, &i)) {
            continue;
        } else if (strcmp(argv[i], "--bootstrap") == 0) {
            bootstrap = true;
        } else if (strcmp(argv[i], "--join") == 0) {
            join = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "paddock-rm: unknown option %s\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    log_init("paddock-rm");
    zlimit_raise(); /* a descriptor per connected JM, PN or client: not the shell's 1,024 */
    if (o.print_schema)
        return config_print_schema(rmconf_schema, stdout) == 0 ? 0 : 1;
    rmconf_t cfg;
    memset(&cfg, 0, sizeof cfg);
    char msg[1024];
    int rc = rmconf_load(&cfg, o.config, o.sets, o.nsets, msg, sizeof msg);
    if (rc != 0) {
        fprintf(stderr, "paddock-rm: %s\n", msg);
        rmconf_close(&cfg);
        return 1;
    }
    if (o.print_config) {
        rc = config_write(rmconf_schema, &cfg, stdout);
        rmconf_close(&cfg);
        return rc != 0 ? 1 : 0;
    }
    enum log_level lvl;
    if (log_level_parse(cfg.log_level, &lvl) == 0)
        log_set_level(lvl);
    if (bootstrap && join) {
        fprintf(stderr, "paddock-rm: --bootstrap and --join exclude each other\n");
        rmconf_close(&cfg);
        return 2;
    }
    rc = rmserver_run(&cfg, o.insecure, bootstrap, join, msg, sizeof msg);
    if (rc != 0)
        fprintf(stderr, "paddock-rm: %s\n", msg);
    rmconf_close(&cfg);
    return rc != 0 ? 1 : 0;
}
