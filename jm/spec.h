/* spec.h - job spec v1: parse and validate a job description (docs/job-spec.md).
 *
 * A spec is JSON parsed with jansson into a `struct spec`: plain public data, read-only after
 * spec_parse returns, owned by the caller and freed with spec_destroy(). Everything the JM,
 * Jockey and the simulator need about a job's shape lives here; run-time state lives in
 * jm/dag.h.
 *
 *   { "version": 1, "name": "clicklog-hourly", "virtual_cluster": "default",
 *     "deadline_s": 900, "utility": [[0,1],[900,1],[1500,-1]],
 *     "reads": ["/data/clicks/2026-11-25T10"], "writes": ["/data/clicklog/2026-11-25T10"],
 *     "stages": [ { "name": "join", "after": ["extract", "dim"] } ],
 *     "tasks": [ { "id": "extract-0", "stage": "extract", "cmd": ["sh","-c","..."],
 *                  "cpu": 1.0, "mem_mb": 512, "runtime_s": 12.5, "after": [],
 *                  "inputs": [ { "bytes": 104857600, "nodes": ["pn-3","pn-7"] } ],
 *                  "files": [ { "path": "/opt/jobs/extract.sh", "bytes": 4096 } ],
 *                  "env": { "K": "V" } } ] }
 *
 * Required: "version" (must be 1), "tasks" (non-empty), and per task "id" and "cmd" (a non-empty
 * array of strings, the first non-empty). Optional with defaults: "name" ("job"),
 * "virtual_cluster" ("default"), "deadline_s" (none), "utility" (none), "reads" and "writes"
 * (none), "stages" (none), and per
 * task "stage" (the task's own id: a stage of one), "cpu" (1.0), "mem_mb" (256), "runtime_s"
 * (1.0), "after", "inputs", "files", "env", "outputs" (empty), "speculate" (true).
 *
 * "speculate": false (on a task, or on a stage in "stages", then for all its tasks) says the
 * task's side effects forbid two attempts at once: the JM never starts a speculative copy or a
 * queued duplicate of it (it may still move it, or re-run it after a failure).
 * "outputs": [{"path": "...", "bytes": N, "local": true}] lists what a task writes; a "local"
 * output stays on the node that ran the task, so when that node is lost before a task that
 * waits for this one has run, the JM runs the producer again (docs/stragglers.md). Unknown keys are
 * rejected at every level, so a typo ("cpus") is an error instead of a silently ignored request.
 *
 * "reads" and "writes" declare the files the job consumes and produces (absolute paths, at most
 * SPEC_MAX_DECLARED each, duplicates dropped): the JM sends them to the RM at registration
 * (JOB_REGISTER inputs and outputs), which learns from them when a recurring job's output is
 * first consumed (Morpheus §4). They change nothing in how the job runs.
 *
 * Arrays: a task with "array": N (1..limits.max_tasks) and "{i}" in its id stands for N tasks,
 * expanded at parse in place: element k has "{i}" replaced by k in its id, cmd elements, env
 * values, files[].path, outputs[].path and "after" entries (element-wise dependencies); the
 * elements form one stage ("stage", else the id as written). "{i}" in the id of a task without
 * "array", an array id without "{i}", and duplicate ids after expansion are refused; the
 * duplicate message names both origins ("tasks[0] element 10 and tasks[1] element 0").
 *
 * Dependencies: tasks[].after lists task ids. stages[].after is an all-to-all barrier: every task
 * of the stage waits until every task of each named stage (and, transitively, everything those
 * stages wait for) has succeeded. Barriers are kept at stage level (never expanded into n*m
 * edges). A stage may be named in stages[] without having tasks: it is then a pass-through
 * barrier (done as soon as the stages it waits for are done).
 *
 * Validation rejects, with the task id or key and the reason in `msg` (one line, e.g.
 * `task "map-3": cpu must be positive (got -1)`): non-JSON or truncated JSON, input over
 * limits.max_bytes, wrong types, unknown keys, a version other than 1, missing/empty commands,
 * empty or over-long or duplicate task ids, unknown task ids or stage names in "after",
 * self-dependencies, cycles (the message names the tasks/stages on the cycle), non-positive cpu or
 * mem_mb or runtime_s, cpu/mem_mb above limits.max_cpu/limits.max_mem_mb (what the largest node
 * could hold), more than limits.max_tasks tasks, and any list or string above the SPEC_MAX_*
 * bounds below, and "reads"/"writes" entries that are not absolute paths ("/..."), contain a
 * control character, or exceed SPEC_MAX_PATH_LEN. Nothing is allocated in proportion to a size that
 * has not been bounded first.
 */
#ifndef PADDOCK_JM_SPEC_H
#define PADDOCK_JM_SPEC_H

#include <stddef.h>
#include <stdint.h>

/* The placeholder an "array" task's id (and command, env values, file and output paths, "after"
 * entries) carries: replaced by the element's index, 0 .. N-1. */
#define SPEC_ARRAY_INDEX "{i}"

/* Hard bounds (independent of the caller's limits). */
#define SPEC_MAX_ID_LEN      128        /* task ids, stage names, node names, env keys (bytes) */
#define SPEC_MAX_NAME_LEN    256        /* job name, virtual cluster */
#define SPEC_MAX_ARGS        256        /* cmd elements */
#define SPEC_MAX_ARG_LEN     65536      /* one cmd element, env value, file path */
#define SPEC_MAX_AFTER       100000     /* entries in one task's "after" */
#define SPEC_MAX_EDGES       4000000    /* sum of all tasks' "after" lengths */
#define SPEC_MAX_STAGES      100000     /* distinct stages (declared or used) */
#define SPEC_MAX_STAGE_AFTER 1024       /* entries in one stage's "after" */
#define SPEC_MAX_INPUTS      256        /* inputs per task */
#define SPEC_MAX_INPUT_NODES 64         /* nodes per input */
#define SPEC_MAX_FILES       256        /* files per task */
#define SPEC_MAX_OUTPUTS     256        /* outputs per task */
#define SPEC_MAX_ENV         256        /* env entries per task */
#define SPEC_MAX_UTILITY     64         /* utility points */
#define SPEC_MAX_DECLARED    64         /* entries of "reads", and of "writes" */
#define SPEC_MAX_PATH_LEN    4096       /* one declared path (bytes) */
#define SPEC_MAX_RUNTIME_S   31536000.0 /* one year */
#define SPEC_MAX_DEADLINE_S  31536000.0

/* Caller-chosen limits. Public value struct: fill with spec_limits_default() then adjust. */
struct spec_limits {
    size_t max_bytes;    /* largest accepted document (default 64 MiB) */
    size_t max_tasks;    /* default 1000000, after arrays are expanded */
    double max_cpu;      /* largest cpu request any node could hold (default 1024) */
    uint64_t max_mem_mb; /* largest mem_mb any node could hold (default 16 TiB in MiB) */
};

void spec_limits_default(struct spec_limits *lim);

struct spec_input {
    uint64_t bytes; /* size of this input */
    char **nodes;   /* names of nodes holding a replica (may be unknown to the cluster) */
    size_t nnodes;
};

struct spec_file {
    char *path;     /* file the task needs staged (executable, configuration, lookup table) */
    uint64_t bytes; /* its size if given, else 0 (used for the staging-time estimate I) */
};

struct spec_output {
    char *path;     /* what the task writes (a path on the node when local) */
    uint64_t bytes; /* its expected size if given, else 0 */
    int local;      /* 1: it stays on the node that ran the task ("local": true) */
};

struct spec_env {
    char *key;
    char *value;
};

struct spec_task {
    char *id;
    size_t stage; /* index into spec.stages */
    char **cmd;   /* argv, ncmd >= 1, cmd[0] non-empty */
    size_t ncmd;
    double cpu;       /* cores, > 0 */
    uint64_t mem_mb;  /* > 0 */
    double runtime_s; /* initial (conservative) runtime estimate, > 0 */
    size_t *after;    /* indices into spec.tasks: explicit dependencies, deduplicated */
    size_t nafter;
    struct spec_input *inputs;
    size_t ninputs;
    uint64_t input_bytes; /* sum of inputs[].bytes (saturating) */
    struct spec_file *files;
    size_t nfiles;
    uint64_t file_bytes; /* sum of files[].bytes (saturating) */
    struct spec_env *env;
    size_t nenv;
    struct spec_output *outputs; /* "outputs" (none: NULL) */
    size_t noutputs;
    size_t local_outputs; /* how many of them are node-local */
    void *block__;        /* private: for an array element, the one allocation holding its id,
                             cmd and env (strings without "{i}" are the array's, shared) */
    int speculate;        /* 0: never two attempts at once ("speculate": false on the task or
                             its stage); default 1 */
};

struct spec_stage {
    char *name;
    size_t *after; /* indices into spec.stages: barrier dependencies, deduplicated */
    size_t nafter;
    size_t *tasks; /* indices into spec.tasks of the tasks in this stage, in spec order */
    size_t ntasks;
    int declared;  /* 1 when named in "stages", 0 when only used by tasks */
    int speculate; /* the stage's "speculate" (default 1; false applies to all its tasks) */
};

struct spec_point {
    double t_s; /* completion time, seconds from submission */
    double u;   /* utility */
};

struct spec {
    int version;           /* 1 */
    char *name;            /* job name (profiles are keyed on it) */
    char *virtual_cluster; /* token pool the job draws from */
    double deadline_s;     /* 0 when has_deadline == 0 */
    int has_deadline;
    struct spec_point *utility; /* piecewise-linear utility, t_s strictly increasing */
    size_t nutility;
    char **reads; /* files the job reads: absolute paths, distinct, in spec order */
    size_t nreads;
    char **writes; /* files the job writes */
    size_t nwrites;
    int open; /* "open": the tasks are held until bound through the spool (jm/daemon/jmd_grow.h) */
    char *open_spool;   /* the spool directory (absolute), NULL unless open */
    double open_idle_s; /* an open job idle this long with tasks never bound ends (default 300) */
    struct spec_stage *stages; /* declared stages first (in "stages" order), then the rest in
                                  order of first use by a task */
    size_t nstages;
    struct spec_task *tasks; /* in spec order */
    size_t ntasks;
    size_t *topo;       /* all task indices in a topological order (dependencies, including stage
                           barriers, before dependents) */
    size_t *stage_topo; /* all stage indices in a topological order of the stage barriers */
    size_t *by_id__;    /* private: task indices sorted by id */
    size_t *by_name__;  /* private: stage indices sorted by name */
    struct spec_task *arrays__; /* private: each array's template ("{i}" in it), whose strings
                                   its elements share */
    size_t narrays__;
};

/* Parses and validates `len` bytes at `buf` (need not be NUL-terminated). `lim` may be NULL for
 * the defaults. On success stores a new spec in *out (caller owns; free with spec_destroy) and
 * returns 0. On failure returns ERR_PARSE (not JSON, truncated), ERR_TOOBIG (a size bound),
 * ERR_CAPACITY (cpu or mem_mb above what a node could hold), ERR_RANGE (runtime_s over a year),
 * ERR_INVAL (any other validation failure) or ERR_NOMEM, leaves *out NULL and writes the reason
 * into msg (cap bytes, always NUL-terminated when cap > 0). */
int spec_parse(const char *buf, size_t len, const struct spec_limits *lim, struct spec **out,
               char *msg, size_t cap);

/* Checks a parsed spec against `lim` without parsing it again (limits known only afterwards, as
 * the cluster's largest node): the task count, cpu and mem_mb checks of spec_parse, with its
 * codes and messages. Returns 0, ERR_TOOBIG or ERR_CAPACITY (reason in msg). O(tasks). */
int spec_check_limits(const struct spec *spec, const struct spec_limits *lim, char *msg,
                      size_t cap);

/* Reads the file at `path` (at most lim->max_bytes; larger is ERR_TOOBIG without reading it
 * all) and parses it as spec_parse does. ERR_IO when it cannot be opened or read. */
int spec_load(const char *path, const struct spec_limits *lim, struct spec **out, char *msg,
              size_t cap);

/* Frees a spec and nullifies the caller's reference. NULL and *p == NULL are no-ops. */
void spec_destroy(struct spec **p);

/* Index of the task with this id, or -1 when absent. O(log n) (sorted index built at parse). */
long spec_task_index(const struct spec *spec, const char *id);

/* Index of the stage with this name, or -1 when absent. */
long spec_stage_index(const struct spec *spec, const char *name);

/* The files the job declares it reads, for JOB_REGISTER's inputs: "reads" first, then the
 * tasks' staged files (tasks[].files[].path) in spec order, duplicates dropped, at most `cap`
 * (the rest is left out); a path longer than max_len bytes (0: no bound) is passed over. Stores
 * borrowed pointers into the spec in out[] and returns how many. */
size_t spec_declared_inputs(const struct spec *spec, size_t max_len, const char **out, size_t cap);

/* Utility at completion time t (seconds): linear between points, flat before the first and after
 * the last. Returns 1.0 when the spec has no utility but a deadline and t <= deadline, -1.0 when
 * t > deadline; 1.0 when it has neither. */
double spec_utility_at(const struct spec *spec, double t_s);

#endif
