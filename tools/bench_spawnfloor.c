/* bench_spawnfloor - see bench_spawnfloor.h. */
#include "bench_spawnfloor.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
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
    double t0 = spawnfloor__now();
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
    if (out->spawned > 0) {
        rc = 0;
    } else if (spawn_err != 0) {
        errno = spawn_err;
    }
done:
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}
