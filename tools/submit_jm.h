/* submit_jm.h - how `paddock submit` starts the job's JM.
 *
 * The JM is started first (submit_jm_early), forked from `paddock`'s own image and running
 * paddock-jm's command line with --job-from-fd (jm/daemon/jmd_main.h), so no second dynamic load
 * of ZeroMQ and its dependencies: it opens its RM sockets while the submit reads the spec and
 * makes its limits, shape and registration round trips, and it waits for the job's id and
 * directory (submit_jm_go), or exits at the end of file when the submit gives up
 * (submit_jm_call_off). Where the early start failed, or the JM died before it was told, one is
 * started the usual way, with --job-dir and --job-id.
 */
#ifndef PADDOCK_TOOLS_SUBMIT_JM_H
#define PADDOCK_TOOLS_SUBMIT_JM_H

#include <sys/types.h>

#include "tools/jobdir.h"

/* What of `paddock submit`'s options goes onto the JM's command line. */
struct submit_jm_opts {
    const struct jobdir_opts *d;
    const char *pub, *log_level;
};

/* An early JM: its pid and the descriptor that tells it the job; -1 when none. */
struct submit_early {
    pid_t pid;
    int go;
};

/* Starts a JM waiting for its job, before this process uses ZeroMQ (ps shows it as `jm`, a
 * path, which it execs where not even that name fits); e->pid -1 when that fails. */
void submit_jm_early(struct submit_early *e, const char *jm, const struct submit_jm_opts *o,
                     const char *jobs_root);

/* Calls the early JM off (it exits having done nothing) and reaps it. Safe without one. */
void submit_jm_call_off(struct submit_early *e);

/* The JM for job_id in job_dir (spec.json written): the early one, told the job and the index of
 * the RM replica that registered it (`leader`, -1: not known), or one started now with its
 * output appended to job_dir/jm.log. Its pid, or -1. */
pid_t submit_jm_go(struct submit_early *e, const char *jm, const struct submit_jm_opts *o,
                   const char *job_dir, const char *job_id, const char *jobs_root, int leader);

/* Waits until the JM shows it runs (job_dir/jm.pid or state.json) or exits (*status set). 0 when
 * it runs or is slow to show it but alive; -1 when it exited. */
int submit_jm_await_start(pid_t pid, const char *job_dir, int *status);

#endif
