/* jobdir.c - the user's side of a job directory (see jobdir.h). */
#include "tools/jobdir.h"

#include "common/err.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

char *jobdir_progress_line(const json_t *st, char *out, size_t cap)
{
    const char *state = json_string_value(json_object_get(st, "state"));
    long total = (long)jobdir_num(st, "tasks_total", 0);
    long done = (long)jobdir_num(st, "tasks_succeeded", 0);
    long running = (long)jobdir_num(st, "tasks_running", 0);
    long failed = (long)jobdir_num(st, "attempts_failed", 0);
    double elapsed = jobdir_num(st, "elapsed_s", 0);
    double deadline = jobdir_num(st, "deadline_s", -1);
    char when[96];
    if (deadline > 0)
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
