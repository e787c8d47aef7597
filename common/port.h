/* port.h - a free TCP port on 127.0.0.1 for a daemon about to be started.
 *
 * `paddock cluster up` and the tests write configurations naming ports before the daemons
 * that bind them start. A port the kernel picks (bind to port 0) comes from its ephemeral range
 * (/proc/sys/net/ipv4/ip_local_port_range); once released it can become the source port of any
 * process's outgoing connection before the daemon binds it, and the daemon then fails at start.
 * Ports here are drawn below that range, where only an explicit bind takes one, starting at a
 * random place so that two clusters set up at once rarely reach for the same port.
 */
#ifndef PADDOCK_COMMON_PORT_H
#define PADDOCK_COMMON_PORT_H

/* Lowest port handed out. */
#define PORT_LOW 20000

/* Binds a socket to a free port on 127.0.0.1 and returns the port; the bound socket is left in
 * *fd so the port stays taken until the caller closes it (just before the daemon starts).
 * Falls back to a kernel-chosen port when the range below the ephemeral one is too small.
 * Returns -1 (and *fd = -1) when no port could be bound.
 *
 * A port another cluster claimed (port_claim_for) is passed over while that cluster's directory
 * exists, even when nothing is bound to it: a daemon of that cluster that was stopped and is
 * started again (a test's kill and restart, `paddock cluster up` on the same directory) finds
 * its port free. */
int port_reserve(int *fd);

/* From now on, ports port_reserve hands out in this process are claimed for the cluster whose
 * directory is `dir` (an existing directory; the path is copied, made absolute): a file per
 * port in /tmp/paddock-ports-UID naming it. A claim lapses when its directory is gone or is
 * claimed again for the same directory. NULL: no claims (the default). */
void port_claim_for(const char *dir);

/* 1 when another cluster's claim holds the port (its file names a directory that exists and is
 * not the one port_claim_for named), else 0. */
int port_claimed(int port);

#endif
