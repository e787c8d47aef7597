/* bench_spawnfloor - the machine's floor for running trivial processes, for the benchmarks.
 *
 * The floor a task runner is held to: posix_spawn of /bin/true (stdout and stderr to /dev/null)
 * with a fixed number of processes in flight, a new one spawned as each exits (waitpid on any
 * child), until a fixed count has exited. A serial fork + exec + wait loop is far slower than
 * this on any machine with more than one core, so a ratio to it flatters the runner.
 *
 * One process spawning with k in flight is not the machine's floor on many cores: the spawning
 * process itself is the bottleneck (on 16 cores, 7,500-8,400/s from one process with 16 in flight
 * against 18,400/s from 8 processes with 2 each). So the floor is taken two ways: from one
 * process, and as the best of P processes each keeping in_flight / P running (spawnfloor_pair).
 * And one measurement is noisy (4,100-9,100/s from one run to the next on the same host), so the
 * benchmarks take a series, some runs before and some after the system under test, and hold the
 * system to the medians (spawnfloor_series_*), printing every run.
 *
 * Only posix_spawn, fork, pipes and waitpid: no other library of the project.
 */
#ifndef PADDOCK_TOOLS_BENCH_SPAWNFLOOR_H
#define PADDOCK_TOOLS_BENCH_SPAWNFLOOR_H

#include <stdio.h>

typedef struct spawnfloor_result {
    double per_s;   /* processes that exited with status 0, per second of wall time */
    double seconds; /* wall time from the first spawn to the last exit */
    long spawned;   /* processes started */
    long succeeded; /* of them, exited with status 0 */
    int in_flight;  /* processes kept running at once */
    double cpu_us;  /* the spawning process's (or processes') own CPU, user + system, per process
                       spawned: posix_spawn and the reaping, not the spawned processes' own CPU.
                       What any runner pays per task at least; 0 when unknown */
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

/* `procs` processes (forked from this one, released at once) each spawning /bin/true `count` /
 * procs times with `in_flight_each` running at once. *out: succeeded and spawned summed,
 * seconds from the first start to the last finish, per_s over those seconds, in_flight = procs x
 * in_flight_each. Reaps only the processes it forked (waitpid on their pids). Returns 0, or -1
 * (errno set) when an argument is not positive or no process could be forked. */
int spawnfloor_measure_procs(int procs, int in_flight_each, long count, spawnfloor_result_t *out);

/* The floor measured both ways, back to back. */
typedef struct spawnfloor_pair {
    spawnfloor_result_t one; /* one process, in_flight at once */
    double best_per_s;       /* the best of P processes x in_flight / P, P >= 1 dividing
                                in_flight (P = 1 is `one`) */
    int best_procs;          /* its P */
    double best_cpu_us;      /* the spawning processes' own CPU per spawn at that P */
} spawnfloor_pair_t;

/* Fills *out with `count` spawns per configuration. Same precondition as spawnfloor_measure.
 * Returns 0 or -1 (errno set). */
int spawnfloor_pair(int in_flight, long count, spawnfloor_pair_t *out);

#define SPAWNFLOOR_MAX_RUNS 16

/* A series of pairs around the system under test. Public value struct: zero it, then add runs
 * before and after the system runs, then finish. */
typedef struct spawnfloor_series {
    spawnfloor_pair_t runs[SPAWNFLOOR_MAX_RUNS];
    char when[SPAWNFLOOR_MAX_RUNS]; /* 'b': before the system under test, 'a': after */
    int n;
    double one_median;    /* median of runs[].one.per_s (set by spawnfloor_series_finish) */
    double best_median;   /* median of runs[].best_per_s */
    double cpu_us_median; /* median of runs[].one.cpu_us: the floor's own CPU per spawn */
} spawnfloor_series_t;

/* Adds `runs` pairs marked `when` (at most SPAWNFLOOR_MAX_RUNS in all). Returns 0 or -1. */
int spawnfloor_series_add(spawnfloor_series_t *s, int in_flight, long count, int runs, char when);

/* Sets the medians. */
void spawnfloor_series_finish(spawnfloor_series_t *s);

/* Every run, one line each, then the medians: for people. */
void spawnfloor_series_print(FILE *f, const spawnfloor_series_t *s);

/* The series as JSON members (no braces): "spawn_floor_per_s" (the one-process median),
 * "spawn_floor_best_per_s", "spawn_floor_cpu_us" (the one-process median of its own CPU per
 * spawn), "spawn_floor_in_flight" and "spawn_floor_runs" (every run: when, one_per_s,
 * best_per_s, best_procs, one_cpu_us, best_cpu_us). */
void spawnfloor_series_json(FILE *f, const spawnfloor_series_t *s);

#endif
