/* bench_spawnfloor - see bench_spawnfloor.h. */
#include "bench_spawnfloor.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double spawnfloor__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds, user + system, of the calling thread where the system can say (RUSAGE_THREAD),
 * else of the process: the spawning loop's own, not its children's. */
static double spawnfloor__cpu(void)
{
    struct rusage ru;
#ifdef RUSAGE_THREAD
    int who = RUSAGE_THREAD;
#else
    int who = RUSAGE_SELF;
#endif
    if (getrusage(who, &ru) != 0)
        return 0;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

int spawnfloor_in_flight(double slots)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1)
        cores = 1;
    if (!(slots >= 1)) /* also NaN */
        return 1;
    return slots >= (double)cores ? (int)cores : (int)slots;
}

int spawnfloor_measure(int in_flight, long count, spawnfloor_result_t *out)
{
    if (in_flight < 1 || count < 1 || out == NULL) {
        errno = EINVAL;
        return -1;
    }
    *out = (spawnfloor_result_t){.in_flight = in_flight};
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return -1;
    int rc = -1;
    if (posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0) != 0 ||
        posix_spawn_file_actions_adddup2(&fa, 1, 2) != 0)
        goto done;
    char *argv[] = {"true", NULL};
    long running = 0;
    int spawn_err = 0;
    double t0 = spawnfloor__now(), cpu0 = spawnfloor__cpu();
    while (out->spawned < count || running > 0) {
        /* Refill before waiting: the floor keeps every slot busy. */
        while (!spawn_err && running < in_flight && out->spawned < count) {
            pid_t pid;
            int e = posix_spawn(&pid, "/bin/true", &fa, NULL, argv, environ);
            if (e != 0) {
                spawn_err = e;
                break;
            }
            out->spawned++;
            running++;
        }
        if (running == 0)
            break;
        int st;
        pid_t w = waitpid(-1, &st, 0);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            break; /* ECHILD: nothing left to reap */
        }
        running--;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
            out->succeeded++;
    }
    out->seconds = spawnfloor__now() - t0;
    out->per_s = out->seconds > 0 ? (double)out->succeeded / out->seconds : 0;
    if (out->spawned > 0)
        out->cpu_us = (spawnfloor__cpu() - cpu0) * 1e6 / (double)out->spawned;
    if (out->spawned > 0) {
        rc = 0;
    } else if (spawn_err != 0) {
        errno = spawn_err;
    }
done:
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

/* What one spawning process reports back through the pipe (well under PIPE_BUF: atomic). */
struct spawnfloor__report {
    double t0, t1;
    double cpu_us; /* the process's own CPU over its spawns, in all */
    long spawned, succeeded;
};

int spawnfloor_measure_procs(int procs, int in_flight_each, long count, spawnfloor_result_t *out)
{
    if (procs < 1 || in_flight_each < 1 || count < procs || out == NULL) {
        errno = EINVAL;
        return -1;
    }
    *out = (spawnfloor_result_t){.in_flight = procs * in_flight_each};
    int go[2], res[2];
    if (pipe(go) != 0)
        return -1;
    if (pipe(res) != 0) {
        close(go[0]);
        close(go[1]);
        return -1;
    }
    pid_t pids[256];
    int nforked = 0;
    for (int p = 0; p < procs && p < 256; p++) {
        pid_t pid = fork();
        if (pid < 0)
            break;
        if (pid == 0) {
            close(go[1]);
            close(res[0]);
            char c;
            while (read(go[0], &c, 1) < 0 && errno == EINTR) /* released when go[1] closes */
                ;
            struct spawnfloor__report r = {0};
            spawnfloor_result_t one;
            long mine = count / procs + (p < count % procs ? 1 : 0);
            r.t0 = spawnfloor__now();
            if (spawnfloor_measure(in_flight_each, mine, &one) == 0) {
                r.spawned = one.spawned;
                r.succeeded = one.succeeded;
                r.cpu_us = one.cpu_us * (double)one.spawned;
            }
            r.t1 = spawnfloor__now();
            _exit(write(res[1], &r, sizeof r) == (ssize_t)sizeof r ? 0 : 1);
        }
        pids[nforked++] = pid;
    }
    close(go[0]);
    close(res[1]);
    close(go[1]); /* all start now */
    double t0 = 0, t1 = 0, cpu_us = 0;
    for (int i = 0; i < nforked; i++) {
        struct spawnfloor__report r;
        ssize_t got = read(res[0], &r, sizeof r);
        if (got < 0 && errno == EINTR) {
            i--;
            continue;
        }
        if (got != (ssize_t)sizeof r)
            break;
        out->spawned += r.spawned;
        out->succeeded += r.succeeded;
        cpu_us += r.cpu_us;
        t0 = i == 0 || r.t0 < t0 ? r.t0 : t0;
        t1 = i == 0 || r.t1 > t1 ? r.t1 : t1;
    }
    close(res[0]);
    for (int i = 0; i < nforked; i++) {
        int st;
        while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
            ;
    }
    out->seconds = t1 - t0;
    out->per_s = out->seconds > 0 ? (double)out->succeeded / out->seconds : 0;
    out->cpu_us = out->spawned > 0 ? cpu_us / (double)out->spawned : 0;
    if (nforked == 0)
        return -1;
    return 0;
}

int spawnfloor_pair(int in_flight, long count, spawnfloor_pair_t *out)
{
    memset(out, 0, sizeof *out);
    if (spawnfloor_measure(in_flight, count, &out->one) != 0)
        return -1;
    out->best_per_s = out->one.per_s;
    out->best_procs = 1;
    out->best_cpu_us = out->one.cpu_us;
    for (int p = 2; p <= in_flight && p <= 256; p++) {
        if (in_flight % p != 0)
            continue;
        spawnfloor_result_t r;
        if (spawnfloor_measure_procs(p, in_flight / p, count, &r) != 0)
            return -1;
        if (r.per_s > out->best_per_s) {
            out->best_per_s = r.per_s;
            out->best_procs = p;
            out->best_cpu_us = r.cpu_us;
        }
    }
    return 0;
}

int spawnfloor_series_add(spawnfloor_series_t *s, int in_flight, long count, int runs, char when)
{
    for (int i = 0; i < runs; i++) {
        if (s->n >= SPAWNFLOOR_MAX_RUNS) {
            errno = ENOSPC;
            return -1;
        }
        if (spawnfloor_pair(in_flight, count, &s->runs[s->n]) != 0)
            return -1;
        s->when[s->n++] = when;
    }
    return 0;
}

static int spawnfloor__cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double spawnfloor__median(double *v, int n)
{
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, spawnfloor__cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void spawnfloor_series_finish(spawnfloor_series_t *s)
{
    double one[SPAWNFLOOR_MAX_RUNS], best[SPAWNFLOOR_MAX_RUNS], cpu[SPAWNFLOOR_MAX_RUNS];
    for (int i = 0; i < s->n; i++) {
        one[i] = s->runs[i].one.per_s;
        best[i] = s->runs[i].best_per_s;
        cpu[i] = s->runs[i].one.cpu_us;
    }
    s->one_median = spawnfloor__median(one, s->n);
    s->best_median = spawnfloor__median(best, s->n);
    s->cpu_us_median = spawnfloor__median(cpu, s->n);
}

void spawnfloor_series_print(FILE *f, const spawnfloor_series_t *s)
{
    int in_flight = s->n > 0 ? s->runs[0].one.in_flight : 0;
    for (int i = 0; i < s->n; i++)
        fprintf(f,
                "posix_spawn floor %2d (%s): %8.0f/s from one process (%d in flight), best of P "
                "%8.0f/s (P = %d x %d in flight); spawning CPU %.1f / %.1f us per spawn\n",
                i + 1, s->when[i] == 'b' ? "before" : "after ", s->runs[i].one.per_s, in_flight,
                s->runs[i].best_per_s, s->runs[i].best_procs,
                in_flight / (s->runs[i].best_procs > 0 ? s->runs[i].best_procs : 1),
                s->runs[i].one.cpu_us, s->runs[i].best_cpu_us);
    fprintf(f,
            "posix_spawn floor, median of %d: %8.0f/s from one process, %8.0f/s best of P "
            "processes; the spawning process's own CPU %.1f us per spawn\n",
            s->n, s->one_median, s->best_median, s->cpu_us_median);
}

void spawnfloor_series_json(FILE *f, const spawnfloor_series_t *s)
{
    fprintf(f,
            "\"spawn_floor_per_s\": %.0f, \"spawn_floor_best_per_s\": %.0f, "
            "\"spawn_floor_cpu_us\": %.1f, \"spawn_floor_in_flight\": %d, "
            "\"spawn_floor_runs\": [",
            s->one_median, s->best_median, s->cpu_us_median,
            s->n > 0 ? s->runs[0].one.in_flight : 0);
    for (int i = 0; i < s->n; i++)
        fprintf(f,
                "%s{\"when\": \"%s\", \"one_per_s\": %.0f, \"best_per_s\": %.0f, "
                "\"best_procs\": %d, \"one_cpu_us\": %.1f, \"best_cpu_us\": %.1f}",
                i ? ", " : "", s->when[i] == 'b' ? "before" : "after", s->runs[i].one.per_s,
                s->runs[i].best_per_s, s->runs[i].best_procs, s->runs[i].one.cpu_us,
                s->runs[i].best_cpu_us);
    fprintf(f, "]");
}
