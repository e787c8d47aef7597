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
 * Returns -1 (and *fd = -1) when no port could be bound. */
int port_reserve(int *fd);

#endif
