/* test_e2e_resume.c - a job survives its job manager (issue 14), on a real local cluster (3 RM
 * replicas, 3 PNs of 2 cores, the PNs' orphan grace shortened to ORPHAN_GRACE_S), through the
 * CLI and the files the daemons write:
 *   - ten jobs of 100 tasks (a three-stage DAG), each task appending its id to the job's marks
 *     file; each job's paddock-jm is killed with SIGKILL at a seeded random point between 0.5 s
 *     and 80% of an undisturbed run's length: the RM leader starts it again within 5 s, it
 *     resumes, the job succeeds, every task id is in the marks exactly once, and report.json
 *     has one succeeded attempt per task, the attempts before the kill included;
 *   - a stale JM: SIGSTOP past the lease, the RM starts another, SIGCONT: the old one exits 3
 *     ("a newer job manager") and the job still runs every task exactly once. A paused JM asks
 *     the RM before it acts, so it sends nothing; a create it had in flight is what the PNs'
 *     fencing is for: one is sent to each PN as the old JM would have (epoch 1, CURVE with the
 *     cluster's keys) and must be refused with ERR_FENCED (refused_fenced) and never run;
 *   - orphans: a JM killed whose job directory is gone (so it cannot come back): once the lease
 *     and the PNs' orphan grace pass, no task process of the job is left (/proc);
 *   - whole-cluster restart: every RM, PN and the JM killed with SIGKILL at once, `paddock
 *     cluster up --dir` on the same directory: the job resumes and succeeds, every task once.
 * PADDOCK_E2E_SEED picks the kill points (printed); PADDOCK_E2E_ONLY runs only the tests its
 * pattern names. Skipped while paddock-jm is not built. */
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
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define NTASKS         100
#define ROUNDS         10
#define ORPHAN_GRACE_S 6
#define RESTART_MAX_MS 5000
#define NPN            3
#define NRM            3

/* Processes this test holds outside the cluster's pid files (a stopped stale JM): stopped by
 * pid in the teardown. */
static pid_t g_extra[8];
static size_t g_nextra;

static int64_t wall_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static void sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static char *slurp(const char *path, size_t *len)
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

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

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

/* Whether pid is a live (not zombie) process whose command name starts with `name`. */
static bool proc_is(long pid, const char *name)
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
        char *env = slurp(path, &len);
        if (env == NULL)
            continue;
        bool hit = false;
        for (size_t k = 0; k < len && !hit; k += strlen(env + k) + 1)
            hit = prefix ? strncmp(env + k, var, vlen) == 0 : strcmp(env + k, var) == 0;
        free(env);
        char stat[64];
        snprintf(stat, sizeof stat, "/proc/%ld/stat", pid);
        char *st = slurp(stat, NULL);
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

/* The live task processes of a job. */
static size_t job_procs(const char *job_id, long *pids, size_t cap)
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

/* A counter of the PNs' status.json, summed over the nodes. */
static long long pn_counter(const char *name)
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

/* The pid file of daemon NAME (rm-1, pn-2) or of a job's JM (jobs/ID/jm). */
static long daemon_pid(const char *name)
{
    char path[1300];
    snprintf(path, sizeof path, "%s/%s.pid", e2e_dir(), name);
    return read_pid(path);
}

static long jm_pid(const char *job)
{
    char path[1300];
    snprintf(path, sizeof path, "%s/jobs/%s/jm.pid", e2e_dir(), job);
    return read_pid(path);
}

static void cluster_up_again(void)
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

/* Waits (bounded) until none of the pids runs a process named `name`, and every thread of
 * each has exited. */
static void await_gone(const long *pids, size_t n, const char *name)
{
    for (int k = 0; k < 500; k++) {
        bool any = false;
        for (size_t i = 0; i < n; i++)
            any = any || (pids[i] > 0 && (proc_is(pids[i], name) || !proc_all_gone(pids[i])));
        if (!any)
            return;
        sleep_ms(20);
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

static int group_setup(void **state)
{
    (void)state;
    if (!e2e_have_jm())
        return 0;
    if (e2e_cluster_up("--rm 3 --pn 3 --pn-cpus 2 --pn-mem-mb 2048") != 0)
        return -1;
    return 0;
}

static int group_teardown(void **state)
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

static void pn_short_grace(void);

/* Skips without paddock-jm; else makes sure the PNs run with the short orphan grace. */
static void skip_without_jm(void)
{
    if (!e2e_have_jm()) {
        fprintf(stderr, "paddock-jm is not built: skipped\n");
        skip();
    }
    pn_short_grace();
}

/* The task ids of the test DAG: stage a (30 tasks), b (40: b-i after a-(i mod 30)), c (30: c-i
 * after b-i and b-(i+10)). */
static void task_id(int k, char *out, size_t cap)
{
    if (k < 30)
        snprintf(out, cap, "a-%d", k);
    else if (k < 70)
        snprintf(out, cap, "b-%d", k - 30);
    else
        snprintf(out, cap, "c-%d", k - 70);
}

/* Writes a spec of NTASKS tasks, each `sleep SLEEP; echo ID >> MARKS`, to DIR/NAME.json. */
/* Each task appends its id to the marks file, a side effect that must happen once: the stages
 * say "speculate": false, so no speculative copy or duplicate (issue 15) runs a task twice and
 * what is checked is what a resume does. */
static void write_spec(const char *name, const char *marks, const char *sleep_s, char *path,
                       size_t cap)
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
    write_file(path, spec);
    free(spec);
}

/* `paddock submit PATH`: the job id into id. */
static void submit(const char *path, char id[64])
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

/* Waits until the job's jm.pid names a live paddock-jm other than `not`; returns it. */
static long await_jm(const char *job, long not, int timeout_ms)
{
    int64_t end = wall_ms() + timeout_ms;
    do {
        long pid = jm_pid(job);
        if (pid > 1 && pid != not &&proc_is(pid, "paddock-jm"))
            return pid;
        sleep_ms(10);
    } while (wall_ms() < end);
    return 0;
}

/* A state.json field as an integer (-1 when missing). */
static long long state_int(const char *job, const char *field)
{
    json_t *st = e2e_job_file(job, "state.json");
    json_t *v = json_object_get(st, field);
    long long x = json_is_integer(v) ? json_integer_value(v) : -1;
    json_decref(st);
    return x;
}

static bool state_running(const char *job)
{
    json_t *st = e2e_job_file(job, "state.json");
    const char *s = json_string_value(json_object_get(st, "state"));
    bool running = s == NULL || strcmp(s, "running") == 0;
    json_decref(st);
    return running;
}

/* Waits for the job's end: it must have succeeded. */
static void await_success(const char *job, int timeout_s)
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

/* Every task id of the DAG in the marks file, nothing else: exactly once, or at most twice for
 * the tasks with may_twice[k] set (NULL: none). Returns how many of those ran twice. */
static int check_marks(const char *marks, const char *job, const bool *may_twice)
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

/* The tasks the job's journal records as succeeded, into done[] (one per DAG task). */
static size_t journaled_succeeded(const char *job, bool done[NTASKS])
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

/* report.json: succeeded, 100 tasks, exactly one succeeded attempt per task (those of every
 * incarnation), `resumes` at least min_resumes. */
static void check_report(const char *job, long long min_resumes)
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

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* An undisturbed run, then ten, each JM killed at a seeded random point. */
static void test_jm_killed_ten_times(void **state)
{
    (void)state;
    skip_without_jm();
    unsigned seed = 14;
    const char *s = getenv("PADDOCK_E2E_SEED");
    if (s != NULL && *s != '\0')
        seed = (unsigned)strtoul(s, NULL, 10);
    srand(seed);
    fprintf(stderr, "seed %u (PADDOCK_E2E_SEED)\n", seed);

    char marks[1300], spec[1300], job[64];
    snprintf(marks, sizeof marks, "%s/marks-base", e2e_dir());
    write_spec("base", marks, "0.2", spec, sizeof spec);
    int64_t t0 = wall_ms();
    submit(spec, job);
    await_success(job, 120);
    int64_t length = wall_ms() - t0;
    check_marks(marks, job, NULL);
    check_report(job, 0);
    fprintf(stderr, "undisturbed run: %lld ms\n", (long long)length);

    long long relaunch[ROUNDS], resumed[ROUNDS], total[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        char name[32];
        snprintf(name, sizeof name, "kill-%d", r);
        snprintf(marks, sizeof marks, "%s/marks-%d", e2e_dir(), r);
        write_spec(name, marks, "0.2", spec, sizeof spec);
        /* the point: 0.5 s to 80% of the undisturbed length, uniform */
        int64_t hi = length * 8 / 10 > 600 ? length * 8 / 10 : 600;
        int64_t at = 500 + (int64_t)((double)rand() / RAND_MAX * (double)(hi - 500));
        t0 = wall_ms();
        submit(spec, job);
        long pid = await_jm(job, 0, 10000);
        assert_true(pid > 1);
        sleep_ms(t0 + at - wall_ms());
        if (!state_running(job)) {
            fprintf(stderr, "round %d: the job ended before its kill point %lld ms\n", r,
                    (long long)at);
            fail();
        }
        long long done = state_int(job, "tasks_succeeded");
        assert_int_equal(kill((pid_t)pid, SIGKILL), 0);
        int64_t killed = wall_ms();
        long again = await_jm(job, pid, 3 * RESTART_MAX_MS);
        int64_t back = wall_ms();
        if (again == 0) {
            fprintf(stderr, "round %d: no JM started again within %d ms\n", r, 3 * RESTART_MAX_MS);
            e2e_job_dump(job);
        }
        assert_true(again > 1);
        /* resumed: the new JM's state.json (its pid, a resume counted) */
        int64_t end = back + 3 * RESTART_MAX_MS;
        while (wall_ms() < end &&
               !(state_int(job, "pid") == again && state_int(job, "resumes") >= 1))
            sleep_ms(10);
        int64_t up = wall_ms();
        assert_int_equal(state_int(job, "pid"), again);
        relaunch[r] = back - killed;
        resumed[r] = up - killed;
        fprintf(stderr,
                "round %d: killed at %lld ms (%lld of %d tasks done): JM started again in %lld "
                "ms, resumed in %lld ms\n",
                r, (long long)at, done, NTASKS, relaunch[r], resumed[r]);
        assert_true(relaunch[r] <= RESTART_MAX_MS);
        await_success(job, 120);
        total[r] = wall_ms() - t0;
        check_marks(marks, job, NULL);
        check_report(job, 1);
        assert_true(state_int(job, "resumes") >= 1);
    }
    qsort(relaunch, ROUNDS, sizeof relaunch[0], cmp_ll);
    qsort(resumed, ROUNDS, sizeof resumed[0], cmp_ll);
    qsort(total, ROUNDS, sizeof total[0], cmp_ll);
    fprintf(stderr,
            "restart (kill to new JM) ms: min %lld median %lld max %lld; resumed: min %lld "
            "median %lld max %lld; job with a kill: median %lld ms (undisturbed %lld)\n",
            relaunch[0], relaunch[ROUNDS / 2], relaunch[ROUNDS - 1], resumed[0],
            resumed[ROUNDS / 2], resumed[ROUNDS - 1], total[ROUNDS / 2], (long long)length);
}

/* Sends to PN `pn` a TASK_CREATE of job `job`, task `task` (attempt 9), under `epoch`, as a JM
 * would: returns the answer's ERROR code, 0 for a TASK_STATUS (the create was taken), or 1 when
 * nothing came back within 5 s. */
static int stale_create(int pn, const char *job, const char *task, const char *marks,
                        uint32_t epoch)
{
    char path[1300], keys[1300], msg[512], cmd[1400];
    snprintf(path, sizeof path, "%s/pn-%d/pn.endpoint", e2e_dir(), pn);
    char *endpoint = slurp(path, NULL);
    assert_non_null(endpoint);
    endpoint[strcspn(endpoint, "\r\n")] = '\0';
    snprintf(keys, sizeof keys, "%s/keys", e2e_dir());
    curve_t *c = NULL;
    if (curve_load(&c, keys, CURVE_DEFAULT_NAME, NULL, msg, sizeof msg) != 0)
        fail_msg("keys: %s", msg);
    zsock_t *sock = zsock_new(ZMQ_DEALER);
    assert_non_null(sock);
    zsock_set_rcvtimeo(sock, 5000);
    zsock_set_linger(sock, 0);
    if (curve_apply(sock, c, CURVE_CLIENT, NULL, msg, sizeof msg) != 0)
        fail_msg("curve: %s", msg);
    assert_int_equal(zsock_connect(sock, "%s", endpoint), 0);
    snprintf(cmd, sizeof cmd, "echo %s >> %s", task, marks);
    char *argv[] = {(char *)"sh", (char *)"-c", cmd};
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_CREATE);
    m.req_id = 1;
    m.task_create.job_id = (char *)job;
    m.task_create.task_id = (char *)task;
    m.task_create.attempt = 9;
    m.task_create.task_class = PROTO_CLASS_REGULAR;
    m.task_create.argv = argv;
    m.task_create.argc = 3;
    m.task_create.cpu = 1;
    m.task_create.mem_mb = 64;
    m.task_create.runtime_ms = 100;
    m.task_create.epoch = epoch;
    proto_buf_t b;
    proto_buf_init(&b);
    assert_int_equal(proto_encode(&m, &b, msg, sizeof msg), 0);
    assert_int_equal(zmq_send(zsock_resolve(sock), b.data, b.len, 0), (int)b.len);
    proto_buf_close(&b);
    int rc = 1;
    zmsg_t *in = zmsg_recv(sock);
    if (in != NULL) {
        zframe_t *f = zmsg_last(in);
        proto_msg_t r;
        assert_int_equal(proto_decode(zframe_data(f), zframe_size(f), &r, NULL, msg, sizeof msg),
                         0);
        rc = r.type == PROTO_ERROR ? r.error.code : 0;
        if (r.type == PROTO_ERROR)
            fprintf(stderr, "stale create on pn-%d: ERROR %d (%s)\n", pn, r.error.code,
                    r.error.text);
        else
            fprintf(stderr, "stale create on pn-%d: answered %s\n", pn, proto_type_name(r.type));
        proto_msg_close(&r);
        zmsg_destroy(&in);
    }
    zsock_destroy(&sock);
    curve_destroy(&c);
    free(endpoint);
    return rc;
}

/* A JM paused past its lease: the RM starts another; the old one, woken, is fenced. */
static void test_stale_jm_fenced(void **state)
{
    (void)state;
    skip_without_jm();
    char marks[1300], spec[1300], job[64];
    snprintf(marks, sizeof marks, "%s/marks-stale", e2e_dir());
    write_spec("stale", marks, "0.2", spec, sizeof spec);
    long long fenced0 = pn_counter("refused_fenced");
    /* the JM `paddock submit` starts is orphaned at once: as a subreaper this process becomes
       its parent and can read its exit code */
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
    submit(spec, job);
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0), 0);
    long old = await_jm(job, 0, 10000);
    assert_true(old > 1);
    g_extra[g_nextra++] = (pid_t)old;
    int64_t end = wall_ms() + 30000;
    while (wall_ms() < end && state_int(job, "tasks_succeeded") < 10)
        sleep_ms(20);
    assert_true(state_running(job));
    assert_int_equal(kill((pid_t)old, SIGSTOP), 0);
    int64_t stopped = wall_ms();
    long fresh = await_jm(job, old, 20000);
    if (fresh == 0)
        e2e_job_dump(job);
    assert_true(fresh > 1);
    int64_t relaunched = wall_ms();
    /* the new JM has resumed (its epoch is above the old one's) before the old one wakes */
    end = wall_ms() + 10000;
    while (wall_ms() < end && !(state_int(job, "pid") == fresh && state_int(job, "epoch") >= 2))
        sleep_ms(20);
    assert_true(state_int(job, "epoch") >= 2);
    fprintf(stderr, "stale: paused JM replaced after %lld ms (lease), resumed at %lld ms\n",
            (long long)(relaunched - stopped), (long long)(wall_ms() - stopped));
    assert_int_equal(kill((pid_t)old, SIGCONT), 0);
    int st = 0;
    pid_t w = 0;
    end = wall_ms() + 20000;
    while (wall_ms() < end && (w = waitpid((pid_t)old, &st, WNOHANG)) == 0)
        sleep_ms(20);
    if (w != (pid_t)old)
        fprintf(stderr, "stale JM %ld: waitpid %d (%s)\n", old, (int)w, strerror(errno));
    assert_int_equal(w, (pid_t)old);
    g_extra[--g_nextra] = 0;
    assert_true(WIFEXITED(st));
    fprintf(stderr, "stale JM exited %d %lld ms after SIGCONT\n", WEXITSTATUS(st),
            (long long)(wall_ms() - relaunched));
    assert_int_equal(WEXITSTATUS(st), 3);
    char log[1300];
    snprintf(log, sizeof log, "%s/jobs/%s/jm.log", e2e_dir(), job);
    char *text = slurp(log, NULL);
    assert_non_null(text);
    assert_non_null(strstr(text, "a newer job manager"));
    free(text);
    /* what the old JM would have had in flight: refused by every PN, whichever epoch it saw */
    for (int i = 1; i <= NPN; i++)
        assert_int_equal(stale_create(i, job, "a-0", marks, 1), ERR_FENCED);
    /* a refused command must not take the job's statuses away from the newer JM either */
    await_success(job, 120);
    int64_t wait_end = wall_ms() + 3000;
    long long fenced = 0;
    while ((fenced = pn_counter("refused_fenced") - fenced0) < NPN && wall_ms() < wait_end)
        sleep_ms(100);
    fprintf(stderr, "stale: the PNs refused %lld commands of the old epoch\n", fenced);
    assert_true(fenced >= NPN);
    check_report(job, 1);
    check_marks(marks, job, NULL);
}

/* A JM gone for good: its tasks do not outlive the lease and the PNs' orphan grace. */
static void test_orphans_reaped(void **state)
{
    (void)state;
    skip_without_jm();
    char spec[4096], path[1300], job[64];
    snprintf(spec, sizeof spec,
             "{\"version\": 1, \"name\": \"orphans\", \"tasks\": [\n"
             "  {\"id\": \"o-0\", \"cmd\": [\"sh\", \"-c\", \"sleep 300\"], \"cpu\": 1, "
             "\"mem_mb\": 64, \"runtime_s\": 300},\n"
             "  {\"id\": \"o-1\", \"cmd\": [\"sh\", \"-c\", \"sleep 300\"], \"cpu\": 1, "
             "\"mem_mb\": 64, \"runtime_s\": 300},\n"
             "  {\"id\": \"o-2\", \"cmd\": [\"sh\", \"-c\", \"sleep 300\"], \"cpu\": 1, "
             "\"mem_mb\": 64, \"runtime_s\": 300}\n ]}\n");
    snprintf(path, sizeof path, "%s/orphans.json", e2e_dir());
    write_file(path, spec);
    long long reaped0 = pn_counter("reaped");
    submit(path, job);
    long pid = await_jm(job, 0, 10000);
    assert_true(pid > 1);
    long procs[64];
    /* all three running, as its JM says (a task may wait in the JM for a node with room, up to
       2 s: jm/place.h place_hold), then their processes */
    char statef[1300];
    snprintf(statef, sizeof statef, "%s/jobs/%s/state.json", e2e_dir(), job);
    int64_t end = wall_ms() + 30000;
    long long running = 0;
    while (wall_ms() < end && running < 3) {
        json_t *st = json_load_file(statef, 0, NULL);
        running = json_integer_value(json_object_get(st, "tasks_running"));
        json_decref(st);
        if (running < 3)
            sleep_ms(50);
    }
    assert_int_equal(running, 3);
    while (wall_ms() < end && job_procs(job, procs, 64) < 3)
        sleep_ms(50);
    size_t live = job_procs(job, procs, 64);
    fprintf(stderr, "orphans: %zu task processes of %s running\n", live, job);
    assert_true(live >= 3);
    /* gone for good: paused, its directory moved away (the RM cannot start it again), killed */
    assert_int_equal(kill((pid_t)pid, SIGSTOP), 0);
    char from[1300], to[1300];
    snprintf(from, sizeof from, "%s/jobs/%s", e2e_dir(), job);
    snprintf(to, sizeof to, "%s/gone-%s", e2e_dir(), job);
    assert_int_equal(rename(from, to), 0);
    assert_int_equal(kill((pid_t)pid, SIGKILL), 0);
    int64_t killed = wall_ms();
    /* not at once: a restarted JM could still re-attach within the grace */
    sleep_ms(3000);
    assert_true(job_procs(job, procs, 64) > 0);
    end = killed + 1000LL * (10 + ORPHAN_GRACE_S + 20);
    size_t left = 0;
    while (wall_ms() < end && (left = job_procs(job, procs, 64)) > 0)
        sleep_ms(100);
    fprintf(stderr, "orphans: %zu task processes left %lld ms after the JM was killed\n", left,
            (long long)(wall_ms() - killed));
    for (size_t i = 0; i < left && i < 64; i++)
        fprintf(stderr, "  left: pid %ld\n", procs[i]);
    assert_int_equal(left, 0);
    /* status.json is rewritten every heartbeat (1 s) */
    long long reaped = 0;
    end = wall_ms() + 3000;
    while ((reaped = pn_counter("reaped") - reaped0) < 3 && wall_ms() < end)
        sleep_ms(100);
    fprintf(stderr, "orphans: the PNs reaped %lld tasks\n", reaped);
    assert_true(reaped >= 3);
}

/* Every daemon of the cluster and the job's JM killed at once, the cluster started again. */
static void test_whole_cluster_restart(void **state)
{
    (void)state;
    skip_without_jm();
    char marks[1300], spec[1300], job[64];
    snprintf(marks, sizeof marks, "%s/marks-whole", e2e_dir());
    write_spec("whole", marks, "0.2", spec, sizeof spec);
    submit(spec, job);
    long jm = await_jm(job, 0, 10000);
    assert_true(jm > 1);
    int64_t end = wall_ms() + 30000;
    while (wall_ms() < end && state_int(job, "tasks_succeeded") < 30)
        sleep_ms(20);
    assert_true(state_running(job));
    long long done = state_int(job, "tasks_succeeded");
    long pids[NRM + NPN + 1];
    size_t n = 0;
    for (int i = 1; i <= NRM; i++) {
        char name[16];
        snprintf(name, sizeof name, "rm-%d", i);
        pids[n] = daemon_pid(name);
        assert_true(pids[n] > 1 && proc_is(pids[n], "paddock-rm"));
        n++;
    }
    for (int i = 1; i <= NPN; i++) {
        char name[16];
        snprintf(name, sizeof name, "pn-%d", i);
        pids[n] = daemon_pid(name);
        assert_true(pids[n] > 1 && proc_is(pids[n], "paddock-pn"));
        n++;
    }
    pids[n++] = jm;
    for (size_t i = 0; i < n; i++)
        assert_int_equal(kill((pid_t)pids[i], SIGKILL), 0);
    int64_t killed = wall_ms();
    await_gone(pids, NRM, "paddock-rm");
    await_gone(pids + NRM, NPN, "paddock-pn");
    await_gone(pids + NRM + NPN, 1, "paddock-jm");
    /* what had succeeded for good: the journal once every writer is dead */
    bool journaled[NTASKS], in_flight[NTASKS];
    size_t recorded = journaled_succeeded(job, journaled);
    for (int k = 0; k < NTASKS; k++)
        in_flight[k] = !journaled[k];
    fprintf(stderr, "whole: every daemon killed with %lld of %d tasks done (%zu journaled)\n", done,
            NTASKS, recorded);
    cluster_up_again();
    int64_t up = wall_ms();
    long again = await_jm(job, jm, 30000);
    int64_t back = wall_ms();
    if (again == 0)
        e2e_job_dump(job);
    assert_true(again > 1);
    fprintf(stderr,
            "whole: cluster up again %lld ms after the kill, the JM %lld ms after it was up "
            "(%lld ms in all)\n",
            (long long)(up - killed), (long long)(back - up), (long long)(back - killed));
    await_success(job, 120);
    /* Nothing that succeeded runs again. A task running when its PN was killed with SIGKILL
       keeps running (its process group outlives the PN) and may append its mark before the
       PN's next boot kills it; no record of that run survives, so it is run again: at most
       the 6 slots' worth, each at most twice. */
    int again_twice = check_marks(marks, job, in_flight);
    fprintf(stderr, "whole: %d tasks in flight at the kill ran again after finishing\n",
            again_twice);
    assert_true(again_twice <= NPN * 2);
    check_report(job, 1);
    /* and none of the old PNs' task processes is left */
    long procs[16];
    int64_t gone = wall_ms() + 5000;
    size_t left = 0;
    while ((left = job_procs(job, procs, 16)) > 0 && wall_ms() < gone)
        sleep_ms(100);
    assert_int_equal(left, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jm_killed_ten_times),
        cmocka_unit_test(test_stale_jm_fenced),
        cmocka_unit_test(test_orphans_reaped),
        cmocka_unit_test(test_whole_cluster_restart),
    };
    const char *only = getenv("PADDOCK_E2E_ONLY"); /* e.g. test_whole_cluster_restart */
    if (only != NULL && *only != '\0')
        cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
