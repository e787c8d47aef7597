/* rmserver_recur_launch.c - launching the paddock-jm of a recurring job's run: its job
 * directory written, the JM spawned with its log, and the last line of that log read back as
 * the reason when the JM stopped (see rmserver_recur.c for when a run is launched). */
#include "rm/rmserver_recur_internal.h"

#include "common/binpath.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "rm/period.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---- launching a run's job manager ---- */

static int recur__write(const char *path, const char *text, size_t len)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (fd < 0)
        return -1;
    bool ok = write(fd, text, len) == (ssize_t)len && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* paddock-jm beside this binary, else the bare name (PATH). */
void rmserver_jm_path(char *out, size_t cap)
{
    binpath_sibling("paddock-jm", NULL, out, cap);
}

/* Starts argv detached (its own session, reparented to init: a double fork, so the RM keeps no
 * child), output to log. Only async-signal-safe calls after fork. 0 or -1 (errno). */
int rmserver_spawn(char *const *argv, char *const *envp, const char *log)
{
    if (envp == NULL)
        envp = environ;
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || null < 0) {
        if (fd >= 0)
            close(fd);
        if (null >= 0)
            close(null);
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        if (setsid() < 0 || fork() != 0)
            _exit(0);
        dup2(null, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        if (strchr(argv[0], '/') != NULL)
            execve(argv[0], argv, envp);
        else
            execvpe(argv[0], argv, envp);
        _exit(127);
    }
    close(fd);
    close(null);
    if (pid < 0)
        return -1;
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return 0;
}

/* The last non-empty line of a run's jm.log: why its JM stopped. */
void rmserver_recur__log_tail(const char *dir, char *out, size_t cap)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/jm.log", dir);
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    char line[512];
    while (fgets(line, sizeof line, f) != NULL) {
        size_t n = strlen(line);
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (n > 0)
            snprintf(out, cap, "%s", line);
    }
    fclose(f);
}

void rmserver_recur__run_dir(struct rmserver *s, const struct ledger_recurring *r, int64_t period,
                             char *dir, size_t cap, char *run, size_t rcap)
{
    snprintf(run, rcap, "%s-p%lld", r->name, (long long)period);
    snprintf(dir, cap, "%s/%s", s->cfg->jobs_dir, run);
}

/* Writes the run's job directory and starts its JM. 0, or an ERR_* with why. */
int rmserver_recur__launch(struct rmserver *s, const struct ledger_recurring *r, int64_t period,
                           char *why, size_t cap)
{
    char dir[PATH_MAX], run[LEDGER_NAME_MAX + 32], path[PATH_MAX + 32];
    rmserver_recur__run_dir(s, r, period, dir, sizeof dir, run, sizeof run);
    mkdir(s->cfg->jobs_dir, 0750);
    if (mkdir(dir, 0750) != 0 && errno != EEXIST)
        return err_fmt(why, cap, ERR_IO, "cannot create %s: %s", dir, strerror(errno));
    /* the run carries its recurring job's name: its profiles and history go by it */
    json_t *spec = json_loads(r->spec, 0, NULL);
    char *text = NULL;
    if (json_is_object(spec) && json_object_set_new(spec, "name", json_string(r->name)) == 0)
        text = json_dumps(spec, JSON_INDENT(1));
    json_decref(spec);
    snprintf(path, sizeof path, "%s/spec.json", dir);
    int wrc = text != NULL ? recur__write(path, text, strlen(text))
                           : recur__write(path, r->spec, strlen(r->spec));
    free(text);
    if (wrc != 0)
        return err_fmt(why, cap, ERR_IO, "cannot write %s: %s", path, strerror(errno));
    int64_t ps = period_start(period, r->period_ms, r->offset_ms);
    int64_t d = ledger_recurring_deadline(r);
    char runjson[512];
    int n = snprintf(runjson, sizeof runjson,
                     "{\"recurring\": \"%s\", \"period\": %lld, \"period_start_ms\": %lld, "
                     "\"deadline_at_ms\": %lld}\n",
                     r->name, (long long)period, (long long)ps, (long long)(d != 0 ? ps + d : 0));
    snprintf(path, sizeof path, "%s/run.json", dir);
    if (recur__write(path, runjson, (size_t)n) != 0)
        return err_fmt(why, cap, ERR_IO, "cannot write %s: %s", path, strerror(errno));

    char period_s[32], deadline_s[32], jm[PATH_MAX];
    snprintf(period_s, sizeof period_s, "%lld", (long long)period);
    snprintf(deadline_s, sizeof deadline_s, "%lld", (long long)(d != 0 ? ps + d : 0));
    /* the environment for a launcher: ours plus the run's */
    size_t nenv = 0;
    while (environ[nenv] != NULL)
        nenv++;
    char **envp = mem_calloc(nenv + 6, sizeof *envp);
    char e1[PATH_MAX + 32], e2[sizeof run + 32], e3[LEDGER_NAME_MAX + 32], e4[64], e5[64];
    if (envp == NULL)
        return err_fmt(why, cap, ERR_NOMEM, "out of memory");
    memcpy(envp, environ, nenv * sizeof *envp);
    snprintf(e1, sizeof e1, "PADDOCK_JOB_DIR=%s", dir);
    snprintf(e2, sizeof e2, "PADDOCK_RUN=%s", run);
    snprintf(e3, sizeof e3, "PADDOCK_RECURRING=%s", r->name);
    snprintf(e4, sizeof e4, "PADDOCK_PERIOD=%s", period_s);
    snprintf(e5, sizeof e5, "PADDOCK_DEADLINE_AT=%s", deadline_s);
    envp[nenv] = e1;
    envp[nenv + 1] = e2;
    envp[nenv + 2] = e3;
    envp[nenv + 3] = e4;
    envp[nenv + 4] = e5;
    char log[PATH_MAX + 16];
    snprintf(log, sizeof log, "%s/jm.log", dir);
    int rc;
    if (s->cfg->launcher != NULL && s->cfg->launcher[0] != '\0') {
        char *argv[] = {(char *)"/bin/sh", (char *)"-c", s->cfg->launcher, NULL};
        rc = rmserver_spawn(argv, envp, log);
    } else {
        rmserver_jm_path(jm, sizeof jm);
        char *argv[] = {jm,
                        (char *)"--job-dir",
                        dir,
                        (char *)"--cluster",
                        s->cfg->cluster_dir,
                        (char *)"--recurring",
                        (char *)r->name,
                        (char *)"--period",
                        period_s,
                        d != 0 ? (char *)"--deadline-at" : NULL,
                        deadline_s,
                        NULL};
        rc = rmserver_spawn(argv, envp, log);
    }
    mem_free(envp);
    if (rc != 0)
        return err_fmt(why, cap, ERR_IO, "cannot start the job manager: %s", strerror(errno));
    log_info("recurring %s: launched the run of period %lld in %s", r->name, (long long)period,
             dir);
    return 0;
}
