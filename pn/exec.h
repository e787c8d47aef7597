/* exec.h - starting, watching and stopping task processes on the PN.
 *
 * A task runs as the leader of its own process group (so cancel and preemption reach the whole
 * tree, grandchildren included), started with posix_spawn (vfork semantics: measured faster
 * than libuv's fork-based uv_spawn; docs/architecture.md, "Facts about the dependencies"), stdin
 * from /dev/null and stdout/stderr appended to files. Opportunistic tasks run at a lower CPU
 * priority (nice applied to the whole process group right after the spawn; the parent is suspended
 * until the child execs, so nothing has forked yet). Every descriptor above 2 is closed in the
 * child, including any the PN inherited from whoever started it. When a user to run as is given,
 * the spawn goes through the exec shim (paddock-pn-exec), which drops privileges before exec.
 *
 * Reaping is the caller's: exec_reap collects every exited child (wait4 with rusage) without
 * blocking, for a SIGCHLD handler. Memory is watched by polling the RSS of every process of
 * a task's group through /proc (exec_rss_scan): cgroup v2 memory controllers are absent on
 * these hosts (docs/architecture.md, "Facts about the dependencies").
 */
#ifndef PADDOCK_PN_EXEC_H
#define PADDOCK_PN_EXEC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What to run; borrowed for the exec_spawn call. */
typedef struct exec_spec {
    char *const *argv; /* NULL-terminated, argv[0] a path or a name looked up in PATH of env */
    char *const *envp; /* NULL-terminated "K=V" list: the task's whole environment */
    const char *cwd;   /* working directory (must exist) */
    const char *stdout_path, *stderr_path; /* created (0644) or appended */
    int nice;                              /* 0..19 */
    const char *shim;                      /* path of paddock-pn-exec, used when uid/gid set */
    uid_t uid;                             /* with gid: run as this user (root only); */
    gid_t gid;                             /*   (uid_t)-1 means "as the PN" */
    const char *make_dir; /* when set: made first (0755, of uid/gid when set), its output files
                             created in it (a task directory set up at its start) */
    int at_fd; /* when > 0: a directory that make_dir, stdout_path and stderr_path are relative
                  to (borrowed; the PN's WORK/tasks, so the spawn does not walk the work
                  directory's whole path three times); 0: those paths are as given */
} exec_spec_t;

/* Starts the process. On success *pid is the leader and the process group id. Errors:
 * ERR_NOTFOUND (argv[0] not found or not executable in PATH), ERR_SYS (posix_spawn failed;
 * reason in msg), ERR_INVAL. */
int exec_spawn(const exec_spec_t *spec, pid_t *pid, char *msg, size_t cap);

/* Bounds on a process's start time in clock ticks since boot, the unit of /proc/PID/stat
 * field 22 (exec_start_time): lo <= start <= hi. */
typedef struct exec_started {
    unsigned long long lo, hi;
} exec_started_t;

/* exec_spawn, and the bounds of the leader's start time read from CLOCK_BOOTTIME just before
 * and just after the vfork, without reading /proc (a /proc read per task cost the PN's loop
 * as much as a tenth of its time). `started` may be NULL. */
int exec_spawn_timed(const exec_spec_t *spec, pid_t *pid, exec_started_t *started, char *msg,
                     size_t cap);

/* Resolves `name` in the PATH found in envp (or "/usr/local/bin:/usr/bin:/bin") into out
 * (cap bytes). Names with a '/' are taken as they are (absolute ones must be executable;
 * relative ones are resolved by exec in the task's working directory). 0 or ERR_NOTFOUND. */
int exec_resolve(const char *name, char *const *envp, char *out, size_t cap);

/* exec_resolve, remembered for a second per (name, PATH) across threads: *hit is 1 when
 * the answer came from memory (no access or stat made). Names starting with '.' and paths
 * over 511 bytes are not remembered. exec_spawn_timed resolves through it and, when a
 * remembered path fails to exec, forgets it (exec_resolve_forget) and searches again. */
int exec_resolve_cached(const char *name, char *const *envp, char *out, size_t cap, int *hit);
void exec_resolve_forget(const char *name, char *const *envp);
typedef struct exec_cache_stats {
    uint64_t hits, misses, forgotten;
} exec_cache_stats_t;
exec_cache_stats_t exec_resolve_stats(void);

/* One reaped child. */
typedef struct exec_exit {
    pid_t pid;
    int exit_code;        /* 0..255, or -1 when killed by a signal */
    int signal;           /* the terminating signal, or 0 */
    uint64_t cpu_time_ms; /* user + system of the child and its waited-for descendants */
    uint64_t maxrss_kb;   /* largest RSS among them */
} exec_exit_t;

/* Reaps one exited child without blocking. 1 with *out filled, 0 when none is waiting. */
int exec_reap(exec_exit_t *out);

/* Sends `sig` to every process of the group led by `pgid`. 0, or ERR_NOTFOUND (group gone). */
int exec_kill_group(pid_t pgid, int sig);

/* Sets the nice value of every process in the group. 0 or ERR_SYS (e.g. raising priority
 * without privilege). */
int exec_renice_group(pid_t pgid, int nice);

/* Sums the resident set of every live process per process group. For each i, rss_kb[i]
 * receives the total RSS in KiB of the processes whose pgid is pgids[i] (0 if none).
 * One pass over /proc. Returns 0 or ERR_IO. */
int exec_rss_scan(const pid_t *pgids, uint64_t *rss_kb, size_t n);

/* What a task's processes have used so far (exec_usage_scan), summed over its process group. */
typedef struct exec_usage {
    uint64_t rss_kb;     /* resident set now */
    uint64_t cpu_ms;     /* user + system of the live processes and the children they waited
                            for (/proc/PID/stat utime, stime, cutime, cstime) */
    uint64_t rchar;      /* bytes read through read(2) and the like, page cache or not
                            (/proc/PID/io rchar; 0 where /proc/PID/io cannot be read) */
    uint64_t read_bytes; /* of those, fetched from storage (/proc/PID/io read_bytes) */
} exec_usage_t;

/* exec_rss_scan with CPU time and, when with_io, bytes read as well: one pass over /proc, and
 * /proc/PID/io read only for the processes of the groups asked about. A process's counters leave
 * the sum when it exits unless a process of the group waits for it (then cutime/cstime keep its CPU
 * time; its bytes read are lost): the sums are lower bounds. Returns 0 or ERR_IO/ERR_NOMEM. */
int exec_usage_scan(const pid_t *pgids, exec_usage_t *out, size_t n, int with_io);

/* Makes this process a child subreaper (orphaned grandchildren of tasks are reparented to it
 * and reaped by exec_reap instead of lingering). 0 or ERR_SYS. */
int exec_become_subreaper(void);
/* A process's start time (clock ticks since boot, /proc/PID/stat field 22); 0 when gone. */
unsigned long long exec_start_time(pid_t pid);
/* Kills (SIGKILL) the process group of every "PID START" or "PID LO HI" line of the file at
 * path whose leader is still that process (its start time is START, or within [LO, HI]) or
 * gone (the group's survivors); *killed receives how many groups. A missing file is no error. */
int exec_kill_stale(const char *path, size_t *killed);

#endif
