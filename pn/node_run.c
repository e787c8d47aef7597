/* node_run.c - the PN's processes: preparing a task's directory, argv and environment,
 * starting what the queue picks, preempting, reaping and memory limits (setting directories up,
 * staging files into them and recycling them: node_dir.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "pn/exec.h"
#include "pn/node_internal.h"
#include "pn/output.h"

/* File names from untrusted ids: keep [A-Za-z0-9._-], at most 48 bytes. */
static void node__safe(char *out, size_t cap, const char *in)
{
    size_t k = 0;
    for (; *in && k + 1 < cap && k < 48; in++) {
        char c = *in;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_' || (c == '.' && k > 0);
        out[k] = ok ? c : '_';
        k++;
    }
    out[k] = 0;
}

static char *node__fmt_env(const char *k, const char *v)
{
    size_t kl = strlen(k), vl = strlen(v);
    char *e = mem_alloc(kl + vl + 2);
    if (e) {
        memcpy(e, k, kl);
        e[kl] = '=';
        memcpy(e + kl + 1, v, vl + 1);
    }
    return e;
}

int node__prepare(node_t *n, node__task_t *t, const proto_task_create_t *tc, char *msg, size_t cap)
{
    char sj[64], st[64], path[4096];
    node__safe(sj, sizeof sj, tc->job_id);
    node__safe(st, sizeof st, tc->task_id);
    snprintf(path, sizeof path, "%s/%llu-%s-%s-%u", n->tasks_dir, (unsigned long long)t->id, sj, st,
             tc->attempt);
    if (!(t->dir = mem_strdup(path)))
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    if (tc->cwd && tc->cwd[0]) {
        if (tc->cwd[0] == '/')
            snprintf(path, sizeof path, "%s", tc->cwd);
        else
            snprintf(path, sizeof path, "%s/%s", t->dir, tc->cwd);
        if (!(t->cwd = mem_strdup(path)))
            return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    }
    t->argv = mem_calloc((size_t)tc->argc + 1, sizeof *t->argv);
    if (!t->argv)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < tc->argc; i++)
        if (!(t->argv[i] = mem_strdup(tc->argv[i])))
            return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    /* The environment: a small fixed base (not the PN's own), the task's identity, then the
     * task's env, later entries replacing earlier ones of the same name. */
    size_t ne = 0, cape = (size_t)tc->nenv + 10;
    t->envp = mem_calloc(cape + 1, sizeof *t->envp);
    if (!t->envp)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    char att[16];
    snprintf(att, sizeof att, "%u", tc->attempt);
    const char *base[][2] = {
        {"PATH", n->cfg->task_path},
        {"HOME", t->dir},
        {"TMPDIR", t->dir},
        {"PADDOCK_TASK_DIR", t->dir},
        {"PADDOCK_JOB_ID", tc->job_id},
        {"PADDOCK_TASK_ID", tc->task_id},
        {"PADDOCK_ATTEMPT", att},
        {"PADDOCK_NODE", n->cfg->name},
        {"LANG", "C.UTF-8"},
    };
    for (size_t i = 0; i < sizeof base / sizeof *base; i++)
        if (!(t->envp[ne++] = node__fmt_env(base[i][0], base[i][1])))
            return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < tc->nenv; i++) {
        size_t kl = strlen(tc->env[i].key);
        size_t slot = ne;
        for (size_t k = 0; k < ne; k++)
            if (strncmp(t->envp[k], tc->env[i].key, kl) == 0 && t->envp[k][kl] == '=')
                slot = k;
        char *e = node__fmt_env(tc->env[i].key, tc->env[i].value ? tc->env[i].value : "");
        if (!e)
            return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        if (slot < ne)
            mem_free(t->envp[slot]);
        else
            ne++;
        t->envp[slot] = e;
    }
    if (tc->nfiles) {
        t->files = mem_calloc(tc->nfiles, sizeof *t->files);
        if (!t->files)
            return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
        for (uint32_t i = 0; i < tc->nfiles; i++, t->nfiles++)
            if (!(t->files[i].path = mem_strdup(tc->files[i].path)))
                return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    }
    return 0;
}

/* The lines noted since the last write, in one write (a pass's starts come in batches). */
void node__pgids_flush(node_t *n)
{
    if (n->pgids_len > 0 && n->pgids_fd >= 0 &&
        write(n->pgids_fd, n->pgids_buf, n->pgids_len) != (ssize_t)n->pgids_len &&
        !n->pgids_warned++) /* once: a full disk would say it every pass */
        log_warn("tasks.pgids: %s: a later boot may not find every task to kill", strerror(errno));
    n->pgids_len = 0;
}

/* WORK/tasks.pgids: the process group of every task started, with its start time, so that
 * the next boot of the PN kills what an unclean stop (SIGKILL, a crash) left running: tasks
 * nobody tracks any more would finish their work a second time beside the re-run (issue 14).
 * Appended without fsync (a machine crash kills the tasks too) at the end of the loop pass that
 * started them (a PN killed within the pass loses that pass's lines: microseconds); truncated
 * when no task runs. */
static void node__note_pgid(node_t *n, pid_t pid, const exec_started_t *at)
{
    if (n->pgids_fd < 0)
        return;
    if (n->bypid.len <= 1 && n->pgids_lines > 1024) { /* nothing else runs: start afresh */
        n->pgids_len = 0;                             /* the pass's other starts have ended too */
        if (ftruncate(n->pgids_fd, 0) == 0)
            n->pgids_lines = 0;
    }
    /* The start time's bounds from the clock, not /proc: checked once against /proc (the
     * leader is not reaped yet, so it is there), and /proc read for every task should they
     * ever disagree (a kernel that counts start times on another clock). */
    exec_started_t b = *at;
    if (n->start_check <= 0) {
        unsigned long long start = exec_start_time(pid);
        if (n->start_check == 0 && start) {
            n->start_check = start >= at->lo && start <= at->hi ? 1 : -1;
            if (n->start_check < 0)
                log_warn("process start times disagree with CLOCK_BOOTTIME: reading /proc");
        }
        if (n->start_check < 0)
            b.lo = b.hi = start;
    }
    if (sizeof n->pgids_buf - n->pgids_len < 96)
        node__pgids_flush(n);
    int len = snprintf(n->pgids_buf + n->pgids_len, sizeof n->pgids_buf - n->pgids_len,
                       "%d %llu %llu\n", (int)pid, b.lo, b.hi);
    if (len > 0 && (size_t)len < sizeof n->pgids_buf - n->pgids_len) {
        n->pgids_len += (size_t)len;
        n->pgids_lines++;
    }
    node__pass_end_arm(n);
    if (!n->pass_end_armed) /* no handle (or stopping): at once */
        node__pgids_flush(n);
}

/* The second half of a start, on the loop thread: the spawn's outcome (from exec_spawn_timed
 * here, or from a spawner thread). */
static void node__started(node_t *n, node__task_t *t, int rc, pid_t pid, const exec_started_t *at,
                          uint64_t t0, uint64_t t1, const char *why, int nice)
{
    char msg[512];
    int32_t key = pid;
    if (!rc && map_putn(&n->bypid, &key, sizeof key, t, NULL) != 0) {
        exec_kill_group(pid, SIGKILL);
        rc = ERR_NOMEM;
        why = "out of memory";
    }
    if (rc) {
        snprintf(msg, sizeof msg, "%s", why && why[0] ? why : err_text(rc));
        n->c.spawn_failures++;
        queue_finish(n->queue, t->id);
        node__set_state(n, t, PROTO_TASK_FAILED, msg);
        node__finish(n, t);
        return;
    }
    int opp = t->klass == PROTO_CLASS_OPPORTUNISTIC;
    t->pid = pid;
    n->c.starts[opp]++;
    metrics_hist_observe(&n->spawn_hist, (double)(t1 - t0) / 1e9);
    if (t->created_mono_ns)
        metrics_hist_observe(&n->delay_hist, (double)(t1 - t->created_mono_ns) / 1e9);
    node__note_pgid(n, pid, at);
    int want = opp ? (int)n->cfg->opportunistic_nice : 0;
    if (want != nice) /* downgraded or upgraded while a spawner thread started it */
        (void)exec_renice_group(pid, want);
    if (n->cg) {
        char cg[512] = "";
        if (taskcg_create(n->cg, t->id, cg, sizeof cg) == 0 && taskcg_attach(cg, pid) == 0) {
            t->cg = mem_strdup(cg);
            if (opp)
                taskcg_set_weight(n->cg, cg, 1);
        } else {
            log_warn("task %s/%s: cannot put it in a cgroup under %s", t->job->job_id, t->task_id,
                     n->cfg->cgroup_base);
        }
        if (!t->cg && cg[0])
            rmdir(cg);
    }
    node__running(n, t);
}

/* An exit reaped before its spawner's result arrived (a short task): kept until the result
 * names the pid. Emptied whenever no spawn is in flight (what is left was a grandchild's). */
static void node__park_exit(node_t *n, const exec_exit_t *e)
{
    if (n->nparked == n->capparked) {
        size_t cap = n->capparked ? n->capparked * 2 : 16;
        exec_exit_t *p = mem_reallocarray(n->parked, cap, sizeof *p);
        if (!p) {
            log_warn("pid %d exited before its start was recorded, and is lost", (int)e->pid);
            return;
        }
        n->parked = p;
        n->capparked = cap;
    }
    n->parked[n->nparked++] = *e;
}

static void node__exited(node_t *n, node__task_t *t, const exec_exit_t *e, int finish);

void node__spawned(void *arg, const spawner_result_t *r)
{
    node_t *n = arg;
    node__task_t *t = map_getn(&n->byid, &r->id, sizeof r->id);
    if (!t) { /* cannot happen: a spawning task is never finished before its result */
        if (r->rc == 0)
            exec_kill_group(r->pid, SIGKILL);
        return;
    }
    t->spawning = 0;
    node__started(n, t, r->rc, r->pid, &r->at, r->t0_ns, r->t1_ns, r->msg, t->spawn_nice);
    if (r->rc == 0 && t->pid == r->pid) {
        for (size_t i = 0; i < n->nparked; i++)
            if (n->parked[i].pid == r->pid) { /* it has ended already */
                exec_exit_t e = n->parked[i];
                n->parked[i] = n->parked[--n->nparked];
                node__exited(n, t, &e, 1);
                node__schedule_soon(n);
                goto done;
            }
        if (t->kill != NODE__KILL_NONE) /* cancelled, preempted or reaped meanwhile */
            node__kill(n, t);
    }
done:
    if (spawner_pending(n->spawner) == 0)
        n->nparked = 0;
}

static void node__start(node_t *n, node__task_t *t)
{
    char out[4200], errp[4200], msg[512];
    int dfd;
    const char *name = node__at(n, t->dir, &dfd); /* relative to WORK/tasks, held open */
    snprintf(out, sizeof out, "%s/stdout", name);
    snprintf(errp, sizeof errp, "%s/stderr", name);
    int opp = t->klass == PROTO_CLASS_OPPORTUNISTIC;
    exec_spec_t sp = {.argv = t->argv,
                      .envp = t->envp,
                      .cwd = t->cwd ? t->cwd : t->dir,
                      .stdout_path = out,
                      .stderr_path = errp,
                      .nice = opp ? (int)n->cfg->opportunistic_nice : 0,
                      .shim = n->shim,
                      .uid = t->uid,
                      .gid = t->gid,
                      .at_fd = dfd >= 0 ? dfd : 0};
    if (t->dir_lazy) { /* a spare renamed into place here, else made by the spawn */
        t->dir_lazy = 0;
        if (node__spare_take(n, t->dir, t->uid) != 0)
            sp.make_dir = name;
    }
    t->start_mono_ms = clock_mono_ms();
    if (n->spawner && spawner_submit(n->spawner, t->id, &sp) == 0) {
        t->spawning = 1; /* node__spawned finishes the start */
        t->spawn_nice = sp.nice;
        return;
    }
    pid_t pid = 0;
    exec_started_t at = {0, 0};
    uint64_t t0 = clock_mono_ns();
    int rc = exec_spawn_timed(&sp, &pid, &at, msg, sizeof msg);
    uint64_t t1 = clock_mono_ns();
    node__started(n, t, rc, pid, &at, t0, t1, msg, sp.nice);
}

static double node__draw(node_t *n)
{
    /* the shell's random source for the queue's opportunistic pick */
    return rng_unif(&n->rng);
}

static void node__on_check(uv_check_t *h)
{
    node_t *n = h->data;
    uv_check_stop(h);
    n->sched_pending = 0;
    node__schedule(n);
}

static void node__on_pass_end(uv_prepare_t *h)
{
    node_t *n = h->data;
    uv_prepare_stop(h);
    n->pass_end_armed = 0;
    node__pass_flush(n);
}

void node__pass_end_arm(node_t *n)
{
    if (n->pass_end_armed || n->stopping)
        return;
    if (!n->pass_end) {
        uv_prepare_t *h = mem_calloc(1, sizeof *h);
        if (!h || uv_prepare_init(n->loop, h) != 0) {
            mem_free(h);
            return;
        }
        h->data = n;
        n->pass_end = h;
    }
    if (uv_prepare_start(n->pass_end, node__on_pass_end) == 0)
        n->pass_end_armed = 1;
}

/* The end of a loop pass (just before it waits for events again): each task that started in
 * it and still runs gets its RUNNING status now; one that ended in the same pass (a short
 * task: its spawn's result and its exit seen together) has had one terminal status instead,
 * which carries its start time (a JM takes a terminal status without a RUNNING before it, as
 * for a task that ran between two statuses). And the directories given back go to the pool in
 * one request. */
void node__pass_flush(node_t *n)
{
    if (n->sched_pending) {
        /* asked for in the check phase itself (a create handled there whose directory was
           ready at once): a check handle started then runs only after the loop's next wait,
           up to a timer's period later, so the pass is scheduled here before it waits */
        uv_check_stop(n->sched_check);
        n->sched_pending = 0;
        node__schedule(n);
    }
    node__handoffs_flush(n);
    for (size_t i = 0; i < n->nrunq; i++) {
        node__task_t *t = map_getn(&n->byid, &n->runq[i], sizeof n->runq[i]);
        if (!t || !t->running_unsent)
            continue; /* ended, or its status went out another way meanwhile */
        if (t->unsent)
            n->c.queued_unsent++; /* this status answers the create instead */
        node__send_status(n, t);
    }
    n->nrunq = 0;
    node__pgids_flush(n);
    node__statuses_flush(n);
    node__trash_flush(n, 0);
}

void node__schedule_soon(node_t *n)
{
    if (n->sched_pending)
        return;
    if (!n->sched_check) {
        uv_check_t *h = mem_calloc(1, sizeof *h);
        if (!h || uv_check_init(n->loop, h) != 0) {
            mem_free(h);
            node__schedule(n); /* no handle: at once */
            return;
        }
        h->data = n;
        n->sched_check = h;
    }
    if (uv_check_start(n->sched_check, node__on_check) != 0) {
        node__schedule(n);
        return;
    }
    n->sched_pending = 1;
    node__pass_end_arm(n); /* in case this is the check phase already (node__pass_flush) */
}

void node__schedule(node_t *n)
{
    if (n->scheduling)
        return;
    n->scheduling = 1;
    spawner_defer(n->spawner); /* the pass's spawns wake a spawner thread once, below */
    for (;;) {
        queue_task_t qt;
        queue_pick_info_t info;
        int rc = queue_pick_trade(n->queue, node__now_s(), node__draw(n), &qt, &info);
        if (rc == 0) {
            node__task_t *t = map_getn(&n->byid, &qt.id, sizeof qt.id);
            n->c.reorders += info.reordered != 0;
            if (info.traded)
                node__traded(n, t, info.traded_id);
            if (t)
                node__start(n, t);
            else
                queue_finish(n->queue, qt.id);
            continue;
        }
        if (rc == ERR_NOTFOUND) {
            uint64_t ids[64], down = 0;
            size_t k = queue_swap(n->queue, node__now_s(), ids, 64, &down);
            if (k > 0) { /* the job's own opportunistic work turned regular: nothing killed */
                node__swapped(n, ids, k, down);
                continue;
            }
            k = queue_preempt(n->queue, node__now_s(), ids, 64);
            for (size_t i = 0; i < k; i++) {
                node__task_t *t = map_getn(&n->byid, &ids[i], sizeof ids[i]);
                if (t && (t->pid > 0 || t->spawning)) { /* spawning: killed on its result */
                    if (t->kill == NODE__KILL_NONE)
                        t->kill = NODE__KILL_PREEMPT;
                    node__kill(n, t);
                }
            }
        }
        break;
    }
    spawner_kick(n->spawner);
    n->scheduling = 0;
    if (n->nunsent)
        node__send_unsent(n);
}

/* A task's process exited: its state from how, and its end. `finish`: it is still in the
 * queue (node_reap takes it out itself, for a batch). */
static void node__exited(node_t *n, node__task_t *t, const exec_exit_t *e, int finish)
{
    exec_kill_group(e->pid, SIGKILL); /* stragglers left in the task's group */
    if (t->cg) {                      /* and in its cgroup, setsid or not */
        taskcg_kill(t->cg);
        node__trash_cg(n, t->cg);
        mem_free(t->cg);
        t->cg = NULL;
    }
    if (finish)
        queue_finish(n->queue, t->id);
    t->exit_code = e->exit_code;
    t->signal = e->signal;
    t->cpu_time_ms = e->cpu_time_ms;
    if (e->maxrss_kb > t->peak_rss_kb)
        t->peak_rss_kb = e->maxrss_kb;
    char reason[256];
    proto_task_state_t s;
    const char *why = NULL;
    /* A task that exited on its own with 0 finished its work before a kill reached it (it
     * raced the preemption or cancel): it succeeded, and must not be run again. */
    int kill = e->signal == 0 && e->exit_code == 0 ? NODE__KILL_NONE : t->kill;
    switch (kill) {
    case NODE__KILL_CANCEL:
        s = PROTO_TASK_CANCELLED;
        why = "cancelled";
        break;
    case NODE__KILL_PREEMPT:
        s = PROTO_TASK_PREEMPTED;
        why = "preempted by regular work";
        break;
    case NODE__KILL_REAP:
        s = t->reap_state;
        why = t->reason; /* set when the reaping began */
        break;
    case NODE__KILL_MEMORY:
        s = PROTO_TASK_FAILED;
        snprintf(reason, sizeof reason,
                 PROTO_REASON_MEMORY ": rss %llu KiB over the request of %llu MiB",
                 (unsigned long long)t->kill_rss_kb, (unsigned long long)t->mem_mb);
        why = reason;
        n->c.memory_kills++;
        break;
    default:
        if (e->exit_code == 0) {
            s = PROTO_TASK_SUCCEEDED;
        } else {
            s = PROTO_TASK_FAILED;
            if (e->signal)
                snprintf(reason, sizeof reason, "killed by signal %d (%s)", e->signal,
                         strsignal(e->signal));
            else
                snprintf(reason, sizeof reason, "exit code %d", e->exit_code);
            output_reason_append(t->dir, reason, sizeof reason); /* what it said last */
            why = reason;
        }
        break;
    }
    node__set_state(n, t, s, why);
    node__finish(n, t);
}

void node_reap(node_t *n)
{
    /* Exits are taken in batches: every one of a batch leaves the queue first, then their
     * statuses go out, so one fresh matrix (computed for the first) holds for them all
     * (node__matrix_refresh): not one simulation of the queue per ended task. */
    enum { BATCH = 64 };
    exec_exit_t es[BATCH];
    node__task_t *ts[BATCH];
    int any = 0;
    n->reaping = 1;
    for (;;) {
        size_t k = 0;
        exec_exit_t e;
        while (k < BATCH && exec_reap(&e)) {
            int32_t key = e.pid;
            node__task_t *t = map_getn(&n->bypid, &key, sizeof key);
            if (!t) {
                /* an orphaned grandchild (we are a subreaper), or a task whose spawner thread
                 * has not reported it yet */
                if (spawner_pending(n->spawner) > 0)
                    node__park_exit(n, &e);
                continue;
            }
            queue_finish(n->queue, t->id);
            es[k] = e;
            ts[k++] = t;
        }
        if (k == 0)
            break;
        any = 1;
        n->matrix_batch = 1;
        n->matrix_batch_fresh = 0;
        for (size_t i = 0; i < k; i++)
            node__exited(n, ts[i], &es[i], 0);
        n->matrix_batch = 0;
        if (k < BATCH)
            break;
    }
    n->reaping = 0;
    if (n->ntrash) { /* the batch's directories: one request to the pool, at the pass's end */
        node__pass_end_arm(n);
        if (!n->pass_end_armed)
            node__trash_flush(n, 0);
    }
    if (any)
        node__schedule_soon(n);
}

void node_poll_memory(node_t *n)
{
    node__grace_tick(n); /* on the same short timer: the grace ends within one poll */
    size_t cnt = n->bypid.len;
    if (!cnt)
        return;
    /* A pass over /proc reads every process of the machine: not made while every running
     * task started less than half a poll ago (a burst of short tasks), so a task is looked at
     * within one and a half polls of its start. */
    uint64_t now = clock_mono_ms(), young = (uint64_t)n->cfg->memory_poll_ms / 2;
    size_t it0 = 0, old = 0;
    void *v0;
    while (!old && map_next(&n->bypid, &it0, NULL, NULL, &v0))
        old = now - ((node__task_t *)v0)->start_mono_ms >= young;
    if (!old || now < n->mem_next_ms)
        return;
    pid_t *pg = mem_calloc(cnt, sizeof *pg);
    exec_usage_t *use = mem_calloc(cnt, sizeof *use);
    node__task_t **ts = mem_calloc(cnt, sizeof *ts);
    if (pg && use && ts) {
        size_t it = 0, k = 0;
        void *v;
        while (k < cnt && map_next(&n->bypid, &it, NULL, NULL, &v)) {
            ts[k] = v;
            pg[k] = ts[k]->pid;
            k++;
        }
        /* bytes read only matter to the periodic statuses: read at most once a second */
        int io = now - n->io_mono_ms >= 1000;
        if (io)
            n->io_mono_ms = now;
        /* The pass reads every process of the machine: its cost grows with what else runs
           there, not with the PN's tasks. It is held to about a twentieth of the loop thread's
           time: the next pass waits twenty times what this one took of its CPU. */
        struct timespec c0, c1;
        int timed = clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0) == 0;
        int scanned = exec_usage_scan(pg, use, k, io) == 0;
        if (timed && clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1) == 0) {
            int64_t ns = (int64_t)(c1.tv_sec - c0.tv_sec) * 1000000000 + (c1.tv_nsec - c0.tv_nsec);
            n->mem_next_ms = now + (ns > 0 ? (uint64_t)ns * 20 / 1000000 : 0);
        }
        if (scanned) {
            for (size_t i = 0; i < k; i++) {
                node__task_t *t = ts[i];
                uint64_t rss = use[i].rss_kb;
                if (rss > t->peak_rss_kb)
                    t->peak_rss_kb = rss;
                /* progress for the periodic RUNNING statuses (node_refresh): lower bounds, so
                   never moved back */
                if (use[i].cpu_ms > t->cpu_time_ms)
                    t->cpu_time_ms = use[i].cpu_ms;
                if (io && use[i].rchar > t->bytes_read)
                    t->bytes_read = use[i].rchar;
                double limit_kb =
                    (double)t->mem_mb * 1024.0 * (1.0 + n->cfg->memory_margin_pct / 100.0) +
                    (double)n->cfg->memory_margin_mb * 1024.0;
                if ((double)rss > limit_kb && t->kill == NODE__KILL_NONE) {
                    t->kill = NODE__KILL_MEMORY;
                    t->kill_rss_kb = rss;
                    log_info("task %s/%s over its memory: %llu KiB > %.0f KiB, killing",
                             t->job->job_id, t->task_id, (unsigned long long)rss, limit_kb);
                    node__kill(n, t);
                }
            }
        }
    }
    mem_free(pg);
    mem_free(use);
    mem_free(ts);
}

void node__kill(node_t *n, node__task_t *t)
{
    (void)n;
    /* the group, or else the leader (unreaped while the task is live, so the pid is still its):
     * where vfork is emulated by fork (valgrind) a child may not have made its group yet */
    if (t->pid > 0 && exec_kill_group(t->pid, SIGKILL) != 0)
        kill(t->pid, SIGKILL);
    if (t->cg)
        taskcg_kill(t->cg);
}
