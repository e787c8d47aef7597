/* rmserver_jobs.c - a job survives its job manager (issue 14): the leader starts a dead JM of a
 * job whose directory is on this host again, with --resume.
 *
 * A JM is dead when its pid (from its registration or renewals) no longer runs a paddock-jm, or
 * when its lease lapsed (the job expired; after a whole-cluster restart every unfinished job's
 * lease has). The resumed JM replays its journal, asks the PNs what became of its tasks and goes
 * on under a new epoch (JOB_RESUME), so nothing that succeeded runs again. Restarts are spaced by
 * recurring.launch_retry and bounded by jobs.restart_max: past it the ledger fails the job with
 * the reason. Off by default ([jobs] relaunch): under systemd, paddock-jm@ restarts itself. */
#include "rm/rmserver_internal.h"

#include "common/clock.h"
#include "common/id.h"
#include "common/log.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define JOBS__EVERY_MS 300

bool rmserver_proc_running(long pid, const char *comm)
{
    if (pid <= 0)
        return false;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* "PID (COMM) STATE ...": comm is at most 15 bytes; a zombie (Z, X) is dead already */
    const char *open = strchr(buf, '('), *close = strrchr(buf, ')');
    if (open == NULL || close == NULL || close[1] != ' ' || close[2] == 'Z' || close[2] == 'X')
        return false;
    size_t len = comm != NULL ? strlen(comm) : 0;
    return comm == NULL || ((size_t)(close - open - 1) == len && strncmp(open + 1, comm, len) == 0);
}

/* The slot of job id in the relaunch memory, or the oldest one to reuse. */
static size_t jobs__slot(struct rmserver *s, uint64_t id)
{
    size_t oldest = 0;
    for (size_t i = 0; i < sizeof s->relaunched_job / sizeof s->relaunched_job[0]; i++) {
        if (s->relaunched_job[i] == id)
            return i;
        if (s->relaunched_mono[i] < s->relaunched_mono[oldest])
            oldest = i;
    }
    return oldest;
}

/* Fails an expired job for good, saying why (the ledger refuses it for an active one). */
static void jobs__give_up(struct rmserver *s, const struct ledger_job *j, const char *why)
{
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_JOB_END);
    c.job = j->id;
    c.state = LEDGER_JOB_FAILED;
    c.text = why;
    c.text_len = (uint32_t)strlen(why);
    char k[64];
    snprintf(k, sizeof k, "giveup/%llu/%u", (unsigned long long)j->id, j->restarts);
    c.key = rmserver_key_hash(k);
    rmserver_submit(s, &c, NULL);
}

static void jobs__relaunch(struct rmserver *s, const struct ledger_job *j, int64_t mono)
{
    size_t k = jobs__slot(s, j->id);
    if (s->relaunched_job[k] == j->id && mono - s->relaunched_mono[k] < s->cfg->launch_retry_ms)
        return; /* started again a moment ago: give it time to resume */
    char jm[PATH_MAX], log[LEDGER_JOB_DIR_MAX + 16];
    rmserver_jm_path(jm, sizeof jm);
    snprintf(log, sizeof log, "%s/jm.log", j->job_dir);
    char *argv[] = {jm,
                    (char *)"--job-dir",
                    (char *)j->job_dir,
                    (char *)"--resume",
                    (char *)"--cluster",
                    s->cfg->cluster_dir,
                    NULL};
    char jid[ID_JOB_SIZE];
    snprintf(jid, sizeof jid, ID_JOB_PREFIX "%012llx",
             (unsigned long long)(j->id & 0xffffffffffffull));
    if (access(j->job_dir, F_OK) != 0) {
        log_warn("job %s: its job directory %s is gone: not started again", jid, j->job_dir);
        if (j->state == LEDGER_JOB_EXPIRED)
            jobs__give_up(s, j, "its job manager died and its job directory is gone");
    } else if (rmserver_spawn(argv, NULL, log) != 0) {
        log_warn("job %s: cannot start its job manager again: %m", jid);
    } else {
        log_info("job %s: its job manager (pid %u) is gone: started again in %s (restart %u)", jid,
                 j->jm_pid, j->job_dir, j->restarts + 1);
        s->relaunches++;
    }
    s->relaunched_job[k] = j->id;
    s->relaunched_mono[k] = mono;
}

void rmserver_jobs_tick(struct rmserver *s)
{
    int64_t mono = (int64_t)clock_mono_ms();
    if (!s->ready || !s->cfg->relaunch || mono - s->jobs_last_ms < JOBS__EVERY_MS)
        return;
    s->jobs_last_ms = mono;
    char host[LEDGER_NAME_MAX] = "";
    if (gethostname(host, sizeof host - 1) != 0)
        return;
    ledger_t *l = fsm_ledger(s->fsm);
    int64_t now = clock_wall_ms();
    const char *self = s->cfg->key_name != NULL && s->cfg->key_name[0] != '\0' ? s->cfg->key_name
                                                                               : CURVE_DEFAULT_NAME;
    for (size_t i = 0; i < ledger_job_count(l); i++) {
        const struct ledger_job *j = ledger_job_at(l, i);
        if (j->job_dir[0] == '\0' || strcmp(j->host, host) != 0)
            continue;
        /* issue 27: a JM started here holds the cluster's key, so its tasks would run as [pn]
           run_as: another user's job is theirs to resume (paddock-jm --job-dir DIR --resume) */
        if (j->user[0] != '\0' && strcmp(j->user, self) != 0)
            continue;
        bool dead = false;
        if (j->state == LEDGER_JOB_EXPIRED)
            dead = now - j->finished_ms <= s->cfg->resume_window_ms;
        else if (j->state == LEDGER_JOB_ACTIVE && j->jm_pid != 0)
            dead = !rmserver_proc_running(j->jm_pid, "paddock-jm");
        if (!dead)
            continue;
        if (j->restarts >= (uint32_t)s->cfg->restart_max && j->state == LEDGER_JOB_EXPIRED) {
            /* the resume would be refused: fail it now, with the reason */
            char why[LEDGER_REASON_MAX];
            snprintf(why, sizeof why,
                     "its job manager died and was started again %u times (jobs.restart_max)",
                     j->restarts);
            jobs__give_up(s, j, why);
            continue;
        }
        if (j->restarts < (uint32_t)s->cfg->restart_max)
            jobs__relaunch(s, j, mono);
    }
}
