/* taskcg.h - one cgroup v2 directory per task, when the PN is given a writable v2 subtree.
 *
 * A process group does not hold a process that calls setsid(); a cgroup does, and writing
 * cgroup.kill kills everything in it (docs/architecture.md, "Facts about the dependencies": a
 * grandchild that calls setsid escapes the process group, cgroup.kill does not). With `[tasks]
 * cgroup_base` set to a cgroup v2 directory the PN may create children in (a systemd Delegate=yes
 * subtree, or a directory it creates under the v2 mount as root), every task gets BASE/t<id>: the
 * leader is moved there right after the spawn, so processes forked from then on stay in it whatever
 * they do; a process forked in the first microseconds (before the move) is still reached through
 * the process group. Cancel, preemption, memory kills and the end of the leader kill the cgroup
 * too. Opportunistic tasks get cpu.weight 1 when the cpu controller is enabled for the
 * children of BASE; otherwise nice does that job (pn/exec.h).
 *
 * Without cgroup_base (the default) none of this is used.
 */
#ifndef PADDOCK_PN_TASKCG_H
#define PADDOCK_PN_TASKCG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct taskcg taskcg_t;

/* Opens BASE (created when missing), checks it is a cgroup v2 directory whose children can be
 * created and killed, and enables the cpu controller for its children when it can. NULL with
 * the reason in msg. Caller owns; taskcg_destroy nullifies (it removes BASE when empty). */
taskcg_t *taskcg_new(const char *base, char *msg, size_t cap);
void taskcg_destroy(taskcg_t **cgp);

/* True when children of BASE have the cpu controller (cpu.weight works). */
bool taskcg_has_cpu(const taskcg_t *cg);

/* Creates BASE/t<id> into path (cap bytes). 0 or ERR_IO. */
int taskcg_create(taskcg_t *cg, uint64_t id, char *path, size_t cap);
/* Moves process `pid` into the cgroup at `path`. 0 or ERR_IO. */
int taskcg_attach(const char *path, pid_t pid);
/* Sets cpu.weight (1..10000) when the cpu controller is there; 0, or ERR_IO. */
int taskcg_set_weight(const taskcg_t *cg, const char *path, unsigned weight);
/* Kills every process in the cgroup (cgroup.kill). 0 or ERR_IO. */
int taskcg_kill(const char *path);
/* Removes the cgroup, waiting (bounded, about 100 ms) for its processes to be gone. Blocking:
 * call it off the loop. 0 or ERR_IO. */
int taskcg_remove(const char *path);

#endif
