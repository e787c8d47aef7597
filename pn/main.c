/* paddock-pn: the process node daemon (a thin shell: options, configuration, pn/server.c). */
#include <stdio.h>
#include <string.h>

#include "common/daemonopt.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "pn/pnconf.h"
#include "pn/server.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: paddock-pn [--config FILE] [--set SECTION.KEY=VALUE]... [--insecure]\n"
                 "       paddock-pn --print-schema | --print-config [--config FILE]\n"
                 "Runs the Paddock process node: queues, runs and reports tasks for job\n"
                 "managers and heartbeats the resource monitor. --insecure allows listening on\n"
                 "a non-loopback address without CURVE keys.\n");
}

int main(int argc, char **argv)
{
    struct daemonopt o;
    memset(&o, 0, sizeof o);
    for (int i = 1; i < argc; i++) {
        if (daemonopt_take(&o, argc, argv, &i)) {
            continue;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "paddock-pn: unknown option %s\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    log_init("paddock-pn");
    if (o.print_schema)
        return config_print_schema(pnconf_schema, stdout) == 0 ? 0 : 1;
    pnconf_t cfg;
    memset(&cfg, 0, sizeof cfg);
    char msg[1024];
    int rc = pnconf_load(&cfg, o.config, o.sets, o.nsets, msg, sizeof msg);
    if (rc) {
        fprintf(stderr, "paddock-pn: %s\n", msg);
        pnconf_close(&cfg);
        return 1;
    }
    if (o.print_config) {
        rc = config_write(pnconf_schema, &cfg, stdout);
        pnconf_close(&cfg);
        return rc ? 1 : 0;
    }
    enum log_level lvl;
    if (log_level_parse(cfg.log_level, &lvl) == 0)
        log_set_level(lvl);
    rc = server_run(&cfg, o.insecure, msg, sizeof msg);
    if (rc)
        fprintf(stderr, "paddock-pn: %s\n", msg);
    pnconf_close(&cfg);
    return rc ? 1 : 0;
}
