/* wfcommons.h - convert a WfCommons WfFormat workflow instance into a Paddock job spec v1.
 *
 * WfFormat 1.5 (workflow.specification.tasks joined on id with workflow.execution.tasks, files in
 * workflow.specification.files) and the older flat shapes (1.4 and before: workflow.tasks, or
 * workflow.jobs, each with its own runtime/runtimeInSeconds, files with a "link" of input/output
 * and a size, parents by id or by name) are read. For each task:
 *   id        the task id (the name when there is no id), characters the spec refuses -> '_'
 *   stage     "category" when present, else the program (command.program, when it is one
 *             short word: Pegasus/Makeflow "individuals", "mProject"), else the name without a
 *             trailing "_ID<digits>" (Nextflow names are process names; programs are scripts)
 *   runtime_s runtime x time_scale, at least min_runtime_s (zero runtimes exist in Nextflow
 *             instances), and cmd ["sleep", "<the same seconds>"] so the task really runs for it
 *   cpu       coreCount/cores (default 1), capped at max_cpu when that is > 0
 *   mem_mb    memoryInBytes (or 1.4 "memory" in KiB) in MiB, capped at max_mem_mb when > 0
 *   after     the union of the task's parents and of every task listing it among its children
 *   inputs    its input files' sizes (the largest SPEC_MAX_INPUTS-1 kept apart, the rest summed
 *             into one entry); no replica locations (the instance has none for our cluster)
 * Input over WFCOMMONS_MAX_BYTES or with more than WFCOMMONS_MAX_TASKS tasks is refused.
 */
#ifndef PADDOCK_TOOLS_WFCOMMONS_H
#define PADDOCK_TOOLS_WFCOMMONS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define WFCOMMONS_MAX_BYTES ((size_t)256 << 20)
#define WFCOMMONS_MAX_TASKS 200000

struct wfcommons_options {
    const char *name;     /* job name (borrowed); NULL: "wfcommons" */
    double time_scale;    /* > 0 (default 1.0) */
    double min_runtime_s; /* > 0 (default 0.01) */
    double max_cpu;       /* 0: no cap */
    uint64_t max_mem_mb;  /* 0: no cap */
};

void wfcommons_options_default(struct wfcommons_options *o);

struct wfcommons_stats {
    char schema[16]; /* schemaVersion as read ("1.5"; "?" when absent) */
    size_t tasks;
    size_t edges;
    double total_runtime_s; /* after scaling */
};

/* Converts `len` bytes of WfFormat JSON. On success stores the spec document in *out (caller
 * owns: json_decref) and fills *st (may be NULL); returns 0. Otherwise ERR_PARSE, ERR_TOOBIG,
 * ERR_INVAL (with the reason in msg: the task and what is wrong) or ERR_NOMEM. */
int wfcommons_convert(const char *buf, size_t len, const struct wfcommons_options *o, json_t **out,
                      struct wfcommons_stats *st, char *msg, size_t cap);

#endif
