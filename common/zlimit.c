/* zlimit.c - room for as many ZeroMQ sockets as the system allows (zlimit.h). */
#include "common/zlimit.h"

#include <sys/resource.h>

#include <czmq.h>

#define ZLIMIT__CZMQ_DEFAULT 1024 /* czmq's socket limit when none is set */

size_t zlimit_raise(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            getrlimit(RLIMIT_NOFILE, &rl);
    }
    zsys_handler_set(NULL);
    size_t limit = zsys_socket_limit();
    /* a socket holds at least one descriptor (its mailbox), a connected one a second */
    size_t fds = rl.rlim_cur == RLIM_INFINITY ? (size_t)-1 : (size_t)rl.rlim_cur / 2;
    if (fds < limit)
        limit = fds;
    if (limit <= ZLIMIT__CZMQ_DEFAULT)
        return ZLIMIT__CZMQ_DEFAULT;
    zsys_set_max_sockets(limit);
    return limit;
}
