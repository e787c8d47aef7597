/* cli_recurring.c - `paddock recurring add|list|show|pause|resume|remove|accept`: recurring jobs
 * kept in the RM's ledger (issue 13, docs/recurring.md). Every subcommand takes --cluster DIR
 * (default PADDOCK_CLUSTER) or --rm ENDPOINTS [--keys DIR], and --json (the RM's document).
 *
 * `add` checks everything it can before any cluster is needed: the period (at least 1 s), the
 * offset (shorter than the period), the deadline (no longer than the period, so one run ends
 * before the next starts) and the spec, with the job manager's own parser. The spec's text goes
 * to the RM unchanged as the query's document; the RM starts each period's run from it.
 *
 * Also the RM helpers the recurring-job commands share (tools/cli.h).
 *
 * Exit codes: 0 done, 1 the spec or the RM failed (or refused), 2 usage. */
#include "common/clock.h"
#include "common/err.h"
#include "common/mem.h"
#include "jm/spec.h"
#include "proto/limits.h"
#include "rm/rmclient.h"
#include "tools/cli.h"
#include "tools/jobdir.h"
#include "tools/plan_page.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REC_RM_TIMEOUT_MS 5000
#define REC_NAME_MAX      63 /* the RM's limit on job names (bytes), as for `paddock submit` */

/* ---- shared with cli_history.c and cli_plan.c (tools/cli.h) ---- */

bool cli_admin_option(int argc, char **argv, int *i, struct cli_admin_opts *o)
{
    if (*i + 1 >= argc)
        return false;
    const char *a = argv[*i];
    const char **slot = strcmp(a, "--cluster") == 0 ? &o->cluster
                        : strcmp(a, "--rm") == 0    ? &o->rm
                        : strcmp(a, "--keys") == 0  ? &o->keys
                                                    : NULL;
    if (slot == NULL)
        return false;
    *slot = argv[++*i];
    return true;
}

int cli_admin_ask(const struct cli_admin_opts *o, const char *cmd, const char *kind,
                  const char *const *args, size_t nargs, const char *data, json_t **doc)
{
    struct jobdir_opts d = {.cluster = o->cluster, .rm = o->rm, .keys = o->keys};
    jobdir_opts_defaults(&d);
    char msg[1024];
    rmclient_t *c = NULL;
    *doc = NULL;
    if (rmclient_open(&c, d.cluster, d.rm, d.keys, msg, sizeof msg) != 0) {
        fprintf(stderr, "paddock %s: %s\n", cmd, msg);
        return 1;
    }
    char *text = NULL;
    int rc = rmclient_admin_data(c, -1, kind, args, nargs, data, REC_RM_TIMEOUT_MS, &text, msg,
                                 sizeof msg);
    rmclient_destroy(&c);
    if (rc != 0) {
        fprintf(stderr, "paddock %s: the RM: %s\n", cmd, msg);
        return 1;
    }
    json_error_t jerr;
    *doc = json_loads(text, 0, &jerr);
    mem_free(text);
    if (*doc == NULL) {
        fprintf(stderr, "paddock %s: bad reply from the RM: %s\n", cmd, jerr.text);
        return 1;
    }
    return 0;
}

int cli_admin_print_json(const json_t *doc)
{
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (text == NULL)
        return 1;
    printf("%s\n", text);
    free(text);
    return 0;
}

/* ---- recurring ---- */

static int rec__usage(void)
{
    fprintf(
        cli_usage_out(),
        "usage: paddock recurring add NAME --every PERIOD [--deadline D] [--offset O] [--vc VC]\n"
        "                             SPEC.json\n"
        "       paddock recurring list\n"
        "       paddock recurring show|pause|resume|remove|accept NAME\n"
        "  every subcommand: [--json] [--cluster DIR | --rm ENDPOINTS --keys DIR]\n"
        "  --every P     the period (at least 1s; 30s, 5m, 1h, 1d), in UTC from the epoch\n"
        "  --offset O    when in each period the run starts (default 0)\n"
        "  --deadline D  from the run's start, at most the period (default: the spec's\n"
        "                deadline_s, else one inferred from history, advisory until\n"
        "                `paddock recurring accept NAME`)\n"
        "  --vc VC       the virtual cluster (default: the spec's)\n");
    return 2;
}

struct rec_opts {
    struct cli_admin_opts c;
    bool json;
    const char *pos[2];
    int npos;
    const char *every, *offset, *deadline, *vc;
};

/* Parses argv; the options of `add` only when `add`. Returns 0 or 2 after printing why. */
static int rec__parse(int argc, char **argv, bool add, int want, struct rec_opts *o)
{
    memset(o, 0, sizeof *o);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (strcmp(a, "--json") == 0)
            o->json = true;
        else if (cli_admin_option(argc, argv, &i, &o->c))
            continue;
        else if (add && has && strcmp(a, "--every") == 0)
            o->every = argv[++i];
        else if (add && has && strcmp(a, "--offset") == 0)
            o->offset = argv[++i];
        else if (add && has && strcmp(a, "--deadline") == 0)
            o->deadline = argv[++i];
        else if (add && has && strcmp(a, "--vc") == 0)
            o->vc = argv[++i];
        else if (a[0] != '-' && o->npos < 2)
            o->pos[o->npos++] = a;
        else {
            fprintf(stderr, "paddock recurring: unexpected '%s'\n", a);
            return rec__usage();
        }
    }
    if (o->npos != want) {
        fprintf(stderr, "paddock recurring: %s\n",
                o->npos < want ? (add && o->npos == 1 ? "missing SPEC.json" : "missing NAME")
                               : "too many arguments");
        return rec__usage();
    }
    return 0;
}

/* A duration option into *ms; prints why and returns 2 when it does not read. */
static int rec__duration(const char *opt, const char *text, int64_t *ms)
{
    char msg[256] = "";
    if (jobdir_parse_duration(text, ms, msg, sizeof msg) != 0) {
        fprintf(stderr, "paddock recurring add: %s '%s': %s\n", opt, text, msg);
        return 2;
    }
    return 0;
}

static bool rec__name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > REC_NAME_MAX || name[0] == '.')
        return false;
    return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

/* The whole file into a NUL-terminated buffer (caller frees with mem_free), at most `max` bytes;
 * NULL after writing why into msg. */
static char *rec__read(const char *path, size_t max, char *msg, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(msg, cap, "%s", strerror(errno));
        return NULL;
    }
    char *buf = mem_alloc(max + 2);
    size_t n = buf != NULL ? fread(buf, 1, max + 1, f) : 0;
    bool bad = buf == NULL || ferror(f);
    fclose(f);
    if (bad || n > max) {
        snprintf(msg, cap, "%s",
                 buf == NULL ? "out of memory"
                 : bad       ? "cannot read it"
                             : "larger than an admin document may be (512 KiB)");
        mem_free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

static int rec__print(const struct rec_opts *o, const json_t *doc)
{
    if (o->json)
        return cli_admin_print_json(doc);
    plan_page_record(stdout, doc, clock_wall_ms());
    return 0;
}

static int rec_add(int argc, char **argv)
{
    struct rec_opts o;
    int rc = rec__parse(argc, argv, true, 2, &o);
    if (rc != 0)
        return rc;
    const char *name = o.pos[0], *path = o.pos[1];
    char d1[JOBDIR_DURATION_SIZE], d2[JOBDIR_DURATION_SIZE];
    if (!rec__name_ok(name)) {
        fprintf(stderr,
                "paddock recurring add: name '%s': use 1 to %d letters, digits, '.', '_' or '-' "
                "(not starting with '.')\n",
                name, REC_NAME_MAX);
        return 2;
    }
    if (o.every == NULL) {
        fprintf(stderr, "paddock recurring add: missing --every PERIOD\n");
        return rec__usage();
    }
    int64_t period = 0, offset = 0, deadline = 0;
    if ((rc = rec__duration("--every", o.every, &period)) != 0 ||
        (o.offset != NULL && (rc = rec__duration("--offset", o.offset, &offset)) != 0) ||
        (o.deadline != NULL && (rc = rec__duration("--deadline", o.deadline, &deadline)) != 0))
        return rc;
    if (period < 1000) {
        fprintf(stderr, "paddock recurring add: --every '%s': the period must be at least 1s\n",
                o.every);
        return 2;
    }
    if (offset < 0 || offset >= period) {
        fprintf(stderr,
                "paddock recurring add: --offset '%s': the offset must be shorter than the period "
                "(%s)\n",
                o.offset, jobdir_format_duration((double)period / 1000.0, false, d1, sizeof d1));
        return 2;
    }
    if (o.deadline != NULL && deadline <= 0) {
        fprintf(stderr, "paddock recurring add: --deadline '%s': must be positive\n", o.deadline);
        return 2;
    }
    if (deadline > period) {
        fprintf(stderr,
                "paddock recurring add: --deadline %s is longer than the period %s: a run would "
                "still be due when the next one starts\n",
                jobdir_format_duration((double)deadline / 1000.0, false, d1, sizeof d1),
                jobdir_format_duration((double)period / 1000.0, false, d2, sizeof d2));
        return 2;
    }
    /* the spec, with the job manager's parser, before any cluster is needed */
    char msg[1024];
    char *text = rec__read(path, PROTO_MAX_ADMIN_DATA, msg, sizeof msg);
    if (text == NULL) {
        fprintf(stderr, "paddock recurring add: %s: %s\n", path, msg);
        return 1;
    }
    struct spec_limits lim;
    spec_limits_default(&lim);
    struct spec *spec = NULL;
    if (spec_parse(text, strlen(text), &lim, &spec, msg, sizeof msg) != 0) {
        fprintf(stderr, "paddock recurring add: %s: %s\n", path, msg);
        mem_free(text);
        return 1;
    }
    if (o.deadline == NULL && spec->has_deadline) {
        deadline = (int64_t)(spec->deadline_s * 1000.0 + 0.5);
        if (deadline > period) {
            fprintf(stderr,
                    "paddock recurring add: %s: the spec's deadline_s (%s) is longer than the "
                    "period %s (give --deadline)\n",
                    path, jobdir_format_duration(spec->deadline_s, false, d1, sizeof d1),
                    jobdir_format_duration((double)period / 1000.0, false, d2, sizeof d2));
            spec_destroy(&spec);
            mem_free(text);
            return 2;
        }
    }
    char vc[256];
    snprintf(vc, sizeof vc, "%s", o.vc != NULL ? o.vc : spec->virtual_cluster);
    spec_destroy(&spec);
    char num[3][24];
    snprintf(num[0], sizeof num[0], "%lld", (long long)period);
    snprintf(num[1], sizeof num[1], "%lld", (long long)offset);
    snprintf(num[2], sizeof num[2], "%lld", (long long)deadline);
    const char *args[5] = {name, vc, num[0], num[1], num[2]};
    json_t *doc = NULL;
    rc = cli_admin_ask(&o.c, "recurring add", PROTO_ADMIN_RECURRING_ADD, args, 5, text, &doc);
    mem_free(text);
    if (rc != 0)
        return rc;
    rc = rec__print(&o, doc);
    json_decref(doc);
    return rc;
}

/* list, show, pause, resume, remove, accept: one query each. */
static int rec_query(const char *sub, int argc, char **argv)
{
    struct rec_opts o;
    bool list = strcmp(sub, "list") == 0;
    int rc = rec__parse(argc, argv, false, list ? 0 : 1, &o);
    if (rc != 0)
        return rc;
    const char *kind = list                         ? PROTO_ADMIN_RECURRING_LIST
                       : strcmp(sub, "show") == 0   ? PROTO_ADMIN_RECURRING_SHOW
                       : strcmp(sub, "remove") == 0 ? PROTO_ADMIN_RECURRING_REMOVE
                       : strcmp(sub, "accept") == 0 ? PROTO_ADMIN_RECURRING_ACCEPT
                                                    : PROTO_ADMIN_RECURRING_PAUSE;
    const char *args[2] = {o.pos[0], strcmp(sub, "pause") == 0 ? "1" : "0"};
    size_t nargs = list ? 0 : strcmp(kind, PROTO_ADMIN_RECURRING_PAUSE) == 0 ? 2 : 1;
    char cmd[64];
    snprintf(cmd, sizeof cmd, "recurring %s", sub);
    json_t *doc = NULL;
    if ((rc = cli_admin_ask(&o.c, cmd, kind, args, nargs, NULL, &doc)) != 0)
        return rc;
    if (o.json)
        rc = cli_admin_print_json(doc);
    else if (list)
        plan_page_list(stdout, doc, clock_wall_ms());
    else if (strcmp(sub, "show") == 0)
        plan_page_show(stdout, doc, clock_wall_ms());
    else if (strcmp(sub, "remove") == 0)
        printf("removed recurring job %s\n",
               json_string_value(json_object_get(doc, "removed")) != NULL
                   ? json_string_value(json_object_get(doc, "removed"))
                   : o.pos[0]);
    else
        plan_page_record(stdout, doc, clock_wall_ms());
    json_decref(doc);
    return rc;
}

static int recurring_main(int argc, char **argv)
{
    static const char *const subs[] = {"list", "show", "pause", "resume", "remove", "accept"};
    if (argc < 1)
        return rec__usage();
    if (strcmp(argv[0], "add") == 0)
        return rec_add(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        if (strcmp(argv[0], subs[i]) == 0)
            return rec_query(subs[i], argc - 1, argv + 1);
    if (strcmp(argv[0], "help") != 0 && strcmp(argv[0], "--help") != 0)
        fprintf(stderr, "paddock recurring: unknown subcommand '%s'\n", argv[0]);
    return rec__usage();
}

CLI_COMMAND("recurring", "recurring jobs: add, list, show, pause, resume, remove, accept",
            recurring_main, rec__usage)
