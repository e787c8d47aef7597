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

#include "rm/arbiter.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JOBDIR_PATH 4096

/* The options every job command shares (pointers borrowed from argv). */
struct jobdir_opts {
    const char *cluster;  /* --cluster DIR, else PADDOCK_CLUSTER when --rm is not given */
    const char *rm;       /* --rm ENDPOINTS */
    const char *keys;     /* --keys DIR */
    const char *jobs_dir; /* --jobs-dir DIR */
};

/* Takes argv[*i] when it is one of the shared options (--cluster, --rm, --keys, --jobs-dir) and
 * its value follows: stores the value, moves *i past it and returns true; else false. */
bool jobdir_opts_take(struct jobdir_opts *o, int argc, char **argv, int *i);

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
 * or, once the JM knows its ETA (state.json "eta_s", "eta_p95_s"):
 *   running  40/120 done  8 running  12.5s elapsed  ETA 50s, p95 58s, deadline 1m  tokens 4/4
 * Returns out. */
char *jobdir_progress_line(const json_t *st, char *out, size_t cap);

/* The numeric member k of o, or `dflt` when absent or not a number. */
double jobdir_num(const json_t *o, const char *k, double dflt);

/* "ETA 7m12s, p95 8m40s, deadline 10m" from a document's "eta_s", "eta_p95_s" and "deadline_s"
 * (seconds from submission; state.json and the RM's job records carry them), each part only
 * when known; "" when the ETA is unknown. Returns out. */
char *jobdir_eta_text(const json_t *o, char *out, size_t cap);

/* A duration for people: "850ms", "4.5s", "45s", "3m10s", "1h2m5s" (whole seconds from 10 s on;
 * rounded up when `round_up`, so that a deadline printed this way is never shorter than the
 * value). jobdir_parse_duration reads it back. Negative or non-finite: "-". Returns out. */
#define JOBDIR_DURATION_SIZE 40
char *jobdir_format_duration(double seconds, bool round_up, char *out, size_t cap);

/* A duration as the CLI's options take it: what config_parse_duration reads ("90s", "1.5m",
 * "250ms") and sums of such parts ("3m10s", "1h 2m"). Returns 0 or ERR_PARSE / ERR_RANGE with the
 * reason in msg. */
int jobdir_parse_duration(const char *text, int64_t *ms, char *msg, size_t cap);

/* The directory the job managers of this CLI's jobs keep profiles in (what `paddock submit`
 * hands paddock-jm): `<cluster dir>/profiles` for a local cluster without --jobs-dir, else
 * `<parent of jobs_root>/profiles`. Writes it into out; returns 0, or ERR_TOOBIG. */
int jobdir_profile_dir(const struct jobdir_opts *o, const char *jobs_root, char *out, size_t cap);

/* The token size of virtual cluster `vc` from the RM's "tokens" admin document
 * ({"virtual_clusters": [{"name", "token_cpu", "token_mem_mb", ...}]}); the defaults of
 * rm/arbiter.h (1 core, 4096 MiB) for what is absent. */
void jobdir_token_size(const json_t *tokens, const char *vc, double *token_cpu,
                       uint64_t *token_mem_mb);

struct spec;
struct rmclient;

/* What `paddock submit` and `paddock quote` ask the RM before a job is registered or quoted: its
 * "tokens" admin document, brief (without the active jobs' lines), which carries the largest
 * node's size ("largest_node"); NULL when the RM did not answer. Only from an RM whose document
 * lacks that (an older one) is the whole "nodes" document asked as well (megabytes at 20,000
 * nodes); else nodes is NULL. */
struct jobdir_cluster {
    json_t *nodes, *tokens;
};
void jobdir_cluster_ask(struct rmclient *c, struct jobdir_cluster *k);
void jobdir_cluster_close(struct jobdir_cluster *k);

/* The largest node the RM knows bounds what a task may ask for: sets lim->max_cpu and
 * lim->max_mem_mb from k's tokens' largest_node (or its nodes); leaves them as they are when the RM
 * knows no node (a job manager waits for one) or did not answer. */
struct spec_limits;
void jobdir_cluster_limits(const struct jobdir_cluster *k, struct spec_limits *lim);

/* A job's shape as `paddock submit` and `paddock quote` send it to the RM (JOB_REGISTER's shape
 * fields, the "quote" admin query): public value. */
struct jobdir_shape {
    struct arbiter_shape s; /* jm/shape.h shape_from_spec: token-seconds and seconds */
    bool has_profile;       /* estimates from a profile of an earlier run of the same name */
    double token_cpu;       /* the virtual cluster's token size the shape counts in */
    uint64_t token_mem_mb;
    uint64_t work_ms, work_sd_ms, path_ms, path_sd_ms; /* s in ms (rounded up), as sent */
    uint32_t capacity;    /* the virtual cluster's tokens (0: the RM did not say) */
    double list_s;        /* the job's simulated makespan at min(capacity, width) tokens (0:
                             not simulated): where s.alpha comes from (jm/shape.h shape_alpha) */
    uint32_t alpha_milli; /* s.alpha x 1000 when s.has_alpha */
};

/* Computes the shape of `spec` (borrowed, validated) for the RM: the token size and capacity of
 * the spec's virtual cluster from k's tokens (k may be NULL; defaults when the RM did not say), the
 * job's list schedule at that capacity (shape_alpha; skipped when the capacity is unknown), its
 * spread only from a profile (a spec's estimates carry none: the cluster's calibrated error model,
 * rm/calib.h, stands for their error), and the job's profile from profile_dir (jm/profile.h
 * profile_load_job: the merge of its last successful runs, or the single <name>.profile.json of
 * older versions) when there is one; a profile that does not read is passed over (has_profile
 * false), as the JM does. profile_dir may be NULL (no profile). Returns 0, or an ERR_* code with
 * the reason in msg. */
int jobdir_shape(const struct jobdir_cluster *k, const struct spec *spec, const char *profile_dir,
                 struct jobdir_shape *out, char *msg, size_t cap);

/* Writes `text` and a newline to `path` ("-": standard output): to a temporary file beside it,
 * renamed into place, so a reader never sees half of it. 0, or -1 with the reason printed to
 * stderr after `who` ("paddock import"). */
int jobdir_write_text(const char *who, const char *path, const char *text);

#endif
