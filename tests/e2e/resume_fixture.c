/* resume_fixture.c - see resume_fixture.h. */
#include "tests/e2e/e2e.h"

#include "common/curve.h"
#include "common/err.h"
#include "proto/proto.h"

#include <czmq.h>
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include "tests/e2e/resume_fixture.h"

pid_t g_extra[8];
size_t g_nextra;

static long read_pid(const char *path)
{
    FILE *f = fopen(path, "r");
    long pid = 0;
    if (f == NULL)
        return 0;
    if (fscanf(f, "%ld", &pid) != 1)
        pid = 0;
    fclose(f);
    return pid;
}

bool proc_is(long pid, const char *name)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *open = strchr(buf, '('), *close = strrchr(buf, ')');
    if (open == NULL || close == NULL || close[1] == '\0' || close[2] == 'Z' || close[2] == 'X')
        return false;
    return strncmp(open + 1, name, strlen(name)) == 0;
}

/* Pids of live processes whose environment holds `var` (e.g. "PADDOCK_JOB_ID=j-..."), or whose
 * value starts with it when prefix; into pids (at most cap); returns how many. */
static size_t procs_with_env(const char *var, bool prefix, long *pids, size_t cap)
{
    DIR *d = opendir("/proc");
    if (d == NULL)
        return 0;
    size_t n = 0, vlen = strlen(var);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end != '\0' || pid <= 1 || pid == (long)getpid())
            continue;
        char path[64];
        snprintf(path, sizeof path, "/proc/%ld/environ", pid);
        size_t len = 0;
        char *env = e2e_read_file(path, &len);
        if (env == NULL)
            continue;
        bool hit = false;
        for (size_t k = 0; k < len && !hit; k += strlen(env + k) + 1)
            hit = prefix ? strncmp(env + k, var, vlen) == 0 : strcmp(env + k, var) == 0;
        free(env);
        char stat[64];
        snprintf(stat, sizeof stat, "/proc/%ld/stat", pid);
        char *st = e2e_read_file(stat, NULL);
        char *cl = st != NULL ? strrchr(st, ')') : NULL;
        if (hit && cl != NULL && cl[1] != '\0' && cl[2] != 'Z' && cl[2] != 'X') {
            if (n < cap)
                pids[n] = pid;
            n++;
        }
        free(st);
    }
    closedir(d);
    return n;
}

size_t job_procs(const char *job_id, long *pids, size_t cap)
{
    char var[128];
    snprintf(var, sizeof var, "PADDOCK_JOB_ID=%s", job_id);
    return procs_with_env(var, false, pids, cap);
}

/* SIGKILL to every task process of this cluster still alive (after a failure, or tasks a
 * killed PN left behind), by pid. */
static void kill_cluster_tasks(void)
{
    if (e2e_dir()[0] == '\0')
        return;
    char var[1200];
    snprintf(var, sizeof var, "PADDOCK_TASK_DIR=%s/", e2e_dir());
    long pids[256];
    size_t n = procs_with_env(var, true, pids, 256);
    for (size_t i = 0; i < n && i < 256; i++)
        kill((pid_t)pids[i], SIGKILL);
}

long long pn_counter(const char *name)
{
    long long sum = 0;
    for (int i = 1; i <= NPN; i++) {
        char path[1300];
        snprintf(path, sizeof path, "%s/pn-%d/status.json", e2e_dir(), i);
        json_t *st = json_load_file(path, 0, NULL);
        sum += json_integer_value(json_object_get(st, name));
        json_decref(st);
    }
    return sum;
}

long daemon_pid(const char *name)
{
    char path[1300];
    snprintf(path, sizeof path, "%s/%s.pid", e2e_dir(), name);
    return read_pid(path);
}

long jm_pid(const char *job)
{
    char path[1300];
    snprintf(path, sizeof path, "%s/jobs/%s/jm.pid", e2e_dir(), job);
    return read_pid(path);
}

void cluster_up_again(void)
{
    struct e2e_run r;
    e2e_paddock(&r, 90, "cluster up --dir '%s'", e2e_dir());
    if (r.status != 0)
        fprintf(stderr, "cluster up: %s%s\n", r.out, r.err);
    assert_int_equal(r.status, 0);
    e2e_run_close(&r);
}

/* Whether every thread of pid has exited: its thread group leader turns zombie as soon as it
 * dies, while the other threads may still be finishing a system call (an fsync) and hold the
 * process's files, a data directory's lock among them. */
static bool proc_all_gone(long pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/task", pid);
    DIR *d = opendir(path);
    if (d == NULL)
        return true;
    size_t threads = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        threads += e->d_name[0] != '.';
    closedir(d);
    return threads <= 1 && !proc_is(pid, "");
}

void await_gone(const long *pids, size_t n, const char *name)
{
    for (int k = 0; k < 500; k++) {
        bool any = false;
        for (size_t i = 0; i < n; i++)
            any = any || (pids[i] > 0 && (proc_is(pids[i], name) || !proc_all_gone(pids[i])));
        if (!any)
            return;
        e2e_sleep_ms(20);
    }
    fail_msg("a %s did not stop", name);
}

/* The PNs with a shorter orphan grace: written into their configurations, then each PN is
 * stopped by pid and `cluster up` starts it again. */
static void pn_short_grace(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    long pids[NPN];
    for (int i = 1; i <= NPN; i++) {
        char path[1300], name[16];
        snprintf(path, sizeof path, "%s/pn-%d.conf", e2e_dir(), i);
        FILE *f = fopen(path, "a");
        assert_non_null(f);
        fprintf(f, "\n[pn]\norphan_grace = %ds\n", ORPHAN_GRACE_S);
        assert_int_equal(fclose(f), 0);
        snprintf(name, sizeof name, "pn-%d", i);
        pids[i - 1] = daemon_pid(name);
        assert_true(pids[i - 1] > 1 && proc_is(pids[i - 1], "paddock-pn"));
        assert_int_equal(kill((pid_t)pids[i - 1], SIGTERM), 0);
    }
    await_gone(pids, NPN, "paddock-pn");
    cluster_up_again();
}

int group_setup(void **state)
{
    (void)state;
    if (!e2e_have_jm())
        return 0;
    if (e2e_cluster_up("--rm 3 --pn 3 --pn-cpus 2 --pn-mem-mb 2048") != 0)
        return -1;
    return 0;
}

int group_teardown(void **state)
{
    (void)state;
    for (size_t i = 0; i < g_nextra; i++) {
        if (g_extra[i] > 0 && proc_is(g_extra[i], "paddock-jm")) {
            kill(g_extra[i], SIGKILL);
            kill(g_extra[i], SIGCONT);
        }
        if (g_extra[i] > 0)
            waitpid(g_extra[i], NULL, WNOHANG);
    }
    e2e_cluster_down();
    kill_cluster_tasks();
    return 0;
}

void skip_without_jm(void)
{
    e2e_skip_without_jm();
    pn_short_grace();
}

void task_id(int k, char *out, size_t cap)
{
    if (k < 30)
        snprintf(out, cap, "a-%d", k);
    else if (k < 70)
        snprintf(out, cap, "b-%d", k - 30);
    else
        snprintf(out, cap, "c-%d", k - 70);
}

void write_spec(const char *name, const char *marks, const char *sleep_s, char *path, size_t cap)
{
    size_t sz = 64 * 1024, n = 0;
    char *spec = malloc(sz);
    assert_non_null(spec);
    n += (size_t)snprintf(spec + n, sz - n,
                          "{\"version\": 1, \"name\": \"%s\",\n \"stages\": [{\"name\": \"a\", "
                          "\"speculate\": false}, {\"name\": \"b\", \"after\": [\"a\"], "
                          "\"speculate\": false}, {\"name\": \"c\", \"after\": [\"b\"], "
                          "\"speculate\": false}],\n \"tasks\": [\n",
                          name);
    for (int k = 0; k < NTASKS; k++) {
        char id[16], after[64] = "";
        task_id(k, id, sizeof id);
        if (k >= 30 && k < 70)
            snprintf(after, sizeof after, ", \"after\": [\"a-%d\"]", (k - 30) % 30);
        else if (k >= 70)
            snprintf(after, sizeof after, ", \"after\": [\"b-%d\", \"b-%d\"]", k - 70, k - 60);
        n += (size_t)snprintf(spec + n, sz - n,
                              "  {\"id\": \"%s\", \"stage\": \"%c\"%s, \"cmd\": [\"sh\", \"-c\", "
                              "\"sleep %s; echo %s >> %s\"], \"cpu\": 1, \"mem_mb\": 64, "
                              "\"runtime_s\": %s}%s\n",
                              id, id[0], after, sleep_s, id, marks, sleep_s,
                              k + 1 < NTASKS ? "," : "");
        assert_true(n < sz);
    }
    n += (size_t)snprintf(spec + n, sz - n, " ]}\n");
    assert_true(n < sz);
    snprintf(path, cap, "%s/%s.json", e2e_dir(), name);
    e2e_write_file(path, spec);
    free(spec);
}

long await_jm(const char *job, long not, int timeout_ms)
{
    int64_t end = e2e_wall_ms() + timeout_ms;
    do {
        long pid = jm_pid(job);
        if (pid > 1 && pid != not &&proc_is(pid, "paddock-jm"))
            return pid;
        e2e_sleep_ms(10);
    } while (e2e_wall_ms() < end);
    return 0;
}

bool state_running(const char *job)
{
    json_t *st = e2e_job_file(job, "state.json");
    const char *s = json_string_value(json_object_get(st, "state"));
    bool running = s == NULL || strcmp(s, "running") == 0;
    json_decref(st);
    return running;
}

void await_success(const char *job, int timeout_s)
{
    json_t *st = e2e_job_wait(job, timeout_s);
    if (st == NULL) {
        fprintf(stderr, "job %s did not end within %d s\n", job, timeout_s);
        e2e_job_dump(job);
        fail();
    }
    const char *s = json_string_value(json_object_get(st, "state"));
    if (strcmp(s, "succeeded") != 0) {
        fprintf(stderr, "job %s %s: %s\n", job, s,
                json_string_value(json_object_get(st, "reason")));
        e2e_job_dump(job);
    }
    assert_string_equal(s, "succeeded");
    json_decref(st);
}

int check_marks(const char *marks, const char *job, const bool *may_twice)
{
    int count[NTASKS] = {0};
    int other = 0;
    FILE *f = fopen(marks, "r");
    assert_non_null(f);
    char line[128];
    while (fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        int k = -1;
        char id[16];
        for (int i = 0; i < NTASKS && k < 0; i++) {
            task_id(i, id, sizeof id);
            if (strcmp(line, id) == 0)
                k = i;
        }
        if (k < 0)
            other++;
        else
            count[k]++;
    }
    fclose(f);
    int lost = 0, twice = 0, allowed = 0;
    for (int i = 0; i < NTASKS; i++) {
        char id[16];
        task_id(i, id, sizeof id);
        bool may = may_twice != NULL && may_twice[i];
        if (count[i] != 1)
            fprintf(stderr, "job %s: task %s marked %d times%s\n", job, id, count[i],
                    may && count[i] == 2 ? " (in flight at the kill: allowed)" : "");
        lost += count[i] == 0;
        if (may && count[i] == 2)
            allowed++;
        else
            twice += count[i] > 1;
    }
    if (lost + twice + other > 0)
        fprintf(stderr, "job %s: %d lost, %d run twice, %d stray lines\n", job, lost, twice, other);
    assert_int_equal(other, 0);
    assert_int_equal(lost, 0);
    assert_int_equal(twice, 0);
    return allowed;
}

size_t journaled_succeeded(const char *job, bool done[NTASKS])
{
    char path[1300];
    snprintf(path, sizeof path, "%s/jobs/%s/journal", e2e_dir(), job);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[4096];
    size_t n = 0;
    memset(done, 0, NTASKS * sizeof done[0]);
    while (fgets(line, sizeof line, f) != NULL) {
        json_t *a = json_loads(line, 0, NULL); /* a header, or a torn last line: passed over */
        const char *task = json_string_value(json_object_get(a, "task"));
        const char *state = json_string_value(json_object_get(a, "state"));
        for (int k = 0; task != NULL && state != NULL && k < NTASKS; k++) {
            char id[16];
            task_id(k, id, sizeof id);
            if (strcmp(id, task) == 0 && strcmp(state, "succeeded") == 0 && !done[k]) {
                done[k] = true;
                n++;
            }
        }
        json_decref(a);
    }
    fclose(f);
    return n;
}

void check_report(const char *job, long long min_resumes)
{
    json_t *rep = e2e_job_file(job, "report.json");
    assert_non_null(rep);
    assert_string_equal(json_string_value(json_object_get(rep, "state")), "succeeded");
    assert_int_equal(json_integer_value(json_object_get(rep, "tasks_total")), NTASKS);
    assert_int_equal(json_integer_value(json_object_get(rep, "tasks_succeeded")), NTASKS);
    int ok[NTASKS] = {0};
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(rep, "attempts"), i, a)
    {
        const char *task = json_string_value(json_object_get(a, "task"));
        const char *state = json_string_value(json_object_get(a, "state"));
        assert_non_null(task);
        assert_non_null(state);
        char id[16];
        int k = -1;
        for (int t = 0; t < NTASKS && k < 0; t++) {
            task_id(t, id, sizeof id);
            if (strcmp(task, id) == 0)
                k = t;
        }
        assert_true(k >= 0);
        ok[k] += strcmp(state, "succeeded") == 0;
    }
    for (int t = 0; t < NTASKS; t++) {
        if (ok[t] != 1) {
            char id[16];
            task_id(t, id, sizeof id);
            fprintf(stderr, "report of %s: task %s has %d succeeded attempts\n", job, id, ok[t]);
        }
        assert_int_equal(ok[t], 1);
    }
    json_t *res = json_object_get(rep, "resumes");
    assert_true(json_is_integer(res));
    assert_true(json_integer_value(res) >= min_resumes);
    json_decref(rep);
}
