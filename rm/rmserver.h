/* server.h - the paddock-rm daemon: one replica of the resource monitor (a thin shell).
 *
 * Wires the pure modules to the world on one libuv loop: canonical/raft with the libuv
 * backend (raft_uv + the CURVE transport of rm/raft_curve.h) drives the ledger FSM (rm/fsm.h);
 * ZeroMQ sockets through common/zuv.h carry the API (ROUTER), PN heartbeats (ROUTER, or the API
 * socket) and the cluster view (PUB); CURVE with an allow-list when keys are configured.
 *
 * The facts about raft it is built around (docs/architecture.md, "Facts about the dependencies"):
 * raft 0.15 needs raft_barrier() on every new leadership before serving writes (also what applies
 * old entries after a whole-cluster restart); SIGPIPE is ignored; there is no state-change
 * callback, so raft_state() is polled every 10 ms; with several buffers in one raft_apply only the
 * first result is reported, so a batch of commands is packed into one entry; raft does not lock its
 * directory, so the replica flocks DATA_DIR/lock; a follower cannot apply, so writes sent to it are
 * answered with ERROR(ERR_NOTLEADER) carrying the leader's API endpoint, and clients retry there
 * with the same idempotency key.
 */
#ifndef PADDOCK_RM_RMSERVER_H
#define PADDOCK_RM_RMSERVER_H

#include "rm/rmconf.h"

#include <stdbool.h>
#include <stddef.h>

/* Runs the replica until SIGTERM or SIGINT. `cfg` is borrowed for the call. `insecure` allows
 * non-loopback endpoints without CURVE keys. `bootstrap` allows creating the cluster's first
 * configuration in an empty data directory; without it an empty directory is refused, so a
 * replica whose disk was wiped cannot silently rejoin under its old id, unless `join` says the
 * replica was added to a running cluster (`paddock rm add`, under a new id): it then waits for
 * the leader to send it the log. Returns 0 after a clean
 * stop, or an ERR_* code with the reason in msg when start-up fails (data directory locked or
 * unusable, bind failure, keys unreadable, ...). */
int rmserver_run(const rmconf_t *cfg, bool insecure, bool bootstrap, bool join, char *msg,
                 size_t cap);

#endif
