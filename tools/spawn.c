/* spawn.c - starting Paddock's daemons from the CLI (see spawn.h). */
#include "tools/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/err.h"

int spawn_bin_dir(char *out, size_t cap)
{
    const char *env = getenv("PADDOCK_BIN_DIR");
    if (env != NULL && env[0] != '\0') {
        snprintf(out, cap, "%s", env);
        return 0;
    }
    ssize_t n = readlink("/proc/self/exe", out, cap - 1);
    if (n <= 0)
        return ERR_SYS;
    out[n] = '\0';
    char *slash = strrchr(out, '/');
    if (slash != NULL)
        *slash = '\0';
    return 0;
}

pid_t spawn_detached(char *const argv[], const char *logfile)
{
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid != 0)
        return pid < 0 ? -1 : pid;
    setsid();
    int in = open("/dev/null", O_RDONLY);
    int out = open(logfile, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (in >= 0)
        dup2(in, 0);
    if (out >= 0) {
        dup2(out, 1);
        dup2(out, 2);
    }
    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    execvp(argv[0], argv);
    fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

pid_t spawn_detached_waiting(char *const argv[], int fd_no, int *go)
{
    int p[2]; /* a socket pair, not a pipe: the caller sends with MSG_NOSIGNAL */
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid != 0) {
        close(p[0]);
        if (pid < 0) {
            close(p[1]);
            return -1;
        }
        *go = p[1];
        return pid;
    }
    setsid();
    int in = open("/dev/null", O_RDWR);
    if (in >= 0) {
        dup2(in, 0);
        dup2(in, 1);
    }
    if (p[0] == fd_no)
        fcntl(fd_no, F_SETFD, 0); /* dup2 onto itself would keep close-on-exec */
    else
        dup2(p[0], fd_no);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    execvp(argv[0], argv);
    fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

int spawn_write_pid(const char *path, pid_t pid)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return ERR_IO;
    fprintf(f, "%ld\n", (long)pid);
    return fclose(f) == 0 ? 0 : ERR_IO;
}
