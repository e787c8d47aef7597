/* cli_submit.c - `paddock submit SPEC.json [--deadline DURATION] [--best-effort] [--name NAME]
 * [--wait] [--json] [--cluster DIR | --rm ENDPOINTS --keys DIR [--pub ENDPOINTS]]
 * [--jobs-dir DIR] [--log-level LEVEL]` (docs/architecture.md, "The command line", and
 * docs/job-directory.md).
 *
 * Validates the spec with the JM's parser (refusals print the reason and exit 1; nothing reaches
 * the cluster), applies --deadline/--name, checks every task fits the largest node the RM knows,
 * computes the job's shape in the virtual cluster's sized tokens (jm/shape.h, from its profile
 * when an earlier run left one), registers the job (JOB_REGISTER, which gives the id, or refuses
 * a deadline the RM cannot admit: exit 3 with the earliest feasible finish; --best-effort runs
 * without admission), creates the job directory, writes spec.json, tells the job to the JM it
 * started first (detached, forked from this image: tools/submit_jm.h) and prints the job id once
 * the JM is up. With --wait it follows state.json: a live progress line
 * with the JM's ETA on a terminal, a plain line every few seconds otherwise, and exits 0 only
 * when the job succeeded; --wait --json ends with one JSON object (progress then goes to
 * stderr). */
#include "common/binpath.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/err.h"
#include "common/mem.h"
#include "jm/jobreg.h"
#include "jm/spec.h"
#include "rm/rmclient.h"
#include "tools/cli.h"
#include "tools/spawn.h"
#include "tools/submit_jm.h"
#include "tools/submit_price.h"
#include "tools/jobdir.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SUBMIT_RM_TIMEOUT_MS 5000
#define SUBMIT_POLL_MS       100
#define SUBMIT_TTY_MS        250  /* progress line refresh on a terminal */
#define SUBMIT_PLAIN_MS      5000 /* plain progress lines when not a terminal */
#define SUBMIT_NAME_MAX      63   /* the RM's limit on job names (bytes) */
#define SUBMIT_BAR           20   /* width of the terminal progress bar */
#define SUBMIT_ID_SIZE       64   /* room for a job id the RM gives */
#define SUBMIT_EXIT_REFUSED  3    /* the RM's admission control refused the deadline */

struct submit_opts {
    struct jobdir_opts d;
    const char *spec, *deadline, *name, *log_level, *pub, *max_price;
    bool wait, json, best_effort;
};

static volatile sig_atomic_t submit_interrupted;

static void submit__on_signal(int sig)
{
    submit_interrupted = sig;
}

static int submit__usage(void)
{
    fprintf(
        cli_usage_out(),
        "usage: paddock submit SPEC.json [--deadline DURATION] [--best-effort] [--name NAME]\n"
        "                      [--wait] [--json]\n"
        "                      [--cluster DIR | --rm ENDPOINTS --keys DIR [--pub ENDPOINTS]]\n"
        "                      [--jobs-dir DIR] [--log-level LEVEL]\n"
        "  --max-price P    the earliest deadline whose price is at most P token-seconds\n"
        "                   (MRM's price-deadline curve, as `paddock quote` prints it)\n"
        "  --deadline D     from submission (90s, 3m10s, 1h); the RM admits it or refuses with\n"
        "                   the earliest feasible finish (exit 3; see `paddock quote`)\n"
        "  --best-effort    run without admission control: the deadline orders the job but is\n"
        "                   not promised\n"
        "  --pub ENDPOINTS  the RM replicas' view PUB endpoints, for the job manager (with --rm)\n"
        "  --jobs-dir DIR   where job directories go (default: CLUSTER/jobs, or "
        "~/.paddock/jobs)\n");
    return 2;
}

static int submit__parse(int argc, char **argv, struct submit_opts *o)
{
    memset(o, 0, sizeof *o);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (strcmp(a, "--wait") == 0)
            o->wait = true;
        else if (strcmp(a, "--json") == 0)
            o->json = true;
        else if (strcmp(a, "--best-effort") == 0)
            o->best_effort = true;
        else if (strcmp(a, "--deadline") == 0 && has)
            o->deadline = argv[++i];
        else if (strcmp(a, "--max-price") == 0 && has)
            o->max_price = argv[++i];
        else if (strcmp(a, "--name") == 0 && has)
            o->name = argv[++i];
        else if (strcmp(a, "--cluster") == 0 && has)
            o->d.cluster = argv[++i];
        else if (strcmp(a, "--rm") == 0 && has)
            o->d.rm = argv[++i];
        else if (strcmp(a, "--keys") == 0 && has)
            o->d.keys = argv[++i];
        else if (strcmp(a, "--pub") == 0 && has)
            o->pub = argv[++i];
        else if (strcmp(a, "--jobs-dir") == 0 && has)
            o->d.jobs_dir = argv[++i];
        else if (strcmp(a, "--log-level") == 0 && has)
            o->log_level = argv[++i];
        else if (a[0] != '-' && o->spec == NULL)
            o->spec = a;
        else
            return submit__usage();
    }
    if (o->spec == NULL)
        return submit__usage();
    jobdir_opts_defaults(&o->d);
    return 0;
}

/* The file's bytes, NUL-terminated (caller frees with free()), at most `max` of them; NULL after
 * printing why. */
static char *submit__read(const char *path, size_t max, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "paddock submit: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t have = 0, alloc = 0, cap = max + 2; /* one byte over max is enough to tell */
    char *buf = NULL;
    for (;;) {
        if (alloc - have < 2) {
            size_t na = alloc == 0 ? 65536 : alloc * 2;
            na = na > cap ? cap : na;
            char *nb = na == alloc ? NULL : realloc(buf, na);
            if (nb == NULL) {
                if (na == alloc)
                    fprintf(stderr, "paddock submit: %s: over the limit of %zu bytes\n", path, max);
                else
                    fprintf(stderr, "paddock submit: %s: out of memory\n", path);
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
            alloc = na;
        }
        size_t r = fread(buf + have, 1, alloc - have - 1, f);
        have += r;
        if (r == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "paddock submit: %s: read error\n", path);
        free(buf);
        return NULL;
    }
    buf[have] = '\0';
    *len = have;
    return buf;
}

/* The spec's text with --deadline and --name applied, validated with `lim`; *spec_out holds
 * the parsed result. Returns the text (caller frees with free()) or NULL after printing why.
 * The file is read and parsed once: without --deadline and --name its bytes are the text. */
static char *submit__prepare(const struct submit_opts *o, const struct spec_limits *lim,
                             struct spec **spec_out)
{
    char msg[1024];
    struct spec *spec = NULL;
    size_t len = 0;
    char *text = submit__read(o->spec, lim->max_bytes, &len);
    if (text == NULL)
        return NULL;
    if (o->deadline != NULL || o->name != NULL) {
        /* JSON errors name the file's own lines and columns */
        json_error_t jerr;
        json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        free(text);
        if (doc == NULL) {
            fprintf(stderr, "paddock submit: %s: not valid JSON (line %d, column %d): %s\n",
                    o->spec, jerr.line, jerr.column, jerr.text);
            return NULL;
        }
        if (o->deadline != NULL) {
            int64_t ms = 0;
            if (jobdir_parse_duration(o->deadline, &ms, msg, sizeof msg) != 0 || ms <= 0) {
                fprintf(stderr, "paddock submit: --deadline '%s': %s\n", o->deadline,
                        ms <= 0 && msg[0] == '\0' ? "must be positive" : msg);
                json_decref(doc);
                return NULL;
            }
            json_object_set_new(doc, "deadline_s", json_real((double)ms / 1000.0));
        }
        if (o->name != NULL)
            json_object_set_new(doc, "name", json_string(o->name));
        text = json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        json_decref(doc);
        if (text == NULL) {
            fprintf(stderr, "paddock submit: out of memory\n");
            return NULL;
        }
        len = strlen(text);
    }
    if (spec_parse(text, len, lim, &spec, msg, sizeof msg) != 0) {
        fprintf(stderr, "paddock submit: %s: %s\n", o->spec, msg);
        free(text);
        return NULL;
    }
    if (strlen(spec->name) > SUBMIT_NAME_MAX) {
        fprintf(stderr, "paddock submit: %s: job name longer than %d bytes (use --name)\n", o->spec,
                SUBMIT_NAME_MAX);
        spec_destroy(&spec);
        free(text);
        return NULL;
    }
    *spec_out = spec;
    return text;
}

/* The RM's admission control refused the job's deadline: one message on stderr (or the JSON
 * object on stdout with --json) naming the earliest feasible finish to resubmit with. */
static void submit__refused(const struct submit_opts *o, const struct spec *spec,
                            const proto_job_register_reply_t *r)
{
    /* the RM's own words when it says more than the code's generic text */
    const char *reason =
        r->reason != NULL && r->reason[0] != '\0' && strcmp(r->reason, err_text(r->code)) != 0
            ? r->reason
            : NULL;
    double eff = (double)r->eff_ms / 1000.0, p50 = (double)r->eff_p50_ms / 1000.0;
    if (o->json) {
        json_t *doc = json_object();
        json_object_set_new(doc, "admitted", json_false());
        json_object_set_new(doc, "eff_s", r->eff_ms > 0 ? json_real(eff) : json_null());
        json_object_set_new(doc, "eff_p50_s", r->eff_p50_ms > 0 ? json_real(p50) : json_null());
        json_object_set_new(doc, "reason",
                            json_string(reason != NULL ? reason : err_text(r->code)));
        char *t = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER | CLI_JSON_REALS);
        printf("%s\n", t != NULL ? t : "{}");
        free(t);
        json_decref(doc);
    }
    char dl[JOBDIR_DURATION_SIZE], e[JOBDIR_DURATION_SIZE], e50[JOBDIR_DURATION_SIZE];
    char within[96] = "";
    if (spec->has_deadline)
        snprintf(within, sizeof within, " within %s",
                 jobdir_format_duration(spec->deadline_s, false, dl, sizeof dl));
    fprintf(stderr, "paddock submit: admission refused: job \"%s\" cannot finish%s (%s)",
            spec->name, within,
            reason != NULL ? reason : "it or an admitted job would miss its deadline");
    if (r->eff_ms > 0) {
        jobdir_format_duration(eff, true, e, sizeof e);
        fprintf(stderr,
                "; earliest feasible finish %s (p50 %s): resubmit with --deadline %s, or "
                "with --best-effort\n",
                e, jobdir_format_duration(p50, false, e50, sizeof e50), e);
    } else {
        fprintf(stderr, "; no deadline is feasible in its virtual cluster now: resubmit with "
                        "--best-effort\n");
    }
}

/* Registers the job with its shape. Returns 0 with job_id set, SUBMIT_EXIT_REFUSED when
 * admission control refused it, 1 on any other failure (printed). */
static int submit__register(rmclient_t *c, const struct submit_opts *o, const struct spec *spec,
                            const struct jobdir_shape *sh, int64_t submit_ms,
                            char job_id[SUBMIT_ID_SIZE])
{
    char key[64], host[128] = "", who[256], msg[512];
    if (rmclient_new_key(key, sizeof key) != 0) {
        fprintf(stderr, "paddock submit: no randomness for an idempotency key\n");
        return 1;
    }
    gethostname(host, sizeof host - 1);
    const char *user = getenv("USER");
    snprintf(who, sizeof who, "%s@%s", user != NULL ? user : "?", host);
    /* one builder for every registration (jm/jobreg.h): a JM that registers itself sends the
       same message, shape included */
    struct jobreg_shape js = {.s = sh->s,
                              .has_profile = sh->has_profile,
                              .token_cpu = sh->token_cpu,
                              .token_mem_mb = sh->token_mem_mb,
                              .capacity = sh->capacity,
                              .list_s = sh->list_s};
    struct jobreg r = {.key = key,
                       .spec = spec,
                       .shape = &js,
                       .submitter = who,
                       .submit_ms = submit_ms,
                       .best_effort = o->best_effort};
    proto_msg_t req, rep;
    jobreg_build(&r, &req);
    memset(&rep, 0, sizeof rep);
    int rc = rmclient_call(c, &req, &rep, 1000, SUBMIT_RM_TIMEOUT_MS * 2, msg, sizeof msg);
    if (rc != 0) {
        fprintf(stderr, "paddock submit: cannot register the job with the RM: %s\n", msg);
        return 1;
    }
    rc = 1;
    if (rep.type == PROTO_ERROR) {
        fprintf(stderr, "paddock submit: the RM refused the job: %s\n",
                rep.error.text != NULL ? rep.error.text : err_text(rep.error.code));
    } else if (rep.type != PROTO_JOB_REGISTER_REPLY) {
        fprintf(stderr, "paddock submit: unexpected reply %s from the RM\n",
                proto_type_name(rep.type) != NULL ? proto_type_name(rep.type) : "?");
    } else if (rep.job_register_reply.code == ERR_ADMISSION) {
        submit__refused(o, spec, &rep.job_register_reply);
        rc = SUBMIT_EXIT_REFUSED;
    } else if (rep.job_register_reply.code != 0 || rep.job_register_reply.job_id == NULL ||
               rep.job_register_reply.job_id[0] == '\0') {
        fprintf(stderr, "paddock submit: the RM refused the job: %s\n",
                rep.job_register_reply.reason != NULL ? rep.job_register_reply.reason
                                                      : err_text(rep.job_register_reply.code));
    } else if (strlen(rep.job_register_reply.job_id) >= SUBMIT_ID_SIZE ||
               strchr(rep.job_register_reply.job_id, '/') != NULL ||
               rep.job_register_reply.job_id[0] == '.') {
        fprintf(stderr, "paddock submit: the RM gave an unusable job id\n");
    } else {
        snprintf(job_id, SUBMIT_ID_SIZE, "%s", rep.job_register_reply.job_id);
        rc = 0;
    }
    proto_msg_close(&rep);
    return rc;
}

/* paddock-jm: PADDOCK_BIN_DIR, then beside this binary, then PATH (returned as a bare name). */
static void submit__jm_path(char *out, size_t cap)
{
    binpath_sibling("paddock-jm", getenv("PADDOCK_BIN_DIR"), out, cap);
}

/* Writes DIR/NAME through a temporary file and a rename, so a reader (the JM) sees all of it or
 * none. Not yet on disk: submit__sync_file makes it durable, overlapped with the JM's start. */
static int submit__write_file(const char *dir, const char *name, const char *text)
{
    char path[JOBDIR_PATH + 256], tmp[JOBDIR_PATH + 300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL)
        return -1;
    bool ok = fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* fsync of DIR/NAME and of DIR: before `paddock submit` returns, the spec is on disk, as it was
 * when the fsync came before the rename; the JM meanwhile starts (its start was the longest
 * part of submit to first task running, and waited on this fsync). */
static int submit__sync_file(const char *dir, const char *name)
{
    char path[JOBDIR_PATH + 256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int ok = 1;
    const char *paths[2] = {path, dir};
    for (int i = 0; i < 2; i++) {
        int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
        ok = ok && fd >= 0 && fsync(fd) == 0;
        if (fd >= 0)
            close(fd);
    }
    return ok ? 0 : -1;
}

static const char *const submit__result_keys[] = {
    "state",      "reason",       "tasks_total", "tasks_succeeded", "attempts_failed", "makespan_s",
    "deadline_s", "deadline_met", "started_ms",  "eta_s",           "eta_p95_s"};

/* The result document of --wait --json: state.json's final values, the report's where missing. */
static json_t *submit__result(const char *job_id, const char *job_dir, json_t *st,
                              const struct spec *spec)
{
    /* The report only where state.json lacks a value: a million-task job's report is hundreds
       of MB, and state.json's final values hold everything but the ETA (null once ended). */
    json_t *rep = NULL;
    int need = 0;
    for (size_t i = 0; i < sizeof submit__result_keys / sizeof submit__result_keys[0]; i++) {
        json_t *v = json_object_get(st, submit__result_keys[i]);
        need |= (v == NULL || json_is_null(v)) && strncmp(submit__result_keys[i], "eta", 3) != 0 &&
                strcmp(submit__result_keys[i], "deadline_s") != 0 &&
                strcmp(submit__result_keys[i], "deadline_met") != 0;
    }
    if (need)
        rep = jobdir_load(job_dir, "report.json");
    json_t *r = json_object();
    json_object_set_new(r, "job_id", json_string(job_id));
    json_object_set_new(r, "name", json_string(spec->name));
    const char *const *keys = submit__result_keys;
    for (size_t i = 0; i < sizeof submit__result_keys / sizeof submit__result_keys[0]; i++) {
        json_t *v = json_object_get(st, keys[i]);
        if (v == NULL || json_is_null(v))
            v = json_object_get(rep, keys[i]);
        json_object_set(r, keys[i], v != NULL ? v : json_null());
    }
    if (!json_is_integer(json_object_get(r, "tasks_total")))
        json_object_set_new(r, "tasks_total", json_integer((json_int_t)spec->ntasks));
    if (!json_is_integer(json_object_get(r, "tasks_succeeded")))
        json_object_set_new(r, "tasks_succeeded", json_integer(0));
    if (json_is_null(json_object_get(r, "deadline_s")) && spec->has_deadline)
        json_object_set_new(r, "deadline_s", json_real(spec->deadline_s));
    if (json_is_null(json_object_get(r, "deadline_met")) &&
        json_is_number(json_object_get(r, "makespan_s")) && spec->has_deadline)
        json_object_set_new(r, "deadline_met",
                            json_boolean(jobdir_num(r, "makespan_s", 0) <= spec->deadline_s));
    json_object_set_new(r, "job_dir", json_string(job_dir));
    char path[JOBDIR_PATH + 256];
    snprintf(path, sizeof path, "%s/report.json", job_dir);
    json_object_set_new(r, "report", access(path, R_OK) == 0 ? json_string(path) : json_null());
    json_decref(rep);
    return r;
}

/* Waits SUBMIT_POLL_MS, or less when the job directory changed (inotify fd `ino`, -1: none). */
static void submit__pause(int ino)
{
    if (ino < 0) {
        usleep(SUBMIT_POLL_MS * 1000);
        return;
    }
    struct pollfd p = {.fd = ino, .events = POLLIN};
    if (poll(&p, 1, SUBMIT_POLL_MS) > 0) {
        char buf[4096];
        while (read(ino, buf, sizeof buf) > 0) /* drained: only the wake-up matters */
            ;
    }
}

/* Follows state.json until the job ends or its JM exits. Returns the exit code. */
static int submit__wait(const struct submit_opts *o, const char *job_id, const char *job_dir,
                        pid_t pid, const struct spec *spec)
{
    FILE *pf = o->json ? stderr : stdout; /* progress; stdout keeps the one JSON document */
    bool tty = isatty(fileno(pf)) != 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = submit__on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    json_t *st = NULL;
    bool jm_gone = false;
    int status = 0;
    uint64_t last_print = 0;
    char line[512];
    json_t *eta = json_null(), *eta95 = json_null(); /* the last known, for --json */
    /* The JM renames a new state.json into place: waking on that, not only on the poll
       interval, sees the end when it lands (a one-task job's --wait was up to 100 ms late). */
    int ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (ino >= 0 && inotify_add_watch(ino, job_dir, IN_MOVED_TO | IN_CLOSE_WRITE) < 0) {
        close(ino);
        ino = -1;
    }
    for (;;) {
        json_t *now = jobdir_load(job_dir, "state.json");
        if (now != NULL) {
            json_decref(st);
            st = now;
        }
        if (json_is_number(json_object_get(st, "eta_s"))) {
            json_decref(eta);
            json_decref(eta95);
            eta = json_incref(json_object_get(st, "eta_s"));
            eta95 = json_object_get(st, "eta_p95_s");
            eta95 = json_is_number(eta95) ? json_incref(eta95) : json_null();
        }
        const char *state = json_string_value(json_object_get(st, "state"));
        bool final = jobdir_state_final(state);
        if (!final && !jm_gone && waitpid(pid, &status, WNOHANG) == pid) {
            jm_gone = true; /* one more read: its last state.json may have just landed */
            continue;
        }
        uint64_t t = clock_mono_ms();
        if (st != NULL && (final || t - last_print >= (tty ? SUBMIT_TTY_MS : SUBMIT_PLAIN_MS))) {
            jobdir_progress_line(st, line, sizeof line);
            if (tty) {
                /* a bar of work done, then the same line as elsewhere */
                double total = jobdir_num(st, "tasks_total", 0);
                double frac = total > 0 ? jobdir_num(st, "tasks_succeeded", 0) / total : 0;
                char bar[SUBMIT_BAR + 1];
                for (int i = 0; i < SUBMIT_BAR; i++)
                    bar[i] = i < (int)(frac * SUBMIT_BAR + 0.5) ? '#' : '.';
                bar[SUBMIT_BAR] = '\0';
                fprintf(pf, "\r\033[K[%s] %s %s", bar, job_id, line);
            } else if (!final)
                fprintf(pf, "%s %s\n", job_id, line);
            fflush(pf);
            last_print = t;
        }
        if (final || jm_gone || submit_interrupted)
            break;
        submit__pause(ino);
    }
    if (ino >= 0)
        close(ino);
    if (tty && st != NULL)
        fputc('\n', pf);
    if (submit_interrupted) {
        fprintf(stderr,
                "paddock submit: stopped waiting; %s keeps running (paddock job show %s, "
                "paddock job cancel %s)\n",
                job_id, job_id, job_id);
        json_decref(st);
        json_decref(eta);
        json_decref(eta95);
        /* die of the signal, so a calling shell sees the interrupt and stops too */
        int sig = (int)submit_interrupted;
        signal(sig, SIG_DFL);
        raise(sig);
        return 128 + sig;
    }
    const char *state = json_string_value(json_object_get(st, "state"));
    if (!jobdir_state_final(state)) {
        /* the JM died without a final word: the job did not succeed */
        char why[JOBDIR_PATH + 384];
        snprintf(why, sizeof why, "paddock-jm exited (%s %d) before the job ended; see %s/jm.log",
                 WIFSIGNALED(status) ? "signal" : "status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), job_dir);
        if (st == NULL)
            st = json_object();
        json_object_set_new(st, "state", json_string("failed"));
        json_object_set_new(st, "reason", json_string(why));
        state = "failed";
    }
    json_t *res = submit__result(job_id, job_dir, st, spec);
    json_decref(st);
    if (!json_is_number(json_object_get(res, "eta_s"))) {
        json_object_set(res, "eta_s", eta);
        json_object_set(res, "eta_p95_s", eta95);
    }
    json_decref(eta);
    json_decref(eta95);
    bool ok = strcmp(state, "succeeded") == 0;
    if (o->json) {
        char *out = json_dumps(res, JSON_INDENT(2) | JSON_PRESERVE_ORDER | CLI_JSON_REALS);
        printf("%s\n", out != NULL ? out : "{}");
        free(out);
    } else {
        double dl = jobdir_num(res, "deadline_s", -1);
        json_t *met = json_object_get(res, "deadline_met");
        char dtext[96] = "";
        if (dl > 0)
            snprintf(dtext, sizeof dtext, ", deadline %.0fs %s", dl,
                     json_is_true(met) ? "met" : (json_is_false(met) ? "missed" : "unknown"));
        printf("job %s %s: %lld/%lld tasks in %.1fs%s\n", job_id, state,
               (long long)jobdir_num(res, "tasks_succeeded", 0),
               (long long)jobdir_num(res, "tasks_total", 0), jobdir_num(res, "makespan_s", 0),
               dtext);
        const char *reason = json_string_value(json_object_get(res, "reason"));
        if (reason != NULL && reason[0] != '\0')
            printf("reason: %s\n", reason);
        const char *rep = json_string_value(json_object_get(res, "report"));
        if (rep != NULL)
            printf("report: %s (render: paddock report %s -o report.html)\n", rep, job_dir);
    }
    json_decref(res);
    return ok ? 0 : 1;
}

static int submit_main(int argc, char **argv)
{
    struct submit_opts o;
    int rc = submit__parse(argc, argv, &o);
    if (rc != 0)
        return rc;
    char msg[1024], root[JOBDIR_PATH], jm[PATH_MAX + 16];
    submit__jm_path(jm, sizeof jm);
    struct submit_jm_opts jo = {.d = &o.d, .pub = o.pub, .log_level = o.log_level};
    struct submit_early early = {.pid = -1, .go = -1};
    /* the JM first, before anything here uses ZeroMQ (tools/submit_jm.h): where the jobs'
     * directory is not known yet, the errors below come in their usual order */
    int root_rc = jobdir_root(&o.d, true, root, sizeof root, msg, sizeof msg);
    if (root_rc == 0)
        submit_jm_early(&early, jm, &jo, root);
    struct spec_limits lim;
    spec_limits_default(&lim);
    struct spec *spec = NULL;
    char *text = submit__prepare(&o, &lim, &spec);
    if (text == NULL) {
        submit_jm_call_off(&early);
        return 1;
    }
    if (root_rc != 0) {
        fprintf(stderr, "paddock submit: %s\n", msg);
        spec_destroy(&spec);
        free(text);
        return 1;
    }
    if (strchr(jm, '/') == NULL && system("command -v paddock-jm >/dev/null 2>&1") != 0) {
        fprintf(stderr, "paddock submit: paddock-jm not found beside paddock nor on PATH\n");
        submit_jm_call_off(&early);
        spec_destroy(&spec);
        free(text);
        return 1;
    }
    rmclient_t *c = NULL;
    if (rmclient_open(&c, o.d.cluster, o.d.rm, o.d.keys, msg, sizeof msg) != 0) {
        fprintf(stderr, "paddock submit: %s\n", msg);
        submit_jm_call_off(&early);
        spec_destroy(&spec);
        free(text);
        return 1;
    }
    struct jobdir_cluster k;
    jobdir_cluster_ask(c, &k);
    jobdir_cluster_limits(&k, &lim);
    /* again, against the cluster's largest node: a check of the parsed tasks, not a new parse */
    if (spec_check_limits(spec, &lim, msg, sizeof msg) != 0) {
        fprintf(stderr, "paddock submit: %s: %s\n", o.spec, msg);
        spec_destroy(&spec);
        free(text);
        text = NULL;
    }
    char job_id[SUBMIT_ID_SIZE], profiles[JOBDIR_PATH + 64];
    struct jobdir_shape sh;
    memset(&sh, 0, sizeof sh);
    rc = text == NULL ? 1 : 0;
    if (rc == 0 && jobdir_profile_dir(&o.d, root, profiles, sizeof profiles) == 0 &&
        jobdir_shape(&k, spec, profiles, &sh, msg, sizeof msg) != 0) {
        /* the RM then admits without a check (proto.h); say so rather than fail the submit */
        fprintf(stderr, "paddock submit: warning: no shape for the arbiter: %s\n", msg);
        memset(&sh, 0, sizeof sh);
    }
    jobdir_cluster_close(&k);
    if (rc == 0 && o.max_price != NULL) { /* issue 25: a deadline chosen by its price */
        char *end = NULL;
        double p = strtod(o.max_price, &end), d = 0, paid = 0;
        if (end == o.max_price || *end != '\0' || !(p > 0) || o.deadline != NULL) {
            fprintf(stderr,
                    "paddock submit: --max-price '%s': a price > 0 in token-seconds, "
                    "without --deadline\n",
                    o.max_price);
            rc = 2;
        } else if (submit_price_deadline(c, spec->virtual_cluster, &sh, p, &d, &paid, msg,
                                         sizeof msg) != 0) {
            fprintf(stderr, "paddock submit: --max-price %s: %s\n", o.max_price, msg);
            rc = SUBMIT_EXIT_REFUSED;
        } else {
            spec->deadline_s = d;
            spec->has_deadline = true;
            fprintf(stderr, "paddock submit: deadline %.1fs, priced %.1f token-seconds\n", d, paid);
        }
    }
    int64_t submit_ms = clock_wall_ms();
    if (rc == 0)
        rc = submit__register(c, &o, spec, &sh, submit_ms, job_id);
    if (rc != 0) {
        submit_jm_call_off(&early);
        rmclient_destroy(&c);
        spec_destroy(&spec);
        free(text);
        return rc;
    }
    int leader = rmclient_leader(c); /* the replica that registered the job: the JM's first */
    rmclient_destroy(&c);
    char job_dir[JOBDIR_PATH + SUBMIT_ID_SIZE + 2];
    snprintf(job_dir, sizeof job_dir, "%s/%s", root, job_id);
    if (mkdir(job_dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "paddock submit: %s: %s\n", job_dir, strerror(errno));
        submit_jm_call_off(&early);
        spec_destroy(&spec);
        free(text);
        return 1;
    }
    if (submit__write_file(job_dir, "spec.json", text) != 0) {
        fprintf(stderr, "paddock submit: cannot write %s/spec.json: %s\n", job_dir,
                strerror(errno));
        submit_jm_call_off(&early);
        spec_destroy(&spec);
        free(text);
        return 1;
    }
    free(text);
    pid_t pid = submit_jm_go(&early, jm, &jo, job_dir, job_id, root, leader);
    if (submit__sync_file(job_dir, "spec.json") != 0)
        fprintf(stderr, "paddock submit: warning: %s/spec.json may not be on disk: %s\n", job_dir,
                strerror(errno));
    int status = 0;
    if (pid < 0 || submit_jm_await_start(pid, job_dir, &status) != 0) {
        fprintf(stderr, "paddock submit: paddock-jm for %s did not start (see %s/jm.log)\n", job_id,
                job_dir);
        spec_destroy(&spec);
        return 1;
    }
    if (!o.wait) {
        if (o.json)
            printf("{\"job_id\": \"%s\", \"job_dir\": \"%s\", \"jm_pid\": %ld}\n", job_id, job_dir,
                   (long)pid);
        else
            printf("%s\n", job_id);
        spec_destroy(&spec);
        return 0;
    }
    if (!o.json)
        printf("submitted %s (%s, %zu tasks%s) -> %s\n", job_id, spec->name, spec->ntasks,
               spec->has_deadline ? ", with a deadline" : "", job_dir);
    fflush(stdout);
    rc = submit__wait(&o, job_id, job_dir, pid, spec);
    spec_destroy(&spec);
    return rc;
}

CLI_COMMAND("submit", "submit a job spec: validate, register, start its job manager", submit_main,
            submit__usage)
