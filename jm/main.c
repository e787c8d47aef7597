/* paddock-jm: the job manager of one job (a thin shell: options, the job directory, jm/jmd.c).
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
 * absolute wall-clock time; the JM registers and works to it relative to its submission. */
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
#include "common/zuv.h"
#include "jm/jmd.h"
#include "jm/spec.h"
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
        "                  [--recurring NAME --period N] [--deadline-at ABS_MS]\n"
        "Runs one job: DIR/spec.json, writes DIR/jm.log, journal, state.json, report.json\n"
        "and the job's profile. Exits 0 when the job succeeded, 1 otherwise.\n"
        "Without --job-id the JM registers the job itself and prints its id. Then:\n"
        "  --recurring NAME --period N  the job is run N of recurring job NAME; when another\n"
        "                               JM registered that run already, exits 0 at once\n"
        "  --deadline-at ABS_MS         the deadline, wall-clock ms since the epoch (instead\n"
        "                               of the spec's deadline_s)\n");
}

/* Splits "a,b,c" in place into at most max parts. */
static size_t split(char *s, const char **out, size_t max)
{
    size_t n = 0;
    for (char *p = strtok(s, ","); p && n < max; p = strtok(NULL, ","))
        out[n++] = p;
    return n;
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

static int register_job(const char *cluster, const char *rm, const char *keys, const char *job_dir,
                        struct reg *g, char *id, size_t idcap, char *msg, size_t cap)
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
        proto_msg_t req, rep;
        proto_msg_init(&req, PROTO_JOB_REGISTER);
        req.job_register.key = key;
        req.job_register.name = spec->name;
        req.job_register.virtual_cluster = spec->virtual_cluster;
        req.job_register.deadline_ms =
            spec->has_deadline ? (uint64_t)(spec->deadline_s * 1000.0 + 0.5) : 0;
        req.job_register.tasks_total = (uint32_t)spec->ntasks;
        g->submit_ms = clock_wall_ms();
        req.job_register.submit_ms = g->submit_ms;
        if (g->deadline_at > 0) {
            int64_t rel = g->deadline_at - g->submit_ms;
            if (rel < 1) {
                log_warn("the run is late: its deadline passed %lld ms before it registered",
                         (long long)(1 - rel));
                rel = 1;
            }
            req.job_register.deadline_ms = (uint64_t)rel;
            g->deadline_s = (double)rel / 1000.0;
        }
        if (g->recurring) {
            req.job_register.recurring = (char *)g->recurring;
            req.job_register.period = g->period;
        }
        const char *inputs[PROTO_MAX_JOB_FILES];
        size_t nin = spec_declared_inputs(spec, PROTO_MAX_ARG, inputs, PROTO_MAX_JOB_FILES);
        req.job_register.inputs = nin > 0 ? (char **)inputs : NULL;
        req.job_register.ninputs = (uint32_t)nin;
        req.job_register.outputs = spec->nwrites > 0 ? spec->writes : NULL;
        req.job_register.noutputs = (uint32_t)spec->nwrites;
        rc = rmclient_call(c, &req, &rep, 1000, 10000, msg, cap);
        if (!rc) {
            int code = rep.type == PROTO_ERROR                ? rep.error.code
                       : rep.type == PROTO_JOB_REGISTER_REPLY ? rep.job_register_reply.code
                                                              : 0;
            if (rep.type == PROTO_JOB_REGISTER_REPLY && rep.job_register_reply.code == 0 &&
                rep.job_register_reply.job_id)
                snprintf(id, idcap, "%s", rep.job_register_reply.job_id);
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

/* With --rm and no --pub: asks each replica (admin "rm_status") where it publishes its view. A
 * wildcard host ("*", "0.0.0.0") is replaced by the host of the replica's API endpoint. An
 * unreachable replica gets no SUB (the others' views cover it; it is logged). */
static void discover_pubs(struct jmd_opts *o, char **pubs)
{
    rmclient_t *c = NULL;
    char msg[512];
    if (rmclient_new(&c, o->rm_api, o->nrm, o->keys_dir, o->key_name, msg, sizeof msg) != 0) {
        log_warn("cannot ask the RM where it publishes its view: %s", msg);
        return;
    }
    for (size_t i = 0; i < o->nrm; i++) {
        char *doc = NULL;
        if (rmclient_admin(c, (int)i, PROTO_ADMIN_RM_STATUS, NULL, 0, 2000, &doc, msg,
                           sizeof msg) != 0) {
            log_warn("replica %s: no view endpoint (%s)", o->rm_api[i], msg);
            continue;
        }
        json_t *j = json_loads(doc, 0, NULL);
        mem_free(doc);
        const char *pub = json_string_value(json_object_get(j, "pub"));
        if (pub && strncmp(pub, "tcp://", 6) == 0) {
            const char *port = strrchr(pub + 6, ':');
            const char *host = pub + 6;
            char buf[512];
            if (port && (strncmp(host, "*:", 2) == 0 || strncmp(host, "0.0.0.0:", 8) == 0)) {
                const char *ahost = o->rm_api[i] + (strncmp(o->rm_api[i], "tcp://", 6) ? 0 : 6);
                const char *aport = strrchr(ahost, ':');
                int hl = aport ? (int)(aport - ahost) : (int)strlen(ahost);
                snprintf(buf, sizeof buf, "tcp://%.*s%s", hl, ahost, port);
                pubs[i] = mem_strdup(buf);
            } else {
                pubs[i] = mem_strdup(pub);
            }
            o->rm_pub[i] = pubs[i];
            log_info("replica %s publishes its view at %s", o->rm_api[i], pubs[i] ? pubs[i] : "?");
        }
        json_decref(j);
    }
    rmclient_destroy(&c);
}

int main(int argc, char **argv)
{
    const char *job_dir = NULL, *job_id = NULL, *cluster = NULL, *rm = NULL, *pub = NULL,
               *keys = NULL, *profile_dir = NULL, *level = NULL, *period = NULL;
    struct reg g;
    memset(&g, 0, sizeof g);
    struct jmd_opts o;
    jmd_opts_default(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
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
    if (!job_id && !g.recurring) {
        char why[4300];
        if (read_run_json(job_dir, &g, why, sizeof why) != 0) {
            fprintf(stderr, "paddock-jm: %s\n", why);
            return 2;
        }
    }
    if (job_id && (g.recurring || g.deadline_at)) {
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

    char msg[1024], idbuf[64];
    int rc = zuv_global_init();
    if (rc) {
        log_error("cannot initialise the socket layer");
        return 1;
    }
    if (!job_id) {
        rc = register_job(cluster, rm, keys, job_dir, &g, idbuf, sizeof idbuf, msg, sizeof msg);
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
    /* The pid file once the job is this JM's (a JM refused its run above leaves the owner's). */
    snprintf(path, sizeof path, "%s/jm.pid", job_dir);
    FILE *pf = fopen(path, "w");
    if (pf) {
        fprintf(pf, "%ld\n", (long)getpid());
        fclose(pf);
    }
    o.job_dir = job_dir;
    o.job_id = job_id;

    struct rmclient_cluster cl;
    memset(&cl, 0, sizeof cl);
    char *rm_copy = NULL, *pub_copy = NULL, *pubs[JMD_MAX_RM] = {NULL};
    char profiles[4096];
    if (cluster) {
        rc = rmclient_cluster_load(cluster, &cl, msg, sizeof msg);
        if (rc) {
            log_error("%s", msg);
            fprintf(stderr, "paddock-jm: %s\n", msg);
            return 1;
        }
        o.nrm = cl.n < JMD_MAX_RM ? cl.n : JMD_MAX_RM;
        for (size_t i = 0; i < o.nrm; i++) {
            o.rm_api[i] = cl.api[i];
            o.rm_pub[i] = cl.pub[i];
        }
        o.keys_dir = cl.keys_dir;
        o.key_name = cl.key_name;
        if (!profile_dir) {
            snprintf(profiles, sizeof profiles, "%s/profiles", cluster);
            mkdir(profiles, 0755);
            profile_dir = profiles;
        }
    } else {
        rm_copy = mem_strdup(rm);
        pub_copy = pub ? mem_strdup(pub) : NULL;
        if (!rm_copy || (pub && !pub_copy))
            return 1;
        o.nrm = split(rm_copy, o.rm_api, JMD_MAX_RM);
        if (pub_copy)
            split(pub_copy, o.rm_pub, JMD_MAX_RM);
        o.keys_dir = keys;
        o.key_name = CURVE_DEFAULT_NAME;
        if (!pub_copy)
            discover_pubs(&o, pubs);
    }
    o.profile_dir = profile_dir;
    rc = jmd_run(&o, msg, sizeof msg);
    if (rc < 0) {
        log_error("%s", msg);
        fprintf(stderr, "paddock-jm: %s\n", msg);
    }
    rmclient_cluster_close(&cl);
    mem_free(rm_copy);
    mem_free(pub_copy);
    for (size_t i = 0; i < JMD_MAX_RM; i++)
        mem_free(pubs[i]);
    return rc == 0 ? 0 : 1;
}
