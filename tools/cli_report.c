/* paddock report JOB -o report.html: a job's report.json rendered as a self-contained page. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/err.h"
#include "tools/cli.h"
#include "tools/report_page.h"

static int report__is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int report__is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* JOB may be a report.json path, a job directory, or a job id under the cluster directory. */
static int report__resolve(const char *job, const char *cluster, char *path, size_t cap)
{
    if (report__is_file(job)) {
        snprintf(path, cap, "%s", job);
        return 0;
    }
    if (report__is_dir(job)) {
        snprintf(path, cap, "%s/report.json", job);
        return report__is_file(path) ? 0 : -1;
    }
    if (cluster != NULL) {
        snprintf(path, cap, "%s/jobs/%s/report.json", cluster, job);
        return report__is_file(path) ? 0 : -1;
    }
    return -1;
}

static int report__usage(void)
{
    fprintf(cli_usage_out(), "usage: paddock report JOB -o report.html [--cluster DIR]\n"
                             "  JOB is a job id (with --cluster DIR or PADDOCK_CLUSTER) or a job "
                             "directory\n");
    return 2;
}

static int report_main(int argc, char **argv)
{
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"cluster", required_argument, NULL, 'c'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *out_path = NULL;
    const char *cluster = getenv("PADDOCK_CLUSTER");
    int c;
    optind = 1;
    while ((c = getopt_long(argc + 1, argv - 1, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            out_path = optarg;
            break;
        case 'c':
            cluster = optarg;
            break;
        default: /* --help is answered before the handler runs (tools/cli.h) */
            return report__usage();
        }
    }
    if (optind + 1 != argc + 1 || out_path == NULL)
        return report__usage();
    const char *job = argv[optind - 1];
    char path[4096];
    if (report__resolve(job, cluster, path, sizeof path) != 0) {
        fprintf(stderr, "paddock report: no report.json for '%s'%s\n", job,
                cluster == NULL ? " (give a path, or --cluster DIR for a job id)" : "");
        return 1;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", out_path);
    FILE *out = fopen(tmp, "w");
    if (out == NULL) {
        fprintf(stderr, "paddock report: %s: %s\n", tmp, strerror(errno));
        return 1;
    }
    char msg[512];
    int rc = report_page_render(path, out, msg, sizeof msg);
    if (fclose(out) != 0 && rc == 0)
        rc = err_fmt(msg, sizeof msg, ERR_IO, "%s: %s", tmp, strerror(errno));
    if (rc == 0 && rename(tmp, out_path) != 0)
        rc = err_fmt(msg, sizeof msg, ERR_IO, "%s: %s", out_path, strerror(errno));
    if (rc != 0) {
        remove(tmp);
        fprintf(stderr, "paddock report: %s\n", msg);
        return 1;
    }
    return 0;
}

CLI_COMMAND("report", "render a job's report as a self-contained HTML page", report_main,
            report__usage)
