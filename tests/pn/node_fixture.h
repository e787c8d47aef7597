/* node_fixture.h - the fixture the tests of the process node's core (pn/node.h) share: a node
 * on its own loop and work directory, its messages caught by a fake send callback and decoded
 * into `sent`, and helpers that deliver the JM's and the RM's messages. Used by test_node.c,
 * test_node_estimate.c and test_node_dir.c. */
#ifndef PADDOCK_TESTS_PN_NODE_FIXTURE_H
#define PADDOCK_TESTS_PN_NODE_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "pn/node.h"
#include "pn/pnconf.h"
#include "proto/proto.h"

#define MAXSENT 512

typedef struct sent {
    char peer[16];
    char endpoint[128];
    proto_type_t type;
    uint64_t req_id;
    char job[64], task[64], text[256];
    proto_task_state_t state;
    int code;
    uint32_t tasks;
    uint64_t expected_wait_ms, cpu_time_ms, bytes_read;
    int64_t queued_at, started_at;
} sent_t;

typedef struct fixture {
    char dir[128];
    pnconf_t cfg;
    uv_loop_t loop;
    node_t *n;
    sent_t sent[MAXSENT];
    size_t nsent;
    proto_buf_t buf;
} fixture_t;

/* /bin/sleep 30: the command of the tasks `create` sends. */
extern const char *sleeper[2];

/* Setups for cmocka (teardown undoes each): a 1-core, 4 GiB node "n1" whose every create is
 * answered at once; setup_with adds one more pnconf setting ("key=value", NULL: none). */
int setup_with(void **state, const char *extra);
int setup(void **state);
/* The daemon's default: no QUEUED status for a task that starts once set up. */
int setup_quiet(void **state);
/* Finished tasks are forgotten at the first sweep. */
int setup_forget(void **state);
int teardown(void **state);
/* Waits until staging on the thread pool has drained. */
void settle(fixture_t *f);
void pause_ms(long ms);

/* Encodes m and hands it to the node as if from `peer`. */
void deliver(fixture_t *f, const char *peer, const proto_msg_t *m);
/* TASK_CREATE of a regular 1-core task running `sleeper`, attempt 1. */
void create(fixture_t *f, const char *peer, const char *job, const char *task, uint32_t epoch,
            uint64_t req_id);
void cancel(fixture_t *f, const char *peer, const char *job, const char *task, uint32_t epoch);
void upgrade(fixture_t *f, const char *peer, const char *job, const char *task, uint32_t epoch);
void estimate(fixture_t *f, const char *peer, const char *job, const char *task, uint32_t epoch,
              uint64_t runtime_ms);
void query(fixture_t *f, const char *peer, const char *job, uint32_t epoch, const char *reply,
           uint64_t req_id);
/* The RM's HEARTBEAT_ACK naming one job in `state` at `epoch`, at time `now`. */
void ack(fixture_t *f, const char *job, uint32_t state, uint32_t epoch, uint64_t now);

/* The last status of job/task sent, or NULL. */
const sent_t *last_status(const fixture_t *f, const char *job, const char *task);
/* Runs the loop and reaps until job/task's last status is `s` (bounded: 10 s). */
const sent_t *wait_state(fixture_t *f, const char *job, const char *task, proto_task_state_t s);
/* The last message sent (fails the test when none). */
const sent_t *last(const fixture_t *f);
node_counters_t counters(const fixture_t *f);

#endif
