/* spawn.h - how the CLI starts Paddock's daemons (`paddock cluster up`, `paddock rm add
 * --start`, `paddock submit`): where the binaries are, and a detached start.
 */
#ifndef PADDOCK_TOOLS_SPAWN_H
#define PADDOCK_TOOLS_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

/* The directory of Paddock's binaries: $PADDOCK_BIN_DIR when set, else the directory of the
 * running executable. 0, or ERR_SYS when /proc/self/exe cannot be read. */
int spawn_bin_dir(char *out, size_t cap);

/* Starts argv (argv[0] a path, or a name looked up in PATH) in a session of its own, stdin from
 * /dev/null, stdout and stderr appended to `logfile` (mode 0600), SIGPIPE and SIGINT at their
 * defaults; a failed exec is written to the log and the child exits 127. Returns the child's
 * pid, or -1 when fork fails. */
pid_t spawn_detached(char *const argv[], const char *logfile);

/* As spawn_detached, for a process told later what to work on: stdout goes to /dev/null and
 * stderr stays the caller's until the process moves them (paddock-jm --job-from-fd), and one
 * end of a Unix socket pair is its descriptor fd_no (above 2), whose other end is returned in
 * *go (close-on-exec; the caller sends the go line with MSG_NOSIGNAL and closes it, or closes it
 * to call the process off).
 * Returns the child's pid, or -1 when pipe or fork fails. */
pid_t spawn_detached_waiting(char *const argv[], int fd_no, int *go);

/* Writes "PID\n" to `path`. 0 or ERR_IO. */
int spawn_write_pid(const char *path, pid_t pid);

#endif
