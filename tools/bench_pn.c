/* bench_pn - the process node's throughput for trivial tasks and its idle memory.
 *
 * Prints, from one run on this machine:
 *   - the machine's floor for running processes: posix_spawn of /bin/true (output to /dev/null)
 *     with as many in flight as the PN has slots for these tasks (node.cpus / 0.01 cpu), capped
 *     at the online cores, from one process and as the best of P processes; --floor-runs R
 *     (default 3, at least 3) measurements, the first half before the PN starts and the rest
 *     after it stops, every one printed, the PN held to their medians (bench_spawnfloor.h);
 *   - the rate of a serial fork + exec("true") + wait loop, kept for comparison with earlier
 *     figures (far slower than the floor on more than one core);
 *   - the rate at which a real paddock-pn, driven over 127.0.0.1 by this program acting as a
 *     job manager, takes `true` tasks from TASK_CREATE to their terminal TASK_STATUS;
 *   - the latency from TASK_CREATE to the status saying the task started (RUNNING, or its end
 *     when both come as one) on an idle PN (p50, p99);
 *   - the PN's resident set size when idle: at start, and after the load (when it still
 *     remembers the finished tasks for JMs that reconnect, pn [tasks] retain);
 *   - the PN's own CPU time per task during the run (all its threads, user + system, from
 *     /proc/PID/stat; its tasks' CPU not counted): the PN's cost per task, which depends far
 *     less than the rates on what else the machine runs meanwhile.
 * Targets (docs/architecture.md, "Targets"): PN throughput >= half the floor; idle RSS < 10 MiB.
 *
 *   - the messages carrying statuses per task (a PN sends the statuses of one loop pass for a
 *     job as one TASK_STATUS_BATCH to a JM that takes it; --no-batch acts as a JM that does not).
 * usage: bench_pn [--tasks N] [--forks N] [--spawns N] [--floor-runs R] [--bin DIR] [--json]
 *                 [--no-batch] [--set SECTION.KEY=VALUE]...
 * (--set lines are added to the PN's configuration, e.g. --set tasks.cgroup_base=DIR; the PN's
 * work directory is made under $TMPDIR, else /tmp)
 */
#include <czmq.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_spawnfloor.h"
#include "common/clock.h"
#include "proto/proto.h"

/* cpu of each benchmark task: with the PN's cpus it sets the PN's slots */
#define BENCH_TASK_CPU 0.01

static double now_s(void)
{
    return (double)clock_mono_ns() / 1e9;
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static double fork_exec_rate(int n)
{
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        if (pid < 0)
            return 0;
        int st;
        waitpid(pid, &st, 0);
    }
    return n / (now_s() - t0);
}

/* CPU time (user + system, every thread) of a process, in seconds; -1 when unreadable. */
static double cpu_s(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* fields after the command: state is field 3 */
    unsigned long long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* CPU time (seconds) of the threads of a process whose name is `comm` (the PN's spawner
 * threads are "pn-spawn"); 0 when there are none. */
static double threads_cpu_s(pid_t pid, const char *comm)
{
    char path[384], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    double sum = 0;
    struct dirent *e;
    size_t clen = strlen(comm);
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/%d/task/%s/stat", (int)pid, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        char *open = strchr(buf, '('), *p = strrchr(buf, ')');
        unsigned long long ut = 0, st = 0;
        if (!open || !p || (size_t)(p - open - 1) != clen || strncmp(open + 1, comm, clen) != 0 ||
            sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
            continue;
        sum += (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
    }
    closedir(d);
    return sum;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static long rss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

int main(int argc, char **argv)
{
    int ntasks = 5000, nforks = 3000, nspawns = 4000, json = 0, floor_runs = 3, batch = 1;
    double node_cpus = 0; /* --set node.cpus=X; 0: the PN detects the online cores */
    const char *sets[16];
    int nsets = 0;
    const char *bin = getenv("PADDOCK_BIN_DIR");
    char self[4096];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--tasks") == 0 && i + 1 < argc)
            ntasks = atoi(argv[++i]);
        else if (strcmp(argv[i], "--forks") == 0 && i + 1 < argc)
            nforks = atoi(argv[++i]);
        else if (strcmp(argv[i], "--spawns") == 0 && i + 1 < argc)
            nspawns = atoi(argv[++i]);
        else if (strcmp(argv[i], "--floor-runs") == 0 && i + 1 < argc)
            floor_runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--bin") == 0 && i + 1 < argc)
            bin = argv[++i];
        else if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (strcmp(argv[i], "--no-batch") == 0)
            batch = 0;
        else if (strcmp(argv[i], "--set") == 0 && i + 1 < argc && nsets < 16 &&
                 strchr(argv[i + 1], '.') && strchr(argv[i + 1], '=')) {
            sets[nsets++] = argv[++i];
            if (strncmp(argv[i], "node.cpus=", 10) == 0)
                node_cpus = atof(argv[i] + 10);
        } else {
            fprintf(stderr, "usage: bench_pn [--tasks N] [--forks N] [--spawns N] [--floor-runs R] "
                            "[--bin DIR] [--json] [--no-batch] [--set SECTION.KEY=VALUE]...\n");
            return 2;
        }
    }
    if (ntasks < 1 || ntasks > 1000000 || nforks < 1 || nspawns < 1 || floor_runs < 3 ||
        floor_runs > SPAWNFLOOR_MAX_RUNS) {
        fprintf(stderr, "bench_pn: bad counts\n");
        return 2;
    }
    if (!bin) { /* beside this program */
        ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
        if (len <= 0)
            return 1;
        self[len] = 0;
        *strrchr(self, '/') = 0;
        bin = self;
    }
    zsys_handler_set(NULL);

    /* Floors while the PN is not running: the floor reaps any child (bench_spawnfloor.h). */
    double fork_rate = fork_exec_rate(nforks);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    double slots = (node_cpus > 0 ? node_cpus : (double)cores) / BENCH_TASK_CPU;
    int in_flight = spawnfloor_in_flight(slots);
    static spawnfloor_series_t sf;
    if (spawnfloor_series_add(&sf, in_flight, nspawns, (floor_runs + 1) / 2, 'b') != 0) {
        perror("bench_pn: posix_spawn floor");
        return 1;
    }

    /* $TMPDIR picks the file system the PN's work directory (task files) lives on */
    const char *tmpdir = getenv("TMPDIR");
    char dir[200];
    snprintf(dir, sizeof dir, "%s/paddock-bench-pn-XXXXXX",
             tmpdir && tmpdir[0] && strlen(tmpdir) < 150 ? tmpdir : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    char conf[256], epfile[256], exe[4200];
    snprintf(conf, sizeof conf, "%s/pn.conf", dir);
    snprintf(epfile, sizeof epfile, "%s/work/pn.endpoint", dir);
    snprintf(exe, sizeof exe, "%s/paddock-pn", bin);
    FILE *f = fopen(conf, "w");
    if (!f)
        return 1;
    fprintf(f,
            "[node]\nname = bench\n[pn]\nlisten = tcp://127.0.0.1:0\nwork_dir = %s/work\n"
            "log_level = warn\n[queue]\nmax_regular = 1000000\n",
            dir);
    for (int i = 0; i < nsets; i++) { /* section.key=value -> [section] key = value */
        const char *dot = strchr(sets[i], '.');
        fprintf(f, "[%.*s]\n%s\n", (int)(dot - sets[i]), sets[i], dot + 1);
    }
    fclose(f);
    pid_t pn = fork();
    if (pn == 0) {
        execl(exe, "paddock-pn", "--config", conf, (char *)NULL);
        _exit(127);
    }
    char ep[256] = "";
    for (int i = 0; i < 5000 && !ep[0]; i++) {
        FILE *e = fopen(epfile, "r");
        if (e) {
            if (!fgets(ep, sizeof ep, e) || !strchr(ep, '\n'))
                ep[0] = 0;
            fclose(e);
        }
        if (!ep[0])
            pause_ms(2);
    }
    int rc = 1;
    zsock_t *s = NULL;
    if (!ep[0]) {
        fprintf(stderr, "bench_pn: %s did not start\n", exe);
        goto out;
    }
    *strchr(ep, '\n') = 0;
    pause_ms(300); /* let it settle before measuring idle memory */
    long idle_before = rss_kb(pn);
    s = zsock_new(ZMQ_DEALER);
    zsock_set_linger(s, 0);
    zsock_set_sndhwm(s, 0);
    zsock_set_rcvhwm(s, 0);
    zsock_set_rcvtimeo(s, 10000);
    if (zsock_connect(s, "%s", ep) != 0)
        goto out;
    proto_buf_t buf;
    proto_buf_init(&buf);
    char *targv[] = {"true", NULL};
    char name[32];
    double t0 = now_s(), cpu0 = cpu_s(pn), sp0 = threads_cpu_s(pn, "pn-spawn");
    for (int i = 0; i < ntasks; i++) {
        proto_msg_t m;
        proto_msg_init(&m, PROTO_TASK_CREATE);
        snprintf(name, sizeof name, "t%d", i);
        m.task_create.job_id = "j-00000000b0b0";
        m.task_create.task_id = name;
        m.task_create.argv = targv;
        m.task_create.argc = 1;
        m.task_create.cpu = BENCH_TASK_CPU;
        m.task_create.mem_mb = 1;
        m.task_create.runtime_ms = 5;
        m.task_create.batch_statuses = batch;
        if (proto_encode(&m, &buf, NULL, 0) != 0 || zsock_send(s, "b", buf.data, buf.len) != 0)
            goto out;
    }
    int done = 0, ok = 0;
    long status_msgs = 0;
    while (done < ntasks) {
        zframe_t *fr = zframe_recv(s);
        if (!fr) {
            fprintf(stderr, "bench_pn: no status for 10 s (%d of %d done)\n", done, ntasks);
            goto out;
        }
        proto_msg_t m;
        if (proto_decode(zframe_data(fr), zframe_size(fr), &m, NULL, NULL, 0) == 0) {
            /* a batch is its statuses in order, as if each came alone */
            proto_task_status_t *sv =
                m.type == PROTO_TASK_STATUS_BATCH ? m.task_status_batch.statuses : &m.task_status;
            uint32_t ns = m.type == PROTO_TASK_STATUS_BATCH ? m.task_status_batch.nstatuses
                          : m.type == PROTO_TASK_STATUS     ? 1
                                                            : 0;
            status_msgs += ns > 0;
            for (uint32_t k = 0; k < ns; k++)
                if (proto_task_state_terminal(sv[k].state)) {
                    done++;
                    ok += sv[k].state == PROTO_TASK_SUCCEEDED;
                }
            if (m.type == PROTO_ERROR) {
                done++;
            }
            proto_msg_close(&m);
        }
        zframe_destroy(&fr);
    }
    double pn_rate = ntasks / (now_s() - t0);
    double msgs_per_task = (double)status_msgs / ntasks;
    double cpu1 = cpu_s(pn); /* the PN's own CPU (all its threads), not its tasks' */
    double cpu_us = cpu0 >= 0 && cpu1 >= 0 ? (cpu1 - cpu0) * 1e6 / ntasks : -1;
    /* of which its spawner threads (pn/spawner.h): the loop thread's share is the rest */
    double spawn_us = (threads_cpu_s(pn, "pn-spawn") - sp0) * 1e6 / ntasks;

    /* start latency on an idle PN: one task at a time, TASK_CREATE sent -> started received */
    enum { NLAT = 300 };
    static double lat[NLAT];
    for (int i = 0; i < NLAT; i++) {
        proto_msg_t m;
        proto_msg_init(&m, PROTO_TASK_CREATE);
        snprintf(name, sizeof name, "lat%d", i);
        m.task_create.job_id = "j-00000000b0b0";
        m.task_create.task_id = name;
        m.task_create.argv = targv;
        m.task_create.argc = 1;
        m.task_create.cpu = BENCH_TASK_CPU;
        m.task_create.mem_mb = 1;
        m.task_create.batch_statuses = batch;
        double ts = now_s();
        if (proto_encode(&m, &buf, NULL, 0) != 0 || zsock_send(s, "b", buf.data, buf.len) != 0)
            goto out;
        int phase = 0; /* 1 once running seen, 2 once terminal seen */
        while (phase < 2) {
            zframe_t *fr = zframe_recv(s);
            if (!fr)
                goto out;
            if (proto_decode(zframe_data(fr), zframe_size(fr), &m, NULL, NULL, 0) == 0) {
                /* started: its RUNNING, or its end when the PN said both at once (a task that
                   ended in the loop pass its start was seen in, docs/pn.md) */
                proto_task_status_t *sv = m.type == PROTO_TASK_STATUS_BATCH
                                              ? m.task_status_batch.statuses
                                              : &m.task_status;
                uint32_t ns = m.type == PROTO_TASK_STATUS_BATCH ? m.task_status_batch.nstatuses
                              : m.type == PROTO_TASK_STATUS     ? 1
                                                                : 0;
                if (ns == 0)
                    phase = 2;
                for (uint32_t k = 0; k < ns; k++) {
                    if (phase == 0 &&
                        (sv[k].state == PROTO_TASK_RUNNING ||
                         (proto_task_state_terminal(sv[k].state) && sv[k].started_at_ms))) {
                        lat[i] = now_s() - ts;
                        phase = 1;
                    }
                    if (proto_task_state_terminal(sv[k].state))
                        phase = 2;
                }
                proto_msg_close(&m);
            }
            zframe_destroy(&fr);
        }
    }
    qsort(lat, NLAT, sizeof *lat, cmp_double);
    double p50 = lat[NLAT / 2] * 1e3, p99 = lat[NLAT * 99 / 100] * 1e3;
    pause_ms(1500);
    long idle_after = rss_kb(pn);
    proto_buf_close(&buf);
    /* the rest of the floor runs once the PN is gone */
    zsock_destroy(&s);
    kill(pn, SIGTERM);
    int pst;
    waitpid(pn, &pst, 0);
    pn = 0;
    if (spawnfloor_series_add(&sf, in_flight, nspawns, floor_runs / 2, 'a') != 0) {
        perror("bench_pn: posix_spawn floor");
        goto out;
    }
    spawnfloor_series_finish(&sf);
    double to_floor = sf.one_median > 0 ? pn_rate / sf.one_median : 0;
    double to_best = sf.best_median > 0 ? pn_rate / sf.best_median : 0;
    /* what posix_spawn and the reaping alone cost the floor's spawning process per task: no
       runner spawns for less, and it moves with the machine (five-fold between sessions) */
    double to_floor_cpu = sf.cpu_us_median > 0 && cpu_us >= 0 ? cpu_us / sf.cpu_us_median : 0;
    if (json) {
        printf("{\"fork_exec_per_s\":%.0f,", fork_rate);
        spawnfloor_series_json(stdout, &sf);
        printf(",\"pn_tasks_per_s\":%.0f,\"ratio\":%.3f,"
               "\"ratio_to_spawn_floor\":%.3f,\"ratio_to_best_floor\":%.3f,\"tasks\":%d,"
               "\"succeeded\":%d,\"pn_idle_rss_kb\":%ld,\"pn_idle_rss_after_kb\":%ld,"
               "\"start_latency_p50_ms\":%.3f,\"start_latency_p99_ms\":%.3f,"
               "\"pn_cpu_us_per_task\":%.1f,\"pn_spawner_cpu_us_per_task\":%.1f,"
               "\"pn_cpu_to_floor_cpu\":%.3f,\"pn_cpu_over_floor_us\":%.1f,"
               "\"status_messages_per_task\":%.3f,\"batch\":%s}\n",
               pn_rate, pn_rate / fork_rate, to_floor, to_best, ntasks, ok, idle_before, idle_after,
               p50, p99, cpu_us, spawn_us, to_floor_cpu, cpu_us - sf.cpu_us_median, msgs_per_task,
               batch ? "true" : "false");
    } else {
        printf("posix_spawn floor:     %d in flight (%g slots capped at %ld cores), %d spawns "
               "per configuration\n",
               in_flight, slots, cores, nspawns);
        spawnfloor_series_print(stdout, &sf);
        printf("serial fork+exec+wait: %8.0f processes/s (%d)\n"
               "paddock-pn true tasks: %8.0f tasks/s (%d, %d succeeded) = %.2f x the one-process "
               "floor, %.2f x the best of P processes (target >= 0.8), %.2f x the serial "
               "fork+exec loop\n"
               "paddock-pn idle RSS:   %8.1f MiB at start (target < 10)\n"
               "paddock-pn RSS after:  %8.1f MiB idle after "
               "the run, its %d finished tasks still remembered for reconnecting JMs\n",
               fork_rate, nforks, pn_rate, ntasks, ok, to_floor, to_best, pn_rate / fork_rate,
               idle_before / 1024.0, idle_after / 1024.0, ntasks);
    }
    if (!json)
        printf("idle PN start latency: %8.3f ms p50, %.3f ms p99 (create sent -> started "
               "received, %d tasks)\n"
               "paddock-pn CPU:        %8.1f us per task (its own threads, user + system, "
               "during the run; its tasks not counted), of which %.1f us in its spawner "
               "threads\n"
               "                       = %.2f x the floor's own spawning CPU (%.1f us per spawn, "
               "median); %.1f us per task above it\n"
               "status messages:       %8.3f per task (%s)\n",
               p50, p99, NLAT, cpu_us, spawn_us, to_floor_cpu, sf.cpu_us_median,
               cpu_us - sf.cpu_us_median, msgs_per_task,
               batch ? "TASK_STATUS_BATCH taken" : "--no-batch: one TASK_STATUS each");
    rc = ok == ntasks ? 0 : 1;
out:
    zsock_destroy(&s);
    if (pn > 0) {
        kill(pn, SIGTERM);
        int st;
        waitpid(pn, &st, 0);
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_pn: could not remove %s\n", dir);
    return rc;
}
