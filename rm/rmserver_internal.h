/* rmserver_internal.h - state shared by rm/rmserver.c (lifecycle, Raft, batching),
 * rm/rmserver_api.c (requests and replies) and rm/rmserver_admin.c (admin queries as JSON). Private
 * to rm/. */
#ifndef PADDOCK_RM_RMSERVER_INTERNAL_H
#define PADDOCK_RM_RMSERVER_INTERNAL_H

#include "common/curve.h"
#include "common/id.h"
#include "common/metrics.h"
#include "common/vec.h"
#include "common/zuv.h"
#include "proto/pack.h"
#include "proto/proto.h"
#include "rm/fsm.h"
#include "rm/joinwin.h"
#include "rm/rmconf.h"
#include "rm/rmserver.h"
#include "rm/rmview.h"

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#define RMSERVER_PEER_MAX             256
#define RMSERVER_PENDING_MAX          100000      /* commands waiting for a log entry */
#define RMSERVER_INFLIGHT_MAX         64          /* log entries appended and not yet applied */
#define RMSERVER_TRIM_MS              5000        /* how often free heap is checked */
#define RMSERVER_TRIM_FREE            (32u << 20) /* trimmed when more than this is free */
#define RMSERVER_HB_QUEUE_MAX         1024        /* heartbeat replies kept per peer not reading */
#define RMSERVER_ADDR_MAX             1100 /* a Raft configuration address: raft|api|heartbeat|pub */
#define RMSERVER_ADMIN_REPLICA_ADD    "replica_add"    /* id raft api heartbeat pub */
#define RMSERVER_ADMIN_REPLICA_REMOVE "replica_remove" /* id */
/* Tenants (issue 27): writes, admins only */
#define RMSERVER_ADMIN_ROLE_SET  "role_set"  /* user admin|user|none */
#define RMSERVER_ADMIN_GRANT_SET "grant_set" /* user vc 1|0 */
#define RMSERVER_ADMIN_QUOTA_SET "quota_set" /* user|* vc tokens token_s_per_day (0: none) */
/* ... and reads: a user sees their own lines and jobs, an admin everyone's */
#define RMSERVER_ADMIN_AUDIT   "audit"   /* no args */
#define RMSERVER_ADMIN_USAGE   "usage"   /* no args */
#define RMSERVER_ADMIN_TENANTS "tenants" /* no args: roles, grants, quotas */
#define RMSERVER_ADMIN_WHOAMI  "whoami"  /* no args: the caller as the RM sees them */

/* Who waits for a command's result, and how to answer. */
struct rmserver_waiter {
    zuv_sock_t *sock; /* NULL: an internal command, nobody to answer */
    uint8_t peer[RMSERVER_PEER_MAX];
    size_t peer_len;
    uint64_t req_id;
    proto_type_t type; /* the request's type */
    char key[PROTO_MAX_KEY + 1];
    char admin_kind[32]; /* for admin writes */
};

/* One membership change at a time (rmserver_member.c). */
struct rmserver_member {
    bool busy;
    bool adding;     /* replica_add: raft_add, then raft_assign(VOTER) */
    bool transfer;   /* a raft_transfer is in flight (removing the leader itself) */
    uint64_t id;     /* the replica being added or removed */
    uint64_t max_id; /* the highest Raft id this replica has seen in a configuration */
    char addr[RMSERVER_ADDR_MAX];
    struct raft_change change;
    struct raft_transfer xfer;
    struct rmserver_waiter w;
    char ep[4][RMSERVER_ADDR_MAX]; /* rmserver_member_find's answer */
};

struct rmserver_cmd {
    struct ledger_cmd cmd;
    struct rmserver_waiter w;
    void *owned[4]; /* the command's text, text2, vals, vals2 (rmserver_submit copies them) */
};

/* One raft_apply in flight. */
struct rmserver_batch {
    struct raft_apply req;
    struct rmserver *s;
    size_t n;
    struct rmserver_cmd *cmds; /* n entries, owned */
    uint64_t t0_ns;            /* clock_mono_ns when handed to raft_apply */
};

enum rmserver_reject {
    RMSERVER_REJ_DECODE,    /* proto_decode refused it (see proto stats for why) */
    RMSERVER_REJ_FRAMES,    /* not [peer, body] */
    RMSERVER_REJ_TYPE,      /* a type this socket does not serve */
    RMSERVER_REJ_INVALID,   /* fields out of range for the ledger */
    RMSERVER_REJ_NOTLEADER, /* a write sent to a follower (answered with a hint) */
    RMSERVER_REJ_BUSY,      /* too many commands pending */
    RMSERVER_REJ_DENIED,    /* the caller may not do this (issue 27; by action below) */
    RMSERVER_REJ_COUNT
};

/* What a refused caller tried (issue 27), for `rm status` and the metrics. */
enum rmserver_deny {
    RMSERVER_DENY_UNKNOWN_KEY, /* a key no longer in allow/ */
    RMSERVER_DENY_NODE,        /* node registration or heartbeat from a user's key */
    RMSERVER_DENY_SUBMIT,      /* to a virtual cluster the user is not granted */
    RMSERVER_DENY_JOB,         /* a JM's request for another user's job */
    RMSERVER_DENY_CANCEL,
    RMSERVER_DENY_DEADLINE,
    RMSERVER_DENY_MEMBERSHIP, /* replica_add, replica_remove */
    RMSERVER_DENY_TENANTS,    /* roles, grants, quotas */
    RMSERVER_DENY_RECURRING,  /* recurring jobs' definitions */
    RMSERVER_DENY_COUNT
};
extern const char *const rmserver_deny_names[RMSERVER_DENY_COUNT];

/* Who sent the request being handled (issue 27): the user named by the key that authenticated
 * the connection (allow/NAME.pub), and whether they are an admin: the replicas' own identity
 * (and a connection without CURVE, loopback only) always, another user when the ledger says. */
struct rmserver_caller {
    char user[LEDGER_NAME_MAX];
    bool admin;
    bool known; /* false: the key is no longer on the allow-list */
};

struct rmserver {
    const rmconf_t *cfg;
    uint64_t id;
    int self; /* index in the configured replicas */
    uv_loop_t loop;
    int lock_fd;

    fsm_t *fsm;
    struct raft raft;
    struct raft_io io;
    struct raft_uv_transport transport; /* rm/raft_curve.h */
    struct raft_uv_transport wrap;      /* strips endpoints from addresses (rmserver_member.c) */
    char wrap_addr[RMSERVER_ADDR_MAX];
    bool raft_started, raft_closed;

    rmview_t *view;
    curve_t *curve;
    zuv_sock_t *api, *hb, *pub; /* hb may equal api */

    uv_timer_t poll_timer, tick_timer, delta_timer, snap_timer;
    uv_timer_t join_timer; /* one-shot: the snapshot for joiners within the join window */
    struct joinwin join;   /* when joiners get their snapshot (the last one's time and cost) */
    /* [L]: subscriptions to the snapshot topic's first L bytes (counted one per subscriber: the
       view socket is manual, rmview_xpub.h); [PROTO_VIEW_TOPIC_LEN]: JMs asking for one */
    uint32_t snap_subs[PROTO_VIEW_TOPIC_LEN + 1];
    uint32_t delta_subs, cells_subs; /* ... to deltas and compact deltas (rmview_xpub_count) */
    uint64_t snap_gen;  /* the latest snapshot's number (its req_id; rmview.h rmview_gen_topic) */
    uint64_t snapshots; /* snapshots published (rm_status view_snapshots) */
    uv_check_t flush_check;
    uv_signal_t sigterm, sigint;
    int handles_open;
    bool stopping;

    /* leadership */
    int role;   /* RAFT_FOLLOWER, RAFT_CANDIDATE, RAFT_LEADER, RAFT_UNAVAILABLE */
    bool ready; /* leader and its barrier applied: writes are served */
    bool barrier_busy;
    struct raft_barrier barrier;
    int64_t ready_mono_ms;   /* when this replica became a ready leader */
    unsigned snap_threshold; /* raft's snapshot threshold now (rmserver_snapshot_bound) */
    size_t liveness_busy;    /* liveness commands queued or in flight: a pass waits for all */
    uint64_t trim_ms;        /* when free heap was last given back (rmserver__trim) */
    uint64_t trims;          /* times it was */

    VEC(struct rmserver_cmd) pending;
    size_t inflight;

    struct rmserver_member member;

    proto_buf_t buf;
    proto_stats_t api_stats, hb_stats;
    uint64_t rejected[RMSERVER_REJ_COUNT];
    uint64_t denied[RMSERVER_DENY_COUNT];
    struct rmserver_caller caller; /* of the request being handled */
    uint64_t requests, heartbeats, heartbeats_stale, writes_committed, entries_appended;
    struct metrics_hist commit_hist;  /* a log entry's raft_apply to its commit here, seconds */
    uint64_t heartbeats_unregistered; /* refused: node unknown, or another boot id */
    char msg[512];

    /* recurring jobs (rmserver_recur.c), leader only */
    int64_t recur_last_ms;       /* monotonic: the last look */
    int64_t recur_launch_period; /* the run this replica launched last */
    char recur_launch_name[LEDGER_NAME_MAX];
    int64_t recur_launch_mono;
    bool recur_fitting; /* an LP fit runs on a worker thread */

    /* restarts of dead JMs (rmserver_jobs.c), leader only */
    int64_t jobs_last_ms;
    uint64_t relaunched_job[64]; /* the latest relaunches, to space them by launch_retry */
    int64_t relaunched_mono[64];
    uint64_t relaunches;

    struct rm_metrics *metrics; /* rm/rm_metrics.h: /metrics, node and JM URLs (may be NULL) */
    struct rm_page *page;       /* rm/rm_page.h: the cluster page (NULL without HTTP) */
};

/* server.c */
/* Queues a command for the next log entry (leader only; the caller checked s->ready or
 * accepts that it waits for the barrier). Returns 0 or ERR_FULL / ERR_NOMEM. */
int rmserver_submit(struct rmserver *s, const struct ledger_cmd *cmd,
                    const struct rmserver_waiter *w);
/* The leader's API endpoint and id as this replica knows them (NULL/0 when unknown). */
const char *rmserver_leader_api(struct rmserver *s, uint64_t *id);
const char *rmserver_role_name(int role);

/* rmserver_api.c */
void rmserver_on_api(zuv_sock_t *zs, zmsg_t **msg, void *arg);
void rmserver_on_hb(zuv_sock_t *zs, zmsg_t **msg, void *arg);
/* Answers a waiter once its command was applied (res) or failed to commit (code != 0). */
void rmserver_reply(struct rmserver *s, const struct rmserver_cmd *c, int code,
                    const struct ledger_result *res);
void rmserver_send_error(struct rmserver *s, zuv_sock_t *sock, const void *peer, size_t peer_len,
                         uint64_t req_id, proto_type_t in_reply_to, int code, const char *text);
/* Sends an encoded message to a peer; logs encoding failures. */
void rmserver_send(struct rmserver *s, zuv_sock_t *sock, const void *peer, size_t peer_len,
                   const proto_msg_t *m);
uint64_t rmserver_key_hash(const char *key);

/* rmserver_admin.c: the JSON document for a read-only admin query, or NULL with *code and
 * `why` set (ERR_NOTFOUND, ERR_INVAL). Caller frees with free(). */
/* "j-" and the job's 12 hex digits. */
void rmserver_job_id(uint64_t id, char out[ID_JOB_SIZE]);
/* {"name","capacity","granted","free","token_cpu","token_mem_mb","spare","spare_grants",
 * "spare_reclaims","jobs":[active jobs' {"job_id","name","tokens","wanted","minimum",
 * "deadline_ms","best_effort"}]} per virtual cluster (`tokens` admin query, cluster page);
 * without "jobs" unless with_jobs (`tokens brief`: what a submit needs, a few hundred bytes
 * where the jobs' lines are ~150 B each active job). */
struct json_t *rmserver_admin_vcs(const ledger_t *l, bool with_jobs);
char *rmserver_admin_json(struct rmserver *s, const proto_admin_query_t *q, int *code, char *why,
                          size_t cap);
/* The JSON reply of an admin write, once applied. Caller frees with free(). */
char *rmserver_admin_write_json(struct rmserver *s, const struct rmserver_cmd *c,
                                const struct ledger_result *res);

/* rmserver_member.c: adding and removing replicas (docs/rm.md "Changing the replica set").
 * A replica added at run time is stored in the Raft configuration with the address
 * "RAFT|API|HEARTBEAT|PUB"; the wrapping transport hands rm/raft_curve.c only RAFT. */
void rmserver_member_transport(struct rmserver *s);
/* Endpoints of replica `id`: from the Raft configuration's address when it carries them, else
 * from the configuration file. Strings point into s (valid until the next call) or cfg. */
bool rmserver_member_find(struct rmserver *s, uint64_t id, struct rmconf_replica *out);
/* Reads DATA_DIR/max-id (0 when absent). */
void rmserver_member_load(struct rmserver *s);
/* Every poll: records new ids seen in the configuration (never reused). */
void rmserver_member_poll(struct rmserver *s);
/* Recurring jobs (rmserver_recur.c): the leader's periodic work (fire, launch, model); an admin
 * write of a recurring kind as a ledger command (0, 1 when q is another kind, or an ERR_* with
 * why; outs is scratch the command points into); the read queries (NULL with *code 1 when q is
 * another kind); and the reply to a committed write. */
void rmserver_recur_tick(struct rmserver *s);
/* paddock-jm beside this binary, else the bare name. */
void rmserver_jm_path(char *out, size_t cap);
/* Starts argv detached (its own session, reparented to init), output appended to log; envp
 * NULL: ours. 0 or -1 (errno). */
int rmserver_spawn(char *const *argv, char *const *envp, const char *log);
/* Whether pid runs (not gone, not a zombie being torn down) and, when comm is not NULL, runs
 * a program of that name (/proc/PID/stat). */
bool rmserver_proc_running(long pid, const char *comm);
/* Issue 14 (rmserver_jobs.c): the leader starts a dead JM of this host's jobs again. */
void rmserver_jobs_tick(struct rmserver *s);
int rmserver_recur_write(struct rmserver *s, const proto_admin_query_t *q, struct ledger_cmd *c,
                         char *outs, size_t ocap, char *why, size_t cap);
struct json_t;
struct json_t *rmserver_recur_json(struct rmserver *s, const proto_admin_query_t *q, int *code,
                                   char *why, size_t cap);
struct json_t *rmserver_recur_write_json(struct rmserver *s, const struct rmserver_cmd *c,
                                         const struct ledger_result *res);

/* Handles replica_add / replica_remove; false when q is another kind. */
bool rmserver_member_admin(struct rmserver *s, zuv_sock_t *sock, const void *peer, size_t peer_len,
                           const proto_msg_t *m);
/* The current configuration as a JSON array (a json_t *, typed void to keep jansson out). */
void *rmserver_member_json(struct rmserver *s);
/* Every RMSERVER_TRIM_MS: gives free heap back to the kernel when much of it is free
 * (rmserver_member.c). */
void rmserver_trim(struct rmserver *s);
/* Every tick, on every replica: raft's threshold counts entries, and an entry holds up to
 * ledger.batch_max commands, so 4,096 entries could keep hundreds of MiB in memory. Once the
 * entries applied since the last snapshot hold more than raft.snapshot_bytes, the threshold
 * drops to their count (the next applied entry takes a snapshot), and goes back after it. */
void rmserver_snapshot_bound(struct rmserver *s);
/* The error model of admission (rm/calib.h) as a JSON object (json_t *, caller owns): `quote`,
 * `status`, the cluster page. */
void *rmserver_calibration_json(const ledger_t *l);

#endif
