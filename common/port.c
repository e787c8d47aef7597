/* port.c - free loopback ports below the ephemeral range (see port.h). */
#include "common/port.h"

#include "common/clock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static char port__owner[PATH_MAX]; /* the cluster directory ports are claimed for; "": none */

void port_claim_for(const char *dir)
{
    port__owner[0] = '\0';
    if (dir && !realpath(dir, port__owner))
        port__owner[0] = '\0';
}

/* The directory of this user's claims. */
static void port__claims_dir(char *dir, size_t cap)
{
    snprintf(dir, cap, "/tmp/paddock-ports-%u", (unsigned)getuid());
}

/* The claim file of a port. */
static void port__claim_path(int port, char *path, size_t cap)
{
    char dir[48];
    port__claims_dir(dir, sizeof dir);
    snprintf(path, cap, "%s/%d", dir, port);
}

int port_claimed(int port)
{
    char path[64], owner[PATH_MAX];
    port__claim_path(port, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, owner, sizeof owner - 1);
    close(fd);
    if (n <= 0)
        return 0;
    owner[n] = '\0';
    struct stat st;
    return strcmp(owner, port__owner) != 0 && stat(owner, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Writes this process's claim on a port it holds bound (best effort: no claim, no harm beyond
 * the old behaviour). */
static void port__claim(int port)
{
    if (!port__owner[0])
        return;
    char dir[64], path[64], tmp[96];
    port__claims_dir(dir, sizeof dir);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return;
    port__claim_path(port, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    size_t len = strlen(port__owner);
    int ok = write(fd, port__owner, len) == (ssize_t)len;
    close(fd);
    if (!ok || rename(tmp, path) != 0)
        unlink(tmp);
}

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
        for (int tries = 0; tries < 512 && port < 0; tries++) {
            port = port__bind(*fd, PORT_LOW + (int)(next++ % span));
            if (port >= 0 && port_claimed(port)) { /* another cluster's, its daemon down now */
                close(*fd);
                *fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (*fd < 0)
                    return -1;
                port = -1;
            }
        }
        if (port >= 0)
            port__claim(port);
    }
    if (port < 0)
        port = port__bind(*fd, 0);
    if (port < 0) {
        close(*fd);
        *fd = -1;
    }
    return port;
}
