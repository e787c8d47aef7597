/* rm_replica.h - the fixture of the tests that drive one real paddock-rm replica by hand
 * (test_rm_daemon, test_rm_view_join, test_rm_view_joiners, test_rm_view_backlog): its directory
 * and CURVE keys (through rm_harness), two free ports for its API and publisher, its configuration
 * file, starting it, and a client socket that speaks to it.
 *
 * The replica started by rm_replica_spawn is the caller's child: hand it to rm_harness_child()
 * so that it is stopped at rm_harness_fini() or on a crash. */
#ifndef PADDOCK_TESTS_RM_REPLICA_H
#define PADDOCK_TESTS_RM_REPLICA_H

#include <czmq.h>
#include <sys/types.h>

#include "proto/proto.h"
#include "rm/rmclient.h"

struct rm_replica {
    char dir[256];  /* the test's directory (rm_harness_dir) */
    char conf[512]; /* DIR/rm.conf */
    char keys[512]; /* DIR/keys: the cluster's CURVE certificate */
    char exe[1024]; /* paddock-rm */
    char api[64];   /* tcp://127.0.0.1:PORT */
    char pub[64];
};

/* rm_harness_init(tag), then the keys and DIR/rm.conf of a one-replica cluster (id 1, data in
 * DIR/data, virtual cluster default=10), with `ledger` appended to its [ledger] section and
 * `sections` after it (both may be ""), then [security] keys_dir. The ports are released for the
 * replica to bind. Returns 0, or -1 (the harness's directory may exist: rm_harness_fini). */
int rm_replica_setup(struct rm_replica *r, const char *tag, const char *ledger,
                     const char *sections);

/* Starts paddock-rm --config CONF with up to 12 extra arguments (NULL-terminated; extra may be
 * NULL), stdout and stderr appended to `log`. Its pid, or -1. */
pid_t rm_replica_spawn(const struct rm_replica *r, char *const extra[], const char *log);

/* Starts the replica with --bootstrap, its output in DIR/rm.log, hands it to rm_harness_child and
 * waits up to 15 s for it to lead (its view socket is bound by then). A client of its API, or NULL;
 * *pid (may be NULL) gets the replica's pid. */
rmclient_t *rm_replica_boot(const struct rm_replica *r, pid_t *pid);

/* Makes z a CURVE client with the certificate in `keys` (a keys directory), checking the
 * server's key against server_key (NULL: the cluster's own): 0 or an error. */
int rm_replica_curve(zsock_t *z, const char *keys, const char *server_key);

/* A DEALER (linger 0) connected to the replica's API, with the cluster's client keys unless
 * keys is NULL, checked against server_key (NULL: the cluster's own); NULL when the keys do not
 * load. `keys` is a keys directory (r->keys, or another cluster's). */
zsock_t *rm_replica_dealer(const struct rm_replica *r, const char *keys, const char *server_key);

/* Sends one message, encoded in the version-1 encoding, as one frame: 0 or an error. */
int rm_replica_send(zsock_t *z, proto_msg_t *m);

/* Registers nodes pn-000 .. pn-(n-1) (4 cpus, 4 GiB, rack r1), pipelined on the DEALER d, and
 * waits up to timeout_ms for their acks: how many were accepted, or -1. */
int rm_replica_register_nodes(zsock_t *d, int n, int timeout_ms);

/* The same for nodes PREFIX-000 .. PREFIX-(n-1), node i of size(i) (NULL: 4 cpus, 4 GiB). */
struct rm_replica_size {
    double cpu;
    uint64_t mem_mb;
};
int rm_replica_register_nodes_as(zsock_t *d, const char *prefix, int n,
                                 struct rm_replica_size (*size)(int i), int timeout_ms);

#endif
