/* spawner.h - threads that start task processes for the PN's loop (issue 24).
 *
 * One process that spawns from one thread cannot reach what a many-core machine spawns from
 * several at once (vfork suspends only the calling thread, but the loop thread's own work per
 * task sits between two spawns). A spawner owns S threads, each blocked on one shared queue of
 * requests; the loop thread submits a request (exec_spawn_timed's spec, its strings borrowed
 * until the completion comes back, and the task's local id), a thread spawns it, and the result
 * goes onto a completion list that a uv_async hands to `done` on the loop thread, in batches:
 * a thread posts its results when its queue runs dry, every 16 spawns or 2 ms past the first
 * it holds, and the requests of
 * one scheduling pass wake one thread, not one each (spawner_defer).
 *
 * What stays with the loop thread: reaping (SIGCHLD, wait4(-1)), kills, renices, cgroups and
 * every task state. A child can exit and be reaped before its completion reaches the loop; the
 * caller parks such exits (node_run.c). The threads block every signal and live as long as the
 * spawner: a task gets PR_SET_PDEATHSIG from the thread that forked it, so a spawner thread
 * that exited would kill the tasks it started.
 */
#ifndef PADDOCK_PN_SPAWNER_H
#define PADDOCK_PN_SPAWNER_H

#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "pn/exec.h"

/* The outcome of one request, for the loop thread. */
typedef struct spawner_result {
    uint64_t id;           /* the request's id (the task's local id) */
    int rc;                /* exec_spawn_timed's: 0, or an ERR_* with msg */
    pid_t pid;             /* on success */
    exec_started_t at;     /* the leader's start time bounds */
    uint64_t t0_ns, t1_ns; /* clock_mono_ns around the spawn */
    char msg[256];
} spawner_result_t;

typedef void spawner_done_fn(void *arg, const spawner_result_t *r);

typedef struct spawner spawner_t;

/* Starts `threads` (1..64) spawner threads; `done` runs on the loop's thread, once per result.
 * NULL with msg on failure. */
spawner_t *spawner_new(uv_loop_t *loop, unsigned threads, spawner_done_fn *done, void *arg,
                       char *msg, size_t cap);
/* Queues a spawn. spec's argv, envp, cwd and shim stay valid until the result for `id` is
 * delivered; the two output paths are copied. 0 or ERR_NOMEM/ERR_INVAL. */
int spawner_submit(spawner_t *s, uint64_t id, const exec_spec_t *spec);
/* Between spawner_defer and spawner_kick (nested, the loop thread's) submits wake no thread:
 * the kick wakes one for the whole batch, which wakes a peer while the queue is long. */
void spawner_defer(spawner_t *s);
void spawner_kick(spawner_t *s);
/* Requests submitted whose results were not delivered yet. */
size_t spawner_pending(const spawner_t *s);
/* Delivers the results ready now (as the async would) and returns how many. */
size_t spawner_drain(spawner_t *s);
/* Waits for every queued request to be spawned and delivers all results (for a stop). */
void spawner_flush(spawner_t *s);
/* CPU time used by the spawner threads so far (user + system), microseconds. */
uint64_t spawner_cpu_us(const spawner_t *s);
/* Stops the threads (after the queued requests) and frees; the async handle is closed on the
 * loop, so the loop must run once more. */
void spawner_free(spawner_t **s);

#endif
