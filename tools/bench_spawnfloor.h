/* bench_spawnfloor - the machine's floor for running trivial processes, for the benchmarks.
 *
 * The floor a task runner is held to: posix_spawn of /bin/true (stdout and stderr to /dev/null)
 * with a fixed number of processes in flight, a new one spawned as each exits (waitpid on any
 * child), until a fixed count has exited. A serial fork + exec + wait loop is far slower than
 * this on any machine with more than one core, so a ratio to it flatters the runner.
 *
 * Only posix_spawn and waitpid: no other library of the project.
 */
#ifndef PADDOCK_TOOLS_BENCH_SPAWNFLOOR_H
#define PADDOCK_TOOLS_BENCH_SPAWNFLOOR_H

typedef struct spawnfloor_result {
    double per_s;   /* processes that exited with status 0, per second of wall time */
    double seconds; /* wall time from the first spawn to the last exit */
    long spawned;   /* processes started */
    long succeeded; /* of them, exited with status 0 */
    int in_flight;  /* processes kept running at once */
} spawnfloor_result_t;

/* The number of processes to keep in flight for a runner with `slots` task slots: slots capped
 * at the machine's online cores, at least 1. */
int spawnfloor_in_flight(double slots);

/* Spawns /bin/true `count` times with `in_flight` (>= 1) running at once and fills *out.
 * Precondition: the caller has no other child that may exit meanwhile (children are reaped with
 * waitpid(-1); one not spawned here would be reaped and lost to its owner). Returns 0, or -1
 * when count or in_flight is not positive, /dev/null cannot be opened, or no process could be
 * spawned (errno set); on a spawn failure part way, the processes already spawned are reaped
 * and counted. */
int spawnfloor_measure(int in_flight, long count, spawnfloor_result_t *out);

#endif
