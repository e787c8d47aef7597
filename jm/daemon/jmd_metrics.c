/* jmd_metrics.c - a job manager's /metrics (see jmd_metrics.h and docs/metrics.md). */
#include "jm/daemon/jmd_metrics.h"

#include "common/config.h"
#include "common/err.h"
#include "common/httpd.h"
#include "common/log.h"
#include "common/mem.h"
#include "jm/daemon/jmd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct jmd_metrics {
    httpd_t *http;
    char url[HTTPD_LISTEN_MAX + 32];
    uint64_t scrapes;
    double started_hwm; /* tasks started, kept monotonic across requeues */
};

struct jmd_metrics__conf {
    char *listen;
};

static const struct config_key jmd_metrics__schema[] = {
    {"metrics", "listen", CONFIG_STRING, offsetof(struct jmd_metrics__conf, listen), "",
     "HOST:PORT of every job manager's /metrics (port 0: a free one); empty: off", 0, 255},
    CONFIG_END,
};

void jmd_metrics_listen(char *out, size_t cap)
{
    out[0] = '\0';
    const char *env = getenv(JMD_METRICS_ENV);
    if (env != NULL) {
        snprintf(out, cap, "%s", strcmp(env, "off") == 0 ? "" : env);
        return;
    }
    const char *dir = getenv("PADDOCK_CLUSTER");
    if (dir == NULL || dir[0] == '\0')
        return;
    char path[4096], msg[512];
    snprintf(path, sizeof path, "%s/%s", dir, JMD_METRICS_FILE);
    struct jmd_metrics__conf c = {0};
    int rc = config_defaults(jmd_metrics__schema, &c, msg, sizeof msg);
    if (rc == 0)
        rc = config_load_file(jmd_metrics__schema, &c, path, msg, sizeof msg);
    if (rc == 0)
        snprintf(out, cap, "%s", c.listen ? c.listen : "");
    else if (rc != ERR_IO) /* a missing file is "off"; a broken one is worth a line */
        log_warn("metrics: %s", msg);
    config_close(jmd_metrics__schema, &c);
}

static void jmd_metrics__serve(const struct httpd_req *req, struct httpd_resp *resp, void *arg)
{
    jmd_t *j = arg;
    if (strcmp(req->path, "/metrics") != 0) {
        httpd_resp_status(resp, 404);
        httpd_resp_body(resp, "not found\n", 10);
        return;
    }
    j->metrics->scrapes++;
    struct metrics m;
    metrics_init(&m);
    jmd_metrics_write(j, &m);
    metrics_process(&m);
    if (metrics_error(&m) != 0)
        log_warn("metrics: %s while building the exposition", err_name(metrics_error(&m)));
    size_t len = 0;
    char *t = metrics_take(&m, &len);
    metrics_close(&m);
    if (t == NULL) {
        resp->err = ERR_NOMEM;
        return;
    }
    httpd_resp_type(resp, METRICS_CONTENT_TYPE);
    httpd_resp_take(resp, &t, len);
}

void jmd_metrics_start(jmd_t *j)
{
    char listen[300];
    jmd_metrics_listen(listen, sizeof listen);
    if (listen[0] == '\0')
        return;
    struct jmd_metrics *jm = mem_calloc(1, sizeof *jm);
    if (jm == NULL) {
        log_warn("metrics: out of memory: running without");
        return;
    }
    char msg[300];
    if (httpd_start(&jm->http, &j->loop, listen, msg, sizeof msg) != 0 ||
        httpd_route(jm->http, "/metrics", jmd_metrics__serve, j) != 0) {
        log_warn("metrics: %s: running without", msg);
        httpd_stop(&jm->http);
        mem_free(jm);
        return;
    }
    snprintf(jm->url, sizeof jm->url, "%s/metrics", httpd_url(jm->http));
    j->metrics = jm;
    log_info("metrics on %s", jm->url);
}

void jmd_metrics_stop(jmd_t *j)
{
    if (j->metrics == NULL)
        return;
    httpd_stop(&j->metrics->http);
    mem_free(j->metrics);
    j->metrics = NULL;
}

const char *jmd_metrics_url(const jmd_t *j)
{
    return j->metrics != NULL ? j->metrics->url : NULL;
}

void jmd_metrics_write(jmd_t *j, struct metrics *m)
{
    const char *info[] = {"job_id", j->o.job_id ? j->o.job_id : "", "name",
                          j->spec && j->spec->name ? j->spec->name : "", NULL};
    metrics_family(m, "paddock_jm_info", METRICS_GAUGE, "The job this JM runs (always 1).");
    metrics_sample(m, info, 1);

    /* Tasks by state: the DAG's states, with "running" split into queued at a PN and running. */
    size_t n = j->spec ? j->spec->ntasks : 0;
    double st[6] = {0}; /* waiting ready queued running succeeded failed */
    double started = 0, placements = 0;
    for (size_t i = 0; i < n && j->core.dag; i++) {
        enum dag_state d = dag_state(j->core.dag, i);
        const struct jmd_task *t = &j->tasks[i];
        placements += t->attempt;
        switch (d) {
        case DAG_WAITING:
            st[0]++;
            break;
        case DAG_READY:
            st[1]++;
            break;
        case DAG_RUNNING:
            st[t->running ? 3 : 2]++;
            started += t->running ? 1 : 0;
            break;
        case DAG_SUCCEEDED:
            st[4]++;
            started++;
            break;
        case DAG_FAILED:
            st[5]++;
            break;
        default:
            break;
        }
    }
    static const char *const names[] = {"waiting", "ready",     "queued",
                                        "running", "succeeded", "failed"};
    metrics_family(m, "paddock_jm_tasks", METRICS_GAUGE,
                   "The job's tasks by state (queued: at a PN, not yet running).");
    for (size_t k = 0; k < 6; k++) {
        const char *l[] = {"state", names[k], NULL};
        metrics_sample(m, l, st[k]);
    }
    struct jmd_metrics *jm = j->metrics;
    if (jm != NULL) {
        if (started > jm->started_hwm)
            jm->started_hwm = started;
        started = jm->started_hwm;
    }
    metrics_counter1(m, "paddock_jm_tasks_started_total",
                     "Tasks that have started running (each task counted once).", started);
    metrics_counter1(m, "paddock_jm_placements_total",
                     "Task attempts placed on a PN (TASK_CREATE sent).", placements);
    metrics_counter1(m, "paddock_jm_attempts_failed_total", "Task attempts that failed.",
                     (double)j->attempts_failed);
    metrics_counter1(m, "paddock_jm_attempts_preempted_total",
                     "Task attempts killed at their node for other jobs' regular work.",
                     (double)j->attempts_preempted);
    metrics_counter1(m, "paddock_jm_attempts_started_total",
                     "Task attempts whose process started, counted when they end.",
                     (double)j->attempts_started);
    metrics_counter1(m, "paddock_jm_corrections_total",
                     "Queued attempts moved to a better node (Apollo's correction).",
                     (double)j->attempts_moved);
    /* Apollo's corrections of issue 15 (jmd_spec.c), by kind: started, and won */
    const struct jmd_spec_stats *sp = &j->spec_stats;
    metrics_family(m, "paddock_jm_speculative_attempts_total", METRICS_COUNTER,
                   "Extra attempts started beside a task's own: copies of stragglers and "
                   "duplicates of queued tasks.");
    metrics_sample(m, (const char *const[]){"kind", "copy", NULL}, (double)sp->copies_started);
    metrics_sample(m, (const char *const[]){"kind", "duplicate", NULL}, (double)sp->dups_started);
    metrics_family(m, "paddock_jm_speculative_wins_total", METRICS_COUNTER,
                   "Extra attempts that finished (copies) or started (duplicates) first.");
    metrics_sample(m, (const char *const[]){"kind", "copy", NULL}, (double)sp->copies_won);
    metrics_sample(m, (const char *const[]){"kind", "duplicate", NULL}, (double)sp->dups_won);
    metrics_counter1(
        m, "paddock_jm_rematched_total",
        "Opportunistic tasks re-placed as regular on a better node when a token freed.",
        (double)sp->rematched);
    metrics_counter1(m, "paddock_jm_reruns_total",
                     "Finished producers run again because their node-local outputs were lost.",
                     (double)sp->reruns);
    metrics_counter1(m, "paddock_jm_downgrades_total",
                     "Regular tasks turned opportunistic when spare tokens were reclaimed.",
                     (double)j->downgrades);
    metrics_family(m, "paddock_jm_messages_dropped_total", METRICS_COUNTER,
                   "Messages that did not decode and were dropped, by sender (also state.json's "
                   "rm_dropped and pn_dropped).");
    metrics_sample(m, (const char *const[]){"from", "rm", NULL}, (double)j->rm_dropped);
    metrics_sample(m, (const char *const[]){"from", "pn", NULL}, (double)j->pn_dropped);

    metrics_gauge1(m, "paddock_jm_tokens_target", "Tokens Jockey's controller wants now.",
                   (double)j->target);
    metrics_gauge1(m, "paddock_jm_tokens_granted", "Tokens the RM has granted the job.",
                   (double)j->granted);
    metrics_gauge1(m, "paddock_jm_tokens_minimum",
                   "Of the granted tokens, the arbiter's guaranteed minimum.", (double)j->minimum);
    metrics_gauge1(m, "paddock_jm_opportunistic_allowance",
                   "Opportunistic tasks the job may run beside its tokens.",
                   (double)j->opp_allowance);

    metrics_gauge1(m, "paddock_jm_elapsed_seconds", "Seconds since the job was submitted.",
                   jmd_elapsed_s(j));
    metrics_gauge1(m, "paddock_jm_deadline_seconds",
                   "The deadline, seconds from submission (NaN: none).",
                   j->has_deadline ? j->deadline_s : NAN);
    metrics_family(m, "paddock_jm_predicted_finish_seconds", METRICS_GAUGE,
                   "Predicted finish, seconds from submission, median and conservative bound "
                   "(NaN: unknown).");
    const char *q50[] = {"estimate", "median", NULL}, *q95[] = {"estimate", "p95", NULL};
    metrics_sample(m, q50, j->eta_s > 0 ? j->eta_s : NAN);
    metrics_sample(m, q95, j->eta_p95_s > 0 ? j->eta_p95_s : NAN);
    metrics_gauge1(m, "paddock_jm_deadline_slack_seconds",
                   "Deadline minus the conservative predicted finish (negative: expected to miss; "
                   "NaN: no deadline or no prediction).",
                   j->has_deadline && j->eta_p95_s > 0 ? j->deadline_s - j->eta_p95_s : NAN);
    metrics_gauge1(m, "paddock_jm_outcome",
                   "0 running, 1 succeeded, 2 failed, 3 cancelled (enum jmd_outcome).",
                   (double)j->outcome);
    if (jm != NULL)
        metrics_counter1(m, "paddock_jm_metrics_scrapes_total", "Scrapes of this endpoint.",
                         (double)jm->scrapes);
}
