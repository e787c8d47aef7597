#include "pn/node.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "pn/exec.h"
#include "pn/node_internal.h"

double node__now_s(void)
{
    return (double)clock_mono_ns() / 1e9;
}

static int node__mkdir(const char *path, char *msg, size_t cap)
{
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return err_fmt(msg, cap, ERR_IO, "%s: %s", path, strerror(errno));
    return 0;
}

/* A node smaller than the smallest bin (0.25 cpu under the default 0.5) would publish a matrix of
 * "never" only, and no JM would place anything on it: its own capacity becomes the first bin
 * (replacing the smallest when the bins are full). */
static int node__fit_bins(double *bins, int n, double capacity)
{
    if (n <= 0 || !(capacity > 0) || capacity >= bins[0])
        return n;
    if (n == MATRIX_MAX_BINS)
        n--;
    memmove(bins + 1, bins, (size_t)n * sizeof *bins);
    bins[0] = capacity;
    return n + 1;
}

node_t *node_new(const pnconf_t *cfg, uv_loop_t *loop, uint64_t boot_id, uid_t uid, gid_t gid,
                 node_send_fn *send, void *send_arg, char *msg, size_t cap)
{
    double cpu_bins[MATRIX_MAX_BINS], mem_bins[MATRIX_MAX_BINS];
    int ncpu = matrix_parse_bins(cfg->cpu_bins, cpu_bins, msg, cap);
    if (ncpu < 0)
        return NULL;
    int nmem = matrix_parse_bins(cfg->mem_bins_mb, mem_bins, msg, cap);
    if (nmem < 0)
        return NULL;
    ncpu = node__fit_bins(cpu_bins, ncpu, cfg->cpus);
    nmem = node__fit_bins(mem_bins, nmem, (double)(cfg->memory >> 20));
    if (node__mkdir(cfg->work_dir, msg, cap))
        return NULL;
    node_t *n = mem_calloc(1, sizeof *n);
    if (n != NULL)
        n->pgids_fd = n->tasks_dfd = n->spare_dfd = -1;
    if (!n) {
        err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        return NULL;
    }
    n->cfg = cfg;
    n->loop = loop;
    n->boot_id = boot_id;
    rng_seed(&n->rng, boot_id);
    n->uid = uid;
    n->gid = gid;
    n->dir_uid = uid != (uid_t)-1 ? uid : geteuid(); /* asked once, not per ended task */
    n->caller.uid = (uid_t)-1;
    n->caller.gid = (gid_t)-1;
    n->caller.admin = 1;
    n->send = send;
    n->send_arg = send_arg;
    static const double spawn_b[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                     0.01,   0.025,   0.05,   0.1,   0.25,   1};
    static const double delay_b[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                     0.5,   1,      2.5,   5,    10,    30,   60,  300};
    metrics_hist_init(&n->spawn_hist, spawn_b, sizeof spawn_b / sizeof *spawn_b);
    metrics_hist_init(&n->delay_hist, delay_b, sizeof delay_b / sizeof *delay_b);
    map_init(&n->tasks);
    map_init(&n->byid);
    map_init(&n->bypid);
    map_init(&n->jobs);
    proto_buf_init(&n->buf);
    proto_batch_init(&n->sb);
    proto_stats_init(&n->pstats);
    double mem_mb = (double)(cfg->memory >> 20);
    queue_config_t qc = {.cpus = cfg->cpus,
                         .mem_mb = mem_mb,
                         .max_regular = (size_t)cfg->max_regular,
                         .max_opportunistic = (size_t)cfg->max_opportunistic,
                         .max_running = (size_t)cfg->max_running,
                         .default_est_s = (double)cfg->default_runtime_ms / 1000.0,
                         .backfill_depth = (size_t)cfg->backfill_depth,
                         .sim_depth = (size_t)cfg->matrix_depth};
    loadprof_init(&n->scratch, cfg->cpus, mem_mb);
    matrix_init(&n->matrix, cpu_bins, (size_t)ncpu, mem_bins, (size_t)nmem);
    n->matrix_dirty = 1;
    char path[4096];
    snprintf(path, sizeof path, "%s/tasks", cfg->work_dir);
    n->tasks_dir = mem_strdup(path);
    snprintf(path, sizeof path, "%s/cache", cfg->work_dir);
    n->queue = queue_new(&qc);
    n->stage = stage_new(path, (const char *const *)cfg->stage_allow.items, cfg->stage_allow.len,
                         cfg->stage_max_file, msg, cap);
    if (n->tasks_dir && n->queue) {
        /* a previous boot that ended uncleanly may have left tasks running: nobody tracks
         * them, and their JMs run them again elsewhere, so they go */
        snprintf(path, sizeof path, "%s/tasks.pgids", cfg->work_dir);
        size_t killed = 0;
        exec_kill_stale(path, &killed);
        if (killed > 0)
            log_warn("killed %zu task process groups a previous run of this PN left behind",
                     killed);
        n->pgids_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    }
    if (n->tasks_dir && n->queue) { /* a previous run's directories: set aside, removed later */
        snprintf(path, sizeof path, "%s.stale-%016llx", n->tasks_dir, (unsigned long long)boot_id);
        if (rename(n->tasks_dir, path) == 0)
            node__trash(n, path);
        snprintf(path, sizeof path, "%s/spare", cfg->work_dir);
        n->spare_dir = mem_strdup(path);
        snprintf(path, sizeof path, "%s/spare.stale-%016llx", cfg->work_dir,
                 (unsigned long long)boot_id);
        if (n->spare_dir && rename(n->spare_dir, path) == 0)
            node__trash(n, path);
    }
    /* The PN takes a write lease on a task's output file for a moment to learn that nobody
       else holds it open (node_dir.c). Whoever opens that file meanwhile (a reader of the
       task's output, another process of its user) breaks the lease, and the kernel signals
       the lease holder with SIGIO, whose default action ends the process: the PN. The lease
       is let go at once anyway, so the signal is ignored (tasks get default handlers). */
    signal(SIGIO, SIG_IGN);
    mode_t mask = umask(022); /* what mkdir and open give task directories and output files */
    umask(mask);
    n->dir_mode = 0755 & ~mask;
    n->file_mode = 0644 & ~mask;
    orphan_config_t oc = {.ended_grace_ms = (uint64_t)cfg->ended_grace_ms,
                          .orphan_grace_ms = (uint64_t)cfg->orphan_grace_ms};
    n->orphan = orphan_new(&oc);
    if (n->stage && n->queue && !n->orphan)
        err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    if (!n->stage || !n->queue || !n->orphan || !n->tasks_dir || !n->spare_dir ||
        node__mkdir(n->tasks_dir, msg, cap) || node__mkdir(n->spare_dir, msg, cap)) {
        if (n->stage && !n->queue)
            err_fmt(msg, cap, ERR_CONFIG, "bad queue configuration");
        node_destroy(&n);
        return NULL;
    }
    n->tasks_dfd = open(n->tasks_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    n->spare_dfd = open(n->spare_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (stage_set_limit(n->stage, cfg->cache_max) != 0)
        log_warn("%s/cache: cannot count its size", cfg->work_dir);
    if (cfg->cgroup_base[0] && !(n->cg = taskcg_new(cfg->cgroup_base, msg, cap))) {
        node_destroy(&n);
        return NULL;
    }
    if (cfg->exec_shim[0]) {
        n->shim = mem_strdup(cfg->exec_shim);
    } else {
        char self[4000];
        ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
        if (len > 0) {
            self[len] = 0;
            char *slash = strrchr(self, '/');
            if (slash)
                *slash = 0;
            snprintf(path, sizeof path, "%s/paddock-pn-exec", self);
            n->shim = mem_strdup(path);
        }
    }
    int64_t threads = cfg->spawn_threads;
    if (threads < 0) { /* a quarter of the cores, at least 2 (2 beat 1 on 2 cores: bench_pn) */
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cores >= 8 ? cores / 4 : 2;
    }
    if (threads > 0 &&
        !(n->spawner = spawner_new(loop, (unsigned)threads, node__spawned, n, msg, cap))) {
        node_destroy(&n);
        return NULL;
    }
    return n;
}

static void node__free_handle(uv_handle_t *h)
{
    mem_free(h);
}

void node__task_free(node__task_t *t)
{
    if (!t)
        return;
    mem_free(t->key);
    mem_free(t->task_id);
    for (char **a = t->argv; a && *a; a++)
        mem_free(*a);
    mem_free(t->argv);
    for (char **e = t->envp; e && *e; e++)
        mem_free(*e);
    mem_free(t->envp);
    mem_free(t->cwd);
    mem_free(t->dir);
    mem_free(t->cg);
    for (uint32_t i = 0; i < t->nfiles; i++)
        mem_free(t->files[i].path);
    mem_free(t->files);
    mem_free(t->reason);
    mem_free(t);
}

void node_destroy(node_t **np)
{
    if (!np || !*np)
        return;
    node_t *n = *np;
    /* every start in flight comes back first, so that what it started is killed below */
    spawner_flush(n->spawner);
    n->stopping = 1;
    size_t it = 0;
    void *v;
    while (map_next(&n->tasks, &it, NULL, NULL, &v)) {
        node__task_t *t = v;
        if (t->pid > 0 && !proto_task_state_terminal(t->state))
            node__kill(n, t);
        if (t->cg) {
            node__trash_cg(n, t->cg);
            mem_free(t->cg);
            t->cg = NULL;
        }
        if (!proto_task_state_terminal(t->state)) {
            node__set_state(n, t, PROTO_TASK_LOST, "node shutting down");
        }
    }
    node__statuses_flush(n); /* no pass end comes now */
    if (n->pgids_fd >= 0) {  /* every task was killed above: nothing for the next boot */
        n->pgids_len = 0;
        if (ftruncate(n->pgids_fd, 0) != 0)
            log_warn("cannot empty the list of task process groups");
        close(n->pgids_fd);
        n->pgids_fd = -1;
    }
    it = 0;
    while (map_next(&n->tasks, &it, NULL, NULL, &v)) { /* and the directories they keep */
        node__trash(n, ((node__task_t *)v)->dir);
        node__task_free(v);
    }
    node__trash_flush(n, 1);
    mem_free(n->trash);
    spawner_free(&n->spawner);
    mem_free(n->parked);
    mem_free(n->unsent);
    mem_free(n->runq);
    if (n->sched_check) /* freed once closed: the loop runs after node_destroy */
        uv_close((uv_handle_t *)n->sched_check, node__free_handle);
    if (n->pass_end)
        uv_close((uv_handle_t *)n->pass_end, node__free_handle);
    node__handoffs_flush(n); /* removed: stopping */
    if (n->spare_dir && n->nspares + n->spares_pending == 0)
        rmdir(n->spare_dir);
    else if (n->spare_dir) /* the spares go with it */
        node__remove_dir(n->spare_dir);
    mem_free(n->spare_dir);
    mem_free(n->spares);
    if (n->tasks_dfd >= 0)
        close(n->tasks_dfd);
    if (n->spare_dfd >= 0)
        close(n->spare_dfd);
    taskcg_destroy(&n->cg);
    it = 0;
    while (map_next(&n->jobs, &it, NULL, NULL, &v)) {
        node__job_t *j = v;
        mem_free(j->job_id);
        mem_free(j->reply);
        mem_free(j);
    }
    map_close(&n->tasks);
    map_close(&n->byid);
    map_close(&n->bypid);
    map_close(&n->jobs);
    orphan_destroy(&n->orphan);
    mem_free(n->hb_jobs);
    mem_free(n->hb_filter);
    mem_free(n->done);
    queue_destroy(&n->queue);
    stage_destroy(&n->stage);
    loadprof_close(&n->scratch);
    proto_buf_close(&n->buf);
    proto_batch_close(&n->sb);
    mem_free(n->tasks_dir);
    mem_free(n->shim);
    mem_free(n);
    *np = NULL;
}

static void node__matrix_refresh(node_t *n, bool force)
{
    uint64_t now = clock_mono_ms();
    if (n->matrix_batch && n->matrix_batch_fresh)
        force = false; /* computed after every task of the batch left the queue */
    if (!n->matrix_dirty ||
        (!force && now - n->matrix_at_ms < (uint64_t)n->cfg->matrix_min_interval_ms))
        return;
    n->c.matrix_computes++;
    if (matrix_compute(&n->matrix, n->queue, node__now_s(), &n->scratch) == 0) {
        n->matrix_dirty = 0;
        n->matrix_at_ms = now;
        n->matrix_batch_fresh = n->matrix_batch;
    }
}

void node__matrix_wire(node_t *n, proto_matrix_t *m, bool force)
{
    node__matrix_refresh(n, force);
    memset(m, 0, sizeof *m);
    m->ncpu = (uint32_t)n->matrix.ncpu;
    m->nmem = (uint32_t)n->matrix.nmem;
    for (size_t c = 0; c < n->matrix.ncpu; c++)
        m->cpu_bounds[c] = n->matrix.cpu_bins[c];
    for (size_t k = 0; k < n->matrix.nmem; k++)
        m->mem_bounds_mb[k] = (uint64_t)n->matrix.mem_bins[k];
    for (size_t c = 0; c < n->matrix.ncpu; c++) {
        for (size_t k = 0; k < n->matrix.nmem; k++) {
            double w = n->matrix.wait_s[c][k];
            uint32_t ms = w == MATRIX_NEVER     ? PROTO_WAIT_NEVER
                          : w * 1000.0 >= 4.0e9 ? PROTO_WAIT_NEVER - 1
                                                : (uint32_t)llround(w * 1000.0);
            m->cells_ms[c * n->matrix.nmem + k] = ms;
        }
    }
    m->timestamp_ms = clock_wall_ms() - (int64_t)(clock_mono_ms() - n->matrix_at_ms);
}

/* Where a queued regular task stands in the queue, so its JM can correct a placement made on
 * stale information (Apollo §3.4): its expected wait in ms (0: it starts as soon as it may).
 * Returns 0, or an error when the queue cannot say (the task is not in its regular queue). */
int node__expected_wait(node_t *n, node__task_t *t, uint64_t *ms)
{
    double now = node__now_s(), at = now;
    double age = (double)n->cfg->matrix_min_interval_ms / 1000.0; /* as stale as the matrix */
    int rc = queue_expected_start_tail(n->queue, now, age, t->id, &n->scratch, &at);
    *ms = rc == 0 && at > now ? (uint64_t)((at - now) * 1000.0 + 0.5) : 0;
    return rc;
}

/* The task's status to its job's peer (or reply endpoint), echoing req_id. */
void node__status(node_t *n, node__task_t *t, uint64_t req_id)
{
    if (!t->job || !t->job->plen)
        return;
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_STATUS);
    m.req_id = req_id;
    proto_task_status_t *s = &m.task_status;
    s->job_id = t->job->job_id;
    s->task_id = t->task_id;
    s->attempt = t->attempt;
    s->node = n->cfg->name;
    s->state = t->state;
    s->task_class = t->klass;
    s->exit_code = t->exit_code;
    s->signal = t->signal;
    s->reason = t->reason;
    s->cpu_time_ms = t->cpu_time_ms;
    s->bytes_read = t->bytes_read;
    s->peak_rss_kb = t->peak_rss_kb;
    s->queued_at_ms = t->queued_at_ms;
    s->started_at_ms = t->started_at_ms;
    s->ended_at_ms = t->ended_at_ms;
    if (t->ended_at_ms && t->started_at_ms)
        s->wall_ms = (uint64_t)(t->ended_at_ms - t->started_at_ms);
    s->cache_hits = t->cache_hits;
    s->cache_misses = t->cache_misses;
    if (n->wait_known == t->id) /* node__create computed it a moment ago */
        s->expected_wait_ms = n->wait_known_ms;
    else if ((t->state == PROTO_TASK_QUEUED || t->state == PROTO_TASK_STAGING) &&
             t->klass == PROTO_CLASS_REGULAR)
        (void)node__expected_wait(n, t, &s->expected_wait_ms);
    n->wait_known = 0;
    t->unsent = 0; /* whatever was held back, its JM hears where the task stands now */
    if (t->running_unsent && proto_task_state_terminal(t->state))
        n->c.running_unsent++; /* its start and end in one status */
    t->running_unsent = 0;
    /* A task that ended freed its room: its JM places the next task on what the status says,
       so that matrix is computed now, not up to matrix_min_interval ago (with the task still
       in it). */
    bool ended = t->state != PROTO_TASK_QUEUED && t->state != PROTO_TASK_STAGING &&
                 t->state != PROTO_TASK_RUNNING;
    /* ... unless regular work is queued here: that work takes the room (this pass schedules
       it), so the fresh matrix would differ from one computed up to matrix_min_interval ago
       by that interval's progress only, as any other status's. A burst of short tasks behind
       a deep queue simulated the queue for every reap (150 us each with 256 tasks simulated:
       the largest item of the PN's own code per task). */
    if (ended && queue_regular_queued(n->queue) > 0) {
        ended = false;
        n->c.matrix_kept++;
    }
    node__matrix_wire(n, &s->matrix, ended);
    char err[256];
    if (n->sb_job && (n->sb_job != t->job || !t->job->batch))
        node__statuses_flush(n); /* another job's (or a job that stopped batching) go first */
    if (t->job->batch) {
        /* held to the end of the loop pass: the statuses it makes for the job go as one */
        int rc = proto_batch_add(&n->sb, s, req_id, err, sizeof err);
        if (rc == ERR_FULL) {
            node__statuses_flush(n);
            rc = proto_batch_add(&n->sb, s, req_id, err, sizeof err);
        }
        if (rc != 0) {
            log_error("status of %s/%s: %s", t->job->job_id, t->task_id, err);
            return;
        }
        n->sb_job = t->job;
        n->c.statuses_sent++;
        node__pass_end_arm(n);
        if (!n->pass_end_armed) /* no pass to wait for (stopping, or no handle): at once */
            node__statuses_flush(n);
        return;
    }
    if (proto_encode(&m, &n->buf, err, sizeof err) != 0) {
        log_error("status of %s/%s: %s", t->job->job_id, t->task_id, err);
        return;
    }
    n->send(n->send_arg, t->job->peer, t->job->plen, t->job->reply, n->buf.data, n->buf.len);
    n->c.statuses_sent++;
    n->c.status_messages++;
}

void node__statuses_flush(node_t *n)
{
    node__job_t *j = n->sb_job;
    if (!j)
        return;
    n->sb_job = NULL;
    uint32_t k = n->sb.n;
    char err[256];
    if (proto_batch_encode(&n->sb, &n->buf, err, sizeof err) != 0) {
        log_error("statuses of %s: %s", j->job_id, err);
        return;
    }
    n->send(n->send_arg, j->peer, j->plen, j->reply, n->buf.data, n->buf.len);
    n->c.status_messages++;
    if (k > 1)
        n->c.status_batches++;
}

void node__send_status(node_t *n, node__task_t *t)
{
    node__status(n, t, t->req_id);
}

/* The one place task states change; `send`: its status goes to its JM now (0 only for a new
 * task's QUEUED held back, node__create). */
void node__set_state_ex(node_t *n, node__task_t *t, proto_task_state_t s, const char *reason,
                        int send)
{
    if (t->unsent && send && s != PROTO_TASK_QUEUED)
        n->c.queued_unsent++; /* this status answers the create instead */
    t->state = s;
    if (reason && (!t->reason || strcmp(t->reason, reason) != 0)) {
        mem_free(t->reason);
        t->reason = mem_strdup(reason);
    }
    if (s == PROTO_TASK_RUNNING)
        t->started_at_ms = clock_wall_ms();
    if (proto_task_state_terminal(s)) {
        t->ended_at_ms = clock_wall_ms();
        n->c.ended[s][t->klass == PROTO_CLASS_OPPORTUNISTIC]++;
        switch (s) {
        case PROTO_TASK_SUCCEEDED:
            n->c.succeeded++;
            break;
        case PROTO_TASK_FAILED:
            n->c.failed++;
            break;
        case PROTO_TASK_CANCELLED:
            n->c.cancelled++;
            break;
        case PROTO_TASK_PREEMPTED:
            n->c.preempted++;
            break;
        default:
            n->c.lost++;
            break;
        }
    }
    n->matrix_dirty = 1;
    if (send)
        node__send_status(n, t);
}

void node__set_state(node_t *n, node__task_t *t, proto_task_state_t s, const char *reason)
{
    node__set_state_ex(n, t, s, reason, 1);
}

void node__running(node_t *n, node__task_t *t)
{
    node__set_state_ex(n, t, PROTO_TASK_RUNNING, NULL, 0);
    if (n->nrunq == n->caprunq) {
        size_t cap = n->caprunq ? 2 * n->caprunq : 64;
        uint64_t *v = mem_reallocarray(n->runq, cap, sizeof *v);
        if (!v) {
            node__set_state(n, t, PROTO_TASK_RUNNING, NULL); /* say it now */
            return;
        }
        n->runq = v;
        n->caprunq = cap;
    }
    n->runq[n->nrunq++] = t->id;
    t->running_unsent = 1;
    node__pass_end_arm(n);
    if (!n->pass_end_armed) /* no handle: at once */
        node__pass_flush(n);
}

void node__send_unsent(node_t *n)
{
    size_t k = 0;
    for (size_t i = 0; i < n->nunsent; i++) {
        node__task_t *t = map_getn(&n->byid, &n->unsent[i], sizeof n->unsent[i]);
        if (!t || !t->unsent)
            continue;
        if (t->spawning) { /* started after all: its RUNNING (or failure) answers */
            n->unsent[k++] = n->unsent[i];
            continue;
        }
        if (t->state == PROTO_TASK_QUEUED && t->pid <= 0)
            node__send_status(n, t); /* it waits: its JM hears so, and for how long */
    }
    n->nunsent = k;
}

/* A set-up task whose QUEUED status was held back: looked at after the next scheduling pass. */
void node__note_unsent(node_t *n, node__task_t *t)
{
    if (n->nunsent == n->capunsent) {
        size_t cap = n->capunsent ? 2 * n->capunsent : 64;
        uint64_t *v = mem_reallocarray(n->unsent, cap, sizeof *v);
        if (!v) { /* no room to remember it: say it now */
            node__send_status(n, t);
            return;
        }
        n->unsent = v;
        n->capunsent = cap;
    }
    n->unsent[n->nunsent++] = t->id;
}

void node__finish(node_t *n, node__task_t *t)
{
    if (t->job && t->job->nlive > 0 && --t->job->nlive == 0)
        orphan_forget(n->orphan, t->job->job_id); /* nothing of it left to reap */
    uint64_t id = t->id;
    map_deln(&n->byid, &id, sizeof id, NULL);
    if (t->pid > 0) {
        int32_t pid = t->pid;
        map_deln(&n->bypid, &pid, sizeof pid, NULL);
    }
    n->spec_bytes -= t->spec_bytes;
    t->spec_bytes = 0;
    for (char **a = t->argv; a && *a; a++)
        mem_free(*a);
    mem_free(t->argv);
    t->argv = NULL;
    for (char **e = t->envp; e && *e; e++)
        mem_free(*e);
    mem_free(t->envp);
    t->envp = NULL;
    if (!t->staging) { /* the set-up job reads neither; still, leave them until it returns */
        for (uint32_t i = 0; i < t->nfiles; i++)
            mem_free(t->files[i].path);
        mem_free(t->files);
        t->files = NULL;
        t->nfiles = 0;
    }
    mem_free(t->cwd);
    t->cwd = NULL;
    if (t->dir_lazy) { /* ended before it started: its directory was never made */
        t->dir_lazy = 0;
        mem_free(t->dir);
        t->dir = NULL;
    }
    /* A task that succeeded and left nothing behind (empty stdout and stderr, no files) gives
     * its directory back at once for the next task rather than after [tasks] retain: a burst of
     * short tasks then reuses a few directories instead of allocating an inode triple per task
     * (on ext4 that allocation was most of the PN's CPU). Its status is remembered as before. */
    int quiet = !t->staging && t->dir && t->state == PROTO_TASK_SUCCEEDED && !n->cfg->keep_task_dirs
                    ? node__give_back_quiet(n, t->dir)
                    : NODE__DIR_KEEP;
    if (quiet == NODE__DIR_EMPTY) {
        node__trash_task(n, t->dir);
        if (!n->reaping) /* node_reap hands its batch's directories over once */
            node__trash_flush(n, 0);
    }
    if (quiet != NODE__DIR_KEEP) {
        mem_free(t->dir);
        t->dir = NULL;
        n->c.dirs_early++;
    }
    if (n->ndone == n->capdone) {
        size_t cap = n->capdone ? n->capdone * 2 : 64;
        node__task_t **d = mem_calloc(cap, sizeof *d);
        if (!d)
            return; /* stays in the tasks map until destroy */
        for (size_t i = 0; i < n->ndone; i++)
            d[i] = n->done[(n->donehead + i) % n->capdone];
        mem_free(n->done);
        n->done = d;
        n->capdone = cap;
        n->donehead = 0;
    }
    n->done[(n->donehead + n->ndone++) % n->capdone] = t;
}

void node_sweep(node_t *n)
{
    int64_t now = clock_wall_ms();
    size_t freed = 0;
    while (n->ndone) {
        node__task_t *t = n->done[n->donehead];
        if ((int64_t)n->ndone <= n->cfg->retain_max && now - t->ended_at_ms < n->cfg->retain_ms)
            break;
        n->done[n->donehead] = NULL;
        n->donehead = (n->donehead + 1) % n->capdone;
        n->ndone--;
        map_deln(&n->tasks, t->key, t->keylen, NULL);
        t->job->ntasks--;
        if (t->staging) {
            t->forgotten = 1; /* trashed and freed when its set-up returns */
        } else {
            node__trash_task(n, t->dir);
            node__task_free(t);
        }
        freed++;
    }
    node__trash_flush(n, 0);
    size_t it = 0;
    void *v;
    while (map_next(&n->jobs, &it, NULL, NULL, &v)) { /* deleting while iterating is allowed */
        node__job_t *j = v;
        if (j->ntasks == 0 && now - j->touched_ms >= n->cfg->retain_ms) {
            if (n->sb_job == j)
                node__statuses_flush(n);
            map_del(&n->jobs, j->job_id, NULL);
            mem_free(j->job_id);
            mem_free(j->reply);
            mem_free(j);
        }
    }
    if (freed && (freed >= 1000 || n->tasks.len < 16))
        malloc_trim(0); /* give a burst's memory back: the PN should idle small */
}

size_t node_busy(const node_t *n)
{
    /* directories waiting for the end of the loop pass go to the pool then */
    return n->busy + (n->ntrash > 0 && n->pass_end_armed ? 1 : 0);
}

size_t node_spawning(const node_t *n)
{
    return spawner_pending(n->spawner);
}

void node_counters(const node_t *n, node_counters_t *out)
{
    *out = n->c;
    stage_stats_t ss;
    stage_stats(n->stage, &ss);
    out->cache_hits = ss.hits;
    out->cache_misses = ss.misses;
}

const proto_stats_t *node_proto_stats(const node_t *n)
{
    return &n->pstats;
}

void node_load(const node_t *n, size_t *running, size_t *queued)
{
    queue_stats_t st;
    queue_stats(n->queue, &st);
    *running = st.regular_running + st.opportunistic_running;
    *queued = st.regular_queued + st.opportunistic_queued;
}

void node_remembered(const node_t *n, size_t *tasks, size_t *jobs)
{
    *tasks = n->tasks.len;
    *jobs = n->jobs.len;
}
