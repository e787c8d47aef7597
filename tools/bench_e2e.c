/* bench_e2e - the real daemons end to end on this machine (docs/architecture.md, "Targets").
 *
 *   bench_e2e [--tasks N] [--array] [--chain M] [--forks F] [--spawns S] [--floor-runs R]
 *             [--rm R] [--pn K] [--pn-cpus C] [--deadline D] [--bin DIR] [--json]
 *   bench_e2e --first-task N [--gap-ms G] [--rm R] [--pn K] [--pn-cpus C] [--bin DIR] [--json]
 *
 * Starts local clusters in a temporary directory ($TMPDIR, else /tmp; `paddock cluster up --rm R
 * --pn K`, R = 1 unless told, one per job), then:
 *   1. the machine's floor for running processes, measured in the same run: S posix_spawns of
 *      /bin/true (output to /dev/null) with as many in flight as the cluster has slots for
 *      these tasks (K x C / 0.1 cpu), capped at the online cores, from one process and as the
 *      best of P processes (bench_spawnfloor.h); --floor-runs R (default 3, at least 3) such
 *      measurements, the first half before the job of step 2 and the rest after it (its cluster
 *      stopped), every one printed, the job held to their medians; and, kept for comparison
 *      with earlier figures, a serial fork + exec("true") + wait loop of F processes, which is
 *      far slower than the floor on more than one core;
 *   2. one job of N independent `true` tasks through `paddock submit --wait --json` (submit ->
 *      JM -> PN -> exit): tasks per second over the job's makespan and over the whole submit
 *      command (registration and JM start included), as a ratio to the posix_spawn floor
 *      (target: at least half of it) and to the serial loop; --deadline D is passed to submit
 *      (without one the JM asks for a single token and runs the rest opportunistically);
 *      --array writes the N tasks as one array entry ("t{i}", "array": N) instead of N entries
 *      (N up to 1,000,000; written out, at most 100,000). The JM's RSS at the end and its peak
 *      (state.json rss_kb, rss_peak_kb) are printed with the peak per task;
 *   3. one job of M `true` tasks in a chain on the idle cluster: each task becomes ready when its
 *      predecessor ends, so start_s(i) - end_s(i-1) from report.json is the ready-to-running
 *      latency (p50, p99; target p99 <= 5 ms). It includes the PN -> JM exit report.
 * Stops the job managers it started (pids from the jobs' jm.pid files) and the cluster
 * (`paddock cluster down`), and removes the directory. A benchmark: prints figures, asserts
 * nothing; not part of ctest.
 */
#include <dirent.h>
#include <ftw.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_spawnfloor.h"

/* cpu of each benchmark task: with the PNs' cpus it sets the cluster's slots */
#define BENCH_TASK_CPU 0.1

static char g_bin[PATH_MAX];
static char g_tmp[PATH_MAX];
static char g_cluster[PATH_MAX + 16];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs `paddock ARGS` (bounded by coreutils timeout); stdout+stderr into out. Exit code. */
static int run_paddock(char *out, size_t cap, int timeout_s, const char *args)
{
    char cmd[4 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "timeout %d '%s/paddock' %s 2>&1", timeout_s, g_bin, args);
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    size_t n = 0;
    if (out != NULL && cap > 0) {
        size_t r;
        while (n + 1 < cap && (r = fread(out + n, 1, cap - 1 - n, p)) > 0)
            n += r;
        out[n] = '\0';
    }
    char sink[4096];
    while (fread(sink, 1, sizeof sink, p) > 0)
        ;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static double fork_exec_rate(int n)
{
    double t0 = now_s();
    int done = 0;
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0)
            break;
        if (pid == 0) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        int st;
        if (waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
            done++;
    }
    double dt = now_s() - t0;
    return dt > 0 ? done / dt : 0;
}

static int write_spec(const char *path, const char *name, int n, int chain, int array)
{
    json_t *tasks = json_array();
    if (array) /* one entry for all n: what a million-task job is written as */
        json_array_append_new(tasks, json_pack("{s:s, s:i, s:[s], s:f, s:i, s:f}", "id", "t{i}",
                                               "array", n, "cmd", "true", "cpu", BENCH_TASK_CPU,
                                               "mem_mb", 16, "runtime_s", 0.01));
    for (int i = 0; !array && i < n; i++) {
        char id[32], prev[32];
        snprintf(id, sizeof id, "t%d", i);
        snprintf(prev, sizeof prev, "t%d", i - 1);
        json_t *t = json_pack("{s:s, s:[s], s:f, s:i, s:f}", "id", id, "cmd", "true", "cpu",
                              BENCH_TASK_CPU, "mem_mb", 16, "runtime_s", 0.01);
        if (chain && i > 0)
            json_object_set_new(t, "after", json_pack("[s]", prev));
        json_array_append_new(tasks, t);
    }
    json_t *doc = json_pack("{s:i, s:s, s:o}", "version", 1, "name", name, "tasks", tasks);
    int rc = json_dump_file(doc, path, JSON_COMPACT);
    json_decref(doc);
    return rc;
}

/* `paddock submit SPEC --wait --json`: the final JSON object (caller decrefs) or NULL. */
static json_t *submit_wait(const char *spec, const char *extra, int timeout_s, double *wall)
{
    static char out[1 << 16];
    char args[2 * PATH_MAX + 64];
    snprintf(args, sizeof args, "submit '%s' --wait --json --cluster '%s' %s", spec, g_cluster,
             extra);
    double t0 = now_s();
    int rc = run_paddock(out, sizeof out, timeout_s, args);
    *wall = now_s() - t0;
    /* the last JSON object that starts a line (the result may span several lines) */
    json_t *res = NULL;
    for (size_t p = 0; out[p] != '\0'; p++) {
        if (out[p] != '{' || (p > 0 && out[p - 1] != '\n'))
            continue;
        json_t *j = json_loads(out + p, JSON_DISABLE_EOF_CHECK, NULL);
        if (j != NULL && json_is_object(j)) {
            json_decref(res);
            res = j;
        } else {
            json_decref(j);
        }
    }
    if (res == NULL)
        fprintf(stderr, "bench_e2e: submit exited %d without a JSON result\n", rc);
    return res;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int is_jm(long pid)
{
    char path[64], buf[256] = "";
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, "paddock-jm") != NULL;
}

/* SIGTERM to the job managers of this cluster's jobs that still run (their jm.pid files). */
static void stop_jms(void)
{
    char jobs[PATH_MAX + 32];
    snprintf(jobs, sizeof jobs, "%s/jobs", g_cluster);
    DIR *d = opendir(jobs);
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[2 * PATH_MAX];
        snprintf(path, sizeof path, "%s/%s/jm.pid", jobs, e->d_name);
        FILE *f = fopen(path, "r");
        long pid = 0;
        if (f != NULL) {
            if (fscanf(f, "%ld", &pid) != 1)
                pid = 0;
            fclose(f);
        }
        if (pid > 0 && is_jm(pid))
            kill((pid_t)pid, SIGTERM);
    }
    closedir(d);
}

/* `paddock cluster up` in <tmp>/cluster-<idx>. 0 or -1. */
static int cluster_up(int idx, int rms, int pns, double pn_cpus)
{
    char args[2 * PATH_MAX], out[8192];
    snprintf(g_cluster, sizeof g_cluster, "%s/cluster-%d", g_tmp, idx);
    snprintf(args, sizeof args, "cluster up --dir '%s' --rm %d --pn %d --pn-cpus %g", g_cluster,
             rms, pns, pn_cpus);
    int rc = run_paddock(out, sizeof out, 120, args);
    if (rc != 0) {
        fprintf(stderr, "bench_e2e: cluster up failed (%d): %s\n", rc, out);
        return -1;
    }
    return 0;
}

/* Stops the job managers of the current cluster, then its daemons. */
static void cluster_down(void)
{
    if (g_cluster[0] == '\0')
        return;
    stop_jms();
    char args[2 * PATH_MAX];
    snprintf(args, sizeof args, "cluster down --dir '%s'", g_cluster);
    run_paddock(NULL, 0, 60, args);
    g_cluster[0] = '\0';
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void pctl(double *v, size_t n, double *p50, double *p99)
{
    qsort(v, n, sizeof *v, cmp_double);
    *p50 = n ? v[n / 2] : 0;
    *p99 = n ? v[(size_t)((double)(n - 1) * 0.99)] : 0;
}

/* CPU time (user + system, all threads) of the cluster's PNs (DIR/pn-*.pid), in seconds. */
static double pn_cpu_s(void)
{
    double sum = 0;
    long tick = sysconf(_SC_CLK_TCK);
    for (int i = 0; i < 64; i++) {
        char path[2 * PATH_MAX], buf[1024];
        snprintf(path, sizeof path, "%s/pn-%d.pid", g_cluster, i);
        FILE *f = fopen(path, "r");
        long pid = 0;
        if (f == NULL)
            continue;
        if (fscanf(f, "%ld", &pid) != 1)
            pid = 0;
        fclose(f);
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        if (pid <= 0 || (f = fopen(path, "r")) == NULL)
            continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *p = strrchr(buf, ')'); /* the fields after the command name */
        unsigned long ut = 0, st = 0;
        if (p != NULL &&
            sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
            sum += (double)(ut + st) / (double)tick;
    }
    return sum;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The wall time (ms) of the first line of a daemon's log ("2026-01-02T03:04:05.678Z ..."), or
 * 0. */
static int64_t log_first_ms(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    char line[256] = "";
    char *ok = fgets(line, sizeof line, f);
    fclose(f);
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int ms = 0;
    if (ok == NULL || sscanf(line, "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                             &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) != 7)
        return 0;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (int64_t)timegm(&tm) * 1000 + ms;
}

/* --first-task N: N one-task jobs (`true`) submitted one after another to one idle cluster,
 * `paddock submit --wait --json` run directly (no shell), and from each job's files the time
 * from the submit command's start to its task running, split where the clocks of this
 * machine allow: the CLI (submit's start to the JM's first log line: reading and checking the
 * spec, the RM's limits and registration, the job directory, the JM's exec), the JM (its first
 * log line to its node receiving TASK_CREATE: the JM's start, the RM's view and grant, the
 * placement), the PN (the create's arrival to the task running: its directory, the spawn).
 * --gap-ms G (default 500) passes between one job's end and the next submit: back to back
 * (0), a JM's view snapshot may wait for the RM's next delta tick (rm/rmserver.c shares a
 * snapshot among joiners within 100 ms of the last). Prints every run and the medians.
 * Returns 0 or -1. */
static int first_task(int runs, int gap_ms, int rms, int pns, double pn_cpus, int json)
{
    char spec[PATH_MAX + 32];
    snprintf(spec, sizeof spec, "%s/one.json", g_tmp);
    if (write_spec(spec, "bench-e2e-one", 1, 0, 0) != 0 || cluster_up(3, rms, pns, pn_cpus) != 0)
        return -1;
    double *tot = calloc((size_t)runs, sizeof *tot), *cli = calloc((size_t)runs, sizeof *cli),
           *jm = calloc((size_t)runs, sizeof *jm), *pn = calloc((size_t)runs, sizeof *pn),
           *cmd = calloc((size_t)runs, sizeof *cmd);
    int n = 0, rc = -1;
    if (!tot || !cli || !jm || !pn || !cmd)
        goto out;
    char exe[PATH_MAX + 16], outp[PATH_MAX + 32];
    snprintf(exe, sizeof exe, "%s/paddock", g_bin);
    snprintf(outp, sizeof outp, "%s/one.out", g_tmp);
    for (int r = 0; r < runs; r++) {
        struct timespec gap = {gap_ms / 1000, (long)(gap_ms % 1000) * 1000000L};
        nanosleep(&gap,
                  NULL); /* a user's submit on an idle cluster, not one right behind another */
        char *argv[] = {exe, "submit", spec, "--wait", "--json", "--cluster", g_cluster, NULL};
        int64_t t0 = wall_ms();
        double m0 = now_s();
        fflush(stdout); /* the child's copy of an unwritten line would print it again */
        pid_t pid = fork();
        if (pid < 0)
            goto out;
        if (pid == 0) {
            FILE *o = freopen(outp, "w", stdout);
            if (o == NULL)
                _exit(127);
            execv(exe, argv);
            _exit(127);
        }
        int st;
        if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "bench_e2e: submit %d failed\n", r);
            goto out;
        }
        double m1 = now_s();
        json_t *res = json_load_file(outp, JSON_DISABLE_EOF_CHECK, NULL);
        const char *dir = json_string_value(json_object_get(res, "job_dir"));
        char path[2 * PATH_MAX];
        snprintf(path, sizeof path, "%s/report.json", dir ? dir : "");
        json_t *rep = dir ? json_load_file(path, 0, NULL) : NULL;
        json_t *a = json_array_get(json_object_get(rep, "attempts"), 0);
        double t_job = json_number_value(json_object_get(rep, "started_ms"));
        double q = json_number_value(json_object_get(a, "queued_s")),
               s0 = json_number_value(json_object_get(a, "start_s"));
        snprintf(path, sizeof path, "%s/jm.log", dir ? dir : "");
        int64_t jm0 = log_first_ms(path);
        if (a == NULL || t_job <= 0 || jm0 <= 0) {
            fprintf(stderr, "bench_e2e: run %d: no attempt, job start or JM log in %s\n", r,
                    dir ? dir : "?");
            json_decref(rep);
            json_decref(res);
            goto out;
        }
        double created = t_job + q * 1000.0, started = t_job + s0 * 1000.0;
        tot[n] = started - (double)t0;
        cli[n] = (double)(jm0 - t0);
        jm[n] = created - (double)jm0;
        pn[n] = started - created;
        cmd[n] = (m1 - m0) * 1000.0;
        if (!json)
            printf("first task %2d: %6.1f ms submit -> running (CLI %5.1f, JM %5.1f, PN %5.1f); "
                   "whole submit --wait %6.1f ms\n",
                   r + 1, tot[n], cli[n], jm[n], pn[n], cmd[n]);
        n++;
        json_decref(rep);
        json_decref(res);
    }
    double v[5][2];
    double *arr[5] = {tot, cli, jm, pn, cmd};
    for (int k = 0; k < 5; k++)
        pctl(arr[k], (size_t)n, &v[k][0], &v[k][1]);
    if (json)
        printf("{\"first_task_runs\": %d, \"submit_to_running_ms\": {\"p50\": %.1f, \"p99\": "
               "%.1f}, \"cli_ms_p50\": %.1f, \"jm_ms_p50\": %.1f, \"pn_ms_p50\": %.1f, "
               "\"submit_wait_ms_p50\": %.1f}\n",
               n, v[0][0], v[0][1], v[1][0], v[2][0], v[3][0], v[4][0]);
    else
        printf("submit -> first task running, 1-task job, median of %d: %.1f ms (max %.1f; target "
               "<= 50 ms): CLI %.1f, JM %.1f, PN %.1f (medians of each part); whole submit "
               "--wait %.1f ms\n",
               n, v[0][0], v[0][1], v[1][0], v[2][0], v[3][0], v[4][0]);
    rc = 0;
out:
    free(tot);
    free(cli);
    free(jm);
    free(pn);
    free(cmd);
    cluster_down();
    return rc;
}

int main(int argc, char **argv)
{
    int ntasks = 2000, nchain = 200, forks = 2000, spawns = 4000, rms = 1, pns = 1, json = 0,
        floor_runs = 3, array = 0, first = 0, gap_ms = 500;
    char deadline[64] = "";
    double pn_cpus = 2;
    const char *bin = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
            continue;
        }
        if (strcmp(argv[i], "--array") == 0) {
            array = 1;
            continue;
        }
        if (i + 1 >= argc)
            goto usage;
        const char *v = argv[++i];
        if (strcmp(argv[i - 1], "--tasks") == 0)
            ntasks = atoi(v);
        else if (strcmp(argv[i - 1], "--chain") == 0)
            nchain = atoi(v);
        else if (strcmp(argv[i - 1], "--forks") == 0)
            forks = atoi(v);
        else if (strcmp(argv[i - 1], "--spawns") == 0)
            spawns = atoi(v);
        else if (strcmp(argv[i - 1], "--floor-runs") == 0)
            floor_runs = atoi(v);
        else if (strcmp(argv[i - 1], "--pn") == 0)
            pns = atoi(v);
        else if (strcmp(argv[i - 1], "--rm") == 0)
            rms = atoi(v);
        else if (strcmp(argv[i - 1], "--pn-cpus") == 0)
            pn_cpus = atof(v);
        else if (strcmp(argv[i - 1], "--deadline") == 0)
            snprintf(deadline, sizeof deadline, "--deadline %s", v);
        else if (strcmp(argv[i - 1], "--bin") == 0)
            bin = v;
        else if (strcmp(argv[i - 1], "--first-task") == 0)
            first = atoi(v);
        else if (strcmp(argv[i - 1], "--gap-ms") == 0)
            gap_ms = atoi(v);
        else
            goto usage;
    }
    if (ntasks < 1 || ntasks > (array ? 1000000 : 100000) || nchain < 2 || nchain > 100000 ||
        forks < 1 || spawns < 1 || pns < 1 || pns > 64 || rms < 1 || rms > 7 || !(pn_cpus > 0) ||
        floor_runs < 3 || floor_runs > SPAWNFLOOR_MAX_RUNS || first < 0 || first > 1000 ||
        gap_ms < 0 || gap_ms > 60000)
        goto usage;
    if (bin != NULL) {
        snprintf(g_bin, sizeof g_bin, "%s", bin);
    } else {
        ssize_t l = readlink("/proc/self/exe", g_bin, sizeof g_bin - 1);
        if (l <= 0)
            goto usage;
        g_bin[l] = '\0';
        char *slash = strrchr(g_bin, '/');
        if (slash != NULL)
            *slash = '\0';
    }
    /* $TMPDIR picks the file system the cluster's directories (job and task files) live on */
    const char *tmpdir = getenv("TMPDIR");
    snprintf(g_tmp, sizeof g_tmp, "%s/paddock-bench-e2e-XXXXXX",
             tmpdir != NULL && tmpdir[0] != '\0' ? tmpdir : "/tmp");
    if (mkdtemp(g_tmp) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    int status = 1;
    json_t *flat = NULL, *chain = NULL, *rep = NULL;
    if (first > 0) { /* job start only */
        status = first_task(first, gap_ms, rms, pns, pn_cpus, json) == 0 ? 0 : 1;
        goto down;
    }
    /* Floors while no cluster runs: the floor reaps any child (bench_spawnfloor.h). */
    double fork_rate = fork_exec_rate(forks);
    /* slots per PN: how many BENCH_TASK_CPU tasks its cpus hold (the epsilon absorbs 2 / 0.1
       landing just under 20) */
    double slots = (double)pns * (double)(long)(pn_cpus / BENCH_TASK_CPU + 1e-9);
    int in_flight = spawnfloor_in_flight(slots);
    static spawnfloor_series_t sf;
    if (spawnfloor_series_add(&sf, in_flight, spawns, (floor_runs + 1) / 2, 'b') != 0) {
        perror("bench_e2e: posix_spawn floor");
        goto down;
    }

    /* Each job on a cluster of its own (a fresh PN and RM): the figures of one do not carry the
       other's state. */
    char spec[PATH_MAX + 32];
    snprintf(spec, sizeof spec, "%s/flat.json", g_tmp);
    double flat_wall = 0, chain_wall = 0;
    if (write_spec(spec, "bench-e2e-flat", ntasks, 0, array) != 0 ||
        cluster_up(1, rms, pns, pn_cpus) != 0)
        goto down;
    /* 5 minutes, and a second more per 100 tasks: a million tasks run for many minutes here */
    double pn_cpu0 = pn_cpu_s();
    flat = submit_wait(spec, deadline, 300 + ntasks / 100, &flat_wall);
    double pn_cpu = pn_cpu_s() - pn_cpu0; /* the PNs' own threads, not their tasks */
    /* the JM's memory, from its state.json (it has exited: the values are its last) */
    double jm_rss_kb = 0, jm_peak_kb = 0;
    if (flat != NULL) {
        char sp[2 * PATH_MAX];
        snprintf(sp, sizeof sp, "%s/state.json",
                 json_string_value(json_object_get(flat, "job_dir")));
        json_t *st = json_load_file(sp, 0, NULL);
        jm_rss_kb = json_number_value(json_object_get(st, "rss_kb"));
        jm_peak_kb = json_number_value(json_object_get(st, "rss_peak_kb"));
        json_decref(st);
        const char *state = json_string_value(json_object_get(flat, "state"));
        if (state == NULL || strcmp(state, "succeeded") != 0) { /* why, before it is removed */
            fprintf(stderr, "bench_e2e: the job %s: %s\n", state ? state : "?",
                    json_string_value(json_object_get(flat, "reason")));
            char cmd[2 * PATH_MAX + 64];
            snprintf(cmd, sizeof cmd, "grep -E 'warn|error' '%s/jm.log' | tail -20 >&2",
                     json_string_value(json_object_get(flat, "job_dir")));
            if (system(cmd) != 0)
                fprintf(stderr, "bench_e2e: no warnings in jm.log\n");
        }
    }
    cluster_down();
    if (flat == NULL)
        goto down;
    if (spawnfloor_series_add(&sf, in_flight, spawns, floor_runs / 2, 'a') != 0) {
        perror("bench_e2e: posix_spawn floor");
        goto down;
    }
    spawnfloor_series_finish(&sf);
    snprintf(spec, sizeof spec, "%s/chain.json", g_tmp);
    if (write_spec(spec, "bench-e2e-chain", nchain, 1, 0) != 0 ||
        cluster_up(2, rms, pns, pn_cpus) != 0 ||
        (chain = submit_wait(spec, "", 300, &chain_wall)) == NULL)
        goto down;

    char path[2 * PATH_MAX];
    snprintf(path, sizeof path, "%s/jobs/%s/report.json", g_cluster,
             json_string_value(json_object_get(chain, "job_id")));
    rep = json_load_file(path, 0, NULL);
    double *lat = calloc((size_t)nchain, sizeof *lat);
    size_t nlat = 0;
    json_t *atts = rep != NULL ? json_object_get(rep, "attempts") : NULL;
    double *start = calloc((size_t)nchain, sizeof *start),
           *end = calloc((size_t)nchain, sizeof *end);
    int *seen = calloc((size_t)nchain, sizeof *seen);
    if (lat == NULL || start == NULL || end == NULL || seen == NULL)
        goto down;
    size_t i;
    json_t *a;
    json_array_foreach(atts, i, a)
    {
        const char *id = json_string_value(json_object_get(a, "task"));
        const char *st = json_string_value(json_object_get(a, "state"));
        if (id == NULL || id[0] != 't' || st == NULL || strcmp(st, "succeeded") != 0)
            continue;
        int k = atoi(id + 1);
        if (k < 0 || k >= nchain)
            continue;
        start[k] = json_number_value(json_object_get(a, "start_s"));
        end[k] = json_number_value(json_object_get(a, "end_s"));
        seen[k] = 1;
    }
    for (int k = 1; k < nchain; k++)
        if (seen[k] && seen[k - 1])
            lat[nlat++] = (start[k] - end[k - 1]) * 1000.0;
    double l50, l99;
    pctl(lat, nlat, &l50, &l99);

    double ms = json_number_value(json_object_get(flat, "makespan_s"));
    long ok = (long)json_integer_value(json_object_get(flat, "tasks_succeeded"));
    double rate = ms > 0 ? (double)ok / ms : 0,
           rate_wall = flat_wall > 0 ? (double)ok / flat_wall : 0;
    double to_floor = sf.one_median > 0 ? rate / sf.one_median : 0,
           to_best = sf.best_median > 0 ? rate / sf.best_median : 0,
           wall_to_floor = sf.one_median > 0 ? rate_wall / sf.one_median : 0,
           wall_to_best = sf.best_median > 0 ? rate_wall / sf.best_median : 0,
           to_fork = fork_rate > 0 ? rate / fork_rate : 0;
    double pn_us = ok > 0 ? pn_cpu * 1e6 / (double)ok : 0,
           pn_to_floor_cpu = sf.cpu_us_median > 0 ? pn_us / sf.cpu_us_median : 0;
    if (json) {
        printf("{\"fork_exec_per_s\": %.0f, ", fork_rate);
        spawnfloor_series_json(stdout, &sf);
        printf(", \"tasks\": %d, \"tasks_succeeded\": %ld, "
               "\"state\": \"%s\", \"makespan_s\": %.3f, \"tasks_per_s\": %.0f, "
               "\"tasks_per_s_submit_wall\": %.0f, \"ratio_to_spawn_floor\": %.3f, "
               "\"ratio_to_best_floor\": %.3f, \"wall_ratio_to_spawn_floor\": %.3f, "
               "\"wall_ratio_to_best_floor\": %.3f, "
               "\"ratio_to_fork_exec\": %.3f, \"chain\": %d, "
               "\"ready_to_running_ms\": {\"p50\": %.3f, \"p99\": %.3f, \"samples\": %zu}, "
               "\"array\": %s, \"jm_rss_kb\": %.0f, \"jm_rss_peak_kb\": %.0f, "
               "\"pn_cpu_us_per_task\": %.1f, \"pn_cpu_to_floor_cpu\": %.3f}\n",
               ntasks, ok, json_string_value(json_object_get(flat, "state")), ms, rate, rate_wall,
               to_floor, to_best, wall_to_floor, wall_to_best, to_fork, nchain, l50, l99, nlat,
               array ? "true" : "false", jm_rss_kb, jm_peak_kb, pn_us, pn_to_floor_cpu);
    } else {
        printf("posix_spawn floor:            %d in flight (%g slots capped at %ld cores), %d "
               "spawns per configuration\n",
               in_flight, slots, sysconf(_SC_NPROCESSORS_ONLN), spawns);
        spawnfloor_series_print(stdout, &sf);
        printf("serial fork+exec+wait loop:   %.0f processes/s (%d)\n", fork_rate, forks);
        printf("submit -> JM -> PN, `true`:   %.0f tasks/s over the makespan (%ld of %d "
               "succeeded, %.2f s, state %s) = %.2f x the one-process floor, %.2f x the best of P "
               "processes (target >= 0.8), %.2f x the serial fork+exec loop\n",
               rate, ok, ntasks, ms, json_string_value(json_object_get(flat, "state")), to_floor,
               to_best, to_fork);
        printf("                              %.0f tasks/s over the whole submit command "
               "(%.2f s) = %.2f x the one-process floor, %.2f x the best of P\n",
               rate_wall, flat_wall, wall_to_floor, wall_to_best);
        printf("ready -> running, idle:       %.3f ms p50, %.3f ms p99 (%zu tasks in a chain; "
               "target p99 <= 5 ms)\n",
               l50, l99, nlat);
        printf("PN CPU:                       %.1f us per task (the %d PNs' own threads, user + "
               "system, over the submit command; their tasks not counted) = %.2f x the floor's "
               "own spawning CPU (%.1f us per spawn)\n",
               pn_us, pns, pn_to_floor_cpu, sf.cpu_us_median);
        printf("JM memory (%s spec):       %.1f MiB at the end, %.1f MiB peak = %.0f bytes per "
               "task\n",
               array ? "array" : "written-out", jm_rss_kb / 1024, jm_peak_kb / 1024,
               jm_peak_kb * 1024 / ntasks);
    }
    status = 0;
    free(lat);
    free(start);
    free(end);
    free(seen);
down:
    json_decref(flat);
    json_decref(chain);
    json_decref(rep);
    cluster_down();
    nftw(g_tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return status;
usage:
    fprintf(stderr, "usage: bench_e2e [--tasks N] [--array] [--chain M] [--forks F] [--spawns S] "
                    "[--floor-runs R] [--rm R] [--pn K] [--pn-cpus C] [--deadline D] [--bin DIR] "
                    "[--first-task N [--gap-ms G]] [--json]\n");
    return 2;
}
