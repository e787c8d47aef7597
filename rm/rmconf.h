/* rmconf.h - paddock-rm's configuration: the schema of its INI file.
 *
 * Every replica of a cluster gets the same [cluster] section (the replicas' Raft ids, Raft
 * addresses, API, heartbeat and view endpoints, index-aligned) and its own [rm] id. Sections
 * and keys are listed by `paddock-rm --print-schema`. The Raft transport is canonical/raft's
 * own TCP transport: plaintext and unauthenticated, so keep `raft` addresses on the cluster's
 * private network (docs/rm.md).
 */
#ifndef PADDOCK_RM_RMCONF_H
#define PADDOCK_RM_RMCONF_H

#include "common/config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RMCONF_MAX_REPLICAS 7
#define RMCONF_MAX_VCS      64

typedef struct rmconf {
    /* [rm] */
    int64_t id;      /* this replica's Raft id: one of cluster.ids */
    char *data_dir;  /* Raft log, snapshots, the lock file */
    char *log_level; /* debug, info, warn, error */
    /* [cluster] index-aligned lists, one item per replica */
    struct config_list ids;
    struct config_list raft;      /* host:port of raft's TCP transport */
    struct config_list api;       /* ROUTER endpoints (clients, PNs, JMs) */
    struct config_list heartbeat; /* ROUTER endpoints for PN heartbeats (empty: the API socket) */
    struct config_list pub;       /* PUB endpoints of the cluster view */
    /* [raft] */
    int64_t election_timeout_ms;
    int64_t raft_heartbeat_ms;
    bool pre_vote;
    int64_t snapshot_threshold;
    int64_t snapshot_trailing;
    uint64_t snapshot_bytes; /* applied log bytes that take a snapshot sooner */
    int64_t install_snapshot_timeout_ms;
    uint64_t segment_size;
    /* [ledger] */
    struct config_list virtual_clusters; /* "name=capacity" items */
    int64_t lease_ms;                    /* default job lease */
    double admission_sd;                 /* k of admission's mean + k sd bound */
    int64_t batch_max;                   /* commands per log entry */
    /* [liveness] */
    int64_t suspect_after_ms; /* no heartbeat for this long: suspect */
    int64_t down_after_ms;    /* no heartbeat for this long: down */
    int64_t pn_heartbeat_ms;  /* interval PNs are asked to use */
    /* [view] */
    int64_t view_delta_ms;    /* period of deltas */
    int64_t view_snapshot_ms; /* period of full snapshots */
    /* [recurring] (Morpheus: recurring jobs, their runs, the plan) */
    char *jobs_dir;       /* where the leader creates each run's job directory */
    char *cluster_dir;    /* the JM's --cluster (cluster.conf and keys) */
    char *launcher;       /* a shell command that starts a run's JM ("": paddock-jm directly) */
    int64_t plan_step_ms; /* the plan's time step */
    int64_t horizon_ms;   /* the LCM of the periods is capped at this */
    double reprovision;   /* ρ: a run behind its skyline gets up to ρ x its recent reservation */
    int64_t launch_retry_ms;
    int64_t launch_max; /* launches of a run before it is given up (not_started) */
    int64_t fit_runs;   /* runs R* is fitted over (the most recent successful ones) */
    /* [jobs] (issue 14: a job survives its JM) */
    bool relaunch;            /* the leader starts a dead JM of this host's jobs again (--resume) */
    int64_t restart_max;      /* resumes of one job before it fails */
    int64_t resume_window_ms; /* an expired job is started again only this soon after */
    /* [security] */
    char *keys_dir; /* CURVE keys (paddock keygen); empty: no CURVE, loopback only */
    char *key_name;
    char *metrics_listen; /* [metrics] listen: HOST:PORT of /metrics and the page; "": off */
} rmconf_t;

extern const struct config_key rmconf_schema[];

/* One replica as the lists describe it. Borrowed strings, valid while the config lives. */
struct rmconf_replica {
    uint64_t id;
    const char *raft;
    const char *api;
    const char *heartbeat; /* the API endpoint when no separate heartbeat socket */
    const char *pub;
};

struct rmconf_vc {
    char name[64];
    uint32_t capacity;
    uint32_t token_cpu_milli; /* a token's size */
    uint32_t token_mem_mb;
};

/* Defaults, then the file (if path != NULL), then each "section.key=value" of sets[0..nsets),
 * then the cross-field checks (lists of equal length, ids unique and positive, rm.id among
 * them, timeouts ordered, virtual clusters well formed). Returns 0 or ERR_CONFIG / ERR_IO /
 * ERR_NOMEM with the reason in msg. The caller closes with rmconf_close (also on error). */
int rmconf_load(rmconf_t *c, const char *path, char *const *sets, size_t nsets, char *msg,
                size_t cap);
void rmconf_close(rmconf_t *c);

size_t rmconf_replica_count(const rmconf_t *c);
/* Replica i (0 <= i < count) into *out; false when out of range. */
bool rmconf_replica(const rmconf_t *c, size_t i, struct rmconf_replica *out);
/* Index of the replica with Raft id `id`, or -1. */
int rmconf_replica_index(const rmconf_t *c, uint64_t id);

/* Parses virtual_clusters into out[0..*n) (at most RMCONF_MAX_VCS). 0 or ERR_CONFIG. */
int rmconf_vcs(const rmconf_t *c, struct rmconf_vc *out, size_t *n, char *msg, size_t cap);

#endif
