/* jmd_grow.h - an open job: tasks that a workflow system binds while the job runs
 * (docs/snakemake.md).
 *
 * A spec with "open": {"spool": DIR, "idle_s": N} (jm/spec.h) declares the whole run up front
 * (every task, its stage, request, estimate and edges: the shape admission, Jockey and
 * `paddock quote` work from) but runs none of it on its own: every task starts held
 * (dag_hold). A client binds a task when its workflow system submits the corresponding job, by
 * writing the task's script where its command expects it and then appending the task's id and a
 * newline to DIR/binds. The JM reads the new bytes of DIR/binds every tick (250 ms):
 *
 *   - a bound task is released (dag_release): it runs when its dependencies in the job are
 *     done, as any task;
 *   - its ancestors that were never bound are skipped (dag_skip: succeeded without running):
 *     the workflow system submits a job only when its inputs exist, so what it did not hand us
 *     it ran elsewhere (a local rule) or found done;
 *   - an id the spec lacks, or one bound already, is counted and logged, nothing else; so is
 *     a line over 128 bytes or with a NUL (jm/bindlog.h reads the lines).
 *
 * For every bound task the JM writes DIR/status/ID once its fate is known, so a status poll is
 * one small file read: "success\n" when it succeeded, "failed\n" and the reason when it failed or
 * the job ended without it (the job failed or was cancelled). A missing file means "running".
 *
 * The job ends as any job: succeeded when every task succeeded (bound and run, or skipped),
 * failed when a task ran out of attempts, cancelled by `paddock job cancel`. An open job with
 * tasks never bound, nothing ready and nothing running for idle_s seconds (the workflow system
 * went away) is cancelled with a reason saying so.
 *
 * A resumed JM reads DIR/binds from the start, so the job it rebuilds has the same tasks bound
 * and skipped before the journal is replayed.
 *
 * Trust: DIR is the submitting user's (a local cluster runs every daemon as that user); the JM
 * reads ids from it and writes statuses into it, and never runs anything from it itself (the
 * task's command, in the spec the RM accepted from that user, does).
 */
#ifndef PADDOCK_JM_JMD_GROW_H
#define PADDOCK_JM_JMD_GROW_H

#include <stddef.h>

struct jmd;

/* Counters of an open job (public value, read-only). */
struct jmd_grow_stats {
    size_t bound;     /* tasks bound */
    size_t skipped;   /* tasks skipped (never bound, an ancestor of a bound one) */
    size_t bad_binds; /* lines naming no task, or a task bound already */
    size_t statuses;  /* status files written */
};

/* After jmd_sched_init, before the journal's replay: a job that is not open is left alone (0);
 * an open one has every task held, then DIR/binds applied. ERR_NOMEM, or ERR_IO when DIR/status
 * cannot be made (reason in msg). */
int jmd_grow_init(struct jmd *j, char *msg, size_t cap);

/* Every tick: new binds, skips, status files, the idle rule. No-op for a job that is not open. */
void jmd_grow_tick(struct jmd *j);

/* At tear-down: the last status files (the job's end), then frees. NULL-safe, idempotent. */
void jmd_grow_close(struct jmd *j);

/* The open job's counters; NULL when the job is not open. Borrowed. */
const struct jmd_grow_stats *jmd_grow_stats(const struct jmd *j);

#endif
