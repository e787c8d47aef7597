/* resume_fixture.h - what the tests of a job surviving its job manager (test_e2e_resume.c,
 * test_e2e_resume_restart.c) share, on a real local cluster (e2e.h): 3 RM replicas and 3 PNs of
 * 2 cores whose orphan grace is shortened to ORPHAN_GRACE_S, the test DAG of NTASKS tasks each
 * appending its id to a marks file, and checks of the marks, the journal and report.json. */
#ifndef PADDOCK_TESTS_E2E_RESUME_FIXTURE_H
#define PADDOCK_TESTS_E2E_RESUME_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define NTASKS         100
#define ORPHAN_GRACE_S 6
#define NPN            3
#define NRM            3

/* Processes this test holds outside the cluster's pid files (a stopped stale JM): stopped by
 * pid in the teardown. */
extern pid_t g_extra[8];
extern size_t g_nextra;

/* Whether pid is a live (not zombie) process whose command name starts with `name`. */
bool proc_is(long pid, const char *name);
/* The live task processes of a job. */
size_t job_procs(const char *job_id, long *pids, size_t cap);
/* A counter of the PNs' status.json, summed over the nodes. */
long long pn_counter(const char *name);
/* The pid file of daemon NAME (rm-1, pn-2) or of a job's JM (jobs/ID/jm). */
long daemon_pid(const char *name);
long jm_pid(const char *job);
void cluster_up_again(void);
/* Waits (bounded) until none of the pids runs a process named `name`, and every thread of
 * each has exited. */
void await_gone(const long *pids, size_t n, const char *name);
int group_setup(void **state);
int group_teardown(void **state);
/* Skips without paddock-jm; else makes sure the PNs run with the short orphan grace. */
void skip_without_jm(void);
/* The task ids of the test DAG: stage a (30 tasks), b (40: b-i after a-(i mod 30)), c (30: c-i
 * after b-i and b-(i+10)). */
void task_id(int k, char *out, size_t cap);
/* Writes a spec of NTASKS tasks, each `sleep SLEEP; echo ID >> MARKS`, to DIR/NAME.json. */
/* Each task appends its id to the marks file, a side effect that must happen once: the stages
 * say "speculate": false, so no speculative copy or duplicate (issue 15) runs a task twice and
 * what is checked is what a resume does. */
void write_spec(const char *name, const char *marks, const char *sleep_s, char *path, size_t cap);
/* Waits until the job's jm.pid names a live paddock-jm other than `not`; returns it. */
long await_jm(const char *job, long not, int timeout_ms);
bool state_running(const char *job);
/* Waits for the job's end: it must have succeeded. */
void await_success(const char *job, int timeout_s);
/* Every task id of the DAG in the marks file, nothing else: exactly once, or at most twice for
 * the tasks with may_twice[k] set (NULL: none). Returns how many of those ran twice. */
int check_marks(const char *marks, const char *job, const bool *may_twice);
/* The tasks the job's journal records as succeeded, into done[] (one per DAG task). */
size_t journaled_succeeded(const char *job, bool done[NTASKS]);
/* report.json: succeeded, 100 tasks, exactly one succeeded attempt per task (those of every
 * incarnation), `resumes` at least min_resumes. */
void check_report(const char *job, long long min_resumes);

#endif
