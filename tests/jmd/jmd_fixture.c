/* jmd_fixture.c - see jmd_fixture.h. */
#include "jmd_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void jmf_pause(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int jmf__rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int jmf__up_once(struct jmf *f, const char *args)
{
    memset(f, 0, sizeof *f);
    f->jm_rc = -1;
    const char *bin = getenv("PADDOCK_BIN_DIR");
    snprintf(f->bin, sizeof f->bin, "%s", bin ? bin : "./bin");
    snprintf(f->dir, sizeof f->dir, "/tmp/paddock-jmd-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->cluster, sizeof f->cluster, "%s/cluster", f->dir);
    snprintf(f->job, sizeof f->job, "%s/job", f->dir);
    snprintf(f->work, sizeof f->work, "%s/work", f->dir);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s/paddock cluster up --dir %s %s >%s/up.log 2>&1", f->bin,
             f->cluster, args, f->dir);
    if (mkdir(f->job, 0755) != 0 || mkdir(f->work, 0777) != 0 || system(cmd) != 0) {
        fprintf(stderr, "cluster up failed:\n");
        snprintf(cmd, sizeof cmd, "tail -n 20 %s/up.log >&2", f->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "(no %s/up.log)\n", f->dir);
        jmf_down(f); /* whatever did start */
        return -1;
    }
    return 0;
}

/* A daemon of a fresh test cluster has been seen to exit at start about once in a few full
 * runs under load, always in the second cluster a test binary starts, for a reason its log
 * gives (printed above by `paddock cluster up`). Until that is understood the fixture says so
 * and tries once more, rather than failing tests that are not about cluster start. */
int jmf_up(struct jmf *f, const char *args)
{
    if (jmf__up_once(f, args) == 0)
        return 0;
    fprintf(stderr, "jmd fixture: cluster up failed (reason above); trying once more\n");
    return jmf__up_once(f, args);
}

void jmf_down(struct jmf *f)
{
    if (!f->dir[0])
        return;
    if (f->jm > 0 && f->jm_rc < 0) {
        kill(f->jm, SIGKILL);
        waitpid(f->jm, NULL, 0);
    }
    f->jm = 0;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s/paddock cluster down --dir %s >/dev/null 2>&1", f->bin,
             f->cluster);
    if (system(cmd) != 0)
        fprintf(stderr, "cluster down failed in %s\n", f->cluster);
    if (!getenv("PADDOCK_KEEP_TMP"))
        nftw(f->dir, jmf__rm, 16, FTW_DEPTH | FTW_PHYS);
    f->dir[0] = '\0';
}

int jmf_new_job(struct jmf *f, const char *name)
{
    snprintf(f->job, sizeof f->job, "%s/%s", f->dir, name);
    return mkdir(f->job, 0755) == 0 ? 0 : -1;
}

int jmf_start_jm(struct jmf *f, json_t *spec, const char *opts)
{
    char path[512];
    snprintf(path, sizeof path, "%s/spec.json", f->job);
    int rc = json_dump_file(spec, path, JSON_INDENT(1));
    json_decref(spec);
    if (rc != 0)
        return -1;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "exec %s/paddock-jm --job-dir %s --cluster %s %s >%s/jm.out 2>&1",
             f->bin, f->job, f->cluster, opts, f->dir);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    f->jm = pid;
    f->jm_rc = -1;
    return 0;
}

int jmf_wait_jm(struct jmf *f, int timeout_s)
{
    for (int i = 0; i < timeout_s * 20; i++) {
        int st;
        pid_t p = waitpid(f->jm, &st, WNOHANG);
        if (p == f->jm) {
            f->jm_rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            return f->jm_rc;
        }
        jmf_pause(50);
    }
    return -1;
}

json_t *jmf_job_file(const struct jmf *f, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", f->job, name);
    return json_load_file(path, 0, NULL);
}

long jmf_daemon_pid(const struct jmf *f, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.pid", f->cluster, name);
    FILE *fp = fopen(path, "r");
    long pid = 0;
    if (fp) {
        if (fscanf(fp, "%ld", &pid) != 1)
            pid = 0;
        fclose(fp);
    }
    return pid;
}

bool jmf_mark(const struct jmf *f, const char *name, char *buf, size_t cap)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", f->work, name);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return false;
    buf[0] = '\0';
    if (!fgets(buf, (int)cap, fp))
        buf[0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    fclose(fp);
    return true;
}

void jmf_dump(const struct jmf *f)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "tail -n 40 %s/jm.log >&2; cat %s/jm.out >&2", f->job, f->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "(no jm.log)\n");
}
