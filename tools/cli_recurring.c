/* cli_recurring.c - `paddock recurring add|list|show|pause|resume|remove|accept|suggest`: recurring
 * jobs kept in the RM's ledger (issue 13, docs/recurring.md). Every subcommand takes --cluster DIR
 * (default PADDOCK_CLUSTER) or --rm ENDPOINTS [--keys DIR], and --json (the RM's document).
 *
 * `add` checks everything it can before any cluster is needed: the period (at least 1 s), the
 * offset (shorter than the period), the deadline (no longer than the period, so one run ends
 * before the next starts) and the spec, with the job manager's own parser. The spec's text goes
 * to the RM unchanged as the query's document; the RM starts each period's run from it.
 *
 * `suggest` lists the jobs whose ad-hoc submissions recur at a regular period (the RM infers it
 * from its history: Morpheus §4, rm/period.h) with the period, the offset, an inferred deadline
 * and the evidence; `accept NAME` on such a job makes it recurring through `add`, with the spec
 * of its latest run (its job directory's spec.json, or --spec FILE). On a recurring job, `accept`
 * adopts the deadline inferred from its runs, as before.
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

int cli_admin_query(const struct cli_admin_opts *o, const char *kind, const char *const *args,
                    size_t nargs, const char *data, json_t **doc, char *msg, size_t cap)
{
    struct jobdir_opts d = {.cluster = o->cluster, .rm = o->rm, .keys = o->keys};
    jobdir_opts_defaults(&d);
    rmclient_t *c = NULL;
    *doc = NULL;
    int rc = rmclient_open(&c, d.cluster, d.rm, d.keys, msg, cap);
    if (rc != 0)
        return rc;
    char *text = NULL;
    char why[1024];
    rc = rmclient_admin_data(c, -1, kind, args, nargs, data, REC_RM_TIMEOUT_MS, &text, why,
                             sizeof why);
    rmclient_destroy(&c);
    if (rc != 0)
        return err_fmt(msg, cap, rc, "the RM: %s", why);
    json_error_t jerr;
    *doc = json_loads(text, 0, &jerr);
    mem_free(text);
    if (*doc == NULL)
        return err_fmt(msg, cap, ERR_PARSE, "bad reply from the RM: %s", jerr.text);
    return 0;
}

int cli_admin_ask(const struct cli_admin_opts *o, const char *cmd, const char *kind,
                  const char *const *args, size_t nargs, const char *data, json_t **doc)
{
    char msg[1200];
    if (cli_admin_query(o, kind, args, nargs, data, doc, msg, sizeof msg) != 0) {
        fprintf(stderr, "paddock %s: %s\n", cmd, msg);
        return 1;
    }
    return 0;
}

int cli_admin_print_json(const json_t *doc)
{
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER | CLI_JSON_REALS);
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
        "       paddock recurring show|pause|resume|remove NAME\n"
        "       paddock recurring suggest [NAME]\n"
        "       paddock recurring accept NAME [--spec SPEC.json] [--jobs-dir DIR]\n"
        "  every subcommand: [--json] [--cluster DIR | --rm ENDPOINTS --keys DIR]\n"
        "  --every P     the period (at least 1s; 30s, 5m, 1h, 1d), in UTC from the epoch\n"
        "  --offset O    when in each period the run starts (default 0)\n"
        "  --deadline D  from the run's start, at most the period (default: the spec's\n"
        "                deadline_s, else one inferred from history, advisory until\n"
        "                `paddock recurring accept NAME`)\n"
        "  --vc VC       the virtual cluster (default: the spec's)\n"
        "  suggest       jobs submitted at a regular period, from the RM's history (Morpheus\n"
        "                §4): the period, offset, inferred deadline and the evidence\n"
        "  accept NAME   a suggested job: make it recurring with what suggest shows and the\n"
        "                spec of its latest run (--spec to give another); a recurring job:\n"
        "                adopt its inferred deadline\n");
    return 2;
}

struct rec_opts {
    struct cli_admin_opts c;
    bool json;
    const char *pos[2];
    int npos;
    const char *every, *offset, *deadline, *vc;
    const char *spec, *jobs_dir; /* accept */
};

/* Parses argv; the options of `add` only when `add`, those of `accept` only when `accept`. Returns
 * 0 or 2 after printing why. */
static int rec__parse_ex(int argc, char **argv, bool add, bool accept, int want, struct rec_opts *o)
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
        else if (accept && has && strcmp(a, "--spec") == 0)
            o->spec = argv[++i];
        else if (accept && has && strcmp(a, "--jobs-dir") == 0)
            o->jobs_dir = argv[++i];
        else if (a[0] != '-' && o->npos < 2)
            o->pos[o->npos++] = a;
        else {
            fprintf(stderr, "paddock recurring: unexpected '%s'\n", a);
            return rec__usage();
        }
    }
    if (want < 0 && o->npos <= 1) /* an optional NAME */
        return 0;
    if (o->npos != want) {
        fprintf(stderr, "paddock recurring: %s\n",
                o->npos < want ? (add && o->npos == 1 ? "missing SPEC.json" : "missing NAME")
                               : "too many arguments");
        return rec__usage();
    }
    return 0;
}

static int rec__parse(int argc, char **argv, bool add, int want, struct rec_opts *o)
{
    return rec__parse_ex(argc, argv, add, false, want, o);
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

/* ---- suggest and accept (Morpheus §4) ---- */

static const char *rec__dur(const json_t *o, const char *key, char *buf, size_t cap)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        return "-";
    return jobdir_format_duration(json_number_value(v) / (strstr(key, "_ms") ? 1000.0 : 1.0), false,
                                  buf, cap);
}

/* One suggestion in words: the job, its period, offset and deadline, then the evidence. */
static void rec__suggestion(FILE *out, const json_t *s, int64_t now)
{
    const json_t *e = json_object_get(s, "evidence");
    char p[JOBDIR_DURATION_SIZE], off[JOBDIR_DURATION_SIZE], d[JOBDIR_DURATION_SIZE],
        g[JOBDIR_DURATION_SIZE], mad[JOBDIR_DURATION_SIZE], end[JOBDIR_DURATION_SIZE],
        ago[JOBDIR_DURATION_SIZE];
    const char *src = json_string_value(json_object_get(s, "deadline_source"));
    fprintf(out, "%s: every %s at +%s into each period (UTC), deadline %s",
            json_string_value(json_object_get(s, "name")), rec__dur(s, "period_ms", p, sizeof p),
            rec__dur(s, "offset_ms", off, sizeof off), rec__dur(s, "deadline_ms", d, sizeof d));
    if (json_is_number(json_object_get(s, "deadline_ms")))
        fprintf(out, " (from %s%s)", src != NULL ? src : "?",
                json_is_true(json_object_get(s, "deadline_capped")) ? ", capped at the period"
                                                                    : "");
    else
        fprintf(out, " (none: too few successful runs)");
    double last = jobdir_num(e, "last_submit_ms", 0);
    fprintf(out,
            "\n  evidence: %lld submissions, gaps %s median, MAD %s (CV %.3f); phase MAD %s; "
            "%lld succeeded",
            (long long)jobdir_num(e, "runs", 0), rec__dur(e, "median_gap_s", g, sizeof g),
            rec__dur(e, "mad_gap_s", mad, sizeof mad), jobdir_num(e, "cv", 0),
            rec__dur(e, "phase_mad_s", ago, sizeof ago), (long long)jobdir_num(e, "succeeded", 0));
    if (json_is_number(json_object_get(e, "end_pct_s")))
        fprintf(out, ", 95%% ended by +%s", rec__dur(e, "end_pct_s", end, sizeof end));
    fprintf(out, "; last submitted %s ago (%s)\n",
            jobdir_format_duration((double)(now - (int64_t)last) / 1000.0, false, ago, sizeof ago),
            json_string_value(json_object_get(s, "last_job_id")) != NULL
                ? json_string_value(json_object_get(s, "last_job_id"))
                : "?");
}

static int rec_suggest(int argc, char **argv)
{
    struct rec_opts o;
    int rc = rec__parse(argc, argv, false, -1, &o);
    if (rc != 0)
        return rc;
    const char *args[1] = {o.pos[0]};
    json_t *doc = NULL;
    if ((rc = cli_admin_ask(&o.c, "recurring suggest", PROTO_ADMIN_RECURRING_SUGGEST, args, o.npos,
                            NULL, &doc)) != 0)
        return rc;
    if (o.json) {
        rc = cli_admin_print_json(doc);
        json_decref(doc);
        return rc;
    }
    int64_t now = (int64_t)jobdir_num(doc, "now_ms", (double)clock_wall_ms());
    json_t *sug = json_object_get(doc, "suggestions"),
           *other = json_object_get(doc, "not_periodic");
    size_t i;
    json_t *s;
    if (json_array_size(sug) == 0)
        printf("no job is submitted at a regular period yet (Morpheus §4: at least 4 submissions "
               "of one name, gaps within 10%% of their median)\n");
    json_array_foreach(sug, i, s)
    {
        rec__suggestion(stdout, s, now);
    }
    if (json_array_size(sug) > 0)
        printf("make one recurring with: paddock recurring accept NAME\n");
    json_array_foreach(other, i, s)
    {
        const json_t *e = json_object_get(s, "evidence");
        printf("%s: not periodic: %s (%lld submissions, CV %.3f)\n",
               json_string_value(json_object_get(s, "name")),
               json_string_value(json_object_get(s, "verdict")),
               (long long)jobdir_num(e, "runs", 0), jobdir_num(e, "cv", 0));
    }
    json_decref(doc);
    return 0;
}

/* The spec of a suggested job: --spec, else its latest run's spec.json. Caller frees. */
static char *rec__accept_spec(const struct rec_opts *o, const char *job_id, char *path, size_t pcap)
{
    char msg[1024];
    if (o->spec != NULL) {
        snprintf(path, pcap, "%s", o->spec);
    } else {
        struct jobdir_opts d = {
            .cluster = o->c.cluster, .rm = o->c.rm, .keys = o->c.keys, .jobs_dir = o->jobs_dir};
        jobdir_opts_defaults(&d);
        char root[JOBDIR_PATH];
        if (jobdir_root(&d, false, root, sizeof root, msg, sizeof msg) != 0) {
            fprintf(stderr, "paddock recurring accept: %s (give --spec SPEC.json)\n", msg);
            return NULL;
        }
        snprintf(path, pcap, "%s/%s/spec.json", root, job_id);
    }
    char *text = rec__read(path, PROTO_MAX_ADMIN_DATA, msg, sizeof msg);
    if (text == NULL)
        fprintf(stderr, "paddock recurring accept: %s: %s%s\n", path, msg,
                o->spec == NULL ? " (the latest run's spec; give --spec SPEC.json)" : "");
    return text;
}

/* accept NAME for a job that is not recurring: add it as suggest describes it. */
static int rec_accept_suggestion(const struct rec_opts *o)
{
    const char *name = o->pos[0];
    const char *args[1] = {name};
    json_t *doc = NULL;
    int rc = cli_admin_ask(&o->c, "recurring accept", PROTO_ADMIN_RECURRING_SUGGEST, args, 1, NULL,
                           &doc);
    if (rc != 0)
        return rc;
    json_t *s = json_array_get(json_object_get(doc, "suggestions"), 0);
    if (s == NULL) {
        json_t *why = json_array_get(json_object_get(doc, "not_periodic"), 0);
        fprintf(stderr,
                "paddock recurring accept: %s is neither a recurring job nor periodic%s%s\n", name,
                why != NULL ? ": " : " (no ad-hoc run of that name in the history)",
                why != NULL ? json_string_value(json_object_get(why, "verdict")) : "");
        json_decref(doc);
        return 1;
    }
    char path[JOBDIR_PATH + 64], msg[1024];
    char *text = rec__accept_spec(o, json_string_value(json_object_get(s, "last_job_id")), path,
                                  sizeof path);
    if (text == NULL) {
        json_decref(doc);
        return 1;
    }
    struct spec_limits lim;
    spec_limits_default(&lim);
    struct spec *spec = NULL;
    if (spec_parse(text, strlen(text), &lim, &spec, msg, sizeof msg) != 0) {
        fprintf(stderr, "paddock recurring accept: %s: %s\n", path, msg);
        mem_free(text);
        json_decref(doc);
        return 1;
    }
    spec_destroy(&spec);
    char num[3][24];
    snprintf(num[0], sizeof num[0], "%lld", (long long)jobdir_num(s, "period_ms", 0));
    snprintf(num[1], sizeof num[1], "%lld", (long long)jobdir_num(s, "offset_ms", 0));
    snprintf(num[2], sizeof num[2], "%lld", (long long)jobdir_num(s, "deadline_ms", 0));
    const char *vc = json_string_value(json_object_get(s, "virtual_cluster"));
    const char *add[5] = {name, vc != NULL && vc[0] != '\0' ? vc : "default", num[0], num[1],
                          num[2]};
    json_t *rec = NULL;
    rc = cli_admin_ask(&o->c, "recurring accept", PROTO_ADMIN_RECURRING_ADD, add, 5, text, &rec);
    mem_free(text);
    if (rc == 0) {
        if (o->json) {
            rc = cli_admin_print_json(rec);
        } else {
            plan_page_record(stdout, rec, clock_wall_ms());
            printf("%s is recurring now (spec %s): the RM starts each period's run; stop "
                   "submitting it yourself\n",
                   name, path);
        }
    }
    json_decref(rec);
    json_decref(doc);
    return rc;
}

static int rec_accept(int argc, char **argv)
{
    struct rec_opts o;
    int rc = rec__parse_ex(argc, argv, false, true, 1, &o);
    if (rc != 0)
        return rc;
    json_t *doc = NULL;
    char msg[1200];
    const char *args[1] = {o.pos[0]};
    rc = cli_admin_query(&o.c, PROTO_ADMIN_RECURRING_ACCEPT, args, 1, NULL, &doc, msg, sizeof msg);
    if (rc == ERR_NOTFOUND)
        return rec_accept_suggestion(&o); /* not recurring: a suggested job? */
    if (rc != 0) {
        fprintf(stderr, "paddock recurring accept: %s\n", msg);
        return 1;
    }
    rc = o.json ? cli_admin_print_json(doc) : (plan_page_record(stdout, doc, clock_wall_ms()), 0);
    json_decref(doc);
    return rc;
}

/* list, show, pause, resume, remove: one query each. */
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
    static const char *const subs[] = {"list", "show", "pause", "resume", "remove"};
    if (argc < 1)
        return rec__usage();
    if (strcmp(argv[0], "add") == 0)
        return rec_add(argc - 1, argv + 1);
    if (strcmp(argv[0], "suggest") == 0)
        return rec_suggest(argc - 1, argv + 1);
    if (strcmp(argv[0], "accept") == 0)
        return rec_accept(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        if (strcmp(argv[0], subs[i]) == 0)
            return rec_query(subs[i], argc - 1, argv + 1);
    if (strcmp(argv[0], "help") != 0 && strcmp(argv[0], "--help") != 0)
        fprintf(stderr, "paddock recurring: unknown subcommand '%s'\n", argv[0]);
    return rec__usage();
}

CLI_COMMAND("recurring", "recurring jobs: add, list, show, pause, resume, remove, suggest, accept",
            recurring_main, rec__usage)
