/* e2e.c - helpers for the end-to-end tests (see e2e.h). */
#include "tests/e2e/e2e.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static char e2e_tmp[256], e2e_cluster[300], e2e_bindir[1024], e2e_srcdir[1024];

const char *e2e_bin(void)
{
    if (e2e_bindir[0] == '\0') {
        const char *b = getenv("PADDOCK_BIN_DIR");
        snprintf(e2e_bindir, sizeof e2e_bindir, "%s", b != NULL ? b : "./bin");
    }
    return e2e_bindir;
}

const char *e2e_src(void)
{
    if (e2e_srcdir[0] == '\0') {
        const char *s = getenv("PADDOCK_SOURCE_DIR");
        snprintf(e2e_srcdir, sizeof e2e_srcdir, "%s", s != NULL ? s : ".");
    }
    return e2e_srcdir;
}

const char *e2e_dir(void)
{
    return e2e_cluster;
}

bool e2e_have_jm(void)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/paddock-jm", e2e_bin());
    return access(path, X_OK) == 0;
}

void e2e_skip_without_jm(void)
{
    if (!e2e_have_jm()) {
        fprintf(stderr, "paddock-jm is not built: skipped\n");
        skip();
    }
}

char *e2e_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return NULL;
    size_t cap = 4096, n = 0, got;
    char *buf = malloc(cap);
    while (buf != NULL && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n < 2) {
            char *g = realloc(buf, cap * 2);
            if (g == NULL)
                break;
            buf = g;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf != NULL)
        buf[n] = '\0';
    if (len != NULL)
        *len = n;
    return buf;
}

/* A command's captured output: "" when there is none. */
static char *e2e_slurp(const char *path)
{
    char *t = e2e_read_file(path, NULL);
    return t != NULL ? t : strdup("");
}

void e2e_paddock(struct e2e_run *r, int timeout_s, const char *fmt, ...)
{
    char args[4096], cmd[8192], out[400], err[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(out, sizeof out, "%s/run.out", e2e_tmp);
    snprintf(err, sizeof err, "%s/run.err", e2e_tmp);
    snprintf(cmd, sizeof cmd,
             "PADDOCK_CLUSTER='%s' timeout -k 5 %d '%s/paddock' %s >'%s' 2>'%s' </dev/null",
             e2e_cluster, timeout_s, e2e_bin(), args, out, err);
    int st = system(cmd);
    r->status = st == -1 ? -1 : (WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    r->out = e2e_slurp(out);
    r->err = e2e_slurp(err);
}

void e2e_run_close(struct e2e_run *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

/* A daemon killed by a crash of the test process must not outlive it: kill the cluster's
 * daemons from their pid files with async-signal-safe calls only. */
static void e2e_kill_pidfile(const char *name)
{
    char path[400];
    size_t n = 0;
    for (const char *p = e2e_cluster; *p != '\0' && n < 300; p++)
        path[n++] = *p;
    path[n++] = '/';
    for (const char *p = name; *p != '\0' && n < 390; p++)
        path[n++] = *p;
    path[n] = '\0';
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return;
    char buf[24];
    ssize_t len = read(fd, buf, sizeof buf - 1);
    close(fd);
    long pid = 0;
    for (ssize_t k = 0; k < len && buf[k] >= '0' && buf[k] <= '9'; k++)
        pid = pid * 10 + (buf[k] - '0');
    if (pid > 0)
        kill((pid_t)pid, SIGKILL);
}

static void e2e_on_crash(int sig)
{
    static const char *const names[] = {"rm-1.pid", "rm-2.pid", "rm-3.pid", "pn-1.pid",
                                        "pn-2.pid", "pn-3.pid", "pn-4.pid"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        e2e_kill_pidfile(names[i]);
    signal(sig, SIG_DFL);
    raise(sig);
}

int e2e_cluster_up(const char *args)
{
    snprintf(e2e_tmp, sizeof e2e_tmp, "/tmp/paddock-e2e-XXXXXX");
    if (mkdtemp(e2e_tmp) == NULL)
        return -1;
    snprintf(e2e_cluster, sizeof e2e_cluster, "%s/cluster", e2e_tmp);
    signal(SIGABRT, e2e_on_crash);
    signal(SIGSEGV, e2e_on_crash);
    signal(SIGBUS, e2e_on_crash);
    struct e2e_run r;
    e2e_paddock(&r, 60, "cluster up --dir '%s' %s", e2e_cluster, args);
    if (r.status != 0)
        fprintf(stderr, "cluster up failed (%d): %s%s\n", r.status, r.out, r.err);
    int rc = r.status == 0 ? 0 : -1;
    e2e_run_close(&r);
    return rc;
}

static bool e2e_is_jm(long pid)
{
    char path[64], buf[256] = "";
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, "paddock-jm") != NULL;
}

/* SIGTERM to every job manager still running for this cluster, SIGKILL after 5 s. */
/* SIGTERM to the job managers of the job directories under DIR/SUB; their pids into pids. */
static int e2e_jobs_signal(const char *sub, long *pids, int n, int max)
{
    char jobs[400];
    snprintf(jobs, sizeof jobs, "%s/%s", e2e_cluster, sub);
    DIR *d = opendir(jobs);
    if (d == NULL)
        return n;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < max) {
        if (e->d_name[0] == '.')
            continue;
        char path[700];
        snprintf(path, sizeof path, "%s/%s/jm.pid", jobs, e->d_name);
        FILE *f = fopen(path, "r");
        long pid = 0;
        if (f != NULL) {
            if (fscanf(f, "%ld", &pid) != 1)
                pid = 0;
            fclose(f);
        }
        if (pid > 0 && e2e_is_jm(pid) && kill((pid_t)pid, SIGTERM) == 0)
            pids[n++] = pid;
    }
    closedir(d);
    return n;
}

void e2e_jobs_stop(void)
{
    long pids[256];
    int n = e2e_jobs_signal("jobs", pids, 0, 256);
    n = e2e_jobs_signal("elsewhere/jobs", pids, n, 256); /* test_submit_with_rm_endpoints */
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < 500 && e2e_is_jm(pids[i]); k++) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (e2e_is_jm(pids[i]))
            kill((pid_t)pids[i], SIGKILL);
    }
}

static int e2e_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void e2e_cluster_down(void)
{
    if (e2e_tmp[0] == '\0')
        return;
    e2e_jobs_stop();
    struct e2e_run r;
    e2e_paddock(&r, 30, "cluster down --dir '%s'", e2e_cluster);
    e2e_run_close(&r);
    if (getenv("PADDOCK_E2E_KEEP") == NULL)
        nftw(e2e_tmp, e2e_rm, 16, FTW_DEPTH | FTW_PHYS);
    else
        fprintf(stderr, "e2e: kept %s\n", e2e_tmp);
    e2e_tmp[0] = '\0';
}

json_t *e2e_job_file(const char *job_id, const char *file)
{
    char path[700];
    snprintf(path, sizeof path, "%s/jobs/%s/%s", e2e_cluster, job_id, file);
    return json_load_file(path, 0, NULL);
}

json_t *e2e_job_wait(const char *job_id, int timeout_s)
{
    time_t end = time(NULL) + timeout_s;
    while (time(NULL) <= end) {
        json_t *st = e2e_job_file(job_id, "state.json");
        const char *s = json_string_value(json_object_get(st, "state"));
        if (s != NULL && (strcmp(s, "succeeded") == 0 || strcmp(s, "failed") == 0 ||
                          strcmp(s, "cancelled") == 0))
            return st;
        json_decref(st);
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

void e2e_job_dump(const char *job_id)
{
    char cmd[800];
    snprintf(cmd, sizeof cmd, "tail -n 30 '%s/jobs/%s/jm.log' >&2", e2e_cluster, job_id);
    if (system(cmd) != 0)
        fprintf(stderr, "(no jm.log for %s)\n", job_id);
}

long long e2e_json_int(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? json_integer_value(v) : -1;
}

int64_t e2e_wall_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

void e2e_sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

void e2e_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

void e2e_submit(const char *path, char id[64])
{
    struct e2e_run r;
    e2e_paddock(&r, 30, "submit '%s'", path);
    if (r.status != 0)
        fprintf(stderr, "submit: %s%s\n", r.out, r.err);
    assert_int_equal(r.status, 0);
    size_t n = strcspn(r.out, "\n");
    assert_true(n > 2 && n < 64);
    memcpy(id, r.out, n);
    id[n] = '\0';
    assert_memory_equal(id, "j-", 2);
    e2e_run_close(&r);
}

long long e2e_state_int(const char *job_id, const char *key)
{
    json_t *st = e2e_job_file(job_id, "state.json");
    long long x = e2e_json_int(st, key);
    json_decref(st);
    return x;
}

int e2e_group_up(const char *args)
{
    return e2e_have_jm() ? e2e_cluster_up(args) : 0;
}

int e2e_group_teardown(void **state)
{
    (void)state;
    e2e_cluster_down();
    return 0;
}
