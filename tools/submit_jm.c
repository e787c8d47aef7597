/* submit_jm.c - `paddock submit` starting the job's JM (submit_jm.h). */
#include "tools/submit_jm.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "jm/daemon/jmd_main.h"
#include "tools/spawn.h"

#define SUBMIT_JM__START_S   10 /* how long a JM may take to show it runs */
#define SUBMIT_JM__GO_FD     3  /* where an early JM reads its job (paddock-jm --job-from-fd) */
#define SUBMIT_JM__GO_FD_ARG "3"

/* paddock-jm's command line: for job_id in job_dir, or with both NULL, told them later on
 * descriptor SUBMIT_JM__GO_FD (--job-from-fd). */
struct submit_jm {
    char cluster[PATH_MAX], keys[PATH_MAX], profiles[JOBDIR_PATH + 256];
    const char *argv[20];
};

static int submit_jm__argv(struct submit_jm *a, const char *jm, const struct submit_jm_opts *o,
                           const char *job_dir, const char *job_id, const char *jobs_root)
{
    a->cluster[0] = a->keys[0] = a->profiles[0] = '\0';
    int n = 0;
    a->argv[n++] = jm;
    if (job_dir != NULL) {
        a->argv[n++] = "--job-dir";
        a->argv[n++] = job_dir;
        a->argv[n++] = "--job-id";
        a->argv[n++] = job_id;
    } else {
        a->argv[n++] = "--job-from-fd";
        a->argv[n++] = SUBMIT_JM__GO_FD_ARG;
    }
    if (o->d->cluster != NULL && o->d->rm == NULL) {
        if (realpath(o->d->cluster, a->cluster) == NULL)
            return -1;
        a->argv[n++] = "--cluster";
        a->argv[n++] = a->cluster;
    } else {
        a->argv[n++] = "--rm";
        a->argv[n++] = o->d->rm;
        if (o->pub != NULL) {
            a->argv[n++] = "--pub";
            a->argv[n++] = o->pub;
        }
        if (o->d->keys != NULL) {
            if (realpath(o->d->keys, a->keys) == NULL)
                return -1;
            a->argv[n++] = "--keys";
            a->argv[n++] = a->keys;
        }
    }
    if (a->cluster[0] == '\0' || o->d->jobs_dir != NULL) {
        /* outside paddock-jm's default (<cluster>/profiles): the very directory jobdir_shape
         * read the profile from */
        if (jobdir_profile_dir(o->d, jobs_root, a->profiles, sizeof a->profiles) != 0)
            return -1;
        mkdir(a->profiles, 0700);
        a->argv[n++] = "--profile-dir";
        a->argv[n++] = a->profiles;
    }
    if (o->log_level != NULL) {
        a->argv[n++] = "--log-level";
        a->argv[n++] = o->log_level;
    }
    a->argv[n] = NULL;
    return 0;
}

/* Starts the JM before the spec is read and the RM asked anything, forked from this process's
 * image (jmd_main, not an exec of paddock-jm: the exec's load of ZeroMQ and its dependencies
 * cost about 10 ms of CPU, and 20-25 ms of a first task on 2 cores, where it competed with this
 * process's own round trips). It opens its RM sockets while the submit reads the spec and
 * registers the job, and waits on SUBMIT_JM__GO_FD for the job (submit_jm_go). Nothing started
 * when that fails: the JM is then started once the job is registered, as before. */
void submit_jm_early(struct submit_early *e, const char *jm, const struct submit_jm_opts *o,
                     const char *jobs_root)
{
    struct submit_jm a;
    e->pid = -1;
    e->go = -1;
    if (submit_jm__argv(&a, jm, o, NULL, NULL, jobs_root) == 0)
        e->pid = spawn_detached_waiting((char *const *)a.argv, jmd_main, SUBMIT_JM__GO_FD, &e->go);
}

/* Calls the early JM off (it exits at the end of file, having done nothing) and reaps it. */
void submit_jm_call_off(struct submit_early *e)
{
    if (e->pid < 0)
        return;
    close(e->go);
    waitpid(e->pid, NULL, 0);
    e->pid = -1;
    e->go = -1;
}

/* The JM for job_id in job_dir: the early one, told the job, or one started now. Its pid or -1. */
pid_t submit_jm_go(struct submit_early *e, const char *jm, const struct submit_jm_opts *o,
                   const char *job_dir, const char *job_id, const char *jobs_root, int leader)
{
    if (e->pid >= 0) {
        char line[JOBDIR_PATH + 64 + 16], lead[16] = "";
        if (leader >= 0 && strchr(job_dir, '\t') == NULL) /* the JM asks that replica first */
            snprintf(lead, sizeof lead, "\t%d", leader);
        int n = snprintf(line, sizeof line, "%s\t%s%s\n", job_id, job_dir, lead);
        bool sent = n > 0 && (size_t)n < sizeof line &&
                    send(e->go, line, (size_t)n, MSG_NOSIGNAL) == (ssize_t)n;
        if (sent) {
            close(e->go);
            return e->pid;
        }
        submit_jm_call_off(e); /* it died meanwhile: start one the usual way */
    }
    struct submit_jm a;
    if (submit_jm__argv(&a, jm, o, job_dir, job_id, jobs_root) != 0)
        return -1;
    char log[JOBDIR_PATH + 256];
    snprintf(log, sizeof log, "%s/jm.log", job_dir);
    return spawn_detached((char *const *)a.argv, log);
}

/* Waits until the JM shows it runs (jm.pid or state.json) or exits. 0 when it runs. The polls
 * start 1 ms apart and double up to 20 ms: a JM starts in 5-40 ms, and a fixed 20 ms poll added
 * up to 20 ms to every `paddock submit`. */
int submit_jm_await_start(pid_t pid, const char *job_dir, int *status)
{
    char a[JOBDIR_PATH + 256], b[JOBDIR_PATH + 256];
    snprintf(a, sizeof a, "%s/jm.pid", job_dir);
    snprintf(b, sizeof b, "%s/state.json", job_dir);
    int64_t end = (int64_t)clock_mono_ms() + 1000 * SUBMIT_JM__START_S;
    useconds_t pause = 1000;
    while ((int64_t)clock_mono_ms() < end) {
        if (access(a, F_OK) == 0 || access(b, F_OK) == 0)
            return 0;
        if (waitpid(pid, status, WNOHANG) == pid)
            return -1;
        usleep(pause);
        pause = pause < 10 * 1000 ? pause * 2 : 20 * 1000;
    }
    return 0; /* slow to start but alive: --wait keeps watching it */
}
