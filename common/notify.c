#include "common/notify.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/err.h"

bool notify_enabled(void)
{
    const char *p = getenv("NOTIFY_SOCKET");
    return p != NULL && p[0] != '\0';
}

int notify_send(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    if (path == NULL || path[0] == '\0')
        return 0;
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    size_t plen = strlen(path);
    if ((path[0] != '/' && path[0] != '@') || plen >= sizeof sa.sun_path)
        return ERR_INVAL;
    memcpy(sa.sun_path, path, plen);
    if (path[0] == '@')
        sa.sun_path[0] = '\0'; /* abstract namespace */
    socklen_t salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return ERR_SYS;
    ssize_t n;
    do {
        n = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen);
    } while (n < 0 && errno == EINTR);
    close(fd);
    return n < 0 ? ERR_SYS : 0;
}

int notify_ready(void)
{
    char buf[64];
    snprintf(buf, sizeof buf, "READY=1\nMAINPID=%ld", (long)getpid());
    return notify_send(buf);
}

int notify_stopping(void)
{
    return notify_send("STOPPING=1");
}

int notify_status(const char *fmt, ...)
{
    char buf[512] = "STATUS=";
    size_t pre = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + pre, sizeof buf - pre, fmt, ap);
    va_end(ap);
    /* One line: systemd would read a newline as the start of another assignment. */
    for (char *p = buf + pre; *p != '\0'; p++) {
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    }
    return notify_send(buf);
}
