/* rmserver_recur_admin.c - the admin queries about recurring jobs: the writes (create, change,
 * remove) turned into ledger commands, the JSON of a job, its runs and the plan, and suggestions
 * of ad-hoc jobs that recur (Morpheus §4). */
#include "rm/rmserver_recur_internal.h"

#include "common/clock.h"
#include "common/err.h"
#include "common/mem.h"
#include "rm/period.h"
#include "rm/slo.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECUR__PLAN_PTS 1440 /* points of the plan in the admin JSON */

/* ---- admin ---- */

/* The files a spec says it writes ("writes"), newline-separated, into out. */
static int recur__outputs(const char *spec, char *out, size_t cap, char *why, size_t wcap)
{
    json_error_t e;
    json_t *doc = json_loads(spec, 0, &e);
    if (doc == NULL || !json_is_object(doc)) {
        json_decref(doc);
        return err_fmt(why, wcap, ERR_PARSE, "spec: %s (line %d)", doc ? "not an object" : e.text,
                       e.line);
    }
    size_t used = 0, i;
    json_t *v;
    out[0] = '\0';
    json_array_foreach(json_object_get(doc, "writes"), i, v)
    {
        const char *p = json_string_value(v);
        size_t n = p != NULL ? strlen(p) : 0;
        if (n == 0 || strchr(p, '\n') != NULL || used + n + 2 > cap)
            continue;
        if (used > 0)
            out[used++] = '\n';
        memcpy(out + used, p, n);
        used += n;
        out[used] = '\0';
    }
    json_decref(doc);
    return 0;
}

static int recur__ms(const char *s, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0' || errno != 0 || v < 0)
        return ERR_INVAL;
    *out = v;
    return 0;
}

int rmserver_recur_write(struct rmserver *s, const proto_admin_query_t *q, struct ledger_cmd *c,
                         char *outs, size_t ocap, char *why, size_t cap)
{
    const char *k = q->kind;
    if (strcmp(k, PROTO_ADMIN_RECURRING_ADD) == 0) {
        ledger_cmd_init(c, LEDGER_CMD_RECUR_ADD);
        if (q->nargs != 5 || q->data == NULL || q->data[0] == '\0')
            return err_fmt(why, cap, ERR_INVAL,
                           "usage: recurring_add NAME VC PERIOD_MS OFFSET_MS DEADLINE_MS with "
                           "the spec as data");
        if (strlen(q->args[0]) >= LEDGER_NAME_MAX || q->args[0][0] == '\0' ||
            strlen(q->args[1]) >= LEDGER_NAME_MAX)
            return err_fmt(why, cap, ERR_RANGE, "name and virtual cluster: 1 to 63 bytes");
        if (recur__ms(q->args[2], &c->period_ms) != 0 || recur__ms(q->args[3], &c->offset_ms) ||
            recur__ms(q->args[4], &c->deadline_ms) != 0)
            return err_fmt(why, cap, ERR_INVAL, "period, offset and deadline are ms (decimal)");
        if (c->period_ms < 1000 || c->deadline_ms > c->period_ms)
            return err_fmt(why, cap, ERR_RANGE,
                           "the period must be at least 1 s and the deadline at most the period");
        if (c->period_ms % s->cfg->plan_step_ms != 0 || c->offset_ms % s->cfg->plan_step_ms != 0)
            return err_fmt(why, cap, ERR_RANGE,
                           "period and offset must be multiples of the plan step (%lld ms)",
                           (long long)s->cfg->plan_step_ms);
        int rc = recur__outputs(q->data, outs, ocap, why, cap);
        if (rc != 0)
            return rc;
        snprintf(c->name, sizeof c->name, "%s", q->args[0]);
        snprintf(c->vc, sizeof c->vc, "%s", q->args[1]);
        c->weight_milli = (uint32_t)llround(s->cfg->reprovision * 1000.0);
        c->text = q->data;
        c->text_len = (uint32_t)strlen(q->data);
        c->text2 = outs;
        c->text2_len = (uint32_t)strlen(outs);
        return 0;
    }
    uint8_t type = strcmp(k, PROTO_ADMIN_RECURRING_PAUSE) == 0    ? LEDGER_CMD_RECUR_PAUSE
                   : strcmp(k, PROTO_ADMIN_RECURRING_REMOVE) == 0 ? LEDGER_CMD_RECUR_REMOVE
                   : strcmp(k, PROTO_ADMIN_RECURRING_ACCEPT) == 0 ? LEDGER_CMD_RECUR_ACCEPT
                                                                  : 0;
    if (type == 0)
        return 1;
    ledger_cmd_init(c, type);
    if (q->nargs < 1 || strlen(q->args[0]) >= LEDGER_NAME_MAX ||
        (type == LEDGER_CMD_RECUR_PAUSE &&
         (q->nargs != 2 || (strcmp(q->args[1], "0") != 0 && strcmp(q->args[1], "1") != 0))))
        return err_fmt(why, cap, ERR_INVAL, "usage: %s NAME%s", k,
                       type == LEDGER_CMD_RECUR_PAUSE ? " 1|0" : "");
    if (ledger_recurring_find(fsm_ledger(s->fsm), q->args[0]) == NULL)
        return err_fmt(why, cap, ERR_NOTFOUND, "no recurring job named %s", q->args[0]);
    snprintf(c->name, sizeof c->name, "%s", q->args[0]);
    c->count = type == LEDGER_CMD_RECUR_PAUSE && q->args[1][0] == '1';
    return 0;
}

static json_t *recur__s(int64_t ms)
{
    return json_real((double)ms / 1000.0);
}

static json_t *recur__opt_s(int64_t ms)
{
    return ms > 0 ? recur__s(ms) : json_null();
}

static json_t *recur__milli_array(const uint32_t *v, uint32_t n)
{
    json_t *a = json_array();
    for (uint32_t i = 0; i < n; i++)
        json_array_append_new(a, json_real(v[i] / 1000.0));
    return a;
}

static json_t *recur__run_json(const struct ledger_run *h)
{
    json_t *o = json_object();
    char jid[ID_JOB_SIZE] = "";
    if (h->job != 0)
        snprintf(jid, sizeof jid, ID_JOB_PREFIX "%012llx",
                 (unsigned long long)(h->job & 0xffffffffffffull));
    json_object_set_new(o, "job_id", json_string(jid));
    json_object_set_new(o, "name", json_string(h->name));
    json_object_set_new(o, "recurring", json_string(h->recurring));
    json_object_set_new(o, "period", h->period >= 0 ? json_integer(h->period) : json_null());
    json_object_set_new(o, "submit_ms", json_integer(h->submit_ms));
    json_object_set_new(o, "start_ms", h->start_ms > 0 ? json_integer(h->start_ms) : json_null());
    json_object_set_new(o, "end_ms", h->end_ms > 0 ? json_integer(h->end_ms) : json_null());
    json_object_set_new(o, "deadline_ms",
                        h->deadline_ms > 0 ? json_integer(h->deadline_ms) : json_null());
    bool ran = h->outcome <= LEDGER_RUN_EXPIRED;
    json_object_set_new(
        o, "met",
        h->deadline_ms > 0 && ran
            ? json_boolean(h->outcome == LEDGER_RUN_SUCCEEDED && h->end_ms <= h->deadline_ms)
        : h->deadline_ms > 0 ? json_false()
                             : json_null());
    json_object_set_new(o, "token_s", json_real((double)h->token_ms / 1000.0));
    json_object_set_new(o, "reprovisioned_tokens", json_integer(h->reprovisioned));
    json_object_set_new(o, "outcome", json_string(ledger_outcome_name(h->outcome)));
    json_object_set_new(o, "reason", json_string(h->reason));
    json_object_set_new(o, "period_start_ms",
                        h->period >= 0 ? json_integer(h->period_start_ms) : json_null());
    json_object_set_new(o, "out_read_ms",
                        h->out_read_ms > 0 ? json_integer(h->out_read_ms) : json_null());
    json_object_set_new(o, "skyline_step_s", recur__s(h->sky_step_ms));
    json_object_set_new(o, "skyline", recur__milli_array(h->sky_milli, h->nsky));
    return o;
}

static json_t *recur__json(struct rmserver *s, const struct ledger_recurring *r, bool full)
{
    ledger_t *l = fsm_ledger(s->fsm);
    json_t *o = json_object();
    const struct ledger_vc *vc = ledger_vc_at(l, r->vc);
    json_object_set_new(o, "name", json_string(r->name));
    json_object_set_new(o, "virtual_cluster", json_string(vc != NULL ? vc->name : ""));
    json_object_set_new(o, "period_s", recur__s(r->period_ms));
    json_object_set_new(o, "offset_s", recur__s(r->offset_ms));
    int64_t d = ledger_recurring_deadline(r);
    json_object_set_new(o, "deadline_s", recur__opt_s(d));
    json_object_set_new(o, "deadline_source",
                        json_string(r->deadline_source == LEDGER_DEADLINE_USER       ? "user"
                                    : r->deadline_source == LEDGER_DEADLINE_INFERRED ? "inferred"
                                                                                     : "none"));
    json_object_set_new(o, "inferred_deadline_s",
                        r->slo_source != SLO_NONE ? recur__opt_s(r->slo_deadline_ms) : json_null());
    json_object_set_new(o, "accepted",
                        json_boolean(r->deadline_source == LEDGER_DEADLINE_INFERRED));
    json_object_set_new(o, "paused", json_boolean(r->paused));
    int64_t next = period_start(r->last_fired + 1, r->period_ms, r->offset_ms);
    json_object_set_new(o, "next_run_ms", json_integer(next));
    json_object_set_new(o, "last_period", json_integer(r->last_fired));
    json_object_set_new(o, "runs", json_integer(r->runs));
    json_object_set_new(o, "met", json_integer(r->met));
    json_object_set_new(o, "missed", json_integer(r->missed));
    json_object_set_new(o, "reserved", json_boolean(r->nresv > 0));
    uint32_t peak = 0;
    for (uint32_t k = 0; k < r->nresv; k++)
        peak = r->resv_milli[k] > peak ? r->resv_milli[k] : peak;
    json_object_set_new(o, "reservation_peak_tokens", json_integer((peak + 999) / 1000));
    json_object_set_new(o, "last_error", json_string(r->last_error));
    json_object_set_new(o, "model_note", json_string(r->model_note));
    if (r->pend_period >= 0) {
        json_t *p = json_object();
        char jid[ID_JOB_SIZE] = "";
        if (r->pend_job != 0)
            snprintf(jid, sizeof jid, ID_JOB_PREFIX "%012llx",
                     (unsigned long long)(r->pend_job & 0xffffffffffffull));
        json_object_set_new(p, "period", json_integer(r->pend_period));
        json_object_set_new(p, "state", json_string(r->pend_job != 0 ? "running" : "starting"));
        json_object_set_new(p, "job_id", json_string(jid));
        json_object_set_new(p, "launches", json_integer(r->pend_launches));
        json_object_set_new(p, "reason", json_string(r->pend_reason));
        json_object_set_new(o, "pending", p);
    } else {
        json_object_set_new(o, "pending", json_null());
    }
    if (!full)
        return o;
    json_t *slo = json_object();
    json_object_set_new(slo, "source", json_string(slo_source_name(r->slo_source)));
    json_object_set_new(slo, "deadline_s",
                        r->slo_source != SLO_NONE ? recur__opt_s(r->slo_deadline_ms) : json_null());
    json_object_set_new(slo, "runs", json_integer(r->slo_runs));
    json_object_set_new(slo, "consumed", json_integer(r->slo_consumed));
    json_object_set_new(slo, "read_cv", json_real(r->slo_read_cv));
    json_object_set_new(slo, "slack_ratio", json_real(r->slo_slack_ratio));
    json_object_set_new(slo, "read_median_s",
                        r->slo_consumed > 0 ? recur__s(r->slo_read_median_ms) : json_null());
    json_object_set_new(slo, "end_pct_s",
                        r->slo_runs > 0 ? recur__s(r->slo_end_pct_ms) : json_null());
    json_object_set_new(o, "slo", slo);
    json_t *sky = json_object();
    json_object_set_new(sky, "step_s", recur__s(r->sky_step_ms));
    json_object_set_new(sky, "tokens", recur__milli_array(r->sky_milli, r->nsky));
    json_object_set_new(o, "skyline", sky);
    json_t *resv = json_object(), *tok = json_array();
    for (uint32_t k = 0; k < r->resv_first + r->nresv && r->nresv > 0; k++)
        json_array_append_new(
            tok, json_real(k < r->resv_first ? 0 : r->resv_milli[k - r->resv_first] / 1000.0));
    json_object_set_new(resv, "step_s", recur__s(r->plan_step_ms));
    json_object_set_new(resv, "tokens", tok);
    json_object_set_new(o, "reservation", resv);
    json_t *hist = json_array();
    for (size_t i = ledger_history_count(l); i-- > 0 && json_array_size(hist) < 20;) {
        const struct ledger_run *h = ledger_history_at(l, i);
        if (h == NULL)
            continue;
        if (strcmp(h->recurring, r->name) == 0)
            json_array_append_new(hist, recur__run_json(h));
    }
    json_object_set_new(o, "history", hist);
    return o;
}

static json_t *recur__plan(struct rmserver *s)
{
    ledger_t *l = fsm_ledger(s->fsm);
    json_t *plans = json_array();
    for (size_t v = 0; v < ledger_vc_count(l); v++) {
        const struct ledger_vc *vc = ledger_vc_at(l, v);
        uint64_t periods[LEDGER_MAX_RECURRING];
        size_t np = 0;
        int64_t step = 0;
        for (size_t i = 0; i < ledger_recurring_count(l); i++) {
            const struct ledger_recurring *r = ledger_recurring_at(l, i);
            if (r->vc == v && r->nresv > 0) {
                periods[np++] = (uint64_t)r->period_ms;
                step = step == 0 || r->plan_step_ms < step ? r->plan_step_ms : step;
            }
        }
        if (np == 0)
            continue;
        bool capped = false;
        uint64_t horizon = period_lcm(periods, np, (uint64_t)s->cfg->horizon_ms, &capped);
        uint64_t steps = horizon / (uint64_t)step;
        uint64_t per = (steps + RECUR__PLAN_PTS - 1) / RECUR__PLAN_PTS;
        per = per < 1 ? 1 : per;
        uint64_t points = (steps + per - 1) / per;
        json_t *o = json_object(), *jobs = json_array();
        json_object_set_new(o, "virtual_cluster", json_string(vc->name));
        json_object_set_new(o, "capacity", json_integer(vc->capacity));
        json_object_set_new(o, "step_s", recur__s(step));
        json_object_set_new(o, "horizon_s", recur__s((int64_t)horizon));
        json_object_set_new(o, "lcm_capped", json_boolean(capped));
        json_object_set_new(o, "points", json_integer((json_int_t)points));
        json_object_set_new(o, "point_s", recur__s((int64_t)(per * (uint64_t)step)));
        double *total = mem_calloc(points, sizeof *total);
        for (size_t i = 0; i < ledger_recurring_count(l); i++) {
            const struct ledger_recurring *r = ledger_recurring_at(l, i);
            if (r->vc != v || r->nresv == 0)
                continue;
            json_t *j = json_object(), *tok = json_array();
            json_object_set_new(j, "name", json_string(r->name));
            json_object_set_new(j, "period_s", recur__s(r->period_ms));
            json_object_set_new(j, "offset_s", recur__s(r->offset_ms));
            for (uint64_t pnt = 0; pnt < points; pnt++) {
                uint32_t mx = 0;
                for (uint64_t t = pnt * per; t < (pnt + 1) * per && t < steps; t++) {
                    uint32_t x = ledger_recurring_reserved_at(r, (int64_t)t * step);
                    mx = x > mx ? x : mx;
                }
                json_array_append_new(tok, json_integer(mx));
                if (total != NULL)
                    total[pnt] += mx;
            }
            json_object_set_new(j, "tokens", tok);
            json_array_append_new(jobs, j);
        }
        double peak = 0;
        for (uint64_t pnt = 0; total != NULL && pnt < points; pnt++)
            peak = total[pnt] > peak ? total[pnt] : peak;
        mem_free(total);
        json_object_set_new(o, "peak_tokens", json_integer((json_int_t)peak));
        json_object_set_new(o, "jobs", jobs);
        json_array_append_new(plans, o);
    }
    json_t *doc = json_object();
    json_object_set_new(doc, "plans", plans);
    return doc;
}

/* ---- suggestions: ad-hoc jobs that recur (Morpheus §4) ---- */

#define RECUR__SUGGEST_NAMES 256 /* distinct names judged in one query */

static json_t *recur__fit_json(const struct period_fit *f)
{
    json_t *e = json_object();
    json_object_set_new(e, "runs", json_integer(f->runs));
    json_object_set_new(e, "median_gap_s", recur__s(f->median_gap_ms));
    json_object_set_new(e, "mad_gap_s", recur__s(f->mad_gap_ms));
    json_object_set_new(e, "cv", json_real(f->cv));
    json_object_set_new(e, "phase_mad_s", recur__s(f->phase_mad_ms));
    json_object_set_new(e, "first_submit_ms", json_integer(f->first_ms));
    json_object_set_new(e, "last_submit_ms", json_integer(f->last_ms));
    json_object_set_new(e, "next_ms", json_integer(f->next_ms));
    return e;
}

/* One name's ad-hoc runs judged: a suggestion (periodic) or NULL with *other set (why not). */
static json_t *recur__suggest_one(struct rmserver *s, const char *name,
                                  const struct period_params *pp, int64_t now, json_t **other)
{
    ledger_t *l = fsm_ledger(s->fsm);
    int64_t sub[PERIOD_MAX_RUNS];
    const struct ledger_run *run[PERIOD_MAX_RUNS];
    size_t k = 0;
    for (size_t i = ledger_history_count(l); i-- > 0 && k < pp->max_runs;) {
        const struct ledger_run *h = ledger_history_at(l, i);
        if (h == NULL || h->recurring[0] != '\0' || h->job == 0 || h->submit_ms <= 0 ||
            strcmp(h->name, name) != 0)
            continue;
        sub[k] = h->submit_ms;
        run[k++] = h;
    }
    struct period_fit f;
    if (k == 0 || period_infer(sub, k, now, pp, &f) != 0)
        return NULL;
    if (f.verdict != PERIOD_PERIODIC) {
        *other = json_object();
        json_object_set_new(*other, "name", json_string(name));
        json_object_set_new(*other, "verdict", json_string(period_verdict_name(f.verdict)));
        json_object_set_new(*other, "period_s",
                            f.period_ms > 0 ? recur__s(f.period_ms) : json_null());
        json_object_set_new(*other, "evidence", recur__fit_json(&f));
        return NULL;
    }
    /* the deadline from the runs' completion (rm/slo.h), each run against its own period */
    struct slo_run sr[PERIOD_MAX_RUNS];
    size_t m = 0, ok = 0;
    for (size_t i = 0; i < k; i++) {
        if (run[i]->end_ms <= 0)
            continue;
        int64_t ps = period_nearest_start(run[i]->submit_ms, f.period_ms, f.offset_ms);
        sr[m].start = (run[i]->start_ms > 0 ? run[i]->start_ms : run[i]->submit_ms) - ps;
        sr[m].end = run[i]->end_ms - ps;
        sr[m].out_read = -1; /* consumers are known for recurring jobs' declared outputs only */
        sr[m].ok = run[i]->outcome == LEDGER_RUN_SUCCEEDED;
        ok += sr[m].ok;
        m++;
    }
    struct slo_params sp;
    struct slo_inference inf;
    slo_params_default(&sp);
    if (slo_infer(sr, m, &sp, &inf) != 0)
        memset(&inf, 0, sizeof inf);
    int64_t deadline = inf.deadline;
    bool capped = deadline > f.period_ms;
    if (capped)
        deadline = f.period_ms; /* one run ends before the next starts (recurring add's rule) */
    const struct ledger_vc *vc = ledger_vc_at(l, run[0]->vc);
    char jid[ID_JOB_SIZE];
    rmserver_job_id(run[0]->job, jid);
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(name));
    json_object_set_new(o, "virtual_cluster", json_string(vc != NULL ? vc->name : ""));
    json_object_set_new(o, "period_ms", json_integer(f.period_ms));
    json_object_set_new(o, "period_s", recur__s(f.period_ms));
    json_object_set_new(o, "offset_ms", json_integer(f.offset_ms));
    json_object_set_new(o, "deadline_ms", deadline > 0 ? json_integer(deadline) : json_null());
    json_object_set_new(o, "deadline_s", recur__opt_s(deadline));
    json_object_set_new(o, "deadline_source", json_string(slo_source_name(inf.source)));
    json_object_set_new(o, "deadline_capped", json_boolean(capped));
    json_object_set_new(o, "last_job_id", json_string(jid));
    json_t *e = recur__fit_json(&f);
    json_object_set_new(e, "succeeded", json_integer((json_int_t)ok));
    json_object_set_new(e, "end_pct_s",
                        inf.source != SLO_NONE ? recur__s(inf.end_pct) : json_null());
    json_object_set_new(o, "evidence", e);
    return o;
}

static json_t *recur__suggest(struct rmserver *s, const proto_admin_query_t *q, int *code,
                              char *why, size_t cap)
{
    ledger_t *l = fsm_ledger(s->fsm);
    const char *only = q->nargs >= 1 && q->args[0][0] != '\0' ? q->args[0] : NULL;
    if (only != NULL && ledger_recurring_find(l, only) != NULL) {
        *code = ERR_EXISTS;
        err_fmt(why, cap, *code, "%s is a recurring job already", only);
        return NULL;
    }
    struct period_params pp;
    period_params_default(&pp);
    pp.quantum_ms = s->cfg->plan_step_ms > 0 ? s->cfg->plan_step_ms : 1000;
    pp.min_period_ms = pp.quantum_ms > 1000 ? pp.quantum_ms : 1000;
    int64_t now = (int64_t)clock_wall_ms();
    char names[RECUR__SUGGEST_NAMES][LEDGER_NAME_MAX]; /* 16 KiB */
    size_t nn = 0;
    for (size_t i = ledger_history_count(l); i-- > 0 && nn < RECUR__SUGGEST_NAMES;) {
        const struct ledger_run *h = ledger_history_at(l, i);
        if (h == NULL || h->recurring[0] != '\0' || h->job == 0 ||
            (only != NULL && strcmp(h->name, only) != 0) ||
            ledger_recurring_find(l, h->name) != NULL)
            continue;
        bool seen = false;
        for (size_t j = 0; j < nn && !seen; j++)
            seen = strcmp(names[j], h->name) == 0;
        if (!seen)
            snprintf(names[nn++], LEDGER_NAME_MAX, "%s", h->name);
    }
    json_t *sug = json_array(), *others = json_array();
    for (size_t j = 0; j < nn; j++) {
        json_t *other = NULL;
        json_t *o = recur__suggest_one(s, names[j], &pp, now, &other);
        if (o != NULL)
            json_array_append_new(sug, o);
        else if (other != NULL)
            json_array_append_new(others, other);
    }
    json_t *doc = json_object();
    json_object_set_new(doc, "suggestions", sug);
    json_object_set_new(doc, "not_periodic", others);
    json_object_set_new(doc, "plan_step_ms", json_integer(pp.quantum_ms));
    json_object_set_new(doc, "now_ms", json_integer(now));
    return doc;
}

json_t *rmserver_recur_json(struct rmserver *s, const proto_admin_query_t *q, int *code, char *why,
                            size_t cap)
{
    if (strcmp(q->kind, PROTO_ADMIN_RECURRING_SUGGEST) == 0)
        return recur__suggest(s, q, code, why, cap);
    ledger_t *l = fsm_ledger(s->fsm);
    if (strcmp(q->kind, PROTO_ADMIN_RECURRING_LIST) == 0) {
        json_t *arr = json_array();
        for (size_t i = 0; i < ledger_recurring_count(l); i++)
            json_array_append_new(arr, recur__json(s, ledger_recurring_at(l, i), false));
        json_t *doc = json_object();
        json_object_set_new(doc, "recurring", arr);
        return doc;
    }
    if (strcmp(q->kind, PROTO_ADMIN_RECURRING_SHOW) == 0) {
        const struct ledger_recurring *r =
            q->nargs == 1 ? ledger_recurring_find(l, q->args[0]) : NULL;
        if (r == NULL) {
            *code = q->nargs == 1 ? ERR_NOTFOUND : ERR_INVAL;
            err_fmt(why, cap, *code, q->nargs == 1 ? "no recurring job named %s" : "usage: %s",
                    q->nargs == 1 ? q->args[0] : "recurring_show NAME");
            return NULL;
        }
        return recur__json(s, r, true);
    }
    if (strcmp(q->kind, PROTO_ADMIN_HISTORY) == 0) {
        json_t *arr = json_array();
        for (size_t i = ledger_history_count(l); i-- > 0;) {
            const struct ledger_run *h = ledger_history_at(l, i);
            if (h == NULL)
                continue;
            if (q->nargs >= 1 && q->args[0][0] != '\0' && strcmp(h->name, q->args[0]) != 0 &&
                strcmp(h->recurring, q->args[0]) != 0)
                continue;
            json_array_append_new(arr, recur__run_json(h));
        }
        json_t *doc = json_object();
        json_object_set_new(doc, "runs", arr);
        return doc;
    }
    if (strcmp(q->kind, PROTO_ADMIN_PLAN) == 0)
        return recur__plan(s);
    *code = 1;
    return NULL;
}

json_t *rmserver_recur_write_json(struct rmserver *s, const struct rmserver_cmd *c,
                                  const struct ledger_result *res)
{
    (void)res;
    const struct ledger_recurring *r = ledger_recurring_find(fsm_ledger(s->fsm), c->cmd.name);
    if (c->cmd.type == LEDGER_CMD_RECUR_REMOVE || r == NULL) {
        json_t *o = json_object();
        json_object_set_new(o, "removed", json_string(c->cmd.name));
        return o;
    }
    return recur__json(s, r, false);
}
