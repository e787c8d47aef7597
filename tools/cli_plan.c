/* cli_plan.c - `paddock plan [--json] [--width N] [--html FILE] [--cluster DIR | --rm ENDPOINTS
 * --keys DIR]`: the RM's plan of periodic reservations (issue 13; Morpheus §6, LowCost). Per
 * virtual cluster: capacity, step, horizon (the periods' LCM, capped), peak, and the tokens each
 * accepted recurring job reserves over the horizon as an ASCII stacked view.
 *
 * --html FILE writes one self-contained page instead (tools/plan_page.h): the plan as a stacked
 * chart in inline SVG with the capacity line, the recurring jobs and the recent runs. It asks the
 * RM for the plan, the recurring jobs and the history; the page is written to FILE.tmp and renamed
 * into place, so a failed run never leaves half a page.
 *
 * Exit codes: 0 answered, 1 the RM or the file failed, 2 usage. */
#include "common/clock.h"
#include "common/err.h"
#include "proto/proto.h"
#include "tools/cli.h"
#include "tools/plan_page.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int plan__usage(void)
{
    fprintf(cli_usage_out(),
            "usage: paddock plan [--json] [--width N] [--html FILE]\n"
            "                    [--cluster DIR | --rm ENDPOINTS --keys DIR]\n"
            "  --width N    columns of the ASCII view (default 72)\n"
            "  --html FILE  write the plan, the recurring jobs and the recent runs as one\n"
            "               HTML page\n");
    return 2;
}

static int plan__html(const struct cli_admin_opts *c, json_t *plan, const char *path)
{
    json_t *rec = NULL, *hist = NULL;
    /* the tables are optional: a page with the chart alone beats none */
    if (cli_admin_ask(c, "plan", PROTO_ADMIN_RECURRING_LIST, NULL, 0, NULL, &rec) != 0)
        rec = NULL;
    if (cli_admin_ask(c, "plan", PROTO_ADMIN_HISTORY, NULL, 0, NULL, &hist) != 0)
        hist = NULL;
    char tmp[4096], msg[512];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *out = fopen(tmp, "w");
    int rc;
    if (out == NULL) {
        rc = err_fmt(msg, sizeof msg, ERR_IO, "%s: %s", tmp, strerror(errno));
    } else {
        rc = plan_page_html(out, plan, rec, hist, clock_wall_ms(), msg, sizeof msg);
        if (fclose(out) != 0 && rc == 0)
            rc = err_fmt(msg, sizeof msg, ERR_IO, "%s: %s", tmp, strerror(errno));
        if (rc == 0 && rename(tmp, path) != 0)
            rc = err_fmt(msg, sizeof msg, ERR_IO, "%s: %s", path, strerror(errno));
        if (rc != 0)
            remove(tmp);
    }
    json_decref(rec);
    json_decref(hist);
    if (rc != 0) {
        fprintf(stderr, "paddock plan: %s\n", msg);
        return 1;
    }
    return 0;
}

static int plan_main(int argc, char **argv)
{
    struct cli_admin_opts c = {0};
    bool json = false;
    const char *html = NULL;
    long width = 72;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0) {
            json = true;
        } else if (cli_admin_option(argc, argv, &i, &c)) {
            continue;
        } else if (strcmp(a, "--html") == 0 && i + 1 < argc) {
            html = argv[++i];
        } else if (strcmp(a, "--width") == 0 && i + 1 < argc) {
            char *end = NULL;
            const char *v = argv[++i];
            width = strtol(v, &end, 10);
            if (end == v || *end != '\0' || width < 8 || width > 1000) {
                fprintf(stderr, "paddock plan: --width '%s': 8 to 1000 columns\n", v);
                return 2;
            }
        } else {
            return plan__usage();
        }
    }
    if (json && html != NULL) {
        fprintf(stderr, "paddock plan: --json and --html exclude each other\n");
        return 2;
    }
    json_t *doc = NULL;
    int rc = cli_admin_ask(&c, "plan", PROTO_ADMIN_PLAN, NULL, 0, NULL, &doc);
    if (rc != 0)
        return rc;
    if (json)
        rc = cli_admin_print_json(doc);
    else if (html != NULL)
        rc = plan__html(&c, doc, html);
    else
        plan_page_text(stdout, doc, (int)width);
    json_decref(doc);
    return rc;
}

CLI_COMMAND("plan", "the periodic reservations per virtual cluster (--html: as a chart)", plan_main,
            plan__usage)
