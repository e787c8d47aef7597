/* cli_job.c - `paddock job show ID [--json]`, `paddock job cancel ID`, `paddock job deadline ID
 * DURATION` (docs/architecture.md, "The command line", and docs/job-directory.md). Each takes
 * --cluster DIR (default PADDOCK_CLUSTER) or --rm ENDPOINTS --keys DIR, and --jobs-dir DIR.
 *
 * `show` joins the job's own view (state.json in its job directory, whether its paddock-jm still
 * runs) with the RM's (admin query "job"): either may be missing (a job submitted from another
 * machine has no local directory; an RM that is down answers nothing) and the command still
 * prints what it has; it fails only when it has neither. A directory with no state.json yet and
 * no RM record read back (just submitted, its JM starting) is shown as "starting". Besides progress
 * it shows the job's ETA (the JM's, from state.json, and the RM's record of it) and its tokens: the
 * minimum the arbiter guarantees for its deadline and the spare above it. `cancel` and `deadline`
 * are admin writes committed through the RM's log; the JM learns of them at its next lease renewal.
 */
#include "common/clock.h"
#include "common/config.h"
#include "common/err.h"
#include "common/mem.h"
#include "rm/rmclient.h"
#include "tools/cli.h"
#include "tools/jobdir.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define JOB_RM_TIMEOUT_MS 3000

struct job_opts {
    struct jobdir_opts d;
    bool json;
    const char *args[2];
    int nargs;
};

/* Prints "usage: paddock job WHAT [options]" where usage text goes (tools/cli.h); returns 2. */
static int job__usage(const char *what)
{
    fprintf(cli_usage_out(),
            "usage: paddock job %s [--cluster DIR | --rm ENDPOINTS --keys DIR] "
            "[--jobs-dir DIR] [--json]\n",
            what);
    return 2;
}

static int job_show_usage(void)
{
    return job__usage("show ID");
}

static int job_cancel_usage(void)
{
    return job__usage("cancel ID");
}

static int job_deadline_usage(void)
{
    return job__usage("deadline ID DURATION");
}

static int job__parse(int argc, char **argv, struct job_opts *o, int want, const char *usage)
{
    memset(o, 0, sizeof *o);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (jobdir_opts_take(&o->d, argc, argv, &i))
            continue;
        if (strcmp(a, "--json") == 0)
            o->json = true;
        else if (a[0] != '-' && o->nargs < 2)
            o->args[o->nargs++] = a;
        else
            o->nargs = 99;
    }
    if (o->nargs != want)
        return job__usage(usage);
    if (strchr(o->args[0], '/') != NULL || o->args[0][0] == '.' || o->args[0][0] == '\0') {
        fprintf(stderr, "paddock job: '%s' is not a job id\n", o->args[0]);
        return 2;
    }
    jobdir_opts_defaults(&o->d);
    return 0;
}

/* An admin query on the leader; the reply document or NULL with the reason in msg. */
static json_t *job__admin(const struct job_opts *o, const char *kind, const char *const *args,
                          size_t nargs, int *code, char *msg, size_t cap)
{
    rmclient_t *c = NULL;
    *code = rmclient_open(&c, o->d.cluster, o->d.rm, o->d.keys, msg, cap);
    if (*code != 0)
        return NULL;
    char *text = NULL;
    int target = -1; /* reads: ask the leader itself, a follower may lag behind a write */
    for (size_t i = 0;
         i < rmclient_count(c) && target < 0 && nargs == 1 && strcmp(kind, PROTO_ADMIN_JOB) == 0;
         i++) {
        if (rmclient_admin(c, (int)i, PROTO_ADMIN_RM_STATUS, NULL, 0, JOB_RM_TIMEOUT_MS / 4, &text,
                           msg, cap) != 0)
            continue;
        json_t *st = json_loads(text, 0, NULL);
        mem_free(text);
        text = NULL;
        const char *role = json_string_value(json_object_get(st, "role"));
        if (role != NULL && strcmp(role, "leader") == 0)
            target = (int)i;
        json_decref(st);
    }
    *code = rmclient_admin(c, target, kind, args, nargs, JOB_RM_TIMEOUT_MS, &text, msg, cap);
    rmclient_destroy(&c);
    if (*code != 0)
        return NULL;
    json_error_t jerr;
    json_t *doc = json_loads(text, 0, &jerr);
    mem_free(text);
    if (doc == NULL) {
        *code = err_fmt(msg, cap, ERR_PARSE, "bad reply from the RM: %s", jerr.text);
        return NULL;
    }
    return doc;
}

static void job__kv(const char *k, json_t *v)
{
    if (v == NULL || json_is_null(v) || (json_is_string(v) && json_string_value(v)[0] == '\0'))
        return;
    size_t kl = strlen(k);
    if (json_is_string(v)) {
        printf("  %-22s %s\n", k, json_string_value(v));
    } else if (json_is_integer(v) && kl > 3 && strcmp(k + kl - 3, "_ms") == 0 &&
               strcmp(k, "lease_ms") != 0 && json_integer_value(v) > 0) {
        char when[CLOCK_RFC3339_SIZE]; /* a wall-clock time: readable */
        printf("  %-22.*s %s\n", (int)(kl - 3), k,
               clock_format_rfc3339((int64_t)json_integer_value(v), when));
    } else if (json_is_real(v)) {
        printf("  %-22s %.3f\n", k, json_real_value(v));
    } else {
        char *t = json_dumps(v, JSON_ENCODE_ANY | CLI_JSON_REALS);
        printf("  %-22s %s\n", k, t != NULL ? t : "?");
        free(t);
    }
}

/* Keys job__rm_summary prints, left out of the plain listing. */
static bool job__summarised(const char *k)
{
    static const char *const keys[] = {"job_id", "tokens", "wanted",   "minimum",
                                       "spare",  "eta_s",  "eta_p95_s"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(k, keys[i]) == 0)
            return true;
    return false;
}

/* The RM's view of the job's tokens and ETA, in words:
 *   tokens  5 (minimum 3, spare 2; wants 6)
 *   eta     4m10s, p95 5m2s, deadline 10m (from submission) */
static void job__rm_summary(json_t *rm)
{
    char line[200];
    int n = snprintf(line, sizeof line, "%lld", (long long)jobdir_num(rm, "tokens", 0));
    json_t *min = json_object_get(rm, "minimum"), *spare = json_object_get(rm, "spare");
    if (json_is_number(min) || json_is_number(spare))
        n += snprintf(line + n, sizeof line - (size_t)n, " (minimum %lld, spare %lld",
                      (long long)jobdir_num(rm, "minimum", 0),
                      (long long)jobdir_num(rm, "spare", 0));
    else
        n += snprintf(line + n, sizeof line - (size_t)n, " (");
    snprintf(line + n, sizeof line - (size_t)n, "%swants %lld)",
             json_is_number(min) || json_is_number(spare) ? "; " : "",
             (long long)jobdir_num(rm, "wanted", 0));
    printf("  %-22s %s\n", "tokens", line);
    if (json_is_true(json_object_get(rm, "best_effort")))
        printf("  %-22s %s\n", "admission", "none (best effort)");
    /* the RM's deadline_ms is a wall-clock time; jobdir_eta_text reads seconds from submission */
    json_t *doc = json_object();
    json_object_set(doc, "eta_s", json_object_get(rm, "eta_s"));
    json_object_set(doc, "eta_p95_s", json_object_get(rm, "eta_p95_s"));
    double dl = jobdir_num(rm, "deadline_ms", 0), sub = jobdir_num(rm, "submitted_ms", 0);
    if (dl > 0 && dl > sub)
        json_object_set_new(doc, "deadline_s", json_real((dl - sub) / 1000.0));
    char eta[160];
    if (jobdir_eta_text(doc, eta, sizeof eta)[0] != '\0')
        printf("  %-22s %s (from submission)\n", "eta", eta + 4);
    else
        printf("  %-22s %s\n", "eta", "unknown");
    json_decref(doc);
}

/* The ETA's band and its error at half the tasks done (state.json, jm/eta.h):
 *   eta band       p95 = rest x 1.13 (own spread 1.10 x learned 1.03)
 *   eta at half    p50 14.2s (off 3.1%), p95 16.0s (ended by it: yes) */
static void job__eta_error(const json_t *st)
{
    double spread = jobdir_num(st, "eta_spread", 0), own = jobdir_num(st, "eta_own_factor", 0);
    const char *from = json_string_value(json_object_get(st, "eta_p95_from"));
    if (from != NULL && strcmp(from, "spread") == 0)
        printf("  %-22s p95 = rest x %.2f (own spread %.2f x learned %.2f)\n", "eta band",
               spread * (own > 0 ? own : 1) > 1 ? spread * (own > 0 ? own : 1) : 1, spread,
               own > 0 ? own : 1);
    else if (from != NULL)
        printf("  %-22s p95 = the simulated runs' q95 (no spread of its own)\n", "eta band");
    double half = jobdir_num(st, "eta_half_s", -1), half95 = jobdir_num(st, "eta_half_p95_s", -1);
    if (half <= 0)
        return;
    char line[200];
    int n = snprintf(line, sizeof line, "p50 %.1fs", half);
    json_t *err = json_object_get(st, "eta_half_error");
    if (json_is_number(err))
        n += snprintf(line + n, sizeof line - (size_t)n, " (off %.1f%%)",
                      100.0 * json_number_value(err));
    if (half95 > 0) {
        json_t *cov = json_object_get(st, "eta_half_p95_covered");
        snprintf(line + n, sizeof line - (size_t)n, ", p95 %.1fs%s", half95,
                 json_is_true(cov)    ? " (ended by it: yes)"
                 : json_is_false(cov) ? " (ended by it: no)"
                                      : "");
    }
    printf("  %-22s %s\n", "eta at half done", line);
}

/* For a job that failed because a task did ('task "b" failed 3 times; ...'): the command that
 * prints that task's stderr from its node (`paddock logs`, docs/pn.md). */
static void job__logs_hint(const char *id, const char *reason)
{
    static const char lead[] = "task \"";
    if (reason == NULL || strncmp(reason, lead, sizeof lead - 1) != 0)
        return;
    const char *t = reason + sizeof lead - 1, *q = strchr(t, '"');
    if (q == NULL || q == t || q - t > 255)
        return;
    bool plain = true;
    for (const char *c = t; c < q; c++)
        plain &= (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                 *c == '-' || *c == '_' || *c == '.';
    if (!plain)
        return; /* an id the shell would need quoting for: the report page lists it */
    printf("  %-22s paddock logs %s %.*s --stderr\n", "output", id, (int)(q - t), t);
}

static int job_show_main(int argc, char **argv)
{
    struct job_opts o;
    int rc = job__parse(argc, argv, &o, 1, "show ID");
    if (rc != 0)
        return rc;
    const char *id = o.args[0];
    char msg[512], root[JOBDIR_PATH], dir[JOBDIR_PATH + 256] = "";
    json_t *st = NULL;
    long pid = 0;
    bool have_dir = jobdir_root(&o.d, false, root, sizeof root, msg, sizeof msg) == 0;
    if (have_dir) {
        snprintf(dir, sizeof dir, "%s/%s", root, id);
        st = jobdir_load(dir, "state.json");
        pid = jobdir_jm_pid(dir, st);
    }
    int code = 0;
    char rmmsg[512] = "";
    const char *args[1] = {id};
    json_t *rm = job__admin(&o, PROTO_ADMIN_JOB, args, 1, &code, rmmsg, sizeof rmmsg);
    struct stat dst;
    if (st == NULL && rm == NULL && dir[0] != '\0' && stat(dir, &dst) == 0 &&
        S_ISDIR(dst.st_mode) && (pid <= 0 || jobdir_jm_alive(pid))) {
        /* just submitted: the directory is made before its JM writes state.json and before the
           RM's record is read back; say so rather than "no such job" */
        if (o.json) {
            json_t *doc = json_pack("{s:s, s:s, s:s, s:s}", "job_id", id, "job_dir", dir, "state",
                                    "starting", "rm_error", rmmsg);
            char *t = doc != NULL
                          ? json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER | CLI_JSON_REALS)
                          : NULL;
            printf("%s\n", t != NULL ? t : "{}");
            free(t);
            json_decref(doc);
        } else
            printf("job %s\n  %-22s %s\n  %-22s starting (no state.json yet; the RM says: %s)\n",
                   id, "job dir", dir, "state", rmmsg);
        return 0;
    }
    if (st == NULL && rm == NULL) {
        fprintf(stderr, "paddock job show: %s: no job directory%s%s and the RM says: %s\n", id,
                dir[0] != '\0' ? " at " : "", dir, rmmsg);
        return 1;
    }
    bool alive = jobdir_jm_alive(pid);
    const char *state = json_string_value(json_object_get(st, "state"));
    if (o.json) {
        json_t *doc = json_object();
        json_object_set_new(doc, "job_id", json_string(id));
        json_object_set_new(doc, "job_dir", st != NULL ? json_string(dir) : json_null());
        json_object_set_new(doc, "state",
                            state != NULL ? json_string(state)
                                          : json_incref(json_object_get(rm, "state")));
        json_object_set_new(doc, "jm_pid", pid > 0 ? json_integer(pid) : json_null());
        json_object_set_new(doc, "jm_running", json_boolean(alive));
        json_object_set_new(doc, "jm", st != NULL ? json_incref(st) : json_null());
        /* what the nodes did to its work: process starts and preemptions (issue 22) */
        static const char *const att[] = {"attempts_started", "attempts_preempted"};
        for (size_t i = 0; i < 2; i++) {
            json_t *v = json_object_get(st, att[i]);
            json_object_set_new(doc, att[i], json_is_integer(v) ? json_incref(v) : json_null());
        }
        json_object_set_new(doc, "rm", rm != NULL ? json_incref(rm) : json_null());
        /* where its JM's /metrics is, as the JM advertised it to the RM (docs/metrics.md) */
        json_t *murl = json_object_get(rm, "metrics");
        json_object_set_new(doc, "metrics", json_is_string(murl) ? json_incref(murl) : json_null());
        if (rm == NULL)
            json_object_set_new(doc, "rm_error", json_string(rmmsg));
        char *t = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER | CLI_JSON_REALS);
        printf("%s\n", t != NULL ? t : "{}");
        free(t);
        json_decref(doc);
    } else {
        printf("job %s\n", id);
        if (st != NULL) {
            char line[512];
            printf("  %-22s %s\n", "job dir", dir);
            printf("  %-22s %s\n", "progress", jobdir_progress_line(st, line, sizeof line));
            printf("  %-22s %ld (%s)\n", "jm pid", pid, alive ? "running" : "not running");
            if (json_is_integer(json_object_get(st, "attempts_started")))
                printf("  %-22s %lld started for %lld tasks, %lld preempted\n", "attempts",
                       (long long)jobdir_num(st, "attempts_started", 0),
                       (long long)jobdir_num(st, "tasks_total", 0),
                       (long long)jobdir_num(st, "attempts_preempted", 0));
            static const char *const keys[] = {
                "name",       "state",        "reason",      "deadline_s",
                "makespan_s", "deadline_met", "tasks_ready", "opportunistic_allowance",
                "unplaceable"};
            char eta[160];
            if (jobdir_eta_text(st, eta, sizeof eta)[0] != '\0')
                printf("  %-22s %s (from submission)\n", "eta", eta + 4);
            job__eta_error(st);
            for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
                job__kv(keys[i], json_object_get(st, keys[i]));
                if (strcmp(keys[i], "reason") == 0)
                    job__logs_hint(id, json_string_value(json_object_get(st, "reason")));
            }
            if (!alive && !jobdir_state_final(state))
                printf("  warning: its paddock-jm is gone but the job never ended (see "
                       "%s/jm.log)\n",
                       dir);
        } else {
            printf("  no job directory here (%s)\n", dir[0] != '\0' ? dir : msg);
        }
        if (rm != NULL) {
            printf("resource monitor:\n");
            job__rm_summary(rm);
            const char *k;
            json_t *v;
            json_object_foreach(rm, k, v)
            {
                if (!job__summarised(k))
                    job__kv(k, v);
            }
        } else {
            printf("resource monitor: %s\n", rmmsg);
        }
    }
    json_decref(st);
    json_decref(rm);
    return 0;
}

static int job_write(const struct job_opts *o, const char *kind, const char *const *args,
                     size_t nargs, const char *done)
{
    int code = 0;
    char msg[512];
    json_t *doc = job__admin(o, kind, args, nargs, &code, msg, sizeof msg);
    if (doc == NULL) {
        fprintf(stderr, "paddock job: %s: %s\n", args[0], msg);
        return 1;
    }
    if (o->json) {
        char *t = json_dumps(doc, JSON_INDENT(2) | CLI_JSON_REALS);
        printf("%s\n", t != NULL ? t : "{}");
        free(t);
    } else {
        printf("%s %s (RM state: %s)\n", args[0], done,
               json_string_value(json_object_get(doc, "state")) != NULL
                   ? json_string_value(json_object_get(doc, "state"))
                   : "?");
    }
    json_decref(doc);
    return 0;
}

static int job_cancel_main(int argc, char **argv)
{
    struct job_opts o;
    int rc = job__parse(argc, argv, &o, 1, "cancel ID");
    if (rc != 0)
        return rc;
    return job_write(&o, PROTO_ADMIN_JOB_CANCEL, o.args, 1,
                     "cancelled: its job manager stops it at its next lease renewal");
}

static int job_deadline_main(int argc, char **argv)
{
    struct job_opts o;
    int rc = job__parse(argc, argv, &o, 2, "deadline ID DURATION");
    if (rc != 0)
        return rc;
    int64_t ms = 0;
    char msg[256] = "", num[32];
    if (jobdir_parse_duration(o.args[1], &ms, msg, sizeof msg) != 0 || ms <= 0) {
        fprintf(stderr, "paddock job deadline: '%s': %s\n", o.args[1],
                msg[0] != '\0' ? msg : "must be positive");
        return 2;
    }
    snprintf(num, sizeof num, "%lld", (long long)ms);
    const char *args[2] = {o.args[0], num};
    char done[96], dur[CONFIG_DURATION_SIZE];
    snprintf(done, sizeof done, "deadline set to %s after submission",
             config_format_duration(ms, dur));
    return job_write(&o, PROTO_ADMIN_JOB_DEADLINE, args, 2, done);
}

CLI_COMMAND("job show", "one job: its progress (state.json) and the RM's record", job_show_main,
            job_show_usage)
CLI_COMMAND("job cancel", "cancel a job (through the RM; its JM stops it)", job_cancel_main,
            job_cancel_usage)
CLI_COMMAND("job deadline", "change a job's deadline (DURATION from submission)", job_deadline_main,
            job_deadline_usage)
