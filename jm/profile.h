/* profile.h - a job profile: per-stage statistics of a previous run of the same job name
 * (Jockey §4.1 "Job simulator and the offline estimation", §5.1).
 *
 * Written by the JM at the end of a successful run from its finished task attempts
 * (profile_build, profile_save_run), found by job name for the next run (profile_load_job: the
 * merge of the last runs), and read by the job simulator (jm/jsim.h), the progress indicator
 * (jm/progress.h: Q_s, T_s), the Amdahl model (l_s, T_s) and the shape the RM's arbiter admits
 * on (jm/shape.h).
 *
 * History (Morpheus keeps a recurring job's runs; a bad run must not spoil the model): each
 * successful run leaves its own file, <dir>/<job>/<wall ms, 13 digits>-<job id>.json (names
 * sanitised as in profile_path), written atomically; the newest PROFILE_KEEP are kept. A failed
 * or cancelled run writes nothing. What the next run reads is the merge (profile_merge) of the
 * newest PROFILE_KEEP runs; without any, the single file of older versions,
 * <dir>/<job>.profile.json, when present.
 *
 * The merge pools the runs' samples per stage (by name), as if one run had made all their
 * attempts: counts and totals add up (tasks, attempts, failures, ratio_samples, runtime_total,
 * queue_total), so the means consumers derive (runtime_total / tasks, the failure probability
 * failures / attempts) are the pooled ones; fail_run_mean is weighted by failures, input_mean by
 * tasks, input_max is the largest. Each quantile vector is that of the mixture of the runs'
 * distributions, each run's distribution being the piecewise-linear inverse CDF its quantiles
 * describe, weighted by its sample count (runtime_q by tasks, ratio_q by ratio_samples, init_q by
 * attempts). Two runs of 10 tasks with run times uniform on [0, 20] and on [20, 40] merge into 20
 * tasks uniform on [0, 40].
 *
 * Per stage: task count, attempt and failure counts (failure probability), the run-time
 * distribution of successful attempts as PROFILE_NQ quantiles (min, 5%, ..., max), the
 * initialization-latency distribution (dispatch to running: staging and node queue), the total
 * and mean queueing time (ready to dispatch), how long failed attempts ran, and input sizes.
 * Where the JM knew a task's estimate (the spec's runtime_s), also the distribution of the ratio
 * actual / estimated run time: it separates run-time noise from the differences between tasks
 * that the estimates already capture (input sizes), so the simulator can sample each task as
 * its own estimate times a ratio.
 *
 * File format: one JSON object, versioned:
 *   {"format": "paddock-profile", "version": 1, "job": NAME,
 *    "stages": [{"name", "tasks", "attempts", "failures", "runtime_q": [21 numbers],
 *                "ratio_q": [21 numbers], "ratio_samples",
 *                "runtime_total_s", "queue_total_s", "init_q": [21 numbers],
 *                "fail_run_mean_s", "input_bytes_mean", "input_bytes_max"}]}
 * Unknown keys are ignored (a newer writer may add some); a different "version" is refused.
 *
 * Pure except profile_load/profile_save, which touch only the path they are given. A public value
 * struct; the caller owns it (profile_init / profile_close).
 */
#ifndef PADDOCK_JM_PROFILE_H
#define PADDOCK_JM_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROFILE_VERSION    1
#define PROFILE_NQ         21          /* quantiles at k / (PROFILE_NQ - 1) */
#define PROFILE_MAX_STAGES 100000      /* bound on stages read from a file */
#define PROFILE_MAX_BYTES  (64u << 20) /* bound on a profile file's size */
#define PROFILE_MAX_NAME   256
#define PROFILE_KEEP       10 /* successful runs kept per job, and merged */

struct profile_stage {
    char *name;                   /* owned */
    int tasks;                    /* tasks that succeeded */
    int attempts;                 /* all attempts (successful and failed) */
    int failures;                 /* failed attempts */
    double runtime_q[PROFILE_NQ]; /* run time of successful attempts (s), quantiles */
    double ratio_q[PROFILE_NQ];   /* run time / estimate of successful attempts, quantiles */
    int ratio_samples;            /* successful attempts with an estimate (0: ratio_q unused) */
    double runtime_total;         /* T_s: total run time of successful attempts (s) */
    double queue_total;           /* Q_s: total time tasks waited ready before dispatch (s) */
    double init_q[PROFILE_NQ];    /* dispatch-to-running latency (s), quantiles */
    double fail_run_mean;         /* mean time a failed attempt ran before failing (s) */
    double input_mean, input_max; /* input bytes per task */
};

struct profile {
    int version; /* PROFILE_VERSION */
    char *job;   /* owned: the job name the profile belongs to */
    int nstages;
    struct profile_stage *stages; /* owned */
};

/* One finished task attempt, as the JM records it. */
struct profile_attempt {
    int stage;          /* index into the stage-name list given to profile_build */
    double queue_s;     /* ready -> dispatched */
    double init_s;      /* dispatched -> running */
    double run_s;       /* running -> exit */
    double input_bytes; /* the task's input size */
    double est_s;       /* the task's run-time estimate from the spec (0: unknown) */
    bool ok;            /* succeeded */
};

/* An empty profile (version PROFILE_VERSION, no job, no stages). */
void profile_init(struct profile *p);
/* Frees what the profile owns and leaves it empty (as profile_init). NULL-safe. */
void profile_close(struct profile *p);

/* Builds a profile from n attempts over nstages stages named stage_names[] (copied); replaces
 * *p's contents on success (the old contents are freed), leaves it untouched on error.
 * ERR_INVAL (bad argument, a stage index out of range, a negative or non-finite time) with the
 * reason in msg, or ERR_NOMEM. Stages without attempts get zero statistics. */
int profile_build(struct profile *p, const char *job, int nstages, const char *const *stage_names,
                  const struct profile_attempt *att, size_t n, char *msg, size_t cap);

/* Index of the stage named `name`, or -1. */
int profile_find_stage(const struct profile *p, const char *name);

/* Mean run time of a stage's successful attempts (runtime_total / tasks; 0 without tasks). */
double profile_stage_runtime_mean(const struct profile_stage *st);
/* Failure probability of one attempt: failures / attempts (0 without attempts). */
double profile_stage_fail_prob(const struct profile_stage *st);

/* Inverse CDF of a quantile vector (PROFILE_NQ values) at u in [0, 1], linear between
 * quantiles. */
double profile_quantile(const double *q, double u);

/* JSON text of the profile (caller owns; mem_free) or NULL on ERR_NOMEM. */
char *profile_to_json(const struct profile *p);

/* Parses profile JSON text of len bytes into *p (replacing its contents on success, untouched on
 * error). ERR_PARSE (not JSON, wrong types, missing keys, a bad number), ERR_VERSION (another
 * format version), ERR_TOOBIG (a bound), ERR_NOMEM; the reason goes into msg. */
int profile_from_json(struct profile *p, const char *buf, size_t len, char *msg, size_t cap);

/* Writes the profile to `path` atomically: to "<path>.tmp", flushed and fsync'd, then renamed
 * over path. ERR_IO with the reason (errno text) in msg; no partial file is left at path. */
int profile_save(const struct profile *p, const char *path, char *msg, size_t cap);

/* The file a job's profile lives in: "<dir>/<job>.profile.json", with every byte of the job name
 * outside [A-Za-z0-9._-] replaced by '_' and a leading '.' too (a name can neither leave dir nor
 * hide). ERR_INVAL for an empty name, ERR_TOOBIG when it does not fit in cap bytes. */
int profile_path(char *buf, size_t cap, const char *dir, const char *job);

/* Merges n >= 1 profiles of runs of one job (pooled per stage, as the header says) into *out
 * (replacing its contents on success; untouched on error). Stages appear in order of first
 * appearance in runs[0], runs[1], ...; the job name is runs[0]'s. ERR_INVAL (n == 0), ERR_NOMEM;
 * the reason in msg. Pure. */
int profile_merge(struct profile *out, const struct profile *runs, size_t n, char *msg, size_t cap);

/* The directory a job's run profiles live in: "<dir>/<job>", the job name sanitised as in
 * profile_path. ERR_INVAL, ERR_TOOBIG as profile_path. */
int profile_history_dir(char *buf, size_t cap, const char *dir, const char *job);

/* Saves one successful run's profile under the job's history directory (created, with dir,
 * when missing) as "<ts_ms, 13 digits>-<job_id>.json" (job_id sanitised; "run" when empty),
 * atomically (profile_save), then removes the oldest run files beyond `keep` (>= 1). The path
 * written goes to path_out (may be NULL). ERR_IO, ERR_INVAL, ERR_TOOBIG, ERR_NOMEM with the
 * reason in msg. */
int profile_save_run(const struct profile *p, const char *dir, const char *job_id, int64_t ts_ms,
                     int keep, char *path_out, size_t path_cap, char *msg, size_t cap);

/* Loads what the next run of `job` should use: the merge of the newest `max_runs` readable run
 * files in its history directory (unreadable ones are passed over), else the single file of
 * older versions (<dir>/<job>.profile.json). *runs (may be NULL) gets the number of runs merged
 * (1 for the old file). ERR_NOTFOUND when there is neither; else as profile_load for the old
 * file. *p is untouched on error. */
int profile_load_job(struct profile *p, const char *dir, const char *job, int max_runs, int *runs,
                     char *msg, size_t cap);

/* Reads `path` into *p. ERR_NOTFOUND when it does not exist, ERR_IO when it cannot be read,
 * ERR_TOOBIG over PROFILE_MAX_BYTES, else as profile_from_json. The reason is in msg; the caller
 * logs it and runs without a profile (Amdahl fallback). *p is untouched on error. */
int profile_load(struct profile *p, const char *path, char *msg, size_t cap);

#endif
