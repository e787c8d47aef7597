/* jobdir.h - the user's side of a job directory (docs/job-directory.md): where job directories
 * live, reading a job's state.json, whether its paddock-jm still runs, and the one-line progress
 * summary `paddock submit --wait` and `paddock job show` print.
 *
 * Where job directories live: `--jobs-dir DIR` when given; else `<cluster dir>/jobs` for a local
 * cluster (--cluster DIR or PADDOCK_CLUSTER); else, for a cluster named by --rm endpoints,
 * `$HOME/.paddock/jobs`. Profiles go beside it (`<parent>/profiles`) outside a local cluster.
 */
#ifndef PADDOCK_TOOLS_JOBDIR_H
#define PADDOCK_TOOLS_JOBDIR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define JOBDIR_PATH 4096

/* The options every job command shares (pointers borrowed from argv). */
struct jobdir_opts {
    const char *cluster;  /* --cluster DIR, else PADDOCK_CLUSTER when --rm is not given */
    const char *rm;       /* --rm ENDPOINTS */
    const char *keys;     /* --keys DIR */
    const char *jobs_dir; /* --jobs-dir DIR */
};

/* Fills the cluster default from PADDOCK_CLUSTER when neither --cluster nor --rm is set; with
 * --rm (and no --cluster) removes PADDOCK_CLUSTER from the environment, so that neither the RM
 * client nor a job manager started from here takes the local cluster instead. */
void jobdir_opts_defaults(struct jobdir_opts *o);

/* Writes the absolute directory that holds job directories into out (cap bytes), creating it
 * when `create`. Returns 0, ERR_INVAL (no cluster, no --rm, no --jobs-dir) or ERR_IO, with the
 * reason in msg. */
int jobdir_root(const struct jobdir_opts *o, bool create, char *out, size_t cap, char *msg,
                size_t mcap);

/* DIR/state.json as a JSON object (caller owns: json_decref), or NULL when it is missing or not
 * a JSON object. The JM renames a complete file into place, so a read never sees half of one. */
json_t *jobdir_load(const char *dir, const char *file);

/* True when `pid` is alive, not a zombie, and its command line names paddock-jm (a recycled pid
 * does not count). */
bool jobdir_jm_alive(long pid);

/* The pid in DIR/jm.pid, else state.json's "pid", else 0. */
long jobdir_jm_pid(const char *dir, const json_t *state);

/* True for the terminal job states: succeeded, failed, cancelled. */
bool jobdir_state_final(const char *state);

/* One line (no newline) summarising a state.json document into out:
 *   running  40/120 done  8 running  12.5s of 60s deadline (21%)  tokens 4/4
 * Returns out. */
char *jobdir_progress_line(const json_t *st, char *out, size_t cap);

/* The numeric member k of o, or `dflt` when absent or not a number. */
double jobdir_num(const json_t *o, const char *k, double dflt);

#endif
