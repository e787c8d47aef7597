/* server.h - paddock-pn's shell: one libuv loop driving the ROUTER for job managers, a DEALER
 * per RM replica (registration and heartbeats), SIGCHLD, timers, and the node core
 * (pn/node.h). Sockets are CURVE-protected when keys are configured (docs/architecture.md,
 * "Sockets, keys and the event loop"); without keys the PN listens only on loopback unless started
 * with --insecure.
 *
 * The ROUTER also answers `paddock logs` (C:TASK_OUTPUT_READ S:TASK_OUTPUT, pn/output.h) from the
 * task directories itself, before the node sees the request; everything else goes to the node.
 *
 * Files it writes in the work directory: pn.endpoint (the bound ROUTER endpoint, useful when
 * the configured port is "*" or 0) and status.json (counters, rewritten every heartbeat).
 */
#ifndef PADDOCK_PN_SERVER_H
#define PADDOCK_PN_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include "pn/pnconf.h"

/* Runs the PN until SIGTERM or SIGINT. Returns 0 after a clean stop, or an error with the
 * reason in msg (configuration, keys, bind). */
int server_run(pnconf_t *cfg, bool insecure, char *msg, size_t cap);

#endif
