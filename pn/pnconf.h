/* pnconf.h - paddock-pn's configuration: the schema of its INI file and machine detection.
 *
 * Sections and keys are listed by `paddock-pn --print-schema`. Capacity defaults (cpus = 0,
 * memory = 0) are detected from the machine at load: online CPUs (bounded by a cgroup v1/v2
 * CPU quota when one is set) and MemTotal (bounded by a cgroup memory limit).
 */
#ifndef PADDOCK_PN_PNCONF_H
#define PADDOCK_PN_PNCONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

typedef struct pnconf {
    /* [node] */
    char *name;      /* default: the host name */
    char *rack;      /* may be empty */
    double cpus;     /* cores offered; 0 = detect */
    uint64_t memory; /* bytes offered; 0 = detect */
    /* [pn] */
    char *listen;    /* ROUTER endpoint for JMs */
    char *advertise; /* endpoint told to the RM; default: listen */
    char *work_dir;  /* task directories and the file cache live here */
    char *run_as;    /* user to run tasks as when started as root */
    char *exec_shim; /* path of paddock-pn-exec; default: beside the daemon */
    char *log_level;
    char *stop_mode;         /* SIGTERM: "handback" (tasks reported lost) or "finish" */
    int64_t stop_timeout_ms; /* "finish": longest wait for running tasks */
    int64_t ended_grace_ms;  /* a job the RM says ended: its tasks are killed after this */
    int64_t orphan_grace_ms; /* a job expired or unknown to the RM: likewise, after this */
    /* [rm] */
    struct config_list rm_api;       /* RM replicas' API endpoints (registration) */
    struct config_list rm_heartbeat; /* RM replicas' heartbeat endpoints (default: rm_api) */
    int64_t heartbeat_ms;
    /* [security] */
    char *keys_dir; /* CURVE keys (paddock keygen); empty = no CURVE */
    char *key_name;
    /* [queue] */
    int64_t max_regular, max_opportunistic, max_running;
    int64_t default_runtime_ms, backfill_depth;
    char *cpu_bins, *mem_bins_mb;
    int64_t matrix_min_interval_ms;
    int64_t matrix_depth;    /* queued tasks simulated exactly for the matrix */
    uint64_t max_spec_bytes; /* argv/env/paths held by live tasks, in total */
    /* [tasks] */
    int64_t memory_margin_mb;
    double memory_margin_pct;
    int64_t memory_poll_ms;
    int64_t opportunistic_nice;
    int64_t spawn_threads; /* threads that spawn tasks; 0: the loop thread; -1: cores / 4, >= 2 */
    char *task_path;
    struct config_list stage_allow;
    uint64_t stage_max_file;
    uint64_t cache_max;        /* bound on the staging cache (unused entries evicted) */
    int64_t retain_ms;         /* finished tasks kept for JMs that reconnect */
    int64_t retain_max;        /* at most this many finished tasks kept */
    bool keep_task_dirs;       /* keep a finished task's directory when it is forgotten */
    char *cgroup_base;         /* cgroup v2 directory for per-task cgroups; empty = off */
    int64_t status_refresh_ms; /* a status (fresh matrix) per job with live tasks; 0 = off */
    bool quiet_queued;         /* no QUEUED status for a task that starts once set up */
    /* [metrics] */
    char *metrics_listen; /* HOST:PORT of /metrics; "" = off */
} pnconf_t;

extern const struct config_key pnconf_schema[];

/* Defaults, then the file (if path != NULL), then each "section.key=value" in sets[0..nsets),
 * then machine detection for zero capacities and an empty name. Returns 0 or an error with
 * the reason in msg. The caller closes with pnconf_close. */
int pnconf_load(pnconf_t *c, const char *path, char *const *sets, size_t nsets, char *msg,
                size_t cap);
void pnconf_close(pnconf_t *c);

/* Machine facts (no configuration involved). */
double pnconf_detect_cpus(void);
uint64_t pnconf_detect_memory(void); /* bytes */

#endif
