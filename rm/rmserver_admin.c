/* rmserver_admin.c - admin queries answered from this replica's ledger and view as JSON
 * (the document shapes the CLI prints; docs/rm.md lists them). */
#include "rm/rmserver_internal.h"

#include "common/clock.h"
#include "common/err.h"
#include "common/id.h"
#include "common/metrics.h"
#include "rm/arbiter.h"
#include "rm/calib.h"
#include "rm/rm_metrics.h"
#include "rm/raft_curve.h"

#include <errno.h>
#include <jansson.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const rmserver__reject_names[RMSERVER_REJ_COUNT] = {
    "decode", "frames", "type", "invalid", "not_leader", "busy", "denied"};

void rmserver_job_id(uint64_t id, char out[ID_JOB_SIZE])
{
    snprintf(out, ID_JOB_SIZE, ID_JOB_PREFIX "%012llx",
             (unsigned long long)(id & 0xffffffffffffull));
}

/* A URL, or JSON null when none is known. */
static json_t *rmserver__url(const char *url)
{
    return url != NULL ? json_string(url) : json_null();
}

static json_t *rmserver__node_json(struct rmserver *s, const struct ledger_node *n, bool full)
{
    const struct rmview_node *v = rmview_find(s->view, n->name);
    int64_t now = (int64_t)clock_mono_ms();
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(n->name));
    json_object_set_new(o, "rack", json_string(n->rack));
    json_object_set_new(o, "address", json_string(n->address));
    json_object_set_new(o, "metrics", rmserver__url(rm_metrics_node_url(s, n->name)));
    bool heard = v != NULL && v->rx_ms != 0;
    /* As the view publishes it: a PN draining of its own accord is draining. */
    bool self_draining = heard && v->draining && n->liveness != LEDGER_NODE_DOWN;
    json_object_set_new(o, "state",
                        json_string(self_draining ? "draining" : ledger_node_state_name(n)));
    json_object_set_new(o, "cpus", json_real(n->cpus_milli / 1000.0));
    json_object_set_new(o, "mem_mb", json_integer(n->mem_mb));
    json_object_set_new(o, "running",
                        json_integer(heard ? v->running_regular + v->running_opportunistic : 0));
    json_object_set_new(o, "queued",
                        json_integer(heard ? v->queued_regular + v->queued_opportunistic : 0));
    json_object_set_new(o, "age_ms", heard ? json_integer(now - v->rx_ms) : json_null());
    json_object_set_new(o, "used_cpus", json_real(heard ? v->used_cpu : 0.0));
    json_object_set_new(o, "used_mem_mb", json_integer(heard ? (json_int_t)v->used_mem_mb : 0));
    json_object_set_new(o, "psucc", json_real(ledger_node_psucc(n)));
    json_object_set_new(o, "down_count", json_integer(n->down_count));
    if (!full)
        return o;
    char boot[ID_U64_SIZE];
    json_object_set_new(o, "boot_id", json_string(id_format_u64(n->boot_id, boot)));
    json_object_set_new(o, "registered_ms", json_integer(n->registered_ms));
    json_object_set_new(o, "state_since_ms", json_integer(n->since_ms));
    json_object_set_new(o, "tasks_ok", json_integer((json_int_t)n->tasks_ok));
    json_object_set_new(o, "tasks_failed", json_integer((json_int_t)n->tasks_failed));
    if (heard) {
        json_object_set_new(o, "running_regular", json_integer(v->running_regular));
        json_object_set_new(o, "running_opportunistic", json_integer(v->running_opportunistic));
        json_object_set_new(o, "queued_regular", json_integer(v->queued_regular));
        json_object_set_new(o, "queued_opportunistic", json_integer(v->queued_opportunistic));
        json_object_set_new(o, "heartbeat_seq", json_integer((json_int_t)v->seq));
    }
    json_t *mx = json_object(), *cpu = json_array(), *mem = json_array(), *cells = json_array();
    const proto_matrix_t *pm = heard ? &v->matrix : NULL;
    for (uint32_t r = 0; pm != NULL && r < pm->ncpu; r++) {
        json_array_append_new(cpu, json_real(pm->cpu_bounds[r]));
        json_t *row = json_array();
        for (uint32_t c = 0; c < pm->nmem; c++) {
            uint32_t w = proto_matrix_cell(pm, r, c);
            json_array_append_new(row, w == PROTO_WAIT_NEVER ? json_null() : json_integer(w));
        }
        json_array_append_new(cells, row);
    }
    for (uint32_t c = 0; pm != NULL && c < pm->nmem; c++)
        json_array_append_new(mem, json_integer((json_int_t)pm->mem_bounds_mb[c]));
    json_object_set_new(mx, "cpu", cpu);
    json_object_set_new(mx, "mem_mb", mem);
    json_object_set_new(mx, "cells_ms", cells);
    json_object_set_new(mx, "timestamp_ms", json_integer(pm != NULL ? pm->timestamp_ms : 0));
    json_object_set_new(o, "matrix", mx);
    return o;
}

/* The most cores and the most memory of any registered node, whatever its state (they may be
 * of two nodes): what `paddock submit` and `quote` check a task's size against, sent with the
 * tokens so that a submit need not fetch every node's document (megabytes at 20,000 nodes). */
static json_t *rmserver__largest_node(const ledger_t *l)
{
    uint32_t cpus_milli = 0, mem_mb = 0;
    for (size_t i = 0; i < ledger_node_count(l); i++) {
        const struct ledger_node *n = ledger_node_at(l, i);
        cpus_milli = n->cpus_milli > cpus_milli ? n->cpus_milli : cpus_milli;
        mem_mb = n->mem_mb > mem_mb ? n->mem_mb : mem_mb;
    }
    json_t *o = json_object();
    json_object_set_new(o, "cpus", json_real(cpus_milli / 1000.0));
    json_object_set_new(o, "mem_mb", json_integer(mem_mb));
    return o;
}

static json_t *rmserver__job_json(struct rmserver *s, const ledger_t *l, const struct ledger_job *j)
{
    char jid[ID_JOB_SIZE];
    rmserver_job_id(j->id, jid);
    const struct ledger_vc *vc = ledger_vc_at(l, j->vc);
    json_t *o = json_object();
    json_object_set_new(o, "job_id", json_string(jid));
    json_object_set_new(o, "name", json_string(j->name));
    json_object_set_new(o, "user", json_string(j->user));
    json_object_set_new(o, "virtual_cluster", json_string(vc != NULL ? vc->name : "?"));
    json_object_set_new(o, "price_token_s", json_real((double)j->price_milli / 1000.0));
    json_object_set_new(o, "metrics", rmserver__url(rm_metrics_job_url(s, j->id)));
    json_object_set_new(o, "state", json_string(ledger_job_state_name(j->state)));
    json_object_set_new(o, "tokens", json_integer(j->tokens));
    json_object_set_new(o, "wanted", json_integer(j->wanted));
    json_object_set_new(o, "submitted_ms", json_integer(j->submitted_ms));
    json_object_set_new(o, "deadline_ms",
                        j->deadline_ms ? json_integer(j->deadline_ms) : json_null());
    json_object_set_new(o, "lease_ms", json_integer(j->lease_ms));
    json_object_set_new(o, "lease_expiry_ms", json_integer(j->lease_expiry_ms));
    json_object_set_new(o, "finished_ms",
                        j->finished_ms ? json_integer(j->finished_ms) : json_null());
    /* the arbiter's view (rm/arbiter.h) */
    json_object_set_new(o, "best_effort", json_boolean(j->best_effort));
    json_object_set_new(o, "minimum", json_integer(j->minimum));
    json_object_set_new(
        o, "spare", json_integer(j->tokens - (j->minimum < j->tokens ? j->minimum : j->tokens)));
    json_object_set_new(o, "eta_s", j->eta_ms ? json_real(j->eta_ms / 1000.0) : json_null());
    json_object_set_new(o, "eta_p95_s",
                        j->eta_p95_ms ? json_real(j->eta_p95_ms / 1000.0) : json_null());
    json_object_set_new(o, "work_token_s", json_real(j->work_ms / 1000.0));
    json_object_set_new(o, "path_s", json_real(j->path_ms / 1000.0));
    json_object_set_new(o, "width", json_integer(j->width));
    /* what admission's error model measures a run by (rm/calib.h): its median at registration,
       and the guaranteed tokens it held over time (up to now while it runs) */
    json_object_set_new(o, "predicted_p50_s",
                        j->pred_p50_ms > 0 ? json_real(j->pred_p50_ms / 1000.0) : json_null());
    json_object_set_new(o, "held_token_s", json_real((double)ledger_job_held_ms(l, j) / 1000.0));
    json_object_set_new(o, "progress", json_real(j->done_permille / 1000.0));
    json_object_set_new(o, "demand", j->demand ? json_integer(j->demand - 1) : json_null());
    /* a run of a recurring job (Morpheus): its reservation now and reprovisioning */
    const struct ledger_recurring *r = NULL;
    for (size_t i = 0; j->recur != 0 && i < ledger_recurring_count(l); i++)
        if (ledger_recurring_at(l, i)->id == j->recur)
            r = ledger_recurring_at(l, i);
    json_object_set_new(o, "recurring", json_string(r != NULL ? r->name : ""));
    json_object_set_new(o, "period", r != NULL ? json_integer(j->period) : json_null());
    json_object_set_new(o, "reserved",
                        json_integer(r != NULL && j->state == LEDGER_JOB_ACTIVE
                                         ? ledger_recurring_reserved_at(r, ledger_now(l))
                                         : 0));
    json_object_set_new(o, "reprovisioned_tokens", json_integer(j->reprovisioned));
    /* its job manager (issue 14): the incarnation's epoch, restarts, where it runs */
    json_object_set_new(o, "epoch", json_integer(j->epoch));
    json_object_set_new(o, "restarts", json_integer(j->restarts));
    json_object_set_new(o, "jm_host", json_string(j->host));
    json_object_set_new(o, "jm_pid", j->jm_pid != 0 ? json_integer(j->jm_pid) : json_null());
    json_object_set_new(o, "job_dir", json_string(j->job_dir));
    return o;
}

/* "nodes" and "jobs", or "nodes FROM COUNT" and "jobs FROM COUNT": the ledger's list in its
 * order, all of it or the COUNT (1..RMSERVER_PAGE_MAX) items from index FROM, with "total" and
 * "next" (the index of the next page, null after the last). A whole list outgrows a reply
 * (PROTO_MAX_JSON) past about 10,000 nodes or 6,000 jobs; the CLI asks in pages. */
#define RMSERVER_PAGE_MAX 5000u

static json_t *rmserver__item(struct rmserver *s, const ledger_t *l, bool nodes, size_t i)
{
    return nodes ? rmserver__node_json(s, ledger_node_at(l, i), false)
                 : rmserver__job_json(s, l, ledger_job_at(l, i));
}

static json_t *rmserver__list(struct rmserver *s, const ledger_t *l, const proto_admin_query_t *q,
                              int *code, char *why, size_t cap)
{
    bool nodes = strcmp(q->kind, PROTO_ADMIN_NODES) == 0;
    size_t total = nodes ? ledger_node_count(l) : ledger_job_count(l), from = 0, count = total;
    if (q->nargs != 0) {
        char *e0 = NULL, *e1 = NULL;
        long long f = q->nargs == 2 ? strtoll(q->args[0], &e0, 10) : -1;
        long long n = q->nargs == 2 ? strtoll(q->args[1], &e1, 10) : -1;
        if (q->nargs != 2 || e0 == q->args[0] || *e0 != '\0' || e1 == q->args[1] || *e1 != '\0' ||
            f < 0 || n < 1 || n > RMSERVER_PAGE_MAX) {
            *code = ERR_INVAL;
            err_fmt(why, cap, *code, "usage: %s [FROM COUNT], COUNT 1..%u", q->kind,
                    RMSERVER_PAGE_MAX);
            return NULL;
        }
        from = (unsigned long long)f < total ? (size_t)f : total;
        count = (size_t)n < total - from ? (size_t)n : total - from;
    }
    json_t *arr = json_array();
    for (size_t i = from; i < from + count; i++)
        json_array_append_new(arr, rmserver__item(s, l, nodes, i));
    json_t *doc = json_object();
    json_object_set_new(doc, q->kind, arr);
    json_object_set_new(doc, "total", json_integer((json_int_t)total));
    json_object_set_new(
        doc, "next", from + count < total ? json_integer((json_int_t)(from + count)) : json_null());
    return doc;
}

static int rmserver__arg_u64(const char *a, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(a, &end, 10);
    if (end == a || *end != '\0' || errno != 0 || a[0] == '-' || v > (1ull << 52))
        return ERR_INVAL;
    *out = v;
    return 0;
}

void *rmserver_calibration_json(const ledger_t *l)
{
    struct calib_factors f;
    ledger_calibration(l, &f);
    json_t *o = json_object();
    json_object_set_new(o, "outcomes", json_integer((json_int_t)f.n));
    json_object_set_new(o, "outcomes_ever", json_integer((json_int_t)f.total));
    json_object_set_new(o, "p50_factor", json_real(f.p50));
    json_object_set_new(o, "bound_factor", json_real(f.hi));
    json_object_set_new(o, "sample_p50", f.n > 0 ? json_real(f.sample_p50) : json_null());
    json_object_set_new(o, "sample_q", f.n > 0 ? json_real(f.sample_hi) : json_null());
    json_object_set_new(o, "quantile", json_real(CALIB_Q));
    json_object_set_new(o, "prior_bound_factor", json_real(CALIB_PRIOR_HI));
    json_object_set_new(o, "prior_weight", json_real(CALIB_PRIOR_N));
    /* jobs with a spread of their own (issue 22): bound = own spread x own_factor */
    json_object_set_new(o, "own_outcomes", json_integer((json_int_t)f.own_n));
    json_object_set_new(o, "own_factor", json_real(f.hi_own));
    json_object_set_new(o, "prior_own_factor", json_real(CALIB_PRIOR_OWN));
    return o;
}

/* quote VC DEADLINE_MS WORK_MS WORK_SD_MS PATH_MS PATH_SD_MS WIDTH HAS_PROFILE [ALPHA_MILLI
 * [SPREAD_MILLI [NAME]]]:
 * the admission check and MRM's price-deadline curve, registering nothing (NAME: the job's, whose
 * own earlier runs its bound reads, rm/calib.h). */
static json_t *rmserver__quote(struct rmserver *s, const proto_admin_query_t *q, int *code,
                               char *why, size_t cap)
{
    ledger_t *l = fsm_ledger(s->fsm);
    uint64_t v[9] = {0};
    bool ok = q->nargs >= 8 && q->nargs <= 11 && strlen(q->args[0]) < LEDGER_NAME_MAX;
    for (size_t i = 0; ok && i + 1 < q->nargs && i < 9; i++)
        ok = rmserver__arg_u64(q->args[i + 1], &v[i]) == 0;
    if (!ok || v[5] > LEDGER_MAX_TOKENS || v[7] > 1000 ||
        (v[8] != 0 && (v[8] < 1000 || v[8] > LEDGER_SPREAD_MAX))) {
        *code = ERR_INVAL;
        err_fmt(why, cap, *code,
                "usage: quote VC DEADLINE_MS WORK_MS WORK_SD_MS PATH_MS PATH_SD_MS WIDTH "
                "HAS_PROFILE [ALPHA_MILLI [SPREAD_MILLI [NAME]]] (decimal; alpha 0..1000, spread "
                "0 or 1000..20000)");
        return NULL;
    }
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_JOB_REGISTER);
    snprintf(c.vc, sizeof c.vc, "%s", q->args[0]);
    if (q->nargs == 11)
        snprintf(c.name, sizeof c.name, "%s", q->args[10]);
    int64_t now = clock_wall_ms();
    now = now > ledger_now(l) ? now : ledger_now(l);
    c.deadline_ms = v[0] != 0 ? now + (int64_t)v[0] : 0;
    c.work_ms = v[1];
    c.work_sd_ms = v[2];
    c.path_ms = v[3];
    c.path_sd_ms = v[4];
    c.width = (uint32_t)v[5];
    if (q->nargs >= 9) {
        c.flags |= LEDGER_JOB_HAS_ALPHA;
        c.alpha_milli = (uint32_t)v[7];
    }
    c.spread_milli = (uint32_t)v[8]; /* the job's own spread (jm/shape.h); 0: none */
    c.k_milli = (uint32_t)(s->cfg->admission_sd * 1000.0 + 0.5);
    struct arbiter_quote r;
    struct arbiter_price curve[16];
    size_t np = 16;
    int rc = ledger_quote(l, &c, now, &r, curve, &np);
    if (rc != 0) {
        *code = rc;
        err_fmt(why, cap, rc,
                rc == ERR_NOTFOUND ? "no virtual cluster %s"
                                   : "cannot quote in %s: the job needs work and a width, the "
                                     "cluster tokens",
                c.vc);
        return NULL;
    }
    const struct ledger_vc *vc = ledger_vc_find(l, c.vc);
    struct arbiter_shape sh = {.work = v[1] / 1000.0,
                               .work_sd = v[2] / 1000.0,
                               .path = v[3] / 1000.0,
                               .path_sd = v[4] / 1000.0,
                               .width = c.width};
    /* the median is the model's times the cluster's median error; the conservative finish
     * already has the error model's quantile in it (rm/calib.h) */
    struct calib_factors cf;
    ledger_calibration(l, &cf);
    json_t *o = json_object();
    json_object_set_new(o, "virtual_cluster", json_string(vc->name));
    json_object_set_new(o, "capacity", json_integer(vc->capacity));
    json_object_set_new(o, "token_cpu", json_real(vc->token_cpu_milli / 1000.0));
    json_object_set_new(o, "token_mem_mb", json_integer(vc->token_mem_mb));
    json_object_set_new(o, "k", json_real(c.k_milli / 1000.0));
    json_object_set_new(o, "admit", json_boolean(v[0] != 0 && r.admit));
    json_object_set_new(o, "deadline_s", v[0] != 0 ? json_real(v[0] / 1000.0) : json_null());
    json_object_set_new(o, "finish_p50_s", json_real(r.finish_p50 * cf.p50));
    json_object_set_new(o, "finish_p50_model_s", json_real(r.finish_p50));
    json_object_set_new(o, "finish_s", json_real(r.finish));
    json_object_set_new(o, "eff_p50_s", json_real(r.eff_p50 * cf.p50));
    json_object_set_new(o, "eff_s", json_real(r.eff));
    json_object_set_new(o, "min_tokens",
                        json_integer(v[0] != 0 ? arbiter_min_tokens(&sh, v[0] / 1000.0)
                                               : arbiter_min_tokens(&sh, r.eff)));
    json_t *pts = json_array();
    for (size_t i = 0; i < np; i++) {
        json_t *p = json_object();
        json_object_set_new(p, "deadline_s", json_real(curve[i].deadline));
        json_object_set_new(p, "slack", json_real(curve[i].slack));
        json_object_set_new(p, "price_token_s", json_real(curve[i].price));
        json_array_append_new(pts, p);
    }
    json_object_set_new(o, "price_curve", pts);
    json_object_set_new(o, "calibration", rmserver_calibration_json(l));
    json_object_set_new(o, "own_spread", v[8] != 0 ? json_real(v[8] / 1000.0) : json_null());
    uint32_t own_runs = 0; /* the job's own runs its bound reads (rm/calib.h) */
    json_object_set_new(o, "job_bound_factor", json_real(ledger_bound_factor(l, &c, &own_runs)));
    json_object_set_new(o, "own_runs", json_integer(own_runs));
    return o;
}

static json_t *rmserver__status(struct rmserver *s)
{
    struct rmconf_replica self;
    rmconf_replica(s->cfg, (size_t)s->self, &self);
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer((json_int_t)s->id));
    json_object_set_new(o, "address", json_string(self.raft));
    json_object_set_new(o, "api", json_string(self.api));
    json_object_set_new(o, "pub", json_string(self.pub));
    json_object_set_new(o, "metrics", rmserver__url(rm_metrics_url(s)));
    json_object_set_new(o, "role", json_string(rmserver_role_name(raft_state(&s->raft))));
    json_object_set_new(o, "ready", json_boolean(s->ready));
    json_object_set_new(o, "term", json_integer((json_int_t)s->raft.current_term));
    json_object_set_new(o, "commit_index", json_integer((json_int_t)s->raft.commit_index));
    json_object_set_new(o, "last_applied", json_integer((json_int_t)raft_last_applied(&s->raft)));
    json_object_set_new(o, "last_index", json_integer((json_int_t)raft_last_index(&s->raft)));
    uint64_t lid = 0;
    const char *lapi = rmserver_leader_api(s, &lid);
    json_t *leader = json_object();
    json_object_set_new(leader, "id", lid ? json_integer((json_int_t)lid) : json_null());
    json_object_set_new(leader, "api", lapi ? json_string(lapi) : json_null());
    json_object_set_new(o, "leader", leader);
    json_object_set_new(o, "configuration", rmserver_member_json(s));
    ledger_t *l = fsm_ledger(s->fsm);
    json_object_set_new(o, "nodes", json_integer((json_int_t)ledger_node_count(l)));
    json_object_set_new(o, "jobs", json_integer((json_int_t)ledger_job_count(l)));
    json_object_set_new(o, "calibration", rmserver_calibration_json(l));
    json_object_set_new(o, "view_nodes", json_integer((json_int_t)rmview_count(s->view)));
    json_object_set_new(o, "view_seq", json_integer((json_int_t)rmview_seq(s->view)));
    json_object_set_new(o, "view_snapshots", json_integer((json_int_t)s->snapshots));
    json_object_set_new(o, "requests", json_integer((json_int_t)s->requests));
    json_object_set_new(o, "heartbeats", json_integer((json_int_t)s->heartbeats));
    json_object_set_new(o, "heartbeats_stale", json_integer((json_int_t)s->heartbeats_stale));
    json_object_set_new(o, "heartbeats_unregistered",
                        json_integer((json_int_t)s->heartbeats_unregistered));
    json_object_set_new(o, "writes_committed", json_integer((json_int_t)s->writes_committed));
    json_object_set_new(o, "entries_appended", json_integer((json_int_t)s->entries_appended));
    json_object_set_new(o, "pending", json_integer((json_int_t)s->pending.len));
    json_object_set_new(o, "inflight", json_integer((json_int_t)s->inflight));
    json_t *rej = json_object();
    uint64_t total = 0;
    for (int i = 0; i < RMSERVER_REJ_COUNT; i++) {
        json_object_set_new(rej, rmserver__reject_names[i],
                            json_integer((json_int_t)s->rejected[i]));
        total += s->rejected[i];
    }
    json_object_set_new(rej, "total", json_integer((json_int_t)total));
    json_t *why = json_object();
    for (int r = 0; r < PROTO_REJ_COUNT; r++) {
        uint64_t n = s->api_stats.rejected_by_reason[r] + s->hb_stats.rejected_by_reason[r];
        if (n != 0)
            json_object_set_new(why, proto_reject_name((proto_reject_t)r),
                                json_integer((json_int_t)n));
    }
    json_object_set_new(rej, "decode_reasons", why);
    json_t *den = json_object();
    for (int i = 0; i < RMSERVER_DENY_COUNT; i++)
        json_object_set_new(den, rmserver_deny_names[i], json_integer((json_int_t)s->denied[i]));
    json_object_set_new(rej, "denied_by", den);
    json_object_set_new(o, "rejected", rej);
    json_object_set_new(o, "raft_transport", raft_curve_json(&s->transport));
    struct fsm_stats fs;
    fsm_stats(s->fsm, &fs);
    json_t *f = json_object();
    json_object_set_new(f, "entries", json_integer((json_int_t)fs.entries));
    json_object_set_new(f, "commands", json_integer((json_int_t)fs.commands));
    json_object_set_new(f, "refused", json_integer((json_int_t)fs.refused));
    json_object_set_new(f, "malformed", json_integer((json_int_t)fs.malformed));
    json_object_set_new(f, "snapshots", json_integer((json_int_t)fs.snapshots));
    json_object_set_new(f, "restores", json_integer((json_int_t)fs.restores));
    json_object_set_new(f, "since_snapshot_entries", json_integer((json_int_t)fs.since_entries));
    json_object_set_new(f, "since_snapshot_bytes", json_integer((json_int_t)fs.since_bytes));
    json_object_set_new(o, "fsm", f);
    json_object_set_new(o, "rss_kb", json_integer((json_int_t)(metrics_rss_bytes() / 1024)));
    /* where the memory goes: malloc's view, what holds it, and how often free heap went back */
    struct mallinfo2 mi = mallinfo2();
    json_t *mem = json_object();
    json_object_set_new(mem, "heap_in_use_kb", json_integer((json_int_t)(mi.uordblks / 1024)));
    json_object_set_new(mem, "heap_free_kb", json_integer((json_int_t)(mi.fordblks / 1024)));
    json_object_set_new(mem, "mmapped_kb", json_integer((json_int_t)(mi.hblkhd / 1024)));
    json_object_set_new(mem, "arena_kb", json_integer((json_int_t)(mi.arena / 1024)));
    json_object_set_new(mem, "view_nodes", json_integer((json_int_t)rmview_count(s->view)));
    json_object_set_new(mem, "ledger_jobs", json_integer((json_int_t)ledger_job_count(l)));
    json_object_set_new(mem, "ledger_nodes", json_integer((json_int_t)ledger_node_count(l)));
    json_object_set_new(mem, "history_runs", json_integer((json_int_t)ledger_history_count(l)));
    json_object_set_new(mem, "trims", json_integer((json_int_t)s->trims));
    /* replies waiting for peers that do not read them (API and heartbeat sockets) */
    struct zuv_stats za = {0}, zh = {0};
    if (s->api != NULL)
        zuv_sock_stats(s->api, &za);
    if (s->hb != NULL && s->hb != s->api)
        zuv_sock_stats(s->hb, &zh);
    json_object_set_new(mem, "replies_queued", json_integer((json_int_t)(za.queued + zh.queued)));
    json_object_set_new(mem, "replies_dropped",
                        json_integer((json_int_t)(za.dropped + zh.dropped)));
    json_object_set_new(o, "memory", mem);
    return o;
}

/* The virtual clusters and the active jobs' tokens in each (`paddock tokens`, the cluster page). */
json_t *rmserver_admin_vcs(const ledger_t *l, bool with_jobs)
{
    json_t *vcs = json_array();
    for (size_t v = 0; v < ledger_vc_count(l); v++) {
        const struct ledger_vc *vc = ledger_vc_at(l, v);
        json_t *o = json_object(), *jobs = json_array();
        json_object_set_new(o, "name", json_string(vc->name));
        json_object_set_new(o, "capacity", json_integer(vc->capacity));
        json_object_set_new(o, "granted", json_integer(vc->granted));
        json_object_set_new(o, "free", json_integer(vc->capacity - vc->granted));
        json_object_set_new(o, "token_cpu", json_real(vc->token_cpu_milli / 1000.0));
        json_object_set_new(o, "token_mem_mb", json_integer(vc->token_mem_mb));
        json_object_set_new(o, "spare", json_integer(vc->spare));
        json_object_set_new(o, "spare_grants", json_integer((json_int_t)vc->spare_grants));
        json_object_set_new(o, "spare_reclaims", json_integer((json_int_t)vc->spare_reclaims));
        for (size_t i = 0; with_jobs && i < ledger_job_count(l); i++) {
            const struct ledger_job *j = ledger_job_at(l, i);
            if (j->vc != v || j->state != LEDGER_JOB_ACTIVE)
                continue;
            char jid[ID_JOB_SIZE];
            rmserver_job_id(j->id, jid);
            json_t *g = json_object();
            json_object_set_new(g, "job_id", json_string(jid));
            json_object_set_new(g, "name", json_string(j->name));
            json_object_set_new(g, "tokens", json_integer(j->tokens));
            json_object_set_new(g, "wanted", json_integer(j->wanted));
            json_object_set_new(g, "minimum", json_integer(j->minimum));
            json_object_set_new(g, "deadline_ms",
                                j->deadline_ms ? json_integer(j->deadline_ms) : json_null());
            json_object_set_new(g, "best_effort", json_boolean(j->best_effort));
            json_array_append_new(jobs, g);
        }
        if (with_jobs)
            json_object_set_new(o, "jobs", jobs);
        else
            json_decref(jobs);
        json_array_append_new(vcs, o);
    }
    return vcs;
}

/* Issue 27's reads: a user sees their own lines and jobs, an admin everyone's. */
static json_t *rmserver__tenant_json(struct rmserver *s, const char *kind)
{
    const ledger_t *l = fsm_ledger(s->fsm);
    const struct rmserver_caller *who = &s->caller;
    json_t *doc = json_object();
    if (strcmp(kind, RMSERVER_ADMIN_WHOAMI) == 0) {
        json_object_set_new(doc, "user", json_string(who->user));
        json_object_set_new(doc, "role", json_string(who->admin ? "admin" : "user"));
        json_t *vcs = json_array();
        for (size_t i = 0; i < ledger_vc_count(l); i++) {
            const char *vc = ledger_vc_at(l, i)->name;
            if (who->admin || ledger_vc_granted(l, vc, who->user))
                json_array_append_new(vcs, json_string(vc));
        }
        json_object_set_new(doc, "virtual_clusters", vcs);
    } else if (strcmp(kind, RMSERVER_ADMIN_AUDIT) == 0) {
        json_t *arr = json_array();
        for (size_t i = 0; i < ledger_audit_count(l); i++) {
            const struct ledger_audit *a = ledger_audit_at(l, i);
            if (!who->admin && strcmp(a->who, who->user) != 0)
                continue;
            json_t *o = json_object();
            json_object_set_new(o, "at_ms", json_integer(a->at_ms));
            json_object_set_new(o, "user", json_string(a->who));
            json_object_set_new(o, "action", json_string(a->action));
            json_object_set_new(o, "target", json_string(a->target));
            json_object_set_new(o, "result", json_string(a->code == 0 ? "ok" : err_name(a->code)));
            json_object_set_new(o, "detail", json_string(a->detail));
            json_array_append_new(arr, o);
        }
        json_object_set_new(doc, "audit", arr);
    } else if (strcmp(kind, RMSERVER_ADMIN_USAGE) == 0) {
        json_t *arr = json_array();
        for (size_t i = 0; i < ledger_usage_count(l); i++) {
            const struct ledger_usage *u = ledger_usage_at(l, i);
            if (!who->admin && strcmp(u->user, who->user) != 0)
                continue;
            char jid[ID_JOB_SIZE];
            rmserver_job_id(u->job, jid);
            json_t *o = json_object();
            json_object_set_new(o, "job_id", json_string(jid));
            json_object_set_new(o, "name", json_string(u->name));
            json_object_set_new(o, "user", json_string(u->user));
            json_object_set_new(o, "virtual_cluster", json_string(u->vc));
            json_object_set_new(o, "state", json_string(ledger_job_state_name(u->state)));
            json_object_set_new(o, "submitted_ms", json_integer(u->submit_ms));
            json_object_set_new(o, "finished_ms", json_integer(u->end_ms));
            json_object_set_new(o, "deadline_ms",
                                u->deadline_ms ? json_integer(u->deadline_ms) : json_null());
            json_object_set_new(o, "token_s", json_real((double)u->token_ms / 1000.0));
            json_object_set_new(o, "price_token_s", json_real((double)u->price_milli / 1000.0));
            json_array_append_new(arr, o);
        }
        json_object_set_new(doc, "usage", arr);
    } else {
        json_t *arr = json_array();
        for (size_t i = 0; i < ledger_rule_count(l); i++) {
            const struct ledger_rule *r = ledger_rule_at(l, i);
            json_t *o = json_object();
            json_object_set_new(o, "user", json_string(r->user));
            if (r->vc[0] == '\0') {
                json_object_set_new(o, "role",
                                    json_string(r->role == LEDGER_ROLE_ADMIN ? "admin" : "user"));
            } else {
                json_object_set_new(o, "virtual_cluster", json_string(r->vc));
                json_object_set_new(o, "granted", json_boolean(r->granted));
                json_object_set_new(o, "max_tokens",
                                    r->max_tokens ? json_integer(r->max_tokens) : json_null());
                json_object_set_new(o, "max_token_s_per_day",
                                    r->max_token_ms_day
                                        ? json_integer((json_int_t)(r->max_token_ms_day / 1000))
                                        : json_null());
            }
            json_array_append_new(arr, o);
        }
        json_object_set_new(doc, "rules", arr);
    }
    return doc;
}

char *rmserver_admin_json(struct rmserver *s, const proto_admin_query_t *q, int *code, char *why,
                          size_t cap)
{
    ledger_t *l = fsm_ledger(s->fsm);
    json_t *doc = NULL;
    if (strcmp(q->kind, PROTO_ADMIN_RM_STATUS) == 0) {
        doc = rmserver__status(s);
    } else if (strcmp(q->kind, PROTO_ADMIN_NODES) == 0) {
        doc = rmserver__list(s, l, q, code, why, cap);
        if (doc == NULL)
            return NULL;
    } else if (strcmp(q->kind, PROTO_ADMIN_NODE) == 0) {
        const struct ledger_node *n = q->nargs == 1 ? ledger_node_find(l, q->args[0]) : NULL;
        if (n == NULL) {
            *code = q->nargs == 1 ? ERR_NOTFOUND : ERR_INVAL;
            err_fmt(why, cap, *code, q->nargs == 1 ? "no node named %s" : "usage: node NAME",
                    q->nargs == 1 ? q->args[0] : "");
            return NULL;
        }
        doc = rmserver__node_json(s, n, true);
    } else if (strcmp(q->kind, PROTO_ADMIN_TOKENS) == 0) {
        bool brief = q->nargs == 1 && strcmp(q->args[0], PROTO_ADMIN_TOKENS_BRIEF) == 0;
        if (q->nargs != 0 && !brief) {
            *code = ERR_INVAL;
            err_fmt(why, cap, *code, "usage: tokens [%s]", PROTO_ADMIN_TOKENS_BRIEF);
            return NULL;
        }
        json_t *vcs = rmserver_admin_vcs(l, !brief);
        doc = json_object();
        json_object_set_new(doc, "virtual_clusters", vcs);
        json_object_set_new(doc, "largest_node", rmserver__largest_node(l));
    } else if (strcmp(q->kind, PROTO_ADMIN_JOBS) == 0) {
        doc = rmserver__list(s, l, q, code, why, cap);
        if (doc == NULL)
            return NULL;
    } else if (strncmp(q->kind, "recurring_", 10) == 0 ||
               strcmp(q->kind, PROTO_ADMIN_HISTORY) == 0 ||
               strcmp(q->kind, PROTO_ADMIN_PLAN) == 0) {
        *code = 0;
        doc = rmserver_recur_json(s, q, code, why, cap);
        if (doc == NULL) {
            if (*code == 1) {
                *code = ERR_INVAL;
                err_fmt(why, cap, *code, "unknown admin query \"%s\"", q->kind);
            }
            return NULL;
        }
    } else if (strcmp(q->kind, RMSERVER_ADMIN_WHOAMI) == 0 ||
               strcmp(q->kind, RMSERVER_ADMIN_AUDIT) == 0 ||
               strcmp(q->kind, RMSERVER_ADMIN_USAGE) == 0 ||
               strcmp(q->kind, RMSERVER_ADMIN_TENANTS) == 0) {
        doc = rmserver__tenant_json(s, q->kind);
    } else if (strcmp(q->kind, PROTO_ADMIN_QUOTE) == 0) {
        doc = rmserver__quote(s, q, code, why, cap);
        if (doc == NULL)
            return NULL;
    } else if (strcmp(q->kind, PROTO_ADMIN_JOB) == 0) {
        uint64_t id = 0;
        const struct ledger_job *j = NULL;
        if (q->nargs == 1 && id_job_valid(q->args[0], strlen(q->args[0])) &&
            id_parse_u64(q->args[0] + 2, ID_JOB_HEX, &id) == 0)
            j = ledger_job_find(l, id);
        if (j == NULL) {
            *code = ERR_NOTFOUND;
            err_fmt(why, cap, *code, "no job %s", q->nargs == 1 ? q->args[0] : "(none given)");
            return NULL;
        }
        doc = rmserver__job_json(s, l, j);
    } else {
        *code = ERR_INVAL;
        err_fmt(why, cap, *code, "unknown admin query \"%s\"", q->kind);
        return NULL;
    }
    char *text = doc != NULL ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (text == NULL) {
        *code = ERR_NOMEM;
        err_fmt(why, cap, *code, "out of memory");
        return NULL;
    }
    size_t len = strlen(text);
    if (len > PROTO_MAX_JSON) {
        free(text);
        *code = ERR_TOOBIG;
        err_fmt(why, cap, *code, "reply too large (%zu bytes, at most %u in one reply)", len,
                PROTO_MAX_JSON);
        return NULL;
    }
    return text;
}

char *rmserver_admin_write_json(struct rmserver *s, const struct rmserver_cmd *c,
                                const struct ledger_result *res)
{
    (void)res;
    ledger_t *l = fsm_ledger(s->fsm);
    const struct ledger_job *j = ledger_job_find(l, c->cmd.job);
    bool recur = c->cmd.type >= LEDGER_CMD_RECUR_ADD && c->cmd.type <= LEDGER_CMD_RECUR_MODEL;
    json_t *doc = recur       ? rmserver_recur_write_json(s, c, res)
                  : j != NULL ? rmserver__job_json(s, l, j)
                              : json_object();
    json_object_set_new(doc, "ok", json_true());
    json_object_set_new(doc, "kind", json_string(c->w.admin_kind));
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    return text;
}
