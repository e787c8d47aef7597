/* spawn.c - starting Paddock's daemons from the CLI (see spawn.h). */
#include "tools/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
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

/* Rewrites this process's command line, as ps and /proc/PID/cmdline show it, to argv (argv[0]
 * as its last path component), in the space the command line it was started with holds (as
 * setproctitle does): the arguments that fit, whole, in order; its short name (comm) too. 0, or
 * -1 when not even argv[0]'s name fits, with nothing changed. */
static int spawn__retitle(char *const argv[])
{
    char *area = program_invocation_name; /* argv[0] as the kernel laid the arguments out */
    FILE *f = fopen("/proc/self/cmdline", "r");
    if (f == NULL || area == NULL) {
        if (f != NULL)
            fclose(f);
        return -1;
    }
    size_t room = 0, n;
    char buf[4096];
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        room += n;
    fclose(f);
    const char *name = strrchr(argv[0], '/') != NULL ? strrchr(argv[0], '/') + 1 : argv[0];
    if (strlen(name) + 1 > room)
        return -1;
    memset(area, 0, room);
    size_t used = 0;
    for (size_t i = 0; argv[i] != NULL; i++) {
        const char *a = i == 0 ? name : argv[i];
        size_t len = strlen(a) + 1;
        if (used + len > room)
            break;
        memcpy(area + used, a, len);
        used += len;
    }
    prctl(PR_SET_NAME, name, 0, 0, 0);
    return 0;
}

pid_t spawn_detached_waiting(char *const argv[], spawn_main_fn in_image, int fd_no, int *go)
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
    signal(SIGTERM, SIG_DFL);
    /* argv's strings may lie in the command line's space, which the new title takes: copied */
    char **copy = NULL;
    int argc = 0;
    while (in_image != NULL && argv[argc] != NULL)
        argc++;
    if (in_image != NULL && (copy = calloc((size_t)argc + 1, sizeof *copy)) != NULL) {
        for (int i = 0; i < argc && copy != NULL; i++)
            if ((copy[i] = strdup(argv[i])) == NULL)
                copy = NULL; /* out of memory in a new child: exec below */
    }
    if (copy != NULL && spawn__retitle(copy) == 0) {
        /* no exec closes what the caller had open: the other end of the pair above all, whose
         * end of file calls this process off */
        close_range((unsigned)fd_no + 1, ~0U, 0);
        exit(in_image(argc, copy));
    }
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
