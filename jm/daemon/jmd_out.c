/* jmd_out.c - the job directory (docs/job-directory.md): the journal (one JSON line per attempt
 * outcome), state.json (atomically, at least every 250 ms), report.json (version 1) and, at the
 * end of a successful run, its Jockey profile for the next runs of the same job name. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "common/metrics.h"
#include "jm/grain.h"
#include "jm/daemon/jmd.h"
#include "jm/eta.h"

#define JMD_OUT__MAX_SAMPLES 100000 /* token and progress samples kept at most */

static const char *jmd_out__class(int cls)
{
    return cls == DISPATCH_OPPORTUNISTIC ? "opportunistic" : "regular";
}

int jmd_out_read_journal(jmd_t *j, struct journal *jr, char *msg, size_t cap)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/journal", j->o.job_dir);
    journal_init(jr);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT
                   ? 0
                   : err_fmt(msg, cap, ERR_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat sb;
    char *text = NULL;
    size_t len = 0;
    int rc = 0;
    if (fstat(fd, &sb) != 0)
        rc = err_fmt(msg, cap, ERR_IO, "cannot stat %s: %s", path, strerror(errno));
    else if (sb.st_size > 0 && !(text = mem_alloc((size_t)sb.st_size)))
        rc = err_fmt(msg, cap, ERR_NOMEM, "no memory for a %lld-byte journal",
                     (long long)sb.st_size);
    while (!rc && len < (size_t)sb.st_size) {
        ssize_t r = read(fd, text + len, (size_t)sb.st_size - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            rc = err_fmt(msg, cap, ERR_IO, "cannot read %s: %s", path, strerror(errno));
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    if (!rc)
        rc = journal_parse(text ? text : "", len, jr, msg, cap);
    mem_free(text);
    return rc;
}

/* Writes all of buf; 0 or -1 (errno). */
static int jmd_out__write_all(int fd, const char *buf, size_t len)
{
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, buf + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        off += (size_t)w;
    }
    return 0;
}

int jmd_out_open(jmd_t *j, size_t keep, char *msg, size_t cap)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/journal", j->o.job_dir);
    j->journal_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (j->journal_fd < 0)
        return err_fmt(msg, cap, ERR_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(j->journal_fd, &sb) != 0)
        return err_fmt(msg, cap, ERR_IO, "cannot stat %s: %s", path, strerror(errno));
    size_t size = (size_t)sb.st_size;
    if (keep != SIZE_MAX && size > keep) {
        /* a torn last line (a crash mid-write): cut before appending after it */
        if (ftruncate(j->journal_fd, (off_t)keep) != 0)
            return err_fmt(msg, cap, ERR_IO, "cannot cut the torn tail of %s: %s", path,
                           strerror(errno));
        log_warn("journal: cut a torn last line (%zu bytes)", size - keep);
        size = keep;
    }
    if (size == 0) {
        char h[JOURNAL_HEADER_BYTES];
        int n = journal_header(h, sizeof h, j->o.job_id, j->t0_wall);
        if (n < 0)
            return err_fmt(msg, cap, n, "no journal header for job id %s", j->o.job_id);
        if (jmd_out__write_all(j->journal_fd, h, (size_t)n) != 0 || fdatasync(j->journal_fd) != 0)
            return err_fmt(msg, cap, ERR_IO, "cannot write %s: %s", path, strerror(errno));
    }
    return 0;
}

/* report.json's temporary file, this process's own (as jmd_out__write_at's). */
static void jmd_out__report_tmp(const jmd_t *j, char *tmp, size_t size)
{
    snprintf(tmp, size, "%s/report.json.tmp.%ld", j->o.job_dir, (long)getpid());
}

static void jmd_out__report_abort(jmd_t *j);

void jmd_out_close(jmd_t *j)
{
    if (j->journal_fd >= 0) {
        jmd_out_flush(j);
        close(j->journal_fd);
    }
    j->journal_fd = -1;
    mem_free(j->jbuf);
    j->jbuf = NULL;
    j->jlen = j->jcap = 0;
    jmd_out__report_abort(j);
    mem_free(j->recs);
    intern_close(&j->strs);
    mem_free(j->toks);
    mem_free(j->progs);
    j->recs = NULL;
    j->toks = NULL;
    j->progs = NULL;
}

static void jmd_out__pack(jmd_t *j, const struct jmd_rec *r, struct jmd_out_rec *c)
{
    memset(c, 0, sizeof *c);
    c->task = r->task;
    c->attempt = r->attempt;
    if (intern_add(&j->strs, r->node, &c->node) || intern_add(&j->strs, r->reason, &c->reason))
        log_warn("out of memory for an attempt's strings: recorded without them");
    c->exit_code = r->exit_code;
    c->signal = r->signal;
    c->cls = (int8_t)r->cls;
    c->state = (int8_t)r->state;
    c->started = r->started != 0;
    c->queued_s = r->queued_s;
    c->start_s = r->start_s;
    c->end_s = r->end_s;
    c->wait_s = r->wait_s;
    c->cpu_s = r->cpu_s;
    c->init_from_s = r->init_from_s;
    c->rss_kb = r->rss_kb;
}

static void jmd_out__unpack(const jmd_t *j, const struct jmd_out_rec *c, struct jmd_rec *r)
{
    memset(r, 0, sizeof *r);
    r->task = c->task;
    r->attempt = c->attempt;
    snprintf(r->node, sizeof r->node, "%s", intern_str(&j->strs, c->node));
    snprintf(r->reason, sizeof r->reason, "%s", intern_str(&j->strs, c->reason));
    r->exit_code = c->exit_code;
    r->signal = c->signal;
    r->cls = c->cls;
    r->state = c->state;
    r->started = c->started;
    r->queued_s = c->queued_s;
    r->start_s = c->start_s;
    r->end_s = c->end_s;
    r->wait_s = c->wait_s;
    r->cpu_s = c->cpu_s;
    r->init_from_s = c->init_from_s;
    r->rss_kb = c->rss_kb;
}

static json_t *jmd_out__rec(const jmd_t *j, const struct jmd_rec *r)
{
    const struct spec_task *t = &j->spec->tasks[r->task];
    return json_pack("{s:s, s:s, s:I, s:s, s:s, s:f, s:f, s:f, s:f, s:s, s:i, s:i, s:f, s:I, s:s}",
                     "task", t->id, "stage", j->spec->stages[t->stage].name, "attempt",
                     (json_int_t)r->attempt, "node", r->node, "class", jmd_out__class(r->cls),
                     "jm_wait_s", r->wait_s, /* ready -> sent to its node, in the JM */
                     "queued_s", r->queued_s, "start_s", r->start_s, "end_s", r->end_s, "state",
                     proto_task_state_name((proto_task_state_t)r->state), "exit", r->exit_code,
                     "signal", r->signal, "cpu_s", r->cpu_s, "max_rss_kb", (json_int_t)r->rss_kb,
                     "reason", r->reason);
}

void jmd_out_record(jmd_t *j, const struct jmd_rec *r)
{
    /* per job, what the PNs did to its work: process starts and preemptions (issue 22) */
    j->attempts_started += r->started != 0;
    j->attempts_preempted += r->state == PROTO_TASK_PREEMPTED;
    if (j->nrecs == j->caprecs) {
        size_t n = j->caprecs ? j->caprecs * 2 : 64;
        struct jmd_out_rec *p = mem_reallocarray(j->recs, n, sizeof *p);
        if (p) {
            j->recs = p;
            j->caprecs = n;
        }
    }
    if (j->nrecs < j->caprecs)
        jmd_out__pack(j, r, &j->recs[j->nrecs++]);
}

void jmd_out_attempt(jmd_t *j, const struct jmd_rec *r)
{
    if (j->fenced)
        return;
    jmd_out_record(j, r);
    if (j->journal_fd < 0)
        return;
    json_t *o = jmd_out__rec(j, r);
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
    json_decref(o);
    if (!s) {
        log_error("journal: cannot encode an attempt of %s", j->spec->tasks[r->task].id);
        return;
    }
    size_t n = strlen(s);
    if (j->jlen + n + 1 > j->jcap) {
        size_t c = j->jcap ? j->jcap : 4096;
        while (c < j->jlen + n + 1)
            c *= 2;
        char *p = mem_realloc(j->jbuf, c);
        if (!p) { /* write what is kept now, then this line unbuffered */
            jmd_out_flush(j);
            if (jmd_out__write_all(j->journal_fd, s, n) != 0 ||
                jmd_out__write_all(j->journal_fd, "\n", 1) != 0)
                log_error("journal: cannot write: %s", strerror(errno));
            fdatasync(j->journal_fd);
            free(s);
            return;
        }
        j->jbuf = p;
        j->jcap = c;
    }
    memcpy(j->jbuf + j->jlen, s, n);
    j->jbuf[j->jlen + n] = '\n';
    j->jlen += n + 1;
    free(s);
}

/* The fsync policy (docs/job-directory.md): the lines of a batch are written and fdatasync'd
 * before the JM acts on what they record (the next scheduling round's creates, the end). */
void jmd_out_flush(jmd_t *j)
{
    if (j->fenced || j->journal_fd < 0 || j->jlen == 0)
        return;
    if (jmd_out__write_all(j->journal_fd, j->jbuf, j->jlen) != 0)
        log_error("journal: cannot write: %s", strerror(errno));
    else if (fdatasync(j->journal_fd) != 0)
        log_error("journal: cannot sync: %s", strerror(errno));
    j->jlen = 0;
}

void jmd_out_tokens(jmd_t *j)
{
    if (j->ntoks >= JMD_OUT__MAX_SAMPLES)
        return;
    struct jmd_tok_sample s = {jmd_elapsed_s(j), (int)j->granted, j->target, j->oracle,
                               (int)(dispatch_allowance(j->core.disp) / GRAIN_UNITS)};
    if (j->ntoks > 0) {
        struct jmd_tok_sample *l = &j->toks[j->ntoks - 1];
        if (l->granted == s.granted && l->target == s.target && l->oracle == s.oracle &&
            l->opp == s.opp && s.t_s - l->t_s < 1.0)
            return; /* nothing new */
    }
    if (j->ntoks == j->captoks) {
        size_t n = j->captoks ? j->captoks * 2 : 64;
        struct jmd_tok_sample *p = mem_reallocarray(j->toks, n, sizeof *p);
        if (!p)
            return;
        j->toks = p;
        j->captoks = n;
    }
    j->toks[j->ntoks++] = s;
}

void jmd_out_progress(jmd_t *j)
{
    if (j->nprogs >= JMD_OUT__MAX_SAMPLES)
        return;
    size_t done = dag_count(j->core.dag, DAG_SUCCEEDED);
    struct jmd_prog_sample s = {jmd_elapsed_s(j), done,
                                j->spec->ntasks ? (double)done / (double)j->spec->ntasks : 1.0};
    if (j->nprogs == j->capprogs) {
        size_t n = j->capprogs ? j->capprogs * 2 : 64;
        struct jmd_prog_sample *p = mem_reallocarray(j->progs, n, sizeof *p);
        if (!p)
            return;
        j->progs = p;
        j->capprogs = n;
    }
    j->progs[j->nprogs++] = s;
}

/* state.json written by a newer incarnation (a higher epoch) means this JM is stale: it stops
 * before it overwrites the newer one's state. 1 when fenced so. */
static int jmd_out__newer(jmd_t *j)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/state.json", j->o.job_dir);
    json_t *st = json_load_file(path, 0, NULL);
    const json_t *e = json_object_get(st, "epoch");
    json_int_t epoch = json_is_integer(e) ? json_integer_value(e) : 0;
    json_decref(st);
    if (epoch > (json_int_t)j->epoch && epoch <= UINT32_MAX) {
        jmd_fenced(j, (uint32_t)epoch);
        return 1;
    }
    return 0;
}

/* Writes `o` (stolen) to DIR/name atomically: a temporary file of this process's own (a stale
 * JM paused mid-write shares no file with its successor), fsync'd when `sync`, renamed. With
 * `fence`, the rename waits for a last look at state.json: a newer incarnation's there means the
 * directory is no longer this JM's, even where the first look came before a pause. */
static void jmd_out__write_at(const char *dir, const char *name, json_t *o, int sync, jmd_t *fence)
{
    if (!o)
        return;
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9));
    json_decref(o);
    if (!s)
        return;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int ok = fd >= 0;
    size_t len = strlen(s), off = 0;
    while (ok && off < len) {
        ssize_t w = write(fd, s + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            ok = 0;
        else
            off += (size_t)w;
    }
    if (ok && write(fd, "\n", 1) != 1)
        ok = 0;
    if (ok && sync && fsync(fd) != 0)
        ok = 0;
    if (fd >= 0)
        close(fd);
    if (ok && fence && jmd_out__newer(fence)) {
        unlink(tmp);
        free(s);
        return;
    }
    if (ok && rename(tmp, path) != 0)
        ok = 0;
    if (!ok) {
        log_warn("cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
    }
    free(s);
}

static void jmd_out__write(jmd_t *j, const char *name, json_t *o, int sync)
{
    if (j->fenced) { /* the job directory is the newer incarnation's */
        json_decref(o);
        return;
    }
    jmd_out__write_at(j->o.job_dir, name, o, sync, j);
}

/* This process's resident set now and its peak, in KiB (0 where unknown). */
static void jmd_out__rss(uint64_t *now_kb, uint64_t *peak_kb)
{
    *now_kb = metrics_rss_bytes() / 1024;
    struct rusage ru;
    *peak_kb = getrusage(RUSAGE_SELF, &ru) == 0 && ru.ru_maxrss > 0 ? (uint64_t)ru.ru_maxrss : 0;
    if (*peak_kb < *now_kb) /* the kernel updates its high-water mark lazily */
        *peak_kb = *now_kb;
}

void jmd_out_failed_state(const char *job_dir, const char *job_id, int64_t started_ms,
                          const char *reason)
{
    json_t *o = json_pack("{s:i, s:s, s:s, s:I, s:s, s:s, s:I, s:f, s:n}", "version", 1, "job_id",
                          job_id ? job_id : "", "name", "", "pid", (json_int_t)getpid(), "state",
                          "failed", "reason", reason ? reason : "", "started_ms",
                          (json_int_t)started_ms, "elapsed_s", 0.0, "deadline_s");
    static const char *const zero[] = {
        "tasks_total",     "tasks_succeeded", "tasks_running",          "tasks_ready",
        "attempts_failed", "attempts_moved",  "attempts_preempted",     "attempts_started",
        "tokens_granted",  "tokens_target",   "opportunistic_allowance"};
    for (size_t i = 0; o && i < sizeof zero / sizeof zero[0]; i++)
        json_object_set_new(o, zero[i], json_integer(0));
    if (o) {
        json_object_set_new(o, "makespan_s", json_null());
        json_object_set_new(o, "deadline_met", json_null());
    }
    jmd_out__write_at(job_dir, "state.json", o, 1, NULL);
}

/* Issue 15's corrections (jmd_spec.c): speculative copies, duplicates, re-matched upgrades and
 * re-runs for lost outputs. */
static json_t *jmd_out__corrections(const jmd_t *j)
{
    const struct jmd_spec_stats *c = &j->spec_stats;
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "copies_started",
                     (json_int_t)c->copies_started, "copies_won", (json_int_t)c->copies_won,
                     "duplicates_started", (json_int_t)c->dups_started, "duplicates_won",
                     (json_int_t)c->dups_won, "rematched", (json_int_t)c->rematched, "reruns",
                     (json_int_t)c->reruns);
}

static const char *jmd_out__state(const jmd_t *j)
{
    return j->outcome == JMD_RUNNING ? "running" : jmd_outcome_name(j->outcome);
}

static double jmd_out__makespan(const jmd_t *j)
{
    return j->outcome == JMD_RUNNING ? jmd_elapsed_s(j) : jmd_wall_rel_s(j, j->end_wall);
}

static json_t *jmd_out__deadline_met(const jmd_t *j)
{
    if (j->outcome == JMD_RUNNING || !j->has_deadline)
        return json_null();
    return json_boolean(j->outcome == JMD_SUCCEEDED && jmd_out__makespan(j) <= j->deadline_s);
}

/* The ETA at half the tasks done and its error once the job succeeded (jm/eta.h, issue 22): the
 * p50's |it - makespan| / makespan, whether the job ended by the p95, and where the p95 came from.
 * In state.json and report.json alike. */
static void jmd_out__eta(const jmd_t *j, json_t *o)
{
    /* the ETA at half the tasks done and, once the job succeeded, |it - makespan| / makespan */
    double ms = jmd_out__makespan(j);
    json_object_set_new(o, "eta_half_s",
                        j->eta_half_s > 0 ? json_real(j->eta_half_s) : json_null());
    double err = j->outcome == JMD_SUCCEEDED ? eta_half_error(j->eta_half_s, ms) : -1;
    json_object_set_new(o, "eta_half_error", err >= 0 ? json_real(err) : json_null());
    /* and its p95 then: whether the job ended by it (jm/eta.h, issue 22) */
    json_object_set_new(o, "eta_half_p95_s",
                        j->eta_half_p95_s > 0 ? json_real(j->eta_half_p95_s) : json_null());
    int cov = j->outcome == JMD_SUCCEEDED ? eta_half_covered(j->eta_half_p95_s, ms) : -1;
    json_object_set_new(o, "eta_half_p95_covered", cov >= 0 ? json_boolean(cov) : json_null());
    /* the simulated runs' own q95 then, the upper value a job without a spread gets: to compare */
    json_object_set_new(o, "eta_half_p95_runs_s",
                        j->eta_half_p95_runs_s > 0 ? json_real(j->eta_half_p95_runs_s)
                                                   : json_null());
    /* where the p95 comes from: admission's model (own spread x learned factor) or, for a
       job without a spread of its own, the simulated runs' q95 */
    json_object_set_new(o, "eta_spread",
                        j->own_spread >= 1 ? json_real(j->own_spread) : json_null());
    json_object_set_new(o, "eta_own_factor",
                        j->own_factor > 0 ? json_real(j->own_factor) : json_null());
    json_object_set_new(o, "eta_p95_from",
                        j->eta_s <= 0        ? json_null()
                        : j->eta_from_spread ? json_string("spread")
                                             : json_string("runs"));
}

void jmd_out_state(jmd_t *j)
{
    if (j->fenced) /* a newer incarnation's state.json is looked for just before the rename */
        return;
    size_t n;
    dag_ready(j->core.dag, &n);
    json_t *o = json_pack(
        "{s:i, s:s, s:s, s:I, s:s, s:s, s:I, s:f, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:I, "
        "s:o, s:o}",
        "version", 1, "job_id", j->o.job_id, "name", j->spec->name, "pid", (json_int_t)getpid(),
        "state", jmd_out__state(j), "reason", j->reason, "started_ms", (json_int_t)j->t0_wall,
        "elapsed_s", jmd_out__makespan(j), "deadline_s",
        j->has_deadline ? json_real(j->deadline_s) : json_null(), "tasks_total",
        (json_int_t)j->spec->ntasks, "tasks_succeeded",
        (json_int_t)dag_count(j->core.dag, DAG_SUCCEEDED), "tasks_running",
        (json_int_t)(dispatch_regular(j->core.disp) + dispatch_opportunistic(j->core.disp)),
        "tasks_ready", (json_int_t)n, "attempts_failed", (json_int_t)j->attempts_failed,
        "tokens_granted", (json_int_t)j->granted, "tokens_target", j->target,
        "opportunistic_allowance", (json_int_t)(dispatch_allowance(j->core.disp) / GRAIN_UNITS),
        "makespan_s", j->outcome == JMD_RUNNING ? json_null() : json_real(jmd_out__makespan(j)),
        "deadline_met", jmd_out__deadline_met(j));
    if (o) {
        json_object_set_new(o, "attempts_moved", json_integer((json_int_t)j->attempts_moved));
        json_object_set_new(o, "attempts_preempted",
                            json_integer((json_int_t)j->attempts_preempted));
        json_object_set_new(o, "attempts_started", json_integer((json_int_t)j->attempts_started));
        /* sized tokens, the arbiter's minimum, downgrades and the ETA (docs/jm-daemon.md) */
        json_object_set_new(o, "minimum", json_integer((json_int_t)j->minimum));
        json_object_set_new(o, "token_cpu", json_real(j->token_cpu));
        json_object_set_new(o, "token_mem_mb", json_integer((json_int_t)j->token_mem_mb));
        json_object_set_new(o, "downgrades", json_integer((json_int_t)j->downgrades));
        /* resumes: how often a JM took the job over again; epoch: this incarnation's */
        json_object_set_new(o, "resumes", json_integer(j->o.resumes));
        json_object_set_new(o, "epoch", json_integer((json_int_t)j->epoch));
        json_object_set_new(o, "adopted", json_integer((json_int_t)j->adopted));
        /* messages from the RM that did not decode: dropped, counted */
        json_object_set_new(o, "rm_dropped", json_integer((json_int_t)j->rm_dropped));
        json_object_set_new(o, "pn_dropped", json_integer((json_int_t)j->pn_dropped));
        json_object_set_new(o, "pn_status_batches", json_integer((json_int_t)j->pn_batches));
        /* tasks left that no live node can hold, and why (jmd_rm.c): null when none */
        json_object_set_new(o, "tasks_unplaceable", json_integer((json_int_t)j->unfit));
        json_object_set_new(o, "unplaceable",
                            j->unfit > 0 ? json_string(j->unfit_why) : json_null());
        /* each RM replica's view stream: snapshots taken whole, deltas missed (jm/view_proto.h) */
        uint64_t wholes = 0, gaps = 0;
        for (size_t i = 0; i < j->o.nrm && i < JMD_MAX_RM; i++) {
            wholes += j->vstream[i].wholes;
            gaps += j->vstream[i].gaps;
        }
        json_object_set_new(o, "view_wholes", json_integer((json_int_t)wholes));
        json_object_set_new(o, "view_gaps", json_integer((json_int_t)gaps));
        json_object_set_new(o, "corrections", jmd_out__corrections(j));
        /* the JM's own memory now and at its peak (issue 24: at most 1 KiB per task at rest) */
        uint64_t rss_kb = 0, peak_kb = 0;
        jmd_out__rss(&rss_kb, &peak_kb);
        json_object_set_new(o, "rss_kb", json_integer((json_int_t)rss_kb));
        json_object_set_new(o, "rss_peak_kb", json_integer((json_int_t)peak_kb));
        int known = j->outcome == JMD_RUNNING && j->eta_s > 0;
        json_object_set_new(o, "eta_s", known ? json_real(j->eta_s) : json_null());
        json_object_set_new(o, "eta_p95_s", known ? json_real(j->eta_p95_s) : json_null());
        jmd_out__eta(j, o);
    }
    jmd_out__write(j, "state.json", o, j->outcome != JMD_RUNNING);
}

/* report.json: `o` (consumed) with "attempts" appended, one record at a time: a tree of every
 * attempt would hold a few KiB per attempt while the file is written (GBs for a million).
 * Written to a temp file renamed into place (fsync'd when `sync`). While the job runs the
 * attempts go out JMD_OUT__CHUNK per tick (jmd_out_report_step): writing a million in one
 * go held the event loop for seconds, long enough for the JM to think it had been paused. The
 * final report is written whole. */
#define JMD_OUT__CHUNK 20000

static void jmd_out__report_abort(jmd_t *j)
{
    if (!j->rep_f)
        return;
    fclose(j->rep_f);
    j->rep_f = NULL;
    char tmp[4200];
    jmd_out__report_tmp(j, tmp, sizeof tmp);
    unlink(tmp);
}

/* Writes attempts up to `limit` more; at the end of the snapshot, the tail and the rename. */
static void jmd_out__report_more(jmd_t *j, size_t limit, int sync)
{
    FILE *f = j->rep_f;
    if (!f)
        return;
    int ok = 1;
    char buf[4096];
    size_t stop = j->rep_end - j->rep_next > limit ? j->rep_next + limit : j->rep_end;
    for (; ok && j->rep_next < stop; j->rep_next++) {
        struct jmd_rec r;
        jmd_out__unpack(j, &j->recs[j->rep_next], &r);
        json_t *a = jmd_out__rec(j, &r);
        size_t n = a ? json_dumpb(a, buf, sizeof buf, JSON_COMPACT | JSON_REAL_PRECISION(9)) : 0;
        if (j->rep_next > 0 && fputc(',', f) == EOF)
            ok = 0;
        if (n > 0 && n <= sizeof buf) {
            ok = ok && fwrite(buf, 1, n, f) == n;
        } else { /* longer than the buffer (a long id and reason) */
            char *big = a ? json_dumps(a, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
            ok = ok && big && fputs(big, f) >= 0;
            free(big);
        }
        json_decref(a);
    }
    if (ok && j->rep_next < j->rep_end)
        return; /* more on the next tick */
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/report.json", j->o.job_dir);
    jmd_out__report_tmp(j, tmp, sizeof tmp);
    if (ok && fputs("]}\n", f) < 0)
        ok = 0;
    if (ok && fflush(f) != 0)
        ok = 0;
    if (ok && sync && fsync(fileno(f)) != 0)
        ok = 0;
    if (fclose(f) != 0)
        ok = 0;
    j->rep_f = NULL;
    if (ok && jmd_out__newer(j)) { /* a newer incarnation took the job while this was written */
        unlink(tmp);
        return;
    }
    if (ok && rename(tmp, path) != 0)
        ok = 0;
    if (!ok) {
        log_warn("cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
    }
}

static void jmd_out__write_report(jmd_t *j, json_t *o, int final)
{
    jmd_out__report_abort(j); /* a newer snapshot replaces one still being written */
    if (j->fenced || !o) {
        json_decref(o);
        return;
    }
    char tmp[4200];
    jmd_out__report_tmp(j, tmp, sizeof tmp);
    char *head = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9));
    json_decref(o);
    size_t hlen = head ? strlen(head) : 0;
    if (hlen < 2 || head[hlen - 1] != '}') {
        free(head);
        log_warn("cannot encode %s/report.json", j->o.job_dir);
        return;
    }
    FILE *f = fopen(tmp, "we");
    if (f) {
        setvbuf(f, NULL, _IOFBF, 1 << 16);
        if (fwrite(head, 1, hlen - 1, f) != hlen - 1 || fputs(",\"attempts\":[", f) < 0) {
            fclose(f);
            f = NULL;
            unlink(tmp);
        }
    }
    free(head);
    if (!f) {
        log_warn("cannot write %s: %s", tmp, strerror(errno));
        return;
    }
    j->rep_f = f;
    j->rep_next = 0;
    j->rep_end = j->nrecs; /* the attempts recorded now: later ones are in the next report */
    jmd_out__report_more(j, final ? SIZE_MAX : JMD_OUT__CHUNK, final);
}

void jmd_out_report_step(jmd_t *j)
{
    if (j->rep_f && !j->fenced)
        jmd_out__report_more(j, JMD_OUT__CHUNK, 0);
    else if (j->rep_f)
        jmd_out__report_abort(j);
}

void jmd_out_report(jmd_t *j)
{
    json_t *tok = json_array(), *prog = json_array();
    for (size_t i = 0; tok && i < j->ntoks; i++) {
        const struct jmd_tok_sample *s = &j->toks[i];
        json_array_append_new(tok, json_pack("{s:f, s:i, s:i, s:o, s:i}", "t_s", s->t_s, "granted",
                                             s->granted, "target", s->target, "oracle",
                                             s->oracle > 0 ? json_integer(s->oracle) : json_null(),
                                             "opportunistic", s->opp));
    }
    for (size_t i = 0; prog && i < j->nprogs; i++)
        json_array_append_new(prog, json_pack("{s:f, s:I, s:f}", "t_s", j->progs[i].t_s, "done",
                                              (json_int_t)j->progs[i].done, "fraction",
                                              j->progs[i].fraction));
    json_t *o = json_pack(
        "{s:i, s:s, s:s, s:s, s:s, s:I, s:f, s:o, s:o, s:I, s:I, s:o, s:o}", "version", 1, "job_id",
        j->o.job_id, "name", j->spec->name, "state", jmd_out__state(j), "reason", j->reason,
        "started_ms", (json_int_t)j->t0_wall, "makespan_s", jmd_out__makespan(j), "deadline_s",
        j->has_deadline ? json_real(j->deadline_s) : json_null(), "deadline_met",
        jmd_out__deadline_met(j), "tasks_total", (json_int_t)j->spec->ntasks, "tasks_succeeded",
        (json_int_t)dag_count(j->core.dag, DAG_SUCCEEDED), "tokens", tok ? tok : json_array(),
        "progress", prog ? prog : json_array());
    if (o) {
        /* the usage skyline the ending LEASE_RENEW carries (jm/usage.h), in token-seconds */
        uint32_t milli[USAGE_MAX_STEPS];
        uint32_t n = usage_export(&j->usage, milli, USAGE_MAX_STEPS);
        json_t *toks = json_array();
        for (uint32_t i = 0; toks && i < n; i++)
            json_array_append_new(toks, json_real(milli[i] / 1000.0));
        json_object_set_new(o, "skyline",
                            json_pack("{s:f, s:o}", "step_s", usage_step_ms(&j->usage) / 1000.0,
                                      "tokens", toks ? toks : json_array()));
        json_object_set_new(o, "token_s", json_real((double)usage_token_ms(&j->usage) / 1000.0));
        json_object_set_new(o, "resumes", json_integer(j->o.resumes));
        json_object_set_new(o, "corrections", jmd_out__corrections(j));
        json_object_set_new(o, "attempts_started", json_integer((json_int_t)j->attempts_started));
        json_object_set_new(o, "attempts_preempted",
                            json_integer((json_int_t)j->attempts_preempted));
        jmd_out__eta(j, o);
    }
    jmd_out__write_report(j, o, j->outcome != JMD_RUNNING);
}

void jmd_out_profile(jmd_t *j)
{
    /* A failed or cancelled run says little about how long the job takes, and would spoil the
       model of the next runs: only successful runs are kept (jm/profile.h, "History"). */
    if (!j->o.profile_dir || j->nrecs == 0 || j->outcome != JMD_SUCCEEDED)
        return;
    size_t n = 0;
    struct profile_attempt *pa = mem_calloc(j->nrecs, sizeof *pa);
    const char **names = mem_calloc(j->spec->nstages, sizeof *names);
    if (!pa || !names) {
        mem_free(pa);
        mem_free(names);
        return;
    }
    for (size_t s = 0; s < j->spec->nstages; s++)
        names[s] = j->spec->stages[s].name;
    for (size_t i = 0; i < j->nrecs; i++) {
        const struct jmd_out_rec *r = &j->recs[i];
        if (r->state != PROTO_TASK_SUCCEEDED && r->state != PROTO_TASK_FAILED)
            continue; /* lost, preempted and cancelled attempts say nothing about the job */
        const struct spec_task *t = &j->spec->tasks[r->task];
        struct profile_attempt *a = &pa[n++];
        a->stage = (int)t->stage;
        a->queue_s = r->wait_s;
        /* init: the wait at the PN while the attempt held a token there (a yielded one waited
           as opportunistic, holding none, until a freed unit upgraded it: place_yield) */
        double from = r->init_from_s > r->queued_s ? r->init_from_s : r->queued_s;
        a->init_s = r->start_s > from ? r->start_s - from : 0;
        a->run_s = r->end_s > r->start_s ? r->end_s - r->start_s : 0;
        a->input_bytes = (double)t->input_bytes;
        a->est_s = t->runtime_s;
        a->ok = r->state == PROTO_TASK_SUCCEEDED;
    }
    struct profile prof;
    profile_init(&prof);
    char msg[512], path[4096];
    int rc =
        profile_build(&prof, j->spec->name, (int)j->spec->nstages, names, pa, n, msg, sizeof msg);
    if (!rc)
        rc = profile_save_run(&prof, j->o.profile_dir, j->o.job_id, j->t0_wall, PROFILE_KEEP, path,
                              sizeof path, msg, sizeof msg);
    if (rc)
        log_warn("profile not written: %s", msg);
    else
        log_info("profile written to %s (%zu attempts)", path, n);
    profile_close(&prof);
    mem_free(pa);
    mem_free(names);
}
