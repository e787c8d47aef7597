/* node_internal.h - shared between pn/node.c (states, statuses), pn/node_handle.c (requests),
 * pn/node_heartbeat.c (heartbeats, refreshes, reaping), pn/node_run.c (processes, staging,
 * memory) and pn/node_dir.c (task directories). Not for use outside pn/node*.c. */
#ifndef PADDOCK_PN_NODE_INTERNAL_H
#define PADDOCK_PN_NODE_INTERNAL_H

#include <sys/types.h>

#include "common/map.h"
#include "common/metrics.h"
#include "common/rng.h"
#include "pn/matrix.h"
#include "pn/node.h"
#include "pn/orphan.h"
#include "pn/queue.h"
#include "pn/spawner.h"
#include "pn/stage.h"
#include "pn/taskcg.h"
#include "proto/batch.h"

#define NODE__PEER_MAX 256
/* Emptied task directories kept for new tasks (WORK/spare/<n>): on ext4 without a journal,
 * allocating an inode scans past every inode freed in the last minutes, so creating and
 * deleting three inodes per task made set-up cost grow with the deletion rate. */
#define NODE__SPARE_MAX   1024
#define NODE__HANDOFF_MAX 64 /* quiet directories held for a start in the same pass */

/* Work for the thread pool: 'd' remove a directory tree, 'c' remove a task's cgroup, 'r'
 * empty a finished task's directory and rename it to spare `seq` (removed when it cannot be:
 * ok stays 0). */
typedef struct node__trash_item {
    char kind;
    int ok;
    uint64_t seq;
    char *path;
} node__trash_item_t;

typedef enum {
    NODE__KILL_NONE = 0,
    NODE__KILL_CANCEL,
    NODE__KILL_PREEMPT,
    NODE__KILL_MEMORY,
    NODE__KILL_REAP, /* its job ended or was orphaned (pn/orphan.h): t->reap_state, t->reason */
} node__kill_t;

typedef struct node__job {
    char *job_id;
    unsigned char peer[NODE__PEER_MAX];
    size_t plen;
    uint64_t req_id;    /* of the last request, echoed in unsolicited statuses */
    char *reply;        /* reply_endpoint of the job's last TASK_CREATE, or NULL */
    size_t ntasks;      /* tasks of the job the node remembers; 0: forgotten at the next sweep */
    uint64_t refreshed; /* the node's refresh round that last sent this job a status */
    uint64_t resync_ms; /* last time a new peer got every task's state (at most once a second) */
    uint32_t epoch;     /* highest fencing epoch seen for the job (pn/fence.h); 0: none yet */
    size_t nlive;       /* of its tasks, those queued, staging or running */
    int64_t touched_ms; /* wall time of the last request for the job: a record without tasks
                           (a TASK_QUERY's) is kept this long plus the tasks' retention */
    uint64_t hb_round;  /* the heartbeat that last named the job */
    char user[64];      /* issue 27: whose job it is (the caller that first named it) */
    int batch;          /* its JM takes TASK_STATUS_BATCH (its last TASK_CREATE's batch_statuses) */
} node__job_t;

typedef struct node__task {
    uint64_t id; /* local, the queue's key */
    char *key;   /* job \0 task \0 attempt: the tasks map's key */
    size_t keylen;
    node__job_t *job;
    char *task_id;
    uint32_t attempt;
    uint64_t req_id;
    proto_task_state_t state;
    proto_task_class_t klass;
    double cpu;
    uint64_t mem_mb;
    char **argv, **envp; /* NULL-terminated, owned */
    char *cwd, *dir;
    char *cg;            /* its cgroup directory while it runs, when cgroups are on */
    uint64_t spec_bytes; /* argv, env, cwd and file names held until it ends */
    proto_file_t *files;
    uint32_t nfiles;
    pid_t pid;
    node__kill_t kill;
    uint64_t kill_rss_kb;
    proto_task_state_t reap_state; /* NODE__KILL_REAP: reported as this (cancelled or lost) */
    int staging;        /* its set-up (directory, files) is in flight on the thread pool */
    int dir_lazy;       /* no directory yet: taken or made when it starts (node__start) */
    int spawning;       /* handed to a spawner thread, result not back yet (state still queued) */
    int spawn_nice;     /* the nice value it was spawned with */
    int unsent;         /* queued, its QUEUED status held back: its expected wait was 0, so its
                           RUNNING status should answer the create (sent if it does not start) */
    int forgotten;      /* the node dropped it while staging ran: free when staging returns */
    int running_unsent; /* running, its RUNNING status held to the end of this loop pass: an
                           end within the pass sends one status for both (node__pass_end) */
    uint32_t cache_hits, cache_misses;
    char *reason;
    int exit_code, signal;
    uint64_t cpu_time_ms, peak_rss_kb;
    uint64_t bytes_read; /* while it runs: its processes' rchar (exec_usage_scan), for progress */
    int64_t queued_at_ms, started_at_ms, ended_at_ms;
    uint64_t start_mono_ms;
    uint64_t created_mono_ns; /* for the start delay histogram */
    uid_t uid;                /* issue 27: runs as its submitter */
    gid_t gid;
    char user[64];
} node__task_t;

struct node {
    const pnconf_t *cfg;
    uv_loop_t *loop;
    uint64_t boot_id, hb_seq, next_id;
    struct rng rng; /* the queue's opportunistic pick (common/rng.h) */
    uid_t uid;
    gid_t gid;
    uid_t dir_uid; /* who owns a reusable directory's files: uid, or the PN's own when -1 */
    node_send_fn *send;
    void *send_arg;
    queue_t *queue;
    matrix_t matrix;
    loadprof_t scratch;
    int matrix_dirty;
    int matrix_batch;       /* node_reap's batch: the queue has lost every task of it already */
    int matrix_batch_fresh; /*   and the matrix was computed since: no forced recompute */
    uint64_t matrix_at_ms;
    double grace_wake_s; /* when the earliest downgrade grace ends (node__now_s), 0: none */
    stage_t *stage;
    taskcg_t *cg;        /* NULL unless [tasks] cgroup_base is set */
    struct map tasks;    /* key -> node__task_t */
    struct map byid;     /* 8-byte local id -> task (queued and running) */
    struct map bypid;    /* pid -> task (running) */
    struct map jobs;     /* job id -> node__job_t */
    node__task_t **done; /* finished tasks in the order they finished */
    size_t ndone, capdone, donehead;
    int scheduling;
    uv_check_t *sched_check; /* runs node__schedule once at the end of a loop iteration */
    int sched_pending;
    uint64_t spec_bytes; /* sum over live tasks: bounded by [queue] max_spec_bytes */
    uint64_t refresh_round;
    size_t busy;
    node__trash_item_t *trash; /* for the thread pool: forgotten tasks' directories, cgroups */
    size_t ntrash, captrash;
    char *spare_dir;  /* WORK/spare: emptied task directories, named by number */
    uint64_t *spares; /* the numbers of those ready for a new task (a stack) */
    size_t nspares, capspares, spares_pending; /* pending: being emptied on the thread pool */
    /* Quiet directories of tasks that ended in this loop pass, checked and still under their
     * task's name: a task starting in the same pass takes one with one rename
     * (node__spare_take); the rest go to the spares at the end of the pass
     * (node__handoffs_flush). One rename per task instead of two (into spare/, out of it). */
    char *handoff[NODE__HANDOFF_MAX];
    size_t nhandoff;
    uint64_t spare_seq;
    int stopping;    /* node_destroy: directories are removed, not recycled */
    mode_t dir_mode; /* 0755 and 0644 less the umask, as mkdir and open make them */
    mode_t file_mode;
    char *tasks_dir;
    /* WORK/tasks and WORK/spare held open (O_PATH), -1 when not: the loop's renames and opens
       of task directories go relative to them, one path component each instead of the whole
       work directory's path walked per call */
    int tasks_dfd, spare_dfd;
    char *shim;
    struct { /* issue 27: node_set_caller */
        char user[64];
        uid_t uid;
        gid_t gid;
        int admin;
        char refuse[160];
    } caller;
    orphan_t *orphan; /* jobs the RM says ended, expired or unknown, until reaped */
    int pgids_fd;     /* WORK/tasks.pgids: a line per task started, for the next boot */
    size_t pgids_lines;
    char pgids_buf[2048]; /* the lines of this loop pass's starts, written at its end */
    size_t pgids_len;
    unsigned pgids_warned;
    int start_check;    /* start times from the clock: 0 not checked yet, 1 agree, -1 /proc */
    char **hb_jobs;     /* PROTO_MAX_NODE_JOBS ids borrowed from the jobs map, for a heartbeat */
    uint64_t hb_round;  /* heartbeats filled */
    uint8_t *hb_filter; /* the cache advertisement (a Bloom filter of stage_paths), encoded */
    uint32_t hb_filter_len;
    uint64_t hb_filter_gen; /* stage_generation it was built at, + 1 (0: never built) */
    uint64_t io_mono_ms;    /* when the memory poll last read the tasks' /proc/PID/io */
    uint64_t mem_next_ms;   /* no /proc pass of the memory poll before this (its cost bound) */
    proto_buf_t buf;
    /* statuses held to the end of the loop pass for one job (sb_job), sent as one message
       (proto_batch_t) then, or sooner when another job's status or another message comes */
    proto_batch_t sb;
    node__job_t *sb_job;
    proto_stats_t pstats;
    node_counters_t c;
    spawner_t *spawner;                 /* NULL: tasks are spawned on the loop thread */
    uint64_t wait_known, wait_known_ms; /* a new task's id and expected wait, for its status */
    uint64_t *unsent; /* ids of tasks set up with their QUEUED status held back (node__on_check) */
    size_t nunsent, capunsent;
    uint64_t *runq; /* ids of tasks whose RUNNING status waits for the end of the pass */
    size_t nrunq, caprunq;
    uv_prepare_t *pass_end; /* node__pass_end: before the loop blocks again, when armed */
    int pass_end_armed;
    int reaping;         /* node_reap: directories go to the thread pool once for the whole batch */
    exec_exit_t *parked; /* exits reaped before their spawner's result (node__spawned) */
    size_t nparked, capparked;
    struct metrics_hist spawn_hist; /* seconds in exec_spawn (vfork to exec) */
    struct metrics_hist delay_hist; /* seconds from TASK_CREATE to the process started */
};

/* node.c */
void node__set_state(node_t *n, node__task_t *t, proto_task_state_t s, const char *reason);
void node__send_status(node_t *n, node__task_t *t);
/* Sends the statuses held for the end of the pass (node__status), if any: called at the end of
 * the pass and before anything else goes out, so messages keep their order. */
void node__statuses_flush(node_t *n);
/* After a scheduling pass: the QUEUED status of each task set up since with it held back and
 * still waiting (it did not start at once after all). */
void node__send_unsent(node_t *n);
void node__note_unsent(node_t *n, node__task_t *t);
void node__finish(node_t *n, node__task_t *t); /* terminal: off the live maps, into done */
/* A task that just started: its RUNNING status goes at the end of this loop pass (or at once
 * when it cannot be held), unless it ended meanwhile, its terminal status saying both. */
void node__running(node_t *n, node__task_t *t);
/* What waits for the end of the loop pass: held RUNNING statuses, the trash for the pool. */
void node__pass_end_arm(node_t *n);
void node__pass_flush(node_t *n);
void node__pgids_flush(node_t *n);
void node__task_free(node__task_t *t);
double node__now_s(void);
void node__grace_tick(node_t *n); /* a downgrade's grace ended: preempt if regular work waits */
/* queue_swap made the running tasks up[0..k) regular and the queued task `down` opportunistic
 * (no self-preemption): their classes, nice values and statuses follow, and `down`, which
 * never ran, is returned to its JM (reported cancelled) to be placed again. */
void node__swapped(node_t *n, const uint64_t *up, size_t k, uint64_t down);
/* queue_pick_trade started `up` (queued opportunistic) as regular in the place of its job's
 * regular task `down`, now queued opportunistic: its JM hears both at once (PROTO_REASON_TRADED),
 * before `up` starts. */
void node__traded(node_t *n, node__task_t *up, uint64_t down);
void node__set_state_ex(node_t *n, node__task_t *t, proto_task_state_t s, const char *reason,
                        int send);
void node__status(node_t *n, node__task_t *t, uint64_t req_id);
int node__expected_wait(node_t *n, node__task_t *t, uint64_t *ms);
void node__matrix_wire(node_t *n, proto_matrix_t *m, bool force);
/* A task directory's path as (directory fd, name) for the *at calls: under WORK/tasks, that
 * directory held open and the last component; else (AT_FDCWD, the path). (node_dir.c) */
const char *node__at(const node_t *n, const char *path, int *dfd);

/* node_handle.c */
void node__raise(node__job_t *j, uint32_t epoch, const char *by);

/* node_run.c */
void node__schedule(node_t *n);
void node__spawned(void *arg, const spawner_result_t *r); /* a spawner thread's result */
/* node__schedule at the end of this loop iteration, once however many events asked (set-ups
 * done, children reaped): a burst of them costs one walk of the queue, not one each. */
void node__schedule_soon(node_t *n);
void node__kill(node_t *n, node__task_t *t); /* SIGKILL its process group and cgroup */
int node__prepare(node_t *n, node__task_t *t, const proto_task_create_t *tc, char *msg, size_t cap);

/* node_dir.c */
int node__setup_start(node_t *n, node__task_t *t);
/* Nothing to stage and no spare directory at hand (1): the task's directory is taken or made
 * when it starts (node__start: a spare renamed, else made by its spawn), not now on the pool.
 * A burst of N creates made N directories at once (three inodes each) and removed most of
 * them afterwards (past the spares' bound); taken at the start, a burst cycles through about
 * as many directories as it has tasks running. 0: set it up now (node__setup_start). */
int node__dir_at_start(node_t *n, node__task_t *t);
/* The quiet directories no start took this pass go to the spares (or are removed). */
void node__handoffs_flush(node_t *n);
/* Renames the newest spare directory (of user uid) to dir: 0, or -1 when none is at hand or
 * the rename failed (the spare then stays for the pool's set-ups to try). */
int node__spare_take(node_t *n, const char *dir, uid_t uid);
void node__trash(node_t *n, const char *dir);      /* remove later, off the loop */
void node__trash_task(node_t *n, const char *dir); /* a forgotten task's: recycled if it can be */
/* The directory of a task that succeeded: NODE__DIR_REUSED when it held only its stdout and
 * stderr, both empty and as the PN made them, nobody holding them open: renamed to a spare here
 * on the loop (no trip to the pool); NODE__DIR_EMPTY when it left nothing but cannot be reused
 * as it is (node__trash_task's recycling decides); NODE__DIR_KEEP when it left something (or
 * cannot be read): kept for its reader. */
enum { NODE__DIR_KEEP, NODE__DIR_REUSED, NODE__DIR_EMPTY };
int node__give_back_quiet(node_t *n, const char *dir);
void node__trash_cg(node_t *n, const char *path); /* remove a task's cgroup, off the loop */
void node__trash_flush(node_t *n, int sync);      /* sync: now, on this thread */
void node__remove_dir(const char *dir);

#endif
