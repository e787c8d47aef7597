/* jobdir.c - the user's side of a job directory (see jobdir.h). */
#include "tools/jobdir.h"

#include "common/config.h"
#include "common/err.h"
#include "common/mem.h"
#include "jm/jobreg.h"
#include "jm/spec.h"
#include "rm/arbiter.h"
#include "rm/rmclient.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool jobdir_opts_take(struct jobdir_opts *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    const char **slot = strcmp(a, "--cluster") == 0    ? &o->cluster
                        : strcmp(a, "--rm") == 0       ? &o->rm
                        : strcmp(a, "--keys") == 0     ? &o->keys
                        : strcmp(a, "--jobs-dir") == 0 ? &o->jobs_dir
                                                       : NULL;
    if (slot == NULL || *i + 1 >= argc)
        return false;
    *slot = argv[++*i];
    return true;
}

void jobdir_opts_defaults(struct jobdir_opts *o)
{
    if (o->cluster == NULL && o->rm == NULL) {
        const char *env = getenv("PADDOCK_CLUSTER");
        if (env != NULL && env[0] != '\0')
            o->cluster = env;
    } else if (o->cluster == NULL) {
        unsetenv("PADDOCK_CLUSTER"); /* --rm wins: rmclient_open and the JM must not see it */
    }
}

/* mkdir -p for an absolute or relative path. */
static int jobdir__mkdirs(const char *path)
{
    char buf[JOBDIR_PATH];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p != '\0'; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0700) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

int jobdir_root(const struct jobdir_opts *o, bool create, char *out, size_t cap, char *msg,
                size_t mcap)
{
    char want[JOBDIR_PATH];
    if (o->jobs_dir != NULL) {
        snprintf(want, sizeof want, "%s", o->jobs_dir);
    } else if (o->cluster != NULL) {
        snprintf(want, sizeof want, "%s/jobs", o->cluster);
    } else if (o->rm != NULL) {
        const char *home = getenv("HOME");
        if (home == NULL || home[0] == '\0')
            return err_fmt(msg, mcap, ERR_INVAL, "no HOME: give --jobs-dir DIR");
        snprintf(want, sizeof want, "%s/.paddock/jobs", home);
    } else {
        return err_fmt(msg, mcap, ERR_INVAL,
                       "no cluster: give --cluster DIR (or set PADDOCK_CLUSTER), or --rm "
                       "ENDPOINTS --keys DIR");
    }
    if (create && jobdir__mkdirs(want) != 0)
        return err_fmt(msg, mcap, ERR_IO, "%s: %s", want, strerror(errno));
    char abs[PATH_MAX];
    if (realpath(want, abs) == NULL)
        return err_fmt(msg, mcap, ERR_IO, "%s: %s", want, strerror(errno));
    if (strlen(abs) + 1 > cap)
        return err_fmt(msg, mcap, ERR_TOOBIG, "%s: path too long", abs);
    snprintf(out, cap, "%s", abs);
    return 0;
}

json_t *jobdir_load(const char *dir, const char *file)
{
    char path[JOBDIR_PATH + 256];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    json_t *doc = json_load_file(path, 0, NULL);
    if (doc != NULL && !json_is_object(doc)) {
        json_decref(doc);
        doc = NULL;
    }
    return doc;
}

bool jobdir_jm_alive(long pid)
{
    if (pid <= 0)
        return false;
    char path[64], buf[512] = "";
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')');
    if (paren == NULL || paren[1] != ' ' || paren[2] == 'Z')
        return false;
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    f = fopen(path, "r");
    if (f == NULL)
        return false;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0'; /* argv[0] only: enough to tell paddock-jm from a recycled pid */
    return strstr(buf, "paddock-jm") != NULL;
}

long jobdir_jm_pid(const char *dir, const json_t *state)
{
    char path[JOBDIR_PATH + 256];
    snprintf(path, sizeof path, "%s/jm.pid", dir);
    long pid = 0;
    FILE *f = fopen(path, "r");
    if (f != NULL) {
        if (fscanf(f, "%ld", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    if (pid <= 0 && state != NULL)
        pid = (long)json_integer_value(json_object_get(state, "pid"));
    return pid > 0 ? pid : 0;
}

bool jobdir_state_final(const char *state)
{
    return state != NULL && (strcmp(state, "succeeded") == 0 || strcmp(state, "failed") == 0 ||
                             strcmp(state, "cancelled") == 0);
}

double jobdir_num(const json_t *o, const char *k, double dflt)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

char *jobdir_eta_text(const json_t *o, char *out, size_t cap)
{
    double eta = jobdir_num(o, "eta_s", -1), p95 = jobdir_num(o, "eta_p95_s", -1);
    double deadline = jobdir_num(o, "deadline_s", -1);
    out[0] = '\0';
    if (eta < 0)
        return out;
    char a[JOBDIR_DURATION_SIZE], b[JOBDIR_DURATION_SIZE], c[JOBDIR_DURATION_SIZE];
    size_t n =
        (size_t)snprintf(out, cap, "ETA %s", jobdir_format_duration(eta, false, a, sizeof a));
    if (p95 >= 0 && n < cap)
        n += (size_t)snprintf(out + n, cap - n, ", p95 %s",
                              jobdir_format_duration(p95, false, b, sizeof b));
    if (deadline > 0 && n < cap)
        snprintf(out + n, cap - n, ", deadline %s",
                 jobdir_format_duration(deadline, false, c, sizeof c));
    return out;
}

char *jobdir_progress_line(const json_t *st, char *out, size_t cap)
{
    const char *state = json_string_value(json_object_get(st, "state"));
    long total = (long)jobdir_num(st, "tasks_total", 0);
    long done = (long)jobdir_num(st, "tasks_succeeded", 0);
    long running = (long)jobdir_num(st, "tasks_running", 0);
    long failed = (long)jobdir_num(st, "attempts_failed", 0);
    double elapsed = jobdir_num(st, "elapsed_s", 0);
    double deadline = jobdir_num(st, "deadline_s", -1);
    char when[160], eta[120];
    jobdir_eta_text(st, eta, sizeof eta);
    if (eta[0] != '\0')
        snprintf(when, sizeof when, "%.1fs elapsed  %s", elapsed, eta);
    else if (deadline > 0)
        snprintf(when, sizeof when, "%.1fs of %.0fs deadline (%.0f%%)", elapsed, deadline,
                 100.0 * elapsed / deadline);
    else
        snprintf(when, sizeof when, "%.1fs elapsed", elapsed);
    char extra[48] = "";
    if (failed > 0)
        snprintf(extra, sizeof extra, "  %ld failed attempts", failed);
    snprintf(out, cap, "%-9s %ld/%ld done  %ld running  %s  tokens %ld/%ld%s",
             state != NULL ? state : "starting", done, total, running, when,
             (long)jobdir_num(st, "tokens_granted", 0), (long)jobdir_num(st, "tokens_target", 0),
             extra);
    return out;
}

char *jobdir_format_duration(double seconds, bool round_up, char *out, size_t cap)
{
    if (!isfinite(seconds) || seconds < 0) {
        snprintf(out, cap, "-");
        return out;
    }
    if (seconds < 1.0 && !round_up) {
        snprintf(out, cap, "%.0fms", seconds * 1000.0);
        return out;
    }
    if (seconds < 10.0) {
        /* tenths; rounded up, a deadline printed here still covers the value */
        double t = round_up ? ceil(seconds * 10.0 - 1e-9) : nearbyint(seconds * 10.0);
        if (t < 100.0) {
            if ((long long)t % 10 == 0)
                snprintf(out, cap, "%llds", (long long)t / 10);
            else
                snprintf(out, cap, "%.1fs", t / 10.0);
            return out;
        }
    }
    double w = round_up ? ceil(seconds - 1e-9) : nearbyint(seconds);
    if (w > 9.2e15) {
        snprintf(out, cap, "-");
        return out;
    }
    long long s = (long long)w, h = s / 3600, m = (s % 3600) / 60, r = s % 60;
    size_t n = 0;
    if (h > 0)
        n += (size_t)snprintf(out + n, cap - n, "%lldh", h);
    if (m > 0 && n < cap)
        n += (size_t)snprintf(out + n, cap - n, "%lldm", m);
    if ((r > 0 || s == 0) && n < cap)
        snprintf(out + n, cap - n, "%llds", r);
    return out;
}

int jobdir_parse_duration(const char *text, int64_t *ms, char *msg, size_t cap)
{
    /* split "1h 2m10s" into number+unit parts, each for config_parse_duration */
    char part[64];
    const char *p = text;
    int64_t total = 0;
    while (isspace((unsigned char)*p))
        p++;
    if (*p == '\0')
        return err_fmt(msg, cap, ERR_PARSE, "empty duration");
    while (*p != '\0') {
        const char *start = p;
        while (isdigit((unsigned char)*p) || *p == '.')
            p++;
        while (isalpha((unsigned char)*p))
            p++;
        size_t len = (size_t)(p - start);
        if (len == 0 || len >= sizeof part)
            return err_fmt(msg, cap, ERR_PARSE, "'%s' is not a duration", text);
        memcpy(part, start, len);
        part[len] = '\0';
        int64_t v = 0;
        char why[256];
        if (config_parse_duration(part, &v, why, sizeof why) != 0)
            return err_fmt(msg, cap, ERR_PARSE, "%s", why);
        if (v > INT64_MAX - total)
            return err_fmt(msg, cap, ERR_RANGE, "duration '%s' is too long", text);
        total += v;
        while (isspace((unsigned char)*p))
            p++;
    }
    *ms = total;
    return 0;
}

int jobdir_profile_dir(const struct jobdir_opts *o, const char *jobs_root, char *out, size_t cap)
{
    int n;
    if (o->cluster != NULL && o->rm == NULL && o->jobs_dir == NULL) {
        n = snprintf(out, cap, "%s/profiles", o->cluster); /* paddock-jm's own default */
    } else {
        char parent[JOBDIR_PATH];
        snprintf(parent, sizeof parent, "%s", jobs_root);
        char *slash = strrchr(parent, '/');
        if (slash != NULL && slash != parent)
            *slash = '\0';
        n = snprintf(out, cap, "%s/profiles", parent);
    }
    return n < 0 || (size_t)n >= cap ? ERR_TOOBIG : 0;
}

void jobdir_token_size(const json_t *tokens, const char *vc, double *token_cpu,
                       uint64_t *token_mem_mb)
{
    *token_cpu = ARBITER_TOKEN_CPU_DEFAULT;
    *token_mem_mb = ARBITER_TOKEN_MEM_MB_DEFAULT;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(tokens, "virtual_clusters"), i, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        if (name == NULL || vc == NULL || strcmp(name, vc) != 0)
            continue;
        double c = jobdir_num(v, "token_cpu", 0), m = jobdir_num(v, "token_mem_mb", 0);
        if (c > 0)
            *token_cpu = c;
        if (m >= 1)
            *token_mem_mb = (uint64_t)m;
    }
}

#define JOBDIR_RM_TIMEOUT_MS 3000

void jobdir_cluster_ask(struct rmclient *c, struct jobdir_cluster *k)
{
    static const char *const brief[1] = {PROTO_ADMIN_TOKENS_BRIEF};
    static const char *const nodes[1] = {PROTO_ADMIN_NODES};
    char *text[2] = {NULL, NULL}, msg[256];
    /* an older RM ignores "brief" and answers the whole document */
    rmclient_admin(c, -1, PROTO_ADMIN_TOKENS, brief, 1, JOBDIR_RM_TIMEOUT_MS, &text[0], msg,
                   sizeof msg);
    k->tokens = text[0] != NULL ? json_loads(text[0], 0, NULL) : NULL;
    k->nodes = NULL;
    if (k->tokens != NULL && json_object_get(k->tokens, "largest_node") == NULL) {
        rmclient_admin_many(c, nodes, 1, JOBDIR_RM_TIMEOUT_MS, text + 1);
        k->nodes = text[1] != NULL ? json_loads(text[1], 0, NULL) : NULL;
    }
    mem_free(text[0]);
    mem_free(text[1]);
}

void jobdir_cluster_close(struct jobdir_cluster *k)
{
    json_decref(k->nodes);
    json_decref(k->tokens);
    k->nodes = k->tokens = NULL;
}

void jobdir_cluster_limits(const struct jobdir_cluster *k, struct spec_limits *lim)
{
    const json_t *big = json_object_get(k->tokens, "largest_node");
    double cpu = jobdir_num(big, "cpus", 0), mem = jobdir_num(big, "mem_mb", 0);
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(k->nodes, "nodes"), i, n)
    {
        double c1 = jobdir_num(n, "cpus", 0), m1 = jobdir_num(n, "mem_mb", 0);
        cpu = c1 > cpu ? c1 : cpu;
        mem = m1 > mem ? m1 : mem;
    }
    if (cpu > 0 && mem > 0) {
        lim->max_cpu = cpu;
        lim->max_mem_mb = (uint64_t)mem;
    }
}

int jobdir_shape(const struct jobdir_cluster *k, const struct spec *spec, const char *profile_dir,
                 struct jobdir_shape *out, char *msg, size_t cap)
{
    struct jobdir_shape sh;
    memset(&sh, 0, sizeof sh);
    const json_t *tokens = k != NULL ? k->tokens : NULL;
    jobdir_token_size(tokens, spec->virtual_cluster, &sh.token_cpu, &sh.token_mem_mb);
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(tokens, "virtual_clusters"), i, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        double capacity = jobdir_num(v, "capacity", 0);
        if (name != NULL && strcmp(name, spec->virtual_cluster) == 0 && capacity >= 1 &&
            capacity <= UINT32_MAX)
            sh.capacity = (uint32_t)capacity;
    }
    /* the very computation a JM that registers itself makes (jm/jobreg.h) */
    struct jobreg_shape js;
    int rc =
        jobreg_shape(spec, profile_dir, sh.token_cpu, sh.token_mem_mb, sh.capacity, &js, msg, cap);
    if (rc != 0)
        return rc;
    sh.s = js.s;
    sh.has_profile = js.has_profile;
    sh.list_s = js.list_s;
    sh.alpha_milli = sh.s.has_alpha ? (uint32_t)lround(sh.s.alpha * 1000.0) : 0;
    sh.work_ms = jobreg_ms(sh.s.work);
    sh.work_sd_ms = jobreg_ms(sh.s.work_sd);
    sh.path_ms = jobreg_ms(sh.s.path);
    sh.path_sd_ms = jobreg_ms(sh.s.path_sd);
    *out = sh;
    return 0;
}

int jobdir_write_text(const char *who, const char *path, const char *text)
{
    if (strcmp(path, "-") == 0)
        return fputs(text, stdout) >= 0 && fputc('\n', stdout) != EOF && fflush(stdout) == 0 ? 0
                                                                                             : -1;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    int ok = f != NULL && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (f != NULL && fclose(f) != 0)
        ok = 0;
    if (ok && rename(tmp, path) != 0)
        ok = 0;
    if (!ok) {
        fprintf(stderr, "%s: %s: %s\n", who, path, strerror(errno));
        unlink(tmp);
    }
    return ok ? 0 : -1;
}
