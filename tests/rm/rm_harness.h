/* rm_harness.h - what the RM integration tests share: a fresh temporary cluster directory, the
 * `paddock` CLI run against it, the daemons' pid files read, admin queries to one replica, a
 * bounded wait for a ready leader, and ports free on 127.0.0.1.
 *
 * Which processes it stops, exactly: the daemons whose pids are in DIR/rm-1..9.pid and
 * DIR/pn-1..9.pid (written by `paddock cluster up` and `paddock rm add --start` for the daemons
 * they started in DIR), and the one child pid handed to rm_harness_child(). Nothing else. It
 * stops them in rm_harness_fini() and, when the test process dies of SIGABRT, SIGSEGV, SIGBUS
 * or SIGTERM (ctest's timeout), in a signal handler that uses async-signal-safe calls only and
 * then re-raises the signal. Single-threaded use (the state is process-global). */
#ifndef PADDOCK_TESTS_RM_HARNESS_H
#define PADDOCK_TESTS_RM_HARNESS_H

#include "rm/rmclient.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Makes the directory /tmp/paddock-TAG-XXXXXX, takes the tools directory from PADDOCK_BIN_DIR
 * (./bin when unset) and installs the crash handlers. Starts nothing. Returns 0, or -1 when the
 * directory cannot be made. */
int rm_harness_init(const char *tag);

/* Stops what the harness owns: the child pid (SIGTERM, up to 5 s, then SIGKILL, reaped), then
 * `paddock cluster down --dir DIR` when DIR/cluster.conf exists, then SIGKILL to every pid still
 * in DIR's pid files that is still a running paddock daemon (one `down` did not stop, such as a
 * replica removed from cluster.conf). Removes DIR unless PADDOCK_TEST_KEEP is set (kept for a
 * post-mortem: logs, data, cli.out). Safe to call when init failed. */
void rm_harness_fini(void);

/* The cluster directory and the tools directory (borrowed, valid until the process ends). */
const char *rm_harness_dir(void);
const char *rm_harness_bin(void);

/* Hands the harness one child process it must stop at fini or on a crash (0: none). The
 * caller may still stop and reap it itself, then hand 0. */
void rm_harness_child(pid_t pid);

/* Runs `BIN/paddock ARGS` (ARGS from the printf format, at most 1 KiB) with its stdout appended
 * to DIR/cli.out and its stderr left to the test's. Returns its exit status, or -1 when it did
 * not exit normally. */
int rm_harness_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* `paddock cluster ARGS --dir DIR`, as rm_harness_run. */
int rm_harness_cluster(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Runs `BIN/paddock ARGS` and returns its stdout parsed as JSON (the caller owns the reference),
 * or NULL when it did not exit 0 or its output is not JSON. */
json_t *rm_harness_json(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The pid in DIR/NAME.pid ("rm-2", "pn-1"), or 0 when there is none. */
long rm_harness_pid(const char *name);

/* True while PID runs (a zombie no longer counts). */
bool rm_harness_running(long pid);

/* The pid of replica ID (DIR/rm-ID.pid), or 0. */
long rm_harness_rm_pid(uint64_t id);

/* Admin query KIND to replica REPLICA (index in the client's endpoint list) with TIMEOUT_MS;
 * its JSON answer (caller owns it), or NULL when it did not answer. */
json_t *rm_harness_admin(rmclient_t *c, int replica, const char *kind, int timeout_ms);

/* Registers a job of that name in the default virtual cluster (no deadline) through c, tries of
 * 500 ms for up to 10 s: 0 when accepted, the client's error, or ERR_STATE when refused. */
int rm_harness_register_job(rmclient_t *c, const char *name);

/* Polls every replica (`rm_status`, 1 s each) until one is a ready leader: its status (caller
 * owns it), or NULL after MS milliseconds. */
json_t *rm_harness_wait_leader(rmclient_t *c, int ms);

/* Writes DIR/NAME.json, a job NAME of one task sleeping 60 s (cpu 0.1, 16 MB), and its path into
 * path[cap]: a JM that stays up while a test looks at it. */
void rm_harness_sleep_spec(const char *name, char *path, size_t cap);

/* The established TCP connections of process PID to each of ports[0..n) on the remote side,
 * into out[0..n): its sockets' inodes (/proc/PID/fd) found in /proc/net/tcp. */
void rm_harness_tcp_links(long pid, const unsigned *ports, size_t n, long *out);

/* The ports of the replicas' endpoints of one kind ("api", "pub") in cluster.conf's order, ids
 * 1..3 into ports[1..3] (ports[0] 0). */
void rm_harness_ports(const char *kind, unsigned ports[4]);

/* A port free right now on 127.0.0.1 (the kernel's pick), or -1. Its socket stays bound, so the
 * next call gets a different port, until rm_harness_ports_release(): call that before a daemon
 * is to bind the ports. At most 16 are held; more are picked but not held. */
int rm_harness_free_port(void);
void rm_harness_ports_release(void);

#endif
