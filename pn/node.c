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

#include "common/bloom.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "pn/exec.h"
#include "pn/fence.h"
#include "pn/node_internal.h"

/* Job records a TASK_QUERY may create for jobs without tasks here (each kept for retention). */
#define NODE__MAX_JOBS 100000

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
        n->pgids_fd = -1;
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
    if (n->pgids_fd >= 0) { /* every task was killed above: nothing for the next boot */
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
    if (n->spare_dir && n->nspares + n->spares_pending == 0)
        rmdir(n->spare_dir);
    else if (n->spare_dir) /* the spares go with it */
        node__remove_dir(n->spare_dir);
    mem_free(n->spare_dir);
    mem_free(n->spares);
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
    if (matrix_compute(&n->matrix, n->queue, node__now_s(), &n->scratch) == 0) {
        n->matrix_dirty = 0;
        n->matrix_at_ms = now;
        n->matrix_batch_fresh = n->matrix_batch;
    }
}

static void node__matrix_wire(node_t *n, proto_matrix_t *m, bool force)
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
static int node__expected_wait(node_t *n, node__task_t *t, uint64_t *ms)
{
    double now = node__now_s(), at = now;
    double age = (double)n->cfg->matrix_min_interval_ms / 1000.0; /* as stale as the matrix */
    int rc = queue_expected_start_tail(n->queue, now, age, t->id, &n->scratch, &at);
    *ms = rc == 0 && at > now ? (uint64_t)((at - now) * 1000.0 + 0.5) : 0;
    return rc;
}

/* The task's status to its job's peer (or reply endpoint), echoing req_id. */
static void node__status(node_t *n, node__task_t *t, uint64_t req_id)
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
    node__matrix_wire(n, &s->matrix, ended);
    char err[256];
    if (proto_encode(&m, &n->buf, err, sizeof err) != 0) {
        log_error("status of %s/%s: %s", t->job->job_id, t->task_id, err);
        return;
    }
    n->send(n->send_arg, t->job->peer, t->job->plen, t->job->reply, n->buf.data, n->buf.len);
    n->c.statuses_sent++;
}

void node__send_status(node_t *n, node__task_t *t)
{
    node__status(n, t, t->req_id);
}

/* The one place task states change; `send`: its status goes to its JM now (0 only for a new
 * task's QUEUED held back, node__create). */
static void node__set_state_ex(node_t *n, node__task_t *t, proto_task_state_t s, const char *reason,
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
            map_del(&n->jobs, j->job_id, NULL);
            mem_free(j->job_id);
            mem_free(j->reply);
            mem_free(j);
        }
    }
    if (freed && (freed >= 1000 || n->tasks.len < 16))
        malloc_trim(0); /* give a burst's memory back: the PN should idle small */
}

static void node__reply_error(node_t *n, const void *peer, size_t plen, uint64_t req_id,
                              proto_type_t in_reply_to, int code, const char *text)
{
    proto_msg_t m;
    proto_msg_init(&m, PROTO_ERROR);
    m.req_id = req_id;
    m.error.code = code;
    m.error.text = (char *)text;
    m.error.in_reply_to = in_reply_to;
    if (proto_encode(&m, &n->buf, NULL, 0) == 0)
        n->send(n->send_arg, peer, plen, NULL, n->buf.data, n->buf.len);
}

/* Fencing: 0 when a request with `epoch` may act on the job; otherwise ERR_FENCED, answered
 * with ERROR and counted. Admission does not raise the epoch: node__job does. */
static int node__fenced(node_t *n, const char *job_id, uint32_t epoch, const void *peer,
                        size_t plen, uint64_t req_id, proto_type_t type)
{
    node__job_t *j = map_get(&n->jobs, job_id);
    if (!j || fence_check(j->epoch, epoch) == 0)
        return 0;
    n->c.refused_fenced++;
    if (type == PROTO_TASK_CREATE)
        n->c.creates_refused[NODE_REFUSED_FENCED]++;
    char msg[PROTO_MAX_NAME + 96];
    snprintf(msg, sizeof msg, "job %s: epoch %u is older than %u", job_id, epoch, j->epoch);
    log_debug("refused %s: %s", proto_type_name(type), msg);
    node__reply_error(n, peer, plen, req_id, type, ERR_FENCED, msg);
    return ERR_FENCED;
}

static void node__raise(node__job_t *j, uint32_t epoch, const char *by)
{
    uint32_t was = j->epoch;
    if (fence_admit(&j->epoch, epoch) == 1 && was > 0)
        log_info("job %s: epoch %u (was %u, from %s): older job managers are fenced", j->job_id,
                 epoch, was, by);
}

/* The job's reply address follows the latest peer speaking for it; a new peer gets the state
 * of every remembered task of the job (a JM that reconnected) unless resync is 0 (a query,
 * answered with every state anyway). A higher epoch raises the job's (the caller checked
 * node__fenced first). */
static node__job_t *node__job(node_t *n, const char *job_id, const void *peer, size_t plen,
                              uint64_t req_id, uint32_t epoch, int resync)
{
    node__job_t *j = map_get(&n->jobs, job_id);
    int changed = 0;
    if (!j) {
        j = mem_calloc(1, sizeof *j);
        if (!j || !(j->job_id = mem_strdup(job_id)) || map_put(&n->jobs, job_id, j, NULL)) {
            if (j)
                mem_free(j->job_id);
            mem_free(j);
            return NULL;
        }
        memcpy(j->user, n->caller.user, sizeof j->user);
    } else if (j->plen != plen || memcmp(j->peer, peer, plen) != 0) {
        changed = 1;
    }
    if (plen > NODE__PEER_MAX)
        plen = NODE__PEER_MAX;
    memcpy(j->peer, peer, plen);
    j->plen = plen;
    j->req_id = req_id;
    j->touched_ms = clock_wall_ms();
    node__raise(j, epoch, "a job manager");
    uint64_t now = clock_mono_ms();
    if (resync && changed &&
        now - j->resync_ms >= 1000) { /* a JM alternating sockets cannot storm */
        j->resync_ms = now;
        size_t it = 0;
        void *v;
        while (map_next(&n->tasks, &it, NULL, NULL, &v)) {
            node__task_t *t = v;
            if (t->job == j)
                node__send_status(n, t);
        }
    }
    return j;
}

/* Statuses of the job go to `endpoint` from now on (NULL or empty: to the peer). */
static void node__job_reply(node__job_t *j, const char *endpoint)
{
    const char *reply = endpoint && endpoint[0] ? endpoint : NULL;
    if ((reply == NULL) != (j->reply == NULL) || (reply && strcmp(reply, j->reply) != 0)) {
        char *r = reply ? mem_strdup(reply) : NULL;
        if (!reply || r) {
            mem_free(j->reply);
            j->reply = r;
        }
    }
}

static char *node__key(const char *job, const char *task, uint32_t attempt, size_t *len)
{
    char tail[16];
    int tl = snprintf(tail, sizeof tail, "%u", attempt);
    size_t jl = strlen(job), kl = strlen(task);
    char *k = mem_alloc(jl + kl + (size_t)tl + 3);
    if (!k)
        return NULL;
    memcpy(k, job, jl + 1);
    memcpy(k + jl + 1, task, kl + 1);
    memcpy(k + jl + kl + 2, tail, (size_t)tl + 1);
    *len = jl + kl + (size_t)tl + 2;
    return k;
}

static node__task_t *node__lookup(node_t *n, const char *job, const char *task, uint32_t attempt)
{
    size_t len;
    char *k = node__key(job, task, attempt, &len);
    node__task_t *t = k ? map_getn(&n->tasks, k, len) : NULL;
    mem_free(k);
    return t;
}

int node_task_dir(node_t *n, const char *job, const char *task, uint32_t attempt, const char **dir,
                  proto_task_state_t *state, uint32_t *found)
{
    uint32_t lo = attempt ? attempt : 1, hi = attempt ? attempt : PROTO_MAX_ATTEMPT;
    for (uint32_t a = hi; a >= lo; a--) { /* attempt 0: the newest remembered */
        node__task_t *t = node__lookup(n, job, task, a);
        if (t && !n->caller.admin && strcmp(t->user, n->caller.user) != 0)
            return ERR_DENIED; /* issue 27: a user reads their own tasks' output */
        if (t) {
            *dir = t->dir;
            *state = t->state;
            *found = a;
            return 0;
        }
    }
    return ERR_NOTFOUND;
}

const char *node_tasks_dir(const node_t *n)
{
    return n->tasks_dir;
}

bool node_caller_admin(const node_t *n)
{
    return n->caller.admin != 0;
}

/* The queue's key of a job (pn/oppweight.h): FNV-1a of its id. */
static uint64_t node__job_key(const char *job_id)
{
    uint64_t h = 14695981039346656037ull;
    for (const unsigned char *p = (const unsigned char *)job_id; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h;
}

static void node__create(node_t *n, const void *peer, size_t plen, uint64_t req_id,
                         const proto_task_create_t *tc)
{
    if (node__fenced(n, tc->job_id, tc->epoch, peer, plen, req_id, PROTO_TASK_CREATE))
        return;
    node__job_t *j = node__job(n, tc->job_id, peer, plen, req_id, tc->epoch, 1);
    if (!j) {
        n->c.creates_refused[NODE_REFUSED_NO_MEMORY]++;
        node__reply_error(n, peer, plen, req_id, PROTO_TASK_CREATE, ERR_NOMEM, "out of memory");
        return;
    }
    node__job_reply(j, tc->reply_endpoint);
    node__task_t *t = node__lookup(n, tc->job_id, tc->task_id, tc->attempt);
    if (t) { /* a retry of the same attempt: idempotent, answer with where it stands */
        t->req_id = req_id;
        node__send_status(n, t);
        return;
    }
    char msg[512];
    if (tc->cpu > n->cfg->cpus || tc->mem_mb > (n->cfg->memory >> 20)) {
        n->c.refused_other++;
        n->c.creates_refused[NODE_REFUSED_CAPACITY]++;
        snprintf(msg, sizeof msg, "task needs %.3g cores and %llu MiB; node has %.3g and %llu",
                 tc->cpu, (unsigned long long)tc->mem_mb, n->cfg->cpus,
                 (unsigned long long)(n->cfg->memory >> 20));
        node__reply_error(n, peer, plen, req_id, PROTO_TASK_CREATE, ERR_CAPACITY, msg);
        return;
    }
    uint64_t spec = 0; /* what the task will hold, bounded before anything is allocated */
    for (uint32_t i = 0; i < tc->argc; i++)
        spec += strlen(tc->argv[i]) + 1;
    for (uint32_t i = 0; i < tc->nenv; i++)
        spec += strlen(tc->env[i].key) + (tc->env[i].value ? strlen(tc->env[i].value) : 0) + 2;
    for (uint32_t i = 0; i < tc->nfiles; i++)
        spec += strlen(tc->files[i].path) + 1;
    spec += tc->cwd ? strlen(tc->cwd) : 0;
    if (n->spec_bytes + spec > n->cfg->max_spec_bytes) {
        n->c.refused_full++;
        n->c.creates_refused[NODE_REFUSED_SPEC_BYTES]++;
        snprintf(msg, sizeof msg, "queued task specs over %llu bytes",
                 (unsigned long long)n->cfg->max_spec_bytes);
        node__reply_error(n, peer, plen, req_id, PROTO_TASK_CREATE, ERR_FULL, msg);
        return;
    }
    t = mem_calloc(1, sizeof *t);
    if (!t || !(t->key = node__key(tc->job_id, tc->task_id, tc->attempt, &t->keylen)) ||
        !(t->task_id = mem_strdup(tc->task_id))) {
        node__task_free(t);
        n->c.creates_refused[NODE_REFUSED_NO_MEMORY]++;
        node__reply_error(n, peer, plen, req_id, PROTO_TASK_CREATE, ERR_NOMEM, "out of memory");
        return;
    }
    t->id = ++n->next_id;
    t->job = j;
    t->uid = n->caller.uid != (uid_t)-1 ? n->caller.uid : n->uid;
    t->gid = n->caller.uid != (uid_t)-1 ? n->caller.gid : n->gid;
    memcpy(t->user, n->caller.user, sizeof t->user);
    t->attempt = tc->attempt;
    t->req_id = req_id;
    t->klass = tc->task_class == PROTO_CLASS_OPPORTUNISTIC ? PROTO_CLASS_OPPORTUNISTIC
                                                           : PROTO_CLASS_REGULAR;
    t->cpu = tc->cpu;
    t->mem_mb = tc->mem_mb;
    t->exit_code = -1;
    queue_task_t qt = {.id = t->id,
                       .cpu = tc->cpu,
                       .mem_mb = (double)tc->mem_mb,
                       .est_s = (double)tc->runtime_ms / 1000.0,
                       .weight = tc->weight,
                       .job = node__job_key(tc->job_id),
                       .prio = tc->priority,
                       .klass = t->klass == PROTO_CLASS_OPPORTUNISTIC ? QUEUE_OPPORTUNISTIC
                                                                      : QUEUE_REGULAR};
    int rc = node__prepare(n, t, tc, msg, sizeof msg);
    if (!rc) {
        rc = queue_push(n->queue, &qt);
        if (rc == ERR_FULL) {
            n->c.refused_full++;
            n->c.creates_refused[NODE_REFUSED_QUEUE_FULL]++;
            queue_stats_t st;
            queue_stats(n->queue, &st);
            snprintf(msg, sizeof msg, "%s queue full (%zu tasks)",
                     qt.klass == QUEUE_REGULAR ? "regular" : "opportunistic",
                     qt.klass == QUEUE_REGULAR ? st.regular_queued : st.opportunistic_queued);
        } else if (rc) {
            n->c.refused_other++;
            n->c.creates_refused[rc == ERR_CAPACITY ? NODE_REFUSED_CAPACITY
                                                    : NODE_REFUSED_INVALID]++;
            snprintf(msg, sizeof msg, "not queued: %s", err_text(rc));
        }
    }
    uint64_t id = t->id;
    if (!rc && (map_putn(&n->tasks, t->key, t->keylen, t, NULL) ||
                map_putn(&n->byid, &id, sizeof id, t, NULL))) {
        map_deln(&n->tasks, t->key, t->keylen, NULL);
        queue_cancel(n->queue, t->id);
        rc = ERR_NOMEM;
        snprintf(msg, sizeof msg, "out of memory");
    }
    if (rc) {
        if (rc == ERR_NOMEM)
            n->c.creates_refused[NODE_REFUSED_NO_MEMORY]++;
        node__task_free(t);
        node__reply_error(n, peer, plen, req_id, PROTO_TASK_CREATE, rc, msg);
        return;
    }
    n->c.created++;
    j->ntasks++;
    j->nlive++;
    int graces_ended = 0;
    if (tc->urgent && t->klass == PROTO_CLASS_REGULAR && queue_end_graces(n->queue) > 0) {
        graces_ended = 1;
        n->c.graces_ended++;
        n->matrix_dirty = 1; /* the graced tasks no longer hold their room */
    }
    t->spec_bytes = spec;
    n->spec_bytes += spec;
    t->queued_at_ms = clock_wall_ms();
    t->created_mono_ns = clock_mono_ns();
    queue_hold(n->queue, t->id, 1); /* until its directory and files are ready */
    if (node__setup_start(n, t) != 0) {
        queue_cancel(n->queue, t->id);
        node__set_state(n, t, PROTO_TASK_FAILED, "set-up could not start: out of memory");
        node__finish(n, t);
        return;
    }
    /* A regular task that will start as soon as its directory is ready (its expected wait is
       0) needs no QUEUED status: its RUNNING one, a moment later, answers the create. Held
       back, and sent after all should it not start in the scheduling pass after its set-up
       (node__send_unsent). One message and one queue walk fewer per task on an idle node. */
    uint64_t wait_ms = 1;
    if (!t->nfiles && t->klass == PROTO_CLASS_REGULAR && n->cfg->quiet_queued &&
        node__expected_wait(n, t, &wait_ms) == 0) {
        t->unsent = wait_ms == 0;
        n->wait_known = t->id; /* its QUEUED status, if sent now, says the same */
        n->wait_known_ms = wait_ms;
    }
    node__set_state_ex(n, t, t->nfiles ? PROTO_TASK_STAGING : PROTO_TASK_QUEUED, NULL, !t->unsent);
    n->wait_known = 0;
    if (graces_ended) /* preempt them if regular work waits; the new task itself is held */
        node__schedule(n);
}

static void node__cancel(node_t *n, const void *peer, size_t plen, uint64_t req_id,
                         const proto_task_cancel_t *tc)
{
    if (node__fenced(n, tc->job_id, tc->epoch, peer, plen, req_id, PROTO_TASK_CANCEL))
        return;
    node__task_t *t = node__lookup(n, tc->job_id, tc->task_id, tc->attempt);
    if (!t) {
        node__reply_error(n, peer, plen, req_id, PROTO_TASK_CANCEL, ERR_NOTFOUND, "no such task");
        return;
    }
    if (!n->caller.admin && strcmp(t->user, n->caller.user) != 0) { /* issue 27 */
        n->c.rejected++;
        node__reply_error(n, peer, plen, req_id, PROTO_TASK_CANCEL, ERR_DENIED,
                          "permission denied: the task belongs to another user");
        return;
    }
    node__job(n, tc->job_id, peer, plen, req_id, tc->epoch, 1);
    t->req_id = req_id;
    if (proto_task_state_terminal(t->state)) {
        node__send_status(n, t);
        return;
    }
    char reason[PROTO_MAX_TEXT];
    snprintf(reason, sizeof reason, "cancelled%s%s", tc->reason ? ": " : "",
             tc->reason ? tc->reason : "");
    if (t->state == PROTO_TASK_RUNNING || t->spawning) { /* spawning: killed on its result */
        if (t->kill == NODE__KILL_NONE || t->kill == NODE__KILL_PREEMPT)
            t->kill = NODE__KILL_CANCEL;
        node__kill(n, t);
        return; /* reported when reaped */
    }
    queue_cancel(n->queue, t->id);
    node__set_state(n, t, PROTO_TASK_CANCELLED, reason);
    node__finish(n, t);
    node__schedule(n);
}

/* A downgrade (the job's spare tokens were reclaimed): the task runs on at the opportunistic
 * CPU weight and nice value; the queue keeps it from preemption until its grace ends, and
 * node__grace_tick looks again then. 0 or the queue's error. */
static int node__downgrade(node_t *n, node__task_t *t, uint64_t grace_ms)
{
    double now = node__now_s();
    double until = grace_ms ? now + (double)grace_ms / 1e3 : 0;
    int rc = queue_downgrade(n->queue, t->id, until);
    if (rc)
        return rc;
    t->klass = PROTO_CLASS_OPPORTUNISTIC;
    n->c.downgrades++;
    if (t->state == PROTO_TASK_RUNNING) {
        if (t->cg)
            taskcg_set_weight(n->cg, t->cg, 1);
        if (exec_renice_group(t->pid, (int)n->cfg->opportunistic_nice) != 0)
            log_warn("task %s/%s downgraded but its nice value stays", t->job->job_id, t->task_id);
    }
    n->grace_wake_s = queue_next_grace(n->queue, now);
    n->matrix_dirty = 1;
    log_info("task %s/%s downgraded to opportunistic (grace %llu ms)", t->job->job_id, t->task_id,
             (unsigned long long)grace_ms);
    return 0;
}

void node__swapped(node_t *n, const uint64_t *up, size_t k, uint64_t down)
{
    n->c.swaps++;
    for (size_t i = 0; i < k; i++) {
        node__task_t *t = map_getn(&n->byid, &up[i], sizeof up[i]);
        if (!t)
            continue;
        t->klass = PROTO_CLASS_REGULAR;
        n->c.swapped++;
        if (t->state == PROTO_TASK_RUNNING) {
            if (t->cg)
                taskcg_set_weight(n->cg, t->cg, 100);
            if (exec_renice_group(t->pid, 0) != 0)
                log_debug("task %s/%s made regular but its nice value stays (no privilege)",
                          t->job->job_id, t->task_id);
        }
        node__send_status(n, t); /* its JM moves its units to the regular class */
    }
    /* The queued task that gave up its regular place goes back to its JM, which places it
       again where it can start: kept here as opportunistic it waited behind every regular task
       of the node, unseen by the matrix (which counts regular work only) and by the JM's
       corrections (regular tasks only), while other nodes stood idle. It never ran: no work
       is lost and no start counted. */
    node__task_t *d = map_getn(&n->byid, &down, sizeof down);
    if (d) {
        log_info("task %s/%s returned to its job: %zu running opportunistic task%s of the job "
                 "made regular in its place instead of preempted",
                 d->job->job_id, d->task_id, k, k == 1 ? "" : "s");
        queue_cancel(n->queue, d->id);
        node__set_state(n, d, PROTO_TASK_CANCELLED,
                        "returned: its job's own opportunistic work here turned regular in its "
                        "place (no self-preemption)");
        node__finish(n, d);
    }
    n->grace_wake_s = queue_next_grace(n->queue, node__now_s());
    n->matrix_dirty = 1;
}

void node__traded(node_t *n, node__task_t *up, uint64_t down)
{
    n->c.trades++;
    node__task_t *d = map_getn(&n->byid, &down, sizeof down);
    node__task_t *both[2] = {up, d};
    for (int i = 0; i < 2; i++) { /* the upgrade first: its units over-count, never under */
        node__task_t *t = both[i];
        if (!t)
            continue;
        t->klass = i == 0 ? PROTO_CLASS_REGULAR : PROTO_CLASS_OPPORTUNISTIC;
        node__set_state(n, t, t->state,
                        i == 0 ? PROTO_REASON_TRADED ": regular in the place of its job's "
                                                     "lower-priority task"
                               : PROTO_REASON_TRADED ": opportunistic, its job's higher-priority "
                                                     "task regular in its place");
        mem_free(t->reason); /* said once: a later status is not a trade's */
        t->reason = NULL;
    }
    if (up && d)
        log_info("task %s/%s starts regular in the place of %s (a class trade in its job)",
                 up->job->job_id, up->task_id, d->task_id);
    n->matrix_dirty = 1;
}

void node__grace_tick(node_t *n)
{
    double now = node__now_s();
    if (n->grace_wake_s <= 0 || now < n->grace_wake_s)
        return;
    n->grace_wake_s = queue_next_grace(n->queue, now);
    n->matrix_dirty = 1;
    node__schedule(n);
}

static void node__upgrade(node_t *n, const void *peer, size_t plen, uint64_t req_id,
                          const proto_task_upgrade_t *tu)
{
    if (node__fenced(n, tu->job_id, tu->epoch, peer, plen, req_id, PROTO_TASK_UPGRADE))
        return;
    node__task_t *t = node__lookup(n, tu->job_id, tu->task_id, tu->attempt);
    if (!t) {
        node__reply_error(n, peer, plen, req_id, PROTO_TASK_UPGRADE, ERR_NOTFOUND, "no such task");
        return;
    }
    node__job(n, tu->job_id, peer, plen, req_id, tu->epoch, 1);
    t->req_id = req_id;
    if (tu->task_class == PROTO_CLASS_OPPORTUNISTIC) {
        if (!proto_task_state_terminal(t->state) && t->klass == PROTO_CLASS_REGULAR) {
            int rc = node__downgrade(n, t, tu->grace_ms);
            if (rc) {
                node__reply_error(n, peer, plen, req_id, PROTO_TASK_UPGRADE, rc, err_text(rc));
                return;
            }
        }
    } else if (!proto_task_state_terminal(t->state) && t->klass == PROTO_CLASS_OPPORTUNISTIC) {
        int rc = queue_upgrade(n->queue, t->id);
        if (rc) {
            node__reply_error(n, peer, plen, req_id, PROTO_TASK_UPGRADE, rc, err_text(rc));
            return;
        }
        t->klass = PROTO_CLASS_REGULAR;
        n->c.upgrades++;
        if (t->state == PROTO_TASK_RUNNING) {
            /* a preemption already signalled stands: the task is reported preempted */
            if (t->cg)
                taskcg_set_weight(n->cg, t->cg, 100);
            if (exec_renice_group(t->pid, 0) != 0)
                log_warn("task %s/%s upgraded but its nice value stays (no privilege)",
                         t->job->job_id, t->task_id);
        }
        n->matrix_dirty = 1;
    }
    node__send_status(n, t);
    node__schedule(n);
}

/* TASK_ESTIMATE: the JM refined a live task's R; the queue's simulation (its expected waits,
 * the matrix, backfill) takes it from now on. No reply (an older epoch: ERROR). */
static void node__estimate(node_t *n, const void *peer, size_t plen, uint64_t req_id,
                           const proto_task_estimate_t *te)
{
    if (node__fenced(n, te->job_id, te->epoch, peer, plen, req_id, PROTO_TASK_ESTIMATE))
        return;
    node__task_t *t = node__lookup(n, te->job_id, te->task_id, te->attempt);
    if (!t || proto_task_state_terminal(t->state) ||
        queue_set_estimate(n->queue, t->id, (double)te->runtime_ms / 1000.0) != 0) {
        n->c.estimates_ignored++;
        return;
    }
    n->c.estimates++;
    n->matrix_dirty = 1;
    node__schedule_soon(n); /* a reservation may have moved to now (backfill) */
}

/* TASK_QUERY: every remembered task's status, then the count. A query with an epoch makes the
 * node remember the job even when it has no task here, so that a create from an older JM that
 * arrives after the query is refused (the resumed JM schedules only what the answer lacks). */
static void node__query(node_t *n, const void *peer, size_t plen, uint64_t req_id,
                        const proto_task_query_t *q)
{
    if (node__fenced(n, q->job_id, q->epoch, peer, plen, req_id, PROTO_TASK_QUERY))
        return;
    node__job_t *j = map_get(&n->jobs, q->job_id);
    if (!j && q->epoch > 0 && n->jobs.len >= NODE__MAX_JOBS) {
        n->c.refused_full++;
        node__reply_error(n, peer, plen, req_id, PROTO_TASK_QUERY, ERR_FULL,
                          "too many jobs remembered");
        return;
    }
    if (j || q->epoch > 0) {
        j = node__job(n, q->job_id, peer, plen, req_id, q->epoch, 0);
        if (!j) {
            node__reply_error(n, peer, plen, req_id, PROTO_TASK_QUERY, ERR_NOMEM, "out of memory");
            return;
        }
        node__job_reply(j, q->reply_endpoint);
    }
    n->c.queries++;
    uint32_t sent = 0;
    if (j) {
        size_t it = 0;
        void *v;
        while (map_next(&n->tasks, &it, NULL, NULL, &v)) {
            node__task_t *t = v;
            if (t->job == j) {
                node__status(n, t, req_id);
                sent++;
            }
        }
    }
    proto_msg_t m;
    proto_msg_init(&m, PROTO_TASK_QUERY_REPLY);
    m.req_id = req_id;
    m.task_query_reply.job_id = q->job_id;
    m.task_query_reply.node = n->cfg->name;
    m.task_query_reply.tasks = sent;
    char err[256];
    if (proto_encode(&m, &n->buf, err, sizeof err) != 0) {
        log_error("query of %s: %s", q->job_id, err);
        return;
    }
    const char *reply = q->reply_endpoint && q->reply_endpoint[0] ? q->reply_endpoint : NULL;
    if (j)
        n->send(n->send_arg, j->peer, j->plen, j->reply, n->buf.data, n->buf.len);
    else
        n->send(n->send_arg, peer, plen, reply, n->buf.data, n->buf.len);
}

/* Kills (running) or ends (queued, staging) one live task of a job the RM says is over. */
static void node__reap_task(node_t *n, node__task_t *t, proto_task_state_t s, const char *reason)
{
    n->c.reaped++;
    if (t->state == PROTO_TASK_RUNNING || t->spawning) {
        if (t->kill == NODE__KILL_NONE || t->kill == NODE__KILL_PREEMPT) {
            t->kill = NODE__KILL_REAP;
            t->reap_state = s;
            char *r = mem_strdup(reason);
            if (r) {
                mem_free(t->reason);
                t->reason = r;
            }
        }
        node__kill(n, t);
        return; /* reported when reaped (node_reap) */
    }
    queue_cancel(n->queue, t->id);
    node__set_state(n, t, s, reason);
    node__finish(n, t);
}

static void node__reap_job(void *arg, const orphan_verdict_t *v)
{
    node_t *n = arg;
    node__job_t *j = map_get(&n->jobs, v->job_id);
    if (!j)
        return;
    static const char *const what[] = {"unknown to the RM", "active",
                                       "ended (done)",      "ended (failed)",
                                       "ended (cancelled)", "expired"};
    char reason[PROTO_MAX_NAME + 96];
    snprintf(reason, sizeof reason, "job %s %s: reaped after %llu s", j->job_id,
             v->state <= ORPHAN_EXPIRED ? what[v->state] : "over",
             (unsigned long long)((v->waited_ms + 500) / 1000));
    proto_task_state_t s = v->ended ? PROTO_TASK_CANCELLED : PROTO_TASK_LOST;
    log_info("%s: killing its %zu live task%s", reason, j->nlive, j->nlive == 1 ? "" : "s");
    size_t it = 0;
    void *t;
    while (map_next(&n->byid, &it, NULL, NULL, &t)) /* node__finish deletes: allowed */
        if (((node__task_t *)t)->job == j && !proto_task_state_terminal(((node__task_t *)t)->state))
            node__reap_task(n, t, s, reason);
}

void node_jobs_ack(node_t *n, const proto_heartbeat_ack_t *ack, uint64_t now_ms)
{
    for (uint32_t i = 0; i < ack->njobs; i++) {
        const proto_job_info_t *ji = &ack->jobs[i];
        node__job_t *j = map_get(&n->jobs, ji->job_id);
        if (!j || j->nlive == 0) { /* nothing of it runs here (any more) */
            orphan_forget(n->orphan, ji->job_id);
            continue;
        }
        node__raise(j, ji->epoch, "the RM");
        if (orphan_note(n->orphan, ji->job_id, ji->state, now_ms) != 0)
            n->c.acks_ignored++;
    }
    if (orphan_due(n->orphan, now_ms, node__reap_job, n) > 0) {
        n->matrix_dirty = 1;
        node__schedule(n);
    }
}

void node_count_draining(node_t *n)
{
    n->c.creates_refused[NODE_REFUSED_DRAINING]++;
}

void node_count_rejected(node_t *n)
{
    n->c.requests++;
    n->c.rejected++;
}

void node_set_caller(node_t *n, const char *user, uid_t uid, gid_t gid, int admin,
                     const char *refuse)
{
    snprintf(n->caller.user, sizeof n->caller.user, "%s", user != NULL ? user : "");
    n->caller.uid = uid;
    n->caller.gid = gid;
    n->caller.admin = admin;
    snprintf(n->caller.refuse, sizeof n->caller.refuse, "%s", refuse != NULL ? refuse : "");
}

void node_handle(node_t *n, const void *peer, size_t plen, const void *data, size_t len)
{
    n->c.requests++;
    proto_msg_t m;
    char err[256];
    if (plen == 0 || plen > NODE__PEER_MAX) {
        n->c.rejected++;
        return;
    }
    int rc = proto_decode(data, len, &m, &n->pstats, err, sizeof err);
    if (rc) {
        n->c.rejected++;
        log_debug("rejected a request: %s", err);
        node__reply_error(n, peer, plen, 0, PROTO_TYPE_NONE, rc, err);
        return;
    }
    if (m.type == PROTO_TASK_CREATE && n->caller.refuse[0]) {
        /* issue 27: no such user here, root, or a revoked key; refused before the job is
           remembered, so that it names no owner */
        n->c.creates_refused[NODE_REFUSED_USER]++;
        node__reply_error(n, peer, plen, m.req_id, m.type, ERR_DENIED, n->caller.refuse);
        proto_msg_close(&m);
        return;
    }
    /* issue 27: a job's tasks, statuses and epoch are its user's (and the admins') alone */
    const char *jid = m.type == PROTO_TASK_CREATE     ? m.task_create.job_id
                      : m.type == PROTO_TASK_CANCEL   ? m.task_cancel.job_id
                      : m.type == PROTO_TASK_UPGRADE  ? m.task_upgrade.job_id
                      : m.type == PROTO_TASK_QUERY    ? m.task_query.job_id
                      : m.type == PROTO_TASK_ESTIMATE ? m.task_estimate.job_id
                                                      : NULL;
    node__job_t *owner = jid != NULL && !n->caller.admin ? map_get(&n->jobs, jid) : NULL;
    if (owner != NULL && strcmp(owner->user, n->caller.user) != 0) {
        n->c.rejected++;
        if (m.type == PROTO_TASK_CREATE)
            n->c.creates_refused[NODE_REFUSED_USER]++;
        char why[160];
        snprintf(why, sizeof why, "permission denied: job %s belongs to another user", jid);
        node__reply_error(n, peer, plen, m.req_id, m.type, ERR_DENIED, why);
        proto_msg_close(&m);
        return;
    }
    switch (m.type) {
    case PROTO_TASK_CREATE:
        node__create(n, peer, plen, m.req_id, &m.task_create);
        break;
    case PROTO_TASK_CANCEL:
        node__cancel(n, peer, plen, m.req_id, &m.task_cancel);
        break;
    case PROTO_TASK_UPGRADE:
        node__upgrade(n, peer, plen, m.req_id, &m.task_upgrade);
        break;
    case PROTO_TASK_QUERY:
        node__query(n, peer, plen, m.req_id, &m.task_query);
        break;
    case PROTO_TASK_ESTIMATE:
        node__estimate(n, peer, plen, m.req_id, &m.task_estimate);
        break;
    default:
        n->c.rejected++;
        node__reply_error(
            n, peer, plen, m.req_id, m.type, ERR_UNKNOWN_TYPE,
            "a process node answers TASK_CREATE, TASK_CANCEL, TASK_UPGRADE, TASK_QUERY, "
            "TASK_ESTIMATE");
        break;
    }
    proto_msg_close(&m);
}

static void node__count_path(void *arg, const char *path)
{
    (void)path;
    (*(size_t *)arg)++;
}

static void node__add_path(void *arg, const char *path)
{
    bloom_add(arg, path, strlen(path));
}

/* The cache advertisement (issue 15): a Bloom filter of the source paths the cache holds,
 * rebuilt when the cache learnt a path since; sized for a 1% false-positive rate within
 * PROTO_MAX_CACHE_FILTER bytes (4096 paths, the stage memo's bound, fit at about 2%). */
static void node__cache_filter(node_t *n)
{
    uint64_t gen = stage_generation(n->stage) + 1;
    if (gen == n->hb_filter_gen)
        return;
    size_t count = 0;
    stage_paths(n->stage, node__count_path, &count);
    n->hb_filter_len = 0;
    uint32_t m = 0;
    unsigned k = 0;
    bloom_t *b = NULL;
    if (count == 0 ||
        bloom_size(count, 0.01, PROTO_MAX_CACHE_FILTER - BLOOM_HEADER_BYTES, &m, &k) != 0 ||
        bloom_new(m, k, &b) != 0)
        return;
    if (!n->hb_filter && !(n->hb_filter = mem_alloc(PROTO_MAX_CACHE_FILTER))) {
        bloom_destroy(&b);
        return;
    }
    stage_paths(n->stage, node__add_path, b);
    size_t len = 0;
    if (bloom_encode(b, n->hb_filter, PROTO_MAX_CACHE_FILTER, &len) == 0) {
        n->hb_filter_len = (uint32_t)len;
        n->hb_filter_gen = gen;
    }
    bloom_destroy(&b);
}

void node_heartbeat(node_t *n, proto_heartbeat_t *hb)
{
    queue_stats_t st;
    queue_stats(n->queue, &st);
    memset(hb, 0, sizeof *hb);
    hb->name = n->cfg->name;
    hb->rack = n->cfg->rack;
    hb->endpoint = n->cfg->advertise;
    hb->boot_id = n->boot_id;
    hb->seq = ++n->hb_seq;
    hb->cpu = n->cfg->cpus;
    hb->mem_mb = n->cfg->memory >> 20;
    hb->used_cpu = st.cpu_used;
    hb->used_mem_mb = (uint64_t)st.mem_used;
    hb->running_regular = (uint32_t)st.regular_running;
    hb->running_opportunistic = (uint32_t)st.opportunistic_running;
    hb->queued_regular = (uint32_t)st.regular_queued;
    hb->queued_opportunistic = (uint32_t)st.opportunistic_queued;
    node__matrix_wire(n, &hb->matrix, false);
    hb->timestamp_ms = clock_wall_ms();
    node__cache_filter(n);
    if (n->hb_filter_len) {
        hb->cache_filter = n->hb_filter;
        hb->cache_filter_len = n->hb_filter_len;
    }
    if (!n->hb_jobs && !(n->hb_jobs = mem_calloc(PROTO_MAX_NODE_JOBS, sizeof *n->hb_jobs)))
        return; /* no room: the heartbeat names no job this time */
    uint64_t round = ++n->hb_round;
    size_t it = 0;
    void *v;
    while (hb->njobs < PROTO_MAX_NODE_JOBS && map_next(&n->byid, &it, NULL, NULL, &v)) {
        node__task_t *t = v; /* queued, staging or running */
        if (t->job->hb_round == round || proto_task_state_terminal(t->state))
            continue;
        t->job->hb_round = round;
        n->hb_jobs[hb->njobs++] = t->job->job_id;
    }
    hb->jobs = n->hb_jobs;
}

void node_refresh(node_t *n)
{
    /* Every running task's status (with its CPU time and bytes read so far: progress for the
     * JM's straggler detection), and for a job with none running, one of its queued tasks'
     * (the matrix refresh of Apollo §3.2). */
    uint64_t round = ++n->refresh_round;
    size_t it = 0;
    void *v;
    while (map_next(&n->byid, &it, NULL, NULL, &v)) { /* live tasks only */
        node__task_t *t = v;
        if (t->state != PROTO_TASK_RUNNING)
            continue;
        t->job->refreshed = round;
        node__send_status(n, t);
    }
    it = 0;
    while (map_next(&n->byid, &it, NULL, NULL, &v)) {
        node__task_t *t = v;
        if (t->job->refreshed == round || proto_task_state_terminal(t->state))
            continue;
        t->job->refreshed = round;
        node__send_status(n, t);
    }
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
