/* paddock keygen --dir DIR [--name NAME] [--force] [--json]: a CURVE certificate for a daemon
 * or a user, in the layout common/curve.h documents. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "common/curve.h"
#include "common/err.h"
#include "common/zuv.h"
#include "rm/rm_page.h"
#include "tools/cli.h"

static int keygen__usage(void)
{
    fprintf(cli_usage_out(),
            "usage: paddock keygen --dir DIR [--name NAME] [--force] [--json]\n"
            "  Writes DIR/NAME.pub (public), DIR/NAME.secret (secret, mode 0600) and\n"
            "  DIR/allow/NAME.pub (the allow-list servers read). NAME defaults to "
            "'" CURVE_DEFAULT_NAME "'.\n"
            "  Copy a client's NAME.pub into a server's allow/ directory to let it in.\n");
    return 2;
}

static int keygen_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"dir", required_argument, NULL, 'd'}, {"name", required_argument, NULL, 'n'},
        {"force", no_argument, NULL, 'f'},     {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},      {NULL, 0, NULL, 0}};
    const char *dir = NULL;
    const char *name = CURVE_DEFAULT_NAME;
    bool force = false, json = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc + 1, argv - 1, "d:n:fjh", opts, NULL)) != -1) {
        switch (c) {
        case 'd':
            dir = optarg;
            break;
        case 'n':
            name = optarg;
            break;
        case 'f':
            force = true;
            break;
        case 'j':
            json = true;
            break;
        default: /* --help is answered before the handler runs (tools/cli.h) */
            return keygen__usage();
        }
    }
    if (dir == NULL || optind != argc + 1) {
        return keygen__usage();
    }
    char msg[1024];
    int rc = curve_keygen(dir, name, force, msg, sizeof msg);
    if (rc != 0) {
        fprintf(stderr, "paddock keygen: %s\n", msg);
        return 1;
    }
    /* Read the files back: what is printed is what a daemon will load. */
    curve_t *cv = NULL;
    rc = curve_load(&cv, dir, name, NULL, msg, sizeof msg);
    if (rc != 0) {
        fprintf(stderr, "paddock keygen: wrote keys but cannot load them: %s\n", msg);
        return 1;
    }
    /* the cluster page's token for non-loopback clients (rm/rm_page.h), kept if present */
    if (rm_page_token_create(dir, false, msg, sizeof msg) != 0)
        fprintf(stderr, "paddock keygen: no web token: %s\n", msg);
    if (json) {
        /* dir and name are printed as given; names are restricted to [A-Za-z0-9._-]. */
        printf("{\"dir\":\"");
        for (const char *p = dir; *p != '\0'; p++) {
            if (*p == '"' || *p == '\\')
                printf("\\%c", *p);
            else if ((unsigned char)*p < 0x20)
                printf("\\u%04x", (unsigned char)*p);
            else
                putchar(*p);
        }
        printf("\",\"name\":\"%s\",\"public_key\":\"%s\"}\n", name, curve_public_key(cv));
    } else {
        printf("public key  %s\n", curve_public_key(cv));
        printf("public      %s/%s.pub\n", dir, name);
        printf("secret      %s/%s.secret\n", dir, name);
        printf("allow-list  %s/%s/%s.pub\n", dir, CURVE_ALLOW_SUBDIR, name);
        printf("web token   %s/%s\n", dir, RM_PAGE_TOKEN_FILE);
    }
    curve_destroy(&cv);
    return 0;
}

CLI_COMMAND("keygen", "make a CURVE certificate (--dir DIR [--name NAME])", keygen_main,
            keygen__usage)
