/* port.c - free loopback ports below the ephemeral range (see port.h). */
#include "common/port.h"

#include "common/clock.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* First port of the kernel's ephemeral range. */
static int port__ephemeral_low(void)
{
    int lo = 32768;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f) {
        if (fscanf(f, "%d", &lo) != 1)
            lo = 32768;
        fclose(f);
    }
    return lo;
}

static int port__bind(int fd, int port)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        return -1;
    return ntohs(a.sin_port);
}

int port_reserve(int *fd)
{
    static unsigned next;
    *fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (*fd < 0)
        return -1;
    int limit = port__ephemeral_low(), port = -1;
    if (limit - PORT_LOW >= 1024) {
        unsigned span = (unsigned)(limit - PORT_LOW);
        if (next == 0)
            next = ((unsigned)getpid() * 2654435761u) ^ (unsigned)clock_wall_ns();
        for (int tries = 0; tries < 512 && port < 0; tries++)
            port = port__bind(*fd, PORT_LOW + (int)(next++ % span));
    }
    if (port < 0)
        port = port__bind(*fd, 0);
    if (port < 0) {
        close(*fd);
        *fd = -1;
    }
    return port;
}
