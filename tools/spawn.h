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

/* A program's main, run in a forked child in place of exec'ing it (spawn_detached_waiting). */
typedef int (*spawn_main_fn)(int argc, char **argv);

/* As spawn_detached, for a process told later what to work on: stdout goes to /dev/null and
 * stderr stays the caller's until the process moves them (paddock-jm --job-from-fd), and one
 * end of a Unix socket pair is its descriptor fd_no (3 or above), whose other end is returned in
 * *go (close-on-exec; the caller sends the go line with MSG_NOSIGNAL and closes it, or closes it
 * to call the process off).
 * With in_image, the child runs in_image(argv) and exits with what it returns instead of
 * exec'ing argv[0]: the libraries this process has loaded are not loaded again (a ZeroMQ
 * program's dynamic load is about 10 ms of CPU). Call it so only before this process starts
 * threads or uses ZeroMQ. The child closes every descriptor above fd_no and takes argv as its
 * command line, as ps shows it (argv[0] by its last path component; the arguments that fit in
 * the space of this process's own command line, whole); where not even that name fits it execs
 * argv[0] after all.
 * Returns the child's pid, or -1 when pipe or fork fails. */
pid_t spawn_detached_waiting(char *const argv[], spawn_main_fn in_image, int fd_no, int *go);

/* Writes "PID\n" to `path`. 0 or ERR_IO. */
int spawn_write_pid(const char *path, pid_t pid);

#endif
