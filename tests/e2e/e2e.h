/* e2e.h - helpers for the end-to-end tests: a local cluster started with `paddock cluster up` in
 * a fresh temporary directory and stopped with `paddock cluster down` (and the job managers its
 * jobs started) in the teardown, also when a test fails; a way to run `paddock` capturing its
 * exit code, stdout and stderr, bounded by a timeout. Kills only pids named in the cluster's own
 * pid files (checked to be paddock daemons). */
#ifndef PADDOCK_TESTS_E2E_H
#define PADDOCK_TESTS_E2E_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct e2e_run {
    int status; /* exit code; 124 after the timeout; 128+N after signal N */
    char *out;  /* whole stdout (malloc'd, NUL-terminated) */
    char *err;  /* whole stderr */
};

/* The bin dir (PADDOCK_BIN_DIR), the source dir (PADDOCK_SOURCE_DIR) and the cluster dir. */
const char *e2e_bin(void);
const char *e2e_src(void);
const char *e2e_dir(void);

/* True when paddock-jm is built next to paddock. */
bool e2e_have_jm(void);
/* Skips the running cmocka test, saying why, when paddock-jm is not built. */
void e2e_skip_without_jm(void);

/* Makes a temporary directory and runs `paddock cluster up --dir DIR/cluster ARGS`. 0 or -1. */
int e2e_cluster_up(const char *args);

/* Stops the job managers of the cluster's jobs, runs `paddock cluster down`, removes the
 * directory. Safe to call when nothing was started. */
void e2e_cluster_down(void);

/* A cmocka group's setup and teardown around one cluster: e2e_group_up starts it with `args`
 * when paddock-jm is built (else nothing: the tests skip themselves); e2e_group_teardown is
 * e2e_cluster_down. */
int e2e_group_up(const char *args);
int e2e_group_teardown(void **state);

/* Runs `paddock ARGS` (a shell fragment, PADDOCK_CLUSTER set to the cluster) for at most
 * timeout_s seconds. */
void e2e_paddock(struct e2e_run *r, int timeout_s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void e2e_run_close(struct e2e_run *r);

/* Stops (SIGTERM, then SIGKILL after 5 s) every paddock-jm the cluster's jobs started: after a
 * failed step, so a job left running does not load the next test. */
void e2e_jobs_stop(void);

/* A job's file (state.json, report.json) as JSON, NULL if missing. */
json_t *e2e_job_file(const char *job_id, const char *file);
/* The integer at key k of object o, -1 when absent or not an integer. */
long long e2e_json_int(const json_t *o, const char *k);

/* Polls the job's state.json until its state is final or timeout_s passes; returns the final
 * state document (caller decrefs) or NULL. */
json_t *e2e_job_wait(const char *job_id, int timeout_s);

/* Prints the tail of the job's jm.log to stderr (for a failing test). */
void e2e_job_dump(const char *job_id);

/* The wall clock in ms, and a sleep of ms (<= 0: none). */
int64_t e2e_wall_ms(void);
void e2e_sleep_ms(int64_t ms);
/* A whole file, NUL-terminated (caller frees), its length into *len when not NULL; NULL when it
 * cannot be read. */
char *e2e_read_file(const char *path, size_t *len);
/* Writes text to path; the test fails when it cannot (cmocka). */
void e2e_write_file(const char *path, const char *text);
/* `paddock submit PATH`: the job id ("j-...") into id; the test fails when refused (cmocka). */
void e2e_submit(const char *path, char id[64]);
/* An integer of the job's state.json, -1 when missing or not an integer. */
long long e2e_state_int(const char *job_id, const char *key);

#endif
