#include "pn/pnconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/err.h"
#include "common/mem.h"

#define F(x) offsetof(pnconf_t, x)

const struct config_key pnconf_schema[] = {
    {"node", "name", CONFIG_STRING, F(name), "", "node name (default: the host name)", 0, 255},
    {"node", "rack", CONFIG_STRING, F(rack), "", "rack name", 0, 255},
    {"node", "cpus", CONFIG_DOUBLE, F(cpus), "0", "cores offered to tasks (0: detect)", 0, 4096},
    {"node", "memory", CONFIG_SIZE, F(memory), "0", "memory offered to tasks (0: detect)", 0,
     4.5e15},
    {"pn", "listen", CONFIG_STRING, F(listen), "tcp://127.0.0.1:7400",
     "ROUTER endpoint job managers connect to", 1, 255},
    {"pn", "advertise", CONFIG_STRING, F(advertise), "",
     "endpoint announced to the RM (default: listen)", 0, 255},
    {"pn", "work_dir", CONFIG_STRING, F(work_dir), "/var/lib/paddock/pn",
     "task directories and the file cache", 1, 4096},
    {"pn", "run_as", CONFIG_STRING, F(run_as), "",
     "user tasks run as when the PN runs as root (empty: the PN's user)", 0, 255},
    {"pn", "exec_shim", CONFIG_STRING, F(exec_shim), "",
     "path of paddock-pn-exec (default: beside paddock-pn)", 0, 4096},
    {"pn", "log_level", CONFIG_STRING, F(log_level), "info", "debug, info, warn or error", 1, 16},
    {"pn", "stop_mode", CONFIG_STRING, F(stop_mode), "handback",
     "on SIGTERM: handback (kill tasks, report them lost so JMs re-place them) or finish (take "
     "no new tasks, let queued and running ones end, then exit)",
     1, 16},
    {"pn", "stop_timeout", CONFIG_DURATION, F(stop_timeout_ms), "10m",
     "stop_mode finish: longest wait before the rest is handed back", 0, 86400000},
    {"pn", "ended_grace", CONFIG_DURATION, F(ended_grace_ms), "5s",
     "a job the RM leader says ended (done, failed, cancelled) while tasks of it live here: "
     "they are killed (reported cancelled) this long after the first heartbeat answer saying so",
     0, 86400000},
    {"pn", "orphan_grace", CONFIG_DURATION, F(orphan_grace_ms), "60s",
     "a job the RM leader says expired (its JM's lease lapsed) or does not know: its tasks here "
     "are killed (reported lost) this long after the first answer saying so, unless it is "
     "active again by then (long enough for a restarted JM to resume it and re-attach)",
     0, 86400000},
    {"rm", "endpoints", CONFIG_LIST, F(rm_api), "", "API endpoints of the RM replicas", 0, 16},
    {"rm", "heartbeat_endpoints", CONFIG_LIST, F(rm_heartbeat), "",
     "heartbeat endpoints of the RM replicas (default: endpoints)", 0, 16},
    {"rm", "heartbeat", CONFIG_DURATION, F(heartbeat_ms), "1s", "heartbeat interval", 10, 600000},
    {"security", "keys_dir", CONFIG_STRING, F(keys_dir), "",
     "CURVE keys from paddock keygen (empty: no CURVE, loopback only)", 0, 4096},
    {"security", "key_name", CONFIG_STRING, F(key_name), "paddock", "certificate name", 1, 255},
    {"queue", "max_regular", CONFIG_INT, F(max_regular), "10000", "queued regular tasks", 1,
     1000000},
    {"queue", "max_opportunistic", CONFIG_INT, F(max_opportunistic), "10000",
     "queued opportunistic tasks", 1, 1000000},
    {"queue", "max_running", CONFIG_INT, F(max_running), "4096", "running tasks", 1, 1000000},
    {"queue", "default_runtime", CONFIG_DURATION, F(default_runtime_ms), "10s",
     "runtime estimate of a task that has none", 1, 86400000LL * 365},
    {"queue", "backfill_depth", CONFIG_INT, F(backfill_depth), "64",
     "queued tasks past the head considered for backfill", 1, 100000},
    {"queue", "cpu_bins", CONFIG_STRING, F(cpu_bins), "0.5,1,2,4,8,16",
     "wait-time matrix rows (cores)", 1, 1024},
    {"queue", "mem_bins_mb", CONFIG_STRING, F(mem_bins_mb), "1024,2048,4096,8192,16384,32768,65536",
     "wait-time matrix columns (MiB)", 1, 1024},
    {"queue", "matrix_min_interval", CONFIG_DURATION, F(matrix_min_interval_ms), "20ms",
     "least time between two matrix computations", 0, 60000},
    {"queue", "matrix_depth", CONFIG_INT, F(matrix_depth), "256",
     "queued tasks simulated exactly for the matrix (the rest as a fluid)", 1, 100000},
    {"queue", "max_spec_bytes", CONFIG_SIZE, F(max_spec_bytes), "256MiB",
     "argv, env and paths held by live tasks, in total (over it: refused, ERR_FULL)", 4096, 1e12},
    {"tasks", "memory_margin_mb", CONFIG_INT, F(memory_margin_mb), "32",
     "RSS allowed above a task's request, absolute part", 0, 1 << 30},
    {"tasks", "memory_margin_pct", CONFIG_DOUBLE, F(memory_margin_pct), "10",
     "RSS allowed above a task's request, percent of the request", 0, 10000},
    {"tasks", "memory_poll", CONFIG_DURATION, F(memory_poll_ms), "100ms", "interval of RSS polling",
     10, 60000},
    {"tasks", "opportunistic_nice", CONFIG_INT, F(opportunistic_nice), "19",
     "nice value of opportunistic tasks", 0, 19},
    {"tasks", "spawn_threads", CONFIG_INT, F(spawn_threads), "-1",
     "threads that start task processes (0: the event loop's own; -1: a quarter of the cores, "
     "at least 2)",
     -1, 64},
    {"tasks", "path", CONFIG_STRING, F(task_path), "/usr/local/bin:/usr/bin:/bin",
     "PATH of tasks (a task's env may override it)", 1, 4096},
    {"tasks", "stage_allow", CONFIG_LIST, F(stage_allow), "",
     "directories task files may be staged from (empty: any)", 0, 1024},
    {"tasks", "stage_max_file", CONFIG_SIZE, F(stage_max_file), "1GiB", "largest file staged", 1,
     1e15},
    {"tasks", "cache_max", CONFIG_SIZE, F(cache_max), "10GiB",
     "staging cache size; entries no task uses are evicted, least recently used first (0: "
     "unbounded)",
     0, 1e18},
    {"tasks", "retain", CONFIG_DURATION, F(retain_ms), "10m",
     "how long finished tasks are remembered for reconnecting JMs", 0, 86400000},
    {"tasks", "retain_max", CONFIG_INT, F(retain_max), "20000",
     "at most this many finished tasks remembered", 0, 10000000},
    {"tasks", "keep_dirs", CONFIG_BOOL, F(keep_task_dirs), "false",
     "keep task directories when finished tasks are forgotten", 0, 0},
    {"tasks", "status_refresh", CONFIG_DURATION, F(status_refresh_ms), "5s",
     "a status with the current matrix to every job with live tasks this often (0: never)", 0,
     3600000},
    {"tasks", "quiet_queued", CONFIG_BOOL, F(quiet_queued), "true",
     "no QUEUED status for a regular task that starts as soon as it is set up (expected wait 0): "
     "its RUNNING status answers the create (docs/pn.md)",
     0, 0},
    {"tasks", "cgroup_base", CONFIG_STRING, F(cgroup_base), "",
     "cgroup v2 directory for one cgroup per task (cgroup.kill, cpu.weight); empty: off", 0, 4096},
    {"metrics", "listen", CONFIG_STRING, F(metrics_listen), "",
     "HOST:PORT of the HTTP server for Prometheus (/metrics); port 0 picks a free one (written "
     "to WORK/metrics.url); empty: off (docs/pn.md)",
     0, 255},
    CONFIG_END,
};

double pnconf_detect_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    double cpus = n > 0 ? (double)n : 1;
    /* cgroup v2 cpu.max ("max 100000" or "QUOTA PERIOD"), then v1 cfs quota */
    FILE *f = fopen("/sys/fs/cgroup/cpu.max", "r");
    if (f) {
        char q[32];
        long period;
        if (fscanf(f, "%31s %ld", q, &period) == 2 && strcmp(q, "max") != 0 && period > 0) {
            double lim = atof(q) / (double)period;
            if (lim > 0 && lim < cpus)
                cpus = lim;
        }
        fclose(f);
        return cpus;
    }
    long quota = -1, period = 0;
    f = fopen("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "r");
    if (f) {
        if (fscanf(f, "%ld", &quota) != 1)
            quota = -1;
        fclose(f);
    }
    f = fopen("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "r");
    if (f) {
        if (fscanf(f, "%ld", &period) != 1)
            period = 0;
        fclose(f);
    }
    if (quota > 0 && period > 0 && (double)quota / (double)period < cpus)
        cpus = (double)quota / (double)period;
    return cpus;
}

static uint64_t pnconf__read_u64(const char *path)
{
    FILE *f = fopen(path, "r");
    unsigned long long v = 0;
    if (f) {
        if (fscanf(f, "%llu", &v) != 1)
            v = 0;
        fclose(f);
    }
    return v;
}

uint64_t pnconf_detect_memory(void)
{
    uint64_t total = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        unsigned long long kb;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
                total = kb * 1024ull;
        fclose(f);
    }
    if (!total) {
        long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        total = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : (1ull << 30);
    }
    uint64_t lim = pnconf__read_u64("/sys/fs/cgroup/memory.max");
    if (lim && lim < total)
        total = lim;
    lim = pnconf__read_u64("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    if (lim && lim < total)
        total = lim;
    return total;
}

int pnconf_load(pnconf_t *c, const char *path, char *const *sets, size_t nsets, char *msg,
                size_t cap)
{
    int rc = config_defaults(pnconf_schema, c, msg, cap);
    if (!rc && path)
        rc = config_load_file(pnconf_schema, c, path, msg, cap);
    for (size_t i = 0; !rc && i < nsets; i++)
        rc = config_set(pnconf_schema, c, sets[i], msg, cap);
    if (rc)
        return rc;
    if (c->cpus <= 0)
        c->cpus = pnconf_detect_cpus();
    if (c->memory == 0)
        c->memory = pnconf_detect_memory();
    if (c->memory < (1ull << 20))
        return err_fmt(msg, cap, ERR_CONFIG, "node.memory: less than 1 MiB");
    if (!c->name[0]) {
        char host[256] = "";
        if (gethostname(host, sizeof host - 1) != 0 || !host[0])
            snprintf(host, sizeof host, "pn");
        char *n = mem_strdup(host);
        if (!n)
            return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        mem_free(c->name);
        c->name = n;
    }
    if (!c->advertise[0]) {
        char *a = mem_strdup(c->listen);
        if (!a)
            return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        mem_free(c->advertise);
        c->advertise = a;
    }
    return 0;
}

void pnconf_close(pnconf_t *c)
{
    config_close(pnconf_schema, c);
}
