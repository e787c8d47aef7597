#include "pn_client.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void pnc__pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int pnc_start(pnc_daemon_t *d, const char *extra)
{
    memset(d, 0, sizeof *d);
    snprintf(d->dir, sizeof d->dir, "/tmp/paddock-pn-test-XXXXXX");
    if (!mkdtemp(d->dir))
        return -1;
    char path[512];
    snprintf(path, sizeof path, "%s/pn.conf", d->dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f,
            "[node]\nname = test-pn\nrack = r1\n"
            "[pn]\nlisten = tcp://127.0.0.1:0\nwork_dir = %s/work\nlog_level = warn\n"
            "%s\n",
            d->dir, extra ? extra : "");
    fclose(f);
    const char *bin = getenv("PADDOCK_BIN_DIR");
    char exe[512];
    snprintf(exe, sizeof exe, "%s/paddock-pn", bin ? bin : ".");
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        /* if the test is killed (ctest timeout), the daemon goes with it */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execl(exe, "paddock-pn", "--config", path, (char *)NULL);
        _exit(127);
    }
    d->pid = pid;
    snprintf(path, sizeof path, "%s/work/pn.endpoint", d->dir);
    for (int i = 0; i < 5000; i++) {
        FILE *e = fopen(path, "r");
        if (e) {
            int ok = fgets(d->endpoint, sizeof d->endpoint, e) != NULL;
            fclose(e);
            char *nl = strchr(d->endpoint, '\n');
            if (ok && nl) {
                *nl = 0;
                return 0;
            }
        }
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            d->pid = 0;
            break;
        }
        pnc__pause_ms(2);
    }
    fprintf(stderr, "paddock-pn (%s) did not start\n", exe);
    pnc_stop(d); /* kills it if it hangs, removes the directory */
    return -1;
}

int pnc_stop(pnc_daemon_t *d)
{
    int rc = 0;
    if (d->pid > 0) {
        kill(d->pid, SIGTERM);
        int st = 0, gone = 0;
        for (int i = 0; i < 5000 && !gone; i++) {
            if (waitpid(d->pid, &st, WNOHANG) == d->pid)
                gone = 1;
            else
                pnc__pause_ms(2);
        }
        if (!gone) {
            kill(d->pid, SIGKILL);
            waitpid(d->pid, &st, 0);
        }
        if (!gone || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "paddock-pn did not exit cleanly (status 0x%x)\n", st);
            rc = -1;
        }
        d->pid = 0;
    }
    if (d->dir[0]) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", d->dir);
        d->dir[0] = 0;
    }
    return rc;
}

long long pnc_status_field(const pnc_daemon_t *d, const char *key)
{
    char path[512], buf[4096], pat[128];
    snprintf(path, sizeof path, "%s/work/status.json", d->dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    snprintf(pat, sizeof pat, "\"%s\":", key);
    char *p = strstr(buf, pat);
    if (!p)
        return -1;
    p += strlen(pat);
    if (strncmp(p, "true", 4) == 0)
        return 1;
    if (strncmp(p, "false", 5) == 0)
        return 0;
    return atoll(p);
}

static zsock_t *pnc__socks[64];
static int pnc__nsocks;

zsock_t *pnc_track(zsock_t *s)
{
    if (s && pnc__nsocks < 64)
        pnc__socks[pnc__nsocks++] = s;
    return s;
}

void pnc_close_all(void)
{
    while (pnc__nsocks > 0)
        zsock_destroy(&pnc__socks[--pnc__nsocks]);
}

zsock_t *pnc_connect(const pnc_daemon_t *d)
{
    zsock_t *s = zsock_new(ZMQ_DEALER);
    if (!s)
        return NULL;
    zsock_set_linger(s, 0);
    if (zsock_connect(s, "%s", d->endpoint) != 0) {
        zsock_destroy(&s);
        return NULL;
    }
    return pnc_track(s);
}

static int pnc__send(zsock_t *s, const proto_msg_t *m)
{
    proto_buf_t b;
    proto_buf_init(&b);
    char err[256];
    int rc = proto_encode(m, &b, err, sizeof err);
    if (rc == 0)
        rc = zsock_send(s, "b", b.data, b.len);
    else
        fprintf(stderr, "encode: %s\n", err);
    proto_buf_close(&b);
    return rc;
}

int pnc_create(zsock_t *s, const pnc_task_t *t)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_CREATE);
    static uint64_t req;
    m.req_id = ++req;
    proto_task_create_t *c = &m.task_create;
    c->job_id = (char *)t->job;
    c->task_id = (char *)t->task;
    c->attempt = t->attempt;
    c->task_class = t->klass;
    c->weight = t->weight;
    c->priority = t->priority;
    uint32_t argc = 0;
    while (t->argv[argc])
        argc++;
    c->argv = (char **)t->argv;
    c->argc = argc;
    c->cpu = t->cpu;
    c->mem_mb = t->mem_mb;
    c->runtime_ms = t->runtime_ms;
    c->reply_endpoint = (char *)t->reply;
    c->epoch = t->epoch;
    c->batch_statuses = t->batch;
    proto_file_t f = {.path = (char *)t->file};
    if (t->file) {
        c->files = &f;
        c->nfiles = 1;
    }
    return pnc__send(s, &m);
}

int pnc_cancel(zsock_t *s, const char *job, const char *task, uint32_t attempt)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_CANCEL);
    m.task_cancel.job_id = (char *)job;
    m.task_cancel.task_id = (char *)task;
    m.task_cancel.attempt = attempt;
    m.task_cancel.reason = "test";
    return pnc__send(s, &m);
}

int pnc_upgrade(zsock_t *s, const char *job, const char *task, uint32_t attempt)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_UPGRADE);
    m.task_upgrade.job_id = (char *)job;
    m.task_upgrade.task_id = (char *)task;
    m.task_upgrade.attempt = attempt;
    return pnc__send(s, &m);
}

int pnc_downgrade(zsock_t *s, const char *job, const char *task, uint32_t attempt,
                  uint64_t grace_ms)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_UPGRADE);
    m.task_upgrade.job_id = (char *)job;
    m.task_upgrade.task_id = (char *)task;
    m.task_upgrade.attempt = attempt;
    m.task_upgrade.task_class = PROTO_CLASS_OPPORTUNISTIC;
    m.task_upgrade.grace_ms = grace_ms;
    return pnc__send(s, &m);
}

int pnc_send_raw(zsock_t *s, const void *data, size_t len)
{
    return zsock_send(s, "b", data, len);
}

int pnc_recv(zsock_t *s, proto_msg_t *m, int timeout_ms)
{
    zsock_set_rcvtimeo(s, timeout_ms);
    zframe_t *f = zframe_recv(s);
    if (!f)
        return -1;
    int rc = proto_decode(zframe_data(f), zframe_size(f), m, NULL, NULL, 0);
    zframe_destroy(&f);
    return rc ? -1 : 0;
}
