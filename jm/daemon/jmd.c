/* jmd.c - paddock-jm's set-up, timers, signals and tear-down (the shell around jm/daemon/jmd_*.c).
 */
#include <math.h>
#include <signal.h>
#include <string.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "jm/daemon/jmd.h"
#include "jm/daemon/jmd_grow.h"
#include "jm/daemon/jmd_metrics.h"

#define JMD__TICK_MS   250  /* state.json, silent nodes, RM retries */
#define JMD__LEASE_MS  1000 /* lease renewal */
#define JMD__END_WAIT  3000 /* how long the end waits for the RM to take the final renewal */
#define JMD__REPORT_MS 2000 /* report.json refresh while running */
#define JMD__PAUSE_MS  1000 /* a tick this late: the JM was paused (jmd_t.resync) */

void jmd_opts_default(struct jmd_opts *o)
{
    *o = (struct jmd_opts){.max_attempts = 3,
                           .node_timeout_ms = 15000,
                           .opp_factor = 1.0,
                           .max_tokens = 100,
                           .rm_leader = -1};
}

const char *jmd_outcome_name(enum jmd_outcome o)
{
    switch (o) {
    case JMD_RUNNING:
        return "running";
    case JMD_SUCCEEDED:
        return "succeeded";
    case JMD_FAILED:
        return "failed";
    case JMD_CANCELLED:
        return "cancelled";
    }
    return "?";
}

int64_t jmd_now(const jmd_t *j)
{
    (void)j;
    return (int64_t)clock_mono_ms();
}

double jmd_elapsed_s(const jmd_t *j)
{
    return (double)(clock_wall_ms() - j->t0_wall) / 1000.0;
}

double jmd_wall_rel_s(const jmd_t *j, int64_t wall_ms)
{
    return (double)(wall_ms - j->t0_wall) / 1000.0;
}

static void jmd__stop(jmd_t *j)
{
    if (j->stopping)
        return;
    j->stopping = 1;
    uv_stop(&j->loop);
}

static void jmd__on_tick(uv_timer_t *h)
{
    jmd_t *j = h->data;
    int64_t gap = jmd_now(j) - j->last_tick_mono;
    j->last_tick_mono = jmd_now(j);
    if (gap > JMD__PAUSE_MS && j->outcome == JMD_RUNNING && !j->resync) {
        /* Paused long enough for another JM to have taken the job over: every node would look
           silent and every lease late. Ask the RM first (a newer epoch stops this JM). */
        log_warn("the job manager was paused for %lld ms: checking with the RM before acting",
                 (long long)gap);
        j->resync = 1;
        jmd_rm_renew(j);
    }
    jmd_rm_tick(j);
    if (j->resync)
        return;
    jmd_grow_tick(j);
    if (j->outcome == JMD_RUNNING) {
        jmd_sched_tick(j);
        if (j->holding) {
            j->holding = 0;
            jmd_sched_request(j);
        }
        if (j->sched_pending)
            jmd_sched_round(j);
        jmd_jockey_tick(j);
        jmd_out_state(j);
        jmd_out_flush(j);
        int64_t now = jmd_now(j);
        /* Every 2 s, and 1 s more per 2,000 attempts recorded: the whole report is rewritten,
         * so its cost grows with the job, and spacing it in proportion keeps what it costs per
         * task flat (a 20,000-task job every 12 s, instead of every 3 s). state.json, small,
         * follows the job every tick. */
        int64_t every = JMD__REPORT_MS + (int64_t)(j->nrecs / 2);
        if (now - j->last_report_mono >= every) {
            j->last_report_mono = now;
            jmd_out_report(j);
        } else {
            jmd_out_report_step(j); /* the rest of a report begun on an earlier tick */
        }
    } else if (j->end_acked == 3 || jmd_now(j) - j->rm_heard_mono > JMD__END_WAIT) {
        jmd__stop(j);
    }
}

static void jmd__on_end_timer(uv_timer_t *h)
{
    jmd__stop(h->data); /* the RM did not answer the final renewal in time: stop anyway */
}

static void jmd__on_lease(uv_timer_t *h)
{
    jmd_t *j = h->data;
    if (j->outcome == JMD_RUNNING)
        jmd_rm_renew(j);
}

static void jmd__on_control(uv_timer_t *h)
{
    jmd_t *j = h->data;
    jmd_jockey_step(j);
    if (j->outcome == JMD_RUNNING)
        jmd_out_progress(j);
}

static void jmd__on_signal(uv_signal_t *h, int sig)
{
    jmd_t *j = h->data;
    if (j->fenced)
        return;
    log_info("signal %d: ending the job", sig);
    if (j->outcome == JMD_RUNNING)
        jmd_end(j, JMD_CANCELLED, "the job manager was stopped");
    else
        jmd__stop(j);
}

/* A scheduling round runs at most once per loop turn, after the I/O that asked for it. */
static void jmd__on_check(uv_check_t *h)
{
    jmd_t *j = h->data;
    uv_idle_stop(&j->wake); /* a round that asks for another starts it again */
    if (j->sched_pending && j->outcome == JMD_RUNNING)
        jmd_sched_round(j);
    if (j->outcome != JMD_RUNNING && !uv_is_active((uv_handle_t *)&j->stop_timer))
        uv_timer_start(&j->stop_timer, jmd__on_end_timer, JMD__END_WAIT, 0);
}

static void jmd__close_cb(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

/* The keys, the event loop and the RM's sockets on it. */
static int jmd__open_rm(jmd_t *j, char *msg, size_t cap)
{
    if (j->o.keys_dir) {
        int rc = curve_load(&j->curve, j->o.keys_dir, j->o.key_name ? j->o.key_name : "paddock",
                            NULL, msg, cap);
        if (rc)
            return rc;
    }
    if (uv_loop_init(&j->loop) != 0)
        return err_fmt(msg, cap, ERR_SYS, "cannot make an event loop");
    uv_idle_init(&j->loop, &j->wake);
    j->loop_ok = 1;
    return jmd_rm_open(j, msg, cap);
}

/* Everything a JM holds, in any state of its set-up. */
static void jmd__free(jmd_t *j)
{
    jmd_pn_close(j);
    jmd_rm_close(j);
    jmd_metrics_stop(j); /* its handles close with their own callbacks */
    if (j->loop_ok) {
        uv_walk(&j->loop, jmd__close_cb, NULL);
        uv_run(&j->loop, UV_RUN_DEFAULT);
        uv_loop_close(&j->loop);
    }
    jmd_grow_close(j);
    jmd_jockey_close(j);
    jmd_out_close(j);
    jmd_sched_close(j);
    curve_destroy(&j->curve);
    spec_destroy(&j->spec);
    mem_free(j);
}

int jmd_early(const struct jmd_opts *opts, jmd_t **out, char *msg, size_t cap)
{
    *out = NULL;
    jmd_t *j = mem_calloc(1, sizeof *j);
    if (!j)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    j->o = *opts;
    j->journal_fd = -1;
    int rc = jmd__open_rm(j, msg, cap);
    if (rc) {
        jmd__free(j);
        return rc;
    }
    *out = j;
    return 0;
}

void jmd_early_close(jmd_t **p)
{
    if (*p)
        jmd__free(*p);
    *p = NULL;
}

int jmd_run(const struct jmd_opts *opts, char *msg, size_t cap)
{
    return jmd_run_early(NULL, opts, msg, cap);
}

int jmd_run_early(jmd_t *early, const struct jmd_opts *opts, char *msg, size_t cap)
{
    jmd_t *j = early ? early : mem_calloc(1, sizeof *j);
    if (!j)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    j->o = *opts;
    j->journal_fd = -1;
    j->epoch = opts->epoch;
    j->t0_wall = opts->started_wall_ms ? opts->started_wall_ms : clock_wall_ms();
    j->t0_mono = jmd_now(j);
    j->rm_heard_mono = j->t0_mono;
    j->last_tick_mono = j->t0_mono;
    if (early) /* its sockets were opened on the cluster's hint: the submit has just seen it */
        jmd_rm_leader(j, opts->rm_leader);
    int rc = 0;
    uv_check_t check;
    /* where the start goes (issue 24, lean job start): logged once running */
    uint64_t ph[8], ph0 = clock_mono_ns();
    size_t nph = 0;
#define JMD__PHASE() (ph[nph++] = clock_mono_ns())

    char path[4096];
    snprintf(path, sizeof path, "%s/spec.json", opts->job_dir);
    char why[1024];
    rc = spec_load(path, NULL, &j->spec, why, sizeof why);
    if (rc) {
        err_fmt(msg, cap, rc, "spec %s rejected: %s", path, why);
        goto out;
    }
    JMD__PHASE(); /* 0: the spec */
    log_info("job %s \"%s\": %zu tasks in %zu stages%s, epoch %u%s", opts->job_id, j->spec->name,
             j->spec->ntasks, j->spec->nstages, j->spec->has_deadline ? "" : ", no deadline",
             j->epoch, opts->resume ? ", resumed" : "");
    struct journal jr;
    journal_init(&jr);
    size_t keep = SIZE_MAX;
    if (opts->resume) {
        /* The journal is the record of what ran: read back before anything is placed. One that
           cannot be read is not guessed around (a task that succeeded could run again): the job
           fails with the reason once the RM link is up. */
        char jwhy[400];
        int jrc = jmd_out_read_journal(j, &jr, jwhy, sizeof jwhy);
        if (jrc) {
            snprintf(j->resume_end, sizeof j->resume_end, "the journal cannot be replayed: %s",
                     jwhy);
            log_error("%s", j->resume_end);
        } else {
            keep = jr.good_len;
            if (jr.torn)
                log_warn("journal: a torn last line (%s) is cut", jr.torn_why);
            if (jr.started_ms > 0 && !opts->started_wall_ms)
                j->t0_wall = jr.started_ms; /* times in the report stay on one scale */
        }
        j->query_phase = JMD_QUERY_VIEW;
    }
    if ((rc = jmd_sched_init(j, msg, cap)) != 0 || (rc = jmd_grow_init(j, msg, cap)) != 0) {
        journal_close(&jr);
        goto out;
    }
    if (opts->resume && !j->resume_end[0]) {
        char jwhy[400];
        if (jmd_sched_replay(j, &jr, jwhy, sizeof jwhy) != 0) {
            snprintf(j->resume_end, sizeof j->resume_end, "the journal cannot be replayed: %s",
                     jwhy);
            log_error("%s", j->resume_end);
            keep = SIZE_MAX; /* kept as it is, for whoever looks into it */
        }
    }
    journal_close(&jr);
    JMD__PHASE(); /* 1: task records */
    if ((rc = jmd_out_open(j, keep, msg, cap)) != 0)
        goto out;
    JMD__PHASE(); /* 2: the journal */
    JMD__PHASE(); /* 3: (the keys load with the RM's sockets) */
    /* The RM's sockets first: their connections, CURVE handshakes and the view's first snapshot
       proceed in the socket layer's thread while the job's model is built (a C(p, a) table is
       tens of ms even for one task), so the view is there when it is done. A JM started before
       its job was known opened them then (jmd_early). */
    if (!j->loop_ok && (rc = jmd__open_rm(j, msg, cap)) != 0)
        goto out;
    JMD__PHASE(); /* 4: keys and RM sockets */
    if ((rc = jmd_jockey_init(j)) != 0) {
        err_fmt(msg, cap, rc, "cannot set up Jockey: %s", err_text(rc));
        goto out;
    }
    JMD__PHASE();         /* 5: the job's model */
    jmd_metrics_start(j); /* before the first renewal, which advertises it */
    uv_timer_init(&j->loop, &j->tick);
    uv_timer_init(&j->loop, &j->lease);
    uv_timer_init(&j->loop, &j->control);
    uv_timer_init(&j->loop, &j->stop_timer);
    uv_signal_init(&j->loop, &j->sigterm);
    uv_signal_init(&j->loop, &j->sigint);
    uv_check_init(&j->loop, &check);
    j->tick.data = j->lease.data = j->control.data = j->stop_timer.data = j;
    j->sigterm.data = j->sigint.data = check.data = j;
    uv_timer_start(&j->tick, jmd__on_tick, JMD__TICK_MS, JMD__TICK_MS);
    uv_timer_start(&j->lease, jmd__on_lease, 0, JMD__LEASE_MS);
    if (j->ctrl) {
        uint64_t period = (uint64_t)llround(controller_config(j->ctrl)->period_s * 1000.0);
        uv_timer_start(&j->control, jmd__on_control, period, period);
    } else {
        uv_timer_start(&j->control, jmd__on_control, 1000, 1000);
    }
    uv_signal_start(&j->sigterm, jmd__on_signal, SIGTERM);
    uv_signal_start(&j->sigint, jmd__on_signal, SIGINT);
    uv_check_start(&check, jmd__on_check);
    jmd_out_tokens(j);
    jmd_out_progress(j);
    jmd_out_state(j);
    jmd_rm_tick(j); /* the first token request */
    if (j->resume_end[0])
        jmd_end(j, JMD_FAILED, j->resume_end);
    else if (opts->resume && dag_done(j->core.dag)) /* it had ended, but the RM had not heard */
        jmd_end(j, JMD_SUCCEEDED, "");
    JMD__PHASE(); /* 6: timers, first state.json, first token request */
#undef JMD__PHASE
    log_info("running: %zu RM replicas, profile dir %s; started in %.1f ms (spec %.1f, task "
             "records %.1f, journal %.1f, keys and RM sockets %.1f%s, model %.1f, first request "
             "%.1f)",
             opts->nrm, opts->profile_dir ? opts->profile_dir : "(none)",
             (double)(ph[6] - ph0) / 1e6, (double)(ph[0] - ph0) / 1e6,
             (double)(ph[1] - ph[0]) / 1e6, (double)(ph[2] - ph[1]) / 1e6,
             (double)(ph[4] - ph[2]) / 1e6, early ? ", opened before the job was known" : "",
             (double)(ph[5] - ph[4]) / 1e6, (double)(ph[6] - ph[5]) / 1e6);
    uv_run(&j->loop, UV_RUN_DEFAULT);
    rc = j->fenced ? JMD_EXIT_FENCED : j->outcome == JMD_SUCCEEDED ? 0 : 1;

out:
    if (rc < 0 && j->spec && j->core.dag) {
        /* A daemon that cannot run still leaves a state.json saying why. */
        j->outcome = JMD_FAILED;
        j->end_wall = clock_wall_ms();
        snprintf(j->reason, sizeof j->reason, "%s", msg);
        jmd_out_state(j);
    }
    if (rc < 0 && !j->spec) /* the spec itself was refused: state failed with the reason */
        jmd_out_failed_state(opts->job_dir, opts->job_id, j->t0_wall, msg);
    jmd__free(j);
    return rc;
}

void jmd_fenced(jmd_t *j, uint32_t epoch)
{
    if (j->fenced)
        return;
    j->fenced = epoch > j->epoch ? epoch : j->epoch + 1;
    if (epoch > j->epoch)
        log_error("a newer job manager holds job %s (epoch %u): this one (epoch %u) stops",
                  j->o.job_id, epoch, j->epoch);
    else
        log_error("a newer job manager holds job %s (epoch > %u): a node refused this one's "
                  "command; it stops",
                  j->o.job_id, j->epoch);
    j->jlen = 0; /* its unwritten lines are the newer incarnation's business now */
    j->stopping = 1;
    uv_stop(&j->loop);
}
