/* pn_client.h - test helpers: start a real paddock-pn on 127.0.0.1 in a temporary directory,
 * talk to it as a job manager would (DEALER), stop exactly the pid started. */
#ifndef PADDOCK_TESTS_PN_CLIENT_H
#define PADDOCK_TESTS_PN_CLIENT_H

#include <czmq.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto/proto.h"

typedef struct pnc_daemon {
    pid_t pid;
    char dir[256];      /* temporary directory: config, work dir */
    char endpoint[256]; /* bound ROUTER endpoint */
} pnc_daemon_t;

/* Writes a configuration (the given extra lines appended after the defaults of the test:
 * 127.0.0.1 on a free port, the work dir in the temp dir, no RM), starts paddock-pn from
 * PADDOCK_BIN_DIR and waits (bounded) until it has bound. 0 or -1. */
int pnc_start(pnc_daemon_t *d, const char *extra_config);
/* SIGTERM, then SIGKILL after a bounded wait; removes the temporary directory. Returns 0 when
 * the daemon stopped by itself with exit status 0 (a sanitizer's report makes it non-zero),
 * -1 otherwise; 0 when nothing was running. */
int pnc_stop(pnc_daemon_t *d);
/* Reads DIR/work/status.json's integer or boolean (1/0) field `key` (-1 if absent). */
long long pnc_status_field(const pnc_daemon_t *d, const char *key);

/* A DEALER connected to the daemon, tracked for pnc_close_all. */
zsock_t *pnc_connect(const pnc_daemon_t *d);
/* Tracks a socket made elsewhere; pnc_close_all destroys every tracked socket (call it from
 * teardown: a socket left open makes czmq's exit handler wait forever). Tests must not
 * destroy tracked sockets themselves. */
zsock_t *pnc_track(zsock_t *s);
void pnc_close_all(void);

typedef struct pnc_task {
    const char *job, *task;
    uint32_t attempt;
    proto_task_class_t klass;
    double cpu, weight;
    double priority; /* TASK_CREATE priority: its bottom level (0: none) */
    uint64_t mem_mb, runtime_ms;
    const char *const *argv; /* NULL-terminated */
    const char *file;        /* one file to stage, or NULL */
    const char *reply;       /* reply_endpoint, or NULL */
    uint32_t epoch;          /* the JM's fencing epoch (0: unfenced) */
    bool batch;              /* TASK_CREATE batch_statuses: this JM takes TASK_STATUS_BATCH */
} pnc_task_t;

int pnc_create(zsock_t *s, const pnc_task_t *t);
int pnc_cancel(zsock_t *s, const char *job, const char *task, uint32_t attempt);
int pnc_upgrade(zsock_t *s, const char *job, const char *task, uint32_t attempt);
/* TASK_UPGRADE to the opportunistic class: a downgrade, preemptible after grace_ms. */
int pnc_downgrade(zsock_t *s, const char *job, const char *task, uint32_t attempt,
                  uint64_t grace_ms);
int pnc_send_raw(zsock_t *s, const void *data, size_t len);
/* Receives one message within timeout_ms, decoded into *m (close it). 0, or -1 on timeout or
 * a message that does not decode. */
int pnc_recv(zsock_t *s, proto_msg_t *m, int timeout_ms);

#endif
