/* jmd_main.c - paddock-jm's command line: the job manager of one job (a thin shell: options,
 * the job directory, jm/daemon/jmd.c). main.c calls it, and so does `paddock submit` in a child
 * it forks without exec (tools/submit_jm.c).
 *
 *   paddock-jm --job-dir DIR --job-id ID (--cluster CLUSTER_DIR | --rm ENDPOINTS --keys KEYS_DIR)
 *              [--profile-dir DIR] [--log-level LEVEL]
 *   paddock-jm --job-dir DIR (--cluster ... | --rm ...) [--recurring NAME --period N]
 *              [--deadline-at ABS_MS]
 *
 * docs/job-directory.md is the contract. Without --job-id the JM registers the job itself
 * (JOB_REGISTER through the blocking client, before its loop starts) and prints the id. A run of
 * a recurring job (the RM leader starts it so) names the recurring job and its period index; the
 * RM registers one job per run and refuses a second with ERR_EXISTS, which this JM takes as
 * "another JM has the run": it logs that and exits 0. --deadline-at is the run's deadline as an
 * absolute wall-clock time; the JM registers and works to it relative to its submission.
 *
 * Resume (docs/jm-daemon.md): with --resume, or whenever DIR/job.id exists (written when the job
 * is first this JM's), the JM takes the job over again: JOB_RESUME gives it a new epoch, the
 * journal is replayed and the nodes asked what they hold. Exit 3: a newer JM holds the job. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "common/zlimit.h"
#include "common/zuv.h"
#include "jm/daemon/jmd.h"
#include "jm/daemon/jmd_endpoints.h"
#include "jm/daemon/jmd_main.h"
#include "jm/jobreg.h"
#include "jm/journal.h"
#include "jm/spec.h"
#include "jm/view_proto.h"
#include "rm/rmclient.h"

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: paddock-jm --job-dir DIR [--job-id ID]\n"
        "                  (--cluster CLUSTER_DIR | --rm ENDPOINTS [--pub ENDPOINTS] --keys DIR)\n"
        "                  [--profile-dir DIR] [--log-level LEVEL] [--max-attempts N]\n"
        "                  [--node-timeout MS] [--control-period S] [--max-tokens N]\n"
        "                  [--opp-factor C]\n"
        "                  [--recurring NAME --period N] [--deadline-at ABS_MS] [--resume]\n"
        "                  [--job-from-fd FD]\n"
        "Runs one job: DIR/spec.json, writes DIR/jm.log, journal, state.json, report.json\n"
        "and the job's profile. Exits 0 when the job succeeded, 1 otherwise.\n"
        "Without --job-id the JM registers the job itself and prints its id. Then:\n"
        "  --recurring NAME --period N  the job is run N of recurring job NAME; when another\n"
        "                               JM registered that run already, exits 0 at once\n"
        "  --deadline-at ABS_MS         the deadline, wall-clock ms since the epoch (instead\n"
        "                               of the spec's deadline_s)\n"
        "  --resume                     take over a registered job (DIR/job.id, or --job-id):\n"
        "                               replay DIR/journal, keep what succeeded; also implied\n"
        "                               when DIR/job.id exists\n"
        "  --job-from-fd FD             the job directory and id come later, as one line\n"
        "                               \"ID<TAB>DIR\" on FD (`paddock submit` starts the JM\n"
        "                               while it registers the job); stdout and stderr then\n"
        "                               go to DIR/jm.log; end of file: exit 0, nothing done\n"
        "Exit codes: 0 succeeded, 1 failed or cancelled, 2 usage, 3 a newer job manager\n"
        "holds the job (fenced: the job directory is left to it).\n");
}

/* What the JM registers a job with when it registers it itself. */
struct reg {
    const char *recurring; /* NULL: an ad-hoc job */
    uint64_t period;
    int64_t deadline_at; /* absolute wall ms, 0: the spec's deadline */
    int64_t submit_ms;   /* out: when it registered */
    double deadline_s;   /* out: the deadline from --deadline-at, s from submit_ms (0: none) */
};

/* Registers the job (no --job-id): the RM gives the id. ERR_EXISTS: another JM registered this
 * run of a recurring job already. */
/* run.json, written into a recurring run's job directory by the RM leader that launched it:
 * the same facts as the flags, for a launcher that cannot pass them (systemctl start
 * paddock-jm@RUN). Read only when no --recurring was given; 0, or -1 with why. */
static int read_run_json(const char *job_dir, struct reg *g, char *why, size_t cap)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/run.json", job_dir);
    if (access(path, F_OK) != 0)
        return 0;
    json_error_t e;
    json_t *doc = json_load_file(path, 0, &e);
    const json_t *name = json_object_get(doc, "recurring");
    const json_t *period = json_object_get(doc, "period");
    const json_t *at = json_object_get(doc, "deadline_at_ms");
    if (!json_is_string(name) || json_string_length(name) == 0 || !json_is_integer(period) ||
        json_integer_value(period) < 0 || (at != NULL && !json_is_integer(at))) {
        snprintf(why, cap, "%s: not a run description (recurring, period, deadline_at_ms)", path);
        json_decref(doc);
        return -1;
    }
    static char keep[256];
    snprintf(keep, sizeof keep, "%s", json_string_value(name));
    g->recurring = keep;
    g->period = (uint64_t)json_integer_value(period);
    g->deadline_at = at != NULL ? json_integer_value(at) : 0;
    json_decref(doc);
    return 0;
}

/* <jobs>/<job id> -> the run's directory, so that `paddock job show ID` finds a recurring
 * run as it finds a submitted job. */
static void link_run_dir(const char *job_dir, const char *job_id)
{
    char parent[4096], link[4200];
    snprintf(parent, sizeof parent, "%s", job_dir);
    size_t n = strlen(parent);
    while (n > 1 && parent[n - 1] == '/')
        parent[--n] = '\0';
    char *slash = strrchr(parent, '/');
    if (slash == NULL)
        return;
    *slash = '\0';
    snprintf(link, sizeof link, "%s/%s", parent, job_id);
    if (symlink(slash + 1, link) != 0 && errno != EEXIST)
        log_warn("cannot link %s to the run's directory: %s", link, strerror(errno));
}

/* The job's shape as `paddock submit` sends it (jm/jobreg.h): the token size and capacity of its
 * virtual cluster from the RM's "tokens" query (the defaults when the RM does not answer), its
 * profile from profile_dir. 0, or an error with the reason in msg. */
static int register_shape(rmclient_t *c, const struct spec *spec, const char *profile_dir,
                          struct jobreg_shape *sh, char *msg, size_t cap)
{
    char *text = NULL, why[512];
    if (rmclient_admin(c, -1, PROTO_ADMIN_TOKENS, NULL, 0, 3000, &text, why, sizeof why) != 0) {
        log_warn("no token size from the RM (%s): the defaults", why);
        text = NULL;
    }
    double token_cpu;
    uint64_t token_mem_mb;
    uint32_t capacity;
    jobreg_cluster(text, spec->virtual_cluster, &token_cpu, &token_mem_mb, &capacity);
    mem_free(text);
    return jobreg_shape(spec, profile_dir, token_cpu, token_mem_mb, capacity, sh, msg, cap);
}

static int register_job(const char *cluster, const char *rm, const char *keys, const char *job_dir,
                        const char *abs_dir, const char *host, const char *profile_dir,
                        struct reg *g, char *id, size_t idcap, uint32_t *epoch, char *msg,
                        size_t cap)
{
    char path[4096], why[1024];
    snprintf(path, sizeof path, "%s/spec.json", job_dir);
    struct spec *spec = NULL;
    int rc = spec_load(path, NULL, &spec, why, sizeof why);
    if (rc)
        return err_fmt(msg, cap, rc, "spec %s rejected: %s", path, why);
    rmclient_t *c = NULL;
    rc = rmclient_open(&c, cluster, rm, keys, msg, cap);
    if (!rc) {
        char key[64];
        rmclient_new_key(key, sizeof key);
        /* the shape `paddock submit` would send, so admission checks this job as it checks a
           submitted one (issue 25: a JM that registered itself was admitted unchecked) */
        struct jobreg_shape sh;
        int have_shape = register_shape(c, spec, profile_dir, &sh, why, sizeof why) == 0;
        if (!have_shape)
            log_warn("no shape for admission (%s): the RM admits the job unchecked", why);
        struct jobreg r = {.key = key,
                           .spec = spec,
                           .shape = have_shape ? &sh : NULL,
                           .recurring = g->recurring,
                           .period = g->period,
                           .job_dir = abs_dir,
                           .host = host,
                           .jm_pid = (uint32_t)getpid()};
        g->submit_ms = clock_wall_ms();
        r.submit_ms = g->submit_ms;
        if (g->deadline_at > 0) {
            int64_t rel = g->deadline_at - g->submit_ms;
            if (rel < 1) {
                log_warn("the run is late: its deadline passed %lld ms before it registered",
                         (long long)(1 - rel));
                rel = 1;
            }
            r.deadline_ms = (uint64_t)rel;
            g->deadline_s = (double)rel / 1000.0;
        }
        proto_msg_t req, rep;
        jobreg_build(&r, &req);
        rc = rmclient_call(c, &req, &rep, 1000, 10000, msg, cap);
        if (!rc) {
            if (rep.type == PROTO_JOB_REGISTER_REPLY)
                *epoch = rep.job_register_reply.epoch;
            int code = rep.type == PROTO_ERROR                ? rep.error.code
                       : rep.type == PROTO_JOB_REGISTER_REPLY ? rep.job_register_reply.code
                                                              : 0;
            if (rep.type == PROTO_JOB_REGISTER_REPLY && rep.job_register_reply.code == 0 &&
                rep.job_register_reply.job_id)
                snprintf(id, idcap, "%s", rep.job_register_reply.job_id);
            else if (code == ERR_ADMISSION && rep.type == PROTO_JOB_REGISTER_REPLY)
                rc = err_fmt(msg, cap, ERR_ADMISSION,
                             "%s (job \"%s\"); earliest feasible finish %.3f s",
                             rep.job_register_reply.reason ? rep.job_register_reply.reason
                                                           : "admission refused",
                             spec->name, (double)rep.job_register_reply.eff_ms / 1000.0);
            else if (code == ERR_EXISTS)
                rc = err_fmt(msg, cap, ERR_EXISTS, "%s",
                             rep.type == PROTO_ERROR && rep.error.text ? rep.error.text
                             : rep.job_register_reply.reason ? rep.job_register_reply.reason
                                                             : "already registered");
            else
                rc = err_fmt(msg, cap, ERR_STATE, "the RM refused the job: %s",
                             rep.type == PROTO_ERROR && rep.error.text ? rep.error.text
                             : rep.job_register_reply.reason ? rep.job_register_reply.reason
                                                             : "no reason");
            proto_msg_close(&rep);
        }
        rmclient_destroy(&c);
    }
    spec_destroy(&spec);
    return rc;
}

/* A small file of the job directory, whole and atomically (tmp, fsync, rename). 0 or -1. */
static int write_small(const char *dir, const char *name, const char *text)
{
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    int ok = fputs(text, f) >= 0;
    ok = fflush(f) == 0 && fsync(fileno(f)) == 0 && ok;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* DIR/job.id: the id of the job this directory holds (written when the job is first a JM's).
 * 1 with the id, 0 when there is none, -1 when it is unreadable. */
static int read_job_id(const char *job_dir, char *id, size_t cap)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/job.id", job_dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT ? 0 : -1;
    int ok = fgets(id, (int)cap, f) != NULL;
    fclose(f);
    if (!ok)
        return -1;
    id[strcspn(id, "\r\n")] = '\0';
    return id[0] ? 1 : -1;
}

/* A job the RM says has ended: did it succeed? state.json says so, or the journal holds a success
 * for every task of the spec (the JM died after the RM took its final renewal). */
static int had_succeeded(const char *job_dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/state.json", job_dir);
    json_t *st = json_load_file(path, 0, NULL);
    const char *s = json_string_value(json_object_get(st, "state"));
    int ok = s && strcmp(s, "succeeded") == 0;
    json_decref(st);
    if (ok)
        return 1;
    snprintf(path, sizeof path, "%s/spec.json", job_dir);
    struct spec *spec = NULL;
    char why[512];
    if (spec_load(path, NULL, &spec, why, sizeof why) != 0)
        return 0;
    snprintf(path, sizeof path, "%s/journal", job_dir);
    FILE *f = fopen(path, "r");
    char *text = NULL;
    size_t len = 0;
    if (f) {
        char buf[65536];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
            char *p = mem_realloc(text, len + n);
            if (!p)
                break;
            text = p;
            memcpy(text + len, buf, n);
            len += n;
        }
        fclose(f);
    }
    struct journal jr;
    size_t done = 0;
    if (journal_parse(text ? text : "", len, &jr, NULL, 0) == 0) {
        unsigned char *seen = mem_calloc(spec->ntasks ? spec->ntasks : 1, 1);
        for (size_t i = 0; seen && i < jr.nrecs; i++) {
            long t = spec_task_index(spec, jr.recs[i].task);
            if (t >= 0 && jr.recs[i].state == PROTO_TASK_SUCCEEDED && !seen[t]) {
                seen[t] = 1;
                done++;
            }
        }
        mem_free(seen);
        journal_close(&jr);
    }
    ok = spec->ntasks > 0 && done == spec->ntasks;
    mem_free(text);
    spec_destroy(&spec);
    return ok;
}

/* JOB_RESUME: the job is this JM's again under a new epoch. 0 with *epoch; else the refusal's
 * code (ERR_STATE, ERR_NOTFOUND, ERR_FULL, or the transport's) with its text in msg. */
static int resume_job(const char *cluster, const char *rm, const char *keys, const char *job_id,
                      const char *abs_dir, const char *host, uint32_t *epoch, char *msg, size_t cap)
{
    rmclient_t *c = NULL;
    int rc = rmclient_open(&c, cluster, rm, keys, msg, cap);
    if (rc)
        return rc;
    char key[64];
    rmclient_new_key(key, sizeof key);
    proto_msg_t req, rep;
    proto_msg_init(&req, PROTO_JOB_RESUME);
    req.job_resume.key = key;
    req.job_resume.job_id = (char *)job_id;
    req.job_resume.job_dir = (char *)abs_dir;
    req.job_resume.host = (char *)host;
    req.job_resume.jm_pid = (uint32_t)getpid();
    /* After a whole-cluster restart the RM may still be electing a leader: wait for it. */
    rc = rmclient_call(c, &req, &rep, 1000, 30000, msg, cap);
    if (!rc) {
        if (rep.type == PROTO_JOB_REGISTER_REPLY && rep.job_register_reply.code == 0) {
            *epoch = rep.job_register_reply.epoch;
        } else {
            int code = rep.type == PROTO_ERROR                ? rep.error.code
                       : rep.type == PROTO_JOB_REGISTER_REPLY ? rep.job_register_reply.code
                                                              : ERR_UNKNOWN_TYPE;
            const char *text =
                rep.type == PROTO_ERROR && rep.error.text ? rep.error.text
                : rep.type == PROTO_JOB_REGISTER_REPLY && rep.job_register_reply.reason
                    ? rep.job_register_reply.reason
                    : err_text(code);
            rc = err_fmt(msg, cap, code, "%s", text);
        }
        proto_msg_close(&rep);
    }
    rmclient_destroy(&c);
    return rc;
}

static struct endpoints g_ep;
static jmd_t *g_early; /* the RM's sockets opened before the job was known (--job-from-fd) */

/* --job-from-fd: reads "ID<TAB>DIR\n" or "ID<TAB>DIR<TAB>LEADER\n" from fd (at most cap - 1 bytes)
 * into buf, splits it, and points stdout and stderr at DIR/jm.log. LEADER, the index of the RM
 * replica that registered the job, sets *leader (else -1). 1 with *id and *dir set (inside buf), 0
 * at end of file (the submit gave up: nothing to run), -1 on a malformed line or an error, said on
 * stderr. The JM's libraries are loaded by now: this start overlaps the submit's registration
 * (a dynamic load of ZeroMQ and its dependencies is about 10 ms of a 1-task job's 50). */
static int job_from_fd(int fd, char *buf, size_t cap, const char **id, const char **dir,
                       int *leader)
{
    *leader = -1;
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        if (memchr(buf, '\n', n) != NULL)
            break;
    }
    close(fd);
    buf[n] = '\0';
    if (n == 0)
        return 0;
    char *tab = strchr(buf, '\t'), *nl = strchr(buf, '\n');
    if (tab == NULL || nl == NULL || nl < tab || tab == buf || nl == tab + 1) {
        fprintf(stderr, "paddock-jm: --job-from-fd: expected \"ID<TAB>DIR\" on one line\n");
        return -1;
    }
    *tab = *nl = '\0';
    char *last = strrchr(tab + 1, '\t');
    if (last != NULL && last > tab + 1 && last[1] != '\0' &&
        strspn(last + 1, "0123456789") == strlen(last + 1) && strlen(last + 1) <= 2) {
        *leader = atoi(last + 1);
        *last = '\0';
    }
    static char idcopy[64];
    if ((size_t)(tab - buf) >= sizeof idcopy) {
        fprintf(stderr, "paddock-jm: --job-from-fd: a job id of at most 63 bytes\n");
        return -1;
    }
    memcpy(idcopy, buf, (size_t)(tab - buf) + 1);
    *id = idcopy;
    *dir = tab + 1;
    char log[4200];
    snprintf(log, sizeof log, "%s/jm.log", *dir);
    int out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (out < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0) {
        fprintf(stderr, "paddock-jm: cannot open %s: %s\n", log, strerror(errno));
        return -1;
    }
    close(out);
    return 1;
}

static int jm_main(int argc, char **argv)
{
    const char *job_dir = NULL, *job_id = NULL, *cluster = NULL, *rm = NULL, *pub = NULL,
               *keys = NULL, *profile_dir = NULL, *level = NULL, *period = NULL;
    struct reg g;
    memset(&g, 0, sizeof g);
    struct jmd_opts o;
    jmd_opts_default(&o);
    int resume = 0, from_fd = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "--resume") == 0) {
            resume = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, "paddock-jm: %s needs a value\n", a);
            usage(stderr);
            return 2;
        }
        i++;
        if (strcmp(a, "--job-dir") == 0)
            job_dir = v;
        else if (strcmp(a, "--job-id") == 0)
            job_id = v;
        else if (strcmp(a, "--cluster") == 0)
            cluster = v;
        else if (strcmp(a, "--rm") == 0)
            rm = v;
        else if (strcmp(a, "--pub") == 0)
            pub = v;
        else if (strcmp(a, "--keys") == 0)
            keys = v;
        else if (strcmp(a, "--profile-dir") == 0)
            profile_dir = v;
        else if (strcmp(a, "--log-level") == 0)
            level = v;
        else if (strcmp(a, "--job-from-fd") == 0)
            from_fd = atoi(v);
        else if (strcmp(a, "--max-attempts") == 0)
            o.max_attempts = atoi(v);
        else if (strcmp(a, "--node-timeout") == 0)
            o.node_timeout_ms = atoll(v);
        else if (strcmp(a, "--control-period") == 0)
            o.control_period_s = atof(v);
        else if (strcmp(a, "--max-tokens") == 0)
            o.max_tokens = atoi(v);
        else if (strcmp(a, "--opp-factor") == 0)
            o.opp_factor = atof(v);
        else if (strcmp(a, "--recurring") == 0)
            g.recurring = v;
        else if (strcmp(a, "--period") == 0)
            period = v;
        else if (strcmp(a, "--deadline-at") == 0) {
            char *end = NULL;
            long long at = strtoll(v, &end, 10);
            if (!end || *end || at <= 0) {
                fprintf(stderr, "paddock-jm: --deadline-at needs wall-clock ms (got %s)\n", v);
                return 2;
            }
            g.deadline_at = at;
        } else {
            fprintf(stderr, "paddock-jm: unknown option %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    zlimit_raise(); /* a link per node the job uses: more than czmq's default 1,024 sockets */
    static char from_line[4200];
    if (from_fd >= 0 && !job_dir && !job_id) {
        /* The RM's sockets now: their handshakes and the view's first snapshot overlap the
           submit's registration. Where that fails, they are opened again once the job is known,
           and the reason is logged then. */
        char why[1024];
        if ((cluster || (rm && pub)) &&
            endpoints_load(&g_ep, &o, cluster, rm, pub, keys, &profile_dir, why, sizeof why) == 0 &&
            zuv_global_init() == 0 && jmd_early(&o, &g_early, why, sizeof why) != 0)
            g_early = NULL;
        int leader = -1;
        int got = job_from_fd(from_fd, from_line, sizeof from_line, &job_id, &job_dir, &leader);
        if (got <= 0)
            return got == 0 ? 0 : 2;
        if (leader >= 0 && (size_t)leader < o.nrm)
            o.rm_leader = leader;
    } else if (from_fd >= 0) {
        fprintf(stderr, "paddock-jm: --job-from-fd replaces --job-dir and --job-id\n");
        return 2;
    }
    if (!job_dir || (!cluster && !rm) || o.max_attempts < 1 || o.max_tokens < 1 ||
        o.node_timeout_ms < 100 || o.opp_factor < 0) {
        usage(stderr);
        return 2;
    }
    if (period) {
        char *end = NULL;
        unsigned long long p = strtoull(period, &end, 10);
        if (!end || *end || period[0] == '-' || period[0] == '\0') {
            fprintf(stderr, "paddock-jm: --period needs a run index (got %s)\n", period);
            return 2;
        }
        g.period = p;
    }
    if ((g.recurring != NULL) != (period != NULL) || (g.recurring && !g.recurring[0])) {
        fprintf(stderr, "paddock-jm: --recurring and --period go together\n");
        return 2;
    }
    /* DIR/job.id: the job was this directory's before (a restart): resume it. */
    char idfile[64] = "";
    int have_id = read_job_id(job_dir, idfile, sizeof idfile);
    if (have_id < 0) {
        fprintf(stderr, "paddock-jm: %s/job.id is unreadable\n", job_dir);
        return 2;
    }
    if (have_id && job_id && strcmp(job_id, idfile) != 0) {
        fprintf(stderr, "paddock-jm: %s holds job %s, not %s\n", job_dir, idfile, job_id);
        return 2;
    }
    if (have_id) {
        resume = 1;
        job_id = idfile;
    }
    if (resume && !job_id) {
        fprintf(stderr, "paddock-jm: --resume: %s has no job.id and no --job-id was given\n",
                job_dir);
        return 2;
    }
    if (resume) {
        g.recurring = NULL; /* the run was registered already: its id is what counts */
        g.deadline_at = 0;
        period = NULL;
    }
    if (!job_id && !g.recurring) {
        char why[4300];
        if (read_run_json(job_dir, &g, why, sizeof why) != 0) {
            fprintf(stderr, "paddock-jm: %s\n", why);
            return 2;
        }
    }
    if (job_id && !resume && (g.recurring || g.deadline_at)) {
        fprintf(stderr, "paddock-jm: --recurring, --period and --deadline-at are for a job the JM "
                        "registers itself (no --job-id)\n");
        return 2;
    }
    log_init("paddock-jm");
    enum log_level lvl;
    if (level) {
        if (log_level_parse(level, &lvl) != 0) {
            fprintf(stderr, "paddock-jm: bad log level %s\n", level);
            return 2;
        }
        log_set_level(lvl);
    }
    /* The log goes to DIR/jm.log (stderr may already be that file when submit started us). */
    char path[4096];
    snprintf(path, sizeof path, "%s/jm.log", job_dir);
    int logfd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (logfd < 0) {
        fprintf(stderr, "paddock-jm: cannot open %s\n", path);
        return 1;
    }
    log_set_fd(logfd);

    char msg[1024], idbuf[64], abs_dir[4096], host[256] = "";
    if (!realpath(job_dir, abs_dir))
        snprintf(abs_dir, sizeof abs_dir, "%s", job_dir);
    gethostname(host, sizeof host - 1);
    int rc = zuv_global_init();
    if (rc) {
        log_error("cannot initialise the socket layer");
        return 1;
    }
    uint32_t epoch = 1; /* a job registered by `paddock submit`: its first incarnation */
    if (resume) {
        rc = resume_job(cluster, rm, keys, job_id, abs_dir, host, &epoch, msg, sizeof msg);
        if (rc == ERR_STATE) {
            /* The job ended (the RM's ledger says so): nothing to take over, nothing to change. */
            int ok = had_succeeded(job_dir);
            log_info("job %s has ended already (%s): nothing to resume", job_id, msg);
            return ok ? 0 : 1;
        }
        if (rc == ERR_FULL) { /* the RM failed the job: restarted too often */
            log_error("job %s cannot be resumed: %s", job_id, msg);
            snprintf(path, sizeof path, "%s/state.json", job_dir);
            json_t *old = json_load_file(path, 0, NULL);
            const json_t *st = json_object_get(old, "started_ms");
            int64_t started = json_is_integer(st) ? json_integer_value(st) : clock_wall_ms();
            json_decref(old);
            jmd_out_failed_state(job_dir, job_id, started, msg);
            return 1;
        }
        if (rc) { /* not found, or the RM unreachable: the files stay as they are */
            log_error("job %s cannot be resumed: %s", job_id, msg);
            fprintf(stderr, "paddock-jm: job %s cannot be resumed: %s\n", job_id, msg);
            return 1;
        }
        /* How often the job was resumed: one more than the last incarnation's state says. */
        snprintf(path, sizeof path, "%s/state.json", job_dir);
        json_t *old = json_load_file(path, 0, NULL);
        const json_t *n = json_object_get(old, "resumes");
        o.resumes = (json_is_integer(n) ? (int)json_integer_value(n) : 0) + 1;
        const json_t *sm = json_object_get(old, "started_ms");
        if (json_is_integer(sm) && json_integer_value(sm) > 0)
            o.started_wall_ms = json_integer_value(sm); /* the report's times stay on one scale */
        json_decref(old);
        o.resume = 1;
        log_info("job %s resumed: epoch %u, resume %d", job_id, epoch, o.resumes);
    } else if (!job_id) {
        /* the profiles `paddock submit` reads: --profile-dir, else the cluster's */
        char reg_prof[4200];
        const char *rp = profile_dir;
        if (!rp && cluster) {
            snprintf(reg_prof, sizeof reg_prof, "%s/profiles", cluster);
            rp = reg_prof;
        }
        rc = register_job(cluster, rm, keys, job_dir, abs_dir, host, rp, &g, idbuf, sizeof idbuf,
                          &epoch, msg, sizeof msg);
        if (rc == ERR_EXISTS && g.recurring) {
            /* A relaunch, or a second leader's launcher: the run is another JM's. Its job
               directory (jm.pid, state.json) is left as that JM keeps it. */
            log_info("run %llu of recurring job \"%s\" is registered already (%s): nothing to do",
                     (unsigned long long)g.period, g.recurring, msg);
            return 0;
        }
        if (rc) {
            jmd_out_failed_state(job_dir, NULL, clock_wall_ms(), msg);
            log_error("%s", msg);
            fprintf(stderr, "paddock-jm: %s\n", msg);
            return 1;
        }
        job_id = idbuf;
        printf("%s\n", job_id);
        fflush(stdout);
        if (g.deadline_s > 0) {
            o.deadline_s = g.deadline_s;
            o.started_wall_ms = g.submit_ms; /* the deadline counts from the registration */
        }
        if (g.recurring) {
            log_info("job %s is run %llu of recurring job \"%s\"", job_id,
                     (unsigned long long)g.period, g.recurring);
            link_run_dir(job_dir, job_id);
        }
    }
    o.epoch = epoch;
    o.abs_dir = abs_dir;
    o.host = host[0] ? host : NULL;
    if (!have_id) { /* the job is this directory's from now on: a restart resumes it */
        char line[80];
        snprintf(line, sizeof line, "%s\n", job_id);
        if (write_small(job_dir, "job.id", line) != 0)
            log_warn("cannot write %s/job.id: %s (a restart could not resume)", job_dir,
                     strerror(errno));
    }
    /* The pid file once the job is this JM's (a JM refused its run above leaves the owner's). */
    snprintf(path, sizeof path, "%s/jm.pid", job_dir);
    FILE *pf = fopen(path, "w");
    if (pf) {
        fprintf(pf, "%ld\n", (long)getpid());
        fclose(pf);
    }
    o.job_dir = job_dir;
    o.job_id = job_id;

    if (!g_ep.loaded &&
        endpoints_load(&g_ep, &o, cluster, rm, pub, keys, &profile_dir, msg, sizeof msg) != 0) {
        log_error("%s", msg);
        fprintf(stderr, "paddock-jm: %s\n", msg);
        return 1;
    }
    o.profile_dir = profile_dir;
    jmd_t *early = g_early;
    g_early = NULL; /* jmd_run_early's from here, whatever the outcome */
    rc = jmd_run_early(early, &o, msg, sizeof msg);
    if (rc < 0) {
        log_error("%s", msg);
        fprintf(stderr, "paddock-jm: %s\n", msg);
    }
    return rc == 0 ? 0 : rc == JMD_EXIT_FENCED ? JMD_EXIT_FENCED : 1;
}

int jmd_main(int argc, char **argv)
{
    mem_keep_top(VIEW_PROTO_HEAP_PAD); /* the view's parts, decoded one after another */
    int rc = jm_main(argc, argv);
    jmd_early_close(&g_early);
    endpoints_close(&g_ep);
    return rc;
}
