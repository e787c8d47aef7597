/* paddock-pn-exec - the PN's exec shim for running tasks as another user.
 *
 * usage (by paddock-pn only): paddock-pn-exec UID GID PATH ARGV0 [ARGS...]
 * Sets the supplementary groups of UID's account (none without one), the group then the user id,
 * refuses to go on if root could be regained, then execs PATH with ARGV0 ARGS... and the
 * environment it was given. The PN has already put it in the task's process group, with its nice
 * value, cwd and output files, so everything set there survives the exec; it sets the parent-death
 * signal again (changing ids cleared it), so the task still dies with its PN. Exit status 126 when
 * the ids cannot be dropped, 127 when exec fails (the message goes to the task's stderr file).
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse_id(const char *s, unsigned long *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || v >= UINT_MAX)
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long uid, gid;
    if (argc < 5 || parse_id(argv[1], &uid) || parse_id(argv[2], &gid)) {
        fprintf(stderr, "paddock-pn-exec: usage: paddock-pn-exec UID GID PATH ARGV0 [ARGS...]\n");
        return 126;
    }
    /* the user's own supplementary groups (issue 27: a task runs with its submitter's uid and
       groups); none when the uid has no account name */
    struct passwd *pw = getpwuid((uid_t)uid);
    int grc = pw != NULL ? initgroups(pw->pw_name, (gid_t)gid) : setgroups(0, NULL);
    if (grc != 0 && errno != EPERM) {
        perror("paddock-pn-exec: setgroups");
        return 126;
    }
    if (setgid((gid_t)gid) != 0 || setuid((uid_t)uid) != 0) {
        perror("paddock-pn-exec: setgid/setuid");
        return 126;
    }
    if (uid != 0 && (setuid(0) == 0 || geteuid() == 0)) {
        fprintf(stderr, "paddock-pn-exec: could still regain root, refusing\n");
        return 126;
    }
    /* changing ids cleared the parent-death signal the PN set: the task dies with its PN */
    pid_t pn = getppid();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != pn || pn == 1)
        return 126;
    execv(argv[3], argv + 4);
    fprintf(stderr, "paddock-pn-exec: %s: %s\n", argv[3], strerror(errno));
    return 127;
}
