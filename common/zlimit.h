/* zlimit.h - room for as many ZeroMQ sockets as the system allows.
 *
 * A JM holds one DEALER socket per node it has sent work to, so a job spread over thousands of
 * nodes holds thousands of sockets. czmq allows 1,024 sockets per process unless told otherwise
 * (zsys_set_max_sockets), and each socket takes a file descriptor or two, so a JM past about a
 * thousand nodes failed to open a link (and a resumed JM asking every node of a 20,000-node view
 * aborted). A process that may hold that many calls zlimit_raise once, before its first socket.
 */
#ifndef PADDOCK_COMMON_ZLIMIT_H
#define PADDOCK_COMMON_ZLIMIT_H

#include <stddef.h>

/* Raises the soft open-file limit to the hard one and sets czmq's socket limit to the most the
 * system allows (ZMQ_SOCKET_LIMIT), bounded by the open-file limit. Turns off czmq's own signal
 * handler (the daemons handle signals through libuv). Valid only before the process's first
 * ZeroMQ socket. Returns the socket limit now in force (czmq's 1,024 where the system allows
 * no more). */
size_t zlimit_raise(void);

#endif
