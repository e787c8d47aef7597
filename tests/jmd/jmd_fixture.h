/* jmd_fixture.h - a local cluster for paddock-jm's integration tests: `paddock cluster up` in a
 * fresh temporary directory, paddock-jm started by the test itself on a job directory, and a
 * teardown that kills exactly the pids it started (the JM's, and the cluster's through
 * `paddock cluster down`, which reads the cluster's own pid files), also when a test fails. */
#ifndef PADDOCK_TESTS_JMD_FIXTURE_H
#define PADDOCK_TESTS_JMD_FIXTURE_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

struct jmf {
    char dir[256];     /* the test's temporary directory */
    char cluster[300]; /* DIR/cluster */
    char job[300];     /* DIR/job: the job directory */
    char work[300];    /* DIR/work: where tasks write their marks */
    char bin[1024];
    pid_t jm;  /* the JM the test started (0: none) */
    int jm_rc; /* its exit code once reaped (-1 while running) */
};

/* Makes the directories and starts a cluster with `args` ("--rm 3 --pn 3"). 0, or -1 after
 * stopping whatever did start. */
int jmf_up(struct jmf *f, const char *args);
/* Kills the JM if still running, stops the cluster, removes the directory. */
void jmf_down(struct jmf *f);

/* Makes DIR/NAME the job directory for the next JM (jmf_up makes DIR/job). 0 or -1. */
int jmf_new_job(struct jmf *f, const char *name);
/* Writes `spec` (a JSON document, stolen) to the job directory's spec.json and starts paddock-jm
 * on it with extra options `opts` (may be ""). 0 or -1. */
int jmf_start_jm(struct jmf *f, json_t *spec, const char *opts);
/* Waits at most timeout_s for the JM to exit; returns its exit code, or -1 on timeout. */
int jmf_wait_jm(struct jmf *f, int timeout_s);

/* DIR/job/NAME parsed as JSON (NULL when missing or not JSON). */
json_t *jmf_job_file(const struct jmf *f, const char *name);
/* The pid in DIR/cluster/NAME.pid, or 0. */
long jmf_daemon_pid(const struct jmf *f, const char *name);
/* Reads the first line of DIR/work/NAME into buf; true when the file exists. */
bool jmf_mark(const struct jmf *f, const char *name, char *buf, size_t cap);
/* Prints the tail of jm.log to stderr (for a failing test). */
void jmf_dump(const struct jmf *f);
/* Sleeps ms milliseconds (between polls of a condition; never to wait for an outcome blind). */
void jmf_pause(int ms);

#endif
